#!/bin/sh
# Reductions and softmax, yaten (bench/reduce.c) against PyTorch (bench/reduce_torch.py, Python
# API, so its times include ~5-10 us of Python dispatch per call: small cases favour yaten). Runs
# the two interleaved, three rounds each, at 1 and 2 threads, and prints the best time of each
# case with the ratio torch / yaten (>= 1 means yaten is as fast or faster).
# Usage: [THREADS="1 2"] bench/reduce.sh BUILD_DIR
set -eu
build=${1:-build}
# never time a stale binary: bring it up to date with the library first
make -s --no-print-directory BUILD="$build" "$build/bench/reduce" >&2
for threads in ${THREADS:-1 2}; do
    out=$(mktemp)
    for round in 1 2 3; do
        OMP_NUM_THREADS=$threads "$build/bench/reduce" | sed 's/^/yaten /' >>"$out"
        OMP_NUM_THREADS=$threads MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 \
            /usr/bin/python3 bench/reduce_torch.py "$threads" | sed 's/^/torch /' >>"$out"
    done
    echo "threads=$threads"
    awk '
    { k = $2; v = $3 + 0; key = $1 " " k
      if (!(key in best) || v < best[key]) best[key] = v
      if (!(k in seen)) { seen[k] = 1; order[++n] = k } }
    END {
        printf "  %-24s %12s %12s %8s\n", "case", "yaten us", "torch us", "ratio"
        for (i = 1; i <= n; i++) {
            k = order[i]
            printf "  %-24s %12.1f %12.1f %7.2fx\n", k, best["yaten " k], best["torch " k],
                   best["torch " k] / best["yaten " k]
        }
    }' "$out"
    rm -f "$out"
done
