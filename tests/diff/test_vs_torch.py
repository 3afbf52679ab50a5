"""Differential tests: every per-op case generated from ops.yaml, in every dtype the op takes,
computed by yaten (tests/diff/runner.c) and by PyTorch (generated/tests/torch_cases.py), must
agree on the result's dtype, shape and values, on which results carry a gradient, and on the
gradient of every floating input for a fixed upstream gradient.

Cases come from the YAML: adding an op's entry (with its samples) adds its tests here.
Random ops (those taking a Generator) have no PyTorch counterpart for their values and are
tested for their distributions in tests/unit/test_random.c instead.

Inputs an op is not differentiable with respect to (derivatives.yaml's `ARG: non_differentiable`,
or a sample's `no_grad` tensor) never require grad in those jobs; one refusal job per such input
makes it require grad, and yaten and PyTorch must both refuse it, naming it.

Where PyTorch 1.13 has no CPU kernel for a half-precision dtype ("not implemented for 'Half'"),
the reference is PyTorch's result on the inputs widened to f32, rounded back to the half dtype,
which is how yaten computes half-precision ops; so is it for a half-precision result that misses
PyTorch's own kernel, whose partial sums may be rounded to the half dtype (see test_vs_torch)."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "generated", "tests"))
import torch_cases  # noqa: E402

RUNNER = os.environ.get("YT_DIFF_RUNNER", os.path.join(ROOT, "build", "tests", "diff_runner"))

TORCH_DTYPE = {"bool": torch.bool, "u8": torch.uint8, "i8": torch.int8, "i16": torch.int16,
               "i32": torch.int32, "i64": torch.int64, "f16": torch.float16, "bf16": torch.bfloat16,
               "f32": torch.float32, "f64": torch.float64}
YATEN_DTYPE = {v: k for k, v in TORCH_DTYPE.items()}

# (rtol, atol) per result dtype; gradients of f32 go through more rounding than values.
TOLERANCE = {torch.float64: (1e-7, 1e-9), torch.float32: (1e-4, 1e-5),
             torch.float16: (2e-3, 2e-3), torch.bfloat16: (1.6e-2, 1.6e-2)}
GRAD_DTYPES = ("f32", "f64")  # PyTorch's CPU autograd is patchy below f32


def jobs():
    """(case, dtype, free mask, -1) for every dtype of every case."""
    out = []
    for index, case in enumerate(torch_cases.CASES):
        if case["random"]:
            continue
        free = sum(1 << i for i, f in enumerate(case["free"]) if f)
        for dtype in case["dtypes"] or ["f64"]:
            out.append((index, dtype, free, -1))
    return out


def refusal_jobs():
    """(case, dtype, free mask, input) for each no_grad input of a case: that input requires grad
    (in f64, or the case's other gradient dtype). Cases with an empty tensor are left out: some of
    PyTorch's composites return early on them without reaching the refusing kernel (batch_norm),
    while yaten refuses whatever the shapes (tests/unit/test_ops.c checks that on other samples)."""
    out = []
    for index, case in enumerate(torch_cases.CASES):
        if case["random"] or case["empty"] or not any(case["no_grad"]):
            continue
        free = sum(1 << i for i, f in enumerate(case["free"]) if f)
        dtype = next((d for d in ("f64",) + GRAD_DTYPES if d in (case["dtypes"] or ["f64"])), None)
        for i, no_grad in enumerate(case["no_grad"]):
            if no_grad and dtype is not None:
                out.append((index, dtype, free, i))
    return out


JOBS = jobs()
REFUSAL_JOBS = refusal_jobs()


@pytest.fixture(scope="session")
def results(tmp_path_factory):
    """Runs every job through the yaten runner once; returns the output folder."""
    out = tmp_path_factory.mktemp("yaten")
    plan = out / "plan.txt"
    plan.write_text("".join(f"{i} {d} {f} {r}\n" for i, d, f, r in JOBS + REFUSAL_JOBS))
    proc = subprocess.run([RUNNER, str(plan), str(out)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.fail(f"{RUNNER} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return out


def load_job(folder):
    """The runner's files for one job: {name: tensor}, and the error line if the op failed. An
    input the runner marks "step N" is every Nth element along the last dim of the file's tensor,
    taken here by PyTorch (not through yaten's stepped copies)."""
    tensors, error = {}, None
    for line in (folder / "meta.txt").read_text().splitlines():
        if line.startswith("error"):
            error = line
            continue
        name, dtype, *rest = line.split()
        step = int(rest[1]) if rest[:1] == ["step"] else 1
        array = np.load(folder / f"{name}.npy")
        if dtype == "bf16":
            widened = np.array(array.astype(np.uint32) << np.uint32(16)).view(np.float32)
            t = torch.from_numpy(widened).to(torch.bfloat16)
        else:
            t = torch.from_numpy(np.array(array))
        tensors[name] = t[..., ::step] if step > 1 else t
    return tensors, error


def as_list(value):
    return list(value) if isinstance(value, (tuple, list)) else [value]


def torch_reference(case, inputs):
    """PyTorch's results and the leaf inputs it differentiated against (no_grad inputs are not)."""
    leaves = [t.detach().clone().requires_grad_(t.is_floating_point() and not no_grad)
              for t, no_grad in zip(inputs, case["no_grad"])]
    try:
        return as_list(case["fn"](*leaves)), leaves, False
    except (RuntimeError, NotImplementedError) as e:
        if "not implemented for" not in str(e):
            raise
    return widened_reference(case, inputs)


def widened_reference(case, inputs):
    """PyTorch's results on the half-precision inputs widened to f32, rounded back to their dtype,
    with the leaves as in torch_reference, and True (widened)."""
    half = [t for t in inputs if t.dtype in (torch.float16, torch.bfloat16)]
    if not half:
        raise RuntimeError("PyTorch has no kernel for these dtypes")
    low = half[0].dtype
    leaves = [t.detach().to(torch.float32 if t.dtype == low else t.dtype)
              .requires_grad_(t.is_floating_point() and not no_grad) for t, no_grad in zip(inputs, case["no_grad"])]
    outs = [o.to(low) if o.dtype == torch.float32 else o for o in as_list(case["fn"](*leaves))]
    return outs, leaves, True


def assert_close(name, got, want):
    assert got.shape == want.shape, f"{name}: shape {tuple(got.shape)} != PyTorch's {tuple(want.shape)}"
    if want.dtype.is_floating_point:
        rtol, atol = TOLERANCE[want.dtype]
        torch.testing.assert_close(got.double(), want.detach().double(), rtol=rtol, atol=atol, equal_nan=True,
                                   msg=lambda m: f"{name}: {m}")
    else:
        assert torch.equal(got, want), f"{name}: {got} != PyTorch's {want}"


@pytest.mark.parametrize("index,dtype,free,refuse", JOBS,
                         ids=[f"{torch_cases.CASES[i]['op']}-{i}-{d}" for i, d, _, _ in JOBS])
def test_vs_torch(results, index, dtype, free, refuse):
    case = torch_cases.CASES[index]
    got, error = load_job(results / f"{index}_{dtype}")
    where = f"{case['op']} ({case['where']}, {dtype})"
    if error is not None:
        pytest.fail(f"{where}: yaten failed: {error}")
    inputs = [got[f"in{i}"] for i in range(len(case["tensors"]))]
    outs, leaves, widened = torch_reference(case, inputs)
    want = outs[0]
    assert got["out"].dtype == want.dtype, f"{where}: result dtype {YATEN_DTYPE[got['out'].dtype]} " \
                                           f"!= PyTorch's {YATEN_DTYPE.get(want.dtype, want.dtype)}"
    try:
        assert_close(f"{where}: result", got["out"], want)
    except AssertionError:
        # Some of PyTorch's own half-precision CPU kernels round partial sums to the half dtype
        # (1.13's bf16 conv2d on a CPU with AVX2 and no AVX-512: 0.04 off at 9, 0.98 relative
        # where terms cancel), where yaten computes in f32 and rounds once, as the widened
        # reference does; a result that matches that reference instead is PyTorch's rounding.
        if widened or want.dtype not in (torch.float16, torch.bfloat16):
            raise
        assert_close(f"{where}: result (PyTorch on f32)", got["out"], widened_reference(case, inputs)[0][0])

    # PyTorch marks some results of non-differentiable ops (floor_divide) as requiring grad
    # through a NotImplemented node; those have no gradient either.
    if want.grad_fn is not None and type(want.grad_fn).__name__ == "NotImplemented":
        want = want.detach()
    torch_has_grad = want.requires_grad and not widened
    if dtype not in GRAD_DTYPES and any(case["free"]):
        return
    if "gout" not in got:
        assert not want.requires_grad, f"{where}: PyTorch's result requires grad, yaten's does not"
        return
    assert torch_has_grad, f"{where}: yaten's result requires grad, PyTorch's does not"
    wrt = [(i, leaf) for i, leaf in enumerate(leaves) if leaf.requires_grad]
    grads = torch.autograd.grad(want, [leaf for _, leaf in wrt], grad_outputs=got["gout"].to(want.dtype),
                                allow_unused=True)
    for (i, leaf), g in zip(wrt, grads):
        name = case["tensors"][i]
        want_grad = torch.zeros_like(leaf) if g is None else g
        got_grad = got.get(f"grad{i}", torch.zeros_like(leaf))
        assert_close(f"{where}: grad of {name}", got_grad, want_grad)


@pytest.mark.parametrize("index,dtype,free,refuse", REFUSAL_JOBS,
                         ids=[f"{torch_cases.CASES[i]['op']}-{i}-{d}-refuse-{torch_cases.CASES[i]['tensors'][r]}"
                              for i, d, _, r in REFUSAL_JOBS])
def test_refusal_vs_torch(results, index, dtype, free, refuse):
    """A non-differentiable input that requires grad: both refuse the call, naming it."""
    case = torch_cases.CASES[index]
    name = case["tensors"][refuse]
    got, error = load_job(results / f"{index}_{dtype}_refuse{refuse}")
    where = f"{case['op']} ({case['where']}, {dtype}, {name} requires grad)"
    assert error is not None, f"{where}: yaten accepted it"
    assert re.search(rf": {name} requires grad, but .* is not differentiable with respect to {name}\b", error), \
        f"{where}: yaten's error does not name {name}: {error}"
    inputs = [got[f"in{i}"] for i in range(len(case["tensors"]))]
    leaves = [t.detach().clone().requires_grad_(t.is_floating_point() and (not no_grad or i == refuse))
              for i, (t, no_grad) in enumerate(zip(inputs, case["no_grad"]))]
    with pytest.raises(RuntimeError, match=f"not differentiable with respect to argument '{name}'"):
        case["fn"](*leaves)
