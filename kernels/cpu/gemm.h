/* The one GEMM entry of the CPU kernels (mm, bmm, addmm, baddbmm, matmul, linear, conv):
 *
 *   C = alpha * op(A) @ op(B) + beta * C        op(X) = X, or X^T when trans_x
 *
 * with C m x n, op(A) m x k, op(B) k x n. Every matrix is given by a pointer and its row and
 * column strides in elements, like BLIS's bli_?gemm: A is m x k (k x m when trans_a) with
 * element (r, c) at a[r * rsa + c * csa]; the same for B and C. A and B may have any strides
 * (zero from expand, negative, overlapping: they are only read); C's must not make two of its
 * elements share memory, and C must not overlap A or B.
 *
 * beta == 0 overwrites C without reading it (NaN or garbage in C does not propagate), as BLAS
 * does; k == 0 gives C = beta * C; m == 0 or n == 0 does nothing.
 *
 * Register-blocked AVX-512 (or AVX2) kernels (gemm_small.h) read row- or column-major
 * operands in place and pack the others; with AVX2 only, large products go to BLIS with the
 * strides unchanged. The choice, and the thread count (one below a size threshold; above
 * it, more only while parallel products have recently paid off: gemm_threads.h), is made
 * inside.
 * Returns YT_OK, or an error recorded with yt__fail (a C stride layout that overlaps itself,
 * out of memory for the packing buffers). Thread-safe. */
#ifndef YT_KERNELS_CPU_GEMM_H
#define YT_KERNELS_CPU_GEMM_H

#include "internal.h"

YT_INTERNAL yt_status yt__gemm_f32(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                                   float alpha, const float *a, int64_t rsa, int64_t csa,
                                   const float *b, int64_t rsb, int64_t csb, float beta, float *c,
                                   int64_t rsc, int64_t csc);

YT_INTERNAL yt_status yt__gemm_f64(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                                   double alpha, const double *a, int64_t rsa, int64_t csa,
                                   const double *b, int64_t rsb, int64_t csb, double beta,
                                   double *c, int64_t rsc, int64_t csc);

/* C = alpha * op(A) @ op(B) + bias[j] in every row (n contiguous values): addmm with a bias
 * vector, added as the kernels store C instead of copied into C beforehand. */
YT_INTERNAL yt_status yt__gemm_bias_f32(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                                        float alpha, const float *a, int64_t rsa, int64_t csa,
                                        const float *b, int64_t rsb, int64_t csb, const float *bias,
                                        float *c, int64_t rsc, int64_t csc);
YT_INTERNAL yt_status yt__gemm_bias_f64(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                                        double alpha, const double *a, int64_t rsa, int64_t csa,
                                        const double *b, int64_t rsb, int64_t csb,
                                        const double *bias, double *c, int64_t rsc, int64_t csc);

/* `batch` independent products, entry i at a + i * bsa, b + i * bsb, c + i * bsc (a batch
 * stride of 0 broadcasts that operand; C's entries must not overlap). Small entries are spread
 * over threads by batch entry, large ones each use all threads. */
YT_INTERNAL yt_status yt__gemm_batched_f32(bool trans_a, bool trans_b, int64_t batch, int64_t m,
                                           int64_t n, int64_t k, float alpha, const float *a,
                                           int64_t bsa, int64_t rsa, int64_t csa, const float *b,
                                           int64_t bsb, int64_t rsb, int64_t csb, float beta,
                                           float *c, int64_t bsc, int64_t rsc, int64_t csc);

YT_INTERNAL yt_status yt__gemm_batched_f64(bool trans_a, bool trans_b, int64_t batch, int64_t m,
                                           int64_t n, int64_t k, double alpha, const double *a,
                                           int64_t bsa, int64_t rsa, int64_t csa, const double *b,
                                           int64_t bsb, int64_t rsb, int64_t csb, double beta,
                                           double *c, int64_t bsc, int64_t rsc, int64_t csc);

#endif
