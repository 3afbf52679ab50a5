#!/bin/sh
# Prints the OpenBLAS kernel set the PyTorch side of the benchmarks runs with (OPENBLAS_CORETYPE):
# SkylakeX (AVX-512) where the CPU has AVX-512 F, which OpenBLAS 0.3.21 would not pick on a Zen 5
# by itself; Haswell (AVX2) elsewhere, where SkylakeX's kernels die of an illegal instruction (an
# AMD EPYC guest that hides AVX-512: bench/gemm.sh's first torch run did).
if grep -qw avx512f /proc/cpuinfo; then echo SkylakeX; else echo Haswell; fi
