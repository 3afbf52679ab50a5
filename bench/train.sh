#!/bin/sh
# Training-step time of the issue-4 models (MLP, CNN, transformer block), yaten vs PyTorch
# (Python, bench/train_torch.py, and the C++ API, bench/train_torch.cpp, when built), at 1 and
# 2 threads. The programs run interleaved, ROUNDS rounds (default 3); each line of the table is
# the best median of its rounds, and the ratio is yaten / the faster PyTorch (target <= 0.8).
# PyTorch runs at its best settings here (OpenBLAS SkylakeX kernels where the CPU has AVX-512:
# bench/openblas_core.sh; glibc keeping freed memory);
# everything waits passively in OpenMP at 2 threads (spinning threads lose their time slices on
# this shared 2-core machine). The load average is printed: wall times are noisy under load;
# BENCH_CLOCK=cpu bench/train.sh measures process CPU time instead (fair at 1 thread).
# Usage: bench/train.sh BUILD_DIR [mlp|cnn|transformer ...]
set -eu
openblas_core=$("$(dirname "$0")/openblas_core.sh")
build=${1:-build}
# never time a stale binary: bring it up to date with the library first
make -s --no-print-directory BUILD="$build" "$build/bench/train" "$build/bench/train_torch" >&2
[ $# -gt 0 ] && shift
rounds=${ROUNDS:-3}
out=$(mktemp)
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for t in 1 2; do
    for round in $(seq "$rounds"); do
        env OMP_NUM_THREADS=$t OMP_WAIT_POLICY=PASSIVE "$build/bench/train" $t "$@" >>"$out"
        env OMP_NUM_THREADS=$t OPENBLAS_NUM_THREADS=$t OMP_WAIT_POLICY=PASSIVE OPENBLAS_CORETYPE=$openblas_core \
            MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 \
            /usr/bin/python3 bench/train_torch.py $t "$@" >>"$out"
        if [ -x "$build/bench/train_torch" ]; then
            env OMP_NUM_THREADS=$t OPENBLAS_NUM_THREADS=$t OMP_WAIT_POLICY=PASSIVE OPENBLAS_CORETYPE=$openblas_core \
                MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 \
                "$build/bench/train_torch" $t "$@" >>"$out"
        fi
    done
done
echo "load after:  $(cut -d' ' -f1-3 /proc/loadavg)"
awk '
$3 == "ms/step" { v = $2 + 0; if (!($1 in best) || v < best[$1]) best[$1] = v }
END {
    printf "%-12s %3s %10s %10s %10s %8s\n", "model", "thr", "yaten ms", "torch py", "torch C++", "ratio"
    n = split("mlp cnn transformer", models, " ")
    for (i = 1; i <= n; i++)
        for (t = 1; t <= 2; t++) {
            k = models[i] "_" t "t"
            if (!(("train_" k) in best)) continue
            y = best["train_" k]; p = best["torch_train_" k]; c = best["cxx_train_" k]
            ref = p; if (c > 0 && (ref == 0 || c < ref)) ref = c
            ps = "-"; cs = "-"; r = 0
            if (p > 0) ps = sprintf("%.3f", p)
            if (c > 0) cs = sprintf("%.3f", c)
            if (ref > 0) r = y / ref
            printf "%-12s %3d %10.3f %10s %10s %7.2fx\n", models[i], t, y, ps, cs, r
        }
}' "$out"
rm -f "$out"
