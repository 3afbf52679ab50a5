/* The blocked traversal of a pointwise loop over an input transposed against the output (see
 * runtime/pointwise.c, "blocked traversal"): yt__run_blocks, inlined into each loop's block
 * function (generated/kernels_pointwise_N.c, runtime/copy.c) together with the loop's body, so
 * that a block goes from the transposing registers to the loop's arithmetic through a buffer of
 * at most 1 KiB that stays in L1, with no call between them. */
#ifndef YT_POINTWISE_BLOCKS_H
#define YT_POINTWISE_BLOCKS_H

#ifdef __AVX2__
#include <immintrin.h>
#endif
#include <string.h>

#include "internal.h"

#ifdef __AVX2__
/* One 8 x 8 block of 4-byte elements into rows dn elements apart. Each vector is loaded as two
 * 4-element halves, rows r and r + 4, the upper half inserted by the load itself (a load-port
 * uop, not a shuffle), so that a 4 x 4 transpose within each 128-bit lane leaves column c of
 * rows 0-7 in one vector: 16 shuffles where 8 full loads needed 24 (the last 8 across lanes),
 * and the shuffle port is what bounds this. Shuffles only, so every bit pattern (NaN payloads,
 * integers) is copied exactly. */
YT_ALWAYS_INLINE void
yt__transpose8x8_32(float *d, int64_t dn, const char *src, int64_t s0)
{
#define LOAD(r, c)                                                                                 \
    _mm256_insertf128_ps(                                                                          \
        _mm256_castps128_ps256(_mm_loadu_ps((const float *)(src + (r)*s0) + (c))),                 \
        _mm_loadu_ps((const float *)(src + ((r) + 4) * s0) + (c)), 1)
#define STORE(i, v) _mm256_storeu_ps(d + (i)*dn, v)
    for (int c = 0; c < 8; c += 4) {
        __m256 r0 = LOAD(0, c), r1 = LOAD(1, c), r2 = LOAD(2, c), r3 = LOAD(3, c);
        __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
        __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
        STORE(c, _mm256_shuffle_ps(t0, t2, 0x44));
        STORE(c + 1, _mm256_shuffle_ps(t0, t2, 0xEE));
        STORE(c + 2, _mm256_shuffle_ps(t1, t3, 0x44));
        STORE(c + 3, _mm256_shuffle_ps(t1, t3, 0xEE));
    }
#undef LOAD
#undef STORE
}

/* One 4 x 4 block of 8-byte elements, as yt__transpose8x8_32 does it: rows r and r + 2 loaded
 * as the halves of one vector, then one unpack per column. Named loads, not an array filled in a
 * loop: GCC (-O2) kept such an array on the stack, and the shuffles then read it back through
 * store forwarding. */
YT_ALWAYS_INLINE void
yt__transpose4x4_64(double *d, int64_t dn, const char *src, int64_t s0)
{
#define LOAD(r, c)                                                                                 \
    _mm256_insertf128_pd(                                                                          \
        _mm256_castpd128_pd256(_mm_loadu_pd((const double *)(src + (r)*s0) + (c))),                \
        _mm_loadu_pd((const double *)(src + ((r) + 2) * s0) + (c)), 1)
    __m256d r0 = LOAD(0, 0), r1 = LOAD(1, 0), r2 = LOAD(0, 2), r3 = LOAD(1, 2);
#undef LOAD
    _mm256_storeu_pd(d, _mm256_unpacklo_pd(r0, r1));
    _mm256_storeu_pd(d + dn, _mm256_unpackhi_pd(r0, r1));
    _mm256_storeu_pd(d + 2 * dn, _mm256_unpacklo_pd(r2, r3));
    _mm256_storeu_pd(d + 3 * dn, _mm256_unpackhi_pd(r2, r3));
}
#endif

/* Stores the 64-byte line at src (aligned) to dst (aligned) around the caches. */
YT_ALWAYS_INLINE void
yt__stream_line(char *dst, const char *src)
{
#ifdef __AVX2__
    _mm256_stream_si256((__m256i *)dst, _mm256_load_si256((const __m256i *)src));
    _mm256_stream_si256((__m256i *)(dst + 32), _mm256_load_si256((const __m256i *)(src + 32)));
#else
    memcpy(dst, src, 64);
#endif
}

/* Fetches the line at p into L1 to be written. The blocked traversal writes 16 lines a block, each
 * on its own row, where no hardware prefetcher follows; when its operands are past L2 but not
 * fetched ahead from memory (runtime/pointwise.c), each block fetches the next block's output
 * lines this way. bench/strided, one thread, strided against contiguous, three runs each:
 * a.t() + b [1048, 1000] f32 0.38-0.45x -> 0.65-0.98x, f64 0.75-0.77x -> 0.68-0.88x; -a.t()
 * [1024, 1024] 0.44-0.49x -> 0.59-0.60x. From L2 it did not pay (exp(a.t()) [65, 1000]
 * 0.58-0.60x -> 0.50-0.51x). Fetching the next block's lines of the inputs too, transposed or read
 * in place, did worse (a.t() + b [256, 256], whose rows share L1 sets: 0.50-0.57x -> 0.38-0.45x),
 * and prefetcht0 in place of prefetchw a little worse. GCC emits prefetchw only with -mprfchw,
 * which x86-64-v3 does not include (Haswell lacks it), so it is written out here, and taken only
 * where the CPU reports it (yt__has_prefetchw). */
YT_ALWAYS_INLINE void
yt__prefetch_for_write(const char *p)
{
#ifdef __x86_64__
    __asm__("prefetchw %0" ::"m"(*p));
#else
    __builtin_prefetch(p, 1, 3);
#endif
}

/* Whether yt__prefetch_for_write may run here (reads flags set at start-up: cheap). */
YT_ALWAYS_INLINE bool
yt__has_prefetchw(void)
{
#ifdef __x86_64__
    __builtin_cpu_init();
    return __builtin_cpu_supports("prfchw");
#else
    return true;
#endif
}

/* yt__copy_block for any layout and element size, element by element (out of line: a broadcast
 * or doubly strided input beside a transposed one is rare, and inlined this would take registers
 * from the common case). */
YT_INTERNAL void yt__copy_block_any(char *dst, int64_t dn, const char *src, int64_t s0, int64_t s1,
                                    int64_t es);

/* Side of the square blocks for operands of these sizes (bytes per element, out first): a cache
 * line of the widest input's elements (16 f32, 8 f64), at least YT__BLOCK and at most twice that,
 * so that a block uses whole lines of the transposed input and of the operands read in place. */
YT_ALWAYS_INLINE int64_t
yt__block_side(int n_ops, const int64_t *esize)
{
    int64_t widest = 1;
    for (int k = 1; k < n_ops; k++)
        widest = esize[k] > widest ? esize[k] : widest;
    int64_t side = 64 / widest;
    return side < YT__BLOCK ? YT__BLOCK : side > 2 * YT__BLOCK ? 2 * YT__BLOCK : side;
}

/* Copies the YT__BLOCK x YT__BLOCK block whose element (r, c) is at src + r * s1 + c * s0 into
 * dst, row-major with rows dn elements apart. A transposed input (s1 == es) of 4- or 8-byte
 * elements goes through registers. es is a constant where this is inlined. */
YT_ALWAYS_INLINE void
yt__copy_block(char *dst, int64_t dn, const char *src, int64_t s0, int64_t s1, int64_t es)
{
#ifdef __AVX2__
    if (s1 == es && es == 4) {
        yt__transpose8x8_32((float *)dst, dn, src, s0);
        return;
    }
    if (s1 == es && es == 8) {
        double *d = (double *)dst;
        yt__transpose4x4_64(d, dn, src, s0);
        yt__transpose4x4_64(d + 4 * dn, dn, src + 4 * es, s0);
        yt__transpose4x4_64(d + 4, dn, src + 4 * s0, s0);
        yt__transpose4x4_64(d + 4 * dn + 4, dn, src + 4 * es + 4 * s0, s0);
        return;
    }
#endif
    yt__copy_block_any(dst, dn, src, s0, s1, es);
}

/* Runs `rows_fn` (a loop's body, inlined here) over strip `s`, whose rows are a multiple of
 * YT__BLOCK and columns of yt__block_side(): the columns a side at a time, and for each, the rows
 * a side at a time (the last YT__BLOCK of them alone when the side is twice that). Of each block,
 * the inputs in s->copied are first copied into a buffer (yt__copy_block, per 8 x 8 piece); the
 * others, the output always among them, are contiguous along the row and read in place. So the
 * loop body runs at a constant row length, where only its contiguous path remains (two vectors
 * a row for f32), and every line a block reads or writes is used whole. With s->ahead set, each
 * block column first fetches the lines that far along the rows of the operands read in place
 * (past the strip's last column, as far into the next strip's rows).
 * n_ops and esize (bytes per element of each operand, out first) are constants in every
 * caller.
 *
 * Written so that GCC keeps the block loop in registers: the pointers advance a block at a time,
 * the prefetches stay outside the block loop, and the edges are the caller's (copying *s into
 * locals spilled, and measured 20-30% slower). */
YT_ALWAYS_INLINE void
yt__run_blocks(const yt__block_strip *s, int n_ops, const int64_t *esize, yt__loop_fn rows_fn,
               const void *ctx)
{
    /* a block is at most 2 * YT__BLOCK rows of at most a line (yt__block_side) */
    _Alignas(64) char buffers[YT__MAX_OPERANDS][2 * YT__BLOCK * 64];
    const int64_t side = yt__block_side(n_ops, esize);
    const unsigned copied = s->copied & ~1u; /* never the output */
    char *data[YT__MAX_OPERANDS];
    int64_t row_strides[YT__MAX_OPERANDS];
#pragma GCC unroll 8
    for (int k = 0; k < n_ops; k++)
        row_strides[k] =
            (copied >> k) & 1 || (k == 0 && s->stream_out) ? side * esize[k] : s->row_strides[k];
    for (int64_t j = 0; j < s->cols; j += side) {
#pragma GCC unroll 8
        for (int k = 1; k < n_ops; k++) {
            const char *next = s->next[k];
            if (next == NULL)
                continue;
            for (int64_t c = j; c < j + side; c++) {
                __builtin_prefetch(next + c * s->col_strides[k], 0, 1);
                __builtin_prefetch(next + c * s->col_strides[k] + s->next_last[k], 0, 1);
            }
        }
        const char *at[YT__MAX_OPERANDS];
#pragma GCC unroll 8
        for (int k = 0; k < n_ops; k++)
            at[k] = s->data[k] + j * s->col_strides[k];
        if (s->fetch_out && j + side < s->cols) {
            for (int64_t r = 0; r < s->rows; r++)
                yt__prefetch_for_write(at[0] + r * s->row_strides[0] + side * esize[0]);
        }
        if (s->ahead > 0) {
#pragma GCC unroll 8
            for (int k = 0; k < n_ops; k++) {
                if ((copied >> k) & 1)
                    continue;
                /* past the strip's last column: the same distance into the next strip's rows */
                const int64_t width = s->cols * s->col_strides[k];
                int64_t off = j * s->col_strides[k] + s->ahead, first = 0;
                if (off >= width) {
                    off -= width;
                    first = s->rows;
                }
                for (int64_t r = 0; r < s->rows; r++) {
                    const char *row = s->data[k] + (first + r) * s->row_strides[k] + off;
                    for (int64_t b = 0; b < side * esize[k]; b += 64) {
                        if (k == 0 && s->stream_out)
                            break; /* not fetched into cache */
                        if (k == 0)
                            __builtin_prefetch(row + b, 1, 2);
                        else
                            __builtin_prefetch(row + b, 0, 2);
                    }
                }
            }
        }
        for (int64_t i = 0; i < s->rows;) {
            const int64_t height = s->rows - i < side ? YT__BLOCK : side;
#pragma GCC unroll 8
            for (int k = 0; k < n_ops; k++) {
                if ((copied >> k) & 1) {
                    for (int64_t c = 0; c < side; c += YT__BLOCK)
                        for (int64_t r = 0; r < height; r += YT__BLOCK)
                            yt__copy_block(buffers[k] + (r * side + c) * esize[k], side,
                                           at[k] + r * s->row_strides[k] + c * s->col_strides[k],
                                           s->col_strides[k], s->row_strides[k], esize[k]);
                    data[k] = buffers[k];
                } else {
                    data[k] = (char *)at[k];
                }
                at[k] += height * s->row_strides[k];
            }
            if (s->stream_out) {
                /* computed into a buffer, stored from there a line a row */
                char *out = data[0];
                data[0] = buffers[0];
                rows_fn(data, esize, side, row_strides, height, ctx);
                for (int64_t r = 0; r < height; r++)
                    yt__stream_line(out + r * s->row_strides[0], buffers[0] + r * 64);
            } else {
                rows_fn(data, esize, side, row_strides, height, ctx);
            }
            i += height;
        }
    }
}

#endif
