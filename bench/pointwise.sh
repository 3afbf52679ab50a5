#!/bin/sh
# yaten's and PyTorch's pointwise benchmarks, interleaved (yaten, torch, yaten, torch, ...),
# ROUNDS rounds (default 3), one thread each; prints the best GB/s of each side and their ratio,
# and for strided and broadcast cases yaten's GB/s against its own contiguous case of the same
# size and run ("vs contig"; needs that case in the run, e.g. `add add_transposed`).
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
# the contiguous case a strided one is measured against (issue 3: strided and broadcast inputs
# at >= 0.5x of contiguous): add_transposed -> add, add_bcast_row -> add, exp_transposed -> exp,
# add_step2 -> add;
# the short-row cases against the same op on long rows: add_bcast_col_short_rows -> add_bcast_col
function base(op) { sub(/_(transposed|bcast_row|bcast_col|short_rows|step2)$/, "", op); return op }
END {
    printf "%-16s %10s %10s %10s %7s %9s\n", "op", "size", "yaten GB/s", "torch GB/s", "ratio",
           "vs contig"
    for (i = 1; i <= n; i++) {
        split(order[i], f, " ")
        y = best["yaten " order[i]]; t = best["torch " order[i]]
        r = 0
        if (t > 0) r = y / t
        c = "-"
        b = best["yaten " base(f[1]) " " f[2]]
        if (base(f[1]) != f[1] && b > 0) c = sprintf("%.2f", y / b)
        printf "%-16s %10s %10.2f %10.2f %7.2f %9s\n", f[1], f[2], y, t, r, c
    }
}' "$out"
rm -f "$out"
