#!/usr/bin/python3
"""PyTorch side of bench/conv.sh: conv2d and max_pool2d forward / backward of the benchmark CNN
shapes (f32). Prints "torch_<case>_<fwd|bwd|fwdbwd> <ms> ms" lines (bwd timed alone, after an
untimed forward that records the graph), medians as in
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


def median_ms(fn, before=None, reps=7, min_s=0.02):
    """Median ms per call of fn over `reps` batches of at least min_s seconds; with `before`, each
    call follows an untimed before() whose result it takes (the forward pass for a backward)."""
    def timed():
        if before is None:
            s = clock()
            fn()
            return clock() - s
        arg = before()
        s = clock()
        fn(arg)
        return clock() - s

    for _ in range(2):
        timed()
    per = max(timed(), 1e-6)
    inner = int(min_s / per) + 1
    vals = [sum(timed() for _ in range(inner)) / inner for _ in range(reps)]
    return 1e3 * statistics.median(vals)


def conv_case(name, n, c, h, o, k, input_grad):
    x = torch.randn(n, c, h, h, requires_grad=input_grad)
    w = torch.randn(o, c, k, k, requires_grad=True)
    b = torch.randn(o, requires_grad=True)
    g = torch.randn(n, o, h - k + 1, h - k + 1)

    def fwd():
        with torch.no_grad():
            F.conv2d(x, w, b)

    def record():
        return F.conv2d(x, w, b)

    report(name, fwd, record, g)


def pool_case(name, n, c, h):
    x = torch.randn(n, c, h, h, requires_grad=True)
    g = torch.randn(n, c, h // 2, h // 2)

    def fwd():
        with torch.no_grad():
            F.max_pool2d(x, 2)

    def record():
        return F.max_pool2d(x, 2)

    report(name, fwd, record, g)


def report(name, fwd, record, g):
    """Forward alone (no graph), backward alone (after an untimed recorded forward), and both."""
    def bwd(y):
        y.backward(g)

    def fwdbwd():
        bwd(record())

    f = median_ms(fwd)
    b = median_ms(bwd, before=record)
    fb = median_ms(fwdbwd)
    print(f"torch_{name}_fwd {f:.4f} ms")
    print(f"torch_{name}_bwd {b:.4f} ms")
    print(f"torch_{name}_fwdbwd {fb:.4f} ms", flush=True)


conv_case("conv1", 64, 1, 28, 8, 3, False)
conv_case("conv2", 64, 8, 13, 16, 3, True)
pool_case("pool1", 64, 8, 26)
pool_case("pool2", 64, 16, 11)
