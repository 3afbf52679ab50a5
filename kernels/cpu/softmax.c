/* softmax, log_softmax and their fused backward kernels (softmax_backward_data,
 * log_softmax_backward_data) on the CPU.
 *
 * The input is seen as [outer, n, inner] with the softmax dim of size n in the middle. Each row
 * is shifted by its maximum before exp, so +-1e4 inputs neither overflow nor lose the row; a row
 * of -inf gives -inf - -inf = NaN, as in PyTorch.
 *   - inner == 1 (the last dim, the common case): f32 rows of up to 32 go 8 at a time, one row
 *     per vector lane (rows_short_f32); longer ones take three passes over each contiguous row
 *     (max; exp and sum; scale) with 8-lane AVX2 exp (16-lane where the CPU has AVX-512, with
 *     the same bits) and several accumulators, log_softmax 8 rows at a time so that their 8 logs
 *     are one vector log.
 *   - inner > 1: blocks of up to COLS columns are reduced together down the rows, so every
 *     loop runs along contiguous memory and vectorises across columns.
 * f32 and f64 compute in their own precision; f16/bf16 (and a `dtype` that differs from the
 * input's) go through an f32 copy. Rows (or column blocks) are split between threads only above
 * YT_PARALLEL_GRAIN elements. */
/* AVX2 and FMA even in builds with other -march flags (the ASan stage): the library's baseline
 * is x86-64-v3, and vec_math.h uses their intrinsics. */
#pragma GCC target("avx2,fma")

#include <math.h>

#include "cpu_isa.h"
#include "kernels.h"
#include "parallel.h"
#include "softmax_rows.h"
#include "vec_math.h"
#include "vec_math512.h"

#define COLS 256 /* columns per block when inner > 1: three float arrays stay in L1 */

typedef struct geom {
    int64_t outer, n, inner;
} geom;

static geom
geom_of(const yt_tensor *t, int64_t dim)
{
    geom g = {1, 1, 1};
    if (t->dim == 0)
        return g;
    for (int64_t i = 0; i < dim; i++)
        g.outer *= t->sizes[i];
    g.n = t->sizes[dim];
    for (int64_t i = dim + 1; i < t->dim; i++)
        g.inner *= t->sizes[i];
    return g;
}

typedef enum kind { SOFTMAX, LOG_SOFTMAX } kind;

/* ---------------------------------------------------------------- f32 rows (inner == 1) */

/* Sum of exp(x[i] - shift); writes each term to out[i] when out is not NULL. A NaN anywhere in
 * the row makes the sum NaN, so the whole row becomes NaN, as in PyTorch. The row's tail, or a
 * short row whole, takes one masked vector step (yt__load_tail8) instead of one per element: a
 * scalar exp is a whole 8-lane one. */
static float
row_expsum8_f32(float *out, const float *x, int64_t n, float shift)
{
    __m256 vs = _mm256_set1_ps(shift);
    __m256 s0 = _mm256_setzero_ps(), s1 = s0;
    int64_t i = 0;
    if (out != NULL) {
        for (; i + 16 <= n; i += 16) {
            __m256 e0 = yt__exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vs));
            __m256 e1 = yt__exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), vs));
            _mm256_storeu_ps(out + i, e0);
            _mm256_storeu_ps(out + i + 8, e1);
            s0 = _mm256_add_ps(s0, e0);
            s1 = _mm256_add_ps(s1, e1);
        }
    } else {
        for (; i + 16 <= n; i += 16) {
            s0 = _mm256_add_ps(s0, yt__exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vs)));
            s1 = _mm256_add_ps(s1, yt__exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), vs)));
        }
    }
    if (i + 8 <= n) {
        __m256 e = yt__exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vs));
        if (out != NULL)
            _mm256_storeu_ps(out + i, e);
        s0 = _mm256_add_ps(s0, e);
        i += 8;
    }
    if (i < n) {
        /* the lanes past the row hold the shift; their exp (1) is masked to 0, not stored */
        __m256 mask = yt__tail_mask8(n - i);
        __m256 e =
            _mm256_and_ps(yt__exp8(_mm256_sub_ps(yt__load_tail8(x + i, n - i, shift), vs)), mask);
        if (out != NULL)
            _mm256_maskstore_ps(out + i, _mm256_castps_si256(mask), e);
        s1 = _mm256_add_ps(s1, e);
    }
    return yt__hsum8(_mm256_add_ps(s0, s1));
}

/* row_expsum8_f32 on 16 lanes, for rows of 16 or more: yt__exp16 gives
 * yt__exp8's values, and each term is added to the lane it has there (lanes 0-7 are s0, 8-15 s1),
 * so the sum has the same bits. The exp pass bounds a long row: log_softmax over dim 1 of
 * [4096, 1024], one thread, alternating with the 8-lane build: 7.3-7.4 -> 5.3-5.7 ms. */
YT_AVX512 static float
row_expsum16_f32(float *out, const float *x, int64_t n, float shift)
{
    const __m512 vs = _mm512_set1_ps(shift);
    __m512 s = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 e = yt__exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), vs));
        if (out != NULL)
            _mm512_storeu_ps(out + i, e);
        s = _mm512_add_ps(s, e);
    }
    if (i < n) {
        /* as there: a whole 8 into s0's lanes and the rest into s1's, or all of them into s1's;
         * the lanes past the row hold the shift (exp 1), and are neither stored nor added */
        const int64_t from = n - i >= 8 ? i : i - 8; /* element at lane 0; i >= 16 */
        const __mmask16 lanes = (__mmask16)(((1u << (n - from)) - 1u) & ~((1u << (i - from)) - 1u));
        __m512 e = yt__exp16(_mm512_sub_ps(_mm512_mask_loadu_ps(vs, lanes, x + from), vs));
        if (out != NULL)
            _mm512_mask_storeu_ps(out + from, lanes, e);
        s = _mm512_mask_add_ps(s, lanes, s, e);
    }
    return yt__hsum8(_mm256_add_ps(_mm512_castps512_ps256(s), yt__high8(s)));
}

/* Sum of exp(x[i] - shift), each term written to out[i] when out is not NULL: on 16 lanes where
 * the CPU has AVX-512, else on 8; the same bits either way. */
static float
row_expsum_f32(float *out, const float *x, int64_t n, float shift)
{
    if (n >= 16 && yt__cpu_isa() == YT__ISA_AVX512)
        return row_expsum16_f32(out, x, n, shift);
    return row_expsum8_f32(out, x, n, shift);
}

static void
row_f32(float *out, const float *x, int64_t n, kind k)
{
    float m = yt__row_max8(x, n);
    if (k == SOFTMAX) {
        float inv = 1.0f / row_expsum_f32(out, x, n, m);
#pragma omp simd
        for (int64_t i = 0; i < n; i++)
            out[i] *= inv;
    } else {
        /* (x - max) - log(sum), in this order: max + log(sum) would round at large max; the log
         * is rows8_log_softmax_f32's, so a row's values do not depend on its position */
        float ls = _mm256_cvtss_f32(yt__log8(_mm256_set1_ps(row_expsum_f32(NULL, x, n, m))));
#pragma omp simd
        for (int64_t i = 0; i < n; i++)
            out[i] = (x[i] - m) - ls;
    }
}

/* log_softmax of 8 rows of n: their maxima and exp-sums first, then one vector log for the 8
 * (logf per row was a third of the time on short rows: over dim 1 of [16384, 16], one thread,
 * 437 -> 311 us; torch 294). */
static void
rows8_log_softmax_f32(float *out, const float *x, int64_t n)
{
    _Alignas(32) float m[8], s[8], ls[8];
    for (int r = 0; r < 8; r++) {
        m[r] = yt__row_max8(x + r * n, n);
        s[r] = row_expsum_f32(NULL, x + r * n, n, m[r]);
    }
    _mm256_store_ps(ls, yt__log8(_mm256_load_ps(s)));
    for (int r = 0; r < 8; r++) {
        const float *xr = x + r * n;
        float *o = out + r * n;
#pragma omp simd
        for (int64_t i = 0; i < n; i++)
            o[i] = (xr[i] - m[r]) - ls[r];
    }
}

/* Rows up to this long go 8 at a time through rows_short_f32. */
#define ROWS8_MAX 32

/* Transposes the columns xt[0..n) (one row per lane) back into the `rows` rows of n at out, row by
 * row. A row that ends inside a vector has it stored whole, over the start of the rows after it,
 * which their own stores then write again; only a vector that would pass the last row is masked.
 * Masked stores cost 5-6 ns each here: one per 8 rows instead of one per row took softmax over
 * dim 1 of [26214, 10] f32, one thread, bench/ab.sh softmax_dim1, from 370 to 290 us
 * (log_softmax_dim1 424 -> 344; [52428, 5] 532 -> 374). */
static inline __attribute__((always_inline)) void
store_rows8(float *out, __m256 *xt, int64_t rows, int64_t n)
{
    for (int64_t j0 = 0; j0 < n; j0 += 8)
        yt__transpose8_ps(xt + j0);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j0 = 0; j0 < n; j0 += 8) {
            float *p = out + r * n + j0;
            if (r * n + j0 + 8 <= rows * n)
                _mm256_storeu_ps(p, xt[j0 + r]);
            else
                _mm256_maskstore_ps(p, _mm256_castps_si256(yt__tail_mask8(n - j0)), xt[j0 + r]);
        }
}

/* The first pass over `rows` <= 8 rows of n <= ROWS8_MAX, row r at x + r * n, one row per lane
 * (yt__load_columns8): xt[] gets the columns (for softmax, their exps), *max and *sum the rows'
 * maxima and exp-sums. Two accumulators each halve the chains of dependent maxes and adds. */
static inline __attribute__((always_inline)) void
rows8_pass1_f32(__m256 *xt, const float *x, int64_t rows, int64_t n, kind k, __m256 *max,
                __m256 *sum)
{
    for (int64_t j0 = 0; j0 < n; j0 += 8)
        yt__load_columns8(xt + j0, (const char *)x, n * (int64_t)sizeof(float), rows, j0, n);
    const __m256 m = yt__max_columns8(xt, n);
    *sum = yt__exp_sum_columns8(xt, n, m, k == SOFTMAX);
    *max = m;
}

/* softmax or log_softmax of any number of rows of n <= ROWS8_MAX, 8 rows at a time, one row per
 * lane: the maxima, the exp-sums and the 1 / sum or log take one vector step for all 8, where a
 * row alone pays horizontal folds and scalar steps for each. The groups are software-pipelined:
 * a group's first pass runs before the previous group is finished and written, so that the
 * latency of that group's 1 / sum or log (a chain of some 30 dependent steps) overlaps with
 * work, not with nothing. out may be x: a group is read before the one before it is written.
 * A row's result depends on that row alone, not on where a thread's rows start. Over dim 1 of
 * [16384, 16], one thread: row by row -> 8 at a time: softmax 311 -> 227 us, log_softmax
 * 312 -> 260 us (torch 343 and 295, a Zen 5); then pipelined with two accumulators, on an Intel
 * Xeon: softmax 321 -> 266 us, log_softmax 381 -> 282 us (a harness over this file). */
static inline __attribute__((always_inline)) void
rows_short_f32(float *out, const float *x, int64_t rows, int64_t n, kind k)
{
    __m256 xt[2][ROWS8_MAX]; /* the group being finished, and the next one */
    __m256 m, s;
    int cur = 0;
    rows8_pass1_f32(xt[0], x, rows < 8 ? rows : 8, n, k, &m, &s);
    for (int64_t r = 0; r < rows; r += 8) {
        /* log_softmax: (x - max) - log(sum), in this order, as row_f32 */
        __m256 f = k == SOFTMAX ? _mm256_div_ps(_mm256_set1_ps(1.0f), s) : yt__log8(s);
        __m256 mr = m;
        if (r + 8 < rows)
            rows8_pass1_f32(xt[cur ^ 1], x + (r + 8) * n, rows - r - 8 < 8 ? rows - r - 8 : 8, n, k,
                            &m, &s);
        __m256 *c = xt[cur];
        for (int64_t j = 0; j < n; j++)
            c[j] =
                k == SOFTMAX ? _mm256_mul_ps(c[j], f) : _mm256_sub_ps(_mm256_sub_ps(c[j], mr), f);
        store_rows8(out + r * n, c, rows - r < 8 ? rows - r : 8, n);
        cur ^= 1;
    }
}

/* rows_short_f32 with n a constant where it is 8, 16 or 32, so that the loops unroll. */
static inline __attribute__((always_inline)) void
rows_short_any_f32(float *out, const float *x, int64_t rows, int64_t n, kind k)
{
    if (n == 16)
        rows_short_f32(out, x, rows, 16, k);
    else if (n == 8)
        rows_short_f32(out, x, rows, 8, k);
    else if (n == 32)
        rows_short_f32(out, x, rows, 32, k);
    else
        rows_short_f32(out, x, rows, n, k);
}

/* rows_short_any_f32 with k a constant in each (inlined together, the two kinds' loops took the
 * branch on k inside): log_softmax over dim 1 of [16384, 16], one thread, 311 -> 287 us with n
 * constant as well (softmax 291 -> 263). */
static void
rows_short_softmax_f32(float *out, const float *x, int64_t rows, int64_t n)
{
    rows_short_any_f32(out, x, rows, n, SOFTMAX);
}

static void
rows_short_log_softmax_f32(float *out, const float *x, int64_t rows, int64_t n)
{
    rows_short_any_f32(out, x, rows, n, LOG_SOFTMAX);
}

/* ---------------------------------------------------------------- f32 column blocks (inner > 1) */

/* Softmax down the n rows of columns [0, w) of a [n, inner] slab (row stride `inner`). */
static void
cols_f32(float *out, const float *x, int64_t n, int64_t inner, int64_t w, kind k)
{
    float mx[COLS], sm[COLS];
    for (int64_t j = 0; j < w; j++) {
        mx[j] = -INFINITY;
        sm[j] = 0.0f;
    }
    for (int64_t i = 0; i < n; i++) {
        const float *r = x + i * inner;
#pragma omp simd
        for (int64_t j = 0; j < w; j++)
            mx[j] = r[j] > mx[j] ? r[j] : mx[j];
    }
    for (int64_t i = 0; i < n; i++) {
        const float *r = x + i * inner;
        float *o = out + i * inner;
        int64_t j = 0;
        for (; j + 8 <= w; j += 8) {
            __m256 e = yt__exp8(_mm256_sub_ps(_mm256_loadu_ps(r + j), _mm256_loadu_ps(mx + j)));
            if (k == SOFTMAX)
                _mm256_storeu_ps(o + j, e);
            _mm256_storeu_ps(sm + j, _mm256_add_ps(_mm256_loadu_ps(sm + j), e));
        }
        if (j < w) { /* one masked step; the lanes past w hold 0 - 0, their exp masked to 0 */
            __m256i mask = _mm256_castps_si256(yt__tail_mask8(w - j));
            __m256 e = yt__exp8(_mm256_sub_ps(yt__load_tail8(r + j, w - j, 0.0f),
                                              yt__load_tail8(mx + j, w - j, 0.0f)));
            e = _mm256_and_ps(e, _mm256_castsi256_ps(mask));
            if (k == SOFTMAX)
                _mm256_maskstore_ps(o + j, mask, e);
            _mm256_maskstore_ps(sm + j, mask, _mm256_add_ps(_mm256_maskload_ps(sm + j, mask), e));
        }
    }
    if (k == SOFTMAX) {
        for (int64_t j = 0; j < w; j++)
            sm[j] = 1.0f / sm[j];
    } else {
        int64_t j = 0;
        for (; j + 8 <= w; j += 8)
            _mm256_storeu_ps(sm + j, yt__log8(_mm256_loadu_ps(sm + j)));
        if (j < w)
            _mm256_maskstore_ps(sm + j, _mm256_castps_si256(yt__tail_mask8(w - j)),
                                yt__log8(yt__load_tail8(sm + j, w - j, 1.0f)));
    }
    for (int64_t i = 0; i < n; i++) {
        const float *r = x + i * inner;
        float *o = out + i * inner;
        if (k == SOFTMAX) {
#pragma omp simd
            for (int64_t j = 0; j < w; j++)
                o[j] *= sm[j];
        } else {
#pragma omp simd
            for (int64_t j = 0; j < w; j++)
                o[j] = (r[j] - mx[j]) - sm[j];
        }
    }
}

/* ---------------------------------------------------------------- f64 */

/* The exps go 4 lanes at a time through yt__exp4d (libm's exp per element made f64 softmax 3-4x
 * slower than torch's), the tails through the same polynomial. */

/* Softmax of one contiguous f64 row. A NaN anywhere makes the sum NaN, whatever the maximum. */
static void
row_f64(double *out, const double *x, int64_t n, kind k)
{
    int64_t i;
    const double m = yt__row_max4d(x, n);
    const __m256d mv = _mm256_set1_pd(m);
    __m256d s4 = _mm256_setzero_pd();
    for (i = 0; i + 4 <= n; i += 4) {
        __m256d e = yt__exp4d(_mm256_sub_pd(_mm256_loadu_pd(x + i), mv));
        if (k == SOFTMAX)
            _mm256_storeu_pd(out + i, e);
        s4 = _mm256_add_pd(s4, e);
    }
    double s = yt__hsum4d(s4);
    for (; i < n; i++) {
        double e = yt__exp1d(x[i] - m);
        if (k == SOFTMAX)
            out[i] = e;
        s += e;
    }
    if (k == SOFTMAX) {
        const double inv = 1.0 / s;
#pragma omp simd
        for (i = 0; i < n; i++)
            out[i] *= inv;
    } else {
        const double ls = log(s);
#pragma omp simd
        for (i = 0; i < n; i++)
            out[i] = (x[i] - m) - ls;
    }
}

/* Softmax down the n rows of columns [0, w) of a [n, inner] slab (row stride `inner`). */
static void
cols_f64(double *out, const double *x, int64_t n, int64_t inner, int64_t w, kind k)
{
    double mx[COLS], sm[COLS];
    for (int64_t j = 0; j < w; j++) {
        mx[j] = -INFINITY;
        sm[j] = 0.0;
    }
    for (int64_t i = 0; i < n; i++) {
        const double *r = x + i * inner;
#pragma omp simd
        for (int64_t j = 0; j < w; j++)
            mx[j] = r[j] > mx[j] ? r[j] : mx[j];
    }
    for (int64_t i = 0; i < n; i++) {
        const double *r = x + i * inner;
        double *o = out + i * inner;
        int64_t j = 0;
        for (; j + 4 <= w; j += 4) {
            __m256d e = yt__exp4d(_mm256_sub_pd(_mm256_loadu_pd(r + j), _mm256_loadu_pd(mx + j)));
            if (k == SOFTMAX)
                _mm256_storeu_pd(o + j, e);
            _mm256_storeu_pd(sm + j, _mm256_add_pd(_mm256_loadu_pd(sm + j), e));
        }
        for (; j < w; j++) {
            double e = yt__exp1d(r[j] - mx[j]);
            if (k == SOFTMAX)
                o[j] = e;
            sm[j] += e;
        }
    }
    for (int64_t j = 0; j < w; j++)
        sm[j] = k == SOFTMAX ? 1.0 / sm[j] : log(sm[j]);
    for (int64_t i = 0; i < n; i++) {
        const double *r = x + i * inner;
        double *o = out + i * inner;
        if (k == SOFTMAX) {
#pragma omp simd
            for (int64_t j = 0; j < w; j++)
                o[j] *= sm[j];
        } else {
#pragma omp simd
            for (int64_t j = 0; j < w; j++)
                o[j] = (r[j] - mx[j]) - sm[j];
        }
    }
}

/* ---------------------------------------------------------------- backward rows and blocks */

/* out[i] = v for the 8 lanes at out + i; non-temporal when `stream` (out + i is 32-byte aligned
 * then, see bwd_row_f32). */
static inline void
store8(float *out, __m256 v, bool stream)
{
    if (stream)
        _mm256_stream_ps(out, v);
    else
        _mm256_storeu_ps(out, v);
}

/* One element of bwd_row_f32, rounded as its vector lanes are (fnmadd: one rounding). */
static inline float
bwd_one_f32(float g, float y, float s, kind k)
{
    return k == SOFTMAX ? y * (g - s) : fmaf(-yt__exp1(y), s, g);
}

/* log_softmax's gradient g - exp(y) * s over elements [i, n) in whole 16-lane vectors, where the
 * CPU has AVX-512: yt__exp16 gives yt__exp8's values, so each element has the bits of the 8-lane
 * loop. With `stream`, out + i is 32-byte aligned. Returns the first element not written. */
YT_AVX512 static int64_t
bwd_log_lanes16(float *out, const float *g, const float *y, int64_t i, int64_t n, float s,
                bool stream)
{
    const __m512 vs = _mm512_set1_ps(s);
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_fnmadd_ps(yt__exp16(_mm512_loadu_ps(y + i)), vs, _mm512_loadu_ps(g + i));
        if (stream) {
            _mm256_stream_ps(out + i, _mm512_castps512_ps256(v));
            _mm256_stream_ps(out + i + 8, yt__high8(v));
        } else {
            _mm512_storeu_ps(out + i, v);
        }
    }
    return i;
}

/* softmax: gi = y * (g - sum(g * y)); log_softmax: gi = g - exp(y) * sum(g). With `stream` the
 * result bypasses the cache (see run_converted); the caller fences before others read it. */
static void
bwd_row_f32(float *out, const float *g, const float *y, int64_t n, kind k, bool stream)
{
    __m256 a0 = _mm256_setzero_ps(), a1 = a0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 g0 = _mm256_loadu_ps(g + i), g1 = _mm256_loadu_ps(g + i + 8);
        if (k == SOFTMAX) {
            a0 = _mm256_fmadd_ps(g0, _mm256_loadu_ps(y + i), a0);
            a1 = _mm256_fmadd_ps(g1, _mm256_loadu_ps(y + i + 8), a1);
        } else {
            a0 = _mm256_add_ps(a0, g0);
            a1 = _mm256_add_ps(a1, g1);
        }
    }
    float s = yt__hsum8(_mm256_add_ps(a0, a1));
    for (; i < n; i++)
        s += k == SOFTMAX ? g[i] * y[i] : g[i];
    /* Scalar up to a 32-byte boundary of out when streaming, vectors, then a scalar tail. */
    int64_t head = 0;
    if (stream)
        while (head < n && ((uintptr_t)(out + head) & 31) != 0)
            head++;
    __m256 vs = _mm256_set1_ps(s);
    for (i = 0; i < head; i++)
        out[i] = bwd_one_f32(g[i], y[i], s, k);
    if (k == SOFTMAX)
        for (; i + 8 <= n; i += 8)
            store8(out + i,
                   _mm256_mul_ps(_mm256_loadu_ps(y + i), _mm256_sub_ps(_mm256_loadu_ps(g + i), vs)),
                   stream);
    else if (yt__cpu_isa() == YT__ISA_AVX512)
        i = bwd_log_lanes16(out, g, y, i, n, s, stream);
    if (k == LOG_SOFTMAX)
        for (; i + 8 <= n; i += 8)
            store8(out + i,
                   _mm256_fnmadd_ps(yt__exp8(_mm256_loadu_ps(y + i)), vs, _mm256_loadu_ps(g + i)),
                   stream);
    for (; i < n; i++)
        out[i] = bwd_one_f32(g[i], y[i], s, k);
}

/* Rows up to this long take their sums 8 rows at a time in bwd_rows8_f32. */
#define BWD_ROWS8_MAX 64

/* 8 lanes of bwd_row_f32's result for upstream g, output y and the row's sum s. */
YT_ALWAYS_INLINE __m256
bwd_lanes(__m256 g, __m256 y, __m256 s, kind k)
{
    return k == SOFTMAX ? _mm256_mul_ps(y, _mm256_sub_ps(g, s))
                        : _mm256_fnmadd_ps(yt__exp8(y), s, g);
}

/* The sums of rows 0..rows-1 in the first lanes, 0 in the others. Each row's whole vectors, then
 * its tail. Rows of up to 32 go side by side (8 independent chains, 8 lines of each input in
 * flight: [16384, 16] 79 -> 67 us), longer ones one after the other ([4096, 64]: 43 us, against
 * 48 side by side). Either way each row adds its own vectors in the same order. */
YT_ALWAYS_INLINE __m256
bwd_sums8(const float *g, const float *y, int64_t rows, int64_t n, kind k)
{
    __m256 v[8];
    for (int r = 0; r < 8; r++)
        v[r] = _mm256_setzero_ps();
    const int64_t whole = n / 8 * 8;
#define BWD_ADD(r, i)                                                                              \
    do {                                                                                           \
        __m256 gv = _mm256_loadu_ps(g + (r)*n + (i));                                              \
        v[r] = k == SOFTMAX ? _mm256_fmadd_ps(gv, _mm256_loadu_ps(y + (r)*n + (i)), v[r])          \
                            : _mm256_add_ps(v[r], gv);                                             \
    } while (0)
    if (n <= 32)
        for (int64_t i = 0; i < whole; i += 8)
            for (int r = 0; r < rows; r++)
                BWD_ADD(r, i);
    else
        for (int r = 0; r < rows; r++)
            for (int64_t i = 0; i < whole; i += 8)
                BWD_ADD(r, i);
#undef BWD_ADD
    if (whole < n) /* the tails' missing lanes load as 0 */
        for (int r = 0; r < rows; r++) {
            __m256 gv = yt__load_tail8(g + r * n + whole, n - whole, 0.0f);
            v[r] =
                k == SOFTMAX
                    ? _mm256_fmadd_ps(gv, yt__load_tail8(y + r * n + whole, n - whole, 0.0f), v[r])
                    : _mm256_add_ps(v[r], gv);
        }
    return yt__hsum8x8(v);
}

/* Any rows: one after another, a row's tail through a masked store. */
YT_ALWAYS_INLINE void
bwd_write_rows(float *out, const float *g, const float *y, int64_t rows, int64_t n, __m256 sums,
               kind k)
{
    float sum[8];
    _mm256_storeu_ps(sum, sums);
    for (int r = 0; r < rows; r++) {
        const float *gr = g + r * n, *yr = y + r * n;
        float *o = out + r * n;
        __m256 vs = _mm256_set1_ps(sum[r]);
        int64_t i = 0;
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(o + i,
                             bwd_lanes(_mm256_loadu_ps(gr + i), _mm256_loadu_ps(yr + i), vs, k));
        if (i < n)
            _mm256_maskstore_ps(o + i, _mm256_castps_si256(yt__tail_mask8(n - i)),
                                bwd_lanes(yt__load_tail8(gr + i, n - i, 0.0f),
                                          yt__load_tail8(yr + i, n - i, 0.0f), vs, k));
    }
}

/* 8 rows of a multiple of 8 up to 32: their vectors side by side, as bwd_sums8 reads them. */
YT_ALWAYS_INLINE void
bwd_write_side_by_side(float *out, const float *g, const float *y, int64_t n, __m256 sums, kind k)
{
    __m256 vs[8];
    for (int r = 0; r < 8; r++)
        vs[r] = _mm256_permutevar8x32_ps(sums, _mm256_set1_epi32(r));
    for (int64_t i = 0; i < n; i += 8)
        for (int r = 0; r < 8; r++)
            _mm256_storeu_ps(out + r * n + i, bwd_lanes(_mm256_loadu_ps(g + r * n + i),
                                                        _mm256_loadu_ps(y + r * n + i), vs[r], k));
}

/* 8 rows of n < 32 (not a multiple of 8) as the 8n contiguous elements they are, n whole vectors,
 * each lane taking its row's sum through a permute: a row that ends inside a vector then needs no
 * masked store, which cost 5-6 ns each here (over dim 1 of [26214, 10] f32, one thread,
 * bench/ab.sh softmax_bwd_dim1: 181 -> 73 us, log_softmax_bwd_dim1 352 -> 179 us). Lane l of
 * vector j is element 8j + l, of row (8j + l) / n, found as (8j + l + 0.5) / n truncated: at
 * least 0.5 / n from an integer, far beyond float's error there. */
YT_ALWAYS_INLINE void
bwd_write_flat(float *out, const float *g, const float *y, int64_t n, __m256 sums, kind k)
{
    const __m256 per_row = _mm256_set1_ps(1.0f / (float)n);
    __m256 at = _mm256_setr_ps(0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 6.5f, 7.5f);
    for (int64_t j = 0; j < n; j++) {
        const __m256i row = _mm256_cvttps_epi32(_mm256_mul_ps(at, per_row));
        _mm256_storeu_ps(out + 8 * j,
                         bwd_lanes(_mm256_loadu_ps(g + 8 * j), _mm256_loadu_ps(y + 8 * j),
                                   _mm256_permutevar8x32_ps(sums, row), k));
        at = _mm256_add_ps(at, _mm256_set1_ps(8.0f));
    }
}

/* The three forms below are separate functions, k a constant in each branch: inlined together,
 * GCC compiled the general one worse ([4096, 64] softmax 40 -> 46 us). */

/* Any rows <= 8 and n <= BWD_ROWS8_MAX. */
__attribute__((noinline)) static void
bwd_rows8_any_f32(float *out, const float *g, const float *y, int64_t rows, int64_t n, kind k)
{
    if (k == SOFTMAX)
        bwd_write_rows(out, g, y, rows, n, bwd_sums8(g, y, rows, n, SOFTMAX), SOFTMAX);
    else
        bwd_write_rows(out, g, y, rows, n, bwd_sums8(g, y, rows, n, LOG_SOFTMAX), LOG_SOFTMAX);
}

/* 8 rows of n < 32, not a multiple of 8. */
__attribute__((noinline)) static void
bwd_rows8_flat_f32(float *out, const float *g, const float *y, int64_t n, kind k)
{
    if (k == SOFTMAX)
        bwd_write_flat(out, g, y, n, bwd_sums8(g, y, 8, n, SOFTMAX), SOFTMAX);
    else
        bwd_write_flat(out, g, y, n, bwd_sums8(g, y, 8, n, LOG_SOFTMAX), LOG_SOFTMAX);
}

/* bwd_write_side_by_side's log_softmax on 16 lanes (see bwd_log_lanes16), for 8 rows of n = 8, 16
 * or 32, which are 8n contiguous elements: lane l of the vector at element j takes the sum of row
 * (j + l) / n. Over dim 1 of [16384, 16], one thread, alternating with the 8-lane build:
 * 243-253 -> 167-173 us. */
YT_AVX512 static void
bwd_log_rows8_wide(float *out, const float *g, const float *y, int64_t n, __m256 sums)
{
    const __m512 row_sums = _mm512_castps256_ps512(sums); /* lanes 8-15 are never chosen */
    const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m128i shift = _mm_cvtsi32_si128(n == 8 ? 3 : n == 16 ? 4 : 5); /* log2(n) */
    for (int64_t j = 0; j < 8 * n; j += 16) {
        const __m512i row =
            _mm512_srl_epi32(_mm512_add_epi32(lanes, _mm512_set1_epi32((int)j)), shift);
        const __m512 s = _mm512_permutexvar_ps(row, row_sums);
        _mm512_storeu_ps(out + j, _mm512_fnmadd_ps(yt__exp16(_mm512_loadu_ps(y + j)), s,
                                                   _mm512_loadu_ps(g + j)));
    }
}

YT_ALWAYS_INLINE void
bwd_rows8_of_length(float *out, const float *g, const float *y, int64_t n, kind k)
{
    if (k == SOFTMAX)
        bwd_write_side_by_side(out, g, y, n, bwd_sums8(g, y, 8, n, SOFTMAX), SOFTMAX);
    else if (yt__cpu_isa() == YT__ISA_AVX512)
        bwd_log_rows8_wide(out, g, y, n, bwd_sums8(g, y, 8, n, LOG_SOFTMAX));
    else
        bwd_write_side_by_side(out, g, y, n, bwd_sums8(g, y, 8, n, LOG_SOFTMAX), LOG_SOFTMAX);
}

/* 8 rows of 8, 16 or 32, that length a constant in each branch, so that the loops unroll and the
 * 8 sums stay in registers rather than on the stack (over dim 1, f32, one thread, bench/ab.sh
 * softmax_bwd_dim1: [16384, 16] 63 -> 50 us, [32768, 8] 93 -> 68, [8192, 32] 51 -> 46;
 * log_softmax_bwd_dim1 [16384, 16] 165 -> 152). */
__attribute__((noinline)) static void
bwd_rows8_short_f32(float *out, const float *g, const float *y, int64_t n, kind k)
{
    if (n == 8)
        bwd_rows8_of_length(out, g, y, 8, k);
    else if (n == 16)
        bwd_rows8_of_length(out, g, y, 16, k);
    else
        bwd_rows8_of_length(out, g, y, 32, k);
}

/* bwd_row_f32 for `rows` <= 8 rows of n <= BWD_ROWS8_MAX (row r at r * n), not streamed, in two
 * steps: bwd_sums8 folds each row's products (softmax) or gradients (log_softmax) into one vector
 * and yt__hsum8x8 finishes the 8 sums together; one of the bwd_write_* then writes each row with
 * its own sum, where a row alone pays a call and a horizontal sum. A row's result depends on that
 * row alone. out may be g or y. Over dim 1 of [16384, 16], one thread, row by row -> 8 at a time
 * (huge pages for both, see runtime/allocator.c): softmax 132 -> 67 us, log_softmax 216 -> 176 us
 * (torch 60 and 218). */
static void
bwd_rows8_f32(float *out, const float *g, const float *y, int64_t rows, int64_t n, kind k)
{
    if (rows == 8 && (n == 8 || n == 16 || n == 32))
        bwd_rows8_short_f32(out, g, y, n, k);
    else if (rows == 8 && n < 32)
        bwd_rows8_flat_f32(out, g, y, n, k);
    else
        bwd_rows8_any_f32(out, g, y, rows, n, k);
}

static void
bwd_cols_f32(float *out, const float *g, const float *y, int64_t n, int64_t inner, int64_t w,
             kind k)
{
    float sm[COLS];
    for (int64_t j = 0; j < w; j++)
        sm[j] = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        const float *gr = g + i * inner, *yr = y + i * inner;
        if (k == SOFTMAX) {
#pragma omp simd
            for (int64_t j = 0; j < w; j++)
                sm[j] += gr[j] * yr[j];
        } else {
#pragma omp simd
            for (int64_t j = 0; j < w; j++)
                sm[j] += gr[j];
        }
    }
    for (int64_t i = 0; i < n; i++) {
        const float *gr = g + i * inner, *yr = y + i * inner;
        float *o = out + i * inner;
        if (k == SOFTMAX) {
#pragma omp simd
            for (int64_t j = 0; j < w; j++)
                o[j] = yr[j] * (gr[j] - sm[j]);
        } else {
            int64_t j = 0;
            for (; j + 8 <= w; j += 8)
                _mm256_storeu_ps(o + j, _mm256_fnmadd_ps(yt__exp8(_mm256_loadu_ps(yr + j)),
                                                         _mm256_loadu_ps(sm + j),
                                                         _mm256_loadu_ps(gr + j)));
            for (; j < w; j++)
                o[j] = gr[j] - yt__exp1(yr[j]) * sm[j];
        }
    }
}

/* The backward of one contiguous f64 row, as bwd_row_f32 (not streamed). */
static void
bwd_row_f64(double *out, const double *g, const double *y, int64_t n, kind k)
{
    __m256d s4 = _mm256_setzero_pd();
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256d gv = _mm256_loadu_pd(g + i);
        s4 = k == SOFTMAX ? _mm256_fmadd_pd(gv, _mm256_loadu_pd(y + i), s4) : _mm256_add_pd(s4, gv);
    }
    double s = yt__hsum4d(s4);
    for (; i < n; i++)
        s += k == SOFTMAX ? g[i] * y[i] : g[i];
    const __m256d sv = _mm256_set1_pd(s);
    for (i = 0; i + 4 <= n; i += 4) {
        __m256d gv = _mm256_loadu_pd(g + i), yv = _mm256_loadu_pd(y + i);
        _mm256_storeu_pd(out + i, k == SOFTMAX ? _mm256_mul_pd(yv, _mm256_sub_pd(gv, sv))
                                               : _mm256_fnmadd_pd(yt__exp4d(yv), sv, gv));
    }
    for (; i < n; i++)
        out[i] = k == SOFTMAX ? y[i] * (g[i] - s) : fma(-yt__exp1d(y[i]), s, g[i]);
}

static void
bwd_cols_f64(double *out, const double *g, const double *y, int64_t n, int64_t inner, int64_t w,
             kind k)
{
    double sm[COLS];
    for (int64_t j = 0; j < w; j++)
        sm[j] = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const double *gr = g + i * inner, *yr = y + i * inner;
        if (k == SOFTMAX) {
#pragma omp simd
            for (int64_t j = 0; j < w; j++)
                sm[j] += gr[j] * yr[j];
        } else {
#pragma omp simd
            for (int64_t j = 0; j < w; j++)
                sm[j] += gr[j];
        }
    }
    for (int64_t i = 0; i < n; i++) {
        const double *gr = g + i * inner, *yr = y + i * inner;
        double *o = out + i * inner;
        if (k == SOFTMAX) {
#pragma omp simd
            for (int64_t j = 0; j < w; j++)
                o[j] = yr[j] * (gr[j] - sm[j]);
        } else {
            int64_t j = 0;
            for (; j + 4 <= w; j += 4)
                _mm256_storeu_pd(o + j, _mm256_fnmadd_pd(yt__exp4d(_mm256_loadu_pd(yr + j)),
                                                         _mm256_loadu_pd(sm + j),
                                                         _mm256_loadu_pd(gr + j)));
            for (; j < w; j++)
                o[j] = fma(-yt__exp1d(yr[j]), sm[j], gr[j]);
        }
    }
}

/* ---------------------------------------------------------------- drivers */

/* Work unit u: slab u / blocks, columns [(u % blocks) * COLS, ...) of it; one unit per row when
 * inner == 1. */
typedef struct job {
    geom g;
    kind k;
    bool f64;
    char *out;
    const char *a; /* x, or grad_output */
    const char *b; /* NULL, or output */
    bool stream;   /* write f32 backward rows with non-temporal stores */
} job;

static void
run_unit(const job *jb, int64_t u)
{
    const geom *g = &jb->g;
    int64_t blocks = (g->inner + COLS - 1) / COLS;
    int64_t o = u / blocks, j0 = (u % blocks) * COLS;
    int64_t w = g->inner - j0 < COLS ? g->inner - j0 : COLS;
    int64_t at = o * g->n * g->inner + j0;
    if (jb->f64) {
        double *out = (double *)jb->out + at;
        const double *a = (const double *)jb->a + at;
        const double *b = jb->b == NULL ? NULL : (const double *)jb->b + at;
        if (g->inner == 1 && b == NULL)
            row_f64(out, a, g->n, jb->k);
        else if (g->inner == 1)
            bwd_row_f64(out, a, b, g->n, jb->k);
        else if (b == NULL)
            cols_f64(out, a, g->n, g->inner, w, jb->k);
        else
            bwd_cols_f64(out, a, b, g->n, g->inner, w, jb->k);
        return;
    }
    float *out = (float *)jb->out + at;
    const float *a = (const float *)jb->a + at;
    const float *b = jb->b == NULL ? NULL : (const float *)jb->b + at;
    if (g->inner == 1 && b == NULL)
        row_f32(out, a, g->n, jb->k);
    else if (g->inner == 1)
        bwd_row_f32(out, a, b, g->n, jb->k, jb->stream);
    else if (b == NULL)
        cols_f32(out, a, g->n, g->inner, w, jb->k);
    else
        bwd_cols_f32(out, a, b, g->n, g->inner, w, jb->k);
}

typedef struct units {
    const job *jb;
    int64_t units, chunks;
} units;

static void
run_chunk(void *arg, int64_t c)
{
    const units *u = arg;
    const job *jb = u->jb;
    int64_t k = u->units * c / u->chunks, end = u->units * (c + 1) / u->chunks;
    const int64_t n = jb->g.n;
    if (!jb->f64 && jb->g.inner == 1 && jb->b == NULL && n <= ROWS8_MAX) {
        (jb->k == SOFTMAX ? rows_short_softmax_f32 : rows_short_log_softmax_f32)(
            (float *)jb->out + k * n, (const float *)jb->a + k * n, end - k, n);
        k = end;
    } else if (!jb->f64 && jb->g.inner == 1 && jb->b == NULL && jb->k == LOG_SOFTMAX) {
        for (; k + 8 <= end; k += 8)
            rows8_log_softmax_f32((float *)jb->out + k * n, (const float *)jb->a + k * n, n);
    } else if (!jb->f64 && jb->g.inner == 1 && jb->b != NULL && !jb->stream && n <= BWD_ROWS8_MAX) {
        for (; k < end; k += 8)
            bwd_rows8_f32((float *)jb->out + k * n, (const float *)jb->a + k * n,
                          (const float *)jb->b + k * n, end - k < 8 ? end - k : 8, n, jb->k);
    }
    for (; k < end; k++)
        run_unit(u->jb, k);
    if (u->jb->stream)
        _mm_sfence(); /* streamed stores are weakly ordered: done before the pool reports done */
}

static void
run_job(const job *jb)
{
    const geom *g = &jb->g;
    int64_t n_units = g->outer * ((g->inner + COLS - 1) / COLS);
    int64_t numel = g->outer * g->n * g->inner;
    /* about a nanosecond per element (exp) */
    int nth = numel >= YT_PARALLEL_GRAIN && n_units > 1
                  ? yt__parallel_threads((double)numel, yt__max_threads())
                  : 1;
    units u = {jb, n_units, yt__parallel_chunks(n_units, nth)};
    yt__parallel_run(u.chunks, nth, run_chunk, &u);
}

/* The compute dtype: f64 stays, everything else runs in f32. */
static yt_dtype
compute_dtype(yt_dtype d)
{
    return d == YT_DTYPE_F64 ? YT_DTYPE_F64 : YT_DTYPE_F32;
}

/* `t` as a contiguous tensor of dtype `cd` (itself when it already is one), or NULL. */
static yt_tensor *
as_compute(yt_tensor *t, yt_dtype cd)
{
    return t->dtype == cd && t->is_contiguous ? t : yt__cast_copy(t, cd);
}

/* Runs `jb` with inputs a (and b) into `result`, through f32/f64 copies where needed. */
static yt_status
run_converted(yt_tensor *result, yt_tensor *a, yt_tensor *b, int64_t dim, kind k)
{
    if (result->numel == 0)
        return YT_OK;
    yt_dtype cd = compute_dtype(result->dtype);
    yt_tensor *ca = as_compute(a, cd);
    yt_tensor *cb = b == NULL || ca == NULL ? NULL : as_compute(b, cd);
    yt_tensor *dst = result->dtype == cd ? result : yt__empty_like(result, cd);
    yt_status st = YT_OK;
    if (ca == NULL || (b != NULL && cb == NULL) || dst == NULL) {
        st = yt__last_status();
    } else {
        job jb = {.g = geom_of(a, dim),
                  .k = k,
                  .f64 = cd == YT_DTYPE_F64,
                  .out = yt__data_ptr(dst),
                  .a = yt__data_ptr(ca),
                  .b = cb == NULL ? NULL : yt__data_ptr(cb)};
        /* Backward reads two operands and writes a third: when together they exceed the
         * last-level cache, the result cannot stay cached for the next op anyway, and streaming
         * it saves reading each output line before writing it (3 memory passes instead of 4).
         * Not into dst when a copy to result's dtype reads it right after. */
        jb.stream = cb != NULL && dst == result && !jb.f64 && jb.g.inner == 1 &&
                    3 * (double)result->numel * sizeof(float) > (double)yt__cache_bytes();
        run_job(&jb);
        if (dst != result)
            st = yt__copy_into(result, dst);
    }
    if (dst != result)
        yt_release(dst);
    if (cb != NULL)
        yt__release_cast(cb, b);
    if (ca != NULL)
        yt__release_cast(ca, a);
    return st;
}

/* ---------------------------------------------------------------- kernels */

yt_status
yt__cpu_softmax(yt_tensor *result, yt_tensor *self, int64_t dim, yt_dtype dtype)
{
    (void)dtype; /* the result's dtype has it: the input is converted to it first */
    return run_converted(result, self, NULL, dim, SOFTMAX);
}

yt_status
yt__cpu_log_softmax(yt_tensor *result, yt_tensor *self, int64_t dim, yt_dtype dtype)
{
    (void)dtype;
    return run_converted(result, self, NULL, dim, LOG_SOFTMAX);
}

yt_status
yt__cpu_softmax_backward_data(yt_tensor *result, yt_tensor *grad_output, yt_tensor *output,
                              int64_t dim)
{
    if (yt__check_same_shape("softmax_backward_data", "grad_output", grad_output, "output",
                             output) != YT_OK)
        return YT_ERR_SHAPE;
    return run_converted(result, grad_output, output, dim, SOFTMAX);
}

yt_status
yt__cpu_log_softmax_backward_data(yt_tensor *result, yt_tensor *grad_output, yt_tensor *output,
                                  int64_t dim)
{
    if (yt__check_same_shape("log_softmax_backward_data", "grad_output", grad_output, "output",
                             output) != YT_OK)
        return YT_ERR_SHAPE;
    return run_converted(result, grad_output, output, dim, LOG_SOFTMAX);
}

/* ---------------------------------------------------------------- rows for other kernels */

void
yt__softmax_rows_f32(float *out, const float *x, int64_t rows, int64_t n)
{
    if (n <= ROWS8_MAX) {
        rows_short_softmax_f32(out, x, rows, n);
        return;
    }
    for (int64_t r = 0; r < rows; r++)
        row_f32(out + r * n, x + r * n, n, SOFTMAX);
}

void
yt__softmax_rows_f64(double *out, const double *x, int64_t rows, int64_t n)
{
    for (int64_t r = 0; r < rows; r++)
        row_f64(out + r * n, x + r * n, n, SOFTMAX);
}

void
yt__softmax_backward_rows_f32(float *out, const float *g, const float *y, int64_t rows, int64_t n)
{
    if (n <= BWD_ROWS8_MAX) {
        for (int64_t r = 0; r < rows; r += 8)
            bwd_rows8_f32(out + r * n, g + r * n, y + r * n, rows - r < 8 ? rows - r : 8, n,
                          SOFTMAX);
        return;
    }
    for (int64_t r = 0; r < rows; r++)
        bwd_row_f32(out + r * n, g + r * n, y + r * n, n, SOFTMAX, false);
}

void
yt__softmax_backward_rows_f64(double *out, const double *g, const double *y, int64_t rows,
                              int64_t n)
{
    for (int64_t r = 0; r < rows; r++)
        bwd_row_f64(out + r * n, g + r * n, y + r * n, n, SOFTMAX);
}
