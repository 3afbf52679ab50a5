#!/usr/bin/python3
"""The demo's training run in PyTorch: the default `yaten train` config (examples/fashion_cnn.yaml)
written as a torch script, for bench/demo.sh. Same model, data, normalisation, batch size, Adam
with a per-batch cosine schedule, shuffling; the data sit in memory as yaten's loader keeps them.

Usage: /usr/bin/python3 bench/demo_torch.py THREADS [EPOCHS]
Prints `torch_demo_epoch<E>_<T>t <seconds> s` (training only, without the evaluation), `torch_demo_acc<E>_<T>t <accuracy>` per epoch and
`torch_demo_maxrss_<T>t <KiB> KiB` (peak resident memory of the whole process)."""
import gzip
import resource
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

threads = int(sys.argv[1])
epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 1
torch.set_num_threads(threads)
root = "/usr/share/datasets/fashion-mnist/"


def images(name):
    raw = gzip.open(root + name).read()
    x = np.frombuffer(raw, np.uint8, offset=16).reshape(-1, 1, 28, 28).astype(np.float32) / 255
    return torch.from_numpy((x - 0.2860) / 0.3530)


def labels(name):
    return torch.from_numpy(np.frombuffer(gzip.open(root + name).read(), np.uint8, offset=8).astype(np.int64))


x_train, y_train = images("train-images-idx3-ubyte.gz"), labels("train-labels-idx1-ubyte.gz")
x_test, y_test = images("t10k-images-idx3-ubyte.gz"), labels("t10k-labels-idx1-ubyte.gz")
torch.manual_seed(0)
model = nn.Sequential(
    nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))
opt = torch.optim.Adam(model.parameters(), 1e-3)
batches = (len(x_train) + 63) // 64
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, 3 * batches)
gen = torch.Generator().manual_seed(0)
for epoch in range(epochs):
    start = time.perf_counter()
    model.train()
    perm = torch.randperm(len(x_train), generator=gen)
    for i in range(0, len(x_train), 64):
        idx = perm[i:i + 64]
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x_train[idx]), y_train[idx])
        loss.backward()
        opt.step()
        sched.step()
    seconds = time.perf_counter() - start
    model.eval()
    with torch.no_grad():
        correct = sum((model(x_test[i:i + 1000]).argmax(1) == y_test[i:i + 1000]).sum().item()
                      for i in range(0, len(x_test), 1000))
    print(f"torch_demo_epoch{epoch + 1}_{threads}t {seconds:.2f} s", flush=True)
    print(f"torch_demo_acc{epoch + 1}_{threads}t {correct / len(x_test):.4f} acc", flush=True)
print(f"torch_demo_maxrss_{threads}t {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss} KiB")
