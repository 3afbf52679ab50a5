/* logsumexp on the CPU, one pass through the reduction driver (reduce_plan.h).
 *
 * Each accumulator holds a logsumexp so far, in double, starting at -inf, and partial results
 * merge with logaddexp(a, b) = max + log1p(exp(min - max)). A contiguous f32 row is folded a
 * chunk of up to CHUNK elements at a time: the chunk's maximum m, then sum(exp(x - m)) with the
 * 8-lane exp while the chunk is still in L1, then m + log(sum) merges into the accumulator. An
 * outer reduction does the same for 64 columns at a time down runs of RUN rows. An infinite
 * maximum shifts by 0 instead, so all -inf slices give -inf and +inf ones +inf (NaN with a NaN),
 * as PyTorch. f64 computes in double with libm's exp; f16/bf16 through an f32 copy. */
#pragma GCC target("avx2,fma")

#include <math.h>

#include "cpu_isa.h"
#include "logsumexp_rows.h"
#include "reduce_plan.h"
#include "reduce_rows4d.h"
#include "reduce_rows8.h"
#include "vec_math.h"
#include "vec_math512.h"

typedef yt__reduce_acc acc;

#define CHUNK 1024 /* f32 elements per max / exp-sum pair: stays in L1 */
#define RUN   256  /* rows per outer run: 64 columns of them (64 KiB) stay in L2 */

static double
logaddexp(double a, double b)
{
    if (isnan(a) || isnan(b))
        return a + b;
    double hi = a > b ? a : b, lo = a > b ? b : a;
    if (lo == -INFINITY || hi == INFINITY)
        return hi;
    return hi + log1p(exp(lo - hi));
}

/* The shift for a slice whose maximum is m: m, or 0 when m is infinite (see the file comment). */
static double
shift_of(double m)
{
    return isinf(m) ? 0.0 : m;
}

/* ---------------------------------------------------------------- f32 */

/* sum(exp(x - shift)); a NaN element makes it NaN (the max, yt__row_max8, may skip NaNs; this does
 * not). Rows' tails, and short rows whole, take one masked vector step (yt__load_tail8) instead of
 * an exp per element (over dim 1 of [65536, 4] f32, one thread: 2.21 -> 1.77 ms; torch 1.01). */
static float
expsum_f32(const float *x, int64_t n, float shift)
{
    __m256 vs = _mm256_set1_ps(shift);
    __m256 s0 = _mm256_setzero_ps(), s1 = s0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = _mm256_add_ps(s0, yt__exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vs)));
        s1 = _mm256_add_ps(s1, yt__exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), vs)));
    }
    if (i + 8 <= n) {
        s0 = _mm256_add_ps(s0, yt__exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vs)));
        i += 8;
    }
    /* the lanes past the row hold the shift, and their exp (1) is masked to 0 */
    if (i < n) {
        __m256 e = yt__exp8(_mm256_sub_ps(yt__load_tail8(x + i, n - i, shift), vs));
        s1 = _mm256_add_ps(s1, _mm256_and_ps(e, yt__tail_mask8(n - i)));
    }
    return yt__hsum8(_mm256_add_ps(s0, s1));
}

static void
row_f32(acc *a, const char *x, int64_t n, int64_t stride)
{
    if (stride == sizeof(float)) {
        const float *p = (const float *)x;
        for (int64_t i = 0; i < n; i += CHUNK) {
            int64_t len = n - i < CHUNK ? n - i : CHUNK;
            float s = (float)shift_of(yt__row_max8(p + i, len));
            a->f = logaddexp(a->f, s + log((double)expsum_f32(p + i, len, s)));
        }
        return;
    }
    float m = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        float v = *(const float *)(x + i * stride);
        m = v > m ? v : m;
    }
    float s = (float)shift_of(m);
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++)
        sum += yt__exp1(*(const float *)(x + i * stride) - s);
    a->f = logaddexp(a->f, s + log(sum));
}

/* Rows up to this long go 8 at a time (rows8_f32); longer ones one by one (row_f32). */
#define ROWS8_MAX 32

/* Short contiguous rows, 8 at a time, one per lane: their maximum, exps, sum and log each take
 * one vector step for all 8, where one row alone pays a max, an exp step, horizontal folds, a libm
 * log and a logaddexp. Over dim 1 of [65536, n] f32, one thread, row by row -> 8 at a time (torch):
 * n = 4: 1763 -> 418 us (1004); n = 16: 1801 -> 1002 (2302); n = 32: 2340 -> 1741 (2214).
 * A row's result depends on that row alone, not on where a thread's rows start. */
static inline __attribute__((always_inline)) void
rows8_f32(acc *accs, const char *x, int64_t row_stride, int64_t rows, int64_t n)
{
    __m256 xt[ROWS8_MAX]; /* xt[j]: column j, loaded once for both passes */
    for (int64_t j0 = 0; j0 < n; j0 += 8)
        yt__load_columns8(xt + j0, x, row_stride, rows, j0, n);
    __m256 m = yt__max_columns8(xt, n);
    /* shift_of, per lane: an infinite maximum shifts by 0 */
    __m256 infinite = _mm256_cmp_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), m),
                                    _mm256_set1_ps(INFINITY), _CMP_EQ_OQ);
    __m256 shift = _mm256_andnot_ps(infinite, m);
    __m256 sum = yt__exp_sum_columns8(xt, n, shift, false);
    yt__store_rows8_f32(accs, _mm256_add_ps(shift, yt__log8(sum)), rows);
}

/* rows8_f32 for 16 rows on the 16 lanes of AVX-512 (yt__exp16 takes about 0.6 of the time of two
 * yt__exp8 here): the two 8-row halves are loaded and transposed as rows8_f32 does, their columns
 * joined into one 16-lane vector each, and the sums split again for yt__log8. The same steps in
 * the same order per lane: the same bits as rows8_f32. */
YT_AVX512 static inline __attribute__((always_inline)) void
rows16_f32(acc *accs, const char *x, int64_t row_stride, int64_t rows, int64_t n)
{
    __m512 xt[ROWS8_MAX];
    for (int64_t j0 = 0; j0 < n; j0 += 8) {
        __m256 lo[8], hi[8];
        yt__load_columns8(lo, x, row_stride, rows < 8 ? rows : 8, j0, n);
        yt__load_columns8(hi, x + 8 * row_stride, row_stride, rows - 8, j0, n);
        for (int j = 0; j < 8; j++)
            xt[j0 + j] = _mm512_castpd_ps(_mm512_insertf64x4(
                _mm512_castpd256_pd512(_mm256_castps_pd(lo[j])), _mm256_castps_pd(hi[j]), 1));
    }
    __m512 m = yt__max_columns16(xt, n);
    /* shift_of, per lane: an infinite maximum shifts by 0 */
    __mmask16 infinite = _mm512_cmp_ps_mask(_mm512_abs_ps(m), _mm512_set1_ps(INFINITY), _CMP_EQ_OQ);
    __m512 shift = _mm512_mask_blend_ps(infinite, m, _mm512_setzero_ps());
    __m512 s = yt__exp_sum_columns16(xt, n, shift);
    __m256 s_lo = _mm512_castps512_ps256(s), sh_lo = _mm512_castps512_ps256(shift);
    __m256 s_hi = yt__high8(s), sh_hi = yt__high8(shift);
    yt__store_rows8_f32(accs, _mm256_add_ps(sh_lo, yt__log8(s_lo)), 8);
    yt__store_rows8_f32(accs + 8, _mm256_add_ps(sh_hi, yt__log8(s_hi)), rows - 8);
}

/* All but the last 8 or fewer of `count` rows 16 at a time; returns how many it did. */
YT_AVX512 static int64_t
rows16_all_f32(acc *accs, const char *x, int64_t count, int64_t row_stride, int64_t n)
{
    int64_t k = 0;
    for (; count - k > 8; k += 16) {
        int64_t rows = count - k < 16 ? count - k : 16;
        if (n == 16)
            rows16_f32(accs + k, x + k * row_stride, row_stride, rows, 16);
        else if (n == 8)
            rows16_f32(accs + k, x + k * row_stride, row_stride, rows, 8);
        else
            rows16_f32(accs + k, x + k * row_stride, row_stride, rows, n);
    }
    return k;
}

/* rows8_f32 over `count` rows, n a constant where it is 8 or 16 so that its loops unroll; 16 rows
 * at a time where the CPU has AVX-512. One thread, on an Intel Xeon: logsumexp over dim 1 of
 * [65536, 4] 536 -> 429 us; cross_entropy of [16384, 16] (yt__logsumexp_rows_f32, whose batches
 * of 8 rows became 64 so that the 16-row path runs) 428 -> 257 us. */
static void
rows8_all_f32(acc *accs, const char *x, int64_t count, int64_t row_stride, int64_t n)
{
    int64_t k = yt__cpu_isa() == YT__ISA_AVX512 ? rows16_all_f32(accs, x, count, row_stride, n) : 0;
    for (; k < count; k += 8) {
        int64_t rows = count - k < 8 ? count - k : 8;
        if (n == 16)
            rows8_f32(accs + k, x + k * row_stride, row_stride, rows, 16);
        else if (n == 8)
            rows8_f32(accs + k, x + k * row_stride, row_stride, rows, 8);
        else
            rows8_f32(accs + k, x + k * row_stride, row_stride, rows, n);
    }
}

static bool
row_batch_f32(acc *accs, const char *x, int64_t count, int64_t row_stride, int64_t n,
              int64_t stride)
{
    if (stride != sizeof(float) || n > ROWS8_MAX)
        return false;
    rows8_all_f32(accs, x, count, row_stride, n);
    return true;
}

static void
rows_f32(acc *accs, const char *x, int64_t n, int64_t stride)
{
    for (int64_t j = 0; j < n; j++)
        accs[j].f = logaddexp(accs[j].f, *(const float *)(x + j * stride));
}

/* 64 contiguous columns down runs of RUN rows: max pass, then exp-sum pass over the same rows. */
static void
rows_block_f32(acc *accs, const char *x, int64_t n, int64_t stride, int64_t m, int64_t row_stride)
{
    if (stride != sizeof(float)) {
        for (int64_t r = 0; r < m; r++)
            rows_f32(accs, x + r * row_stride, n, stride);
        return;
    }
    for (int64_t r0 = 0; r0 < m; r0 += RUN) {
        int64_t rn = m - r0 < RUN ? m - r0 : RUN;
        const char *xb = x + r0 * row_stride;
        int64_t j = 0;
        for (; j + 64 <= n; j += 64) {
            __m256 mx[8], s[8];
            for (int k = 0; k < 8; k++)
                mx[k] = _mm256_set1_ps(-INFINITY);
            const char *p = xb + j * (int64_t)sizeof(float);
            for (int64_t r = 0; r < rn; r++)
                for (int k = 0; k < 8; k++)
                    mx[k] = _mm256_max_ps(
                        mx[k], _mm256_loadu_ps((const float *)(p + r * row_stride) + 8 * k));
            float shift[64];
            for (int k = 0; k < 8; k++)
                _mm256_storeu_ps(shift + 8 * k, mx[k]);
            for (int k = 0; k < 64; k++)
                shift[k] = (float)shift_of(shift[k]);
            for (int k = 0; k < 8; k++) {
                mx[k] = _mm256_loadu_ps(shift + 8 * k);
                s[k] = _mm256_setzero_ps();
            }
            for (int64_t r = 0; r < rn; r++)
                for (int k = 0; k < 8; k++)
                    s[k] = _mm256_add_ps(
                        s[k],
                        yt__exp8(_mm256_sub_ps(
                            _mm256_loadu_ps((const float *)(p + r * row_stride) + 8 * k), mx[k])));
            float sum[64];
            for (int k = 0; k < 8; k++)
                _mm256_storeu_ps(sum + 8 * k, s[k]);
            for (int k = 0; k < 64; k++)
                accs[j + k].f = logaddexp(accs[j + k].f, shift[k] + log((double)sum[k]));
        }
        for (int64_t r = 0; r < rn && j < n; r++)
            rows_f32(accs + j, xb + r * row_stride + j * (int64_t)sizeof(float), n - j, stride);
    }
}

void
yt__logsumexp_rows_f32(double *lse, const float *x, int64_t rows, int64_t n)
{
    const int64_t stride = n * (int64_t)sizeof(float);
    acc a[64]; /* a batch of rows: 16 at a time on the AVX-512 path */
    for (int64_t k = 0; k < rows; k += 64) {
        int64_t m = rows - k < 64 ? rows - k : 64;
        if (!row_batch_f32(a, (const char *)(x + k * n), m, stride, n, sizeof(float)))
            for (int64_t r = 0; r < m; r++) {
                a[r].f = -INFINITY;
                row_f32(&a[r], (const char *)(x + (k + r) * n), n, sizeof(float));
            }
        for (int64_t r = 0; r < m; r++)
            lse[k + r] = a[r].f;
    }
}

/* ---------------------------------------------------------------- f64 */

/* Contiguous rows take their maximum and exps 4 lanes at a time (yt__exp4d, where libm's exp per
 * element made f64 logsumexp 2-3x slower than torch's); every exp goes through its polynomial. */
static void
row_f64(acc *a, const char *x, int64_t n, int64_t stride)
{
    const bool contiguous = stride == sizeof(double);
    const double *p = (const double *)x;
    double m = -INFINITY;
    if (contiguous) {
        m = yt__row_max4d(p, n);
    } else {
        for (int64_t i = 0; i < n; i++) {
            double v = *(const double *)(x + i * stride);
            m = v > m ? v : m;
        }
    }
    double s = shift_of(m), sum = 0.0;
    int64_t i = 0;
    if (contiguous) {
        __m256d sum4 = _mm256_setzero_pd(), sv = _mm256_set1_pd(s);
        for (; i + 4 <= n; i += 4)
            sum4 = _mm256_add_pd(sum4, yt__exp4d(_mm256_sub_pd(_mm256_loadu_pd(p + i), sv)));
        sum = yt__hsum4d(sum4);
    }
    for (; i < n; i++)
        sum += yt__exp1d(*(const double *)(x + i * stride) - s);
    a->f = logaddexp(a->f, s + log(sum));
}

/* Contiguous f64 rows up to this long go 4 at a time (row_batch_f64). */
#define ROWS4_MAX 64

/* Short contiguous f64 rows, 4 at a time: their maxima through yt__fold_rows4 (NaN wins there, and
 * a NaN shift makes the row NaN, as it should be), then their exp-sums side by side, finished
 * together, where a row alone paid two horizontal folds (over dim 1 of [16384, 16], one thread:
 * 761 -> 594 us, [65536, 4] 1567 -> 1100 us; torch 623 and 1355). A row's result depends on
 * that row alone. */
static bool
row_batch_f64(acc *accs, const char *x, int64_t count, int64_t row_stride, int64_t n,
              int64_t stride)
{
    if (stride != sizeof(double) || n > ROWS4_MAX)
        return false;
    yt__fold_rows4(accs, x, count, row_stride, n, stride, YT_ROWS4D_MAX, false);
    /* the tail as in yt__fold_rows4; lanes outside it add 0 */
    const __m256d tail = _mm256_castsi256_pd(yt__rows4d_tail_mask(n));
    for (int64_t k = 0; k < count; k += 4) {
        const int64_t rows = count - k < 4 ? count - k : 4;
        const double *p[4];
        double shift[4];
        __m256d sum[4];
#pragma GCC unroll 4
        for (int r = 0; r < 4; r++) {
            const int64_t row = r < rows ? r : 0;
            p[r] = (const double *)(x + (k + row) * row_stride);
            shift[r] = shift_of(accs[k + row].f);
            sum[r] = _mm256_setzero_pd();
        }
        int64_t i = 0;
        for (; i + 4 <= n; i += 4) {
#pragma GCC unroll 4
            for (int r = 0; r < 4; r++)
                sum[r] = _mm256_add_pd(sum[r], yt__exp4d(_mm256_sub_pd(_mm256_loadu_pd(p[r] + i),
                                                                       _mm256_set1_pd(shift[r]))));
        }
        if (i < n) {
#pragma GCC unroll 4
            for (int r = 0; r < 4; r++) {
                __m256d t = n >= 4 ? _mm256_loadu_pd(p[r] + n - 4)
                                   : yt__rows4d_masked_load((const char *)p[r],
                                                            _mm256_castpd_si256(tail), false);
                __m256d e = yt__exp4d(_mm256_sub_pd(t, _mm256_set1_pd(shift[r])));
                sum[r] = _mm256_add_pd(sum[r], _mm256_and_pd(e, tail));
            }
        }
        double sums[4];
        _mm256_storeu_pd(sums, yt__rows4d_finish(sum, YT_ROWS4D_SUM));
        for (int64_t r = 0; r < rows; r++)
            accs[k + r].f = shift[r] + log(sums[r]);
    }
    return true;
}

static void
rows_f64(acc *accs, const char *x, int64_t n, int64_t stride)
{
    for (int64_t j = 0; j < n; j++)
        accs[j].f = logaddexp(accs[j].f, *(const double *)(x + j * stride));
}

/* ---------------------------------------------------------------- driver glue */

static void
init_ninf(acc *v, int64_t n, bool floating)
{
    (void)floating;
    for (int64_t j = 0; j < n; j++)
        v[j].f = -INFINITY;
}

static void
combine(acc *total, const acc *part, int64_t n, bool floating)
{
    (void)floating;
    for (int64_t j = 0; j < n; j++)
        total[j].f = logaddexp(total[j].f, part[j].f);
}

yt_status
yt__cpu_logsumexp(yt_tensor *result, yt_tensor *self, const int64_t *dim, int dim_len, bool keepdim)
{
    (void)keepdim; /* the result's shape has it */
    if (result->numel == 0)
        return YT_OK;
    if (self->numel == 0) { /* over an empty slice: log(0) */
        acc v[YT_REDUCE_CHUNK];
        init_ninf(v, YT_REDUCE_CHUNK, true);
        for (int64_t i = 0; i < result->numel; i += YT_REDUCE_CHUNK) {
            int64_t n = result->numel - i < YT_REDUCE_CHUNK ? result->numel - i : YT_REDUCE_CHUNK;
            yt__reduce_store(result, i, 1, v, n, 1.0);
        }
        return YT_OK;
    }
    bool f64 = self->dtype == YT_DTYPE_F64;
    yt_tensor *src = f64 || self->dtype == YT_DTYPE_F32 ? self : yt__cast_copy(self, YT_DTYPE_F32);
    if (src == NULL)
        return yt__last_status();
    yt__reduce_loops loops = {.row = f64 ? row_f64 : row_f32,
                              .rows = f64 ? rows_f64 : rows_f32,
                              .rows_block = f64 ? NULL : rows_block_f32,
                              .row_batch = f64 ? row_batch_f64 : row_batch_f32,
                              .init = init_ninf,
                              .combine = combine,
                              .floating = true,
                              .divisor = 1.0};
    yt__reduce_run(result, src, dim, dim_len, &loops);
    yt__release_cast(src, self);
    return YT_OK;
}
