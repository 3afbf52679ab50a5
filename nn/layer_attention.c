/* MultiheadAttention, as PyTorch's nn.MultiheadAttention (embed_dim == kdim == vdim, no
 * add_bias_kv / add_zero_attn): packed in-projection, scaled dot-product attention per head,
 * out-projection. Parameters in_proj_weight, in_proj_bias, out_proj.weight, out_proj.bias.
 *
 * Layout: everything runs as [N, L, E]; inputs in PyTorch's default [L, N, E] are transposed views,
 * never copies. The heads are strided views of the projection ([N, H, L, hd]); the only copy is the
 * reshape of the attention output back to [.., E] before the out-projection.
 *
 * A forward's temporaries live in a scope of its own (yt__scope_enter): each op's result is
 * released when the forward ends, whatever path it took or where it failed, and the results it
 * returns leave the scope with yt_scope_keep. */
#include <math.h>
#include <stdio.h>

#include "module_internal.h"

typedef struct mha_ctx {
    int64_t embed_dim, num_heads;
    double dropout;
    bool bias, batch_first;
} mha_ctx;

/* [N, S, 3E or 2E or E] projection -> `parts` heads views [N, H, S, hd] (k of them). */
static void
split_heads(yt_tensor *proj, int parts, int64_t H, yt_tensor **out)
{
    int64_t N = yt_tensor_size(proj, 0), S = yt_tensor_size(proj, 1);
    int64_t hd = proj != NULL ? yt_tensor_size(proj, 2) / parts / H : 0;
    const int64_t shape[5] = {N, S, parts, H, hd};
    static const int64_t perm[5] = {2, 0, 3, 1, 4}; /* [parts, N, H, S, hd] */
    yt_tensor *v = yt_view(proj, shape, 5);
    yt_tensor *p = yt_permute(v, perm, 5);
    for (int i = 0; i < parts; i++)
        out[i] = yt_select(p, 0, i);
}

/* A mask in PyTorch MHA's convention (bool: true hides; float: added) as an additive float mask
 * of `dtype`. */
static yt_tensor *
additive(yt_tensor *mask, yt_dtype dtype)
{
    if (yt_tensor_dtype(mask) != YT_DTYPE_BOOL)
        return yt_tensor_dtype(mask) == dtype ? mask : yt_to(mask, dtype);
    yt_tensor *zeros =
        yt_zeros_ex(yt_tensor_sizes(mask), yt_tensor_dim(mask), dtype, YT_DEVICE_CPU);
    return yt_masked_fill(zeros, mask, yt_float(-INFINITY));
}

/* The mask handed to the attention: NULL, a bool "keep" mask (sdpa's convention) or a float mask,
 * broadcastable to [N, H, L, S]. Sets *causal when the causal flag can go to sdpa as is. */
static yt_tensor *
combine_masks(const mha_ctx *c, yt_tensor *attn_mask, yt_tensor *kpm, bool is_causal,
              bool need_weights, int64_t N, int64_t L, int64_t S, yt_dtype dtype, bool *causal)
{
    *causal = false;
    if (attn_mask == NULL && is_causal) {
        if (kpm == NULL && !need_weights) {
            *causal = true;
            return NULL;
        }
        const int64_t ls[2] = {L, S};
        yt_tensor *ones = yt_ones_ex(ls, 2, YT_DTYPE_BOOL, YT_DEVICE_CPU);
        attn_mask = yt_triu_ex(ones, 1); /* true above the diagonal: hidden */
    }
    if (attn_mask != NULL && yt_tensor_dim(attn_mask) == 3) {
        const int64_t nhls[4] = {N, c->num_heads, L, S};
        attn_mask = yt_reshape(attn_mask, nhls, 4);
    }
    if (kpm != NULL) {
        const int64_t n11s[4] = {N, 1, 1, S};
        kpm = yt_reshape(kpm, n11s, 4);
    }
    if (attn_mask != NULL && kpm != NULL)
        return yt_add(additive(attn_mask, dtype), additive(kpm, dtype));
    yt_tensor *mask = attn_mask != NULL ? attn_mask : kpm;
    if (mask == NULL)
        return NULL;
    if (yt_tensor_dtype(mask) == YT_DTYPE_BOOL)
        return yt_logical_not(mask);
    return additive(mask, dtype);
}

static bool
check_inputs(const mha_ctx *c, yt_tensor *q, yt_tensor *k, yt_tensor *v, yt_tensor *attn_mask,
             yt_tensor *kpm)
{
    const char *fn = "MultiheadAttention";
    char a[96], b[96];
    int d = q->dim;
    if (d != 2 && d != 3) {
        yt__fail(YT_ERR_SHAPE, "%s: query %s must be 3-D (batched) or 2-D (unbatched)", fn,
                 yt__nn_shape_str(q, a, sizeof a));
        return false;
    }
    if (k->dim != d || v->dim != d) {
        yt__fail(YT_ERR_SHAPE, "%s: query is %d-D but %s is %d-D", fn, d,
                 k->dim != d ? "key" : "value", k->dim != d ? k->dim : v->dim);
        return false;
    }
    const yt_tensor *bad = q->sizes[d - 1] != c->embed_dim   ? q
                           : k->sizes[d - 1] != c->embed_dim ? k
                           : v->sizes[d - 1] != c->embed_dim ? v
                                                             : NULL;
    if (bad != NULL) {
        yt__fail(YT_ERR_SHAPE, "%s: %s %s must end in embed_dim=%lld", fn,
                 bad == q   ? "query"
                 : bad == k ? "key"
                            : "value",
                 yt__nn_shape_str(bad, a, sizeof a), (long long)c->embed_dim);
        return false;
    }
    for (int i = 0; i < d - 1; i++)
        if (k->sizes[i] != v->sizes[i]) {
            yt__fail(YT_ERR_SHAPE, "%s: key %s and value %s must have the same shape", fn,
                     yt__nn_shape_str(k, a, sizeof a), yt__nn_shape_str(v, b, sizeof b));
            return false;
        }
    int bdim = d == 3 ? (c->batch_first ? 0 : 1) : -1;
    if (bdim >= 0 && q->sizes[bdim] != k->sizes[bdim]) {
        yt__fail(YT_ERR_SHAPE, "%s: query %s and key %s have different batch sizes", fn,
                 yt__nn_shape_str(q, a, sizeof a), yt__nn_shape_str(k, b, sizeof b));
        return false;
    }
    int64_t L = q->sizes[d == 3 && c->batch_first ? 1 : 0];
    int64_t S = k->sizes[d == 3 && c->batch_first ? 1 : 0];
    int64_t N = d == 3 ? q->sizes[bdim] : 1, NH = 0;
    if (!yt__mul_ok(&NH, N, c->num_heads))
        NH = -1; /* no mask can match: reported below */
    if (attn_mask != NULL) {
        bool ok = attn_mask->dim == 2   ? attn_mask->sizes[0] == L && attn_mask->sizes[1] == S
                  : attn_mask->dim == 3 ? attn_mask->sizes[0] == NH && attn_mask->sizes[1] == L &&
                                              attn_mask->sizes[2] == S
                                        : false;
        if (!ok) {
            yt__fail(YT_ERR_SHAPE,
                     "%s: attn_mask %s must be [L, S] = [%lld, %lld] or [N * num_heads, L, S] = "
                     "[%lld, %lld, %lld]",
                     fn, yt__nn_shape_str(attn_mask, a, sizeof a), (long long)L, (long long)S,
                     (long long)NH, (long long)L, (long long)S);
            return false;
        }
    }
    if (kpm != NULL) {
        bool ok = d == 3 ? kpm->dim == 2 && kpm->sizes[0] == N && kpm->sizes[1] == S
                         : kpm->dim == 1 && kpm->sizes[0] == S;
        if (!ok) {
            yt__fail(YT_ERR_SHAPE, "%s: key_padding_mask %s must be %s", fn,
                     yt__nn_shape_str(kpm, a, sizeof a), d == 3 ? "[N, S]" : "[S]");
            return false;
        }
    }
    return true;
}

yt_tensor *
yt__mha_attend(yt_module *m, yt_tensor *query, yt_tensor *key, yt_tensor *value,
               const yt_mha_forward_options *o, yt_tensor **weights_out)
{
    const mha_ctx *c = m->ctx;
    yt_tensor *attn_mask = o != NULL ? o->attn_mask : NULL;
    yt_tensor *kpm = o != NULL ? o->key_padding_mask : NULL;
    if (!check_inputs(c, query, key, value, attn_mask, kpm))
        return NULL;
    yt__scope_outer outer;
    if (yt__scope_enter(&outer) != YT_OK)
        return NULL;
    const int64_t E = c->embed_dim, H = c->num_heads;
    bool unbatched = query->dim == 2;
    /* Everything below works on [N, L, E]. */
    yt_tensor *q = query, *k = key, *v = value;
    if (unbatched) {
        q = yt_unsqueeze(query, 0);
        k = key == query ? q : yt_unsqueeze(key, 0);
        v = value == key ? k : yt_unsqueeze(value, 0);
        if (kpm != NULL)
            kpm = yt_unsqueeze(kpm, 0);
    } else if (!c->batch_first) {
        q = yt_transpose(query, 0, 1);
        k = key == query ? q : yt_transpose(key, 0, 1);
        v = value == key ? k : yt_transpose(value, 0, 1);
    }
    int64_t N = yt_tensor_size(q, 0), L = yt_tensor_size(q, 1), S = yt_tensor_size(k, 1);

    /* In-projection, packed as PyTorch's _in_projection_packed: one GEMM for self-attention. */
    yt_tensor *w = m->params.tensors[0], *b = c->bias ? m->params.tensors[1] : NULL;
    yt_tensor *heads[3] = {NULL, NULL, NULL};
    if (k == q && v == k) {
        split_heads(yt_linear_ex(q, w, b), 3, H, heads);
    } else {
        yt_tensor *wq = yt_narrow(w, 0, 0, E);
        yt_tensor *bq = b != NULL ? yt_narrow(b, 0, 0, E) : NULL;
        split_heads(yt_linear_ex(q, wq, bq), 1, H, &heads[0]);
        if (v == k) {
            yt_tensor *wkv = yt_narrow(w, 0, E, 2 * E);
            yt_tensor *bkv = b != NULL ? yt_narrow(b, 0, E, 2 * E) : NULL;
            split_heads(yt_linear_ex(k, wkv, bkv), 2, H, &heads[1]);
        } else {
            for (int i = 1; i < 3; i++) {
                yt_tensor *wi = yt_narrow(w, 0, i * E, E);
                yt_tensor *bi = b != NULL ? yt_narrow(b, 0, i * E, E) : NULL;
                split_heads(yt_linear_ex(i == 1 ? k : v, wi, bi), 1, H, &heads[i]);
            }
        }
    }

    bool causal = false;
    yt_dtype dtype = yt_tensor_dtype(query);
    yt_tensor *mask = combine_masks(c, attn_mask, kpm, o != NULL && o->is_causal,
                                    weights_out != NULL, N, L, S, dtype, &causal);
    double p = m->training ? c->dropout : 0.0;
    yt_tensor *attn = NULL; /* [N, H, L, hd] */
    if (weights_out == NULL) {
        attn = yt_scaled_dot_product_attention_ex(heads[0], heads[1], heads[2], mask, p, causal,
                                                  m->gen);
    } else {
        /* PyTorch's need_weights path: the weights themselves are a result. */
        int64_t hd = E / H;
        yt_tensor *qs = yt_mul_scalar(heads[0], yt_float(1.0 / sqrt((double)hd)));
        yt_tensor *kt = yt_transpose(heads[1], -2, -1);
        yt_tensor *scores = yt_matmul(qs, kt);
        if (mask != NULL && yt_tensor_dtype(mask) == YT_DTYPE_BOOL)
            scores = yt_masked_fill(scores, yt_logical_not(mask), yt_float(-INFINITY));
        else if (mask != NULL)
            scores = yt_add(scores, mask);
        yt_tensor *weights = yt_softmax(scores, -1);
        if (p > 0)
            weights = yt_dropout_ex(weights, p, true, m->gen);
        attn = yt_matmul(weights, heads[2]);
        const int64_t one = 1;
        yt_tensor *wout =
            o == NULL || o->average_attn_weights ? yt_mean_dim(weights, &one, 1) : weights;
        *weights_out = unbatched ? yt_squeeze_dim(wout, 0) : wout;
    }

    /* [N, H, L, hd] -> [N, L, E] (or [L, N, E]), the one copy, then the out-projection. */
    bool seq_first = !unbatched && !c->batch_first;
    static const int64_t to_nlhd[4] = {0, 2, 1, 3}, to_lnhd[4] = {2, 0, 1, 3};
    yt_tensor *perm = yt_permute(attn, seq_first ? to_lnhd : to_nlhd, 4);
    const int64_t merged[3] = {seq_first ? L : N, seq_first ? N : L, E};
    yt_tensor *flat = yt_reshape(perm, merged, 3);
    const yt_module *out_proj = m->children[0];
    yt_tensor *out = yt_linear_ex(flat, out_proj->params.tensors[0],
                                  c->bias ? out_proj->params.tensors[1] : NULL);
    if (unbatched)
        out = yt_squeeze_dim(out, 0);
    /* the results leave the scope (as references of this forward's own) only when all went well */
    if (out != NULL && (weights_out == NULL || *weights_out != NULL)) {
        yt_scope_keep(out);
        if (weights_out != NULL)
            yt_scope_keep(*weights_out);
    } else {
        out = NULL;
        if (weights_out != NULL)
            *weights_out = NULL;
    }
    yt__scope_leave(&outer);
    return out;
}

static yt_tensor *
mha_forward(yt_module *m, yt_tensor *const *in, int n)
{
    /* (x): self-attention; (query, key, value); (query, key, value, attn_mask) */
    if (n == 1)
        return yt__mha_attend(m, in[0], in[0], in[0], NULL, NULL);
    if (n == 3 || n == 4) {
        yt_mha_forward_options o = {.attn_mask = n == 4 ? in[3] : NULL,
                                    .average_attn_weights = true};
        return yt__mha_attend(m, in[0], in[1], in[2], &o, NULL);
    }
    return yt__fail(YT_ERR_VALUE,
                    "MultiheadAttention: forward takes 1 (self-attention), 3 (query, key, value) "
                    "or 4 (with attn_mask) inputs, got %d",
                    n);
}

static yt_status
mha_describe(const yt_module *m, char *buf, size_t cap)
{
    const mha_ctx *c = m->ctx;
    snprintf(buf, cap, "embed_dim=%lld, num_heads=%lld, dropout=%g, bias=%s, batch_first=%s",
             (long long)c->embed_dim, (long long)c->num_heads, c->dropout,
             c->bias ? "True" : "False", c->batch_first ? "True" : "False");
    return YT_OK;
}

const yt_module_kind yt__mha_kind = {
    .name = "MultiheadAttention",
    .forward = mha_forward,
    .describe = mha_describe,
    .release_ctx = free,
};

yt_module *
yt_multihead_attention_new(int64_t embed_dim, int64_t num_heads, double dropout, bool bias,
                           bool batch_first)
{
    const char *fn = "multihead_attention_new";
    if (embed_dim <= 0 || num_heads <= 0)
        return yt__module_fail(YT_ERR_VALUE, "%s: %s=%lld must be positive", fn,
                               embed_dim <= 0 ? "embed_dim" : "num_heads",
                               (long long)(embed_dim <= 0 ? embed_dim : num_heads));
    if (embed_dim > INT64_MAX / 3)
        return yt__module_fail(YT_ERR_VALUE, "%s: embed_dim=%lld is too large", fn,
                               (long long)embed_dim);
    if (embed_dim % num_heads != 0)
        return yt__module_fail(YT_ERR_VALUE,
                               "%s: embed_dim=%lld must be divisible by num_heads=%lld", fn,
                               (long long)embed_dim, (long long)num_heads);
    if (!(dropout >= 0 && dropout <= 1))
        return yt__module_fail(YT_ERR_VALUE, "%s: dropout=%g must be in [0, 1]", fn, dropout);
    mha_ctx c = {embed_dim, num_heads, dropout, bias, batch_first};
    yt_module *m = yt__module_new_copy(&yt__mha_kind, &c, sizeof c);
    if (m == NULL)
        return NULL;
    const int64_t wsize[2] = {3 * embed_dim, embed_dim}, bsize = 3 * embed_dim;
    yt_tensor *w = yt__module_new_param(m, "in_proj_weight", wsize, 2);
    yt_tensor *b = bias && w != NULL ? yt__module_new_param(m, "in_proj_bias", &bsize, 1) : NULL;
    yt_module *out_proj =
        w != NULL && (b != NULL || !bias) ? yt_linear_new(embed_dim, embed_dim, bias) : NULL;
    bool ok = out_proj != NULL && yt_module_add_child(m, "out_proj", out_proj) == YT_OK;
    yt_module_release(out_proj);
    /* PyTorch's _reset_parameters: xavier in_proj, zero biases; out_proj.weight keeps Linear's. */
    ok = ok && yt_init_xavier_uniform_(w, 1.0, NULL) == YT_OK;
    if (ok && bias)
        ok = yt__fill(b, 0.0) == YT_OK && yt__fill(out_proj->params.tensors[1], 0.0) == YT_OK;
    if (!ok) {
        yt_module_release(m);
        return NULL;
    }
    return m;
}

static bool
is_mha(yt_module *m, const char *fn)
{
    if (m == NULL) {
        yt__null_arg(fn, "m");
        return false;
    }
    if (m->kind != &yt__mha_kind) {
        yt__fail(YT_ERR_VALUE, "%s: m is a %s, not a MultiheadAttention", fn, m->kind->name);
        return false;
    }
    return true;
}

yt_tensor *
yt_multihead_attention_forward_ex(yt_module *m, yt_tensor *query, yt_tensor *key, yt_tensor *value,
                                  const yt_mha_forward_options *o, yt_tensor **weights_out)
{
    const char *fn = "multihead_attention_forward";
    if (weights_out != NULL)
        *weights_out = NULL;
    if (!is_mha(m, fn))
        return NULL;
    if (query == NULL || key == NULL || value == NULL)
        return yt__null_arg(fn, query == NULL ? "query" : key == NULL ? "key" : "value");
    yt_mha_forward_options d = {.average_attn_weights = true};
    yt__scope_suspend();
    yt_tensor *out = yt__mha_attend(m, query, key, value, o != NULL ? o : &d, weights_out);
    yt__scope_resume();
    if (weights_out != NULL && *weights_out != NULL)
        *weights_out = yt__scope_track(*weights_out);
    return yt__scope_track(out);
}

yt_tensor *
yt_multihead_attention_forward(yt_module *m, yt_tensor *query, yt_tensor *key, yt_tensor *value,
                               yt_tensor *attn_mask, bool is_causal, yt_tensor **weights_out)
{
    yt_mha_forward_options o = {
        .attn_mask = attn_mask, .is_causal = is_causal, .average_attn_weights = true};
    return yt_multihead_attention_forward_ex(m, query, key, value, &o, weights_out);
}
