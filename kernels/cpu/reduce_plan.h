/* The reduction plan and threaded driver shared by the CPU reductions (sum.c, amax.c).
 *
 * yt__reduce_run() plans a reduction once per call: dimensions of size 1 are dropped, the others
 * are ordered by input stride and merged where memory allows, and the innermost (smallest
 * stride) one decides the loop shape:
 *   - innermost reduced ("inner" reduction, e.g. over the last dim): each output element is a
 *     tight loop over contiguous rows (`row`);
 *   - innermost kept ("outer" reduction, e.g. over dim 0): whole rows are folded into a row of
 *     accumulators (`rows`), so no inner loop is strided.
 * A reduced innermost dim of under a dozen elements trades places with the kept dim outside it,
 * so that such short rows are reduced across rows, as an outer reduction.
 * It then splits the work into chunks on the kernel pool: across output elements (or chunks of
 * output columns) when there are enough of them, otherwise, for reductions large enough to wake
 * the pool's workers, across each reduction, with the partial results combined in chunk order so
 * the result does not depend on scheduling.
 *
 * The op keeps its typed loops; the driver calls them through function pointers once per row
 * or per block of accumulators, never per element, so the loops themselves stay tight. */
#ifndef YT_KERNELS_CPU_REDUCE_PLAN_H
#define YT_KERNELS_CPU_REDUCE_PLAN_H

#include "kernels.h"

/* Accumulators per outer-reduction work unit (32 KiB, on the stack: fits L1 while rows stream
 * past). Rows up to this long are read start to end; longer ones in runs of CHUNK elements. */
#define YT_REDUCE_CHUNK 4096

/* One accumulator: .f for floating inputs; .i (signed) or .u (wrapping) for integral and bool
 * ones, whichever the op needs. */
typedef union yt__reduce_acc {
    double f;
    int64_t i;
    uint64_t u;
} yt__reduce_acc;

/* Folds x[0], x[stride], ..., x[(n - 1) * stride] (stride in bytes) into *acc. */
typedef void (*yt__reduce_row_fn)(yt__reduce_acc *acc, const char *x, int64_t n, int64_t stride);
/* Folds x[j * stride] into accs[j] for j < n. */
typedef void (*yt__reduce_rows_fn)(yt__reduce_acc *accs, const char *x, int64_t n, int64_t stride);
/* Optional: folds m rows (row r at x + r * row_stride) of n elements each (element j at
 * + j * stride) into accs[0..n): lets an op keep partial results in registers across rows. */
typedef void (*yt__reduce_rows_block_fn)(yt__reduce_acc *accs, const char *x, int64_t n,
                                         int64_t stride, int64_t m, int64_t row_stride);
/* Optional: sets accs[k], for k < count, to the fold of row k alone, where row k has n elements
 * from x + k * row_stride (element i at + i * stride), and returns true. For ops that can reduce
 * several short rows in one go (8 rows in the lanes of a vector); returns false, writing nothing,
 * for rows it does not take, which the driver then folds one by one with `row`. Called only when
 * each result element is one whole row. */
typedef bool (*yt__reduce_row_batch_fn)(yt__reduce_acc *accs, const char *x, int64_t count,
                                        int64_t row_stride, int64_t n, int64_t stride);
/* Sets v[0..n) to the op's identity. */
typedef void (*yt__reduce_init_fn)(yt__reduce_acc *v, int64_t n, bool floating);
/* Folds part[j] into total[j] for j < n. */
typedef void (*yt__reduce_combine_fn)(yt__reduce_acc *total, const yt__reduce_acc *part, int64_t n,
                                      bool floating);

/* Optional forms of `row` and `rows_block` that are also told which result elements they feed
 * (element indices in the contiguous result: `out`, or out_first + j * out_stride for accs[j]),
 * for folds that depend on a per-output value the op keeps in `ctx` (var's shift). */
typedef void (*yt__reduce_row_at_fn)(const void *ctx, int64_t out, yt__reduce_acc *acc,
                                     const char *x, int64_t n, int64_t stride);
typedef void (*yt__reduce_rows_at_fn)(const void *ctx, int64_t out_first, int64_t out_stride,
                                      yt__reduce_acc *accs, const char *x, int64_t n,
                                      int64_t stride, int64_t m, int64_t row_stride);
/* Optional: maps finished accumulators v[0..n) in place before they are stored (std's and norm
 * 2's square root); gets the loops' ctx. */
typedef void (*yt__reduce_finish_fn)(yt__reduce_acc *v, int64_t n, const void *ctx);

/* What a reduction op hands the driver: its loops for the input's dtype and plain data. */
typedef struct yt__reduce_loops {
    yt__reduce_row_fn row;
    yt__reduce_rows_fn rows;
    yt__reduce_rows_block_fn rows_block; /* NULL: `rows` once per row */
    yt__reduce_init_fn init;
    yt__reduce_combine_fn combine;
    bool floating;  /* which accumulator member is live; passed to init and combine */
    double divisor; /* passed to yt__reduce_store: the count for mean, 1 otherwise */
    yt__reduce_row_batch_fn row_batch; /* optional; not with row_at */
    /* optional: when row_at / rows_at are set they replace row / rows and rows_block */
    yt__reduce_row_at_fn row_at;
    yt__reduce_rows_at_fn rows_at;
    const void *ctx;
    yt__reduce_finish_fn finish;
    /* Set when `rows` (or rows_at) costs about what `row` does per element: rows of under a
     * dozen elements are then reduced across rows (plan_reduce). Left false for folds whose
     * step per element across rows is far dearer (logsumexp merges with exp and log1p). */
    bool short_rows_across;
} yt__reduce_loops;

/* Sets mask[i] for each of the `ndim` dims that `dim` reduces (every dim when dim_len == 0).
 * `dim` holds wrapped, distinct indices. */
YT_INTERNAL void yt__reduce_mask(bool *mask, int ndim, const int64_t *dim, int dim_len);

/* Writes v[0..n), divided by `divisor` (floating outputs only), to elements first,
 * first + stride, ... of contiguous `out`, converting to its dtype (bool: nonzero is true). */
YT_INTERNAL void yt__reduce_store(yt_tensor *out, int64_t first, int64_t stride,
                                  const yt__reduce_acc *v, int64_t n, double divisor);

/* Reduces non-empty `in` over `dim` (all dims when dim_len == 0) into contiguous, non-empty
 * `out` with `loops`, on up to yt__max_threads() threads. Cannot fail. */
YT_INTERNAL void yt__reduce_run(yt_tensor *out, const yt_tensor *in, const int64_t *dim,
                                int dim_len, const yt__reduce_loops *loops);

#endif
