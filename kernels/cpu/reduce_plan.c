/* The reduction plan and threaded driver shared by sum.c and amax.c; see reduce_plan.h. */

#include "parallel.h"
#include "reduce_plan.h"

#define CHUNK YT_REDUCE_CHUNK

/* Reduced rows shorter than this inside a kept dim are reduced across the rows (plan_reduce); for
 * ops that take several rows at a time (row_batch), shorter than SHORT_ROW_BATCHED. Over dim 1 of
 * f32, one thread, across rows -> batched: sum [65536, 4] 94 -> 64 us, [65536, 7] 164 -> 69,
 * [87381, 3] 98 -> 85, but [131072, 2] 106 -> 123; prod [65536, 4] 127 -> 49. */
#define SHORT_ROW         12
#define SHORT_ROW_BATCHED 3

typedef yt__reduce_acc acc;

/* ---------------------------------------------------------------- plan */

typedef struct reduce_dim {
    int64_t size;
    int64_t in_stride;  /* bytes */
    int64_t out_stride; /* elements of the contiguous result; 0 for reduced dims */
    bool reduced;
} reduce_dim;

typedef struct reduce_plan {
    const char *in;              /* input element 0 */
    reduce_dim kept[YT_MAX_DIM]; /* kept dims other than `inner`, outermost first */
    int n_kept;
    int64_t kept_count;         /* product of kept[].size */
    reduce_dim red[YT_MAX_DIM]; /* reduced dims other than `inner`, outermost first */
    int n_red;
    int64_t red_count; /* product of red[].size */
    reduce_dim inner;  /* the smallest-stride dim */
} reduce_plan;

void
yt__reduce_mask(bool *mask, int ndim, const int64_t *dim, int dim_len)
{
    for (int i = 0; i < ndim; i++)
        mask[i] = dim_len == 0;
    for (int i = 0; i < dim_len; i++)
        mask[dim[i]] = true;
}

/* Plans the reduction of non-empty `in` over `dim` into a contiguous result; rows shorter than
 * `short_row` are reduced across rows (0: none). */
static void
plan_reduce(reduce_plan *p, const yt_tensor *in, const int64_t *dim, int dim_len, int64_t short_row)
{
    bool mask[YT_MAX_DIM];
    yt__reduce_mask(mask, in->dim, dim, dim_len);
    int64_t elem = (int64_t)yt_dtype_size(in->dtype);

    /* Result strides are contiguous over the kept dims in input order. */
    reduce_dim d[YT_MAX_DIM];
    int nd = 0;
    int64_t out_stride = 1;
    for (int i = in->dim - 1; i >= 0; i--) {
        reduce_dim cur = {in->sizes[i], in->strides[i] * elem, mask[i] ? 0 : out_stride, mask[i]};
        if (!mask[i])
            out_stride *= in->sizes[i];
        if (cur.size != 1)
            d[nd++] = cur;
    }
    /* Largest input stride first (insertion sort: at most 8 dims). */
    for (int i = 1; i < nd; i++) {
        reduce_dim cur = d[i];
        int j = i;
        for (; j > 0 && d[j - 1].in_stride < cur.in_stride; j--)
            d[j] = d[j - 1];
        d[j] = cur;
    }
    /* Merge an outer dim into the next inner one when together they are a single run. */
    int nm = 0;
    for (int i = 0; i < nd; i++) {
        reduce_dim *prev = nm > 0 ? &d[nm - 1] : NULL;
        if (prev != NULL && prev->reduced == d[i].reduced &&
            prev->in_stride == d[i].in_stride * d[i].size &&
            prev->out_stride == d[i].out_stride * d[i].size) {
            prev->size *= d[i].size;
            prev->in_stride = d[i].in_stride;
            prev->out_stride = d[i].out_stride;
        } else {
            d[nm++] = d[i];
        }
    }

    /* A short reduced row inside a kept dim reduces as an outer one instead: the kept dim takes
     * the inner place, and each element of the rows is added across all of them at once, each
     * output still adding its row's elements in order. Sum over dim 1, f32, one thread, row
     * loop -> across rows: [65536, 4] 379 -> 174 us (torch 317), [32768, 8] 180 -> 140 us,
     * [26214, 10] 158 -> 147 us; from 12 elements on the row loop is as fast or faster. */
    if (nm >= 2 && d[nm - 1].reduced && d[nm - 1].size < short_row && !d[nm - 2].reduced) {
        reduce_dim row = d[nm - 1];
        d[nm - 1] = d[nm - 2];
        d[nm - 2] = row;
    }
    p->in = yt__data_ptr(in);
    p->inner = (reduce_dim){1, 0, 0, true}; /* all sizes 1: a one-element row */
    if (nm > 0)
        p->inner = d[--nm];
    p->n_kept = p->n_red = 0;
    p->kept_count = p->red_count = 1;
    for (int i = 0; i < nm; i++) {
        if (d[i].reduced) {
            p->red[p->n_red++] = d[i];
            p->red_count *= d[i].size;
        } else {
            p->kept[p->n_kept++] = d[i];
            p->kept_count *= d[i].size;
        }
    }
}

/* A position in a nest of dims, with the input byte offset and output element offset it gives. */
typedef struct cursor {
    int64_t idx[YT_MAX_DIM];
    int64_t in;
    int64_t out;
} cursor;

static void
cursor_seek(cursor *c, const reduce_dim *d, int n, int64_t linear)
{
    c->in = c->out = 0;
    for (int j = n - 1; j >= 0; j--) {
        c->idx[j] = linear % d[j].size;
        linear /= d[j].size;
        c->in += c->idx[j] * d[j].in_stride;
        c->out += c->idx[j] * d[j].out_stride;
    }
}

static void
cursor_next(cursor *c, const reduce_dim *d, int n)
{
    for (int j = n - 1; j >= 0; j--) {
        c->in += d[j].in_stride;
        c->out += d[j].out_stride;
        if (++c->idx[j] < d[j].size)
            return;
        c->in -= d[j].size * d[j].in_stride;
        c->out -= d[j].size * d[j].out_stride;
        c->idx[j] = 0;
    }
}

/* ---------------------------------------------------------------- store */

/* Integral outputs read .u (wrapping sums); a running maximum in .i is the same bits. */
void
yt__reduce_store(yt_tensor *out, int64_t first, int64_t stride, const yt__reduce_acc *v, int64_t n,
                 double divisor)
{
    char *base = yt__data_ptr(out);
    /* Contiguous f32 and f64 results, the common case, in loops that vectorise, and without a
     * division per element when there is nothing to divide by (one thread: sum over dim 1 of
     * [65536, 4] f32 174 -> 105 us; prod over dim 1 of [16384, 16] f64 44 -> 24 us). */
#define STORE_CONTIGUOUS(T)                                                                        \
    do {                                                                                           \
        T *y = (T *)base + first;                                                                  \
        if (divisor == 1.0) {                                                                      \
            _Pragma("omp simd") for (int64_t j = 0; j < n; j++) y[j] = (T)v[j].f;                  \
        } else {                                                                                   \
            _Pragma("omp simd") for (int64_t j = 0; j < n; j++) y[j] = (T)(v[j].f / divisor);      \
        }                                                                                          \
    } while (0)
    if (stride == 1 && out->dtype == YT_DTYPE_F32) {
        STORE_CONTIGUOUS(float);
        return;
    }
    if (stride == 1 && out->dtype == YT_DTYPE_F64) {
        STORE_CONTIGUOUS(double);
        return;
    }
#undef STORE_CONTIGUOUS
    switch (out->dtype) {
    case YT_DTYPE_F64:
        for (int64_t j = 0; j < n; j++)
            ((double *)base)[first + j * stride] = v[j].f / divisor;
        break;
    case YT_DTYPE_F32:
        for (int64_t j = 0; j < n; j++)
            ((float *)base)[first + j * stride] = (float)(v[j].f / divisor);
        break;
    case YT_DTYPE_F16:
        for (int64_t j = 0; j < n; j++)
            ((uint16_t *)base)[first + j * stride] = yt__f32_to_f16((float)(v[j].f / divisor));
        break;
    case YT_DTYPE_BF16:
        for (int64_t j = 0; j < n; j++)
            ((uint16_t *)base)[first + j * stride] = yt__f32_to_bf16((float)(v[j].f / divisor));
        break;
    case YT_DTYPE_I64:
        for (int64_t j = 0; j < n; j++)
            ((int64_t *)base)[first + j * stride] = (int64_t)v[j].u;
        break;
    case YT_DTYPE_I32:
        for (int64_t j = 0; j < n; j++)
            ((int32_t *)base)[first + j * stride] = (int32_t)v[j].u;
        break;
    case YT_DTYPE_I16:
        for (int64_t j = 0; j < n; j++)
            ((int16_t *)base)[first + j * stride] = (int16_t)v[j].u;
        break;
    case YT_DTYPE_I8:
        for (int64_t j = 0; j < n; j++)
            ((int8_t *)base)[first + j * stride] = (int8_t)v[j].u;
        break;
    case YT_DTYPE_U8:
        for (int64_t j = 0; j < n; j++)
            ((uint8_t *)base)[first + j * stride] = (uint8_t)v[j].u;
        break;
    default: /* bool: a sum or maximum of 0/1 values is true when any was */
        for (int64_t j = 0; j < n; j++)
            ((bool *)base)[first + j * stride] = v[j].u != 0;
        break;
    }
}

/* ---------------------------------------------------------------- drivers */

/* Inner reduction: folds elements [lo, hi) of the reduced space under `base` (row-major over the
 * reduced dims, then the inner dim) into *a. */
static void
inner_range(const reduce_plan *p, const yt__reduce_loops *loops, acc *a, const char *base,
            int64_t out, int64_t lo, int64_t hi)
{
    int64_t n = p->inner.size, stride = p->inner.in_stride;
    int64_t j = lo % n;
    cursor c;
    cursor_seek(&c, p->red, p->n_red, lo / n);
    while (lo < hi) {
        int64_t len = n - j < hi - lo ? n - j : hi - lo;
        if (loops->row_at != NULL)
            loops->row_at(loops->ctx, out, a, base + c.in + j * stride, len, stride);
        else
            loops->row(a, base + c.in + j * stride, len, stride);
        lo += len;
        j = 0;
        cursor_next(&c, p->red, p->n_red);
    }
}

/* Outer reduction: folds rows [r0, r1) of the reduced dims, columns [j0, j0 + len) of the inner
 * dim, under `base`, into accs[0..len). */
static void
outer_rows(const reduce_plan *p, const yt__reduce_loops *loops, acc *accs, const char *base,
           int64_t out_first, int64_t j0, int64_t len, int64_t r0, int64_t r1)
{
    const char *col = base + j0 * p->inner.in_stride;
    cursor c;
    cursor_seek(&c, p->red, p->n_red, r0);
    if (loops->rows_at != NULL) {
        /* runs of rows along the innermost reduced dim (all of them: one row when none) */
        const reduce_dim *last = p->n_red > 0 ? &p->red[p->n_red - 1] : NULL;
        int64_t first = out_first + j0 * p->inner.out_stride;
        for (int64_t r = r0; r < r1;) {
            int64_t run = last == NULL ? 1 : last->size - c.idx[p->n_red - 1];
            run = run < r1 - r ? run : r1 - r;
            loops->rows_at(loops->ctx, first, p->inner.out_stride, accs, col + c.in, len,
                           p->inner.in_stride, run, last == NULL ? 0 : last->in_stride);
            r += run;
            if (r < r1)
                cursor_seek(&c, p->red, p->n_red, r);
        }
        return;
    }
    if (loops->rows_block != NULL && p->n_red > 0) {
        /* runs of rows along the innermost reduced dim go to the op in one call */
        const reduce_dim *last = &p->red[p->n_red - 1];
        for (int64_t r = r0; r < r1;) {
            int64_t run = last->size - c.idx[p->n_red - 1];
            run = run < r1 - r ? run : r1 - r;
            loops->rows_block(accs, col + c.in, len, p->inner.in_stride, run, last->in_stride);
            r += run;
            if (r < r1)
                cursor_seek(&c, p->red, p->n_red, r);
        }
        return;
    }
    for (int64_t r = r0; r < r1; r++) {
        loops->rows(accs, col + c.in, len, p->inner.in_stride);
        cursor_next(&c, p->red, p->n_red);
    }
}

static int64_t
chunk_count(const reduce_plan *p)
{
    return p->inner.reduced ? 1 : (p->inner.size + CHUNK - 1) / CHUNK;
}

/* Inner reductions of units [lo, hi) when each is one row (no other reduced dim) and the units
 * run along a single kept dim: the rows go to the op back to back, and their accumulators are
 * set up, finished and stored CHUNK at a time, not one by one. Sum over dim 1, f32, one thread:
 * [1024, 64] 19.3 -> 6.7 us, [1024, 1024] 57.6 -> 45.8 us (torch 7.3 and 48.2 us). */
static void
run_rows(const reduce_plan *p, const yt__reduce_loops *loops, yt_tensor *out, int64_t lo,
         int64_t hi)
{
    const reduce_dim *kept = &p->kept[0];
    const int64_t n = p->inner.size, stride = p->inner.in_stride;
    acc accs[CHUNK];
    for (int64_t u0 = lo; u0 < hi; u0 += CHUNK) {
        const int64_t len = hi - u0 < CHUNK ? hi - u0 : CHUNK;
        const char *x = p->in + u0 * kept->in_stride;
        const int64_t first = u0 * kept->out_stride;
        if (loops->row_batch != NULL &&
            loops->row_batch(accs, x, len, kept->in_stride, n, stride)) {
            /* done */
        } else if (loops->row_at != NULL) {
            loops->init(accs, len, loops->floating);
            for (int64_t k = 0; k < len; k++)
                loops->row_at(loops->ctx, first + k * kept->out_stride, &accs[k],
                              x + k * kept->in_stride, n, stride);
        } else {
            loops->init(accs, len, loops->floating);
            for (int64_t k = 0; k < len; k++)
                loops->row(&accs[k], x + k * kept->in_stride, n, stride);
        }
        if (loops->finish != NULL)
            loops->finish(accs, len, loops->ctx);
        yt__reduce_store(out, first, kept->out_stride, accs, len, loops->divisor);
    }
}

/* Computes work units [lo, hi): one output element each for an inner reduction, one chunk of
 * CHUNK output columns each for an outer one. */
static void
run_units(const reduce_plan *p, const yt__reduce_loops *loops, yt_tensor *out, int64_t lo,
          int64_t hi)
{
    if (p->inner.reduced && p->n_red == 0 && p->n_kept == 1) {
        run_rows(p, loops, out, lo, hi);
        return;
    }
    int64_t chunks = chunk_count(p);
    int64_t chunk = lo % chunks;
    cursor kc;
    cursor_seek(&kc, p->kept, p->n_kept, lo / chunks);
    for (int64_t u = lo; u < hi; u++) {
        const char *base = p->in + kc.in;
        if (p->inner.reduced) {
            acc a;
            loops->init(&a, 1, loops->floating);
            inner_range(p, loops, &a, base, kc.out, 0, p->red_count * p->inner.size);
            if (loops->finish != NULL)
                loops->finish(&a, 1, loops->ctx);
            yt__reduce_store(out, kc.out, 1, &a, 1, loops->divisor);
        } else {
            acc accs[CHUNK];
            int64_t j0 = chunk * CHUNK;
            int64_t len = p->inner.size - j0 < CHUNK ? p->inner.size - j0 : CHUNK;
            loops->init(accs, len, loops->floating);
            outer_rows(p, loops, accs, base, kc.out, j0, len, 0, p->red_count);
            if (loops->finish != NULL)
                loops->finish(accs, len, loops->ctx);
            yt__reduce_store(out, kc.out + j0 * p->inner.out_stride, p->inner.out_stride, accs, len,
                             loops->divisor);
        }
        if (++chunk == chunks) {
            chunk = 0;
            cursor_next(&kc, p->kept, p->n_kept);
        }
    }
}

/* One work unit whose reduction is split in `nth` parts (one per configured thread); the partial
 * results are combined in part order, so the result does not depend on which threads ran them. */
typedef struct split_job {
    const reduce_plan *p;
    const yt__reduce_loops *loops;
    const char *base;
    int64_t out_off, j0, len, space, per;
    acc *parts; /* nth x CHUNK */
} split_job;

static void
split_part(void *arg, int64_t t)
{
    const split_job *j = arg;
    int64_t lo = t * j->per < j->space ? t * j->per : j->space;
    int64_t hi = lo + j->per < j->space ? lo + j->per : j->space;
    acc *part = j->parts + t * CHUNK;
    j->loops->init(part, j->len, j->loops->floating);
    if (j->p->inner.reduced)
        inner_range(j->p, j->loops, part, j->base, j->out_off, lo, hi);
    else
        outer_rows(j->p, j->loops, part, j->base, j->out_off, j->j0, j->len, lo, hi);
}

/* Roughly a quarter of a nanosecond per element reduced, on one thread. */
#define NS_PER_ELEMENT 0.25

/* False (nothing written) when there is no memory for the parts. */
static bool
run_unit_split(const reduce_plan *p, const yt__reduce_loops *loops, yt_tensor *out, int64_t unit,
               int nth, int threads)
{
    int64_t chunks = chunk_count(p);
    cursor kc;
    cursor_seek(&kc, p->kept, p->n_kept, unit / chunks);
    int64_t j0 = (unit % chunks) * CHUNK;
    int64_t len = p->inner.reduced ? 1 : p->inner.size - j0 < CHUNK ? p->inner.size - j0 : CHUNK;
    /* the space split between parts: elements (inner) or rows (outer) */
    int64_t space = p->inner.reduced ? p->red_count * p->inner.size : p->red_count;
    size_t bytes = (size_t)nth * CHUNK * sizeof(acc);
    acc *parts = yt__cpu_alloc(bytes);
    if (parts == NULL)
        return false;
    split_job j = {p, loops, p->in + kc.in, kc.out, j0, len, space, (space + nth - 1) / nth, parts};
    yt__parallel_run(nth, threads, split_part, &j);
    acc total[CHUNK];
    loops->init(total, len, loops->floating);
    for (int t = 0; t < nth; t++)
        loops->combine(total, parts + (int64_t)t * CHUNK, len, loops->floating);
    yt__cpu_free(parts, bytes);
    int64_t stride = p->inner.reduced ? 1 : p->inner.out_stride;
    if (loops->finish != NULL)
        loops->finish(total, len, loops->ctx);
    yt__reduce_store(out, kc.out + j0 * stride, stride, total, len, loops->divisor);
    return true;
}

typedef struct units_job {
    const reduce_plan *p;
    const yt__reduce_loops *loops;
    yt_tensor *out;
    int64_t units, chunks;
} units_job;

static void
units_chunk(void *arg, int64_t c)
{
    const units_job *j = arg;
    int64_t lo = j->units * c / j->chunks, hi = j->units * (c + 1) / j->chunks;
    if (lo < hi)
        run_units(j->p, j->loops, j->out, lo, hi);
}

void
yt__reduce_run(yt_tensor *out, const yt_tensor *in, const int64_t *dim, int dim_len,
               const yt__reduce_loops *loops)
{
    reduce_plan plan;
    const reduce_plan *p = &plan;
    const int64_t short_row = !loops->short_rows_across  ? 0
                              : loops->row_batch != NULL ? SHORT_ROW_BATCHED
                                                         : SHORT_ROW;
    plan_reduce(&plan, in, dim, dim_len, short_row);

    /* Whole units may go to any thread (nth, threads: the load decides who runs them). A unit
     * split into parts changes the bits, so that cut follows the size and the configured
     * threads only (yt__parallel_cut). */
    const double ns = (double)in->numel * NS_PER_ELEMENT;
    int nth = in->numel >= YT_PARALLEL_GRAIN ? yt__max_threads() : 1;
    int threads = nth > 1 ? yt__parallel_threads(ns, nth) : 1;
    int64_t units = p->kept_count * chunk_count(p);
    int64_t splittable = p->inner.reduced ? p->red_count * p->inner.size : p->red_count;
    const int cut = yt__parallel_cut(ns, nth);
    if (cut > 1 && units < cut && splittable >= 2 * cut) {
        /* few outputs, much to reduce for each (e.g. a full sum): split each reduction */
        bool ok = true;
        for (int64_t u = 0; ok && u < units; u++)
            ok = run_unit_split(p, loops, out, u, cut, threads);
        if (ok)
            return;
        /* no memory for the parts: every unit on this thread instead */
    }
    units_job j = {p, loops, out, units, yt__parallel_chunks(units, nth)};
    if (threads <= 1 || j.chunks <= 1) {
        if (units > 0)
            run_units(p, loops, out, 0, units);
        return;
    }
    yt__parallel_run(j.chunks, threads, units_chunk, &j);
}
