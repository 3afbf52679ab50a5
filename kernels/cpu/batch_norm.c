/* batch_norm on the CPU. The input is viewed as [N, C, S]; each channel's N runs of S contiguous
 * elements are handled by one thread from start to end (statistics, then the output, or in the
 * backward the two sums, then dx), so a channel is read while it is still in cache. Sums run in
 * the compute type inside a run and in double across runs.
 *
 * Training uses the batch statistics and updates the running ones in place as PyTorch does:
 * running = (1 - momentum) * running + momentum * batch, with the unbiased batch variance. */
#include <math.h>
#include <string.h>

#include "kernels.h"
#include "norm.h"
#include "parallel.h"

#define NORM_BLOCK 2048

/* y = x * a + b and dx = k * g + c2 * x + c3 over one run */
#define BN_LOOPS(NT, SUF)                                                                          \
    static void axpb_##SUF(NT *y, const NT *x, int64_t n, NT a, NT b)                              \
    {                                                                                              \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++) y[i] = x[i] * a + b;                   \
    }                                                                                              \
    static void dx_##SUF(NT *dx, const NT *g, const NT *x, int64_t n, NT k, NT c2, NT c3)          \
    {                                                                                              \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++) dx[i] = k * g[i] + c2 * x[i] + c3;     \
    }

#define NT     float
#define FN(fn) fn##_f32
#include "norm_sums_impl.h"
BN_LOOPS(float, f32)
#undef NT
#undef FN

#define NT     double
#define FN(fn) fn##_f64
#include "norm_sums_impl.h"
BN_LOOPS(double, f64)
#undef NT
#undef FN

/* Geometry of [N, C, S], and the values per channel N * S. */
typedef struct bn_geom {
    int64_t n, c, s, count;
} bn_geom;

static bn_geom
geom_of(const yt_tensor *x)
{
    bn_geom g = {x->dim > 0 ? x->sizes[0] : 1, x->dim > 1 ? x->sizes[1] : 1, 1, 0};
    /* Only an empty tensor can overflow these products; it computes nothing, and a count that
     * saturates still says "more than one value" as PyTorch's N * S would. */
    for (int i = 2; i < x->dim; i++)
        if (!yt__mul_ok(&g.s, g.s, x->sizes[i]))
            g.s = INT64_MAX;
    if (!yt__mul_ok(&g.count, g.n, g.s))
        g.count = INT64_MAX;
    if (x->numel == 0)
        g.n = g.s = 0;
    return g;
}

static int
threads_for(int64_t work, int64_t channels)
{
    int nth = work >= YT_PARALLEL_GRAIN ? yt__max_threads() : 1;
    return channels < nth ? (channels > 0 ? (int)channels : 1) : nth;
}

/* Mean and biased variance of channel c of contiguous x (two passes over its N runs of S). The
 * backward recomputes them with this same code, so both see the same values. */
static void
channel_stats(const char *xd, yt_dtype cd, bn_geom g, int64_t c, double *mean, double *var)
{
    const int64_t N = g.n, C = g.c, S = g.s, count = g.count;
    double s = 0, q = 0;
    for (int64_t n = 0; n < N; n++)
        s += cd == YT_DTYPE_F64 ? sum_f64((const double *)xd + (n * C + c) * S, S)
                                : sum_f32((const float *)xd + (n * C + c) * S, S);
    double m = s / (double)count;
    for (int64_t n = 0; n < N; n++)
        q += cd == YT_DTYPE_F64 ? sumsq_f64((const double *)xd + (n * C + c) * S, S, m)
                                : sumsq_f32((const float *)xd + (n * C + c) * S, S, (float)m);
    *mean = m;
    *var = q / (double)count;
}

/* A [C] tensor's values as doubles (copied), or `fill` when t is NULL. */
static yt_status
load_channel(double *out, yt_tensor *t, int64_t c, double fill)
{
    if (t == NULL) {
        for (int64_t i = 0; i < c; i++)
            out[i] = fill;
        return YT_OK;
    }
    yt_tensor *d = yt__norm_contig(t, YT_DTYPE_F64);
    if (d == NULL)
        return yt__last_status();
    memcpy(out, yt__data_ptr(d), (size_t)c * sizeof *out);
    yt_release(d);
    return YT_OK;
}

/* Writes doubles into a [C] tensor of any dtype and strides. */
static yt_status
store_channel(yt_tensor *t, const double *v, int64_t c)
{
    if (t == NULL || t->numel == 0)
        return YT_OK;
    yt_tensor *d = yt__empty_like(t, YT_DTYPE_F64);
    if (d == NULL)
        return yt__last_status();
    memcpy(yt__data_ptr(d), v, (size_t)c * sizeof *v);
    yt_status st = yt__copy_into(t, d);
    yt_release(d);
    return st;
}

static yt_tensor *
out_like(yt_tensor *t, yt_dtype cd)
{
    if (t->is_contiguous && t->dtype == cd)
        return yt_retain(t);
    return yt__empty_like(t, cd);
}

static yt_status
finish(yt_tensor *t, yt_tensor *buf, yt_status st)
{
    if (buf != NULL && buf != t && st == YT_OK)
        st = yt__copy_into(t, buf);
    yt_release(buf);
    return st;
}

/* Channels are independent: blocks of them run on the pool (parallel.h). */
static void
run_channels(int64_t work, int64_t channels, yt__chunk_fn fn, void *job, int64_t *chunks)
{
    int nth = threads_for(work, channels);
    if (nth > 1)
        nth = yt__parallel_threads(0.5 * (double)work, nth);
    *chunks = yt__parallel_chunks(channels, nth);
    yt__parallel_run(*chunks, nth, fn, job);
}

typedef struct bn_fwd_job {
    bn_geom g;
    yt_dtype cd;
    const char *xd;
    char *yd;
    bool training;
    double eps, *mean, *var, *invstd, *w, *b;
    int64_t chunks;
} bn_fwd_job;

static void
bn_fwd_channels(void *arg, int64_t chunk)
{
    const bn_fwd_job *j = arg;
    const int64_t N = j->g.n, C = j->g.c, S = j->g.s;
    const yt_dtype cd = j->cd;
    for (int64_t c = C * chunk / j->chunks; c < C * (chunk + 1) / j->chunks; c++) {
        if (j->training) {
            channel_stats(j->xd, cd, j->g, c, &j->mean[c], &j->var[c]);
            j->invstd[c] = 1.0 / sqrt(j->var[c] + j->eps);
        }
        double a = j->invstd[c] * j->w[c], sh = j->b[c] - j->mean[c] * a;
        for (int64_t n = 0; n < N; n++) {
            int64_t o = (n * C + c) * S;
            if (cd == YT_DTYPE_F64)
                axpb_f64((double *)j->yd + o, (const double *)j->xd + o, S, a, sh);
            else
                axpb_f32((float *)j->yd + o, (const float *)j->xd + o, S, (float)a, (float)sh);
        }
    }
}

typedef struct bn_bwd_job {
    bn_geom g;
    yt_dtype cd;
    const char *xd, *gd;
    char *dxd;
    bool only_db, need_sums, recompute, training;
    double eps, *mean, *invstd, *w, *sg, *sgx;
    int64_t chunks;
} bn_bwd_job;

static void
bn_bwd_channels(void *arg, int64_t chunk)
{
    const bn_bwd_job *j = arg;
    const int64_t N = j->g.n, C = j->g.c, S = j->g.s, count = j->g.count;
    const yt_dtype cd = j->cd;
    const char *xd = j->xd, *gd = j->gd;
    double *mean = j->mean, *invstd = j->invstd, *sg = j->sg, *sgx = j->sgx;
    for (int64_t c = C * chunk / j->chunks; c < C * (chunk + 1) / j->chunks; c++) {
        if (j->recompute && count > 0) {
            double var;
            channel_stats(xd, cd, j->g, c, &mean[c], &var);
            invstd[c] = 1.0 / sqrt(var + j->eps);
        } else if (j->recompute) {
            mean[c] = invstd[c] = 0; /* no values: the sums are 0 */
        }
        sg[c] = sgx[c] = 0;
        for (int64_t n = 0; j->only_db && n < N; n++) {
            int64_t o = (n * C + c) * S;
            sg[c] += cd == YT_DTYPE_F64 ? sum_f64((const double *)gd + o, S)
                                        : sum_f32((const float *)gd + o, S);
        }
        for (int64_t n = 0; j->need_sums && !j->only_db && n < N; n++) {
            int64_t o = (n * C + c) * S;
            if (cd == YT_DTYPE_F64)
                dotc_f64((const double *)gd + o, (const double *)xd + o, S, mean[c], &sg[c],
                         &sgx[c]);
            else
                dotc_f32((const float *)gd + o, (const float *)xd + o, S, (float)mean[c], &sg[c],
                         &sgx[c]);
        }
        if (j->dxd == NULL)
            continue;
        double k = invstd[c] * j->w[c], c2 = 0, c3 = 0;
        if (j->training && count > 0) {
            c2 = -k * invstd[c] * invstd[c] * sgx[c] / (double)count;
            c3 = -k * sg[c] / (double)count - c2 * mean[c];
        }
        for (int64_t n = 0; n < N; n++) {
            int64_t o = (n * C + c) * S;
            if (cd == YT_DTYPE_F64)
                dx_f64((double *)j->dxd + o, (const double *)gd + o, (const double *)xd + o, S, k,
                       c2, c3);
            else
                dx_f32((float *)j->dxd + o, (const float *)gd + o, (const float *)xd + o, S,
                       (float)k, (float)c2, (float)c3);
        }
    }
}

yt_status
yt__batchnorm_forward(yt_tensor *y, yt_tensor *save_mean, yt_tensor *save_invstd, yt_tensor *x,
                      yt_tensor *weight, yt_tensor *bias, yt_tensor *running_mean,
                      yt_tensor *running_var, bool training, double momentum, double eps)
{
    const bn_geom g = geom_of(x);
    const int64_t count = g.count; /* values per channel */
    yt_dtype cd = yt__norm_compute_dtype(x->dtype);
    /* per channel: mean, invstd, weight, bias, then (training) batch var */
    double *ch = yt__cpu_alloc((size_t)(5 * g.c + 1) * sizeof(double));
    if (ch == NULL)
        return yt__fail_status(YT_ERR_NOMEM, "batch_norm: out of memory");
    double *mean = ch, *invstd = ch + g.c, *w = ch + 2 * g.c, *b = ch + 3 * g.c,
           *var = ch + 4 * g.c;
    yt_tensor *xc = yt__norm_contig(x, cd), *yb = xc ? out_like(y, cd) : NULL;
    yt_status st = xc && yb ? YT_OK : yt__last_status();
    if (st == YT_OK)
        st = load_channel(w, weight, g.c, 1.0);
    if (st == YT_OK)
        st = load_channel(b, bias, g.c, 0.0);
    if (st == YT_OK && !training) {
        st = load_channel(mean, running_mean, g.c, 0.0);
        if (st == YT_OK)
            st = load_channel(var, running_var, g.c, 1.0);
        for (int64_t c = 0; st == YT_OK && c < g.c; c++)
            invstd[c] = 1.0 / sqrt(var[c] + eps);
    }
    if (st == YT_OK) {
        const int64_t C = g.c;
        const char *xd = yt__data_ptr(xc);
        char *yd = yt__data_ptr(yb);
        bn_fwd_job j = {g, cd, xd, yd, training, eps, mean, var, invstd, w, b, 0};
        run_channels(x->numel, C, bn_fwd_channels, &j, &j.chunks);
    }
    st = finish(y, yb, st);
    if (st == YT_OK && training) {
        st = store_channel(save_mean, mean, g.c);
        if (st == YT_OK)
            st = store_channel(save_invstd, invstd, g.c);
        /* running stats: (1 - momentum) * old + momentum * new, unbiased variance */
        if (st == YT_OK && running_mean != NULL) {
            st = load_channel(w, running_mean, g.c, 0.0);
            for (int64_t c = 0; c < g.c; c++)
                w[c] = (1.0 - momentum) * w[c] + momentum * mean[c];
            if (st == YT_OK && (st = store_channel(running_mean, w, g.c)) == YT_OK)
                yt__bump_version(running_mean);
        }
        if (st == YT_OK && running_var != NULL) {
            st = load_channel(w, running_var, g.c, 0.0);
            double unbias = count > 1 ? (double)count / (double)(count - 1) : 1.0;
            for (int64_t c = 0; c < g.c; c++)
                w[c] = (1.0 - momentum) * w[c] + momentum * var[c] * unbias;
            if (st == YT_OK && (st = store_channel(running_var, w, g.c)) == YT_OK)
                yt__bump_version(running_var);
        }
    }
    yt_release(xc);
    yt__cpu_free(ch, (size_t)(5 * g.c + 1) * sizeof(double));
    return st;
}

yt_status
yt__batchnorm_backward(yt_tensor *dx, yt_tensor *dw, yt_tensor *db, yt_tensor *dy, yt_tensor *x,
                       yt_tensor *weight, yt_tensor *running_mean, yt_tensor *running_var,
                       yt_tensor *save_mean, yt_tensor *save_invstd, bool training, double eps)
{
    const bool only_db = dx == NULL && dw == NULL; /* x is not read */
    const bn_geom g = geom_of(dy);
    yt_dtype cd = yt__norm_compute_dtype(dy->dtype);
    /* per channel: mean, invstd, weight, sum dy, sum dy*(x-mean) */
    size_t ch_bytes = (size_t)(5 * g.c + 1) * sizeof(double);
    double *ch = yt__cpu_alloc(ch_bytes);
    if (ch == NULL)
        return yt__fail_status(YT_ERR_NOMEM, "native_batch_norm_backward: out of memory");
    double *mean = ch, *invstd = ch + g.c, *w = ch + 2 * g.c, *sg = ch + 3 * g.c,
           *sgx = ch + 4 * g.c;
    yt_tensor *xc = only_db ? NULL : yt__norm_contig(x, cd), *gc = yt__norm_contig(dy, cd);
    yt_tensor *dxb = dx && xc && gc ? out_like(dx, cd) : NULL;
    yt_status st = (xc || only_db) && gc && (!dx || dxb) ? YT_OK : yt__last_status();
    if (st == YT_OK)
        st = load_channel(w, weight, g.c, 1.0);
    const bool recompute = training && save_invstd == NULL && !only_db;
    if (st == YT_OK && training && !recompute) {
        st = load_channel(mean, save_mean, g.c, 0.0);
        if (st == YT_OK)
            st = load_channel(invstd, save_invstd, g.c, 0.0);
    } else if (st == YT_OK && !training) {
        st = load_channel(mean, running_mean, g.c, 0.0);
        if (st == YT_OK)
            st = load_channel(invstd, running_var, g.c, 1.0);
        for (int64_t c = 0; c < g.c; c++)
            invstd[c] = 1.0 / sqrt(invstd[c] + eps);
    }
    if (st == YT_OK) {
        const int64_t C = g.c;
        const char *xd = xc ? yt__data_ptr(xc) : NULL, *gd = yt__data_ptr(gc);
        char *dxd = dxb ? yt__data_ptr(dxb) : NULL;
        const bool need_sums = training || dw || db;
        bn_bwd_job j = {g,        cd,  xd,   gd,     dxd, only_db, need_sums, recompute,
                        training, eps, mean, invstd, w,   sg,      sgx,       0};
        run_channels(dy->numel, C, bn_bwd_channels, &j, &j.chunks);
        for (int64_t c = 0; c < C; c++)
            sgx[c] *= invstd[c];
    }
    if (dx)
        st = finish(dx, dxb, st);
    if (st == YT_OK)
        st = store_channel(dw, sgx, g.c);
    if (st == YT_OK)
        st = store_channel(db, sg, g.c);
    yt_release(xc);
    yt_release(gc);
    yt__cpu_free(ch, ch_bytes);
    return st;
}

/* Training needs more than one value per channel (a variance of one value is meaningless). */
static yt_status
check_count(const yt_tensor *input, const char *op)
{
    const bn_geom g = geom_of(input);
    if (g.count > 1)
        return YT_OK;
    char have[YT__SIZES_BUF];
    return yt__fail_status(
        YT_ERR_VALUE,
        "%s: expected more than 1 value per channel when training, got input of shape %s", op,
        yt__format_sizes(have, sizeof have, input->sizes, input->dim));
}

yt_status
yt__cpu_batch_norm_training(yt_tensor *result, yt_tensor *input, yt_tensor *weight, yt_tensor *bias,
                            yt_tensor *running_mean, yt_tensor *running_var, double momentum,
                            double eps)
{
    if (check_count(input, "batch_norm_training") != YT_OK)
        return yt__last_status();
    return yt__batchnorm_forward(result, NULL, NULL, input, weight, bias, running_mean, running_var,
                                 true, momentum, eps);
}

yt_status
yt__cpu_batch_norm_backward_input(yt_tensor *result, yt_tensor *grad_out, yt_tensor *input,
                                  yt_tensor *weight, double eps)
{
    const char *op = "batch_norm_backward_input";
    if (yt__check_same_shape(op, "grad_out", grad_out, "input", input) != YT_OK)
        return yt__last_status();
    if (weight != NULL && (weight->dim != 1 || weight->sizes[0] != input->sizes[1])) {
        char a[YT__SIZES_BUF];
        return yt__fail_status(YT_ERR_SHAPE, "%s: weight has shape %s, expected [%lld]", op,
                               yt__format_sizes(a, sizeof a, weight->sizes, weight->dim),
                               (long long)input->sizes[1]);
    }
    return yt__batchnorm_backward(result, NULL, NULL, grad_out, input, weight, NULL, NULL, NULL,
                                  NULL, true, eps);
}

yt_status
yt__cpu_batch_norm_backward_weight(yt_tensor *result, yt_tensor *grad_out, yt_tensor *input,
                                   double eps)
{
    if (yt__check_same_shape("batch_norm_backward_weight", "grad_out", grad_out, "input", input) !=
        YT_OK)
        return yt__last_status();
    return yt__batchnorm_backward(NULL, result, NULL, grad_out, input, NULL, NULL, NULL, NULL, NULL,
                                  true, eps);
}

yt_status
yt__cpu_batch_norm_backward_bias(yt_tensor *result, yt_tensor *grad_out)
{
    return yt__batchnorm_backward(NULL, NULL, result, grad_out, NULL, NULL, NULL, NULL, NULL, NULL,
                                  true, 0.0);
}

/* The three gradients in one pass per channel (batch_norm_training's backward without a graph);
 * the ones not asked for are zeros. */
yt_status
yt__cpu_batch_norm_backward(yt_tensor *d_input, yt_tensor *d_weight, yt_tensor *d_bias,
                            yt_tensor *grad_out, yt_tensor *input, yt_tensor *weight, double eps,
                            bool input_grad, bool weight_grad, bool bias_grad)
{
    const char *op = "batch_norm_backward";
    if (yt__check_same_shape(op, "grad_out", grad_out, "input", input) != YT_OK)
        return yt__last_status();
    if (weight != NULL && (weight->dim != 1 || weight->sizes[0] != input->sizes[1])) {
        char a[YT__SIZES_BUF];
        return yt__fail_status(YT_ERR_SHAPE, "%s: weight has shape %s, expected [%lld]", op,
                               yt__format_sizes(a, sizeof a, weight->sizes, weight->dim),
                               (long long)input->sizes[1]);
    }
    yt_tensor *skipped[3] = {input_grad ? NULL : d_input, weight_grad ? NULL : d_weight,
                             bias_grad ? NULL : d_bias};
    for (int i = 0; i < 3; i++) /* fresh contiguous results of the generated function */
        if (skipped[i] != NULL && skipped[i]->numel > 0)
            memset(yt__data_ptr(skipped[i]), 0,
                   (size_t)skipped[i]->numel * yt_dtype_size(skipped[i]->dtype));
    if (!input_grad && !weight_grad && !bias_grad)
        return YT_OK;
    return yt__batchnorm_backward(input_grad ? d_input : NULL, weight_grad ? d_weight : NULL,
                                  bias_grad ? d_bias : NULL, grad_out, input, weight, NULL, NULL,
                                  NULL, NULL, true, eps);
}
