/* The autograd engine, one test per feature: implicit and explicit root gradients, accumulation,
 * retain_graph, create_graph, no-grad, detach, version checks, in-place on leaves, anomaly mode,
 * gradcheck, shared inputs, zero-size tensors and deep graphs. Every test ends by proving that
 * nothing leaked. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "test_util.h"

/* An f64 tensor of `values` with `sizes`, requiring grad when asked. */
static yt_tensor *
tensor_f64(const double *values, const int64_t *sizes, int dim, bool requires_grad)
{
    yt_tensor *t = yt_tensor_from_data(values, sizes, dim, YT_DTYPE_F64);
    cr_assert_not_null(t, "tensor_from_data: %s", yt_errmsg());
    if (requires_grad)
        cr_assert_eq(yt_set_requires_grad(t, true), YT_OK, "%s", yt_errmsg());
    return t;
}

static yt_tensor *
vec(const double *values, int64_t n, bool requires_grad)
{
    return tensor_f64(values, &n, 1, requires_grad);
}

/* Asserts t's gradient holds `expect` (n values), then drops the reference. */
static void
assert_grad(yt_tensor *t, const double *expect, int64_t n)
{
    yt_tensor *g = yt_grad(t);
    cr_assert_not_null(g, "no gradient was accumulated");
    cr_assert_eq(yt_tensor_numel(g), n, "grad has %lld elements, expected %lld",
                 (long long)yt_tensor_numel(g), (long long)n);
    double got[16];
    cr_assert_eq(yt_tensor_copy_to(g, got, sizeof got, YT_DTYPE_F64), YT_OK, "%s", yt_errmsg());
    for (int64_t i = 0; i < n; i++)
        cr_assert(fabs(got[i] - expect[i]) <= 1e-12 * (1 + fabs(expect[i])),
                  "grad element %lld is %.17g, expected %.17g", (long long)i, got[i], expect[i]);
    yt_release(g);
}

Test(autograd, implicit_scalar_grad)
{
    const double xv[3] = {1, 2, 3};
    yt_tensor *x = vec(xv, 3, true);
    yt_tensor *sq = yt_mul(x, x);
    yt_tensor *y = yt_sum(sq);
    cr_assert_str_eq(yt_grad_fn_name(y), "SumBackward");
    cr_assert_eq(yt_backward(y, NULL, NULL), YT_OK, "%s", yt_errmsg());
    const double expect[3] = {2, 4, 6};
    assert_grad(x, expect, 3);

    /* a root with more than one element needs an explicit grad */
    cr_assert_eq(yt_backward(sq, NULL, NULL), YT_ERR_SHAPE);
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "backward: grad can be omitted only for single-element roots");
    yt_release(y);
    yt_release(sq);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

Test(autograd, explicit_grad)
{
    const double xv[4] = {1, 2, 3, 4}, gv[4] = {0.5, -1, 2, 10};
    const int64_t sizes[2] = {2, 2};
    yt_tensor *x = tensor_f64(xv, sizes, 2, true);
    yt_tensor *y = yt_mul_scalar(x, yt_float(3));
    yt_tensor *g = tensor_f64(gv, sizes, 2, false);
    cr_assert_eq(yt_backward(y, g, NULL), YT_OK, "%s", yt_errmsg());
    const double expect[4] = {1.5, -3, 6, 30};
    assert_grad(x, expect, 4);

    yt_tensor *wrong = vec(gv, 4, false);
    cr_assert_eq(yt_backward(y, wrong, NULL), YT_ERR_SHAPE);
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "backward: grad has shape [4] but root has shape [2, 2]");
    yt_release(wrong);
    yt_release(g);
    yt_release(y);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

Test(autograd, accumulates_across_backwards)
{
    const double xv[2] = {1, -2};
    yt_tensor *x = vec(xv, 2, true);
    for (int round = 0; round < 2; round++) {
        yt_tensor *twice = yt_mul_scalar(x, yt_float(2));
        yt_tensor *y = yt_sum(twice);
        cr_assert_eq(yt_backward(y, NULL, NULL), YT_OK, "%s", yt_errmsg());
        yt_release(y);
        yt_release(twice);
    }
    const double expect[2] = {4, 4};
    assert_grad(x, expect, 2);
    yt_zero_grad(x);
    cr_assert_null(yt_grad(x));
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

Test(autograd, retain_graph_and_second_backward_error)
{
    const double xv[2] = {3, 4};
    yt_tensor *x = vec(xv, 2, true);
    yt_tensor *sq = yt_mul(x, x);
    yt_tensor *y = yt_sum(sq);
    yt_backward_options retain = {.retain_graph = true};
    cr_assert_eq(yt_backward(y, NULL, &retain), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(yt_backward(y, NULL, NULL), YT_OK, "%s", yt_errmsg());
    const double expect[2] = {12, 16};
    assert_grad(x, expect, 2);

    cr_assert_eq(yt_backward(y, NULL, NULL), YT_ERR_STATE);
    YT_ASSERT_ERROR(YT_ERR_STATE, "mul: tried to backward through the graph a second time");
    cr_assert(strstr(yt_errmsg(), "retain_graph=true") != NULL, "message: %s", yt_errmsg());
    assert_grad(x, expect, 2); /* the failed backward left the gradient alone */
    yt_release(y);
    yt_release(sq);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

Test(autograd, create_graph_double_backward)
{
    const double xv[1] = {3};
    yt_tensor *x = tensor_f64(xv, NULL, 0, true);
    yt_tensor *y = yt_pow(x, yt_int(3));
    yt_backward_options create = {.create_graph = true};
    cr_assert_eq(yt_backward(y, NULL, &create), YT_OK, "%s", yt_errmsg());
    yt_tensor *dy = yt_grad(x);
    cr_assert(yt_requires_grad(dy), "with create_graph the gradient keeps its graph");
    cr_assert(fabs(yt_item(dy) - 27.0) < 1e-12, "dy/dx = 3x^2 = 27, got %.17g", yt_item(dy));
    yt_zero_grad(x); /* x.grad refers back to x through its graph: drop it before reuse */
    cr_assert_eq(yt_backward(dy, NULL, NULL), YT_OK, "%s", yt_errmsg());
    yt_tensor *d2y = yt_grad(x);
    cr_assert(fabs(yt_item(d2y) - 18.0) < 1e-12, "d2y/dx2 = 6x = 18, got %.17g", yt_item(d2y));
    cr_assert(!yt_requires_grad(d2y), "without create_graph the gradient is detached");
    yt_release(d2y);
    yt_release(dy);
    yt_release(y);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

Test(autograd, double_backward_through_saved_output)
{
    /* exp saves its result; d2/dx2 exp(x) = exp(x) needs the saved output re-attached */
    const double xv[1] = {0.5};
    yt_tensor *x = tensor_f64(xv, NULL, 0, true);
    yt_tensor *y = yt_exp(x);
    yt_backward_options create = {.create_graph = true};
    cr_assert_eq(yt_backward(y, NULL, &create), YT_OK, "%s", yt_errmsg());
    yt_tensor *dy = yt_grad(x);
    yt_zero_grad(x);
    cr_assert_eq(yt_backward(dy, NULL, NULL), YT_OK, "%s", yt_errmsg());
    yt_tensor *d2y = yt_grad(x);
    cr_assert(fabs(yt_item(d2y) - exp(0.5)) < 1e-12, "got %.17g", yt_item(d2y));
    yt_release(d2y);
    yt_release(dy);
    yt_release(y);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

Test(autograd, no_grad)
{
    const double xv[2] = {1, 2};
    yt_tensor *x = vec(xv, 2, true);
    cr_assert(yt_grad_enabled());
    bool prev = yt_set_grad_enabled(false);
    cr_assert(prev);
    yt_tensor *y = yt_mul_scalar(x, yt_float(2));
    cr_assert(yt_set_grad_enabled(prev) == false);
    cr_assert(yt_grad_enabled());
    cr_assert(!yt_requires_grad(y), "ops under no-grad are not recorded");
    cr_assert(yt_is_leaf(y));
    cr_assert_null(yt_grad_fn_name(y));
    cr_assert_eq(yt_backward(y, NULL, NULL), YT_ERR_STATE);
    YT_ASSERT_ERROR(YT_ERR_STATE, "backward: root does not require grad");
    yt_release(y);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

Test(autograd, detach)
{
    const double xv[2] = {1, 2};
    yt_tensor *x = vec(xv, 2, true);
    yt_tensor *y = yt_mul_scalar(x, yt_float(2));
    yt_tensor *d = yt_detach(y);
    cr_assert(!yt_requires_grad(d));
    cr_assert(yt_is_leaf(d));
    cr_assert_eq(yt_tensor_data(d), yt_tensor_data(y), "detach shares storage");
    cr_assert(!yt_is_leaf(y));
    /* a product with the detached tensor sends no gradient through it */
    yt_tensor *xd = yt_mul(x, d);
    yt_tensor *z = yt_sum(xd);
    cr_assert_eq(yt_backward(z, NULL, NULL), YT_OK, "%s", yt_errmsg());
    const double expect[2] = {2, 4};
    assert_grad(x, expect, 2);
    yt_release(z);
    yt_release(xd);
    yt_release(d);
    yt_release(y);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

Test(autograd, saved_tensor_modified_in_place)
{
    const double xv[2] = {1, 2}, wv[2] = {3, 4};
    yt_tensor *x = vec(xv, 2, true);
    yt_tensor *w = vec(wv, 2, false);
    cr_assert_eq(yt_mul_scalar_(w, yt_float(1)), YT_OK, "%s", yt_errmsg()); /* version 1 */
    yt_tensor *y = yt_mul(x, w); /* saves w as 'other' at version 1 */
    yt_tensor *z = yt_sum(y);
    cr_assert_eq(yt_mul_scalar_(w, yt_float(2)), YT_OK, "%s", yt_errmsg()); /* version 2 */
    cr_assert_eq(yt_backward(z, NULL, NULL), YT_ERR_STATE);
    YT_ASSERT_ERROR(YT_ERR_STATE, "mul: saved tensor 'other' was modified by an in-place "
                                  "operation: version 2, expected 1");
    cr_assert_null(yt_grad(x));
    yt_release(z);
    yt_release(y);
    yt_release(w);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

Test(autograd, in_place_on_leaf_refused)
{
    const double xv[2] = {1, 2};
    yt_tensor *x = vec(xv, 2, true);
    cr_assert_eq(yt_mul_scalar_(x, yt_float(2)), YT_ERR_STATE);
    YT_ASSERT_ERROR(YT_ERR_STATE, "mul_: a leaf tensor that requires grad can't be modified in "
                                  "place");
    double *data = yt_tensor_data(x);
    cr_assert_eq(data[0], 1.0, "the refused op wrote nothing");
    /* allowed with grad mode off (an optimizer step) */
    bool prev = yt_set_grad_enabled(false);
    cr_assert_eq(yt_mul_scalar_(x, yt_float(2)), YT_OK, "%s", yt_errmsg());
    yt_set_grad_enabled(prev);
    cr_assert_eq(data[1], 4.0);
    cr_assert(yt_is_leaf(x));
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

Test(autograd, in_place_on_non_leaf_rebases_history)
{
    const double xv[2] = {1, 2};
    yt_tensor *x = vec(xv, 2, true);
    yt_tensor *y = yt_mul_scalar(x, yt_float(2));
    cr_assert_eq(yt_mul_scalar_(y, yt_float(5)), YT_OK, "%s", yt_errmsg());
    yt_tensor *z = yt_sum(y);
    cr_assert_eq(yt_backward(z, NULL, NULL), YT_OK, "%s", yt_errmsg());
    const double expect[2] = {10, 10};
    assert_grad(x, expect, 2);
    yt_release(z);
    yt_release(y);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

Test(autograd, anomaly_mode_names_the_op)
{
    const double xv[2] = {-1, 4};
    yt_tensor *x = vec(xv, 2, true);
    yt_tensor *r = yt_sqrt(x); /* sqrt(-1) is NaN, and so is its derivative */
    yt_tensor *y = yt_sum(r);
    yt_backward_options retain = {.retain_graph = true};
    cr_assert_eq(yt_backward(y, NULL, &retain), YT_OK, "without anomaly mode NaN flows silently");
    yt_zero_grad(x);
    yt_set_anomaly_enabled(true);
    yt_status st = yt_backward(y, NULL, NULL);
    yt_set_anomaly_enabled(false);
    cr_assert_eq(st, YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "backward of sqrt (SqrtBackward) produced NaN in its gradient "
                                  "for input 0");
    cr_assert_null(yt_grad(x));
    yt_release(y);
    yt_release(r);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

/* x * w + exp(x) * w */
static yt_tensor *
smooth_fn(yt_tensor *const *in, int n, void *ctx)
{
    (void)n;
    (void)ctx;
    yt_tensor *a = yt_mul(in[0], in[1]);
    yt_tensor *e = yt_exp(in[0]);
    yt_tensor *b = yt_mul(e, in[1]);
    yt_tensor *r = yt_add(a, b);
    yt_release(a);
    yt_release(e);
    yt_release(b);
    return r;
}

Test(autograd, gradcheck_passes)
{
    const double xv[6] = {0.1, -0.5, 0.9, 1.2, -1.3, 0.3}, wv[3] = {0.7, -0.2, 1.5};
    const int64_t xs[2] = {2, 3};
    yt_tensor *in[2] = {tensor_f64(xv, xs, 2, true), vec(wv, 3, true)};
    cr_assert_eq(yt_gradcheck(smooth_fn, in, 2, NULL, NULL), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(yt_gradgradcheck(smooth_fn, in, 2, NULL, NULL), YT_OK, "%s", yt_errmsg());
    cr_assert_null(yt_grad(in[0]), "gradcheck works on copies: the caller's .grad is untouched");
    /* a non-contiguous input, and one that does not require grad */
    const double wv2[2] = {0.4, -0.9};
    yt_tensor *in2[2] = {yt_t(in[0]), vec(wv2, 2, false)};
    cr_assert(!yt_tensor_is_contiguous(in2[0]));
    cr_assert_eq(yt_gradcheck(smooth_fn, in2, 2, NULL, NULL), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(yt_gradgradcheck(smooth_fn, in2, 2, NULL, NULL), YT_OK, "%s", yt_errmsg());
    yt_release(in2[0]);
    yt_release(in2[1]);
    yt_release(in[0]);
    yt_release(in[1]);
    YT_ASSERT_NO_LEAKS();
}

/* x * detach(x): the detached factor hides half the derivative from autograd */
static yt_tensor *
wrong_fn(yt_tensor *const *in, int n, void *ctx)
{
    (void)n;
    (void)ctx;
    yt_tensor *d = yt_detach(in[0]);
    yt_tensor *r = yt_mul(in[0], d);
    yt_release(d);
    return r;
}

Test(autograd, gradcheck_detects_a_wrong_gradient)
{
    const double xv[3] = {1, 2, 3};
    yt_tensor *x = vec(xv, 3, true);
    cr_assert_eq(yt_gradcheck(wrong_fn, &x, 1, NULL, NULL), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "gradcheck: input 0 element 0: analytic 1 vs numerical 2 "
                                  "(output element 0)");
    yt_tensor *f32 = yt_to(x, YT_DTYPE_F32);
    yt_tensor *in[1] = {f32};
    cr_assert_eq(yt_gradcheck(wrong_fn, in, 1, NULL, NULL), YT_ERR_DTYPE);
    YT_ASSERT_ERROR(YT_ERR_DTYPE, "gradcheck: input 0 requires grad and must be f64");
    yt_release(f32);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

Test(autograd, diamond_graph)
{
    const double xv[2] = {1, -3};
    yt_tensor *x = vec(xv, 2, true);
    yt_tensor *a = yt_mul_scalar(x, yt_float(2));
    yt_tensor *b = yt_mul_scalar(x, yt_float(3));
    yt_tensor *c = yt_mul(a, b); /* 6 x^2 */
    yt_tensor *d = yt_add(c, a); /* a reaches d along two paths */
    yt_tensor *y = yt_sum(d);
    cr_assert_eq(yt_backward(y, NULL, NULL), YT_OK, "%s", yt_errmsg());
    const double expect[2] = {12 * 1 + 2, 12 * -3 + 2};
    assert_grad(x, expect, 2);
    yt_release(y);
    yt_release(d);
    yt_release(c);
    yt_release(b);
    yt_release(a);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

static yt_tensor *
double_fn(yt_tensor *const *in, int n, void *ctx)
{
    (void)n;
    (void)ctx;
    return yt_mul(in[0], in[0]);
}

Test(autograd, zero_size_tensors)
{
    const int64_t sizes[2] = {0, 3};
    yt_tensor *x = tensor_f64(NULL, sizes, 2, true);
    yt_tensor *twice = yt_mul_scalar(x, yt_float(2));
    yt_tensor *y = yt_sum(twice);
    cr_assert_eq(yt_item(y), 0.0);
    cr_assert_eq(yt_backward(y, NULL, NULL), YT_OK, "%s", yt_errmsg());
    yt_tensor *g = yt_grad(x);
    cr_assert_not_null(g);
    cr_assert_eq(yt_tensor_dim(g), 2);
    cr_assert_eq(yt_tensor_size(g, 0), 0);
    cr_assert_eq(yt_tensor_size(g, 1), 3);
    yt_release(g);
    cr_assert_eq(yt_gradcheck(double_fn, &x, 1, NULL, NULL), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(yt_gradgradcheck(double_fn, &x, 1, NULL, NULL), YT_OK, "%s", yt_errmsg());
    yt_release(y);
    yt_release(twice);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

Test(autograd, leaf_root)
{
    const double xv[2] = {1, 2}, gv[2] = {5, 6};
    yt_tensor *x = vec(xv, 2, true);
    yt_tensor *g = vec(gv, 2, false);
    cr_assert_eq(yt_backward(x, g, NULL), YT_OK, "%s", yt_errmsg());
    /* the stored gradient is a copy, not the caller's tensor: writing g leaves x.grad alone */
    double *gdata = yt_tensor_data(g);
    gdata[0] = 1000;
    const double first[2] = {5, 6};
    assert_grad(x, first, 2);
    gdata[0] = 5;
    cr_assert_eq(yt_backward(x, g, NULL), YT_OK, "%s", yt_errmsg());
    const double expect[2] = {10, 12};
    assert_grad(x, expect, 2);
    yt_release(g);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

Test(autograd, requires_grad_rules)
{
    const int64_t iv[2] = {1, 2};
    int64_t n = 2;
    yt_tensor *i = yt_tensor_from_data(iv, &n, 1, YT_DTYPE_I64);
    cr_assert_eq(yt_set_requires_grad(i, true), YT_ERR_DTYPE);
    YT_ASSERT_ERROR(YT_ERR_DTYPE,
                    "set_requires_grad: only floating tensors can require grad, got i64");
    const double xv[2] = {1, 2};
    yt_tensor *x = vec(xv, 2, true);
    yt_tensor *y = yt_mul_scalar(x, yt_float(2));
    cr_assert_eq(yt_set_requires_grad(y, false), YT_ERR_STATE);
    YT_ASSERT_ERROR(YT_ERR_STATE, "set_requires_grad: only leaf tensors");
    yt_release(y);
    yt_release(x);
    yt_release(i);
    YT_ASSERT_NO_LEAKS();
}

Test(autograd, deep_chain_needs_no_recursion)
{
    /* long enough that a recursive walk or a recursive free would overflow the stack */
    const double xv[1] = {1};
    yt_tensor *x = tensor_f64(xv, NULL, 0, true);
    yt_tensor *y = yt_retain(x);
    for (int i = 0; i < 200000; i++) {
        yt_tensor *next = yt_add_scalar(y, yt_float(1));
        yt_release(y);
        y = next;
    }
    cr_assert_eq(yt_backward(y, NULL, NULL), YT_OK, "%s", yt_errmsg());
    const double expect[1] = {1};
    assert_grad(x, expect, 1);
    yt_release(y);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

Test(autograd, scope_does_not_own_backward_temporaries)
{
    const double xv[2] = {1, 2};
    yt_tensor *x = vec(xv, 2, true);
    cr_assert_eq(yt_scope_begin(), YT_OK);
    yt_tensor *y = yt_sum(yt_mul(x, x));
    cr_assert_eq(yt_backward(y, NULL, NULL), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(yt_scope_end(), YT_OK);
    const double expect[2] = {2, 4};
    assert_grad(x, expect, 2); /* the leaf owns its gradient; the scope did not take it */
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

/* Only floating tensors carry gradients: an op whose result is bool or integer stays out of the
 * graph even when an input requires grad (masked_fill of a bool self with a value that does:
 * the result used to require grad, and backward through it failed in sum_to of a bool). */
Test(autograd, results_that_are_not_floating_do_not_require_grad)
{
    const int64_t s[1] = {3};
    const double mv[3] = {1, 0, 1};
    yt_tensor *self = yt_zeros_ex(s, 1, YT_DTYPE_BOOL, YT_DEVICE_NONE);
    yt_tensor *mask = test_from(mv, s, 1, YT_DTYPE_BOOL);
    yt_tensor *value = yt_ones(NULL, 0);
    cr_assert_eq(yt_set_requires_grad(value, true), YT_OK);
    yt_tensor *r = yt_masked_fill_tensor(self, mask, value);
    cr_assert_not_null(r, "%s", yt_errmsg());
    cr_assert_eq(yt_tensor_dtype(r), YT_DTYPE_BOOL);
    cr_assert_not(yt_requires_grad(r), "a bool result must not require grad");
    test_expect_values(r, mv, 3, s, 1);
    /* a floating result of the same inputs still records */
    yt_tensor *f = yt_zeros(s, 1);
    yt_tensor *rf = yt_masked_fill_tensor(f, mask, value);
    cr_assert(yt_requires_grad(rf));
    yt_tensor *sum = yt_sum(rf);
    cr_assert_eq(yt_backward(sum, NULL, NULL), YT_OK, "%s", yt_errmsg());
    yt_tensor *grad = yt_grad(value);
    cr_assert_float_eq(yt_item(grad), 2.0, 0.0, "two elements take the value");
    yt_release(grad), yt_release(sum), yt_release(rf), yt_release(f), yt_release(r);
    yt_release(value), yt_release(mask), yt_release(self);
    YT_ASSERT_NO_LEAKS();
}
