/* amax on the CPU: the largest element over `dim` (all dims when empty), NaN winning as in
 * PyTorch. A zero-size reduced dim is an error: the max of nothing is undefined.
 *
 * The plan and the threaded driver are shared with sum (reduce_plan.h): a tight loop per output
 * element when the innermost dim is reduced (`row`), or whole rows folded into a row of running
 * maxima when it is kept (`rows`). Every comparison is exact:
 * floating values are held in double (f32 rows are scanned in float), integral and bool ones in
 * int64, and the result has the input's dtype. */
#include <math.h>

#include "reduce_plan.h"

/* Running maximum: .f for floating inputs, .i for integral and bool ones. */
typedef yt__reduce_acc acc;

/* Contiguous rows are folded a BLOCK at a time into PARTIALS independent maxima, so the loop has
 * no serial dependency and vectorises. Loops of unknown length carry `omp simd`: at -O2 GCC
 * vectorises only loops whose trip count the vector width divides. */
#define PARTIALS 16
#define BLOCK    (4 * PARTIALS)

/* ---------------------------------------------------------------- typed loops */

/* max that lets NaN through: once a NaN is seen it stays. */
static inline double
max_nan(double best, double v)
{
    return v > best || v != v ? v : best;
}

static inline float
max_nan_f32(float best, float v)
{
    return v > best || v != v ? v : best;
}

static void
row_f64(acc *best, const char *x, int64_t n, int64_t stride)
{
    double b = best->f;
    int64_t i = 0;
    if (stride == sizeof(double) && n >= BLOCK) {
        const double *p = (const double *)x;
        double part[PARTIALS];
        for (int k = 0; k < PARTIALS; k++)
            part[k] = -INFINITY;
        for (; i + BLOCK <= n; i += BLOCK)
            for (int k = 0; k < PARTIALS; k++)
                part[k] = max_nan(
                    part[k], max_nan(max_nan(p[i + k], p[i + PARTIALS + k]),
                                     max_nan(p[i + 2 * PARTIALS + k], p[i + 3 * PARTIALS + k])));
        for (int k = 0; k < PARTIALS; k++)
            b = max_nan(b, part[k]);
    }
    for (; i < n; i++)
        b = max_nan(b, *(const double *)(x + i * stride));
    best->f = b;
}

static void
row_f32(acc *best, const char *x, int64_t n, int64_t stride)
{
    double b = best->f;
    int64_t i = 0;
    if (stride == sizeof(float) && n >= BLOCK) {
        const float *p = (const float *)x;
        float part[PARTIALS]; /* compared in float: the loop vectorises twice as wide */
        for (int k = 0; k < PARTIALS; k++)
            part[k] = -INFINITY;
        for (; i + BLOCK <= n; i += BLOCK)
            for (int k = 0; k < PARTIALS; k++)
                part[k] = max_nan_f32(
                    part[k],
                    max_nan_f32(max_nan_f32(p[i + k], p[i + PARTIALS + k]),
                                max_nan_f32(p[i + 2 * PARTIALS + k], p[i + 3 * PARTIALS + k])));
        for (int k = 0; k < PARTIALS; k++)
            b = max_nan(b, part[k]);
    }
    for (; i < n; i++)
        b = max_nan(b, *(const float *)(x + i * stride));
    best->f = b;
}

static void
row_f16(acc *best, const char *x, int64_t n, int64_t stride)
{
    double b = best->f;
    for (int64_t i = 0; i < n; i++)
        b = max_nan(b, yt__f16_to_f32(*(const uint16_t *)(x + i * stride)));
    best->f = b;
}

static void
row_bf16(acc *best, const char *x, int64_t n, int64_t stride)
{
    double b = best->f;
    for (int64_t i = 0; i < n; i++)
        b = max_nan(b, yt__bf16_to_f32(*(const uint16_t *)(x + i * stride)));
    best->f = b;
}

/* bool is one byte holding 0 or 1: its max (logical or) is the u8 max. */
static void
row_u8(acc *best, const char *x, int64_t n, int64_t stride)
{
    int64_t b = best->i;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = *(const uint8_t *)(x + i * stride);
        b = v > b ? v : b;
    }
    best->i = b;
}

static void
row_i8(acc *best, const char *x, int64_t n, int64_t stride)
{
    int64_t b = best->i;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = *(const int8_t *)(x + i * stride);
        b = v > b ? v : b;
    }
    best->i = b;
}

static void
row_i16(acc *best, const char *x, int64_t n, int64_t stride)
{
    int64_t b = best->i;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = *(const int16_t *)(x + i * stride);
        b = v > b ? v : b;
    }
    best->i = b;
}

static void
row_i32(acc *best, const char *x, int64_t n, int64_t stride)
{
    int64_t b = best->i;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = *(const int32_t *)(x + i * stride);
        b = v > b ? v : b;
    }
    best->i = b;
}

static void
row_i64(acc *best, const char *x, int64_t n, int64_t stride)
{
    int64_t b = best->i;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = *(const int64_t *)(x + i * stride);
        b = v > b ? v : b;
    }
    best->i = b;
}

static void
rows_f64(acc *best, const char *x, int64_t n, int64_t stride)
{
    if (stride == sizeof(double)) {
        const double *p = (const double *)x;
#pragma omp simd
        for (int64_t j = 0; j < n; j++)
            best[j].f = max_nan(best[j].f, p[j]);
        return;
    }
    for (int64_t j = 0; j < n; j++)
        best[j].f = max_nan(best[j].f, *(const double *)(x + j * stride));
}

static void
rows_f32(acc *best, const char *x, int64_t n, int64_t stride)
{
    if (stride == sizeof(float)) {
        const float *p = (const float *)x;
#pragma omp simd
        for (int64_t j = 0; j < n; j++)
            best[j].f = max_nan(best[j].f, p[j]);
        return;
    }
    for (int64_t j = 0; j < n; j++)
        best[j].f = max_nan(best[j].f, *(const float *)(x + j * stride));
}

static void
rows_f16(acc *best, const char *x, int64_t n, int64_t stride)
{
    for (int64_t j = 0; j < n; j++)
        best[j].f = max_nan(best[j].f, yt__f16_to_f32(*(const uint16_t *)(x + j * stride)));
}

static void
rows_bf16(acc *best, const char *x, int64_t n, int64_t stride)
{
    for (int64_t j = 0; j < n; j++)
        best[j].f = max_nan(best[j].f, yt__bf16_to_f32(*(const uint16_t *)(x + j * stride)));
}

static void
rows_u8(acc *best, const char *x, int64_t n, int64_t stride)
{
    for (int64_t j = 0; j < n; j++) {
        int64_t v = *(const uint8_t *)(x + j * stride);
        best[j].i = v > best[j].i ? v : best[j].i;
    }
}

static void
rows_i8(acc *best, const char *x, int64_t n, int64_t stride)
{
    for (int64_t j = 0; j < n; j++) {
        int64_t v = *(const int8_t *)(x + j * stride);
        best[j].i = v > best[j].i ? v : best[j].i;
    }
}

static void
rows_i16(acc *best, const char *x, int64_t n, int64_t stride)
{
    for (int64_t j = 0; j < n; j++) {
        int64_t v = *(const int16_t *)(x + j * stride);
        best[j].i = v > best[j].i ? v : best[j].i;
    }
}

static void
rows_i32(acc *best, const char *x, int64_t n, int64_t stride)
{
    for (int64_t j = 0; j < n; j++) {
        int64_t v = *(const int32_t *)(x + j * stride);
        best[j].i = v > best[j].i ? v : best[j].i;
    }
}

static void
rows_i64(acc *best, const char *x, int64_t n, int64_t stride)
{
    for (int64_t j = 0; j < n; j++) {
        int64_t v = *(const int64_t *)(x + j * stride);
        best[j].i = v > best[j].i ? v : best[j].i;
    }
}

/* Starting values: below every element. */
static void
init_run(acc *v, int64_t n, bool floating)
{
    for (int64_t j = 0; j < n; j++) {
        if (floating)
            v[j].f = -INFINITY;
        else
            v[j].i = INT64_MIN;
    }
}

static void
combine(acc *total, const acc *part, int64_t n, bool floating)
{
    for (int64_t j = 0; j < n; j++) {
        if (floating)
            total[j].f = max_nan(total[j].f, part[j].f);
        else
            total[j].i = part[j].i > total[j].i ? part[j].i : total[j].i;
    }
}

static yt__reduce_loops
max_loops(yt__reduce_row_fn row, yt__reduce_rows_fn rows, bool floating)
{
    return (yt__reduce_loops){.row = row,
                              .rows = rows,
                              .init = init_run,
                              .combine = combine,
                              .floating = floating,
                              .divisor = 1.0}; /* x / 1.0 == x: stores are exact */
}

static yt__reduce_loops
loops_for(yt_dtype dtype)
{
    switch (dtype) {
    case YT_DTYPE_F64:
        return max_loops(row_f64, rows_f64, true);
    case YT_DTYPE_F32:
        return max_loops(row_f32, rows_f32, true);
    case YT_DTYPE_F16:
        return max_loops(row_f16, rows_f16, true);
    case YT_DTYPE_BF16:
        return max_loops(row_bf16, rows_bf16, true);
    case YT_DTYPE_I64:
        return max_loops(row_i64, rows_i64, false);
    case YT_DTYPE_I32:
        return max_loops(row_i32, rows_i32, false);
    case YT_DTYPE_I16:
        return max_loops(row_i16, rows_i16, false);
    case YT_DTYPE_I8:
        return max_loops(row_i8, rows_i8, false);
    default: /* u8, bool */
        return max_loops(row_u8, rows_u8, false);
    }
}

/* ---------------------------------------------------------------- kernel */

yt_status
yt__cpu_amax(yt_tensor *result, yt_tensor *self, const int64_t *dim, int dim_len, bool keepdim)
{
    (void)keepdim; /* the result's shape has it; its memory order does not change */
    bool mask[YT_MAX_DIM];
    yt__reduce_mask(mask, self->dim, dim, dim_len);
    for (int i = 0; i < self->dim; i++)
        if (mask[i] && self->sizes[i] == 0)
            return yt__fail_status(
                YT_ERR_SHAPE, "amax: cannot reduce over a zero-size dimension (self.size(%d)=0)",
                i);
    if (result->numel == 0)
        return YT_OK;
    yt__reduce_loops loops = loops_for(self->dtype);
    yt__reduce_run(result, self, dim, dim_len, &loops);
    return YT_OK;
}
