/* The yaten side of the module tests against PyTorch (tests/nn/test_nn_vs_torch.py).
 *
 * Usage: nn_runner DIR
 * DIR/config.txt holds "key=value" lines: kind (the layer), its arguments, mode (train/eval),
 * dtype (f32/f64). DIR/in/ holds tensors as raw little-endian files listed in manifest.txt
 * ("name dtype ndim d0 d1 ..."): the model's state dict under "model.<name>", the inputs
 * ("input", or "query"/"key"/"value", masks, "target") and "grad_output".
 *
 * The runner builds the layer, loads the state dict strictly (so every PyTorch name must match),
 * runs forward, backpropagates sum(output * grad_output), and writes to DIR/out/: "output", the
 * gradient of every floating input ("grad.input", ...) and parameter ("grad.model.<name>"), the
 * state dict after the forward pass ("state.<name>": running statistics), the attention weights
 * when asked ("weights"), and with eval_after=1 a second forward in eval mode ("eval_output"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <yaten.h>

enum { MAX_KEYS = 64 };

typedef struct config {
    int n;
    char key[MAX_KEYS][64];
    char value[MAX_KEYS][128];
} config;

static const char *
cfg_str(const config *c, const char *key, const char *fallback)
{
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->key[i], key) == 0)
            return c->value[i];
    return fallback;
}

static int64_t
cfg_int(const config *c, const char *key, int64_t fallback)
{
    const char *v = cfg_str(c, key, NULL);
    return v != NULL ? strtoll(v, NULL, 10) : fallback;
}

static double
cfg_double(const config *c, const char *key, double fallback)
{
    const char *v = cfg_str(c, key, NULL);
    return v != NULL ? strtod(v, NULL) : fallback;
}

static int
die(const char *what)
{
    fprintf(stderr, "nn_runner: %s: %s (%s)\n", what, yt_errmsg(), yt_status_name(yt_errcode()));
    return 1;
}

static bool
read_config(const char *dir, config *c)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/config.txt", dir);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return false;
    char line[256];
    c->n = 0;
    while (fgets(line, sizeof line, f) != NULL && c->n < MAX_KEYS) {
        char *eq = strchr(line, '=');
        if (eq == NULL)
            continue;
        *eq = '\0';
        line[strcspn(line, "\r\n")] = '\0';
        eq[1 + strcspn(eq + 1, "\r\n")] = '\0';
        snprintf(c->key[c->n], sizeof c->key[0], "%.63s", line);
        snprintf(c->value[c->n], sizeof c->value[0], "%.127s", eq + 1);
        c->n++;
    }
    fclose(f);
    return true;
}

static yt_dtype
dtype_of(const char *name)
{
    static const struct {
        const char *name;
        yt_dtype dtype;
    } table[] = {{"f32", YT_DTYPE_F32},
                 {"f64", YT_DTYPE_F64},
                 {"i64", YT_DTYPE_I64},
                 {"bool", YT_DTYPE_BOOL}};
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].name, name) == 0)
            return table[i].dtype;
    return YT_DTYPE_NONE;
}

static bool
read_tensors(const char *dir, yt_named_tensors *out)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/in/manifest.txt", dir);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return false;
    char name[256], dtype_name[16];
    int ndim;
    bool ok = true;
    while (ok && fscanf(f, "%255s %15s %d", name, dtype_name, &ndim) == 3) {
        int64_t sizes[8] = {0}, numel = 1;
        for (int i = 0; i < ndim; i++) {
            long long s;
            ok = ok && fscanf(f, "%lld", &s) == 1;
            sizes[i] = s;
            numel *= s;
        }
        yt_dtype dtype = dtype_of(dtype_name);
        size_t bytes = (size_t)numel * yt_dtype_size(dtype);
        void *data = malloc(bytes ? bytes : 1);
        snprintf(path, sizeof path, "%s/in/%s.bin", dir, name);
        FILE *bin = fopen(path, "rb");
        ok = ok && dtype != YT_DTYPE_NONE && data != NULL && bin != NULL &&
             fread(data, 1, bytes, bin) == bytes;
        if (bin != NULL)
            fclose(bin);
        yt_tensor *t = ok ? yt_tensor_from_data(data, sizes, ndim, dtype) : NULL;
        ok = ok && t != NULL && yt_named_tensors_add(out, name, t) == YT_OK;
        yt_release(t);
        free(data);
    }
    fclose(f);
    return ok;
}

static FILE *out_manifest;

static bool
write_tensor(const char *dir, const char *name, yt_tensor *t)
{
    if (t == NULL)
        return true;
    yt_dtype dtype = yt_tensor_dtype(t) == YT_DTYPE_I64 ? YT_DTYPE_I64 : YT_DTYPE_F64;
    size_t bytes = (size_t)yt_tensor_numel(t) * 8;
    void *data = malloc(bytes ? bytes : 1);
    if (data == NULL || yt_tensor_copy_to(t, data, bytes, dtype) != YT_OK) {
        free(data);
        return false;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/out/%s.bin", dir, name);
    FILE *f = fopen(path, "wb");
    bool ok = f != NULL && fwrite(data, 1, bytes, f) == bytes;
    if (f != NULL)
        fclose(f);
    free(data);
    fprintf(out_manifest, "%s %s %d", name, yt_dtype_name(dtype), yt_tensor_dim(t));
    for (int i = 0; i < yt_tensor_dim(t); i++)
        fprintf(out_manifest, " %lld", (long long)yt_tensor_size(t, i));
    fputc('\n', out_manifest);
    return ok;
}

/* ---------------------------------------------------------------- models */

static void
append(yt_module *seq, yt_module *child)
{
    yt_sequential_append(seq, child);
    yt_module_release(child);
}

static yt_module *
build(const config *c)
{
    const char *kind = cfg_str(c, "kind", "");
    bool bias = cfg_int(c, "bias", 1) != 0;
    if (strcmp(kind, "linear") == 0)
        return yt_linear_new(cfg_int(c, "in", 0), cfg_int(c, "out", 0), bias);
    if (strcmp(kind, "conv2d") == 0) {
        yt_conv2d_options o = yt_conv2d_options_default(cfg_int(c, "in", 0), cfg_int(c, "out", 0),
                                                        cfg_int(c, "k", 0));
        o.stride[0] = o.stride[1] = cfg_int(c, "stride", 1);
        o.padding[0] = cfg_int(c, "padding_h", cfg_int(c, "padding", 0));
        o.padding[1] = cfg_int(c, "padding_w", cfg_int(c, "padding", 0));
        o.dilation[0] = o.dilation[1] = cfg_int(c, "dilation", 1);
        o.groups = cfg_int(c, "groups", 1);
        o.bias = bias;
        o.padding_same = cfg_int(c, "same", 0) != 0;
        const char *mode = cfg_str(c, "padding_mode", "zeros");
        o.padding_mode = strcmp(mode, "reflect") == 0     ? YT_PADDING_REFLECT
                         : strcmp(mode, "replicate") == 0 ? YT_PADDING_REPLICATE
                                                          : YT_PADDING_ZEROS;
        return yt_conv2d_new(&o);
    }
    if (strcmp(kind, "conv1d") == 0) {
        yt_conv1d_options o = yt_conv1d_options_default(cfg_int(c, "in", 0), cfg_int(c, "out", 0),
                                                        cfg_int(c, "k", 0));
        o.stride = cfg_int(c, "stride", 1);
        o.padding = cfg_int(c, "padding", 0);
        o.dilation = cfg_int(c, "dilation", 1);
        o.groups = cfg_int(c, "groups", 1);
        o.bias = bias;
        o.padding_same = cfg_int(c, "same", 0) != 0;
        o.padding_mode = strcmp(cfg_str(c, "padding_mode", "zeros"), "replicate") == 0
                             ? YT_PADDING_REPLICATE
                             : YT_PADDING_ZEROS;
        return yt_conv1d_new(&o);
    }
    if (strcmp(kind, "conv_transpose2d") == 0) {
        yt_conv_transpose2d_options o = yt_conv_transpose2d_options_default(
            cfg_int(c, "in", 0), cfg_int(c, "out", 0), cfg_int(c, "k", 0));
        o.stride[0] = o.stride[1] = cfg_int(c, "stride", 1);
        o.padding[0] = o.padding[1] = cfg_int(c, "padding", 0);
        o.output_padding[0] = o.output_padding[1] = cfg_int(c, "output_padding", 0);
        o.dilation[0] = o.dilation[1] = cfg_int(c, "dilation", 1);
        o.groups = cfg_int(c, "groups", 1);
        o.bias = bias;
        return yt_conv_transpose2d_new(&o);
    }
    if (strcmp(kind, "batch_norm1d") == 0 || strcmp(kind, "batch_norm2d") == 0) {
        yt_module *(*make)(int64_t, double, double, bool, bool) =
            kind[10] == '1' ? yt_batch_norm1d_new : yt_batch_norm2d_new;
        return make(cfg_int(c, "features", 0), cfg_double(c, "eps", 1e-5),
                    cfg_double(c, "momentum", 0.1), cfg_int(c, "affine", 1) != 0,
                    cfg_int(c, "track", 1) != 0);
    }
    if (strcmp(kind, "layer_norm") == 0) {
        int64_t shape[2] = {cfg_int(c, "d0", 0), cfg_int(c, "d1", 0)};
        return yt_layer_norm_new(shape, shape[1] ? 2 : 1, cfg_double(c, "eps", 1e-5), true);
    }
    if (strcmp(kind, "group_norm") == 0)
        return yt_group_norm_new(cfg_int(c, "groups", 0), cfg_int(c, "channels", 0),
                                 cfg_double(c, "eps", 1e-5), true);
    if (strcmp(kind, "embedding") == 0)
        return yt_embedding_new(cfg_int(c, "num", 0), cfg_int(c, "dim", 0),
                                cfg_int(c, "padding_idx", YT_NONE));
    if (strcmp(kind, "max_pool2d") == 0 || strcmp(kind, "avg_pool2d") == 0) {
        yt_pool2d_options o = yt_pool2d_options_default(cfg_int(c, "k", 0));
        o.stride[0] = o.stride[1] = cfg_int(c, "stride", cfg_int(c, "k", 0));
        o.padding[0] = o.padding[1] = cfg_int(c, "padding", 0);
        o.ceil_mode = cfg_int(c, "ceil_mode", 0) != 0;
        o.count_include_pad = cfg_int(c, "count_include_pad", 1) != 0;
        return kind[0] == 'm' ? yt_max_pool2d_new_ex(&o) : yt_avg_pool2d_new_ex(&o);
    }
    if (strcmp(kind, "adaptive_avg_pool2d") == 0)
        return yt_adaptive_avg_pool2d_new(cfg_int(c, "oh", 0), cfg_int(c, "ow", 0));
    if (strcmp(kind, "mha") == 0)
        return yt_multihead_attention_new(cfg_int(c, "embed_dim", 0), cfg_int(c, "heads", 0), 0.0,
                                          bias, cfg_int(c, "batch_first", 0) != 0);
    if (strcmp(kind, "encoder") == 0)
        return yt_transformer_encoder_layer_new(
            cfg_int(c, "d_model", 0), cfg_int(c, "nhead", 0), cfg_int(c, "dim_ff", 0), 0.0,
            cfg_str(c, "activation", "relu"), cfg_int(c, "norm_first", 0) != 0,
            cfg_int(c, "batch_first", 0) != 0);
    if (strcmp(kind, "mlp") == 0) { /* 784-256-128-10 */
        yt_module *s = yt_sequential_new();
        append(s, yt_flatten_new(1, -1));
        append(s, yt_linear_new(784, 256, true));
        append(s, yt_relu_new());
        append(s, yt_linear_new(256, 128, true));
        append(s, yt_relu_new());
        append(s, yt_linear_new(128, 10, true));
        return s;
    }
    if (strcmp(kind, "cnn") == 0) { /* the CNN, with a BatchNorm and a GELU */
        yt_module *s = yt_sequential_new();
        yt_conv2d_options c1 = yt_conv2d_options_default(1, 8, 3);
        append(s, yt_conv2d_new(&c1));
        append(s, yt_batch_norm2d_new(8, 1e-5, 0.1, true, true));
        append(s, yt_relu_new());
        append(s, yt_max_pool2d_new(2, 0, 0));
        yt_conv2d_options c2 = yt_conv2d_options_default(8, 16, 3);
        append(s, yt_conv2d_new(&c2));
        append(s, yt_gelu_new("none"));
        append(s, yt_max_pool2d_new(2, 0, 0));
        append(s, yt_flatten_new(1, -1));
        append(s, yt_linear_new(400, 10, true));
        append(s, yt_log_softmax_new(1));
        return s;
    }
    if (strcmp(kind, "activations") == 0) { /* every activation in a row */
        yt_module *s = yt_sequential_new();
        append(s, yt_linear_new(6, 6, true));
        append(s, yt_elu_new(0.7));
        append(s, yt_leaky_relu_new(0.2));
        append(s, yt_silu_new());
        append(s, yt_gelu_new("tanh"));
        append(s, yt_tanh_new());
        append(s, yt_sigmoid_new());
        append(s, yt_softmax_new(-1));
        return s;
    }
    yt_cross_entropy_options ce = yt_cross_entropy_options_default();
    ce.ignore_index = cfg_int(c, "ignore_index", -100);
    ce.label_smoothing = cfg_double(c, "label_smoothing", 0.0);
    yt_reduction red = (yt_reduction)cfg_int(c, "reduction", 0);
    ce.reduction = red;
    if (strcmp(kind, "cross_entropy") == 0)
        return yt_cross_entropy_loss_new(&ce);
    if (strcmp(kind, "nll") == 0)
        return yt_nll_loss_new(&ce);
    if (strcmp(kind, "mse") == 0)
        return yt_mse_loss_new(red);
    if (strcmp(kind, "l1") == 0)
        return yt_l1_loss_new(red);
    if (strcmp(kind, "smooth_l1") == 0)
        return yt_smooth_l1_loss_new(red, cfg_double(c, "beta", 1.0));
    if (strcmp(kind, "huber") == 0)
        return yt_huber_loss_new(red, cfg_double(c, "delta", 1.0));
    if (strcmp(kind, "bce") == 0)
        return yt_bce_loss_new(NULL, red);
    if (strcmp(kind, "bce_with_logits") == 0)
        return yt_bce_with_logits_loss_new(NULL, NULL, red);
    fprintf(stderr, "nn_runner: unknown kind '%s'\n", kind);
    return NULL;
}

/* Loss weights come as inputs ("weight", "pos_weight") and become the module's buffers. */
static yt_module *
build_weighted_loss(const config *c, yt_named_tensors *in)
{
    const char *kind = cfg_str(c, "kind", "");
    yt_tensor *w = yt_named_tensors_get(in, "weight"), *pw = yt_named_tensors_get(in, "pos_weight");
    yt_module *m = NULL;
    if (strcmp(kind, "cross_entropy") == 0 || strcmp(kind, "nll") == 0) {
        yt_cross_entropy_options o = yt_cross_entropy_options_default();
        o.weight = w;
        o.ignore_index = cfg_int(c, "ignore_index", -100);
        o.label_smoothing = cfg_double(c, "label_smoothing", 0.0);
        o.reduction = (yt_reduction)cfg_int(c, "reduction", 0);
        m = kind[0] == 'c' ? yt_cross_entropy_loss_new(&o) : yt_nll_loss_new(&o);
    } else if (strcmp(kind, "bce") == 0) {
        m = yt_bce_loss_new(w, (yt_reduction)cfg_int(c, "reduction", 0));
    } else {
        m = yt_bce_with_logits_loss_new(w, pw, (yt_reduction)cfg_int(c, "reduction", 0));
    }
    yt_release(w);
    yt_release(pw);
    return m;
}

static yt_tensor *
input_as(yt_named_tensors *in, const char *name, yt_dtype dtype)
{
    yt_tensor *t = yt_named_tensors_get(in, name);
    if (t == NULL || !yt_dtype_is_floating(yt_tensor_dtype(t)) || yt_tensor_dtype(t) == dtype)
        return t;
    yt_tensor *c = yt_to(t, dtype);
    yt_release(t);
    return c;
}

int
main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    config cfg;
    yt_named_tensors in = YT_NAMED_TENSORS_INIT;
    if (!read_config(dir, &cfg) || !read_tensors(dir, &in))
        return die("reading the inputs");
    yt_dtype dtype = dtype_of(cfg_str(&cfg, "dtype", "f64"));
    const char *kind = cfg_str(&cfg, "kind", "");

    /* No scope: every reference is released by hand, so the leak check at the end means something. */
    bool has_loss_weight =
        yt_named_tensors_find(&in, "weight") >= 0 || yt_named_tensors_find(&in, "pos_weight") >= 0;
    yt_module *m = has_loss_weight ? build_weighted_loss(&cfg, &in) : build(&cfg);
    if (m == NULL || yt_module_to(m, dtype) != YT_OK)
        return die("building the module");
    yt_named_tensors sd = YT_NAMED_TENSORS_INIT;
    for (int64_t i = 0; i < in.count; i++)
        if (strncmp(in.names[i], "model.", 6) == 0 &&
            yt_named_tensors_add(&sd, in.names[i] + 6, in.tensors[i]) != YT_OK)
            return die("collecting the state dict");
    if (yt_module_load_state_dict(m, &sd, true) != YT_OK)
        return die("load_state_dict");
    yt_named_tensors_clear(&sd);
    yt_module_train(m, strcmp(cfg_str(&cfg, "mode", "train"), "train") == 0);

    static const char *const grad_inputs[] = {"input", "query", "key", "value"};
    yt_tensor *x[4] = {NULL, NULL, NULL, NULL};
    for (int i = 0; i < 4; i++) {
        x[i] = input_as(&in, grad_inputs[i], dtype);
        if (x[i] != NULL && yt_dtype_is_floating(yt_tensor_dtype(x[i])))
            yt_set_requires_grad(x[i], true);
    }
    yt_tensor *attn_mask = input_as(&in, "attn_mask", dtype);
    yt_tensor *kpm = input_as(&in, "key_padding_mask", dtype);
    yt_tensor *target = input_as(&in, "target", dtype);
    yt_tensor *gout = input_as(&in, "grad_output", dtype);
    yt_tensor *out = NULL, *weights = NULL;
    bool is_causal = cfg_int(&cfg, "is_causal", 0) != 0;
    if (strcmp(kind, "mha") == 0) {
        yt_tensor *k = x[2] != NULL ? x[2] : x[1], *v = x[3] != NULL ? x[3] : k;
        yt_mha_forward_options o = {.attn_mask = attn_mask,
                                    .key_padding_mask = kpm,
                                    .is_causal = is_causal,
                                    .average_attn_weights = cfg_int(&cfg, "average", 1) != 0};
        out = yt_multihead_attention_forward_ex(m, x[1], k, v, &o,
                                                cfg_int(&cfg, "need_weights", 0) ? &weights : NULL);
    } else if (strcmp(kind, "encoder") == 0) {
        out = yt_transformer_encoder_layer_forward(m, x[0], attn_mask, kpm, is_causal);
    } else if (target != NULL) {
        out = yt_module_forward2(m, x[0], target);
    } else {
        out = yt_module_forward(m, x[0]);
    }
    if (out == NULL)
        return die("forward");
    yt_tensor *prod = gout != NULL ? yt_mul(out, gout) : yt_retain(out);
    yt_tensor *loss = yt_sum(prod);
    yt_release(prod);
    if (yt_requires_grad(loss) && yt_backward(loss, NULL, NULL) != YT_OK)
        return die("backward");
    yt_release(loss);

    char path[4096];
    snprintf(path, sizeof path, "%s/out", dir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/out/manifest.txt", dir);
    out_manifest = fopen(path, "w");
    if (out_manifest == NULL)
        return die("opening the output manifest");
    bool ok = write_tensor(dir, "output", out) && write_tensor(dir, "weights", weights);
    char name[512];
    for (int i = 0; i < 4; i++)
        if (x[i] != NULL && yt_requires_grad(x[i])) {
            snprintf(name, sizeof name, "grad.%s", grad_inputs[i]);
            yt_tensor *g = yt_grad(x[i]);
            ok = ok && write_tensor(dir, name, g);
            yt_release(g);
        }
    yt_named_tensors params = YT_NAMED_TENSORS_INIT;
    ok = ok && yt_module_parameters(m, &params) == YT_OK;
    for (int64_t i = 0; ok && i < params.count; i++) {
        snprintf(name, sizeof name, "grad.model.%s", params.names[i]);
        yt_tensor *g = yt_grad(params.tensors[i]);
        ok = write_tensor(dir, name, g);
        yt_release(g);
    }
    yt_named_tensors_clear(&params);
    yt_named_tensors state = YT_NAMED_TENSORS_INIT;
    ok = ok && yt_module_state_dict(m, &state) == YT_OK;
    for (int64_t i = 0; ok && i < state.count; i++) {
        snprintf(name, sizeof name, "state.%s", state.names[i]);
        ok = write_tensor(dir, name, state.tensors[i]);
    }
    yt_named_tensors_clear(&state);
    if (ok && cfg_int(&cfg, "eval_after", 0)) {
        yt_module_train(m, false);
        bool was = yt_set_grad_enabled(false);
        yt_tensor *e = yt_module_forward(m, x[0]);
        ok = e != NULL && write_tensor(dir, "eval_output", e);
        yt_release(e);
        yt_set_grad_enabled(was);
    }
    fclose(out_manifest);
    if (!ok)
        return die("writing the outputs");
    for (int i = 0; i < 4; i++)
        yt_release(x[i]);
    yt_release(attn_mask);
    yt_release(kpm);
    yt_release(target);
    yt_release(gout);
    yt_release(weights);
    yt_release(out);
    yt_module_release(m);
    yt_named_tensors_clear(&in);
    if (yt_live_tensors() != 0)
        fprintf(stderr, "nn_runner: %lld tensors leaked\n", (long long)yt_live_tensors());
    return yt_live_tensors() == 0 ? 0 : 1;
}
