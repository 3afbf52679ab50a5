""".npy files cross between yaten and NumPy in both directions: numpy.save -> yt_npy_load (and
back through yt_npy_save -> numpy.load), and files yaten makes -> numpy.load, compared with the
values computed by torch; arrays yaten cannot hold are refused with a clear message."""

import numpy as np
import pytest

from expected import made_tensors

NUMPY_DTYPES = ["<f8", "<f4", "<f2", "<i8", "<i4", "<i2", "|i1", "|u1", "|b1"]


def numpy_arrays(descr):
    rng = np.random.default_rng(7)
    dt = np.dtype(descr)
    if dt.kind == "f":
        base = rng.standard_normal((4, 5, 6)).astype(dt)
        base.flat[:4] = [np.nan, np.inf, -np.inf, -0.0]
    elif dt.kind == "b":
        base = rng.random((4, 5, 6)) < 0.5
    else:
        info = np.iinfo(dt)
        base = rng.integers(info.min, info.max, (4, 5, 6), endpoint=True).astype(dt)
    return {
        "3d": base,
        "2d": base[0],
        "1d": base[0, 0],
        "0d": base[1, 2, 3].reshape(()),
        "empty": base[:0],
        "fortran_2d": np.asfortranarray(base[1]),
        "fortran_3d": np.asfortranarray(base),
        "strided": base[:, ::2, 1:],
    }


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("descr", NUMPY_DTYPES)
def test_numpy_files_load_in_yaten(yaten, tmp_path, descr):
    for name, arr in numpy_arrays(descr).items():
        src, back = tmp_path / f"{name}.npy", tmp_path / f"{name}.back.npy"
        np.save(src, arr)
        yaten("npy-copy", src, back)
        got = np.load(back)
        want = np.array(arr, order="C")  # (ascontiguousarray would make a 0-d array 1-d)
        assert same(got, want), f"{descr} {name}"
        assert got.flags.c_contiguous


@pytest.mark.parametrize("version", [(1, 0), (2, 0), (3, 0)])
def test_every_format_version(yaten, tmp_path, version):
    arr = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    src, back = tmp_path / "v.npy", tmp_path / "back.npy"
    with open(src, "wb") as f:
        np.lib.format.write_array(f, np.asfortranarray(arr), version=version)
    yaten("npy-copy", src, back)
    assert same(np.load(back), arr)


def test_yaten_files_load_in_numpy(yaten, tmp_path):
    yaten("npy-make", tmp_path)
    for name, t in made_tensors(with_bf16=False).items():
        got = np.load(tmp_path / f"{name}.npy")
        want = t.contiguous().numpy()
        assert same(got, want), name
        with open(tmp_path / f"{name}.npy", "rb") as f:
            version = np.lib.format.read_magic(f)
            shape, fortran, dtype = np.lib.format._read_array_header(f, version)
        assert version == (1, 0) and not fortran and shape == want.shape
        # NumPy's own writer aligns the data to 64 bytes; so does yaten.
        assert (tmp_path / f"{name}.npy").stat().st_size - want.nbytes == 128


@pytest.mark.parametrize(
    "arr, message",
    [
        (np.arange(3, dtype=">f4"), "dtype '>f4' is big-endian"),
        (np.arange(3, dtype=">i8"), "dtype '>i8' is big-endian"),
        (np.arange(3, dtype=np.uint16), "dtype '<u2' is not supported"),
        (np.arange(3, dtype=np.complex64), "dtype '<c8' is not supported"),
        (np.array(["a", "bc"]), "dtype '<U2' is not supported"),
    ],
)
def test_yaten_refuses_what_it_cannot_hold(yaten, tmp_path, arr, message):
    src = tmp_path / "x.npy"
    np.save(src, arr)
    msg = yaten("npy-copy", src, tmp_path / "y.npy", expect_error=True)
    assert msg.startswith(f"{src}: ") and message in msg, msg


def test_object_arrays_and_truncation(yaten, tmp_path):
    src = tmp_path / "obj.npy"
    np.save(src, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    msg = yaten("npy-copy", src, tmp_path / "y.npy", expect_error=True)
    assert "dtype '|O' is not supported" in msg
    src = tmp_path / "cut.npy"
    np.save(src, np.zeros((10, 10)))
    src.write_bytes(src.read_bytes()[:-8])
    msg = yaten("npy-copy", src, tmp_path / "y.npy", expect_error=True)
    assert msg == f"{src}: [10, 10] '<f8' needs 800 bytes of data but the file has 792 (truncated)"
