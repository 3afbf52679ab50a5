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
    YT_ALWAYS_INLINE void cast_rows_##S##_##D(char **data, const int64_t *strides, int64_t n,      \
                                              const int64_t *row_strides, int64_t rows,            \
                                              const void *ctx)                                     \
    {                                                                                              \
        (void)ctx;                                                                                 \
        for (int64_t r = 0; r < rows; r++) {                                                       \
            char *dst = data[0] + r * row_strides[0];                                              \
            const char *src = data[1] + r * row_strides[1];                                        \
            if (strides[0] == SIZE_D && strides[1] == SIZE_S) {                                    \
                for (int64_t i = 0; i < n; i++)                                                    \
                    yt__store_##D##_from_##WIDE_S(dst + i * SIZE_D,                                \
                                                  yt__load_##S(src + i * SIZE_S));                 \
                continue;                                                                          \
            }                                                                                      \
            for (int64_t i = 0; i < n; i++)                                                        \
                yt__store_##D##_from_##WIDE_S(dst + i * strides[0],                                \
                                              yt__load_##S(src + i * strides[1]));                 \
        }                                                                                          \
    }                                                                                              \
    static void cast_##S##_##D(char **data, const int64_t *strides, int64_t n,                     \
                               const int64_t *row_strides, int64_t rows, const void *ctx)          \
    {                                                                                              \
        cast_rows_##S##_##D(data, strides, n, row_strides, rows, ctx);                             \
    }                                                                                              \
    static void cast_blocks_##S##_##D(const yt__block_strip *s, const void *ctx)                   \
    {                                                                                              \
        static const int64_t esize[2] = {SIZE_D, SIZE_S};                                          \
        yt__run_blocks(s, 2, esize, cast_rows_##S##_##D, ctx);                                     \
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
    }
    yt_tensor *const in[1] = {src};
    return yt__pointwise(dst, 1, in, loop, blocks, NULL);
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
