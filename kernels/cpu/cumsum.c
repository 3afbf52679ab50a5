/* cumsum and its gradient on the CPU: running sums along one dim, forward (cumsum) or from the
 * end back (cumsum_backward: the gradient of x[i] is the sum of the gradients of y[i..n), as in
 * PyTorch, which flips, runs cumsum and flips back; `sum - cumsum + grad` instead loses the small
 * elements next to a large one: [1e8, 1, 1] f32 -> [1e8, 1, 1] for [1e8, 2, 1]).
 *
 * Sums accumulate in double for floating results and in wrapping 64-bit integers for integral
 * ones (PyTorch accumulates f32 in double on the CPU too). The input is converted to the result's
 * dtype first (f32/f64/i64 are used directly; other dtypes go through an f64 or i64 copy) and
 * seen as contiguous [outer, n, inner]. Every element is its predecessor's sum plus itself, in
 * order, so values never depend on the layout or the split.
 *
 * From RUN_INNER columns on, blocks of COLS columns run down together, the sums in an array, so
 * every loop reads contiguous memory and vectorises across columns. Fewer columns (the scan along
 * the last dim above all) run as separate runs, RUNS side by side with their sums in registers,
 * so that their dependent adds overlap instead of each waiting on the one before through memory
 * (one at a time, one thread: [1024, 1000] f32 along dim 1 3.4 ms -> 0.45 ms, torch 0.96 ms;
 * [512, 1000, 2] along dim 1 1.69 -> 0.45 ms, torch 0.96 ms). The runs are walked with a cursor,
 * not found by a division each (a 64-bit divide per run was most of the time on runs of a few
 * elements; [65536, 4] along dim 1, one thread, bench/ab.sh: f64 131 -> 74 us, f32 168 -> 128
 * us; torch 92 and 145 us). Large inputs split the units (column blocks or runs) over the kernel
 * pool: each unit is a whole run, so the split never changes a value. */
#include "kernels.h"
#include "parallel.h"

#define COLS      256
#define RUNS      4
#define RUN_INNER 8

typedef struct job {
    int64_t outer, n, inner;
    yt_dtype d; /* f32, f64 or i64 */
    const char *x;
    char *out;
    int64_t first; /* offset of a run's first element from its start: (n - 1) * inner reversed */
    int64_t step;  /* from one element of a run to the next: inner, or -inner reversed */
    int64_t units, chunks;
} job;

/* Walks the runs (the (outer, column) pairs) in order without a division per run. */
typedef struct run_cursor {
    int64_t start; /* first element of the current run */
    int64_t column, inner, outer_step;
} run_cursor;

static run_cursor
cursor_at(const job *jb, int64_t q)
{
    run_cursor c = {q / jb->inner * jb->n * jb->inner + q % jb->inner + jb->first, q % jb->inner,
                    jb->inner, (jb->n - 1) * jb->inner};
    return c;
}

/* First element of the current run; moves on to the next. */
static inline int64_t
next_run(run_cursor *c)
{
    const int64_t start = c->start;
    c->start++;
    if (++c->column == c->inner) {
        c->column = 0;
        c->start += c->outer_step;
    }
    return start;
}

/* scan_runs_SFX(jb, q0, q1): runs [q0, q1), RUNS at a time, the sums in ACC. */
#define DEFINE_SCAN_RUNS(SFX, T, ACC)                                                              \
    static void scan_runs_##SFX(const job *jb, int64_t q0, int64_t q1)                             \
    {                                                                                              \
        const T *x = (const T *)jb->x;                                                             \
        T *y = (T *)jb->out;                                                                       \
        const int64_t n = jb->n, step = jb->step;                                                  \
        run_cursor runs = cursor_at(jb, q0);                                                       \
        int64_t q = q0;                                                                            \
        for (; q + RUNS <= q1; q += RUNS) {                                                        \
            const int64_t s0 = next_run(&runs), s1 = next_run(&runs);                              \
            const int64_t s2 = next_run(&runs), s3 = next_run(&runs);                              \
            ACC a0 = 0, a1 = 0, a2 = 0, a3 = 0;                                                    \
            for (int64_t k = 0, i = 0; k < n; k++, i += step) {                                    \
                a0 += (ACC)x[s0 + i];                                                              \
                a1 += (ACC)x[s1 + i];                                                              \
                a2 += (ACC)x[s2 + i];                                                              \
                a3 += (ACC)x[s3 + i];                                                              \
                y[s0 + i] = (T)a0;                                                                 \
                y[s1 + i] = (T)a1;                                                                 \
                y[s2 + i] = (T)a2;                                                                 \
                y[s3 + i] = (T)a3;                                                                 \
            }                                                                                      \
        }                                                                                          \
        for (; q < q1; q++) {                                                                      \
            const int64_t s0 = next_run(&runs);                                                    \
            ACC a = 0;                                                                             \
            for (int64_t k = 0, i = 0; k < n; k++, i += step) {                                    \
                a += (ACC)x[s0 + i];                                                               \
                y[s0 + i] = (T)a;                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

/* scan_block_SFX(jb, u): column block u, its sums in an array of ACC. */
#define DEFINE_SCAN_BLOCK(SFX, T, ACC)                                                             \
    static void scan_block_##SFX(const job *jb, int64_t u)                                         \
    {                                                                                              \
        const int64_t blocks = (jb->inner + COLS - 1) / COLS;                                      \
        const int64_t o = u / blocks, j0 = (u % blocks) * COLS;                                    \
        const int64_t w = jb->inner - j0 < COLS ? jb->inner - j0 : COLS;                           \
        const int64_t base = o * jb->n * jb->inner + j0 + jb->first;                               \
        const T *x = (const T *)jb->x + base;                                                      \
        T *y = (T *)jb->out + base;                                                                \
        ACC acc[COLS] = {0};                                                                       \
        for (int64_t k = 0, i = 0; k < jb->n; k++, i += jb->step)                                  \
            for (int64_t j = 0; j < w; j++) {                                                      \
                acc[j] += (ACC)x[i + j];                                                           \
                y[i + j] = (T)acc[j];                                                              \
            }                                                                                      \
    }

DEFINE_SCAN_RUNS(f32, float, double)
DEFINE_SCAN_RUNS(f64, double, double)
DEFINE_SCAN_RUNS(i64, int64_t, uint64_t)
DEFINE_SCAN_BLOCK(f32, float, double)
DEFINE_SCAN_BLOCK(f64, double, double)
DEFINE_SCAN_BLOCK(i64, int64_t, uint64_t)

static void
run_chunk(void *ctx, int64_t c)
{
    const job *jb = ctx;
    int64_t begin = jb->units * c / jb->chunks, end = jb->units * (c + 1) / jb->chunks;
    if (jb->inner < RUN_INNER) {
        if (jb->d == YT_DTYPE_I64)
            scan_runs_i64(jb, begin, end);
        else if (jb->d == YT_DTYPE_F64)
            scan_runs_f64(jb, begin, end);
        else
            scan_runs_f32(jb, begin, end);
        return;
    }
    for (int64_t u = begin; u < end; u++) {
        if (jb->d == YT_DTYPE_I64)
            scan_block_i64(jb, u);
        else if (jb->d == YT_DTYPE_F64)
            scan_block_f64(jb, u);
        else
            scan_block_f32(jb, u);
    }
}

/* Running sums of `self` along `dim` into `result` (of self's shape), from the end back when
 * `reversed`. */
static yt_status
scan(yt_tensor *result, yt_tensor *self, int64_t dim, bool reversed)
{
    if (result->numel == 0)
        return YT_OK;
    yt_dtype rd = result->dtype;
    yt_dtype wd = rd == YT_DTYPE_F32 || rd == YT_DTYPE_F64 ? rd
                  : yt_dtype_is_floating(rd)               ? YT_DTYPE_F64
                                                           : YT_DTYPE_I64;
    /* integral results first convert to their own dtype (cumsum(x, dtype=i8) wraps in i8) */
    yt_tensor *conv = self->dtype == rd || wd == rd ? self : yt__cast_copy(self, rd);
    yt_tensor *src = conv == NULL                               ? NULL
                     : conv->dtype == wd && conv->is_contiguous ? conv
                                                                : yt__cast_copy(conv, wd);
    yt_tensor *dst = rd == wd ? result : yt__empty_like(result, wd);
    yt_status st = YT_OK;
    if (src == NULL || dst == NULL) {
        st = yt__last_status();
    } else {
        job jb = {1, 1, 1, wd, yt__data_ptr(src), yt__data_ptr(dst), 0, 1, 1, 1};
        if (self->dim > 0) {
            for (int64_t i = 0; i < dim; i++)
                jb.outer *= self->sizes[i];
            jb.n = self->sizes[dim];
            for (int64_t i = dim + 1; i < self->dim; i++)
                jb.inner *= self->sizes[i];
        }
        jb.first = reversed ? (jb.n - 1) * jb.inner : 0;
        jb.step = reversed ? -jb.inner : jb.inner;
        jb.units =
            jb.inner < RUN_INNER ? jb.outer * jb.inner : jb.outer * ((jb.inner + COLS - 1) / COLS);
        /* about a nanosecond per element (a dependent add, a load and a store) */
        int threads = result->numel >= YT_PARALLEL_GRAIN && jb.units > 1
                          ? yt__parallel_threads((double)result->numel, yt__max_threads())
                          : 1;
        jb.chunks = yt__parallel_chunks(jb.units, threads);
        yt__parallel_run(jb.chunks, threads, run_chunk, &jb);
        if (dst != result)
            st = yt__copy_into(result, dst);
    }
    if (dst != NULL && dst != result)
        yt_release(dst);
    if (src != NULL && src != conv)
        yt_release(src);
    if (conv != NULL && conv != self)
        yt_release(conv);
    return st;
}

yt_status
yt__cpu_cumsum(yt_tensor *result, yt_tensor *self, int64_t dim, yt_dtype dtype)
{
    (void)dtype; /* the result's dtype has it */
    return scan(result, self, dim, false);
}

yt_status
yt__cpu_cumsum_backward(yt_tensor *result, yt_tensor *grad_output, int64_t dim)
{
    return scan(result, grad_output, dim, true);
}
