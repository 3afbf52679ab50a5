#!/usr/bin/python3
"""PyTorch's side of bench/pointwise.c: the same cases, shapes and GB/s convention, out=,
f32, one thread. Usage: pointwise_torch.py [CASE...]"""
import sys
import time
import types

import torch
import torch.nn.functional as F

torch.set_num_threads(1)
COLS = 1000
SIZES = [1 << 16, 1 << 20, 10000000]
SHORT = 4  # row length of the *_short_rows cases: [N / 4, 4], as in bench/pointwise.c
CASES = {  # name: (operands read, fn(v)), v holding the operands made below
    "add": (2, lambda v: torch.add(v.a, v.b, out=v.out)),
    "mul": (2, lambda v: torch.mul(v.a, v.b, out=v.out)),
    "div": (2, lambda v: torch.div(v.a, v.b, out=v.out)),
    "add_scalar": (1, lambda v: torch.add(v.a, 2.0, out=v.out)),
    "neg": (1, lambda v: torch.neg(v.a, out=v.out)),
    "exp": (1, lambda v: torch.exp(v.a, out=v.out)),
    "sigmoid": (1, lambda v: torch.sigmoid(v.a, out=v.out)),
    "tanh": (1, lambda v: torch.tanh(v.a, out=v.out)),
    "relu": (1, lambda v: torch.clamp_min(v.a, 0, out=v.out)),  # relu has no out=
    "sqrt": (1, lambda v: torch.sqrt(v.b, out=v.out)),
    "gelu": (1, lambda v: torch._C._nn.gelu(v.a, out=v.out)),
    "add_bcast_row": (2, lambda v: torch.add(v.a, v.row, out=v.out)),
    "add_bcast_col": (2, lambda v: torch.add(v.a, v.col, out=v.out)),
    "add_transposed": (2, lambda v: torch.add(v.at, v.b, out=v.out)),
    "exp_transposed": (1, lambda v: torch.exp(v.at, out=v.out)),
    "add_step2": (2, lambda v: torch.add(v.stepped, v.b, out=v.out)),
    "add_scalar_short_rows": (1, lambda v: torch.add(v.narrowed4, 2.0, out=v.out4)),
    "add_bcast_col_short_rows": (2, lambda v: torch.add(v.a4, v.col4, out=v.out4)),
    "pow2": (1, lambda v: torch.pow(v.a, 2.0, out=v.out)),
    "clamp": (1, lambda v: torch.clamp(v.a, -0.25, 0.25, out=v.out)),
    "remainder": (2, lambda v: torch.remainder(v.a, v.b, out=v.out)),
    "floor_divide": (2, lambda v: torch.floor_divide(v.a, v.b, out=v.out)),
    "logical_not": (1, lambda v: torch.logical_not(v.mask, out=v.out_bool)),
    "where": (3, lambda v: torch.where(v.mask, v.a, v.b, out=v.out)),
    "to_f16": (1, lambda v: v.a.to(torch.float16)),
    "to_bf16": (1, lambda v: v.a.to(torch.bfloat16)),
    "to_i32": (1, lambda v: v.a.to(torch.int32)),
}

wanted = sys.argv[1:] or list(CASES)
for name in wanted:
    n_in, fn = CASES[name]
    for n in SIZES:
        rows = n // COLS
        rows4 = rows * COLS // SHORT  # the same elements as the others
        v = types.SimpleNamespace(
            a=torch.rand(rows, COLS) - 0.5, b=torch.rand(rows, COLS), row=torch.rand(COLS),
            col=torch.rand(rows, 1), at=torch.rand(COLS, rows).t(), out=torch.zeros(rows, COLS),
            stepped=torch.rand(rows, 2 * COLS)[:, ::2],
            a4=torch.rand(rows4, SHORT), col4=torch.rand(rows4, 1),
            narrowed4=torch.rand(rows4, 2 * SHORT)[:, :SHORT], out4=torch.zeros(rows4, SHORT))
        v.mask = v.a > 0
        v.out_bool = torch.zeros_like(v.mask)
        fn(v)
        best, start, per_batch = 1e30, time.perf_counter(), 1
        while time.perf_counter() - start < 0.4:
            t0 = time.perf_counter()
            for _ in range(per_batch):
                fn(v)
            dt = time.perf_counter() - t0
            if dt < 0.02:
                per_batch *= 2
                continue
            best = min(best, dt / per_batch)
        print(f"torch {name} {rows * COLS} {4.0 * rows * COLS * (n_in + 1) / best / 1e9:.2f}", flush=True)
