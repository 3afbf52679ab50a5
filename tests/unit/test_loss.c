/* Losses and dropout: values against hand-computed references, PyTorch's corner cases (ignore_index,
 * label smoothing, +-1e4 logits, out-of-range targets, BCE input range), and gradcheck /
 * gradgradcheck of every loss (the generated cases do not gradcheck composites). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "parallel.h"
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
    const char *reduction;
    double param;
    yt_tensor *target;
    yt_tensor *weight;     /* a class or element weight that does not require grad, or NULL */
    yt_tensor *pos_weight; /* bce_with_logits only */
} loss_case;

static const char *const REDUCTIONS[3] = {"none", "mean", "sum"};

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
        return yt_binary_cross_entropy_ex(in[0], t, c->weight, c->reduction);
    case 5:
        return yt_binary_cross_entropy_with_logits_ex(in[0], t, c->weight, c->pos_weight,
                                                      c->reduction);
    case 6:
        return yt_nll_loss_ex(in[0], t, c->weight, c->reduction, 1);
    case 7:
        return yt_cross_entropy_loss_ex(in[0], t, c->weight, c->reduction, 1, c->param);
    default:
        return yt_cross_entropy_loss_ex(in[0], t, c->weight, c->reduction, -100, c->param);
    }
}

static void
check_grads(loss_case *c, int n_in, yt_tensor **in)
{
    yt_status st = yt_gradcheck(call_loss, in, n_in, c, NULL);
    cr_assert_eq(st, YT_OK, "gradcheck loss %d reduction %s: %s", c->which, c->reduction,
                 yt_errmsg());
    st = yt_gradgradcheck(call_loss, in, n_in, c, NULL);
    cr_assert_eq(st, YT_OK, "gradgradcheck loss %d reduction %s: %s", c->which, c->reduction,
                 yt_errmsg());
}

Test(loss, pointwise_losses_gradcheck)
{
    const double x[6] = {0.3, -1.2, 0.05, 2.0, -0.4, 0.9}, t[6] = {0.1, 0.5, -0.3, 1.0, 0.2, 0.8};
    const double p[6] = {0.2, 0.7, 0.5, 0.9, 0.35, 0.6}, q[6] = {0.0, 1.0, 0.3, 1.0, 0.5, 0.2};
    const double w[3] = {0.5, 2.0, 1.5}, pw[3] = {3.0, 0.25, 1.0};
    const int64_t sizes[2] = {2, 3}, wsizes[1] = {3};
    yt_tensor *weight = tensor_f64(w, wsizes, 1, false), *pos = tensor_f64(pw, wsizes, 1, false);
    for (int which = 0; which < 6; which++) {
        for (int red = 0; red < 3; red++) {
            for (int weighted = 0; weighted < (which >= 4 ? 2 : 1); weighted++) {
                bool probs = which == 4;
                yt_tensor *in[2] = {tensor_f64(probs ? p : x, sizes, 2, true),
                                    tensor_f64(probs || which == 5 ? q : t, sizes, 2, true)};
                loss_case c = {.which = which,
                               .reduction = REDUCTIONS[red],
                               .param = 0.5,
                               .weight = weighted ? weight : NULL,
                               .pos_weight = weighted && which == 5 ? pos : NULL};
                check_grads(&c, 2, in);
                yt_release(in[0]);
                yt_release(in[1]);
            }
        }
    }
    yt_release(weight);
    yt_release(pos);
    YT_ASSERT_NO_LEAKS();
}

Test(loss, class_losses_gradcheck)
{
    const double x[12] = {0.3, -1.2, 0.05, 2.0, -0.4, 0.9, 1.5, 0.1, -0.7, 0.2, 0.0, -2.0};
    const double w[3] = {0.5, 2.0, 1.25};
    const int64_t targets[4] = {0, 1, 2, 1}; /* 1 is ignore_index in the calls above */
    const int64_t xs[2] = {4, 3}, ts[1] = {4}, ws[1] = {3};
    yt_tensor *target = tensor_i64(targets, ts, 1), *weight = tensor_f64(w, ws, 1, false);
    for (int which = 6; which < 8; which++) {
        for (int red = 0; red < 3; red++) {
            for (int smooth = 0; smooth < (which == 7 ? 2 : 1); smooth++) {
                for (int weighted = 0; weighted < 2; weighted++) {
                    yt_tensor *in[1] = {tensor_f64(x, xs, 2, true)};
                    loss_case c = {.which = which,
                                   .reduction = REDUCTIONS[red],
                                   .param = smooth ? 0.2 : 0.0,
                                   .target = target,
                                   .weight = weighted ? weight : NULL};
                    check_grads(&c, 1, in);
                    yt_release(in[0]);
                }
            }
        }
    }
    /* class probabilities, gradients for both input and target */
    const double probs[12] = {0.2, 0.3, 0.5, 1, 0, 0, 0.1, 0.1, 0.8, 0.3, 0.3, 0.4};
    yt_tensor *in[2] = {tensor_f64(x, xs, 2, true), tensor_f64(probs, xs, 2, true)};
    for (int red = 0; red < 3; red++) {
        for (int weighted = 0; weighted < 2; weighted++) {
            loss_case c = {.which = 8,
                           .reduction = REDUCTIONS[red],
                           .param = 0.1,
                           .weight = weighted ? weight : NULL};
            check_grads(&c, 2, in);
        }
    }
    /* ignore_index is refused for probabilities, and probabilities must be floating */
    yt_tensor *l = yt_cross_entropy_loss_ex(in[0], in[1], NULL, "mean", -100, 0.1);
    cr_assert_not_null(l, "%s", yt_errmsg());
    yt_release(l);
    l = yt_cross_entropy_loss_ex(in[0], in[1], NULL, "mean", 1, 0.0);
    cr_assert_null(l);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "cross_entropy_loss: ignore_index=1");
    yt_tensor *int_probs = yt_zeros_ex(xs, 2, YT_DTYPE_I64, YT_DEVICE_NONE);
    cr_assert_null(yt_cross_entropy_loss(in[0], int_probs));
    YT_ASSERT_ERROR(YT_ERR_DTYPE, "cross_entropy_loss: a target shaped like self holds class "
                                  "probabilities and must be floating, got i64");
    yt_release(int_probs);
    yt_release(in[0]);
    yt_release(in[1]);
    yt_release(target);
    yt_release(weight);
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
    double sum = item(yt_cross_entropy_loss_ex(self, target, NULL, "sum", -100, 0.0));
    cr_assert(fabs(sum - (2e4 + log(2.0))) < 1e-6, "sum %.17g", sum);
    double mean = item(yt_cross_entropy_loss_ex(self, target, NULL, "mean", -100, 0.0));
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
    double got = item(yt_cross_entropy_loss_ex(row, tt, NULL, "mean", -100, 0.3));
    cr_assert(fabs(got - expect) < 1e-12, "smoothed %.17g vs %.17g", got, expect);
    yt_release(row);
    yt_release(tt);
    YT_ASSERT_NO_LEAKS();
}

/* f32 cross_entropy over contiguous rows (the vector path: rows of up to 32 classes 8 at a time,
 * longer ones one by one), per-row losses and gradients against double references, with class
 * weights, ignored rows and a row with a +inf logit (NaN, as PyTorch's log_softmax gives it).
 * 2001 rows split between 2 threads mid-group give the bits of 1 thread. */
Test(loss, cross_entropy_f32_rows_match_double)
{
    enum { ROWS = 2001 };
    static const int64_t classes[] = {3, 17, 40};
    int saved = yt_get_num_threads();
    yt__parallel_set_always(true);
    for (int ci = 0; ci < 3; ci++) {
        const int64_t c = classes[ci], xs[2] = {ROWS, c}, ts[1] = {ROWS}, ws[1] = {c};
        double *x = malloc(sizeof(double) * ROWS * (size_t)c);
        double *want = malloc(sizeof(double) * ROWS * (size_t)c);
        double *got = malloc(sizeof(double) * 2 * ROWS * (size_t)c), w[40];
        int64_t tv[ROWS];
        for (int64_t i = 0; i < ROWS * c; i++)
            x[i] = 4 * sin(0.61 * (double)i + (double)c);
        for (int64_t k = 0; k < c; k++)
            w[k] = 0.5 + 0.1 * (double)k;
        for (int64_t r = 0; r < ROWS; r++)
            tv[r] = r % 7 == 3 ? -100 : (r * 5) % c;
        x[9 * c + 1] = INFINITY; /* row 9 (target not 1): NaN */
        yt_tensor *x64 = tensor_f64(x, xs, 2, false);
        yt_tensor *x32 = yt_to(x64, YT_DTYPE_F32);
        yt_release(x64);
        cr_assert_not_null(x32, "%s", yt_errmsg());
        yt_set_requires_grad(x32, true);
        cr_assert_eq(yt_tensor_copy_to(x32, x, sizeof(double) * ROWS * (size_t)c, YT_DTYPE_F64),
                     YT_OK); /* the references read the f32 values */
        yt_tensor *w64 = tensor_f64(w, ws, 1, false), *weight = yt_to(w64, YT_DTYPE_F32);
        yt_release(w64);
        cr_assert_eq(yt_tensor_copy_to(weight, w, sizeof(double) * (size_t)c, YT_DTYPE_F64), YT_OK);
        yt_tensor *target = tensor_i64(tv, ts, 1);
        /* per-row losses */
        yt_tensor *loss = yt_cross_entropy_index_ex(x32, target, weight, "none", -100, 0.0);
        cr_assert_not_null(loss, "%s", yt_errmsg());
        cr_assert_eq(yt_tensor_copy_to(loss, got, sizeof(double) * ROWS, YT_DTYPE_F64), YT_OK);
        yt_release(loss);
        for (int64_t r = 0; r < ROWS; r++) {
            const double *row = x + r * c;
            double m = -INFINITY, se = 0;
            for (int64_t k = 0; k < c; k++)
                m = fmax(m, row[k]);
            for (int64_t k = 0; k < c; k++)
                se += exp(row[k] - m);
            double lse = m + log(se), v = tv[r] < 0 ? 0 : w[tv[r]] * (lse - row[tv[r]]);
            if (r == 9)
                cr_assert(isnan(got[r]), "C=%lld row 9: %g, expected NaN", (long long)c, got[r]);
            else
                cr_assert(fabs(got[r] - v) <= 2e-6 * (1 + fabs(v)), "C=%lld row %lld: %.9g vs %.9g",
                          (long long)c, (long long)r, got[r], v);
            for (int64_t k = 0; k < c; k++) /* d sum / dx: w_t (softmax - onehot) */
                want[r * c + k] = tv[r] < 0 ? 0 : w[tv[r]] * (exp(row[k] - lse) - (k == tv[r]));
        }
        /* gradients of the sum, at 1 and 2 threads */
        for (int threads = 1; threads <= 2; threads++) {
            yt_set_num_threads(threads);
            yt_tensor *l = yt_cross_entropy_index_ex(x32, target, weight, "sum", -100, 0.0);
            cr_assert_eq(yt_backward(l, NULL, NULL), YT_OK, "%s", yt_errmsg());
            yt_release(l);
            yt_tensor *g = yt_grad(x32);
            cr_assert_eq(yt_tensor_copy_to(g, got + (threads - 1) * ROWS * c,
                                           sizeof(double) * ROWS * (size_t)c, YT_DTYPE_F64),
                         YT_OK);
            yt_release(g);
            yt_zero_grad(x32);
        }
        for (int64_t i = 0; i < ROWS * c; i++) {
            if (i / c == 9)
                cr_assert(isnan(got[i]), "C=%lld grad [9, %lld]: %g, expected NaN", (long long)c,
                          (long long)(i % c), got[i]);
            else
                cr_assert(fabs(got[i] - want[i]) <= 2e-6, "C=%lld grad [%lld, %lld]: %.9g vs %.9g",
                          (long long)c, (long long)(i / c), (long long)(i % c), got[i], want[i]);
        }
        cr_assert(memcmp(got, got + ROWS * c, sizeof(double) * ROWS * (size_t)c) == 0,
                  "C=%lld: gradients at 1 and 2 threads differ", (long long)c);
        yt_release(x32);
        yt_release(target);
        yt_release(weight);
        free(x);
        free(want);
        free(got);
    }
    yt__parallel_set_always(false);
    yt_set_num_threads(saved);
    YT_ASSERT_NO_LEAKS();
}

Test(loss, class_weights_ignore_index_and_smoothing_values)
{
    /* 3 rows of 3 classes; row 1 is ignored (target 2 = ignore_index) */
    const double x[9] = {0.5, -1.0, 2.0, 1.5, 0.25, -0.5, -2.0, 0.75, 1.0};
    const double w[3] = {0.5, 2.0, 1.5};
    const int64_t tv[3] = {1, 2, 0}, xs[2] = {3, 3}, ts[1] = {3}, ws[1] = {3};
    yt_tensor *self = tensor_f64(x, xs, 2, false), *target = tensor_i64(tv, ts, 1);
    yt_tensor *weight = tensor_f64(w, ws, 1, false);
    /* nll: -(w1 x[0,1] + w0 x[2,0]) / (w1 + w0) */
    double nll = item(yt_nll_loss_ex(self, target, weight, "mean", 2));
    double expect = -(2.0 * -1.0 + 0.5 * -2.0) / 2.5;
    cr_assert(fabs(nll - expect) < 1e-12, "nll %.17g vs %.17g", nll, expect);
    /* cross_entropy with smoothing ls: row loss (1 - ls) w_t (-logp_t) + ls / C sum_c w_c (-logp_c),
     * the mean over the weights of the rows that count */
    const double ls = 0.3;
    double total = 0.0, wsum = 0.0;
    for (int r = 0; r < 3; r++) {
        if (tv[r] == 2)
            continue;
        const double *row = x + 3 * r;
        double lse = log(exp(row[0]) + exp(row[1]) + exp(row[2]));
        double smooth = 0.0;
        for (int c = 0; c < 3; c++)
            smooth += w[c] * (lse - row[c]);
        total += (1 - ls) * w[tv[r]] * (lse - row[tv[r]]) + ls / 3 * smooth;
        wsum += w[tv[r]];
    }
    double ce = item(yt_cross_entropy_loss_ex(self, target, weight, "mean", 2, ls));
    cr_assert(fabs(ce - total / wsum) < 1e-12, "cross_entropy %.17g vs %.17g", ce, total / wsum);
    double ce_sum = item(yt_cross_entropy_loss_ex(self, target, weight, "sum", 2, ls));
    cr_assert(fabs(ce_sum - total) < 1e-12, "cross_entropy sum %.17g vs %.17g", ce_sum, total);

    /* class probabilities with weight: the mean divides by the number of rows, not the weights */
    const double pv[9] = {0.2, 0.3, 0.5, 1, 0, 0, 0.1, 0.1, 0.8};
    yt_tensor *probs = tensor_f64(pv, xs, 2, false);
    double want = 0.0;
    for (int r = 0; r < 3; r++) {
        const double *row = x + 3 * r;
        double lse = log(exp(row[0]) + exp(row[1]) + exp(row[2]));
        for (int c = 0; c < 3; c++)
            want += w[c] * ((1 - ls) * pv[3 * r + c] + ls / 3) * (lse - row[c]);
    }
    double cp = item(yt_cross_entropy_loss_ex(probs, probs, NULL, "sum", -100, 0.0));
    cr_assert(isfinite(cp));
    cp = item(yt_cross_entropy_loss_ex(self, probs, weight, "mean", -100, ls));
    cr_assert(fabs(cp - want / 3) < 1e-12, "probabilities %.17g vs %.17g", cp, want / 3);
    yt_release(probs);
    yt_release(self);
    yt_release(target);
    yt_release(weight);
    YT_ASSERT_NO_LEAKS();
}

Test(loss, bce_weights_values)
{
    const double x[4] = {0.5, -1.0, 2.0, 0.0}, t[4] = {1.0, 0.0, 0.25, 1.0};
    const double w[2] = {2.0, 0.5}, pw[2] = {3.0, 0.5};
    const int64_t s[2] = {2, 2}, ws[1] = {2};
    yt_tensor *self = tensor_f64(x, s, 2, false), *target = tensor_f64(t, s, 2, false);
    yt_tensor *weight = tensor_f64(w, ws, 1, false), *pos = tensor_f64(pw, ws, 1, false);
    /* w_j (pw_j t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))), negated; column j */
    double expect = 0.0;
    for (int i = 0; i < 4; i++) {
        double sig = 1.0 / (1.0 + exp(-x[i]));
        int j = i % 2;
        expect -= w[j] * (pw[j] * t[i] * log(sig) + (1 - t[i]) * log(1 - sig));
    }
    double got = item(yt_binary_cross_entropy_with_logits_ex(self, target, weight, pos, "sum"));
    cr_assert(fabs(got - expect) < 1e-12, "bce_with_logits %.17g vs %.17g", got, expect);
    /* the same through probabilities */
    yt_tensor *p = yt_sigmoid(self);
    double viap = item(yt_binary_cross_entropy_ex(p, target, weight, "mean"));
    double plain = 0.0;
    for (int i = 0; i < 4; i++) {
        double sig = 1.0 / (1.0 + exp(-x[i]));
        plain -= w[i % 2] * (t[i] * log(sig) + (1 - t[i]) * log(1 - sig));
    }
    cr_assert(fabs(viap - plain / 4) < 1e-12, "bce %.17g vs %.17g", viap, plain / 4);
    yt_release(p);
    yt_release(self);
    yt_release(target);
    yt_release(weight);
    yt_release(pos);
    YT_ASSERT_NO_LEAKS();
}

/* Class and element weights are not differentiable, as in PyTorch (torch 1.13: "The function
 * 'nll_loss_forward' is not differentiable with respect to argument 'weight'"): with grad mode on,
 * a weight that requires grad is refused, even when nothing else requires grad; with grad mode off
 * the same call gives the value of the weight without grad. */
static yt_tensor *
weighted_loss(int which, yt_tensor *self, yt_tensor *probs, yt_tensor *index, yt_tensor *w)
{
    switch (which) {
    case 0:
        return yt_binary_cross_entropy_ex(probs, probs, w, "mean");
    case 1:
        return yt_binary_cross_entropy_with_logits_ex(self, probs, w, NULL, "sum");
    case 2:
        return yt_binary_cross_entropy_with_logits_ex(self, probs, NULL, w, "sum");
    case 3:
        return yt_nll_loss_ex(self, index, w, "mean", -100);
    default:
        return yt_cross_entropy_loss_ex(self, index, w, "mean", -100, 0.1);
    }
}

Test(loss, weights_that_require_grad_are_refused)
{
    const double x[6] = {0.3, -1.2, 0.05, 2.0, -0.4, 0.9}, q[6] = {0.1, 0.9, 0.3, 0.8, 0.5, 0.2};
    const double w[3] = {0.5, 2.0, 1.5};
    const int64_t xs[2] = {2, 3}, ws[1] = {3}, ts[1] = {2}, tv[2] = {2, 0};
    static const char *const messages[5] = {
        "binary_cross_entropy: weight requires grad, but binary_cross_entropy is not "
        "differentiable with respect to weight",
        "binary_cross_entropy_with_logits: weight requires grad, but "
        "binary_cross_entropy_with_logits is not differentiable with respect to weight",
        "binary_cross_entropy_with_logits: pos_weight requires grad, but "
        "binary_cross_entropy_with_logits is not differentiable with respect to pos_weight",
        "nll_loss: weight requires grad, but nll_loss is not differentiable with respect to weight",
        "cross_entropy_loss: weight requires grad, but cross_entropy_loss is not differentiable "
        "with respect to weight with class-index targets"};
    for (int which = 0; which < 5; which++) {
        for (int self_grad = 0; self_grad < 2; self_grad++) {
            yt_tensor *self = tensor_f64(x, xs, 2, self_grad), *weight = tensor_f64(w, ws, 1, true);
            yt_tensor *plain = tensor_f64(w, ws, 1, false);
            yt_tensor *probs = tensor_f64(q, xs, 2, false), *index = tensor_i64(tv, ts, 1);
            yt_clear_error();
            cr_assert_null(weighted_loss(which, self, probs, index, weight), "loss %d accepted",
                           which);
            cr_assert_eq(yt_errcode(), YT_ERR_VALUE, "loss %d: %s", which, yt_errmsg());
            cr_assert_str_eq(yt_errmsg(), messages[which]);
            yt_clear_error();
            bool prev = yt_set_grad_enabled(false);
            yt_tensor *off = weighted_loss(which, self, probs, index, weight);
            yt_set_grad_enabled(prev);
            yt_tensor *ref = weighted_loss(which, self, probs, index, plain);
            cr_assert_not_null(off, "loss %d, grad mode off: %s", which, yt_errmsg());
            cr_assert_not_null(ref, "loss %d: %s", which, yt_errmsg());
            cr_assert(!yt_requires_grad(off));
            cr_assert_eq(yt_item(off), yt_item(ref), "loss %d: %.17g vs %.17g", which, yt_item(off),
                         yt_item(ref));
            yt_release(off);
            yt_release(ref);
            yt_release(self);
            yt_release(weight);
            yt_release(plain);
            yt_release(probs);
            yt_release(index);
        }
    }
    YT_ASSERT_NO_LEAKS();
}

/* With class probabilities PyTorch differentiates cross_entropy in the weight: for the mean,
 * d/dw_c = -(1/N) sum_n t'_nc log_softmax(x)_nc with t' = (1 - ls) t + ls / C. */
static yt_tensor *
ce_probs_call(yt_tensor *const *in, int n, void *ctx)
{
    (void)n;
    return yt_cross_entropy_loss_ex(in[0], (yt_tensor *)ctx, in[1], "mean", -100, 0.1);
}

Test(loss, cross_entropy_probs_weight_gets_its_gradient)
{
    const double x[6] = {0.3, -1.2, 0.05, 2.0, -0.4, 0.9}, q[6] = {0.1, 0.6, 0.3, 0.25, 0.25, 0.5};
    const double w[3] = {0.5, 2.0, 1.5}, ls = 0.1;
    const int64_t xs[2] = {2, 3}, ws[1] = {3};
    yt_tensor *self = tensor_f64(x, xs, 2, true), *weight = tensor_f64(w, ws, 1, true);
    yt_tensor *probs = tensor_f64(q, xs, 2, false);
    yt_tensor *in[2] = {self, weight};
    yt_tensor *l = ce_probs_call(in, 2, probs);
    cr_assert_not_null(l, "%s", yt_errmsg());
    cr_assert_eq(yt_backward(l, NULL, NULL), YT_OK, "%s", yt_errmsg());
    yt_tensor *gw = yt_grad(weight);
    cr_assert_not_null(gw, "weight got no gradient");
    double got[3];
    cr_assert_eq(yt_tensor_copy_to(gw, got, sizeof got, YT_DTYPE_F64), YT_OK);
    for (int c = 0; c < 3; c++) {
        double want = 0.0;
        for (int r = 0; r < 2; r++) {
            const double *row = x + 3 * r;
            double m = fmax(row[0], fmax(row[1], row[2]));
            double lse = m + log(exp(row[0] - m) + exp(row[1] - m) + exp(row[2] - m));
            want -= ((1 - ls) * q[3 * r + c] + ls / 3) * (row[c] - lse) / 2;
        }
        cr_assert(fabs(got[c] - want) < 1e-12, "class %d: %.17g vs %.17g", c, got[c], want);
    }
    cr_assert_eq(yt_gradcheck(ce_probs_call, in, 2, probs, NULL), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(yt_gradgradcheck(ce_probs_call, in, 2, probs, NULL), YT_OK, "%s", yt_errmsg());
    yt_release(gw);
    yt_release(l);
    yt_release(self);
    yt_release(weight);
    yt_release(probs);
    YT_ASSERT_NO_LEAKS();
}

Test(loss, weight_and_shape_errors)
{
    const int64_t xs[2] = {2, 3}, ts[1] = {2}, w2[1] = {2}, w23[2] = {2, 3}, w4[1] = {4};
    yt_tensor *self = yt_zeros_ex(xs, 2, YT_DTYPE_F64, YT_DEVICE_NONE);
    yt_tensor *index = yt_zeros_ex(ts, 1, YT_DTYPE_I64, YT_DEVICE_NONE);
    yt_tensor *short_w = yt_ones_ex(w2, 1, YT_DTYPE_F64, YT_DEVICE_NONE);
    yt_tensor *f32_w = yt_ones_ex(xs + 1, 1, YT_DTYPE_F32, YT_DEVICE_NONE);
    yt_tensor *matrix_w = yt_ones_ex(w23, 2, YT_DTYPE_F64, YT_DEVICE_NONE);
    yt_tensor *wide = yt_ones_ex(w4, 1, YT_DTYPE_F64, YT_DEVICE_NONE);
    cr_assert_null(yt_nll_loss_ex(self, index, short_w, "mean", -100));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "nll_loss: weight must be 1-D with 3 elements (one per class)");
    cr_assert_null(yt_cross_entropy_loss_ex(self, index, short_w, "mean", -100, 0.0));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "cross_entropy_loss: weight must be 1-D with 3 elements");
    cr_assert_null(yt_cross_entropy_loss_ex(self, self, short_w, "mean", -100, 0.0));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "cross_entropy_loss: weight must be 1-D with 3 elements");
    cr_assert_null(yt_nll_loss_ex(self, index, f32_w, "mean", -100));
    YT_ASSERT_ERROR(YT_ERR_DTYPE, "nll_loss: ");
    cr_assert_null(yt_nll_loss_ex(self, index, NULL, "average", -100));
    YT_ASSERT_ERROR(YT_ERR_VALUE,
                    "nll_loss: reduction must be one of 'none', 'mean', 'sum', got 'average'");
    cr_assert_null(yt_cross_entropy_loss_ex(self, index, NULL, "mean", -100, 1.5));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "cross_entropy_loss: label_smoothing must be in [0, 1], got 1.5");
    /* element weights broadcast to self's shape, never beyond it */
    cr_assert_null(yt_binary_cross_entropy_with_logits_ex(self, self, wide, NULL, "mean"));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "binary_cross_entropy_with_logits: weight of shape [4] does not "
                                  "broadcast to self shape [2, 3]");
    cr_assert_null(yt_binary_cross_entropy_with_logits_ex(self, self, NULL, wide, "mean"));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "binary_cross_entropy_with_logits: pos_weight of shape [4]");
    yt_tensor *ok = yt_binary_cross_entropy_ex(self, self, matrix_w, "sum");
    cr_assert_not_null(ok, "%s", yt_errmsg());
    yt_release(ok);
    cr_assert_null(yt_binary_cross_entropy_with_logits_ex(self, short_w, NULL, NULL, "mean"));
    YT_ASSERT_ERROR(YT_ERR_SHAPE,
                    "binary_cross_entropy_with_logits: target shape [2] must equal self shape");
    yt_release(self);
    yt_release(index);
    yt_release(short_w);
    yt_release(f32_w);
    yt_release(matrix_w);
    yt_release(wide);
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
    YT_ASSERT_ERROR(YT_ERR_VALUE,
                    "cross_entropy_loss: target value 3 at index 1 is out of range [0, 3)");
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
    yt_tensor *l = yt_binary_cross_entropy_ex(self, target, NULL, "sum");
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
    yt_tensor *l = yt_binary_cross_entropy_with_logits_ex(self, target, NULL, NULL, "none");
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

/* Shape errors of the composite losses name the loss and its arguments, not the ops inside:
 * mse_loss / l1_loss said "sub: self.size(1)=5 cannot broadcast ...", cross_entropy a wrong
 * weight "cross_entropy_index: weight ..." and a floating target of the wrong shape a dtype. */
Test(loss, shape_errors_name_the_loss)
{
    const int64_t s35[2] = {3, 5}, s34[2] = {3, 4}, s15[2] = {1, 5}, s3[1] = {3}, s6[1] = {6};
    yt_tensor *x = yt_zeros(s35, 2), *t34 = yt_zeros(s34, 2), *t15 = yt_zeros(s15, 2);
    yt_tensor *idx = yt_zeros_ex(s3, 1, YT_DTYPE_I64, YT_DEVICE_NONE), *w6 = yt_ones(s6, 1);
    cr_assert_null(yt_mse_loss_ex(x, t34, "mean"));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "mse_loss: target of shape [3, 4] does not broadcast with self "
                                  "(the input) of shape [3, 5]: target.size(1)=4, self.size(1)=5");
    cr_assert_null(yt_l1_loss_ex(x, t34, "sum"));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "l1_loss: target of shape [3, 4] does not broadcast with self");
    yt_tensor *ok = yt_mse_loss_ex(x, t15, "mean"); /* broadcasts, as in PyTorch */
    cr_assert_not_null(ok, "%s", yt_errmsg());
    yt_release(ok);
    cr_assert_null(yt_cross_entropy_loss_ex(x, t34, NULL, "mean", -100, 0.0));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "cross_entropy_loss: a floating target holds class "
                                  "probabilities and must have self's shape [3, 5], got [3, 4]");
    cr_assert_null(yt_cross_entropy_loss_ex(x, idx, w6, "mean", -100, 0.0));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "cross_entropy_loss: weight must be 1-D with 5 elements (one "
                                  "per class), got shape [6]");
    yt_release(x), yt_release(t34), yt_release(t15), yt_release(idx), yt_release(w6);
    YT_ASSERT_NO_LEAKS();
}
