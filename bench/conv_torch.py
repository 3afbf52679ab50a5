#!/usr/bin/python3
"""PyTorch side of bench/conv.sh: conv2d and max_pool2d forward / backward of the benchmark CNN
shapes (f32). Prints "torch_<case>_<fwd|bwd|fwdbwd> <ms> ms" lines, medians as in
/work/shared/reference-bench (anchors_util.time_batches).

Usage: /usr/bin/python3 bench/conv_torch.py THREADS"""
import os
import statistics
import sys
import time

threads = sys.argv[1] if len(sys.argv) > 1 else "1"
os.environ.setdefault("OMP_NUM_THREADS", threads)
os.environ.setdefault("OPENBLAS_NUM_THREADS", threads)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch.set_num_threads(int(threads))
torch.manual_seed(0)


# BENCH_CLOCK=cpu: process CPU time instead of wall time (see bench/conv.c)
clock = time.process_time if os.environ.get("BENCH_CLOCK", "").startswith("c") else time.perf_counter


def median_ms(fn, reps=7, min_s=0.02):
    fn()
    fn()
    t0 = clock()
    fn()
    per = max(clock() - t0, 1e-6)
    inner = int(min_s / per) + 1
    vals = []
    for _ in range(reps):
        s = clock()
        for _ in range(inner):
            fn()
        vals.append((clock() - s) / inner)
    return 1e3 * statistics.median(vals)


def conv_case(name, n, c, h, o, k, input_grad):
    x = torch.randn(n, c, h, h, requires_grad=input_grad)
    w = torch.randn(o, c, k, k, requires_grad=True)
    b = torch.randn(o, requires_grad=True)
    g = torch.randn(n, o, h - k + 1, h - k + 1)

    def fwd():
        with torch.no_grad():
            F.conv2d(x, w, b)

    def fwdbwd():
        y = F.conv2d(x, w, b)
        y.backward(g)

    report(name, fwd, fwdbwd)


def pool_case(name, n, c, h):
    x = torch.randn(n, c, h, h, requires_grad=True)
    g = torch.randn(n, c, h // 2, h // 2)

    def fwd():
        with torch.no_grad():
            F.max_pool2d(x, 2)

    def fwdbwd():
        y = F.max_pool2d(x, 2)
        y.backward(g)

    report(name, fwd, fwdbwd)


def report(name, fwd, fwdbwd):
    f = median_ms(fwd)
    fb = median_ms(fwdbwd)
    print(f"torch_{name}_fwd {f:.4f} ms")
    print(f"torch_{name}_bwd {fb - f:.4f} ms")
    print(f"torch_{name}_fwdbwd {fb:.4f} ms", flush=True)


conv_case("conv1", 64, 1, 28, 8, 3, False)
conv_case("conv2", 64, 8, 13, 16, 3, True)
pool_case("pool1", 64, 8, 26)
pool_case("pool2", 64, 16, 11)
