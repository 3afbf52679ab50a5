/* The module core (include/yaten/nn.h): names and counts of parameters as PyTorch gives them,
 * forward and backward through containers, state dicts (round trip, strict errors), train/eval,
 * user-defined kinds, summaries and printing, dtype conversion, and the error paths.
 * Values of layers against PyTorch are in tests/nn/; layer details in test_nn_layers.c. */
#include <stdio.h>

#include "test_util.h"

/* ---------------------------------------------------------------- helpers */

static void
add(yt_module *seq, yt_module *child)
{
    cr_assert_not_null(child, "%s", yt_errmsg());
    cr_assert_eq(yt_sequential_append(seq, child), YT_OK, "%s", yt_errmsg());
    yt_module_release(child);
}

/* The MLP: Flatten, 784-256-128-10 with ReLUs. */
static yt_module *
make_mlp(void)
{
    yt_module *s = yt_sequential_new();
    add(s, yt_flatten_new(1, -1));
    add(s, yt_linear_new(784, 256, true));
    add(s, yt_relu_new());
    add(s, yt_linear_new(256, 128, true));
    add(s, yt_relu_new());
    add(s, yt_linear_new(128, 10, true));
    return s;
}

/* The CNN: conv(1->8, 3x3)-relu-maxpool-conv(8->16, 3x3)-relu-maxpool-linear(400->10). */
static yt_module *
make_cnn(void)
{
    yt_module *s = yt_sequential_new();
    yt_conv2d_options c1 = yt_conv2d_options_default(1, 8, 3);
    yt_conv2d_options c2 = yt_conv2d_options_default(8, 16, 3);
    add(s, yt_conv2d_new(&c1));
    add(s, yt_relu_new());
    add(s, yt_max_pool2d_new(2, 0, 0));
    add(s, yt_conv2d_new(&c2));
    add(s, yt_relu_new());
    add(s, yt_max_pool2d_new(2, 0, 0));
    add(s, yt_flatten_new(1, -1));
    add(s, yt_linear_new(400, 10, true));
    return s;
}

static void
expect_names(const yt_named_tensors *list, const char *const *names, int n)
{
    cr_assert_eq(list->count, n, "%lld names, expected %d", (long long)list->count, n);
    for (int i = 0; i < n; i++)
        cr_assert_str_eq(list->names[i], names[i]);
}

/* Everything a call printed to a FILE *, as a malloc'd string. */
typedef yt_status (*print_fn)(yt_module *m, void *file, const void *arg);

static char *
capture(print_fn fn, yt_module *m, const void *arg, yt_status *status)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_not_null(f);
    *status = fn(m, f, arg);
    fclose(f);
    return text;
}

static yt_status
do_print(yt_module *m, void *file, const void *arg)
{
    (void)arg;
    return yt_module_print(m, file);
}

static yt_status
do_summary(yt_module *m, void *file, const void *arg)
{
    const int64_t *shape = arg;
    return yt_module_summary(m, shape + 1, (int)shape[0], file);
}

/* ---------------------------------------------------------------- names and counts */

Test(nn_modules, mlp_names_and_count_are_pytorchs)
{
    yt_manual_seed(1);
    yt_module *mlp = make_mlp();
    yt_named_tensors params = YT_NAMED_TENSORS_INIT;
    cr_assert_eq(yt_module_parameters(mlp, &params), YT_OK, "%s", yt_errmsg());
    static const char *const names[] = {"1.weight", "1.bias",   "3.weight",
                                        "3.bias",   "5.weight", "5.bias"};
    expect_names(&params, names, 6);
    const int64_t w1[2] = {256, 784};
    test_expect_sizes(params.tensors[0], w1, 2);
    for (int64_t i = 0; i < params.count; i++)
        cr_assert(yt_requires_grad(params.tensors[i]) && yt_is_leaf(params.tensors[i]));
    yt_named_tensors_clear(&params);
    /* (784 * 256 + 256) + (256 * 128 + 128) + (128 * 10 + 10) */
    cr_assert_eq(yt_module_num_parameters(mlp), 235146);

    const int64_t in[4] = {64, 1, 28, 28}, out[2] = {64, 10};
    yt_tensor *x = yt_randn(in, 4);
    yt_tensor *y = yt_module_forward(mlp, x);
    test_expect_sizes(y, out, 2);
    yt_release(y);
    yt_release(x);
    yt_module_release(mlp);
    YT_ASSERT_NO_LEAKS();
}

Test(nn_modules, cnn_names_count_and_output_shape)
{
    yt_manual_seed(2);
    yt_module *cnn = make_cnn();
    yt_named_tensors sd = YT_NAMED_TENSORS_INIT;
    cr_assert_eq(yt_module_state_dict(cnn, &sd), YT_OK, "%s", yt_errmsg());
    static const char *const names[] = {"0.weight", "0.bias",   "3.weight",
                                        "3.bias",   "7.weight", "7.bias"};
    expect_names(&sd, names, 6);
    const int64_t w3[4] = {16, 8, 3, 3};
    test_expect_sizes(sd.tensors[2], w3, 4);
    yt_named_tensors_clear(&sd);
    /* (8 * 1 * 9 + 8) + (16 * 8 * 9 + 16) + (400 * 10 + 10) */
    cr_assert_eq(yt_module_num_parameters(cnn), 5258);

    /* 28 -conv-> 26 -pool-> 13 -conv-> 11 -pool-> 5: 16 * 5 * 5 = 400 features */
    const int64_t in[4] = {3, 1, 28, 28}, out[2] = {3, 10};
    yt_tensor *x = yt_randn(in, 4);
    yt_tensor *y = yt_module_forward(cnn, x);
    test_expect_sizes(y, out, 2);
    yt_release(y);
    yt_release(x);
    yt_module_release(cnn);
    YT_ASSERT_NO_LEAKS();
}

Test(nn_modules, backward_reaches_every_parameter)
{
    yt_manual_seed(3);
    yt_module *cnn = make_cnn();
    yt_module *loss_fn = yt_cross_entropy_loss_new(NULL);
    yt_scope_begin();
    const int64_t in[4] = {4, 1, 28, 28}, n = 4;
    yt_tensor *x = yt_randn(in, 4);
    yt_tensor *labels = yt_randint(10, &n, 1);
    yt_tensor *loss = yt_module_forward2(loss_fn, yt_module_forward(cnn, x), labels);
    cr_assert_not_null(loss, "%s", yt_errmsg());
    cr_assert_eq(yt_backward(loss, NULL, NULL), YT_OK, "%s", yt_errmsg());
    yt_named_tensors params = YT_NAMED_TENSORS_INIT;
    cr_assert_eq(yt_module_parameters(cnn, &params), YT_OK);
    for (int64_t i = 0; i < params.count; i++) {
        yt_tensor *g = yt_grad(params.tensors[i]);
        cr_assert_not_null(g, "no gradient for %s", params.names[i]);
        cr_assert_eq(yt_tensor_numel(g), yt_tensor_numel(params.tensors[i]));
    }
    yt_module_zero_grad(cnn);
    for (int64_t i = 0; i < params.count; i++)
        cr_assert_null(yt_grad(params.tensors[i]), "zero_grad left %s's gradient", params.names[i]);
    yt_named_tensors_clear(&params);
    yt_scope_end();
    yt_module_release(loss_fn);
    yt_module_release(cnn);
    YT_ASSERT_NO_LEAKS();
}

/* A training step inside a scope: the forward's intermediates belong to the graph, its result to
 * the scope; nothing is released twice and nothing survives the scope. */
Test(nn_modules, forward_inside_scopes_neither_leaks_nor_double_frees)
{
    yt_manual_seed(4);
    yt_module *mlp = make_mlp();
    for (int step = 0; step < 3; step++) {
        yt_scope_begin();
        const int64_t in[2] = {8, 784};
        yt_tensor *y = yt_module_forward(mlp, yt_randn(in, 2));
        cr_assert_eq(yt_backward(yt_sum(y), NULL, NULL), YT_OK, "%s", yt_errmsg());
        yt_scope_end();
        yt_module_zero_grad(mlp);
    }
    yt_module_release(mlp);
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- state dicts */

Test(nn_modules, state_dict_round_trip_copies_values_in_place)
{
    yt_manual_seed(5);
    yt_module *a = make_mlp();
    yt_manual_seed(6);
    yt_module *b = make_mlp();
    const int64_t in[2] = {5, 784};
    yt_tensor *x = yt_randn(in, 2);
    yt_tensor *ya = yt_module_forward(a, x), *yb = yt_module_forward(b, x);
    cr_assert_gt(test_max_abs_diff(ya, yb), 1e-3, "two seeds gave the same model");

    yt_tensor *w_before = yt_module_get(b, "1.weight");
    yt_named_tensors sd = YT_NAMED_TENSORS_INIT;
    cr_assert_eq(yt_module_state_dict(a, &sd), YT_OK);
    cr_assert(!yt_requires_grad(sd.tensors[0]), "state dict entries are detached");
    cr_assert_eq(yt_module_load_state_dict(b, &sd, true), YT_OK, "%s", yt_errmsg());
    yt_tensor *w_after = yt_module_get(b, "1.weight");
    cr_assert_eq(w_before, w_after, "load_state_dict must keep the parameter tensors");
    yt_tensor *yb2 = yt_module_forward(b, x);
    cr_assert_eq(test_max_abs_diff(ya, yb2), 0.0);

    /* The copy is by value: changing a's weights afterwards leaves b alone. */
    cr_assert_eq(yt_init_zeros_(sd.tensors[0]), YT_OK);
    yt_tensor *yb3 = yt_module_forward(b, x);
    cr_assert_eq(test_max_abs_diff(yb2, yb3), 0.0);

    yt_named_tensors_clear(&sd);
    yt_release(w_before);
    yt_release(w_after);
    yt_release(yb3);
    yt_release(yb2);
    yt_release(yb);
    yt_release(ya);
    yt_release(x);
    yt_module_release(a);
    yt_module_release(b);
    YT_ASSERT_NO_LEAKS();
}

Test(nn_modules, load_state_dict_errors_name_the_keys_and_write_nothing)
{
    yt_manual_seed(7);
    yt_module *m = yt_sequential_new();
    add(m, yt_linear_new(4, 3, true));
    add(m, yt_batch_norm1d_new(3, 1e-5, 0.1, true, true));
    yt_named_tensors sd = YT_NAMED_TENSORS_INIT;
    cr_assert_eq(yt_module_state_dict(m, &sd), YT_OK);
    static const char *const names[] = {"0.weight",
                                        "0.bias",
                                        "1.weight",
                                        "1.bias",
                                        "1.running_mean",
                                        "1.running_var",
                                        "1.num_batches_tracked"};
    expect_names(&sd, names, 7);
    yt_tensor *w = yt_module_get(m, "0.weight");
    yt_tensor *before = yt_clone(w);

    /* missing: a state dict without 0.bias */
    yt_named_tensors partial = YT_NAMED_TENSORS_INIT;
    for (int64_t i = 0; i < sd.count; i++)
        if (strcmp(sd.names[i], "0.bias") != 0)
            yt_named_tensors_add(&partial, sd.names[i], sd.tensors[i]);
    const int64_t wsize[2] = {3, 4};
    yt_tensor *other = yt_ones(wsize, 2);
    yt_named_tensors_add(&partial, "0.extra", other);
    cr_assert_eq(yt_module_load_state_dict(m, &partial, true), YT_ERR_VALUE);
    cr_assert(strstr(yt_errmsg(), "missing key '0.bias'") != NULL, "%s", yt_errmsg());
    cr_assert(strstr(yt_errmsg(), "unexpected key '0.extra'") != NULL, "%s", yt_errmsg());
    cr_assert(strncmp(yt_errmsg(), "load_state_dict: Sequential: ", 29) == 0, "%s", yt_errmsg());
    /* non-strict: the rest loads */
    cr_assert_eq(yt_module_load_state_dict(m, &partial, false), YT_OK, "%s", yt_errmsg());
    yt_named_tensors_clear(&partial);

    /* a size mismatch is an error even when not strict, and nothing is written */
    yt_named_tensors bad = YT_NAMED_TENSORS_INIT;
    const int64_t tsize[2] = {4, 3};
    yt_tensor *transposed = yt_ones(tsize, 2);
    for (int64_t i = 0; i < sd.count; i++)
        yt_named_tensors_add(&bad, sd.names[i], i == 0 ? transposed : sd.tensors[i]);
    cr_assert_eq(yt_module_load_state_dict(m, &bad, false), YT_ERR_SHAPE);
    cr_assert(
        strstr(yt_errmsg(),
               "size mismatch for '0.weight': the state dict has [4, 3], the module [3, 4]") !=
            NULL,
        "%s", yt_errmsg());
    cr_assert_eq(test_max_abs_diff(w, before), 0.0, "a failed load wrote into 0.weight");
    yt_named_tensors_clear(&bad);

    cr_assert_eq(yt_module_load_state_dict(m, NULL, true), YT_ERR_VALUE);
    yt_named_tensors_clear(&sd);
    yt_release(transposed);
    yt_release(other);
    yt_release(before);
    yt_release(w);
    yt_module_release(m);
    YT_ASSERT_NO_LEAKS();
}

Test(nn_modules, load_state_dict_converts_dtypes_and_loads_buffers)
{
    yt_manual_seed(8);
    yt_module *bn = yt_batch_norm2d_new(2, 1e-5, 0.1, true, true);
    yt_named_tensors sd = YT_NAMED_TENSORS_INIT;
    const double mean[2] = {0.5, -1.5}, var[2] = {2.0, 3.0}, w[2] = {1, 2}, b[2] = {0, 1};
    const int64_t two = 2;
    yt_tensor *tm = yt_tensor_from_data(mean, &two, 1, YT_DTYPE_F64); /* f64 into f32 buffers */
    yt_tensor *tv = yt_tensor_from_data(var, &two, 1, YT_DTYPE_F64);
    yt_tensor *tw = yt_tensor_from_data(w, &two, 1, YT_DTYPE_F64);
    yt_tensor *tb = yt_tensor_from_data(b, &two, 1, YT_DTYPE_F64);
    yt_tensor *count = yt_scalar_tensor(yt_int(7), YT_DTYPE_I64);
    yt_named_tensors_add(&sd, "weight", tw);
    yt_named_tensors_add(&sd, "bias", tb);
    yt_named_tensors_add(&sd, "running_mean", tm);
    yt_named_tensors_add(&sd, "running_var", tv);
    yt_named_tensors_add(&sd, "num_batches_tracked", count);
    cr_assert_eq(yt_module_load_state_dict(bn, &sd, true), YT_OK, "%s", yt_errmsg());
    yt_tensor *rm = yt_module_get(bn, "running_mean"),
              *nbt = yt_module_get(bn, "num_batches_tracked");
    cr_assert_eq(yt_tensor_dtype(rm), YT_DTYPE_F32);
    const int64_t size1[1] = {2};
    test_expect_values(rm, mean, 2, size1, 1);
    cr_assert_eq(yt_item(nbt), 7.0);
    yt_release(rm);
    yt_release(nbt);
    yt_release(tm);
    yt_release(tv);
    yt_release(tw);
    yt_release(tb);
    yt_release(count);
    yt_named_tensors_clear(&sd);
    yt_module_release(bn);
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- modes */

Test(nn_modules, train_and_eval_reach_every_descendant)
{
    yt_module *inner = yt_sequential_new();
    add(inner, yt_dropout_new(0.5));
    yt_module *outer = yt_sequential_new();
    add(outer, yt_batch_norm1d_new(4, 1e-5, 0.1, true, true));
    cr_assert_eq(yt_sequential_append(outer, inner), YT_OK);
    cr_assert(yt_module_is_training(outer) && yt_module_is_training(inner));
    yt_module_train(outer, false);
    cr_assert(!yt_module_is_training(outer));
    cr_assert(!yt_module_is_training(yt_module_child(outer, 0)));
    cr_assert(!yt_module_is_training(yt_module_get_child(outer, "1.0")));
    yt_module_train(outer, true);
    cr_assert(yt_module_is_training(yt_module_get_child(outer, "1.0")));
    yt_module_release(inner);
    yt_module_release(outer);
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- user-defined modules */

static int scale_ctx_released;

/* y = x * alpha + child(x): a parameter and a child, as a user would write one. */
static yt_tensor *
scale_forward(yt_module *m, yt_tensor *const *in, int n)
{
    cr_assert_eq(n, 1, "the kind's n_inputs keeps other counts out");
    yt_tensor *alpha = yt_module_get(m, "alpha");
    yt_tensor *scaled = yt_mul(in[0], alpha);
    yt_tensor *branch = yt_module_forward(yt_module_child(m, 0), in[0]);
    yt_tensor *out = yt_add(scaled, branch);
    yt_release(branch);
    yt_release(scaled);
    yt_release(alpha);
    return out;
}

static yt_status
scale_describe(const yt_module *m, char *buf, size_t cap)
{
    snprintf(buf, cap, "tag=%s", (const char *)yt_module_ctx((yt_module *)m));
    return YT_OK;
}

static void
scale_release(void *ctx)
{
    (void)ctx;
    scale_ctx_released++;
}

static const yt_module_kind scale_kind = {
    .name = "Scale",
    .forward = scale_forward,
    .describe = scale_describe,
    .release_ctx = scale_release,
    .n_inputs = 1,
};

Test(nn_modules, user_defined_kind_with_parameter_and_child)
{
    yt_manual_seed(9);
    scale_ctx_released = 0;
    static char tag[] = "demo";
    yt_module *m = yt_module_new(&scale_kind, tag);
    cr_assert_not_null(m);
    cr_assert_str_eq(yt_module_kind_name(m), "Scale");
    cr_assert_eq(yt_module_kind_of(m), &scale_kind);
    yt_tensor *alpha = yt_scalar_tensor(yt_float(3.0), YT_DTYPE_F32);
    cr_assert_eq(yt_module_register_parameter(m, "alpha", alpha), YT_OK, "%s", yt_errmsg());
    cr_assert(yt_requires_grad(alpha));
    yt_module *lin = yt_linear_new(2, 2, false);
    cr_assert_eq(yt_module_add_child(m, "proj", lin), YT_OK);
    yt_tensor *step = yt_scalar_tensor(yt_int(0), YT_DTYPE_I64);
    cr_assert_eq(yt_module_register_buffer(m, "step", step), YT_OK);

    yt_named_tensors sd = YT_NAMED_TENSORS_INIT;
    cr_assert_eq(yt_module_state_dict(m, &sd), YT_OK);
    static const char *const names[] = {"alpha", "step", "proj.weight"};
    expect_names(&sd, names, 3);
    yt_named_tensors_clear(&sd);
    cr_assert_eq(yt_module_num_parameters(m), 1 + 4);

    /* works inside a Sequential too (forward's temporaries are its own to release) */
    yt_module *seq = yt_sequential_new();
    cr_assert_eq(yt_sequential_append(seq, m), YT_OK);
    yt_scope_begin();
    const float xs[2] = {1, -2};
    const int64_t shape[2] = {1, 2};
    yt_tensor *x = yt_tensor_from_data(xs, shape, 2, YT_DTYPE_F32);
    yt_tensor *y = yt_module_forward(seq, x);
    yt_tensor *expected =
        yt_add(yt_mul_scalar(x, yt_float(3.0)), yt_linear(x, yt_module_get(lin, "weight")));
    cr_assert_lt(test_max_abs_diff(y, expected), 1e-6);
    cr_assert_eq(yt_backward(yt_sum(y), NULL, NULL), YT_OK, "%s", yt_errmsg());
    cr_assert_float_eq(yt_item(yt_grad(alpha)), -1.0, 1e-6); /* d/d alpha sum(x * alpha) */
    cr_assert_null(yt_module_forward2(m, x, x));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "Scale: forward takes 1 input, got 2");
    yt_scope_end();

    yt_status st;
    char *text = capture(do_print, seq, NULL, &st);
    cr_assert_str_eq(text, "Sequential(\n"
                           "  (0): Scale(\n"
                           "    tag=demo\n"
                           "    (proj): Linear(in_features=2, out_features=2, bias=False)\n"
                           "  )\n"
                           ")\n");
    free(text);

    yt_release(step);
    yt_release(alpha);
    yt_module_release(lin);
    yt_module_release(m);
    cr_assert_eq(scale_ctx_released, 0, "still held by the Sequential");
    yt_module_release(seq);
    cr_assert_eq(scale_ctx_released, 1);
    YT_ASSERT_NO_LEAKS();
}

Test(nn_modules, registration_errors_name_the_function_and_argument)
{
    yt_module *m = yt_sequential_new();
    const int64_t two = 2;
    yt_tensor *t = yt_zeros(&two, 1);
    cr_assert_eq(yt_module_register_parameter(m, "w", t), YT_OK);
    cr_assert_eq(yt_module_register_parameter(m, "w", t), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "module_register_parameter: Sequential already has a parameter, "
                                  "buffer or child 'w'");
    cr_assert_eq(yt_module_register_buffer(m, "a.b", t), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "module_register_buffer: name 'a.b' contains '.'");
    cr_assert_eq(yt_module_register_buffer(m, "", t), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "module_register_buffer: name is empty");
    yt_tensor *nonleaf = yt_mul_scalar(t, yt_float(2.0));
    cr_assert_eq(yt_module_register_parameter(m, "v", nonleaf), YT_ERR_STATE);
    YT_ASSERT_ERROR(YT_ERR_STATE, "module_register_parameter: 'v' is not a leaf");
    yt_tensor *ints = yt_zeros_ex(&two, 1, YT_DTYPE_I64, YT_DEVICE_CPU);
    cr_assert_eq(yt_module_register_parameter(m, "i", ints), YT_ERR_DTYPE);
    YT_ASSERT_ERROR(YT_ERR_DTYPE, "module_register_parameter: 'i' is i64");
    cr_assert_eq(yt_module_register_buffer(m, "i", ints), YT_OK); /* buffers take any dtype */

    /* cycles */
    yt_module *child = yt_sequential_new();
    cr_assert_eq(yt_module_add_child(m, "c", child), YT_OK);
    cr_assert_eq(yt_module_add_child(child, "back", m), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "module_add_child: adding the Sequential as child 'back'");
    cr_assert_eq(yt_module_add_child(m, "self", m), YT_ERR_VALUE);
    yt_module *lin = yt_linear_new(2, 2, true);
    cr_assert_eq(yt_sequential_append(lin, child), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "sequential_append: seq is a Linear, not a Sequential");

    /* lookups */
    cr_assert_null(yt_module_get(m, "nope"));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "module_get: the Sequential has no parameter or buffer 'nope'");
    cr_assert_null(yt_module_get(m, "c.x.y"));
    cr_assert_null(yt_module_get_child(m, "zz"));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "module_get_child: the Sequential has no child 'zz'");
    cr_assert_eq(yt_module_get_child(m, "c"), child);
    cr_assert_eq(yt_module_child_count(m), 1);
    cr_assert_str_eq(yt_module_child_name(m, 0), "c");
    cr_assert_null(yt_module_child(m, 1));
    cr_assert_null(yt_module_child_name(m, -1));

    /* constructors and NULL handling */
    cr_assert_null(yt_module_new(NULL, NULL));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "module_new: kind is NULL");
    yt_clear_error();
    cr_assert_null(yt_module_forward(NULL, t));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "module_forward: m is NULL");
    cr_assert_null(yt_linear_new(0, 3, true));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "linear_new: in_features=0 must be positive");
    cr_assert_null(yt_module_forward(NULL, t)); /* a failed constructor's NULL keeps its error */
    YT_ASSERT_ERROR(YT_ERR_VALUE, "linear_new: in_features=0 must be positive");
    yt_module_release(NULL);
    yt_module_train(NULL, false);

    yt_module_release(lin);
    yt_module_release(child);
    yt_release(ints);
    yt_release(nonleaf);
    yt_release(t);
    yt_module_release(m);
    YT_ASSERT_NO_LEAKS();
}

Test(nn_modules, forward_errors_name_the_module)
{
    yt_manual_seed(10);
    yt_module *lin = yt_linear_new(4, 2, true);
    const int64_t bad[2] = {3, 5};
    yt_tensor *x = yt_randn(bad, 2);
    cr_assert_null(yt_module_forward(lin, x));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "Linear(in_features=4, out_features=2): input.size(-1)=5 does "
                                  "not match in_features=4");
    cr_assert_null(yt_module_forward2(lin, x, x));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "Linear: forward takes 1 input, got 2");
    yt_module *ce = yt_cross_entropy_loss_new(NULL);
    cr_assert_null(yt_module_forward(ce, x));
    YT_ASSERT_ERROR(YT_ERR_VALUE,
                    "CrossEntropyLoss: forward takes 2 inputs (input, target), got 1");
    cr_assert_null(yt_module_forward_n(ce, NULL, 0));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "module_forward: CrossEntropyLoss: needs at least one input");
    /* a NULL input (from a failed op) keeps the op's error */
    cr_assert_null(yt_module_forward(lin, yt_mm(x, x)));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "mm:");
    yt_release(x);
    yt_module_release(ce);
    yt_module_release(lin);
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- sharing and dtypes */

Test(nn_modules, shared_parameters_are_listed_once_but_saved_under_each_name)
{
    yt_manual_seed(11);
    yt_module *lin = yt_linear_new(3, 3, true);
    yt_module *seq = yt_sequential_new();
    cr_assert_eq(yt_sequential_append(seq, lin), YT_OK);
    add(seq, yt_tanh_new());
    cr_assert_eq(yt_sequential_append(seq, lin), YT_OK); /* the same layer twice (tied weights) */
    yt_named_tensors params = YT_NAMED_TENSORS_INIT, sd = YT_NAMED_TENSORS_INIT;
    cr_assert_eq(yt_module_parameters(seq, &params), YT_OK);
    static const char *const once[] = {"0.weight", "0.bias"};
    expect_names(&params, once, 2);
    cr_assert_eq(yt_module_num_parameters(seq), 12);
    cr_assert_eq(yt_module_state_dict(seq, &sd), YT_OK);
    static const char *const twice[] = {"0.weight", "0.bias", "2.weight", "2.bias"};
    expect_names(&sd, twice, 4);
    yt_named_tensors_clear(&params);
    yt_named_tensors_clear(&sd);

    /* module_to keeps them shared */
    cr_assert_eq(yt_module_to(seq, YT_DTYPE_F64), YT_OK, "%s", yt_errmsg());
    yt_tensor *a = yt_module_get(seq, "0.weight"), *b = yt_module_get(seq, "2.weight");
    cr_assert_eq(a, b);
    cr_assert_eq(yt_tensor_dtype(a), YT_DTYPE_F64);
    cr_assert(yt_requires_grad(a) && yt_is_leaf(a));
    const int64_t in[2] = {2, 3};
    yt_tensor *x = yt_randn_ex(in, 2, NULL, YT_DTYPE_F64, YT_DEVICE_CPU);
    yt_tensor *y = yt_module_forward(seq, x);
    cr_assert_eq(yt_tensor_dtype(y), YT_DTYPE_F64);
    cr_assert_eq(yt_module_to(seq, YT_DTYPE_I64), YT_ERR_DTYPE);
    YT_ASSERT_ERROR(YT_ERR_DTYPE, "module_to: dtype=i64");
    yt_release(y);
    yt_release(x);
    yt_release(a);
    yt_release(b);
    yt_module_release(lin);
    yt_module_release(seq);
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- summary and print */

Test(nn_modules, summary_lists_each_layer_with_output_shape_and_count)
{
    yt_manual_seed(12);
    yt_module *cnn = make_cnn();
    yt_module_train(yt_module_child(cnn, 2), true); /* modes must come back as they were */
    yt_module_train(yt_module_child(cnn, 1), false);
    const int64_t arg[5] = {4, 64, 1, 28, 28};
    yt_status st;
    char *text = capture(do_summary, cnn, arg, &st);
    cr_assert_eq(st, YT_OK, "%s", yt_errmsg());
    cr_assert(strstr(text, "Input shape: [64, 1, 28, 28] (f32)\n") != NULL, "%s", text);
    static const char *const rows[] = {"Sequential()",
                                       "[64, 10]",
                                       "5,258",
                                       "0: Conv2d(1, 8, kernel_size=(3, 3)",
                                       "[64, 8, 26, 26]",
                                       "80",
                                       "3: Conv2d(8, 16",
                                       "[64, 16, 11, 11]",
                                       "1,168",
                                       "6: Flatten(start_dim=1, end_dim=-1)",
                                       "[64, 400]",
                                       "7: Linear",
                                       "4,010",
                                       "Total params: 5,258\n",
                                       "Trainable params: 5,258\n"};
    const char *at = text;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const char *hit = strstr(at, rows[i]);
        cr_assert_not_null(hit, "'%s' missing (or out of order) in:\n%s", rows[i], text);
        at = hit;
    }
    free(text);
    cr_assert(yt_module_is_training(cnn) && yt_module_is_training(yt_module_child(cnn, 2)));
    cr_assert(!yt_module_is_training(yt_module_child(cnn, 1)));

    /* a shape that does not fit is the forward's error */
    const int64_t bad[5] = {4, 64, 3, 28, 28};
    text = capture(do_summary, cnn, bad, &st);
    cr_assert_eq(st, YT_ERR_SHAPE);
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "Conv2d(1, 8, kernel_size=(3, 3), stride=(1, 1)): input [64, 3, "
                                  "28, 28] has 3 channels, expected in_channels=1");
    free(text);
    yt_module_release(cnn);
    YT_ASSERT_NO_LEAKS();
}

Test(nn_modules, summary_leaves_running_statistics_alone)
{
    yt_manual_seed(13);
    yt_module *m = yt_sequential_new();
    add(m, yt_linear_new(3, 4, true));
    add(m, yt_batch_norm1d_new(4, 1e-5, 0.1, true, true));
    yt_tensor *nbt = yt_module_get(m, "1.num_batches_tracked");
    yt_tensor *rm = yt_module_get(m, "1.running_mean");
    uint64_t version = yt_tensor_version(rm);
    const int64_t arg[3] = {2, 8, 3};
    yt_status st;
    char *text = capture(do_summary, m, arg, &st);
    cr_assert_eq(st, YT_OK, "%s", yt_errmsg());
    cr_assert(strstr(text, "1: BatchNorm1d(4, eps=1e-05, momentum=0.1, affine=True, "
                           "track_running_stats=True)") != NULL,
              "%s", text);
    free(text);
    cr_assert_eq(yt_item(nbt), 0.0);
    cr_assert_eq(yt_tensor_version(rm), version);
    cr_assert(yt_module_is_training(m));
    yt_release(nbt);
    yt_release(rm);
    yt_module_release(m);
    YT_ASSERT_NO_LEAKS();
}

/* The text PyTorch 1.13 prints for the same model: print(nn.Sequential(nn.Conv2d(1, 8, 3,
 * padding=1, bias=False), nn.BatchNorm2d(8), nn.LeakyReLU(0.2), nn.Dropout(0.25),
 * nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(), nn.Linear(8, 2))) */
Test(nn_modules, print_matches_pytorch)
{
    yt_module *m = yt_sequential_new();
    yt_conv2d_options c = yt_conv2d_options_default(1, 8, 3);
    c.padding[0] = c.padding[1] = 1;
    c.bias = false;
    add(m, yt_conv2d_new(&c));
    add(m, yt_batch_norm2d_new(8, 1e-5, 0.1, true, true));
    add(m, yt_leaky_relu_new(0.2));
    add(m, yt_dropout_new(0.25));
    add(m, yt_adaptive_avg_pool2d_new(1, 1));
    add(m, yt_flatten_new(1, -1));
    add(m, yt_linear_new(8, 2, true));
    yt_status st;
    char *text = capture(do_print, m, NULL, &st);
    cr_assert_str_eq(
        text,
        "Sequential(\n"
        "  (0): Conv2d(1, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), bias=False)\n"
        "  (1): BatchNorm2d(8, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)\n"
        "  (2): LeakyReLU(negative_slope=0.2)\n"
        "  (3): Dropout(p=0.25, inplace=False)\n"
        "  (4): AdaptiveAvgPool2d(output_size=(1, 1))\n"
        "  (5): Flatten(start_dim=1, end_dim=-1)\n"
        "  (6): Linear(in_features=8, out_features=2, bias=True)\n"
        ")\n");
    free(text);
    yt_module_release(m);
    YT_ASSERT_NO_LEAKS();
}

/* What a config checker does before training: the output shape of each layer in turn, so a
 * layer whose input does not fit is found by index. */
Test(nn_modules, output_shape_layer_by_layer)
{
    yt_manual_seed(14);
    yt_module *cnn = make_cnn();
    int64_t shape[YT_MAX_DIM] = {64, 1, 28, 28};
    int ndim = 4;
    cr_assert_eq(yt_module_output_shape(cnn, shape, ndim, shape, &ndim), YT_OK, "%s", yt_errmsg());
    cr_assert(ndim == 2 && shape[0] == 64 && shape[1] == 10);

    yt_module *bad = yt_sequential_new();
    add(bad, yt_flatten_new(1, -1));
    add(bad, yt_linear_new(784, 32, true));
    add(bad, yt_relu_new());
    add(bad, yt_linear_new(64, 10, true)); /* 32 != 64 */
    int64_t s[YT_MAX_DIM] = {8, 1, 28, 28};
    int nd = 4, failed = -1;
    for (int i = 0; i < yt_module_child_count(bad) && failed < 0; i++)
        if (yt_module_output_shape(yt_module_child(bad, i), s, nd, s, &nd) != YT_OK)
            failed = i;
    cr_assert_eq(failed, 3);
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "Linear(in_features=64, out_features=10): input.size(-1)=32 "
                                  "does not match in_features=64");
    cr_assert(yt_module_is_training(bad) && yt_module_is_training(yt_module_child(bad, 3)));
    cr_assert_eq(yt_module_output_shape(bad, s, 2, NULL, &nd), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "module_output_shape: out_shape is NULL");
    cr_assert_eq(yt_module_output_shape(bad, s, 9, s, &nd), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "module_output_shape: ndim out of 0..8");
    yt_module_release(bad);
    yt_module_release(cnn);
    YT_ASSERT_NO_LEAKS();
}
