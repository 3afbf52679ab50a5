#!/usr/bin/python3
"""PyTorch side of bench/train.sh: ms per training step of the three issue-4 models, the same
models, data shapes and step as bench/train.c (and /work/shared/reference-bench/torch_train.py):
zero_grad(set_to_none) + forward + loss + backward + SGD step (lr 0.01), median of 200 steps after
20 warm-up, f32 on CPU, seed 0.

Usage: /usr/bin/python3 bench/train_torch.py THREADS [mlp|cnn|transformer ...] [--steps N] [--warmup N]
Output: "torch_train_<model>_<T>t <median ms> ms/step" (+ _p10, _p90 lines).
BENCH_CLOCK=cpu times process CPU time instead of wall time (as bench/train.c)."""
import os
import sys
import time

args = sys.argv[1:]
if not args:
    sys.exit(__doc__)
threads = int(args.pop(0))
steps, warmup, models = 200, 20, []
while args:
    a = args.pop(0)
    if a == "--steps":
        steps = int(args.pop(0))
    elif a == "--warmup":
        warmup = int(args.pop(0))
    else:
        models.append(a)
models = models or ["mlp", "cnn", "transformer"]
# OpenBLAS reads its thread count when torch loads it: set before the import.
os.environ.setdefault("OMP_NUM_THREADS", str(threads))
os.environ.setdefault("OPENBLAS_NUM_THREADS", str(threads))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch.set_num_threads(threads)
clock = time.process_time if os.environ.get("BENCH_CLOCK", "").startswith("c") else time.perf_counter


def setup(name):
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    if name == "mlp":
        model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                              nn.Linear(128, 10))
        return model, torch.randn(64, 784, generator=g), torch.randint(0, 10, (64,), generator=g), F.cross_entropy
    if name == "cnn":
        model = nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(8, 16, 3), nn.ReLU(),
                              nn.MaxPool2d(2), nn.Flatten(), nn.Linear(400, 10))
        x = torch.randn(64, 1, 28, 28, generator=g)
        return model, x, torch.randint(0, 10, (64,), generator=g), F.cross_entropy
    if name == "transformer":
        model = nn.TransformerEncoderLayer(128, 4, dim_feedforward=512, dropout=0.0, batch_first=True)
        return model, torch.randn(8, 64, 128, generator=g), torch.randn(8, 64, 128, generator=g), F.mse_loss
    sys.exit(f"train_torch.py: unknown model '{name}'")


for name in models:
    model, x, y, lossf = setup(name)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = lossf(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        t0 = clock()
        step()
        times.append(clock() - t0)
    times.sort()
    med = times[steps // 2] if steps % 2 else 0.5 * (times[steps // 2 - 1] + times[steps // 2])
    tag = f"torch_train_{name}_{threads}t"
    print(f"{tag} {med * 1e3:.3f} ms/step")
    print(f"{tag}_p10 {times[steps // 10] * 1e3:.3f} ms/step")
    print(f"{tag}_p90 {times[steps * 9 // 10] * 1e3:.3f} ms/step", flush=True)
