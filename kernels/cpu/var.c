/* var.correction and std.correction on the CPU: two passes through the reduction driver
 * (reduce_plan.h), each told which result element it feeds (row_at / rows_at); short contiguous
 * f32 rows reduced over the last dim take both passes in one, 8 rows at a time (short_rows_f32).
 *
 * Pass 1 sums x - x0 with x0 the first element of each slice; pass 2 sums (x - s)^2 with
 * s = x0 + mean(x - x0) in double. A constant slice gives x - x0 = 0 exactly, so s = x0 and the
 * variance is exactly 0; otherwise s is the mean and pass 2 is the textbook two-pass variance.
 * f32 subtracts and squares in float (8 lanes) and sums in float within runs of up to F32_RUN
 * elements (rows) and in double across them; f64 works in double; f16/bf16 go through an f32
 * copy. The sum is divided by max(0, N - correction) (correction defaults to 1), so N <= the
 * correction gives NaN or inf, as PyTorch. */
#pragma GCC target("avx2,fma")

#include <math.h>
#include <stdlib.h>

#include "parallel.h"
#include "reduce_plan.h"
#include "vec_math.h"

typedef yt__reduce_acc acc;

#define F32_RUN  1024
#define ROWS_RUN 16

/* pass: 1 sums x - shift[out], 2 sums (x - shift[out])^2 */
typedef struct pass_ctx {
    const double *shift;
    int pass;
    double denom; /* std: the divisor inside the square root */
} pass_ctx;

static inline __m256
dev8(__m256 x, __m256 s, bool square)
{
    __m256 d = _mm256_sub_ps(x, s);
    return square ? _mm256_mul_ps(d, d) : d;
}

static void
row_f32(const void *ctx, int64_t out, acc *a, const char *x, int64_t n, int64_t stride)
{
    const pass_ctx *c = ctx;
    bool square = c->pass == 2;
    float s = (float)c->shift[out];
    double total = 0.0;
    int64_t i = 0;
    if (stride == sizeof(float)) {
        const float *p = (const float *)x;
        __m256 vs = _mm256_set1_ps(s);
        for (; i + 32 <= n;) {
            int64_t end = n - i < F32_RUN ? i + (n - i) / 32 * 32 : i + F32_RUN;
            __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
            for (; i < end; i += 32) {
                a0 = _mm256_add_ps(a0, dev8(_mm256_loadu_ps(p + i), vs, square));
                a1 = _mm256_add_ps(a1, dev8(_mm256_loadu_ps(p + i + 8), vs, square));
                a2 = _mm256_add_ps(a2, dev8(_mm256_loadu_ps(p + i + 16), vs, square));
                a3 = _mm256_add_ps(a3, dev8(_mm256_loadu_ps(p + i + 24), vs, square));
            }
            total += yt__hsum8(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
        }
    }
    for (; i < n; i++) {
        float d = *(const float *)(x + i * stride) - s;
        total += square ? d * d : d;
    }
    a->f += total;
}

static void
rows_f32(const void *ctx, int64_t out_first, int64_t out_stride, acc *accs, const char *x,
         int64_t n, int64_t stride, int64_t m, int64_t row_stride)
{
    const pass_ctx *c = ctx;
    bool square = c->pass == 2;
    for (int64_t r0 = 0; r0 < m; r0 += ROWS_RUN) {
        int64_t rn = m - r0 < ROWS_RUN ? m - r0 : ROWS_RUN;
        const char *xb = x + r0 * row_stride;
        int64_t j = 0;
        if (stride == sizeof(float)) {
            for (; j + 32 <= n; j += 32) {
                __m256 a[4], vs[4];
                for (int k = 0; k < 4; k++) {
                    float sh[8];
                    for (int l = 0; l < 8; l++)
                        sh[l] = (float)c->shift[out_first + (j + 8 * k + l) * out_stride];
                    vs[k] = _mm256_loadu_ps(sh);
                    a[k] = _mm256_setzero_ps();
                }
                const char *p = xb + j * (int64_t)sizeof(float);
                for (int64_t r = 0; r < rn; r++, p += row_stride)
                    for (int k = 0; k < 4; k++)
                        a[k] = _mm256_add_ps(
                            a[k], dev8(_mm256_loadu_ps((const float *)p + 8 * k), vs[k], square));
                float part[32];
                for (int k = 0; k < 4; k++)
                    _mm256_storeu_ps(part + 8 * k, a[k]);
                for (int k = 0; k < 32; k++)
                    accs[j + k].f += part[k];
            }
        }
        for (; j < n; j++) {
            float s = (float)c->shift[out_first + j * out_stride];
            double t = 0.0;
            for (int64_t r = 0; r < rn; r++) {
                float d = *(const float *)(xb + r * row_stride + j * stride) - s;
                t += square ? d * d : d;
            }
            accs[j].f += t;
        }
    }
}

static void
row_f64(const void *ctx, int64_t out, acc *a, const char *x, int64_t n, int64_t stride)
{
    const pass_ctx *c = ctx;
    double s = c->shift[out], t = 0.0;
    if (c->pass == 2) {
#pragma omp simd reduction(+ : t)
        for (int64_t i = 0; i < n; i++) {
            double d = *(const double *)(x + i * stride) - s;
            t += d * d;
        }
    } else {
#pragma omp simd reduction(+ : t)
        for (int64_t i = 0; i < n; i++)
            t += *(const double *)(x + i * stride) - s;
    }
    a->f += t;
}

static void
rows_f64(const void *ctx, int64_t out_first, int64_t out_stride, acc *accs, const char *x,
         int64_t n, int64_t stride, int64_t m, int64_t row_stride)
{
    const pass_ctx *c = ctx;
    bool square = c->pass == 2;
    for (int64_t r = 0; r < m; r++) {
        const char *xr = x + r * row_stride;
#pragma omp simd
        for (int64_t j = 0; j < n; j++) {
            double d = *(const double *)(xr + j * stride) - c->shift[out_first + j * out_stride];
            accs[j].f += square ? d * d : d;
        }
    }
}

static void
zero_run(acc *v, int64_t n, bool floating)
{
    (void)floating;
    for (int64_t j = 0; j < n; j++)
        v[j].f = 0.0;
}

static void
combine(acc *total, const acc *part, int64_t n, bool floating)
{
    (void)floating;
    for (int64_t j = 0; j < n; j++)
        total[j].f += part[j].f;
}

static void
finish_std(acc *v, int64_t n, const void *ctx)
{
    double denom = ((const pass_ctx *)ctx)->denom;
    for (int64_t j = 0; j < n; j++)
        v[j].f = sqrt(v[j].f / denom);
}

/* x0[k] = the first element of slice k, slices in the result's (row-major kept dims) order. */
static void
first_elements(double *x0, const yt_tensor *in, const bool *mask, int64_t count)
{
    int64_t idx[YT_MAX_DIM] = {0};
    const char *base = yt__data_ptr(in);
    for (int64_t k = 0; k < count; k++) {
        int64_t off = 0;
        for (int i = 0; i < in->dim; i++)
            off += idx[i] * in->strides[i];
        x0[k] =
            in->dtype == YT_DTYPE_F64 ? ((const double *)base)[off] : ((const float *)base)[off];
        for (int i = in->dim - 1; i >= 0; i--) {
            if (mask[i])
                continue;
            if (++idx[i] < in->sizes[i])
                break;
            idx[i] = 0;
        }
    }
}

/* ---------------------------------------------------------------- short f32 rows, 8 at a time */

/* Rows up to this long, contiguous f32 reduced over the last dim, skip the two driver passes
 * (calls per row and per element in each): short_rows_f32 takes 8 rows at a time, one per lane
 * (yt__load_columns8), with the passes' arithmetic: x0 the first element, x - x0 summed in float,
 * the shift x0 + mean in double, the squares of x - shift in float, summed in float (at most 32
 * of them, in 4 chains) and divided in double. Over dim 1, one thread: var of [26214, 10] f32
 * 361 -> 99 us, [16384, 16] 399 -> 63 us; std 452 -> 121 and 456 -> 76 (torch: var 3785 and
 * 3412 us, std 3944 and 3238). */
#define SHORT_ROWS_MAX 32

typedef struct short_rows_job {
    float *out;
    const float *x;
    int64_t rows, n, chunks;
    double denom;
    bool take_sqrt;
} short_rows_job;

/* Lanes lo (0-3) and hi (4-7) times `scale` in double, square-rooted when `root`, in float. */
static inline __m256
scaled(__m256d lo, __m256d hi, double scale, bool root)
{
    lo = _mm256_mul_pd(lo, _mm256_set1_pd(scale));
    hi = _mm256_mul_pd(hi, _mm256_set1_pd(scale));
    if (root) {
        lo = _mm256_sqrt_pd(lo);
        hi = _mm256_sqrt_pd(hi);
    }
    return _mm256_set_m128(_mm256_cvtpd_ps(hi), _mm256_cvtpd_ps(lo));
}

static inline __m256d
low_half(__m256 v)
{
    return _mm256_cvtps_pd(_mm256_castps256_ps128(v));
}

static inline __m256d
high_half(__m256 v)
{
    return _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
}

/* The sum over columns c < n of xt[c] - shift, or of its square, lane by lane: 4 chains, where one
 * waited on an add per column. */
static inline __m256
column_sum(const __m256 *xt, int64_t n, __m256 shift, bool square)
{
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t c = 0;
    for (; c + 4 <= n; c += 4) {
        a0 = _mm256_add_ps(a0, dev8(xt[c], shift, square));
        a1 = _mm256_add_ps(a1, dev8(xt[c + 1], shift, square));
        a2 = _mm256_add_ps(a2, dev8(xt[c + 2], shift, square));
        a3 = _mm256_add_ps(a3, dev8(xt[c + 3], shift, square));
    }
    for (; c < n; c++)
        a0 = _mm256_add_ps(a0, dev8(xt[c], shift, square));
    return _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
}

static void
short_rows8_f32(const short_rows_job *j, int64_t r0)
{
    const int64_t rows = j->rows - r0 < 8 ? j->rows - r0 : 8, n = j->n;
    __m256 xt[SHORT_ROWS_MAX]; /* xt[c]: column c, one row per lane; n >= 1 */
    int64_t c0 = 0;
    do
        yt__load_columns8(xt + c0, (const char *)(j->x + r0 * n), n * (int64_t)sizeof(float), rows,
                          c0, n);
    while ((c0 += 8) < n);
    const __m256 sum = column_sum(xt, n, xt[0], false);
    /* x0 + the mean in double, as pass 1 leaves it, then in float as pass 2 takes it */
    const __m256d per_element = _mm256_set1_pd(1.0 / (double)n);
    const __m256 shift = _mm256_set_m128(
        _mm256_cvtpd_ps(_mm256_fmadd_pd(high_half(sum), per_element, high_half(xt[0]))),
        _mm256_cvtpd_ps(_mm256_fmadd_pd(low_half(sum), per_element, low_half(xt[0]))));
    const __m256 squares = column_sum(xt, n, shift, true);
    const __m256 v = scaled(low_half(squares), high_half(squares), 1.0 / j->denom, j->take_sqrt);
    if (rows == 8) {
        _mm256_storeu_ps(j->out + r0, v);
    } else {
        float lanes[8];
        _mm256_storeu_ps(lanes, v);
        for (int64_t r = 0; r < rows; r++)
            j->out[r0 + r] = lanes[r];
    }
}

static void
short_rows_chunk(void *arg, int64_t chunk)
{
    const short_rows_job *j = arg;
    const int64_t groups = (j->rows + 7) / 8;
    for (int64_t g = groups * chunk / j->chunks; g < groups * (chunk + 1) / j->chunks; g++)
        short_rows8_f32(j, 8 * g);
}

/* Whether var_std can take short_rows_f32: only the last dim reduced, of 1..SHORT_ROWS_MAX
 * contiguous f32 elements, into a contiguous f32 result. */
static bool
short_rows_apply(const yt_tensor *result, const yt_tensor *self, const bool *mask)
{
    if (self->dtype != YT_DTYPE_F32 || result->dtype != YT_DTYPE_F32 || !self->is_contiguous ||
        !result->is_contiguous || self->dim == 0 || self->sizes[self->dim - 1] > SHORT_ROWS_MAX ||
        self->sizes[self->dim - 1] < 1 || !mask[self->dim - 1])
        return false;
    for (int i = 0; i + 1 < self->dim; i++)
        if (mask[i] && self->sizes[i] != 1)
            return false;
    return true;
}

static void
short_rows_f32(yt_tensor *result, const yt_tensor *self, double denom, bool take_sqrt)
{
    const int64_t n = self->sizes[self->dim - 1];
    short_rows_job j = {.out = (float *)yt__data_ptr(result),
                        .x = (const float *)yt__data_ptr(self),
                        .rows = self->numel / n,
                        .n = n,
                        .denom = denom,
                        .take_sqrt = take_sqrt};
    /* about a nanosecond per element */
    int nth = self->numel >= YT_PARALLEL_GRAIN
                  ? yt__parallel_threads((double)self->numel, yt__max_threads())
                  : 1;
    const int64_t groups = (j.rows + 7) / 8;
    j.chunks = yt__parallel_chunks(groups, nth);
    yt__parallel_run(j.chunks, nth, short_rows_chunk, &j);
}

static yt_status
var_std(const char *op, yt_tensor *result, yt_tensor *self, const int64_t *dim, int dim_len,
        int64_t correction, bool take_sqrt)
{
    bool mask[YT_MAX_DIM];
    yt__reduce_mask(mask, self->dim, dim, dim_len);
    int64_t n = 1;
    for (int i = 0; i < self->dim; i++)
        if (mask[i])
            n *= self->sizes[i];
    double c = correction == YT_NONE ? 1.0 : (double)correction;
    double denom = (double)n - c > 0 ? (double)n - c : 0.0;
    if (result->numel == 0)
        return YT_OK;
    if (self->numel == 0) { /* an empty slice: 0 / max(0, -c), NaN as in PyTorch */
        acc v[YT_REDUCE_CHUNK];
        for (int64_t j = 0; j < YT_REDUCE_CHUNK; j++)
            v[j].f = take_sqrt ? sqrt(0.0 / denom) : 0.0 / denom;
        for (int64_t i = 0; i < result->numel; i += YT_REDUCE_CHUNK) {
            int64_t k = result->numel - i < YT_REDUCE_CHUNK ? result->numel - i : YT_REDUCE_CHUNK;
            yt__reduce_store(result, i, 1, v, k, 1.0);
        }
        return YT_OK;
    }
    if (short_rows_apply(result, self, mask)) {
        short_rows_f32(result, self, denom, take_sqrt);
        return YT_OK;
    }
    bool f64 = self->dtype == YT_DTYPE_F64;
    yt_tensor *src = f64 || self->dtype == YT_DTYPE_F32 ? self : yt__cast_copy(self, YT_DTYPE_F32);
    if (src == NULL)
        return yt__last_status();
    double *shift = malloc((size_t)result->numel * sizeof *shift);
    if (shift == NULL) {
        yt__release_cast(src, self);
        return yt__fail_status(YT_ERR_NOMEM, "%s: out of memory for %lld shifts", op,
                               (long long)result->numel);
    }
    first_elements(shift, src, mask, result->numel);

    /* pass 1 into a f64 scratch result (contiguous, same element order as `result`) */
    yt_tensor *sums = yt__empty_like(result, YT_DTYPE_F64);
    if (sums == NULL) {
        free(shift);
        yt__release_cast(src, self);
        return yt__last_status();
    }
    pass_ctx ctx = {shift, 1, denom};
    yt__reduce_loops loops = {.row_at = f64 ? row_f64 : row_f32,
                              .rows_at = f64 ? rows_f64 : rows_f32,
                              .ctx = &ctx,
                              .init = zero_run,
                              .combine = combine,
                              .floating = true,
                              .divisor = (double)n,
                              .short_rows_across = true};
    yt__reduce_run(sums, src, dim, dim_len, &loops);
    const double *mean = (const double *)yt__data_ptr(sums);
    for (int64_t k = 0; k < result->numel; k++)
        shift[k] += mean[k];
    yt_release(sums);

    ctx.pass = 2;
    loops.divisor = denom;
    if (take_sqrt) { /* sqrt(sum / denom), rounded once to the result's dtype */
        loops.divisor = 1.0;
        loops.finish = finish_std;
    }
    yt__reduce_run(result, src, dim, dim_len, &loops);
    free(shift);
    yt__release_cast(src, self);
    return YT_OK;
}

yt_status
yt__cpu_var_correction(yt_tensor *result, yt_tensor *self, const int64_t *dim, int dim_len,
                       int64_t correction, bool keepdim)
{
    (void)keepdim; /* the result's shape has it */
    return var_std("var", result, self, dim, dim_len, correction, false);
}

yt_status
yt__cpu_std_correction(yt_tensor *result, yt_tensor *self, const int64_t *dim, int dim_len,
                       int64_t correction, bool keepdim)
{
    (void)keepdim;
    return var_std("std", result, self, dim, dim_len, correction, true);
}
