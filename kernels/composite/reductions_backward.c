/* Backward of the reductions (sum.dim, mean.dim, amax): the gradient of the reduced result is
 * spread back over the input's shape. Written in public ops so double backward works. */
#include "internal.h"
#include "kernels.h"

/* Which of the `ndim` dims were reduced: `dim` wrapped against ndim (empty = all of them).
 * Returns the count, or -1 with the error recorded. */
static int
reduced_dims(bool *reduced, int ndim, const int64_t *dim, int dim_len, const char *op)
{
    int64_t wrapped[YT_MAX_DIM];
    for (int i = 0; i < dim_len; i++)
        wrapped[i] = dim[i];
    if (yt__wrap_dims(wrapped, dim_len, ndim, op, "dim") != YT_OK)
        return -1;
    for (int i = 0; i < ndim; i++)
        reduced[i] = dim_len == 0;
    for (int i = 0; i < dim_len; i++)
        if (ndim > 0) /* a 0-d input accepts dim 0, which names nothing */
            reduced[wrapped[i]] = true;
    int n = 0;
    for (int i = 0; i < ndim; i++)
        n += reduced[i];
    return n;
}

/* `t` (a reduction's result, or its gradient) with the reduced dims put back as size 1 when
 * keepdim dropped them, so that it broadcasts against the input of `ndim` dims. */
static yt_tensor *
restore_reduced_dims(yt_tensor *t, const bool *reduced, int n_reduced, int ndim, bool keepdim,
                     const char *op, const char *arg)
{
    int expect = keepdim ? ndim : ndim - n_reduced;
    if (yt_tensor_dim(t) != expect)
        return yt__fail(YT_ERR_SHAPE,
                        "%s: %s is %d-D but a %s reduction of %d dims over a %d-D "
                        "input gives %d-D",
                        op, arg, yt_tensor_dim(t), keepdim ? "keepdim" : "non-keepdim", n_reduced,
                        ndim, expect);
    yt_tensor *result = yt_retain(t);
    if (keepdim)
        return result;
    for (int i = 0; i < ndim; i++) {
        if (reduced[i]) {
            yt_tensor *next = yt_unsqueeze(result, i);
            yt_release(result);
            result = next;
        }
    }
    return result;
}

yt_tensor *
yt__composite_sum_backward(yt_tensor *grad, const int64_t *sizes, int sizes_len, const int64_t *dim,
                           int dim_len, bool keepdim)
{
    bool reduced[YT_MAX_DIM];
    int n = reduced_dims(reduced, sizes_len, dim, dim_len, "sum_backward");
    if (n < 0)
        return NULL;
    yt_tensor *g =
        restore_reduced_dims(grad, reduced, n, sizes_len, keepdim, "sum_backward", "grad");
    yt_tensor *result = yt_expand(g, sizes, sizes_len);
    yt_release(g);
    return result;
}

yt_tensor *
yt__composite_mean_backward(yt_tensor *grad, const int64_t *sizes, int sizes_len,
                            const int64_t *dim, int dim_len, bool keepdim)
{
    bool reduced[YT_MAX_DIM];
    int n = reduced_dims(reduced, sizes_len, dim, dim_len, "mean_backward");
    if (n < 0)
        return NULL;
    int64_t count = 1;
    for (int i = 0; i < sizes_len; i++) {
        if (!reduced[i])
            continue;
        if (sizes[i] < 0)
            return yt__fail(YT_ERR_VALUE, "mean_backward: sizes[%d]=%lld is negative", i,
                            (long long)sizes[i]);
        if (!yt__mul_ok(&count, count, sizes[i]))
            return yt__fail(YT_ERR_NOMEM,
                            "mean_backward: the reduced element count overflows int64");
    }
    /* count == 0 means a reduced dim of size 0: the expanded gradient is then empty and the
     * division never happens on an element. */
    yt_tensor *g =
        restore_reduced_dims(grad, reduced, n, sizes_len, keepdim, "mean_backward", "grad");
    yt_tensor *expanded = yt_expand(g, sizes, sizes_len);
    yt_tensor *result = yt_div_scalar(expanded, yt_int(count));
    yt_release(expanded);
    yt_release(g);
    return result;
}

/* The gradient goes to every element equal to the maximum, split equally among ties (PyTorch's
 * amax rule): grad / count * mask. A NaN maximum matches nothing and gives NaN, as in PyTorch. */
yt_tensor *
yt__composite_amax_backward(yt_tensor *grad, yt_tensor *self, yt_tensor *output, const int64_t *dim,
                            int dim_len, bool keepdim)
{
    int ndim = yt_tensor_dim(self);
    bool reduced[YT_MAX_DIM];
    int n = reduced_dims(reduced, ndim, dim, dim_len, "amax_backward");
    if (n < 0)
        return NULL;
    int64_t sum_dims[YT_MAX_DIM];
    int n_sum = 0;
    for (int i = 0; i < ndim; i++)
        if (reduced[i])
            sum_dims[n_sum++] = i;
    yt_tensor *g = restore_reduced_dims(grad, reduced, n, ndim, keepdim, "amax_backward", "grad");
    yt_tensor *o = g == NULL ? NULL
                             : restore_reduced_dims(output, reduced, n, ndim, keepdim,
                                                    "amax_backward", "output");
    yt_tensor *is_max = yt_eq(self, o);
    yt_tensor *mask = yt_to(is_max, yt_tensor_dtype(grad));
    /* n_sum == 0 only for a 0-d self (or no dims at all), where the mask is its own count. */
    yt_tensor *count =
        n_sum > 0 ? yt_sum_dim_ex(mask, sum_dims, n_sum, true, YT_DTYPE_NONE) : yt_retain(mask);
    yt_tensor *share = yt_div(g, count);
    yt_tensor *result = yt_mul(share, mask);
    yt_release(share);
    yt_release(count);
    yt_release(mask);
    yt_release(is_max);
    yt_release(o);
    yt_release(g);
    return result;
}
