/* amax on the CPU: the largest element over `dim` (all dims when empty), NaN winning as in
 * PyTorch. A zero-size reduced dim is an error: the max of nothing is undefined.
 *
 * The loops follow sum.c: the same plan (size-1 dims dropped, dims ordered by input stride and
 * merged), then either a tight loop per output element when the innermost dim is reduced, or
 * whole rows folded into a row of running maxima when it is kept. Every comparison is exact:
 * floating values are held in double (f32 rows are scanned in float), integral and bool ones in
 * int64, and the result has the input's dtype. */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "kernels.h"

/* Running maximum: .f for floating inputs, .i for integral and bool ones. */
typedef union acc {
    double f;
    int64_t i;
} acc;

/* Folds x[0], x[stride], ..., x[(n - 1) * stride] (stride in bytes) into *best. */
typedef void (*row_fn)(acc *best, const char *x, int64_t n, int64_t stride);
/* best[j] = max(best[j], x[j * stride]) for j < n. */
typedef void (*rows_fn)(acc *best, const char *x, int64_t n, int64_t stride);

/* Running maxima per outer-reduction work unit (32 KiB, on the stack; see sum.c). */
#define CHUNK 4096

/* Contiguous rows are folded a BLOCK at a time into PARTIALS independent maxima, so the loop has
 * no serial dependency and vectorises. Loops of unknown length carry `omp simd`: at -O2 GCC
 * vectorises only loops whose trip count the vector width divides. */
#define PARTIALS 16
#define BLOCK    (4 * PARTIALS)

/* ---------------------------------------------------------------- typed loops */

/* max that lets NaN through: once a NaN is seen it stays. */
static inline double
max_nan(double best, double v)
{
    return v > best || v != v ? v : best;
}

static inline float
max_nan_f32(float best, float v)
{
    return v > best || v != v ? v : best;
}

static void
row_f64(acc *best, const char *x, int64_t n, int64_t stride)
{
    double b = best->f;
    int64_t i = 0;
    if (stride == sizeof(double) && n >= BLOCK) {
        const double *p = (const double *)x;
        double part[PARTIALS];
        for (int k = 0; k < PARTIALS; k++)
            part[k] = -INFINITY;
        for (; i + BLOCK <= n; i += BLOCK)
            for (int k = 0; k < PARTIALS; k++)
                part[k] = max_nan(
                    part[k], max_nan(max_nan(p[i + k], p[i + PARTIALS + k]),
                                     max_nan(p[i + 2 * PARTIALS + k], p[i + 3 * PARTIALS + k])));
        for (int k = 0; k < PARTIALS; k++)
            b = max_nan(b, part[k]);
    }
    for (; i < n; i++)
        b = max_nan(b, *(const double *)(x + i * stride));
    best->f = b;
}

static void
row_f32(acc *best, const char *x, int64_t n, int64_t stride)
{
    double b = best->f;
    int64_t i = 0;
    if (stride == sizeof(float) && n >= BLOCK) {
        const float *p = (const float *)x;
        float part[PARTIALS]; /* compared in float: the loop vectorises twice as wide */
        for (int k = 0; k < PARTIALS; k++)
            part[k] = -INFINITY;
        for (; i + BLOCK <= n; i += BLOCK)
            for (int k = 0; k < PARTIALS; k++)
                part[k] = max_nan_f32(
                    part[k],
                    max_nan_f32(max_nan_f32(p[i + k], p[i + PARTIALS + k]),
                                max_nan_f32(p[i + 2 * PARTIALS + k], p[i + 3 * PARTIALS + k])));
        for (int k = 0; k < PARTIALS; k++)
            b = max_nan(b, part[k]);
    }
    for (; i < n; i++)
        b = max_nan(b, *(const float *)(x + i * stride));
    best->f = b;
}

static void
row_f16(acc *best, const char *x, int64_t n, int64_t stride)
{
    double b = best->f;
    for (int64_t i = 0; i < n; i++)
        b = max_nan(b, yt__f16_to_f32(*(const uint16_t *)(x + i * stride)));
    best->f = b;
}

static void
row_bf16(acc *best, const char *x, int64_t n, int64_t stride)
{
    double b = best->f;
    for (int64_t i = 0; i < n; i++)
        b = max_nan(b, yt__bf16_to_f32(*(const uint16_t *)(x + i * stride)));
    best->f = b;
}

/* bool is one byte holding 0 or 1: its max (logical or) is the u8 max. */
static void
row_u8(acc *best, const char *x, int64_t n, int64_t stride)
{
    int64_t b = best->i;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = *(const uint8_t *)(x + i * stride);
        b = v > b ? v : b;
    }
    best->i = b;
}

static void
row_i8(acc *best, const char *x, int64_t n, int64_t stride)
{
    int64_t b = best->i;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = *(const int8_t *)(x + i * stride);
        b = v > b ? v : b;
    }
    best->i = b;
}

static void
row_i16(acc *best, const char *x, int64_t n, int64_t stride)
{
    int64_t b = best->i;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = *(const int16_t *)(x + i * stride);
        b = v > b ? v : b;
    }
    best->i = b;
}

static void
row_i32(acc *best, const char *x, int64_t n, int64_t stride)
{
    int64_t b = best->i;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = *(const int32_t *)(x + i * stride);
        b = v > b ? v : b;
    }
    best->i = b;
}

static void
row_i64(acc *best, const char *x, int64_t n, int64_t stride)
{
    int64_t b = best->i;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = *(const int64_t *)(x + i * stride);
        b = v > b ? v : b;
    }
    best->i = b;
}

static void
rows_f64(acc *best, const char *x, int64_t n, int64_t stride)
{
    if (stride == sizeof(double)) {
        const double *p = (const double *)x;
#pragma omp simd
        for (int64_t j = 0; j < n; j++)
            best[j].f = max_nan(best[j].f, p[j]);
        return;
    }
    for (int64_t j = 0; j < n; j++)
        best[j].f = max_nan(best[j].f, *(const double *)(x + j * stride));
}

static void
rows_f32(acc *best, const char *x, int64_t n, int64_t stride)
{
    if (stride == sizeof(float)) {
        const float *p = (const float *)x;
#pragma omp simd
        for (int64_t j = 0; j < n; j++)
            best[j].f = max_nan(best[j].f, p[j]);
        return;
    }
    for (int64_t j = 0; j < n; j++)
        best[j].f = max_nan(best[j].f, *(const float *)(x + j * stride));
}

static void
rows_f16(acc *best, const char *x, int64_t n, int64_t stride)
{
    for (int64_t j = 0; j < n; j++)
        best[j].f = max_nan(best[j].f, yt__f16_to_f32(*(const uint16_t *)(x + j * stride)));
}

static void
rows_bf16(acc *best, const char *x, int64_t n, int64_t stride)
{
    for (int64_t j = 0; j < n; j++)
        best[j].f = max_nan(best[j].f, yt__bf16_to_f32(*(const uint16_t *)(x + j * stride)));
}

static void
rows_u8(acc *best, const char *x, int64_t n, int64_t stride)
{
    for (int64_t j = 0; j < n; j++) {
        int64_t v = *(const uint8_t *)(x + j * stride);
        best[j].i = v > best[j].i ? v : best[j].i;
    }
}

static void
rows_i8(acc *best, const char *x, int64_t n, int64_t stride)
{
    for (int64_t j = 0; j < n; j++) {
        int64_t v = *(const int8_t *)(x + j * stride);
        best[j].i = v > best[j].i ? v : best[j].i;
    }
}

static void
rows_i16(acc *best, const char *x, int64_t n, int64_t stride)
{
    for (int64_t j = 0; j < n; j++) {
        int64_t v = *(const int16_t *)(x + j * stride);
        best[j].i = v > best[j].i ? v : best[j].i;
    }
}

static void
rows_i32(acc *best, const char *x, int64_t n, int64_t stride)
{
    for (int64_t j = 0; j < n; j++) {
        int64_t v = *(const int32_t *)(x + j * stride);
        best[j].i = v > best[j].i ? v : best[j].i;
    }
}

static void
rows_i64(acc *best, const char *x, int64_t n, int64_t stride)
{
    for (int64_t j = 0; j < n; j++) {
        int64_t v = *(const int64_t *)(x + j * stride);
        best[j].i = v > best[j].i ? v : best[j].i;
    }
}

typedef struct max_loops {
    row_fn row;
    rows_fn rows;
    bool floating; /* which member of acc is live */
} max_loops;

static max_loops
loops_for(yt_dtype dtype)
{
    switch (dtype) {
    case YT_DTYPE_F64:
        return (max_loops){row_f64, rows_f64, true};
    case YT_DTYPE_F32:
        return (max_loops){row_f32, rows_f32, true};
    case YT_DTYPE_F16:
        return (max_loops){row_f16, rows_f16, true};
    case YT_DTYPE_BF16:
        return (max_loops){row_bf16, rows_bf16, true};
    case YT_DTYPE_I64:
        return (max_loops){row_i64, rows_i64, false};
    case YT_DTYPE_I32:
        return (max_loops){row_i32, rows_i32, false};
    case YT_DTYPE_I16:
        return (max_loops){row_i16, rows_i16, false};
    case YT_DTYPE_I8:
        return (max_loops){row_i8, rows_i8, false};
    default: /* u8, bool */
        return (max_loops){row_u8, rows_u8, false};
    }
}

/* Starting values: below every element. */
static void
init_run(acc *v, int64_t n, bool floating)
{
    for (int64_t j = 0; j < n; j++) {
        if (floating)
            v[j].f = -INFINITY;
        else
            v[j].i = INT64_MIN;
    }
}

static void
combine(acc *total, const acc *part, int64_t n, bool floating)
{
    for (int64_t j = 0; j < n; j++) {
        if (floating)
            total[j].f = max_nan(total[j].f, part[j].f);
        else
            total[j].i = part[j].i > total[j].i ? part[j].i : total[j].i;
    }
}

/* Writes n maxima to elements first, first + stride, ... of contiguous `out` (of the input's
 * dtype, so every conversion is exact). */
static void
store_run(yt_tensor *out, int64_t first, int64_t stride, const acc *v, int64_t n)
{
    char *base = yt__data_ptr(out);
    switch (out->dtype) {
    case YT_DTYPE_F64:
        for (int64_t j = 0; j < n; j++)
            ((double *)base)[first + j * stride] = v[j].f;
        break;
    case YT_DTYPE_F32:
        for (int64_t j = 0; j < n; j++)
            ((float *)base)[first + j * stride] = (float)v[j].f;
        break;
    case YT_DTYPE_F16:
        for (int64_t j = 0; j < n; j++)
            ((uint16_t *)base)[first + j * stride] = yt__f32_to_f16((float)v[j].f);
        break;
    case YT_DTYPE_BF16:
        for (int64_t j = 0; j < n; j++)
            ((uint16_t *)base)[first + j * stride] = yt__f32_to_bf16((float)v[j].f);
        break;
    case YT_DTYPE_I64:
        for (int64_t j = 0; j < n; j++)
            ((int64_t *)base)[first + j * stride] = v[j].i;
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
    default:
        for (int64_t j = 0; j < n; j++)
            ((bool *)base)[first + j * stride] = v[j].i != 0;
        break;
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

/* Inner reduction: folds elements [lo, hi) of the reduced space under `base` (row-major over the
 * reduced dims, then the inner dim) into *best. */
static void
inner_range(const reduce_plan *p, row_fn row, acc *best, const char *base, int64_t lo, int64_t hi)
{
    int64_t n = p->inner.size, stride = p->inner.in_stride;
    int64_t j = lo % n;
    cursor c;
    cursor_seek(&c, p->red, p->n_red, lo / n);
    while (lo < hi) {
        int64_t len = n - j < hi - lo ? n - j : hi - lo;
        row(best, base + c.in + j * stride, len, stride);
        lo += len;
        j = 0;
        cursor_next(&c, p->red, p->n_red);
    }
}

/* Outer reduction: folds rows [r0, r1) of the reduced dims, columns [j0, j0 + len) of the inner
 * dim, under `base`, into best[0..len). */
static void
outer_rows(const reduce_plan *p, rows_fn rows, acc *best, const char *base, int64_t j0, int64_t len,
           int64_t r0, int64_t r1)
{
    const char *col = base + j0 * p->inner.in_stride;
    cursor c;
    cursor_seek(&c, p->red, p->n_red, r0);
    for (int64_t r = r0; r < r1; r++) {
        rows(best, col + c.in, len, p->inner.in_stride);
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
run_units(const reduce_plan *p, const max_loops *loops, yt_tensor *out, int64_t lo, int64_t hi)
{
    int64_t chunks = chunk_count(p);
    int64_t chunk = lo % chunks;
    cursor kc;
    cursor_seek(&kc, p->kept, p->n_kept, lo / chunks);
    for (int64_t u = lo; u < hi; u++) {
        const char *base = p->in + kc.in;
        if (p->inner.reduced) {
            acc best;
            init_run(&best, 1, loops->floating);
            inner_range(p, loops->row, &best, base, 0, p->red_count * p->inner.size);
            store_run(out, kc.out, 1, &best, 1);
        } else {
            acc best[CHUNK];
            int64_t j0 = chunk * CHUNK;
            int64_t len = p->inner.size - j0 < CHUNK ? p->inner.size - j0 : CHUNK;
            init_run(best, len, loops->floating);
            outer_rows(p, loops->rows, best, base, j0, len, 0, p->red_count);
            store_run(out, kc.out + j0 * p->inner.out_stride, p->inner.out_stride, best, len);
        }
        if (++chunk == chunks) {
            chunk = 0;
            cursor_next(&kc, p->kept, p->n_kept);
        }
    }
}

/* One work unit whose reduction is split across `nth` threads, partial maxima combined after. */
static void
run_unit_split(const reduce_plan *p, const max_loops *loops, yt_tensor *out, int64_t unit, int nth)
{
    int64_t chunks = chunk_count(p);
    cursor kc;
    cursor_seek(&kc, p->kept, p->n_kept, unit / chunks);
    const char *base = p->in + kc.in;
    int64_t j0 = (unit % chunks) * CHUNK;
    int64_t len = p->inner.reduced ? 1 : p->inner.size - j0 < CHUNK ? p->inner.size - j0 : CHUNK;
    int64_t space = p->inner.reduced ? p->red_count * p->inner.size : p->red_count;
    int64_t per = (space + nth - 1) / nth;
    acc total[CHUNK];
    init_run(total, len, loops->floating);

#pragma omp parallel for ordered schedule(static, 1) num_threads(nth)
    for (int t = 0; t < nth; t++) {
        int64_t lo = t * per < space ? t * per : space;
        int64_t hi = lo + per < space ? lo + per : space;
        acc part[CHUNK];
        init_run(part, len, loops->floating);
        if (p->inner.reduced)
            inner_range(p, loops->row, part, base, lo, hi);
        else
            outer_rows(p, loops->rows, part, base, j0, len, lo, hi);
#pragma omp ordered
        combine(total, part, len, loops->floating);
    }
    int64_t stride = p->inner.reduced ? 1 : p->inner.out_stride;
    store_run(out, kc.out + j0 * stride, stride, total, len);
}

static void
run_reduce(const reduce_plan *p, const max_loops *loops, yt_tensor *out, int64_t work)
{
    int nth = work >= YT_PARALLEL_GRAIN ? omp_get_max_threads() : 1;
    int64_t units = p->kept_count * chunk_count(p);
    int64_t splittable = p->inner.reduced ? p->red_count * p->inner.size : p->red_count;
    if (nth > 1 && units < nth && splittable >= 2 * nth) {
        for (int64_t u = 0; u < units; u++)
            run_unit_split(p, loops, out, u, nth);
        return;
    }
#pragma omp parallel num_threads(nth) if (nth > 1)
    {
        int t = omp_get_thread_num(), n_threads = omp_get_num_threads();
        int64_t per = (units + n_threads - 1) / n_threads;
        int64_t lo = t * per < units ? t * per : units;
        int64_t hi = lo + per < units ? lo + per : units;
        if (lo < hi)
            run_units(p, loops, out, lo, hi);
    }
}

/* ---------------------------------------------------------------- kernel */

yt_status
yt__cpu_amax(yt_tensor *result, yt_tensor *self, const int64_t *dim, int dim_len, bool keepdim)
{
    (void)keepdim; /* the result's shape has it; its memory order does not change */
    bool mask[YT_MAX_DIM];
    reduced_mask(mask, self->dim, dim, dim_len);
    for (int i = 0; i < self->dim; i++)
        if (mask[i] && self->sizes[i] == 0)
            return yt__fail_status(
                YT_ERR_SHAPE, "amax: cannot reduce over a zero-size dimension (self.size(%d)=0)",
                i);
    if (result->numel == 0)
        return YT_OK;
    max_loops loops = loops_for(self->dtype);
    reduce_plan plan;
    plan_reduce(&plan, self, dim, dim_len);
    run_reduce(&plan, &loops, result, self->numel);
    return YT_OK;
}
