#!/bin/sh
# yaten's mm, a direct BLIS call and torch.mm on the same GEMM cases, interleaved (three rounds
# of yaten+BLIS then torch) at 1 and 2 threads; prints the best GFLOP/s of the rounds and the
# ratios. Usage: bench/gemm.sh BUILD_DIR [THREADS...]
# torch runs on OpenBLAS (SkylakeX kernels), its best here: TORCH_BLAS_DIR names a directory
# holding OpenBLAS's libblas.so.3 (default: Debian's libopenblas0-pthread location); without
# it torch's libblas.so.3 may be BLIS's generic build, far from torch's best.
set -eu
blas_dir=${TORCH_BLAS_DIR:-/usr/lib/x86_64-linux-gnu/openblas-pthread}
[ -e "$blas_dir/libblas.so.3" ] || echo "gemm.sh: no OpenBLAS in $blas_dir: torch numbers are not its best" >&2
build=${1:-build}
shift || true
threads_list=${*:-1 2}
out=$(mktemp)
for t in $threads_list; do
    for round in 1 2 3; do
        OMP_NUM_THREADS=$t OMP_WAIT_POLICY=PASSIVE "$build/bench/gemm" "$t" >>"$out"
        LD_LIBRARY_PATH=$blas_dir OPENBLAS_CORETYPE=SkylakeX OMP_WAIT_POLICY=PASSIVE \
            MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 \
            /usr/bin/python3 bench/gemm_torch.py "$t" >>"$out"
    done
done
awk '
function keep(k, v) { if (!(k in best) || v > best[k]) best[k] = v }
$2 == "yaten" { if (!($1 in seen)) { seen[$1] = 1; order[n++] = $1 } keep($1 " y", $3); keep($1 " b", $5) }
$2 == "torch" { keep($1 " t", $3) }
END {
    printf "%-28s %9s %9s %9s %11s %11s\n", "case (GFLOP/s, best of 3)", "yaten", "BLIS", "torch",
           "yaten/BLIS", "yaten/torch"
    for (i = 0; i < n; i++) {
        k = order[i]
        printf "%-28s %9.1f %9.1f %9.1f %10.2fx %10.2fx\n", substr(k, 6), best[k " y"], best[k " b"],
               best[k " t"], best[k " y"] / best[k " b"], best[k " y"] / best[k " t"]
    }
}' "$out"
rm -f "$out"
