/* Backward helpers of the indexing ops, written in public ops so that they are differentiable
 * themselves (double backward): zeros plus index_add / scatter_add, gather plus zero padding, and
 * the embedding gradients. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kernels.h"

yt_tensor *
yt__composite_index_select_backward(yt_tensor *grad, const int64_t *self_sizes, int self_sizes_len,
                                    int64_t dim, yt_tensor *index)
{
    yt_tensor *zeros =
        yt_zeros_ex(self_sizes, self_sizes_len, yt_tensor_dtype(grad), yt_tensor_device(grad));
    yt_tensor *result = yt_index_add(zeros, dim, index, grad);
    yt_release(zeros);
    return result;
}

yt_tensor *
yt__composite_gather_backward(yt_tensor *grad, const int64_t *self_sizes, int self_sizes_len,
                              int64_t dim, yt_tensor *index)
{
    yt_tensor *zeros =
        yt_zeros_ex(self_sizes, self_sizes_len, yt_tensor_dtype(grad), yt_tensor_device(grad));
    yt_tensor *result = yt_scatter_add(zeros, dim, index, grad);
    yt_release(zeros);
    return result;
}

yt_tensor *
yt__composite_scatter_src_backward(yt_tensor *grad, const int64_t *src_sizes, int src_sizes_len,
                                   int64_t dim, yt_tensor *index)
{
    const int index_dim = yt_tensor_dim(index), nd = src_sizes_len;
    /* a 0-d index or src stands for one element of 1-D, as in scatter's forward */
    if (nd != index_dim && (nd > 1 || index_dim > 1))
        return yt__fail(YT_ERR_SHAPE,
                        "scatter_src_backward: src_sizes has %d entries but index is %d-D",
                        src_sizes_len, index_dim);
    if (yt_tensor_numel(index) == 0) /* nothing was scattered */
        return yt_zeros_ex(src_sizes, nd, yt_tensor_dtype(grad), yt_tensor_device(grad));
    yt_tensor *g = yt_gather(grad, dim, index);
    int64_t cur[YT_MAX_DIM];
    for (int d = 0; d < nd; d++)
        cur[d] = index_dim == 0 ? 1 : yt_tensor_sizes(index)[d];
    if (g != NULL && index_dim != nd) { /* 0-d against 1-D of one element */
        yt_tensor *reshaped = yt_reshape(g, cur, nd);
        yt_release(g);
        g = reshaped;
    }
    /* src may be larger than index: its other elements were never scattered (zero gradient) */
    for (int d = 0; d < nd && g != NULL; d++) {
        if (cur[d] == src_sizes[d])
            continue;
        int64_t have = cur[d];
        cur[d] = src_sizes[d];
        yt_tensor *padded = yt_slice_backward(g, cur, nd, d, 0, have, 1);
        yt_release(g);
        g = padded;
    }
    return g;
}

yt_tensor *
yt__composite_embedding_weight_backward(yt_tensor *grad, yt_tensor *indices,
                                        const int64_t *weight_sizes, int weight_sizes_len,
                                        int64_t padding_idx, bool scale_grad_by_freq)
{
    if (weight_sizes_len != 2)
        return yt__fail(YT_ERR_SHAPE,
                        "embedding_weight_backward: weight_sizes has %d entries, expected 2",
                        weight_sizes_len);
    return yt_embedding_dense_backward(grad, indices, weight_sizes[0], padding_idx,
                                       scale_grad_by_freq);
}

yt_tensor *
yt__composite_embedding_dense_double_backward(yt_tensor *grad, yt_tensor *indices,
                                              int64_t padding_idx, bool scale_grad_by_freq)
{
    const char *op = "embedding_dense_double_backward";
    yt_tensor *rows = yt_embedding_ex(grad, indices, -1, false, false);
    if (rows == NULL)
        return NULL;
    /* Each picked row is scaled as its gradient was: 0 at padding_idx, 1/count when scaled. */
    int64_t n = yt_tensor_numel(indices), num = yt_tensor_sizes(grad)[0];
    yt_tensor *idx = yt__cast_copy(indices, YT_DTYPE_I64);
    if (idx == NULL) {
        yt_release(rows);
        return NULL;
    }
    const int64_t *iv = (const int64_t *)yt__data_ptr(idx);
    bool any_padding = false;
    for (int64_t i = 0; i < n; i++)
        any_padding = any_padding || iv[i] == padding_idx;
    if (!any_padding && !scale_grad_by_freq) {
        yt_release(idx);
        return rows;
    }
    double *scale = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    int64_t *counts = calloc((size_t)(num > 0 ? num : 1), sizeof *counts);
    if (scale == NULL || counts == NULL) {
        free(scale);
        free(counts);
        yt_release(idx);
        yt_release(rows);
        return yt__fail(YT_ERR_NOMEM, "%s: out of memory", op);
    }
    for (int64_t i = 0; i < n; i++)
        counts[iv[i]]++; /* in range: embedding checked them */
    for (int64_t i = 0; i < n; i++)
        scale[i] = iv[i] == padding_idx ? 0.0
                   : scale_grad_by_freq ? 1.0 / (double)counts[iv[i]]
                                        : 1.0;
    int64_t sizes[YT_MAX_DIM];
    int nd = yt_tensor_dim(indices);
    memcpy(sizes, yt_tensor_sizes(indices), sizeof(int64_t) * (size_t)nd);
    sizes[nd] = 1;
    yt_tensor *s64 = yt_tensor_from_data(scale, sizes, nd + 1, YT_DTYPE_F64);
    yt_tensor *s = s64 == NULL ? NULL : yt__cast_copy(s64, yt_tensor_dtype(grad));
    yt_tensor *result = s == NULL ? NULL : yt_mul(rows, s);
    free(scale);
    free(counts);
    yt_release(s);
    yt_release(s64);
    yt_release(idx);
    yt_release(rows);
    return result;
}
