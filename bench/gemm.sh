#!/bin/sh
# yaten's mm, a direct BLIS call and torch.mm on the same GEMM cases, interleaved (ROUNDS rounds,
# default 3, of yaten+BLIS then torch) at 1 and 2 threads; prints the best GFLOP/s over the
# rounds and the ratios. Usage: bench/gemm.sh BUILD_DIR [THREADS...]
# The BLIS column is the serial BLIS the library links, on one thread at every thread count
# (yaten splits its BLIS products over its own pool). OMP_NUM_THREADS sets yaten's thread count;
# OMP_WAIT_POLICY concerns only PyTorch (yaten's workers spin 300 us after a job, YT_SPIN_US).
# GEMM_CLOCK=thread times one-thread runs in thread CPU time on both sides (robust to other jobs
# preempting the benchmark on a shared machine; meaningless for more threads).
# torch is at its best on OpenBLAS: Debian's libopenblas0-pthread (scripts/deps.sh bench) makes
# it the system libblas.so.3 that torch loads; the first torch run prints the library it got
# and OpenBLAS's kernel set. OpenBLAS 0.3.21 takes a Zen 5 for a Haswell (AVX2 kernels, about
# half its speed here), so torch runs with OPENBLAS_CORETYPE=SkylakeX (its AVX-512 kernels) where
# the CPU has AVX-512 (bench/openblas_core.sh; Haswell elsewhere); TORCH_OPENBLAS_CORETYPE
# overrides it, whatever OPENBLAS_CORETYPE the caller's environment has.
# TORCH_BLAS_DIR=DIR puts DIR/libblas.so.3 first instead. yaten links BLIS (libblis.so.4)
# directly and never loads libblas.so.3.
set -eu
openblas_core=$("$(dirname "$0")/openblas_core.sh")
build=${1:-build}
# never time a stale binary: bring it up to date with the library first
make -s --no-print-directory BUILD="$build" "$build/bench/gemm" >&2
shift || true
threads_list=${*:-1 2}
rounds=${ROUNDS:-3}
if [ -n "${TORCH_BLAS_DIR:-}" ]; then
    LD_LIBRARY_PATH=$TORCH_BLAS_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export LD_LIBRARY_PATH
fi
out=$(mktemp)
first=1
for t in $threads_list; do
    round=0
    while [ "$round" -lt "$rounds" ]; do
        round=$((round + 1))
        OMP_NUM_THREADS=$t OMP_WAIT_POLICY=PASSIVE "$build/bench/gemm" "$t" >>"$out"
        OPENBLAS_CORETYPE=${TORCH_OPENBLAS_CORETYPE:-$openblas_core} OMP_WAIT_POLICY=PASSIVE \
            MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 GEMM_SHOW_BLAS=$first \
            /usr/bin/python3 bench/gemm_torch.py "$t" >>"$out"
        first=0
    done
done
grep '^#' "$out" || true
awk -v rounds="$rounds" '
function keep(k, v) { if (!(k in best) || v > best[k]) best[k] = v }
$2 == "yaten" { if (!($1 in seen)) { seen[$1] = 1; order[n++] = $1 } keep($1 " y", $3); keep($1 " b", $5) }
$2 == "torch" { keep($1 " t", $3) }
END {
    printf "%-28s %9s %9s %9s %11s %11s\n", "case (GFLOP/s, best of " rounds ")", "yaten", "BLIS",
           "torch", "yaten/BLIS", "yaten/torch"
    for (i = 0; i < n; i++) {
        k = order[i]
        printf "%-28s %9.1f %9.1f %9.1f %10.2fx %10.2fx\n", substr(k, 6), best[k " y"], best[k " b"],
               best[k " t"], best[k " y"] / best[k " b"], best[k " y"] / best[k " t"]
    }
}' "$out"
rm -f "$out"
