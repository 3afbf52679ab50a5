/* prod and prod.dim_int on the CPU, through the reduction plan and driver shared with sum
 * (reduce_plan.h). f32 rows contiguous along the reduced dims multiply in f32 lanes, as PyTorch's
 * do (widened to double, the conversions bounded the loop: over dim 1 of [4096, 64], one thread,
 * 26.0 us against torch's 18.8; in f32, 14.4 against 18.7); the partial products of a row's chunks, other floating inputs
 * and other layouts multiply in double. Integral and bool inputs multiply in wrapping 64-bit
 * integers (the low bits of a signed product are the unsigned product's). When `dtype` is given
 * the input is converted to it first, as PyTorch does. The product over nothing is 1. */
/* AVX2 even in builds with other -march flags (the ASan stage), for the f32 row batches. */
#pragma GCC target("avx2,fma")

#include <immintrin.h>
#include <string.h>

#include "reduce_plan.h"
#include "reduce_rows4d.h"
#include "reduce_rows8.h"

typedef yt__reduce_acc acc;

/* ---------------------------------------------------------------- loads */

YT_ALWAYS_INLINE double
load_f(const char *x, yt_dtype d)
{
    switch (d) {
    case YT_DTYPE_F64:
        return *(const double *)x;
    case YT_DTYPE_F32:
        return *(const float *)x;
    case YT_DTYPE_F16:
        return yt__f16_to_f32(*(const uint16_t *)x);
    default:
        return yt__bf16_to_f32(*(const uint16_t *)x);
    }
}

YT_ALWAYS_INLINE uint64_t
load_u(const char *x, yt_dtype d)
{
    switch (d) {
    case YT_DTYPE_I64:
        return (uint64_t) * (const int64_t *)x;
    case YT_DTYPE_I32:
        return (uint64_t) * (const int32_t *)x;
    case YT_DTYPE_I16:
        return (uint64_t) * (const int16_t *)x;
    case YT_DTYPE_I8:
        return (uint64_t) * (const int8_t *)x;
    default: /* u8, bool */
        return *(const uint8_t *)x;
    }
}

/* ---------------------------------------------------------------- typed loops */

/* Four elements of a contiguous f64 row: the first `count` (1-4), the others 1. */
YT_ALWAYS_INLINE __m256d
load4_f64(const char *x, int64_t count)
{
    if (count == 4)
        return yt__rows4d_load(x, 0, false);
    const __m256i first = yt__rows4d_tail_mask(count); /* count < 4: the first count lanes */
    return _mm256_blendv_pd(_mm256_set1_pd(1.0), yt__rows4d_masked_load(x, first, false),
                            _mm256_castsi256_pd(first));
}

/* Contiguous f64 rows: 8 chains of 4 lanes, where the latency of a multiply would otherwise bound
 * the loop (over dim 1 of [1024, 1000] f32, then multiplied in double this way, one thread: 188 ->
 * 55 us; torch 55). The last 31 elements or fewer go into the chains too, 4 at a time, rather
 * than through one scalar chain (8 dependent multiplies a row for 1000 elements: [1024, 1000] f32,
 * bench/ab.sh, 55.5 -> 50.5 us; torch 44 us). */
YT_ALWAYS_INLINE double
row_vector_f64(const char *x, int64_t n)
{
    __m256d a[8];
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++)
        a[k] = _mm256_set1_pd(1.0);
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++)
            a[k] = _mm256_mul_pd(a[k], load4_f64(x + (i + 4 * k) * 8, 4));
    }
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++) {
        const int64_t rest = n - i - 4 * k;
        if (rest > 0)
            a[k] = _mm256_mul_pd(a[k], load4_f64(x + (i + 4 * k) * 8, rest < 4 ? rest : 4));
    }
    __m256d m = _mm256_mul_pd(_mm256_mul_pd(_mm256_mul_pd(a[0], a[1]), _mm256_mul_pd(a[2], a[3])),
                              _mm256_mul_pd(_mm256_mul_pd(a[4], a[5]), _mm256_mul_pd(a[6], a[7])));
    __m128d h = _mm_mul_pd(_mm256_castpd256_pd128(m), _mm256_extractf128_pd(m, 1));
    return _mm_cvtsd_f64(_mm_mul_sd(h, _mm_unpackhi_pd(h, h)));
}

/* Contiguous f32 rows in f32 lanes, as row_vector_f64 (8 chains, the last 63 elements or fewer 8
 * at a time, the last 1-7 through a masked load). */
YT_ALWAYS_INLINE float
row_vector_f32(const float *x, int64_t n)
{
    __m256 a[8];
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++)
        a[k] = _mm256_set1_ps(1.0f);
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++)
            a[k] = _mm256_mul_ps(a[k], _mm256_loadu_ps(x + i + 8 * k));
    }
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++) {
        const int64_t rest = n - i - 8 * k;
        if (rest > 0)
            a[k] = _mm256_mul_ps(a[k], rest >= 8 ? _mm256_loadu_ps(x + i + 8 * k)
                                                 : yt__load_tail8(x + i + 8 * k, rest, 1.0f));
    }
    __m256 m = _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(a[0], a[1]), _mm256_mul_ps(a[2], a[3])),
                             _mm256_mul_ps(_mm256_mul_ps(a[4], a[5]), _mm256_mul_ps(a[6], a[7])));
    __m128 h = _mm_mul_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_mul_ps(h, _mm_movehl_ps(h, h));
    return _mm_cvtss_f32(_mm_mul_ss(h, _mm_movehdup_ps(h)));
}

YT_ALWAYS_INLINE void
row_f(acc *p, const char *x, int64_t n, int64_t stride, yt_dtype d)
{
    if (stride == (int64_t)yt_dtype_size(d) && n >= 32 && d == YT_DTYPE_F32) {
        p->f *= row_vector_f32((const float *)x, n);
        return;
    }
    if (stride == (int64_t)yt_dtype_size(d) && n >= 32 && d == YT_DTYPE_F64) {
        p->f *= row_vector_f64(x, n);
        return;
    }
    double s = 1.0;
    for (int64_t i = 0; i < n; i++)
        s *= load_f(x + i * stride, d);
    p->f *= s;
}

YT_ALWAYS_INLINE void
row_u(acc *p, const char *x, int64_t n, int64_t stride, yt_dtype d)
{
    uint64_t s = 1;
    for (int64_t i = 0; i < n; i++)
        s *= load_u(x + i * stride, d);
    p->u *= s;
}

YT_ALWAYS_INLINE void
rows_f(acc *p, const char *x, int64_t n, int64_t stride, yt_dtype d)
{
    for (int64_t j = 0; j < n; j++)
        p[j].f *= load_f(x + j * stride, d);
}

YT_ALWAYS_INLINE void
rows_u(acc *p, const char *x, int64_t n, int64_t stride, yt_dtype d)
{
    for (int64_t j = 0; j < n; j++)
        p[j].u *= load_u(x + j * stride, d);
}

static void
row_f64(acc *p, const char *x, int64_t n, int64_t s)
{
    row_f(p, x, n, s, YT_DTYPE_F64);
}
static void
row_f32(acc *p, const char *x, int64_t n, int64_t s)
{
    row_f(p, x, n, s, YT_DTYPE_F32);
}
static void
row_f16(acc *p, const char *x, int64_t n, int64_t s)
{
    row_f(p, x, n, s, YT_DTYPE_F16);
}
static void
row_bf16(acc *p, const char *x, int64_t n, int64_t s)
{
    row_f(p, x, n, s, YT_DTYPE_BF16);
}
static void
row_i64(acc *p, const char *x, int64_t n, int64_t s)
{
    row_u(p, x, n, s, YT_DTYPE_I64);
}
static void
row_i32(acc *p, const char *x, int64_t n, int64_t s)
{
    row_u(p, x, n, s, YT_DTYPE_I32);
}
static void
row_i16(acc *p, const char *x, int64_t n, int64_t s)
{
    row_u(p, x, n, s, YT_DTYPE_I16);
}
static void
row_i8(acc *p, const char *x, int64_t n, int64_t s)
{
    row_u(p, x, n, s, YT_DTYPE_I8);
}
static void
row_u8(acc *p, const char *x, int64_t n, int64_t s)
{
    row_u(p, x, n, s, YT_DTYPE_U8);
}
static void
rows_f64(acc *p, const char *x, int64_t n, int64_t s)
{
    rows_f(p, x, n, s, YT_DTYPE_F64);
}
static void
rows_f32(acc *p, const char *x, int64_t n, int64_t s)
{
    rows_f(p, x, n, s, YT_DTYPE_F32);
}
static void
rows_f16(acc *p, const char *x, int64_t n, int64_t s)
{
    rows_f(p, x, n, s, YT_DTYPE_F16);
}
static void
rows_bf16(acc *p, const char *x, int64_t n, int64_t s)
{
    rows_f(p, x, n, s, YT_DTYPE_BF16);
}
static void
rows_i64(acc *p, const char *x, int64_t n, int64_t s)
{
    rows_u(p, x, n, s, YT_DTYPE_I64);
}
static void
rows_i32(acc *p, const char *x, int64_t n, int64_t s)
{
    rows_u(p, x, n, s, YT_DTYPE_I32);
}
static void
rows_i16(acc *p, const char *x, int64_t n, int64_t s)
{
    rows_u(p, x, n, s, YT_DTYPE_I16);
}
static void
rows_i8(acc *p, const char *x, int64_t n, int64_t s)
{
    rows_u(p, x, n, s, YT_DTYPE_I8);
}
static void
rows_u8(acc *p, const char *x, int64_t n, int64_t s)
{
    rows_u(p, x, n, s, YT_DTYPE_U8);
}

static void
init_one(acc *v, int64_t n, bool floating)
{
    for (int64_t j = 0; j < n; j++) {
        if (floating)
            v[j].f = 1.0;
        else
            v[j].u = 1;
    }
}

static void
combine(acc *total, const acc *part, int64_t n, bool floating)
{
    for (int64_t j = 0; j < n; j++) {
        if (floating)
            total[j].f *= part[j].f;
        else
            total[j].u *= part[j].u;
    }
}

/* ---------------------------------------------------------------- short rows, 4 at a time */

/* Contiguous f32 rows up to YT_ROWS8_MAX, 8 at a time in f32 lanes (reduce_rows8.h). */
static bool
row_batch_f32(acc *accs, const char *x, int64_t count, int64_t row_stride, int64_t n,
              int64_t stride)
{
    return yt__fold_rows8_f32(accs, x, count, row_stride, n, stride, YT_ROWS8_PRODUCT);
}

/* f64 rows up to YT_ROWS4D_LONGEST, 4 at a time (over dim 1, one thread: [16384, 16] 195 -> 25 us,
 * [4096, 64] 100 -> 26 us; torch 32 and 25). */
static bool
row_batch_f64(acc *accs, const char *x, int64_t count, int64_t row_stride, int64_t n,
              int64_t stride)
{
    return yt__fold_rows4(accs, x, count, row_stride, n, stride, YT_ROWS4D_PROD, false);
}

static yt__reduce_loops
loops_for(yt_dtype dtype)
{
    yt__reduce_loops l = {.init = init_one,
                          .combine = combine,
                          .floating = yt_dtype_is_floating(dtype),
                          .divisor = 1.0,
                          .short_rows_across = true};
    switch (dtype) {
    case YT_DTYPE_F64:
        l.row = row_f64, l.rows = rows_f64, l.row_batch = row_batch_f64;
        break;
    case YT_DTYPE_F32:
        l.row = row_f32, l.rows = rows_f32, l.row_batch = row_batch_f32;
        break;
    case YT_DTYPE_F16:
        l.row = row_f16, l.rows = rows_f16;
        break;
    case YT_DTYPE_BF16:
        l.row = row_bf16, l.rows = rows_bf16;
        break;
    case YT_DTYPE_I64:
        l.row = row_i64, l.rows = rows_i64;
        break;
    case YT_DTYPE_I32:
        l.row = row_i32, l.rows = rows_i32;
        break;
    case YT_DTYPE_I16:
        l.row = row_i16, l.rows = rows_i16;
        break;
    case YT_DTYPE_I8:
        l.row = row_i8, l.rows = rows_i8;
        break;
    default: /* u8, bool */
        l.row = row_u8, l.rows = rows_u8;
        break;
    }
    return l;
}

/* ---------------------------------------------------------------- kernels */

static yt_status
reduce_prod(yt_tensor *result, yt_tensor *self, const int64_t *dim, int dim_len, yt_dtype dtype)
{
    bool floating = yt_dtype_is_floating(result->dtype);
    bool cast = dtype != YT_DTYPE_NONE ? self->dtype != result->dtype
                                       : yt_dtype_is_floating(self->dtype) != floating;
    yt_tensor *src = cast ? yt__cast_copy(self, result->dtype) : self;
    if (src == NULL)
        return yt__last_status();
    if (result->numel > 0 && src->numel == 0) {
        acc ones[YT_REDUCE_CHUNK];
        init_one(ones, YT_REDUCE_CHUNK, floating);
        for (int64_t i = 0; i < result->numel; i += YT_REDUCE_CHUNK) {
            int64_t n = result->numel - i < YT_REDUCE_CHUNK ? result->numel - i : YT_REDUCE_CHUNK;
            yt__reduce_store(result, i, 1, ones, n, 1.0);
        }
    } else if (result->numel > 0) {
        yt__reduce_loops loops = loops_for(src->dtype);
        yt__reduce_run(result, src, dim, dim_len, &loops);
    }
    yt__release_cast(src, self);
    return YT_OK;
}

yt_status
yt__cpu_prod(yt_tensor *result, yt_tensor *self, yt_dtype dtype)
{
    return reduce_prod(result, self, NULL, 0, dtype);
}

yt_status
yt__cpu_prod_dim_int(yt_tensor *result, yt_tensor *self, int64_t dim, bool keepdim, yt_dtype dtype)
{
    (void)keepdim;
    return reduce_prod(result, self, &dim, self->dim > 0 ? 1 : 0, dtype);
}
