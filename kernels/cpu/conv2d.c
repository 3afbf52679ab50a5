/* conv2d and its two backward ops on the CPU: im2col + one GEMM per image and group (a direct
 * loop for one input channel per group), images spread over the kernel pool above a size
 * threshold (stride 1 goes to conv_direct.c).
 * f16 and bf16 compute in f32. The column matrices live in one scratch block per call from the
 * caching allocator, so steady-state training does not page-fault.
 *
 * The three ops close under differentiation (conv2d_backward_input is linear in grad_output and
 * in weight, conv2d_backward_weight in grad_output and in input), which is what makes double
 * backward work: see derivatives.yaml. */
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

static double
conv_macs(const yt__conv_geom *g)
{
    return (double)g->n * (double)g->c_out * (double)(g->oh * g->ow) *
           (double)(g->c_in / g->groups * g->kh * g->kw);
}

/* Whether the images are worth spreading over threads (from the size only). */
static bool
conv_splits(const yt__conv_geom *g)
{
    return conv_macs(g) >= YT_CONV_PARALLEL_MACS && g->n >= 2;
}

static int
conv_threads(const yt__conv_geom *g)
{
    int nt = yt__max_threads();
    if (!conv_splits(g) || nt < 2)
        return 1;
    return nt < g->n ? nt : (int)g->n;
}

/* The weight gradient's image blocks, each summed into its own partial: from the size (and a
 * thread setting above WEIGHT_BLOCKS) only, so any thread count up to WEIGHT_BLOCKS gives the
 * same bits. The partials past the first take at most WEIGHT_PARTIAL_BYTES. */
#define WEIGHT_BLOCKS        8
#define WEIGHT_PARTIAL_BYTES ((int64_t)32 << 20)

static int64_t
weight_blocks(const yt__conv_geom *g, size_t es)
{
    if (!conv_splits(g))
        return 1;
    int64_t blocks = yt__max_threads() > WEIGHT_BLOCKS ? yt__max_threads() : WEIGHT_BLOCKS;
    if (blocks > g->n)
        blocks = g->n;
    int64_t part = g->c_out * (g->c_in / g->groups * g->kh * g->kw) * (int64_t)es;
    if ((blocks - 1) * part > WEIGHT_PARTIAL_BYTES)
        blocks = 1 + WEIGHT_PARTIAL_BYTES / part;
    return blocks;
}

/* Runs the pass `fn` over `chunks` chunks on up to `threads` threads. A single chunk runs
 * directly, so that the GEMMs inside may use the pool themselves (one large image). */
static void
conv_run(int64_t chunks, int threads, yt__chunk_fn fn, void *j)
{
    if (chunks == 1)
        fn(j, 0);
    else
        yt__parallel_run(chunks, threads, fn, j);
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
    if (c->kind == YT_CONV_BACKWARD_WEIGHT && (g->n == 0 || g->oh == 0 || g->ow == 0)) {
        /* a sum over no images or no output positions; the scratch sized below from the
         * output's plane could be any size (an empty batch with padding 2^40 took petabytes) */
        memset(yt__data_ptr(target), 0, (size_t)target->numel * es);
        return YT_OK;
    }
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
    bool weight = c->kind == YT_CONV_BACKWARD_WEIGHT;
    if ((double)kdim * (double)p > 0x1p48) {
        /* could not be allocated, and its byte counts below could overflow */
        yt_release(bias);
        yt_release(b);
        yt_release(a);
        return yt__fail_status(YT_ERR_NOMEM,
                               "conv2d: cannot allocate a column matrix of %lld x %lld elements",
                               (long long)kdim, (long long)p);
    }
    /* about 40 multiply-adds per nanosecond on one thread */
    int threads = nt > 1 ? yt__parallel_threads(conv_macs(g) / 40.0, nt) : 1;
    int64_t chunks = weight ? weight_blocks(g, es) : yt__parallel_chunks(g->n, threads);
    if (threads > chunks)
        threads = (int)chunks;
    /* a column matrix per thread that may run; backward_weight adds a partial per extra block */
    size_t col_bytes = (size_t)(kdim * p) * es * (size_t)threads;
    size_t part_bytes = weight ? (size_t)(g->c_out * kdim) * es * (size_t)(chunks - 1) : 0;
    size_t bytes = col_bytes + part_bytes;
    char *scratch = bytes > 0 ? yt__cpu_alloc(bytes) : NULL;
    yt_status status = YT_OK;
    if (bytes > 0 && scratch == NULL) {
        status =
            yt__fail_status(YT_ERR_NOMEM, "conv2d: cannot allocate %zu bytes of scratch", bytes);
    } else if (p > 0 || weight) {
        void *out = yt__data_ptr(target);
        const void *pa = yt__data_ptr(a), *pb = yt__data_ptr(b);
        const void *pbias = bias != NULL ? yt__data_ptr(bias) : NULL;
        bool f64 = dtype == YT_DTYPE_F64;
        conv_job_f32 j32 = {
            out,    pa, pb,     pbias, g, (float *)scratch, (float *)(scratch + col_bytes),
            chunks, 1,  threads};
        conv_job_f64 j64 = {
            out,    pa, pb,     pbias, g, (double *)scratch, (double *)(scratch + col_bytes),
            chunks, 1,  threads};
        void *j = f64 ? (void *)&j64 : (void *)&j32;
        switch (c->kind) {
        case YT_CONV_FORWARD:
            conv_run(chunks, threads, f64 ? conv_forward_f64 : conv_forward_f32, j);
            break;
        case YT_CONV_BACKWARD_INPUT:
            conv_run(chunks, threads, f64 ? conv_backward_input_f64 : conv_backward_input_f32, j);
            break;
        case YT_CONV_BACKWARD_WEIGHT:
            conv_run(chunks, threads, f64 ? conv_backward_weight_f64 : conv_backward_weight_f32, j);
            if (chunks > 1) {
                /* an add per partial element, about a third of a nanosecond */
                double ns = (double)(chunks - 1) * (double)(g->c_out * kdim) / 3.0;
                int sum_threads = yt__parallel_threads(ns, yt__max_threads());
                int64_t sum_chunks = sum_threads > 1 ? 4 * (int64_t)sum_threads : 1;
                j32.sum_chunks = j64.sum_chunks = sum_chunks;
                yt__parallel_run(sum_chunks, sum_threads,
                                 f64 ? conv_weight_sum_f64 : conv_weight_sum_f32, j);
            }
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
