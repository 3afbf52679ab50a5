/* conv2d and its two backward ops on the CPU: im2col + one GEMM per image and group (a direct
 * loop for one input channel per group), images spread over threads above a size threshold.
 * f16 and bf16 compute in f32. The column matrices live in one scratch block per call from the
 * caching allocator, so steady-state training does not page-fault.
 *
 * The three ops close under differentiation (conv2d_backward_input is linear in grad_output and
 * in weight, conv2d_backward_weight in grad_output and in input), which is what makes double
 * backward work: see derivatives.yaml. */
#include <omp.h>
#include <string.h>

#include "conv.h"
#include "kernels.h"
#include "parallel.h"

#define T    float
#define SFX  f32
#define GEMM yt__conv_gemm_f32
#include "conv_impl.h"
#undef T
#undef SFX
#undef GEMM

#define T    double
#define SFX  f64
#define GEMM yt__conv_gemm_f64
#include "conv_impl.h"
#undef T
#undef SFX
#undef GEMM

typedef struct conv_call {
    yt__conv_kind kind;
    const yt__conv_geom *g;
    yt_tensor *a; /* forward: input; backward: grad_output */
    yt_tensor *b; /* forward and backward_input: weight; backward_weight: input */
    yt_tensor *bias;
} conv_call;

static int
conv_threads(const yt__conv_geom *g)
{
    double macs = (double)g->n * (double)g->c_out * (double)(g->oh * g->ow) *
                  (double)(g->c_in / g->groups * g->kh * g->kw);
    int nt = yt__max_threads();
    if (macs < YT_CONV_PARALLEL_MACS || nt < 2 || g->n < 2)
        return 1;
    return nt < g->n ? nt : (int)g->n;
}

static yt_status
conv_fill(yt_tensor *target, void *ctx)
{
    conv_call *c = ctx;
    const yt__conv_geom *g = c->g;
    yt_dtype dtype = target->dtype;
    size_t es = yt_dtype_size(dtype);
    if (target->numel == 0)
        return YT_OK;
    yt_tensor *a = yt__conv_operand(c->a, dtype);
    yt_tensor *b = a == NULL ? NULL : yt__conv_operand(c->b, dtype);
    yt_tensor *bias = b == NULL || c->bias == NULL ? NULL : yt__conv_operand(c->bias, dtype);
    if (b == NULL || (c->bias != NULL && bias == NULL)) {
        yt_release(a);
        yt_release(b);
        return yt__last_status();
    }
    int nt = conv_threads(g);
    if (yt__conv_direct_ok(g)) {
        yt_status st =
            yt__conv_direct(c->kind, yt__data_ptr(target), yt__data_ptr(a), yt__data_ptr(b),
                            bias != NULL ? yt__data_ptr(bias) : NULL, g, dtype == YT_DTYPE_F64, nt);
        yt_release(bias);
        yt_release(b);
        yt_release(a);
        return st;
    }
    int64_t kdim = g->c_in / g->groups * g->kh * g->kw, p = g->oh * g->ow;
    /* one column matrix per thread; backward_weight adds a partial gradient per extra thread */
    size_t col_bytes = (size_t)(kdim * p) * es * (size_t)nt;
    size_t part_bytes =
        c->kind == YT_CONV_BACKWARD_WEIGHT ? (size_t)(g->c_out * kdim) * es * (size_t)(nt - 1) : 0;
    size_t bytes = col_bytes + part_bytes;
    char *scratch = bytes > 0 ? yt__cpu_alloc(bytes) : NULL;
    yt_status status = YT_OK;
    if (bytes > 0 && scratch == NULL) {
        status =
            yt__fail_status(YT_ERR_NOMEM, "conv2d: cannot allocate %zu bytes of scratch", bytes);
    } else if (p > 0 || c->kind == YT_CONV_BACKWARD_WEIGHT) {
        void *out = yt__data_ptr(target);
        const void *pa = yt__data_ptr(a), *pb = yt__data_ptr(b);
        const void *pbias = bias != NULL ? yt__data_ptr(bias) : NULL;
        bool f64 = dtype == YT_DTYPE_F64;
        switch (c->kind) {
        case YT_CONV_FORWARD:
            if (f64)
                conv_forward_f64(out, pa, pb, pbias, g, (double *)scratch, nt);
            else
                conv_forward_f32(out, pa, pb, pbias, g, (float *)scratch, nt);
            break;
        case YT_CONV_BACKWARD_INPUT:
            if (f64)
                conv_backward_input_f64(out, pa, pb, g, (double *)scratch, nt);
            else
                conv_backward_input_f32(out, pa, pb, g, (float *)scratch, nt);
            break;
        case YT_CONV_BACKWARD_WEIGHT:
            if (f64)
                conv_backward_weight_f64(out, pa, pb, g, (double *)scratch,
                                         (double *)(scratch + col_bytes), nt);
            else
                conv_backward_weight_f32(out, pa, pb, g, (float *)scratch,
                                         (float *)(scratch + col_bytes), nt);
            break;
        }
    }
    if (scratch != NULL)
        yt__cpu_free(scratch, bytes);
    yt_release(bias);
    yt_release(b);
    yt_release(a);
    return status;
}

yt_status
yt__cpu_conv2d(yt_tensor *result, yt_tensor *input, yt_tensor *weight, yt_tensor *bias,
               const int64_t *stride, int stride_len, const int64_t *padding, int padding_len,
               const int64_t *dilation, int dilation_len, int64_t groups)
{
    const char *op = "conv2d";
    yt__conv_geom g;
    if (yt__conv_geom_init(&g, op, input->sizes, input->dim, weight->sizes, weight->dim, stride,
                           stride_len, padding, padding_len, dilation, dilation_len,
                           groups) != YT_OK ||
        yt__conv_check_output(&g, op, "result", result) != YT_OK)
        return yt__last_status();
    if (bias != NULL && (bias->dim != 1 || bias->sizes[0] != g.c_out)) {
        char buf[YT__SIZES_BUF];
        return yt__fail_status(
            YT_ERR_SHAPE, "conv2d: bias must be 1-D of size out_channels=%lld, got shape %s",
            (long long)g.c_out, yt__format_sizes(buf, sizeof buf, bias->sizes, bias->dim));
    }
    conv_call c = {YT_CONV_FORWARD, &g, input, weight, bias};
    return yt__conv_into(result, conv_fill, &c);
}

yt_status
yt__cpu_conv2d_backward_input(yt_tensor *result, yt_tensor *grad_output, yt_tensor *weight,
                              const int64_t *input_size, int input_size_len, const int64_t *stride,
                              int stride_len, const int64_t *padding, int padding_len,
                              const int64_t *dilation, int dilation_len, int64_t groups)
{
    const char *op = "conv2d_backward_input";
    yt__conv_geom g;
    if (yt__conv_geom_init(&g, op, input_size, input_size_len, weight->sizes, weight->dim, stride,
                           stride_len, padding, padding_len, dilation, dilation_len,
                           groups) != YT_OK ||
        yt__conv_check_output(&g, op, "grad_output", grad_output) != YT_OK)
        return yt__last_status();
    conv_call c = {YT_CONV_BACKWARD_INPUT, &g, grad_output, weight, NULL};
    return yt__conv_into(result, conv_fill, &c);
}

yt_status
yt__cpu_conv2d_backward_weight(yt_tensor *result, yt_tensor *grad_output, yt_tensor *input,
                               const int64_t *weight_size, int weight_size_len,
                               const int64_t *stride, int stride_len, const int64_t *padding,
                               int padding_len, const int64_t *dilation, int dilation_len,
                               int64_t groups)
{
    const char *op = "conv2d_backward_weight";
    yt__conv_geom g;
    if (yt__conv_geom_init(&g, op, input->sizes, input->dim, weight_size, weight_size_len, stride,
                           stride_len, padding, padding_len, dilation, dilation_len,
                           groups) != YT_OK ||
        yt__conv_check_output(&g, op, "grad_output", grad_output) != YT_OK)
        return yt__last_status();
    conv_call c = {YT_CONV_BACKWARD_WEIGHT, &g, grad_output, input, NULL};
    return yt__conv_into(result, conv_fill, &c);
}
