"""A small, strict safetensors reader and writer for the interoperability tests.

Debian's Python has no `safetensors` package, so the tests carry this one, written from the
format as the reference implementation (huggingface/safetensors, safetensors/src/tensor.rs)
defines it:

- 8 bytes: N, the header length, unsigned 64-bit little-endian; N <= 100,000,000.
- N bytes: a UTF-8 JSON object. "__metadata__" (optional) maps str -> str; every other key is a
  tensor name -> {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}. The writer pads
  the header with spaces to a multiple of 8 bytes.
- The data buffer: offsets relative to its start; each tensor row-major and little-endian,
  end - begin == numel * itemsize; sorted by offsets the tensors tile the buffer with no hole,
  no overlap and nothing after the last one.

The reader checks all of that (and rejects duplicate keys), so a file yaten writes passes only if
it follows the format. It was checked against the PyPI `safetensors` package (0.8.0) in both
directions when it was written; the tests do not need that package.
"""

import json
import struct

import numpy as np
import torch

MAX_HEADER = 100_000_000

# safetensors dtype -> (torch dtype, itemsize)
DTYPES = {
    "F64": (torch.float64, 8),
    "F32": (torch.float32, 4),
    "F16": (torch.float16, 2),
    "BF16": (torch.bfloat16, 2),
    "I64": (torch.int64, 8),
    "I32": (torch.int32, 4),
    "I16": (torch.int16, 2),
    "I8": (torch.int8, 1),
    "U8": (torch.uint8, 1),
    "BOOL": (torch.bool, 1),
}
TORCH_TO_ST = {v[0]: k for k, v in DTYPES.items()}


class FormatError(ValueError):
    pass


def _no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise FormatError(f"duplicate keys in {keys}")
    return dict(pairs)


def read(path):
    """Returns (tensors: dict name -> torch.Tensor in header order, metadata: dict, layout:
    list of (name, begin, end) in header order)."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise FormatError("shorter than the header length")
    (n,) = struct.unpack("<Q", data[:8])
    if n > MAX_HEADER or 8 + n > len(data):
        raise FormatError(f"bad header length {n}")
    text = data[8 : 8 + n].decode("utf-8")
    if not text.startswith("{"):
        raise FormatError("header does not start with '{'")
    header = json.loads(text, object_pairs_hook=_no_duplicates)
    if not isinstance(header, dict):
        raise FormatError("header is not an object")
    metadata = header.pop("__metadata__", {})
    if not isinstance(metadata, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
    ):
        raise FormatError("metadata must map str to str")
    buf = data[8 + n :]
    layout = []
    for name, info in header.items():
        if set(info) != {"dtype", "shape", "data_offsets"}:
            raise FormatError(f"{name}: keys {sorted(info)}")
        if info["dtype"] not in DTYPES:
            raise FormatError(f"{name}: dtype {info['dtype']}")
        shape = info["shape"]
        begin, end = info["data_offsets"]
        if not all(isinstance(s, int) and s >= 0 for s in shape):
            raise FormatError(f"{name}: shape {shape}")
        if not (isinstance(begin, int) and isinstance(end, int) and 0 <= begin <= end):
            raise FormatError(f"{name}: offsets {begin, end}")
        numel = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if numel * DTYPES[info["dtype"]][1] != end - begin:
            raise FormatError(f"{name}: {end - begin} bytes for {info['dtype']} {shape}")
        layout.append((name, begin, end))
    cursor = 0
    for name, begin, end in sorted(layout, key=lambda e: (e[1], e[2])):
        if begin != cursor:
            raise FormatError(f"{name}: begins at {begin}, expected {cursor} (hole or overlap)")
        cursor = end
    if cursor != len(buf):
        raise FormatError(f"tensors cover {cursor} of {len(buf)} data bytes")
    tensors = {}
    for name, begin, end in layout:
        info = header[name]
        dtype = DTYPES[info["dtype"]][0]
        if end == begin:
            t = torch.empty(info["shape"], dtype=dtype)
        else:
            t = torch.frombuffer(bytearray(buf[begin:end]), dtype=dtype).reshape(info["shape"])
        tensors[name] = t
    return tensors, metadata, layout


def write(path, tensors, metadata=None, order=None):
    """Writes `tensors` (dict name -> torch.Tensor, header in dict order) with the data laid out
    in `order` (a list of names; default: dict order)."""
    order = list(tensors) if order is None else order
    offsets, chunks, at = {}, [], 0
    for name in order:
        t = tensors[name].contiguous()
        raw = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        offsets[name] = (at, at + len(raw))
        chunks.append(raw)
        at += len(raw)
    header = {}
    if metadata:
        header["__metadata__"] = dict(metadata)
    for name, t in tensors.items():
        header[name] = {
            "dtype": TORCH_TO_ST[t.dtype],
            "shape": list(t.shape),
            "data_offsets": list(offsets[name]),
        }
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for c in chunks:
            f.write(c)
