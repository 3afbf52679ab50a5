/* Factories on the CPU: empty, zeros, ones, full, zeros_like, arange, linspace, eye. Random
 * factories are in random.c. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "element.h"
#include "factory.h"
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
        yt__elem_store_f64((char *)out, dtype, 0, v);
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
        yt__elem_store_i64((char *)out, dtype, 0, v);
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
    if (yt_dtype_is_floating(out)) {
        double first = yt__scalar_to_double(start), delta = yt__scalar_to_double(step);
        for (int64_t i = 0; i < n; i++)
            yt__elem_store_f64(data, out, i, first + (double)i * delta);
    } else {
        /* unsigned arithmetic wraps where a narrow dtype overflows, instead of being undefined */
        uint64_t first = (uint64_t)yt__scalar_to_i64(start);
        uint64_t delta = (uint64_t)yt__scalar_to_i64(step);
        for (int64_t i = 0; i < n; i++)
            yt__elem_store_i64(data, out, i, (int64_t)(first + (uint64_t)i * delta));
    }
    return YT_OK;
}

yt_status
yt__cpu_empty(yt_tensor *result, const int64_t *size, int size_len, yt_dtype dtype,
              yt_device device)
{
    (void)size, (void)size_len, (void)dtype, (void)device;
    /* Zeroed although the contents are unspecified: reused allocator blocks would otherwise make
     * programs that read them nondeterministic, and one memset is cheap next to first use. */
    fill_zeros(result);
    return YT_OK;
}

/* PyTorch's linspace: step = (end - start) / (steps - 1), the first half counted up from start
 * and the second half down from end, so both ends are exact; integral dtypes truncate. */
yt_status
yt__cpu_linspace(yt_tensor *result, yt_scalar start, yt_scalar end, int64_t steps, yt_dtype dtype,
                 yt_device device)
{
    (void)dtype, (void)device;
    yt_dtype out = result->dtype;
    double a = yt__scalar_to_double(start), b = yt__scalar_to_double(end);
    if (!yt_dtype_is_floating(out)) {
        int64_t lo = 0, hi = 0;
        int_range(out, &lo, &hi);
        if (out == YT_DTYPE_BOOL)
            lo = 0, hi = 1;
        double lim_lo = (double)lo, lim_hi = (double)hi + 1.0;
        if (!(a >= lim_lo && a < lim_hi && b >= lim_lo && b < lim_hi))
            return yt__fail_status(YT_ERR_VALUE, "linspace: start=%g and end=%g do not fit in %s",
                                   a, b, yt_dtype_name(out));
    }
    char *data = yt__data_ptr(result);
    if (steps == 1)
        yt__store_double(data, out, 0, a);
    if (steps <= 1)
        return YT_OK;
    double step = (b - a) / (double)(steps - 1);
    int64_t half = steps / 2;
    for (int64_t i = 0; i < steps; i++) {
        double v = i < half ? a + step * (double)i : b - step * (double)(steps - 1 - i);
        yt__store_double(data, out, i, v);
    }
    return YT_OK;
}

static void
eye_fill(yt_tensor *result)
{
    fill_zeros(result);
    int64_t n = result->sizes[0], m = result->sizes[1];
    char *data = yt__data_ptr(result);
    for (int64_t i = 0; i < n && i < m; i++)
        yt__store_double(data, result->dtype, i * m + i, 1.0);
}

yt_status
yt__cpu_eye(yt_tensor *result, int64_t n, yt_dtype dtype, yt_device device)
{
    (void)n, (void)dtype, (void)device;
    eye_fill(result);
    return YT_OK;
}

yt_status
yt__cpu_eye_m(yt_tensor *result, int64_t n, int64_t m, yt_dtype dtype, yt_device device)
{
    (void)n, (void)m, (void)dtype, (void)device;
    eye_fill(result);
    return YT_OK;
}
