/* amax, amin, all and any on the CPU: the largest (smallest) element over `dim` (all dims when
 * empty), NaN winning as in PyTorch. A zero-size reduced dim is an error for amax/amin (the
 * max of nothing is undefined); all/any give their identities (true/false) instead.
 *
 * The plan and the threaded driver are shared with sum (reduce_plan.h): a tight loop per output
 * element when the innermost dim is reduced (`row`), or whole rows folded into a row of running
 * extrema when it is kept (`rows`). Every comparison is exact: floating values are held in
 * double (f32 rows are scanned in float), integral and bool ones in int64, and the result has the
 * input's dtype. Each loop is written once, always inlined, and instantiated for max and min with
 * a constant flag, so the compiled loops carry no branch on it. all/any run the bool min/max on a
 * bool copy of the input. */
/* AVX2 and FMA even in builds with other -march flags (the ASan stage): the library's baseline
 * is x86-64-v3, and vec_math.h uses their intrinsics. */
#pragma GCC target("avx2,fma")

#include <math.h>

#include "reduce_plan.h"
#include "reduce_rows4d.h"
#include "vec_math.h"

/* Running extremum: .f for floating inputs, .i for integral and bool ones. */
typedef yt__reduce_acc acc;

/* Contiguous rows are folded a BLOCK at a time into PARTIALS independent extrema, so the loop has
 * no serial dependency and vectorises. Loops of unknown length carry `omp simd`: at -O2 GCC
 * vectorises only loops whose trip count the vector width divides. */
#define PARTIALS 16
#define BLOCK    (4 * PARTIALS)

/* ---------------------------------------------------------------- comparisons */

/* The better of best and v (larger for max, smaller for min); once a NaN is seen it stays. */
YT_ALWAYS_INLINE double
pick(double best, double v, bool min)
{
    return (min ? v < best : v > best) || v != v ? v : best;
}

YT_ALWAYS_INLINE float
pick_f32(float best, float v, bool min)
{
    return (min ? v < best : v > best) || v != v ? v : best;
}

/* pick() for loops that do not vectorise: a compare-and-blend, where GCC branches on pick's
 * comparison, and on random data half of those branches early in a row mispredict (amax over
 * dim 1 of [16384, 16] f32: 49 ns a row). */
YT_ALWAYS_INLINE double
pick_scalar(double best, double v, bool min)
{
    __m128d b = _mm_set_sd(best), x = _mm_set_sd(v);
    __m128d better = min ? _mm_cmp_sd(x, b, _CMP_LT_OQ) : _mm_cmp_sd(x, b, _CMP_GT_OQ);
    __m128d take = _mm_or_pd(better, _mm_cmp_sd(x, x, _CMP_UNORD_Q));
    return _mm_cvtsd_f64(_mm_blendv_pd(b, x, take));
}

YT_ALWAYS_INLINE int64_t
pick_i(int64_t best, int64_t v, bool min)
{
    return (min ? v < best : v > best) ? v : best;
}

/* ---------------------------------------------------------------- typed loops */

/* f64 rows as f32 ones (row_f32): vector max/min, which drop NaN, plus a mask of the NaNs seen
 * (over dim 1 of [4096, 64], one thread: 93 -> 33 us; torch 37). */
YT_ALWAYS_INLINE void
row_f64(acc *best, const char *x, int64_t n, int64_t stride, bool min)
{
    double b = best->f;
    int64_t i = 0;
    if (stride == sizeof(double) && n >= 4) {
        const double *p = (const double *)x;
        __m256d a[4], nan = _mm256_setzero_pd();
        for (int k = 0; k < 4; k++)
            a[k] = _mm256_set1_pd(min ? INFINITY : -INFINITY);
        for (; i + 16 <= n; i += 16) {
            _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
            {
                __m256d v = _mm256_loadu_pd(p + i + 4 * k);
                a[k] = min ? _mm256_min_pd(a[k], v) : _mm256_max_pd(a[k], v);
                nan = _mm256_or_pd(nan, _mm256_cmp_pd(v, v, _CMP_UNORD_Q));
            }
        }
        for (; i + 4 <= n; i += 4) {
            __m256d v = _mm256_loadu_pd(p + i);
            a[0] = min ? _mm256_min_pd(a[0], v) : _mm256_max_pd(a[0], v);
            nan = _mm256_or_pd(nan, _mm256_cmp_pd(v, v, _CMP_UNORD_Q));
        }
        __m256d m = min ? _mm256_min_pd(_mm256_min_pd(a[0], a[1]), _mm256_min_pd(a[2], a[3]))
                        : _mm256_max_pd(_mm256_max_pd(a[0], a[1]), _mm256_max_pd(a[2], a[3]));
        __m128d h = min ? _mm_min_pd(_mm256_castpd256_pd128(m), _mm256_extractf128_pd(m, 1))
                        : _mm_max_pd(_mm256_castpd256_pd128(m), _mm256_extractf128_pd(m, 1));
        h = min ? _mm_min_sd(h, _mm_unpackhi_pd(h, h)) : _mm_max_sd(h, _mm_unpackhi_pd(h, h));
        b = pick_scalar(b, _mm256_movemask_pd(nan) ? NAN : _mm_cvtsd_f64(h), min);
    }
    for (; i < n; i++)
        b = pick_scalar(b, *(const double *)(x + i * stride), min);
    best->f = b;
}

/* f32 rows: vector max/min (which drop NaN) plus a mask of the NaNs seen, which wins at the end. */
YT_ALWAYS_INLINE void
row_f32(acc *best, const char *x, int64_t n, int64_t stride, bool min)
{
    double b = best->f;
    int64_t i = 0;
    if (stride == sizeof(float) && n >= 8) {
        const float *p = (const float *)x;
        __m256 a[4], nan = _mm256_setzero_ps();
        for (int k = 0; k < 4; k++)
            a[k] = _mm256_set1_ps(min ? INFINITY : -INFINITY);
        for (; i + 32 <= n; i += 32) {
            /* unrolled, or GCC keeps a[] in memory: a store and reload per vector */
            _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
            {
                __m256 v = _mm256_loadu_ps(p + i + 8 * k);
                a[k] = min ? _mm256_min_ps(a[k], v) : _mm256_max_ps(a[k], v);
                nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
            }
        }
        /* short rows, and the rest of long ones, a vector at a time */
        for (; i + 8 <= n; i += 8) {
            __m256 v = _mm256_loadu_ps(p + i);
            a[0] = min ? _mm256_min_ps(a[0], v) : _mm256_max_ps(a[0], v);
            nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
        }
        __m256 m = min ? _mm256_min_ps(_mm256_min_ps(a[0], a[1]), _mm256_min_ps(a[2], a[3]))
                       : _mm256_max_ps(_mm256_max_ps(a[0], a[1]), _mm256_max_ps(a[2], a[3]));
        float r = min ? yt__hmin8(m) : yt__hmax8(m);
        b = pick_scalar(b, _mm256_movemask_ps(nan) ? NAN : r, min);
    }
    for (; i < n; i++)
        b = pick_scalar(b, *(const float *)(x + i * stride), min);
    best->f = b;
}

YT_ALWAYS_INLINE void
row_f16(acc *best, const char *x, int64_t n, int64_t stride, bool min)
{
    double b = best->f;
    for (int64_t i = 0; i < n; i++)
        b = pick_scalar(b, yt__f16_to_f32(*(const uint16_t *)(x + i * stride)), min);
    best->f = b;
}

YT_ALWAYS_INLINE void
row_bf16(acc *best, const char *x, int64_t n, int64_t stride, bool min)
{
    double b = best->f;
    for (int64_t i = 0; i < n; i++)
        b = pick_scalar(b, yt__bf16_to_f32(*(const uint16_t *)(x + i * stride)), min);
    best->f = b;
}

/* One loop for every integral dtype; `size` and `is_signed` are constants after inlining. bool is
 * one byte holding 0 or 1: its max (or) and min (and) are the u8 ones. */
YT_ALWAYS_INLINE int64_t
load_int(const char *x, int size, bool is_signed)
{
    switch (size) {
    case 1:
        return is_signed ? *(const int8_t *)x : *(const uint8_t *)x;
    case 2:
        return *(const int16_t *)x;
    case 4:
        return *(const int32_t *)x;
    default:
        return *(const int64_t *)x;
    }
}

YT_ALWAYS_INLINE void
row_int(acc *best, const char *x, int64_t n, int64_t stride, bool min, int size, bool is_signed)
{
    int64_t b = best->i;
    for (int64_t i = 0; i < n; i++)
        b = pick_i(b, load_int(x + i * stride, size, is_signed), min);
    best->i = b;
}

YT_ALWAYS_INLINE void
rows_f64(acc *best, const char *x, int64_t n, int64_t stride, bool min)
{
    if (stride == sizeof(double)) {
        const double *p = (const double *)x;
#pragma omp simd
        for (int64_t j = 0; j < n; j++)
            best[j].f = pick(best[j].f, p[j], min);
        return;
    }
    for (int64_t j = 0; j < n; j++)
        best[j].f = pick_scalar(best[j].f, *(const double *)(x + j * stride), min);
}

YT_ALWAYS_INLINE void
rows_f32(acc *best, const char *x, int64_t n, int64_t stride, bool min)
{
    if (stride == sizeof(float)) {
        const float *p = (const float *)x;
#pragma omp simd
        for (int64_t j = 0; j < n; j++)
            best[j].f = pick(best[j].f, p[j], min);
        return;
    }
    for (int64_t j = 0; j < n; j++)
        best[j].f = pick_scalar(best[j].f, *(const float *)(x + j * stride), min);
}

YT_ALWAYS_INLINE void
rows_f16(acc *best, const char *x, int64_t n, int64_t stride, bool min)
{
    for (int64_t j = 0; j < n; j++)
        best[j].f =
            pick_scalar(best[j].f, yt__f16_to_f32(*(const uint16_t *)(x + j * stride)), min);
}

YT_ALWAYS_INLINE void
rows_bf16(acc *best, const char *x, int64_t n, int64_t stride, bool min)
{
    for (int64_t j = 0; j < n; j++)
        best[j].f =
            pick_scalar(best[j].f, yt__bf16_to_f32(*(const uint16_t *)(x + j * stride)), min);
}

YT_ALWAYS_INLINE void
rows_int(acc *best, const char *x, int64_t n, int64_t stride, bool min, int size, bool is_signed)
{
    for (int64_t j = 0; j < n; j++)
        best[j].i = pick_i(best[j].i, load_int(x + j * stride, size, is_signed), min);
}

/* ---------------------------------------------------------------- instances */

/* The max and min instances of each loop, as plain functions the driver can point to. */
#define INSTANCE(name, call)                                                                       \
    static void name##_max(acc *a, const char *x, int64_t n, int64_t s)                            \
    {                                                                                              \
        call(a, x, n, s, false);                                                                   \
    }                                                                                              \
    static void name##_min(acc *a, const char *x, int64_t n, int64_t s)                            \
    {                                                                                              \
        call(a, x, n, s, true);                                                                    \
    }

#define ROW_U8(a, x, n, s, m)   row_int(a, x, n, s, m, 1, false)
#define ROW_I8(a, x, n, s, m)   row_int(a, x, n, s, m, 1, true)
#define ROW_I16(a, x, n, s, m)  row_int(a, x, n, s, m, 2, true)
#define ROW_I32(a, x, n, s, m)  row_int(a, x, n, s, m, 4, true)
#define ROW_I64(a, x, n, s, m)  row_int(a, x, n, s, m, 8, true)
#define ROWS_U8(a, x, n, s, m)  rows_int(a, x, n, s, m, 1, false)
#define ROWS_I8(a, x, n, s, m)  rows_int(a, x, n, s, m, 1, true)
#define ROWS_I16(a, x, n, s, m) rows_int(a, x, n, s, m, 2, true)
#define ROWS_I32(a, x, n, s, m) rows_int(a, x, n, s, m, 4, true)
#define ROWS_I64(a, x, n, s, m) rows_int(a, x, n, s, m, 8, true)

INSTANCE(row_f64, row_f64)
INSTANCE(row_f32, row_f32)
INSTANCE(row_f16, row_f16)
INSTANCE(row_bf16, row_bf16)
INSTANCE(row_u8, ROW_U8)
INSTANCE(row_i8, ROW_I8)
INSTANCE(row_i16, ROW_I16)
INSTANCE(row_i32, ROW_I32)
INSTANCE(row_i64, ROW_I64)
INSTANCE(rows_f64, rows_f64)
INSTANCE(rows_f32, rows_f32)
INSTANCE(rows_f16, rows_f16)
INSTANCE(rows_bf16, rows_bf16)
INSTANCE(rows_u8, ROWS_U8)
INSTANCE(rows_i8, ROWS_I8)
INSTANCE(rows_i16, ROWS_I16)
INSTANCE(rows_i32, ROWS_I32)
INSTANCE(rows_i64, ROWS_I64)

/* Short f64 rows 4 at a time (reduce_rows4d.h; over dim 1 of [16384, 16], one thread: 92 -> 33 us,
 * torch 53). */
static bool
row_batch_f64_max(acc *accs, const char *x, int64_t count, int64_t row_stride, int64_t n,
                  int64_t stride)
{
    return yt__fold_rows4(accs, x, count, row_stride, n, stride, YT_ROWS4D_MAX, false);
}

static bool
row_batch_f64_min(acc *accs, const char *x, int64_t count, int64_t row_stride, int64_t n,
                  int64_t stride)
{
    return yt__fold_rows4(accs, x, count, row_stride, n, stride, YT_ROWS4D_MIN, false);
}

/* f32 rows up to F32_BATCH_LONGEST the same way, in double lanes (exact: every float is a
 * double); longer ones scan faster alone, in float. Over dim 1, one thread, across the rows
 * (under 12 elements) or row by row -> 4 at a time (bench/ab.sh amax_dim1): [65536, 4] 170 -> 78
 * us, [32768, 8] 157 -> 53, [16384, 16] 74 -> 40, [8192, 32] 37 -> 34; [4096, 64] 23 -> 30 and
 * [2048, 128] 18 -> 30 stay alone. */
enum { F32_BATCH_LONGEST = 32 };

static bool
row_batch_f32_max(acc *accs, const char *x, int64_t count, int64_t row_stride, int64_t n,
                  int64_t stride)
{
    return n <= F32_BATCH_LONGEST &&
           yt__fold_rows4(accs, x, count, row_stride, n, stride, YT_ROWS4D_MAX, true);
}

static bool
row_batch_f32_min(acc *accs, const char *x, int64_t count, int64_t row_stride, int64_t n,
                  int64_t stride)
{
    return n <= F32_BATCH_LONGEST &&
           yt__fold_rows4(accs, x, count, row_stride, n, stride, YT_ROWS4D_MIN, true);
}

/* Starting values: below (max) or above (min) every element. */
static void
init_max(acc *v, int64_t n, bool floating)
{
    for (int64_t j = 0; j < n; j++) {
        if (floating)
            v[j].f = -INFINITY;
        else
            v[j].i = INT64_MIN;
    }
}

static void
init_min(acc *v, int64_t n, bool floating)
{
    for (int64_t j = 0; j < n; j++) {
        if (floating)
            v[j].f = INFINITY;
        else
            v[j].i = INT64_MAX;
    }
}

static void
combine_max(acc *total, const acc *part, int64_t n, bool floating)
{
    for (int64_t j = 0; j < n; j++) {
        if (floating)
            total[j].f = pick(total[j].f, part[j].f, false);
        else
            total[j].i = pick_i(total[j].i, part[j].i, false);
    }
}

static void
combine_min(acc *total, const acc *part, int64_t n, bool floating)
{
    for (int64_t j = 0; j < n; j++) {
        if (floating)
            total[j].f = pick(total[j].f, part[j].f, true);
        else
            total[j].i = pick_i(total[j].i, part[j].i, true);
    }
}

static yt__reduce_loops
loops_for(yt_dtype dtype, bool min)
{
    yt__reduce_loops l = {.init = min ? init_min : init_max,
                          .combine = min ? combine_min : combine_max,
                          .floating = yt_dtype_is_floating(dtype),
                          .divisor = 1.0, /* x / 1.0 == x: stores are exact */
                          .short_rows_across = true};
    switch (dtype) {
    case YT_DTYPE_F64:
        l.row = min ? row_f64_min : row_f64_max;
        l.rows = min ? rows_f64_min : rows_f64_max;
        l.row_batch = min ? row_batch_f64_min : row_batch_f64_max;
        break;
    case YT_DTYPE_F32:
        l.row = min ? row_f32_min : row_f32_max;
        l.rows = min ? rows_f32_min : rows_f32_max;
        l.row_batch = min ? row_batch_f32_min : row_batch_f32_max;
        break;
    case YT_DTYPE_F16:
        l.row = min ? row_f16_min : row_f16_max;
        l.rows = min ? rows_f16_min : rows_f16_max;
        break;
    case YT_DTYPE_BF16:
        l.row = min ? row_bf16_min : row_bf16_max;
        l.rows = min ? rows_bf16_min : rows_bf16_max;
        break;
    case YT_DTYPE_I64:
        l.row = min ? row_i64_min : row_i64_max;
        l.rows = min ? rows_i64_min : rows_i64_max;
        break;
    case YT_DTYPE_I32:
        l.row = min ? row_i32_min : row_i32_max;
        l.rows = min ? rows_i32_min : rows_i32_max;
        break;
    case YT_DTYPE_I16:
        l.row = min ? row_i16_min : row_i16_max;
        l.rows = min ? rows_i16_min : rows_i16_max;
        break;
    case YT_DTYPE_I8:
        l.row = min ? row_i8_min : row_i8_max;
        l.rows = min ? rows_i8_min : rows_i8_max;
        break;
    default: /* u8, bool */
        l.row = min ? row_u8_min : row_u8_max;
        l.rows = min ? rows_u8_min : rows_u8_max;
        break;
    }
    return l;
}

/* ---------------------------------------------------------------- kernels */

static yt_status
extremum(const char *op, yt_tensor *result, yt_tensor *self, const int64_t *dim, int dim_len,
         bool min)
{
    bool mask[YT_MAX_DIM];
    yt__reduce_mask(mask, self->dim, dim, dim_len);
    for (int i = 0; i < self->dim; i++)
        if (mask[i] && self->sizes[i] == 0)
            return yt__fail_status(
                YT_ERR_SHAPE,
                "%s: cannot reduce over a zero-size dimension (self.size(%d)=0): the result has "
                "no identity; give a dim that is not empty",
                op, i);
    if (result->numel == 0)
        return YT_OK;
    yt__reduce_loops loops = loops_for(self->dtype, min);
    yt__reduce_run(result, self, dim, dim_len, &loops);
    return YT_OK;
}

yt_status
yt__cpu_amax(yt_tensor *result, yt_tensor *self, const int64_t *dim, int dim_len, bool keepdim)
{
    (void)keepdim; /* the result's shape has it; its memory order does not change */
    return extremum("amax", result, self, dim, dim_len, false);
}

yt_status
yt__cpu_amin(yt_tensor *result, yt_tensor *self, const int64_t *dim, int dim_len, bool keepdim)
{
    (void)keepdim;
    return extremum("amin", result, self, dim, dim_len, true);
}

/* all = min and any = max over a bool copy (nonzero, NaN included, is true); over nothing they
 * are true and false. */
static yt_status
logical(yt_tensor *result, yt_tensor *self, const int64_t *dim, int dim_len, bool all)
{
    if (result->numel == 0)
        return YT_OK;
    if (self->numel == 0) {
        acc identity[YT_REDUCE_CHUNK];
        for (int64_t j = 0; j < YT_REDUCE_CHUNK; j++)
            identity[j].u = all;
        for (int64_t i = 0; i < result->numel; i += YT_REDUCE_CHUNK) {
            int64_t n = result->numel - i < YT_REDUCE_CHUNK ? result->numel - i : YT_REDUCE_CHUNK;
            yt__reduce_store(result, i, 1, identity, n, 1.0);
        }
        return YT_OK;
    }
    yt_tensor *b = self->dtype == YT_DTYPE_BOOL ? self : yt__cast_copy(self, YT_DTYPE_BOOL);
    if (b == NULL)
        return yt__last_status();
    yt__reduce_loops loops = loops_for(YT_DTYPE_BOOL, all);
    yt__reduce_run(result, b, dim, dim_len, &loops);
    yt__release_cast(b, self);
    return YT_OK;
}

yt_status
yt__cpu_all(yt_tensor *result, yt_tensor *self)
{
    return logical(result, self, NULL, 0, true);
}

yt_status
yt__cpu_all_dim(yt_tensor *result, yt_tensor *self, int64_t dim, bool keepdim)
{
    (void)keepdim;
    return logical(result, self, &dim, self->dim == 0 ? 0 : 1, true);
}

yt_status
yt__cpu_any(yt_tensor *result, yt_tensor *self)
{
    return logical(result, self, NULL, 0, false);
}

yt_status
yt__cpu_any_dim(yt_tensor *result, yt_tensor *self, int64_t dim, bool keepdim)
{
    (void)keepdim;
    return logical(result, self, &dim, self->dim == 0 ? 0 : 1, false);
}

/* max() and min() without a dim: amax/amin over everything, an error when self is empty. */
yt_status
yt__cpu_max(yt_tensor *result, yt_tensor *self)
{
    return extremum("max", result, self, NULL, 0, false);
}

yt_status
yt__cpu_min(yt_tensor *result, yt_tensor *self)
{
    return extremum("min", result, self, NULL, 0, true);
}
