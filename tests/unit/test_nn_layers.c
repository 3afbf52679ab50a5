/* The layers one by one (include/yaten/nn.h): default initialisation statistics, train/eval
 * behaviour of BatchNorm and Dropout, output shapes, the argument checks of every constructor,
 * and the init module. Values against PyTorch are in tests/nn/test_nn_vs_torch.py. */
#include <stdio.h>

#include "test_util.h"

/* ---------------------------------------------------------------- helpers */

typedef struct stats {
    double min, max, mean, std;
} stats;

static stats
stats_of(yt_tensor *t)
{
    int64_t n;
    double *v = test_values(t, &n);
    stats s = {INFINITY, -INFINITY, 0, 0};
    for (int64_t i = 0; i < n; i++) {
        s.min = fmin(s.min, v[i]);
        s.max = fmax(s.max, v[i]);
        s.mean += v[i];
    }
    s.mean /= (double)n;
    for (int64_t i = 0; i < n; i++)
        s.std += (v[i] - s.mean) * (v[i] - s.mean);
    s.std = sqrt(s.std / (double)(n - 1));
    free(v);
    return s;
}

/* Runs `m` on randn(in) and checks the output shape. */
static void
expect_output(yt_module *m, const int64_t *in, int in_nd, const int64_t *out, int out_nd)
{
    cr_assert_not_null(m, "%s", yt_errmsg());
    yt_tensor *x = yt_randn(in, in_nd);
    yt_tensor *y = yt_module_forward(m, x);
    test_expect_sizes(y, out, out_nd);
    yt_release(y);
    yt_release(x);
}

/* A uniform [-b, b] sample of n values has its extremes within b * 4/n of +-b (w.h.p.) and
 * standard deviation b / sqrt(3). */
static void
expect_uniform(yt_tensor *t, double bound)
{
    stats s = stats_of(t);
    cr_assert(s.min >= -bound && s.max <= bound, "[%g, %g] outside +-%g", s.min, s.max, bound);
    cr_assert(s.max > 0.97 * bound && s.min < -0.97 * bound, "[%g, %g] does not reach +-%g", s.min,
              s.max, bound);
    cr_assert(fabs(s.std - bound / sqrt(3.0)) < 0.03 * bound / sqrt(3.0), "std %g, expected %g",
              s.std, bound / sqrt(3.0));
    cr_assert(fabs(s.mean) < 0.03 * bound, "mean %g", s.mean);
}

/* ---------------------------------------------------------------- default initialisation */

Test(nn_layers, linear_and_conv_default_init_is_kaiming_uniform_a_sqrt5)
{
    yt_manual_seed(20);
    /* kaiming_uniform(a=sqrt(5)): gain sqrt(2 / (1 + 5)), bound gain * sqrt(3 / fan_in) =
     * 1 / sqrt(fan_in); bias U(-1/sqrt(fan_in), 1/sqrt(fan_in)) */
    yt_module *lin = yt_linear_new(784, 256, true);
    yt_tensor *w = yt_module_get(lin, "weight"), *b = yt_module_get(lin, "bias");
    expect_uniform(w, 1.0 / sqrt(784.0));
    stats sb = stats_of(b);
    cr_assert(sb.min >= -1.0 / sqrt(784.0) && sb.max <= 1.0 / sqrt(784.0));
    yt_release(w);
    yt_release(b);
    yt_module_release(lin);

    yt_conv2d_options o = yt_conv2d_options_default(16, 64, 3); /* fan_in 16 * 9 */
    yt_module *conv = yt_conv2d_new(&o);
    w = yt_module_get(conv, "weight");
    expect_uniform(w, 1.0 / sqrt(144.0));
    yt_release(w);
    yt_module_release(conv);

    /* transposed: fan_in from weight [in, out / groups, k, k] is (out / groups) * k * k */
    yt_conv_transpose2d_options t = yt_conv_transpose2d_options_default(32, 64, 4);
    t.groups = 2;
    yt_module *tconv = yt_conv_transpose2d_new(&t);
    w = yt_module_get(tconv, "weight");
    const int64_t wsize[4] = {32, 32, 4, 4};
    test_expect_sizes(w, wsize, 4);
    expect_uniform(w, 1.0 / sqrt(32.0 * 16.0));
    yt_release(w);
    yt_module_release(tconv);
    YT_ASSERT_NO_LEAKS();
}

Test(nn_layers, init_functions_follow_pytorchs_formulas)
{
    const int64_t size[2] = {300, 500}; /* fan_in 500, fan_out 300 */
    yt_tensor *t = yt_empty(size, 2);
    yt_generator *g = yt_generator_create(21);

    cr_assert_eq(yt_init_kaiming_uniform_(t, 0.0, "fan_in", "relu", g), YT_OK, "%s", yt_errmsg());
    expect_uniform(t, sqrt(2.0) * sqrt(3.0 / 500.0));
    cr_assert_eq(yt_init_kaiming_uniform_(t, 0.0, "fan_out", NULL, g), YT_OK); /* leaky_relu(0) */
    expect_uniform(t, sqrt(2.0) * sqrt(3.0 / 300.0));
    cr_assert_eq(yt_init_xavier_uniform_(t, 2.0, g), YT_OK);
    expect_uniform(t, 2.0 * sqrt(6.0 / 800.0));
    cr_assert_eq(yt_init_uniform_(t, -0.5, 0.5, g), YT_OK);
    expect_uniform(t, 0.5);

    cr_assert_eq(yt_init_kaiming_normal_(t, 0.0, "fan_in", "tanh", g), YT_OK);
    stats s = stats_of(t);
    double want = (5.0 / 3.0) / sqrt(500.0);
    cr_assert(fabs(s.std - want) < 0.02 * want, "kaiming_normal std %g, expected %g", s.std, want);
    cr_assert_eq(yt_init_xavier_normal_(t, 1.0, g), YT_OK);
    s = stats_of(t);
    want = sqrt(2.0 / 800.0);
    cr_assert(fabs(s.std - want) < 0.02 * want, "xavier_normal std %g, expected %g", s.std, want);
    cr_assert_eq(yt_init_normal_(t, 3.0, 0.5, g), YT_OK);
    s = stats_of(t);
    cr_assert(fabs(s.mean - 3.0) < 0.01 && fabs(s.std - 0.5) < 0.01, "normal: %g, %g", s.mean,
              s.std);

    cr_assert_eq(yt_init_constant_(t, 0.25), YT_OK);
    s = stats_of(t);
    cr_assert(s.min == 0.25 && s.max == 0.25);
    cr_assert_eq(yt_init_ones_(t), YT_OK);
    cr_assert_eq(stats_of(t).min, 1.0);
    cr_assert_eq(yt_init_zeros_(t), YT_OK);
    cr_assert_eq(stats_of(t).max, 0.0);

    /* the same generator state draws the same numbers */
    yt_tensor *u = yt_empty(size, 2);
    yt_generator_manual_seed(g, 5);
    yt_init_xavier_uniform_(t, 1.0, g);
    yt_generator_manual_seed(g, 5);
    yt_init_xavier_uniform_(u, 1.0, g);
    cr_assert_eq(test_max_abs_diff(t, u), 0.0);

    /* parameters (leaves requiring grad) are filled outside autograd */
    yt_set_requires_grad(u, true);
    cr_assert_eq(yt_init_kaiming_uniform_(u, sqrt(5.0), NULL, NULL, g), YT_OK, "%s", yt_errmsg());
    cr_assert(yt_is_leaf(u) && yt_requires_grad(u));

    int64_t fan_in = 0, fan_out = 0;
    const int64_t csize[4] = {8, 4, 3, 5};
    yt_tensor *c = yt_empty(csize, 4);
    cr_assert_eq(yt_init_calculate_fans(c, &fan_in, &fan_out), YT_OK);
    cr_assert(fan_in == 4 * 15 && fan_out == 8 * 15);
    yt_release(c);
    yt_release(u);
    yt_release(t);
    yt_generator_release(g);
    YT_ASSERT_NO_LEAKS();
}

Test(nn_layers, calculate_gain_and_init_errors)
{
    cr_assert_eq(yt_init_calculate_gain("linear", 0), 1.0);
    cr_assert_eq(yt_init_calculate_gain("conv_transpose2d", 0), 1.0);
    cr_assert_eq(yt_init_calculate_gain("sigmoid", 0), 1.0);
    cr_assert_eq(yt_init_calculate_gain("tanh", 0), 5.0 / 3.0);
    cr_assert_eq(yt_init_calculate_gain("relu", 0), sqrt(2.0));
    cr_assert_eq(yt_init_calculate_gain("leaky_relu", 0.2), sqrt(2.0 / 1.04));
    cr_assert_eq(yt_init_calculate_gain("selu", 0), 0.75);
    cr_assert(isnan(yt_init_calculate_gain("softmax", 0)));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "init_calculate_gain: unsupported nonlinearity 'softmax'");

    const int64_t n = 5;
    yt_tensor *v = yt_empty(&n, 1);
    cr_assert_eq(yt_init_xavier_uniform_(v, 1.0, NULL), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "init_xavier_uniform_: t is 1-D; fan in and fan out need at "
                                  "least 2 dimensions");
    const int64_t size[2] = {3, 4};
    yt_tensor *t = yt_empty(size, 2);
    cr_assert_eq(yt_init_kaiming_normal_(t, 0, "fan_middle", NULL, NULL), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "init_kaiming_normal_: mode='fan_middle' is not 'fan_in' or "
                                  "'fan_out'");
    cr_assert_eq(yt_init_kaiming_uniform_(t, 0, NULL, "swish", NULL), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "init_kaiming_uniform_: init_calculate_gain: unsupported");
    cr_assert_eq(yt_init_uniform_(t, 1.0, 0.0, NULL), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "init_uniform_: [a, b) = [1, 0) is not a finite range");
    cr_assert_eq(yt_init_normal_(t, 0.0, -1.0, NULL), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "init_normal_: mean=0, std=-1");
    yt_tensor *ints = yt_zeros_ex(size, 2, YT_DTYPE_I64, YT_DEVICE_CPU);
    cr_assert_eq(yt_init_ones_(ints), YT_ERR_DTYPE);
    YT_ASSERT_ERROR(YT_ERR_DTYPE, "init_ones_: t is i64; initialisers fill floating tensors");
    yt_clear_error();
    cr_assert_eq(yt_init_zeros_(NULL), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "init_zeros_: t is NULL");
    yt_release(ints);
    yt_release(t);
    yt_release(v);
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- BatchNorm */

Test(nn_layers, batch_norm_train_updates_running_stats_and_eval_uses_them)
{
    /* x[n, c] = n + 10 c for n = 0..3: channel c has mean 1.5 + 10 c, biased variance 1.25,
     * unbiased 5/3. */
    double xs[4 * 2];
    for (int n = 0; n < 4; n++)
        for (int c = 0; c < 2; c++)
            xs[n * 2 + c] = n + 10.0 * c;
    const int64_t shape[2] = {4, 2}, two = 2;
    yt_tensor *x = test_from(xs, shape, 2, YT_DTYPE_F32);
    yt_module *bn = yt_batch_norm1d_new(2, 1e-5, 0.1, true, true);
    yt_tensor *rm = yt_module_get(bn, "running_mean"), *rv = yt_module_get(bn, "running_var");
    yt_tensor *nbt = yt_module_get(bn, "num_batches_tracked");
    cr_assert_eq(yt_tensor_dtype(nbt), YT_DTYPE_I64);
    cr_assert_eq(yt_tensor_dim(nbt), 0);

    yt_tensor *y = yt_module_forward(bn, x);
    int64_t n;
    double *out = test_values(y, &n);
    for (int i = 0; i < 4; i++) /* normalised with the batch statistics */
        cr_assert_float_eq(out[i * 2], (i - 1.5) / sqrt(1.25 + 1e-5), 1e-5);
    free(out);
    const double mean1[2] = {0.1 * 1.5, 0.1 * 11.5},
                 var1[2] = {0.9 + 0.1 * 5.0 / 3.0, 0.9 + 0.1 * 5.0 / 3.0};
    double *m = test_values(rm, &n), *v = test_values(rv, &n);
    for (int c = 0; c < 2; c++) {
        cr_assert_float_eq(m[c], mean1[c], 1e-6);
        cr_assert_float_eq(v[c], var1[c], 1e-6);
    }
    free(m);
    free(v);
    cr_assert_eq(yt_item(nbt), 1.0);
    yt_release(y);

    /* eval: (x - running_mean) / sqrt(running_var + eps), and no update */
    yt_module_train(bn, false);
    y = yt_module_forward(bn, x);
    out = test_values(y, &n);
    cr_assert_float_eq(out[0], (0 - mean1[0]) / sqrt(var1[0] + 1e-5), 1e-5);
    cr_assert_float_eq(out[7], (13 - mean1[1]) / sqrt(var1[1] + 1e-5), 1e-5);
    free(out);
    cr_assert_eq(yt_item(nbt), 1.0);
    yt_release(y);
    yt_release(rm);
    yt_release(rv);
    yt_release(nbt);
    yt_module_release(bn);

    /* momentum NAN: cumulative average, 1 / num_batches_tracked */
    bn = yt_batch_norm1d_new(2, 1e-5, NAN, false, true);
    yt_tensor *p = yt_module_get(bn, "weight");
    cr_assert_null(p, "affine=false has no weight");
    yt_clear_error();
    yt_tensor *x2 = yt_add_scalar(x, yt_float(1.0));
    yt_release(yt_module_forward(bn, x));  /* factor 1: running mean = batch mean */
    yt_release(yt_module_forward(bn, x2)); /* factor 1/2: average of the two batch means */
    rm = yt_module_get(bn, "running_mean");
    m = test_values(rm, &n);
    cr_assert_float_eq(m[0], 2.0, 1e-6); /* (1.5 + 2.5) / 2 */
    cr_assert_float_eq(m[1], 12.0, 1e-6);
    free(m);
    yt_release(rm);
    yt_release(x2);
    yt_module_release(bn);

    /* without running stats: no buffers, batch statistics in eval too */
    bn = yt_batch_norm1d_new(2, 1e-5, 0.1, true, false);
    yt_named_tensors sd = YT_NAMED_TENSORS_INIT;
    yt_module_state_dict(bn, &sd);
    cr_assert_eq(sd.count, 2);
    yt_named_tensors_clear(&sd);
    yt_module_train(bn, false);
    y = yt_module_forward(bn, x);
    out = test_values(y, &n);
    cr_assert_float_eq(out[0], -1.5 / sqrt(1.25 + 1e-5), 1e-5);
    free(out);
    yt_release(y);
    yt_module_release(bn);
    (void)two;
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

Test(nn_layers, batch_norm_errors)
{
    yt_module *bn = yt_batch_norm2d_new(3, 1e-5, 0.1, true, true);
    const int64_t three_d[3] = {2, 3, 4}, wrong_c[4] = {2, 4, 5, 5}, one[4] = {1, 3, 1, 1};
    yt_tensor *x = yt_randn(three_d, 3);
    cr_assert_null(yt_module_forward(bn, x));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "BatchNorm2d(3): expected 4-D input, got [2, 3, 4]");
    yt_release(x);
    x = yt_randn(wrong_c, 4);
    cr_assert_null(yt_module_forward(bn, x));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "BatchNorm2d(3): input [2, 4, 5, 5] has 4 channels");
    yt_release(x);
    x = yt_randn(one, 4);
    cr_assert_null(yt_module_forward(bn, x));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "BatchNorm2d(3): expected more than 1 value per channel when "
                                  "training");
    yt_module_train(bn, false);
    yt_tensor *y = yt_module_forward(bn, x); /* fine in eval */
    cr_assert_not_null(y, "%s", yt_errmsg());
    yt_release(y);
    yt_release(x);
    yt_module_release(bn);

    cr_assert_null(yt_batch_norm1d_new(0, 1e-5, 0.1, true, true));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "batch_norm1d_new: num_features=0 must be positive");
    cr_assert_null(yt_batch_norm2d_new(4, -1, 0.1, true, true));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "batch_norm2d_new: eps=-1 must be finite and >= 0");
    cr_assert_null(yt_batch_norm2d_new(4, 1e-5, 1.5, true, true));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "batch_norm2d_new: momentum=1.5 must be in [0, 1]");
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- Dropout */

Test(nn_layers, dropout_drops_in_training_only_and_follows_its_generator)
{
    const int64_t size[2] = {200, 500};
    yt_tensor *x = yt_ones(size, 2);
    yt_module *d = yt_dropout_new(0.3);
    yt_generator *g = yt_generator_create(22);
    yt_module_set_generator(d, g);

    yt_tensor *y = yt_module_forward(d, x);
    int64_t n;
    double *v = test_values(y, &n);
    int64_t zeros = 0;
    for (int64_t i = 0; i < n; i++) {
        if (v[i] == 0)
            zeros++;
        else
            cr_assert_float_eq(v[i], 1.0 / 0.7, 1e-6, "kept values are scaled by 1 / (1 - p)");
    }
    free(v);
    double frac = (double)zeros / (double)n; /* 1e5 draws: sd sqrt(.21 / 1e5) = 0.0014 */
    cr_assert(fabs(frac - 0.3) < 0.01, "dropped %g, expected 0.3", frac);

    /* the generator decides the mask */
    yt_generator_manual_seed(g, 22);
    yt_tensor *y2 = yt_module_forward(d, x);
    cr_assert_eq(test_max_abs_diff(y, y2), 0.0);
    yt_release(y2);
    yt_release(y);

    /* eval: the identity */
    yt_module_train(d, false);
    y = yt_module_forward(d, x);
    cr_assert_eq(test_max_abs_diff(x, y), 0.0);
    yt_release(y);
    yt_module_release(d);

    /* a generator set on a container reaches dropouts added later too */
    yt_module *seq = yt_sequential_new();
    yt_module_set_generator(seq, g);
    yt_module *d2 = yt_dropout_new(1.0);
    cr_assert_eq(yt_sequential_append(seq, d2), YT_OK);
    yt_module_release(d2);
    y = yt_module_forward(seq, x);
    yt_tensor *none = yt_zeros_like(x);
    cr_assert_eq(test_max_abs_diff(y, none), 0.0, "p=1 drops everything");
    yt_release(none);
    yt_release(y);
    yt_module_release(seq);

    cr_assert_null(yt_dropout_new(1.5));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "dropout_new: p=1.5 must be in [0, 1]");
    yt_generator_release(g);
    yt_release(x);
    yt_clear_error();
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- convolutions and pooling */

Test(nn_layers, convolution_shapes_and_padding_modes)
{
    yt_manual_seed(23);
    yt_conv2d_options o = yt_conv2d_options_default(3, 5, 3);
    o.stride[0] = 2;
    o.padding[1] = 2;
    const int64_t in[4] = {2, 3, 11, 10};
    /* (11 + 0 - 3) / 2 + 1 = 5, (10 + 4 - 3) / 1 + 1 = 12 */
    const int64_t out[4] = {2, 5, 5, 12};
    yt_module *m = yt_conv2d_new(&o);
    expect_output(m, in, 4, out, 4);
    yt_module_release(m);

    o = yt_conv2d_options_default(3, 4, 4);
    o.padding_same = true;
    o.dilation[1] = 2;
    const int64_t same[4] = {2, 4, 11, 10};
    m = yt_conv2d_new(&o);
    expect_output(m, in, 4, same, 4);
    yt_module_release(m);

    /* reflect padding = yt_pad(reflect) then an unpadded convolution */
    o = yt_conv2d_options_default(3, 2, 3);
    o.padding[0] = o.padding[1] = 1;
    o.padding_mode = YT_PADDING_REFLECT;
    m = yt_conv2d_new(&o);
    yt_tensor *x = yt_randn(in, 4);
    yt_tensor *y = yt_module_forward(m, x);
    const int64_t pad[4] = {1, 1, 1, 1};
    yt_tensor *xp = yt_pad_ex(x, pad, 4, "reflect", NULL);
    yt_tensor *w = yt_module_get(m, "weight"), *b = yt_module_get(m, "bias");
    yt_tensor *ref = yt_conv2d_ex(xp, w, b, NULL, 0, NULL, 0, NULL, 0, 1);
    cr_assert_lt(test_max_abs_diff(y, ref), 1e-6);
    yt_release(ref);
    yt_release(w);
    yt_release(b);
    yt_release(xp);
    yt_release(y);
    yt_release(x);
    yt_module_release(m);

    yt_conv1d_options o1 = yt_conv1d_options_default(2, 6, 5);
    o1.stride = 3;
    o1.groups = 2;
    o1.bias = false;
    m = yt_conv1d_new(&o1);
    yt_named_tensors sd = YT_NAMED_TENSORS_INIT;
    yt_module_state_dict(m, &sd);
    cr_assert_eq(sd.count, 1);
    const int64_t w1[3] = {6, 1, 5};
    test_expect_sizes(sd.tensors[0], w1, 3);
    yt_named_tensors_clear(&sd);
    const int64_t in1[3] = {4, 2, 20}, out1[3] = {4, 6, 6}; /* (20 - 5) / 3 + 1 */
    expect_output(m, in1, 3, out1, 3);
    yt_module_release(m);

    yt_conv_transpose2d_options ot = yt_conv_transpose2d_options_default(4, 3, 3);
    ot.stride[0] = ot.stride[1] = 2;
    ot.padding[0] = ot.padding[1] = 1;
    ot.output_padding[0] = 1;
    m = yt_conv_transpose2d_new(&ot);
    /* (H - 1) s - 2 p + (k - 1) + output_padding + 1: 4 * 2 - 2 + 2 + 1 + 1 = 10, and 9 */
    const int64_t tin[4] = {2, 4, 5, 5}, tout[4] = {2, 3, 10, 9};
    expect_output(m, tin, 4, tout, 4);
    yt_module_release(m);
    YT_ASSERT_NO_LEAKS();
}

Test(nn_layers, convolution_constructor_errors_name_the_option)
{
    yt_conv2d_options o = yt_conv2d_options_default(3, 4, 3);
    o.groups = 2;
    cr_assert_null(yt_conv2d_new(&o));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "conv2d_new: groups=2 must divide in_channels=3");
    o = yt_conv2d_options_default(3, 4, 0);
    cr_assert_null(yt_conv2d_new(&o));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "conv2d_new: kernel_size[0]=0 must be positive");
    o = yt_conv2d_options_default(3, 4, 3);
    o.stride[1] = 2;
    o.padding_same = true;
    cr_assert_null(yt_conv2d_new(&o));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "conv2d_new: padding_same needs stride 1, got stride[1]=2");
    o = yt_conv2d_options_default(3, 4, 3);
    o.padding[0] = -1;
    cr_assert_null(yt_conv2d_new(&o));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "conv2d_new: padding[0]=-1 must be >= 0");
    o = yt_conv2d_options_default(0, 4, 3);
    cr_assert_null(yt_conv2d_new(&o));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "conv2d_new: in_channels=0 must be positive");
    cr_assert_null(yt_conv2d_new(NULL));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "conv2d_new: o is NULL");
    yt_conv1d_options o1 = yt_conv1d_options_default(2, 2, 3);
    o1.dilation = 0;
    cr_assert_null(yt_conv1d_new(&o1));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "conv1d_new: dilation=0 must be positive");
    yt_conv_transpose2d_options t = yt_conv_transpose2d_options_default(2, 2, 3);
    t.output_padding[1] = 1;
    cr_assert_null(yt_conv_transpose2d_new(&t));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "conv_transpose2d_new: output_padding[1]=1 must be >= 0 and "
                                  "smaller than stride[1]=1 or dilation[1]=1");
    /* a parameter too large to make is named with its layer (not as empty's failure) */
    o = yt_conv2d_options_default(1LL << 30, 1LL << 30, 1 << 20);
    cr_assert_null(yt_conv2d_new(&o));
    YT_ASSERT_ERROR(YT_ERR_NOMEM, "Conv2d: parameter 'weight': size [1073741824, 1073741824, "
                                  "1048576, 1048576] has too many elements (overflows int64)");
    cr_assert_null(yt_batch_norm2d_new(1LL << 62, 1e-5, 0.1, true, true));
    YT_ASSERT_ERROR(YT_ERR_NOMEM, "BatchNorm2d: parameter 'weight': a f32 tensor of shape "
                                  "[4611686018427387904] needs more than 2^63 bytes");

    /* input checks at forward time name the layer */
    o = yt_conv2d_options_default(3, 4, 3);
    yt_module *m = yt_conv2d_new(&o);
    const int64_t two_d[2] = {3, 8};
    yt_tensor *x = yt_randn(two_d, 2);
    cr_assert_null(yt_module_forward(m, x));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "Conv2d(3, 4, kernel_size=(3, 3), stride=(1, 1)): input is [3, "
                                  "8], expected 4-D (batched) or 3-D");
    yt_release(x);
    yt_module_release(m);
    YT_ASSERT_NO_LEAKS();
}

Test(nn_layers, pooling_shapes_values_and_errors)
{
    /* 4x4 iota: max over 2x2 windows = bottom-right corners; averages of the windows */
    const int64_t size[4] = {1, 1, 4, 4};
    yt_tensor *x = test_iota(size, 4);
    yt_module *mp = yt_max_pool2d_new(2, 0, 0);
    yt_tensor *y = yt_module_forward(mp, x);
    const double maxes[4] = {5, 7, 13, 15};
    const int64_t out[4] = {1, 1, 2, 2};
    test_expect_values(y, maxes, 4, out, 4);
    yt_release(y);
    yt_module *ap = yt_avg_pool2d_new(2, 0, 0);
    y = yt_module_forward(ap, x);
    const double means[4] = {2.5, 4.5, 10.5, 12.5};
    test_expect_values(y, means, 4, out, 4);
    yt_release(y);
    yt_module *aa = yt_adaptive_avg_pool2d_new(1, 1);
    y = yt_module_forward(aa, x);
    const double all[1] = {7.5};
    const int64_t one[4] = {1, 1, 1, 1};
    test_expect_values(y, all, 1, one, 4);
    yt_release(y);
    yt_module_release(mp);
    yt_module_release(ap);
    yt_module_release(aa);
    yt_release(x);

    yt_pool2d_options o = yt_pool2d_options_default(3);
    o.stride[0] = o.stride[1] = 2;
    o.padding[0] = o.padding[1] = 1;
    o.ceil_mode = true;
    yt_module *m = yt_max_pool2d_new_ex(&o);
    const int64_t in[4] = {2, 3, 8, 7}, pooled[4] = {2, 3, 5, 4};
    expect_output(m, in, 4, pooled, 4);
    yt_module_release(m);

    cr_assert_null(yt_max_pool2d_new(2, 0, 2));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "max_pool2d_new: padding[0]=2 must be between 0 and half of "
                                  "kernel_size[0]=2");
    cr_assert_null(yt_avg_pool2d_new(0, 0, 0));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "avg_pool2d_new: kernel_size[0]=0 must be positive");
    o = yt_pool2d_options_default(2);
    o.divisor_override = 3;
    cr_assert_null(yt_max_pool2d_new_ex(&o));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "max_pool2d_new: divisor_override and count_include_pad are "
                                  "average pooling options");
    cr_assert_null(yt_adaptive_avg_pool2d_new(0, 2));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "adaptive_avg_pool2d_new: out_h=0 must be positive");
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- norms, embedding, activations */

Test(nn_layers, norm_layers_parameters_and_outputs)
{
    yt_manual_seed(24);
    const int64_t shape[2] = {3, 4};
    yt_module *ln = yt_layer_norm_new(shape, 2, 1e-5, true);
    yt_named_tensors sd = YT_NAMED_TENSORS_INIT;
    yt_module_state_dict(ln, &sd);
    cr_assert(sd.count == 2 && strcmp(sd.names[0], "weight") == 0 &&
              strcmp(sd.names[1], "bias") == 0);
    cr_assert_eq(stats_of(sd.tensors[0]).min, 1.0);
    cr_assert_eq(stats_of(sd.tensors[1]).max, 0.0);
    yt_named_tensors_clear(&sd);
    const int64_t in[3] = {5, 3, 4};
    yt_tensor *x = yt_randn(in, 3);
    yt_tensor *y = yt_module_forward(ln, x);
    const int64_t one = 0;
    yt_tensor *row = yt_select(y, 0, one); /* each sample: mean 0, variance 1 */
    stats s = stats_of(row);
    cr_assert(fabs(s.mean) < 1e-6 && fabs(s.std * sqrt(11.0 / 12.0) - 1.0) < 1e-4, "%g %g", s.mean,
              s.std);
    yt_release(row);
    yt_release(y);
    yt_module_release(ln);

    yt_module *rms = yt_rms_norm_new(&shape[1], 1, NAN, true);
    y = yt_module_forward(rms, x);
    int64_t n;
    double *v = test_values(y, &n), sq = 0;
    for (int i = 0; i < 4; i++)
        sq += v[i] * v[i];
    cr_assert_float_eq(sq / 4, 1.0, 1e-4, "rms of a row is 1");
    free(v);
    yt_release(y);
    yt_module_release(rms);

    yt_module *gn = yt_group_norm_new(2, 6, 1e-5, false);
    cr_assert_eq(yt_module_num_parameters(gn), 0);
    const int64_t gin[4] = {2, 6, 3, 3};
    expect_output(gn, gin, 4, gin, 4);
    yt_tensor *bad = yt_randn(in, 3);
    cr_assert_null(yt_module_forward(gn, bad));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "GroupNorm(2, 6): input [5, 3, 4] must be [N, 6, ...]");
    yt_release(bad);
    yt_module_release(gn);

    cr_assert_null(yt_group_norm_new(4, 6, 1e-5, true));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "group_norm_new: num_channels=6 must be divisible by "
                                  "num_groups=4");
    const int64_t zero[1] = {0};
    cr_assert_null(yt_layer_norm_new(zero, 1, 1e-5, true));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "layer_norm_new: normalized_shape[0]=0 must be positive");
    cr_assert_null(yt_layer_norm_new(shape, 0, 1e-5, true));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "layer_norm_new: normalized_shape needs 1..8 sizes");
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

Test(nn_layers, embedding_padding_row_and_indices)
{
    yt_manual_seed(25);
    yt_module *e = yt_embedding_new(10, 3, -1); /* -1 is row 9, as PyTorch normalises it */
    yt_tensor *w = yt_module_get(e, "weight");
    yt_tensor *row = yt_select(w, 0, 9);
    cr_assert_eq(stats_of(row).min, 0.0);
    cr_assert_eq(stats_of(row).max, 0.0);
    stats s = stats_of(w); /* N(0, 1) elsewhere */
    cr_assert(s.std > 0.5 && s.std < 1.6, "std %g", s.std);
    const double idx[4] = {0, 9, 9, 2};
    const int64_t isize[2] = {2, 2}, osize[3] = {2, 2, 3};
    yt_tensor *i = test_from(idx, isize, 2, YT_DTYPE_I64);
    yt_tensor *y = yt_module_forward(e, i);
    test_expect_sizes(y, osize, 3);
    yt_tensor *total = yt_sum(y);
    cr_assert_eq(yt_backward(total, NULL, NULL), YT_OK, "%s", yt_errmsg());
    yt_release(total);
    yt_tensor *g = yt_grad(w);
    yt_tensor *grow = yt_select(g, 0, 9);
    cr_assert_eq(stats_of(grow).max, 0.0, "the padding row gets no gradient");
    yt_tensor *f = yt_to(i, YT_DTYPE_F32);
    cr_assert_null(yt_module_forward(e, f));
    YT_ASSERT_ERROR(YT_ERR_DTYPE, "Embedding(10, 3): input is f32; indices must be integers");
    cr_assert_null(yt_embedding_new(10, 3, 10));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "embedding_new: padding_idx=10 is out of range for 10 "
                                  "embeddings");
    yt_module *plain = yt_embedding_new(4, 2, YT_NONE);
    cr_assert_not_null(plain, "%s", yt_errmsg());
    yt_module_release(plain);
    yt_release(f);
    yt_release(grow);
    yt_release(g);
    yt_release(y);
    yt_release(i);
    yt_release(row);
    yt_release(w);
    yt_module_release(e);
    YT_ASSERT_NO_LEAKS();
}

Test(nn_layers, activations_are_their_ops)
{
    yt_manual_seed(26);
    const int64_t size[2] = {4, 6};
    yt_tensor *x = yt_randn(size, 2);
    struct {
        yt_module *m;
        yt_tensor *want;
    } cases[] = {
        {yt_relu_new(), yt_relu(x)},
        {yt_tanh_new(), yt_tanh(x)},
        {yt_sigmoid_new(), yt_sigmoid(x)},
        {yt_silu_new(), yt_silu(x)},
        {yt_gelu_new(NULL), yt_gelu(x)},
        {yt_gelu_new("tanh"), yt_gelu_ex(x, "tanh")},
        {yt_leaky_relu_new(0.3), yt_leaky_relu_ex(x, yt_float(0.3))},
        {yt_elu_new(0.5), yt_elu_ex(x, yt_float(0.5), yt_float(1.0), yt_float(1.0))},
        {yt_softmax_new(-1), yt_softmax(x, -1)},
        {yt_log_softmax_new(0), yt_log_softmax(x, 0)},
        {yt_flatten_new(0, -1), yt_flatten(x)},
        {yt_identity_new(), yt_retain(x)},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_assert_not_null(cases[i].m, "%s", yt_errmsg());
        yt_tensor *y = yt_module_forward(cases[i].m, x);
        cr_assert_not_null(y, "%s: %s", yt_module_kind_name(cases[i].m), yt_errmsg());
        cr_assert_eq(test_max_abs_diff(y, cases[i].want), 0.0, "%s",
                     yt_module_kind_name(cases[i].m));
        yt_release(y);
        yt_release(cases[i].want);
        yt_module_release(cases[i].m);
    }
    cr_assert_null(yt_gelu_new("fast"));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "gelu_new: approximate='fast' is not 'none' or 'tanh'");
    cr_assert_null(yt_leaky_relu_new(INFINITY));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "leaky_relu_new: negative_slope=inf is not finite");
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- losses */

Test(nn_layers, losses_wrap_their_ops_and_keep_weights_as_buffers)
{
    yt_manual_seed(27);
    const int64_t size[2] = {6, 4}, n = 6;
    yt_tensor *x = yt_randn(size, 2);
    yt_tensor *labels = yt_randint(4, &n, 1);
    yt_tensor *y = yt_randn(size, 2);
    yt_tensor *p = yt_sigmoid(x), *t = yt_rand(size, 2);
    const double wv[4] = {1, 2, 3, 0.5};
    const int64_t four = 4;
    yt_tensor *w = test_from(wv, &four, 1, YT_DTYPE_F32);

    yt_cross_entropy_options o = yt_cross_entropy_options_default();
    o.weight = w;
    o.label_smoothing = 0.2;
    o.reduction = YT_REDUCTION_SUM;
    yt_module *ce = yt_cross_entropy_loss_new(&o);
    yt_tensor *got = yt_module_forward2(ce, x, labels);
    yt_tensor *want = yt_cross_entropy_loss_ex(x, labels, w, "sum", -100, 0.2);
    cr_assert_eq(test_max_abs_diff(got, want), 0.0);
    yt_release(got);
    yt_release(want);
    yt_named_tensors sd = YT_NAMED_TENSORS_INIT;
    yt_module_state_dict(ce, &sd);
    cr_assert(sd.count == 1 && strcmp(sd.names[0], "weight") == 0);
    yt_named_tensors_clear(&sd);
    yt_module_release(ce);

    struct {
        yt_module *m;
        yt_tensor *input, *target, *want;
    } cases[] = {
        {yt_cross_entropy_loss_new(NULL), x, labels, yt_cross_entropy_loss(x, labels)},
        {yt_nll_loss_new(NULL), x, labels, yt_nll_loss(x, labels)},
        {yt_mse_loss_new(YT_REDUCTION_NONE), x, y, yt_mse_loss_ex(x, y, "none")},
        {yt_l1_loss_new(YT_REDUCTION_SUM), x, y, yt_l1_loss_ex(x, y, "sum")},
        {yt_smooth_l1_loss_new(YT_REDUCTION_MEAN, 0.5), x, y,
         yt_smooth_l1_loss_ex(x, y, "mean", 0.5)},
        {yt_huber_loss_new(YT_REDUCTION_MEAN, 2.0), x, y, yt_huber_loss_ex(x, y, "mean", 2.0)},
        {yt_bce_loss_new(NULL, YT_REDUCTION_MEAN), p, t, yt_binary_cross_entropy(p, t)},
        {yt_bce_with_logits_loss_new(NULL, w, YT_REDUCTION_MEAN), x, t,
         yt_binary_cross_entropy_with_logits_ex(x, t, NULL, w, "mean")},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_assert_not_null(cases[i].m, "%s", yt_errmsg());
        got = yt_module_forward2(cases[i].m, cases[i].input, cases[i].target);
        cr_assert_not_null(got, "%s: %s", yt_module_kind_name(cases[i].m), yt_errmsg());
        cr_assert_eq(test_max_abs_diff(got, cases[i].want), 0.0, "%s",
                     yt_module_kind_name(cases[i].m));
        yt_release(got);
        yt_release(cases[i].want);
        yt_module_release(cases[i].m);
    }

    o = yt_cross_entropy_options_default();
    o.label_smoothing = 1.5;
    cr_assert_null(yt_cross_entropy_loss_new(&o));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "cross_entropy_loss_new: label_smoothing=1.5 must be in [0, 1]");
    o.label_smoothing = 0.1;
    cr_assert_null(yt_nll_loss_new(&o));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "nll_loss_new: label_smoothing=0.1: NLLLoss has no smoothing");
    cr_assert_null(yt_mse_loss_new((yt_reduction)7));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "mse_loss_new: reduction=7 is not a yt_reduction");
    cr_assert_null(yt_smooth_l1_loss_new(YT_REDUCTION_MEAN, -1));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "smooth_l1_loss_new: beta=-1 must be finite and >= 0");
    cr_assert_null(yt_bce_loss_new(labels, YT_REDUCTION_MEAN));
    YT_ASSERT_ERROR(YT_ERR_DTYPE, "bce_loss_new: weight is i64; it must be floating");
    yt_release(w);
    yt_release(t);
    yt_release(p);
    yt_release(y);
    yt_release(labels);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

/* Sizes near the int64 limit: errors, never overflow (UBSan runs this) or a crash. */
Test(nn_layers, extreme_sizes_are_errors)
{
    cr_assert_null(yt_linear_new(INT64_MAX, 2, true));
    cr_assert_neq(yt_errcode(), YT_OK);
    cr_assert_null(yt_linear_new(INT64_MAX / 2, INT64_MAX / 2, true));
    cr_assert_neq(yt_errcode(), YT_OK);
    cr_assert_null(yt_embedding_new(INT64_MAX, INT64_MAX, YT_NONE));
    cr_assert_neq(yt_errcode(), YT_OK);
    cr_assert_null(yt_multihead_attention_new(INT64_MAX - 1, 1, 0.0, true, false));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "multihead_attention_new: embed_dim=9223372036854775806 is too "
                                  "large");
    yt_conv2d_options o = yt_conv2d_options_default(1, 1, INT64_MAX);
    o.dilation[0] = INT64_MAX;
    cr_assert_null(yt_conv2d_new(&o));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "conv2d_new: dilation[0]=9223372036854775807 times "
                                  "kernel_size[0]=9223372036854775807 is too large");
    o = yt_conv2d_options_default(INT64_MAX, INT64_MAX, 3);
    cr_assert_null(yt_conv2d_new(&o));
    cr_assert_neq(yt_errcode(), YT_OK);
    cr_assert_null(yt_max_pool2d_new(3, 1, INT64_MAX));
    YT_ASSERT_ERROR(YT_ERR_VALUE,
                    "max_pool2d_new: padding[0]=9223372036854775807 must be between 0 "
                    "and half of kernel_size[0]=3");
    const int64_t big[2] = {INT64_MAX, 2};
    cr_assert_null(yt_layer_norm_new(big, 2, 1e-5, true));
    cr_assert_neq(yt_errcode(), YT_OK);
    cr_assert_null(yt_group_norm_new(1, INT64_MAX, 1e-5, true));
    cr_assert_neq(yt_errcode(), YT_OK);
    cr_assert_null(
        yt_transformer_encoder_layer_new(INT64_MAX - 1, 2, 4, 0.1, "relu", false, false));
    cr_assert_neq(yt_errcode(), YT_OK);
    YT_ASSERT_NO_LEAKS();
}

/* A bias that does not broadcast to linear's output is reported as linear's bias; it used to
 * surface from the addmm (or add) the composite calls. Biases torch accepts still work. */
Test(nn_layers, linear_bias_of_the_wrong_size_names_linear)
{
    yt_tensor *x = yt_ones((const int64_t[]){2, 3}, 2), *w = yt_ones((const int64_t[]){4, 3}, 2);
    yt_tensor *x3 = yt_ones((const int64_t[]){5, 2, 3}, 3), *x1 = yt_ones((const int64_t[]){3}, 1);
    yt_tensor *b5 = yt_ones((const int64_t[]){5}, 1), *b1 = yt_ones((const int64_t[]){1}, 1);
    yt_tensor *b24 = yt_ones((const int64_t[]){2, 4}, 2);
    cr_assert_null(yt_linear_ex(x, w, b5));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "linear: bias of shape [5] cannot broadcast to the output shape "
                                  "[2, 4] (input [2, 3], weight [4, 3])");
    cr_assert_null(yt_linear_ex(x3, w, b5));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "linear: bias of shape [5] cannot broadcast to the output shape "
                                  "[5, 2, 4]");
    cr_assert_null(yt_linear_ex(x1, w, b5));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "linear: bias of shape [5] cannot broadcast to the output shape "
                                  "[4]");
    yt_tensor *y = yt_linear_ex(x, w, b1), *y24 = yt_linear_ex(x, w, b24);
    test_expect_sizes(y, (const int64_t[]){2, 4}, 2);
    test_expect_sizes(y24, (const int64_t[]){2, 4}, 2);
    int64_t n;
    double *v = test_values(y, &n);
    cr_assert_eq(v[0], 4.0, "3 ones dotted plus a bias of 1: %g", v[0]);
    free(v);
    yt_release(y), yt_release(y24), yt_release(x), yt_release(w), yt_release(x3), yt_release(x1);
    yt_release(b5), yt_release(b1), yt_release(b24);
    YT_ASSERT_NO_LEAKS();
}
