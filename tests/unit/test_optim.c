/* Optimizers and gradient clipping: option validation, parameter checks, param groups,
 * zero_grad, the step's autograd contract (version counters, scopes, grad mode), state dicts
 * (round trips that continue bit-identically, reordered parameters, every load error) and
 * clipping. Values against PyTorch are in tests/optim/test_optim_vs_torch.py. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "test_util.h"

/* A leaf f64 parameter of n values requiring grad. */
static yt_tensor *
param(const double *v, int64_t n)
{
    yt_tensor *t = yt_tensor_from_data(v, &n, 1, YT_DTYPE_F64);
    cr_assert_not_null(t, "%s", yt_errmsg());
    cr_assert_eq(yt_set_requires_grad(t, true), YT_OK, "%s", yt_errmsg());
    return t;
}

/* Accumulates `g` (n values) into p's gradient through autograd: backward of sum(p * g). */
static void
set_grad(yt_tensor *p, const double *g)
{
    int64_t n = yt_tensor_numel(p);
    yt_tensor *gt = yt_tensor_from_data(g, &n, 1, yt_tensor_dtype(p));
    yt_tensor *prod = yt_mul(p, gt);
    yt_tensor *loss = yt_sum(prod);
    cr_assert_eq(yt_backward(loss, NULL, NULL), YT_OK, "%s", yt_errmsg());
    yt_release(loss);
    yt_release(prod);
    yt_release(gt);
}

static void
values(yt_tensor *t, double *out, int64_t n)
{
    cr_assert_eq(yt_tensor_copy_to(t, out, sizeof(double) * (size_t)n, YT_DTYPE_F64), YT_OK, "%s",
                 yt_errmsg());
}

/* A list of one parameter under `name`; the list holds the reference passed in. */
static yt_named_tensors
list1(const char *name, yt_tensor *t)
{
    yt_named_tensors l = YT_NAMED_TENSORS_INIT;
    cr_assert_eq(yt_named_tensors_add(&l, name, t), YT_OK);
    yt_release(t);
    return l;
}

/* ---------------------------------------------------------------- options */

Test(optim, sgd_option_errors)
{
    const double v[2] = {1, 2};
    yt_named_tensors ps = list1("w", param(v, 2));
    struct {
        yt_sgd_options o;
        const char *msg;
    } cases[] = {
        {{.lr = -0.1}, "sgd_new: lr=-0.1 must be >= 0"},
        {{.lr = NAN}, "sgd_new: lr=nan must be finite"},
        {{.lr = 0.1, .momentum = -1}, "sgd_new: momentum=-1 must be >= 0"},
        {{.lr = 0.1, .weight_decay = -1e-3}, "sgd_new: weight_decay=-0.001 must be >= 0"},
        {{.lr = 0.1, .nesterov = true}, "sgd_new: nesterov needs momentum > 0 and dampening == 0"},
        {{.lr = 0.1, .momentum = 0.9, .dampening = 0.1, .nesterov = true},
         "sgd_new: nesterov needs momentum > 0 and dampening == 0"},
        {{.lr = INFINITY}, "sgd_new: lr=inf must be finite"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_assert_null(yt_sgd_new(&ps, &cases[i].o));
        YT_ASSERT_ERROR(YT_ERR_VALUE, cases[i].msg);
    }
    cr_assert_null(yt_sgd_new(&ps, NULL));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "sgd_new: options is NULL (SGD has no default learning rate)");
    yt_named_tensors_clear(&ps);
    YT_ASSERT_NO_LEAKS();
}

Test(optim, adam_rmsprop_adagrad_option_errors)
{
    const double v[2] = {1, 2};
    yt_named_tensors ps = list1("w", param(v, 2));
    yt_adam_options a = YT_ADAM_DEFAULTS;
    a.beta1 = 1.0;
    cr_assert_null(yt_adam_new(&ps, &a));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "adam_new: beta1=1 must be in [0, 1)");
    a = (yt_adam_options)YT_ADAM_DEFAULTS;
    a.beta2 = -0.5;
    cr_assert_null(yt_adamw_new(&ps, &a));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "adamw_new: beta2=-0.5 must be in [0, 1)");
    a = (yt_adam_options)YT_ADAM_DEFAULTS;
    a.eps = -1e-8;
    cr_assert_null(yt_adam_new(&ps, &a));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "adam_new: eps=-1e-08 must be >= 0");
    a = (yt_adam_options)YT_ADAM_DEFAULTS;
    a.weight_decay = -1;
    cr_assert_null(yt_adam_new(&ps, &a));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "adam_new: weight_decay=-1 must be >= 0");

    yt_rmsprop_options r = YT_RMSPROP_DEFAULTS;
    r.alpha = -0.1;
    cr_assert_null(yt_rmsprop_new(&ps, &r));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "rmsprop_new: alpha=-0.1 must be >= 0");
    r = (yt_rmsprop_options)YT_RMSPROP_DEFAULTS;
    r.momentum = -0.1;
    cr_assert_null(yt_rmsprop_new(&ps, &r));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "rmsprop_new: momentum=-0.1 must be >= 0");

    yt_adagrad_options g = YT_ADAGRAD_DEFAULTS;
    g.lr_decay = -1;
    cr_assert_null(yt_adagrad_new(&ps, &g));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "adagrad_new: lr_decay=-1 must be >= 0");
    g = (yt_adagrad_options)YT_ADAGRAD_DEFAULTS;
    g.initial_accumulator_value = -1;
    cr_assert_null(yt_adagrad_new(&ps, &g));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "adagrad_new: initial_accumulator_value=-1 must be >= 0");

    /* NULL options: PyTorch's defaults */
    yt_optimizer *opts[4] = {yt_adam_new(&ps, NULL), yt_adamw_new(&ps, NULL),
                             yt_rmsprop_new(&ps, NULL), yt_adagrad_new(&ps, NULL)};
    const double lrs[4] = {1e-3, 1e-3, 1e-2, 1e-2};
    const char *names[4] = {"Adam", "AdamW", "RMSprop", "Adagrad"};
    for (int i = 0; i < 4; i++) {
        cr_assert_not_null(opts[i], "%s", yt_errmsg());
        cr_assert_eq(yt_optimizer_get_lr(opts[i], 0), lrs[i]);
        cr_assert_str_eq(yt_optimizer_name(opts[i]), names[i]);
        yt_optimizer_release(opts[i]);
    }
    yt_adam_options got;
    yt_optimizer *w = yt_adamw_new(&ps, NULL);
    cr_assert_eq(yt_optimizer_get_options(w, 0, &got, sizeof got), YT_OK);
    cr_assert_eq(got.weight_decay, 1e-2);
    cr_assert_eq(got.beta2, 0.999);
    yt_optimizer_release(w);
    yt_named_tensors_clear(&ps);
    YT_ASSERT_NO_LEAKS();
}

Test(optim, parameter_errors)
{
    const yt_sgd_options o = {.lr = 0.1};
    yt_named_tensors empty = YT_NAMED_TENSORS_INIT;
    cr_assert_null(yt_sgd_new(NULL, &o));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "sgd_new: params is NULL");
    cr_assert_null(yt_sgd_new(&empty, &o));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "sgd_new: the parameter list is empty");

    const int64_t n = 4, sizes[2] = {2, 2};
    const int64_t iv[4] = {1, 2, 3, 4};
    yt_named_tensors ints = list1("count", yt_tensor_from_data(iv, &n, 1, YT_DTYPE_I64));
    cr_assert_null(yt_sgd_new(&ints, &o));
    YT_ASSERT_ERROR(YT_ERR_DTYPE,
                    "sgd_new: parameter 'count' is i64; optimizers update f32 and f64");

    const double v[4] = {1, 2, 3, 4};
    yt_tensor *leaf = yt_tensor_from_data(v, sizes, 2, YT_DTYPE_F64);
    yt_set_requires_grad(leaf, true);
    yt_named_tensors nonleaf = list1("y", yt_mul(leaf, leaf));
    cr_assert_null(yt_sgd_new(&nonleaf, &o));
    YT_ASSERT_ERROR(YT_ERR_STATE,
                    "sgd_new: parameter 'y' is not a leaf (it has grad_fn MulBackward)");
    yt_tensor *detached = yt_detach(leaf);
    yt_named_tensors strided = list1("wt", yt_t(detached));
    yt_release(detached);
    cr_assert_null(yt_sgd_new(&strided, &o));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "sgd_new: parameter 'wt' is not contiguous");

    yt_named_tensors twice = YT_NAMED_TENSORS_INIT;
    yt_named_tensors_add(&twice, "a", leaf);
    yt_named_tensors_add(&twice, "b", leaf);
    cr_assert_null(yt_sgd_new(&twice, &o));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "sgd_new: parameter 'b' is the same tensor as 'a'");

    yt_named_tensors_clear(&ints);
    yt_named_tensors_clear(&nonleaf);
    yt_named_tensors_clear(&strided);
    yt_named_tensors_clear(&twice);
    yt_release(leaf);
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- groups */

Test(optim, param_groups)
{
    const double v[3] = {1, 2, 3};
    yt_named_tensors g0 = list1("w", param(v, 3)), g1 = list1("b", param(v, 2)),
                     g2 = list1("c", param(v, 1));
    const yt_sgd_options o0 = {.lr = 0.1, .momentum = 0.9};
    yt_optimizer *opt = yt_sgd_new(&g0, &o0);
    cr_assert_not_null(opt, "%s", yt_errmsg());
    const yt_sgd_options o1 = {.lr = 0.01, .nesterov = true, .momentum = 0.5};
    cr_assert_eq(yt_optimizer_add_param_group(opt, &g1, &o1), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(yt_optimizer_add_param_group(opt, &g2, NULL), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(yt_optimizer_group_count(opt), 3);
    cr_assert_eq(yt_optimizer_get_lr(opt, 0), 0.1);
    cr_assert_eq(yt_optimizer_get_lr(opt, 1), 0.01);
    cr_assert_eq(yt_optimizer_get_lr(opt, 2), 0.1); /* NULL options: the constructor's */

    /* a name or a tensor already in the optimizer; invalid options: the optimizer is unchanged */
    cr_assert_eq(yt_optimizer_add_param_group(opt, &g1, NULL), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE,
                    "optimizer_add_param_group: a parameter named 'b' is already in param group 1");
    yt_named_tensors renamed = YT_NAMED_TENSORS_INIT;
    yt_named_tensors_add(&renamed, "other", g0.tensors[0]);
    cr_assert_eq(yt_optimizer_add_param_group(opt, &renamed, NULL), YT_ERR_VALUE);
    YT_ASSERT_ERROR(
        YT_ERR_VALUE,
        "optimizer_add_param_group: parameter 'other' is the same tensor as 'w' (param group 0)");
    yt_named_tensors g3 = list1("d", param(v, 3));
    const yt_sgd_options bad = {.lr = 0.1, .nesterov = true};
    cr_assert_eq(yt_optimizer_add_param_group(opt, &g3, &bad), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "optimizer_add_param_group: nesterov needs momentum > 0");
    cr_assert_eq(yt_optimizer_group_count(opt), 3);

    /* lr and options per group */
    cr_assert_eq(yt_optimizer_set_lr(opt, 1, 0.5), YT_OK);
    cr_assert_eq(yt_optimizer_get_lr(opt, 1), 0.5);
    cr_assert_eq(yt_optimizer_get_lr(opt, 0), 0.1);
    cr_assert_eq(yt_optimizer_set_lr(opt, 1, -1), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "optimizer_set_lr: lr=-1 must be finite and >= 0");
    cr_assert(isnan(yt_optimizer_get_lr(opt, 3)));
    YT_ASSERT_ERROR(YT_ERR_VALUE,
                    "optimizer_get_lr: group=3 is out of range (the optimizer has 3)");
    cr_assert_eq(yt_optimizer_set_lr(opt, -1, 0.1), YT_ERR_VALUE);
    yt_sgd_options got;
    cr_assert_eq(yt_optimizer_get_options(opt, 1, &got, sizeof got), YT_OK);
    cr_assert(got.nesterov && got.momentum == 0.5 && got.lr == 0.5);
    got.momentum = 0.0;
    cr_assert_eq(yt_optimizer_set_options(opt, 1, &got, sizeof got), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "optimizer_set_options: nesterov needs momentum > 0");
    yt_adam_options wrong;
    cr_assert_eq(yt_optimizer_get_options(opt, 0, &wrong, sizeof wrong), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "optimizer_get_options: size=");

    yt_named_tensors all = YT_NAMED_TENSORS_INIT;
    cr_assert_eq(yt_optimizer_parameters(opt, &all), YT_OK);
    cr_assert_eq(all.count, 3);
    cr_assert_str_eq(all.names[0], "w");
    cr_assert_str_eq(all.names[2], "c");
    cr_assert_eq(all.tensors[1], g1.tensors[0]);

    yt_named_tensors_clear(&all);
    yt_named_tensors_clear(&renamed);
    yt_named_tensors_clear(&g3);
    yt_optimizer_release(opt);
    yt_named_tensors_clear(&g0);
    yt_named_tensors_clear(&g1);
    yt_named_tensors_clear(&g2);
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- stepping */

Test(optim, step_zero_grad_and_skipping)
{
    const double w0[3] = {1, -2, 3}, b0[2] = {0.5, 0.25}, gw[3] = {0.5, 1, -2};
    yt_named_tensors ps = YT_NAMED_TENSORS_INIT;
    yt_tensor *w = param(w0, 3), *b = param(b0, 2);
    yt_named_tensors_add(&ps, "w", w);
    yt_named_tensors_add(&ps, "b", b);
    const yt_sgd_options o = {.lr = 0.1};
    yt_optimizer *opt = yt_sgd_new(&ps, &o);
    set_grad(w, gw); /* b gets no gradient: it is skipped, as in PyTorch */
    uint64_t vw = yt_tensor_version(w), vb = yt_tensor_version(b);
    cr_assert_eq(yt_optimizer_step(opt), YT_OK, "%s", yt_errmsg());
    double got[3];
    values(w, got, 3);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(got[i], w0[i] + gw[i] * -0.1, "w[%d]=%.17g", i, got[i]);
    values(b, got, 2);
    cr_assert(got[0] == b0[0] && got[1] == b0[1]);
    cr_assert_gt(yt_tensor_version(w), vw, "the step must bump w's version counter");
    cr_assert_eq(yt_tensor_version(b), vb);

    yt_tensor *g = yt_grad(w);
    cr_assert_not_null(g, "step must not touch the gradients");
    yt_release(g);
    yt_optimizer_zero_grad(opt);
    cr_assert_null(yt_grad(w), "zero_grad sets gradients to none");
    cr_assert_eq(yt_optimizer_step(opt), YT_OK); /* no gradients: nothing happens */
    values(w, got, 3);
    cr_assert_eq(got[0], w0[0] + gw[0] * -0.1);

    cr_assert_eq(yt_optimizer_step(NULL), YT_ERR_VALUE);
    yt_optimizer_zero_grad(NULL);
    yt_optimizer_release(opt);
    yt_release(w);
    yt_release(b);
    yt_named_tensors_clear(&ps);
    YT_ASSERT_NO_LEAKS();
}

/* The step is an in-place write: a graph that saved the parameter refuses to backpropagate. */
Test(optim, step_invalidates_saved_parameters)
{
    const double w0[2] = {1, 2}, gw[2] = {1, 1};
    yt_tensor *w = param(w0, 2);
    yt_named_tensors ps = list1("w", yt_retain(w));
    const yt_adam_options o = YT_ADAM_DEFAULTS;
    yt_optimizer *opt = yt_adam_new(&ps, &o);
    yt_tensor *sq = yt_mul(w, w); /* saves w */
    yt_tensor *loss = yt_sum(sq);
    set_grad(w, gw);
    cr_assert_eq(yt_optimizer_step(opt), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(yt_backward(loss, NULL, NULL), YT_ERR_STATE);
    YT_ASSERT_ERROR(YT_ERR_STATE, "mul: saved tensor");
    cr_assert(strstr(yt_errmsg(), "modified by an in-place operation") != NULL, "%s", yt_errmsg());
    yt_release(loss);
    yt_release(sq);
    yt_optimizer_release(opt);
    yt_release(w);
    yt_named_tensors_clear(&ps);
    YT_ASSERT_NO_LEAKS();
}

/* State made during a step inside a scope belongs to the optimizer, not to the scope; later
 * steps allocate nothing; grad mode does not matter. */
Test(optim, state_outlives_scopes_and_steps_do_not_allocate)
{
    const double w0[4] = {1, 2, 3, 4}, gw[4] = {0.1, -0.2, 0.3, -0.4};
    yt_tensor *w = param(w0, 4);
    yt_named_tensors ps = list1("w", yt_retain(w));
    const yt_rmsprop_options o = {.lr = 0.01, .alpha = 0.9, .momentum = 0.9, .centered = true};
    yt_optimizer *opt = yt_rmsprop_new(&ps, &o);
    set_grad(w, gw);
    yt_scope_begin();
    cr_assert_eq(yt_optimizer_step(opt), YT_OK, "%s", yt_errmsg());
    yt_scope_end();
    int64_t live = yt_live_tensors(), bytes = yt_live_bytes();
    bool prev = yt_set_grad_enabled(false);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(yt_optimizer_step(opt), YT_OK, "%s", yt_errmsg());
    yt_set_grad_enabled(prev);
    cr_assert_eq(yt_live_tensors(), live, "steps after the first allocate no tensors");
    cr_assert_eq(yt_live_bytes(), bytes);
    yt_named_tensors sd = YT_NAMED_TENSORS_INIT;
    cr_assert_eq(yt_optimizer_state_dict(opt, &sd), YT_OK, "%s", yt_errmsg());
    yt_tensor *step = yt_named_tensors_get(&sd, "state.w.step");
    cr_assert_eq(yt_item(step), 4.0);
    yt_release(step);
    yt_named_tensors_clear(&sd);
    yt_optimizer_release(opt);
    yt_release(w);
    yt_named_tensors_clear(&ps);
    YT_ASSERT_NO_LEAKS();
}

/* Gradients recorded with create_graph have a grad_fn: the step reads their values all the same. */
Test(optim, step_reads_create_graph_gradients)
{
    const double w0[2] = {1, 2};
    yt_tensor *w = param(w0, 2);
    yt_named_tensors ps = list1("w", yt_retain(w));
    const yt_sgd_options o = {.lr = 0.5};
    yt_optimizer *opt = yt_sgd_new(&ps, &o);
    yt_tensor *sq = yt_mul(w, w);
    yt_tensor *cube = yt_mul(sq, w); /* d/dw sum(w^3) = 3 w^2 */
    yt_tensor *loss = yt_sum(cube);
    const yt_backward_options bo = {.create_graph = true};
    cr_assert_eq(yt_backward(loss, NULL, &bo), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(yt_optimizer_step(opt), YT_OK, "%s", yt_errmsg());
    double got[2];
    values(w, got, 2);
    cr_assert_eq(got[0], 1 - 0.5 * 3);
    cr_assert_eq(got[1], 2 - 0.5 * 12);
    yt_optimizer_zero_grad(opt);
    yt_release(loss);
    yt_release(cube);
    yt_release(sq);
    yt_optimizer_release(opt);
    yt_release(w);
    yt_named_tensors_clear(&ps);
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- state dicts */

enum { N_W = 5, N_B = 3 };

typedef yt_optimizer *(*make_fn)(const yt_named_tensors *params);

static yt_optimizer *
make_sgd(const yt_named_tensors *p)
{
    const yt_sgd_options o = {.lr = 0.05, .momentum = 0.9, .nesterov = true, .weight_decay = 0.01};
    return yt_sgd_new(p, &o);
}

static yt_optimizer *
make_adam(const yt_named_tensors *p)
{
    const yt_adam_options o = {
        .lr = 0.01, .beta1 = 0.8, .beta2 = 0.99, .eps = 1e-8, .amsgrad = true};
    return yt_adam_new(p, &o);
}

static yt_optimizer *
make_adamw(const yt_named_tensors *p)
{
    return yt_adamw_new(p, NULL);
}

static yt_optimizer *
make_rmsprop(const yt_named_tensors *p)
{
    const yt_rmsprop_options o = {.lr = 0.01, .alpha = 0.9, .momentum = 0.5, .centered = true};
    return yt_rmsprop_new(p, &o);
}

static yt_optimizer *
make_adagrad(const yt_named_tensors *p)
{
    const yt_adagrad_options o = {
        .lr = 0.1, .lr_decay = 0.01, .initial_accumulator_value = 0.1, .eps = 1e-10};
    return yt_adagrad_new(p, &o);
}

/* Parameters w (f32) and b (f64) with fixed starting values, listed in `order` (0: w first). */
static yt_named_tensors
model(int order, yt_tensor **w, yt_tensor **b)
{
    double wv[N_W], bv[N_B];
    for (int i = 0; i < N_W; i++)
        wv[i] = 0.3 * i - 0.7;
    for (int i = 0; i < N_B; i++)
        bv[i] = 0.1 * i + 0.2;
    int64_t nw = N_W, nb = N_B;
    yt_tensor *w64 = yt_tensor_from_data(wv, &nw, 1, YT_DTYPE_F64);
    *w = yt_to(w64, YT_DTYPE_F32);
    yt_release(w64);
    yt_set_requires_grad(*w, true);
    *b = yt_tensor_from_data(bv, &nb, 1, YT_DTYPE_F64);
    yt_set_requires_grad(*b, true);
    yt_named_tensors l = YT_NAMED_TENSORS_INIT;
    yt_named_tensors_add(&l, order == 0 ? "w" : "b", order == 0 ? *w : *b);
    yt_named_tensors_add(&l, order == 0 ? "b" : "w", order == 0 ? *b : *w);
    return l;
}

/* One training step on the quartic g = p^3 - p/2 (gradients depend on the parameters). */
static void
train_step(yt_optimizer *opt, yt_tensor *w, yt_tensor *b)
{
    yt_scope_begin();
    yt_tensor *ps[2] = {w, b};
    for (int i = 0; i < 2; i++) {
        yt_tensor *d = yt_detach(ps[i]);
        yt_tensor *g = yt_sub(yt_mul(yt_mul(d, d), d), yt_mul_scalar(d, yt_float(0.5)));
        cr_assert_eq(yt_backward(yt_sum(yt_mul(ps[i], g)), NULL, NULL), YT_OK, "%s", yt_errmsg());
    }
    cr_assert_eq(yt_optimizer_step(opt), YT_OK, "%s", yt_errmsg());
    yt_optimizer_zero_grad(opt);
    yt_scope_end();
}

/* A new leaf parameter with t's values and dtype. */
static yt_tensor *
clone_param(yt_tensor *t)
{
    double v[16];
    int64_t n = yt_tensor_numel(t);
    values(t, v, n);
    yt_tensor *c = yt_tensor_from_data(v, &n, 1, YT_DTYPE_F64);
    if (yt_tensor_dtype(t) != YT_DTYPE_F64) {
        yt_tensor *d = yt_to(c, yt_tensor_dtype(t));
        yt_release(c);
        c = d;
    }
    cr_assert_eq(yt_set_requires_grad(c, true), YT_OK, "%s", yt_errmsg());
    return c;
}

static void
assert_same_bits(yt_tensor *x, yt_tensor *y, const char *what)
{
    int64_t n = yt_tensor_numel(x);
    double a[16], c[16];
    values(x, a, n);
    values(y, c, n);
    for (int64_t i = 0; i < n; i++)
        cr_assert(memcmp(&a[i], &c[i], sizeof a[i]) == 0, "%s[%lld]: %.17g vs %.17g", what,
                  (long long)i, a[i], c[i]);
}

/* Save after k steps, load into a fresh optimizer over parameters listed in the other order,
 * continue: bit-identical to an uninterrupted run. */
static void
check_round_trip(make_fn make, const char *name)
{
    enum { K = 3, MORE = 4 };
    yt_tensor *w1, *b1, *w2, *b2;
    yt_named_tensors l1 = model(0, &w1, &b1), l2 = model(0, &w2, &b2);
    yt_optimizer *straight = make(&l1), *first = make(&l2);
    cr_assert(straight != NULL && first != NULL, "%s: %s", name, yt_errmsg());
    for (int i = 0; i < K + MORE; i++)
        train_step(straight, w1, b1);
    for (int i = 0; i < K; i++)
        train_step(first, w2, b2);
    yt_named_tensors sd = YT_NAMED_TENSORS_INIT;
    cr_assert_eq(yt_optimizer_state_dict(first, &sd), YT_OK, "%s: %s", name, yt_errmsg());
    yt_optimizer_release(first);

    /* a fresh optimizer over copies of the parameters, listed in the other order */
    yt_tensor *w3 = clone_param(w2), *b3 = clone_param(b2);
    yt_named_tensors l3 = YT_NAMED_TENSORS_INIT;
    yt_named_tensors_add(&l3, "b", b3);
    yt_named_tensors_add(&l3, "w", w3);
    yt_optimizer *resumed = make(&l3);
    cr_assert_eq(yt_optimizer_load_state_dict(resumed, &sd), YT_OK, "%s: %s", name, yt_errmsg());
    yt_named_tensors_clear(&sd);
    for (int i = 0; i < MORE; i++)
        train_step(resumed, w3, b3);
    assert_same_bits(w3, w1, name);
    assert_same_bits(b3, b1, name);

    yt_optimizer_release(straight);
    yt_optimizer_release(resumed);
    yt_release(w1), yt_release(b1), yt_release(w2), yt_release(b2), yt_release(w3), yt_release(b3);
    yt_named_tensors_clear(&l1);
    yt_named_tensors_clear(&l2);
    yt_named_tensors_clear(&l3);
}

Test(optim, state_round_trip_is_bit_identical)
{
    check_round_trip(make_sgd, "SGD");
    check_round_trip(make_adam, "Adam");
    check_round_trip(make_adamw, "AdamW");
    check_round_trip(make_rmsprop, "RMSprop");
    check_round_trip(make_adagrad, "Adagrad");
    YT_ASSERT_NO_LEAKS();
}

Test(optim, state_dict_contents)
{
    yt_tensor *w, *b;
    yt_named_tensors ps = model(0, &w, &b);
    yt_optimizer *opt = make_adam(&ps);
    yt_named_tensors sd = YT_NAMED_TENSORS_INIT;
    cr_assert_eq(yt_optimizer_state_dict(opt, &sd), YT_OK);
    cr_assert_eq(sd.count, 7, "before any step: the 7 options of group 0 only");
    yt_named_tensors_clear(&sd);
    train_step(opt, w, b);
    cr_assert_eq(yt_optimizer_state_dict(opt, &sd), YT_OK);
    const char *keys[] = {"group.0.lr",         "group.0.beta1",          "group.0.beta2",
                          "group.0.eps",        "group.0.weight_decay",   "group.0.amsgrad",
                          "group.0.maximize",   "state.w.step",           "state.w.exp_avg",
                          "state.w.exp_avg_sq", "state.w.max_exp_avg_sq", "state.b.step",
                          "state.b.exp_avg",    "state.b.exp_avg_sq",     "state.b.max_exp_avg_sq"};
    cr_assert_eq(sd.count, (int64_t)(sizeof keys / sizeof keys[0]));
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        cr_assert_geq(yt_named_tensors_find(&sd, keys[i]), 0, "missing %s", keys[i]);
    yt_tensor *t = yt_named_tensors_get(&sd, "group.0.lr");
    cr_assert_eq(yt_tensor_dtype(t), YT_DTYPE_F64);
    cr_assert_eq(yt_tensor_dim(t), 0);
    cr_assert_eq(yt_item(t), 0.01);
    yt_release(t);
    t = yt_named_tensors_get(&sd, "group.0.amsgrad");
    cr_assert_eq(yt_tensor_dtype(t), YT_DTYPE_I64);
    cr_assert_eq(yt_item(t), 1.0);
    yt_release(t);
    t = yt_named_tensors_get(&sd, "state.w.exp_avg");
    cr_assert_eq(yt_tensor_dtype(t), YT_DTYPE_F32);
    cr_assert_eq(yt_tensor_size(t, 0), N_W);
    yt_release(t);
    /* the dict holds copies: changing it does not change the optimizer */
    t = yt_named_tensors_get(&sd, "state.b.exp_avg");
    cr_assert_eq(yt_mul_scalar_(t, yt_float(0)), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(yt_add_scalar_(t, yt_float(7)), YT_OK, "%s", yt_errmsg());
    yt_release(t);
    yt_named_tensors again = YT_NAMED_TENSORS_INIT;
    cr_assert_eq(yt_optimizer_state_dict(opt, &again), YT_OK);
    t = yt_named_tensors_get(&again, "state.b.exp_avg");
    yt_tensor *total = yt_sum(t);
    cr_assert_neq(yt_item(total), 7.0 * N_B);
    yt_release(total);
    yt_release(t);
    /* appending twice refuses duplicate names */
    cr_assert_eq(yt_optimizer_state_dict(opt, &again), YT_ERR_VALUE);
    yt_named_tensors_clear(&again);
    yt_named_tensors_clear(&sd);
    yt_optimizer_release(opt);
    yt_release(w);
    yt_release(b);
    yt_named_tensors_clear(&ps);
    YT_ASSERT_NO_LEAKS();
}

/* Replaces (or adds) entry `key` of sd with `t` (consumed). */
static void
put(yt_named_tensors *sd, const char *key, yt_tensor *t)
{
    yt_named_tensors out = YT_NAMED_TENSORS_INIT;
    for (int64_t i = 0; i < sd->count; i++)
        if (strcmp(sd->names[i], key) != 0)
            yt_named_tensors_add(&out, sd->names[i], sd->tensors[i]);
    if (t != NULL)
        yt_named_tensors_add(&out, key, t);
    yt_release(t);
    yt_named_tensors_clear(sd);
    *sd = out;
}

/* Loads a corrupted copy of `good` and expects the error; the optimizer must not change. */
static void
expect_load_error(yt_optimizer *opt, const yt_named_tensors *good, const char *key, yt_tensor *t,
                  yt_status code, const char *msg)
{
    yt_named_tensors bad = YT_NAMED_TENSORS_INIT;
    for (int64_t i = 0; i < good->count; i++)
        yt_named_tensors_add(&bad, good->names[i], good->tensors[i]);
    put(&bad, key, t);
    double lr = yt_optimizer_get_lr(opt, 0);
    cr_assert_eq(yt_optimizer_load_state_dict(opt, &bad), code, "loading with %s: %s", key,
                 yt_errmsg());
    YT_ASSERT_ERROR(code, msg);
    cr_assert_eq(yt_optimizer_get_lr(opt, 0), lr);
    yt_named_tensors_clear(&bad);
}

Test(optim, load_state_dict_errors)
{
    yt_tensor *w, *b;
    yt_named_tensors ps = model(0, &w, &b);
    yt_optimizer *opt = make_adam(&ps);
    train_step(opt, w, b);
    yt_named_tensors sd = YT_NAMED_TENSORS_INIT;
    cr_assert_eq(yt_optimizer_state_dict(opt, &sd), YT_OK);
    /* the optimizer's own state loads back */
    cr_assert_eq(yt_optimizer_load_state_dict(opt, &sd), YT_OK, "%s", yt_errmsg());
    const int64_t two = 2, three = 3;
    const double zeros[N_W] = {0};

    expect_load_error(opt, &sd, "group.0.lr", NULL, YT_ERR_VALUE,
                      "optimizer_load_state_dict: Adam: the state dict has no 'group.0.lr'");
    expect_load_error(opt, &sd, "group.0.lr", yt_scalar_tensor(yt_float(-1), YT_DTYPE_F64),
                      YT_ERR_VALUE, "optimizer_load_state_dict: group 0: lr=-1 must be >= 0");
    expect_load_error(opt, &sd, "group.0.lr", yt_scalar_tensor(yt_int(1), YT_DTYPE_I64),
                      YT_ERR_DTYPE,
                      "optimizer_load_state_dict: 'group.0.lr' must be a floating tensor, got i64");
    expect_load_error(
        opt, &sd, "group.0.lr", yt_tensor_from_data(zeros, &two, 1, YT_DTYPE_F64), YT_ERR_SHAPE,
        "optimizer_load_state_dict: 'group.0.lr' must be a 0-d tensor, got shape [2]");
    expect_load_error(opt, &sd, "group.0.amsgrad", yt_scalar_tensor(yt_int(2), YT_DTYPE_I64),
                      YT_ERR_VALUE,
                      "optimizer_load_state_dict: 'group.0.amsgrad'=2 must be 0 or 1");
    expect_load_error(
        opt, &sd, "group.1.lr", yt_scalar_tensor(yt_float(0.1), YT_DTYPE_F64), YT_ERR_VALUE,
        "optimizer_load_state_dict: 'group.1.lr' is for param group 1 but the optimizer has 1 group");
    expect_load_error(
        opt, &sd, "state.v.exp_avg", yt_tensor_from_data(zeros, &three, 1, YT_DTYPE_F64),
        YT_ERR_VALUE,
        "optimizer_load_state_dict: 'state.v.exp_avg' is state for a parameter 'v' the optimizer does not have");
    expect_load_error(opt, &sd, "state.b.momentum",
                      yt_tensor_from_data(zeros, &three, 1, YT_DTYPE_F64), YT_ERR_VALUE,
                      "optimizer_load_state_dict: Adam: unknown entry 'state.b.momentum'");
    expect_load_error(
        opt, &sd, "state.b.exp_avg", yt_tensor_from_data(zeros, &two, 1, YT_DTYPE_F64),
        YT_ERR_SHAPE,
        "optimizer_load_state_dict: 'state.b.exp_avg' has shape [2] but parameter 'b' has [3]");
    expect_load_error(
        opt, &sd, "state.b.exp_avg", yt_tensor_from_data(zeros, &three, 1, YT_DTYPE_F32),
        YT_ERR_DTYPE,
        "optimizer_load_state_dict: 'state.b.exp_avg' is f32 but parameter 'b' is f64");
    expect_load_error(
        opt, &sd, "state.b.max_exp_avg_sq", NULL, YT_ERR_VALUE,
        "optimizer_load_state_dict: Adam: the state dict has no 'state.b.max_exp_avg_sq'");
    expect_load_error(opt, &sd, "state.w.step", NULL, YT_ERR_VALUE,
                      "optimizer_load_state_dict: Adam: the state dict has no 'state.w.step'");
    expect_load_error(opt, &sd, "state.w.step", yt_scalar_tensor(yt_int(-3), YT_DTYPE_I64),
                      YT_ERR_VALUE, "optimizer_load_state_dict: 'state.w.step'=-3 must be >= 0");
    cr_assert_eq(yt_optimizer_load_state_dict(opt, NULL), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "optimizer_load_state_dict: sd is NULL");

    /* a parameter without entries starts afresh */
    yt_named_tensors partial = YT_NAMED_TENSORS_INIT;
    for (int64_t i = 0; i < sd.count; i++)
        if (strncmp(sd.names[i], "state.w.", 8) != 0)
            yt_named_tensors_add(&partial, sd.names[i], sd.tensors[i]);
    cr_assert_eq(yt_optimizer_load_state_dict(opt, &partial), YT_OK, "%s", yt_errmsg());
    yt_named_tensors after = YT_NAMED_TENSORS_INIT;
    yt_optimizer_state_dict(opt, &after);
    cr_assert_lt(yt_named_tensors_find(&after, "state.w.step"), 0);
    cr_assert_geq(yt_named_tensors_find(&after, "state.b.step"), 0);
    yt_named_tensors_clear(&after);
    yt_named_tensors_clear(&partial);

    yt_named_tensors_clear(&sd);
    yt_optimizer_release(opt);
    yt_release(w);
    yt_release(b);
    yt_named_tensors_clear(&ps);
    YT_ASSERT_NO_LEAKS();
}

/* Options come back from the state dict: an lr a scheduler changed is restored. */
Test(optim, load_restores_group_options)
{
    yt_tensor *w, *b;
    yt_named_tensors ps = model(0, &w, &b);
    yt_optimizer *a = make_sgd(&ps), *c = make_sgd(&ps);
    yt_optimizer_set_lr(a, 0, 0.125);
    yt_named_tensors sd = YT_NAMED_TENSORS_INIT;
    yt_optimizer_state_dict(a, &sd);
    cr_assert_eq(yt_optimizer_load_state_dict(c, &sd), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(yt_optimizer_get_lr(c, 0), 0.125);
    yt_sgd_options o;
    yt_optimizer_get_options(c, 0, &o, sizeof o);
    cr_assert(o.nesterov && o.momentum == 0.9 && o.weight_decay == 0.01);
    yt_named_tensors_clear(&sd);
    yt_optimizer_release(a);
    yt_optimizer_release(c);
    yt_release(w);
    yt_release(b);
    yt_named_tensors_clear(&ps);
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- clipping */

Test(optim, clip_grad_norm)
{
    const double a0[2] = {1, 2}, b0[1] = {3}, ga[2] = {3, 0}, gb[1] = {-4};
    yt_tensor *a = param(a0, 2), *b = param(b0, 1), *c = param(b0, 1);
    yt_named_tensors ps = YT_NAMED_TENSORS_INIT;
    yt_named_tensors_add(&ps, "a", a);
    yt_named_tensors_add(&ps, "b", b);
    yt_named_tensors_add(&ps, "c", c); /* no gradient: ignored */
    set_grad(a, ga);
    set_grad(b, gb);
    double total = -1;
    cr_assert_eq(yt_clip_grad_norm(&ps, 1.0, 2.0, &total), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(total, 5.0);
    const double coef = 1.0 / (5.0 + 1e-6);
    yt_tensor *g = yt_grad(a);
    double got[2];
    values(g, got, 2);
    cr_assert_eq(got[0], 3 * coef);
    cr_assert_eq(got[1], 0);
    yt_release(g);
    /* already within the bound: unchanged (coefficient clamped to 1) */
    cr_assert_eq(yt_clip_grad_norm(&ps, 10.0, 2.0, &total), YT_OK);
    cr_assert(fabs(total - 1.0) < 1e-6, "total %.17g", total);
    g = yt_grad(a);
    values(g, got, 2);
    cr_assert_eq(got[0], 3 * coef);
    yt_release(g);
    /* inf and 1 norms */
    cr_assert_eq(yt_clip_grad_norm(&ps, 100.0, INFINITY, &total), YT_OK);
    cr_assert_eq(total, 4 * coef);
    cr_assert_eq(yt_clip_grad_norm(&ps, 100.0, 1.0, &total), YT_OK);
    cr_assert_eq(total, 3 * coef + 4 * coef);
    /* errors */
    cr_assert_eq(yt_clip_grad_norm(&ps, -1.0, 2.0, NULL), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "clip_grad_norm: max_norm=-1 must be >= 0");
    cr_assert_eq(yt_clip_grad_norm(&ps, 1.0, 0.0, NULL), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "clip_grad_norm: norm_type=0 must be > 0 (or INFINITY)");
    cr_assert_eq(yt_clip_grad_norm(&ps, NAN, 2.0, NULL), YT_ERR_VALUE);
    cr_assert_eq(yt_clip_grad_norm(NULL, 1.0, 2.0, NULL), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "clip_grad_norm: params is NULL");
    /* no gradients at all: total 0 */
    yt_zero_grad(a);
    yt_zero_grad(b);
    cr_assert_eq(yt_clip_grad_norm(&ps, 1.0, 2.0, &total), YT_OK);
    cr_assert_eq(total, 0.0);
    yt_release(a);
    yt_release(b);
    yt_release(c);
    yt_named_tensors_clear(&ps);
    YT_ASSERT_NO_LEAKS();
}

Test(optim, clip_grad_value)
{
    const double a0[4] = {1, 2, 3, 4}, ga[4] = {-3, 0.25, 0.5, 2};
    yt_tensor *a = param(a0, 4);
    yt_named_tensors ps = list1("a", yt_retain(a));
    set_grad(a, ga);
    yt_tensor *before = yt_grad(a);
    uint64_t v = yt_tensor_version(before);
    cr_assert_eq(yt_clip_grad_value(&ps, 0.5), YT_OK, "%s", yt_errmsg());
    cr_assert_gt(yt_tensor_version(before), v, "clipping writes the gradient in place");
    const double want[4] = {-0.5, 0.25, 0.5, 0.5};
    const int64_t n = 4;
    yt_tensor *g = yt_grad(a);
    test_expect_values(g, want, 4, &n, 1);
    yt_release(g);
    yt_release(before);
    cr_assert_eq(yt_clip_grad_value(&ps, -1), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "clip_grad_value: clip=-1 must be >= 0");
    yt_release(a);
    yt_named_tensors_clear(&ps);
    YT_ASSERT_NO_LEAKS();
}
