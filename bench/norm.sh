#!/bin/sh
# batch_norm / layer_norm: yaten (bench/norm.c) and PyTorch (bench/norm_torch.py) interleaved,
# three rounds each at 1 and 2 threads; prints the best median of each side and the ratio
# torch / yaten (> 1: yaten faster). Usage: bench/norm.sh BUILD_DIR
set -eu
build=${1:-build}
# never time a stale binary: bring it up to date with the library first
make -s --no-print-directory BUILD="$build" "$build/bench/norm" >&2
for threads in 1 2; do
    out=$(mktemp)
    for round in 1 2 3; do
        OMP_NUM_THREADS=$threads OMP_WAIT_POLICY=PASSIVE "$build/bench/norm" >>"$out"
        OMP_NUM_THREADS=$threads OMP_WAIT_POLICY=PASSIVE \
            MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 \
            /usr/bin/python3 bench/norm_torch.py "$threads" >>"$out"
    done
    echo "threads=$threads"
    awk '
    { split($1, p, "_"); side = p[1]; k = substr($1, length(side) + 2); v = $2 + 0
      if (!((side, k) in best) || v < best[side, k]) best[side, k] = v; if (side == "yaten" && !(k in seen)) { seen[k] = 1; order[++n] = k } }
    END {
        printf "%-36s %10s %10s %8s\n", "case", "yaten us", "torch us", "ratio"
        for (i = 1; i <= n; i++) { k = order[i]
            printf "%-36s %10.1f %10.1f %7.2fx\n", k, best["yaten", k], best["torch", k], best["torch", k] / best["yaten", k] }
    }' "$out"
    rm -f "$out"
done
