/* Builds the modules of a checked config: model.layers as a Sequential (children "0", "1", ...,
 * so state dicts load into the same nn.Sequential in PyTorch) and the loss. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaten.h>

#include "model.h"

/* ---- reshape: a module of the CLI's own (PyTorch has nn.Unflatten; this takes any shape) */

typedef struct reshape_ctx {
    int ndim;
    int64_t shape[SHAPE_MAX_DIM + 1]; /* [batch, sample shape...]; batch filled per call */
} reshape_ctx;

static yt_tensor *
reshape_forward(yt_module *m, yt_tensor *const *inputs, int n)
{
    (void)n;
    reshape_ctx *c = yt_module_ctx(m);
    int64_t shape[SHAPE_MAX_DIM + 1];
    memcpy(shape, c->shape, sizeof shape);
    shape[0] = yt_tensor_dim(inputs[0]) > 0 ? yt_tensor_size(inputs[0], 0) : 1;
    return yt_reshape(inputs[0], shape, c->ndim + 1);
}

static yt_status
reshape_describe(const yt_module *m, char *buf, size_t cap)
{
    const reshape_ctx *c = yt_module_ctx((yt_module *)m);
    size_t used = (size_t)snprintf(buf, cap, "shape=[");
    for (int i = 1; i <= c->ndim && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%lld", i > 1 ? ", " : "",
                                 (long long)c->shape[i]);
    if (used < cap)
        snprintf(buf + used, cap - used, "]");
    return YT_OK;
}

static const yt_module_kind reshape_kind = {
    .name = "Reshape",
    .forward = reshape_forward,
    .describe = reshape_describe,
    .release_ctx = free,
};

static yt_module *
reshape_new(const int64_t *shape, int ndim)
{
    reshape_ctx *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    c->ndim = ndim;
    c->shape[0] = -1;
    memcpy(c->shape + 1, shape, sizeof(int64_t) * (size_t)ndim);
    yt_module *m = yt_module_new(&reshape_kind, c);
    if (m == NULL)
        free(c);
    return m;
}

/* ---- layers */

static void
pair(const cfg_layer *l, const char *name, int64_t out[2])
{
    int n;
    const int64_t *v = layer_ints(l, name, &n);
    out[0] = v[0];
    out[1] = n > 1 ? v[1] : v[0];
}

static bool
is(const cfg_layer *l, const char *name)
{
    return strcmp(l->def->name, name) == 0;
}

static yt_module *
build_pool(const cfg_layer *l, bool max)
{
    int64_t k[2], s[2], p[2];
    pair(l, "kernel", k);
    pair(l, "stride", s);
    pair(l, "padding", p);
    yt_pool2d_options o = yt_pool2d_options_default(k[0]);
    memcpy(o.kernel_size, k, sizeof k);
    memcpy(o.stride, s, sizeof s);
    memcpy(o.padding, p, sizeof p);
    return max ? yt_max_pool2d_new_ex(&o) : yt_avg_pool2d_new_ex(&o);
}

static yt_module *
build_layer(const cfg_layer *l)
{
    int n;
    if (is(l, "linear"))
        return yt_linear_new(layer_int(l, "in"), layer_int(l, "out"), layer_bool(l, "bias"));
    if (is(l, "conv2d")) {
        yt_conv2d_options o = yt_conv2d_options_default(layer_int(l, "in"), layer_int(l, "out"),
                                                        layer_ints(l, "kernel", &n)[0]);
        pair(l, "kernel", o.kernel_size);
        pair(l, "stride", o.stride);
        pair(l, "dilation", o.dilation);
        layer_ints(l, "padding", &n);
        o.padding_same = n < 0; /* "same" */
        if (n >= 0)
            pair(l, "padding", o.padding);
        o.groups = layer_int(l, "groups");
        o.bias = layer_bool(l, "bias");
        return yt_conv2d_new(&o);
    }
    if (is(l, "conv1d")) {
        yt_conv1d_options o = yt_conv1d_options_default(layer_int(l, "in"), layer_int(l, "out"),
                                                        layer_int(l, "kernel"));
        o.stride = layer_int(l, "stride");
        o.dilation = layer_int(l, "dilation");
        const int64_t *p = layer_ints(l, "padding", &n);
        o.padding_same = n < 0;
        o.padding = n < 0 ? 0 : p[0];
        o.groups = layer_int(l, "groups");
        o.bias = layer_bool(l, "bias");
        return yt_conv1d_new(&o);
    }
    if (is(l, "conv_transpose2d")) {
        yt_conv_transpose2d_options o = yt_conv_transpose2d_options_default(
            layer_int(l, "in"), layer_int(l, "out"), layer_ints(l, "kernel", &n)[0]);
        pair(l, "kernel", o.kernel_size);
        pair(l, "stride", o.stride);
        pair(l, "padding", o.padding);
        pair(l, "output_padding", o.output_padding);
        pair(l, "dilation", o.dilation);
        o.groups = layer_int(l, "groups");
        o.bias = layer_bool(l, "bias");
        return yt_conv_transpose2d_new(&o);
    }
    if (is(l, "max_pool2d") || is(l, "avg_pool2d"))
        return build_pool(l, is(l, "max_pool2d"));
    if (is(l, "adaptive_avg_pool2d")) {
        int64_t o[2];
        pair(l, "output", o);
        return yt_adaptive_avg_pool2d_new(o[0], o[1]);
    }
    if (is(l, "batch_norm1d") || is(l, "batch_norm2d")) {
        yt_module *(*make)(int64_t, double, double, bool, bool) =
            is(l, "batch_norm1d") ? yt_batch_norm1d_new : yt_batch_norm2d_new;
        return make(layer_int(l, "num_features"), layer_float(l, "eps"), layer_float(l, "momentum"),
                    layer_bool(l, "affine"), layer_bool(l, "track_running_stats"));
    }
    if (is(l, "layer_norm") || is(l, "rms_norm")) {
        const int64_t *shape = layer_ints(l, "shape", &n);
        return is(l, "layer_norm")
                   ? yt_layer_norm_new(shape, n, layer_float(l, "eps"), layer_bool(l, "affine"))
                   : yt_rms_norm_new(shape, n, layer_float(l, "eps"), layer_bool(l, "affine"));
    }
    if (is(l, "group_norm"))
        return yt_group_norm_new(layer_int(l, "groups"), layer_int(l, "channels"),
                                 layer_float(l, "eps"), layer_bool(l, "affine"));
    if (is(l, "dropout"))
        return yt_dropout_new(layer_float(l, "p"));
    if (is(l, "flatten"))
        return yt_flatten_new(layer_int(l, "start"), layer_int(l, "end"));
    if (is(l, "reshape")) /* the output shape, where the shape check resolved a -1 */
        return reshape_new(l->out_shape.d, l->out_shape.ndim);
    if (is(l, "relu"))
        return yt_relu_new();
    if (is(l, "gelu"))
        return yt_gelu_new(layer_int(l, "approximate") ? "tanh" : "none");
    if (is(l, "tanh"))
        return yt_tanh_new();
    if (is(l, "sigmoid"))
        return yt_sigmoid_new();
    if (is(l, "silu"))
        return yt_silu_new();
    if (is(l, "leaky_relu"))
        return yt_leaky_relu_new(layer_float(l, "slope"));
    if (is(l, "elu"))
        return yt_elu_new(layer_float(l, "alpha"));
    if (is(l, "softmax"))
        return yt_softmax_new(layer_int(l, "dim"));
    if (is(l, "log_softmax"))
        return yt_log_softmax_new(layer_int(l, "dim"));
    if (is(l, "embedding"))
        return yt_embedding_new(layer_int(l, "num"), layer_int(l, "dim"),
                                layer_given(l, "padding_idx") ? layer_int(l, "padding_idx")
                                                              : YT_NONE);
    if (is(l, "transformer_encoder_layer")) {
        yt_transformer_encoder_layer_options o = yt_transformer_encoder_layer_options_default(
            layer_int(l, "d_model"), layer_int(l, "nhead"));
        o.dim_feedforward = layer_int(l, "dim_ff");
        o.dropout = layer_float(l, "dropout");
        o.activation = layer_int(l, "activation") ? "gelu" : "relu";
        o.norm_first = layer_bool(l, "norm_first");
        o.batch_first = true;
        return yt_transformer_encoder_layer_new_ex(&o);
    }
    yt_clear_error();
    fprintf(stderr, "yaten: internal error: no constructor for layer '%s'\n", l->def->name);
    return NULL;
}

yt_module *
model_build(const cfg_config *cfg, char *err, size_t cap)
{
    yt_module *seq = yt_sequential_new();
    if (seq == NULL) {
        snprintf(err, cap, "model: %s", yt_errmsg());
        return NULL;
    }
    for (int i = 0; i < cfg->model.n_layers; i++) {
        const cfg_layer *l = &cfg->model.layers[i];
        yt_module *m = build_layer(l);
        if (m == NULL || yt_sequential_append(seq, m) != YT_OK) {
            snprintf(err, cap, "%s:%d:%d: %s: %s", cfg->file, l->pos.line, l->pos.col, l->def->name,
                     yt_errmsg());
            yt_module_release(m);
            yt_module_release(seq);
            return NULL;
        }
        yt_module_release(m); /* the Sequential holds it */
    }
    return seq;
}

yt_module *
loss_build(const cfg_config *cfg, char *err, size_t cap)
{
    yt_module *m = NULL;
    yt_cross_entropy_options ce = yt_cross_entropy_options_default();
    switch (cfg->loss.kind) {
    case LOSS_CROSS_ENTROPY:
        ce.label_smoothing = cfg->loss.label_smoothing;
        m = yt_cross_entropy_loss_new(&ce);
        break;
    case LOSS_NLL:
        m = yt_nll_loss_new(&ce);
        break;
    case LOSS_MSE:
        m = yt_mse_loss_new(YT_REDUCTION_MEAN);
        break;
    case LOSS_L1:
        m = yt_l1_loss_new(YT_REDUCTION_MEAN);
        break;
    case LOSS_SMOOTH_L1:
        m = yt_smooth_l1_loss_new(YT_REDUCTION_MEAN, cfg->loss.beta);
        break;
    case LOSS_BCE:
        m = yt_bce_loss_new(NULL, YT_REDUCTION_MEAN);
        break;
    case LOSS_BCE_WITH_LOGITS:
        m = yt_bce_with_logits_loss_new(NULL, NULL, YT_REDUCTION_MEAN);
        break;
    }
    if (m == NULL)
        snprintf(err, cap, "%s:%d:%d: loss: %s", cfg->file, cfg->loss.pos.line, cfg->loss.pos.col,
                 yt_errmsg());
    return m;
}
