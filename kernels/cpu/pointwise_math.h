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
#include <string.h>

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
double erfc(double) YT_PW_SIMD;
double pow(double, double) YT_PW_SIMD;

/* Loops that call the functions above are compute-bound: an AVX-512 clone, chosen at load time
 * where the CPU has it, doubles their vector width (and calls libmvec's 16-lane versions). */
#define YT_PW_CLONES __attribute__((target_clones("arch=x86-64-v4", "default")))
#else
#define YT_PW_SIMD
#define YT_PW_CLONES
#endif

/* fmod.c: exact, with vector variants of its own (libmvec has no fmod); `const` (no memory, no
 * errno) is what lets the vectoriser call them */
float yt__fmod_f32(float, float) __attribute__((const)) YT_PW_SIMD;
double yt__fmod_f64(double, double) __attribute__((const)) YT_PW_SIMD;

#define YT_PW_FLOAT(T, S, FMOD, FLOOR, FABS, COPYSIGN, TRUNC)                                       \
    static inline T yt__pw_abs_##S(T a)                                                             \
    {                                                                                               \
        return FABS(a);                                                                             \
    }                                                                                               \
    static inline T yt__pw_sign_##S(T a)                                                            \
    {                                                                                               \
        return (T)((a > 0) - (a < 0));                                                              \
    }                                                                                               \
    /* NaN wins; `b > a ? b : a` is exactly vmaxps(b, a), which returns a when a is NaN, so one   \
     * test of b is all that is left (clamp of [1000, 1000] f32, one thread: 149 -> 80 us). */ \
    static inline T yt__pw_maximum_##S(T a, T b)                                                    \
    {                                                                                               \
        return b != b ? b : (b > a ? b : a);                                                        \
    }                                                                                               \
    static inline T yt__pw_minimum_##S(T a, T b)                                                    \
    {                                                                                               \
        return b != b ? b : (b < a ? b : a);                                                        \
    }                                                                                               \
    /* The same for a b shared by every element (a Scalar): b's NaN is added back, or -0 (which   \
     * leaves every value as it is), a term the loop hoists, so it is vmaxps and an add where the \
     * test of b above stays a compare and a blend per vector (clamp of 65000 f32 in L1: 10.5 ->   \
     * 6.7 us, against 6.5 for vmaxps/vminps alone). */ \
    static inline T yt__pw_maximum_uniform_##S(T a, T b)                                            \
    {                                                                                               \
        return (b > a ? b : a) + (b != b ? b : (T)-0.0);                                            \
    }                                                                                               \
    static inline T yt__pw_minimum_uniform_##S(T a, T b)                                            \
    {                                                                                               \
        return (b < a ? b : a) + (b != b ? b : (T)-0.0);                                            \
    }                                                                                               \
    static inline T yt__pw_remainder_##S(T a, T b)                                                  \
    {                                                                                               \
        T r = FMOD(a, b);                                                                           \
        return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;                                        \
    }                                                                                               \
    /* Python's a // b on floats: exact for representable quotients, no double rounding. Written  \
     * as selects so that loops of it vectorise (yt__fmod_f32 / _f64 have vector variants). */ \
    static inline T yt__pw_floor_divide_##S(T a, T b)                                               \
    {                                                                                               \
        T mod = FMOD(a, b);                                                                         \
        T div = (a - mod) / b;                                                                      \
        div = mod != 0 && ((b < 0) != (mod < 0)) ? div - 1 : div;                                   \
        T fl = FLOOR(div);                                                                          \
        T rounded = div - fl > (T)0.5 ? fl + 1 : fl;                                                \
        T quotient = a / b;                                                                         \
        return b == 0 ? quotient : div == 0 ? COPYSIGN((T)0, quotient) : rounded;                   \
    }                                                                                               \
    /* div(rounding_mode="trunc") on floats: the quotient rounded toward zero. */                   \
    static inline T yt__pw_trunc_divide_##S(T a, T b)                                               \
    {                                                                                               \
        return TRUNC(a / b);                                                                        \
    }

YT_PW_FLOAT(float, f, yt__fmod_f32, floorf, fabsf, copysignf, truncf)
YT_PW_FLOAT(double, d, yt__fmod_f64, floor, fabs, copysign, trunc)

/* Phi(x), the standard normal CDF, for gelu: 1 - erfc(u) / 2 for x >= 0 and erfc(u) / 2 below,
 * with u = |x| / sqrt(2). Computing the tail directly keeps it accurate to a few ulp relative:
 * 0.5 * (1 + erf(x / sqrt(2))), PyTorch's form, cancels to 0 or a few percent for x < -5.
 *
 * float: erfc(u) = exp(-u^2) P(t), t = 2 / (2 + u), the form of Abramowitz & Stegun 7.1.26
 * with a degree-7 P fitted for yaten (relative least squares on u in [0, 10]; about 6e-7
 * relative after float rounding). exp is inline, so the loop vectorises without calls: Cody and
 * Waite's reduction with a degree-6 polynomial; u^2 is split into hi + lo (an fma) because
 * exp's argument is large in the tail (u^2 from x^2 / 2, not from a rounded u). Results below
 * FLT_MIN flush to 0 (from |x| = 13.2 on, 2^(n - 1) is below float's normals), so gelu(-inf) is
 * NaN as in PyTorch. |x| is clamped at 14 (Phi is then 0 or 1), which keeps x^2 finite; a NaN x
 * reaches gelu's result through the multiplication by x. The clamp is a minimum of the bits (a
 * NaN's are above 14's): written as a float select, GCC if-converted it with the clamped side's
 * constants folded in, 4 blends a vector (vectorised gelu, 1M f32, one thread: 0.86x the time
 * without them; the results are the same for every float).
 * always_inline: the vectoriser needs the body inside the loop. */
YT_ALWAYS_INLINE float
yt__pw_normal_cdf_f(float x)
{
    float ax = fabsf(x);
    int32_t ax_bits;
    memcpy(&ax_bits, &ax, sizeof ax_bits);
    ax_bits = ax_bits < 0x41600000 ? ax_bits : 0x41600000; /* 14.0f */
    memcpy(&ax, &ax_bits, sizeof ax);
    float x2 = ax * ax;
    float hi = 0.5f * x2, lo = 0.5f * fmaf(ax, ax, -x2); /* u^2 = x^2 / 2, exactly hi + lo */
    float a = -hi;
    float n = (a * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round(a / ln 2) */
    float r = fmaf(n, -0.693359375f, a);
    r = fmaf(n, 2.12194440e-4f, r);
    float e = 1.3981999507e-3f;
    e = fmaf(e, r, 8.3334519073e-3f);
    e = fmaf(e, r, 4.1665795894e-2f);
    e = fmaf(e, r, 1.6666665459e-1f);
    e = fmaf(e, r, 5.0000001201e-1f);
    e = fmaf(e, r * r, r + 1.0f);
    int32_t biased = (int32_t)n + 126; /* 2^(n - 1): the halving of erfc(u) / 2 */
    biased = biased > 0 ? biased : 0;  /* below float's normals: 0 (and no shift of a negative) */
    int32_t bits = biased << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    float t = 2.0f / (2.0f + ax * 0.70710678118654752f);
    float p = 9.771909565e-02f;
    p = fmaf(p, t, -3.924196064e-01f);
    p = fmaf(p, t, 4.437590241e-01f);
    p = fmaf(p, t, -5.904617254e-03f);
    p = fmaf(p, t, 3.013591766e-01f);
    p = fmaf(p, t, 2.725217044e-01f);
    p = fmaf(p, t, 2.830011547e-01f);
    p = fmaf(p, t, -3.552313501e-05f);
    float half_erfc = e * scale * p;
    half_erfc = fmaf(-half_erfc, lo, half_erfc); /* times exp(-lo) */
    return x < 0 ? half_erfc : 1.0f - half_erfc;
}

static inline double
yt__pw_normal_cdf_d(double x)
{
    return 0.5 * erfc(-x * 0.70710678118654752);
}

/* Integers: wrap-around arithmetic as in PyTorch (computed unsigned, so never undefined; GCC
 * defines the conversion back as modulo 2^N). add, sub, mul and neg are what the generated loops
 * call for + - * and unary - of signed integer loops (codegen/pointwise.py WRAPPING_OPS). */
#define YT_PW_INT(T, U, S)                                                                         \
    static inline T yt__pw_add_##S(T a, T b)                                                       \
    {                                                                                              \
        return (T)((U)a + (U)b);                                                                   \
    }                                                                                              \
    static inline T yt__pw_sub_##S(T a, T b)                                                       \
    {                                                                                              \
        return (T)((U)a - (U)b);                                                                   \
    }                                                                                              \
    static inline T yt__pw_mul_##S(T a, T b)                                                       \
    {                                                                                              \
        return (T)((U)a * (U)b);                                                                   \
    }                                                                                              \
    static inline T yt__pw_neg_##S(T a)                                                            \
    {                                                                                              \
        return (T)(0u - (U)a);                                                                     \
    }                                                                                              \
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
