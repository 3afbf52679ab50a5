#!/bin/sh
# conv2d (and max_pool2d) of the benchmark CNN, yaten vs PyTorch, forward / backward / both, at
# 1 and 2 threads. The two run interleaved, three rounds each; the table shows the best median
# of each. PyTorch runs at its best settings here (OpenBLAS SkylakeX kernels where the CPU has
# AVX-512: bench/openblas_core.sh; glibc keeping freed memory; oneDNN on, as by default). Both wait passively in OpenMP: on this shared 2-core machine
# spinning threads lose their time slices and a 2-thread region can take milliseconds.
# The machine is shared: wall times are noisy; BENCH_CLOCK=cpu bench/conv.sh measures process CPU
# time instead (fair at 1 thread under load).
# Usage: bench/conv.sh BUILD_DIR
set -eu
openblas_core=$("$(dirname "$0")/openblas_core.sh")
build=${1:-build}
# never time a stale binary: bring it up to date with the library first
make -s --no-print-directory BUILD="$build" "$build/bench/conv" >&2
out=$(mktemp)
for t in 1 2; do
    for round in 1 2 3; do
        OMP_NUM_THREADS=$t OMP_WAIT_POLICY=PASSIVE "$build/bench/conv" | sed "s/^/t$t /" >>"$out"
        OMP_NUM_THREADS=$t OMP_WAIT_POLICY=PASSIVE OPENBLAS_CORETYPE=$openblas_core \
            MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 \
            /usr/bin/python3 bench/conv_torch.py $t | sed "s/^/t$t /" >>"$out"
    done
done
awk '
{ k = $1 " " $2; v = $3 + 0; if (!(k in best) || v < best[k]) best[k] = v }
END {
    printf "%-3s %-8s %-6s %10s %10s %8s\n", "thr", "case", "part", "yaten ms", "torch ms", "speedup"
    n = split("conv1 conv2 pool1 pool2", cases, " ")
    for (t = 1; t <= 2; t++)
        for (i = 1; i <= n; i++)
            for (j = 1; j <= 3; j++) {
                part = j == 1 ? "fwd" : j == 2 ? "bwd" : "fwdbwd"
                ky = "t" t " yaten_" cases[i] "_" part; kt = "t" t " torch_" cases[i] "_" part
                if (!(ky in best) || !(kt in best)) continue
                printf "%-3s %-8s %-6s %10.3f %10.3f %7.2fx\n", t, cases[i], part, best[ky], best[kt],
                       best[kt] / best[ky]
            }
}' "$out"
rm -f "$out"
