/* Scalar helpers of the generated pointwise loops (codegen/pointwise.py HELPERS), one per
 * compute type: yt__pw_NAME_SUFFIX with SUFFIX f, d, i8, i16, i32, i64 or b. They are small
 * and branch-free where it matters, so the contiguous loops still vectorise.
 *
 * PyTorch semantics: maximum/minimum propagate NaN; remainder takes the sign of the divisor;
 * floor_divide rounds toward -inf. Integer division by zero never reaches these (the kernel
 * checks the divisor first), but they return 0 rather than trap if it did. */
#ifndef YT_POINTWISE_MATH_H
#define YT_POINTWISE_MATH_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "internal.h"

/* glibc's libmvec has AVX2 versions of these; declaring them `simd` lets the contiguous loops
 * call 8 floats (4 doubles) at a time. libm.so pulls libmvec in as needed. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__AVX2__) &&        \
    !defined(__SANITIZE_ADDRESS__)
#define YT_PW_SIMD __attribute__((simd("notinbranch")))
float expf(float) YT_PW_SIMD;
float expm1f(float) YT_PW_SIMD;
float logf(float) YT_PW_SIMD;
float log1pf(float) YT_PW_SIMD;
float log2f(float) YT_PW_SIMD;
float sinf(float) YT_PW_SIMD;
float cosf(float) YT_PW_SIMD;
float tanhf(float) YT_PW_SIMD;
float erff(float) YT_PW_SIMD;
float powf(float, float) YT_PW_SIMD;
double exp(double) YT_PW_SIMD;
double expm1(double) YT_PW_SIMD;
double log(double) YT_PW_SIMD;
double log1p(double) YT_PW_SIMD;
double log2(double) YT_PW_SIMD;
double sin(double) YT_PW_SIMD;
double cos(double) YT_PW_SIMD;
double tanh(double) YT_PW_SIMD;
double erf(double) YT_PW_SIMD;
double pow(double, double) YT_PW_SIMD;
#endif

#define YT_PW_FLOAT(T, S, FMOD, FLOOR, FABS, COPYSIGN, TRUNC)                                      \
    static inline T yt__pw_abs_##S(T a)                                                            \
    {                                                                                              \
        return FABS(a);                                                                            \
    }                                                                                              \
    static inline T yt__pw_sign_##S(T a)                                                           \
    {                                                                                              \
        return (T)((a > 0) - (a < 0));                                                             \
    }                                                                                              \
    static inline T yt__pw_maximum_##S(T a, T b)                                                   \
    {                                                                                              \
        return a != a ? a : (b != b ? b : (a < b ? b : a));                                        \
    }                                                                                              \
    static inline T yt__pw_minimum_##S(T a, T b)                                                   \
    {                                                                                              \
        return a != a ? a : (b != b ? b : (b < a ? b : a));                                        \
    }                                                                                              \
    static inline T yt__pw_remainder_##S(T a, T b)                                                 \
    {                                                                                              \
        T r = FMOD(a, b);                                                                          \
        return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;                                       \
    }                                                                                              \
    /* Python's a // b on floats: exact for representable quotients, no double rounding. */        \
    static inline T yt__pw_floor_divide_##S(T a, T b)                                              \
    {                                                                                              \
        if (b == 0)                                                                                \
            return a / b;                                                                          \
        T mod = FMOD(a, b);                                                                        \
        T div = (a - mod) / b;                                                                     \
        if (mod != 0 && ((b < 0) != (mod < 0)))                                                    \
            div -= 1;                                                                              \
        if (div == 0)                                                                              \
            return COPYSIGN((T)0, a / b);                                                          \
        T fl = FLOOR(div);                                                                         \
        return div - fl > (T)0.5 ? fl + 1 : fl;                                                    \
    }                                                                                              \
    /* div(rounding_mode="trunc") on floats: the quotient rounded toward zero. */                  \
    static inline T yt__pw_trunc_divide_##S(T a, T b)                                              \
    {                                                                                              \
        return TRUNC(a / b);                                                                       \
    }

YT_PW_FLOAT(float, f, fmodf, floorf, fabsf, copysignf, truncf)
YT_PW_FLOAT(double, d, fmod, floor, fabs, copysign, trunc)

/* Integers: wrap-around arithmetic as in PyTorch (computed unsigned, so never undefined). */
#define YT_PW_INT(T, U, S)                                                                         \
    static inline T yt__pw_abs_##S(T a)                                                            \
    {                                                                                              \
        return a < 0 ? (T)(0u - (U)a) : a;                                                         \
    }                                                                                              \
    static inline T yt__pw_sign_##S(T a)                                                           \
    {                                                                                              \
        return (T)((a > 0) - (a < 0));                                                             \
    }                                                                                              \
    static inline T yt__pw_maximum_##S(T a, T b)                                                   \
    {                                                                                              \
        return a < b ? b : a;                                                                      \
    }                                                                                              \
    static inline T yt__pw_minimum_##S(T a, T b)                                                   \
    {                                                                                              \
        return b < a ? b : a;                                                                      \
    }                                                                                              \
    static inline T yt__pw_trunc_divide_##S(T a, T b)                                              \
    {                                                                                              \
        if (b == 0)                                                                                \
            return 0;                                                                              \
        if (b == -1)                                                                               \
            return (T)(0u - (U)a);                                                                 \
        return (T)(a / b);                                                                         \
    }                                                                                              \
    static inline T yt__pw_floor_divide_##S(T a, T b)                                              \
    {                                                                                              \
        if (b == 0)                                                                                \
            return 0;                                                                              \
        if (b == -1)                                                                               \
            return (T)(0u - (U)a);                                                                 \
        T q = (T)(a / b);                                                                          \
        return (a % b != 0 && ((a < 0) != (b < 0))) ? (T)(q - 1) : q;                              \
    }                                                                                              \
    static inline T yt__pw_remainder_##S(T a, T b)                                                 \
    {                                                                                              \
        if (b == 0 || b == -1)                                                                     \
            return 0;                                                                              \
        T r = (T)(a % b);                                                                          \
        return (r != 0 && ((r < 0) != (b < 0))) ? (T)(r + b) : r;                                  \
    }                                                                                              \
    /* Integer power by squaring; negative exponents give 0 except for bases 1 and -1. */          \
    static inline T yt__pw_ipow_##S(T a, T b)                                                      \
    {                                                                                              \
        if (b < 0)                                                                                 \
            return a == 1 ? 1 : (a == -1 ? ((b & 1) ? -1 : 1) : 0);                                \
        U r = 1, x = (U)a;                                                                         \
        for (; b > 0; b = (T)(b >> 1)) {                                                           \
            if (b & 1)                                                                             \
                r *= x;                                                                            \
            x *= x;                                                                                \
        }                                                                                          \
        return (T)r;                                                                               \
    }

YT_PW_INT(int8_t, uint32_t, i8)
YT_PW_INT(int16_t, uint32_t, i16)
YT_PW_INT(int32_t, uint32_t, i32)
YT_PW_INT(int64_t, uint64_t, i64)

static inline bool
yt__pw_maximum_b(bool a, bool b)
{
    return a || b;
}
static inline bool
yt__pw_minimum_b(bool a, bool b)
{
    return a && b;
}
static inline bool
yt__pw_abs_b(bool a)
{
    return a;
}
static inline bool
yt__pw_sign_b(bool a)
{
    return a;
}

/* YT_OK when the number `s` converts to `dtype` without overflow, as PyTorch's Scalar::to<T>()
 * (c10::overflows): bool takes anything; a float must lie within the dtype's finite range (inf
 * and NaN only into floating dtypes); an integer into u8 may be negative down to -255 (it wraps,
 * as two's complement). Otherwise YT_ERR_VALUE naming the op and the argument. */
YT_INTERNAL yt_status yt__pw_check_scalar(const char *op, const char *name, yt_scalar s,
                                          yt_dtype dtype);

/* yt__pw_check_scalar plus PyTorch's alpha_check: a float alpha only for floating dtypes, a
 * bool alpha only for bool. */
YT_INTERNAL yt_status yt__pw_check_alpha(const char *op, const char *name, yt_scalar s,
                                         yt_dtype dtype);

/* True when the number `s` is 0 once converted to the integral `dtype` (256 is 0 in u8), the
 * divisor check of integer division by a number. */
YT_INTERNAL bool yt__pw_scalar_is_zero(yt_scalar s, yt_dtype dtype);

/* True when any element of the integral tensor `t` is 0 (the divisor check of integer
 * division and remainder). */
YT_INTERNAL bool yt__pw_has_zero(yt_tensor *t);

#endif
