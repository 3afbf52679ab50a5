/* Linear (y = x W^T + b), Identity, and Embedding (rows of a table picked by index). */
#include <stdio.h>

#include "module_internal.h"

/* ---------------------------------------------------------------- Linear */

typedef struct linear_ctx {
    int64_t in, out;
    bool bias;
} linear_ctx;

static yt_tensor *
linear_forward(yt_module *m, yt_tensor *const *in, int n)
{
    if (n != 1)
        return yt__module_arity_error(m, 1, n);
    const linear_ctx *c = m->ctx;
    yt_tensor *x = in[0];
    if (x->dim == 0 || x->sizes[x->dim - 1] != c->in)
        return yt__fail(YT_ERR_SHAPE,
                        "Linear(in_features=%lld, out_features=%lld): input.size(-1)=%lld does "
                        "not match in_features=%lld",
                        (long long)c->in, (long long)c->out,
                        x->dim ? (long long)x->sizes[x->dim - 1] : 0LL, (long long)c->in);
    return yt_linear_ex(x, m->params.tensors[0], c->bias ? m->params.tensors[1] : NULL);
}

static yt_status
linear_describe(const yt_module *m, char *buf, size_t cap)
{
    const linear_ctx *c = m->ctx;
    snprintf(buf, cap, "in_features=%lld, out_features=%lld, bias=%s", (long long)c->in,
             (long long)c->out, c->bias ? "True" : "False");
    return YT_OK;
}

static const yt_module_kind linear_kind = {
    .name = "Linear",
    .forward = linear_forward,
    .describe = linear_describe,
    .release_ctx = free,
};

yt_module *
yt_linear_new(int64_t in_features, int64_t out_features, bool bias)
{
    if (in_features <= 0 || out_features <= 0)
        return yt__module_fail(YT_ERR_VALUE, "linear_new: %s=%lld must be positive",
                               in_features <= 0 ? "in_features" : "out_features",
                               (long long)(in_features <= 0 ? in_features : out_features));
    linear_ctx c = {in_features, out_features, bias};
    yt_module *m = yt__module_new_copy(&linear_kind, &c, sizeof c);
    if (m == NULL)
        return NULL;
    const int64_t wsize[2] = {out_features, in_features};
    yt_tensor *w = yt__module_new_param(m, "weight", wsize, 2);
    yt_tensor *b = bias && w != NULL ? yt__module_new_param(m, "bias", &out_features, 1) : NULL;
    if (w == NULL || (bias && b == NULL) || yt__init_affine_default(w, b) != YT_OK) {
        yt_module_release(m);
        return NULL;
    }
    return m;
}

/* ---------------------------------------------------------------- Identity */

static yt_tensor *
identity_forward(yt_module *m, yt_tensor *const *in, int n)
{
    if (n != 1)
        return yt__module_arity_error(m, 1, n);
    return yt_retain(in[0]);
}

static const yt_module_kind identity_kind = {.name = "Identity", .forward = identity_forward};

yt_module *
yt_identity_new(void)
{
    return yt_module_new(&identity_kind, NULL);
}

/* ---------------------------------------------------------------- Embedding */

typedef struct embedding_ctx {
    int64_t num, dim;
    int64_t padding_idx; /* normalised to 0..num-1, or -1 for none */
} embedding_ctx;

static yt_tensor *
embedding_forward(yt_module *m, yt_tensor *const *in, int n)
{
    if (n != 1)
        return yt__module_arity_error(m, 1, n);
    const embedding_ctx *c = m->ctx;
    if (yt_dtype_is_floating(in[0]->dtype) || in[0]->dtype == YT_DTYPE_BOOL)
        return yt__fail(YT_ERR_DTYPE,
                        "Embedding(%lld, %lld): input is %s; indices must be integers (i64)",
                        (long long)c->num, (long long)c->dim, yt_dtype_name(in[0]->dtype));
    return yt_embedding_ex(m->params.tensors[0], in[0], c->padding_idx, false, false);
}

static yt_status
embedding_describe(const yt_module *m, char *buf, size_t cap)
{
    const embedding_ctx *c = m->ctx;
    if (c->padding_idx >= 0)
        snprintf(buf, cap, "%lld, %lld, padding_idx=%lld", (long long)c->num, (long long)c->dim,
                 (long long)c->padding_idx);
    else
        snprintf(buf, cap, "%lld, %lld", (long long)c->num, (long long)c->dim);
    return YT_OK;
}

const yt_module_kind yt__embedding_kind = {
    .name = "Embedding",
    .forward = embedding_forward,
    .describe = embedding_describe,
    .release_ctx = free,
};

yt_module *
yt_embedding_new(int64_t num_embeddings, int64_t embedding_dim, int64_t padding_idx)
{
    if (num_embeddings <= 0 || embedding_dim <= 0)
        return yt__module_fail(YT_ERR_VALUE, "embedding_new: %s=%lld must be positive",
                               num_embeddings <= 0 ? "num_embeddings" : "embedding_dim",
                               (long long)(num_embeddings <= 0 ? num_embeddings : embedding_dim));
    int64_t pad = -1;
    if (padding_idx != YT_NONE) {
        if (padding_idx >= num_embeddings || padding_idx < -num_embeddings)
            return yt__module_fail(
                YT_ERR_VALUE,
                "embedding_new: padding_idx=%lld is out of range for %lld embeddings "
                "(expected %lld..%lld, or YT_NONE)",
                (long long)padding_idx, (long long)num_embeddings, (long long)-num_embeddings,
                (long long)num_embeddings - 1);
        pad = padding_idx < 0 ? padding_idx + num_embeddings : padding_idx;
    }
    embedding_ctx c = {num_embeddings, embedding_dim, pad};
    yt_module *m = yt__module_new_copy(&yt__embedding_kind, &c, sizeof c);
    if (m == NULL)
        return NULL;
    const int64_t wsize[2] = {num_embeddings, embedding_dim};
    yt_tensor *w = yt__module_new_param(m, "weight", wsize, 2);
    if (w == NULL || yt_init_normal_(w, 0.0, 1.0, NULL) != YT_OK) {
        yt_module_release(m);
        return NULL;
    }
    if (pad >= 0) { /* PyTorch zeroes the padding row */
        bool was = yt_set_grad_enabled(false);
        yt__scope_suspend();
        yt_tensor *row = yt_select(w, 0, pad);
        yt__scope_resume();
        yt_set_grad_enabled(was);
        yt_status st = row != NULL ? yt__fill(row, 0.0) : yt_errcode();
        yt_release(row);
        if (st != YT_OK) {
            yt_module_release(m);
            return NULL;
        }
    }
    return m;
}
