/* The row-normalisation engine behind layer_norm, group_norm and rms_norm (see norm.h): one pass
 * over each row for the statistics (two sweeps of a row that stays in cache), one for the
 * output; the backward computes dx and the dw/db sums in one pass, with per-block accumulators
 * combined at the end in block order (deterministic for a given thread setting: the blocks do not
 * depend on which threads run them). Blocks of rows run on the pool (parallel.h). */
#include <math.h>
#include <string.h>

#include "norm.h"
#include "parallel.h"

#define NORM_BLOCK 2048
#define NORM_TILE  8 /* rows whose statistics are computed together */

#define NT     float
#define FN(fn) fn##_f32
#include "norm_sums_impl.h"
#include "norm_rows_impl.h"
#undef NT
#undef FN

#define NT     double
#define FN(fn) fn##_f64
#include "norm_sums_impl.h"
#include "norm_rows_impl.h"
#undef NT
#undef FN

yt_tensor *
yt__norm_contig(yt_tensor *t, yt_dtype dt)
{
    if (t == NULL)
        return NULL;
    if (t->is_contiguous && t->dtype == dt)
        return yt_retain(t);
    return yt__cast_copy(t, dt);
}

/* A contiguous compute-dtype tensor to write `t`'s values into: t itself when it is one. */
static yt_tensor *
out_buffer(yt_tensor *t, yt_dtype dt)
{
    if (t == NULL)
        return NULL;
    if (t->is_contiguous && t->dtype == dt)
        return yt_retain(t);
    return yt__empty_like(t, dt);
}

/* Copies a compute buffer back into `t` (when it was not t itself) and releases it. */
static yt_status
finish_output(yt_tensor *t, yt_tensor *buf, yt_status st)
{
    if (buf != NULL && buf != t && st == YT_OK)
        st = yt__copy_into(t, buf);
    if (buf != NULL && buf == t && st == YT_OK)
        yt__bump_version(t);
    yt_release(buf);
    return st;
}

/* Row blocks: from the size and the configured thread count only (the dw/db sums are added per
 * block, so the blocks, not the threads that happen to run them, fix the result). */
static int64_t
block_count(int64_t rows, int64_t work)
{
    int64_t blocks = work >= YT_PARALLEL_GRAIN ? 4 * (int64_t)yt__max_threads() : 1;
    return blocks < rows ? blocks : rows > 0 ? rows : 1;
}

/* Threads for `work` elements (about half a nanosecond each, two passes over a row). */
static int
thread_count(int64_t blocks, int64_t work)
{
    return blocks > 1 ? yt__parallel_threads(0.5 * (double)work, yt__max_threads()) : 1;
}

typedef struct fwd_job {
    void *x, *y, *mean, *rstd, *w, *b;
    const yt__rownorm *p;
    bool f64;
    int64_t blocks;
} fwd_job;

static void
fwd_block(void *arg, int64_t c)
{
    const fwd_job *j = arg;
    int64_t M = j->p->rows, r0 = M * c / j->blocks, r1 = M * (c + 1) / j->blocks;
    if (j->f64)
        forward_rows_f64(j->x, j->y, j->mean, j->rstd, j->w, j->b, j->p, r0, r1);
    else
        forward_rows_f32(j->x, j->y, j->mean, j->rstd, j->w, j->b, j->p, r0, r1);
}

typedef struct bwd_job {
    void *dy, *x, *mean, *rstd, *w, *dx;
    char *scratch; /* per block: dw sums then db sums, P each */
    bool dw, db, f64;
    size_t block_bytes, p_bytes;
    const yt__rownorm *p;
    int64_t blocks;
} bwd_job;

static void
bwd_block(void *arg, int64_t c)
{
    const bwd_job *j = arg;
    int64_t M = j->p->rows, r0 = M * c / j->blocks, r1 = M * (c + 1) / j->blocks;
    char *mine = j->scratch ? j->scratch + (size_t)c * j->block_bytes : NULL;
    char *dwa = j->dw ? mine : NULL;
    char *dba = j->db ? mine + (j->dw ? j->p_bytes : 0) : NULL;
    if (j->f64)
        backward_rows_f64(j->dy, j->x, j->mean, j->rstd, j->w, j->dx, (double *)dwa, (double *)dba,
                          j->p, r0, r1);
    else
        backward_rows_f32(j->dy, j->x, j->mean, j->rstd, j->w, j->dx, (float *)dwa, (float *)dba,
                          j->p, r0, r1);
}

#define DATA(t) ((t) ? (void *)yt__data_ptr(t) : NULL)

yt_status
yt__rownorm_forward(yt_tensor *y, yt_tensor *mean, yt_tensor *rstd, yt_tensor *x, yt_tensor *weight,
                    yt_tensor *bias, const yt__rownorm *p)
{
    yt_dtype cd = yt__norm_compute_dtype(x->dtype);
    yt_tensor *xc = yt__norm_contig(x, cd), *wc = yt__norm_contig(weight, cd);
    yt_tensor *bc = yt__norm_contig(bias, cd);
    yt_tensor *yb = out_buffer(y, cd), *mb = out_buffer(mean, cd), *rb = out_buffer(rstd, cd);
    yt_status st = YT_OK;
    if (!xc || (weight && !wc) || (bias && !bc) || !yb || (mean && !mb) || (rstd && !rb))
        st = yt__last_status();
    if (st == YT_OK && p->rows > 0) {
        int64_t work = p->rows * p->row_len, blocks = block_count(p->rows, work);
        fwd_job j = {DATA(xc), DATA(yb), DATA(mb),           DATA(rb), DATA(wc),
                     DATA(bc), p,        cd == YT_DTYPE_F64, blocks};
        yt__parallel_run(blocks, thread_count(blocks, work), fwd_block, &j);
    }
    st = finish_output(y, yb, st);
    st = finish_output(mean, mb, st);
    st = finish_output(rstd, rb, st);
    yt_release(xc);
    yt_release(wc);
    yt_release(bc);
    return st;
}

yt_status
yt__rownorm_backward(yt_tensor *dx, yt_tensor *dw, yt_tensor *db, yt_tensor *dy, yt_tensor *x,
                     yt_tensor *mean, yt_tensor *rstd, yt_tensor *weight, const yt__rownorm *p)
{
    yt_dtype cd = yt__norm_compute_dtype(dy->dtype);
    yt_tensor *xc = yt__norm_contig(x, cd), *gc = yt__norm_contig(dy, cd);
    yt_tensor *wc = yt__norm_contig(weight, cd);
    /* saved statistics, or none (recomputed) */
    yt_tensor *mc = rstd && p->center ? yt__norm_contig(mean, cd) : NULL;
    yt_tensor *rc = yt__norm_contig(rstd, cd);
    yt_tensor *dxb = out_buffer(dx, cd);
    yt_status st = YT_OK;
    if ((x && !xc) || !gc || (weight && !wc) || (rstd && p->center && !mc) || (rstd && !rc) ||
        (dx && !dxb))
        st = yt__last_status();

    const int64_t M = p->rows, D = p->row_len, S = p->inner;
    const int64_t P = p->groups * (S > 0 ? D / S : 0); /* affine values */
    const int64_t nth = block_count(M, M * D);         /* blocks, each with its own sums */
    const size_t esz = yt_dtype_size(cd);
    const int n_acc = (dw != NULL) + (db != NULL);
    size_t scratch_bytes = (size_t)nth * (size_t)n_acc * (size_t)P * esz;
    char *scratch = NULL;
    if (st == YT_OK && scratch_bytes > 0) {
        scratch = yt__cpu_alloc(scratch_bytes);
        if (scratch == NULL)
            st = yt__fail_status(YT_ERR_NOMEM, "norm backward: cannot allocate %zu bytes",
                                 scratch_bytes);
        else
            memset(scratch, 0, scratch_bytes);
    }
    if (st == YT_OK && M > 0) {
        bwd_job j = {DATA(gc),
                     DATA(xc),
                     DATA(mc),
                     DATA(rc),
                     DATA(wc),
                     DATA(dxb),
                     scratch,
                     dw != NULL,
                     db != NULL,
                     cd == YT_DTYPE_F64,
                     (size_t)n_acc * (size_t)P * esz,
                     (size_t)P * esz,
                     p,
                     nth};
        yt__parallel_run(nth, thread_count(nth, M * D), bwd_block, &j);
    }
    /* dw, db: the per-block sums added in block order, in double */
    for (int which = 0; st == YT_OK && which < 2; which++) {
        yt_tensor *out = which == 0 ? dw : db;
        if (out == NULL)
            continue;
        yt_tensor *buf = yt__empty_like(out, YT_DTYPE_F64);
        if (buf == NULL) {
            st = yt__last_status();
            break;
        }
        double *o = (double *)yt__data_ptr(buf);
        size_t off = which == 1 && dw ? (size_t)P : 0;
        for (int64_t j = 0; j < out->numel; j++) /* all of it: P is 0 when S or D is */
            o[j] = 0;
        for (int64_t t = 0; t < nth; t++) {
            const char *mine = scratch + (size_t)t * (size_t)n_acc * (size_t)P * esz;
            if (cd == YT_DTYPE_F64)
                for (int64_t j = 0; j < P; j++)
                    o[j] += ((const double *)mine)[off + (size_t)j];
            else
                for (int64_t j = 0; j < P; j++)
                    o[j] += ((const float *)mine)[off + (size_t)j];
        }
        st = yt__copy_into(out, buf);
        yt_release(buf);
    }
    if (scratch)
        yt__cpu_free(scratch, scratch_bytes);
    st = finish_output(dx, dxb, st);
    yt_release(xc);
    yt_release(gc);
    yt_release(wc);
    yt_release(mc);
    yt_release(rc);
    return st;
}
