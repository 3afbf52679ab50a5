#!/usr/bin/python3
"""PyTorch side of bench/norm.c: the same cases, printed as "torch_<case>_<fwd|fwdbwd> us".
Usage: /usr/bin/python3 bench/norm_torch.py THREADS"""
import statistics
import sys
import time

import torch
import torch.nn.functional as F

threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
torch.set_num_threads(threads)
ROUNDS = 15
CASES = [("batch_norm_64x8x26x26", "batch", (64, 8, 26, 26)),
         ("batch_norm_64x16x11x11", "batch", (64, 16, 11, 11)),
         ("layer_norm_8x64x128", "layer", (8, 64, 128)),
         ("layer_norm_4096x1024", "layer", (4096, 1024)),
         ("group_norm_32x64x16x16", "group", (32, 64, 16, 16))]

for name, kind, shape in CASES:
    p = shape[-1] if kind == "layer" else shape[1]
    x, dy = torch.randn(shape), torch.randn(shape)
    w, b = torch.randn(p), torch.randn(p)
    rm, rv = torch.zeros(p), torch.ones(p)
    xg, wg, bg = (t.clone().requires_grad_() for t in (x, w, b))

    def norm(x, w, b):
        if kind == "batch":
            return F.batch_norm(x, rm, rv, w, b, True, 0.1, 1e-5)
        if kind == "layer":
            return F.layer_norm(x, (p,), w, b, 1e-5)
        return F.group_norm(x, 8, w, b, 1e-5)

    def fwd():
        norm(x, w, b)

    def fwdbwd():
        y = norm(xg, wg, bg)
        y.backward(dy)
        xg.grad = wg.grad = bg.grad = None

    iters = int(2e7 / x.numel()) + 1
    for label, fn in (("fwd", fwd), ("fwdbwd", fwdbwd)):
        for _ in range(iters):
            fn()
        times = []
        for _ in range(ROUNDS):
            t0 = time.perf_counter()
            for _ in range(iters):
                fn()
            times.append((time.perf_counter() - t0) / iters * 1e6)
        print(f"torch_{name}_{label} {statistics.median(times):.1f} us", flush=True)
