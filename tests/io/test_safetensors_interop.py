"""safetensors files cross between yaten and PyTorch in both directions.

yaten -> torch: roundtrip.c writes tensors of known values in every dtype (0-d, zero-size,
non-contiguous views); the strict reader in st_format.py (which checks the layout rules) loads
them as torch tensors, compared exactly with the same values computed by torch.
torch -> yaten: tensors made in torch (random values, special floats, every dtype) are written by
st_format.write in two data layouts; yaten reports each tensor's dtype, shape and sum, and writes
the file back, which must hold the same bytes."""

import math

import pytest
import torch

import st_format
from expected import YT_TO_TORCH, made_tensors

TORCH_TO_YT = {v: k for k, v in YT_TO_TORCH.items()}


def same(a, b):
    """Exact equality, NaN == NaN, dtype and shape included."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.numel() == 0:
        return True
    if a.dtype.is_floating_point:
        return bool(torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(), b.nan_to_num()))
    return bool(torch.equal(a, b))


def test_yaten_files_load_in_torch(yaten, tmp_path):
    path = tmp_path / "yaten.safetensors"
    yaten("st-make", path)
    tensors, metadata, layout = st_format.read(path)  # raises if the layout breaks the format
    want = made_tensors()
    assert list(tensors) == list(want), "header order is the order yaten listed them"
    for name, t in want.items():
        assert same(tensors[name], t), f"{name}: {tensors[name]} != {t}"
    assert metadata == {"made_by": "yaten"}
    # The writer's alignment promise: every tensor starts at a multiple of its element size.
    for name, begin, _ in layout:
        assert begin % tensors[name].element_size() == 0, name


def torch_tensors():
    g = torch.Generator().manual_seed(4)
    out = {}
    for dt in YT_TO_TORCH.values():
        if dt.is_floating_point:
            x = torch.randn(5, 7, generator=g, dtype=torch.float64).to(dt)
        elif dt == torch.bool:
            x = torch.rand(5, 7, generator=g) < 0.5
        else:
            info = torch.iinfo(dt)
            x = torch.randint(info.min, info.max, (5, 7), generator=g, dtype=torch.int64).to(dt)
        out[f"{TORCH_TO_YT[dt]}.random"] = x
        out[f"{TORCH_TO_YT[dt]}.scalar"] = x[1, 2].clone()
        out[f"{TORCH_TO_YT[dt]}.empty"] = x[:0]
        out[f"{TORCH_TO_YT[dt]}.strided"] = x.t()[::2]
    special = torch.tensor([math.nan, math.inf, -math.inf, -0.0, 5e-324, 1.7976931348623157e308])
    out["f64.special"] = special.to(torch.float64)
    out["f32.special"] = torch.tensor([math.nan, math.inf, -0.0, 1e-45, 3.4e38])
    out["i64.extremes"] = torch.tensor([-(2**63), 2**63 - 1, 0])
    out["layers.0.weight \u00e9"] = torch.randn(4, 3, 2, 2, generator=g)
    return out


@pytest.mark.parametrize("layout", ["dict_order", "reversed"])
def test_torch_files_load_in_yaten(yaten, tmp_path, layout):
    tensors = torch_tensors()
    path = tmp_path / "torch.safetensors"
    order = list(tensors) if layout == "dict_order" else list(reversed(tensors))
    st_format.write(path, tensors, {"format": "pt", "step": "12"}, order=order)

    # yaten reads the values: dtype, shape and sum per tensor, in header order.
    lines = yaten("st-sums", path).splitlines()
    rows = [line.split("\t") for line in lines if not line.startswith("__metadata__\t")]
    meta = [line.split("\t")[1:] for line in lines if line.startswith("__metadata__\t")]
    assert [r[0] for r in rows] == list(tensors)
    for name, dt, shape, total in rows:
        t = tensors[name]
        assert dt == TORCH_TO_YT[t.dtype], name
        assert shape == str(list(t.shape)), name
        want = t.to(torch.float64).sum().item()
        got = float(total)
        if math.isnan(want):
            assert math.isnan(got), name
        else:
            assert got == pytest.approx(want, rel=1e-12, abs=1e-300), name
    assert meta == [["format", "pt"], ["step", "12"]]

    # yaten writes them back: the same tensors, exactly, in a file the strict reader accepts.
    back = tmp_path / "back.safetensors"
    yaten("st-copy", path, back)
    got, got_meta, _ = st_format.read(back)
    assert list(got) == list(tensors)
    for name, t in tensors.items():
        assert same(got[name], t), name
    assert got_meta == {"format": "pt", "step": "12"}


def test_a_torch_state_dict_round_trips(yaten, tmp_path):
    """A real module's state dict (what load_state_dict takes) survives yaten unchanged."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU(), torch.nn.Flatten(),
        torch.nn.Linear(4 * 26 * 26, 10),
    )
    sd = {k: v for k, v in model.state_dict().items()}
    path, back = tmp_path / "m.safetensors", tmp_path / "m2.safetensors"
    st_format.write(path, sd)
    yaten("st-copy", path, back)
    loaded, _, _ = st_format.read(back)
    fresh = torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU(), torch.nn.Flatten(),
        torch.nn.Linear(4 * 26 * 26, 10),
    )
    fresh.load_state_dict(loaded)
    for k, v in fresh.state_dict().items():
        assert torch.equal(v, sd[k]), k


def test_yaten_rejects_a_broken_torch_file(yaten, tmp_path):
    path = tmp_path / "cut.safetensors"
    st_format.write(path, {"w": torch.ones(4, 4)})
    data = path.read_bytes()
    path.write_bytes(data[:-4])  # a torn file: the last 4 bytes missing
    msg = yaten("st-sums", path, expect_error=True)
    assert msg == (
        f"{path}: tensor 'w': data_offsets [0, 64) run past the end of the data buffer (60 bytes)"
    )
