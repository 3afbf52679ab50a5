#!/usr/bin/python3
"""PyTorch's side of bench/pointwise.c: the same cases, shapes and GB/s convention, out=,
f32, one thread. Usage: pointwise_torch.py [CASE...]"""
import sys
import time

import torch
import torch.nn.functional as F

torch.set_num_threads(1)
COLS = 1000
SIZES = [1 << 16, 1 << 20, 10000000]
CASES = {  # name: (operands read, fn(out, a, b, row, col, at))
    "add": (2, lambda o, a, b, r, c, t: torch.add(a, b, out=o)),
    "mul": (2, lambda o, a, b, r, c, t: torch.mul(a, b, out=o)),
    "div": (2, lambda o, a, b, r, c, t: torch.div(a, b, out=o)),
    "add_scalar": (1, lambda o, a, b, r, c, t: torch.add(a, 2.0, out=o)),
    "neg": (1, lambda o, a, b, r, c, t: torch.neg(a, out=o)),
    "exp": (1, lambda o, a, b, r, c, t: torch.exp(a, out=o)),
    "sigmoid": (1, lambda o, a, b, r, c, t: torch.sigmoid(a, out=o)),
    "tanh": (1, lambda o, a, b, r, c, t: torch.tanh(a, out=o)),
    "relu": (1, lambda o, a, b, r, c, t: torch.clamp_min(a, 0, out=o)),  # relu has no out=
    "sqrt": (1, lambda o, a, b, r, c, t: torch.sqrt(b, out=o)),
    "gelu": (1, lambda o, a, b, r, c, t: torch._C._nn.gelu(a, out=o)),
    "add_bcast_row": (2, lambda o, a, b, r, c, t: torch.add(a, r, out=o)),
    "add_bcast_col": (2, lambda o, a, b, r, c, t: torch.add(a, c, out=o)),
    "add_transposed": (2, lambda o, a, b, r, c, t: torch.add(t, b, out=o)),
    "exp_transposed": (1, lambda o, a, b, r, c, t: torch.exp(t, out=o)),
}

wanted = sys.argv[1:] or list(CASES)
for name in wanted:
    n_in, fn = CASES[name]
    for n in SIZES:
        rows = n // COLS
        a, b = torch.rand(rows, COLS) - 0.5, torch.rand(rows, COLS)
        r, c = torch.rand(COLS), torch.rand(rows, 1)
        t = torch.rand(COLS, rows).t()
        o = torch.zeros(rows, COLS)
        fn(o, a, b, r, c, t)
        best, start, per_batch = 1e30, time.perf_counter(), 1
        while time.perf_counter() - start < 0.4:
            t0 = time.perf_counter()
            for _ in range(per_batch):
                fn(o, a, b, r, c, t)
            dt = time.perf_counter() - t0
            if dt < 0.02:
                per_batch *= 2
                continue
            best = min(best, dt / per_batch)
        print(f"torch {name} {rows * COLS} {4.0 * rows * COLS * (n_in + 1) / best / 1e9:.2f}", flush=True)
