/* Elementwise copy with broadcasting and dtype conversion (yt__copy_into), and yt__to_dtype.
 *
 * One loop per (source dtype, destination dtype) pair, run by yt__pointwise, built from the
 * per-dtype loads and stores of element.h (values widen to int64 or double, then narrow the way
 * PyTorch's casts do). Same-dtype copies move bits. */
#include <stdio.h>
#include <string.h>

#include "element.h"
#include "internal.h"
#include "pointwise_blocks.h"

/* ---------------------------------------------------------------- conversion loops */

/* cast_<src>_<dst>: data[0] is the destination, data[1] the source. The contiguous branch has
 * constant strides so the compiler can vectorise it. Each is a body (cast_rows_*), inlined into
 * the loop (cast_*) and its block form (cast_blocks_*; see yt__block_fn). */
#define DEFINE_CAST(S, SIZE_S, WIDE_S, D, SIZE_D)                                                  \
    DEFINE_CAST_RUN(S, SIZE_S, WIDE_S, D, SIZE_D, , no_run)

/* The same, named cast[_PREFIX]_S_D, with RUN(dst, src, n) converting a first part of each
 * contiguous row (it returns how many elements it did), the loop the rest. */
#define DEFINE_CAST_RUN(S, SIZE_S, WIDE_S, D, SIZE_D, PREFIX, RUN)                                 \
    YT_ALWAYS_INLINE void cast_rows_##PREFIX##S##_##D(char **data, const int64_t *strides,         \
                                                      int64_t n, const int64_t *row_strides,       \
                                                      int64_t rows, const void *ctx)               \
    {                                                                                              \
        (void)ctx;                                                                                 \
        for (int64_t r = 0; r < rows; r++) {                                                       \
            char *dst = data[0] + r * row_strides[0];                                              \
            const char *src = data[1] + r * row_strides[1];                                        \
            if (strides[0] == SIZE_D && strides[1] == SIZE_S) {                                    \
                _Pragma("omp simd") for (int64_t i = RUN(dst, src, n); i < n; i++)                 \
                    yt__store_##D##_from_##WIDE_S(dst + i * SIZE_D,                                \
                                                  yt__load_##S(src + i * SIZE_S));                 \
                continue;                                                                          \
            }                                                                                      \
            for (int64_t i = 0; i < n; i++)                                                        \
                yt__store_##D##_from_##WIDE_S(dst + i * strides[0],                                \
                                              yt__load_##S(src + i * strides[1]));                 \
        }                                                                                          \
    }                                                                                              \
    static void cast_##PREFIX##S##_##D(char **data, const int64_t *strides, int64_t n,             \
                                       const int64_t *row_strides, int64_t rows, const void *ctx)  \
    {                                                                                              \
        cast_rows_##PREFIX##S##_##D(data, strides, n, row_strides, rows, ctx);                     \
    }                                                                                              \
    static void cast_blocks_##PREFIX##S##_##D(const yt__block_strip *s, const void *ctx)           \
    {                                                                                              \
        static const int64_t esize[2] = {SIZE_D, SIZE_S};                                          \
        yt__run_blocks(s, 2, esize, cast_rows_##PREFIX##S##_##D, ctx);                             \
    }

YT_ALWAYS_INLINE int64_t
no_run(char *dst, const char *src, int64_t n)
{
    (void)dst, (void)src, (void)n;
    return 0;
}

/* Every source dtype crossed with every destination dtype. */
#define CASTS_FROM(S, SIZE_S, WIDE_S)                                                              \
    DEFINE_CAST(S, SIZE_S, WIDE_S, bl, 1)                                                          \
    DEFINE_CAST(S, SIZE_S, WIDE_S, u8, 1)                                                          \
    DEFINE_CAST(S, SIZE_S, WIDE_S, i8, 1)                                                          \
    DEFINE_CAST(S, SIZE_S, WIDE_S, i16, 2)                                                         \
    DEFINE_CAST(S, SIZE_S, WIDE_S, i32, 4)                                                         \
    DEFINE_CAST(S, SIZE_S, WIDE_S, i64, 8)                                                         \
    DEFINE_CAST(S, SIZE_S, WIDE_S, f16, 2)                                                         \
    DEFINE_CAST(S, SIZE_S, WIDE_S, bf16, 2)                                                        \
    DEFINE_CAST(S, SIZE_S, WIDE_S, f32, 4)                                                         \
    DEFINE_CAST(S, SIZE_S, WIDE_S, f64, 8)
CASTS_FROM(bl, 1, i64)
CASTS_FROM(u8, 1, i64)
CASTS_FROM(i8, 1, i64)
CASTS_FROM(i16, 2, i64)
CASTS_FROM(i32, 4, i64)
CASTS_FROM(i64, 8, i64)
CASTS_FROM(f16, 2, f64)
CASTS_FROM(bf16, 2, f64)
CASTS_FROM(f32, 4, f64)
CASTS_FROM(f64, 8, f64)

/* Vector runs of the casts that mixed precision and data loading use, 8 elements at a time
 * (AVX2 and F16C, part of the library's x86-64-v3 baseline), with the results of the element
 * loads and stores (element.h, runtime/dtype.c) bit for bit: F16C rounds to nearest even and
 * quiets NaNs keeping their top payload bits, as yt__f32_to_f16 does (and the f16 -> f32 load, which
 * quiets too); the bf16 rounding is yt__f32_to_bf16's, lane by lane, and bf16 -> f32 is a shift
 * (NaN payloads kept, as PyTorch keeps them); f32 -> i32 converts 8 lanes at once when all are within
 * (-2^31, 2^31) and leaves other blocks (out of range, NaN) to the element loop's saturation.
 * [1000, 1000] f32, one thread, element by element -> 8 at a time: to f16 1631 -> 69 us, to
 * bf16 1642 -> 97 us, to i32 836 -> 81 us (torch 254, 91 and 89); bf16 with one NaN test per 16
 * lanes in place of a select per lane, bench/ab.sh: 96 -> 70 us. The other casts' contiguous
 * loops carry `omp simd` (to f64: 274 -> 123 us; torch 143). */
#if defined(__AVX2__) && defined(__F16C__)
#include <immintrin.h>

YT_ALWAYS_INLINE int64_t
run_f32_f16(char *dst, const char *src, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(dst + 2 * i),
                         _mm256_cvtps_ph(_mm256_loadu_ps((const float *)src + i),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    return i;
}

YT_ALWAYS_INLINE int64_t
run_f16_f32(char *dst, const char *src, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps((float *)dst + i,
                         _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + 2 * i))));
    return i;
}

YT_ALWAYS_INLINE int64_t
run_f32_bf16(char *dst, const char *src, int64_t n)
{
    const __m256i abs = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
    const __m256i round = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1);
    /* round to nearest even: add 0x7fff and the lowest kept bit, keep the top 16 bits */
#define BF16_ROUNDED(x)                                                                            \
    _mm256_srli_epi32(                                                                             \
        _mm256_add_epi32(                                                                          \
            x, _mm256_add_epi32(round, _mm256_and_si256(_mm256_srli_epi32(x, 16), one))),          \
        16)
    /* NaN lanes instead keep their top bits, quieted */
#define BF16_OF(x)                                                                                 \
    _mm256_blendv_epi8(BF16_ROUNDED(x),                                                            \
                       _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40)),         \
                       _mm256_cmpgt_epi32(_mm256_and_si256(x, abs), inf))
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256 a = _mm256_loadu_ps((const float *)src + i);
        const __m256 b = _mm256_loadu_ps((const float *)src + i + 8);
        const __m256i x0 = _mm256_castps_si256(a), x1 = _mm256_castps_si256(b);
        /* NaNs are rare: one test for all 16 lanes instead of a select in each */
        const bool nan = _mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_UNORD_Q)) != 0;
        const __m256i h0 = nan ? BF16_OF(x0) : BF16_ROUNDED(x0);
        const __m256i h1 = nan ? BF16_OF(x1) : BF16_ROUNDED(x1);
        /* 2 x 8 x 32 -> 16 x 16: packs within 128-bit lanes, then puts the quarters in order */
        _mm256_storeu_si256((__m256i *)(dst + 2 * i),
                            _mm256_permute4x64_epi64(_mm256_packus_epi32(h0, h1), 0xd8));
    }
#undef BF16_OF
#undef BF16_ROUNDED
    return i;
}

YT_ALWAYS_INLINE int64_t
run_bf16_f32(char *dst, const char *src, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(src + 2 * i)));
        _mm256_storeu_si256((__m256i *)(dst + 4 * i), _mm256_slli_epi32(h, 16));
    }
    return i;
}

YT_ALWAYS_INLINE int64_t
run_f32_i32(char *dst, const char *src, int64_t n)
{
    const __m256 limit = _mm256_set1_ps(2147483648.0f), sign = _mm256_set1_ps(-0.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps((const float *)src + i);
        /* |v| < 2^31 is false for NaN too */
        __m256 ok = _mm256_cmp_ps(_mm256_andnot_ps(sign, v), limit, _CMP_LT_OQ);
        if (_mm256_movemask_ps(ok) != 0xff)
            break; /* the element loop takes it from here */
        _mm256_storeu_si256((__m256i *)(dst + 4 * i), _mm256_cvttps_epi32(v));
    }
    return i;
}
#else
#define run_f32_f16  no_run
#define run_f16_f32  no_run
#define run_f32_bf16 no_run
#define run_bf16_f32 no_run
#define run_f32_i32  no_run
#endif
DEFINE_CAST_RUN(f32, 4, f64, f16, 2, vec_, run_f32_f16)
DEFINE_CAST_RUN(f16, 2, f64, f32, 4, vec_, run_f16_f32)
DEFINE_CAST_RUN(f32, 4, f64, bf16, 2, vec_, run_f32_bf16)
DEFINE_CAST_RUN(bf16, 2, f64, f32, 4, vec_, run_bf16_f32)
DEFINE_CAST_RUN(f32, 4, f64, i32, 4, vec_, run_f32_i32)

/* The loop and block form of each vector cast, by (source, destination). */
static const struct {
    yt_dtype src, dst;
    yt__loop_fn loop;
    yt__block_fn blocks;
} vector_casts[] = {
    {YT_DTYPE_F32, YT_DTYPE_F16, cast_vec_f32_f16, cast_blocks_vec_f32_f16},
    {YT_DTYPE_F16, YT_DTYPE_F32, cast_vec_f16_f32, cast_blocks_vec_f16_f32},
    {YT_DTYPE_F32, YT_DTYPE_BF16, cast_vec_f32_bf16, cast_blocks_vec_f32_bf16},
    {YT_DTYPE_BF16, YT_DTYPE_F32, cast_vec_bf16_f32, cast_blocks_vec_bf16_f32},
    {YT_DTYPE_F32, YT_DTYPE_I32, cast_vec_f32_i32, cast_blocks_vec_f32_i32},
};

#define CAST_ROW(S, FORM)                                                                          \
    {                                                                                              \
        cast_##FORM##S##_bl, cast_##FORM##S##_u8, cast_##FORM##S##_i8, cast_##FORM##S##_i16,       \
            cast_##FORM##S##_i32, cast_##FORM##S##_i64, cast_##FORM##S##_f16,                      \
            cast_##FORM##S##_bf16, cast_##FORM##S##_f32, cast_##FORM##S##_f64,                     \
    }
/* [src][dst], in yt_dtype order. The diagonal is never used (same-dtype copies move bits). */
static const yt__loop_fn cast_loops[YT_DTYPE_COUNT][YT_DTYPE_COUNT] = {
    CAST_ROW(bl, ),  CAST_ROW(u8, ),  CAST_ROW(i8, ),   CAST_ROW(i16, ), CAST_ROW(i32, ),
    CAST_ROW(i64, ), CAST_ROW(f16, ), CAST_ROW(bf16, ), CAST_ROW(f32, ), CAST_ROW(f64, ),
};
static const yt__block_fn cast_blocks[YT_DTYPE_COUNT][YT_DTYPE_COUNT] = {
    CAST_ROW(bl, blocks_),  CAST_ROW(u8, blocks_),  CAST_ROW(i8, blocks_),  CAST_ROW(i16, blocks_),
    CAST_ROW(i32, blocks_), CAST_ROW(i64, blocks_), CAST_ROW(f16, blocks_), CAST_ROW(bf16, blocks_),
    CAST_ROW(f32, blocks_), CAST_ROW(f64, blocks_),
};

/* Same-dtype copies by element width: bit-exact (NaN payloads survive). A body, a loop and a
 * block form, as the casts have. */
#define DEFINE_MOVE(BITS)                                                                          \
    YT_ALWAYS_INLINE void move_rows_##BITS(char **data, const int64_t *strides, int64_t n,         \
                                           const int64_t *row_strides, int64_t rows,               \
                                           const void *ctx)                                        \
    {                                                                                              \
        (void)ctx;                                                                                 \
        const int64_t size = BITS / 8;                                                             \
        for (int64_t r = 0; r < rows; r++) {                                                       \
            char *dst = data[0] + r * row_strides[0];                                              \
            const char *src = data[1] + r * row_strides[1];                                        \
            if (strides[0] == size && strides[1] == size) {                                        \
                memcpy(dst, src, (size_t)(n * size));                                              \
                continue;                                                                          \
            }                                                                                      \
            for (int64_t i = 0; i < n; i++)                                                        \
                memcpy(dst + i * strides[0], src + i * strides[1], (size_t)size);                  \
        }                                                                                          \
    }                                                                                              \
    static void move_##BITS(char **data, const int64_t *strides, int64_t n,                        \
                            const int64_t *row_strides, int64_t rows, const void *ctx)             \
    {                                                                                              \
        move_rows_##BITS(data, strides, n, row_strides, rows, ctx);                                \
    }                                                                                              \
    static void move_blocks_##BITS(const yt__block_strip *s, const void *ctx)                      \
    {                                                                                              \
        static const int64_t esize[2] = {BITS / 8, BITS / 8};                                      \
        yt__run_blocks(s, 2, esize, move_rows_##BITS, ctx);                                        \
    }
DEFINE_MOVE(8)
DEFINE_MOVE(16)
DEFINE_MOVE(32)
DEFINE_MOVE(64)

/* ---------------------------------------------------------------- entry points */

yt_status
yt__copy_into(yt_tensor *dst, yt_tensor *src)
{
    if (dst == NULL)
        return yt__null_status("copy", "dst");
    if (src == NULL)
        return yt__null_status("copy", "src");
    if (dst->device != YT_DEVICE_CPU || src->device != YT_DEVICE_CPU)
        return yt__fail_status(YT_ERR_DEVICE, "copy: from %s to %s is not supported",
                               yt_device_name(src->device), yt_device_name(dst->device));
    if ((unsigned)dst->dtype >= YT_DTYPE_COUNT || (unsigned)src->dtype >= YT_DTYPE_COUNT)
        return yt__fail_status(YT_ERR_DTYPE, "copy: invalid dtype (dst %d, src %d)",
                               (int)dst->dtype, (int)src->dtype);
    bool fits = src->dim <= dst->dim;
    for (int i = 0; fits && i < src->dim; i++) {
        int64_t s = src->sizes[i];
        fits = s == 1 || s == dst->sizes[dst->dim - src->dim + i];
    }
    if (!fits) {
        char have[200], want[200];
        yt__format_sizes(have, sizeof have, src->sizes, src->dim);
        yt__format_sizes(want, sizeof want, dst->sizes, dst->dim);
        return yt__fail_status(
            YT_ERR_SHAPE, "copy: src of shape %s cannot broadcast to dst's shape %s", have, want);
    }

    yt__loop_fn loop;
    yt__block_fn blocks;
    if (src->dtype == dst->dtype) {
        switch (yt_dtype_size(src->dtype)) {
        case 1:
            loop = move_8, blocks = move_blocks_8;
            break;
        case 2:
            loop = move_16, blocks = move_blocks_16;
            break;
        case 4:
            loop = move_32, blocks = move_blocks_32;
            break;
        default:
            loop = move_64, blocks = move_blocks_64;
            break;
        }
    } else {
        loop = cast_loops[src->dtype][dst->dtype];
        blocks = cast_blocks[src->dtype][dst->dtype];
        for (size_t k = 0; k < sizeof vector_casts / sizeof vector_casts[0]; k++)
            if (vector_casts[k].src == src->dtype && vector_casts[k].dst == dst->dtype)
                loop = vector_casts[k].loop, blocks = vector_casts[k].blocks;
    }
    yt_tensor *const in[1] = {src};
    return yt__pointwise(dst, 1, in, loop, blocks, NULL, YT__PW_MEMORY_BOUND, NULL);
}

yt_tensor *
yt__to_dtype(yt_tensor *t, yt_dtype dtype)
{
    if (t == NULL)
        return NULL;
    if (t->dtype == dtype)
        return yt_retain(t);
    /* The public op records autograd; keep its result out of any open scope, since our caller
     * owns (and releases) the reference. */
    yt__scope_suspend();
    yt_tensor *r = yt_to(t, dtype);
    yt__scope_resume();
    return r;
}
