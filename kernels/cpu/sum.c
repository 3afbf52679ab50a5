/* sum, sum.dim, mean and mean.dim on the CPU.
 *
 * The plan and the threaded driver are shared with amax (reduce_plan.h): an inner reduction
 * (innermost dim reduced) runs `row` per output element over contiguous rows; an outer one
 * (innermost dim kept) adds whole rows into a row of accumulators with `rows`.
 * Floating inputs accumulate in double, integral and bool inputs in wrapping 64-bit integers.
 * When `dtype` is given the input is converted to it first, as PyTorch does. */
/* AVX2 and FMA even in builds with other -march flags (the ASan stage): the library's baseline
 * is x86-64-v3, and vec_math.h uses their intrinsics. */
#pragma GCC target("avx2,fma")

#include <string.h>

#include "reduce_plan.h"
#include "reduce_rows4d.h"
#include "reduce_rows8.h"
#include "vec_math.h"

/* Accumulator: .f for floating inputs, .u (wrapping) for integral and bool ones. */
typedef yt__reduce_acc acc;

/* ---------------------------------------------------------------- typed loops */

/* Contiguous f64 rows: four 4-lane sums, then 4 elements at a time, then the last 0-3. (Blocks of
 * 64 into 16 partials left rows' tails of up to 63 elements to a serial scalar sum: over dim 1
 * of [1024, 1000], one thread, 114 -> 83 us; torch 89.) */
static void
row_f64(acc *sum, const char *x, int64_t n, int64_t stride)
{
    double s = 0.0;
    int64_t i = 0;
    if (stride == sizeof(double) && n >= 4) {
        const double *p = (const double *)x;
        __m256d a[4];
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++)
            a[k] = _mm256_setzero_pd();
        for (; i + 16 <= n; i += 16) {
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++)
                a[k] = _mm256_add_pd(a[k], _mm256_loadu_pd(p + i + 4 * k));
        }
        for (; i + 4 <= n; i += 4)
            a[0] = _mm256_add_pd(a[0], _mm256_loadu_pd(p + i));
        s = yt__hsum4d(_mm256_add_pd(_mm256_add_pd(a[0], a[1]), _mm256_add_pd(a[2], a[3])));
    }
    for (; i < n; i++)
        s += *(const double *)(x + i * stride);
    sum->f += s;
}

/* f32 rows add in float within runs of F32_RUN elements (32 float partials, each taking 8
 * elements per run: no worse than a pairwise sum over so few terms) and in double across runs.
 * Widening every element to double halved the vector width and made the loop compute-bound at
 * ~0.4x of memory speed. */
#define F32_RUN 1024

/* Adds the runs of `streams` (1 or 2) pieces of a row, n elements each (n a multiple of 32)
 * starting at p and p + n, read in step, into sums[0..streams). Inlined with `streams` a
 * constant, so the accumulators stay in registers. */
YT_ALWAYS_INLINE void
runs_f32(double *sums, const float *p, int64_t n, int streams)
{
    for (int64_t i = 0; i < n;) {
        int64_t run = n - i < F32_RUN ? n - i : F32_RUN;
        __m256 a[2][4];
        for (int k = 0; k < 2; k++)
            for (int v = 0; v < 4; v++)
                a[k][v] = _mm256_setzero_ps();
        for (int64_t r = i; r < i + run; r += 32) {
#pragma GCC unroll 2
            for (int k = 0; k < streams; k++) {
#pragma GCC unroll 4
                for (int v = 0; v < 4; v++)
                    a[k][v] = _mm256_add_ps(a[k][v], _mm256_loadu_ps(p + k * n + r + 8 * v));
            }
        }
        for (int k = 0; k < streams; k++)
            sums[k] += yt__hsum8(
                _mm256_add_ps(_mm256_add_ps(a[k][0], a[k][1]), _mm256_add_ps(a[k][2], a[k][3])));
        i += run;
    }
}

/* Contiguous rows of TWO_STREAMS elements or more are read as two halves in step: two streams
 * keep more lines in flight from memory than one (a plain C loop over 4096 x 4096 f32, one
 * thread: 33 -> 37 GB/s, as fast as torch.sum). Shorter rows stay one stream: rows that follow
 * each other in memory are then one stream across rows, where halves would restart two every
 * row (sum over dim 1 of 4096 x 4096: 1.6 ms as one stream, 3.2 ms as halves). A software
 * prefetch 2 KiB ahead, the earlier answer, cost a third (1.6 -> 2.2 ms). */
enum { TWO_STREAMS = 32768 };

static void
row_f32(acc *sum, const char *x, int64_t n, int64_t stride)
{
    double s[2] = {0.0, 0.0};
    int64_t i = 0;
    if (stride == sizeof(float) && n >= TWO_STREAMS) {
        i = n / 64 * 64;
        runs_f32(s, (const float *)x, i / 2, 2);
    } else if (stride == sizeof(float) && n >= 32) {
        i = n / 32 * 32;
        runs_f32(s, (const float *)x, i, 1);
    }
    if (stride == sizeof(float) && n - i >= 8) {
        /* short rows, and the rest of long ones: a vector at a time (sum over dim 1 of
         * [16384, 16], one thread: 197 us one element at a time in double, 99 us so; torch 75) */
        __m256 a = _mm256_loadu_ps((const float *)x + i);
        for (i += 8; i + 8 <= n; i += 8)
            a = _mm256_add_ps(a, _mm256_loadu_ps((const float *)x + i));
        s[1] += yt__hsum8(a);
    }
    for (; i < n; i++)
        s[0] += *(const float *)(x + i * stride);
    sum->f += s[0] + s[1];
}

static void
row_f16(acc *sum, const char *x, int64_t n, int64_t stride)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++)
        s += yt__f16_to_f32(*(const uint16_t *)(x + i * stride));
    sum->f += s;
}

static void
row_bf16(acc *sum, const char *x, int64_t n, int64_t stride)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++)
        s += yt__bf16_to_f32(*(const uint16_t *)(x + i * stride));
    sum->f += s;
}

/* bool is stored as one byte holding 0 or 1, so it sums like u8. */
static void
row_u8(acc *sum, const char *x, int64_t n, int64_t stride)
{
    uint64_t s = 0;
    for (int64_t i = 0; i < n; i++)
        s += *(const uint8_t *)(x + i * stride);
    sum->u += s;
}

static void
row_i8(acc *sum, const char *x, int64_t n, int64_t stride)
{
    uint64_t s = 0;
    for (int64_t i = 0; i < n; i++)
        s += (uint64_t) * (const int8_t *)(x + i * stride);
    sum->u += s;
}

static void
row_i16(acc *sum, const char *x, int64_t n, int64_t stride)
{
    uint64_t s = 0;
    for (int64_t i = 0; i < n; i++)
        s += (uint64_t) * (const int16_t *)(x + i * stride);
    sum->u += s;
}

static void
row_i32(acc *sum, const char *x, int64_t n, int64_t stride)
{
    uint64_t s = 0;
    for (int64_t i = 0; i < n; i++)
        s += (uint64_t) * (const int32_t *)(x + i * stride);
    sum->u += s;
}

static void
row_i64(acc *sum, const char *x, int64_t n, int64_t stride)
{
    uint64_t s = 0;
    for (int64_t i = 0; i < n; i++)
        s += (uint64_t) * (const int64_t *)(x + i * stride);
    sum->u += s;
}

static void
rows_f64(acc *sums, const char *x, int64_t n, int64_t stride)
{
    if (stride == sizeof(double)) {
        const double *p = (const double *)x;
#pragma omp simd
        for (int64_t j = 0; j < n; j++)
            sums[j].f += p[j];
        return;
    }
    for (int64_t j = 0; j < n; j++)
        sums[j].f += *(const double *)(x + j * stride);
}

/* Rows of up to YT_ROWS8_MAX floats, 8 at a time (reduce_rows8.h). Sum over dim 1, f32, one
 * thread, one row at a time -> 8 at a time: [16384, 16] 79.7 -> 28.9 us (torch 75.7), [8192, 33]
 * 47.5 -> 21.3 us, [4096, 64] 24.1 -> 15.8 us. */
static bool
row_batch_f32(acc *sums, const char *x, int64_t count, int64_t row_stride, int64_t n,
              int64_t stride)
{
    return yt__fold_rows8_f32(sums, x, count, row_stride, n, stride, YT_ROWS8_PLAIN);
}

/* f64 rows up to YT_ROWS4D_LONGEST, 4 at a time (over dim 1, one thread: [16384, 16] 120 -> 25 us,
 * [4096, 64] 100 -> 26 us; torch 68 and 28). */
static bool
row_batch_f64(acc *sums, const char *x, int64_t count, int64_t row_stride, int64_t n,
              int64_t stride)
{
    return yt__fold_rows4(sums, x, count, row_stride, n, stride, YT_ROWS4D_SUM, false);
}

static void
rows_f32(acc *sums, const char *x, int64_t n, int64_t stride)
{
    if (stride == sizeof(float)) {
        const float *p = (const float *)x;
#pragma omp simd
        for (int64_t j = 0; j < n; j++)
            sums[j].f += p[j];
        return;
    }
    for (int64_t j = 0; j < n; j++)
        sums[j].f += *(const float *)(x + j * stride);
}

/* f32 columns down a run of m rows (the outer reduction): 64 columns at a time held in float
 * registers over runs of F32_RUN rows, then added into the double accumulators, instead of a
 * load, widen, add and store of a double accumulator per element and row. */
#ifndef ROWS_RUN
#define ROWS_RUN 16 /* rows per register run: few enough streams for the prefetchers */
#endif

static void
rows_block_f32(acc *sums, const char *x, int64_t n, int64_t stride, int64_t m, int64_t row_stride)
{
    if (stride != sizeof(float)) {
        for (int64_t r = 0; r < m; r++)
            rows_f32(sums, x + r * row_stride, n, stride);
        return;
    }
    for (int64_t r0 = 0; r0 < m; r0 += ROWS_RUN) {
        int64_t rn = m - r0 < ROWS_RUN ? m - r0 : ROWS_RUN;
        const char *xb = x + r0 * row_stride;
        int64_t j = 0;
        for (; j + 64 <= n; j += 64) {
            __m256 a[8];
            for (int k = 0; k < 8; k++)
                a[k] = _mm256_setzero_ps();
            const char *p = xb + j * (int64_t)sizeof(float);
            for (int64_t r = 0; r < rn; r++, p += row_stride)
                for (int k = 0; k < 8; k++)
                    a[k] = _mm256_add_ps(a[k], _mm256_loadu_ps((const float *)p + 8 * k));
            float part[64];
            for (int k = 0; k < 8; k++)
                _mm256_storeu_ps(part + 8 * k, a[k]);
            for (int k = 0; k < 64; k++)
                sums[j + k].f += part[k];
        }
        for (int64_t r = 0; r < rn && j < n; r++)
            rows_f32(sums + j, xb + r * row_stride + j * (int64_t)sizeof(float), n - j, stride);
    }
}

static void
rows_f16(acc *sums, const char *x, int64_t n, int64_t stride)
{
    for (int64_t j = 0; j < n; j++)
        sums[j].f += yt__f16_to_f32(*(const uint16_t *)(x + j * stride));
}

static void
rows_bf16(acc *sums, const char *x, int64_t n, int64_t stride)
{
    for (int64_t j = 0; j < n; j++)
        sums[j].f += yt__bf16_to_f32(*(const uint16_t *)(x + j * stride));
}

static void
rows_u8(acc *sums, const char *x, int64_t n, int64_t stride)
{
    for (int64_t j = 0; j < n; j++)
        sums[j].u += *(const uint8_t *)(x + j * stride);
}

static void
rows_i8(acc *sums, const char *x, int64_t n, int64_t stride)
{
    for (int64_t j = 0; j < n; j++)
        sums[j].u += (uint64_t) * (const int8_t *)(x + j * stride);
}

static void
rows_i16(acc *sums, const char *x, int64_t n, int64_t stride)
{
    for (int64_t j = 0; j < n; j++)
        sums[j].u += (uint64_t) * (const int16_t *)(x + j * stride);
}

static void
rows_i32(acc *sums, const char *x, int64_t n, int64_t stride)
{
    for (int64_t j = 0; j < n; j++)
        sums[j].u += (uint64_t) * (const int32_t *)(x + j * stride);
}

static void
rows_i64(acc *sums, const char *x, int64_t n, int64_t stride)
{
    for (int64_t j = 0; j < n; j++)
        sums[j].u += (uint64_t) * (const int64_t *)(x + j * stride);
}

static void
combine(acc *total, const acc *part, int64_t n, bool floating)
{
    for (int64_t j = 0; j < n; j++) {
        if (floating)
            total[j].f += part[j].f;
        else
            total[j].u += part[j].u;
    }
}

/* The empty sum: 0.0 and 0 are both all-zero bytes. */
static void
zero_run(acc *v, int64_t n, bool floating)
{
    (void)floating;
    memset(v, 0, (size_t)n * sizeof *v);
}

static yt__reduce_loops
sum_loops(yt__reduce_row_fn row, yt__reduce_rows_fn rows, bool floating, double divisor)
{
    return (yt__reduce_loops){.row = row,
                              .rows = rows,
                              .init = zero_run,
                              .combine = combine,
                              .floating = floating,
                              .divisor = divisor,
                              .short_rows_across = true};
}

static yt__reduce_loops
loops_for(yt_dtype dtype, double divisor)
{
    if (dtype == YT_DTYPE_F32) {
        yt__reduce_loops l = sum_loops(row_f32, rows_f32, true, divisor);
        l.rows_block = rows_block_f32;
        l.row_batch = row_batch_f32;
        return l;
    }
    switch (dtype) {
    case YT_DTYPE_F64: {
        yt__reduce_loops l = sum_loops(row_f64, rows_f64, true, divisor);
        l.row_batch = row_batch_f64;
        return l;
    }
    case YT_DTYPE_F32:
        return sum_loops(row_f32, rows_f32, true, divisor);
    case YT_DTYPE_F16:
        return sum_loops(row_f16, rows_f16, true, divisor);
    case YT_DTYPE_BF16:
        return sum_loops(row_bf16, rows_bf16, true, divisor);
    case YT_DTYPE_I64:
        return sum_loops(row_i64, rows_i64, false, divisor);
    case YT_DTYPE_I32:
        return sum_loops(row_i32, rows_i32, false, divisor);
    case YT_DTYPE_I16:
        return sum_loops(row_i16, rows_i16, false, divisor);
    case YT_DTYPE_I8:
        return sum_loops(row_i8, rows_i8, false, divisor);
    default: /* u8, bool */
        return sum_loops(row_u8, rows_u8, false, divisor);
    }
}

/* ---------------------------------------------------------------- kernels */

static yt_status
reduce_sum(const char *op, yt_tensor *result, yt_tensor *self, const int64_t *dim, int dim_len,
           yt_dtype dtype, bool mean)
{
    bool floating = yt_dtype_is_floating(result->dtype);
    if (mean && !floating)
        return yt__fail_status(
            YT_ERR_DTYPE, "%s: dtype %s is not a floating dtype (expected f16, bf16, f32, f64)", op,
            yt_dtype_name(result->dtype));
    /* A given dtype converts the input first (sum(x, dtype=i32) truncates each element); the
     * accumulator kind must match the result's kind. */
    bool cast = dtype != YT_DTYPE_NONE ? self->dtype != result->dtype
                                       : yt_dtype_is_floating(self->dtype) != floating;
    yt_tensor *src = cast ? yt__cast_copy(self, result->dtype) : self;
    if (src == NULL)
        return yt__last_status();

    double divisor = 1.0;
    if (mean) {
        bool mask[YT_MAX_DIM];
        yt__reduce_mask(mask, src->dim, dim, dim_len);
        int64_t count = 1;
        for (int i = 0; i < src->dim; i++)
            if (mask[i])
                count *= src->sizes[i];
        divisor = (double)count; /* 0 gives 0 / 0 = NaN, as in PyTorch */
    }
    if (result->numel > 0 && src->numel == 0) {
        /* reduced over a zero-size dim: every output is the empty sum */
        acc zeros[YT_REDUCE_CHUNK];
        memset(zeros, 0, sizeof zeros);
        for (int64_t i = 0; i < result->numel; i += YT_REDUCE_CHUNK) {
            int64_t n = result->numel - i < YT_REDUCE_CHUNK ? result->numel - i : YT_REDUCE_CHUNK;
            yt__reduce_store(result, i, 1, zeros, n, divisor);
        }
    } else if (result->numel > 0) {
        yt__reduce_loops loops = loops_for(src->dtype, divisor);
        yt__reduce_run(result, src, dim, dim_len, &loops);
    }
    yt__release_cast(src, self);
    return YT_OK;
}

yt_status
yt__cpu_sum(yt_tensor *result, yt_tensor *self, yt_dtype dtype)
{
    return reduce_sum("sum", result, self, NULL, 0, dtype, false);
}

yt_status
yt__cpu_sum_dim(yt_tensor *result, yt_tensor *self, const int64_t *dim, int dim_len, bool keepdim,
                yt_dtype dtype)
{
    (void)keepdim; /* the result's shape has it; its memory order does not change */
    return reduce_sum("sum", result, self, dim, dim_len, dtype, false);
}

yt_status
yt__cpu_mean(yt_tensor *result, yt_tensor *self, yt_dtype dtype)
{
    return reduce_sum("mean", result, self, NULL, 0, dtype, true);
}

yt_status
yt__cpu_mean_dim(yt_tensor *result, yt_tensor *self, const int64_t *dim, int dim_len, bool keepdim,
                 yt_dtype dtype)
{
    (void)keepdim;
    return reduce_sum("mean", result, self, dim, dim_len, dtype, true);
}
