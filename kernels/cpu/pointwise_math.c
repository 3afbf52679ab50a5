/* Out-of-line helpers of the generated pointwise kernels (see pointwise_math.h). */
#include "pointwise_math.h"

/* Sets *found when the rows hold a zero; blocks of rows may run on several threads, and they only
 * ever store true. */
#define DEFINE_ZERO_SCAN(T)                                                                        \
    static void zero_scan_##T(char **data, const int64_t *strides, int64_t n,                      \
                              const int64_t *row_strides, int64_t rows, const void *ctx)           \
    {                                                                                              \
        bool any = false;                                                                          \
        for (int64_t r = 0; r < rows; r++)                                                         \
            for (int64_t i = 0; i < n; i++)                                                        \
                any |= *(const T *)(data[1] + r * row_strides[1] + i * strides[1]) == 0;           \
        if (any)                                                                                   \
            __atomic_store_n((bool *)ctx, true, __ATOMIC_RELAXED);                                 \
    }

DEFINE_ZERO_SCAN(uint8_t)
DEFINE_ZERO_SCAN(int8_t)
DEFINE_ZERO_SCAN(int16_t)
DEFINE_ZERO_SCAN(int32_t)
DEFINE_ZERO_SCAN(int64_t)

bool
yt__pw_has_zero(yt_tensor *t)
{
    yt__loop_fn loop;
    switch (t->dtype) {
    case YT_DTYPE_U8:
        loop = zero_scan_uint8_t;
        break;
    case YT_DTYPE_I8:
        loop = zero_scan_int8_t;
        break;
    case YT_DTYPE_I16:
        loop = zero_scan_int16_t;
        break;
    case YT_DTYPE_I32:
        loop = zero_scan_int32_t;
        break;
    case YT_DTYPE_I64:
        loop = zero_scan_int64_t;
        break;
    default:
        return false;
    }
    bool found = false;
    if (yt__pointwise_scan(t, loop, &found) != YT_OK)
        return false;
    return found;
}

/* The finite range of `dtype`, as doubles. */
static void
dtype_range(yt_dtype dtype, double *lowest, double *highest)
{
    static const double hi[YT_DTYPE_COUNT] = {
        [YT_DTYPE_BOOL] = 1,
        [YT_DTYPE_U8] = 255,
        [YT_DTYPE_I8] = 127,
        [YT_DTYPE_I16] = 32767,
        [YT_DTYPE_I32] = 2147483647,
        [YT_DTYPE_I64] = 9223372036854775807.0,
        [YT_DTYPE_F16] = 65504,
        [YT_DTYPE_BF16] = 3.3895313892515355e38,
        [YT_DTYPE_F32] = 3.4028234663852886e38,
        [YT_DTYPE_F64] = 1.7976931348623157e308,
    };
    *highest = hi[dtype];
    if (yt_dtype_is_floating(dtype))
        *lowest = -hi[dtype];
    else if (dtype == YT_DTYPE_BOOL || dtype == YT_DTYPE_U8)
        *lowest = 0;
    else
        *lowest = -hi[dtype] - 1;
}

/* An integer that every dtype holds: alpha=1, the default of every add and sub, decided before
 * the range checks (which were 7 % of yt_add on 1-element tensors: perf, bench/overhead's loop). */
static inline bool
fits_every_dtype(yt_scalar s)
{
    return s.kind == YT_SCALAR_INT && s.v.i >= -127 && s.v.i <= 127;
}

static bool
scalar_fits(yt_scalar s, yt_dtype dtype)
{
    if (dtype == YT_DTYPE_BOOL || (unsigned)dtype >= YT_DTYPE_COUNT)
        return true;
    double lowest, highest;
    dtype_range(dtype, &lowest, &highest);
    bool floating = yt_dtype_is_floating(dtype);
    if (s.kind == YT_SCALAR_FLOAT) {
        double f = s.v.f;
        if (isinf(f) || isnan(f))
            return floating;
        return f >= lowest && f <= highest;
    }
    int64_t i = s.kind == YT_SCALAR_BOOL ? (int64_t)s.v.b : s.v.i;
    if (dtype == YT_DTYPE_I64)
        return true;
    if (dtype == YT_DTYPE_U8)
        return i <= 255 && i >= -255;
    return (double)i >= lowest && (double)i <= highest; /* exact for every bound but i64's */
}

yt_status
yt__pw_check_scalar(const char *op, const char *name, yt_scalar s, yt_dtype dtype)
{
    if (fits_every_dtype(s) || scalar_fits(s, dtype))
        return YT_OK;
    if (s.kind == YT_SCALAR_FLOAT)
        return yt__fail_status(YT_ERR_VALUE,
                               "%s: %s=%.17g cannot be converted to %s without overflow", op, name,
                               s.v.f, yt_dtype_name(dtype));
    return yt__fail_status(YT_ERR_VALUE, "%s: %s=%lld cannot be converted to %s without overflow",
                           op, name, (long long)s.v.i, yt_dtype_name(dtype));
}

yt_tensor *
yt__convert_0d(yt_tensor *t, yt_dtype dtype, const char *op, const char *name)
{
    if (t->numel != 1)
        return yt__fail(YT_ERR_SHAPE, "%s: %s must be 0-D, got %d-D", op, name, t->dim);
    yt_scalar s;
    yt_status st;
    if (yt_dtype_is_floating(t->dtype)) {
        s.kind = YT_SCALAR_FLOAT;
        st = yt_tensor_copy_to(t, &s.v.f, sizeof s.v.f, YT_DTYPE_F64);
    } else {
        s.kind = YT_SCALAR_INT;
        st = yt_tensor_copy_to(t, &s.v.i, sizeof s.v.i, YT_DTYPE_I64);
    }
    if (st != YT_OK || yt__pw_check_scalar(op, name, s, dtype) != YT_OK)
        return NULL;
    return yt__cast_copy(t, dtype);
}

yt_status
yt__pw_check_alpha(const char *op, const char *name, yt_scalar s, yt_dtype dtype)
{
    if (fits_every_dtype(s))
        return YT_OK;
    if (s.kind == YT_SCALAR_BOOL && dtype != YT_DTYPE_BOOL)
        return yt__fail_status(YT_ERR_VALUE,
                               "%s: a bool %s is only supported for bool results, got %s", op, name,
                               yt_dtype_name(dtype));
    if (s.kind == YT_SCALAR_FLOAT && !yt_dtype_is_floating(dtype))
        return yt__fail_status(YT_ERR_VALUE,
                               "%s: %s=%g must not be a float for integral inputs (dtype %s)", op,
                               name, s.v.f, yt_dtype_name(dtype));
    return yt__pw_check_scalar(op, name, s, dtype);
}

bool
yt__pw_scalar_is_zero(yt_scalar s, yt_dtype dtype)
{
    int64_t v = yt__scalar_to_i64(s);
    switch (dtype) {
    case YT_DTYPE_U8:
        return (uint8_t)v == 0;
    case YT_DTYPE_I8:
        return (int8_t)v == 0;
    case YT_DTYPE_I16:
        return (int16_t)v == 0;
    case YT_DTYPE_I32:
        return (int32_t)v == 0;
    default:
        return v == 0;
    }
}

/* result_dtype rules of pointwise ops (ops.yaml), declared in internal.h. */

yt_dtype
yt__dtype_square(yt_tensor *self)
{
    /* PyTorch's square is pow(self, 2): a bool tensor with an int exponent gives i64. */
    return self->dtype == YT_DTYPE_BOOL ? YT_DTYPE_I64 : self->dtype;
}

yt_dtype
yt__dtype_div_mode(yt_tensor *self, yt_tensor *other, const char *rounding_mode)
{
    yt_tensor *const tensors[2] = {self, other};
    yt_dtype d = yt__result_type(2, tensors, 0, NULL);
    return rounding_mode == NULL ? yt__to_floating(d) : d;
}

yt_dtype
yt__dtype_div_scalar_mode(yt_tensor *self, yt_scalar other, const char *rounding_mode)
{
    yt_dtype d = yt__result_type(1, &self, 1, &other);
    return rounding_mode == NULL ? yt__to_floating(d) : d;
}
