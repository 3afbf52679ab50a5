/* Autograd of in-place writes into views (runtime/autograd/view_inplace.c): the base, the view
 * and the other views of the base all see the write, as in PyTorch. */
#include "test_util.h"

static yt_tensor *
leaf(const double *v, const int64_t *sizes, int nd)
{
    yt_tensor *t = test_from(v, sizes, nd, YT_DTYPE_F64);
    cr_assert_eq(yt_set_requires_grad(t, true), YT_OK);
    return t;
}

/* Backward of sum(t), keeping the graph for a later backward. */
static void
backward_sum(yt_tensor *t)
{
    yt_tensor *s = yt_sum(t);
    const yt_backward_options keep = {.retain_graph = true};
    cr_assert_eq(yt_backward(s, NULL, &keep), YT_OK, "%s", yt_errmsg());
    yt_release(s);
}

/* Asserts x's gradient. */
static void
expect_grad(yt_tensor *x, const double *want, int64_t n)
{
    yt_tensor *g = yt_grad(x);
    test_expect_values(g, want, n, &n, 1);
    yt_release(g);
}

/* y = x * 1; y[0] *= 5; sum(y): the base's gradient passes through the write. */
Test(view_inplace, write_through_select_reaches_the_base)
{
    const int64_t n3 = 3;
    yt_tensor *x = leaf((const double[]){1, 2, 3}, &n3, 1);
    yt_tensor *y = yt_mul_scalar(x, yt_int(1));
    yt_tensor *y0 = yt_select(y, 0, 0);
    cr_assert_eq(yt_mul_scalar_(y0, yt_int(5)), YT_OK, "%s", yt_errmsg());
    test_expect_values(y, (const double[]){5, 2, 3}, 3, &n3, 1);
    cr_assert_str_eq(yt_grad_fn_name(y), "CopySlices");
    cr_assert_str_eq(yt_grad_fn_name(y0), "AsStridedBackward");
    backward_sum(y);
    expect_grad(x, (const double[]){5, 1, 1}, 3);
    yt_release(y0);
    yt_release(y);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

/* The written tensor's history is a view of the base's new history: backward from the view. */
Test(view_inplace, backward_from_the_written_view)
{
    const int64_t n4 = 4;
    yt_tensor *x = leaf((const double[]){1, 2, 3, 4}, &n4, 1);
    yt_tensor *y = yt_mul_scalar(x, yt_int(2));
    yt_tensor *mid = yt_narrow(y, 0, 1, 2);
    cr_assert_eq(yt_exp_(mid), YT_OK, "%s", yt_errmsg());
    backward_sum(mid); /* d/dx exp(2x) at x = 2, 3 */
    /* the loop's exp is libmvec's vector one, within a few ulp of libm's: compared so */
    const double want[4] = {0, 2 * exp(4), 2 * exp(6), 0};
    yt_tensor *g = yt_grad(x);
    int64_t n = 0;
    double *got = test_values(g, &n);
    cr_assert_eq(n, 4);
    for (int i = 0; i < 4; i++)
        cr_assert(fabs(got[i] - want[i]) <= 1e-14 * want[i], "element %d is %.17g, expected %.17g",
                  i, got[i], want[i]);
    free(got);
    yt_release(g);
    yt_release(mid);
    yt_release(y);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

/* The base does not require grad, the value written in does: y = [3, 3]; y[0] *= w[0]. */
Test(view_inplace, base_without_grad_takes_it_from_the_write)
{
    const int64_t n2 = 2;
    yt_tensor *w = leaf((const double[]){4, 5}, &n2, 1);
    yt_tensor *y = test_from((const double[]){3, 3}, &n2, 1, YT_DTYPE_F64);
    yt_tensor *y0 = yt_select(y, 0, 0), *w0 = yt_select(w, 0, 0);
    cr_assert_eq(yt_mul_(y0, w0), YT_OK, "%s", yt_errmsg());
    cr_assert(yt_requires_grad(y), "the base now depends on w");
    backward_sum(y);
    expect_grad(w, (const double[]){3, 0}, 2);
    yt_release(w0);
    yt_release(y0);
    yt_release(y);
    yt_release(w);
    YT_ASSERT_NO_LEAKS();
}

/* Views made before the write, of the base or of each other, see it when used afterwards, and a
 * view holding a value the node saved does not keep the graph alive (no leak). */
Test(view_inplace, earlier_views_see_the_write)
{
    const int64_t n3 = 3;
    yt_tensor *x = leaf((const double[]){1, 2, 3}, &n3, 1);
    yt_tensor *y = yt_mul_scalar(x, yt_int(1));
    yt_tensor *y0 = yt_select(y, 0, 0), *y1 = yt_select(y, 0, 1), *y2 = yt_select(y, 0, 2);
    /* y0 = x0 * x1: the node saves y1, a view of y */
    cr_assert_eq(yt_mul_(y0, y1), YT_OK, "%s", yt_errmsg());
    /* y2 was made before the write: y2 * y0 = x2 * x0 * x1 */
    yt_tensor *p = yt_mul(y2, y0);
    backward_sum(p);
    expect_grad(x, (const double[]){6, 3, 2}, 3);
    yt_zero_grad(x);
    /* a backward through the write now fails, as in PyTorch: y *= 3 wrote over the saved y1 */
    cr_assert_eq(yt_mul_scalar_(y, yt_int(3)), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(yt_backward(y1, NULL, NULL), YT_ERR_STATE);
    YT_ASSERT_ERROR(YT_ERR_STATE, "mul: saved tensor 'other' was modified by an in-place "
                                  "operation: version 2, expected 1");
    /* in place on the base: z *= 3, then backward from z1, made before */
    yt_tensor *z = yt_mul_scalar(x, yt_int(1)), *z1 = yt_select(z, 0, 1);
    cr_assert_eq(yt_mul_scalar_(z, yt_int(3)), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(yt_backward(z1, NULL, NULL), YT_OK, "%s", yt_errmsg());
    expect_grad(x, (const double[]){0, 3, 0}, 3);
    yt_release(z1);
    yt_release(z);
    yt_release(p);
    yt_release(y2);
    yt_release(y1);
    yt_release(y0);
    yt_release(y);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

/* Finite differences agree: a transposed view written with another input, a slice of a slice
 * written with a saved input of its own, then the base used whole. */
static yt_tensor *
writes_into_views(yt_tensor *const *in, int n, void *ctx)
{
    (void)n, (void)ctx;
    yt_tensor *y = yt_mul(in[0], in[0]); /* [3, 4] */
    yt_tensor *yt = yt_t(y);             /* [4, 3] */
    yt_tensor *rows = yt_narrow(yt, 0, 1, 2), *cell = yt_narrow(rows, 1, 0, 2);
    yt_tensor *w = yt_narrow(in[1], 0, 0, 2);
    yt_status st = yt_addcmul_(cell, w, w); /* [2, 2] += w * w, w broadcast along dim 0 */
    if (st == YT_OK)
        st = yt_sigmoid_(rows);
    yt_tensor *out = st == YT_OK ? yt_mul(y, in[0]) : NULL;
    yt_release(w);
    yt_release(cell);
    yt_release(rows);
    yt_release(yt);
    yt_release(y);
    return out;
}

Test(view_inplace, gradcheck_through_transposed_and_nested_views)
{
    const int64_t s34[2] = {3, 4}, n3 = 3;
    yt_tensor *x = leaf(
        (const double[]){0.1, -0.2, 0.3, 0.4, -0.5, 0.6, 0.7, 0.8, -0.9, 1.0, 1.1, -1.2}, s34, 2);
    yt_tensor *w = leaf((const double[]){0.5, -1.5, 2.0}, &n3, 1);
    yt_tensor *in[2] = {x, w};
    cr_assert_eq(yt_gradcheck(writes_into_views, in, 2, NULL, NULL), YT_OK, "%s", yt_errmsg());
    yt_release(w);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

/* As in PyTorch: a view of a leaf that requires grad can't be written in place while grad mode
 * is on; with it off the write is allowed. A backward with create_graph through such a write is
 * refused: these nodes compute their gradients with plain copies. */
Test(view_inplace, refusals)
{
    const int64_t n2 = 2;
    yt_tensor *x = leaf((const double[]){1, 2}, &n2, 1);
    yt_tensor *x0 = yt_select(x, 0, 0);
    cr_assert_eq(yt_mul_scalar_(x0, yt_int(2)), YT_ERR_STATE);
    YT_ASSERT_ERROR(YT_ERR_STATE, "mul_: a view of a leaf tensor that requires grad can't be "
                                  "modified in place");
    bool was = yt_set_grad_enabled(false);
    cr_assert_eq(yt_mul_scalar_(x0, yt_int(2)), YT_OK, "%s", yt_errmsg());
    yt_set_grad_enabled(was);
    test_expect_values(x, (const double[]){2, 2}, 2, &n2, 1);

    /* a view made with grad mode off has no base to rebase: writing it with grad mode on is
     * refused when the write is recorded */
    was = yt_set_grad_enabled(false);
    yt_tensor *z = yt_mul_scalar(x, yt_int(1)), *z0 = yt_select(z, 0, 0);
    yt_set_grad_enabled(was);
    cr_assert_eq(yt_mul_(z0, x0), YT_ERR_STATE);
    YT_ASSERT_ERROR(YT_ERR_STATE, "mul_: self is a view made with grad mode off");
    yt_release(z0);
    yt_release(z);

    yt_tensor *y = yt_mul(x, x);
    yt_tensor *y1 = yt_select(y, 0, 1);
    cr_assert_eq(yt_mul_scalar_(y1, yt_int(3)), YT_OK, "%s", yt_errmsg());
    yt_tensor *s = yt_sum(y);
    yt_backward_options twice = {.retain_graph = true, .create_graph = true};
    cr_assert_eq(yt_backward(s, NULL, &twice), YT_ERR_STATE);
    YT_ASSERT_ERROR(
        YT_ERR_STATE,
        "backward: create_graph through mul written in place into a view is not supported");
    yt_release(s);
    yt_release(y1);
    yt_release(y);
    yt_release(x0);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}
