/* yt_mm against a naive triple loop in double precision: f32 and f64, contiguous and transposed
 * operands, shapes from 1x1x1 to 64x784x256, through yt_mm and yt_mm_out, and f16 / bf16 with a
 * tolerance set by their precision. Every test ends by proving that nothing leaked. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "test_util.h"

/* A [rows, cols] tensor of `dtype` with values uniform in [-1, 1), laid out transposed in memory
 * (the transpose of a contiguous [cols, rows] tensor) when `transposed`. */
static yt_tensor *
random_matrix(int64_t rows, int64_t cols, yt_dtype dtype, bool transposed)
{
    const int64_t sizes[2] = {transposed ? cols : rows, transposed ? rows : cols};
    yt_tensor *u = yt_rand_ex(sizes, 2, NULL, dtype, YT_DEVICE_CPU);
    yt_tensor *c = yt_mul_scalar(u, yt_int(2));
    yt_tensor *m = yt_sub_scalar(c, yt_int(1));
    cr_assert_not_null(m, "%s", yt_errmsg());
    yt_release(c);
    yt_release(u);
    if (!transposed)
        return m;
    yt_tensor *t = yt_t(m);
    yt_release(m);
    cr_assert(!yt_tensor_is_contiguous(t) || rows == 1 || cols == 1);
    return t;
}

/* The elements of a 2-D tensor in row-major order, as doubles (malloc'ed). */
static double *
to_doubles(yt_tensor *t)
{
    int64_t n = yt_tensor_numel(t);
    double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    cr_assert_not_null(v);
    cr_assert_eq(yt_tensor_copy_to(t, v, (size_t)n * sizeof *v, YT_DTYPE_F64), YT_OK, "%s",
                 yt_errmsg());
    return v;
}

/* Checks c = a @ b elementwise: |c - ref| <= rel_eps * sum_k |a_ik b_kj| + tiny, the error bound
 * of a length-k dot product (the tolerance grows with k). */
static void
check_product(yt_tensor *a, yt_tensor *b, yt_tensor *c, double rel_eps, const char *what)
{
    int64_t m = yt_tensor_size(a, 0), k = yt_tensor_size(a, 1), n = yt_tensor_size(b, 1);
    cr_assert_eq(yt_tensor_dim(c), 2, "%s: result is %d-D", what, yt_tensor_dim(c));
    cr_assert(yt_tensor_size(c, 0) == m && yt_tensor_size(c, 1) == n,
              "%s: result is [%lld, %lld], expected [%lld, %lld]", what,
              (long long)yt_tensor_size(c, 0), (long long)yt_tensor_size(c, 1), (long long)m,
              (long long)n);
    cr_assert_eq(yt_tensor_dtype(c), yt_tensor_dtype(a));
    double *va = to_doubles(a), *vb = to_doubles(b), *vc = to_doubles(c);
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++) {
            double ref = 0, mag = 0;
            for (int64_t p = 0; p < k; p++) {
                ref += va[i * k + p] * vb[p * n + j];
                mag += fabs(va[i * k + p] * vb[p * n + j]);
            }
            double got = vc[i * n + j];
            double tol = rel_eps * (mag + 1e-30) * (double)(k > 0 ? k : 1) + 1e-300;
            cr_assert(fabs(got - ref) <= tol,
                      "%s: c[%lld][%lld] is %.17g, naive loop gives %.17g (|diff| %.3g > tol %.3g)",
                      what, (long long)i, (long long)j, got, ref, fabs(got - ref), tol);
        }
    }
    free(vc);
    free(vb);
    free(va);
}

/* yt_mm and yt_mm_out on [m, k] x [k, n] for every combination of transposed operands. */
static void
check_shape(int64_t m, int64_t k, int64_t n, yt_dtype dtype, double rel_eps)
{
    for (int layout = 0; layout < 4; layout++) {
        bool ta = layout & 1, tb = layout & 2;
        yt_tensor *a = random_matrix(m, k, dtype, ta);
        yt_tensor *b = random_matrix(k, n, dtype, tb);
        char what[96];
        snprintf(what, sizeof what, "%s %lldx%lldx%lld%s%s", yt_dtype_name(dtype), (long long)m,
                 (long long)k, (long long)n, ta ? " a^T" : "", tb ? " b^T" : "");
        yt_tensor *c = yt_mm(a, b);
        cr_assert_not_null(c, "%s: %s", what, yt_errmsg());
        check_product(a, b, c, rel_eps, what);

        const int64_t sizes[2] = {m, n};
        yt_tensor *out = yt_full_ex(sizes, 2, yt_float(NAN), dtype, YT_DEVICE_CPU);
        cr_assert_eq(yt_mm_out(out, a, b), YT_OK, "%s: %s", what, yt_errmsg());
        check_product(a, b, out, rel_eps, what);
        yt_release(out);
        yt_release(c);
        yt_release(b);
        yt_release(a);
    }
}

static const int64_t shapes[][3] = {
    {1, 1, 1}, {7, 5, 3}, {1, 17, 1}, {16, 1, 16}, {33, 65, 17}, {64, 784, 256},
};

Test(mm, f32_matches_naive_loop)
{
    yt_manual_seed(11);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        check_shape(shapes[i][0], shapes[i][1], shapes[i][2], YT_DTYPE_F32, 0x1p-23);
    YT_ASSERT_NO_LEAKS();
}

Test(mm, f64_matches_naive_loop)
{
    yt_manual_seed(12);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        check_shape(shapes[i][0], shapes[i][1], shapes[i][2], YT_DTYPE_F64, 0x1p-52);
    YT_ASSERT_NO_LEAKS();
}

/* f16 / bf16: the product of the rounded inputs, then one rounding of the result to the
 * dtype (half an ulp of |c|) plus accumulation error. */
static void
check_half(yt_dtype dtype, double ulp)
{
    const int64_t dims[][3] = {{1, 1, 1}, {7, 5, 3}, {32, 100, 24}};
    for (size_t s = 0; s < sizeof dims / sizeof dims[0]; s++) {
        int64_t m = dims[s][0], k = dims[s][1], n = dims[s][2];
        yt_tensor *a = random_matrix(m, k, dtype, false);
        yt_tensor *b = random_matrix(k, n, dtype, s == 1);
        yt_tensor *c = yt_mm(a, b);
        cr_assert_not_null(c, "%s mm: %s", yt_dtype_name(dtype), yt_errmsg());
        cr_assert_eq(yt_tensor_dtype(c), dtype);
        double *va = to_doubles(a), *vb = to_doubles(b), *vc = to_doubles(c);
        for (int64_t i = 0; i < m; i++) {
            for (int64_t j = 0; j < n; j++) {
                double ref = 0, mag = 0;
                for (int64_t p = 0; p < k; p++) {
                    ref += va[i * k + p] * vb[p * n + j];
                    mag += fabs(va[i * k + p] * vb[p * n + j]);
                }
                double tol = ulp * fabs(ref) + 0x1p-23 * mag * (double)k + ulp * 0x1p-14;
                cr_assert(fabs(vc[i * n + j] - ref) <= tol,
                          "%s %lldx%lldx%lld: c[%lld][%lld] is %.9g, expected %.9g (tol %.3g)",
                          yt_dtype_name(dtype), (long long)m, (long long)k, (long long)n,
                          (long long)i, (long long)j, vc[i * n + j], ref, tol);
            }
        }
        free(vc);
        free(vb);
        free(va);
        yt_release(c);
        yt_release(b);
        yt_release(a);
    }
}

Test(mm, f16_and_bf16)
{
    yt_manual_seed(13);
    check_half(YT_DTYPE_F16, 0x1p-10);
    check_half(YT_DTYPE_BF16, 0x1p-7);
    YT_ASSERT_NO_LEAKS();
}

Test(mm, known_values_and_out_checks)
{
    const double av[6] = {1, 2, 3, 4, 5, 6}, bv[6] = {7, 8, 9, 10, 11, 12};
    const int64_t sa[2] = {2, 3}, sb[2] = {3, 2}, sc[2] = {2, 2};
    yt_tensor *a = yt_tensor_from_data(av, sa, 2, YT_DTYPE_F64);
    yt_tensor *b = yt_tensor_from_data(bv, sb, 2, YT_DTYPE_F64);
    yt_tensor *c = yt_mm(a, b);
    double got[4];
    cr_assert_eq(yt_tensor_copy_to(c, got, sizeof got, YT_DTYPE_F64), YT_OK, "%s", yt_errmsg());
    const double expect[4] = {58, 64, 139, 154};
    for (int i = 0; i < 4; i++)
        cr_assert(got[i] == expect[i], "c[%d] is %g, expected %g", i, got[i], expect[i]);

    yt_tensor *wrong = yt_zeros_ex(sa, 2, YT_DTYPE_F64, YT_DEVICE_CPU);
    cr_assert_eq(yt_mm_out(wrong, a, b), YT_ERR_SHAPE);
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "mm_out: out has shape [2, 3] but the result has shape [2, 2]");
    yt_tensor *out = yt_zeros_ex(sc, 2, YT_DTYPE_F64, YT_DEVICE_CPU);
    cr_assert_eq(yt_mm_out(out, a, b), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(yt_tensor_version(out), 1);
    yt_release(out);
    yt_release(wrong);
    yt_release(c);
    yt_release(b);
    yt_release(a);
    YT_ASSERT_NO_LEAKS();
}

/* The values of a tensor as doubles, into a caller buffer of `n` entries. */
static void
values(yt_tensor *t, double *out, int64_t n)
{
    cr_assert_not_null(t, "%s", yt_errmsg());
    cr_assert_eq(yt_tensor_numel(t), n);
    cr_assert_eq(yt_tensor_copy_to(t, out, (size_t)n * sizeof *out, YT_DTYPE_F64), YT_OK, "%s",
                 yt_errmsg());
}

Test(mm, addmm_beta_alpha_and_nan_with_beta_zero)
{
    const double av[4] = {1, 2, 3, 4}, bv[4] = {1, 0, 0, 1}, sv[2] = {10, NAN};
    const int64_t s2[2] = {2, 2}, s1[1] = {2};
    yt_tensor *a = yt_tensor_from_data(av, s2, 2, YT_DTYPE_F64);
    yt_tensor *b = yt_tensor_from_data(bv, s2, 2, YT_DTYPE_F64);
    yt_tensor *bias = yt_tensor_from_data(sv, s1, 1, YT_DTYPE_F64); /* broadcast over rows */
    double got[4];
    /* beta = 0: self is ignored, its NaN does not reach the result (PyTorch's rule). */
    yt_tensor *r0 = yt_addmm_ex(bias, a, b, yt_int(0), yt_int(2));
    values(r0, got, 4);
    for (int i = 0; i < 4; i++)
        cr_assert(got[i] == 2 * av[i], "[%d] = %g", i, got[i]);
    /* beta = 0.5: column 1 is NaN, column 0 is 5 + 2 a. */
    yt_tensor *r1 = yt_addmm_ex(bias, a, b, yt_float(0.5), yt_int(2));
    values(r1, got, 4);
    cr_assert(got[0] == 7 && isnan(got[1]) && got[2] == 11 && isnan(got[3]));
    yt_release(r1);
    yt_release(r0);
    yt_release(bias);
    yt_release(b);
    yt_release(a);
    YT_ASSERT_NO_LEAKS();
}

/* addmm with a bias row ([n], [1, n], or expanded [m, n]) and beta 1, which the GEMM adds as it
 * stores C: against mm + the bias, for every operand layout (both orientations of the kernels,
 * edge tiles, several k blocks), f32 and f64, at 1 and 2 threads. */
Test(mm, addmm_bias_row_in_the_kernels)
{
    yt_manual_seed(11);
    static const int64_t dims[][3] = {{1, 1, 1},      {7, 5, 3},       {13, 300, 33},
                                      {64, 784, 256}, {512, 128, 384}, {3, 9, 200}};
    for (int threads = 1; threads <= 2; threads++) {
        yt_set_num_threads(threads);
        for (int dt = 0; dt < 2; dt++) {
            yt_dtype dtype = dt ? YT_DTYPE_F64 : YT_DTYPE_F32;
            for (size_t s = 0; s < sizeof dims / sizeof dims[0]; s++) {
                int64_t m = dims[s][0], k = dims[s][1], n = dims[s][2];
                for (int layout = 0; layout < 4; layout++) {
                    yt_tensor *a = random_matrix(m, k, dtype, layout & 1);
                    yt_tensor *b = random_matrix(k, n, dtype, layout & 2);
                    yt_tensor *row = random_matrix(1, n, dtype, false);
                    const int64_t vec[1] = {n}, full[2] = {m, n};
                    yt_tensor *v = yt_reshape(row, vec, 1), *e = yt_expand(row, full, 2);
                    yt_tensor *biases[3] = {v, row, e};
                    yt_tensor *prod = yt_mm(a, b);
                    yt_tensor *want = yt_add(prod, row);
                    double *vw = to_doubles(want);
                    for (int q = 0; q < 3; q++) {
                        yt_tensor *got = yt_addmm(biases[q], a, b);
                        cr_assert_not_null(got, "%s", yt_errmsg());
                        double *vg = to_doubles(got);
                        double eps = dt ? 1e-12 : 2e-5;
                        for (int64_t i = 0; i < m * n; i++)
                            cr_assert(fabs(vg[i] - vw[i]) <= eps * (1 + fabs(vw[i])) * (double)k,
                                      "%s %lldx%lldx%lld layout %d bias %d threads %d: [%lld] "
                                      "%.9g vs %.9g",
                                      yt_dtype_name(dtype), (long long)m, (long long)k,
                                      (long long)n, layout, q, threads, (long long)i, vg[i], vw[i]);
                        free(vg);
                        yt_release(got);
                    }
                    free(vw);
                    yt_release(want);
                    yt_release(prod);
                    yt_release(e);
                    yt_release(v);
                    yt_release(row);
                    yt_release(b);
                    yt_release(a);
                }
            }
        }
    }
    yt_set_num_threads(1);
    YT_ASSERT_NO_LEAKS();
}

Test(mm, bmm_baddbmm_matmul_broadcast_against_mm)
{
    yt_manual_seed(5);
    /* self [2, 1, 3, 4] @ other [5, 4, 6] -> [2, 5, 3, 6]; entry (i, j) is self[i, 0] @ other[j]. */
    const int64_t sa[4] = {2, 1, 3, 4}, sb[3] = {5, 4, 6};
    yt_tensor *a = yt_rand_ex(sa, 4, NULL, YT_DTYPE_F64, YT_DEVICE_CPU);
    yt_tensor *b = yt_rand_ex(sb, 3, NULL, YT_DTYPE_F64, YT_DEVICE_CPU);
    yt_tensor *bt = yt_transpose(b, 1, 2); /* a non-contiguous operand too */
    yt_tensor *btt = yt_transpose(bt, 1, 2);
    yt_tensor *r = yt_matmul(a, btt);
    cr_assert_not_null(r, "%s", yt_errmsg());
    cr_assert(yt_tensor_dim(r) == 4 && yt_tensor_size(r, 1) == 5 && yt_tensor_size(r, 3) == 6);
    double got[18], want[18];
    for (int64_t i = 0; i < 2; i++)
        for (int64_t j = 0; j < 5; j++) {
            yt_tensor *ai = yt_select(a, 0, i), *ai0 = yt_select(ai, 0, 0),
                      *bj = yt_select(b, 0, j);
            yt_tensor *ref = yt_mm(ai0, bj), *ri = yt_select(r, 0, i), *rij = yt_select(ri, 0, j);
            values(ref, want, 18);
            values(rij, got, 18);
            for (int e = 0; e < 18; e++)
                cr_assert(fabs(got[e] - want[e]) < 1e-12);
            yt_release(rij);
            yt_release(ri);
            yt_release(ref);
            yt_release(bj);
            yt_release(ai0);
            yt_release(ai);
        }
    /* baddbmm with a 1-D self and alpha: beta * self + alpha * bmm. */
    const int64_t s1[3] = {5, 3, 4}, sv[1] = {6};
    yt_tensor *x = yt_rand_ex(s1, 3, NULL, YT_DTYPE_F64, YT_DEVICE_CPU);
    yt_tensor *v = yt_rand_ex(sv, 1, NULL, YT_DTYPE_F64, YT_DEVICE_CPU);
    yt_tensor *p = yt_bmm(x, b);
    yt_tensor *q = yt_baddbmm_ex(v, x, b, yt_int(3), yt_float(-0.5));
    cr_assert_not_null(q, "%s", yt_errmsg());
    double pv[90], qv[90], vv[6];
    values(p, pv, 90);
    values(q, qv, 90);
    values(v, vv, 6);
    for (int e = 0; e < 90; e++)
        cr_assert(fabs(qv[e] - (3 * vv[e % 6] - 0.5 * pv[e])) < 1e-12);
    yt_release(q);
    yt_release(p);
    yt_release(v);
    yt_release(x);
    yt_release(r);
    yt_release(btt);
    yt_release(bt);
    yt_release(b);
    yt_release(a);
    YT_ASSERT_NO_LEAKS();
}

Test(mm, dot_and_outer_values)
{
    const double av[3] = {1, 2, 3}, bv[3] = {4, -5, 6};
    const int64_t s[1] = {3}, s0[1] = {0};
    yt_tensor *a = yt_tensor_from_data(av, s, 1, YT_DTYPE_F64);
    yt_tensor *b = yt_tensor_from_data(bv, s, 1, YT_DTYPE_F64);
    yt_tensor *d = yt_dot(a, b);
    cr_assert_not_null(d, "%s", yt_errmsg());
    cr_assert_eq(yt_tensor_dim(d), 0);
    double got[9];
    values(d, got, 1);
    cr_assert(got[0] == 12);
    yt_tensor *o = yt_outer(a, b);
    values(o, got, 9);
    for (int i = 0; i < 9; i++)
        cr_assert(got[i] == av[i / 3] * bv[i % 3]);
    yt_tensor *e = yt_zeros_ex(s0, 1, YT_DTYPE_F64, YT_DEVICE_CPU);
    yt_tensor *de = yt_dot(e, e); /* empty: exactly 0 */
    values(de, got, 1);
    cr_assert(got[0] == 0);
    yt_tensor *bad = yt_dot(a, e);
    cr_assert_null(bad);
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "dot: self.size(0)=3 does not match tensor.size(0)=0");
    yt_release(de);
    yt_release(e);
    yt_release(o);
    yt_release(d);
    yt_release(b);
    yt_release(a);
    YT_ASSERT_NO_LEAKS();
}

/* A 1-D weight (in_features) as in PyTorch's F.linear: input @ weight drops the feature dim (a
 * [3, 4] input gives [3], a [4] input a 0-d result), and the gradients are the vector product's.
 * A bias with a 1-D weight is refused (torch 1.13: "mat2 must be a matrix, got 1-D tensor"). */
Test(mm, linear_with_a_1d_weight)
{
    const double xv[12] = {1, 2, 3, 4, -1, 0, 2, 5, 0.5, -2, 1, 3}, wv[4] = {2, -1, 0.5, 3};
    const int64_t sx[2] = {3, 4}, sw[1] = {4}, sb[1] = {3};
    yt_tensor *x = yt_tensor_from_data(xv, sx, 2, YT_DTYPE_F64);
    yt_tensor *w = yt_tensor_from_data(wv, sw, 1, YT_DTYPE_F64);
    yt_tensor *x1 = yt_tensor_from_data(xv, sw, 1, YT_DTYPE_F64);
    yt_tensor *b = yt_ones_ex(sb, 1, YT_DTYPE_F64, YT_DEVICE_CPU);
    yt_tensor *b0 = yt_ones_ex(NULL, 0, YT_DTYPE_F64, YT_DEVICE_CPU);
    cr_assert_eq(yt_set_requires_grad(x, true), YT_OK);
    cr_assert_eq(yt_set_requires_grad(w, true), YT_OK);
    yt_tensor *y = yt_linear(x, w);
    cr_assert_not_null(y, "%s", yt_errmsg());
    cr_assert_eq(yt_tensor_dim(y), 1);
    double got[12];
    values(y, got, 3);
    for (int r = 0; r < 3; r++) {
        double want = 0;
        for (int i = 0; i < 4; i++)
            want += xv[r * 4 + i] * wv[i];
        cr_assert(got[r] == want, "y[%d] = %g, want %g", r, got[r], want);
    }
    yt_tensor *loss = yt_sum(y);
    cr_assert_eq(yt_backward(loss, NULL, NULL), YT_OK, "%s", yt_errmsg());
    yt_tensor *gx = yt_grad(x), *gw = yt_grad(w);
    values(gx, got, 12); /* d/dx[r][i] = w[i] */
    for (int k = 0; k < 12; k++)
        cr_assert(got[k] == wv[k % 4]);
    values(gw, got, 4); /* d/dw[i] = sum_r x[r][i] */
    for (int i = 0; i < 4; i++)
        cr_assert(got[i] == xv[i] + xv[4 + i] + xv[8 + i]);
    yt_tensor *y0 = yt_linear(x1, w);
    cr_assert_not_null(y0, "%s", yt_errmsg());
    cr_assert_eq(yt_tensor_dim(y0), 0);
    values(y0, got, 1);
    cr_assert(got[0] == 1 * 2 - 2 * 1 + 3 * 0.5 + 4 * 3);
    yt_tensor *const biases[2] = {b, b0};
    yt_tensor *const inputs[2] = {x, x1};
    for (int k = 0; k < 4; k++) {
        cr_assert_null(yt_linear_ex(inputs[k & 1], w, biases[k >> 1]), "case %d accepted", k);
        YT_ASSERT_ERROR(YT_ERR_SHAPE,
                        "linear: expected weight.dim == 2 or bias is None, got weight.dim=1");
        yt_clear_error();
    }
    yt_tensor *all[] = {x, w, x1, b, b0, y, loss, gx, gw, y0};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        yt_release(all[i]);
    YT_ASSERT_NO_LEAKS();
}

Test(mm, linear_gradients_in_the_weight_layout)
{
    /* nn.Linear: y = x W^T + b through addmm, and without a bias (mm) on a 3-D input: every
     * gradient matches the loops. The weight's gradient is computed as dY^T X, row-major like
     * the weight: mm_mat2_backward gives the column-major W^T its gradient column-major. */
    yt_manual_seed(11);
    const int64_t sx[2] = {5, 7}, sw[2] = {3, 7}, sb[1] = {3}, sx3[3] = {2, 5, 7};
    for (int with_bias = 0; with_bias < 2; with_bias++) {
        yt_tensor *x =
            yt_rand_ex(with_bias ? sx : sx3, with_bias ? 2 : 3, NULL, YT_DTYPE_F64, YT_DEVICE_CPU);
        yt_tensor *w = yt_rand_ex(sw, 2, NULL, YT_DTYPE_F64, YT_DEVICE_CPU);
        yt_tensor *b = yt_rand_ex(sb, 1, NULL, YT_DTYPE_F64, YT_DEVICE_CPU);
        cr_assert_eq(yt_set_requires_grad(x, true), YT_OK);
        cr_assert_eq(yt_set_requires_grad(w, true), YT_OK);
        cr_assert_eq(yt_set_requires_grad(b, true), YT_OK);
        yt_tensor *y = yt_linear_ex(x, w, with_bias ? b : NULL);
        cr_assert_not_null(y, "%s", yt_errmsg());
        cr_assert_str_eq(yt_grad_fn_name(y), with_bias ? "AddmmBackward" : "ViewBackward");
        /* loss = sum(y * y) / 2: dY = Y */
        yt_tensor *yy = yt_mul(y, y), *loss = yt_sum(yy);
        cr_assert_eq(yt_backward(loss, NULL, NULL), YT_OK, "%s", yt_errmsg());
        yt_tensor *gw = yt_grad(w), *gx = yt_grad(x), *gb = yt_grad(b);
        cr_assert(yt_tensor_is_contiguous(gw));
        int64_t rows = with_bias ? 5 : 10; /* the rows of x, batch dims flattened */
        yt_tensor *wt = yt_t(w), *x2 = yt_reshape(x, (int64_t[]){rows, 7}, 2);
        yt_tensor *y2 = yt_reshape(y, (int64_t[]){rows, 3}, 2);
        yt_tensor *gwt = yt_mm_mat2_backward(y2, x2, wt); /* [7, 3], column-major like wt */
        cr_assert_not_null(gwt, "%s", yt_errmsg());
        cr_assert(yt_tensor_stride(gwt, 0) == 1 && yt_tensor_stride(gwt, 1) == 7);
        yt_tensor *gx2 = yt_mm_mat1_backward(y2, wt, x2); /* row-major like x */
        cr_assert(yt_tensor_stride(gx2, 0) == 7 && yt_tensor_stride(gx2, 1) == 1);
        yt_release(gx2);
        yt_release(gwt);
        yt_release(y2);
        yt_release(x2);
        yt_release(wt);
        double xv[70], wv[21], yv[30], gwv[21], gxv[70], gbv[3];
        values(x, xv, rows * 7);
        values(w, wv, 21);
        values(y, yv, rows * 3);
        values(gw, gwv, 21);
        values(gx, gxv, rows * 7);
        for (int64_t o = 0; o < 3; o++)
            for (int64_t i = 0; i < 7; i++) {
                double ref = 0;
                for (int64_t r = 0; r < rows; r++)
                    ref += 2 * yv[r * 3 + o] * xv[r * 7 + i];
                cr_assert(fabs(gwv[o * 7 + i] - ref) < 1e-12, "dW[%lld][%lld]", (long long)o,
                          (long long)i);
            }
        for (int64_t r = 0; r < rows; r++)
            for (int64_t i = 0; i < 7; i++) {
                double ref = 0;
                for (int64_t o = 0; o < 3; o++)
                    ref += 2 * yv[r * 3 + o] * wv[o * 7 + i];
                cr_assert(fabs(gxv[r * 7 + i] - ref) < 1e-12);
            }
        if (with_bias) {
            values(gb, gbv, 3);
            for (int64_t o = 0; o < 3; o++) {
                double ref = 0;
                for (int64_t r = 0; r < rows; r++)
                    ref += 2 * yv[r * 3 + o];
                cr_assert(fabs(gbv[o] - ref) < 1e-12);
            }
        } else {
            cr_assert_null(gb);
        }
        yt_release(gb);
        yt_release(gx);
        yt_release(gw);
        yt_release(loss);
        yt_release(yy);
        yt_release(y);
        yt_release(b);
        yt_release(w);
        yt_release(x);
    }
    YT_ASSERT_NO_LEAKS();
}

/* Integer products wrap at the dtype's width, as PyTorch's do; a float beta is truncated, one out of
 * the dtype's range is refused. */
Test(mm, integer_products_wrap_like_pytorch)
{
    const int64_t row_s[2] = {1, 2}, col_s[2] = {2, 1}, one_s[2] = {1, 1};
    yt_tensor *a = test_from((const double[]){100, 100}, row_s, 2, YT_DTYPE_U8);
    yt_tensor *b = test_from((const double[]){3, 3}, col_s, 2, YT_DTYPE_U8);
    yt_tensor *p = yt_mm(a, b);
    test_expect_values(p, (const double[]){88}, 1, one_s, 2); /* 600 mod 256 */
    cr_assert_eq(yt_tensor_dtype(p), YT_DTYPE_U8);

    int64_t big[2] = {INT64_C(1) << 62, INT64_C(1) << 62}, two[2] = {2, 2};
    yt_tensor *bi = yt_tensor_from_data(big, row_s, 2, YT_DTYPE_I64);
    yt_tensor *ti = yt_tensor_from_data(two, col_s, 2, YT_DTYPE_I64);
    yt_tensor *q = yt_mm(bi, ti); /* 2^64 wraps to 0 */
    int64_t got = -1;
    cr_assert_eq(yt_tensor_copy_to(q, &got, sizeof got, YT_DTYPE_I64), YT_OK);
    cr_assert_eq(got, 0);

    /* beta 2.7 is 2: 2 * 1 + 1 * (3 * 1 + 3 * 1) = 8 */
    yt_tensor *ones = test_from((const double[]){1, 1}, col_s, 2, YT_DTYPE_U8);
    yt_tensor *bias = test_from((const double[]){1}, one_s, 2, YT_DTYPE_U8);
    yt_tensor *bt = yt_transpose(b, 0, 1);
    yt_tensor *r = yt_addmm_ex(bias, bt, ones, yt_float(2.7), yt_int(1));
    test_expect_values(r, (const double[]){8}, 1, one_s, 2);
    cr_assert_null(yt_addmm_ex(bias, a, b, yt_int(1), yt_int(300)));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "addmm: alpha=300 cannot be converted to u8 without overflow");

    /* out= into one of its own inputs reads the inputs before writing */
    yt_tensor *sq =
        test_from((const double[]){1, 2, 3, 4}, (const int64_t[]){2, 2}, 2, YT_DTYPE_I32);
    cr_assert_eq(yt_mm_out(sq, sq, sq), YT_OK, "%s", yt_errmsg());
    test_expect_values(sq, (const double[]){7, 10, 15, 22}, 4, (const int64_t[]){2, 2}, 2);
    yt_release(sq), yt_release(r), yt_release(bt), yt_release(bias), yt_release(ones),
        yt_release(q);
    yt_release(ti), yt_release(bi), yt_release(p), yt_release(b), yt_release(a);
    YT_ASSERT_NO_LEAKS();
}
