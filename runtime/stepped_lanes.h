/* One 512-bit vector of a row's elements (16 f32 or 8 f64) that lie 0, 1, 2 or 3 elements
 * apart, moved between the row and an array of lanes in order: how the stepped form of a generated
 * pointwise loop (OP_stepped_DTYPE, generated/kernels_pointwise_N.c) reads and writes operands
 * such as x[:, ::2] and x[..., ::3] in registers, with no buffers between a gather, the loop and a
 * scatter (runtime/pointwise.c, takes_stepped).
 *
 * Inlined, the lanes arrays stay in registers; each operand's step is tested per vector, a test
 * that folds away where the step is a constant (the generated loops pass the common ones so:
 * codegen/lower.py, _step_cases) and is otherwise a branch that never changes along a row.
 * 512-bit vectors, so that a vector of 16 elements pays those branches once: with 8 f32 a vector
 * the taken branches bounded the loop (a[:, ::2] *= 1 on [65, 1000] f32, one thread: 22-24 us,
 * against 20-22 through buffers and 12-15 with these), and 4 vectors of 8 to a test went through
 * the stack. A step of 2 is one two-source permute; of 3, two; a store to a stepped row is a
 * permute and a store masked to its elements' lanes per vector of the row, so the elements
 * between are neither read for the store nor written (another thread may own them). That needs
 * AVX-512 (F, VL, BW, DQ as in runtime/stepped_copy.c), so these, and the loops that inline them,
 * are built for it; each loop has a second form built for AVX2 (the _avx2 functions at the end),
 * and the call chooses at run time (yt__stepped_form). Reads from memory fetch their lines a page
 * ahead (yt__lanes_fetch_ahead, the form's `fetch`). A contiguous output too large for the caches
 * is stored around them, vector by vector (yt__lanes_stream_f32 and the like, the form's
 * `stream`).
 *
 * A vector of lanes read from a row stepped m > 1 elements apart spans m vectors of the row, up to
 * m - 1 elements past its last lane: callers run them while a further element of the row follows
 * (YT__STEPPED_FITS), so nothing past a row's last element is read (the fetches ahead may name
 * lines past it: a prefetch never faults). */
#ifndef YT_RUNTIME_STEPPED_LANES_H
#define YT_RUNTIME_STEPPED_LANES_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <immintrin.h>

#include "cpu_isa.h"
#include "internal.h"

#define YT__STEPPED_TARGET                                                                         \
    __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,prefer-vector-width=512")))

/* Whether `lanes` lanes starting at element i of a row of n elements may be read or written in
 * full, whatever their step (1 to 3 elements). */
#define YT__STEPPED_FITS(i, lanes, n) ((i) + (lanes) < (n))

/* The form of a loop to pass yt__pointwise as its stepped form: the AVX-512 one where the CPU
 * runs it, else the AVX2 one, else none (its rows then go through buffers). */
static inline yt__stepped_fn
yt__stepped_form(yt__stepped_fn avx512, yt__stepped_fn avx2)
{
    switch (yt__cpu_isa()) {
    case YT__ISA_AVX512:
        return avx512;
    case YT__ISA_AVX2:
        return avx2;
    default:
        return NULL;
    }
}

/* Lanes of a stepped form's arrays: one 512-bit vector, 16 f32 or 8 f64 */
#define YT__STEPPED_LANES_F32 16
#define YT__STEPPED_LANES_F64 8

/* A permute's index vector whose lane l is f(l), f a macro: constants, folded by the compiler. */
#define YT__IDX16(f)                                                                               \
    _mm512_setr_epi32(f(0), f(1), f(2), f(3), f(4), f(5), f(6), f(7), f(8), f(9), f(10), f(11),    \
                      f(12), f(13), f(14), f(15))

/* Bytes ahead along a stepped row at which yt__lanes_fetch_ahead fetches. */
enum { YT__STEPPED_AHEAD = 4096 };

/* With `fetch`, fetches into L1 the lines that the vector of lanes `step` bytes apart (2 or 3
 * elements of es bytes) YT__STEPPED_AHEAD bytes further along the row will read. From memory, the
 * hardware's prefetchers alone left the stepped loops waiting on their input's lines, which span 2
 * or 3 times a contiguous row's. bench/strided, one thread, against contiguous, the previous
 * library and this one alternately (Zen 3, the AVX2 form): exp(a[:, ::3]) [10000, 1000] f32
 * 0.46-0.53x -> 0.50-0.61x, a[:, ::2] *= 1 0.43-0.48x -> 0.48-0.60x; other stepped cases and
 * sizes moved within their noise, and 2 or 8 KiB ahead did as well. On Zen 4 (the AVX-512 form),
 * at [10000, 1000] they helped exp(a[:, ::3]) (0.62-0.65x of contiguous against 0.57-0.58x) and
 * a[:, ::2] + b (0.72-0.74x against 0.66-0.67x), but cost a[:, ::2] *= 1. From the caches they
 * only cost, so the caller asks for them only where the operands come from memory
 * (runtime/pointwise.c, it->prefetch), and not in place on one operand in the AVX-512 form
 * (skips_fetches there). Contiguous operands (step == es) are left to the hardware. */
YT_ALWAYS_INLINE void
yt__lanes_fetch_ahead(const char *at, int64_t step, int64_t es, bool fetch)
{
    if (step <= es || !fetch)
        return;
    const char *ahead = at + YT__STEPPED_AHEAD;
    __builtin_prefetch(ahead, 0, 3);
    __builtin_prefetch(ahead + 64, 0, 3);
    if (step == 3 * es)
        __builtin_prefetch(ahead + 128, 0, 3);
}

/* 16 floats `step` bytes apart (0, 4, 8 or 12) from `at` into lanes. */
YT__STEPPED_TARGET YT_ALWAYS_INLINE void
yt__lanes_load_f32(float *lanes, const char *at, int64_t step, bool fetch)
{
    const float *p = (const float *)at;
    yt__lanes_fetch_ahead(at, step, 4, fetch);
    __m512 v;
    if (step == 4) {
        v = _mm512_loadu_ps(p);
    } else if (step == 8) {
#define EVEN(l) (2 * (l))
        v = _mm512_permutex2var_ps(_mm512_loadu_ps(p), YT__IDX16(EVEN), _mm512_loadu_ps(p + 16));
#undef EVEN
    } else if (step == 12) {
        /* elements 0-10 from the first two vectors, 11-15 from the third */
#define THIRD(l) (3 * (l) % 32)
        v = _mm512_permutex2var_ps(_mm512_loadu_ps(p), YT__IDX16(THIRD), _mm512_loadu_ps(p + 16));
        v = _mm512_mask_permutexvar_ps(v, 0xF800, YT__IDX16(THIRD), _mm512_loadu_ps(p + 32));
#undef THIRD
    } else {
        v = _mm512_set1_ps(p[0]);
    }
    _mm512_storeu_ps(lanes, v);
}

/* lanes to 16 floats `step` bytes apart (4, 8 or 12) from `at`; the elements between are not
 * touched. */
YT__STEPPED_TARGET YT_ALWAYS_INLINE void
yt__lanes_store_f32(char *at, int64_t step, const float *lanes)
{
    float *p = (float *)at;
    const __m512 v = _mm512_loadu_ps(lanes);
    if (step == 4) {
        _mm512_storeu_ps(p, v);
    } else if (step == 8) {
#define HALF(l)    ((l) / 2)
#define HALF_HI(l) (8 + (l) / 2)
        _mm512_mask_storeu_ps(p, 0x5555, _mm512_permutexvar_ps(YT__IDX16(HALF), v));
        _mm512_mask_storeu_ps(p + 16, 0x5555, _mm512_permutexvar_ps(YT__IDX16(HALF_HI), v));
#undef HALF
#undef HALF_HI
    } else {
        /* lane j of row vector q takes element (16q + j) / 3 where 3 divides 16q + j */
#define Q0(j) ((j) / 3)
#define Q1(j) ((16 + (j)) / 3)
#define Q2(j) ((32 + (j)) / 3 % 16)
        _mm512_mask_storeu_ps(p, 0x9249, _mm512_permutexvar_ps(YT__IDX16(Q0), v));
        _mm512_mask_storeu_ps(p + 16, 0x4924, _mm512_permutexvar_ps(YT__IDX16(Q1), v));
        _mm512_mask_storeu_ps(p + 32, 0x2492, _mm512_permutexvar_ps(YT__IDX16(Q2), v));
#undef Q0
#undef Q1
#undef Q2
    }
}

/* yt__lanes_store_f32, but a contiguous row's 16 floats (step 4) that start a line are stored
 * around the caches (a stepped form's `stream`, see yt__stepped_fn); elsewhere plainly. */
YT__STEPPED_TARGET YT_ALWAYS_INLINE void
yt__lanes_stream_f32(char *at, int64_t step, const float *lanes)
{
    if (step == 4 && (uintptr_t)at % 64 == 0)
        _mm512_stream_ps((float *)at, _mm512_loadu_ps(lanes));
    else
        yt__lanes_store_f32(at, step, lanes);
}

/* YT__IDX16 for 8 lanes of 8 bytes */
#define YT__IDX8(f) _mm512_setr_epi64(f(0), f(1), f(2), f(3), f(4), f(5), f(6), f(7))

/* 8 doubles `step` bytes apart (0, 8, 16 or 24) from `at` into lanes. */
YT__STEPPED_TARGET YT_ALWAYS_INLINE void
yt__lanes_load_f64(double *lanes, const char *at, int64_t step, bool fetch)
{
    const double *p = (const double *)at;
    yt__lanes_fetch_ahead(at, step, 8, fetch);
    __m512d v;
    if (step == 8) {
        v = _mm512_loadu_pd(p);
    } else if (step == 16) {
#define EVEN(l) (2 * (l))
        v = _mm512_permutex2var_pd(_mm512_loadu_pd(p), YT__IDX8(EVEN), _mm512_loadu_pd(p + 8));
#undef EVEN
    } else if (step == 24) {
        /* elements 0-5 from the first two vectors, 6-7 from the third */
#define THIRD(l) (3 * (l) % 16)
        v = _mm512_permutex2var_pd(_mm512_loadu_pd(p), YT__IDX8(THIRD), _mm512_loadu_pd(p + 8));
        v = _mm512_mask_permutexvar_pd(v, 0xC0, YT__IDX8(THIRD), _mm512_loadu_pd(p + 16));
#undef THIRD
    } else {
        v = _mm512_set1_pd(p[0]);
    }
    _mm512_storeu_pd(lanes, v);
}

/* lanes to 8 doubles `step` bytes apart (8, 16 or 24) from `at`; the elements between are not
 * touched. */
YT__STEPPED_TARGET YT_ALWAYS_INLINE void
yt__lanes_store_f64(char *at, int64_t step, const double *lanes)
{
    double *p = (double *)at;
    const __m512d v = _mm512_loadu_pd(lanes);
    if (step == 8) {
        _mm512_storeu_pd(p, v);
    } else if (step == 16) {
#define HALF(l)    ((l) / 2)
#define HALF_HI(l) (4 + (l) / 2)
        _mm512_mask_storeu_pd(p, 0x55, _mm512_permutexvar_pd(YT__IDX8(HALF), v));
        _mm512_mask_storeu_pd(p + 8, 0x55, _mm512_permutexvar_pd(YT__IDX8(HALF_HI), v));
#undef HALF
#undef HALF_HI
    } else {
#define Q0(j) ((j) / 3)
#define Q1(j) ((8 + (j)) / 3)
#define Q2(j) ((16 + (j)) / 3 % 8)
        _mm512_mask_storeu_pd(p, 0x49, _mm512_permutexvar_pd(YT__IDX8(Q0), v));
        _mm512_mask_storeu_pd(p + 8, 0x92, _mm512_permutexvar_pd(YT__IDX8(Q1), v));
        _mm512_mask_storeu_pd(p + 16, 0x24, _mm512_permutexvar_pd(YT__IDX8(Q2), v));
#undef Q0
#undef Q1
#undef Q2
    }
}

/* yt__lanes_stream_f32 for 8 doubles (step 8) */
YT__STEPPED_TARGET YT_ALWAYS_INLINE void
yt__lanes_stream_f64(char *at, int64_t step, const double *lanes)
{
    if (step == 8 && (uintptr_t)at % 64 == 0)
        _mm512_stream_pd((double *)at, _mm512_loadu_pd(lanes));
    else
        yt__lanes_store_f64(at, step, lanes);
}

/* ---------------------------------------------------------------- AVX2
 *
 * The same moves for CPUs without AVX-512 (AMD guests that hide it, client CPUs): a vector of
 * lanes is two 256-bit halves. A step of 2 is a shuffle and a permute per half; of 3, two
 * blends and a permute. AVX2 has no store masked to lanes but vmaskmovps, which took 1.0 ns an
 * element here (a[:, ::2] *= c on [65, 1000] f32, /tmp harness, AMD EPYC guest with AVX2 only:
 * 65 us, against 20 us for one store per element); so a stepped output is stored an element at
 * a time, from the vector's lanes, still with no buffer between. */
#define YT__STEPPED_AVX2_TARGET __attribute__((target("avx2,fma")))

/* 8 floats 0, 1, 2 or 3 elements apart (step 0, 4, 8 or 12 bytes) from p. */
YT__STEPPED_AVX2_TARGET YT_ALWAYS_INLINE __m256
yt__half_load_f32(const float *p, int64_t step)
{
    if (step == 4)
        return _mm256_loadu_ps(p);
    if (step == 8) {
        /* lanes 0-3: elements 0 1 4 5, lanes 4-7: 2 3 6 7; then the pairs in order */
        const __m256 even =
            _mm256_shuffle_ps(_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8), _MM_SHUFFLE(2, 0, 2, 0));
        return _mm256_castpd_ps(
            _mm256_permute4x64_pd(_mm256_castps_pd(even), _MM_SHUFFLE(3, 1, 2, 0)));
    }
    if (step == 12) {
        /* element l sits at lane 3l % 8 of vector 3l / 8: lanes 0 3 6 of the first, 1 4 7 of
         * the second, 2 5 of the third */
        __m256 v = _mm256_blend_ps(_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8), 0x92);
        v = _mm256_blend_ps(v, _mm256_loadu_ps(p + 16), 0x24);
        return _mm256_permutevar8x32_ps(v, _mm256_setr_epi32(0, 3, 6, 1, 4, 7, 2, 5));
    }
    return _mm256_broadcast_ss(p);
}

/* yt__lanes_load_f32 for AVX2 */
YT__STEPPED_AVX2_TARGET YT_ALWAYS_INLINE void
yt__lanes_load_f32_avx2(float *lanes, const char *at, int64_t step, bool fetch)
{
    const float *p = (const float *)at;
    yt__lanes_fetch_ahead(at, step, 4, fetch);
    _mm256_storeu_ps(lanes, yt__half_load_f32(p, step));
    _mm256_storeu_ps(lanes + 8, yt__half_load_f32(p + (step / 4) * 8, step));
}

/* The four floats of v to p, `step` bytes apart. */
YT__STEPPED_AVX2_TARGET YT_ALWAYS_INLINE void
yt__quarter_store_f32(char *p, int64_t step, __m128 v)
{
    _mm_store_ss((float *)p, v);
    /* lane bits through an int: an element stored is the one computed, NaN payloads too */
    const int32_t l1 = _mm_extract_ps(v, 1), l2 = _mm_extract_ps(v, 2), l3 = _mm_extract_ps(v, 3);
    memcpy(p + step, &l1, 4);
    memcpy(p + 2 * step, &l2, 4);
    memcpy(p + 3 * step, &l3, 4);
}

/* yt__lanes_store_f32 for AVX2 */
YT__STEPPED_AVX2_TARGET YT_ALWAYS_INLINE void
yt__lanes_store_f32_avx2(char *at, int64_t step, const float *lanes)
{
    const __m256 lo = _mm256_loadu_ps(lanes), hi = _mm256_loadu_ps(lanes + 8);
    if (step == 4) {
        _mm256_storeu_ps((float *)at, lo);
        _mm256_storeu_ps((float *)at + 8, hi);
        return;
    }
    yt__quarter_store_f32(at, step, _mm256_castps256_ps128(lo));
    yt__quarter_store_f32(at + 4 * step, step, _mm256_extractf128_ps(lo, 1));
    yt__quarter_store_f32(at + 8 * step, step, _mm256_castps256_ps128(hi));
    yt__quarter_store_f32(at + 12 * step, step, _mm256_extractf128_ps(hi, 1));
}

/* yt__lanes_stream_f32 for AVX2: two vectors that start 32-byte boundaries */
YT__STEPPED_AVX2_TARGET YT_ALWAYS_INLINE void
yt__lanes_stream_f32_avx2(char *at, int64_t step, const float *lanes)
{
    if (step == 4 && (uintptr_t)at % 32 == 0) {
        _mm256_stream_ps((float *)at, _mm256_loadu_ps(lanes));
        _mm256_stream_ps((float *)at + 8, _mm256_loadu_ps(lanes + 8));
    } else {
        yt__lanes_store_f32_avx2(at, step, lanes);
    }
}

/* 4 doubles 0, 1, 2 or 3 elements apart (step 0, 8, 16 or 24 bytes) from p. */
YT__STEPPED_AVX2_TARGET YT_ALWAYS_INLINE __m256d
yt__half_load_f64(const double *p, int64_t step)
{
    if (step == 8)
        return _mm256_loadu_pd(p);
    if (step == 16) {
        const __m256d even = _mm256_unpacklo_pd(_mm256_loadu_pd(p), _mm256_loadu_pd(p + 4));
        return _mm256_permute4x64_pd(even, _MM_SHUFFLE(3, 1, 2, 0)); /* was 0 2 1 3 */
    }
    if (step == 24) {
        /* elements 0 and 1 at lanes 0 and 3 of the first vector, 2 at lane 2 of the second, 3 at
         * lane 1 of the third */
        __m256d v = _mm256_blend_pd(_mm256_loadu_pd(p), _mm256_loadu_pd(p + 4), 0x4);
        v = _mm256_blend_pd(v, _mm256_loadu_pd(p + 8), 0x2);
        return _mm256_permute4x64_pd(v, _MM_SHUFFLE(1, 2, 3, 0));
    }
    return _mm256_broadcast_sd(p);
}

/* yt__lanes_load_f64 for AVX2 */
YT__STEPPED_AVX2_TARGET YT_ALWAYS_INLINE void
yt__lanes_load_f64_avx2(double *lanes, const char *at, int64_t step, bool fetch)
{
    const double *p = (const double *)at;
    yt__lanes_fetch_ahead(at, step, 8, fetch);
    _mm256_storeu_pd(lanes, yt__half_load_f64(p, step));
    _mm256_storeu_pd(lanes + 4, yt__half_load_f64(p + (step / 8) * 4, step));
}

/* yt__lanes_store_f64 for AVX2 */
YT__STEPPED_AVX2_TARGET YT_ALWAYS_INLINE void
yt__lanes_store_f64_avx2(char *at, int64_t step, const double *lanes)
{
    const __m256d lo = _mm256_loadu_pd(lanes), hi = _mm256_loadu_pd(lanes + 4);
    if (step == 8) {
        _mm256_storeu_pd((double *)at, lo);
        _mm256_storeu_pd((double *)at + 4, hi);
        return;
    }
    const __m128d part[4] = {_mm256_castpd256_pd128(lo), _mm256_extractf128_pd(lo, 1),
                             _mm256_castpd256_pd128(hi), _mm256_extractf128_pd(hi, 1)};
    for (int q = 0; q < 4; q++) {
        _mm_storel_pd((double *)(at + 2 * q * step), part[q]);
        _mm_storeh_pd((double *)(at + (2 * q + 1) * step), part[q]);
    }
}

/* yt__lanes_stream_f64 for AVX2 */
YT__STEPPED_AVX2_TARGET YT_ALWAYS_INLINE void
yt__lanes_stream_f64_avx2(char *at, int64_t step, const double *lanes)
{
    if (step == 8 && (uintptr_t)at % 32 == 0) {
        _mm256_stream_pd((double *)at, _mm256_loadu_pd(lanes));
        _mm256_stream_pd((double *)at + 4, _mm256_loadu_pd(lanes + 4));
    } else {
        yt__lanes_store_f64_avx2(at, step, lanes);
    }
}

#endif
