/* Private helpers of the convolution and pooling kernels (kernels/cpu/conv*.c, pool*.c).
 *
 * Every 2-D op works on [N, C, H, W] tensors (an unbatched [C, H, W] input is N = 1). The
 * `int[]` geometry arguments (stride, padding, dilation, kernel_size, ...) follow PyTorch's
 * `int[2]`: two entries (height, width), or one used for both, or none for the default. */
#ifndef YT_KERNELS_CPU_CONV_H
#define YT_KERNELS_CPU_CONV_H

#include "internal.h"

/* Shape of a 2-D convolution: input [n, c_in, h, w], weight [c_out, c_in / groups, kh, kw],
 * output [n, c_out, oh, ow]. */
typedef struct yt__conv_geom {
    int64_t n, c_in, h, w;
    int64_t c_out, kh, kw, groups;
    int64_t sh, sw, ph, pw, dh, dw;
    int64_t oh, ow;
    bool batched; /* input is 4-D (else 3-D, n = 1) */
} yt__conv_geom;

/* One `int[2]` argument: `len` entries (0 = `dflt` for both, 1 = the same for both, 2). Errors
 * name op and argument ("conv2d: stride=[1, 2, 3] must have 1 or 2 entries"); values below
 * `min` are refused ("conv2d: stride=[0, 1] must be >= 1"). */
YT_INTERNAL yt_status yt__conv_pair(int64_t out[2], const char *op, const char *arg,
                                    const int64_t *v, int len, int64_t dflt, int64_t min);

/* Validates a convolution of an input of `in_sizes` (3-D or 4-D) with a weight of `w_sizes` and
 * fills `g`, with errors naming `op`. */
YT_INTERNAL yt_status yt__conv_geom_init(yt__conv_geom *g, const char *op, const int64_t *in_sizes,
                                         int in_dim, const int64_t *w_sizes, int w_dim,
                                         const int64_t *stride, int stride_len,
                                         const int64_t *padding, int padding_len,
                                         const int64_t *dilation, int dilation_len, int64_t groups);

/* Checks that `t` (named `arg`) has the convolution's output shape. */
YT_INTERNAL yt_status yt__conv_check_output(const yt__conv_geom *g, const char *op, const char *arg,
                                            const yt_tensor *t);

/* Output length of one pooling / convolution dimension (PyTorch's pooling_output_shape):
 * floor or ceil of (size + 2 pad - dil (k - 1) - 1) / stride, + 1; with ceil_mode the last
 * window must start inside the input or left padding. -1 when that is < 1 or overflows. */
YT_INTERNAL int64_t yt__pool_out_size(int64_t size, int64_t k, int64_t pad, int64_t stride,
                                      int64_t dil, bool ceil_mode);

/* Geometry of a 2-D pooling op over self [n, c, h, w] (3-D: n = 1). */
typedef struct yt__pool_geom {
    int64_t n, c, h, w;
    int64_t kh, kw, sh, sw, ph, pw, dh, dw;
    int64_t oh, ow;
    bool batched;
} yt__pool_geom;

/* kernel_size (1 or 2 entries, >= 1), stride (none: = kernel_size), padding (<= half the
 * kernel), dilation (>= 1), output size >= 1. */
YT_INTERNAL yt_status yt__pool_geom_init(yt__pool_geom *g, const char *op, const yt_tensor *self,
                                         const int64_t *kernel_size, int kernel_size_len,
                                         const int64_t *stride, int stride_len,
                                         const int64_t *padding, int padding_len,
                                         const int64_t *dilation, int dilation_len, bool ceil_mode);

/* Checks that `t` (named `arg`) has the pooling output shape. */
YT_INTERNAL yt_status yt__pool_check_output(const yt__pool_geom *g, const char *op, const char *arg,
                                            const yt_tensor *t);

/* A contiguous f32 or f64 version of `t` for a kernel computing in `dtype`: `t` itself
 * (retained) when it already is one, else a converted copy. NULL with the error set. */
YT_INTERNAL yt_tensor *yt__conv_operand(yt_tensor *t, yt_dtype dtype);

/* The dtype the kernels compute in for a result of dtype `d` (f64 stays, the rest use f32). */
static inline yt_dtype
yt__conv_compute_dtype(yt_dtype d)
{
    return d == YT_DTYPE_F64 ? YT_DTYPE_F64 : YT_DTYPE_F32;
}

/* Runs `fill` into `result` directly when it is contiguous in the compute dtype, else into a
 * temporary that is then converted into `result`. */
typedef yt_status (*yt__conv_fill_fn)(yt_tensor *target, void *ctx);
YT_INTERNAL yt_status yt__conv_into(yt_tensor *result, yt__conv_fill_fn fill, void *ctx);

/* C = alpha op(A) op(B) + beta C with strides in elements (the interface of yt__gemm_f32 in
 * kernels/cpu/gemm.h, which these call). Single-threaded inside a pool chunk (callers
 * parallelise over images); may use the pool when called outside one. */
YT_INTERNAL void yt__conv_gemm_f32(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                                   float alpha, const float *a, int64_t rsa, int64_t csa,
                                   const float *b, int64_t rsb, int64_t csb, float beta, float *c,
                                   int64_t rsc, int64_t csc);
YT_INTERNAL void yt__conv_gemm_f64(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                                   double alpha, const double *a, int64_t rsa, int64_t csa,
                                   const double *b, int64_t rsb, int64_t csb, double beta,
                                   double *c, int64_t rsc, int64_t csc);

typedef enum { YT_CONV_FORWARD, YT_CONV_BACKWARD_INPUT, YT_CONV_BACKWARD_WEIGHT } yt__conv_kind;

/* Whether yt__conv_direct handles the geometry (stride 1). */
YT_INTERNAL bool yt__conv_direct_ok(const yt__conv_geom *g);
/* One of the three convolutions on contiguous f32 (or f64) buffers, `nt` threads:
 *   forward:          out = y [n, c_out, oh, ow], a = x, b = weight, bias (or NULL)
 *   backward_input:   out = gx [n, c_in, h, w], a = gy, b = weight
 *   backward_weight:  out = gw [c_out, c_in / groups, kh, kw], a = gy, b = x */
YT_INTERNAL yt_status yt__conv_direct(yt__conv_kind kind, void *out, const void *a, const void *b,
                                      const void *bias, const yt__conv_geom *g, bool f64, int nt);

/* Below this many multiply-adds (about 50 us on one core) a convolution stays on one thread:
 * the pool wakes sleeping workers only for jobs of 40 us on (runtime/parallel.c), and a cut into
 * image blocks that then ran on the caller alone would gain nothing. It was 16M (0.4 ms), which
 * kept the benchmark CNN's convolutions (3.1M and 8.9M) on one thread: with 2M, its conv2
 * forward + backward at 2 threads takes 0.52 ms instead of 0.98 (torch 1.44). */
#define YT_CONV_PARALLEL_MACS 2000000

#endif
