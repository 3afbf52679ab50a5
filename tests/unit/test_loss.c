/* Losses and dropout: values against hand-computed references, PyTorch's corner cases (ignore_index,
 * label smoothing, +-1e4 logits, out-of-range targets, BCE input range), and gradcheck /
 * gradgradcheck of every loss (the generated cases do not gradcheck composites). */
#include <math.h>

#include <criterion/criterion.h>

#include "test_util.h"

static yt_tensor *
tensor_f64(const double *v, const int64_t *sizes, int dim, bool grad)
{
    yt_tensor *t = yt_tensor_from_data(v, sizes, dim, YT_DTYPE_F64);
    cr_assert_not_null(t, "%s", yt_errmsg());
    if (grad)
        yt_set_requires_grad(t, true);
    return t;
}

static yt_tensor *
tensor_i64(const int64_t *v, const int64_t *sizes, int dim)
{
    yt_tensor *t = yt_tensor_from_data(v, sizes, dim, YT_DTYPE_I64);
    cr_assert_not_null(t, "%s", yt_errmsg());
    return t;
}

static double
item(yt_tensor *t)
{
    cr_assert_not_null(t, "%s", yt_errmsg());
    double v = yt_item(t);
    yt_release(t);
    return v;
}

/* ---------------------------------------------------------------- gradchecks */

typedef struct loss_case {
    int which;
    int64_t reduction;
    double param;
    yt_tensor *target;
} loss_case;

static yt_tensor *
call_loss(yt_tensor *const *in, int n, void *ctx)
{
    (void)n;
    loss_case *c = ctx;
    yt_tensor *t = c->target != NULL ? c->target : in[1];
    switch (c->which) {
    case 0:
        return yt_mse_loss_ex(in[0], t, c->reduction);
    case 1:
        return yt_l1_loss_ex(in[0], t, c->reduction);
    case 2:
        return yt_smooth_l1_loss_ex(in[0], t, c->reduction, c->param);
    case 3:
        return yt_huber_loss_ex(in[0], t, c->reduction, c->param);
    case 4:
        return yt_binary_cross_entropy_ex(in[0], t, c->reduction);
    case 5:
        return yt_binary_cross_entropy_with_logits_ex(in[0], t, c->reduction);
    case 6:
        return yt_nll_loss_ex(in[0], t, c->reduction, 1);
    case 7:
        return yt_cross_entropy_loss_ex(in[0], t, c->reduction, 1, c->param);
    default:
        return yt_cross_entropy_loss_ex(in[0], t, c->reduction, -100, c->param);
    }
}

static void
check_grads(loss_case *c, int n_in, yt_tensor **in)
{
    yt_status st = yt_gradcheck(call_loss, in, n_in, c, NULL);
    cr_assert_eq(st, YT_OK, "gradcheck loss %d reduction %lld: %s", c->which,
                 (long long)c->reduction, yt_errmsg());
    st = yt_gradgradcheck(call_loss, in, n_in, c, NULL);
    cr_assert_eq(st, YT_OK, "gradgradcheck loss %d reduction %lld: %s", c->which,
                 (long long)c->reduction, yt_errmsg());
}

Test(loss, pointwise_losses_gradcheck)
{
    const double x[6] = {0.3, -1.2, 0.05, 2.0, -0.4, 0.9}, t[6] = {0.1, 0.5, -0.3, 1.0, 0.2, 0.8};
    const double p[6] = {0.2, 0.7, 0.5, 0.9, 0.35, 0.6}, q[6] = {0.0, 1.0, 0.3, 1.0, 0.5, 0.2};
    const int64_t sizes[2] = {2, 3};
    for (int which = 0; which < 6; which++) {
        for (int64_t red = 0; red < 3; red++) {
            bool probs = which == 4;
            yt_tensor *in[2] = {tensor_f64(probs ? p : x, sizes, 2, true),
                                tensor_f64(probs || which == 5 ? q : t, sizes, 2, which != 4)};
            loss_case c = {.which = which, .reduction = red, .param = 0.5};
            check_grads(&c, 2, in);
            yt_release(in[0]);
            yt_release(in[1]);
        }
    }
    YT_ASSERT_NO_LEAKS();
}

Test(loss, class_losses_gradcheck)
{
    const double x[12] = {0.3, -1.2, 0.05, 2.0, -0.4, 0.9, 1.5, 0.1, -0.7, 0.2, 0.0, -2.0};
    const int64_t targets[4] = {0, 1, 2, 1}; /* 1 is ignore_index in the calls above */
    const int64_t xs[2] = {4, 3}, ts[1] = {4};
    yt_tensor *target = tensor_i64(targets, ts, 1);
    for (int which = 6; which < 8; which++) {
        for (int64_t red = 0; red < 3; red++) {
            for (int smooth = 0; smooth < (which == 7 ? 2 : 1); smooth++) {
                yt_tensor *in[1] = {tensor_f64(x, xs, 2, true)};
                loss_case c = {.which = which,
                               .reduction = red,
                               .param = smooth ? 0.2 : 0.0,
                               .target = target};
                check_grads(&c, 1, in);
                yt_release(in[0]);
            }
        }
    }
    /* class probabilities, gradients for both input and target */
    const double probs[12] = {0.2, 0.3, 0.5, 1, 0, 0, 0.1, 0.1, 0.8, 0.3, 0.3, 0.4};
    yt_tensor *in[2] = {tensor_f64(x, xs, 2, true), tensor_f64(probs, xs, 2, true)};
    for (int64_t red = 0; red < 3; red++) {
        loss_case c = {.which = 8, .reduction = red, .param = 0.1};
        check_grads(&c, 2, in);
    }
    /* ignore_index is refused for probabilities */
    yt_tensor *l = yt_cross_entropy_loss_ex(in[0], in[1], 1, -100, 0.1);
    cr_assert_not_null(l, "%s", yt_errmsg());
    yt_release(l);
    l = yt_cross_entropy_loss_ex(in[0], in[1], 1, 1, 0.0);
    cr_assert_null(l);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "cross_entropy_loss: ignore_index=1");
    yt_release(in[0]);
    yt_release(in[1]);
    yt_release(target);
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- values */

Test(loss, cross_entropy_values_and_stability)
{
    /* logits +-1e4: log_softmax must not overflow */
    const double x[6] = {1e4, -1e4, 0.0, -1e4, 1e4, 1e4};
    const int64_t xs[2] = {2, 3}, ts[1] = {2}, tv[2] = {0, 0};
    yt_tensor *self = tensor_f64(x, xs, 2, false), *target = tensor_i64(tv, ts, 1);
    /* row 0: target is the max: loss 0; row 1: target -1e4 vs two 1e4: 2e4 + log 2 */
    double sum = item(yt_cross_entropy_loss_ex(self, target, 2, -100, 0.0));
    cr_assert(fabs(sum - (2e4 + log(2.0))) < 1e-6, "sum %.17g", sum);
    double mean = item(yt_cross_entropy_loss_ex(self, target, 1, -100, 0.0));
    cr_assert(fabs(mean - (2e4 + log(2.0)) / 2) < 1e-6, "mean %.17g", mean);
    /* ignore the second row: the mean divides by 1 */
    const int64_t tv2[2] = {0, -100};
    yt_tensor *t2 = tensor_i64(tv2, ts, 1);
    mean = item(yt_cross_entropy_loss(self, t2));
    cr_assert(fabs(mean) < 1e-9, "mean with ignored row %.17g", mean);
    /* every row ignored: 0 / 0 */
    const int64_t tv3[2] = {-100, -100};
    yt_tensor *t3 = tensor_i64(tv3, ts, 1);
    cr_assert(isnan(item(yt_cross_entropy_loss(self, t3))));
    yt_release(t2);
    yt_release(t3);
    yt_release(self);
    yt_release(target);

    /* label smoothing against the formula: (1-ls) nll + ls/C * sum_c -logp_c */
    const double y[3] = {1.0, 2.0, 3.0};
    const int64_t ys[1] = {3};
    const int64_t t0 = 1;
    yt_tensor *row = tensor_f64(y, ys, 1, false), *tt = tensor_i64(&t0, NULL, 0);
    double lse = log(exp(1.0) + exp(2.0) + exp(3.0));
    double expect = 0.7 * (lse - 2.0) + 0.3 / 3 * (3 * lse - 6.0);
    double got = item(yt_cross_entropy_loss_ex(row, tt, 1, -100, 0.3));
    cr_assert(fabs(got - expect) < 1e-12, "smoothed %.17g vs %.17g", got, expect);
    yt_release(row);
    yt_release(tt);
    YT_ASSERT_NO_LEAKS();
}

Test(loss, nll_target_range_is_checked)
{
    const double x[6] = {0, 0, 0, 0, 0, 0};
    const int64_t xs[2] = {2, 3}, ts[1] = {2}, tv[2] = {0, 3};
    yt_tensor *self = tensor_f64(x, xs, 2, false), *target = tensor_i64(tv, ts, 1);
    cr_assert_null(yt_nll_loss(self, target));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "nll_loss: target value 3 at index 1 is out of range [0, 3)");
    cr_assert_null(yt_cross_entropy_loss(self, target));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "cross_entropy: target value 3");
    const int64_t bad_shape[1] = {3};
    yt_tensor *t3 = yt_zeros_ex(bad_shape, 1, YT_DTYPE_I64, YT_DEVICE_NONE);
    cr_assert_null(yt_nll_loss(self, t3));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "nll_loss: target shape [3]");
    yt_release(t3);
    yt_release(self);
    yt_release(target);
    YT_ASSERT_NO_LEAKS();
}

Test(loss, bce_checks_range_and_clamps_log)
{
    const double x[3] = {0.0, 1.0, 0.5}, t[3] = {1.0, 1.0, 0.0}, bad[3] = {0.5, 1.5, 0.2};
    const int64_t s[1] = {3};
    yt_tensor *self = tensor_f64(x, s, 1, true), *target = tensor_f64(t, s, 1, false);
    /* log(0) clamps at -100: element 0 costs 100, element 1 costs 0, element 2 log 2 */
    yt_tensor *l = yt_binary_cross_entropy_ex(self, target, 2);
    cr_assert_not_null(l, "%s", yt_errmsg());
    cr_assert(fabs(yt_item(l) - (100.0 + log(2.0))) < 1e-9, "bce %.17g", yt_item(l));
    cr_assert_eq(yt_backward(l, NULL, NULL), YT_OK, "%s", yt_errmsg());
    yt_tensor *g = yt_grad(self);
    double gv[3];
    yt_tensor_copy_to(g, gv, sizeof gv, YT_DTYPE_F64);
    for (int i = 0; i < 3; i++)
        cr_assert(isfinite(gv[i]), "grad %d is %g", i, gv[i]);
    yt_release(g);
    yt_release(l);
    yt_tensor *b = tensor_f64(bad, s, 1, false);
    cr_assert_null(yt_binary_cross_entropy(b, target));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "binary_cross_entropy: all elements of self");
    yt_release(b);
    yt_release(self);
    yt_release(target);
    YT_ASSERT_NO_LEAKS();
}

Test(loss, bce_with_logits_is_stable)
{
    const double x[4] = {1e4, -1e4, 1e4, -1e4}, t[4] = {1, 0, 0, 1};
    const int64_t s[1] = {4};
    yt_tensor *self = tensor_f64(x, s, 1, true), *target = tensor_f64(t, s, 1, false);
    yt_tensor *l = yt_binary_cross_entropy_with_logits_ex(self, target, 0);
    double v[4];
    cr_assert_eq(yt_tensor_copy_to(l, v, sizeof v, YT_DTYPE_F64), YT_OK, "%s", yt_errmsg());
    cr_assert(v[0] == 0 && v[1] == 0 && fabs(v[2] - 1e4) < 1e-9 && fabs(v[3] - 1e4) < 1e-9,
              "%g %g %g %g", v[0], v[1], v[2], v[3]);
    yt_tensor *sum = yt_sum(l);
    cr_assert_eq(yt_backward(sum, NULL, NULL), YT_OK, "%s", yt_errmsg());
    yt_tensor *g = yt_grad(self);
    cr_assert_eq(yt_tensor_copy_to(g, v, sizeof v, YT_DTYPE_F64), YT_OK);
    cr_assert(v[0] == 0 && v[1] == 0 && v[2] == 1 && v[3] == -1, "%g %g %g %g", v[0], v[1], v[2],
              v[3]);
    yt_release(g);
    yt_release(sum);
    yt_release(l);
    yt_release(self);
    yt_release(target);
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- dropout */

Test(dropout, scales_kept_elements_and_masks_the_gradient)
{
    const int64_t n = 20000;
    yt_tensor *x = yt_ones_ex(&n, 1, YT_DTYPE_F64, YT_DEVICE_NONE);
    yt_set_requires_grad(x, true);
    yt_manual_seed(5);
    yt_tensor *y = yt_dropout(x, 0.25, true);
    cr_assert_not_null(y, "%s", yt_errmsg());
    double *v = malloc(sizeof(double) * (size_t)n);
    yt_tensor_copy_to(y, v, sizeof(double) * (size_t)n, YT_DTYPE_F64);
    int64_t kept = 0;
    for (int64_t i = 0; i < n; i++) {
        cr_assert(v[i] == 0.0 || fabs(v[i] - 1.0 / 0.75) < 1e-15, "element %lld is %g",
                  (long long)i, v[i]);
        kept += v[i] != 0.0;
    }
    cr_assert(fabs((double)kept / (double)n - 0.75) < 0.015, "kept %lld of %lld", (long long)kept,
              (long long)n);
    yt_tensor *s = yt_sum(y);
    cr_assert_eq(yt_backward(s, NULL, NULL), YT_OK, "%s", yt_errmsg());
    yt_tensor *g = yt_grad(x);
    double *gv = malloc(sizeof(double) * (size_t)n);
    yt_tensor_copy_to(g, gv, sizeof(double) * (size_t)n, YT_DTYPE_F64);
    for (int64_t i = 0; i < n; i++)
        cr_assert(gv[i] == v[i], "grad %lld is %g, output %g", (long long)i, gv[i], v[i]);
    /* the same seed gives the same mask */
    yt_manual_seed(5);
    yt_tensor *y2 = yt_dropout(x, 0.25, true);
    yt_tensor_copy_to(y2, gv, sizeof(double) * (size_t)n, YT_DTYPE_F64);
    for (int64_t i = 0; i < n; i++)
        cr_assert(gv[i] == v[i], "reseeded mask differs at %lld", (long long)i);
    free(v);
    free(gv);
    yt_release(y2);
    yt_release(g);
    yt_release(s);
    yt_release(y);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

Test(dropout, edge_cases)
{
    const double xv[3] = {1, 2, 3};
    const int64_t s[1] = {3};
    yt_tensor *x = tensor_f64(xv, s, 1, false);
    yt_tensor *eval = yt_dropout(x, 0.9, false), *p0 = yt_dropout(x, 0.0, true),
              *p1 = yt_dropout(x, 1.0, true);
    double v[3];
    yt_tensor_copy_to(eval, v, sizeof v, YT_DTYPE_F64);
    cr_assert(v[0] == 1 && v[1] == 2 && v[2] == 3);
    yt_tensor_copy_to(p0, v, sizeof v, YT_DTYPE_F64);
    cr_assert(v[0] == 1 && v[1] == 2 && v[2] == 3);
    yt_tensor_copy_to(p1, v, sizeof v, YT_DTYPE_F64);
    cr_assert(v[0] == 0 && v[1] == 0 && v[2] == 0);
    cr_assert_null(yt_dropout(x, 1.5, true));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "dropout: probability has to be between 0 and 1");
    yt_release(eval);
    yt_release(p0);
    yt_release(p1);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}
