/* AVX-512 forms of vec_math.h's helpers, for kernels that pick them at run time where the CPU has
 * AVX-512 (yt__cpu_isa): the library's baseline is x86-64-v3, so every function here carries its
 * own target attribute, and so must its callers (YT_AVX512).
 *
 * yt__exp16 is yt__exp8 on 16 lanes, the same steps in the same order: identical values lane by
 * lane, so a row's result does not depend on which width computed it. */
#ifndef YT_KERNELS_CPU_VEC_MATH512_H
#define YT_KERNELS_CPU_VEC_MATH512_H

#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#define YT_AVX512 __attribute__((target("avx512f,avx2,fma")))

/* Lanes 8-15 of v (AVX-512F has no f32 form of this extract; it moves the bits alike). */
YT_AVX512 static inline __attribute__((always_inline)) __m256
yt__high8(__m512 v)
{
    return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}

/* yt__max_columns8 (vec_math.h) on 16 lanes: the same two accumulators in the same order. */
YT_AVX512 static inline __attribute__((always_inline)) __m512
yt__max_columns16(const __m512 *c, int64_t n)
{
    __m512 m0 = _mm512_set1_ps(-INFINITY), m1 = m0;
    int64_t j = 0;
    for (; j + 2 <= n; j += 2) {
        m0 = _mm512_max_ps(m0, c[j]);
        m1 = _mm512_max_ps(m1, c[j + 1]);
    }
    if (j < n)
        m0 = _mm512_max_ps(m0, c[j]);
    return _mm512_max_ps(m0, m1);
}

YT_AVX512 static inline __m512
yt__exp16(__m512 x)
{
    const __m512 hi = _mm512_set1_ps(88.72283935546875f), lo = _mm512_set1_ps(-104.0f);
    __m512 xc = _mm512_min_ps(_mm512_max_ps(x, lo), hi);
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), xc);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    __m512i ni = _mm512_cvtps_epi32(n);
    __m512i n1 = _mm512_srai_epi32(ni, 1);
    __m512i n2 = _mm512_sub_epi32(ni, n1);
    __m512 s1 =
        _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n1, _mm512_set1_epi32(127)), 23));
    __m512 s2 =
        _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n2, _mm512_set1_epi32(127)), 23));
    __m512 y = _mm512_mul_ps(_mm512_mul_ps(p, s1), s2);
    y = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, hi, _CMP_GT_OQ), y,
                             _mm512_set1_ps(__builtin_inff()));
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), y, x);
}

/* The sum of e^(c[j] - shift) over columns c[0..n), as yt__exp_sum_columns8 (vec_math.h) adds
 * them, on 16 lanes. */
YT_AVX512 static inline __attribute__((always_inline)) __m512
yt__exp_sum_columns16(const __m512 *c, int64_t n, __m512 shift)
{
    __m512 s0 = _mm512_setzero_ps(), s1 = s0;
    int64_t j = 0;
    for (; j + 2 <= n; j += 2) {
        s0 = _mm512_add_ps(s0, yt__exp16(_mm512_sub_ps(c[j], shift)));
        s1 = _mm512_add_ps(s1, yt__exp16(_mm512_sub_ps(c[j + 1], shift)));
    }
    if (j < n)
        s0 = _mm512_add_ps(s0, yt__exp16(_mm512_sub_ps(c[j], shift)));
    return _mm512_add_ps(s0, s1);
}

#endif
