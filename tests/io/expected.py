"""The values tests/io/roundtrip.c makes (make_values there), computed with torch."""

import torch

YT_TO_TORCH = {
    "f64": torch.float64,
    "f32": torch.float32,
    "f16": torch.float16,
    "bf16": torch.bfloat16,
    "i64": torch.int64,
    "i32": torch.int32,
    "i16": torch.int16,
    "i8": torch.int8,
    "u8": torch.uint8,
    "bool": torch.bool,
}


def make_values(dt, shape):
    n = 1
    for s in shape:
        n *= s
    i = torch.arange(n, dtype=torch.float64)
    if dt == "bool":
        v = torch.remainder(i, 3) == 0
    elif dt == "u8":
        v = torch.remainder(7 * i, 23)
    elif YT_TO_TORCH[dt].is_floating_point:
        v = (torch.remainder(7 * i, 23) - 11) / 4
    else:
        v = torch.remainder(7 * i, 23) - 11
    return v.to(YT_TO_TORCH[dt]).reshape(shape)


def made_tensors(with_bf16=True):
    """name -> tensor, as roundtrip's make_tensors() names them."""
    out = {}
    for dt in YT_TO_TORCH:
        if dt == "bf16" and not with_bf16:
            continue
        m = make_values(dt, [3, 4])
        out[f"{dt}.matrix"] = m
        out[f"{dt}.scalar"] = make_values(dt, [])
        out[f"{dt}.empty"] = make_values(dt, [0, 5])
        out[f"{dt}.transposed"] = m.t()
        out[f"{dt}.cube"] = make_values(dt, [2, 3, 4])
    return out
