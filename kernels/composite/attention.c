/* scaled_dot_product_attention as PyTorch's math path, in public ops (so autograd and double
 * backward come from them):
 *   scores = query @ key^T / sqrt(E)
 *   causal: scores above the diagonal (key index > query index) become -inf
 *   bool attn_mask: scores where the mask is false become -inf; float mask: added to scores
 *   out = dropout(softmax(scores, -1), dropout_p) @ value   (the mask drawn from `generator`)
 * A row with every score masked gives NaN, as PyTorch's math path does. The generated function
 * checked ranks and the matching sizes of E and S. */
#include <math.h>

#include "internal.h"
#include "kernels.h"

static yt_tensor *
neg_inf_like(yt_tensor *t)
{
    return yt_full_ex(NULL, 0, yt_float(-INFINITY), yt_tensor_dtype(t), yt_tensor_device(t));
}

/* Bool [L, S]: true where key index s > query index l (the part a causal mask hides). */
static yt_tensor *
causal_hidden(int64_t L, int64_t S)
{
    int64_t lshape[] = {L, 1}, sshape[] = {1, S};
    yt_tensor *l = yt_arange(yt_int(0), yt_int(L)), *s = yt_arange(yt_int(0), yt_int(S));
    yt_tensor *lv = yt_view(l, lshape, 2), *sv = yt_view(s, sshape, 2);
    yt_tensor *hidden = yt_gt(sv, lv);
    yt_release(l);
    yt_release(s);
    yt_release(lv);
    yt_release(sv);
    return hidden;
}

/* Whether a mask of `mshape` broadcasts to the scores' shape without growing it. */
static bool
mask_fits(const yt_tensor *mask, const yt_tensor *scores)
{
    const int64_t *ms = yt_tensor_sizes(mask), *ss = yt_tensor_sizes(scores);
    int md = yt_tensor_dim(mask), sd = yt_tensor_dim(scores);
    if (md > sd)
        return false;
    for (int i = 1; i <= md; i++)
        if (ms[md - i] != 1 && ms[md - i] != ss[sd - i])
            return false;
    return true;
}

/* Whether query, key and value have the same rank and leading dims (no broadcasting). */
static bool
same_lead(yt_tensor *query, yt_tensor *key, yt_tensor *value)
{
    int d = yt_tensor_dim(query);
    if (yt_tensor_dim(key) != d || yt_tensor_dim(value) != d)
        return false;
    const int64_t *q = yt_tensor_sizes(query), *k = yt_tensor_sizes(key),
                  *v = yt_tensor_sizes(value);
    for (int i = 0; i < d - 2; i++)
        if (k[i] != q[i] || v[i] != q[i])
            return false;
    return true;
}

yt_tensor *
yt__composite_scaled_dot_product_attention(yt_tensor *query, yt_tensor *key, yt_tensor *value,
                                           yt_tensor *attn_mask, double dropout_p, bool is_causal,
                                           yt_generator *generator)
{
    const char *op = "scaled_dot_product_attention";
    int dq = yt_tensor_dim(query), dk = yt_tensor_dim(key);
    int64_t E = yt_tensor_size(query, dq - 1);
    if (!(dropout_p >= 0 && dropout_p <= 1))
        return yt__fail(YT_ERR_VALUE, "%s: dropout_p=%g must be in [0, 1]", op, dropout_p);
    if (is_causal && attn_mask != NULL)
        return yt__fail(YT_ERR_VALUE, "%s: attn_mask must be None when is_causal=True", op);
    if (attn_mask != NULL && yt_tensor_dtype(attn_mask) != YT_DTYPE_BOOL &&
        yt_tensor_dtype(attn_mask) != yt_tensor_dtype(query))
        return yt__fail(YT_ERR_DTYPE, "%s: attn_mask has dtype %s, expected bool or %s (query's)",
                        op, yt_dtype_name(yt_tensor_dtype(attn_mask)),
                        yt_dtype_name(yt_tensor_dtype(query)));

    double scale = E > 0 ? 1.0 / sqrt((double)E) : 1.0;
    if (attn_mask == NULL && !is_causal && dropout_p == 0 && same_lead(query, key, value)) {
        /* the common case as one kernel (the same math; weights kept for the backward) */
        yt_tensor *out = NULL, *weights = NULL;
        if (yt_scaled_dot_product_attention_math(query, key, value, scale, &out, &weights) != YT_OK)
            return NULL;
        yt_release(weights);
        return out;
    }
    yt_tensor *kt = yt_transpose(key, -2, -1);
    yt_tensor *raw = yt_matmul(query, kt);
    yt_tensor *scores = yt_mul_scalar(raw, yt_float(scale));
    yt_release(kt);
    yt_release(raw);
    if (scores != NULL && attn_mask != NULL && !mask_fits(attn_mask, scores)) {
        char a[YT__SIZES_BUF], b[YT__SIZES_BUF];
        yt__fail(
            YT_ERR_SHAPE, "%s: attn_mask of shape %s does not broadcast to the scores' shape %s",
            op, yt__format_sizes(a, sizeof a, yt_tensor_sizes(attn_mask), yt_tensor_dim(attn_mask)),
            yt__format_sizes(b, sizeof b, yt_tensor_sizes(scores), yt_tensor_dim(scores)));
        yt_release(scores);
        return NULL;
    }
    if (is_causal || (attn_mask != NULL && yt_tensor_dtype(attn_mask) == YT_DTYPE_BOOL)) {
        yt_tensor *ninf = scores ? neg_inf_like(scores) : NULL, *masked = NULL;
        if (is_causal) {
            yt_tensor *hidden =
                scores ? causal_hidden(yt_tensor_size(query, dq - 2), yt_tensor_size(key, dk - 2))
                       : NULL;
            masked = yt_where(hidden, ninf, scores);
            yt_release(hidden);
        } else {
            masked = yt_where(attn_mask, scores, ninf);
        }
        yt_release(ninf);
        yt_release(scores);
        scores = masked;
    } else if (attn_mask != NULL) {
        yt_tensor *added = yt_add(scores, attn_mask);
        yt_release(scores);
        scores = added;
    }
    /* softmax over the last dim (the fused op; a row of -inf gives NaN, as in PyTorch), then
     * dropout of the attention weights, as PyTorch's math path */
    yt_tensor *probs = yt_softmax(scores, -1);
    yt_tensor *kept =
        dropout_p > 0 ? yt_dropout_ex(probs, dropout_p, true, generator) : yt_retain(probs);
    yt_tensor *out = yt_matmul(kept, value);
    yt_release(scores);
    yt_release(probs);
    yt_release(kept);
    return out;
}
