/* Stepped copies (runtime/stepped_copy.h).
 *
 * Element by element they cost about 0.27 ns an element on this machine (a scalar store each,
 * whatever the step), four times a contiguous f32 loop's 0.07. So 4- and 8-byte elements move a
 * vector at a time:
 * - gathers: every 2nd element by two loads, a shuffle and a permute; every 3rd, 5th or 7th by
 *   blending the vectors they span and one permute (gather_odd_step); other steps by loading a
 *   vector's elements one by one and storing it whole (stored one by one, each load waited on the
 *   stores before it: exp(a[:, ::3]) 0.44-0.52x of contiguous, against 0.49-0.63x). AVX2's gather
 *   instructions measured 0.15x from memory; AVX-512 two-source permutes, for every 2nd element,
 *   0.41-0.45x against 0.55-0.62x for the shuffles (-a[:, ::2], bench/strided);
 * - scatters: for steps of 2 to MAX_LANE_STEP elements, a permute and a store masked to the
 *   stepped elements' lanes, which leaves the elements between untouched (AVX-512VL, BW and DQ,
 *   chosen at run time as the library is built for x86-64-v3; AVX2's masked store, vmaskmovps,
 *   took 0.85 ns an element); otherwise a vector's lanes stored one by one.
 * The vector loops stop short of reading past the last element. */
#include <stdbool.h>
#include <string.h>

#ifdef __x86_64__
#include <immintrin.h>
#endif

#include "stepped_copy.h"
#ifdef __x86_64__
#include "stepped_lanes.h"
#endif

#ifdef __x86_64__
/* Largest step, in elements, that the masked stores take (each 8-lane vector of the row then
 * still holds an element). */
enum { MAX_LANE_STEP = 8 };

/* With BW and DQ as well (every AVX-512VL CPU yaten meets has them), GCC 12 keeps the stores'
 * masks in mask registers across the loop; with F and VL alone it moved each one in with a kmovw
 * per store, beside the permutes on the same port (4000 elements in L1: 0.72 -> 0.44 us). */
#define AVX512VL __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq")))

/* Scatters into a row m elements apart (m and es constants where inlined, so that the lane
 * tables below fold into constants): a vector of the buffer spans m vectors of the row; lane l of
 * the row's vector q takes the buffer's element (q * lanes + l) / m, where m divides
 * q * lanes + l, by a permute and a store masked to those lanes. 256-bit vectors: 512-bit masked
 * stores took 0.10 ns an element where these took 0.07 (in L1). Returns the elements done: a
 * multiple of the vector's. */
AVX512VL YT_ALWAYS_INLINE int64_t
scatter_masked(char *dst, const char *src, int m, int64_t es, int64_t n)
{
    const int lanes = (int)(32 / es);
    int32_t index[MAX_LANE_STEP][8];
    unsigned mask[MAX_LANE_STEP];
    for (int q = 0; q < m; q++) {
        mask[q] = 0;
        for (int l = 0; l < lanes; l++) {
            const int at = q * lanes + l, element = at / m % lanes;
            const int per = (int)(es / 4); /* 4-byte lanes to an element */
            for (int h = 0; h < per; h++) {
                index[q][l * per + h] = element * per + h;
                if (at % m == 0)
                    mask[q] |= 1u << (l * per + h);
            }
        }
    }
    __m256i idx[MAX_LANE_STEP];
    __mmask8 keep[MAX_LANE_STEP];
    for (int q = 0; q < m; q++) {
        idx[q] = _mm256_loadu_si256((const __m256i *)index[q]);
        keep[q] = (__mmask8)mask[q];
    }
    int64_t j = 0;
    for (; j + lanes <= n; j += lanes) {
        const __m256 v = _mm256_loadu_ps((const float *)(src + j * es));
        char *to = dst + j * m * es;
        for (int q = 0; q < m; q++)
            _mm256_mask_storeu_ps(to + 32 * q, keep[q], _mm256_permutevar8x32_ps(v, idx[q]));
    }
    return j;
}

/* scatter_masked for a step of 2 to MAX_LANE_STEP 4- or 8-byte elements; 0 done otherwise. */
AVX512VL static int64_t
scatter_masked_any(char *dst, int64_t step, const char *src, int64_t es, int64_t n)
{
#define STEP(m)                                                                                    \
    case (m):                                                                                      \
        return es == 4 ? scatter_masked(dst, src, (m), 4, n) : scatter_masked(dst, src, (m), 8, n)
    switch (step % es == 0 && (es == 4 || es == 8) ? step / es : 0) {
        STEP(2);
        STEP(3);
        STEP(4);
        STEP(5);
        STEP(6);
        STEP(7);
        STEP(8);
    default:
        return 0;
    }
#undef STEP
}
#endif

/* Whatever the vector loops left, element by element, for element sizes the compiler sees. */
#define ONE_BY_ONE(copy_one)                                                                       \
    do {                                                                                           \
        switch (es) {                                                                              \
        case 1:                                                                                    \
            for (; j < n; j++)                                                                     \
                copy_one(1);                                                                       \
            break;                                                                                 \
        case 2:                                                                                    \
            for (; j < n; j++)                                                                     \
                copy_one(2);                                                                       \
            break;                                                                                 \
        case 4:                                                                                    \
            for (; j < n; j++)                                                                     \
                copy_one(4);                                                                       \
            break;                                                                                 \
        case 8:                                                                                    \
            for (; j < n; j++)                                                                     \
                copy_one(8);                                                                       \
            break;                                                                                 \
        default:                                                                                   \
            for (; j < n; j++)                                                                     \
                copy_one(es);                                                                      \
            break;                                                                                 \
        }                                                                                          \
    } while (0)

#ifdef __AVX2__
/* Largest odd step, in elements, gathered by blends and a permute. */
enum { MAX_BLEND_STEP = 7 };

/* A vector's worth of elements an odd number m of elements apart spans m vectors of the row,
 * and element l sits at lane (l * m) % lanes of vector (l * m) / lanes: with m odd no two share a
 * lane, so blending the m vectors puts every element in a lane of its own, and one permute puts
 * them in order. Returns the elements done (a multiple of the vector's). Inlined with m and es
 * constants, so that the blends unroll (a loop over them ran at half the speed). */
YT_ALWAYS_INLINE int64_t
gather_odd_step(char *dst, const char *src, int m, int64_t es, int64_t n)
{
    const int lanes = (int)(32 / es);
    int32_t from_vector[8], lane_of[8];
    for (int l = 0; l < lanes; l++) {
        from_vector[l * m % lanes] = l * m / lanes;
        lane_of[l] = l * m % lanes;
    }
    __m256 take[MAX_BLEND_STEP];
    __m256i order;
    if (es == 4) {
        const __m256i vector = _mm256_loadu_si256((const __m256i *)from_vector);
        for (int q = 0; q < m; q++)
            take[q] = _mm256_castsi256_ps(_mm256_cmpeq_epi32(vector, _mm256_set1_epi32(q)));
        order = _mm256_loadu_si256((const __m256i *)lane_of);
    } else { /* 8-byte elements: pairs of 4-byte lanes */
        const __m256i vector =
            _mm256_setr_epi32(from_vector[0], from_vector[0], from_vector[1], from_vector[1],
                              from_vector[2], from_vector[2], from_vector[3], from_vector[3]);
        for (int q = 0; q < m; q++)
            take[q] = _mm256_castsi256_ps(_mm256_cmpeq_epi32(vector, _mm256_set1_epi32(q)));
        order = _mm256_setr_epi32(2 * lane_of[0], 2 * lane_of[0] + 1, 2 * lane_of[1],
                                  2 * lane_of[1] + 1, 2 * lane_of[2], 2 * lane_of[2] + 1,
                                  2 * lane_of[3], 2 * lane_of[3] + 1);
    }
    int64_t j = 0;
    /* the last vector read ends m - 1 elements past element j + lanes - 1 */
    for (; j + lanes + 1 <= n; j += lanes) {
        const char *from = src + j * m * es;
        __m256 v = _mm256_loadu_ps((const float *)from);
        for (int q = 1; q < m; q++)
            v = _mm256_blendv_ps(v, _mm256_loadu_ps((const float *)(from + 32 * q)), take[q]);
        _mm256_storeu_ps((float *)(dst + j * es), _mm256_permutevar8x32_ps(v, order));
    }
    return j;
}
#endif

/* An element's bits as a float or a double (through memcpy: the element may be any 4- or 8-byte
 * dtype); moves only, so NaN payloads and integers come through exactly. */
static inline float
load_f32(const char *at)
{
    float v;
    memcpy(&v, at, 4);
    return v;
}

static inline double
load_f64(const char *at)
{
    double v;
    memcpy(&v, at, 8);
    return v;
}

void
yt__gather_elements(char *dst, const char *src, int64_t step, int64_t es, int64_t n)
{
    int64_t j = 0;
#ifdef __AVX2__
    if (es == 4 && step == 8) {
        for (; j + 9 <= n; j += 8) {
            const __m256 lo = _mm256_loadu_ps((const float *)(src + j * 8));
            const __m256 hi = _mm256_loadu_ps((const float *)(src + j * 8 + 32));
            /* lanes 0-3: elements 0 1 4 5, lanes 4-7: 2 3 6 7; then the pairs in order */
            const __m256 even = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
            const __m256d pairs =
                _mm256_permute4x64_pd(_mm256_castps_pd(even), _MM_SHUFFLE(3, 1, 2, 0));
            _mm256_storeu_pd((double *)(dst + j * 4), pairs);
        }
    } else if (es == 8 && step == 16) {
        for (; j + 5 <= n; j += 4) {
            const __m256d lo = _mm256_loadu_pd((const double *)(src + j * 16));
            const __m256d hi = _mm256_loadu_pd((const double *)(src + j * 16 + 32));
            const __m256d even = _mm256_unpacklo_pd(lo, hi); /* elements 0 2 1 3 */
            _mm256_storeu_pd((double *)(dst + j * 8),
                             _mm256_permute4x64_pd(even, _MM_SHUFFLE(3, 1, 2, 0)));
        }
    } else if (es == 4 && step == 12) {
        j = gather_odd_step(dst, src, 3, 4, n);
    } else if (es == 4 && step == 20) {
        j = gather_odd_step(dst, src, 5, 4, n);
    } else if (es == 4 && step == 28) {
        j = gather_odd_step(dst, src, 7, 4, n);
    } else if (es == 8 && step == 24) {
        j = gather_odd_step(dst, src, 3, 8, n);
    } else if (es == 4) {
        for (; j + 8 <= n; j += 8) {
            const char *at = src + j * step;
#define AT(u) load_f32(at + (u)*step)
            _mm256_storeu_ps((float *)(dst + j * 4), _mm256_setr_ps(AT(0), AT(1), AT(2), AT(3),
                                                                    AT(4), AT(5), AT(6), AT(7)));
#undef AT
        }
    } else if (es == 8) {
        for (; j + 4 <= n; j += 4) {
            const char *at = src + j * step;
#define AT(u) load_f64(at + (u)*step)
            _mm256_storeu_pd((double *)(dst + j * 8), _mm256_setr_pd(AT(0), AT(1), AT(2), AT(3)));
#undef AT
        }
    }
#endif
#define GATHER_ONE(e) memcpy(dst + j * (e), src + j * step, (size_t)(e))
    ONE_BY_ONE(GATHER_ONE);
#undef GATHER_ONE
}

void
yt__scatter_elements(char *dst, int64_t step, const char *src, int64_t es, int64_t n)
{
    int64_t j = 0;
#ifdef __x86_64__
    if (yt__cpu_isa() == YT__ISA_AVX512)
        j = scatter_masked_any(dst, step, src, es, n);
#endif
#ifdef __AVX2__
    if (j > 0) {
        /* the AVX-512 loop did the vectors */
    } else if (es == 4) {
        for (; j + 8 <= n; j += 8) {
            const __m256 v = _mm256_loadu_ps((const float *)(src + j * 4));
            const __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
            char *at = dst + j * step;
            /* lane bits through memcpy: the elements may be any 4-byte dtype */
#define LANE(u, half, l)                                                                           \
    do {                                                                                           \
        const int32_t bits = _mm_extract_ps(half, l);                                              \
        memcpy(at + (u)*step, &bits, 4);                                                           \
    } while (0)
            LANE(0, lo, 0);
            LANE(1, lo, 1);
            LANE(2, lo, 2);
            LANE(3, lo, 3);
            LANE(4, hi, 0);
            LANE(5, hi, 1);
            LANE(6, hi, 2);
            LANE(7, hi, 3);
#undef LANE
        }
    } else if (es == 8) {
        for (; j + 4 <= n; j += 4) {
            const __m256d v = _mm256_loadu_pd((const double *)(src + j * 8));
            const __m128d lo = _mm256_castpd256_pd128(v), hi = _mm256_extractf128_pd(v, 1);
            char *at = dst + j * step;
            _mm_storel_pd((double *)at, lo);
            _mm_storeh_pd((double *)(at + step), lo);
            _mm_storel_pd((double *)(at + 2 * step), hi);
            _mm_storeh_pd((double *)(at + 3 * step), hi);
        }
    }
#endif
#define SCATTER_ONE(e) memcpy(dst + j * step, src + j * (e), (size_t)(e))
    ONE_BY_ONE(SCATTER_ONE);
#undef SCATTER_ONE
}
