/* TransformerEncoderLayer, as PyTorch's nn.TransformerEncoderLayer: self-attention block and
 * feed-forward block, each with dropout and a residual connection, post-norm (default) or
 * pre-norm (norm_first). Children in PyTorch's order and names: self_attn, linear1, dropout,
 * linear2, norm1, norm2, dropout1, dropout2. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "module_internal.h"

typedef struct encoder_ctx {
    yt_transformer_encoder_layer_options o; /* activation points at a static string */
    bool gelu;
} encoder_ctx;

enum { SELF_ATTN, LINEAR1, DROPOUT, LINEAR2, NORM1, NORM2, DROPOUT1, DROPOUT2, N_CHILDREN };
static const char *const child_names[N_CHILDREN] = {"self_attn", "linear1", "dropout",  "linear2",
                                                    "norm1",     "norm2",   "dropout1", "dropout2"};

/* dropout1(self_attn(x, x, x)) */
static yt_tensor *
sa_block(yt_module *m, yt_tensor *x, const yt_mha_forward_options *o)
{
    yt_module *sa = m->children[SELF_ATTN];
    yt_tensor *a = NULL;
    if (o == NULL) {
        a = yt__module_call1(sa, x); /* shows up in summaries */
    } else {
        a = yt__mha_attend(sa, x, x, x, o, NULL);
    }
    yt_tensor *d = a != NULL ? yt__module_call1(m->children[DROPOUT1], a) : NULL;
    yt_release(a);
    return d;
}

/* dropout2(linear2(dropout(activation(linear1(x))))) */
static yt_tensor *
ff_block(yt_module *m, yt_tensor *x)
{
    const encoder_ctx *c = m->ctx;
    yt_tensor *h = yt__module_call1(m->children[LINEAR1], x);
    yt_tensor *a = c->gelu ? yt_gelu(h) : yt_relu(h);
    yt_release(h);
    yt_tensor *d = a != NULL ? yt__module_call1(m->children[DROPOUT], a) : NULL;
    yt_release(a);
    yt_tensor *l2 = d != NULL ? yt__module_call1(m->children[LINEAR2], d) : NULL;
    yt_release(d);
    yt_tensor *out = l2 != NULL ? yt__module_call1(m->children[DROPOUT2], l2) : NULL;
    yt_release(l2);
    return out;
}

/* x + block(norm(x)) (pre-norm) or norm(x + block(x)) (post-norm); `block` 0: attention. */
static yt_tensor *
residual(yt_module *m, yt_tensor *x, int which, const yt_mha_forward_options *o)
{
    const encoder_ctx *c = m->ctx;
    yt_module *norm = m->children[which == 0 ? NORM1 : NORM2];
    if (c->o.norm_first) {
        yt_tensor *n = yt__module_call1(norm, x);
        yt_tensor *b = n == NULL ? NULL : which == 0 ? sa_block(m, n, o) : ff_block(m, n);
        yt_release(n);
        yt_tensor *sum = yt_add(x, b);
        yt_release(b);
        return sum;
    }
    yt_tensor *b = which == 0 ? sa_block(m, x, o) : ff_block(m, x);
    yt_tensor *sum = yt_add(x, b);
    yt_release(b);
    yt_tensor *out = sum != NULL ? yt__module_call1(norm, sum) : NULL;
    yt_release(sum);
    return out;
}

static yt_tensor *
encode(yt_module *m, yt_tensor *src, const yt_mha_forward_options *o)
{
    yt_tensor *x = residual(m, src, 0, o);
    yt_tensor *y = x != NULL ? residual(m, x, 1, NULL) : NULL;
    yt_release(x);
    return y;
}

static yt_tensor *
encoder_forward(yt_module *m, yt_tensor *const *in, int n)
{
    if (n != 1)
        return yt__module_arity_error(m, 1, n);
    return encode(m, in[0], NULL);
}

static yt_status
encoder_describe(const yt_module *m, char *buf, size_t cap)
{
    const yt_transformer_encoder_layer_options *o = &((const encoder_ctx *)m->ctx)->o;
    snprintf(buf, cap, "d_model=%lld, nhead=%lld, dim_feedforward=%lld, activation=%s%s",
             (long long)o->d_model, (long long)o->nhead, (long long)o->dim_feedforward,
             o->activation, o->norm_first ? ", norm_first=True" : "");
    return YT_OK;
}

static const yt_module_kind encoder_kind = {
    .name = "TransformerEncoderLayer",
    .forward = encoder_forward,
    .describe = encoder_describe,
    .release_ctx = free,
};

yt_transformer_encoder_layer_options
yt_transformer_encoder_layer_options_default(int64_t d_model, int64_t nhead)
{
    yt_transformer_encoder_layer_options o = {
        .d_model = d_model,
        .nhead = nhead,
        .dim_feedforward = 2048,
        .dropout = 0.1,
        .activation = "relu",
        .layer_norm_eps = 1e-5,
    };
    return o;
}

yt_module *
yt_transformer_encoder_layer_new_ex(const yt_transformer_encoder_layer_options *o)
{
    const char *fn = "transformer_encoder_layer_new";
    if (o == NULL)
        return yt__module_fail(YT_ERR_VALUE,
                               "%s: o is NULL (start from "
                               "yt_transformer_encoder_layer_options_default)",
                               fn);
    encoder_ctx c = {.o = *o};
    if (o->activation == NULL || strcmp(o->activation, "relu") == 0) {
        c.o.activation = "relu";
    } else if (strcmp(o->activation, "gelu") == 0) {
        c.o.activation = "gelu";
        c.gelu = true;
    } else {
        return yt__module_fail(YT_ERR_VALUE, "%s: activation='%s' is not 'relu' or 'gelu'", fn,
                               o->activation);
    }
    if (o->d_model <= 0 || o->nhead <= 0 || o->dim_feedforward <= 0)
        return yt__module_fail(YT_ERR_VALUE, "%s: %s=%lld must be positive", fn,
                               o->d_model <= 0 ? "d_model"
                               : o->nhead <= 0 ? "nhead"
                                               : "dim_feedforward",
                               (long long)(o->d_model <= 0 ? o->d_model
                                           : o->nhead <= 0 ? o->nhead
                                                           : o->dim_feedforward));
    if (o->d_model % o->nhead != 0)
        return yt__module_fail(YT_ERR_VALUE, "%s: d_model=%lld must be divisible by nhead=%lld", fn,
                               (long long)o->d_model, (long long)o->nhead);
    if (!(o->dropout >= 0 && o->dropout <= 1))
        return yt__module_fail(YT_ERR_VALUE, "%s: dropout=%g must be in [0, 1]", fn, o->dropout);
    if (!(o->layer_norm_eps >= 0) || !isfinite(o->layer_norm_eps))
        return yt__module_fail(YT_ERR_VALUE, "%s: layer_norm_eps=%g must be finite and >= 0", fn,
                               o->layer_norm_eps);
    yt_module *m = yt__module_new_copy(&encoder_kind, &c, sizeof c);
    if (m == NULL)
        return NULL;
    yt_module *children[N_CHILDREN] = {
        yt_multihead_attention_new(o->d_model, o->nhead, o->dropout, true, o->batch_first),
        yt_linear_new(o->d_model, o->dim_feedforward, true),
        yt_dropout_new(o->dropout),
        yt_linear_new(o->dim_feedforward, o->d_model, true),
        yt_layer_norm_new(&o->d_model, 1, o->layer_norm_eps, true),
        yt_layer_norm_new(&o->d_model, 1, o->layer_norm_eps, true),
        yt_dropout_new(o->dropout),
        yt_dropout_new(o->dropout),
    };
    bool ok = true;
    for (int i = 0; i < N_CHILDREN; i++) {
        ok = ok && children[i] != NULL &&
             yt_module_add_child(m, child_names[i], children[i]) == YT_OK;
        yt_module_release(children[i]);
    }
    if (!ok) {
        yt_module_release(m);
        return NULL;
    }
    return m;
}

yt_module *
yt_transformer_encoder_layer_new(int64_t d_model, int64_t nhead, int64_t dim_feedforward,
                                 double dropout, const char *activation, bool norm_first,
                                 bool batch_first)
{
    yt_transformer_encoder_layer_options o =
        yt_transformer_encoder_layer_options_default(d_model, nhead);
    o.dim_feedforward = dim_feedforward;
    o.dropout = dropout;
    o.activation = activation;
    o.norm_first = norm_first;
    o.batch_first = batch_first;
    return yt_transformer_encoder_layer_new_ex(&o);
}

yt_tensor *
yt_transformer_encoder_layer_forward(yt_module *m, yt_tensor *src, yt_tensor *src_mask,
                                     yt_tensor *src_key_padding_mask, bool is_causal)
{
    const char *fn = "transformer_encoder_layer_forward";
    if (m == NULL)
        return yt__null_arg(fn, "m");
    if (m->kind != &encoder_kind)
        return yt__fail(YT_ERR_VALUE, "%s: m is a %s, not a TransformerEncoderLayer", fn,
                        m->kind->name);
    if (src == NULL)
        return yt__null_arg(fn, "src");
    yt_mha_forward_options o = {.attn_mask = src_mask,
                                .key_padding_mask = src_key_padding_mask,
                                .is_causal = is_causal,
                                .average_attn_weights = true};
    bool masked = src_mask != NULL || src_key_padding_mask != NULL || is_causal;
    yt__scope_suspend();
    yt_tensor *out = encode(m, src, masked ? &o : NULL);
    yt__scope_resume();
    return yt__scope_track(out);
}
