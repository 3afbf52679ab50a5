/* The small-GEMM path behind yt__gemm_*: register-blocked microkernels (AVX-512 or AVX2 + FMA, as
 * yt__cpu_isa says) over operands packed from any strides. BLIS spends most of a 64^3 product in
 * per-call setup; this path has none beyond two cached packing buffers. */
#ifndef YT_KERNELS_CPU_GEMM_SMALL_H
#define YT_KERNELS_CPU_GEMM_SMALL_H

#include "cpu_isa.h"
#include "internal.h"

/* C = alpha * A B + beta * C (beta == 0 overwrites) with A m x k, B k x n already in
 * no-transpose form, k >= 1, m, n >= 1, any strides for A and B, non-overlapping C. With a bias
 * (n contiguous values, or NULL) C = alpha * A B + bias[j] in column j, and beta must be 0. Uses
 * up to `threads` threads (call with 1 inside a parallel region). */
YT_INTERNAL yt_status yt__gemm_small_s(int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                                       int64_t rsa, int64_t csa, const float *b, int64_t rsb,
                                       int64_t csb, float beta, float *c, int64_t rsc, int64_t csc,
                                       const float *bias, int threads);
YT_INTERNAL yt_status yt__gemm_small_d(int64_t m, int64_t n, int64_t k, double alpha,
                                       const double *a, int64_t rsa, int64_t csa, const double *b,
                                       int64_t rsb, int64_t csb, double beta, double *c,
                                       int64_t rsc, int64_t csc, const double *bias, int threads);

#endif
