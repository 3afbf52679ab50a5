/* argmax and argmin on the CPU (and the index half of max.dim / min.dim): the index of the first
 * best element along one dim, or of the flattened tensor when dim is YT_NONE. A NaN beats every
 * number (the first NaN wins), as in PyTorch.
 *
 * The input is seen as a contiguous [outer, n, inner] block (copied first when it is not, with
 * f16/bf16 widened to f64 and integral ones to i64, so comparisons are exact and there are three
 * loops instead of ten). inner == 1 scans each row; inner > 1 folds rows into a block of
 * COLS running bests so every loop runs along contiguous memory. Split over the kernel pool by
 * output blocks above YT_PARALLEL_GRAIN elements (each block is whole, so the split never changes
 * a result). */
#include "index_reduce.h"
#include "parallel.h"
#include "reduce_plan.h"

#define COLS 256

typedef struct geom {
    int64_t outer, n, inner;
} geom;

/* Whether v replaces best: strictly better, or the first NaN. */
static inline bool
better_f64(double v, double best, bool min)
{
    if (best != best)
        return false;
    return v != v || (min ? v < best : v > best);
}

static inline bool
better_i64(int64_t v, int64_t best, bool min)
{
    return min ? v < best : v > best;
}

typedef struct job {
    geom g;
    bool floating, f32, min;
    const char *x; /* f32, f64 or i64, contiguous */
    int64_t *idx;
    yt_tensor *values; /* NULL, or where the best values go (any dtype) */
    int64_t units, chunks;
} job;

static void
run_block(const job *jb, int64_t u)
{
    const geom *g = &jb->g;
    int64_t blocks = (g->inner + COLS - 1) / COLS;
    int64_t o = u / blocks, j0 = (u % blocks) * COLS;
    int64_t w = g->inner - j0 < COLS ? g->inner - j0 : COLS;
    yt__reduce_acc best[COLS];
    int64_t at[COLS];
    int64_t base = o * g->n * g->inner + j0;
    if (jb->f32) {
        const float *x = (const float *)jb->x + base;
        for (int64_t j = 0; j < w; j++) {
            best[j].f = x[j];
            at[j] = 0;
        }
        for (int64_t i = 1; i < g->n; i++) {
            const float *r = x + i * g->inner;
            for (int64_t j = 0; j < w; j++)
                if (better_f64(r[j], best[j].f, jb->min)) {
                    best[j].f = r[j];
                    at[j] = i;
                }
        }
    } else if (jb->floating) {
        const double *x = (const double *)jb->x + base;
        for (int64_t j = 0; j < w; j++) {
            best[j].f = x[j];
            at[j] = 0;
        }
        for (int64_t i = 1; i < g->n; i++) {
            const double *r = x + i * g->inner;
            for (int64_t j = 0; j < w; j++)
                if (better_f64(r[j], best[j].f, jb->min)) {
                    best[j].f = r[j];
                    at[j] = i;
                }
        }
    } else {
        const int64_t *x = (const int64_t *)jb->x + base;
        for (int64_t j = 0; j < w; j++) {
            best[j].i = x[j];
            at[j] = 0;
        }
        for (int64_t i = 1; i < g->n; i++) {
            const int64_t *r = x + i * g->inner;
            for (int64_t j = 0; j < w; j++)
                if (better_i64(r[j], best[j].i, jb->min)) {
                    best[j].i = r[j];
                    at[j] = i;
                }
        }
    }
    int64_t out = o * g->inner + j0;
    for (int64_t j = 0; j < w; j++)
        jb->idx[out + j] = at[j];
    if (jb->values != NULL)
        yt__reduce_store(jb->values, out, 1, best, w, 1.0);
}

static void
run_chunk(void *ctx, int64_t c)
{
    const job *jb = ctx;
    for (int64_t u = jb->units * c / jb->chunks; u < jb->units * (c + 1) / jb->chunks; u++)
        run_block(jb, u);
}

yt_status
yt__index_reduce(yt_tensor *values, yt_tensor *indices, yt_tensor *self, int64_t dim, bool min,
                 const char *op)
{
    geom g = {1, self->numel, 1};
    if (dim != YT_NONE && self->dim > 0) {
        if (yt__wrap_dim(&dim, self->dim, op, "dim") != YT_OK)
            return yt__last_status();
        g.outer = g.inner = 1;
        for (int64_t i = 0; i < dim; i++)
            g.outer *= self->sizes[i];
        g.n = self->sizes[dim];
        for (int64_t i = dim + 1; i < self->dim; i++)
            g.inner *= self->sizes[i];
    }
    if (g.n == 0) {
        if (dim == YT_NONE || self->dim == 0)
            return yt__fail_status(
                YT_ERR_SHAPE, "%s: self is empty (numel=0); give a dim whose size is not 0", op);
        return yt__fail_status(YT_ERR_SHAPE,
                               "%s: cannot reduce over a zero-size dimension (self.size(%lld)=0)",
                               op, (long long)dim);
    }
    if (indices->numel == 0)
        return YT_OK;
    bool floating = yt_dtype_is_floating(self->dtype);
    yt_dtype wide = self->dtype == YT_DTYPE_F32 ? YT_DTYPE_F32
                    : floating                  ? YT_DTYPE_F64
                                                : YT_DTYPE_I64;
    yt_tensor *x = self->dtype == wide && self->is_contiguous ? self : yt__cast_copy(self, wide);
    if (x == NULL)
        return yt__last_status();
    job jb = {.g = g,
              .floating = floating,
              .f32 = wide == YT_DTYPE_F32,
              .min = min,
              .x = yt__data_ptr(x),
              .idx = (int64_t *)yt__data_ptr(indices),
              .values = values};
    jb.units = g.outer * ((g.inner + COLS - 1) / COLS);
    /* about half a nanosecond per element compared */
    int threads = self->numel >= YT_PARALLEL_GRAIN && jb.units > 1
                      ? yt__parallel_threads(0.5 * (double)self->numel, yt__max_threads())
                      : 1;
    jb.chunks =
        threads > 1 ? (4 * (int64_t)threads < jb.units ? 4 * (int64_t)threads : jb.units) : 1;
    yt__parallel_run(jb.chunks, threads, run_chunk, &jb);
    yt__release_cast(x, self);
    return YT_OK;
}

yt_status
yt__cpu_argmax(yt_tensor *result, yt_tensor *self, int64_t dim, bool keepdim)
{
    (void)keepdim; /* the result's shape has it */
    return yt__index_reduce(NULL, result, self, dim, false, "argmax");
}

yt_status
yt__cpu_argmin(yt_tensor *result, yt_tensor *self, int64_t dim, bool keepdim)
{
    (void)keepdim;
    return yt__index_reduce(NULL, result, self, dim, true, "argmin");
}

yt_status
yt__cpu_max_dim(yt_tensor *values, yt_tensor *indices, yt_tensor *self, int64_t dim, bool keepdim)
{
    (void)keepdim;
    return yt__index_reduce(values, indices, self, dim, false, "max");
}

yt_status
yt__cpu_min_dim(yt_tensor *values, yt_tensor *indices, yt_tensor *self, int64_t dim, bool keepdim)
{
    (void)keepdim;
    return yt__index_reduce(values, indices, self, dim, true, "min");
}
