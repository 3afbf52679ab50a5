/* The row-normalisation engine behind layer_norm, group_norm and rms_norm (see norm.h): one pass
 * over each row for the statistics (two sweeps of a row that stays in cache), one for the
 * output; the backward computes dx and the dw/db sums in one pass, with per-thread accumulators
 * combined at the end in thread order (deterministic for a given thread count). */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "norm.h"

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

static int
thread_count(int64_t work)
{
    return work >= YT_PARALLEL_GRAIN ? omp_get_max_threads() : 1;
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
        int64_t M = p->rows;
        int nth = thread_count(M * p->row_len);
        if (nth > M)
            nth = (int)M;
#pragma omp parallel num_threads(nth) if (nth > 1)
        {
            int t = omp_get_thread_num(), n = omp_get_num_threads();
            int64_t r0 = M * t / n, r1 = M * (t + 1) / n;
            if (cd == YT_DTYPE_F64)
                forward_rows_f64(DATA(xc), DATA(yb), DATA(mb), DATA(rb), DATA(wc), DATA(bc), p, r0,
                                 r1);
            else
                forward_rows_f32(DATA(xc), DATA(yb), DATA(mb), DATA(rb), DATA(wc), DATA(bc), p, r0,
                                 r1);
        }
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
    int nth = thread_count(M * D);
    if (nth > M)
        nth = M > 0 ? (int)M : 1;
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
#pragma omp parallel num_threads(nth) if (nth > 1)
        {
            int t = omp_get_thread_num(), n = omp_get_num_threads();
            int64_t r0 = M * t / n, r1 = M * (t + 1) / n;
            char *mine = scratch ? scratch + (size_t)t * (size_t)n_acc * (size_t)P * esz : NULL;
            char *dwa = dw ? mine : NULL;
            char *dba = db ? mine + (dw ? (size_t)P * esz : 0) : NULL;
            if (cd == YT_DTYPE_F64)
                backward_rows_f64(DATA(gc), DATA(xc), DATA(mc), DATA(rc), DATA(wc), DATA(dxb),
                                  (double *)dwa, (double *)dba, p, r0, r1);
            else
                backward_rows_f32(DATA(gc), DATA(xc), DATA(mc), DATA(rc), DATA(wc), DATA(dxb),
                                  (float *)dwa, (float *)dba, p, r0, r1);
        }
    }
    /* dw, db: the per-thread sums added in thread order, in double */
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
        for (int t = 0; t < nth; t++) {
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
