/* Factories on the CPU: zeros, ones, full, zeros_like, arange, rand, randn.
 *
 * Random numbers come from the default Philox generator: a call reserves the blocks it needs,
 * and element i always takes the same words of that range, so a seed gives the same tensor
 * whatever the thread count. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "kernels.h"

/* One element of any dtype; the unsigned members read its bytes back for filling. */
typedef union element {
    bool b;
    uint8_t u8;
    int8_t i8;
    int16_t i16;
    int32_t i32;
    int64_t i64;
    uint16_t u16; /* also f16 and bf16 bits */
    uint32_t u32;
    uint64_t u64;
    float f32;
    double f64;
} element;

static void
int_range(yt_dtype dtype, int64_t *lo, int64_t *hi)
{
    switch (dtype) {
    case YT_DTYPE_U8:
        *lo = 0, *hi = UINT8_MAX;
        break;
    case YT_DTYPE_I8:
        *lo = INT8_MIN, *hi = INT8_MAX;
        break;
    case YT_DTYPE_I16:
        *lo = INT16_MIN, *hi = INT16_MAX;
        break;
    case YT_DTYPE_I32:
        *lo = INT32_MIN, *hi = INT32_MAX;
        break;
    default:
        *lo = INT64_MIN, *hi = INT64_MAX;
        break;
    }
}

/* Largest finite value of a floating dtype. */
static double
float_max(yt_dtype dtype)
{
    switch (dtype) {
    case YT_DTYPE_F16:
        return 65504.0;
    case YT_DTYPE_BF16:
        return 0x1.fep127;
    case YT_DTYPE_F32:
        return FLT_MAX;
    default:
        return DBL_MAX;
    }
}

/* Stores an integer (already in range) as an element of integral `dtype`. */
static void
put_int(element *out, yt_dtype dtype, int64_t v)
{
    switch (dtype) {
    case YT_DTYPE_U8:
        out->u8 = (uint8_t)v;
        break;
    case YT_DTYPE_I8:
        out->i8 = (int8_t)v;
        break;
    case YT_DTYPE_I16:
        out->i16 = (int16_t)v;
        break;
    case YT_DTYPE_I32:
        out->i32 = (int32_t)v;
        break;
    default:
        out->i64 = v;
        break;
    }
}

/* Stores a double as an element of floating `dtype` (round to nearest). */
static void
put_float(element *out, yt_dtype dtype, double v)
{
    switch (dtype) {
    case YT_DTYPE_F16:
        out->u16 = yt__f32_to_f16((float)v);
        break;
    case YT_DTYPE_BF16:
        out->u16 = yt__f32_to_bf16((float)v);
        break;
    case YT_DTYPE_F32:
        out->f32 = (float)v;
        break;
    default:
        out->f64 = v;
        break;
    }
}

/* `value` as an element of `dtype`, as PyTorch converts a fill value: floats truncate toward zero
 * into integers, anything non-zero is true, and a value outside the dtype's range is an error
 * (infinities and NaN may go to floating dtypes). */
static yt_status
to_element(element *out, yt_scalar value, yt_dtype dtype, const char *op, const char *arg)
{
    bool fits = true;
    if (dtype == YT_DTYPE_BOOL) {
        out->b = yt__scalar_to_double(value) != 0.0;
    } else if (yt_dtype_is_floating(dtype)) {
        double v = yt__scalar_to_double(value);
        fits = !isfinite(v) || fabs(v) <= float_max(dtype);
        put_float(out, dtype, v);
    } else {
        int64_t lo, hi, v = 0;
        int_range(dtype, &lo, &hi);
        if (value.kind == YT_SCALAR_FLOAT) {
            double t = trunc(value.v.f);
            /* (double)hi + 1 is exact (a power of two) where (double)hi may round up */
            fits = t >= (double)lo && t < (double)hi + 1.0; /* false for NaN */
            v = fits ? (int64_t)t : 0;
        } else {
            v = value.kind == YT_SCALAR_INT ? value.v.i : (int64_t)value.v.b;
            fits = v >= lo && v <= hi;
        }
        put_int(out, dtype, v);
    }
    if (fits)
        return YT_OK;
    if (value.kind == YT_SCALAR_FLOAT)
        return yt__fail_status(YT_ERR_VALUE, "%s: %s=%g cannot be converted to %s without overflow",
                               op, arg, value.v.f, yt_dtype_name(dtype));
    return yt__fail_status(YT_ERR_VALUE, "%s: %s=%lld cannot be converted to %s without overflow",
                           op, arg, (long long)value.v.i, yt_dtype_name(dtype));
}

/* Writes `value` (an element of t's dtype) to every element of contiguous `t`. */
static void
fill(yt_tensor *t, const element *value)
{
    int64_t n = t->numel;
    if (n == 0)
        return;
    char *data = yt__data_ptr(t);
    switch (yt_dtype_size(t->dtype)) {
    case 1:
        memset(data, value->u8, (size_t)n);
        break;
    case 2: {
        uint16_t *p = (uint16_t *)data, v = value->u16;
#pragma omp simd
        for (int64_t i = 0; i < n; i++)
            p[i] = v;
        break;
    }
    case 4: {
        uint32_t *p = (uint32_t *)data, v = value->u32;
#pragma omp simd
        for (int64_t i = 0; i < n; i++)
            p[i] = v;
        break;
    }
    default: {
        uint64_t *p = (uint64_t *)data, v = value->u64;
#pragma omp simd
        for (int64_t i = 0; i < n; i++)
            p[i] = v;
        break;
    }
    }
}

static void
fill_zeros(yt_tensor *t)
{
    if (t->numel > 0)
        memset(yt__data_ptr(t), 0, (size_t)t->numel * yt_dtype_size(t->dtype));
}

yt_status
yt__cpu_zeros(yt_tensor *result, const int64_t *size, int size_len, yt_dtype dtype,
              yt_device device)
{
    (void)size, (void)size_len, (void)dtype, (void)device; /* result has them */
    fill_zeros(result);
    return YT_OK;
}

yt_status
yt__cpu_ones(yt_tensor *result, const int64_t *size, int size_len, yt_dtype dtype, yt_device device)
{
    (void)size, (void)size_len, (void)dtype, (void)device;
    element one;
    if (to_element(&one, yt_int(1), result->dtype, "ones", "value") != YT_OK)
        return yt__last_status();
    fill(result, &one);
    return YT_OK;
}

yt_status
yt__cpu_full(yt_tensor *result, const int64_t *size, int size_len, yt_scalar fill_value,
             yt_dtype dtype, yt_device device)
{
    (void)size, (void)size_len, (void)dtype, (void)device;
    element value;
    if (to_element(&value, fill_value, result->dtype, "full", "fill_value") != YT_OK)
        return yt__last_status();
    fill(result, &value);
    return YT_OK;
}

yt_status
yt__cpu_zeros_like(yt_tensor *result, yt_tensor *self)
{
    (void)self;
    fill_zeros(result);
    return YT_OK;
}

/* value_i = start + i * step, computed in the result dtype's domain: double for floating dtypes,
 * 64-bit integers (start and step truncated, as PyTorch does) for integral ones. */
yt_status
yt__cpu_arange(yt_tensor *result, yt_scalar start, yt_scalar end, yt_scalar step, yt_dtype dtype,
               yt_device device)
{
    (void)end, (void)dtype, (void)device; /* the length is result's */
    yt_dtype out = result->dtype;
    if (out == YT_DTYPE_BOOL)
        return yt__fail_status(YT_ERR_DTYPE, "arange: dtype bool is not supported");
    int64_t n = result->numel;
    char *data = n > 0 ? yt__data_ptr(result) : NULL;
    size_t elem_size = yt_dtype_size(out);
    element e;
    if (yt_dtype_is_floating(out)) {
        double first = yt__scalar_to_double(start), delta = yt__scalar_to_double(step);
        for (int64_t i = 0; i < n; i++) {
            put_float(&e, out, first + (double)i * delta);
            memcpy(data + i * (int64_t)elem_size, &e, elem_size);
        }
    } else {
        /* unsigned arithmetic wraps where a narrow dtype overflows, instead of being undefined */
        uint64_t first = (uint64_t)yt__scalar_to_i64(start);
        uint64_t delta = (uint64_t)yt__scalar_to_i64(step);
        for (int64_t i = 0; i < n; i++) {
            put_int(&e, out, (int64_t)(first + (uint64_t)i * delta));
            memcpy(data + i * (int64_t)elem_size, &e, elem_size);
        }
    }
    return YT_OK;
}

/* ---------------------------------------------------------------- random numbers */

/* Uniform [0, 1) values keep only as many bits of a word as the dtype's significand holds, so
 * rounding can never produce 1.0. */
static inline float
uniform_f32(uint32_t w)
{
    return (float)(w >> 8) * 0x1p-24f;
}

static inline double
uniform_f64(uint32_t hi, uint32_t lo)
{
    return (double)(((uint64_t)hi << 21) | (lo >> 11)) * 0x1p-53;
}

/* Element `i` of a rand tensor from its words (two for f64, one otherwise). */
static void
put_uniform(char *data, yt_dtype dtype, int64_t i, const uint32_t *w)
{
    switch (dtype) {
    case YT_DTYPE_F64:
        ((double *)data)[i] = uniform_f64(w[0], w[1]);
        break;
    case YT_DTYPE_F32:
        ((float *)data)[i] = uniform_f32(w[0]);
        break;
    case YT_DTYPE_F16: /* 11 significant bits: exact in f16 */
        ((uint16_t *)data)[i] = yt__f32_to_f16((float)(w[0] >> 21) * 0x1p-11f);
        break;
    default: /* bf16, 8 significant bits */
        ((uint16_t *)data)[i] = yt__f32_to_bf16((float)(w[0] >> 24) * 0x1p-8f);
        break;
    }
}

/* Stores element `i` of a floating tensor, if it exists (the last Box-Muller pair may have only
 * one). */
static void
put_normal(char *data, yt_dtype dtype, int64_t n, int64_t i, double v)
{
    if (i >= n)
        return;
    switch (dtype) {
    case YT_DTYPE_F64:
        ((double *)data)[i] = v;
        break;
    case YT_DTYPE_F32:
        ((float *)data)[i] = (float)v;
        break;
    case YT_DTYPE_F16:
        ((uint16_t *)data)[i] = yt__f32_to_f16((float)v);
        break;
    default:
        ((uint16_t *)data)[i] = yt__f32_to_bf16((float)v);
        break;
    }
}

static yt_status
check_floating(const char *op, yt_dtype dtype)
{
    if (yt_dtype_is_floating(dtype))
        return YT_OK;
    return yt__fail_status(YT_ERR_DTYPE, "%s: dtype %s is not a floating dtype", op,
                           yt_dtype_name(dtype));
}

yt_status
yt__cpu_rand(yt_tensor *result, const int64_t *size, int size_len, yt_dtype dtype, yt_device device)
{
    (void)size, (void)size_len, (void)dtype, (void)device;
    yt_dtype out = result->dtype;
    if (check_floating("rand", out) != YT_OK)
        return yt__last_status();
    int64_t n = result->numel;
    if (n == 0)
        return YT_OK;
    const int per_elem = out == YT_DTYPE_F64 ? 2 : 1; /* words */
    const int per_block = 4 / per_elem;               /* elements */
    int64_t n_blocks = (n + per_block - 1) / per_block;
    yt_generator *gen = yt__default_generator();
    uint64_t seed = gen->seed;
    uint64_t counter = yt__generator_reserve(gen, (uint64_t)n_blocks);
    char *data = yt__data_ptr(result);

#pragma omp parallel for schedule(static) if (n >= YT_PARALLEL_GRAIN)
    for (int64_t b = 0; b < n_blocks; b++) {
        uint32_t w[4];
        yt__philox(seed, counter + (uint64_t)b, w);
        for (int j = 0; j < per_block && b * per_block + j < n; j++)
            put_uniform(data, out, b * per_block + j, w + j * per_elem);
    }
    return YT_OK;
}

/* Box-Muller: each pair of uniforms (u1, u2) gives two independent normals,
 * sqrt(-2 ln u1) * (cos 2 pi u2, sin 2 pi u2). u1 is taken from (0, 1] so the log is finite. */
yt_status
yt__cpu_randn(yt_tensor *result, const int64_t *size, int size_len, yt_dtype dtype,
              yt_device device)
{
    (void)size, (void)size_len, (void)dtype, (void)device;
    const double two_pi = 6.283185307179586476925286766559;
    yt_dtype out = result->dtype;
    if (check_floating("randn", out) != YT_OK)
        return yt__last_status();
    int64_t n = result->numel;
    if (n == 0)
        return YT_OK;
    const int per_pair = out == YT_DTYPE_F64 ? 4 : 2; /* words */
    const int per_block = 4 / per_pair;               /* pairs */
    int64_t n_pairs = (n + 1) / 2;
    int64_t n_blocks = (n_pairs + per_block - 1) / per_block;
    yt_generator *gen = yt__default_generator();
    uint64_t seed = gen->seed;
    uint64_t counter = yt__generator_reserve(gen, (uint64_t)n_blocks);
    char *data = yt__data_ptr(result);

#pragma omp parallel for schedule(static) if (n >= YT_PARALLEL_GRAIN)
    for (int64_t b = 0; b < n_blocks; b++) {
        uint32_t w[4];
        yt__philox(seed, counter + (uint64_t)b, w);
        for (int j = 0; j < per_block; j++) {
            int64_t pair = b * per_block + j;
            if (pair >= n_pairs)
                break;
            const uint32_t *pw = w + j * per_pair;
            double z0, z1;
            if (out == YT_DTYPE_F64) {
                double r = sqrt(-2.0 * log(1.0 - uniform_f64(pw[0], pw[1])));
                double theta = two_pi * uniform_f64(pw[2], pw[3]);
                z0 = r * cos(theta);
                z1 = r * sin(theta);
            } else {
                /* float math: the uniforms carry 24 bits, and f32 results need no more */
                float r = sqrtf(-2.0f * logf(1.0f - uniform_f32(pw[0])));
                float theta = (float)two_pi * uniform_f32(pw[1]);
                z0 = r * cosf(theta);
                z1 = r * sinf(theta);
            }
            put_normal(data, out, n, 2 * pair, z0);
            put_normal(data, out, n, 2 * pair + 1, z1);
        }
    }
    return YT_OK;
}
