/* The GEMM of the im2col convolution path (strides > 1): the library's own yt__gemm_f32/f64
 * (kernels/cpu/gemm.h), which picks its small-matrix kernel or BLIS. The callers spread images
 * over the kernel pool themselves and call this from inside their chunks (one thread there). */
#include "conv.h"
#include "gemm.h"

void
yt__conv_gemm_f32(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                  const float *a, int64_t rsa, int64_t csa, const float *b, int64_t rsb,
                  int64_t csb, float beta, float *c, int64_t rsc, int64_t csc)
{
    /* errors (out of memory for packing) cannot be reported from inside a chunk; the
     * convolution's own scratch was allocated before it, so the packing buffers are small */
    (void)yt__gemm_f32(trans_a, trans_b, m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc,
                       csc);
}

void
yt__conv_gemm_f64(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                  const double *a, int64_t rsa, int64_t csa, const double *b, int64_t rsb,
                  int64_t csb, double beta, double *c, int64_t rsc, int64_t csc)
{
    (void)yt__gemm_f64(trans_a, trans_b, m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc,
                       csc);
}
