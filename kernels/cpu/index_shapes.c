/* Result shapes of the indexing ops, called by the generated op functions (declared in
 * internal.h). Dims arrive wrapped. A 0-D tensor counts as 1-D of size 1 where PyTorch says so. */
#include "internal.h"

yt_status
yt__shape_index_select(yt_shape *out, const char *op, yt_tensor *self, int64_t dim,
                       yt_tensor *index)
{
    if (index->dim > 1)
        return yt__fail_status(YT_ERR_SHAPE, "%s: index must be 0-D or 1-D, got %d-D", op,
                               index->dim);
    yt__shape_of(out, self);
    if (self->dim == 0) {
        if (index->numel != 1)
            return yt__fail_status(YT_ERR_SHAPE,
                                   "%s: index of a 0-D self must hold one element, got %lld", op,
                                   (long long)index->numel);
        return YT_OK;
    }
    out->sizes[dim] = index->numel;
    return YT_OK;
}

yt_status
yt__shape_gather(yt_shape *out, const char *op, yt_tensor *self, int64_t dim, yt_tensor *index)
{
    int sd = self->dim > 0 ? self->dim : 1, id = index->dim > 0 ? index->dim : 1;
    if (sd != id)
        return yt__fail_status(YT_ERR_SHAPE,
                               "%s: index must have the same number of dimensions as self, got "
                               "%d-D index and %d-D self",
                               op, index->dim, self->dim);
    for (int d = 0; d < sd; d++)
        if (d != dim && yt__size_as_1d(index, d) > yt__size_as_1d(self, d))
            return yt__fail_status(YT_ERR_SHAPE,
                                   "%s: index.size(%d)=%lld must not exceed self.size(%d)=%lld "
                                   "outside dim %lld",
                                   op, d, (long long)yt__size_as_1d(index, d), d,
                                   (long long)yt__size_as_1d(self, d), (long long)dim);
    yt__shape_of(out, index);
    return YT_OK;
}

yt_status
yt__shape_embedding(yt_shape *out, const char *op, yt_tensor *weight, yt_tensor *indices)
{
    if (weight->dim != 2)
        return yt__fail_status(YT_ERR_SHAPE, "%s: weight must be 2-D, got %d-D", op, weight->dim);
    if (indices->dim >= YT_MAX_DIM)
        return yt__fail_status(YT_ERR_SHAPE, "%s: indices is %d-D; the result would exceed %d-D",
                               op, indices->dim, YT_MAX_DIM);
    yt__shape_of(out, indices);
    out->sizes[out->dim++] = weight->sizes[1];
    return YT_OK;
}

yt_status
yt__shape_embedding_dense_backward(yt_shape *out, const char *op, yt_tensor *grad_output,
                                   yt_tensor *indices, int64_t num_weights)
{
    if (num_weights < 0)
        return yt__fail_status(YT_ERR_VALUE, "%s: num_weights=%lld is negative", op,
                               (long long)num_weights);
    bool ok = grad_output->dim == indices->dim + 1;
    for (int d = 0; ok && d < indices->dim; d++)
        ok = grad_output->sizes[d] == indices->sizes[d];
    if (!ok) {
        char g[YT__SIZES_BUF], i[YT__SIZES_BUF];
        return yt__fail_status(YT_ERR_SHAPE,
                               "%s: grad_output has shape %s; expected indices' shape %s plus "
                               "one embedding dimension",
                               op,
                               yt__format_sizes(g, sizeof g, grad_output->sizes, grad_output->dim),
                               yt__format_sizes(i, sizeof i, indices->sizes, indices->dim));
    }
    int64_t elems;
    int64_t sizes[2] = {num_weights, grad_output->sizes[grad_output->dim - 1]};
    if (!yt__checked_numel(&elems, sizes, 2))
        return yt__fail_status(YT_ERR_VALUE, "%s: num_weights=%lld makes the result too large", op,
                               (long long)num_weights);
    out->dim = 2;
    out->sizes[0] = sizes[0];
    out->sizes[1] = sizes[1];
    return YT_OK;
}
