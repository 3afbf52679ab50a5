/* Hand-written loops for bench/strided's stepped cases, each specialised to its case (the step,
 * the element type and the op are constants): the least a loop must do to read and write those
 * bytes on this CPU. The bench times them beside yaten's own contiguous and strided calls, so
 * that its "bound" column, contiguous time over this one, shows how near the 0.5x target a loop
 * that did nothing else could come on this machine. Each takes plain or streaming stores for a
 * contiguous output, whichever the bench measures faster.
 *
 * Where the CPU has AVX-512 (F, VL, BW, DQ), 16 floats or 8 doubles of a row at a time: a stepped
 * input's vector gathered by permutes from whole loads of its span, a stepped output's stored
 * masked to its elements' lanes (the elements between, which another thread may own, are neither
 * read for the store nor written); an in-place stepped view is multiplied lane by lane over its
 * whole span and stored so masked, with no permute at all. Elsewhere, and for a row's last
 * columns short of 16, AVX2: a stepped input gathered by shuffles, a stepped output stored an
 * element at a time (AVX2's masked store, vmaskmovps, is slower on AMD's cores). */
#ifndef YT_BENCH_BARE_MOVES_H
#define YT_BENCH_BARE_MOVES_H

#include <stdbool.h>
#include <stdint.h>

#include <immintrin.h>

#define BARE_TARGET    __attribute__((target("avx2")))
#define BARE512_TARGET __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq")))

/* Whether this CPU runs the AVX-512 loops. */
static bool
bare_has_avx512(void)
{
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
}

/* Columns the AVX-512 loops take of a row of `cols` (a multiple of their `lanes`), 0 without it. */
static int64_t
bare_wide_columns(int64_t cols, int64_t lanes)
{
    return bare_has_avx512() ? cols / lanes * lanes : 0;
}

/* A permute's index vector whose lane l is f(l) */
#define BARE_IDX16(f)                                                                              \
    _mm512_setr_epi32(f(0), f(1), f(2), f(3), f(4), f(5), f(6), f(7), f(8), f(9), f(10), f(11),    \
                      f(12), f(13), f(14), f(15))
#define BARE_EVEN(l)    (2 * (l))
#define BARE_THIRD(l)   (3 * (l) % 32)
#define BARE_HALF(l)    ((l) / 2)
#define BARE_HALF_HI(l) (8 + (l) / 2)

/* 16 floats `step` (2 or 3) elements apart from p. */
BARE512_TARGET static inline __m512
bare_gather16_f32(const float *p, int step)
{
    if (step == 2)
        return _mm512_permutex2var_ps(_mm512_loadu_ps(p), BARE_IDX16(BARE_EVEN),
                                      _mm512_loadu_ps(p + 16));
    /* elements 0-10 from the first two vectors, 11-15 from the third */
    const __m512 v =
        _mm512_permutex2var_ps(_mm512_loadu_ps(p), BARE_IDX16(BARE_THIRD), _mm512_loadu_ps(p + 16));
    return _mm512_mask_permutexvar_ps(v, 0xF800, BARE_IDX16(BARE_THIRD), _mm512_loadu_ps(p + 32));
}

/* 8 floats `step` (2 or 3) elements apart from p. */
BARE_TARGET static inline __m256
bare_gather_f32(const float *p, int step)
{
    if (step == 2) {
        const __m256 even = _mm256_shuffle_ps(_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8), 0x88);
        return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(even), 0xD8));
    }
    __m256 v = _mm256_blend_ps(_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8), 0x92);
    v = _mm256_blend_ps(v, _mm256_loadu_ps(p + 16), 0x24);
    return _mm256_permutevar8x32_ps(v, _mm256_setr_epi32(0, 3, 6, 1, 4, 7, 2, 5));
}

/* 4 doubles 2 elements apart from p. */
BARE_TARGET static inline __m256d
bare_gather2_f64(const double *p)
{
    const __m256d even = _mm256_unpacklo_pd(_mm256_loadu_pd(p), _mm256_loadu_pd(p + 4));
    return _mm256_permute4x64_pd(even, 0xD8);
}

/* v to p: streamed, with stream, in one 64-byte store or two 32-byte ones, whichever p's
 * alignment allows (plainly if neither). */
BARE512_TARGET static inline void
bare512_put_ps(float *p, __m512 v, bool stream)
{
    if (stream && (uintptr_t)p % 64 == 0) {
        _mm512_stream_ps(p, v);
    } else if (stream && (uintptr_t)p % 32 == 0) {
        _mm256_stream_ps(p, _mm512_castps512_ps256(v));
        _mm256_stream_ps(p + 8, _mm512_extractf32x8_ps(v, 1));
    } else {
        _mm512_storeu_ps(p, v);
    }
}

/* The AVX-512 part of bare_stepped_in_f32: columns [0, wide) of each row. */
BARE512_TARGET static void
bare512_stepped_in_f32(float *out, const float *in, const float *b, int64_t rows, int64_t cols,
                       int64_t wide, int64_t in_row, int step, bool stream)
{
    const __m512 sign = _mm512_set1_ps(-0.0f);
    for (int64_t r = 0; r < rows; r++) {
        const float *src = in + r * in_row;
        float *dst = out + r * cols;
        for (int64_t j = 0; j < wide; j += 16) {
            const __m512 x = bare_gather16_f32(src + step * j, step);
            const __m512 y = b != NULL ? _mm512_add_ps(x, _mm512_loadu_ps(b + r * cols + j))
                                       : _mm512_xor_ps(x, sign);
            bare512_put_ps(dst + j, y, stream);
        }
    }
}

/* out[r, j] = -in[r, step * j], or in[r, step * j] + b[r, j] with b given; f32, `cols` a multiple
 * of 8, out and b [rows, cols] contiguous, in's rows in_row elements apart. */
BARE_TARGET static void
bare_stepped_in_f32(float *out, const float *in, const float *b, int64_t rows, int64_t cols,
                    int64_t in_row, int step, bool stream)
{
    const int64_t wide = bare_wide_columns(cols, 16);
    if (wide > 0)
        bare512_stepped_in_f32(out, in, b, rows, cols, wide, in_row, step, stream);
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int64_t r = 0; r < rows; r++) {
        const float *src = in + r * in_row;
        float *dst = out + r * cols;
        for (int64_t j = wide; j < cols; j += 8) {
            const __m256 x = bare_gather_f32(src + step * j, step);
            const __m256 y = b != NULL ? _mm256_add_ps(x, _mm256_loadu_ps(b + r * cols + j))
                                       : _mm256_xor_ps(x, sign);
            if (stream && (uintptr_t)(dst + j) % 32 == 0)
                _mm256_stream_ps(dst + j, y);
            else
                _mm256_storeu_ps(dst + j, y);
        }
    }
    if (stream)
        _mm_sfence();
}

/* The AVX-512 part of bare_step2_add_f64: columns [0, wide) of each row. */
BARE512_TARGET static void
bare512_step2_add_f64(double *out, const double *in, const double *b, int64_t rows, int64_t cols,
                      int64_t wide, int64_t in_row, bool stream)
{
    const __m512i even = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14);
    for (int64_t r = 0; r < rows; r++) {
        const double *src = in + r * in_row;
        double *dst = out + r * cols;
        for (int64_t j = 0; j < wide; j += 8) {
            const __m512d x = _mm512_permutex2var_pd(_mm512_loadu_pd(src + 2 * j), even,
                                                     _mm512_loadu_pd(src + 2 * j + 8));
            const __m512d y = _mm512_add_pd(x, _mm512_loadu_pd(b + r * cols + j));
            bare512_put_ps((float *)(dst + j), _mm512_castpd_ps(y), stream);
        }
    }
}

/* out[r, j] = in[r, 2 * j] + b[r, j] in f64, as bare_stepped_in_f32 (cols a multiple of 4). */
BARE_TARGET static void
bare_step2_add_f64(double *out, const double *in, const double *b, int64_t rows, int64_t cols,
                   int64_t in_row, bool stream)
{
    /* 8 doubles a vector: a multiple of 8 of the columns */
    const int64_t wide = bare_wide_columns(cols, 8);
    if (wide > 0)
        bare512_step2_add_f64(out, in, b, rows, cols, wide, in_row, stream);
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t j = wide; j < cols; j += 4) {
            const __m256d y = _mm256_add_pd(bare_gather2_f64(in + r * in_row + 2 * j),
                                            _mm256_loadu_pd(b + r * cols + j));
            if (stream && (uintptr_t)(out + r * cols + j) % 32 == 0)
                _mm256_stream_pd(out + r * cols + j, y);
            else
                _mm256_storeu_pd(out + r * cols + j, y);
        }
    }
    if (stream)
        _mm_sfence();
}

/* The AVX-512 part of bare_step2_out_f32: columns [0, wide) of each row. In place, each pair of
 * vectors spanning 16 stepped elements is multiplied lane by lane and stored masked to the
 * stepped lanes, the lanes between left as they were. */
BARE512_TARGET static void
bare512_step2_out_f32(float *out, const float *x, float scale, int64_t rows, int64_t cols,
                      int64_t wide, int64_t out_row)
{
    const __m512 sign = _mm512_set1_ps(-0.0f), factor = _mm512_set1_ps(scale);
    for (int64_t r = 0; r < rows; r++) {
        float *dst = out + r * out_row;
        for (int64_t j = 0; j < wide; j += 16) {
            float *at = dst + 2 * j;
            if (x == NULL) {
                _mm512_mask_storeu_ps(at, 0x5555, _mm512_mul_ps(_mm512_loadu_ps(at), factor));
                _mm512_mask_storeu_ps(at + 16, 0x5555,
                                      _mm512_mul_ps(_mm512_loadu_ps(at + 16), factor));
                continue;
            }
            const __m512 y = _mm512_xor_ps(_mm512_loadu_ps(x + r * cols + j), sign);
            _mm512_mask_storeu_ps(at, 0x5555, _mm512_permutexvar_ps(BARE_IDX16(BARE_HALF), y));
            _mm512_mask_storeu_ps(at + 16, 0x5555,
                                  _mm512_permutexvar_ps(BARE_IDX16(BARE_HALF_HI), y));
        }
    }
}

/* The 4 floats of v to p, 2 elements apart, an element a store. */
BARE_TARGET static inline void
bare_store2_f32(float *p, __m128 v)
{
    _mm_store_ss(p, v);
    _mm_store_ss(p + 2, _mm_movehdup_ps(v));
    _mm_store_ss(p + 4, _mm_movehl_ps(v, v));
    _mm_store_ss(p + 6, _mm_shuffle_ps(v, v, 3));
}

/* out[r, 2 * j] = -x[r, j] (x given: out= a stepped view) or out[r, 2 * j] *= scale (x NULL:
 * the stepped view in place); f32, cols a multiple of 8, out's rows out_row elements apart, x
 * [rows, cols] contiguous. */
BARE_TARGET static void
bare_step2_out_f32(float *out, const float *x, float scale, int64_t rows, int64_t cols,
                   int64_t out_row)
{
    const int64_t wide = bare_wide_columns(cols, 16);
    if (wide > 0)
        bare512_step2_out_f32(out, x, scale, rows, cols, wide, out_row);
    const __m256 sign = _mm256_set1_ps(-0.0f), factor = _mm256_set1_ps(scale);
    for (int64_t r = 0; r < rows; r++) {
        float *dst = out + r * out_row;
        for (int64_t j = wide; j < cols; j += 8) {
            const __m256 y = x != NULL ? _mm256_xor_ps(_mm256_loadu_ps(x + r * cols + j), sign)
                                       : _mm256_mul_ps(bare_gather_f32(dst + 2 * j, 2), factor);
            bare_store2_f32(dst + 2 * j, _mm256_castps256_ps128(y));
            bare_store2_f32(dst + 2 * j + 8, _mm256_extractf128_ps(y, 1));
        }
    }
}

#endif
