/* Sums and products of short contiguous f32 rows, 8 rows at a time (sum.c, norm.c, prod.c): each
 * row's terms fold into one vector, and yt__hsum8x8 (yt__hprod8x8) finishes the 8 rows together,
 * where one row alone pays a call, a horizontal fold and a widening step. A last group of under 8
 * rows is finished the same way, and a row's result depends on that row alone, so results do not
 * depend on where a thread's rows start. Needs #pragma GCC target("avx2,fma") before the includes
 * (vec_math.h). */
#ifndef YT_KERNELS_CPU_REDUCE_ROWS8_H
#define YT_KERNELS_CPU_REDUCE_ROWS8_H

#include "reduce_plan.h"
#include "reduce_rows4d.h"
#include "vec_math.h"

/* Rows up to this long go 8 at a time (sum over dim 1 of [2048, 128] f32: 14 us either way; of
 * [1024, 256]: 14.4 us, against 12.6 us one row at a time). */
#define YT_ROWS8_MAX 128

/* What each row folds to: the sum of its elements, of their absolute values or of their squares,
 * or the product of its elements. */
typedef enum yt__rows8_term {
    YT_ROWS8_PLAIN,
    YT_ROWS8_ABS,
    YT_ROWS8_SQUARE,
    YT_ROWS8_PRODUCT
} yt__rows8_term;

YT_ALWAYS_INLINE __m256
yt__rows8_fold(__m256 acc, __m256 v, yt__rows8_term term)
{
    switch (term) {
    case YT_ROWS8_PRODUCT:
        return _mm256_mul_ps(acc, v);
    case YT_ROWS8_ABS:
        return _mm256_add_ps(acc, _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v));
    case YT_ROWS8_SQUARE:
        return _mm256_fmadd_ps(v, v, acc);
    default:
        return _mm256_add_ps(acc, v);
    }
}

/* v's lanes in `mask`, the fold's identity in the others. */
YT_ALWAYS_INLINE __m256
yt__rows8_keep(__m256 v, __m256 mask, yt__rows8_term term)
{
    if (term == YT_ROWS8_PRODUCT)
        return _mm256_blendv_ps(_mm256_set1_ps(1.0f), v, mask);
    return _mm256_and_ps(v, mask);
}

/* Sets accs[r].f to lane r of v for r < rows (<= 8), 4 at a time (yt__store_rows4d), widened:
 * lanes stored to a float array and read back one by one stall on store forwarding (prod over
 * [16384, 16], whose batch did that with doubles: 38.6 -> 20.4 us). */
YT_ALWAYS_INLINE void
yt__store_rows8_f32(yt__reduce_acc *accs, __m256 v, int64_t rows)
{
    yt__store_rows4d(accs, _mm256_cvtps_pd(_mm256_castps256_ps128(v)), rows < 4 ? rows : 4);
    if (rows > 4)
        yt__store_rows4d(accs + 4, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)), rows - 4);
}

/* A yt__reduce_row_batch_fn that folds `term` (a constant, once inlined): sets accs[k].f,
 * k < count, to row k's sum or product, row k at x + k * row_stride, and returns true; false,
 * writing nothing, unless the rows are contiguous floats (stride 4) of n <= YT_ROWS8_MAX. */
YT_ALWAYS_INLINE bool
yt__fold_rows8_f32(yt__reduce_acc *accs, const char *x, int64_t count, int64_t row_stride,
                   int64_t n, int64_t stride, yt__rows8_term term)
{
    if (stride != sizeof(float) || n > YT_ROWS8_MAX)
        return false;
    const float identity = term == YT_ROWS8_PRODUCT ? 1.0f : 0.0f;
    for (int64_t k = 0; k < count; k += 8) {
        const int64_t rows = count - k < 8 ? count - k : 8;
        /* the 8 rows side by side, 8 independent chains (a short group repeats its first row);
         * row by row, sum over dim 1 of [16384, 16] took 27 us, now 16.5 */
        const float *p[8];
        __m256 v[8];
#pragma GCC unroll 8
        for (int r = 0; r < 8; r++) {
            p[r] = (const float *)(x + (k + (r < rows ? r : 0)) * row_stride);
            v[r] = _mm256_set1_ps(identity);
        }
        int64_t i = 0;
        for (; i + 8 <= n; i += 8) {
#pragma GCC unroll 8
            for (int r = 0; r < 8; r++)
                v[r] = yt__rows8_fold(v[r], _mm256_loadu_ps(p[r] + i), term);
        }
        if (i < n && n >= 8) {
            /* the last 8 of each row, the lanes already folded set to the identity: a plain load,
             * where a masked one that crosses a cache line is slow */
            const __m256 mask = yt__top_mask8(n - i);
#pragma GCC unroll 8
            for (int r = 0; r < 8; r++)
                v[r] = yt__rows8_fold(
                    v[r], yt__rows8_keep(_mm256_loadu_ps(p[r] + n - 8), mask, term), term);
        } else if (n >= 4 && n < 8) {
            /* 4 to 7: the first 4 and the last 4 in one vector, the lanes of the last 4 that
             * repeat one of the first set to the identity: no masked load (over dim 1 of
             * [65536, 4], one thread: sum 83-85 -> 74-77 us, prod 97 -> 86-87 us) */
            const __m256 mask = _mm256_or_ps(yt__tail_mask8(4), yt__top_mask8(n - 4));
#pragma GCC unroll 8
            for (int r = 0; r < 8; r++) {
                const __m256 both = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(p[r])),
                                                         _mm_loadu_ps(p[r] + n - 4), 1);
                v[r] = yt__rows8_fold(v[r], yt__rows8_keep(both, mask, term), term);
            }
        } else if (i < n) {
#pragma GCC unroll 8
            for (int r = 0; r < 8; r++)
                v[r] = yt__rows8_fold(v[r], yt__load_tail8(p[r] + i, n - i, identity), term);
        }
        yt__store_rows8_f32(accs + k, term == YT_ROWS8_PRODUCT ? yt__hprod8x8(v) : yt__hsum8x8(v),
                            rows);
    }
    return true;
}

#endif
