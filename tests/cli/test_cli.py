"""The `yaten` command as a user runs it (make test-cli; YATEN names the binary).

Usage errors and help, `yaten ops` against ops.yaml, config errors with their CONFIG:LINE:COL,
the weights a run writes loading into the same torch.nn.Sequential with the same test loss,
Ctrl-C saving a checkpoint that resumes bit-identically, the progress bar on a terminal and the
plain lines off one, and the gnuplot plot.
"""
import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

ROOT = Path(__file__).resolve().parents[2]
YATEN = str((ROOT / os.environ.get("YATEN", "build/yaten")).resolve())


def yaten(*args, cwd=None, env=None, timeout=600):
    return subprocess.run([YATEN, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def write_dataset(folder, n_train=256, n_test=64, features=8, classes=4, seed=0):
    """Classes from a random linear teacher, as float32 inputs and int64 labels in .npy files."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n_train + n_test, features)).astype(np.float32)
    y = (x @ rng.normal(size=(features, classes))).argmax(1).astype(np.int64)
    np.save(folder / "x.npy", x[:n_train])
    np.save(folder / "y.npy", y[:n_train])
    np.save(folder / "xt.npy", x[n_train:])
    np.save(folder / "yt.npy", y[n_train:])
    return x[n_train:], y[n_train:]


CONFIG = """\
data:
  dataset: npy
  train: {inputs: x.npy, targets: y.npy}
  test: {inputs: xt.npy, targets: yt.npy}
  batch_size: 16
model:
  layers:
    - linear: {out: 32}
    - batch_norm1d
    - relu
    - dropout: 0.1
    - linear: {out: 4}
optimizer: {name: sgd, lr: 0.05, momentum: 0.9}
epochs: 2
seed: 5
output: run
"""


def read_safetensors(path):
    """A small reader written from the format's spec: u64 header length, JSON header, data."""
    raw = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    dtypes = {"F32": np.float32, "F64": np.float64, "I64": np.int64}
    tensors = {}
    for name, e in header.items():
        begin, end = e["data_offsets"]
        buf = raw[8 + n + begin:8 + n + end]
        tensors[name] = np.frombuffer(buf, dtype=dtypes[e["dtype"]]).reshape(e["shape"])
    return tensors, meta


# ---- usage and help


def test_usage_errors_and_help():
    r = yaten()
    assert r.returncode == 2 and "usage: yaten <command>" in r.stderr
    r = yaten("trian")
    assert r.returncode == 2
    assert r.stderr == "yaten: unknown command 'trian' (did you mean 'train'?)\n"
    r = yaten("train", "--epoch", "3")
    assert r.returncode == 2
    assert r.stderr == "yaten train: unknown option '--epoch' (did you mean '--epochs'?)\n"
    r = yaten("eval", "x.yaml")
    assert r.returncode == 2 and "--checkpoint FILE is required" in r.stderr
    for cmd in ["train", "eval", "check", "inspect", "ops", "config"]:
        r = yaten(cmd, "--help")
        assert r.returncode == 0 and r.stdout.startswith("usage: yaten " + cmd), cmd
    r = yaten("help", "layers")
    assert r.returncode == 0
    assert "conv2d: 2-D convolution" in r.stdout and "kernel_size" in r.stdout
    assert "optimizer:" in yaten("help", "config").stdout
    assert yaten("--version").stdout.startswith("yaten 0.")


def test_ops_lists_the_registry_of_ops_yaml():
    entries = yaml.safe_load((ROOT / "ops.yaml").read_text())
    schemas = [e["func"] for e in entries]
    r = yaten("ops", "--brief")
    assert r.returncode == 0
    assert r.stdout.splitlines() == schemas
    r = yaten("ops", "conv2d")
    assert r.returncode == 0 and "conv2d(Tensor input" in r.stdout
    assert yaten("ops", "no_such_op").returncode == 1


def test_the_default_config_is_printed_and_valid(tmp_path):
    r = yaten("config")
    assert r.returncode == 0
    assert r.stdout == (ROOT / "examples/fashion_cnn.yaml").read_text()
    cfg = yaml.safe_load(r.stdout)
    assert cfg["data"]["dataset"] == "fashion-mnist" and cfg["epochs"] <= 3


# ---- config errors


def test_config_errors_name_line_and_column(tmp_path):
    write_dataset(tmp_path)
    (tmp_path / "bad.yaml").write_text(
        "data:\n"
        "  dataset: npy\n"
        "  train: {inputs: x.npy, targets: y.npy}\n"
        "  batch_sise: 16\n"
        "model:\n"
        "  layers:\n"
        "    - linear: {in: 10, out: 4}\n"
        "optimizer: {name: sgd, lr: fast}\n"
        "epochs: 1\n"
        "output: run\n")
    r = yaten("train", "bad.yaml", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.splitlines() == [
        "bad.yaml:4:3: data: unknown key 'batch_sise' (did you mean 'batch_size'?)",
        "bad.yaml:8:28: optimizer.lr: expected a number, got 'fast'",
        "yaten train: 2 problems in bad.yaml; nothing was run",
    ]
    assert not (tmp_path / "run").exists()
    # The shapes of npy data are checked once the files are open, still before training.
    (tmp_path / "bad.yaml").write_text(CONFIG.replace("- linear: {out: 32}", "- linear: {in: 10, out: 32}"))
    r = yaten("train", "bad.yaml", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr == "bad.yaml:8:7: linear: in=10 but the input gives 8 features\n"
    assert not (tmp_path / "run").exists()
    r = yaten("check", "bad.yaml", cwd=tmp_path)
    assert r.returncode == 2
    (tmp_path / "bad.yaml").write_text(CONFIG.replace("x.npy", "nothere.npy"))
    r = yaten("check", "bad.yaml", cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.startswith("bad.yaml:3:10: data.train: nothere.npy")


# ---- training, PyTorch, Ctrl-C


def test_weights_load_into_pytorch_with_the_same_test_loss(tmp_path):
    xt, yt = write_dataset(tmp_path)
    (tmp_path / "t.yaml").write_text(CONFIG)
    r = yaten("train", "t.yaml", "--no-plot", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert re.search(r"^epoch 2/2  train loss [0-9.]+  test loss [0-9.]+  test acc [0-9.]+%", r.stdout, re.M)
    r = yaten("eval", "t.yaml", "--checkpoint", "run/model.safetensors", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    m = re.match(r"run/model.safetensors: 64 samples  loss ([0-9.]+)  accuracy ([0-9.]+)%", r.stdout)
    assert m, r.stdout
    tensors, meta = read_safetensors(tmp_path / "run/model.safetensors")
    assert yaml.safe_load(meta["config"]) == yaml.safe_load(CONFIG)
    model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.BatchNorm1d(32), torch.nn.ReLU(),
                                torch.nn.Dropout(0.1), torch.nn.Linear(32, 4))
    model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in tensors.items()}, strict=True)
    model.eval()
    with torch.no_grad():
        out = model(torch.from_numpy(xt))
        loss = torch.nn.functional.cross_entropy(out, torch.from_numpy(yt)).item()
        acc = (out.argmax(1) == torch.from_numpy(yt)).double().mean().item()
    assert abs(loss - float(m.group(1))) <= 1e-4 * max(1.0, loss) + 5e-5
    assert abs(100 * acc - float(m.group(2))) < 0.006


def read_until(proc, pattern, timeout):
    """Reads proc's stdout line by line until a line matches; returns the text read."""
    text, deadline = "", time.time() + timeout
    while time.time() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 1.0)
        if ready:
            line = proc.stdout.readline()
            if not line:
                break
            text += line
            if re.search(pattern, line):
                return text
    raise AssertionError(f"no line matching {pattern!r} in:\n{text}")


def test_ctrl_c_saves_a_checkpoint_that_resumes_bit_identically(tmp_path):
    write_dataset(tmp_path, n_train=8000, n_test=256, features=32)
    cfg = CONFIG.replace("epochs: 2", "epochs: 1").replace("batch_size: 16", "batch_size: 8")
    (tmp_path / "t.yaml").write_text(cfg)
    proc = subprocess.Popen([YATEN, "train", "t.yaml", "--out", "stopped", "--log-every", "50",
                             "--no-plot"], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        read_until(proc, r"^epoch 1/1  batch 50/1000", timeout=300)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted: finishing this step and saving a checkpoint" in err
    m = re.search(r"interrupted: saved stopped/last.safetensors \(epoch 1, batch (\d+)\); resume with:\n"
                  r"  yaten train t.yaml --resume stopped/last.safetensors --out stopped\n", out)
    assert m, out
    assert 50 <= int(m.group(1)) < 1000
    assert not (tmp_path / "stopped/model.safetensors").exists()

    r = yaten("train", "t.yaml", "--resume", "stopped/last.safetensors", "--out", "stopped",
              "--no-plot", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"resuming from stopped/last.safetensors at epoch 1, batch {m.group(1)}" in r.stdout
    r = yaten("train", "t.yaml", "--out", "straight", "--no-plot", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    a = (tmp_path / "stopped/model.safetensors").read_bytes()
    b = (tmp_path / "straight/model.safetensors").read_bytes()
    assert a == b, "the interrupted and resumed run ends with other weights"


def test_progress_bar_on_a_terminal_and_lines_off_one(tmp_path):
    write_dataset(tmp_path, n_train=2048)
    (tmp_path / "t.yaml").write_text(CONFIG.replace("epochs: 2", "epochs: 1"))
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(tmp_path)
        os.execv(YATEN, [YATEN, "train", "t.yaml", "--no-plot"])
    chunks = []
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    _, status = os.waitpid(pid, 0)
    text = b"".join(chunks).decode()
    assert os.waitstatus_to_exitcode(status) == 0, text
    bar = re.findall(r"\repoch 1/1 \[[#.]+\] (\d+)/128  \d+ samples/s  loss [0-9.]+  ETA \d+:\d\d\x1b\[K", text)
    assert bar and bar[-1] == "128", text
    assert "\r\x1b[Kepoch 1/1  train loss" in text, "the bar is erased for the epoch's line"

    r = yaten("train", "t.yaml", "--no-plot", "--out", "plain", "--log-every", "32", cwd=tmp_path)
    assert r.returncode == 0
    assert "\r" not in r.stdout + r.stderr
    lines = re.findall(r"^epoch 1/1  batch (\d+)/128  \d+ samples/s  loss [0-9.]+  ETA", r.stdout, re.M)
    assert lines == ["32", "64", "96"]


def test_metrics_plot_with_gnuplot_or_a_message_without(tmp_path):
    write_dataset(tmp_path)
    (tmp_path / "t.yaml").write_text(CONFIG)
    r = yaten("train", "t.yaml", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    csv = (tmp_path / "run/metrics.csv").read_text().splitlines()
    assert csv[0] == "epoch,train_loss,test_loss,test_acc,lr,seconds" and len(csv) == 3
    if subprocess.run(["sh", "-c", "command -v gnuplot"], capture_output=True).returncode == 0:
        assert (tmp_path / "run/metrics.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert "run/metrics.png" in r.stdout
    env = dict(os.environ, PATH="/nonexistent")
    r = yaten("train", "t.yaml", "--out", "noplot", cwd=tmp_path, env=env)
    assert r.returncode == 0
    assert "gnuplot not found: no plot" in r.stdout
    assert not (tmp_path / "noplot/metrics.png").exists()
