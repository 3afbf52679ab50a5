/* fmod for the generated pointwise loops (remainder, floor_divide), exact and 4 or 8 lanes at a
 * time. libm's fmodf / fmod are scalar calls of 12-14 ns per element here; these run the loops at
 * vector speed.
 *
 * pointwise_math.h declares yt__fmod_f32 and yt__fmod_f64 with GCC's simd attribute, as glibc
 * declares expf: a loop under `omp simd` then calls the vector variants below, named by the x86
 * vector function ABI (_ZGV, ISA letter b = SSE, c = AVX, d = AVX2, e = AVX-512, N = unmasked,
 * lane count, one v per vector argument). The scalar entries run the same vector code on one lane,
 * so a strided loop and a contiguous one give the same bits, NaN payloads included. This file must
 * not see that declaration: with the attribute on the definition, GCC would make variants of its
 * own.
 *
 * The method: fmod(x, y) = fmod(x, y * 2^s) reduced modulo y again, for any integer s >= 0. Each
 * step reduces x modulo Y = y * 2^s with s chosen so that x / Y < 2^52. The double quotient
 * q = trunc(x / Y) is then the true quotient or one more (rounding to nearest is monotone and the
 * true quotient is representable), so x - q * Y lies in [-Y, Y) and is a multiple of Y's ulp,
 * fewer than 2^53 of them: the fma computes it exactly, and a negative one takes Y once more.
 * Quotients below 2^52 finish in one step, and each further step takes 51 more bits of the
 * exponent difference. Floats run this in double lanes, except that 8 of them whose quotients are
 * all below 2^22 (most data) take the same single step in float lanes, at a third of the cost. */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "internal.h"

/* Plain prototypes (see above: the simd attribute must stay out of this file). */
float yt__fmod_f32(float a, float b);
double yt__fmod_f64(double a, double b);

/* One step for 4 lanes: x mod Y, Y = y * 2^max(0, D - 51), D the exponent difference. Lanes with
 * x < y come out unchanged. Given 0 <= x < inf, y >= 2^-1022 (normal) or inf, and y's mantissa
 * bits in `y_significand`. */
static inline __m256d
fmod_step_pd(__m256d x, __m256d y, __m256i y_significand)
{
    const __m256i exponent_bits = _mm256_set1_epi64x(0x7ff0000000000000);
    const __m256i minus_51 = _mm256_set1_epi64x((int64_t)51 << 52);
    /* y's significand at x's exponent - 51. For x below 2^-971 that would leave the normal range;
     * the floor gives y's significand at 2^-1022 instead, at most y, and x / y < 2^52 there. */
    __m256d x_floor = _mm256_max_pd(x, _mm256_set1_pd(0x1p-971));
    __m256i x_exponent = _mm256_and_si256(_mm256_castpd_si256(x_floor), exponent_bits);
    __m256d scaled =
        _mm256_castsi256_pd(_mm256_or_si256(y_significand, _mm256_sub_epi64(x_exponent, minus_51)));
    __m256d modulus = _mm256_max_pd(y, scaled);
    __m256d q = _mm256_round_pd(_mm256_div_pd(x, modulus), _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __m256d r = _mm256_fnmadd_pd(q, modulus, x);
    __m256d negative = _mm256_cmp_pd(r, _mm256_setzero_pd(), _CMP_LT_OQ);
    r = _mm256_add_pd(r, _mm256_and_pd(negative, modulus));
    return _mm256_blendv_pd(x, r, _mm256_cmp_pd(x, y, _CMP_GE_OQ));
}

/* x mod y for `groups` groups of 4 lanes, under fmod_step_pd's conditions. The first step runs
 * unconditionally: whether a lane needs it depends on the data, so a branch on it would be
 * mispredicted. A second step is rare. */
YT_ALWAYS_INLINE void
fmod_groups_pd(__m256d *x, const __m256d *y, const __m256i *y_significand, int groups)
{
    for (;;) {
        __m256d more = _mm256_setzero_pd();
#pragma GCC unroll 2 /* the groups must stay in registers */
        for (int g = 0; g < groups; g++) {
            x[g] = fmod_step_pd(x[g], y[g], y_significand[g]);
            more = _mm256_or_pd(more, _mm256_cmp_pd(x[g], y[g], _CMP_GE_OQ));
        }
        if (_mm256_testz_pd(more, more))
            return;
    }
}

static inline __m256i
significand_bits(__m256d y)
{
    return _mm256_and_si256(_mm256_castpd_si256(y), _mm256_set1_epi64x(0x000fffffffffffff));
}

/* x mod y for 8 floats whose quotient x / y is below 2^22 (or x < y), in float: the argument of
 * fmod_step_pd with 2^23 for 2^53, so one step finishes. Lanes with x < y come out unchanged
 * (y = inf among them, where the fma would give 0 * inf). */
static inline __m256
fmod_near_ps(__m256 x, __m256 y)
{
    __m256 q = _mm256_round_ps(_mm256_div_ps(x, y), _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(q, y, x);
    r = _mm256_add_ps(r, _mm256_and_ps(_mm256_cmp_ps(r, _mm256_setzero_ps(), _CMP_LT_OQ), y));
    return _mm256_blendv_ps(x, r, _mm256_cmp_ps(x, y, _CMP_GE_OQ));
}

/* x mod y for 8 floats in double lanes, any quotient: a float is a normal double. */
static inline __m256
fmod_far_ps(__m256 x, __m256 y)
{
    __m256d xd[2] = {_mm256_cvtps_pd(_mm256_castps256_ps128(x)),
                     _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1))};
    __m256d yd[2] = {_mm256_cvtps_pd(_mm256_castps256_ps128(y)),
                     _mm256_cvtps_pd(_mm256_extractf128_ps(y, 1))};
    __m256i y_significand[2] = {significand_bits(yd[0]), significand_bits(yd[1])};
    fmod_groups_pd(xd, yd, y_significand, 2);
    return _mm256_set_m128(_mm256_cvtpd_ps(xd[1]), _mm256_cvtpd_ps(xd[0]));
}

/* fmod of 8 floats: in float when every quotient is below 2^22 (predictably so, in most data),
 * else in double. */
static __m256
fmod8_ps(__m256 a, __m256 b)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 x = _mm256_andnot_ps(sign, a), y = _mm256_andnot_ps(sign, b);
    /* NaN operands, an infinite a and b = 0 give NaN; the other lanes compute with x and y */
    __m256 ok = _mm256_and_ps(_mm256_cmp_ps(x, _mm256_set1_ps(INFINITY), _CMP_LT_OQ),
                              _mm256_cmp_ps(y, _mm256_setzero_ps(), _CMP_GT_OQ));
    x = _mm256_and_ps(ok, x);
    y = _mm256_blendv_ps(_mm256_set1_ps(1.0f), y, ok);
    __m256 near = _mm256_cmp_ps(x, _mm256_mul_ps(y, _mm256_set1_ps(0x1p22f)), _CMP_LT_OQ);
    __m256 r = _mm256_movemask_ps(near) == 0xff ? fmod_near_ps(x, y) : fmod_far_ps(x, y);
    r = _mm256_or_ps(r, _mm256_and_ps(sign, a)); /* a's sign */
    return _mm256_blendv_ps(_mm256_set1_ps(NAN), r, ok);
}

/* fmod of 4 doubles. A subnormal y is reduced in two stages: modulo y * 2^128 (a normal multiple of
 * y) first, then, both scaled by 2^64 (x is small enough by then), modulo y * 2^64; the result
 * scales back exactly. */
static __m256d
fmod4_pd(__m256d a, __m256d b)
{
    const __m256d sign = _mm256_set1_pd(-0.0), one = _mm256_set1_pd(1.0);
    __m256d x = _mm256_andnot_pd(sign, a), y = _mm256_andnot_pd(sign, b);
    __m256d ok = _mm256_and_pd(_mm256_cmp_pd(x, _mm256_set1_pd(INFINITY), _CMP_LT_OQ),
                               _mm256_cmp_pd(y, _mm256_setzero_pd(), _CMP_GT_OQ));
    x = _mm256_and_pd(ok, x);
    y = _mm256_blendv_pd(one, y, ok);
    __m256d subnormal = _mm256_cmp_pd(y, _mm256_set1_pd(0x1p-1022), _CMP_LT_OQ);
    __m256d modulus = _mm256_blendv_pd(y, _mm256_mul_pd(y, _mm256_set1_pd(0x1p128)), subnormal);
    __m256i significand = significand_bits(modulus);
    fmod_groups_pd(&x, &modulus, &significand, 1);
    if (!_mm256_testz_pd(subnormal, subnormal)) {
        __m256d scale = _mm256_blendv_pd(one, _mm256_set1_pd(0x1p64), subnormal);
        x = _mm256_mul_pd(x, scale);
        modulus = _mm256_mul_pd(y, scale);
        significand = significand_bits(modulus);
        fmod_groups_pd(&x, &modulus, &significand, 1);
        x = _mm256_mul_pd(x, _mm256_blendv_pd(one, _mm256_set1_pd(0x1p-64), subnormal));
    }
    __m256d r = _mm256_or_pd(x, _mm256_and_pd(sign, a));
    return _mm256_blendv_pd(_mm256_set1_pd(NAN), r, ok);
}

float
yt__fmod_f32(float a, float b)
{
    return _mm256_cvtss_f32(fmod8_ps(_mm256_set1_ps(a), _mm256_set1_ps(b)));
}

double
yt__fmod_f64(double a, double b)
{
    return _mm256_cvtsd_f64(fmod4_pd(_mm256_set1_pd(a), _mm256_set1_pd(b)));
}

/* The vector variants. The library builds for x86-64-v3, so b and c (called only from code built
 * for SSE or AVX alone) exist for completeness and use AVX2 too. Asm labels give them their ABI
 * names; -Wmissing-prototypes wants a declaration first. */
#define YT_FMOD_VARIANT(RET, NAME, ARGS, ABI_NAME) RET NAME ARGS __asm__(ABI_NAME)

YT_FMOD_VARIANT(__m128, fmod_f32_b4, (__m128 a, __m128 b), "_ZGVbN4vv_yt__fmod_f32");
YT_FMOD_VARIANT(__m256, fmod_f32_c8, (__m256 a, __m256 b), "_ZGVcN8vv_yt__fmod_f32");
YT_FMOD_VARIANT(__m256, fmod_f32_d8, (__m256 a, __m256 b), "_ZGVdN8vv_yt__fmod_f32");
YT_FMOD_VARIANT(__m512, fmod_f32_e16, (__m512 a, __m512 b), "_ZGVeN16vv_yt__fmod_f32");
YT_FMOD_VARIANT(__m128d, fmod_f64_b2, (__m128d a, __m128d b), "_ZGVbN2vv_yt__fmod_f64");
YT_FMOD_VARIANT(__m256d, fmod_f64_c4, (__m256d a, __m256d b), "_ZGVcN4vv_yt__fmod_f64");
YT_FMOD_VARIANT(__m256d, fmod_f64_d4, (__m256d a, __m256d b), "_ZGVdN4vv_yt__fmod_f64");
YT_FMOD_VARIANT(__m512d, fmod_f64_e8, (__m512d a, __m512d b), "_ZGVeN8vv_yt__fmod_f64");

__m128
fmod_f32_b4(__m128 a, __m128 b)
{
    const __m256 zero = _mm256_setzero_ps(); /* zero upper lanes finish at once */
    return _mm256_castps256_ps128(
        fmod8_ps(_mm256_insertf128_ps(zero, a, 0), _mm256_insertf128_ps(zero, b, 0)));
}

__m256
fmod_f32_c8(__m256 a, __m256 b)
{
    return fmod8_ps(a, b);
}

__m256
fmod_f32_d8(__m256 a, __m256 b)
{
    return fmod8_ps(a, b);
}

__attribute__((target("avx512f"))) __m512
fmod_f32_e16(__m512 a, __m512 b)
{
    __m512d a_bits = _mm512_castps_pd(a), b_bits = _mm512_castps_pd(b);
    __m256 lo = fmod8_ps(_mm512_castps512_ps256(a), _mm512_castps512_ps256(b));
    __m256 hi = fmod8_ps(_mm256_castpd_ps(_mm512_extractf64x4_pd(a_bits, 1)),
                         _mm256_castpd_ps(_mm512_extractf64x4_pd(b_bits, 1)));
    return _mm512_castpd_ps(
        _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(lo)), _mm256_castps_pd(hi), 1));
}

__m128d
fmod_f64_b2(__m128d a, __m128d b)
{
    const __m256d zero = _mm256_setzero_pd();
    return _mm256_castpd256_pd128(
        fmod4_pd(_mm256_insertf128_pd(zero, a, 0), _mm256_insertf128_pd(zero, b, 0)));
}

__m256d
fmod_f64_c4(__m256d a, __m256d b)
{
    return fmod4_pd(a, b);
}

__m256d
fmod_f64_d4(__m256d a, __m256d b)
{
    return fmod4_pd(a, b);
}

__attribute__((target("avx512f"))) __m512d
fmod_f64_e8(__m512d a, __m512d b)
{
    __m256d lo = fmod4_pd(_mm512_castpd512_pd256(a), _mm512_castpd512_pd256(b));
    __m256d hi = fmod4_pd(_mm512_extractf64x4_pd(a, 1), _mm512_extractf64x4_pd(b, 1));
    return _mm512_insertf64x4(_mm512_castpd256_pd512(lo), hi, 1);
}
