/* Hand-written AVX2 loops for bench/strided's stepped cases, each specialised to its case (the
 * step, the element type and the op are constants): the least a loop must do to read and write
 * those bytes on this CPU. A stepped input's vectors are gathered by shuffles from whole loads of
 * its span; a stepped output is stored an element at a time (AVX2's masked store, vmaskmovps, is
 * slower on AMD's cores, and a full-vector store would also write the elements between, which
 * another thread may own). The bench times them beside yaten's own contiguous and strided calls,
 * so that its "bound" column, contiguous time over this one, shows how near the 0.5x target a
 * loop that did nothing else could come on this machine. Each takes plain or streaming stores
 * for a contiguous output, whichever the bench measures faster. */
#ifndef YT_BENCH_BARE_MOVES_H
#define YT_BENCH_BARE_MOVES_H

#include <stdbool.h>
#include <stdint.h>

#include <immintrin.h>

#define BARE_TARGET __attribute__((target("avx2")))

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

/* out[r, j] = -in[r, step * j], or in[r, step * j] + b[r, j] with b given; f32, `cols` a multiple
 * of 8, out and b [rows, cols] contiguous, in's rows in_row elements apart. */
BARE_TARGET static void
bare_stepped_in_f32(float *out, const float *in, const float *b, int64_t rows, int64_t cols,
                    int64_t in_row, int step, bool stream)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int64_t r = 0; r < rows; r++) {
        const float *src = in + r * in_row;
        float *dst = out + r * cols;
        for (int64_t j = 0; j < cols; j += 8) {
            const __m256 x = bare_gather_f32(src + step * j, step);
            const __m256 y = b != NULL ? _mm256_add_ps(x, _mm256_loadu_ps(b + r * cols + j))
                                       : _mm256_xor_ps(x, sign);
            if (stream)
                _mm256_stream_ps(dst + j, y);
            else
                _mm256_storeu_ps(dst + j, y);
        }
    }
    if (stream)
        _mm_sfence();
}

/* out[r, j] = in[r, 2 * j] + b[r, j] in f64, as bare_stepped_in_f32 (cols a multiple of 4). */
BARE_TARGET static void
bare_step2_add_f64(double *out, const double *in, const double *b, int64_t rows, int64_t cols,
                   int64_t in_row, bool stream)
{
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t j = 0; j < cols; j += 4) {
            const __m256d y = _mm256_add_pd(bare_gather2_f64(in + r * in_row + 2 * j),
                                            _mm256_loadu_pd(b + r * cols + j));
            if (stream)
                _mm256_stream_pd(out + r * cols + j, y);
            else
                _mm256_storeu_pd(out + r * cols + j, y);
        }
    }
    if (stream)
        _mm_sfence();
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
    const __m256 sign = _mm256_set1_ps(-0.0f), factor = _mm256_set1_ps(scale);
    for (int64_t r = 0; r < rows; r++) {
        float *dst = out + r * out_row;
        for (int64_t j = 0; j < cols; j += 8) {
            const __m256 y = x != NULL ? _mm256_xor_ps(_mm256_loadu_ps(x + r * cols + j), sign)
                                       : _mm256_mul_ps(bare_gather_f32(dst + 2 * j, 2), factor);
            bare_store2_f32(dst + 2 * j, _mm256_castps256_ps128(y));
            bare_store2_f32(dst + 2 * j + 8, _mm256_extractf128_ps(y, 1));
        }
    }
}

#endif
