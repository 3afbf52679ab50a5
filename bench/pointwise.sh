#!/bin/sh
# yaten's and PyTorch's pointwise benchmarks, interleaved (yaten, torch, yaten, torch, ...),
# ROUNDS rounds (default 3), one thread each; prints the best GB/s of each side and their ratio.
# Cases at 1M elements run from L3, where both sides vary by up to 25% from one process to the
# next: more rounds steady the best. Usage: [ROUNDS=N] bench/pointwise.sh BUILD_DIR [CASE...]
set -eu
build=${1:-build}
# never time a stale binary: bring it up to date with the library first
make -s --no-print-directory BUILD="$build" "$build/bench/pointwise" >&2
[ $# -gt 0 ] && shift
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
out=$(mktemp)
round=0
while [ "$round" -lt "${ROUNDS:-3}" ]; do
    round=$((round + 1))
    "$build/bench/pointwise" "$@" >>"$out"
    /usr/bin/python3 "$(dirname "$0")/pointwise_torch.py" "$@" >>"$out"
done
awk '
{ key = $1 " " $2 " " $3; v = $4 + 0
  if (!(key in best) || v > best[key]) best[key] = v
  row = $2 " " $3; if (!(row in seen)) { seen[row] = 1; order[++n] = row } }
END {
    printf "%-16s %10s %10s %10s %7s\n", "op", "size", "yaten GB/s", "torch GB/s", "ratio"
    for (i = 1; i <= n; i++) {
        split(order[i], f, " ")
        y = best["yaten " order[i]]; t = best["torch " order[i]]
        r = 0
        if (t > 0) r = y / t
        printf "%-16s %10s %10.2f %10.2f %7.2f\n", f[1], f[2], y, t, r
    }
}' "$out"
rm -f "$out"
