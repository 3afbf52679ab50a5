/* The GEMM the convolution kernels call: BLIS on one thread (the kernels spread images over the
 * threads themselves). Same interface as yt__gemm_f32 in kernels/cpu/gemm.h, so switching to it
 * is a one-line change per function. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* blis.h uses pthread barriers */
#endif

#include "conv.h"
#include "blis_setup.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wtype-limits"
#include <blis.h>
#pragma GCC diagnostic pop

void
yt__conv_gemm_f32(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                  const float *a, int64_t rsa, int64_t csa, const float *b, int64_t rsb,
                  int64_t csb, float beta, float *c, int64_t rsc, int64_t csc)
{
    if (m == 0 || n == 0)
        return;
    if (k == 0) { /* C = beta C; beta == 0 overwrites without reading */
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++)
                c[i * rsc + j * csc] = beta == 0 ? 0 : beta * c[i * rsc + j * csc];
        return;
    }
    yt__blis_setup();
    rntm_t rntm = BLIS_RNTM_INITIALIZER;
    bli_rntm_set_num_threads(1, &rntm);
    bli_sgemm_ex(trans_a ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE,
                 trans_b ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, m, n, k, &alpha, (float *)a, rsa,
                 csa, (float *)b, rsb, csb, &beta, c, rsc, csc, NULL, &rntm);
}

void
yt__conv_gemm_f64(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                  const double *a, int64_t rsa, int64_t csa, const double *b, int64_t rsb,
                  int64_t csb, double beta, double *c, int64_t rsc, int64_t csc)
{
    if (m == 0 || n == 0)
        return;
    if (k == 0) { /* C = beta C; beta == 0 overwrites without reading */
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++)
                c[i * rsc + j * csc] = beta == 0 ? 0 : beta * c[i * rsc + j * csc];
        return;
    }
    yt__blis_setup();
    rntm_t rntm = BLIS_RNTM_INITIALIZER;
    bli_rntm_set_num_threads(1, &rntm);
    bli_dgemm_ex(trans_a ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE,
                 trans_b ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, m, n, k, &alpha, (double *)a, rsa,
                 csa, (double *)b, rsb, csb, &beta, c, rsc, csc, NULL, &rntm);
}
