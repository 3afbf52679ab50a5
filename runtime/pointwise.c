/* yt__pointwise: the iteration helper under every elementwise kernel and every copy.
 *
 * It turns (out, inputs) into per-operand byte strides over out's shape (0 where an input is
 * broadcast), drops size-1 dims, orders the dims so the one with the smallest strides is
 * innermost (PyTorch's TensorIterator rule), and merges dims that are laid out one after the
 * other. Contiguous operands collapse to a single dim and `loop` runs once over everything;
 * otherwise `loop` runs once per block of rows along dim 1 (run_range), or once per tile when an
 * operand is transposed against the others (run_tiles). Above YT_PARALLEL_GRAIN elements the
 * flat range is split into chunks on the kernel pool, each starting mid-row where its share
 * begins.
 *
 * Everything lives on the stack: no allocation, and per block only the loop call and an
 * odometer step. A loop call per row instead cost 2.4-4.7x on short rows (one thread, 2^20 f32
 * elements in rows of 2-16: `x[:, :4] + 1` 1523 -> 509 us, `a + col` on [262144, 4] 1733 ->
 * 716 us). */
#include <stdio.h>
#ifdef __AVX2__
#include <immintrin.h>
#endif
#include <string.h>

#include "internal.h"
#include "parallel.h"

enum { MAX_OPERANDS = 8, LINE = 64 }; /* out + 7 inputs; bytes per cache line */

typedef struct iter {
    int n_ops;
    int dim;                                   /* after dropping and merging */
    int64_t sizes[YT_MAX_DIM];                 /* innermost first */
    int64_t strides[YT_MAX_DIM][MAX_OPERANDS]; /* bytes, innermost first */
    char *base[MAX_OPERANDS];
    int64_t esize[MAX_OPERANDS]; /* element size in bytes */
    int64_t pack_bytes;          /* tiled traversal: bytes of a packed tile per operand */
    bool prefetch;               /* tiled traversal: fetch the next strip during this one's loop */
    int strip_lines;             /* tiled traversal: lines of each packed column a strip reads */
    unsigned streams;            /* rows: bit k set when run_row_prefetching fetches operand k */
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

/* A row whose operands stream from memory beside one the rows share (a broadcast row: inner
 * stride contiguous, stride 0 along dim 1), as in `x + bias` on a large x. The hardware
 * prefetchers lose track of the streams when the shared row's reads restart every row: in a plain
 * C loop over [10000, 1000] f32, 27 GB/s against 38 for the same bytes without the shared row.
 * So such rows run in chunks, each first fetching the streams' lines one chunk ahead (out with
 * intent to write). yt_add_out of [10000, 1000] f32 and a [1000] row, one thread: 3.08-3.25 ms
 * -> 2.53-2.65 ms (torch 2.07-2.33 ms in the same minutes); chunks of 1 KiB, or 4 KiB ahead,
 * measured slower. */
enum { STREAM_CHUNK_BYTES = 2048, STREAM_AHEAD_BYTES = 2048 };

static void
run_row_prefetching(const iter *it, char **data, int64_t n, yt__loop_fn loop, const void *ctx)
{
    const int64_t *inner = it->strides[0];
    const int64_t chunk = STREAM_CHUNK_BYTES / it->esize[0];
    char *at[MAX_OPERANDS];
    for (int64_t j = 0; j < n; j += chunk) {
        int64_t len = n - j < chunk ? n - j : chunk;
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
        loop(at, inner, len, inner, 1, ctx);
    }
}

/* The operands run_row_prefetching fetches ahead: those contiguous along the row and not shared
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

/* Runs a block of rows of `n` elements: in one call, or row by row in prefetching chunks (see
 * run_row_prefetching). */
static void
run_block(const iter *it, char **data, int64_t n, const int64_t *row_strides, int64_t rows,
          yt__loop_fn loop, const void *ctx)
{
    if (!it->streams) {
        loop(data, it->strides[0], n, row_strides, rows, ctx);
        return;
    }
    char *row[MAX_OPERANDS];
    for (int64_t r = 0; r < rows; r++) {
        for (int k = 0; k < it->n_ops; k++)
            row[k] = data[k] + r * row_strides[k];
        run_row_prefetching(it, row, n, loop, ctx);
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

/* ---------------------------------------------------------------- tiled traversal
 *
 * When an input is laid out along dim 1 while the output runs along dim 0 (a transposed
 * input), a row of dim 0 reads one cache line, on its own page, per element, and the loop
 * cannot take its contiguous (vectorised) path: 0.26x of contiguous before this. Instead the
 * two inner dims are walked in strips of one cache line's worth of rows (16 for 4-byte
 * elements), cut along dim 0 into tiles of at most PACK_BYTES per operand (whole rows up to
 * 1024 f32 elements): each transposed input's tile is first copied into a row-major buffer,
 * reading it along its own contiguous dim (8 x 8 blocks transposed in registers for 4- and
 * 8-byte elements) and prefetching the line the next strip reads; the loop then runs over the
 * tile's rows with every operand contiguous. The other operands stream through the strip's
 * rows, which are adjacent in memory. Work is split across threads by strips. */

enum { MAX_PACKED = 2, PACK_BYTES = 65536 };

/* Tiles of PACK_BYTES keep whole rows (up to 1024 f32) of the streamed operands together, which
 * the memory prefetchers need; when every operand fits in cache (cached_bytes() in all), tiles of
 * CACHED_PACK_BYTES keep the packed tile in L1 between its packing and the loop instead
 * (measured on f32 add with a transposed input: 0.27x -> 0.34x of contiguous at 65K elements,
 * 0.49x -> 0.62x at 1M; at 10M the small tiles lose a third). */
enum { CACHED_PACK_BYTES = 16384 };

/* Operands of up to this many bytes in all are taken to stay in cache from one call to the next:
 * half the last-level cache (16 MiB of this machine's 32). */
static int64_t
cached_bytes(void)
{
    return yt__cache_bytes() / 2;
}

/* When the operands come from memory, a strip's packing waits on one access per column, each on
 * its own line and its own page: no hardware prefetcher follows that stride. So while the loop
 * streams over a strip's rows, the columns of the next strip are fetched into L2, a part at a
 * time between groups of the loop's rows, so the misses overlap the loop instead of stalling the
 * packing (f32, one thread: add with a transposed input at 1M elements 0.39-0.43x -> 0.49-0.51x
 * of contiguous, at 10M 0.50-0.54x -> 0.57-0.58x; exp at 10M 0.48-0.53x -> 0.58-0.60x). From L2
 * or L3 the prefetches only cost, so they start at a quarter of the last-level cache, not at L2's
 * 1 MiB as they did (same add, bench/strided at 65K-524K elements: f32 0.42-0.44x -> 0.48-0.49x,
 * f64 0.45-0.49x -> 0.49-0.55x; at 1M unchanged). */
static int64_t
prefetch_bytes(void)
{
    return yt__cache_bytes() / 4;
}

/* The loop over a tile runs in this many calls, each after its share of those prefetches, so
 * they spread over the tile (2, 4, 8 and 16 measured the same within noise on f32 add at 1M and
 * 10M elements). */
enum { PREFETCH_GROUPS = 4 };

/* Whether input k is transposed against the output: contiguous along dim 1, not dim 0 (and
 * not broadcast along dim 0, which the loops handle directly). */
static bool
transposed_input(const iter *it, int k)
{
    return k > 0 && it->strides[1][k] == it->esize[k] && it->strides[0][k] != it->esize[k] &&
           it->strides[0][k] != 0;
}

/* True when an input is transposed against the output. When an input's contiguous dim is an
 * outer one (a permutation of 3 or more dims), it is first swapped into dim 1; the order of the
 * dims above 0 does not matter to the traversal. */
static bool
wants_tiles(iter *it)
{
    if (it->dim < 2 || it->sizes[0] < 8)
        return false;
    for (int k = 1; k < it->n_ops; k++) {
        int64_t s0 = it->strides[0][k];
        if (s0 == it->esize[k] || s0 == 0)
            continue;
        for (int d = 2; d < it->dim && it->strides[1][k] != it->esize[k]; d++)
            if (it->strides[d][k] == it->esize[k] && it->sizes[d] >= 8)
                swap_dims(it, 1, d);
        if (transposed_input(it, k))
            return it->sizes[1] >= 8;
    }
    return false;
}

/* Copies rows x n elements of size es, element (i, j) at src + i * s1 + j * s0, into dst in
 * row-major order; src is contiguous along i (s1 == es). Reads run along i. */
#define DEFINE_PACK(T)                                                                             \
    static void pack_##T(char *dst, const char *src, int64_t rows, int64_t n, int64_t s0,          \
                         int64_t j)                                                                \
    {                                                                                              \
        T *d = (T *)dst;                                                                           \
        for (; j < n; j++) {                                                                       \
            const T *col = (const T *)(src + j * s0);                                              \
            __builtin_prefetch((const char *)col + 64);                                            \
            for (int64_t i = 0; i < rows; i++)                                                     \
                d[i * n + j] = col[i];                                                             \
        }                                                                                          \
    }
DEFINE_PACK(uint8_t)
DEFINE_PACK(uint16_t)
DEFINE_PACK(uint32_t)
DEFINE_PACK(uint64_t)

#ifdef __AVX2__
/* One 8 x 8 block of 4-byte elements: 8 loads along i, an in-register transpose, 8 stores along
 * j into rows dn elements apart. Shuffles only, so every bit pattern (NaN payloads, integers) is
 * copied exactly. No software prefetch: measured, it only cost (15-30% in cache, nothing gained
 * from memory). */
static inline __attribute__((always_inline)) void
transpose8x8_32(float *d, int64_t dn, const char *src, int64_t s0)
{
#define LOAD(k)     _mm256_loadu_ps((const float *)(src + (k)*s0))
#define STORE(i, v) _mm256_storeu_ps(d + (i)*dn, v)
    __m256 r0 = LOAD(0), r1 = LOAD(1), r2 = LOAD(2), r3 = LOAD(3);
    __m256 r4 = LOAD(4), r5 = LOAD(5), r6 = LOAD(6), r7 = LOAD(7);
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    STORE(0, _mm256_permute2f128_ps(u0, u4, 0x20));
    STORE(1, _mm256_permute2f128_ps(u1, u5, 0x20));
    STORE(2, _mm256_permute2f128_ps(u2, u6, 0x20));
    STORE(3, _mm256_permute2f128_ps(u3, u7, 0x20));
    STORE(4, _mm256_permute2f128_ps(u0, u4, 0x31));
    STORE(5, _mm256_permute2f128_ps(u1, u5, 0x31));
    STORE(6, _mm256_permute2f128_ps(u2, u6, 0x31));
    STORE(7, _mm256_permute2f128_ps(u3, u7, 0x31));
#undef LOAD
#undef STORE
}

/* One 4 x 4 block of 8-byte elements, as transpose8x8_32 does it. Named loads, not an array
 * filled in a loop: GCC (-O2) kept such an array on the stack, and the shuffles then read it back
 * through store forwarding. */
static inline __attribute__((always_inline)) void
transpose4x4_64(double *d, int64_t dn, const char *src, int64_t s0)
{
    __m256d r0 = _mm256_loadu_pd((const double *)src);
    __m256d r1 = _mm256_loadu_pd((const double *)(src + s0));
    __m256d r2 = _mm256_loadu_pd((const double *)(src + 2 * s0));
    __m256d r3 = _mm256_loadu_pd((const double *)(src + 3 * s0));
    __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
    __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
    _mm256_storeu_pd(d, _mm256_permute2f128_pd(t0, t2, 0x20));
    _mm256_storeu_pd(d + dn, _mm256_permute2f128_pd(t1, t3, 0x20));
    _mm256_storeu_pd(d + 2 * dn, _mm256_permute2f128_pd(t0, t2, 0x31));
    _mm256_storeu_pd(d + 3 * dn, _mm256_permute2f128_pd(t1, t3, 0x31));
}

/* One block of 8 rows x 4 columns of 8-byte elements, as two 4 x 4 transposes. */
static inline __attribute__((always_inline)) void
transpose8x4_64(double *d, int64_t dn, const char *src, int64_t s0)
{
    transpose4x4_64(d, dn, src, s0);
    transpose4x4_64(d + 4 * dn, dn, src + 4 * (int64_t)sizeof(double), s0);
}
#endif

#ifdef __AVX2__
/* pack()'s register blocks: 8 rows by COLS columns of element type T at a time */
#define PACK_BLOCKS(T, COLS, transpose)                                                            \
    for (; rows >= 8 && j + COLS <= n; j += COLS) {                                                \
        T *d = (T *)dst + j;                                                                       \
        const char *col = src + j * s0;                                                            \
        int64_t h = 0;                                                                             \
        for (; h + 8 <= rows; h += 8)                                                              \
            transpose(d + h * n, n, col + h * (int64_t)sizeof(T), s0);                             \
        if (h < rows) /* the last 8 rows again, overlapping rows already copied */                 \
            transpose(d + (rows - 8) * n, n, col + (rows - 8) * (int64_t)sizeof(T), s0);           \
    }
#endif

/* Copies a rows x n tile; see DEFINE_PACK. Column blocks go outermost and are read top to
 * bottom, so each source line is used up while it is in L1. Rows past the last multiple of 8 (a
 * strip that took in the remainder of the rows, see strip_layout) are one more 8-row block that
 * overlaps rows already copied (strips have at least 8 rows, see wants_tiles and strip_layout;
 * fewer go element by element). Measured on the packing alone of a transposed [65, 1000] f32
 * input into 16 KiB tiles: 8.0 -> 6.7 us against 8-row groups across the whole tile; within the
 * whole add the change is below this machine's noise. */
static void
pack(char *dst, const char *src, int64_t rows, int64_t n, int64_t s0, int64_t es)
{
    int64_t j = 0;
    switch (es) {
    case 1:
        pack_uint8_t(dst, src, rows, n, s0, 0);
        return;
    case 2:
        pack_uint16_t(dst, src, rows, n, s0, 0);
        return;
#ifdef __AVX2__
    case 4:
        PACK_BLOCKS(float, 8, transpose8x8_32)
        break;
    case 8:
        PACK_BLOCKS(double, 4, transpose8x4_64)
        break;
#endif
    default:
        break;
    }
    if (es == 4)
        pack_uint32_t(dst, src, rows, n, s0, j);
    else
        pack_uint64_t(dst, src, rows, n, s0, j);
}

/* Rows per strip: strip_lines cache lines of each packed input's columns (per line, 8 rows of
 * 8-byte elements, 16 of 4-byte ones...), so a strip uses every line of the packed tile it
 * reads. */
static int64_t
strip_rows(const iter *it)
{
    int64_t es = 1;
    for (int k = 1, n = 0; k < it->n_ops && n < MAX_PACKED; k++)
        if (transposed_input(it, k)) {
            n++;
            es = it->esize[k] > es ? it->esize[k] : es;
        }
    return LINE * it->strip_lines / es;
}

/* A transposed input whose columns are a multiple of ALIAS_BYTES apart puts the pieces that a
 * strip reads from consecutive columns into one or two of L1's 64 sets and at most a
 * thirty-second of L2's: the line beside each one read, which the hardware fetches with it, is
 * evicted before the next strip reads it, and so is the next strip's software prefetch. So such
 * strips are ALIASED_STRIP_LINES lines tall, reading each column's lines together, and do without
 * the prefetch. Measured on add with a transposed input, bench/strided.c, one thread, when the
 * operands stay in cache (up to cached_bytes()): [512, 512] f32 (2 KiB apart) 0.49-0.50x ->
 * 0.59x of contiguous, f64 (4 KiB) 0.37-0.40x -> 0.59x; [1024, 1000] f32 0.36-0.42x ->
 * 0.47-0.51x; [256, 1000] f64 0.52x -> 0.58x. From memory the prefetch matters more (taller
 * strips without it lost there), and 1-line strips stay. */
enum { ALIAS_BYTES = 2048, ALIASED_STRIP_LINES = 4 };

static bool
aliasing_columns(const iter *it)
{
    for (int k = 1, n = 0; k < it->n_ops && n < MAX_PACKED; k++)
        if (transposed_input(it, k)) {
            n++;
            if (it->strides[0][k] % ALIAS_BYTES == 0)
                return true;
        }
    return false;
}

/* Strips per outer index: n1 rows in strips of `height`, except that a remainder of under 8
 * rows joins the last strip instead of being a strip of its own, which would read a line per
 * column for a few elements each (a [65, 1000] f32 add: 4 strips of 16 and one of 1 row -> 3 of
 * 16 and one of 17). *max_rows (unless NULL): the rows of the tallest strip. */
static int64_t
strip_layout(int64_t n1, int64_t height, int64_t *max_rows)
{
    int64_t full = n1 / height, rest = n1 % height;
    bool joins = rest != 0 && rest < 8 && full != 0;
    if (max_rows != NULL)
        *max_rows = joins ? height + rest : full == 0 ? rest : height;
    return joins ? full : full + (rest != 0);
}

/* Columns per tile of a strip of `rows` rows: as many as fit PACK_BYTES of every packed input
 * (packed[k] >= 0), in equal tiles across the row, each a multiple of 8 elements wide. Per strip,
 * not from the tallest one: a last strip of 17 rows must not halve the tiles of every 16-row strip
 * before it (f32 add with a transposed input from memory, [10001, 1000], one thread: 1000-column
 * tiles instead of 500, 0.36-0.41x -> 0.43x of contiguous). */
static int64_t
tile_width(const iter *it, const int *packed, int64_t rows)
{
    const int64_t n0 = it->sizes[0];
    int64_t width = n0;
    for (int k = 0; k < it->n_ops; k++) {
        if (packed[k] < 0)
            continue;
        /* a multiple of 8, so that rounding the tiles up below stays within the buffer */
        int64_t fits = it->pack_bytes / (rows * it->esize[k]) / 8 * 8;
        if (width > fits)
            width = fits;
    }
    int64_t n_tiles = (n0 + width - 1) / width;
    return ((n0 + n_tiles - 1) / n_tiles + 7) / 8 * 8;
}

/* Runs strips [begin, end) of `height` rows (of dim 1), every outer index included: strip q
 * is rows [(q % strips1) * height, ...) of outer index q / strips1. */
static void
run_tiles(const iter *it, int64_t begin, int64_t end, yt__loop_fn loop, const void *ctx)
{
    static _Thread_local _Alignas(64) char buffers[MAX_PACKED][PACK_BYTES];
    const int64_t n0 = it->sizes[0], n1 = it->sizes[1], height = strip_rows(it);
    int64_t max_rows;
    const int64_t strips1 = strip_layout(n1, height, &max_rows);
    const int64_t *s0 = it->strides[0], *s1 = it->strides[1];
    int packed[MAX_OPERANDS], n_packed = 0;
    int64_t stride[MAX_OPERANDS];
    for (int k = 0; k < it->n_ops; k++) {
        packed[k] = -1;
        stride[k] = s0[k];
        if (n_packed < MAX_PACKED && transposed_input(it, k)) {
            packed[k] = n_packed++;
            stride[k] = it->esize[k];
        }
    }
    /* every strip has `height` rows but the last of each outer index, which has up to max_rows */
    const int64_t width = tile_width(it, packed, height);
    const int64_t last_width = tile_width(it, packed, max_rows);
    char *data[MAX_OPERANDS], *strip[MAX_OPERANDS];
    int64_t step[MAX_OPERANDS]; /* bytes from one row of the tile to the next */
    for (int64_t q = begin; q < end; q++) {
        int64_t outer = q / strips1, i0 = (q % strips1) * height;
        int64_t rows = q % strips1 == strips1 - 1 ? n1 - i0 : height;
        const int64_t w = q % strips1 == strips1 - 1 ? last_width : width;
        for (int k = 0; k < it->n_ops; k++)
            strip[k] = it->base[k] + i0 * s1[k];
        for (int d = 2; d < it->dim; d++) {
            int64_t idx = outer % it->sizes[d];
            outer /= it->sizes[d];
            for (int k = 0; k < it->n_ops; k++)
                strip[k] += idx * it->strides[d][k];
        }
        for (int64_t j0 = 0; j0 < n0; j0 += w) {
            int64_t n = n0 - j0 < w ? n0 - j0 : w;
            for (int k = 0; k < it->n_ops; k++)
                if (packed[k] >= 0)
                    pack(buffers[packed[k]], strip[k] + j0 * s0[k], rows, n, s0[k], it->esize[k]);
            for (int k = 0; k < it->n_ops; k++) {
                data[k] = packed[k] >= 0 ? buffers[packed[k]] : strip[k] + j0 * s0[k];
                step[k] = packed[k] >= 0 ? n * it->esize[k] : s1[k];
            }
            /* From memory (see prefetch_bytes), the tile's share of the next strip's columns is
             * fetched into L2 (prefetcht2: into L1 they would evict the rows the loop streams),
             * in PREFETCH_GROUPS parts, each before a group of the tile's rows. Both ends of each
             * column's piece, which straddles two lines when the rows are not line-aligned. */
            const bool ahead = it->prefetch && q % strips1 != strips1 - 1;
            const int groups = ahead ? PREFETCH_GROUPS : 1;
            const int64_t next_rows = q % strips1 == strips1 - 2 ? n1 - i0 - height : height;
            for (int g = 0; g < groups; g++) {
                int64_t ja = j0 + n * g / groups, jb = j0 + n * (g + 1) / groups;
                for (int k = 0; k < it->n_ops && ahead; k++) {
                    if (packed[k] < 0)
                        continue;
                    const char *next = strip[k] + height * s1[k];
                    const int64_t last = (next_rows - 1) * it->esize[k];
                    for (int64_t j = ja; j < jb; j++) {
                        __builtin_prefetch(next + j * s0[k], 0, 1);
                        __builtin_prefetch(next + j * s0[k] + last, 0, 1);
                    }
                }
                int64_t ra = rows * g / groups, rb = rows * (g + 1) / groups;
                char *group[MAX_OPERANDS];
                for (int k = 0; k < it->n_ops; k++)
                    group[k] = data[k] + ra * step[k];
                loop(group, stride, n, step, rb - ra, ctx);
            }
        }
    }
}

/* A pointwise loop split over the pool: chunk c runs units [total * c / chunks, ...) of either
 * elements (run_range) or strips (run_tiles). */
typedef struct pw_job {
    const iter *it;
    int64_t total, chunks;
    bool tiles;
    yt__loop_fn loop;
    const void *ctx;
} pw_job;

static void
pw_chunk(void *arg, int64_t c)
{
    const pw_job *j = arg;
    int64_t begin = j->total * c / j->chunks, end = j->total * (c + 1) / j->chunks;
    if (j->tiles)
        run_tiles(j->it, begin, end, j->loop, j->ctx);
    else
        run_range(j->it, begin, end, j->loop, j->ctx);
}

/* Nanoseconds per element of a pointwise loop on one thread, roughly (memory-bound f32 ops). */
#define PW_NS_PER_ELEMENT 0.25

/* Runs `total` units (elements, or strips of tiles) of a loop over `numel` elements, on the pool
 * when it pays: a few chunks per thread, so that a late thread leaves its share to the others. */
static void
run_split(const iter *it, int64_t numel, int64_t total, bool tiles, yt__loop_fn loop,
          const void *ctx)
{
    int threads = yt__parallel_threads((double)numel * PW_NS_PER_ELEMENT, yt__max_threads());
    int64_t chunks = 4 * (int64_t)threads < total ? 4 * (int64_t)threads : total;
    if (threads <= 1 || chunks <= 1) {
        if (tiles)
            run_tiles(it, 0, total, loop, ctx);
        else
            run_range(it, 0, total, loop, ctx);
        return;
    }
    pw_job j = {it, total, chunks, tiles, loop, ctx};
    yt__parallel_run(chunks, threads, pw_chunk, &j);
}

static void
run_tiled(const iter *it, int64_t numel, yt__loop_fn loop, const void *ctx)
{
    int64_t strips =
        numel / it->sizes[0] / it->sizes[1] * strip_layout(it->sizes[1], strip_rows(it), NULL);
    run_split(it, numel, strips, true, loop, ctx);
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

yt_status
yt__pointwise(yt_tensor *out, int n_in, yt_tensor *const *in, yt__loop_fn loop, const void *ctx)
{
    if (n_in < 0 || n_in > MAX_OPERANDS - 1)
        return yt__fail_status(YT_ERR_INTERNAL, "pointwise: %d inputs, at most %d supported", n_in,
                               MAX_OPERANDS - 1);
    if (out->numel == 0)
        return YT_OK;

    iter it;
    it.n_ops = n_in + 1;
    it.prefetch = false; /* set below, for the traversal that uses them */
    it.strip_lines = 1;
    it.streams = 0;
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
    if (wants_tiles(&it)) {
        const bool cached = bytes <= cached_bytes();
        it.pack_bytes = cached ? CACHED_PACK_BYTES : PACK_BYTES;
        it.prefetch = bytes > prefetch_bytes();
        if (cached && aliasing_columns(&it)) {
            it.strip_lines = ALIASED_STRIP_LINES;
            it.prefetch = false;
        }
        run_tiled(&it, numel, loop, ctx);
        return YT_OK;
    }
    it.streams = bytes > cached_bytes() ? row_streams(&it) : 0;
    run_split(&it, numel, numel, false, loop, ctx);
    return YT_OK;
}
