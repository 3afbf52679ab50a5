/* AVX2 helpers shared by the row-wise CPU kernels (softmax.c, logsumexp.c, sum.c, norm.c...):
 * an 8-lane f32 exp and log, horizontal folds, a row maximum, and masked loads for rows' tails.
 * The library builds with -march=x86-64-v3, so AVX2 and FMA are baseline
 * (tests/unit/test_vec_math.c checks exp8 and log8 against libm).
 *
 * exp8: e^x = 2^n * e^r with n = round(x / ln 2), r = x - n ln 2 (ln 2 split in two constants so
 * the reduction is exact), e^r from Cephes' degree-6 minimax polynomial on |r| <= ln(2)/2
 * (about 1 ulp). 2^n is applied as two factors so results down to the subnormal range stay right.
 * -inf gives 0, +inf and overflow give +inf, NaN stays NaN. */
#ifndef YT_KERNELS_CPU_VEC_MATH_H
#define YT_KERNELS_CPU_VEC_MATH_H

#include <immintrin.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#ifndef __AVX2__
#error "vec_math.h needs AVX2: put #pragma GCC target(\"avx2,fma\") before the includes"
#endif

static inline __m256
yt__exp8(__m256 x)
{
    const __m256 hi = _mm256_set1_ps(88.72283935546875f); /* largest x with a finite e^x */
    const __m256 lo = _mm256_set1_ps(-104.0f);            /* e^x rounds to 0 below this */
    __m256 xc = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
    __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), xc);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    /* 2^n with n in [-150, 128] as 2^n1 * 2^n2, each a normal float */
    __m256i ni = _mm256_cvtps_epi32(n);
    __m256i n1 = _mm256_srai_epi32(ni, 1);
    __m256i n2 = _mm256_sub_epi32(ni, n1);
    __m256 s1 =
        _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, _mm256_set1_epi32(127)), 23));
    __m256 s2 =
        _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, _mm256_set1_epi32(127)), 23));
    __m256 y = _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
    y = _mm256_blendv_ps(y, _mm256_set1_ps(__builtin_inff()), _mm256_cmp_ps(x, hi, _CMP_GT_OQ));
    return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q)); /* NaN in, NaN out */
}

static inline float
yt__hsum8(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline float
yt__hmax8(__m256 v)
{
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline float
yt__hmin8(__m256 v)
{
    __m128 s = _mm_min_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_min_ps(s, _mm_movehl_ps(s, s));
    s = _mm_min_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* log x, 8 lanes: x = m * 2^e with m in [sqrt(1/2), sqrt(2)), log m from Cephes' logf polynomial
 * in t = m - 1, plus e ln 2 (ln 2 split in two constants). Subnormals are scaled by 2^23 first.
 * Largest error 0.79 ulp against log() in double over every 37th positive float; 0 gives -inf, a
 * negative NaN, +inf +inf, NaN NaN. For rows' log(sum): one vector log for 8 rows, not 8 logf
 * calls. */
static inline __m256
yt__log8(__m256 x)
{
    const __m256 one = _mm256_set1_ps(1.0f);
    /* subnormals (and 0, negatives: replaced below) scaled into the normal range by 2^23 */
    __m256 tiny = _mm256_cmp_ps(x, _mm256_set1_ps(1.17549435e-38f), _CMP_LT_OQ);
    __m256 xs = _mm256_blendv_ps(x, _mm256_mul_ps(x, _mm256_set1_ps(8388608.0f)), tiny);
    __m256i bits = _mm256_castps_si256(xs);
    /* x = m * 2^e with m in [0.5, 1) */
    __m256i e = _mm256_sub_epi32(_mm256_srli_epi32(bits, 23), _mm256_set1_epi32(126));
    e = _mm256_sub_epi32(e, _mm256_and_si256(_mm256_castps_si256(tiny), _mm256_set1_epi32(23)));
    __m256 m = _mm256_castsi256_ps(_mm256_or_si256(
        _mm256_and_si256(bits, _mm256_set1_epi32(0x007fffff)), _mm256_set1_epi32(0x3f000000)));
    __m256 fe = _mm256_cvtepi32_ps(e);
    /* m below sqrt(1/2): use 2m and e - 1, so that t = m - 1 lies in [-0.29, 0.41] */
    __m256 low = _mm256_cmp_ps(m, _mm256_set1_ps(0.707106781186547524f), _CMP_LT_OQ);
    fe = _mm256_sub_ps(fe, _mm256_and_ps(low, one));
    __m256 t = _mm256_sub_ps(_mm256_add_ps(m, _mm256_and_ps(low, m)), one);
    __m256 z = _mm256_mul_ps(t, t);
    __m256 p = _mm256_set1_ps(7.0376836292e-2f);
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.1514610310e-1f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.1676998740e-1f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.2420140846e-1f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.4249322787e-1f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.6668057665e-1f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(2.0000714765e-1f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-2.4999993993e-1f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(3.3333331174e-1f));
    __m256 y = _mm256_mul_ps(_mm256_mul_ps(p, t), z);
    y = _mm256_fmadd_ps(fe, _mm256_set1_ps(-2.12194440e-4f), y);
    y = _mm256_fnmadd_ps(z, _mm256_set1_ps(0.5f), y);
    __m256 r = _mm256_add_ps(t, y);
    r = _mm256_fmadd_ps(fe, _mm256_set1_ps(0.693359375f), r);
    /* log 0 = -inf, log of a negative = NaN, log inf = inf, NaN stays */
    r = _mm256_blendv_ps(r, _mm256_set1_ps(-__builtin_inff()),
                         _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_EQ_OQ));
    r = _mm256_blendv_ps(r, _mm256_set1_ps(__builtin_nanf("")),
                         _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ));
    __m256 pass = _mm256_or_ps(_mm256_cmp_ps(x, x, _CMP_UNORD_Q),
                               _mm256_cmp_ps(x, _mm256_set1_ps(__builtin_inff()), _CMP_EQ_OQ));
    return _mm256_blendv_ps(r, x, pass);
}

/* All ones in the k < 8 low lanes, zeros in the others. */
static inline __m256
yt__tail_mask8(int64_t k)
{
    __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32((int)k), lanes));
}

/* All ones in the k < 8 high lanes, zeros in the others. */
static inline __m256
yt__top_mask8(int64_t k)
{
    __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_castsi256_ps(_mm256_cmpgt_epi32(lanes, _mm256_set1_epi32(7 - (int)k)));
}

/* The k < 8 floats at p in the low lanes, `fill` in the others; reads only those k. For the tails
 * of rows, so that they take one vector step instead of k scalar ones. (A fill that exp8 takes
 * below -87 makes subnormal intermediates, which cost a microcode assist each: mask exp8's
 * result instead.) */
static inline __m256
yt__load_tail8(const float *p, int64_t k, float fill)
{
    __m256 mask = yt__tail_mask8(k);
    return _mm256_blendv_ps(_mm256_set1_ps(fill), _mm256_maskload_ps(p, _mm256_castps_si256(mask)),
                            mask);
}

/* The largest of x[0..n), -inf for n == 0, 8 lanes at a time with one masked step for the tail.
 * A NaN may be dropped (max_ps keeps its second operand): callers that must see NaNs look for
 * them elsewhere (the exp-sum that follows). */
static inline float
yt__row_max8(const float *x, int64_t n)
{
    int64_t i = 0;
    __m256 a0 = _mm256_set1_ps(-__builtin_inff()), a1 = a0, a2 = a0, a3 = a0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm256_max_ps(a0, _mm256_loadu_ps(x + i));
        a1 = _mm256_max_ps(a1, _mm256_loadu_ps(x + i + 8));
        a2 = _mm256_max_ps(a2, _mm256_loadu_ps(x + i + 16));
        a3 = _mm256_max_ps(a3, _mm256_loadu_ps(x + i + 24));
    }
    for (; i + 8 <= n; i += 8)
        a0 = _mm256_max_ps(a0, _mm256_loadu_ps(x + i));
    if (i < n)
        a0 = _mm256_max_ps(a0, yt__load_tail8(x + i, n - i, -__builtin_inff()));
    return yt__hmax8(_mm256_max_ps(_mm256_max_ps(a0, a1), _mm256_max_ps(a2, a3)));
}

/* Transposes the 8 x 8 floats in r[0..8) in place: afterwards r[j] holds lane j of each of the old
 * rows. For reducing 8 short rows at once, each in one lane. Always inlined, so that the caller's
 * array can stay in registers (inlined late, it stayed on the stack: 30 -> 45 us for a sum over dim
 * 1 of [16384, 16]). */
static inline __attribute__((always_inline)) void
yt__transpose8_ps(__m256 *r)
{
    __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
    r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
    r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
    r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
    r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
    r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
    r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
    r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

/* Columns [j0, j0 + 8) of `rows` <= 8 rows (row r at x + r * row_stride, n floats), transposed:
 * c[j] holds column j0 + j, one row per lane. Past a row's end, and in missing rows, zeros. For
 * reducing 8 short rows at once (logsumexp.c, softmax.c). */
static inline __attribute__((always_inline)) void
yt__load_columns8(__m256 *c, const char *x, int64_t row_stride, int64_t rows, int64_t j0, int64_t n)
{
    for (int r = 0; r < 8; r++) {
        const float *p = (const float *)(x + r * row_stride) + j0;
        c[r] = r >= rows     ? _mm256_setzero_ps()
               : n - j0 >= 8 ? _mm256_loadu_ps(p)
                             : yt__load_tail8(p, n - j0, 0.0f);
    }
    yt__transpose8_ps(c);
}

/* Per lane, the maximum of columns c[0..n) (from yt__load_columns8): two accumulators, which
 * halve the chain of dependent steps. */
static inline __attribute__((always_inline)) __m256
yt__max_columns8(const __m256 *c, int64_t n)
{
    __m256 m0 = _mm256_set1_ps(-INFINITY), m1 = m0;
    int64_t j = 0;
    for (; j + 2 <= n; j += 2) {
        m0 = _mm256_max_ps(m0, c[j]);
        m1 = _mm256_max_ps(m1, c[j + 1]);
    }
    if (j < n)
        m0 = _mm256_max_ps(m0, c[j]);
    return _mm256_max_ps(m0, m1);
}

/* Per lane, the sum of e^(c[j] - shift) over columns c[0..n), two accumulators as above; with
 * keep (a constant where inlined) each e^(c[j] - shift) replaces c[j]. */
static inline __attribute__((always_inline)) __m256
yt__exp_sum_columns8(__m256 *c, int64_t n, __m256 shift, bool keep)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = s0;
    int64_t j = 0;
    for (; j + 2 <= n; j += 2) {
        __m256 e0 = yt__exp8(_mm256_sub_ps(c[j], shift));
        __m256 e1 = yt__exp8(_mm256_sub_ps(c[j + 1], shift));
        if (keep) {
            c[j] = e0;
            c[j + 1] = e1;
        }
        s0 = _mm256_add_ps(s0, e0);
        s1 = _mm256_add_ps(s1, e1);
    }
    if (j < n) {
        __m256 e0 = yt__exp8(_mm256_sub_ps(c[j], shift));
        if (keep)
            c[j] = e0;
        s0 = _mm256_add_ps(s0, e0);
    }
    return _mm256_add_ps(s0, s1);
}

/* Lane k of the result is the sum of v[k]'s 8 lanes: 8 rows' partial sums finished at once. Each
 * lane's sum depends on its own vector alone. Always inlined, as yt__transpose8_ps. */
static inline __attribute__((always_inline)) __m256
yt__hsum8x8(const __m256 *v)
{
    __m256 v01 = _mm256_hadd_ps(v[0], v[1]), v23 = _mm256_hadd_ps(v[2], v[3]);
    __m256 v45 = _mm256_hadd_ps(v[4], v[5]), v67 = _mm256_hadd_ps(v[6], v[7]);
    /* low halves: the sums of v[0..4)'s and v[4..8)'s low 4 lanes; high halves: of their high 4 */
    __m256 lo = _mm256_hadd_ps(v01, v23), hi = _mm256_hadd_ps(v45, v67);
    return _mm256_add_ps(_mm256_permute2f128_ps(lo, hi, 0x20),
                         _mm256_permute2f128_ps(lo, hi, 0x31));
}

/* Lane k of the result is the product of v[k]'s 8 lanes, as yt__hsum8x8 for sums (there is no
 * horizontal multiply): pairs of lanes, then of pairs, then the two halves. Each lane's product
 * depends on its own vector alone. Named values, not an array filled in a loop, which GCC kept on
 * the stack (prod over [65536, 4]: 125 -> 75 us). */
static inline __attribute__((always_inline)) __m256
yt__hprod8x8(const __m256 *v)
{
#define PAIRS(a, b) _mm256_mul_ps(_mm256_unpacklo_ps(a, b), _mm256_unpackhi_ps(a, b))
    /* per 128-bit half: a's lanes 0 * 2, b's 0 * 2, a's 1 * 3, b's 1 * 3 */
    __m256 p01 = PAIRS(v[0], v[1]), p23 = PAIRS(v[2], v[3]);
    __m256 p45 = PAIRS(v[4], v[5]), p67 = PAIRS(v[6], v[7]);
#undef PAIRS
    /* the products of each half of v[0..4) and of v[4..8), one per lane */
    __m256 lo = _mm256_mul_ps(_mm256_shuffle_ps(p01, p23, 0x44), _mm256_shuffle_ps(p01, p23, 0xEE));
    __m256 hi = _mm256_mul_ps(_mm256_shuffle_ps(p45, p67, 0x44), _mm256_shuffle_ps(p45, p67, 0xEE));
    return _mm256_mul_ps(_mm256_permute2f128_ps(lo, hi, 0x20),
                         _mm256_permute2f128_ps(lo, hi, 0x31));
}

/* Scalar e^x through the same polynomial, for loop tails: results do not depend on alignment. */
static inline float
yt__exp1(float x)
{
    return _mm256_cvtss_f32(yt__exp8(_mm256_set1_ps(x)));
}

/* e^x, 4 f64 lanes, in the way of yt__exp8: n = round(x / ln 2), r = x - n ln 2 with ln 2 in two
 * parts (fdlibm's: n * ln2_hi is exact for |n| < 2^11), e^r from its Taylor series to degree 13 on
 * |r| <= ln(2)/2 (truncation below 5e-18 relative), 2^n as two normal factors. Overflow gives
 * +inf, -inf and underflow 0, NaN stays NaN. Within one ulp of expl (0.97 over the normal range,
 * tests/unit/test_vec_math.c). */
static inline __m256d
yt__exp4d(__m256d x)
{
    const __m256d hi = _mm256_set1_pd(709.782712893383973096); /* largest x with a finite e^x */
    const __m256d lo = _mm256_set1_pd(-746.0);                 /* e^x rounds to 0 below this */
    __m256d xc = _mm256_min_pd(_mm256_max_pd(x, lo), hi);
    __m256d n = _mm256_round_pd(_mm256_mul_pd(xc, _mm256_set1_pd(1.44269504088896338700)),
                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256d r = _mm256_fnmadd_pd(n, _mm256_set1_pd(6.93147180369123816490e-01), xc);
    r = _mm256_fnmadd_pd(n, _mm256_set1_pd(1.90821492927058770002e-10), r);
    static const double inverse_factorials[] = {
        1.0 / 6227020800.0, 1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0,
        1.0 / 362880.0,     1.0 / 40320.0,     1.0 / 5040.0,     1.0 / 720.0,
        1.0 / 120.0,        1.0 / 24.0,        1.0 / 6.0,        1.0 / 2.0};
    __m256d p = _mm256_set1_pd(inverse_factorials[0]);
    for (int k = 1; k < 12; k++)
        p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(inverse_factorials[k]));
    /* 1 + (r + r^2 p): the small terms summed first, one rounding at 1 */
    p = _mm256_add_pd(_mm256_set1_pd(1.0), _mm256_fmadd_pd(p, _mm256_mul_pd(r, r), r));
    /* 2^n with n in [-1077, 1024] as 2^n1 * 2^n2, each a normal double */
    __m128i ni = _mm256_cvtpd_epi32(n);
    __m128i n1 = _mm_srai_epi32(ni, 1), n2 = _mm_sub_epi32(ni, n1);
    const __m256i bias = _mm256_set1_epi64x(1023);
    __m256d s1 = _mm256_castsi256_pd(
        _mm256_slli_epi64(_mm256_add_epi64(_mm256_cvtepi32_epi64(n1), bias), 52));
    __m256d s2 = _mm256_castsi256_pd(
        _mm256_slli_epi64(_mm256_add_epi64(_mm256_cvtepi32_epi64(n2), bias), 52));
    __m256d y = _mm256_mul_pd(_mm256_mul_pd(p, s1), s2);
    y = _mm256_blendv_pd(y, _mm256_set1_pd(__builtin_inf()), _mm256_cmp_pd(x, hi, _CMP_GT_OQ));
    return _mm256_blendv_pd(y, x, _mm256_cmp_pd(x, x, _CMP_UNORD_Q)); /* NaN in, NaN out */
}

static inline double
yt__hsum4d(__m256d v)
{
    __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}

/* The largest of x[0..n), -inf for n == 0: yt__row_max8 for f64, the last 0-3 one by one. A NaN
 * may be dropped, as there. */
static inline double
yt__row_max4d(const double *x, int64_t n)
{
    int64_t i = 0;
    __m256d a = _mm256_set1_pd(-__builtin_inf());
    for (; i + 4 <= n; i += 4)
        a = _mm256_max_pd(a, _mm256_loadu_pd(x + i));
    __m128d h = _mm_max_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
    double m = _mm_cvtsd_f64(_mm_max_sd(h, _mm_unpackhi_pd(h, h)));
    for (; i < n; i++)
        m = x[i] > m ? x[i] : m;
    return m;
}

/* Scalar e^x through yt__exp4d, for loop tails. */
static inline double
yt__exp1d(double x)
{
    return _mm256_cvtsd_f64(yt__exp4d(_mm256_set1_pd(x)));
}

#endif
