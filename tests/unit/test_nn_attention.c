/* MultiheadAttention and TransformerEncoderLayer: PyTorch's parameter names, shapes and
 * initialisation, layouts (seq-first, batch_first, unbatched), what masks and causality hide,
 * dropout in training, and argument errors. Values against PyTorch: tests/nn/. */
#include <stdio.h>

#include "test_util.h"

static void
expect_names(yt_module *m, const char *const *names, int n)
{
    yt_named_tensors sd = YT_NAMED_TENSORS_INIT;
    cr_assert_eq(yt_module_state_dict(m, &sd), YT_OK);
    cr_assert_eq(sd.count, n, "%lld names, expected %d", (long long)sd.count, n);
    for (int i = 0; i < n; i++)
        cr_assert_str_eq(sd.names[i], names[i]);
    yt_named_tensors_clear(&sd);
}

Test(nn_attention, mha_parameters_are_pytorchs)
{
    yt_manual_seed(30);
    yt_module *m = yt_multihead_attention_new(64, 4, 0.0, true, false);
    cr_assert_not_null(m, "%s", yt_errmsg());
    static const char *const names[] = {"in_proj_weight", "in_proj_bias", "out_proj.weight",
                                        "out_proj.bias"};
    expect_names(m, names, 4);
    cr_assert_eq(yt_module_num_parameters(m), 3 * 64 * 64 + 3 * 64 + 64 * 64 + 64);
    yt_tensor *w = yt_module_get(m, "in_proj_weight"), *b = yt_module_get(m, "in_proj_bias");
    yt_tensor *ob = yt_module_get(m, "out_proj.bias");
    const int64_t wsize[2] = {192, 64};
    test_expect_sizes(w, wsize, 2);
    /* xavier_uniform: fan_in 64, fan_out 192, bound sqrt(6 / 256) */
    int64_t n;
    double *v = test_values(w, &n), lo = 0, hi = 0;
    for (int64_t i = 0; i < n; i++) {
        lo = fmin(lo, v[i]);
        hi = fmax(hi, v[i]);
    }
    free(v);
    double bound = sqrt(6.0 / 256.0);
    cr_assert(hi <= bound && lo >= -bound && hi > 0.95 * bound, "[%g, %g] vs %g", lo, hi, bound);
    v = test_values(b, &n);
    for (int64_t i = 0; i < n; i++)
        cr_assert_eq(v[i], 0.0, "in_proj_bias starts at zero");
    free(v);
    v = test_values(ob, &n);
    for (int64_t i = 0; i < n; i++)
        cr_assert_eq(v[i], 0.0, "out_proj.bias starts at zero");
    free(v);
    yt_release(w);
    yt_release(b);
    yt_release(ob);
    yt_module_release(m);

    m = yt_multihead_attention_new(8, 2, 0.0, false, true);
    static const char *const nobias[] = {"in_proj_weight", "out_proj.weight"};
    expect_names(m, nobias, 2);
    yt_module_release(m);
    YT_ASSERT_NO_LEAKS();
}

Test(nn_attention, mha_layouts_and_weights)
{
    yt_manual_seed(31);
    const int64_t E = 12, H = 3, L = 5, S = 7, N = 2;
    yt_module *seq_first = yt_multihead_attention_new(E, H, 0.0, true, false);
    yt_module *batch_first = yt_multihead_attention_new(E, H, 0.0, true, true);
    yt_named_tensors sd = YT_NAMED_TENSORS_INIT;
    yt_module_state_dict(seq_first, &sd);
    cr_assert_eq(yt_module_load_state_dict(batch_first, &sd, true), YT_OK);
    yt_named_tensors_clear(&sd);

    yt_scope_begin();
    const int64_t qs[3] = {L, N, E}, ks[3] = {S, N, E};
    yt_tensor *q = yt_randn(qs, 3), *k = yt_randn(ks, 3), *v = yt_randn(ks, 3);
    yt_tensor *weights = NULL;
    yt_tensor *out = yt_multihead_attention_forward(seq_first, q, k, v, NULL, false, &weights);
    test_expect_sizes(out, qs, 3);
    const int64_t wshape[3] = {N, L, S};
    test_expect_sizes(weights, wshape, 3);
    int64_t n;
    double *w = test_values(weights, &n);
    for (int64_t r = 0; r < N * L; r++) {
        double sum = 0;
        for (int64_t s = 0; s < S; s++)
            sum += w[r * S + s];
        cr_assert_float_eq(sum, 1.0, 1e-5, "attention weights of a query sum to 1");
    }
    free(w);

    /* batch_first on the transposed inputs gives the transposed output */
    yt_tensor *out_bf =
        yt_multihead_attention_forward(batch_first, yt_transpose(q, 0, 1), yt_transpose(k, 0, 1),
                                       yt_transpose(v, 0, 1), NULL, false, NULL);
    cr_assert_lt(test_max_abs_diff(yt_transpose(out_bf, 0, 1), out), 1e-5);

    /* unbatched [L, E] = batch element 0 */
    yt_tensor *q0 = yt_select(q, 1, 0), *k0 = yt_select(k, 1, 0), *v0 = yt_select(v, 1, 0);
    yt_tensor *w0 = NULL;
    yt_tensor *out0 = yt_multihead_attention_forward(seq_first, q0, k0, v0, NULL, false, &w0);
    const int64_t le[2] = {L, E}, ls[2] = {L, S};
    test_expect_sizes(out0, le, 2);
    test_expect_sizes(w0, ls, 2);
    cr_assert_lt(test_max_abs_diff(out0, yt_select(out, 1, 0)), 1e-5);

    /* per-head weights */
    yt_mha_forward_options o = {.average_attn_weights = false};
    yt_tensor *heads = NULL;
    yt_tensor *out2 = yt_multihead_attention_forward_ex(seq_first, q, k, v, &o, &heads);
    const int64_t hshape[4] = {N, H, L, S};
    test_expect_sizes(heads, hshape, 4);
    cr_assert_lt(test_max_abs_diff(out2, out), 1e-5);
    const int64_t one = 1;
    cr_assert_lt(test_max_abs_diff(yt_mean_dim(heads, &one, 1), weights), 1e-6);

    /* as a module: forward is self-attention, forward_n takes (q, k, v[, mask]) */
    yt_tensor *self = yt_module_forward(seq_first, q);
    cr_assert_lt(test_max_abs_diff(
                     self, yt_multihead_attention_forward(seq_first, q, q, q, NULL, false, NULL)),
                 1e-6);
    yt_tensor *in3[3] = {q, k, v};
    cr_assert_lt(test_max_abs_diff(yt_module_forward_n(seq_first, in3, 3), out), 1e-6);
    cr_assert_null(yt_module_forward2(seq_first, q, k));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "MultiheadAttention: forward takes 1 (self-attention), 3");
    yt_scope_end();
    yt_module_release(seq_first);
    yt_module_release(batch_first);
    YT_ASSERT_NO_LEAKS();
}

Test(nn_attention, masks_and_causality_hide_what_they_should)
{
    yt_manual_seed(32);
    const int64_t E = 8, L = 6, N = 2;
    yt_module *m = yt_multihead_attention_new(E, 2, 0.0, true, true);
    yt_scope_begin();
    const int64_t xs[3] = {N, L, E};
    yt_tensor *x = yt_randn(xs, 3);

    /* causal: the weights above the diagonal are 0, and changing the last token leaves the
     * outputs of the earlier ones unchanged */
    yt_tensor *weights = NULL;
    yt_tensor *out = yt_multihead_attention_forward(m, x, x, x, NULL, true, &weights);
    int64_t n;
    double *w = test_values(weights, &n);
    for (int64_t b = 0; b < N; b++)
        for (int64_t i = 0; i < L; i++)
            for (int64_t j = i + 1; j < L; j++)
                cr_assert_eq(w[(b * L + i) * L + j], 0.0);
    free(w);
    yt_tensor *x2 = yt_clone(x);
    yt_tensor *last = yt_select(x2, 1, L - 1);
    cr_assert_eq(yt_mul_scalar_(last, yt_float(5.0)), YT_OK);
    yt_tensor *out_fast = yt_multihead_attention_forward(m, x2, x2, x2, NULL, true, NULL);
    yt_tensor *early = yt_narrow(out, 1, 0, L - 1), *early2 = yt_narrow(out_fast, 1, 0, L - 1);
    cr_assert_lt(test_max_abs_diff(early, early2), 1e-5);
    cr_assert_gt(test_max_abs_diff(yt_select(out, 1, L - 1), yt_select(out_fast, 1, L - 1)), 1e-3);

    /* a bool mask (true hides) equals the same mask as -inf floats */
    const int64_t ls[2] = {L, L};
    yt_tensor *hide = yt_lt_scalar(yt_rand(ls, 2), yt_float(0.3));
    for (int64_t i = 0; i < L; i++) { /* keep the diagonal so no row is fully hidden */
        yt_tensor *d = yt_select(yt_select(hide, 0, i), 0, i);
        yt_mul_scalar_(d, yt_bool(false));
    }
    yt_tensor *additive = yt_masked_fill(yt_zeros(ls, 2), hide, yt_float(-INFINITY));
    yt_tensor *wb = NULL, *wf = NULL;
    yt_tensor *ob = yt_multihead_attention_forward(m, x, x, x, hide, false, &wb);
    yt_tensor *of = yt_multihead_attention_forward(m, x, x, x, additive, false, &wf);
    cr_assert_lt(test_max_abs_diff(ob, of), 1e-6);
    double *hv = test_values(hide, &n), *wv = test_values(wb, &n);
    for (int64_t b = 0; b < N; b++)
        for (int64_t i = 0; i < L * L; i++)
            if (hv[i] != 0)
                cr_assert_eq(wv[b * L * L + i], 0.0);
    free(hv);
    free(wv);
    /* and the fast path (no weights asked) agrees with the weights path */
    cr_assert_lt(
        test_max_abs_diff(ob, yt_multihead_attention_forward(m, x, x, x, hide, false, NULL)), 1e-5);

    /* key padding: the padded keys of batch 1 get no weight */
    const bool pad[2][6] = {{0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 1, 1}};
    const int64_t ps[2] = {N, L};
    yt_tensor *kpm = yt_tensor_from_data(pad, ps, 2, YT_DTYPE_BOOL);
    yt_mha_forward_options o = {.key_padding_mask = kpm, .average_attn_weights = true};
    yt_tensor *wk = NULL;
    cr_assert_not_null(yt_multihead_attention_forward_ex(m, x, x, x, &o, &wk), "%s", yt_errmsg());
    double *kv = test_values(wk, &n);
    for (int64_t i = 0; i < L; i++)
        cr_assert(kv[(L + i) * L + 4] == 0.0 && kv[(L + i) * L + 5] == 0.0);
    free(kv);
    yt_scope_end();
    yt_module_release(m);
    YT_ASSERT_NO_LEAKS();
}

Test(nn_attention, attention_dropout_only_in_training)
{
    yt_manual_seed(33);
    yt_module *m = yt_multihead_attention_new(8, 2, 0.5, true, true);
    yt_generator *g = yt_generator_create(1);
    yt_module_set_generator(m, g);
    yt_scope_begin();
    const int64_t xs[3] = {2, 5, 8};
    yt_tensor *x = yt_randn(xs, 3);
    yt_tensor *a = yt_module_forward(m, x);
    yt_generator_manual_seed(g, 1);
    yt_tensor *b = yt_module_forward(m, x);
    cr_assert_eq(test_max_abs_diff(a, b), 0.0, "the same generator state drops the same weights");
    yt_module_train(m, false);
    yt_tensor *e1 = yt_module_forward(m, x), *e2 = yt_module_forward(m, x);
    cr_assert_eq(test_max_abs_diff(e1, e2), 0.0);
    cr_assert_gt(test_max_abs_diff(a, e1), 1e-4, "training dropped nothing");
    yt_scope_end();
    yt_generator_release(g);
    yt_module_release(m);
    YT_ASSERT_NO_LEAKS();
}

Test(nn_attention, mha_errors)
{
    cr_assert_null(yt_multihead_attention_new(10, 3, 0.0, true, false));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "multihead_attention_new: embed_dim=10 must be divisible by "
                                  "num_heads=3");
    cr_assert_null(yt_multihead_attention_new(8, 2, -0.1, true, false));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "multihead_attention_new: dropout=-0.1 must be in [0, 1]");
    cr_assert_null(yt_multihead_attention_new(0, 2, 0.0, true, false));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "multihead_attention_new: embed_dim=0 must be positive");

    yt_manual_seed(34);
    yt_module *m = yt_multihead_attention_new(8, 2, 0.0, true, false);
    yt_scope_begin();
    const int64_t good[3] = {4, 2, 8}, wrong_e[3] = {4, 2, 6}, other_batch[3] = {4, 3, 8};
    yt_tensor *x = yt_randn(good, 3);
    cr_assert_null(yt_module_forward(m, yt_randn(wrong_e, 3)));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "MultiheadAttention: query [4, 2, 6] must end in embed_dim=8");
    yt_tensor *k = yt_randn(other_batch, 3);
    cr_assert_null(yt_multihead_attention_forward(m, x, k, k, NULL, false, NULL));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "MultiheadAttention: query [4, 2, 8] and key [4, 3, 8] have "
                                  "different batch sizes");
    const int64_t bad_mask[2] = {4, 5};
    yt_tensor *weights = (yt_tensor *)1;
    cr_assert_null(
        yt_multihead_attention_forward(m, x, x, x, yt_zeros(bad_mask, 2), false, &weights));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "MultiheadAttention: attn_mask [4, 5] must be [L, S] = [4, 4] "
                                  "or [N * num_heads, L, S] = [4, 4, 4]");
    cr_assert_null(weights, "weights_out is NULL after an error");
    yt_module *lin = yt_linear_new(8, 8, true);
    cr_assert_null(yt_multihead_attention_forward(lin, x, x, x, NULL, false, NULL));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "multihead_attention_forward: m is a Linear, not a "
                                  "MultiheadAttention");
    yt_scope_end();
    yt_module_release(lin);
    yt_module_release(m);
    YT_ASSERT_NO_LEAKS();
}

/* A forward keeps its temporaries in a scope of its own: inside the user's scopes the results
 * belong to the user's innermost scope once (not twice, not to the forward's), outside any scope
 * to the caller; a failure after the checks (an f64 query into f32 projections fails in the
 * in-projection, with every path of the forward still run on NULLs) leaves nothing behind. */
Test(nn_attention, mha_forward_temporaries_and_scopes)
{
    yt_manual_seed(35);
    yt_module *m = yt_multihead_attention_new(8, 2, 0.0, true, false);
    const int64_t shape[3] = {4, 2, 8}, unbatched[2] = {4, 8};
    const int64_t base = yt_live_tensors(); /* the module's parameters */
    /* grad mode off: a recorded graph would keep saved temporaries alive, legitimately */
    bool prev = yt_set_grad_enabled(false);
    for (int with_weights = 0; with_weights < 2; with_weights++) {
        yt_tensor *weights = NULL;
        yt_scope_begin();
        yt_scope_begin();
        yt_tensor *x = yt_randn(shape, 3);
        int64_t live = yt_live_tensors();
        yt_tensor *y =
            yt_multihead_attention_forward(m, x, x, x, NULL, true, with_weights ? &weights : NULL);
        cr_assert_not_null(y, "%s", yt_errmsg());
        cr_assert_eq(yt_live_tensors(), live + 1 + with_weights, "temporaries outlived forward");
        yt_scope_keep(y); /* to the outer scope: the inner one does not own it twice */
        yt_scope_end();
        cr_assert_eq(yt_live_tensors(), base + 1, "y alone is left, in the outer scope");
        cr_assert_eq(yt_tensor_dim(y), 3);
        yt_scope_end();
        cr_assert_eq(yt_live_tensors(), base);

        /* no scope: the caller owns the results */
        yt_tensor *u = yt_randn(unbatched, 2);
        y = yt_multihead_attention_forward(m, u, u, u, NULL, false, with_weights ? &weights : NULL);
        cr_assert_not_null(y, "%s", yt_errmsg());
        cr_assert_eq(yt_tensor_dim(y), 2);
        yt_release(y);
        yt_release(weights);
        weights = NULL;
        yt_release(u);

        yt_tensor *xd = yt_randn_ex(shape, 3, NULL, YT_DTYPE_F64, YT_DEVICE_NONE);
        weights = (yt_tensor *)1;
        cr_assert_null(yt_multihead_attention_forward(m, xd, xd, xd, NULL, false,
                                                      with_weights ? &weights : NULL));
        YT_ASSERT_ERROR(YT_ERR_DTYPE, "linear: ");
        if (with_weights)
            cr_assert_null(weights, "weights_out is NULL after an error");
        yt_clear_error();
        yt_release(xd);
        cr_assert_eq(yt_live_tensors(), base, "a failed forward left %lld tensors",
                     (long long)(yt_live_tensors() - base));
    }
    yt_set_grad_enabled(prev);
    yt_module_release(m);
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- TransformerEncoderLayer */

Test(nn_attention, encoder_layer_names_count_and_shapes)
{
    yt_manual_seed(35);
    const int64_t E = 128, F = 512;
    yt_module *m = yt_transformer_encoder_layer_new(E, 4, F, 0.1, "relu", false, true);
    cr_assert_not_null(m, "%s", yt_errmsg());
    static const char *const names[] = {"self_attn.in_proj_weight",
                                        "self_attn.in_proj_bias",
                                        "self_attn.out_proj.weight",
                                        "self_attn.out_proj.bias",
                                        "linear1.weight",
                                        "linear1.bias",
                                        "linear2.weight",
                                        "linear2.bias",
                                        "norm1.weight",
                                        "norm1.bias",
                                        "norm2.weight",
                                        "norm2.bias"};
    expect_names(m, names, 12);
    /* attention 4 E^2 + 4 E, feed-forward 2 E F + F + E, two LayerNorms 4 E */
    cr_assert_eq(yt_module_num_parameters(m), 4 * E * E + 4 * E + 2 * E * F + F + E + 4 * E);
    static const char *const children[] = {"self_attn", "linear1", "dropout",  "linear2",
                                           "norm1",     "norm2",   "dropout1", "dropout2"};
    cr_assert_eq(yt_module_child_count(m), 8);
    for (int i = 0; i < 8; i++)
        cr_assert_str_eq(yt_module_child_name(m, i), children[i]);

    yt_scope_begin();
    const int64_t xs[3] = {8, 64, E};
    yt_tensor *x = yt_randn(xs, 3);
    yt_tensor *y = yt_module_forward(m, x);
    test_expect_sizes(y, xs, 3);
    cr_assert_eq(yt_backward(yt_sum(y), NULL, NULL), YT_OK, "%s", yt_errmsg());
    yt_tensor *g = yt_grad(yt_module_get(m, "self_attn.in_proj_weight"));
    cr_assert_not_null(g, "the attention weights get gradients");

    /* eval is deterministic and differs from a dropped-out training pass */
    yt_module_train(m, false);
    yt_tensor *e1 = yt_module_forward(m, x), *e2 = yt_module_forward(m, x);
    cr_assert_eq(test_max_abs_diff(e1, e2), 0.0);
    cr_assert_gt(test_max_abs_diff(y, e1), 1e-4);
    /* post-norm: each token's output is LayerNorm'd (mean 0 with norm2's initial weight/bias) */
    int64_t n;
    double *v = test_values(e1, &n), mean = 0;
    for (int64_t i = 0; i < E; i++)
        mean += v[i];
    cr_assert_float_eq(mean / (double)E, 0.0, 1e-5);
    free(v);

    /* masks go through the explicit forward */
    const int64_t ll[2] = {64, 64};
    yt_tensor *masked = yt_transformer_encoder_layer_forward(
        m, x, yt_triu_ex(yt_ones_ex(ll, 2, YT_DTYPE_BOOL, YT_DEVICE_CPU), 1), NULL, false);
    yt_tensor *causal = yt_transformer_encoder_layer_forward(m, x, NULL, NULL, true);
    cr_assert_lt(test_max_abs_diff(masked, causal), 1e-5);
    cr_assert_gt(test_max_abs_diff(masked, e1), 1e-4);
    yt_scope_end();
    yt_module_release(m);
    YT_ASSERT_NO_LEAKS();
}

Test(nn_attention, encoder_layer_norm_first_and_errors)
{
    yt_manual_seed(36);
    yt_transformer_encoder_layer_options o = yt_transformer_encoder_layer_options_default(16, 4);
    cr_assert_eq(o.dim_feedforward, 2048);
    cr_assert_eq(o.dropout, 0.1);
    o.dim_feedforward = 32;
    o.dropout = 0.0;
    o.activation = "gelu";
    o.norm_first = true;
    yt_module *pre = yt_transformer_encoder_layer_new_ex(&o);
    cr_assert_not_null(pre, "%s", yt_errmsg());
    o.norm_first = false;
    yt_module *post = yt_transformer_encoder_layer_new_ex(&o);
    yt_named_tensors sd = YT_NAMED_TENSORS_INIT;
    yt_module_state_dict(pre, &sd);
    cr_assert_eq(yt_module_load_state_dict(post, &sd, true), YT_OK);
    yt_named_tensors_clear(&sd);
    yt_scope_begin();
    const int64_t xs[3] = {5, 2, 16}; /* [L, N, E]: batch_first is false */
    yt_tensor *x = yt_randn(xs, 3);
    yt_tensor *a = yt_module_forward(pre, x), *b = yt_module_forward(post, x);
    test_expect_sizes(a, xs, 3);
    cr_assert_gt(test_max_abs_diff(a, b), 1e-3, "pre-norm and post-norm differ");
    yt_scope_end();
    yt_module_release(pre);
    yt_module_release(post);

    cr_assert_null(yt_transformer_encoder_layer_new(16, 4, 32, 0.1, "tanh", false, false));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "transformer_encoder_layer_new: activation='tanh' is not 'relu' "
                                  "or 'gelu'");
    cr_assert_null(yt_transformer_encoder_layer_new(18, 4, 32, 0.1, "relu", false, false));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "transformer_encoder_layer_new: d_model=18 must be divisible by "
                                  "nhead=4");
    cr_assert_null(yt_transformer_encoder_layer_new(16, 4, 0, 0.1, "relu", false, false));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "transformer_encoder_layer_new: dim_feedforward=0 must be "
                                  "positive");
    yt_module *lin = yt_linear_new(2, 2, true);
    yt_tensor *ones = yt_ones(xs, 3);
    cr_assert_null(yt_transformer_encoder_layer_forward(lin, ones, NULL, NULL, false));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "transformer_encoder_layer_forward: m is a Linear, not a "
                                  "TransformerEncoderLayer");
    yt_release(ones);
    yt_module_release(lin);
    YT_ASSERT_NO_LEAKS();
}
