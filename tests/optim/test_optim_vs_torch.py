"""Differential tests of yaten's optimizers, gradient clipping and learning-rate schedulers
against torch.optim (PyTorch 1.13, /usr/bin/python3).

Optimizers: every option of SGD, Adam, AdamW, RMSprop and Adagrad, in f32 and f64, with param
groups, multi-threaded updates of a large parameter and gradient clipping. Both sides start
from the same parameters and, for 50 steps, take the gradient g(p) = p*p*p - p*0.5 + b of the
current parameters (b a fixed random tensor): the gradient of a quartic, so every step depends
on the previous ones. The test writes the initial values and b to files, runs
tests/optim/runner.c (build/tests/optim_runner) on them and compares its final parameters with
torch's to 1e-6 relative.

Schedulers: the learning rates (and the momentum one-cycle drives) of two param groups after
construction and after each of 100 steps, to 1e-12 relative."""

import math
import os
import subprocess
import warnings
import zlib

import numpy as np
import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNNER = os.environ.get("YT_OPTIM_RUNNER", os.path.join(ROOT, "build", "tests", "optim_runner"))

NP_DTYPE = {"f32": np.float32, "f64": np.float64}
TORCH_DTYPE = {"f32": torch.float32, "f64": torch.float64}
OPT_STEPS = 50
SCHED_STEPS = 100

# ---------------------------------------------------------------------------- helpers


def run_runner(tmp_path, lines):
    spec = tmp_path / "spec.txt"
    spec.write_text("\n".join(lines) + "\n")
    proc = subprocess.run([RUNNER, str(spec)], capture_output=True, text=True)
    assert proc.returncode == 0, f"optim_runner failed:\n{proc.stderr}"
    out = {}
    for line in proc.stdout.splitlines():
        words = line.split()
        if words[0] == "final":
            out[("final", words[1])] = np.array([float(w) for w in words[2:]])
        else:
            out[(words[0], int(words[1]))] = np.array([float(w) for w in words[2:]])
    return out


def assert_close(got, want, rtol, what):
    """|got - want| <= rtol * |want|, with an absolute floor of rtol times the largest |want|
    so values that pass near zero do not demand impossible relative accuracy."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    scale = float(np.max(np.abs(want))) if want.size else 0.0
    err = np.abs(got - want)
    bound = rtol * np.maximum(np.abs(want), scale * 1e-3)
    bad = np.nonzero(~(err <= bound))[0]
    if bad.size:
        i = bad[0]
        raise AssertionError(
            f"{what}: {bad.size} of {want.size} values differ; first at {i}: yaten {got[i]!r}, "
            f"torch {want[i]!r} (max abs diff {np.max(err):.3g})")


# ---------------------------------------------------------------------------- optimizers

TORCH_OPT = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW,
             "rmsprop": torch.optim.RMSprop, "adagrad": torch.optim.Adagrad}


def torch_options(opts):
    """yaten option names (beta1/beta2, 0/1 flags) to torch's keyword arguments."""
    out = {}
    for k, v in opts.items():
        if k in ("beta1", "beta2"):
            continue
        out[k] = bool(v) if k in ("amsgrad", "maximize", "nesterov", "centered") else v
    if "beta1" in opts or "beta2" in opts:
        out["betas"] = (opts.get("beta1", 0.9), opts.get("beta2", 0.999))
    return out


def spec_options(opts):
    return " ".join(f"{k}={v!r}" if isinstance(v, float) else f"{k}={int(v)}"
                    for k, v in opts.items())


# Each case: kind, the constructor's options, the per-group overrides (one dict per group;
# the parameters are split over the groups in order), dtype list.
OPT_CASES = {
    "sgd": ("sgd", {"lr": 0.05}, [{}]),
    "sgd_momentum": ("sgd", {"lr": 0.05, "momentum": 0.9}, [{}]),
    "sgd_dampening": ("sgd", {"lr": 0.05, "momentum": 0.9, "dampening": 0.3}, [{}]),
    "sgd_nesterov": ("sgd", {"lr": 0.05, "momentum": 0.8, "nesterov": 1}, [{}]),
    "sgd_weight_decay": ("sgd", {"lr": 0.05, "momentum": 0.9, "weight_decay": 0.1}, [{}]),
    "sgd_maximize": ("sgd", {"lr": 0.002, "momentum": 0.5, "maximize": 1, "weight_decay": 0.05},
                     [{}]),
    "sgd_groups": ("sgd", {"lr": 0.05, "momentum": 0.9},
                   [{}, {"lr": 0.02, "nesterov": 1, "weight_decay": 0.01}]),
    "adam": ("adam", {"lr": 0.01}, [{}]),
    "adam_amsgrad": ("adam", {"lr": 0.01, "amsgrad": 1}, [{}]),
    "adam_weight_decay": ("adam", {"lr": 0.01, "weight_decay": 0.1, "beta1": 0.8,
                                   "beta2": 0.99, "eps": 1e-6}, [{}]),
    "adam_maximize": ("adam", {"lr": 0.005, "maximize": 1, "amsgrad": 1}, [{}]),
    "adam_groups": ("adam", {"lr": 0.01}, [{"amsgrad": 1}, {"lr": 0.003, "weight_decay": 0.2}]),
    "adamw": ("adamw", {"lr": 0.01}, [{}]),
    "adamw_amsgrad": ("adamw", {"lr": 0.01, "weight_decay": 0.1, "amsgrad": 1}, [{}]),
    "rmsprop": ("rmsprop", {"lr": 0.01}, [{}]),
    "rmsprop_momentum": ("rmsprop", {"lr": 0.005, "momentum": 0.9}, [{}]),
    "rmsprop_centered": ("rmsprop", {"lr": 0.005, "centered": 1, "alpha": 0.9}, [{}]),
    "rmsprop_all": ("rmsprop", {"lr": 0.002, "centered": 1, "momentum": 0.5, "weight_decay": 0.1,
                                "eps": 1e-6}, [{}]),
    "rmsprop_maximize": ("rmsprop", {"lr": 0.002, "maximize": 1}, [{}]),
    "adagrad": ("adagrad", {"lr": 0.1}, [{}]),
    "adagrad_all": ("adagrad", {"lr": 0.1, "lr_decay": 0.01, "initial_accumulator_value": 0.1,
                                "weight_decay": 0.1, "eps": 1e-5}, [{}]),
    "adagrad_maximize": ("adagrad", {"lr": 0.01, "maximize": 1}, [{}]),
}

# Shapes with odd sizes, so the vector loops' tails are exercised.
SHAPES = [("w", (37, 5)), ("b", (7,)), ("s", ())]


def make_params(seed, dtype, shapes):
    rng = np.random.default_rng(seed)
    out = []
    for name, shape in shapes:
        init = (rng.standard_normal(shape) * 0.5).astype(NP_DTYPE[dtype])
        b = (rng.standard_normal(shape) * 0.5).astype(NP_DTYPE[dtype])
        out.append((name, shape, init, b))
    return out


def torch_gradient(p, b):
    return p * p * p - p * 0.5 + b


def run_torch(kind, defaults, groups, params, dtype, steps, clip=None):
    tensors = [torch.tensor(init, dtype=TORCH_DTYPE[dtype], requires_grad=True)
               for _, _, init, _ in params]
    bs = [torch.tensor(b, dtype=TORCH_DTYPE[dtype]) for _, _, _, b in params]
    split = np.array_split(np.arange(len(params)), len(groups))
    torch_groups = [dict({"params": [tensors[i] for i in idx]}, **torch_options(g))
                    for idx, g in zip(split, groups)]
    opt = TORCH_OPT[kind](torch_groups, **torch_options(defaults))
    norms = []
    for _ in range(steps):
        with torch.no_grad():
            for t, b in zip(tensors, bs):
                t.grad = torch_gradient(t.detach(), b)
        if clip is not None and "norm" in clip:
            norm_type = math.inf if clip["norm"] == "inf" else float(clip["norm"])
            norms.append(float(torch.nn.utils.clip_grad_norm_(tensors, clip["max"], norm_type)))
        if clip is not None and "value" in clip:
            torch.nn.utils.clip_grad_value_(tensors, clip["value"])
        opt.step()
        opt.zero_grad(set_to_none=True)
    return [t.detach().numpy().astype(np.float64).ravel() for t in tensors], norms


def run_yaten(tmp_path, kind, defaults, groups, params, dtype, steps, threads=1, clip=None):
    lines = [f"dtype {dtype}", f"threads {threads}", f"steps {steps}",
             f"optimizer {kind} {spec_options(defaults)}"]
    split = np.array_split(np.arange(len(params)), len(groups))
    for idx, g in zip(split, groups):
        lines.append(f"group {spec_options(g)}")
        for i in idx:
            name, shape, init, b = params[i]
            init_path, b_path = tmp_path / f"{name}.init", tmp_path / f"{name}.b"
            init.tofile(init_path)
            b.tofile(b_path)
            sizes = "x".join(str(s) for s in shape) if shape else "-"  # "-": 0-d
            lines.append(f"param {name} {sizes} {init_path} {b_path}")
    if clip is not None:
        lines.append("clip " + " ".join(f"{k}={v}" for k, v in clip.items()))
    out = run_runner(tmp_path, lines)
    finals = [out[("final", name)] for name, _, _, _ in params]
    norms = [out[("norm", s)][0] for s in range(1, steps + 1) if ("norm", s) in out]
    return finals, norms


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("case", sorted(OPT_CASES))
def test_optimizer(tmp_path, case, dtype):
    kind, defaults, groups = OPT_CASES[case]
    params = make_params(zlib.crc32(case.encode()), dtype, SHAPES)
    want, _ = run_torch(kind, defaults, groups, params, dtype, OPT_STEPS)
    got, _ = run_yaten(tmp_path, kind, defaults, groups, params, dtype, OPT_STEPS)
    for (name, _, _, _), g, w in zip(params, got, want):
        assert_close(g, w, 1e-6, f"{case} {dtype} param {name} after {OPT_STEPS} steps")


@pytest.mark.parametrize("kind,defaults", [
    ("sgd", {"lr": 0.02, "momentum": 0.9, "weight_decay": 0.01}),
    ("adam", {"lr": 0.01, "amsgrad": 1}),
    ("rmsprop", {"lr": 0.002, "centered": 1, "momentum": 0.5}),
])
def test_optimizer_threads(tmp_path, kind, defaults):
    """A parameter above the threading threshold, updated in chunks by 2 threads."""
    params = make_params(7, "f32", [("big", (211, 199)), ("small", (3,))])
    want, _ = run_torch(kind, defaults, [{}], params, "f32", 20)
    got, _ = run_yaten(tmp_path, kind, defaults, [{}], params, "f32", 20, threads=2)
    for (name, _, _, _), g, w in zip(params, got, want):
        assert_close(g, w, 1e-6, f"{kind} 2 threads param {name}")


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("clip", [{"norm": 2, "max": 1.0}, {"norm": 1, "max": 2.0},
                                  {"norm": "inf", "max": 0.5}, {"norm": 3, "max": 1.0},
                                  {"value": 0.25}])
def test_clip_grad(tmp_path, clip, dtype):
    """Clipping before each SGD step: the total norms and the final parameters. PyTorch sums an
    f32 p-norm in f32 and yaten in f64, so f32 norms of finite p agree to rounding only, and the
    last-bit differences of the clipping coefficient grow over 50 steps: 1e-5 for those."""
    defaults = {"lr": 0.05, "momentum": 0.9}
    params = make_params(11, dtype, SHAPES)
    want, want_norms = run_torch("sgd", defaults, [{}], params, dtype, OPT_STEPS, clip)
    got, got_norms = run_yaten(tmp_path, "sgd", defaults, [{}], params, dtype, OPT_STEPS,
                               clip=clip)
    rtol = 1e-12 if dtype == "f64" else 1e-5 if clip.get("norm", "inf") != "inf" else 1e-6
    if "norm" in clip:
        assert len(got_norms) == OPT_STEPS
        assert_close(got_norms, want_norms, rtol, f"clip {clip} {dtype} total norms")
    for (name, _, _, _), g, w in zip(params, got, want):
        assert_close(g, w, rtol, f"clip {clip} {dtype} param {name}")


# ---------------------------------------------------------------------------- schedulers

GROUP_LRS = [0.1, 0.05]


def torch_scheduler(opt, kind, o):
    S = torch.optim.lr_scheduler
    if kind == "step":
        return S.StepLR(opt, o["step_size"], o["gamma"])
    if kind == "multistep":
        return S.MultiStepLR(opt, [int(m) for m in str(o["milestones"]).split(",")], o["gamma"])
    if kind == "exponential":
        return S.ExponentialLR(opt, o["gamma"])
    if kind == "cosine":
        return S.CosineAnnealingLR(opt, o["T_max"], o.get("eta_min", 0))
    if kind == "linear":
        return S.LinearLR(opt, o["start_factor"], o["end_factor"], o["total_iters"])
    if kind == "onecycle":
        kw = {k: v for k, v in o.items() if k not in ("max_lr", "total_steps")}
        for k in ("cycle_momentum", "three_phase"):
            if k in kw:
                kw[k] = bool(kw[k])
        return S.OneCycleLR(opt, o["max_lr"], total_steps=o["total_steps"], **kw)
    if kind == "plateau":
        return S.ReduceLROnPlateau(opt, **o)
    raise ValueError(kind)


def momentum_of(group):
    return group["betas"][0] if "betas" in group else group["momentum"]


def sched_spec(kind, o):
    return f"sched {kind} " + " ".join(f"{k}={v}" for k, v in o.items())


# Each case: optimizer kind, the schedulers [(kind, options)], the SequentialLR milestones (None:
# one scheduler alone), the metrics for ReduceLROnPlateau.
PLATEAU_METRICS = [1.0 / (1 + 0.05 * i) + 0.02 * math.sin(1.7 * i) + (0.3 if i % 23 == 0 else 0)
                   for i in range(SCHED_STEPS)]
SCHED_CASES = {
    "step": ("sgd", [("step", {"step_size": 30, "gamma": 0.1})], None),
    "step_small": ("sgd", [("step", {"step_size": 7, "gamma": 0.5})], None),
    "multistep": ("sgd", [("multistep", {"milestones": "30,80", "gamma": 0.1})], None),
    "multistep_repeated": ("sgd", [("multistep", {"milestones": "40,10,10", "gamma": 0.5})], None),
    "exponential": ("sgd", [("exponential", {"gamma": 0.95})], None),
    "cosine": ("sgd", [("cosine", {"T_max": 100, "eta_min": 0.001})], None),
    "cosine_restart": ("sgd", [("cosine", {"T_max": 30, "eta_min": 0.0})], None),
    "linear_warmup": ("sgd", [("linear", {"start_factor": 0.25, "end_factor": 1.0,
                                          "total_iters": 10})], None),
    "linear_decay": ("sgd", [("linear", {"start_factor": 1.0, "end_factor": 0.1,
                                         "total_iters": 50})], None),
    "onecycle_cos": ("sgd", [("onecycle", {"max_lr": 1.0, "total_steps": 100})], None),
    "onecycle_linear": ("sgd", [("onecycle", {"max_lr": 0.5, "total_steps": 120,
                                              "anneal_strategy": "linear", "pct_start": 0.25})],
                        None),
    "onecycle_adam": ("adam", [("onecycle", {"max_lr": 0.01, "total_steps": 100,
                                             "base_momentum": 0.8, "max_momentum": 0.9,
                                             "div_factor": 10.0})], None),
    "onecycle_three_phase": ("sgd", [("onecycle", {"max_lr": 1.0, "total_steps": 100,
                                                   "three_phase": 1, "final_div_factor": 100.0})],
                             None),
    "onecycle_no_momentum": ("sgd", [("onecycle", {"max_lr": 0.3, "total_steps": 100,
                                                   "cycle_momentum": 0})], None),
    "plateau_min_rel": ("sgd", [("plateau", {"mode": "min", "factor": 0.5, "patience": 3,
                                             "threshold": 0.01})], None),
    "plateau_max_abs_cooldown": ("sgd", [("plateau", {"mode": "max", "factor": 0.3,
                                                      "patience": 2, "threshold": 0.001,
                                                      "threshold_mode": "abs", "cooldown": 4,
                                                      "min_lr": 0.004})], None),
    "sequential_warmup_cosine": ("sgd", [("linear", {"start_factor": 0.1, "end_factor": 1.0,
                                                     "total_iters": 5}),
                                         ("cosine", {"T_max": 95, "eta_min": 0.0001})], [5]),
    "sequential_three": ("sgd", [("linear", {"start_factor": 0.5, "end_factor": 1.0,
                                             "total_iters": 10}),
                                 ("exponential", {"gamma": 0.97}),
                                 ("step", {"step_size": 15, "gamma": 0.5})], [10, 40]),
    "sequential_onecycle": ("sgd", [("linear", {"start_factor": 0.2, "end_factor": 1.0,
                                                "total_iters": 8}),
                                    ("onecycle", {"max_lr": 0.8, "total_steps": 95})], [8]),
}


def run_torch_schedule(kind, scheds, milestones, metrics):
    params = [torch.zeros((), dtype=torch.float64, requires_grad=True) for _ in GROUP_LRS]
    groups = [{"params": [p], "lr": lr} for p, lr in zip(params, GROUP_LRS)]
    opt = (torch.optim.SGD(groups, lr=GROUP_LRS[0], momentum=0.9) if kind == "sgd"
           else torch.optim.Adam(groups, lr=GROUP_LRS[0]))
    subs = [torch_scheduler(opt, k, dict(o)) for k, o in scheds]
    sched = torch.optim.lr_scheduler.SequentialLR(opt, subs, milestones) if milestones else subs[0]
    lrs, moms = [], []

    def record():
        lrs.append([g["lr"] for g in opt.param_groups])
        moms.append([momentum_of(g) for g in opt.param_groups])

    record()
    for step in range(SCHED_STEPS):
        opt.step()
        if metrics is not None:
            sched.step(metrics[step])
        else:
            sched.step()
        record()
    return np.array(lrs), np.array(moms)


@pytest.mark.parametrize("case", sorted(SCHED_CASES))
def test_scheduler(tmp_path, case):
    kind, scheds, milestones = SCHED_CASES[case]
    metrics = PLATEAU_METRICS if scheds[0][0] == "plateau" else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want_lr, want_mom = run_torch_schedule(kind, scheds, milestones, metrics)
    lines = [f"steps {SCHED_STEPS}", f"optimizer {kind} lr={GROUP_LRS[0]!r}"
             + (" momentum=0.9" if kind == "sgd" else "")]
    lines += [f"group lr={lr!r}" for lr in GROUP_LRS]
    if milestones:
        lines.append("sequential milestones=" + ",".join(str(m) for m in milestones))
    lines += [sched_spec(k, o) for k, o in scheds]
    if metrics is not None:
        lines.append("metrics " + ",".join(repr(m) for m in metrics))
    out = run_runner(tmp_path, lines)
    got_lr = np.array([out[("lr", s)] for s in range(SCHED_STEPS + 1)])
    got_mom = np.array([out[("momentum", s)] for s in range(SCHED_STEPS + 1)])
    assert_close(got_lr.ravel(), want_lr.ravel(), 1e-12, f"{case} learning rates")
    assert_close(got_mom.ravel(), want_mom.ravel(), 1e-12, f"{case} momentum")
