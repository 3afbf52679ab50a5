/* sum, sum.dim, mean and mean.dim on the CPU.
 *
 * A reduction is planned once per call: dimensions of size 1 are dropped, the others are ordered
 * by input stride and merged where memory allows, and the innermost (smallest stride) one
 * decides the loop shape:
 *   - innermost reduced ("inner" reduction, e.g. sum over the last dim): each output element is a
 *     tight loop over contiguous rows;
 *   - innermost kept ("outer" reduction, e.g. sum over dim 0): whole rows are added into a row of
 *     accumulators, so no inner loop is strided.
 * Floating inputs accumulate in double, integral and bool inputs in wrapping 64-bit integers.
 * When `dtype` is given the input is converted to it first, as PyTorch does. */
#include <omp.h>
#include <string.h>

#include "kernels.h"

/* Accumulator: .f for floating inputs, .i (wrapping) for integral and bool ones. */
typedef union acc {
    double f;
    uint64_t i;
} acc;

/* Adds x[0], x[stride], ..., x[(n - 1) * stride] (stride in bytes) to *sum. */
typedef void (*row_fn)(acc *sum, const char *x, int64_t n, int64_t stride);
/* sums[j] += x[j * stride] for j < n. */
typedef void (*rows_fn)(acc *sums, const char *x, int64_t n, int64_t stride);

/* Accumulators per outer-reduction work unit (32 KiB, on the stack: fits L1 while rows stream
 * past). Rows up to this long are read start to end; longer ones in runs of CHUNK elements. */
#define CHUNK 4096

/* Contiguous rows are summed a BLOCK at a time into PARTIALS independent sums: no serial
 * dependency, so the loop vectorises without reassociation (no -ffast-math), and adding four
 * elements before touching a partial halves the partials' load/store traffic. Loops of unknown
 * length carry `omp simd`: at -O2 GCC vectorises only loops whose trip count the vector width
 * divides. */
#define PARTIALS 16
#define BLOCK    (4 * PARTIALS)

/* ---------------------------------------------------------------- typed loops */

static double
sum_partials(double *part)
{
    for (int width = PARTIALS / 2; width > 0; width /= 2)
        for (int k = 0; k < width; k++)
            part[k] += part[k + width];
    return part[0];
}

static void
row_f64(acc *sum, const char *x, int64_t n, int64_t stride)
{
    double s = 0.0;
    int64_t i = 0;
    if (stride == sizeof(double) && n >= BLOCK) {
        const double *p = (const double *)x;
        double part[PARTIALS] = {0};
        for (; i + BLOCK <= n; i += BLOCK)
            for (int k = 0; k < PARTIALS; k++)
                part[k] += ((double)p[i + k] + (double)p[i + PARTIALS + k]) +
                           ((double)p[i + 2 * PARTIALS + k] + (double)p[i + 3 * PARTIALS + k]);
        s = sum_partials(part);
    }
    for (; i < n; i++)
        s += *(const double *)(x + i * stride);
    sum->f += s;
}

static void
row_f32(acc *sum, const char *x, int64_t n, int64_t stride)
{
    double s = 0.0;
    int64_t i = 0;
    if (stride == sizeof(float) && n >= BLOCK) {
        const float *p = (const float *)x;
        double part[PARTIALS] = {0};
        for (; i + BLOCK <= n; i += BLOCK)
            for (int k = 0; k < PARTIALS; k++)
                part[k] += ((double)p[i + k] + (double)p[i + PARTIALS + k]) +
                           ((double)p[i + 2 * PARTIALS + k] + (double)p[i + 3 * PARTIALS + k]);
        s = sum_partials(part);
    }
    for (; i < n; i++)
        s += *(const float *)(x + i * stride);
    sum->f += s;
}

static void
row_f16(acc *sum, const char *x, int64_t n, int64_t stride)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++)
        s += yt__f16_to_f32(*(const uint16_t *)(x + i * stride));
    sum->f += s;
}

static void
row_bf16(acc *sum, const char *x, int64_t n, int64_t stride)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++)
        s += yt__bf16_to_f32(*(const uint16_t *)(x + i * stride));
    sum->f += s;
}

/* bool is stored as one byte holding 0 or 1, so it sums like u8. */
static void
row_u8(acc *sum, const char *x, int64_t n, int64_t stride)
{
    uint64_t s = 0;
    for (int64_t i = 0; i < n; i++)
        s += *(const uint8_t *)(x + i * stride);
    sum->i += s;
}

static void
row_i8(acc *sum, const char *x, int64_t n, int64_t stride)
{
    uint64_t s = 0;
    for (int64_t i = 0; i < n; i++)
        s += (uint64_t) * (const int8_t *)(x + i * stride);
    sum->i += s;
}

static void
row_i16(acc *sum, const char *x, int64_t n, int64_t stride)
{
    uint64_t s = 0;
    for (int64_t i = 0; i < n; i++)
        s += (uint64_t) * (const int16_t *)(x + i * stride);
    sum->i += s;
}

static void
row_i32(acc *sum, const char *x, int64_t n, int64_t stride)
{
    uint64_t s = 0;
    for (int64_t i = 0; i < n; i++)
        s += (uint64_t) * (const int32_t *)(x + i * stride);
    sum->i += s;
}

static void
row_i64(acc *sum, const char *x, int64_t n, int64_t stride)
{
    uint64_t s = 0;
    for (int64_t i = 0; i < n; i++)
        s += (uint64_t) * (const int64_t *)(x + i * stride);
    sum->i += s;
}

static void
rows_f64(acc *sums, const char *x, int64_t n, int64_t stride)
{
    if (stride == sizeof(double)) {
        const double *p = (const double *)x;
#pragma omp simd
        for (int64_t j = 0; j < n; j++)
            sums[j].f += p[j];
        return;
    }
    for (int64_t j = 0; j < n; j++)
        sums[j].f += *(const double *)(x + j * stride);
}

static void
rows_f32(acc *sums, const char *x, int64_t n, int64_t stride)
{
    if (stride == sizeof(float)) {
        const float *p = (const float *)x;
#pragma omp simd
        for (int64_t j = 0; j < n; j++)
            sums[j].f += p[j];
        return;
    }
    for (int64_t j = 0; j < n; j++)
        sums[j].f += *(const float *)(x + j * stride);
}

static void
rows_f16(acc *sums, const char *x, int64_t n, int64_t stride)
{
    for (int64_t j = 0; j < n; j++)
        sums[j].f += yt__f16_to_f32(*(const uint16_t *)(x + j * stride));
}

static void
rows_bf16(acc *sums, const char *x, int64_t n, int64_t stride)
{
    for (int64_t j = 0; j < n; j++)
        sums[j].f += yt__bf16_to_f32(*(const uint16_t *)(x + j * stride));
}

static void
rows_u8(acc *sums, const char *x, int64_t n, int64_t stride)
{
    for (int64_t j = 0; j < n; j++)
        sums[j].i += *(const uint8_t *)(x + j * stride);
}

static void
rows_i8(acc *sums, const char *x, int64_t n, int64_t stride)
{
    for (int64_t j = 0; j < n; j++)
        sums[j].i += (uint64_t) * (const int8_t *)(x + j * stride);
}

static void
rows_i16(acc *sums, const char *x, int64_t n, int64_t stride)
{
    for (int64_t j = 0; j < n; j++)
        sums[j].i += (uint64_t) * (const int16_t *)(x + j * stride);
}

static void
rows_i32(acc *sums, const char *x, int64_t n, int64_t stride)
{
    for (int64_t j = 0; j < n; j++)
        sums[j].i += (uint64_t) * (const int32_t *)(x + j * stride);
}

static void
rows_i64(acc *sums, const char *x, int64_t n, int64_t stride)
{
    for (int64_t j = 0; j < n; j++)
        sums[j].i += (uint64_t) * (const int64_t *)(x + j * stride);
}

typedef struct sum_loops {
    row_fn row;
    rows_fn rows;
    bool floating; /* which accumulator member is live */
} sum_loops;

static sum_loops
loops_for(yt_dtype dtype)
{
    switch (dtype) {
    case YT_DTYPE_F64:
        return (sum_loops){row_f64, rows_f64, true};
    case YT_DTYPE_F32:
        return (sum_loops){row_f32, rows_f32, true};
    case YT_DTYPE_F16:
        return (sum_loops){row_f16, rows_f16, true};
    case YT_DTYPE_BF16:
        return (sum_loops){row_bf16, rows_bf16, true};
    case YT_DTYPE_I64:
        return (sum_loops){row_i64, rows_i64, false};
    case YT_DTYPE_I32:
        return (sum_loops){row_i32, rows_i32, false};
    case YT_DTYPE_I16:
        return (sum_loops){row_i16, rows_i16, false};
    case YT_DTYPE_I8:
        return (sum_loops){row_i8, rows_i8, false};
    default: /* u8, bool */
        return (sum_loops){row_u8, rows_u8, false};
    }
}

/* Writes n accumulators, divided by `divisor` (1 for sum, the count for mean), to elements
 * first, first + stride, ... of contiguous `out`. Floating outputs read .f, others .i. */
static void
store_run(yt_tensor *out, int64_t first, int64_t stride, const acc *v, int64_t n, double divisor)
{
    char *base = yt__data_ptr(out);
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
            ((int64_t *)base)[first + j * stride] = (int64_t)v[j].i;
        break;
    case YT_DTYPE_I32:
        for (int64_t j = 0; j < n; j++)
            ((int32_t *)base)[first + j * stride] = (int32_t)v[j].i;
        break;
    case YT_DTYPE_I16:
        for (int64_t j = 0; j < n; j++)
            ((int16_t *)base)[first + j * stride] = (int16_t)v[j].i;
        break;
    case YT_DTYPE_I8:
        for (int64_t j = 0; j < n; j++)
            ((int8_t *)base)[first + j * stride] = (int8_t)v[j].i;
        break;
    case YT_DTYPE_U8:
        for (int64_t j = 0; j < n; j++)
            ((uint8_t *)base)[first + j * stride] = (uint8_t)v[j].i;
        break;
    default: /* bool: the sum of 0/1 values is true when any was */
        for (int64_t j = 0; j < n; j++)
            ((bool *)base)[first + j * stride] = v[j].i != 0;
        break;
    }
}

static void
combine(acc *total, const acc *part, int64_t n, bool floating)
{
    for (int64_t j = 0; j < n; j++) {
        if (floating)
            total[j].f += part[j].f;
        else
            total[j].i += part[j].i;
    }
}

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

static void
reduced_mask(bool *mask, int ndim, const int64_t *dim, int dim_len)
{
    for (int i = 0; i < ndim; i++)
        mask[i] = dim_len == 0;
    for (int i = 0; i < dim_len; i++)
        mask[dim[i]] = true;
}

/* Plans the reduction of non-empty `in` over `dim` into a contiguous result. */
static void
plan_reduce(reduce_plan *p, const yt_tensor *in, const int64_t *dim, int dim_len)
{
    bool mask[YT_MAX_DIM];
    reduced_mask(mask, in->dim, dim, dim_len);
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

/* ---------------------------------------------------------------- drivers */

/* Inner reduction: adds elements [lo, hi) of the reduced space under `base` (row-major over the
 * reduced dims, then the inner dim) into *sum. */
static void
inner_range(const reduce_plan *p, row_fn row, acc *sum, const char *base, int64_t lo, int64_t hi)
{
    int64_t n = p->inner.size, stride = p->inner.in_stride;
    int64_t j = lo % n;
    cursor c;
    cursor_seek(&c, p->red, p->n_red, lo / n);
    while (lo < hi) {
        int64_t len = n - j < hi - lo ? n - j : hi - lo;
        row(sum, base + c.in + j * stride, len, stride);
        lo += len;
        j = 0;
        cursor_next(&c, p->red, p->n_red);
    }
}

/* Outer reduction: adds rows [r0, r1) of the reduced dims, columns [j0, j0 + len) of the inner
 * dim, under `base`, into sums[0..len). */
static void
outer_rows(const reduce_plan *p, rows_fn rows, acc *sums, const char *base, int64_t j0, int64_t len,
           int64_t r0, int64_t r1)
{
    const char *col = base + j0 * p->inner.in_stride;
    cursor c;
    cursor_seek(&c, p->red, p->n_red, r0);
    for (int64_t r = r0; r < r1; r++) {
        rows(sums, col + c.in, len, p->inner.in_stride);
        cursor_next(&c, p->red, p->n_red);
    }
}

static int64_t
chunk_count(const reduce_plan *p)
{
    return p->inner.reduced ? 1 : (p->inner.size + CHUNK - 1) / CHUNK;
}

/* Computes work units [lo, hi): one output element each for an inner reduction, one chunk of
 * CHUNK output columns each for an outer one. */
static void
run_units(const reduce_plan *p, const sum_loops *loops, yt_tensor *out, double divisor, int64_t lo,
          int64_t hi)
{
    int64_t chunks = chunk_count(p);
    int64_t chunk = lo % chunks;
    cursor kc;
    cursor_seek(&kc, p->kept, p->n_kept, lo / chunks);
    for (int64_t u = lo; u < hi; u++) {
        const char *base = p->in + kc.in;
        if (p->inner.reduced) {
            acc sum = {0};
            inner_range(p, loops->row, &sum, base, 0, p->red_count * p->inner.size);
            store_run(out, kc.out, 1, &sum, 1, divisor);
        } else {
            acc sums[CHUNK];
            int64_t j0 = chunk * CHUNK;
            int64_t len = p->inner.size - j0 < CHUNK ? p->inner.size - j0 : CHUNK;
            memset(sums, 0, (size_t)len * sizeof *sums);
            outer_rows(p, loops->rows, sums, base, j0, len, 0, p->red_count);
            store_run(out, kc.out + j0 * p->inner.out_stride, p->inner.out_stride, sums, len,
                      divisor);
        }
        if (++chunk == chunks) {
            chunk = 0;
            cursor_next(&kc, p->kept, p->n_kept);
        }
    }
}

/* One work unit whose reduction is split across `nth` threads; partial results are combined in
 * thread order, so the result does not depend on scheduling. */
static void
run_unit_split(const reduce_plan *p, const sum_loops *loops, yt_tensor *out, double divisor,
               int64_t unit, int nth)
{
    int64_t chunks = chunk_count(p);
    cursor kc;
    cursor_seek(&kc, p->kept, p->n_kept, unit / chunks);
    const char *base = p->in + kc.in;
    int64_t j0 = (unit % chunks) * CHUNK;
    int64_t len = p->inner.reduced ? 1 : p->inner.size - j0 < CHUNK ? p->inner.size - j0 : CHUNK;
    /* the space split between threads: elements (inner) or rows (outer) */
    int64_t space = p->inner.reduced ? p->red_count * p->inner.size : p->red_count;
    int64_t per = (space + nth - 1) / nth;
    acc total[CHUNK];
    memset(total, 0, (size_t)len * sizeof *total);

#pragma omp parallel for ordered schedule(static, 1) num_threads(nth)
    for (int t = 0; t < nth; t++) {
        int64_t lo = t * per < space ? t * per : space;
        int64_t hi = lo + per < space ? lo + per : space;
        acc part[CHUNK];
        memset(part, 0, (size_t)len * sizeof *part);
        if (p->inner.reduced)
            inner_range(p, loops->row, part, base, lo, hi);
        else
            outer_rows(p, loops->rows, part, base, j0, len, lo, hi);
#pragma omp ordered
        combine(total, part, len, loops->floating);
    }
    int64_t stride = p->inner.reduced ? 1 : p->inner.out_stride;
    store_run(out, kc.out + j0 * stride, stride, total, len, divisor);
}

static void
run_reduce(const reduce_plan *p, const sum_loops *loops, yt_tensor *out, double divisor,
           int64_t work)
{
    int nth = work >= YT_PARALLEL_GRAIN ? omp_get_max_threads() : 1;
    int64_t units = p->kept_count * chunk_count(p);
    int64_t splittable = p->inner.reduced ? p->red_count * p->inner.size : p->red_count;
    if (nth > 1 && units < nth && splittable >= 2 * nth) {
        /* few outputs, much to reduce for each (e.g. a full sum): split each reduction */
        for (int64_t u = 0; u < units; u++)
            run_unit_split(p, loops, out, divisor, u, nth);
        return;
    }
#pragma omp parallel num_threads(nth) if (nth > 1)
    {
        int t = omp_get_thread_num(), n_threads = omp_get_num_threads();
        int64_t per = (units + n_threads - 1) / n_threads;
        int64_t lo = t * per < units ? t * per : units;
        int64_t hi = lo + per < units ? lo + per : units;
        if (lo < hi)
            run_units(p, loops, out, divisor, lo, hi);
    }
}

/* ---------------------------------------------------------------- kernels */

static yt_status
reduce_sum(const char *op, yt_tensor *result, yt_tensor *self, const int64_t *dim, int dim_len,
           yt_dtype dtype, bool mean)
{
    bool floating = yt_dtype_is_floating(result->dtype);
    if (mean && !floating)
        return yt__fail_status(
            YT_ERR_DTYPE, "%s: dtype %s is not a floating dtype (expected f16, bf16, f32, f64)", op,
            yt_dtype_name(result->dtype));
    /* A given dtype converts the input first (sum(x, dtype=i32) truncates each element); the
     * accumulator kind must match the result's kind. */
    bool cast = dtype != YT_DTYPE_NONE ? self->dtype != result->dtype
                                       : yt_dtype_is_floating(self->dtype) != floating;
    yt_tensor *src = cast ? yt__cast_copy(self, result->dtype) : self;
    if (src == NULL)
        return yt__last_status();

    double divisor = 1.0;
    if (mean) {
        bool mask[YT_MAX_DIM];
        reduced_mask(mask, src->dim, dim, dim_len);
        int64_t count = 1;
        for (int i = 0; i < src->dim; i++)
            if (mask[i])
                count *= src->sizes[i];
        divisor = (double)count; /* 0 gives 0 / 0 = NaN, as in PyTorch */
    }
    sum_loops loops = loops_for(src->dtype);
    if (result->numel > 0 && src->numel == 0) {
        /* reduced over a zero-size dim: every output is the empty sum */
        acc zeros[CHUNK];
        memset(zeros, 0, sizeof zeros);
        for (int64_t i = 0; i < result->numel; i += CHUNK)
            store_run(result, i, 1, zeros, result->numel - i < CHUNK ? result->numel - i : CHUNK,
                      divisor);
    } else if (result->numel > 0) {
        reduce_plan plan;
        plan_reduce(&plan, src, dim, dim_len);
        run_reduce(&plan, &loops, result, divisor, src->numel);
    }
    yt__release_cast(src, self);
    return YT_OK;
}

yt_status
yt__cpu_sum(yt_tensor *result, yt_tensor *self, yt_dtype dtype)
{
    return reduce_sum("sum", result, self, NULL, 0, dtype, false);
}

yt_status
yt__cpu_sum_dim(yt_tensor *result, yt_tensor *self, const int64_t *dim, int dim_len, bool keepdim,
                yt_dtype dtype)
{
    (void)keepdim; /* the result's shape has it; its memory order does not change */
    return reduce_sum("sum", result, self, dim, dim_len, dtype, false);
}

yt_status
yt__cpu_mean(yt_tensor *result, yt_tensor *self, yt_dtype dtype)
{
    return reduce_sum("mean", result, self, NULL, 0, dtype, true);
}

yt_status
yt__cpu_mean_dim(yt_tensor *result, yt_tensor *self, const int64_t *dim, int dim_len, bool keepdim,
                 yt_dtype dtype)
{
    (void)keepdim;
    return reduce_sum("mean", result, self, dim, dim_len, dtype, true);
}
