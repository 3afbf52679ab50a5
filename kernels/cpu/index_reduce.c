/* argmax and argmin on the CPU (and the index half of max.dim / min.dim): the index of the first
 * best element along one dim, or of the flattened tensor when dim is YT_NONE. A NaN beats every
 * number (the first NaN wins), as in PyTorch.
 *
 * The input is seen as a contiguous [outer, n, inner] block (copied first when it is not, with
 * f16/bf16 widened to f64 and integral ones to i64, so comparisons are exact and there are three
 * loops instead of ten). inner == 1 scans each row, f32 rows in 8 lanes (rows8_f32, row_f32) and
 * f64 ones (f16 and bf16 widened among them) in 4 (row_f64); inner > 1 folds rows into a block of
 * COLS running bests so every loop runs along contiguous memory. Split over the kernel pool by
 * output blocks above YT_PARALLEL_GRAIN elements (each block is whole, so the split never changes
 * a result). */
/* AVX2 even in builds with other -march flags (the ASan stage): vec_math.h needs it. */
#pragma GCC target("avx2,fma")

#include <math.h>

#include "index_reduce.h"
#include "parallel.h"
#include "reduce_plan.h"
#include "vec_math.h"

#define COLS 256

typedef struct geom {
    int64_t outer, n, inner;
} geom;

/* Whether v replaces best: strictly better, or the first NaN. */
static inline bool
better_f64(double v, double best, bool min)
{
    if (best != best)
        return false;
    return v != v || (min ? v < best : v > best);
}

static inline bool
better_i64(int64_t v, int64_t best, bool min)
{
    return min ? v < best : v > best;
}

typedef struct job {
    geom g;
    bool floating, f32, min;
    bool rows_f32; /* f32 with inner == 1: rows_f32 */
    bool rows_f64; /* f64 rows of 4 or more with inner == 1: row_f64 */
    const char *x; /* f32, f64 or i64, contiguous */
    int64_t *idx;
    yt_tensor *values; /* NULL, or where the best values go (any dtype) */
    int64_t units, chunks;
} job;

static void
run_block(const job *jb, int64_t u)
{
    const geom *g = &jb->g;
    int64_t blocks = (g->inner + COLS - 1) / COLS;
    int64_t o = u / blocks, j0 = (u % blocks) * COLS;
    int64_t w = g->inner - j0 < COLS ? g->inner - j0 : COLS;
    yt__reduce_acc best[COLS];
    int64_t at[COLS];
    int64_t base = o * g->n * g->inner + j0;
    if (jb->f32) {
        const float *x = (const float *)jb->x + base;
        for (int64_t j = 0; j < w; j++) {
            best[j].f = x[j];
            at[j] = 0;
        }
        for (int64_t i = 1; i < g->n; i++) {
            const float *r = x + i * g->inner;
            for (int64_t j = 0; j < w; j++)
                if (better_f64(r[j], best[j].f, jb->min)) {
                    best[j].f = r[j];
                    at[j] = i;
                }
        }
    } else if (jb->floating) {
        const double *x = (const double *)jb->x + base;
        for (int64_t j = 0; j < w; j++) {
            best[j].f = x[j];
            at[j] = 0;
        }
        for (int64_t i = 1; i < g->n; i++) {
            const double *r = x + i * g->inner;
            for (int64_t j = 0; j < w; j++)
                if (better_f64(r[j], best[j].f, jb->min)) {
                    best[j].f = r[j];
                    at[j] = i;
                }
        }
    } else {
        const int64_t *x = (const int64_t *)jb->x + base;
        for (int64_t j = 0; j < w; j++) {
            best[j].i = x[j];
            at[j] = 0;
        }
        for (int64_t i = 1; i < g->n; i++) {
            const int64_t *r = x + i * g->inner;
            for (int64_t j = 0; j < w; j++)
                if (better_i64(r[j], best[j].i, jb->min)) {
                    best[j].i = r[j];
                    at[j] = i;
                }
        }
    }
    int64_t out = o * g->inner + j0;
    for (int64_t j = 0; j < w; j++)
        jb->idx[out + j] = at[j];
    if (jb->values != NULL)
        yt__reduce_store(jb->values, out, 1, best, w, 1.0);
}

/* ---------------------------------------------------------------- f32 rows (inner == 1) */

/* Lanewise better_f64: where v is strictly better than best, or the first NaN, v and its index
 * `at_v` replace best and *at. */
static inline void
pick8(__m256 *best, __m256i *at, __m256 v, __m256i at_v, bool min)
{
    __m256 better = min ? _mm256_cmp_ps(*best, v, _CMP_GT_OQ) : _mm256_cmp_ps(v, *best, _CMP_GT_OQ);
    better = _mm256_or_ps(better, _mm256_andnot_ps(_mm256_cmp_ps(*best, *best, _CMP_UNORD_Q),
                                                   _mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
    *best = _mm256_blendv_ps(*best, v, better);
    *at = _mm256_castps_si256(
        _mm256_blendv_ps(_mm256_castsi256_ps(*at), _mm256_castsi256_ps(at_v), better));
}

/* Rows of n <= ROWS8_MAX, 8 at a time, one per lane (yt__load_columns8): column j, in order,
 * replaces each lane's best where it is better. Over dim 1 of [16384, 16] f32, one thread,
 * argmax: 1153 -> 76 us (torch 686), max.dim 1276 -> 80 us (torch 506). */
#define ROWS8_MAX 32

static void
rows8_f32(const job *jb, int64_t r0, int64_t rows, float *vals)
{
    const int64_t n = jb->g.n;
    const char *x = jb->x + r0 * n * (int64_t)sizeof(float);
    __m256 c[8], best = _mm256_setzero_ps();
    __m256i at = _mm256_setzero_si256();
    for (int64_t j0 = 0; j0 < n; j0 += 8) {
        yt__load_columns8(c, x, n * (int64_t)sizeof(float), rows, j0, n);
        for (int64_t j = 0; j < 8 && j0 + j < n; j++) {
            if (j0 + j == 0)
                best = c[0];
            else
                pick8(&best, &at, c[j], _mm256_set1_epi32((int)(j0 + j)), jb->min);
        }
    }
    float bv[8];
    int32_t bi[8];
    _mm256_storeu_ps(bv, best);
    _mm256_storeu_si256((__m256i *)bi, at);
    for (int r = 0; r < rows; r++) {
        jb->idx[r0 + r] = bi[r];
        if (vals != NULL)
            vals[r0 + r] = bv[r];
    }
}

/* One longer row: lane k keeps the first best of elements k, k + 8, ...; then the lanes are
 * merged in index order, so the first best overall wins. */
static void
row_f32(const job *jb, int64_t r, float *vals)
{
    const int64_t n = jb->g.n;
    const float *x = (const float *)jb->x + r * n;
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256 best = _mm256_loadu_ps(x);
    __m256i at = lanes;
    int64_t i = 8;
    for (; i + 8 <= n; i += 8)
        pick8(&best, &at, _mm256_loadu_ps(x + i),
              _mm256_add_epi32(lanes, _mm256_set1_epi32((int)i)), jb->min);
    if (i < n) /* past the row: -inf (+inf for min), never strictly better */
        pick8(&best, &at, yt__load_tail8(x + i, n - i, jb->min ? INFINITY : -INFINITY),
              _mm256_add_epi32(lanes, _mm256_set1_epi32((int)i)), jb->min);
    float bv[8];
    int32_t bi[8];
    _mm256_storeu_ps(bv, best);
    _mm256_storeu_si256((__m256i *)bi, at);
    int k = 0;
    for (int l = 1; l < 8; l++) {
        bool tie = bv[l] == bv[k] || (bv[l] != bv[l] && bv[k] != bv[k]);
        if (better_f64(bv[l], bv[k], jb->min) || (tie && bi[l] < bi[k]))
            k = l;
    }
    jb->idx[r] = bi[k];
    if (vals != NULL)
        vals[r] = bv[k];
}

/* ---------------------------------------------------------------- f64 rows (inner == 1) */

/* pick8 for 4 f64 lanes with 64-bit indices. */
static inline void
pick4d(__m256d *best, __m256i *at, __m256d v, __m256i at_v, bool min)
{
    __m256d better =
        min ? _mm256_cmp_pd(*best, v, _CMP_GT_OQ) : _mm256_cmp_pd(v, *best, _CMP_GT_OQ);
    better = _mm256_or_pd(better, _mm256_andnot_pd(_mm256_cmp_pd(*best, *best, _CMP_UNORD_Q),
                                                   _mm256_cmp_pd(v, v, _CMP_UNORD_Q)));
    *best = _mm256_blendv_pd(*best, v, better);
    *at = _mm256_castpd_si256(
        _mm256_blendv_pd(_mm256_castsi256_pd(*at), _mm256_castsi256_pd(at_v), better));
}

/* One f64 row of at least 4, as row_f32: lane k keeps the first best of elements k, k + 4, ...,
 * and the lanes merge in index order (argmax over dim 1 of [4096, 64] f64, one thread: element
 * by element 642 -> 123 us; torch 396). The last 4 elements are read as a whole vector: lanes
 * already seen lose to their earlier selves (not strictly better), so the first best still wins. */
static void
row_f64(const job *jb, int64_t r, double *vals)
{
    const int64_t n = jb->g.n;
    const double *x = (const double *)jb->x + r * n;
    const __m256i lanes = _mm256_setr_epi64x(0, 1, 2, 3);
    __m256d best = _mm256_loadu_pd(x);
    __m256i at = lanes;
    int64_t i = 4;
    for (; i + 4 <= n; i += 4)
        pick4d(&best, &at, _mm256_loadu_pd(x + i), _mm256_add_epi64(lanes, _mm256_set1_epi64x(i)),
               jb->min);
    if (i < n)
        pick4d(&best, &at, _mm256_loadu_pd(x + n - 4),
               _mm256_add_epi64(lanes, _mm256_set1_epi64x(n - 4)), jb->min);
    double bv[4];
    int64_t bi[4];
    _mm256_storeu_pd(bv, best);
    _mm256_storeu_si256((__m256i *)bi, at);
    int k = 0;
    for (int l = 1; l < 4; l++) {
        bool tie = bv[l] == bv[k] || (bv[l] != bv[l] && bv[k] != bv[k]);
        if (better_f64(bv[l], bv[k], jb->min) || (tie && bi[l] < bi[k]))
            k = l;
    }
    jb->idx[r] = bi[k];
    if (vals != NULL)
        vals[r] = bv[k];
}

/* Rows [lo, hi) of f32 with inner == 1; values, when wanted, are f32 like self. */
static void
rows_f32(const job *jb, int64_t lo, int64_t hi)
{
    float *vals = jb->values != NULL ? (float *)yt__data_ptr(jb->values) : NULL;
    if (jb->g.n <= ROWS8_MAX) {
        for (int64_t r = lo; r < hi; r += 8)
            rows8_f32(jb, r, hi - r < 8 ? hi - r : 8, vals);
        return;
    }
    for (int64_t r = lo; r < hi; r++)
        row_f32(jb, r, vals);
}

static void
run_chunk(void *ctx, int64_t c)
{
    const job *jb = ctx;
    int64_t lo = jb->units * c / jb->chunks, hi = jb->units * (c + 1) / jb->chunks;
    if (jb->rows_f32) { /* one unit per row */
        rows_f32(jb, lo, hi);
        return;
    }
    if (jb->rows_f64) {
        double *vals = jb->values != NULL ? (double *)yt__data_ptr(jb->values) : NULL;
        for (int64_t r = lo; r < hi; r++)
            row_f64(jb, r, vals);
        return;
    }
    for (int64_t u = lo; u < hi; u++)
        run_block(jb, u);
}

yt_status
yt__index_reduce(yt_tensor *values, yt_tensor *indices, yt_tensor *self, int64_t dim, bool min,
                 const char *op)
{
    geom g = {1, self->numel, 1};
    if (dim != YT_NONE && self->dim > 0) {
        if (yt__wrap_dim(&dim, self->dim, op, "dim") != YT_OK)
            return yt__last_status();
        g.outer = g.inner = 1;
        for (int64_t i = 0; i < dim; i++)
            g.outer *= self->sizes[i];
        g.n = self->sizes[dim];
        for (int64_t i = dim + 1; i < self->dim; i++)
            g.inner *= self->sizes[i];
    }
    if (g.n == 0) {
        if (dim == YT_NONE || self->dim == 0)
            return yt__fail_status(
                YT_ERR_SHAPE, "%s: self is empty (numel=0); give a dim whose size is not 0", op);
        return yt__fail_status(YT_ERR_SHAPE,
                               "%s: cannot reduce over a zero-size dimension (self.size(%lld)=0)",
                               op, (long long)dim);
    }
    if (indices->numel == 0)
        return YT_OK;
    bool floating = yt_dtype_is_floating(self->dtype);
    yt_dtype wide = self->dtype == YT_DTYPE_F32 ? YT_DTYPE_F32
                    : floating                  ? YT_DTYPE_F64
                                                : YT_DTYPE_I64;
    yt_tensor *x = self->dtype == wide && self->is_contiguous ? self : yt__cast_copy(self, wide);
    if (x == NULL)
        return yt__last_status();
    job jb = {.g = g,
              .floating = floating,
              .f32 = wide == YT_DTYPE_F32,
              .min = min,
              .x = yt__data_ptr(x),
              .idx = (int64_t *)yt__data_ptr(indices),
              .values = values};
    jb.units = g.outer * ((g.inner + COLS - 1) / COLS);
    /* lane indices are int32; values, when wanted, have self's dtype (f32 here) */
    jb.rows_f32 = jb.f32 && g.inner == 1 && g.n < INT32_MAX &&
                  (values == NULL || values->dtype == YT_DTYPE_F32);
    jb.rows_f64 = wide == YT_DTYPE_F64 && g.inner == 1 && g.n >= 4 &&
                  (values == NULL || values->dtype == YT_DTYPE_F64);
    /* about half a nanosecond per element compared */
    int threads = self->numel >= YT_PARALLEL_GRAIN && jb.units > 1
                      ? yt__parallel_threads(0.5 * (double)self->numel, yt__max_threads())
                      : 1;
    jb.chunks = yt__parallel_chunks(jb.units, threads);
    yt__parallel_run(jb.chunks, threads, run_chunk, &jb);
    yt__release_cast(x, self);
    return YT_OK;
}

yt_status
yt__cpu_argmax(yt_tensor *result, yt_tensor *self, int64_t dim, bool keepdim)
{
    (void)keepdim; /* the result's shape has it */
    return yt__index_reduce(NULL, result, self, dim, false, "argmax");
}

yt_status
yt__cpu_argmin(yt_tensor *result, yt_tensor *self, int64_t dim, bool keepdim)
{
    (void)keepdim;
    return yt__index_reduce(NULL, result, self, dim, true, "argmin");
}

yt_status
yt__cpu_max_dim(yt_tensor *values, yt_tensor *indices, yt_tensor *self, int64_t dim, bool keepdim)
{
    (void)keepdim;
    return yt__index_reduce(values, indices, self, dim, false, "max");
}

yt_status
yt__cpu_min_dim(yt_tensor *values, yt_tensor *indices, yt_tensor *self, int64_t dim, bool keepdim)
{
    (void)keepdim;
    return yt__index_reduce(values, indices, self, dim, true, "min");
}
