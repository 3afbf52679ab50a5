/* yt__pointwise: the iteration helper under every elementwise kernel and every copy.
 *
 * It turns (out, inputs) into per-operand byte strides over out's shape (0 where an input is
 * broadcast), drops size-1 dims, orders the dims so the one with the smallest strides is
 * innermost (PyTorch's TensorIterator rule), and merges dims that are laid out one after the
 * other. Contiguous operands collapse to a single dim and `loop` runs once over everything;
 * otherwise `loop` runs once per block of rows along dim 1 (run_range; short rows many at a time
 * through a buffer, run_staged; an operand that steps over elements through the loop's stepped
 * form, takes_stepped, or through buffers it is gathered into or scattered from, run_pieces),
 * or, when an operand is transposed against the others, once per strip of rows in blocks (the
 * loop's block form) or in packed panels (run_strips). Above YT_PARALLEL_GRAIN elements the flat
 * range is split into chunks on the kernel pool, each starting mid-row where its share begins.
 *
 * Everything lives on the stack: no allocation, and per block only the loop call and an
 * odometer step. A loop call per row instead cost 2.4-4.7x on short rows (one thread, 2^20 f32
 * elements in rows of 2-16: `x[:, :4] + 1` 1523 -> 509 us, `a + col` on [262144, 4] 1733 ->
 * 716 us). */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "parallel.h"
#include "pointwise_blocks.h"
#include "stepped_copy.h"
#include "stepped_lanes.h"
#include "streaming_store.h"

enum { MAX_OPERANDS = YT__MAX_OPERANDS, LINE = 64 }; /* out + 7 inputs; bytes per cache line */

typedef struct iter {
    int n_ops;
    int dim;                                   /* after dropping and merging */
    int64_t sizes[YT_MAX_DIM];                 /* innermost first */
    int64_t strides[YT_MAX_DIM][MAX_OPERANDS]; /* bytes, innermost first */
    char *base[MAX_OPERANDS];
    int64_t esize[MAX_OPERANDS]; /* element size in bytes */
    bool prefetch;               /* from memory: the blocked traversal fetches the next strip
                                    during this one, the stepped form its lines ahead */
    bool fetch_out;              /* blocked traversal: yt__block_strip's fetch_out */
    bool nontemporal;            /* the output is stored around the caches (nontemporal_output) */
    int64_t height;              /* strips: rows per strip */
    int64_t panel;               /* strips: columns per panel of the packed traversal; 0: blocks */
    int64_t block_panel;         /* strips: columns per panel of the blocks; 0: all */
    int64_t tile_strips;         /* strips: run this many at a time over each panel; 0: all */
    unsigned streams;            /* rows: bit k set when run_row_in_chunks fetches operand k */
    bool staged;                 /* rows: short ones, run many at a time through run_staged */
    unsigned gathered;           /* rows: bit k set when operand k steps over elements */
    int64_t gather_piece;        /* rows: elements run_pieces takes at a time */
    yt__stepped_fn stepped;      /* rows: the loop's stepped form, run in place of run_pieces */
} iter;

/* PyTorch's should_swap: > 0 when dim `a` (now inner of the two) should move outward because
 * an operand steps over more memory along it than along `b`. Broadcast (0) strides say
 * nothing; the output, first in the list, decides first. */
static int
should_swap(const iter *it, int a, int b)
{
    for (int k = 0; k < it->n_ops; k++) {
        int64_t sa = it->strides[a][k], sb = it->strides[b][k];
        if (sa == 0 || sb == 0)
            continue;
        if (sa < sb)
            return -1;
        if (sa > sb)
            return 1;
        if (it->sizes[a] > it->sizes[b])
            return 1; /* equal strides: the longer dim goes outside */
    }
    return 0;
}

static void
swap_dims(iter *it, int a, int b)
{
    int64_t s = it->sizes[a];
    it->sizes[a] = it->sizes[b];
    it->sizes[b] = s;
    for (int k = 0; k < it->n_ops; k++) {
        int64_t t = it->strides[a][k];
        it->strides[a][k] = it->strides[b][k];
        it->strides[b][k] = t;
    }
}

static void
reorder(iter *it)
{
    /* Insertion sort; stops early on a decided pair, so already-ordered dims stay put. */
    for (int i = 1; i < it->dim; i++) {
        int cur = i;
        for (int j = i - 1; j >= 0; j--) {
            int c = should_swap(it, j, cur);
            if (c > 0) {
                swap_dims(it, j, cur);
                cur = j;
            } else if (c < 0) {
                break;
            }
        }
    }
}

static void
coalesce(iter *it)
{
    int kept = 0;
    for (int d = 1; d < it->dim; d++) {
        bool mergeable = true;
        for (int k = 0; k < it->n_ops && mergeable; k++)
            mergeable = it->strides[kept][k] * it->sizes[kept] == it->strides[d][k];
        if (mergeable) {
            it->sizes[kept] *= it->sizes[d];
            continue;
        }
        kept++;
        if (kept != d) {
            it->sizes[kept] = it->sizes[d];
            memcpy(it->strides[kept], it->strides[d], sizeof it->strides[d]);
        }
    }
    it->dim = kept + 1;
}

/* Rows run in chunks for two reasons: prefetching, and an output stored around the caches (see
 * nontemporal_output), which each chunk computes into a buffer first.
 *
 * A row whose operands stream from memory beside one the rows share (a broadcast row: inner
 * stride contiguous, stride 0 along dim 1), as in `x + bias` on a large x. The hardware
 * prefetchers lose track of the streams when the shared row's reads restart every row: in a plain
 * C loop over [10000, 1000] f32, 27 GB/s against 38 for the same bytes without the shared row.
 * So such rows run in chunks, each first fetching the streams' lines one chunk ahead (out with
 * intent to write). yt_add_out of [10000, 1000] f32 and a [1000] row, one thread: 3.08-3.25 ms
 * -> 2.53-2.65 ms (torch 2.07-2.33 ms in the same minutes); chunks of 1 KiB, or 4 KiB ahead,
 * measured slower. */
enum { STREAM_CHUNK_BYTES = 2048, STREAM_AHEAD_BYTES = 2048 };

static void
run_row_in_chunks(const iter *it, char **data, int64_t n, yt__loop_fn loop, const void *ctx)
{
    _Alignas(64) char stage[STREAM_CHUNK_BYTES];
    const int64_t *inner = it->strides[0];
    const int64_t chunk = STREAM_CHUNK_BYTES / it->esize[0];
    /* the chunks' ends on the output's line boundaries, so that no line is stored in two parts */
    const int64_t skew = (int64_t)((uintptr_t)data[0] % LINE) / it->esize[0];
    char *at[MAX_OPERANDS];
    for (int64_t j = 0; j < n;) {
        int64_t len = j == 0 ? chunk - skew : chunk;
        if (len > n - j)
            len = n - j;
        for (int k = 0; k < it->n_ops; k++) {
            at[k] = data[k] + j * inner[k];
            if (!((it->streams >> k) & 1))
                continue;
            const char *ahead = at[k] + STREAM_AHEAD_BYTES;
            for (int64_t b = 0; b < len * inner[k]; b += LINE)
                if (k == 0)
                    __builtin_prefetch(ahead + b, 1);
                else
                    __builtin_prefetch(ahead + b, 0);
        }
        if (it->nontemporal) {
            char *out = at[0];
            at[0] = stage;
            loop(at, inner, len, inner, 1, ctx);
            yt__store_streaming(out, stage, len * it->esize[0]);
        } else {
            loop(at, inner, len, inner, 1, ctx);
        }
        j += len;
    }
}

/* Operands of up to this many bytes in all are taken to stay in cache from one call to the next:
 * half the last-level cache (16 MiB of this machine's 32). */
static int64_t
cached_bytes(void)
{
    return yt__cache_bytes() / 2;
}

/* The operands run_row_in_chunks fetches ahead: those contiguous along the row and not shared
 * by the rows, when some input is a shared row (see there); 0 when none is. */
static unsigned
row_streams(const iter *it)
{
    if (it->dim < 2)
        return 0;
    bool shared = false;
    unsigned streams = 0;
    for (int k = 0; k < it->n_ops; k++) {
        if (it->strides[0][k] != it->esize[k])
            continue;
        if (it->strides[1][k] == 0)
            shared = true;
        else
            streams |= 1u << k;
    }
    return shared ? streams : 0;
}

/* Whether input k is the output itself, read where it is written (x *= 2, x[:, ::2] += b). */
static bool
reads_output(const iter *it, int k)
{
    return it->base[k] == it->base[0];
}

/* When an op's operands outgrow the last-level cache, the first lines of its output are evicted
 * before the op ends, and each line written cost two transfers: read in before the store, written
 * back after. Such an output (of at least a quarter of that cache, and contiguous along its rows)
 * is instead computed into a buffer a chunk at a time and stored from there by streaming stores,
 * one transfer a line (runtime/streaming_store.h). One thread, f32, y = a + b, then z = y * c,
 * then w = -z on the outputs (bench/streaming.sh, best of 15, plain stores -> streaming): outputs
 * of 12 MiB, 1014-1190 -> 795-976 us for the add alone, 2542-3056 -> 2222-2721 us for the three;
 * 48 MiB 4591-4741 -> 3754-4112 and 12485-13206 -> 9765-10660 us. At 8 MiB (24 in all, in
 * cache) the three took 1427-1460 plain, 1333-1726 streamed. On [10000, 1000] (best of 20):
 * a + b 1.27x as fast, -a 1.20x, a + row 1.28x, a.t() + b on [2048, 2048] 1.22x (the blocked
 * traversal, whose rows stream when they are lines that start on a line), [2000000, 5] + a
 * column 1.89x (staged rows).
 * Not streamed:
 * - compute-bound loops (YT__PW_COMPUTE_BOUND): their plain stores overlap the arithmetic, where
 *   a buffer's stores go out after it (exp(a) 0.90-0.94x as fast streamed);
 * - in place (x *= 1 0.58x: the op has just read the line into cache);
 * - rows under MIN_STREAMED_ROW_BYTES, which would cost a call and two partial lines each. */
enum { MIN_STREAMED_ROW_BYTES = 1024 };

static bool
nontemporal_output(const iter *it, int64_t bytes, yt__pw_bound bound)
{
    const int64_t cache = yt__cache_bytes();
    int64_t out_bytes = it->esize[0];
    for (int d = 0; d < it->dim; d++)
        out_bytes *= it->sizes[d];
    for (int k = 1; k < it->n_ops; k++)
        if (reads_output(it, k))
            return false; /* in place */
    return bound == YT__PW_MEMORY_BOUND && bytes > cache && out_bytes > cache / 4 &&
           it->strides[0][0] == it->esize[0];
}

/* Runs a block of rows of `n` elements: in one call, or row by row in chunks that prefetch or
 * store around the caches (see run_row_in_chunks). */
static void
run_block(const iter *it, char **data, int64_t n, const int64_t *row_strides, int64_t rows,
          yt__loop_fn loop, const void *ctx)
{
    if (!it->streams && !it->nontemporal) {
        loop(data, it->strides[0], n, row_strides, rows, ctx);
        return;
    }
    char *row[MAX_OPERANDS];
    for (int64_t r = 0; r < rows; r++) {
        for (int k = 0; k < it->n_ops; k++)
            row[k] = data[k] + r * row_strides[k];
        run_row_in_chunks(it, row, n, loop, ctx);
    }
}

/* Rows shorter than SHORT_ROW_BYTES (a [N, 4] tensor with a [N, 1] column broadcast along its
 * rows, or a narrowed [N, 8] input of which 4 of 8 are read) cost a loop call each, and a loop
 * that runs 4 elements at a time has no vector to fill: f32 add, one thread, 0.14-0.15x of the
 * same elements contiguous. When the output's rows follow each other in memory, such rows instead
 * run as flat rows of STAGE_BYTES of the widest operand: the inputs laid out otherwise are first
 * copied row after row into a buffer in that layout (run_staged). bench/pointwise, [N, 4] f32
 * against contiguous add: + [N, 1] column 0.14-0.36x -> 0.81-0.86x, 4 of 8 of [N, 8] + 2
 * 0.15-0.40x -> 0.50-0.59x. Rows of a whole line (16 f32) ran as fast row by row (0.58x with a
 * column, staged 0.53x), so they are not staged. */
enum { SHORT_ROW_BYTES = 64, STAGE_BYTES = 4096, STAGED_STEPPED_ROW_BYTES = 1024 };

/* Whether input k runs flat over whole rows, as the output does: contiguous along the row and
 * from one row to the next. */
static bool
flat_rows(const iter *it, int k)
{
    return it->strides[0][k] == it->esize[k] && it->strides[1][k] == it->sizes[0] * it->esize[k];
}

/* Bytes of the widest operand's element. */
static int64_t
widest_element(const iter *it)
{
    int64_t widest = 1;
    for (int k = 0; k < it->n_ops; k++)
        widest = it->esize[k] > widest ? it->esize[k] : widest;
    return widest;
}

/* Bit k set when operand k steps over elements along the rows (see run_pieces). */
static unsigned
stepping_operands(const iter *it)
{
    unsigned stepping = 0;
    for (int k = 0; k < it->n_ops; k++)
        if (it->strides[0][k] != 0 && it->strides[0][k] != it->esize[k])
            stepping |= 1u << k;
    return stepping;
}

/* Whether run_staged takes whole rows: the output's run flat, and the rows are short for every
 * operand (a bool result of an f64 comparison is 8 times narrower than its inputs), or, with an
 * input that steps over elements, shorter than STAGED_STEPPED_ROW_BYTES: such a row costs a call
 * to gather it wherever it runs, but staged the loop runs once per buffer, not once per row. */
static bool
stages_rows(const iter *it)
{
    if (it->dim < 2 || !flat_rows(it, 0))
        return false;
    const int64_t bytes = it->sizes[0] * widest_element(it);
    return bytes < SHORT_ROW_BYTES ||
           (bytes < STAGED_STEPPED_ROW_BYTES && (stepping_operands(it) & ~1u) != 0);
}

#ifdef __AVX2__
/* stage_rows for a column of 4- or 8-byte elements contiguous from row to row, each repeated n
 * times along its row (n * es < SHORT_ROW_BYTES): a vector of the column's elements at a time,
 * spread over the n vectors of its rows by permutes (lane l of vector q takes the element of row
 * (q * per + l) / n, per elements to a vector), instead of a store or more a row. Returns the rows
 * done: whole vectors' worth of them. */
static int64_t
fill_columns(char *dst, const char *src, int64_t es, int64_t n, int64_t rows)
{
    const int64_t per = 32 / es; /* elements, and so rows, to a vector */
    /* element e's row is e / n, taken as (e + 0.5) / n truncated (e < 128: exact in float); a
     * vector of 8-byte elements moves pairs of 4-byte lanes */
    const __m256i element = es == 4 ? _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)
                                    : _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
    const __m256i half =
        es == 4 ? _mm256_setzero_si256() : _mm256_setr_epi32(0, 1, 0, 1, 0, 1, 0, 1);
    const __m256 inverse = _mm256_set1_ps(1.0f / (float)n);
    __m256i lanes[SHORT_ROW_BYTES / 4];
    for (int64_t q = 0; q < n; q++) {
        const __m256i e = _mm256_add_epi32(element, _mm256_set1_epi32((int32_t)(q * per)));
        const __m256 at = _mm256_add_ps(_mm256_cvtepi32_ps(e), _mm256_set1_ps(0.5f));
        const __m256i row = _mm256_cvttps_epi32(_mm256_mul_ps(at, inverse));
        lanes[q] = es == 4 ? row : _mm256_add_epi32(_mm256_add_epi32(row, row), half);
    }
    const int64_t done = rows / per * per;
    for (int64_t r = 0; r < done; r += per) {
        const __m256 column = _mm256_loadu_ps((const float *)(src + r * es));
        for (int64_t q = 0; q < n; q++)
            _mm256_storeu_ps((float *)(dst + (r * n + q * per) * es),
                             _mm256_permutevar8x32_ps(column, lanes[q]));
    }
    return done;
}
#endif

/* Copies `rows` rows of n elements of es bytes (element j of row r at src + r * s1 + j * s0) into
 * dst, one after the other. The sizes of rows and elements common in short rows are constants
 * where the compiler sees them, so that the copies are single moves. */
static void
stage_rows(char *dst, const char *src, int64_t s0, int64_t s1, int64_t es, int64_t n, int64_t rows)
{
    const int64_t bytes = n * es;
#define COPY_ROWS(b)                                                                               \
    do {                                                                                           \
        for (int64_t r = 0; r < rows; r++)                                                         \
            memcpy(dst + r * (b), src + r * s1, (size_t)(b));                                      \
    } while (0)
#define COPY_ENDS(part)                                                                            \
    do {                                                                                           \
        for (int64_t r = 0; r < rows; r++) {                                                       \
            memcpy(dst + r * bytes, src + r * s1, (size_t)(part));                                 \
            memcpy(dst + r * bytes + bytes - (part), src + r * s1 + bytes - (part),                \
                   (size_t)(part));                                                                \
        }                                                                                          \
    } while (0)
#define FILL_ROWS(e)                                                                               \
    do {                                                                                           \
        for (int64_t r = 0; r < rows; r++)                                                         \
            for (int64_t j = 0; j < n; j++)                                                        \
                memcpy(dst + (r * n + j) * (e), src + r * s1, (size_t)(e));                        \
    } while (0)
    if (s0 == es) { /* contiguous along the row */
        switch (bytes) {
        case 4:
        case 8: /* a row is one element s1 bytes from the next: [N, 4][:, :2] + 2 at 1M
                 * elements 0.31x -> 0.50x of contiguous, [N, 2][:, :1] 0.33x -> 0.55x */
            yt__gather_elements(dst, src, s1, bytes, rows);
            return;
        case 16: {
            int64_t r = 0;
#ifdef __AVX2__
            /* two rows to a store (add_scalar_short_rows at 1M elements, bench/pointwise:
             * 95-96 -> 102-103 GB/s) */
            for (; r + 2 <= rows; r += 2)
                _mm256_storeu_ps((float *)(dst + r * 16),
                                 _mm256_loadu2_m128((const float *)(src + (r + 1) * s1),
                                                    (const float *)(src + r * s1)));
#endif
            for (; r < rows; r++)
                memcpy(dst + r * 16, src + r * s1, 16);
            return;
        }
        case 32:
            COPY_ROWS(32);
            return;
        default:
            break;
        }
        /* otherwise two moves of the largest power of two below: the row's first bytes and its
         * last, overlapping (rows under SHORT_ROW_BYTES; longer ones, staged beside a stepped
         * input, in one move) */
        if (bytes >= SHORT_ROW_BYTES)
            COPY_ROWS(bytes);
        else if (bytes > 32)
            COPY_ENDS(32);
        else if (bytes > 16)
            COPY_ENDS(16);
        else if (bytes > 8)
            COPY_ENDS(8);
        else if (bytes > 4)
            COPY_ENDS(4);
        else
            COPY_ROWS(bytes);
        return;
    }
    if (s0 == 0) { /* one element repeated along the row: a broadcast column */
#ifdef __AVX2__
        if ((es == 4 || es == 8) && s1 == es && rows >= 32 / es && bytes < SHORT_ROW_BYTES) {
            const int64_t done = fill_columns(dst, src, es, n, rows);
            dst += done * bytes;
            src += done * s1;
            rows -= done;
        }
        /* the rest (and a column whose rows are not back to back, or a 0-d input): whole
         * vectors of the element, each row's last running on over the next rows' place (which
         * their own stores then take) and past the last row into the buffer's spare
         * SHORT_ROW_BYTES */
        if (es == 4 || es == 8) {
            for (int64_t r = 0; r < rows; r++) {
                const __m256 v =
                    es == 4 ? _mm256_broadcast_ss((const float *)(src + r * s1))
                            : _mm256_castpd_ps(_mm256_broadcast_sd((const double *)(src + r * s1)));
                for (int64_t b = 0; b < bytes; b += 32)
                    _mm256_storeu_ps((float *)(dst + r * bytes + b), v);
            }
            return;
        }
#endif
        FILL_ROWS(es);
        return;
    }
#undef COPY_ROWS
#undef COPY_ENDS
#undef FILL_ROWS
    for (int64_t r = 0; r < rows; r++)
        yt__gather_elements(dst + r * bytes, src + r * s1, s0, es, n);
}

/* Runs `rows` whole rows from data[] on (stages_rows holds) as flat rows of up to
 * STAGE_BYTES of the widest operand: the inputs whose rows do not run flat are copied into
 * buffers first.
 * Each row's inputs are read before its output is written, as in the row-by-row loops. */
static void
run_staged(const iter *it, char *const *data, int64_t rows, yt__loop_fn loop, const void *ctx)
{
    _Alignas(64) char stage[MAX_OPERANDS][STAGE_BYTES + SHORT_ROW_BYTES];
    const int64_t n = it->sizes[0], *s0 = it->strides[0], *s1 = it->strides[1];
    const int64_t most = STAGE_BYTES / (n * widest_element(it)); /* rows a buffer holds */
    char *at[MAX_OPERANDS];
    for (int64_t r0 = 0; r0 < rows; r0 += most) {
        const int64_t len = rows - r0 < most ? rows - r0 : most;
        for (int k = 0; k < it->n_ops; k++) {
            at[k] = data[k] + r0 * s1[k];
            if (k > 0 && !flat_rows(it, k)) {
                stage_rows(stage[k], at[k], s0[k], s1[k], it->esize[k], n, len);
                at[k] = stage[k];
            }
        }
        if (it->nontemporal) {
            char *out = at[0];
            at[0] = stage[0];
            loop(at, it->esize, len * n, it->esize, 1, ctx);
            yt__store_streaming(out, stage[0], len * n * it->esize[0]);
        } else {
            loop(at, it->esize, len * n, it->esize, 1, ctx);
        }
    }
}

/* Rows in which an operand steps over elements (x[:, ::2], x[..., ::3], a column x[:, j], or
 * out= such a view) took the loops' element-by-element path: f32 a[:, ::2] + b 0.30-0.36x of
 * a + b, exp(a[:, ::3]) 0.10-0.14x, a[:, ::2] *= 1 0.13-0.18x (bench/strided). Instead each row
 * runs in pieces of up to STAGE_BYTES of the widest operand, such inputs' pieces first gathered
 * into a buffer (yt__gather_elements), such an output's computed into one and then stored
 * (yt__scatter_elements), so that the loop takes its vector path. */
/* Shorter rows, when not staged, run through the loops' element-by-element path: gathering
 * costs a few calls a row. */
enum { MIN_GATHERED_ROW = 128 };

/* Bytes of the widest operand run_pieces takes at a time: STAGE_BYTES, but half that when it
 * scatters an output that comes from memory (a[:, ::2] *= 1 on [10000, 2000] f32: 0.27-0.30x of
 * contiguous -> 0.40-0.41x; 1 KiB 0.40-0.42x; on [65, 2000] 4 KiB pieces are faster, 0.165x
 * against 0.154x for 2 KiB and 0.131x for 1 KiB) or stores one around the caches (see
 * nontemporal_output; [10000, 1000] f32, a[:, ::2] + b 5.07-5.23 ms plain in 4 KiB pieces,
 * 4.01-4.36 streamed in 2 KiB ones, 6.5-6.8 in 4 KiB ones; -a[:, ::2] 3.49-3.58 -> 3.11-3.57,
 * 3.93-4.17). */
enum { OUTPUT_FROM_MEMORY_BYTES = STAGE_BYTES / 2 };

static int64_t
gather_piece_bytes(const iter *it, int64_t bytes)
{
    const bool from_memory = (it->gathered & 1 && bytes > cached_bytes()) || it->nontemporal;
    return from_memory ? OUTPUT_FROM_MEMORY_BYTES : STAGE_BYTES;
}

/* Whether the loop's stepped form takes the rows in place of run_pieces: the loop has one that
 * this CPU runs (yt__stepped_form), and every operand steps 1 to 3 elements apart (an input 0
 * too). Where the output streams around the caches (nontemporal_output), the stepped form stores
 * it so itself (run_stepped). From memory, [10000, 1000] f32, one
 * thread, bench/strided, two alternations each: run_pieces streaming against the stepped form
 * storing plainly, a[:, ::2] + b 11.6-15.5 against 10.0-10.3 ms, f64 30-31 against 20-25,
 * -a[:, ::2] 11.6-11.8 against 9.0-9.9, -a[:, ::3] 13.5-16.2 against 11.6-12.6; then the stepped
 * form streaming through the buffer against storing plainly, ratio to contiguous, -a[:, ::2]
 * 0.67-0.69x -> 0.75-0.79x, a[:, ::2] + b 0.68-0.75x -> 0.77-0.78x. In registers there is no
 * buffer to store and load again: one thread, bench/strided, ratio to contiguous at 65K / 1M / 10M
 * f32 elements, old and new alternating twice: a[:, ::2] *= 1 0.28-0.29 / 0.32-0.34 / 0.27-0.30 ->
 * 0.43-0.50 / 0.48-0.50 / 0.33-0.42, -a[:, ::3] 0.43-0.44 / 0.49-0.50 / 0.34-0.39 -> 0.55-0.68 /
 * 0.51-0.52 / 0.49-0.53, out= x[:, ::2] 0.41-0.44 / 0.61-0.63 / 0.43-0.48 -> 0.52-0.53 / 0.66 /
 * 0.57-0.59, exp(a[:, ::3]) 0.61-0.64 / 0.43-0.47 / 0.36-0.38 -> 0.71-0.73 / 0.52-0.56 /
 * 0.45-0.47. */
static bool
takes_stepped(const iter *it, yt__stepped_fn stepped)
{
    if (stepped == NULL || it->gathered == 0)
        return false;
    for (int k = 0; k < it->n_ops; k++) {
        const int64_t step = it->strides[0][k], es = it->esize[k];
        if (!(step == es || step == 2 * es || step == 3 * es || (k > 0 && step == 0)))
            return false;
    }
    return true;
}

/* Appends to `next` what the inputs of the piece at element j of row r (len elements) read, for
 * those whose elements lie at most a line apart (so every line of the range holds some). */
static void
piece_reads(const iter *it, char *const *data, const int64_t *row_strides, int64_t r, int64_t j,
            int64_t len, yt__next_reads *next)
{
    for (int k = 1; k < it->n_ops; k++) {
        const int64_t step = it->strides[0][k];
        if (step <= 0 || step > LINE)
            continue;
        next->at[next->n] = data[k] + r * row_strides[k] + j * step;
        next->bytes[next->n++] = len * step;
    }
}

/* Runs `rows` rows of n elements `piece` at a time with the operands in `gathered` gathered
 * (inputs) or scattered (the output) through buffers (see stepping_operands), and an output that
 * streams around the caches computed into its buffer and streamed out from there. An input that is
 * the output itself (an in-place op on a stepped view) is read into its buffer before the output's
 * is stored. */
static void
run_pieces(const iter *it, char *const *data, int64_t n, const int64_t *row_strides, int64_t rows,
           yt__loop_fn loop, unsigned gathered, int64_t piece, const void *ctx)
{
    _Alignas(64) char stage[MAX_OPERANDS][STAGE_BYTES];
    const int64_t *s0 = it->strides[0];
    const bool scatters = gathered & 1;
    int64_t strides[MAX_OPERANDS];
    for (int k = 0; k < it->n_ops; k++)
        strides[k] = (gathered >> k) & 1 ? it->esize[k] : s0[k];
    char *at[MAX_OPERANDS];
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < n; j += piece) {
            const int64_t len = n - j < piece ? n - j : piece;
            for (int k = 0; k < it->n_ops; k++) {
                at[k] = data[k] + r * row_strides[k] + j * s0[k];
                if (k > 0 && (gathered >> k) & 1) {
                    yt__gather_elements(stage[k], at[k], s0[k], it->esize[k], len);
                    at[k] = stage[k];
                }
            }
            char *out = at[0];
            if (scatters || it->nontemporal)
                at[0] = stage[0]; /* a streamed output is contiguous along the row */
            loop(at, strides, len, strides, 1, ctx);
            if (scatters) {
                yt__scatter_elements(out, s0[0], stage[0], it->esize[0], len);
            } else if (it->nontemporal) {
                /* the next piece's inputs fetched meanwhile (yt__store_streaming_ahead) */
                const bool row_ends = j + piece >= n;
                const int64_t r2 = row_ends ? r + 1 : r, j2 = row_ends ? 0 : j + piece;
                yt__next_reads next = {0};
                if (r2 < rows)
                    piece_reads(it, data, row_strides, r2, j2, n - j2 < piece ? n - j2 : piece,
                                &next);
                yt__store_streaming_ahead(out, stage[0], len * it->esize[0], &next);
            }
        }
}

/* Whether the stepped form's fetches ahead (it->prefetch) are left out: in place on one operand
 * (every input the output itself: x[:, ::2] *= 2, an in-place unary op), in the AVX-512 form.
 * Its rows read and write one stepped stream of lines, which the hardware's prefetchers follow
 * there on their own, and the fetches only cost. Zen 4, one thread, f32, fetches on and off
 * alternated in one build: x[:, ::2] *= 1 on [10000, 2000] 2905-3030 -> 2671-2750 us
 * (bench/strided mul_step2_inplace 10M: 0.43-0.45x -> 0.47x of contiguous), [3000, 2000] 540-606
 * -> 409-504; x[:, ::3] *= 1 on [10000, 3000] 4557-4957 -> 4239-4543, [3000, 3000] 1016-1424 ->
 * 793-873. The AVX2 form, which stores such a row an element at a time, needs them: on Zen 3
 * (AVX2 only), the same way, off -> on: [10000, 2000] 7380-8136 -> 5706-6322 us (mul_step2_inplace
 * 10M 0.39-0.42x -> 0.45-0.50x), [3000, 2000] 1942-2228 -> 1375-1606, [10000, 3000] 10953-11813
 * -> 9947-10181, [3000, 3000] 3337-3410 -> 2296-2689. With another input they stay in both:
 * x[:, ::2] += b on [10000, 2000] did 4-7% better without them on Zen 4, x[:, ::3] += b 1-7%
 * worse. */
static bool
skips_fetches(const iter *it)
{
    if (yt__cpu_isa() != YT__ISA_AVX512)
        return false;
    for (int k = 1; k < it->n_ops; k++)
        if (!reads_output(it, k) || it->strides[0][k] != it->strides[0][0])
            return false;
    return true;
}

/* Runs `rows` rows of n elements through the loop's stepped form (takes_stepped), which stores
 * an output that streams around the caches (nontemporal_output) by non-temporal stores from its
 * registers. That output was computed into a 4 KiB buffer a piece at a time and streamed from
 * there, with the next piece's inputs fetched meanwhile: bench/strided, one thread, 10M f32, the
 * loops against a hand-written one that streams as it goes (bare_us): -a[:, ::3] 7.5 against 5.7
 * ms, -a[:, ::2] 6.3 against 4.7, a[:, ::2] + b 7.1 against 4.8. */
static void
run_stepped(const iter *it, char **data, int64_t n, const int64_t *row_strides, int64_t rows,
            const void *ctx)
{
    const int64_t *inner = it->strides[0];
    if (!it->nontemporal || ((uintptr_t)data[0] % LINE == 0 && row_strides[0] % LINE == 0)) {
        it->stepped(data, inner, n, row_strides, rows, it->nontemporal, it->prefetch, ctx);
        return;
    }
    /* rows that start between lines: each one's elements up to a line's start stored plainly,
     * so that the vectors after them start lines and stream */
    char *row[MAX_OPERANDS];
    for (int64_t r = 0; r < rows; r++) {
        for (int k = 0; k < it->n_ops; k++)
            row[k] = data[k] + r * row_strides[k];
        const uintptr_t past = (uintptr_t)row[0] % LINE;
        int64_t head = past % (uintptr_t)it->esize[0] == 0
                           ? (int64_t)((LINE - past) % LINE) / it->esize[0]
                           : 0;
        head = head < n ? head : n;
        if (head > 0)
            it->stepped(row, inner, head, row_strides, 1, false, it->prefetch, ctx);
        for (int k = 0; k < it->n_ops; k++)
            row[k] += head * inner[k];
        it->stepped(row, inner, n - head, row_strides, 1, true, it->prefetch, ctx);
    }
}

/* Runs `loop` over flat elements [begin, end) of the iteration space: a first row that a chunk
 * may begin partway along, then blocks of whole rows along dim 1 (as many as remain of that dim
 * and of the range), then the part of a row where the range ends. */
static void
run_range(const iter *it, int64_t begin, int64_t end, yt__loop_fn loop, const void *ctx)
{
    static const int64_t single_row[MAX_OPERANDS]; /* dim 0 only: row strides never used */
    const int64_t n0 = it->sizes[0], n1 = it->dim > 1 ? it->sizes[1] : 1;
    const int64_t *row_strides = it->dim > 1 ? it->strides[1] : single_row;
    int64_t idx[YT_MAX_DIM];
    char *ptr[MAX_OPERANDS]; /* start of the current row */
    char *data[MAX_OPERANDS];
    int64_t rest = begin;
    for (int d = 0; d < it->dim; d++) {
        idx[d] = rest % it->sizes[d];
        rest /= it->sizes[d];
    }
    for (int k = 0; k < it->n_ops; k++) {
        ptr[k] = it->base[k];
        for (int d = 1; d < it->dim; d++)
            ptr[k] += idx[d] * it->strides[d][k];
    }
    int64_t pos = begin;
    while (pos < end) {
        int64_t n = n0 - idx[0], rows = 1;
        if (n > end - pos)
            n = end - pos;
        if (n == n0) {
            int64_t rows_left = it->dim > 1 ? n1 - idx[1] : 1;
            rows = (end - pos) / n0;
            if (rows > rows_left)
                rows = rows_left;
        }
        for (int k = 0; k < it->n_ops; k++)
            data[k] = ptr[k] + idx[0] * it->strides[0][k];
        if (it->staged && n == n0 && rows > 1)
            run_staged(it, data, rows, loop, ctx);
        else if (it->stepped != NULL)
            run_stepped(it, data, n, row_strides, rows, ctx);
        else if (it->gathered)
            run_pieces(it, data, n, row_strides, rows, loop, it->gathered, it->gather_piece, ctx);
        else
            run_block(it, data, n, row_strides, rows, loop, ctx);
        pos += n * rows;
        idx[0] += n;
        if (idx[0] < n0 || pos >= end)
            continue;
        /* Rows done: step the odometer over the outer dims, dim 1 by `rows`. */
        idx[0] = 0;
        for (int d = 1; d < it->dim; d++) {
            int64_t by = d == 1 ? rows : 1;
            for (int k = 0; k < it->n_ops; k++)
                ptr[k] += by * it->strides[d][k];
            idx[d] += by;
            if (idx[d] < it->sizes[d])
                break;
            idx[d] = 0;
            for (int k = 0; k < it->n_ops; k++)
                ptr[k] -= it->sizes[d] * it->strides[d][k];
        }
    }
}

/* ---------------------------------------------------------------- blocked traversal
 *
 * When an input is laid out along dim 1 while the output runs along dim 0 (a transposed
 * input), a row of dim 0 reads one cache line, on its own page, per element, and the loop
 * cannot take its contiguous (vectorised) path: 0.26x of contiguous before the tiled traversals.
 * Instead the two inner dims are walked in strips of one cache line's worth of rows (16 for
 * 4-byte elements; 8 from memory, strip_height), and each strip in square blocks of a line's
 * worth of columns (runtime/pointwise_blocks.h): a transposed input's block is transposed in
 * registers into a buffer that stays in L1, and the loop's body, inlined beside it, runs over the
 * block's rows with every operand contiguous. Every line a block reads or writes is used whole
 * (from memory, a transposed input's line over two strips). Work is split
 * across threads by strips.
 *
 * This replaced copying a tile of up to 64 KiB of the transposed input into a buffer and then
 * calling the loop over the tile: two passes, where the copying's stores and its reads of the
 * transposed input did not overlap the loop's. Add with a transposed input, one thread,
 * bench/strided, ratio to contiguous at 65K / 1M / 10M elements: f32 0.49 / 0.51-0.52 /
 * 0.55-0.57 -> 0.60-0.61 / 0.56-0.57 / 0.56, f64 0.53 / 0.57-0.61 / 0.53 -> 0.66-0.68 /
 * 0.60-0.61 / 0.64-0.65. Square [1024, 1024] f32 lost (0.44 -> 0.25-0.27): with rows 4 KiB
 * apart a block's 16 rows share cache sets; such strides take the packed traversal or column
 * panels instead (SHARED_SETS_BYTES below). */

void
yt__copy_block_any(char *dst, int64_t dn, const char *src, int64_t s0, int64_t s1, int64_t es)
{
    for (int64_t r = 0; r < YT__BLOCK; r++)
        for (int64_t c = 0; c < YT__BLOCK; c++)
            memcpy(dst + (r * dn + c) * es, src + r * s1 + c * s0, (size_t)es);
}

/* When the operands come from memory, a strip's blocks wait on one access per column, each on
 * its own line and its own page: no hardware prefetcher follows that stride. So with each block
 * column, the same columns of the next strip are fetched into L2 (prefetcht2: into L1 they would
 * evict the lines the blocks stream). The operands read in place stream along the strip's 16
 * rows at once, 64 bytes a row per block, which the hardware prefetchers do not keep up with
 * either: with each block column, each row's line AHEAD_BYTES further on is fetched too (f32 add
 * with a transposed input, [10000, 1000], one thread: 0.26-0.28x -> 0.56-0.60x of contiguous;
 * 64 bytes ahead 0.46x, 256 0.51x, 384 0.49-0.50x), and near a strip's end the lines as far into
 * the next strip's rows (yt__run_blocks), whose first lines were otherwise waited on once a strip.
 * Rows of a page or less give the hardware's prefetchers, which stop at a page's end, no run to
 * follow, and take the lines from further ahead. bench/ab, one thread, f32, against 128 bytes
 * ahead and no fetches into the next strip, new / old time: a.t() + b [20000, 500] 0.62,
 * [10000, 1000] 0.69-0.71 (256 bytes ahead: 0.82, 0.79-0.83), -a.t() [10000, 1000] 0.92; with rows
 * longer than a page 512 bytes did worse than 256 ([5000, 2000] 1.07-1.11 against 0.98,
 * [3000, 3000] 1.04 against 1.00, f64 [10000, 1000] 1.06-1.09 against 256's), and 256 gave
 * [2048, 2048] 0.94, [1500, 1500] 0.94, f64 [10000, 1000] 0.98.
 * From L2 or L3 the prefetches only cost, so they start at a quarter of the last-level cache. */
enum { AHEAD_BYTES = 256, SHORT_ROW_AHEAD_BYTES = 512, PAGE_BYTES = 4096 };

static int64_t
prefetch_bytes(void)
{
    return yt__cache_bytes() / 4;
}

/* Whether input k is transposed against the output: contiguous along dim 1, not dim 0 (and
 * not broadcast along dim 0, which the loops handle directly). */
static bool
transposed_input(const iter *it, int k)
{
    return k > 0 && it->strides[1][k] == it->esize[k] && it->strides[0][k] != it->esize[k] &&
           it->strides[0][k] != 0;
}

/* True when an input is transposed against the output, which is contiguous along dim 0. When
 * an input's contiguous dim is an outer one (a permutation of 3 or more dims), it is first
 * swapped into dim 1; the order of the dims above 0 does not matter to the traversal. */
static bool
wants_blocks(iter *it)
{
    if (it->dim < 2 || it->sizes[0] < YT__BLOCK || it->strides[0][0] != it->esize[0])
        return false;
    for (int k = 1; k < it->n_ops; k++) {
        int64_t s0 = it->strides[0][k];
        if (s0 == it->esize[k] || s0 == 0)
            continue;
        for (int d = 2; d < it->dim && it->strides[1][k] != it->esize[k]; d++)
            if (it->strides[d][k] == it->esize[k] && it->sizes[d] >= YT__BLOCK)
                swap_dims(it, 1, d);
        if (transposed_input(it, k))
            return it->sizes[1] >= YT__BLOCK;
    }
    return false;
}

/* Rows per strip: a cache line of each transposed input's columns (8 rows of 8-byte elements,
 * 16 of 4-byte ones...), so a strip uses every line it reads. */
static int64_t
strip_rows(const iter *it)
{
    int64_t es = 1;
    for (int k = 1; k < it->n_ops; k++)
        if (transposed_input(it, k) && it->esize[k] > es)
            es = it->esize[k];
    return LINE / es;
}

/* Strips per outer index: n1 rows in strips of `height`, except that a remainder of under 8
 * rows joins the last strip instead of being a strip of its own, which would read a line per
 * column for a few elements each (a [65, 1000] f32 add: 4 strips of 16 and one of 1 row -> 3 of
 * 16 and one of 17). */
static int64_t
strip_count(int64_t n1, int64_t height)
{
    int64_t full = n1 / height, rest = n1 % height;
    bool joins = rest != 0 && rest < YT__BLOCK && full != 0;
    return joins ? full : full + (rest != 0);
}

/* Rows a multiple of SHARED_SETS_BYTES apart put a block's 16 rows into at most 2 of L1's 64
 * sets, and 16 lines of one set in flight evict each other. In microbenchmarks on [1024, 1024]
 * f32 (rows 4 KiB apart, one thread), the blocked traversal's 16-row writes took 2.6x as long as
 * with rows 4160 bytes apart, and its reads of a transposed input 2.7x. So when the output's rows
 * (or those of an input read in place) are that far apart and the operands come from the
 * last-level cache, not L2 (LLC/16 < bytes <= 3/8 LLC), the strips take the packed traversal
 * (run_packed): PACKED_STRIPS cache lines' rows, their copied inputs copied a panel of columns
 * at a time into PACK_BYTES whose rows are a line longer than the panel, so that the loop then
 * writes rows a panel long. f32 add with a transposed input, one thread, against contiguous:
 * [1024, 1024] 0.22-0.28x -> 0.44-0.48x, [512, 512] 0.42-0.45x -> 0.50-0.53x, [2048, 512]
 * 0.31-0.42x -> 0.48-0.53x; f64 [512, 512] 0.35x -> 0.49-0.58x. Elsewhere the blocks did as well
 * or better: from L2 ([256, 256] f64 neg 0.61x, packed 0.52x), from 16 MiB on ([1024, 1024] f64
 * neg 0.46-0.58x, packed 0.29-0.38x), and with only a transposed input's columns a power of two
 * apart ([1024, 1000] f32 add 0.49x, packed 0.32-0.41x). PACKED_STRIPS and PACK_BYTES were the
 * best of 2-8 strips and 36-60 KiB. */
enum { SHARED_SETS_BYTES = 2048, PACKED_STRIPS = 4, PACK_BYTES = 36 << 10 };

static bool
rows_share_sets(const iter *it)
{
    for (int k = 0; k < it->n_ops; k++)
        if (it->strides[0][k] == it->esize[k] && it->strides[1][k] != 0 &&
            it->strides[1][k] % SHARED_SETS_BYTES == 0)
            return true;
    return false;
}

/* Columns per panel of the packed traversal for these operands, `bytes` in all, or 0 for the
 * blocked one: as many as let the copied inputs' buffers fit PACK_BYTES, a multiple of
 * YT__BLOCK. */
static int64_t
packed_panel(const iter *it, int64_t bytes)
{
    const int64_t cache = yt__cache_bytes();
    if (bytes <= cache / 16 || bytes > cache / 8 * 3 || !rows_share_sets(it))
        return 0;
    const int64_t rows = strip_rows(it) * PACKED_STRIPS;
    int64_t per_column = 0, pads = 0;
    for (int k = 1; k < it->n_ops; k++)
        if (it->strides[0][k] != it->esize[k]) {
            per_column += it->esize[k];
            pads += LINE;
        }
    const int64_t panel = (PACK_BYTES / rows - pads) / per_column / YT__BLOCK * YT__BLOCK;
    return panel >= YT__BLOCK ? panel : 0;
}

/* Rows per strip as run: strip_rows, times PACKED_STRIPS for the packed traversal, and from
 * memory (it->prefetch) at most YT__BLOCK, half a line of 4-byte columns. A strip streams its rows
 * of the operands read in place (the output's among them) side by side, and 16 such streams a
 * strip of f32 outran what the hardware keeps in flight from memory; with 8, a transposed input's
 * line serves two strips run one after the other, and stays in L2 between them (a strip reads one
 * line a column: 64 KiB for 1000 columns). bench/ab, this against 16-row strips, one thread, f32,
 * new / old time: a.t() + b [10000, 1000] 0.88-0.93, [3000, 3000] 0.93, [2048, 2048] 0.85;
 * -a.t() [10000, 1000] 0.64, [2048, 2048] 0.97-1.02; two threads, a.t() + b [3000, 3000]
 * 0.87-0.93. From L3 ([1000, 1000], [1024, 1024]) 8 rows did no better (1.00-1.07), so there the
 * strips stay a line high; fetching the next new line (16 rows ahead, not the next strip's 8) did
 * no better either (1.00-1.05). */
static int64_t
strip_height(const iter *it)
{
    const int64_t rows = strip_rows(it);
    if (it->panel > 0)
        return rows * PACKED_STRIPS;
    return it->prefetch && rows > YT__BLOCK && it->tile_strips == 0 ? YT__BLOCK : rows;
}

/* From memory, the next strip's lines of a transposed input whose columns are a multiple of
 * SHARED_SETS_BYTES apart, fetched a strip ahead, did not last until that strip when it was
 * thousands of columns long; the blocks then go over the strips a panel of BLOCK_PANEL columns
 * at a time (4-byte elements now go in tiles instead, TILE_STRIPS below). f32, one thread,
 * against contiguous: [2048, 2048] add 0.37-0.38x -> 0.43-0.48x, neg 0.44-0.47x -> 0.52-0.60x;
 * [2048, 1000] add 0.42-0.43x -> 0.56-0.57x; [1024, 4096] add 0.34x -> 0.45-0.47x.
 * 256 and 1024 columns did no better, and without such strides panels lost
 * ([10000, 1000] add 0.55-0.56x -> 0.50x). */
enum { BLOCK_PANEL = 512 };

/* Whether a transposed input's columns are a multiple of SHARED_SETS_BYTES apart. */
static bool
columns_share_sets(const iter *it)
{
    for (int k = 1; k < it->n_ops; k++)
        if (transposed_input(it, k) && it->strides[0][k] % SHARED_SETS_BYTES == 0)
            return true;
    return false;
}

/* From memory, with such columns and 4-byte elements, the strips go a line high, TILE_STRIPS at a
 * time over each panel of TILE_PANEL columns (tiles of 256 x 128 elements): each line of the
 * transposed input is used by one strip, not half by each of two (the panels of BLOCK_PANEL
 * columns in strips of 8 rows), and its next strip's lines are fetched during it. The group's
 * last strip fetches the next group's first lines, needed only a group later: those do not last
 * in L2 (the columns of a panel share 16 of its sets) but come from L3 then; fetching within the
 * group alone, -a.t() [2048, 2048] f32 took 1765-1788 us, with that fetch 1455-1513 (tiles of
 * 64 x 64). f32, one thread, alternated against the strips of 8 rows: -a.t() [2048, 2048]
 * 1776-1814 -> 1346-1360 us (bench/strided: 0.38-0.39x -> 0.46-0.50x of contiguous);
 * a.t().contiguous() [2048, 2048] 1801-1858 -> 1337-1401, [4096, 4096] 8522-8627 -> 5781-5906,
 * [2048, 1000] 797-811 -> 476-477; a.t() + b [2048, 2048] 2600-2744 -> 2140-2266, [2048, 1000]
 * 988-1027 -> 751-768, [4096, 1024] 2699-2838 -> 2159-2254, [4096, 4096] 11710-12344 ->
 * 10557-10567; two threads, a.t().contiguous() [2048, 2048] 963-968 -> 715-729, a.t() + b
 * 1302-1471 -> 1125-1194. Tiles of 64 x 64 did 5-10% worse, of 32 x 64 2x worse; for f64
 * (strips already a line high) tiles of 128 or 256 rows lost (a.t() + b [2048, 2048] 0.56x ->
 * 0.50-0.51x of contiguous), and other element sizes were not measured: they keep the strips.
 * Other column strides take tiles too while the operands fit half the last-level cache (from L3,
 * the fetches ahead on): f32, one thread, four alternations, a.t() + b [1048, 1000] 302-305 ->
 * 278-287 us, [1100, 1100] 391-413 -> 356-378, [1400, 800] 327-332 -> 288-294, [900, 1000]
 * 273-274 -> 239-249; a.t().contiguous() [1100, 1100] 296-300 -> 241-263; two threads, a.t() + b
 * [1048, 1000] 158-160 -> 152-155. Past that they tied or lost (a.t() + b [2000, 1000], 24 MB,
 * 628-641 -> 674-807 us; [10000, 1000] 4484-5071 -> 4686-5465). */
enum { TILE_STRIPS = 16, TILE_PANEL = 128 };

/* Strips run at a time over each panel (it->tile_strips), or 0 for all of them, for operands of
 * `bytes` in all. */
static int64_t
tile_strips(const iter *it, int64_t bytes)
{
    if (!it->prefetch || it->panel > 0 || strip_rows(it) != 2 * YT__BLOCK)
        return 0;
    return columns_share_sets(it) || bytes <= yt__cache_bytes() / 2 ? TILE_STRIPS : 0;
}

/* Columns per panel of the blocked traversal, or 0 for all of them. */
static int64_t
block_panel(const iter *it)
{
    if (it->tile_strips > 0)
        return TILE_PANEL;
    return it->prefetch && it->panel == 0 && columns_share_sets(it) ? BLOCK_PANEL : 0;
}

/* yt__copy_block with an element size known only here (so its common sizes are inlined). */
static void
copy_block(char *dst, int64_t dn, const char *src, int64_t s0, int64_t s1, int64_t es)
{
    switch (es) {
    case 4:
        yt__copy_block(dst, dn, src, s0, s1, 4);
        break;
    case 8:
        yt__copy_block(dst, dn, src, s0, s1, 8);
        break;
    default:
        yt__copy_block_any(dst, dn, src, s0, s1, es);
        break;
    }
}

/* A strip's last rows, fewer than YT__BLOCK, are run by the loop itself on the operands' own
 * strides, EDGE_COLUMNS columns a call (so that the lines of a transposed input that the rows
 * share stay in L1 from one row to the next): the 8 x 8 pieces below transpose 8 rows of which
 * these use as few as one. a.t() + b on [65, 1000] f32, one thread, the row edge (time at 65 rows
 * less that at 64): 4.4-5.2 us in pieces, 0.9-3.3 us so, of 25-29 us in all. */
enum { EDGE_COLUMNS = 64 };

/* Runs s->loop over rows [i0, i1) x columns [j0, j1) of strip s, an edge of it that the block
 * form left (i1, j1 >= YT__BLOCK), in 8 x 8 pieces: the copied inputs' piece goes through a buffer
 * as in yt__run_blocks, and the last piece each way overlaps ones already done, of which only
 * the new part is run, so that output elements are written once, as in-place ops need. One loop
 * call per piece: edges are at most 15 columns and 7 rows of a strip. Fewer than YT__BLOCK rows
 * go straight to the loop (EDGE_COLUMNS). */
static void
run_edge(const iter *it, const yt__block_strip *s, int64_t i0, int64_t i1, int64_t j0, int64_t j1,
         const void *ctx)
{
    _Alignas(64) char buffers[YT__MAX_OPERANDS][YT__BLOCK * YT__BLOCK * 8];
    char *data[YT__MAX_OPERANDS];
    int64_t strides[YT__MAX_OPERANDS], row_strides[YT__MAX_OPERANDS];
    if (i1 - i0 < YT__BLOCK) {
        for (int64_t j = j0; j < j1; j += EDGE_COLUMNS) {
            for (int k = 0; k < it->n_ops; k++)
                data[k] = s->data[k] + i0 * s->row_strides[k] + j * s->col_strides[k];
            const int64_t n = j1 - j < EDGE_COLUMNS ? j1 - j : EDGE_COLUMNS;
            s->loop(data, s->col_strides, n, s->row_strides, i1 - i0, ctx);
        }
        return;
    }
    for (int64_t i = i0; i < i1; i += YT__BLOCK) {
        const int64_t bi = i + YT__BLOCK <= i1 ? i : i1 - YT__BLOCK; /* the piece's first row */
        for (int64_t j = j0; j < j1; j += YT__BLOCK) {
            const int64_t bj = j + YT__BLOCK <= j1 ? j : j1 - YT__BLOCK;
            for (int k = 0; k < it->n_ops; k++) {
                const int64_t es = it->esize[k], s0 = s->col_strides[k], s1 = s->row_strides[k];
                if ((s->copied >> k) & 1) {
                    copy_block(buffers[k], YT__BLOCK, s->data[k] + bi * s1 + bj * s0, s0, s1, es);
                    data[k] = buffers[k] + ((i - bi) * YT__BLOCK + (j - bj)) * es;
                    strides[k] = es;
                    row_strides[k] = YT__BLOCK * es;
                } else {
                    data[k] = s->data[k] + i * s1 + j * s0;
                    strides[k] = s0;
                    row_strides[k] = s1;
                }
            }
            s->loop(data, strides, bj + YT__BLOCK - j, row_strides, bi + YT__BLOCK - i, ctx);
        }
    }
}

/* The packed copy reads a transposed input's columns a strip's few lines each, every column on
 * its own page, which no hardware prefetcher follows: so with each 8 columns, the lines of those
 * PACK_AHEAD_COLUMNS further on are fetched into L2 (prefetcht2). 16 to 48 columns ahead did
 * alike; into L1 or both (prefetcht1, prefetcht0) did worse ([1024, 1024] f32 neg, bench/strided:
 * 0.43x of contiguous with prefetcht2, 0.41x and 0.37x). Fetching the output's lines of the panel
 * as well (prefetcht2, prefetchw) lost: 0.48x -> 0.41-0.45x. Like the blocks' prefetches, these
 * are for operands past a quarter of the last-level cache (it->prefetch): below, the lines come
 * from L3 soon enough, and the prefetches only cost ([512, 512] f32 add, f64 neg and add, bench/ab
 * against the same library without them: 1.03-1.08x the time; [1024, 1024] f32 add, 12 MiB of
 * operands: 0.51-0.53x of contiguous without, 0.55-0.57x with). */
enum { PACK_AHEAD_COLUMNS = 24 };

/* Fetches `bytes` from each of 8 columns s0 bytes apart from `at` on. */
static void
prefetch_columns(const char *at, int64_t s0, int64_t bytes)
{
    for (int64_t c = 0; c < YT__BLOCK; c++)
        for (int64_t b = 0; b < bytes; b += LINE)
            __builtin_prefetch(at + c * s0 + b, 0, 1);
}

/* Copies rows x cols elements of a transposed input of es bytes (element (r, c) at src + r * es +
 * c * s0; rows and cols multiples of YT__BLOCK) into dst, rows `row` bytes apart, a column of 8 x 8
 * pieces at a time: the pieces down a column read the same lines (two pieces a line for 4-byte
 * elements), then the next ones. With each 8 columns c <= `ahead`, those PACK_AHEAD_COLUMNS
 * further on are fetched. es is a constant where this is inlined. */
YT_ALWAYS_INLINE void
copy_transposed_es(char *dst, int64_t row, const char *src, int64_t s0, int64_t es, int64_t rows,
                   int64_t cols, int64_t ahead)
{
    for (int64_t c = 0; c < cols; c += YT__BLOCK) {
        if (c <= ahead)
            prefetch_columns(src + (c + PACK_AHEAD_COLUMNS) * s0, s0, rows * es);
        for (int64_t r = 0; r < rows; r += YT__BLOCK)
            yt__copy_block(dst + r * row + c * es, row / es, src + r * es + c * s0, s0, es, es);
    }
}

/* copy_transposed_es for 4- or 8-byte elements, each size's pieces inlined (a call per piece, as
 * copy_block makes, left the copy at 1.2x the time). With the prefetches, f32 with a transposed
 * [1024, 1024] input, one thread, bench/strided, against contiguous, most runs: neg 0.41-0.43x ->
 * 0.45-0.51x, add 0.39-0.48x -> 0.50-0.58x (now and then a process is slower either way: neg
 * 0.36x). */
static void
copy_transposed(char *dst, int64_t row, const char *src, int64_t s0, int64_t es, int64_t rows,
                int64_t cols, int64_t ahead)
{
    if (es == 4)
        copy_transposed_es(dst, row, src, s0, 4, rows, cols, ahead);
    else
        copy_transposed_es(dst, row, src, s0, 8, rows, cols, ahead);
}

/* The packed traversal: a strip's copied inputs (transposed or otherwise not contiguous along
 * the row) are copied, a panel of columns at a time, into an L1 buffer laid out like the output,
 * and the loop then runs over the panel's rows, each a contiguous run of `panel` elements.
 * s->rows and s->cols are multiples of YT__BLOCK; run_strips runs the edges. */
static void
run_packed(const iter *it, const yt__block_strip *s, const void *ctx)
{
    _Alignas(64) char packed[PACK_BYTES];
    char *data[YT__MAX_OPERANDS];
    int64_t strides[YT__MAX_OPERANDS], row_strides[YT__MAX_OPERANDS];
    for (int64_t p0 = 0; p0 < s->cols; p0 += it->panel) {
        const int64_t width = s->cols - p0 < it->panel ? s->cols - p0 : it->panel;
        char *unused = packed;
        for (int k = 0; k < it->n_ops; k++) {
            const int64_t es = it->esize[k], s0 = s->col_strides[k], s1 = s->row_strides[k];
            const char *at = s->data[k] + p0 * s0;
            if ((s->copied >> k) & 1) {
                /* a line between buffer rows, so that they do not share cache sets either */
                const int64_t row = it->panel * es + LINE;
                if (s1 == es && (es == 4 || es == 8)) {
                    /* the columns whose lines are fetched ahead: not past the strip's end */
                    const int64_t ahead =
                        it->prefetch ? s->cols - p0 - PACK_AHEAD_COLUMNS - YT__BLOCK : -1;
                    copy_transposed(unused, row, at, s0, es, s->rows, width, ahead);
                } else {
                    for (int64_t c = 0; c < width; c += YT__BLOCK)
                        for (int64_t r = 0; r < s->rows; r += YT__BLOCK)
                            copy_block(unused + r * row + c * es, row / es, at + r * s1 + c * s0,
                                       s0, s1, es);
                }
                data[k] = unused;
                strides[k] = es;
                row_strides[k] = row;
                unused += s->rows * row;
            } else {
                data[k] = (char *)at;
                strides[k] = s0;
                row_strides[k] = s1;
            }
        }
        s->loop(data, strides, width, row_strides, s->rows, ctx);
    }
}

/* Points s at strip q (rows [(q % strips1) * height, ...) of outer index q / strips1) from
 * column c0 on, the next strip's prefetches included, and returns its rows. */
static int64_t
point_at_strip(const iter *it, int64_t q, int64_t strips1, int64_t c0, yt__block_strip *s)
{
    const int64_t n1 = it->sizes[1], height = it->height, *s1 = it->strides[1];
    int64_t outer = q / strips1, i0 = (q % strips1) * height;
    const bool last = q % strips1 == strips1 - 1;
    const int64_t rows = last ? n1 - i0 : height;
    s->rows = rows / YT__BLOCK * YT__BLOCK;
    for (int k = 0; k < it->n_ops; k++)
        s->data[k] = it->base[k] + i0 * s1[k] + c0 * it->strides[0][k];
    for (int d = 2; d < it->dim; d++) {
        int64_t idx = outer % it->sizes[d];
        outer /= it->sizes[d];
        for (int k = 0; k < it->n_ops; k++)
            s->data[k] += idx * it->strides[d][k];
    }
    /* the next strip's rows: the last one of this outer index takes in any remainder */
    const int64_t next_rows = q % strips1 == strips1 - 2 ? n1 - i0 - height : height;
    for (int k = 0; k < it->n_ops; k++) {
        bool ahead = it->prefetch && !last && transposed_input(it, k);
        s->next[k] = ahead ? s->data[k] + height * s1[k] : NULL;
        s->next_last[k] = (next_rows - 1) * it->esize[k];
    }
    return rows;
}

/* Runs strips [g0, g1) of run_strips over its `cols` columns, a panel of `width` at a time:
 * every strip over one panel, then over the next; then the edges, with the last panel. */
static void
run_strip_group(const iter *it, int64_t g0, int64_t g1, int64_t strips1, int64_t cols,
                int64_t width, yt__block_strip *s, yt__block_fn blocks, const void *ctx)
{
    const int64_t n0 = it->sizes[0];
    for (int64_t c0 = 0;; c0 += width) {
        const bool last_panel = c0 + width >= cols;
        for (int64_t q = g0; q < g1; q++) {
            const int64_t rows = point_at_strip(it, q, strips1, c0, s);
            s->cols = last_panel ? cols - c0 : width;
            if (it->panel > 0)
                run_packed(it, s, ctx);
            else if (s->cols > 0)
                blocks(s, ctx);
            if (!last_panel)
                continue;
            if (c0 > 0)
                point_at_strip(it, q, strips1, 0, s);
            s->cols = cols;
            if (s->cols < n0)
                run_edge(it, s, 0, rows, s->cols, n0, ctx);
            if (s->rows < rows && s->cols > 0)
                run_edge(it, s, s->rows, rows, 0, s->cols, ctx);
        }
        if (last_panel)
            return;
    }
}

/* Runs strips [begin, end) of it->height rows (of dim 1), every outer index included, a panel
 * of columns at a time (it->block_panel, or all of them), over it->tile_strips strips at a time
 * (or all of them). The block form or run_packed takes each strip's rows down to a multiple of 8
 * and columns down to one of the block side (of 8 for run_packed); run_edge the rest, with the
 * last panel. */
static void
run_strips(const iter *it, int64_t begin, int64_t end, yt__loop_fn loop, yt__block_fn blocks,
           const void *ctx)
{
    const int64_t n0 = it->sizes[0], strips1 = strip_count(it->sizes[1], it->height);
    const int64_t side = yt__block_side(it->n_ops, it->esize);
    yt__block_strip s;
    s.loop = loop;
    s.copied = 0;
    s.ahead = !it->prefetch                     ? 0
              : n0 * it->esize[0] <= PAGE_BYTES ? SHORT_ROW_AHEAD_BYTES
                                                : AHEAD_BYTES;
    s.fetch_out = it->fetch_out;
    s.stream_out = it->nontemporal && side * it->esize[0] == LINE;
    for (int d = 1; d < it->dim; d++)
        s.stream_out = s.stream_out && it->strides[d][0] % LINE == 0;
    s.stream_out = s.stream_out && (uintptr_t)it->base[0] % LINE == 0;
    for (int k = 0; k < it->n_ops; k++) {
        s.col_strides[k] = it->strides[0][k];
        s.row_strides[k] = it->strides[1][k];
        if (it->strides[0][k] != it->esize[k])
            s.copied |= 1u << k;
    }
    const int64_t cols = it->panel > 0 ? n0 / YT__BLOCK * YT__BLOCK : n0 / side * side;
    const int64_t panel = it->block_panel / side * side;
    const int64_t width = panel > 0 && panel < cols ? panel : cols;
    const int64_t group = it->tile_strips > 0 ? it->tile_strips : end - begin;
    for (int64_t g0 = begin; g0 < end; g0 += group) {
        const int64_t g1 = g0 + group < end ? g0 + group : end;
        run_strip_group(it, g0, g1, strips1, cols, width, &s, blocks, ctx);
    }
}

/* A pointwise loop split over the pool: chunk c runs units [total * c / chunks, ...) of either
 * elements (run_range) or strips (run_strips). */
typedef struct pw_job {
    const iter *it;
    int64_t total, chunks;
    yt__loop_fn loop;
    yt__block_fn blocks; /* strips when set */
    const void *ctx;
} pw_job;

static void
pw_chunk(void *arg, int64_t c)
{
    const pw_job *j = arg;
    int64_t begin = j->total * c / j->chunks, end = j->total * (c + 1) / j->chunks;
    if (j->blocks != NULL)
        run_strips(j->it, begin, end, j->loop, j->blocks, j->ctx);
    else
        run_range(j->it, begin, end, j->loop, j->ctx);
    if (j->it->nontemporal)
        yt__streaming_fence(); /* before the pool tells the caller this chunk is done */
}

/* Nanoseconds per element of a pointwise loop on one thread, roughly (memory-bound f32 ops). */
#define PW_NS_PER_ELEMENT 0.25

/* Runs `total` units (elements with `loop`, or strips with `blocks` when that is set) of a
 * pointwise loop over `numel` elements, on the pool when it pays: a few chunks per thread, so
 * that a late thread leaves its share to the others. */
static void
run_split(const iter *it, int64_t numel, int64_t total, yt__loop_fn loop, yt__block_fn blocks,
          const void *ctx)
{
    int threads = yt__parallel_threads((double)numel * PW_NS_PER_ELEMENT, yt__max_threads());
    int64_t chunks = yt__parallel_chunks(total, threads);
    pw_job j = {it, total, chunks, loop, blocks, ctx};
    if (threads <= 1 || chunks <= 1) {
        j.chunks = 1;
        pw_chunk(&j, 0);
        return;
    }
    yt__parallel_run(chunks, threads, pw_chunk, &j);
}

/* Callers check broadcastability; reaching this is a bug in the caller. */
static yt_status
broadcast_error(const yt_tensor *out, int n_in, yt_tensor *const *in)
{
    char have[200], want[200];
    yt__format_sizes(want, sizeof want, out->sizes, out->dim);
    for (int k = 0; k < n_in; k++) {
        const yt_tensor *t = in[k];
        bool ok = t->dim <= out->dim;
        for (int i = 0; ok && i < t->dim; i++)
            ok = t->sizes[i] == 1 || t->sizes[i] == out->sizes[out->dim - t->dim + i];
        if (!ok) {
            yt__format_sizes(have, sizeof have, t->sizes, t->dim);
            return yt__fail_status(YT_ERR_INTERNAL,
                                   "pointwise: input %d of shape %s does not broadcast to %s", k,
                                   have, want);
        }
    }
    return yt__fail_status(YT_ERR_INTERNAL, "pointwise: inputs do not broadcast to %s", want);
}

/* Operands of at most SMALL_BYTES in all, every one on the CPU, contiguous and of the output's
 * shape, run as one call of the loop, with none of the iterator's set-up: they are below every
 * threshold it weighs (streams, streaming stores, and splitting over threads, which
 * yt__parallel_threads refuses under 3 us of work, some 12,000 elements), so they would run as
 * that one call anyway. bench/overhead, 1-element f32 tensors, the builds before this and the
 * node allocation in runtime/autograd/node.c and after, in turn, three times: yt_add 185-332 ->
 * 114-115 ns, recording a node 314-561 -> 180-187, a 100-op chain forward and backward 387-707 ->
 * 276-292 ns an op. */
enum { SMALL_BYTES = 16384 };

static bool
runs_as_one_call(const yt_tensor *out, int n_in, yt_tensor *const *in, char **data, int64_t *esize)
{
    if (out->numel > SMALL_BYTES)
        return false; /* (so the sum below cannot overflow) */
    int64_t bytes = 0;
    for (int k = 0; k <= n_in; k++) {
        const yt_tensor *t = k == 0 ? out : in[k - 1];
        if (t->device != YT_DEVICE_CPU || !t->is_contiguous || t->dim != out->dim)
            return false;
        for (int d = 0; d < out->dim; d++)
            if (t->sizes[d] != out->sizes[d])
                return false;
        data[k] = yt__data_ptr(t);
        esize[k] = yt__elem_bytes(t->dtype);
        bytes += out->numel * esize[k];
    }
    return bytes <= SMALL_BYTES;
}

/* yt__pointwise; with writes_out false, the output is never gathered or staged into a buffer
 * and stored back (yt__pointwise_scan). */
static yt_status
pointwise(yt_tensor *out, int n_in, yt_tensor *const *in, yt__loop_fn loop, yt__block_fn blocks,
          yt__stepped_fn stepped, yt__pw_bound bound, const void *ctx, bool writes_out)
{
    if (n_in < 0 || n_in > MAX_OPERANDS - 1)
        return yt__fail_status(YT_ERR_INTERNAL, "pointwise: %d inputs, at most %d supported", n_in,
                               MAX_OPERANDS - 1);
    if (out->numel == 0)
        return YT_OK;
    char *data[MAX_OPERANDS];
    int64_t esize[MAX_OPERANDS];
    if (runs_as_one_call(out, n_in, in, data, esize)) {
        loop(data, esize, out->numel, esize, 1, ctx);
        return YT_OK;
    }

    iter it;
    it.n_ops = n_in + 1;
    it.prefetch = false; /* set below, for the traversal that uses them */
    it.fetch_out = false;
    it.nontemporal = false;
    it.streams = 0;
    it.staged = false;
    it.gathered = 0;
    it.gather_piece = 0;
    it.stepped = NULL;
    const int ndim = out->dim;
    for (int k = 0; k < it.n_ops; k++) {
        const yt_tensor *t = k == 0 ? out : in[k - 1];
        if (t->device != YT_DEVICE_CPU)
            return yt__fail_status(YT_ERR_DEVICE, "pointwise: operand %d is on %s, expected cpu", k,
                                   yt_device_name(t->device));
        if (t->dim > ndim)
            return broadcast_error(out, n_in, in);
        it.base[k] = yt__data_ptr(t);
        it.esize[k] = (int64_t)yt_dtype_size(t->dtype);
    }

    /* Per-operand byte strides in out's dims, innermost first; size-1 dims dropped. */
    it.dim = 0;
    for (int i = ndim - 1; i >= 0; i--) {
        int64_t size = out->sizes[i];
        if (size == 1) {
            for (int k = 1; k < it.n_ops; k++) {
                int d = in[k - 1]->dim - ndim + i;
                if (d >= 0 && in[k - 1]->sizes[d] != 1)
                    return broadcast_error(out, n_in, in);
            }
            continue;
        }
        for (int k = 0; k < it.n_ops; k++) {
            const yt_tensor *t = k == 0 ? out : in[k - 1];
            int d = t->dim - ndim + i;
            int64_t stride = 0;
            if (d >= 0) {
                if (t->sizes[d] == size)
                    stride = t->strides[d] * (int64_t)yt_dtype_size(t->dtype);
                else if (t->sizes[d] != 1)
                    return broadcast_error(out, n_in, in);
            }
            it.strides[it.dim][k] = stride;
        }
        it.sizes[it.dim++] = size;
    }
    if (it.dim == 0) {
        /* A single element: one dim of size 1, with element-sized strides so loops take their
         * contiguous path. */
        it.sizes[0] = 1;
        for (int k = 0; k < it.n_ops; k++) {
            const yt_tensor *t = k == 0 ? out : in[k - 1];
            it.strides[0][k] = (int64_t)yt_dtype_size(t->dtype);
        }
        it.dim = 1;
    }
    if (it.dim > 1) {
        reorder(&it);
        coalesce(&it);
    }

    int64_t numel = out->numel, bytes = 0;
    for (int k = 0; k < it.n_ops; k++)
        bytes += numel * it.esize[k];
    if (blocks != NULL && wants_blocks(&it)) {
        it.prefetch = bytes > prefetch_bytes();
        it.fetch_out = !it.prefetch && bytes > yt__l2_bytes() && yt__has_prefetchw();
        it.nontemporal = writes_out && nontemporal_output(&it, bytes, bound);
        it.panel = packed_panel(&it, bytes);
        it.tile_strips = tile_strips(&it, bytes);
        it.height = strip_height(&it);
        it.block_panel = block_panel(&it);
        int64_t strips = numel / it.sizes[0] / it.sizes[1] * strip_count(it.sizes[1], it.height);
        run_split(&it, numel, strips, loop, blocks, ctx);
        return YT_OK;
    }
    it.staged = stages_rows(&it);
    it.gathered = it.staged || it.sizes[0] < MIN_GATHERED_ROW
                      ? 0
                      : stepping_operands(&it) & (writes_out ? ~0u : ~1u);
    it.nontemporal = writes_out && nontemporal_output(&it, bytes, bound) &&
                     (it.staged || it.sizes[0] * it.esize[0] >= MIN_STREAMED_ROW_BYTES);
    it.stepped = takes_stepped(&it, stepped) ? stepped : NULL;
    it.prefetch = it.stepped != NULL && bytes > prefetch_bytes() && !skips_fetches(&it);
    it.gather_piece = it.stepped != NULL ? 0 : gather_piece_bytes(&it, bytes) / widest_element(&it);
    it.streams = bytes > cached_bytes() && !it.staged && !it.gathered ? row_streams(&it) : 0;
    if (it.nontemporal)
        it.streams &= ~1u; /* not fetched into cache */
    run_split(&it, numel, numel, loop, NULL, ctx);
    return YT_OK;
}

yt_status
yt__pointwise(yt_tensor *out, int n_in, yt_tensor *const *in, yt__loop_fn loop, yt__block_fn blocks,
              yt__stepped_fn stepped, yt__pw_bound bound, const void *ctx)
{
    return pointwise(out, n_in, in, loop, blocks, stepped, bound, ctx, true);
}

yt_status
yt__pointwise_scan(yt_tensor *t, yt__loop_fn loop, const void *ctx)
{
    yt_tensor *const in[1] = {t};
    return pointwise(t, 1, in, loop, NULL, NULL, YT__PW_MEMORY_BOUND, ctx, false);
}
