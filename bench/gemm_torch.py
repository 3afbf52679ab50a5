#!/usr/bin/python3
"""torch.mm (out=, f32) throughput for the cases of bench/gemm.c, same layouts (transposed views
where a case says so). Usage: gemm_torch.py THREADS. Prints "gemm_<case>_<T>t torch <GFLOP/s>".
Run with OPENBLAS_CORETYPE=SkylakeX (bench/gemm.sh sets it): Debian's torch multiplies floats
through OpenBLAS, which otherwise picks AVX2 kernels on this CPU."""
import os
import statistics
import sys
import time

threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
os.environ.setdefault("OMP_NUM_THREADS", str(threads))
os.environ.setdefault("OPENBLAS_NUM_THREADS", str(threads))
import torch  # noqa: E402

torch.set_num_threads(threads)

# name, m, k, n, A transposed, B transposed (as in bench/gemm.c)
CASES = [
    ("n64", 64, 64, 64, False, False), ("n128", 128, 128, 128, False, False),
    ("n256", 256, 256, 256, False, False), ("n512", 512, 512, 512, False, False),
    ("n1024", 1024, 1024, 1024, False, False),
    ("64x784x256", 64, 784, 256, False, False), ("64x256x128", 64, 256, 128, False, False),
    ("64x128x10", 64, 128, 10, False, False),
    ("64x784x256_bt", 64, 784, 256, False, True), ("64x256x128_bt", 64, 256, 128, False, True),
    ("64x128x10_bt", 64, 128, 10, False, True),
    ("dW_256x64x784_at", 256, 64, 784, True, False), ("dW_128x64x256_at", 128, 64, 256, True, False),
    ("dW_10x64x128_at", 10, 64, 128, True, False),
    ("dX_64x256x784", 64, 256, 784, False, False), ("dX_64x128x256", 64, 128, 256, False, False),
    ("dX_64x10x128", 64, 10, 128, False, False),
]


def matrix(rows, cols, transposed):
    return torch.rand(cols, rows).t() if transposed else torch.rand(rows, cols)


def time_it(fn):
    """Median seconds per call over up to 11 batches of >= 5 ms, within ~0.4 s (as bench/gemm.c)."""
    t0 = time.perf_counter()
    calls = 0
    while True:
        fn()
        calls += 1
        t1 = time.perf_counter()
        if calls >= 2 and t1 - t0 >= 0.05:
            break
    per_call = (t1 - t0) / calls
    per_batch = int(0.005 / per_call) + 1
    nb = max(3, min(11, int(0.4 / (per_call * per_batch))))
    vals = []
    for _ in range(nb):
        s = time.perf_counter()
        for _ in range(per_batch):
            fn()
        vals.append((time.perf_counter() - s) / per_batch)
    return statistics.median(vals)


for name, m, k, n, ta, tb in CASES:
    a, b, c = matrix(m, k, ta), matrix(k, n, tb), torch.empty(m, n)
    sec = time_it(lambda: torch.mm(a, b, out=c))
    print(f"gemm_{name}_{threads}t torch {2.0 * m * n * k / sec / 1e9:.1f}", flush=True)
