#!/bin/sh
# Runs yaten's and PyTorch's (C++ API) overhead benchmarks interleaved, three times each, and
# prints both side by side with the targets from the spine issue. One thread for both.
# Usage: bench/overhead.sh BUILD_DIR
set -eu
build=${1:-build}
# never time a stale binary: bring it up to date with the library first
make -s --no-print-directory BUILD="$build" "$build/bench/overhead" "$build/bench/overhead_torch" >&2
export OMP_NUM_THREADS=1
out=$(mktemp)
for round in 1 2 3; do
    "$build/bench/overhead" >>"$out"
    # PyTorch at its best settings here: glibc keeps freed memory instead of returning it
    MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 \
        "$build/bench/overhead_torch" >>"$out"
done
# best of the three medians for each line
awk '
{ v = $2 + 0; if (!($1 in best) || v < best[$1]) best[$1] = v; unit[$1] = $3 }
END {
    split("add_nograd add_grad chain_fwd_bwd", keys, " ")
    target["add_nograd"] = "< 100"; target["add_grad"] = "< 300"; target["chain_fwd_bwd"] = "< 1000"
    printf "%-16s %10s %10s %8s %10s\n", "case", "yaten", "torch C++", "ratio", "target"
    for (i = 1; i <= 3; i++) {
        k = keys[i]
        printf "%-16s %7.0f %-2s %7.0f %-2s %7.2fx %10s\n", k, best["yaten_" k], substr(unit["yaten_" k], 1, 2),
               best["torch_" k], substr(unit["torch_" k], 1, 2), best["torch_" k] / best["yaten_" k], target[k]
    }
}' "$out"
rm -f "$out"
