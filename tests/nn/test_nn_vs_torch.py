"""yaten's nn modules against torch.nn: the same weights, inputs and upstream gradient go through
both, and the outputs, input gradients, parameter gradients and state after the forward pass
(BatchNorm's running statistics) must agree.

Each case builds a torch module, writes its state dict ("model.<name>"), the inputs and a random
grad_output as raw little-endian files plus a manifest, and runs tests/nn/runner.c on them. The
runner builds the yaten module from config.txt and loads the state dict strictly, so every name
must be PyTorch's; the test also checks that yaten lists parameters and state in PyTorch's order.

Values are compared in f64 (tight: any formula difference shows) and, for a few cases, in f32 to
1e-5. PyTorch 1.13 has no is_causal argument on MultiheadAttention: the causal cases give torch
the equivalent explicit mask."""

import os
import subprocess

import numpy as np
import pytest
import torch
from torch import nn

# PyTorch warns that padding="same" with an even kernel may copy the input: expected here.
pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same'")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNNER = os.environ.get("YT_NN_RUNNER", os.path.join(ROOT, "build", "tests", "nn_runner"))

NP_DTYPE = {"f64": np.float64, "i64": np.int64, "f32": np.float32, "bool": np.bool_}
TORCH_NAME = {torch.float64: "f64", torch.float32: "f32", torch.int64: "i64", torch.bool: "bool"}
# (rtol, atol) per dtype the case runs in
TOLERANCE = {"f64": (1e-9, 1e-10), "f32": (1e-5, 1e-5)}


def causal_mask(n):
    return torch.ones(n, n, dtype=torch.bool).triu(1)


def randn(*shape):
    return torch.randn(*shape, dtype=torch.float64)


# Each case: yaten config, torch module factory, inputs, and optionally how torch runs forward
# (default: module(input)); "torch_extra" inputs go to torch only.
CASES = {
    "linear": dict(config=dict(kind="linear", **{"in": 5, "out": 3}),
                   torch=lambda: nn.Linear(5, 3), inputs=lambda: {"input": randn(4, 2, 5)}),
    "linear_nobias": dict(config=dict(kind="linear", bias=0, **{"in": 5, "out": 3}),
                          torch=lambda: nn.Linear(5, 3, bias=False),
                          inputs=lambda: {"input": randn(4, 5)}),
    "conv2d": dict(config=dict(kind="conv2d", k=3, stride=2, padding=1, out=4, **{"in": 3}),
                   torch=lambda: nn.Conv2d(3, 4, 3, stride=2, padding=1),
                   inputs=lambda: {"input": randn(2, 3, 9, 8)}),
    "conv2d_groups_dilation": dict(
        config=dict(kind="conv2d", k=3, dilation=2, groups=2, padding_h=2, padding_w=1, out=6,
                    bias=0, **{"in": 4}),
        torch=lambda: nn.Conv2d(4, 6, 3, dilation=2, groups=2, padding=(2, 1), bias=False),
        inputs=lambda: {"input": randn(2, 4, 7, 7)}),
    "conv2d_same_reflect": dict(
        config=dict(kind="conv2d", k=4, same=1, padding_mode="reflect", out=2, **{"in": 3}),
        torch=lambda: nn.Conv2d(3, 2, 4, padding="same", padding_mode="reflect"),
        inputs=lambda: {"input": randn(2, 3, 6, 7)}),
    "conv2d_replicate": dict(
        config=dict(kind="conv2d", k=3, padding=2, padding_mode="replicate", out=2, **{"in": 1}),
        torch=lambda: nn.Conv2d(1, 2, 3, padding=2, padding_mode="replicate"),
        inputs=lambda: {"input": randn(3, 1, 5, 5)}),
    "conv2d_unbatched": dict(config=dict(kind="conv2d", k=3, out=2, **{"in": 3}),
                             torch=lambda: nn.Conv2d(3, 2, 3),
                             inputs=lambda: {"input": randn(3, 6, 6)}),
    "conv1d": dict(config=dict(kind="conv1d", k=3, stride=2, padding=1, out=4, **{"in": 2}),
                   torch=lambda: nn.Conv1d(2, 4, 3, stride=2, padding=1),
                   inputs=lambda: {"input": randn(3, 2, 11)}),
    "conv1d_same": dict(config=dict(kind="conv1d", k=4, same=1, out=3, **{"in": 2}),
                        torch=lambda: nn.Conv1d(2, 3, 4, padding="same"),
                        inputs=lambda: {"input": randn(2, 2, 9)}),
    "conv_transpose2d": dict(
        config=dict(kind="conv_transpose2d", k=3, stride=2, padding=1, output_padding=1, out=4,
                    **{"in": 3}),
        torch=lambda: nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1),
        inputs=lambda: {"input": randn(2, 3, 5, 4)}),
    # output_padding at the stride, allowed below the dilation
    "conv_transpose2d_dilated": dict(
        config=dict(kind="conv_transpose2d", k=3, stride=1, padding=1, output_padding=1, dilation=2,
                    out=4, **{"in": 3}),
        torch=lambda: nn.ConvTranspose2d(3, 4, 3, stride=1, padding=1, output_padding=1, dilation=2),
        inputs=lambda: {"input": randn(2, 3, 5, 4)}),
    "batch_norm2d_train": dict(
        config=dict(kind="batch_norm2d", features=3, momentum=0.3, eval_after=1),
        torch=lambda: nn.BatchNorm2d(3, momentum=0.3), inputs=lambda: {"input": randn(4, 3, 5, 5)},
        prepare=lambda m: randomize_bn(m)),
    "batch_norm2d_eval": dict(
        config=dict(kind="batch_norm2d", features=3, mode="eval"),
        torch=lambda: nn.BatchNorm2d(3), inputs=lambda: {"input": randn(4, 3, 5, 5)},
        prepare=lambda m: randomize_bn(m), mode="eval"),
    "batch_norm2d_cumulative": dict(
        config=dict(kind="batch_norm2d", features=2, momentum="nan", affine=0),
        torch=lambda: nn.BatchNorm2d(2, momentum=None, affine=False),
        inputs=lambda: {"input": randn(3, 2, 4, 4)}, prepare=lambda m: randomize_bn(m)),
    "batch_norm1d_3d": dict(config=dict(kind="batch_norm1d", features=4, eval_after=1),
                            torch=lambda: nn.BatchNorm1d(4),
                            inputs=lambda: {"input": randn(5, 4, 3)}),
    "batch_norm1d_no_stats": dict(config=dict(kind="batch_norm1d", features=4, track=0,
                                              mode="eval"),
                                  torch=lambda: nn.BatchNorm1d(4, track_running_stats=False),
                                  inputs=lambda: {"input": randn(6, 4)}, mode="eval"),
    "layer_norm": dict(config=dict(kind="layer_norm", d0=3, d1=4, eps=1e-3),
                       torch=lambda: nn.LayerNorm([3, 4], eps=1e-3),
                       inputs=lambda: {"input": randn(2, 5, 3, 4)},
                       prepare=lambda m: randomize_params(m)),
    "group_norm": dict(config=dict(kind="group_norm", groups=2, channels=6),
                       torch=lambda: nn.GroupNorm(2, 6), inputs=lambda: {"input": randn(3, 6, 4, 2)},
                       prepare=lambda m: randomize_params(m)),
    "embedding": dict(config=dict(kind="embedding", num=10, dim=4, padding_idx=2),
                      torch=lambda: nn.Embedding(10, 4, padding_idx=2),
                      inputs=lambda: {"input": torch.tensor([[1, 2, 3], [2, 9, 1]])}),
    "max_pool2d": dict(config=dict(kind="max_pool2d", k=3, stride=2, padding=1, ceil_mode=1),
                       torch=lambda: nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True),
                       inputs=lambda: {"input": randn(2, 3, 8, 7)}),
    "avg_pool2d": dict(config=dict(kind="avg_pool2d", k=2, stride=1, padding=1,
                                   count_include_pad=0),
                       torch=lambda: nn.AvgPool2d(2, stride=1, padding=1, count_include_pad=False),
                       inputs=lambda: {"input": randn(2, 3, 5, 4)}),
    "adaptive_avg_pool2d": dict(config=dict(kind="adaptive_avg_pool2d", oh=3, ow=2),
                                torch=lambda: nn.AdaptiveAvgPool2d((3, 2)),
                                inputs=lambda: {"input": randn(2, 3, 7, 5)}),
    "activations": dict(
        config=dict(kind="activations"),
        torch=lambda: nn.Sequential(nn.Linear(6, 6), nn.ELU(0.7), nn.LeakyReLU(0.2), nn.SiLU(),
                                    nn.GELU(approximate="tanh"), nn.Tanh(), nn.Sigmoid(),
                                    nn.Softmax(dim=-1)),
        inputs=lambda: {"input": randn(5, 6)}),
    "mlp": dict(config=dict(kind="mlp"),
                torch=lambda: nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(),
                                            nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10)),
                inputs=lambda: {"input": randn(3, 1, 28, 28)}),
    "cnn": dict(config=dict(kind="cnn", eval_after=1),
                torch=lambda: nn.Sequential(
                    nn.Conv2d(1, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                    nn.Conv2d(8, 16, 3), nn.GELU(), nn.MaxPool2d(2), nn.Flatten(),
                    nn.Linear(400, 10), nn.LogSoftmax(1)),
                inputs=lambda: {"input": randn(4, 1, 28, 28)}),
    # ---- attention
    "mha_self": dict(config=dict(kind="mha", embed_dim=8, heads=2),
                     torch=lambda: nn.MultiheadAttention(8, 2),
                     inputs=lambda: {"query": randn(5, 3, 8)},
                     forward=lambda m, i: m(i["query"], i["query"], i["query"],
                                            need_weights=False)[0]),
    "mha_self_batch_first_weights": dict(
        config=dict(kind="mha", embed_dim=12, heads=3, batch_first=1, need_weights=1),
        torch=lambda: nn.MultiheadAttention(12, 3, batch_first=True),
        inputs=lambda: {"query": randn(2, 6, 12)},
        forward=lambda m, i: m(i["query"], i["query"], i["query"], need_weights=True)),
    "mha_cross_kv_bool_mask": dict(
        config=dict(kind="mha", embed_dim=8, heads=4),
        torch=lambda: nn.MultiheadAttention(8, 4),
        inputs=lambda: {"query": randn(4, 2, 8), "key": randn(6, 2, 8),
                        "attn_mask": torch.rand(4, 6) < 0.3},
        forward=lambda m, i: m(i["query"], i["key"], i["key"], attn_mask=i["attn_mask"],
                               need_weights=False)[0]),
    "mha_qkv_float_mask_per_head_weights": dict(
        config=dict(kind="mha", embed_dim=6, heads=2, batch_first=1, need_weights=1, average=0),
        torch=lambda: nn.MultiheadAttention(6, 2, batch_first=True),
        inputs=lambda: {"query": randn(2, 3, 6), "key": randn(2, 5, 6), "value": randn(2, 5, 6),
                        "attn_mask": randn(2 * 2, 3, 5)},
        forward=lambda m, i: m(i["query"], i["key"], i["value"], attn_mask=i["attn_mask"],
                               need_weights=True, average_attn_weights=False)),
    "mha_key_padding_and_mask": dict(
        config=dict(kind="mha", embed_dim=8, heads=2),
        torch=lambda: nn.MultiheadAttention(8, 2),
        inputs=lambda: {"query": randn(5, 2, 8), "attn_mask": causal_mask(5),
                        "key_padding_mask": torch.tensor([[False] * 4 + [True],
                                                          [False] * 3 + [True] * 2])},
        forward=lambda m, i: m(i["query"], i["query"], i["query"], attn_mask=i["attn_mask"],
                               key_padding_mask=i["key_padding_mask"], need_weights=False)[0]),
    "mha_causal": dict(
        config=dict(kind="mha", embed_dim=8, heads=2, batch_first=1, is_causal=1),
        torch=lambda: nn.MultiheadAttention(8, 2, batch_first=True),
        inputs=lambda: {"query": randn(3, 6, 8)}, torch_extra=lambda: {"causal": causal_mask(6)},
        forward=lambda m, i: m(i["query"], i["query"], i["query"], attn_mask=i["causal"],
                               need_weights=False)[0]),
    "mha_causal_weights": dict(
        config=dict(kind="mha", embed_dim=8, heads=2, is_causal=1, need_weights=1),
        torch=lambda: nn.MultiheadAttention(8, 2),
        inputs=lambda: {"query": randn(4, 2, 8)}, torch_extra=lambda: {"causal": causal_mask(4)},
        forward=lambda m, i: m(i["query"], i["query"], i["query"], attn_mask=i["causal"])),
    "mha_unbatched_nobias": dict(
        config=dict(kind="mha", embed_dim=4, heads=2, bias=0),
        torch=lambda: nn.MultiheadAttention(4, 2, bias=False),
        inputs=lambda: {"query": randn(3, 4), "key": randn(5, 4)},
        forward=lambda m, i: m(i["query"], i["key"], i["key"], need_weights=False)[0]),
    "encoder_post_norm": dict(
        config=dict(kind="encoder", d_model=8, nhead=2, dim_ff=16),
        torch=lambda: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0),
        inputs=lambda: {"input": randn(5, 3, 8)}, prepare=lambda m: randomize_params(m)),
    "encoder_norm_first_gelu_batch_first": dict(
        config=dict(kind="encoder", d_model=12, nhead=3, dim_ff=20, activation="gelu",
                    norm_first=1, batch_first=1),
        torch=lambda: nn.TransformerEncoderLayer(12, 3, 20, dropout=0.0, activation="gelu",
                                                 norm_first=True, batch_first=True),
        inputs=lambda: {"input": randn(2, 7, 12)}, prepare=lambda m: randomize_params(m)),
    "encoder_masks": dict(
        config=dict(kind="encoder", d_model=8, nhead=2, dim_ff=16, batch_first=1),
        torch=lambda: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True),
        inputs=lambda: {"input": randn(2, 5, 8), "attn_mask": causal_mask(5),
                        "key_padding_mask": torch.tensor([[False] * 5, [False] * 3 + [True] * 2])},
        forward=lambda m, i: m(i["input"], src_mask=i["attn_mask"],
                               src_key_padding_mask=i["key_padding_mask"])),
    "encoder_causal": dict(
        config=dict(kind="encoder", d_model=8, nhead=4, dim_ff=8, is_causal=1),
        torch=lambda: nn.TransformerEncoderLayer(8, 4, 8, dropout=0.0),
        inputs=lambda: {"input": randn(6, 2, 8)}, torch_extra=lambda: {"causal": causal_mask(6)},
        forward=lambda m, i: m(i["input"], src_mask=i["causal"])),
    # ---- losses (reduction: 0 mean, 1 sum, 2 none)
    "cross_entropy": dict(
        config=dict(kind="cross_entropy", ignore_index=1, label_smoothing=0.1),
        torch=lambda: nn.CrossEntropyLoss(ignore_index=1, label_smoothing=0.1),
        inputs=lambda: {"input": randn(6, 4), "target": torch.tensor([0, 1, 3, 2, 1, 3])},
        forward=lambda m, i: m(i["input"], i["target"])),
    "cross_entropy_weight_sum": dict(
        config=dict(kind="cross_entropy", reduction=1),
        torch=lambda: nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 0.5]), reduction="sum"),
        inputs=lambda: {"input": randn(5, 3, 2), "target": torch.randint(0, 3, (5, 2)),
                        "weight": torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64)},
        forward=lambda m, i: m(i["input"], i["target"])),
    "cross_entropy_probabilities": dict(
        config=dict(kind="cross_entropy", reduction=2),
        torch=lambda: nn.CrossEntropyLoss(reduction="none"),
        inputs=lambda: {"input": randn(4, 5), "target": torch.softmax(randn(4, 5), 1)},
        forward=lambda m, i: m(i["input"], i["target"])),
    "nll": dict(config=dict(kind="nll"), torch=lambda: nn.NLLLoss(),
                inputs=lambda: {"input": torch.log_softmax(randn(5, 4), 1),
                                "target": torch.tensor([3, 0, 1, 1, 2])},
                forward=lambda m, i: m(i["input"], i["target"])),
    "mse": dict(config=dict(kind="mse"), torch=lambda: nn.MSELoss(),
                inputs=lambda: {"input": randn(3, 4), "target": randn(3, 4)},
                forward=lambda m, i: m(i["input"], i["target"])),
    "l1_sum": dict(config=dict(kind="l1", reduction=1), torch=lambda: nn.L1Loss(reduction="sum"),
                   inputs=lambda: {"input": randn(3, 4), "target": randn(3, 4)},
                   forward=lambda m, i: m(i["input"], i["target"])),
    "smooth_l1": dict(config=dict(kind="smooth_l1", beta=0.5), torch=lambda: nn.SmoothL1Loss(beta=0.5),
                      inputs=lambda: {"input": randn(10), "target": randn(10)},
                      forward=lambda m, i: m(i["input"], i["target"])),
    "huber_none": dict(config=dict(kind="huber", delta=0.7, reduction=2),
                       torch=lambda: nn.HuberLoss(delta=0.7, reduction="none"),
                       inputs=lambda: {"input": randn(8), "target": randn(8)},
                       forward=lambda m, i: m(i["input"], i["target"])),
    "bce": dict(config=dict(kind="bce"), torch=lambda: nn.BCELoss(),
                inputs=lambda: {"input": torch.sigmoid(randn(4, 3)),
                                "target": torch.rand(4, 3, dtype=torch.float64)},
                forward=lambda m, i: m(i["input"], i["target"])),
    "bce_with_logits_pos_weight": dict(
        config=dict(kind="bce_with_logits"),
        torch=lambda: nn.BCEWithLogitsLoss(pos_weight=torch.tensor([1.0, 3.0, 0.5])),
        inputs=lambda: {"input": randn(4, 3), "target": (torch.rand(4, 3) < 0.5).double(),
                        "pos_weight": torch.tensor([1.0, 3.0, 0.5], dtype=torch.float64)},
        forward=lambda m, i: m(i["input"], i["target"])),
}

# The same models in f32, compared to 1e-5 as the issue asks.
for name in ("conv2d", "batch_norm2d_train", "mha_self_batch_first_weights",
             "encoder_post_norm", "cnn"):
    CASES[name + "_f32"] = dict(CASES[name], dtype="f32")


def randomize_params(m):
    """Norm layers start at weight 1, bias 0: random values make the test see them."""
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.randn_like(p))


def randomize_bn(m):
    randomize_params(m)
    with torch.no_grad():
        if m.running_mean is not None:
            m.running_mean.copy_(torch.randn_like(m.running_mean))
            m.running_var.copy_(torch.rand_like(m.running_var) + 0.5)
            m.num_batches_tracked.fill_(3)


def write_tensors(folder, tensors):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "manifest.txt"), "w") as manifest:
        for name, t in tensors.items():
            t = t.detach().contiguous()
            manifest.write(f"{name} {TORCH_NAME[t.dtype]} {t.dim()} "
                           + " ".join(str(s) for s in t.shape) + "\n")
            t.numpy().astype(t.numpy().dtype.newbyteorder("<")).tofile(
                os.path.join(folder, name + ".bin"))


def read_tensors(folder):
    out, order = {}, []
    with open(os.path.join(folder, "manifest.txt")) as manifest:
        for line in manifest:
            parts = line.split()
            name, dtype, ndim = parts[0], parts[1], int(parts[2])
            shape = [int(s) for s in parts[3:3 + ndim]]
            data = np.fromfile(os.path.join(folder, name + ".bin"), dtype=NP_DTYPE[dtype])
            out[name] = data.reshape(shape)
            order.append(name)
    return out, order


def torch_reference(case, dtype):
    """Runs the case through torch; returns (files for the runner, expected outputs)."""
    module = case["torch"]()
    if "prepare" in case:
        case["prepare"](module)
    module = module.to(torch.float64 if dtype == "f64" else torch.float32)
    module.train(case.get("mode", "train") == "train")
    inputs = case["inputs"]()
    fdtype = torch.float64 if dtype == "f64" else torch.float32
    inputs = {k: v.to(fdtype) if v.is_floating_point() else v for k, v in inputs.items()}
    files = {"model." + k: v.clone() for k, v in module.state_dict().items()}
    files.update({k: v.clone() for k, v in inputs.items()})
    for k, v in inputs.items():
        if v.is_floating_point() and k in ("input", "query", "key", "value"):
            v.requires_grad_(True)
    extra = case["torch_extra"]() if "torch_extra" in case else {}
    args = dict(inputs, **extra)
    if "weight" in args or "pos_weight" in args:  # loss weights: already in the module
        args.pop("weight", None)
        args.pop("pos_weight", None)
    forward = case.get("forward", lambda m, i: m(i["input"]))
    result = forward(module, args)
    weights = None
    if isinstance(result, tuple):
        result, weights = result
    grad_output = torch.randn(result.shape, dtype=fdtype)
    files["grad_output"] = grad_output
    (result * grad_output).sum().backward()

    expected = {"output": result.detach()}
    if weights is not None:
        expected["weights"] = weights.detach()
    for k, v in inputs.items():
        if v.requires_grad:
            expected["grad." + k] = v.grad
    params = [(n, p) for n, p in module.named_parameters()]
    for n, p in params:
        expected["grad.model." + n] = p.grad
    for n, t in module.state_dict().items():
        expected["state." + n] = t
    if case["config"].get("eval_after"):
        module.eval()
        with torch.no_grad():
            expected["eval_output"] = module(inputs["input"])
    return files, expected, [n for n, _ in params], list(module.state_dict().keys())


@pytest.mark.parametrize("name", sorted(CASES))
def test_module_matches_torch(name, tmp_path):
    case = CASES[name]
    dtype = case.get("dtype", "f64")
    torch.manual_seed(sorted(CASES).index(name))
    files, expected, param_names, state_names = torch_reference(case, dtype)
    write_tensors(tmp_path / "in", files)
    config = dict(case["config"], dtype=dtype)
    (tmp_path / "config.txt").write_text("".join(f"{k}={v}\n" for k, v in config.items()))

    proc = subprocess.run([RUNNER, str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 0, f"{RUNNER} failed:\n{proc.stdout}\n{proc.stderr}"
    got, order = read_tensors(tmp_path / "out")

    # PyTorch's names, in PyTorch's order (what state dicts and optimizers see).
    assert [n[len("grad.model."):] for n in order if n.startswith("grad.model.")] == param_names
    assert [n[len("state."):] for n in order if n.startswith("state.")] == state_names

    rtol, atol = TOLERANCE[dtype]
    for key, want in expected.items():
        if want is None:  # a parameter torch gives no gradient (none here, but keep it exact)
            continue
        assert key in got, f"yaten wrote no '{key}' (it wrote {sorted(got)})"
        want = want.detach().numpy()
        have = got[key]
        assert have.shape == want.shape, f"{key}: shape {have.shape}, torch {want.shape}"
        if want.dtype == np.int64:
            assert np.array_equal(have, want), f"{key}: {have} != {want}"
            continue
        want = want.astype(np.float64)
        bad = ~np.isclose(have, want, rtol=rtol, atol=atol, equal_nan=True)
        if bad.any():
            diff = np.abs(have - want)
            first = np.argwhere(bad)[:5]
            pytest.fail(f"{key}: {bad.sum()} of {bad.size} differ, max |diff| "
                        f"{np.nanmax(diff):.3g}; first at {first.tolist()}: "
                        f"yaten {have[tuple(first[0])]}, torch {want[tuple(first[0])]}")
