/* cumsum on the CPU: running sums along one dim, accumulated in double for floating results and
 * in wrapping 64-bit integers for integral ones (PyTorch accumulates f32 in double on the CPU
 * too). The input is converted to the result's dtype first (f32/f64/i64 are used directly;
 * other dtypes go through an f64 or i64 copy) and seen as contiguous [outer, n, inner]; inner > 1
 * runs down blocks of COLS columns so every loop reads contiguous memory. Large inputs split
 * the (outer, column block) units over the kernel pool: each unit is a whole run, so the split
 * never changes a value. */
#include "kernels.h"
#include "parallel.h"

#define COLS 256

typedef struct job {
    int64_t outer, n, inner;
    yt_dtype d; /* f32, f64 or i64 */
    const char *x;
    char *out;
    int64_t units, chunks;
} job;

static void
run_block(const job *jb, int64_t u)
{
    int64_t blocks = (jb->inner + COLS - 1) / COLS;
    int64_t o = u / blocks, j0 = (u % blocks) * COLS;
    int64_t w = jb->inner - j0 < COLS ? jb->inner - j0 : COLS;
    int64_t base = o * jb->n * jb->inner + j0;
    if (jb->d == YT_DTYPE_I64) {
        uint64_t acc[COLS] = {0};
        const int64_t *x = (const int64_t *)jb->x + base;
        int64_t *y = (int64_t *)jb->out + base;
        for (int64_t i = 0; i < jb->n; i++)
            for (int64_t j = 0; j < w; j++) {
                acc[j] += (uint64_t)x[i * jb->inner + j];
                y[i * jb->inner + j] = (int64_t)acc[j];
            }
    } else if (jb->d == YT_DTYPE_F64) {
        double acc[COLS] = {0};
        const double *x = (const double *)jb->x + base;
        double *y = (double *)jb->out + base;
        for (int64_t i = 0; i < jb->n; i++)
            for (int64_t j = 0; j < w; j++) {
                acc[j] += x[i * jb->inner + j];
                y[i * jb->inner + j] = acc[j];
            }
    } else {
        double acc[COLS] = {0};
        const float *x = (const float *)jb->x + base;
        float *y = (float *)jb->out + base;
        for (int64_t i = 0; i < jb->n; i++)
            for (int64_t j = 0; j < w; j++) {
                acc[j] += x[i * jb->inner + j];
                y[i * jb->inner + j] = (float)acc[j];
            }
    }
}

static void
run_chunk(void *ctx, int64_t c)
{
    const job *jb = ctx;
    for (int64_t u = jb->units * c / jb->chunks; u < jb->units * (c + 1) / jb->chunks; u++)
        run_block(jb, u);
}

yt_status
yt__cpu_cumsum(yt_tensor *result, yt_tensor *self, int64_t dim, yt_dtype dtype)
{
    (void)dtype; /* the result's dtype has it */
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
        job jb = {1, 1, 1, wd, yt__data_ptr(src), yt__data_ptr(dst), 1, 1};
        if (self->dim > 0) {
            for (int64_t i = 0; i < dim; i++)
                jb.outer *= self->sizes[i];
            jb.n = self->sizes[dim];
            for (int64_t i = dim + 1; i < self->dim; i++)
                jb.inner *= self->sizes[i];
        }
        jb.units = jb.outer * ((jb.inner + COLS - 1) / COLS);
        /* about a nanosecond per element (a dependent add, a load and a store) */
        int threads = result->numel >= YT_PARALLEL_GRAIN && jb.units > 1
                          ? yt__parallel_threads((double)result->numel, yt__max_threads())
                          : 1;
        jb.chunks =
            threads > 1 ? (4 * (int64_t)threads < jb.units ? 4 * (int64_t)threads : jb.units) : 1;
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
