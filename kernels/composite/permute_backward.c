/* permute_backward: the gradient of permute is grad permuted by the inverse permutation. */
#include "internal.h"
#include "kernels.h"

yt_tensor *
yt__composite_permute_backward(yt_tensor *grad, const int64_t *dims, int dims_len)
{
    int ndim = yt_tensor_dim(grad);
    if (dims_len != ndim)
        return yt__fail(YT_ERR_SHAPE, "permute_backward: dims has %d entries but grad is %d-D",
                        dims_len, ndim);
    int64_t wrapped[YT_MAX_DIM];
    for (int i = 0; i < dims_len; i++)
        wrapped[i] = dims[i];
    /* Range and duplicate checks: a valid permutation has an inverse. */
    if (yt__wrap_dims(wrapped, dims_len, ndim, "permute_backward", "dims") != YT_OK)
        return NULL;
    int64_t inverse[YT_MAX_DIM];
    for (int i = 0; i < dims_len; i++)
        inverse[wrapped[i]] = i;
    return yt_permute(grad, inverse, dims_len);
}
