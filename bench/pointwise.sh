#!/bin/sh
# yaten's and PyTorch's pointwise benchmarks, interleaved (yaten, torch, yaten, torch, ...),
# three rounds, one thread each; prints the best GB/s of each side and their ratio.
# Usage: bench/pointwise.sh BUILD_DIR [CASE...]
set -eu
build=${1:-build}
[ $# -gt 0 ] && shift
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
out=$(mktemp)
for round in 1 2 3; do
    "$build/bench/pointwise" "$@" >>"$out"
    /usr/bin/python3 "$(dirname "$0")/pointwise_torch.py" "$@" >>"$out"
done
awk '
{ k = $2 " " $3; v = $4 + 0; if (!((k, $1) in best) || v > best[k, $1]) best[k, $1] = v
  if (!(k in seen)) { seen[k] = 1; order[++n] = k } }
END {
    printf "%-16s %10s %10s %10s %7s\n", "op", "size", "yaten GB/s", "torch GB/s", "ratio"
    for (i = 1; i <= n; i++) {
        split(order[i], f, " ")
        y = best[order[i], "yaten"]; t = best[order[i], "torch"]
        printf "%-16s %10s %10.2f %10.2f %7.2f\n", f[1], f[2], y, t, t > 0 ? y / t : 0
    }
}' "$out"
rm -f "$out"
