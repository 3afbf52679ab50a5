#!/usr/bin/python3
"""PyTorch half of bench/reduce.sh: the cases of bench/reduce.c, timed the same way (fastest of 15
batches of ~5 ms), printing "name microseconds". Threads: argv[1]."""
import sys
import time

import torch

torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
torch.manual_seed(0)

CASES = [
    ("sum_4096x4096_dim1", lambda x, y: torch.sum(x, 1), 4096, 4096),
    ("sum_4096x4096_dim0", lambda x, y: torch.sum(x, 0), 4096, 4096),
    ("sum_4096x4096_all", lambda x, y: torch.sum(x), 4096, 4096),
    ("amax_4096x4096_dim1", lambda x, y: torch.amax(x, 1), 4096, 4096),
    ("softmax_64x1000", lambda x, y: torch.softmax(x, 1), 64, 1000),
    ("softmax_4096x1024", lambda x, y: torch.softmax(x, 1), 4096, 1024),
    ("log_softmax_4096x1024", lambda x, y: torch.log_softmax(x, 1), 4096, 1024),
    ("softmax_dim0_1024x4096", lambda x, y: torch.softmax(x, 0), 1024, 4096),
    ("softmax_bwd_4096x1024",
     lambda x, y: torch.ops.aten._softmax_backward_data(x, y, 1, torch.float32), 4096, 1024),
    ("logsumexp_4096x1024_dim1", lambda x, y: torch.logsumexp(x, 1), 4096, 1024),
    ("cumsum_64x100_dim1", lambda x, y: torch.cumsum(x, 1), 64, 100),
    ("cumsum_1024x1000_dim1", lambda x, y: torch.cumsum(x, 1), 1024, 1000),
    ("cumsum_1024x1000_dim0", lambda x, y: torch.cumsum(x, 0), 1024, 1000),
    ("var_4096x4096_dim1", lambda x, y: torch.var(x, 1), 4096, 4096),
    ("var_4096x4096_dim0", lambda x, y: torch.var(x, 0), 4096, 4096),
    ("norm2_4096x4096", lambda x, y: torch.linalg.vector_norm(x), 4096, 4096),
    ("sum_16384x16_dim1", lambda x, y: torch.sum(x, 1), 16384, 16),
    ("sum_65536x4_dim1", lambda x, y: torch.sum(x, 1), 65536, 4),
    ("amax_65536x4_dim1", lambda x, y: torch.amax(x, 1), 65536, 4),
    ("softmax_16384x16", lambda x, y: torch.softmax(x, 1), 16384, 16),
    ("log_softmax_16384x16", lambda x, y: torch.log_softmax(x, 1), 16384, 16),
    ("logsumexp_65536x4_dim1", lambda x, y: torch.logsumexp(x, 1), 65536, 4),
    ("norm2_16384x16_dim1", lambda x, y: torch.linalg.vector_norm(x, 2, 1), 16384, 16),
    ("var_16384x16_dim1", lambda x, y: torch.var(x, 1), 16384, 16),
    ("argmax_16384x16_dim1", lambda x, y: torch.argmax(x, 1), 16384, 16),
    ("prod_16384x16_dim1", lambda x, y: torch.prod(x, 1), 16384, 16),
    ("prod_4096x64_dim1", lambda x, y: torch.prod(x, 1), 4096, 64),
    ("prod_65536x4_dim1", lambda x, y: torch.prod(x, 1), 65536, 4),
    ("prod_1024x1000_dim1", lambda x, y: torch.prod(x, 1), 1024, 1000),
    ("softmax_bwd_16384x16",
     lambda x, y: torch.ops.aten._softmax_backward_data(x, y, 1, torch.float32), 16384, 16),
    ("log_softmax_bwd_16384x16",
     lambda x, y: torch.ops.aten._log_softmax_backward_data(x, y, 1, torch.float32), 16384, 16),
    # 10 classes, the commonest short row: not a whole number of vectors
    ("softmax_16384x10", lambda x, y: torch.softmax(x, 1), 16384, 10),
    ("softmax_bwd_16384x10",
     lambda x, y: torch.ops.aten._softmax_backward_data(x, y, 1, torch.float32), 16384, 10),
    ("cross_entropy_16384x16", lambda x, y: torch.nn.functional.cross_entropy(x, TARGETS), 16384, 16),
]
TARGETS = torch.randint(16, (16384,))  # class targets of cross_entropy_16384x16

with torch.no_grad():
    for name, fn, rows, cols in CASES:
        x = torch.randn(rows, cols)
        y = torch.softmax(x, 1)
        t0, calls = time.perf_counter(), 0
        while time.perf_counter() - t0 < 0.005:
            fn(x, y)
            calls += 1
        times = []
        for _ in range(15):
            s = time.perf_counter()
            for _ in range(calls):
                fn(x, y)
            times.append((time.perf_counter() - s) / calls)
        times.sort()
        print(f"{name} {times[0] * 1e6:.2f} us")
