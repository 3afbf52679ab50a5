/* Sums, products, maxima and minima of short contiguous f64 rows (and maxima and minima of f32
 * ones, in double), 4 rows at a time (sum.c, prod.c, amax.c): the rows advance side by side, each
 * folding into two 4-lane vectors, and one 4 x 4 step finishes the 4 rows together, where a row
 * alone paid a scalar loop (rows under 32 elements) or a horizontal fold. A short last group
 * repeats its first row, and a row's result depends on that row alone, so results do not depend
 * on where a thread's rows start. Needs #pragma GCC target("avx2,fma") before the includes. */
#ifndef YT_KERNELS_CPU_REDUCE_ROWS4D_H
#define YT_KERNELS_CPU_REDUCE_ROWS4D_H

#include <immintrin.h>

#include "reduce_plan.h"

/* Rows up to this long go 4 at a time. */
#define YT_ROWS4D_LONGEST 128

typedef enum yt__rows4d_op {
    YT_ROWS4D_SUM,
    YT_ROWS4D_PROD,
    YT_ROWS4D_MAX, /* NaN wins */
    YT_ROWS4D_MIN
} yt__rows4d_op;

YT_ALWAYS_INLINE __m256d
yt__rows4d_fold(__m256d a, __m256d v, yt__rows4d_op op)
{
    switch (op) {
    case YT_ROWS4D_SUM:
        return _mm256_add_pd(a, v);
    case YT_ROWS4D_PROD:
        return _mm256_mul_pd(a, v);
    default: {
        /* vmaxpd / vminpd return their second operand when either is NaN: so a NaN a stays,
         * and a NaN v is taken by the blend */
        __m256d m = op == YT_ROWS4D_MAX ? _mm256_max_pd(v, a) : _mm256_min_pd(v, a);
        return _mm256_blendv_pd(m, v, _mm256_cmp_pd(v, v, _CMP_UNORD_Q));
    }
    }
}

YT_ALWAYS_INLINE double
yt__rows4d_identity(yt__rows4d_op op)
{
    return op == YT_ROWS4D_SUM    ? 0.0
           : op == YT_ROWS4D_PROD ? 1.0
           : op == YT_ROWS4D_MAX  ? -__builtin_inf()
                                  : __builtin_inf();
}

/* Lane r of the result is the fold of v[r]'s 4 lanes. */
YT_ALWAYS_INLINE __m256d
yt__rows4d_finish(const __m256d *v, yt__rows4d_op op)
{
    __m256d m01 =
        yt__rows4d_fold(_mm256_unpacklo_pd(v[0], v[1]), _mm256_unpackhi_pd(v[0], v[1]), op);
    __m256d m23 =
        yt__rows4d_fold(_mm256_unpacklo_pd(v[2], v[3]), _mm256_unpackhi_pd(v[2], v[3]), op);
    return yt__rows4d_fold(_mm256_permute2f128_pd(m01, m23, 0x20),
                           _mm256_permute2f128_pd(m01, m23, 0x31), op);
}

/* Sets accs[r].f to lane r of v for r < rows (<= 4); a whole group in one store (see
 * yt__store_rows8_f32: lanes read back from a stored array stall on store forwarding). */
YT_ALWAYS_INLINE void
yt__store_rows4d(yt__reduce_acc *accs, __m256d v, int64_t rows)
{
    _Static_assert(sizeof(yt__reduce_acc) == sizeof(double), "an accumulator is one double");
    if (rows == 4) {
        _mm256_storeu_pd(&accs[0].f, v);
        return;
    }
    double lanes[4];
    _mm256_storeu_pd(lanes, v);
    for (int64_t r = 0; r < rows; r++)
        accs[r].f = lanes[r];
}

/* The lanes of a row's tail (n % 4 != 0) that are still to be folded: of its last 4 elements
 * when n >= 4 (the lanes before are folded already), of its first n otherwise (a masked load). */
YT_ALWAYS_INLINE __m256i
yt__rows4d_tail_mask(int64_t n)
{
    const int64_t rest = n % 4;
    const __m256i lane = _mm256_setr_epi64x(0, 1, 2, 3);
    return n >= 4 ? _mm256_cmpgt_epi64(lane, _mm256_set1_epi64x(3 - rest))
                  : _mm256_cmpgt_epi64(_mm256_set1_epi64x(rest), lane);
}

/* 4 elements of a row from element i, as doubles: f64 ones, or f32 ones widened. */
YT_ALWAYS_INLINE __m256d
yt__rows4d_load(const char *row, int64_t i, bool f32)
{
    return f32 ? _mm256_cvtps_pd(_mm_loadu_ps((const float *)row + i))
               : _mm256_loadu_pd((const double *)row + i);
}

/* The elements of a row in `lanes` (a mask of 64-bit lanes), as doubles, the others 0: a
 * masked load, which reads nothing outside them. */
YT_ALWAYS_INLINE __m256d
yt__rows4d_masked_load(const char *row, __m256i lanes, bool f32)
{
    if (!f32)
        return _mm256_maskload_pd((const double *)row, lanes);
    /* the 32-bit lanes of the 64-bit mask's low halves */
    const __m128i lanes32 = _mm256_castsi256_si128(
        _mm256_permutevar8x32_epi32(lanes, _mm256_setr_epi32(0, 2, 4, 6, 0, 0, 0, 0)));
    return _mm256_cvtps_pd(_mm_maskload_ps((const float *)row, lanes32));
}

/* A yt__reduce_row_batch_fn for sums, products, maxima and minima (op) of f64 rows, or of f32 rows
 * in double (f32, a constant once inlined): sets accs[k].f, k < count, to the fold of row k, row
 * k at x + k * row_stride, and returns true; false, writing nothing, unless the rows are
 * contiguous and n <= YT_ROWS4D_LONGEST. */
YT_ALWAYS_INLINE bool
yt__fold_rows4(yt__reduce_acc *accs, const char *x, int64_t count, int64_t row_stride, int64_t n,
               int64_t stride, yt__rows4d_op op, bool f32)
{
    if (stride != (f32 ? (int64_t)sizeof(float) : (int64_t)sizeof(double)) || n > YT_ROWS4D_LONGEST)
        return false;
    const __m256d identity = _mm256_set1_pd(yt__rows4d_identity(op));
    /* the tail's lanes: lanes outside them take the identity */
    const __m256i tail = yt__rows4d_tail_mask(n);
    for (int64_t k = 0; k < count; k += 4) {
        const int64_t rows = count - k < 4 ? count - k : 4;
        const char *p[4];
        __m256d v[4], w[4];
#pragma GCC unroll 4
        for (int r = 0; r < 4; r++) {
            p[r] = x + (k + (r < rows ? r : 0)) * row_stride;
            v[r] = w[r] = identity;
        }
        int64_t i = 0;
        for (; i + 8 <= n; i += 8) {
#pragma GCC unroll 4
            for (int r = 0; r < 4; r++) {
                v[r] = yt__rows4d_fold(v[r], yt__rows4d_load(p[r], i, f32), op);
                w[r] = yt__rows4d_fold(w[r], yt__rows4d_load(p[r], i + 4, f32), op);
            }
        }
        if (i + 4 <= n) {
#pragma GCC unroll 4
            for (int r = 0; r < 4; r++)
                v[r] = yt__rows4d_fold(v[r], yt__rows4d_load(p[r], i, f32), op);
            i += 4;
        }
        if (i < n) {
#pragma GCC unroll 4
            for (int r = 0; r < 4; r++) {
                const __m256d t = n >= 4 ? yt__rows4d_load(p[r], n - 4, f32)
                                         : yt__rows4d_masked_load(p[r], tail, f32);
                w[r] = yt__rows4d_fold(
                    w[r], _mm256_blendv_pd(identity, t, _mm256_castsi256_pd(tail)), op);
            }
        }
#pragma GCC unroll 4
        for (int r = 0; r < 4; r++)
            v[r] = yt__rows4d_fold(v[r], w[r], op);
        yt__store_rows4d(accs + k, yt__rows4d_finish(v, op), rows);
    }
    return true;
}

#endif
