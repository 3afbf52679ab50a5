/* Normalization kernels (kernels/cpu/norm_rows.c, batch_norm.c) against naive double-precision
 * references: values, gradients, running statistics with PyTorch's update rule, f32 accuracy
 * far from zero, f16 inputs, strided inputs, zero-size inputs; then the public ops (layer_norm,
 * group_norm, rms_norm, batch_norm, scaled_dot_product_attention): the checks YAML cannot state,
 * running statistics through autograd, double backward on shapes beyond the samples. The
 * generated per-op tests cover the declared checks, gradcheck and the PyTorch differential
 * cases. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "test_util.h"

#include "norm.h"

static yt_tensor *
from(const double *v, const int64_t *sizes, int dim, yt_dtype dt)
{
    yt_tensor *d = yt_tensor_from_data(v, sizes, dim, YT_DTYPE_F64);
    if (dt == YT_DTYPE_F64)
        return d;
    yt_tensor *t = yt_to(d, dt);
    yt_release(d);
    return t;
}

static double
at(yt_tensor *t, int64_t i)
{
    yt_tensor *c = yt__norm_contig(t, YT_DTYPE_F64);
    double v = ((const double *)yt__data_ptr(c))[i];
    yt_release(c);
    return v;
}

static void
fill(double *v, int64_t n, unsigned seed, double offset)
{
    srand(seed);
    for (int64_t i = 0; i < n; i++)
        v[i] = offset + (double)rand() / RAND_MAX * 2.0 - 1.0;
}

/* Naive layer norm of rows x[M][D] with weight w[D] (NULL: none), and its backward. */
static void
ref_layer_norm(const double *x, const double *w, const double *dy, int64_t M, int64_t D, double eps,
               double *y, double *dx, double *dw)
{
    if (dw)
        memset(dw, 0, (size_t)D * sizeof *dw);
    for (int64_t r = 0; r < M; r++) {
        const double *xr = x + r * D;
        double m = 0, v = 0;
        for (int64_t i = 0; i < D; i++)
            m += xr[i] / D;
        for (int64_t i = 0; i < D; i++)
            v += (xr[i] - m) * (xr[i] - m) / D;
        double rs = 1 / sqrt(v + eps), a = 0, b = 0;
        for (int64_t i = 0; i < D; i++) {
            double xh = (xr[i] - m) * rs, g = dy[r * D + i] * (w ? w[i] : 1);
            y[r * D + i] = xh * (w ? w[i] : 1);
            a += g / D;
            b += g * xh / D;
            if (dw)
                dw[i] += dy[r * D + i] * xh;
        }
        for (int64_t i = 0; i < D; i++) {
            double xh = (xr[i] - m) * rs, g = dy[r * D + i] * (w ? w[i] : 1);
            dx[r * D + i] = rs * (g - a - xh * b);
        }
    }
}

Test(norm, layer_norm_matches_reference_f64_and_f32)
{
    enum { M = 37, D = 70 };
    static double x[M * D], dy[M * D], w[D], y[M * D], dx[M * D], dw[D];
    fill(x, M * D, 1, 0.5);
    fill(dy, M * D, 2, 0);
    fill(w, D, 3, 1);
    ref_layer_norm(x, w, dy, M, D, 1e-5, y, dx, dw);
    yt_dtype dts[] = {YT_DTYPE_F64, YT_DTYPE_F32};
    for (int k = 0; k < 2; k++) {
        double tol = k == 0 ? 1e-12 : 2e-5;
        int64_t xs[] = {M, D}, ws[] = {D}, ms[] = {M};
        yt_tensor *tx = from(x, xs, 2, dts[k]), *tdy = from(dy, xs, 2, dts[k]);
        yt_tensor *tw = from(w, ws, 1, dts[k]);
        yt_tensor *ty = yt_zeros_like(tx), *tdx = yt_zeros_like(tx), *tdw = yt_zeros_like(tw),
                  *tdb = yt_zeros_like(tw);
        yt_tensor *tm = yt_zeros_ex(ms, 1, dts[k], YT_DEVICE_CPU), *tr = yt_zeros_like(tm);
        yt__rownorm p = {M, D, 1, 1, 1e-5, true};
        cr_assert_eq(yt__rownorm_forward(ty, tm, tr, tx, tw, NULL, &p), YT_OK, "%s", yt_errmsg());
        cr_assert_eq(yt__rownorm_backward(tdx, tdw, tdb, tdy, tx, tm, tr, tw, &p), YT_OK);
        for (int64_t i = 0; i < M * D; i += 7) {
            cr_assert_float_eq(at(ty, i), y[i], tol * 10, "y[%ld]", (long)i);
            cr_assert_float_eq(at(tdx, i), dx[i], tol * 10, "dx[%ld]", (long)i);
        }
        for (int64_t i = 0; i < D; i++) {
            double sdy = 0;
            for (int64_t r = 0; r < M; r++)
                sdy += dy[r * D + i];
            cr_assert_float_eq(at(tdw, i), dw[i], tol * 100, "dw[%ld]", (long)i);
            cr_assert_float_eq(at(tdb, i), sdy, tol * 100, "db[%ld]", (long)i);
        }
        yt_tensor *all[] = {tx, tdy, tw, ty, tdx, tdw, tdb, tm, tr};
        for (size_t j = 0; j < sizeof all / sizeof all[0]; j++)
            yt_release(all[j]);
    }
    YT_ASSERT_NO_LEAKS();
}

/* Rows longer than one summation block (2048) with a ragged tail, rows not a multiple of the
 * statistics tile: the blocked, vectorised sums agree with the reference. */
Test(norm, layer_norm_long_rows)
{
    enum { M = 11, D = 4099 };
    static double x[M * D], dy[M * D], w[D], y[M * D], dx[M * D], dw[D];
    fill(x, M * D, 91, 0.25);
    fill(dy, M * D, 92, 0);
    fill(w, D, 93, 1);
    ref_layer_norm(x, w, dy, M, D, 1e-5, y, dx, dw);
    int64_t xs[] = {M, D}, ws[] = {D};
    yt_tensor *tx = from(x, xs, 2, YT_DTYPE_F64), *tdy = from(dy, xs, 2, YT_DTYPE_F64);
    yt_tensor *tw = from(w, ws, 1, YT_DTYPE_F64);
    yt_tensor *ty = yt_zeros_like(tx), *tdx = yt_zeros_like(tx), *tdw = yt_zeros_like(tw);
    yt__rownorm p = {M, D, 1, 1, 1e-5, true};
    cr_assert_eq(yt__rownorm_forward(ty, NULL, NULL, tx, tw, NULL, &p), YT_OK);
    cr_assert_eq(yt__rownorm_backward(tdx, tdw, NULL, tdy, tx, NULL, NULL, tw, &p), YT_OK);
    for (int64_t i = 0; i < M * D; i += 17) {
        cr_assert_float_eq(at(ty, i), y[i], 1e-11, "y[%ld]", (long)i);
        cr_assert_float_eq(at(tdx, i), dx[i], 1e-11, "dx[%ld]", (long)i);
    }
    for (int64_t i = 0; i < D; i += 7)
        cr_assert_float_eq(at(tdw, i), dw[i], 1e-11, "dw[%ld]", (long)i);
    yt_tensor *all[] = {tx, tdy, tw, ty, tdx, tdw};
    for (size_t j = 0; j < sizeof all / sizeof all[0]; j++)
        yt_release(all[j]);
    YT_ASSERT_NO_LEAKS();
}

/* f32 rows far from zero: the two-pass variance keeps full accuracy (a one-pass E[x^2] - E[x]^2
 * in float would lose every digit at 1e4). */
Test(norm, layer_norm_f32_far_from_zero)
{
    enum { M = 4, D = 1000 };
    static double x[M * D], y[M * D], dx[M * D], dy[M * D];
    fill(x, M * D, 5, 1e4);
    fill(dy, M * D, 6, 0);
    ref_layer_norm(x, NULL, dy, M, D, 1e-5, y, dx, NULL);
    int64_t xs[] = {M, D}, ms[] = {M};
    yt_tensor *tx = from(x, xs, 2, YT_DTYPE_F32), *ty = yt_zeros_like(tx);
    yt_tensor *tr = yt_zeros(ms, 1);
    yt__rownorm p = {M, D, 1, 1, 1e-5, true};
    /* the input itself is rounded to f32: compare with the reference of the rounded values */
    for (int64_t i = 0; i < M * D; i++)
        x[i] = at(tx, i);
    ref_layer_norm(x, NULL, dy, M, D, 1e-5, y, dx, NULL);
    yt_tensor *tm = yt_zeros(ms, 1);
    cr_assert_eq(yt__rownorm_forward(ty, tm, tr, tx, NULL, NULL, &p), YT_OK);
    for (int64_t i = 0; i < M * D; i += 13)
        cr_assert_float_eq(at(ty, i), y[i], 2e-3, "y[%ld]=%g expected %g", (long)i, at(ty, i),
                           y[i]);
    yt_release(tx);
    yt_release(ty);
    yt_release(tr);
    yt_release(tm);
    YT_ASSERT_NO_LEAKS();
}

/* Strided (transposed) and f16 inputs go through the same code with a converted copy. */
Test(norm, layer_norm_strided_and_f16)
{
    enum { M = 6, D = 9 };
    static double x[M * D], y[M * D], dx[M * D], dy[M * D];
    fill(x, M * D, 7, 0);
    memset(dy, 0, sizeof dy);
    ref_layer_norm(x, NULL, dy, M, D, 1e-5, y, dx, NULL);
    int64_t ts[] = {D, M}, xs[] = {M, D}, ms[] = {M};
    /* the rows of a transposed [D, M] tensor */
    static double xt[M * D];
    for (int r = 0; r < M; r++)
        for (int i = 0; i < D; i++)
            xt[i * M + r] = x[r * D + i];
    yt_tensor *base = from(xt, ts, 2, YT_DTYPE_F64), *tx = yt_t(base);
    yt_tensor *ty = yt_zeros(xs, 2), *tr = yt_zeros(ms, 1), *tm = yt_zeros(ms, 1);
    yt__rownorm p = {M, D, 1, 1, 1e-5, true};
    cr_assert_eq(yt__rownorm_forward(ty, tm, tr, tx, NULL, NULL, &p), YT_OK);
    for (int64_t i = 0; i < M * D; i++)
        cr_assert_float_eq(at(ty, i), y[i], 1e-5);
    yt_tensor *h = yt_to(tx, YT_DTYPE_F16), *yh = yt_to(ty, YT_DTYPE_F16);
    cr_assert_eq(yt__rownorm_forward(yh, tm, tr, h, NULL, NULL, &p), YT_OK);
    for (int64_t i = 0; i < M * D; i++)
        cr_assert_float_eq(at(yh, i), y[i], 1e-2);
    yt_tensor *all[] = {base, tx, ty, tr, tm, h, yh};
    for (size_t j = 0; j < sizeof all / sizeof all[0]; j++)
        yt_release(all[j]);
    YT_ASSERT_NO_LEAKS();
}

/* PyTorch's rule: running = (1 - momentum) * running + momentum * batch stat, with the unbiased
 * variance; eval normalises with the running stats. */
Test(norm, batch_norm_running_stats)
{
    /* x [2, 2, 2]: channel 0 holds 1, 2, 3, 4; channel 1 holds 10, 10, 10, 14 */
    double xv[] = {1, 2, 10, 10, 3, 4, 10, 14};
    int64_t xs[] = {2, 2, 2}, cs[] = {2};
    yt_tensor *x = from(xv, xs, 3, YT_DTYPE_F32);
    yt_tensor *rm = yt_zeros(cs, 1), *rv = yt_ones(cs, 1);
    yt_tensor *y = yt_zeros_like(x), *sm = yt_zeros(cs, 1), *si = yt_zeros(cs, 1);
    uint64_t v0 = yt_tensor_version(rm);
    cr_assert_eq(yt__batchnorm_forward(y, sm, si, x, NULL, NULL, rm, rv, true, 0.1, 1e-5), YT_OK);
    cr_assert_gt(yt_tensor_version(rm), v0, "running_mean is written in place");
    cr_assert_float_eq(at(rm, 0), 0.1 * 2.5, 1e-6);
    cr_assert_float_eq(at(rm, 1), 0.1 * 11, 1e-6);
    /* biased var 1.25 and 3; unbiased 5/3 and 4 */
    cr_assert_float_eq(at(rv, 0), 0.9 + 0.1 * 5.0 / 3.0, 1e-6);
    cr_assert_float_eq(at(rv, 1), 0.9 + 0.1 * 4.0, 1e-6);
    cr_assert_float_eq(at(sm, 1), 11, 1e-6);
    cr_assert_float_eq(at(si, 0), 1 / sqrt(1.25 + 1e-5), 1e-6);
    cr_assert_float_eq(at(y, 0), (1 - 2.5) / sqrt(1.25 + 1e-5), 1e-5);
    /* eval: (x - running_mean) / sqrt(running_var + eps), stats untouched */
    double rm0 = at(rm, 0), rv0 = at(rv, 0);
    cr_assert_eq(yt__batchnorm_forward(y, sm, si, x, NULL, NULL, rm, rv, false, 0.1, 1e-5), YT_OK);
    cr_assert_float_eq(at(y, 0), (1 - rm0) / sqrt(rv0 + 1e-5), 1e-5);
    cr_assert_float_eq(at(rm, 0), rm0, 0);
    yt_tensor *all[] = {x, rm, rv, y, sm, si};
    for (size_t j = 0; j < sizeof all / sizeof all[0]; j++)
        yt_release(all[j]);
    YT_ASSERT_NO_LEAKS();
}

/* Gradient of sum(dy * batch_norm(x)) by central differences, in f64, training mode. */
Test(norm, batch_norm_backward_matches_finite_differences)
{
    enum { N = 3, C = 2, S = 4, T = N * C * S };
    double xv[T], dyv[T], wv[C] = {0.7, -1.3}, bv[C] = {0.1, 0.2};
    fill(xv, T, 11, 0);
    fill(dyv, T, 12, 0);
    int64_t xs[] = {N, C, S}, cs[] = {C};
    yt_tensor *w = from(wv, cs, 1, YT_DTYPE_F64), *b = from(bv, cs, 1, YT_DTYPE_F64);
    yt_tensor *dy = from(dyv, xs, 3, YT_DTYPE_F64);
    yt_tensor *sm = yt_zeros_ex(cs, 1, YT_DTYPE_F64, YT_DEVICE_CPU), *si = yt_zeros_like(sm);
    double loss[2];
    double fd[T];
    for (int i = 0; i < T; i++) {
        for (int side = 0; side < 2; side++) {
            double xp[T];
            memcpy(xp, xv, sizeof xp);
            xp[i] += side ? -1e-6 : 1e-6;
            yt_tensor *x = from(xp, xs, 3, YT_DTYPE_F64), *y = yt_zeros_like(x);
            yt__batchnorm_forward(y, sm, si, x, w, b, NULL, NULL, true, 0.1, 1e-5);
            loss[side] = 0;
            for (int j = 0; j < T; j++)
                loss[side] += at(y, j) * dyv[j];
            yt_release(x);
            yt_release(y);
        }
        fd[i] = (loss[0] - loss[1]) / 2e-6;
    }
    yt_tensor *x = from(xv, xs, 3, YT_DTYPE_F64), *y = yt_zeros_like(x), *dx = yt_zeros_like(x);
    yt_tensor *dw = yt_zeros_like(w), *db = yt_zeros_like(w);
    cr_assert_eq(yt__batchnorm_forward(y, sm, si, x, w, b, NULL, NULL, true, 0.1, 1e-5), YT_OK);
    cr_assert_eq(yt__batchnorm_backward(dx, dw, db, dy, x, w, NULL, NULL, sm, si, true, 1e-5),
                 YT_OK);
    for (int i = 0; i < T; i++)
        cr_assert_float_eq(at(dx, i), fd[i], 1e-6, "dx[%d]=%g, finite differences %g", i, at(dx, i),
                           fd[i]);
    yt_tensor *all[] = {w, b, dy, sm, si, x, y, dx, dw, db};
    for (size_t j = 0; j < sizeof all / sizeof all[0]; j++)
        yt_release(all[j]);
    YT_ASSERT_NO_LEAKS();
}

/* Zero rows, and a NaN in one row that stays in that row. */
Test(norm, zero_size_and_nan)
{
    int64_t zs[] = {0, 5}, ms[] = {0};
    yt_tensor *x = yt_zeros(zs, 2), *y = yt_zeros(zs, 2), *m = yt_zeros(ms, 1),
              *r = yt_zeros(ms, 1);
    yt__rownorm p = {0, 5, 1, 1, 1e-5, true};
    cr_assert_eq(yt__rownorm_forward(y, m, r, x, NULL, NULL, &p), YT_OK);
    yt_tensor *all0[] = {x, y, m, r};
    for (size_t j = 0; j < 4; j++)
        yt_release(all0[j]);
    double xv[] = {1, NAN, 3, 1, 2, 3};
    int64_t xs[] = {2, 3}, rs[] = {2};
    x = from(xv, xs, 2, YT_DTYPE_F32);
    y = yt_zeros_like(x);
    m = yt_zeros(rs, 1);
    r = yt_zeros(rs, 1);
    yt__rownorm q = {2, 3, 1, 1, 1e-5, true};
    cr_assert_eq(yt__rownorm_forward(y, m, r, x, NULL, NULL, &q), YT_OK);
    cr_assert(isnan(at(y, 0)) && isnan(at(y, 2)));
    cr_assert_float_eq(at(y, 3), -1 / sqrt(2.0 / 3 + 1e-5), 1e-5);
    yt_tensor *all[] = {x, y, m, r};
    for (size_t j = 0; j < 4; j++)
        yt_release(all[j]);
    YT_ASSERT_NO_LEAKS();
}

/* The backward kernels recompute each row's (or channel's) statistics with the forward's own
 * code: the result equals the backward from saved statistics. */
Test(norm, backward_recomputes_the_saved_statistics)
{
    enum { M = 9, D = 33 };
    static double x[M * D], dy[M * D], w[D];
    fill(x, M * D, 31, 3);
    fill(dy, M * D, 32, 0);
    fill(w, D, 33, 1);
    int64_t xs[] = {M, D}, ws[] = {D}, ms[] = {M};
    yt_tensor *tx = from(x, xs, 2, YT_DTYPE_F32), *tdy = from(dy, xs, 2, YT_DTYPE_F32);
    yt_tensor *tw = from(w, ws, 1, YT_DTYPE_F32), *ty = yt_zeros_like(tx);
    yt_tensor *tm = yt_zeros(ms, 1), *tr = yt_zeros(ms, 1);
    yt_tensor *dx[2] = {yt_zeros_like(tx), yt_zeros_like(tx)};
    yt_tensor *dw[2] = {yt_zeros_like(tw), yt_zeros_like(tw)};
    yt__rownorm p = {M, D, 1, 1, 1e-5, true};
    cr_assert_eq(yt__rownorm_forward(ty, tm, tr, tx, tw, NULL, &p), YT_OK);
    cr_assert_eq(yt__rownorm_backward(dx[0], dw[0], NULL, tdy, tx, tm, tr, tw, &p), YT_OK);
    cr_assert_eq(yt__rownorm_backward(dx[1], dw[1], NULL, tdy, tx, NULL, NULL, tw, &p), YT_OK);
    for (int64_t i = 0; i < M * D; i++)
        cr_assert_float_eq(at(dx[0], i), at(dx[1], i), 1e-6, "dx[%ld]", (long)i);
    for (int64_t i = 0; i < D; i++)
        cr_assert_float_eq(at(dw[0], i), at(dw[1], i), 1e-5, "dw[%ld]", (long)i);
    yt_tensor *all[] = {tx, tdy, tw, ty, tm, tr, dx[0], dx[1], dw[0], dw[1]};
    for (size_t j = 0; j < sizeof all / sizeof all[0]; j++)
        yt_release(all[j]);
    YT_ASSERT_NO_LEAKS();
}

/* layer_norm through the public op on a transposed input: the reference's values, and its
 * gradients of input and weight (the backward kernels) and bias (a sum). */
Test(norm, layer_norm_public_op)
{
    enum { M = 5, D = 7 };
    static double x[M * D], dy[M * D], w[D], y[M * D], dx[M * D], dw[D], xt[M * D];
    fill(x, M * D, 41, 0.5);
    fill(dy, M * D, 42, 0);
    fill(w, D, 43, 1);
    ref_layer_norm(x, w, dy, M, D, 1e-5, y, dx, dw);
    for (int r = 0; r < M; r++)
        for (int i = 0; i < D; i++)
            xt[i * M + r] = x[r * D + i];
    int64_t ts[] = {D, M}, xs[] = {M, D}, ws[] = {D};
    yt_tensor *base = from(xt, ts, 2, YT_DTYPE_F64), *tx = yt_t(base);
    yt_tensor *tw = from(w, ws, 1, YT_DTYPE_F64), *tb = yt_zeros_like(tw);
    yt_tensor *tdy = from(dy, xs, 2, YT_DTYPE_F64);
    yt_set_requires_grad(tx, true);
    yt_set_requires_grad(tw, true);
    yt_set_requires_grad(tb, true);
    int64_t ns[] = {D};
    yt_tensor *out = yt_layer_norm_ex(tx, ns, 1, tw, tb, 1e-5, true);
    cr_assert_not_null(out, "%s", yt_errmsg());
    cr_assert_eq(yt_backward(out, tdy, NULL), YT_OK, "%s", yt_errmsg());
    yt_tensor *gx = yt_grad(tx), *gw = yt_grad(tw), *gb = yt_grad(tb);
    for (int64_t i = 0; i < M * D; i++) {
        cr_assert_float_eq(at(out, i), y[i], 1e-12, "y[%ld]", (long)i);
        cr_assert_float_eq(at(gx, i), dx[i], 1e-12, "dx[%ld]", (long)i);
    }
    for (int64_t i = 0; i < D; i++) {
        double sdy = 0;
        for (int64_t r = 0; r < M; r++)
            sdy += dy[r * D + i];
        cr_assert_float_eq(at(gw, i), dw[i], 1e-12, "dw[%ld]", (long)i);
        cr_assert_float_eq(at(gb, i), sdy, 1e-12, "db[%ld]", (long)i);
    }
    yt_tensor *all[] = {base, tx, tw, tb, tdy, out, gx, gw, gb};
    for (size_t j = 0; j < sizeof all / sizeof all[0]; j++)
        yt_release(all[j]);
    YT_ASSERT_NO_LEAKS();
}

/* gradcheck and gradgradcheck of the public ops on shapes the samples do not cover. */
typedef struct norm_case {
    int op; /* 0 layer_norm, 1 group_norm, 2 rms_norm, 3 batch_norm training, 4 batch_norm eval */
    int dim;
    int64_t sizes[4];
    int64_t affine[2]; /* weight/bias sizes (affine_dim of them) */
    int affine_dim;
    bool weight, bias;
} norm_case;

static yt_tensor *
norm_fn(yt_tensor *const *in, int n, void *ctx)
{
    const norm_case *c = ctx;
    yt_tensor *w = c->weight ? in[1] : NULL, *b = c->bias ? in[1 + c->weight] : NULL;
    (void)n;
    switch (c->op) {
    case 0:
        return yt_layer_norm_ex(in[0], c->affine, c->affine_dim, w, b, 1e-5, true);
    case 1:
        return yt_group_norm_ex(in[0], 2, w, b, 1e-5, true);
    case 2: {
        const double eps = 1e-6;
        return yt_rms_norm_ex(in[0], c->affine, c->affine_dim, w, &eps);
    }
    default: {
        /* eval: running stats are inputs too (the last two, positive variance), not requiring
         * grad: batch_norm is not differentiable with respect to them */
        yt_tensor *rm = c->op == 4 ? in[n - 2] : NULL, *rv = c->op == 4 ? in[n - 1] : NULL;
        return yt_batch_norm(in[0], w, b, rm, rv, c->op == 3, 0.1, 1e-5, false);
    }
    }
}

Test(norm, public_ops_double_backward)
{
    static const norm_case cases[] = {
        {0, 3, {2, 3, 4}, {3, 4}, 2, true, true},  {0, 2, {3, 6}, {6}, 1, false, false},
        {1, 4, {2, 4, 2, 3}, {4}, 1, true, true},  {1, 3, {3, 6, 2}, {6}, 1, true, false},
        {2, 3, {2, 2, 5}, {2, 5}, 2, true, false}, {3, 4, {3, 2, 2, 2}, {2}, 1, true, true},
        {3, 2, {6, 3}, {3}, 1, false, true},       {4, 4, {2, 3, 2, 2}, {3}, 1, true, true},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const norm_case *c = &cases[k];
        yt_tensor *in[5];
        int n = 0;
        double buf[64];
        fill(buf, 64, 50 + (unsigned)k, 0);
        in[n++] = from(buf, c->sizes, c->dim, YT_DTYPE_F64);
        for (int j = 0; j < c->weight + c->bias; j++) {
            fill(buf, 64, 60 + (unsigned)(k * 2 + j), 1);
            in[n++] = from(buf, c->affine, c->affine_dim, YT_DTYPE_F64);
        }
        if (c->op == 4) {
            fill(buf, 64, 70 + (unsigned)k, 0);
            in[n++] = from(buf, c->affine, 1, YT_DTYPE_F64);
            fill(buf, 64, 80 + (unsigned)k, 2); /* in [1, 3) */
            in[n++] = from(buf, c->affine, 1, YT_DTYPE_F64);
        }
        for (int j = 0; j < n - (c->op == 4 ? 2 : 0); j++)
            yt_set_requires_grad(in[j], true);
        cr_assert_eq(yt_gradcheck(norm_fn, in, n, (void *)c, NULL), YT_OK, "case %zu: %s", k,
                     yt_errmsg());
        cr_assert_eq(yt_gradgradcheck(norm_fn, in, n, (void *)c, NULL), YT_OK, "case %zu: %s", k,
                     yt_errmsg());
        for (int j = 0; j < n; j++)
            yt_release(in[j]);
    }
    YT_ASSERT_NO_LEAKS();
}

/* batch_norm in training through the public op: running statistics are written in place (a new
 * version), and mutating them between two forwards does not disturb the backward of both (they
 * are not saved for it). */
Test(norm, batch_norm_public_running_stats)
{
    double xv[] = {1, 2, 10, 10, 3, 4, 10, 14};
    int64_t xs[] = {2, 2, 2}, cs[] = {2};
    yt_tensor *x = from(xv, xs, 3, YT_DTYPE_F64);
    yt_tensor *rm = yt_zeros_ex(cs, 1, YT_DTYPE_F64, YT_DEVICE_CPU);
    yt_tensor *rv = yt_ones_ex(cs, 1, YT_DTYPE_F64, YT_DEVICE_CPU);
    yt_set_requires_grad(x, true);
    uint64_t v0 = yt_tensor_version(rm);
    yt_tensor *y1 = yt_batch_norm(x, NULL, NULL, rm, rv, true, 0.1, 1e-5, false);
    cr_assert_not_null(y1, "%s", yt_errmsg());
    cr_assert_gt(yt_tensor_version(rm), v0, "running_mean is written in place");
    cr_assert_float_eq(at(rm, 1), 0.1 * 11, 1e-12);
    cr_assert_float_eq(at(rv, 0), 0.9 + 0.1 * 5.0 / 3.0, 1e-12);
    yt_tensor *y2 = yt_batch_norm(x, NULL, NULL, rm, rv, true, 0.1, 1e-5, false);
    cr_assert_float_eq(at(rm, 1), 0.19 * 11, 1e-12);
    yt_tensor *x2 = yt_mul(y2, y2), *s = yt_add(y1, x2), *loss = yt_sum(s);
    cr_assert_eq(yt_backward(loss, NULL, NULL), YT_OK, "%s", yt_errmsg());
    yt_tensor *gx = yt_grad(x);
    cr_assert_not_null(gx);
    /* d/dx sum(y) is 0 (y sums to 0 per channel); d/dx sum(y^2) = 0 too (sum y^2 is constant
     * up to eps): the whole gradient is ~0 */
    for (int i = 0; i < 8; i++)
        cr_assert_float_eq(at(gx, i), 0, 1e-4, "dx[%d]=%g", i, at(gx, i));
    yt_tensor *all[] = {x, rm, rv, y1, y2, x2, s, loss, gx};
    for (size_t j = 0; j < sizeof all / sizeof all[0]; j++)
        yt_release(all[j]);
    YT_ASSERT_NO_LEAKS();
}

/* Running statistics are not differentiable, as in PyTorch (torch 1.13: "The function
 * 'native_batch_norm' is not differentiable with respect to argument 'running_mean'"): with grad
 * mode on, one that requires grad is refused in training and in eval, even when the input does
 * not require grad; with grad mode off the call runs. */
Test(norm, batch_norm_refuses_running_stats_that_require_grad)
{
    double xv[] = {1, 2, 10, 10, 3, 4, 10, 14};
    int64_t xs[] = {2, 2, 2}, cs[] = {2};
    for (int k = 0; k < 4; k++) {
        bool training = k & 1, mean_grad = k & 2;
        yt_tensor *x = from(xv, xs, 3, YT_DTYPE_F64);
        yt_tensor *rm = yt_zeros_ex(cs, 1, YT_DTYPE_F64, YT_DEVICE_CPU);
        yt_tensor *rv = yt_ones_ex(cs, 1, YT_DTYPE_F64, YT_DEVICE_CPU);
        yt_set_requires_grad(mean_grad ? rm : rv, true);
        yt_tensor *y = yt_batch_norm(x, NULL, NULL, rm, rv, training, 0.1, 1e-5, false);
        cr_assert_null(y, "case %d accepted", k);
        cr_assert_eq(yt_errcode(), YT_ERR_VALUE, "%s", yt_errmsg());
        cr_assert_str_eq(yt_errmsg(), mean_grad ? "batch_norm: running_mean requires grad, but "
                                                  "batch_norm is not differentiable with respect "
                                                  "to running_mean"
                                                : "batch_norm: running_var requires grad, but "
                                                  "batch_norm is not differentiable with respect "
                                                  "to running_var");
        yt_clear_error();
        bool prev = yt_set_grad_enabled(false);
        y = yt_batch_norm(x, NULL, NULL, rm, rv, training, 0.1, 1e-5, false);
        yt_set_grad_enabled(prev);
        cr_assert_not_null(y, "case %d with grad mode off: %s", k, yt_errmsg());
        /* eval with mean 0 and variance 1: x / sqrt(1 + eps) */
        if (!training)
            cr_assert_float_eq(at(y, 2), 10 / sqrt(1 + 1e-5), 1e-12);
        yt_release(y);
        yt_release(x);
        yt_release(rm);
        yt_release(rv);
    }
    YT_ASSERT_NO_LEAKS();
}

/* rms_norm's default eps is the input dtype's machine epsilon (torch.finfo(dtype).eps). */
Test(norm, rms_norm_default_eps)
{
    double xv[] = {1e-4, -2e-4, 3e-4, 0};
    int64_t xs[] = {1, 4}, ns[] = {4};
    yt_dtype dts[] = {YT_DTYPE_F32, YT_DTYPE_F64};
    double eps[] = {1.1920928955078125e-07, 2.220446049250313e-16};
    for (int k = 0; k < 2; k++) {
        yt_tensor *x = from(xv, xs, 2, dts[k]);
        yt_tensor *a = yt_rms_norm(x, ns, 1), *b = yt_rms_norm_ex(x, ns, 1, NULL, &eps[k]);
        cr_assert_not_null(a, "%s", yt_errmsg());
        for (int i = 0; i < 4; i++)
            cr_assert_float_eq(at(a, i), at(b, i), 0);
        double ms = (1e-8 + 4e-8 + 9e-8) / 4;
        cr_assert_float_eq(at(a, 0), 1e-4 / sqrt(ms + eps[k]), 1e-5);
        yt_release(x);
        yt_release(a);
        yt_release(b);
    }
    YT_ASSERT_NO_LEAKS();
}

/* Checks YAML cannot state: whole shapes, divisibility, counts, combinations of arguments. */
Test(norm, public_op_errors)
{
    int64_t xs[] = {2, 6}, x1s[] = {1, 3}, s4[] = {4}, s6[] = {6}, s3[] = {3};
    yt_tensor *x = yt_ones(xs, 2), *x1 = yt_ones(x1s, 2), *w4 = yt_ones(s4, 1),
              *w6 = yt_ones(s6, 1), *c3 = yt_ones(s3, 1);
    cr_assert_null(yt_layer_norm(x, s4, 1));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "layer_norm: normalized_shape [4] does not match the trailing "
                                  "dims of input of shape [2, 6]");
    cr_assert_null(yt_layer_norm_ex(x, s6, 1, w6, w4, 1e-5, true));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "layer_norm: bias has shape [4], expected normalized_shape [6]");
    cr_assert_null(yt_rms_norm_ex(x, s6, 1, w4, NULL));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "rms_norm: weight has shape [4]");
    cr_assert_null(yt_group_norm(x, 4));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "group_norm: input.size(1)=6 channels do not split into "
                                  "num_groups=4");
    cr_assert_null(yt_batch_norm(x1, NULL, NULL, NULL, NULL, true, 0.1, 1e-5, false));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "batch_norm: expected more than 1 value per channel when "
                                  "training, got input of shape [1, 3]");
    cr_assert_null(yt_batch_norm_training(x1, NULL, NULL, NULL, NULL, 0.1, 1e-5));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "batch_norm_training: expected more than 1 value per channel");
    cr_assert_null(yt_batch_norm(x1, NULL, NULL, c3, NULL, false, 0.1, 1e-5, false));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "batch_norm: running_mean and running_var are required");
    /* backward kernels called directly: grad_out must match input */
    int64_t a4[] = {2, 1, 6, 1}, b4[] = {2, 1, 3, 2};
    yt_tensor *xa = yt_ones(a4, 4), *xb = yt_ones(b4, 4);
    cr_assert_null(yt_row_norm_backward_input(xb, xa, NULL, true, 1e-5));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "row_norm_backward_input: grad_out has shape [2, 1, 3, 2] but "
                                  "input has shape [2, 1, 6, 1]");
    cr_assert_null(yt_batch_norm_backward_input(x, x, w4, 1e-5));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "batch_norm_backward_input: weight has shape [4], expected [6]");
    yt_tensor *all[] = {x, x1, w4, w6, c3, xa, xb};
    for (size_t j = 0; j < sizeof all / sizeof all[0]; j++)
        yt_release(all[j]);
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- scaled_dot_product_attention */

/* Naive attention for one batch entry: q [L, E], k [S, E], v [S, F]; mask kind 0 none,
 * 1 causal, 2 bool (keep[l][s]), 3 float (add[l][s]). */
static void
ref_attention(const double *q, const double *k, const double *v, int L, int S, int E, int F,
              int kind, const double *mask, double *out)
{
    for (int l = 0; l < L; l++) {
        double sc[16], mx = -INFINITY, z = 0;
        for (int s = 0; s < S; s++) {
            double d = 0;
            for (int e = 0; e < E; e++)
                d += q[l * E + e] * k[s * E + e];
            d /= sqrt((double)E);
            if ((kind == 1 && s > l) || (kind == 2 && mask[l * S + s] == 0))
                d = -INFINITY;
            if (kind == 3)
                d += mask[l * S + s];
            sc[s] = d;
            mx = d > mx ? d : mx;
        }
        for (int s = 0; s < S; s++)
            z += exp(sc[s] - mx);
        for (int f = 0; f < F; f++) {
            double o = 0;
            for (int s = 0; s < S; s++)
                o += exp(sc[s] - mx) / z * v[s * F + f];
            out[l * F + f] = o;
        }
    }
}

typedef struct sdpa_ctx {
    yt_tensor *mask;
    bool causal;
} sdpa_ctx;

static yt_tensor *
sdpa_fn(yt_tensor *const *in, int n, void *ctx)
{
    (void)n;
    sdpa_ctx *c = ctx;
    return yt_scaled_dot_product_attention_ex(in[0], in[1], in[2], c->mask, 0.0, c->causal, NULL);
}

Test(attention, matches_reference_and_gradcheck)
{
    enum { B = 2, L = 3, S = 4, E = 5, F = 2 };
    double q[B * L * E], k[B * S * E], v[B * S * F], keep[L * S], add[L * S], out[L * F];
    fill(q, B * L * E, 21, 0);
    fill(k, B * S * E, 22, 0);
    fill(v, B * S * F, 23, 0);
    fill(add, L * S, 24, 0);
    for (int i = 0; i < L * S; i++)
        keep[i] = (i % 3) != 1;
    int64_t qs[] = {B, L, E}, ks[] = {B, S, E}, vs[] = {B, S, F}, ms[] = {L, S};
    yt_tensor *tq = from(q, qs, 3, YT_DTYPE_F64), *tk = from(k, ks, 3, YT_DTYPE_F64);
    yt_tensor *tv = from(v, vs, 3, YT_DTYPE_F64);
    yt_tensor *tkeep = from(keep, ms, 2, YT_DTYPE_BOOL), *tadd = from(add, ms, 2, YT_DTYPE_F64);
    for (int kind = 0; kind < 4; kind++) {
        sdpa_ctx ctx = {kind == 2 ? tkeep : kind == 3 ? tadd : NULL, kind == 1};
        yt_tensor *in[] = {tq, tk, tv};
        yt_tensor *o = sdpa_fn(in, 3, &ctx);
        cr_assert_not_null(o, "%s", yt_errmsg());
        for (int b = 0; b < B; b++) {
            ref_attention(q + b * L * E, k + b * S * E, v + b * S * F, L, S, E, F, kind,
                          kind == 2 ? keep : add, out);
            for (int i = 0; i < L * F; i++)
                cr_assert_float_eq(at(o, b * L * F + i), out[i], 1e-12, "kind %d", kind);
        }
        yt_release(o);
        for (int i = 0; i < 3; i++)
            yt_set_requires_grad(in[i], true);
        cr_assert_eq(yt_gradcheck(sdpa_fn, in, 3, &ctx, NULL), YT_OK, "kind %d: %s", kind,
                     yt_errmsg());
        cr_assert_eq(yt_gradgradcheck(sdpa_fn, in, 3, &ctx, NULL), YT_OK, "kind %d: %s", kind,
                     yt_errmsg());
        for (int i = 0; i < 3; i++)
            yt_set_requires_grad(in[i], false);
    }
    /* errors name the op and the argument */
    cr_assert_null(yt_scaled_dot_product_attention(tq, tv, tv));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "scaled_dot_product_attention: key.size(-1)=2 does not match "
                                  "query.size(-1)=5");
    cr_assert_null(yt_scaled_dot_product_attention_ex(tq, tk, tv, tkeep, 0, true, NULL));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "scaled_dot_product_attention: attn_mask must be None");
    cr_assert_null(yt_scaled_dot_product_attention_ex(tq, tk, tv, NULL, 1.5, false, NULL));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "scaled_dot_product_attention: dropout_p=1.5 must be in [0, 1]");
    cr_assert_null(yt_scaled_dot_product_attention_ex(tq, tk, tv, tq, 0, false, NULL));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "scaled_dot_product_attention: attn_mask of shape [2, 3, 5] "
                                  "does not broadcast to the scores' shape [2, 3, 4]");
    yt_tensor *i64 = yt_to(tadd, YT_DTYPE_I64);
    cr_assert_null(yt_scaled_dot_product_attention_ex(tq, tk, tv, i64, 0, false, NULL));
    YT_ASSERT_ERROR(YT_ERR_DTYPE, "scaled_dot_product_attention: attn_mask has dtype i64, "
                                  "expected bool or f64");
    yt_tensor *all[] = {tq, tk, tv, tkeep, tadd, i64};
    for (size_t j = 0; j < sizeof all / sizeof all[0]; j++)
        yt_release(all[j]);
    YT_ASSERT_NO_LEAKS();
}

/* dropout_p > 0 drops attention weights with the dropout op and the given generator: the same
 * seed gives the same result as softmax, dropout and matmul by hand; p = 1 drops everything. A
 * row whose every score is masked gives NaN, as in PyTorch. */
Test(attention, dropout_and_masked_rows)
{
    int64_t qs[] = {2, 3, 4}, ks[] = {2, 5, 4}, vs[] = {2, 5, 2}, ms[] = {3, 5};
    double buf[64];
    fill(buf, 64, 101, 0);
    yt_tensor *q = from(buf, qs, 3, YT_DTYPE_F32);
    fill(buf, 64, 102, 0);
    yt_tensor *k = from(buf, ks, 3, YT_DTYPE_F32);
    fill(buf, 64, 103, 0);
    yt_tensor *v = from(buf, vs, 3, YT_DTYPE_F32);
    yt_generator *g1 = yt_generator_create(7), *g2 = yt_generator_create(7);
    yt_tensor *o = yt_scaled_dot_product_attention_ex(q, k, v, NULL, 0.5, false, g1);
    cr_assert_not_null(o, "%s", yt_errmsg());
    yt_tensor *kt = yt_transpose(k, -2, -1), *qk = yt_matmul(q, kt);
    yt_tensor *sc = yt_mul_scalar(qk, yt_float(0.5)); /* 1 / sqrt(4) */
    yt_tensor *p = yt_softmax(sc, -1), *pd = yt_dropout_ex(p, 0.5, true, g2);
    yt_tensor *want = yt_matmul(pd, v);
    for (int i = 0; i < 12; i++)
        cr_assert_float_eq(at(o, i), at(want, i), 1e-6, "out[%d]", i);
    yt_tensor *all_dropped = yt_scaled_dot_product_attention_ex(q, k, v, NULL, 1.0, false, g1);
    for (int i = 0; i < 12; i++)
        cr_assert_float_eq(at(all_dropped, i), 0, 0);
    /* row 1 of the mask hides every key */
    double keep[15];
    for (int i = 0; i < 15; i++)
        keep[i] = i / 5 != 1;
    yt_tensor *mask = from(keep, ms, 2, YT_DTYPE_BOOL);
    yt_tensor *m = yt_scaled_dot_product_attention_ex(q, k, v, mask, 0.0, false, NULL);
    cr_assert(isnan(at(m, 2)) && isnan(at(m, 3)) && !isnan(at(m, 0)), "row 1 is NaN, row 0 not");
    yt_tensor *all[] = {q, k, v, o, kt, qk, sc, p, pd, want, all_dropped, mask, m};
    for (size_t j = 0; j < sizeof all / sizeof all[0]; j++)
        yt_release(all[j]);
    yt_generator_release(g1);
    yt_generator_release(g2);
    YT_ASSERT_NO_LEAKS();
}
