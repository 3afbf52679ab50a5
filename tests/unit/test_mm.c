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
