/* max_pool2d (with indices), avg_pool2d, adaptive_avg_pool2d and their backward ops on the CPU.
 * f16 and bf16 compute in f32; planes (one channel of one image) are spread over threads above
 * a size threshold.
 *
 * Max pooling's backward is a scatter-add of the gradient at the saved indices, and the
 * derivative of that scatter is the gather at the same indices (and back), which is how the
 * double backward closes (see derivatives.yaml). */
/* The loops are short and branch-free: let the compiler vectorize them. */
#pragma GCC optimize("O3")

#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "conv.h"
#include "kernels.h"
#include "parallel.h"

/* One output row of a 2x2, stride-2 max pool: y[ox] = the largest of rows r0 = x, r1 = x + w at
 * columns 2 ox, 2 ox + 1 (NaN wins, the first on ties) and idx[ox] its flat position (base +
 * offset in the pair of rows). Branch-free: the data decide every comparison, so branches
 * would mispredict half the time. */
#define MAX2X2_STEP(T, a, b, c, d, at, w, yv, iv)                                                  \
    do {                                                                                           \
        bool tb_ = (b > a) | (b != b);                                                             \
        T m_ = tb_ ? b : a;                                                                        \
        int64_t mi_ = tb_ ? at + 1 : at;                                                           \
        bool tc_ = (c > m_) | (c != c);                                                            \
        m_ = tc_ ? c : m_;                                                                         \
        mi_ = tc_ ? at + w : mi_;                                                                  \
        bool td_ = (d > m_) | (d != d);                                                            \
        yv = td_ ? d : m_;                                                                         \
        iv = td_ ? at + w + 1 : mi_;                                                               \
    } while (0)

static void
max2x2_row_f64(double *y, int64_t *idx, const double *x, int64_t w, int64_t ow, int64_t base)
{
    for (int64_t ox = 0; ox < ow; ox++) {
        const double *p = x + 2 * ox;
        MAX2X2_STEP(double, p[0], p[1], p[w], p[w + 1], base + 2 * ox, w, y[ox], idx[ox]);
    }
}

typedef float v8f __attribute__((vector_size(32), aligned(4)));
typedef int32_t v8i __attribute__((vector_size(32), aligned(4)));
typedef int64_t v8l __attribute__((vector_size(64), aligned(8)));

/* m ? a : b, lane by lane (a macro: passing vectors by value depends on the ISA's ABI) */
#define BLEND8(m, a, b) ((v8f)(((v8i)(a) & (m)) | ((v8i)(b) & ~(m))))

/* Eight outputs of a 2x2 max pool from the 16 columns of an upper row u and lower row l (w apart
 * in positions), at positions `at` (even lanes) of the upper row. */
#define MAX2X2_VEC(u0, u1, l0, l1, at, w, yv, iv)                                                  \
    do {                                                                                           \
        const v8i ev_ = {0, 2, 4, 6, 8, 10, 12, 14}, od_ = ev_ + 1;                                \
        v8f a_ = __builtin_shuffle(u0, u1, ev_), b_ = __builtin_shuffle(u0, u1, od_);              \
        v8f c_ = __builtin_shuffle(l0, l1, ev_), d_ = __builtin_shuffle(l0, l1, od_);              \
        v8i tb_ = (b_ > a_) | (b_ != b_);                                                          \
        v8f m_ = BLEND8(tb_, b_, a_);                                                              \
        v8i mi_ = (tb_ & (at + 1)) | (~tb_ & at);                                                  \
        v8i tc_ = (c_ > m_) | (c_ != c_);                                                          \
        m_ = BLEND8(tc_, c_, m_);                                                                  \
        mi_ = (tc_ & (at + (int32_t)(w))) | (~tc_ & mi_);                                          \
        v8i td_ = (d_ > m_) | (d_ != d_);                                                          \
        yv = BLEND8(td_, d_, m_);                                                                  \
        iv = (td_ & (at + (int32_t)(w) + 1)) | (~td_ & mi_);                                       \
    } while (0)

static void
max2x2_row_f32(float *y, int64_t *idx, const float *x, int64_t w, int64_t ow, int64_t base)
{
    int64_t ox = 0;
    if (base + 2 * ow + w + 1 < INT32_MAX) { /* positions fit the 32-bit index lanes */
        const v8i even = {0, 2, 4, 6, 8, 10, 12, 14};
        for (; ox + 8 <= ow; ox += 8) {
            const float *p = x + 2 * ox;
            v8f u0 = *(const v8f *)p, u1 = *(const v8f *)(p + 8);
            v8f l0 = *(const v8f *)(p + w), l1 = *(const v8f *)(p + w + 8);
            v8i at = even + (int32_t)(base + 2 * ox);
            v8f yv;
            v8i iv;
            MAX2X2_VEC(u0, u1, l0, l1, at, w, yv, iv);
            *(v8f *)(y + ox) = yv;
            *(v8l *)(idx + ox) = __builtin_convertvector(iv, v8l);
        }
        if (ox < ow) { /* the last 1..7 outputs with masked loads (rows of 14 or 7: all) */
            int64_t n = ow - ox;
            const int32_t cols = (int32_t)(2 * n);
            const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
            __m256i k0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(cols), lane);
            __m256i k1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(cols - 8), lane);
            const float *p = x + 2 * ox;
            v8f u0 = (v8f)_mm256_maskload_ps(p, k0), u1 = (v8f)_mm256_maskload_ps(p + 8, k1);
            v8f l0 = (v8f)_mm256_maskload_ps(p + w, k0);
            v8f l1 = (v8f)_mm256_maskload_ps(p + w + 8, k1);
            v8i at = even + (int32_t)(base + 2 * ox);
            v8f yv;
            v8i iv;
            MAX2X2_VEC(u0, u1, l0, l1, at, w, yv, iv);
            for (int64_t q = 0; q < n; q++) {
                y[ox + q] = yv[q];
                idx[ox + q] = iv[q];
            }
            ox = ow;
        }
    }
    for (; ox < ow; ox++) {
        const float *p = x + 2 * ox;
        MAX2X2_STEP(float, p[0], p[1], p[w], p[w + 1], base + 2 * ox, w, y[ox], idx[ox]);
    }
}

#define T   float
#define SFX f32
#include "pool_impl.h"
#undef T
#undef SFX

#define T   double
#define SFX f64
#include "pool_impl.h"
#undef T
#undef SFX

/* Element pointer as void *, to pass to the typed loops. */
static inline void *
dp(const yt_tensor *t)
{
    return yt__data_ptr(t);
}

/* One pooling loop over blocks of planes on the kernel pool (planes are independent, so any split
 * gives the same values). */
typedef enum { MAX_FWD, GATHER, SCATTER, AVG, ADAPTIVE } pool_loop;

typedef struct plane_job {
    pool_loop loop;
    bool f64, count_include_pad, backward;
    void *a, *b;  /* max: y, x; gather/scatter: result, src; avg: x, y */
    int64_t *idx; /* max_pool's indices, or the gather/scatter indices */
    const yt__pool_geom *g;
    int64_t hw, ohw, divisor, planes, chunks;
} plane_job;

static void
plane_chunk(void *arg, int64_t c)
{
    const plane_job *j = arg;
    int64_t lo = j->planes * c / j->chunks, hi = j->planes * (c + 1) / j->chunks;
    switch (j->loop) {
    case MAX_FWD:
        if (j->f64)
            max_pool_forward_f64(j->a, j->idx, j->b, j->g, lo, hi);
        else
            max_pool_forward_f32(j->a, j->idx, j->b, j->g, lo, hi);
        break;
    case GATHER:
        if (j->f64)
            index_gather_f64(j->a, j->b, j->idx, lo, hi, j->hw, j->ohw);
        else
            index_gather_f32(j->a, j->b, j->idx, lo, hi, j->hw, j->ohw);
        break;
    case SCATTER:
        if (j->f64)
            index_scatter_f64(j->a, j->b, j->idx, lo, hi, j->hw, j->ohw);
        else
            index_scatter_f32(j->a, j->b, j->idx, lo, hi, j->hw, j->ohw);
        break;
    case AVG:
        if (j->f64)
            avg_pool_f64(j->a, j->b, j->g, j->count_include_pad, j->divisor, j->backward, lo, hi);
        else
            avg_pool_f32(j->a, j->b, j->g, j->count_include_pad, j->divisor, j->backward, lo, hi);
        break;
    case ADAPTIVE:
        if (j->f64)
            adaptive_avg_pool_f64(j->a, j->b, j->g, j->backward, lo, hi);
        else
            adaptive_avg_pool_f32(j->a, j->b, j->g, j->backward, lo, hi);
        break;
    }
}

/* Runs `j` over its planes: `work` is the elements touched, about a third of a nanosecond each. */
static void
run_planes(plane_job *j, int64_t work)
{
    int threads = j->planes > 1 && work >= YT_PARALLEL_GRAIN
                      ? yt__parallel_threads((double)work / 3.0, yt__max_threads())
                      : 1;
    j->chunks = yt__parallel_chunks(j->planes, threads);
    yt__parallel_run(j->chunks, threads, plane_chunk, j);
}

/* A kernel body run on contiguous compute-dtype operands: `ops` are converted (and released)
 * around it, and `result` is written directly or through a temporary. */
typedef struct pool_call {
    yt_status (*run)(struct pool_call *c, yt_tensor *target, yt_tensor *const *ops);
    int n_ops;
    yt_tensor *ops[3]; /* floating operands; NULL entries are passed through */
    const yt__pool_geom *g;
    bool count_include_pad;
    bool backward;    /* the adjoint: target is the input-shaped gradient, ops[0] grad_output */
    int64_t divisor;  /* divisor_override or YT_NONE */
    yt_tensor *extra; /* a second result (indices of max_pool2d_with_indices) */
} pool_call;

static yt_status
pool_fill(yt_tensor *target, void *ctx)
{
    pool_call *c = ctx;
    yt_tensor *ops[3] = {NULL, NULL, NULL};
    yt_status status = YT_OK;
    for (int i = 0; i < c->n_ops && status == YT_OK; i++) {
        ops[i] = yt__conv_operand(c->ops[i], target->dtype);
        if (ops[i] == NULL)
            status = yt__last_status();
    }
    if (status == YT_OK)
        status = c->run(c, target, ops);
    for (int i = 0; i < c->n_ops; i++)
        yt_release(ops[i]);
    return status;
}

/* Indices must be i64 and within [0, plane) (a user may pass any tensor to the backward ops). */
static yt_status
check_indices(const char *op, yt_tensor *indices, int64_t plane)
{
    if (indices->dtype != YT_DTYPE_I64)
        return yt__fail_status(YT_ERR_DTYPE, "%s: indices has dtype %s, expected i64", op,
                               yt_dtype_name(indices->dtype));
    yt_tensor *c = yt__conv_operand(indices, YT_DTYPE_I64);
    if (c == NULL)
        return yt__last_status();
    const int64_t *p = (const int64_t *)dp(c);
    yt_status status = YT_OK;
    for (int64_t i = 0; i < c->numel; i++)
        if (p[i] < 0 || p[i] >= plane) {
            status = yt__fail_status(YT_ERR_VALUE,
                                     "%s: indices[%lld]=%lld is out of range for a plane of %lld "
                                     "elements",
                                     op, (long long)i, (long long)p[i], (long long)plane);
            break;
        }
    yt_release(c);
    return status;
}

static yt_tensor *
contiguous_i64(yt_tensor *t)
{
    return yt__conv_operand(t, YT_DTYPE_I64);
}

/* ---------------------------------------------------------------- max_pool2d */

static yt_status
run_max_forward(pool_call *c, yt_tensor *target, yt_tensor *const *ops)
{
    const yt__pool_geom *g = c->g;
    yt_tensor *idx = c->extra;
    plane_job j = {.loop = MAX_FWD,
                   .f64 = target->dtype == YT_DTYPE_F64,
                   .a = dp(target),
                   .b = dp(ops[0]),
                   .idx = (int64_t *)dp(idx),
                   .g = g,
                   .planes = g->n * g->c};
    run_planes(&j, target->numel * g->kh * g->kw);
    return YT_OK;
}

yt_status
yt__cpu_max_pool2d_with_indices(yt_tensor *values, yt_tensor *indices, yt_tensor *self,
                                const int64_t *kernel_size, int kernel_size_len,
                                const int64_t *stride, int stride_len, const int64_t *padding,
                                int padding_len, const int64_t *dilation, int dilation_len,
                                bool ceil_mode)
{
    const char *op = "max_pool2d_with_indices";
    yt__pool_geom g;
    if (yt__pool_geom_init(&g, op, self, kernel_size, kernel_size_len, stride, stride_len, padding,
                           padding_len, dilation, dilation_len, ceil_mode) != YT_OK ||
        yt__pool_check_output(&g, op, "values", values) != YT_OK ||
        yt__pool_check_output(&g, op, "indices", indices) != YT_OK)
        return yt__last_status();
    if (indices->dtype != YT_DTYPE_I64 || !indices->is_contiguous)
        return yt__fail_status(YT_ERR_INTERNAL, "%s: indices must be a contiguous i64 tensor", op);
    if (values->numel == 0)
        return YT_OK;
    pool_call c = {.run = run_max_forward, .n_ops = 1, .ops = {self}, .g = &g, .extra = indices};
    return yt__conv_into(values, pool_fill, &c);
}

/* Planes and plane sizes of a scatter from `small` positions to `big` ones: both have the same
 * leading dims (all but the last two). */
static yt_status
plane_split(const char *op, const yt_tensor *big_like, const int64_t *big, int big_dim,
            const yt_tensor *small, int64_t *planes, int64_t *hw, int64_t *ohw)
{
    char a[YT__SIZES_BUF], b[YT__SIZES_BUF];
    (void)big_like;
    bool ok = (big_dim == 3 || big_dim == 4) && small->dim == big_dim;
    for (int i = 0; ok && i < big_dim - 2; i++)
        ok = big[i] == small->sizes[i];
    if (!ok)
        return yt__fail_status(YT_ERR_SHAPE,
                               "%s: indices %s and the input %s must both be 3-D or 4-D with the "
                               "same leading (batch, channel) sizes",
                               op, yt__format_sizes(a, sizeof a, small->sizes, small->dim),
                               yt__format_sizes(b, sizeof b, big, big_dim));
    *planes = 1;
    for (int i = 0; i < big_dim - 2; i++)
        *planes *= big[i];
    *hw = big[big_dim - 2] * big[big_dim - 1];
    *ohw = small->sizes[big_dim - 2] * small->sizes[big_dim - 1];
    return YT_OK;
}

typedef struct scatter_call {
    yt_tensor *src; /* scatter: the gradient (small); gather: the source (big) */
    yt_tensor *idx; /* contiguous i64 */
    int64_t planes, hw, ohw;
    bool gather;
} scatter_call;

static yt_status
scatter_fill(yt_tensor *target, void *ctx)
{
    scatter_call *s = ctx;
    yt_tensor *src = yt__conv_operand(s->src, target->dtype);
    if (src == NULL)
        return yt__last_status();
    const int64_t *ip = (const int64_t *)dp(s->idx);
    plane_job j = {.loop = s->gather ? GATHER : SCATTER,
                   .f64 = target->dtype == YT_DTYPE_F64,
                   .a = dp(target),
                   .b = dp(src),
                   .idx = (int64_t *)ip,
                   .hw = s->hw,
                   .ohw = s->ohw,
                   .planes = s->planes};
    run_planes(&j, s->planes * (s->hw + s->ohw));
    yt_release(src);
    return YT_OK;
}

/* result (sizes big) = zeros with grad added at indices, or result (indices' sizes) = gather. */
static yt_status
index_op(const char *op, yt_tensor *result, yt_tensor *src, const int64_t *big, int big_dim,
         yt_tensor *indices, bool gather)
{
    scatter_call s = {.src = src, .gather = gather};
    if (plane_split(op, NULL, big, big_dim, indices, &s.planes, &s.hw, &s.ohw) != YT_OK)
        return yt__last_status();
    const yt_tensor *small_shape = gather ? result : src;
    for (int i = 0; i < indices->dim; i++)
        if (small_shape->dim != indices->dim || small_shape->sizes[i] != indices->sizes[i]) {
            char a[YT__SIZES_BUF], b[YT__SIZES_BUF];
            return yt__fail_status(
                YT_ERR_SHAPE, "%s: %s has shape %s but indices has shape %s", op,
                gather ? "result" : "grad",
                yt__format_sizes(a, sizeof a, small_shape->sizes, small_shape->dim),
                yt__format_sizes(b, sizeof b, indices->sizes, indices->dim));
        }
    if (check_indices(op, indices, s.hw) != YT_OK)
        return yt__last_status();
    if (result->numel == 0)
        return YT_OK;
    s.idx = contiguous_i64(indices);
    if (s.idx == NULL)
        return yt__last_status();
    yt_status status = yt__conv_into(result, scatter_fill, &s);
    yt_release(s.idx);
    return status;
}

yt_status
yt__cpu_max_pool2d_with_indices_backward(yt_tensor *result, yt_tensor *grad_output, yt_tensor *self,
                                         const int64_t *kernel_size, int kernel_size_len,
                                         const int64_t *stride, int stride_len,
                                         const int64_t *padding, int padding_len,
                                         const int64_t *dilation, int dilation_len, bool ceil_mode,
                                         yt_tensor *indices)
{
    const char *op = "max_pool2d_with_indices_backward";
    yt__pool_geom g;
    if (yt__pool_geom_init(&g, op, self, kernel_size, kernel_size_len, stride, stride_len, padding,
                           padding_len, dilation, dilation_len, ceil_mode) != YT_OK ||
        yt__pool_check_output(&g, op, "grad_output", grad_output) != YT_OK ||
        yt__pool_check_output(&g, op, "indices", indices) != YT_OK)
        return yt__last_status();
    return index_op(op, result, grad_output, self->sizes, self->dim, indices, false);
}

yt_status
yt__cpu_max_pool2d_index_gather(yt_tensor *result, yt_tensor *self, yt_tensor *indices)
{
    return index_op("max_pool2d_index_gather", result, self, self->sizes, self->dim, indices, true);
}

yt_status
yt__cpu_max_pool2d_index_scatter(yt_tensor *result, yt_tensor *grad, const int64_t *self_size,
                                 int self_size_len, yt_tensor *indices)
{
    return index_op("max_pool2d_index_scatter", result, grad, self_size, self_size_len, indices,
                    false);
}

/* ---------------------------------------------------------------- avg_pool2d */

static yt_status
run_avg(pool_call *c, yt_tensor *target, yt_tensor *const *ops)
{
    const yt__pool_geom *g = c->g;
    bool backward = c->backward;
    void *x = backward ? dp(target) : dp(ops[0]);
    void *y = backward ? dp(ops[0]) : dp(target);
    int64_t planes = g->n * g->c;
    plane_job j = {.loop = AVG,
                   .f64 = target->dtype == YT_DTYPE_F64,
                   .count_include_pad = c->count_include_pad,
                   .backward = backward,
                   .a = x,
                   .b = y,
                   .g = g,
                   .divisor = c->divisor,
                   .planes = planes};
    run_planes(&j, planes * g->oh * g->ow * g->kh * g->kw);
    return YT_OK;
}

static yt_status
avg_geom(yt__pool_geom *g, const char *op, yt_tensor *self, const int64_t *kernel_size,
         int kernel_size_len, const int64_t *stride, int stride_len, const int64_t *padding,
         int padding_len, bool ceil_mode, int64_t divisor_override)
{
    if (divisor_override != YT_NONE && divisor_override == 0)
        return yt__fail_status(YT_ERR_VALUE, "%s: divisor_override=0 must not be zero", op);
    return yt__pool_geom_init(g, op, self, kernel_size, kernel_size_len, stride, stride_len,
                              padding, padding_len, NULL, 0, ceil_mode);
}

yt_status
yt__cpu_avg_pool2d(yt_tensor *result, yt_tensor *self, const int64_t *kernel_size,
                   int kernel_size_len, const int64_t *stride, int stride_len,
                   const int64_t *padding, int padding_len, bool ceil_mode, bool count_include_pad,
                   int64_t divisor_override)
{
    const char *op = "avg_pool2d";
    yt__pool_geom g;
    if (avg_geom(&g, op, self, kernel_size, kernel_size_len, stride, stride_len, padding,
                 padding_len, ceil_mode, divisor_override) != YT_OK ||
        yt__pool_check_output(&g, op, "result", result) != YT_OK)
        return yt__last_status();
    if (result->numel == 0)
        return YT_OK;
    pool_call c = {.run = run_avg,
                   .n_ops = 1,
                   .ops = {self},
                   .g = &g,
                   .count_include_pad = count_include_pad,
                   .divisor = divisor_override};
    return yt__conv_into(result, pool_fill, &c);
}

yt_status
yt__cpu_avg_pool2d_backward(yt_tensor *result, yt_tensor *grad_output, yt_tensor *self,
                            const int64_t *kernel_size, int kernel_size_len, const int64_t *stride,
                            int stride_len, const int64_t *padding, int padding_len, bool ceil_mode,
                            bool count_include_pad, int64_t divisor_override)
{
    const char *op = "avg_pool2d_backward";
    yt__pool_geom g;
    if (avg_geom(&g, op, self, kernel_size, kernel_size_len, stride, stride_len, padding,
                 padding_len, ceil_mode, divisor_override) != YT_OK ||
        yt__pool_check_output(&g, op, "grad_output", grad_output) != YT_OK)
        return yt__last_status();
    if (result->numel == 0)
        return YT_OK;
    pool_call c = {.run = run_avg,
                   .n_ops = 1,
                   .ops = {grad_output},
                   .g = &g,
                   .count_include_pad = count_include_pad,
                   .divisor = divisor_override,
                   .backward = true};
    return yt__conv_into(result, pool_fill, &c);
}

/* ---------------------------------------------------------------- adaptive_avg_pool2d */

static yt_status
adaptive_geom(yt__pool_geom *g, const char *op, const yt_tensor *self, const int64_t *output_size,
              int output_size_len)
{
    char a[YT__SIZES_BUF];
    memset(g, 0, sizeof *g);
    if (self->dim != 3 && self->dim != 4)
        return yt__fail_status(
            YT_ERR_SHAPE, "%s: self must be 3-D [C, H, W] or 4-D [N, C, H, W], got %d-D %s", op,
            self->dim, yt__format_sizes(a, sizeof a, self->sizes, self->dim));
    int64_t o[2];
    if (output_size_len == 0)
        return yt__fail_status(YT_ERR_VALUE, "%s: output_size must have 1 or 2 entries, got none",
                               op);
    if (yt__conv_pair(o, op, "output_size", output_size, output_size_len, 1, 0) != YT_OK)
        return yt__last_status();
    g->batched = self->dim == 4;
    g->n = g->batched ? self->sizes[0] : 1;
    g->c = self->sizes[self->dim - 3];
    g->h = self->sizes[self->dim - 2];
    g->w = self->sizes[self->dim - 1];
    if (g->h == 0 || g->w == 0)
        return yt__fail_status(YT_ERR_SHAPE, "%s: self %s must have non-zero height and width", op,
                               yt__format_sizes(a, sizeof a, self->sizes, self->dim));
    g->oh = o[0];
    g->ow = o[1];
    g->kh = g->kw = 1;
    return YT_OK;
}

static yt_status
run_adaptive(pool_call *c, yt_tensor *target, yt_tensor *const *ops)
{
    const yt__pool_geom *g = c->g;
    bool backward = c->backward;
    void *x = backward ? dp(target) : dp(ops[0]);
    void *y = backward ? dp(ops[0]) : dp(target);
    int64_t planes = g->n * g->c;
    plane_job j = {.loop = ADAPTIVE,
                   .f64 = target->dtype == YT_DTYPE_F64,
                   .backward = backward,
                   .a = x,
                   .b = y,
                   .g = g,
                   .planes = planes};
    run_planes(&j, planes * (g->h * g->w + g->oh * g->ow));
    return YT_OK;
}

yt_status
yt__cpu_adaptive_avg_pool2d(yt_tensor *result, yt_tensor *self, const int64_t *output_size,
                            int output_size_len)
{
    const char *op = "adaptive_avg_pool2d";
    yt__pool_geom g;
    if (adaptive_geom(&g, op, self, output_size, output_size_len) != YT_OK ||
        yt__pool_check_output(&g, op, "result", result) != YT_OK)
        return yt__last_status();
    if (result->numel == 0)
        return YT_OK;
    pool_call c = {.run = run_adaptive, .n_ops = 1, .ops = {self}, .g = &g};
    return yt__conv_into(result, pool_fill, &c);
}

yt_status
yt__cpu_adaptive_avg_pool2d_backward(yt_tensor *result, yt_tensor *grad_output, yt_tensor *self,
                                     const int64_t *output_size, int output_size_len)
{
    const char *op = "adaptive_avg_pool2d_backward";
    yt__pool_geom g;
    if (adaptive_geom(&g, op, self, output_size, output_size_len) != YT_OK ||
        yt__pool_check_output(&g, op, "grad_output", grad_output) != YT_OK)
        return yt__last_status();
    if (result->numel == 0)
        return YT_OK;
    pool_call c = {
        .run = run_adaptive, .n_ops = 1, .ops = {grad_output}, .g = &g, .backward = true};
    return yt__conv_into(result, pool_fill, &c);
}
