/* In-place writes of new values (uniform_, normal_, bernoulli_: derivatives.yaml's
 * `inplace_grad: zero`) on tensors with history: the old history gets a zero gradient, as in
 * PyTorch. The refusal by other not-differentiable in-place ops (floor_divide_) is a generated
 * error case (tests/unit/test_ops.c). */
#include "test_util.h"

static yt_tensor *
leaf3(double a, double b, double c)
{
    const int64_t n3 = 3;
    yt_tensor *t = test_from((const double[]){a, b, c}, &n3, 1, YT_DTYPE_F64);
    cr_assert_eq(yt_set_requires_grad(t, true), YT_OK);
    return t;
}

static void
backward_sum(yt_tensor *t)
{
    yt_tensor *s = yt_sum(t);
    cr_assert_eq(yt_backward(s, NULL, NULL), YT_OK, "%s", yt_errmsg());
    yt_release(s);
}

static void
expect_grad(yt_tensor *x, const double *want)
{
    const int64_t n3 = 3;
    yt_tensor *g = yt_grad(x);
    cr_assert_not_null(g, "x got no gradient (PyTorch gives zeros)");
    test_expect_values(g, want, 3, &n3, 1);
    yt_release(g);
}

/* y = x * 2; uniform_(y); sum(y): nothing of x is left in y. Before, x got [2, 2, 2]. */
Test(inplace_grad, uniform_gives_the_old_history_zero)
{
    yt_tensor *x = leaf3(1, 2, 3);
    yt_tensor *y = yt_mul_scalar(x, yt_int(2));
    cr_assert_eq(yt_uniform_ex_(y, 10.0, 11.0, NULL), YT_OK, "%s", yt_errmsg());
    int64_t n;
    double *v = test_values(y, &n);
    for (int64_t i = 0; i < n; i++)
        cr_assert(v[i] >= 10.0 && v[i] < 11.0, "uniform_ wrote %g", v[i]);
    free(v);
    cr_assert(yt_requires_grad(y), "y still requires grad, as in PyTorch");
    backward_sum(y);
    expect_grad(x, (const double[]){0, 0, 0});
    yt_release(y);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

/* Through a view: y = x * 2; normal_(y[1:]); sum(y) reaches x only at element 0. */
Test(inplace_grad, normal_into_a_view_zeroes_only_the_view)
{
    yt_tensor *x = leaf3(1, 2, 3);
    yt_tensor *y = yt_mul_scalar(x, yt_int(2));
    yt_tensor *tail = yt_narrow(y, 0, 1, 2);
    cr_assert_eq(yt_normal_(tail), YT_OK, "%s", yt_errmsg());
    cr_assert_str_eq(yt_grad_fn_name(y), "CopySlices");
    backward_sum(y);
    expect_grad(x, (const double[]){2, 0, 0});
    yt_release(tail);
    yt_release(y);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

/* A gradient that reaches the written tensor from a later op stops there too. */
Test(inplace_grad, bernoulli_then_mul)
{
    yt_tensor *x = leaf3(1, 2, 3);
    yt_tensor *w = leaf3(4, 5, 6);
    yt_tensor *y = yt_mul_scalar(x, yt_int(3));
    cr_assert_eq(yt_bernoulli_p_ex_(y, 1.0, NULL), YT_OK, "%s", yt_errmsg()); /* all ones */
    yt_tensor *z = yt_mul(y, w);
    backward_sum(z);
    expect_grad(x, (const double[]){0, 0, 0});
    expect_grad(w, (const double[]){1, 1, 1});
    yt_release(z);
    yt_release(y);
    yt_release(w);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

/* A leaf that requires grad is refused, as in PyTorch, and left as it was; grad mode off writes
 * it. */
Test(inplace_grad, leaf_is_refused_unless_grad_mode_is_off)
{
    yt_tensor *x = leaf3(1, 2, 3);
    yt_clear_error();
    cr_assert_eq(yt_uniform_(x), YT_ERR_STATE);
    cr_assert(strstr(yt_errmsg(), "uniform_: a leaf tensor that requires grad") == yt_errmsg(),
              "message: %s", yt_errmsg());
    const int64_t n3 = 3;
    test_expect_values(x, (const double[]){1, 2, 3}, 3, &n3, 1);
    yt_clear_error();
    bool prev = yt_set_grad_enabled(false);
    cr_assert_eq(yt_uniform_ex_(x, 5.0, 6.0, NULL), YT_OK, "%s", yt_errmsg());
    yt_set_grad_enabled(prev);
    int64_t n;
    double *v = test_values(x, &n);
    cr_assert(v[0] >= 5.0 && v[0] < 6.0, "uniform_ wrote %g", v[0]);
    free(v);
    cr_assert_null(yt_grad_fn_name(x), "still a leaf");
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}
