/* flatten, unflatten, broadcast_to, narrow and repeat, written in public view ops: they stay views
 * (sharing self's storage) wherever the strides allow, and autograd comes from the ops they call.
 * The generated callers have wrapped the dims and run the declared checks. */
#include <stdio.h>

#include "internal.h"
#include "kernels.h"

yt_tensor *
yt__composite_flatten(yt_tensor *self, int64_t start_dim, int64_t end_dim)
{
    int ndim = yt_tensor_dim(self);
    const int64_t *sizes = yt_tensor_sizes(self);
    if (ndim == 0) {
        static const int64_t one[1] = {1};
        return yt_reshape(self, one, 1); /* PyTorch: a 0-D tensor flattens to [1] */
    }
    if (start_dim > end_dim)
        return yt__fail(YT_ERR_VALUE, "flatten: start_dim=%lld cannot come after end_dim=%lld",
                        (long long)start_dim, (long long)end_dim);
    if (start_dim == end_dim)
        return yt_retain(self);
    int64_t shape[YT_MAX_DIM];
    int n = 0;
    for (int i = 0; i < start_dim; i++)
        shape[n++] = sizes[i];
    int64_t merged = 1;
    for (int64_t i = start_dim; i <= end_dim; i++)
        merged *= sizes[i]; /* a factor of numel: cannot overflow */
    shape[n++] = merged;
    for (int i = (int)end_dim + 1; i < ndim; i++)
        shape[n++] = sizes[i];
    return yt_reshape(self, shape, n);
}

yt_tensor *
yt__composite_unflatten(yt_tensor *self, int64_t dim, const int64_t *sizes, int sizes_len)
{
    int ndim = yt_tensor_dim(self);
    const int64_t *self_sizes = yt_tensor_sizes(self);
    if (ndim - 1 + sizes_len > YT_MAX_DIM)
        return yt__fail(YT_ERR_SHAPE, "unflatten: the result would have %d dims (at most %d)",
                        ndim - 1 + sizes_len, YT_MAX_DIM);
    yt_shape part;
    char buf[YT__SIZES_BUF];
    if (yt__infer_view_shape(&part, "unflatten", sizes, sizes_len, self_sizes[dim]) != YT_OK) {
        yt_clear_error();
        return yt__fail(YT_ERR_SHAPE,
                        "unflatten: sizes %s don't multiply up to the size of dim %lld (%lld) in "
                        "the input tensor",
                        yt__format_sizes(buf, sizeof buf, sizes, sizes_len), (long long)dim,
                        (long long)self_sizes[dim]);
    }
    int64_t shape[YT_MAX_DIM];
    int n = 0;
    for (int i = 0; i < dim; i++)
        shape[n++] = self_sizes[i];
    for (int i = 0; i < part.dim; i++)
        shape[n++] = part.sizes[i];
    for (int i = (int)dim + 1; i < ndim; i++)
        shape[n++] = self_sizes[i];
    /* Splitting one dimension is always expressible with strides: this is a view. */
    return yt_view(self, shape, n);
}

yt_tensor *
yt__composite_broadcast_to(yt_tensor *self, const int64_t *size, int size_len)
{
    return yt_expand(self, size, size_len);
}

yt_tensor *
yt__composite_narrow(yt_tensor *self, int64_t dim, int64_t start, int64_t length)
{
    int64_t n = yt_tensor_sizes(self)[dim];
    if (start < -n || start > n)
        return yt__fail(YT_ERR_VALUE,
                        "narrow: start=%lld is out of range for dimension %lld of size %lld "
                        "(expected %lld..%lld)",
                        (long long)start, (long long)dim, (long long)n, (long long)-n,
                        (long long)n);
    if (start < 0)
        start += n;
    if (length > n - start)
        return yt__fail(YT_ERR_VALUE,
                        "narrow: start=%lld + length=%lld exceeds dimension %lld of size %lld",
                        (long long)start, (long long)length, (long long)dim, (long long)n);
    return yt_slice_ex(self, dim, start, start + length, 1);
}

yt_tensor *
yt__composite_repeat(yt_tensor *self, const int64_t *repeats, int repeats_len)
{
    int ndim = yt_tensor_dim(self);
    const int64_t *sizes = yt_tensor_sizes(self);
    int64_t shape[YT_MAX_DIM], target[YT_MAX_DIM];
    int lead = repeats_len - ndim;
    char buf[YT__SIZES_BUF];
    for (int i = 0; i < repeats_len; i++) {
        if (repeats[i] < 0)
            return yt__fail(YT_ERR_VALUE, "repeat: repeats[%d]=%lld is negative", i,
                            (long long)repeats[i]);
        shape[i] = i < lead ? 1 : sizes[i - lead];
        if (!yt__mul_ok(&target[i], shape[i], repeats[i]))
            return yt__fail(YT_ERR_VALUE, "repeat: repeats %s overflow the result size",
                            yt__format_sizes(buf, sizeof buf, repeats, repeats_len));
    }
    int64_t numel;
    if (!yt__checked_numel(&numel, target, repeats_len))
        return yt__fail(YT_ERR_VALUE, "repeat: the result %s has too many elements",
                        yt__format_sizes(buf, sizeof buf, target, repeats_len));
    /* Tile one dimension at a time: x of shape [..., s, ...] is viewed as [..., 1, s, ...],
     * expanded to [..., r, s, ...] (no copy) and merged into [..., r*s, ...] (one copy). Repeats
     * of 0 go first: tiled before them, a huge repeat stayed a view (merging with a dim of 1
     * needs no copy), but its gradient, of the view's size, did not ([3] repeated [2^40, 0, 2]
     * asked backward for 13 TB). */
    yt_tensor *x = yt_reshape(self, shape, repeats_len);
    bool tiled[YT_MAX_DIM] = {false};
    for (int step = 0; step < 2 * repeats_len && x != NULL; step++) {
        const int i = step % repeats_len;
        if (repeats[i] == 1 || tiled[i] || (step < repeats_len && repeats[i] != 0))
            continue;
        tiled[i] = true;
        int64_t cur[YT_MAX_DIM + 1];
        int n = 0;
        for (int j = 0; j < repeats_len; j++) {
            if (j == i)
                cur[n++] = repeats[i];
            cur[n++] = tiled[j] && j != i ? target[j] : shape[j];
        }
        if (n > YT_MAX_DIM) {
            yt_release(x);
            return yt__fail(YT_ERR_SHAPE,
                            "repeat: a %d-D result cannot be tiled (at most %d-D when repeats "
                            "differ from 1)",
                            repeats_len, YT_MAX_DIM - 1);
        }
        yt_tensor *u = yt_unsqueeze(x, i);
        yt_tensor *e = yt_expand(u, cur, n);
        int64_t merged[YT_MAX_DIM];
        for (int j = 0; j < repeats_len; j++)
            merged[j] = tiled[j] ? target[j] : shape[j];
        yt_tensor *next = yt_reshape(e, merged, repeats_len);
        yt_release(e);
        yt_release(u);
        yt_release(x);
        x = next;
    }
    if (x == NULL)
        return NULL;
    /* repeat always returns a new tensor, as in PyTorch */
    if (x->storage == self->storage) {
        yt_tensor *copy = yt_clone(x);
        yt_release(x);
        return copy;
    }
    return x;
}

yt_tensor *
yt__composite_roll_backward(yt_tensor *grad, const int64_t *shifts, int shifts_len,
                            const int64_t *dims, int dims_len)
{
    int64_t back[YT_MAX_DIM];
    if (shifts_len != (dims_len == 0 ? 1 : dims_len))
        return yt__fail(YT_ERR_SHAPE, "roll_backward: shifts has %d entries but dims has %d",
                        shifts_len, dims_len);
    /* -shift, reduced modulo the rolled size first so that INT64_MIN cannot overflow. */
    for (int i = 0; i < shifts_len; i++) {
        int64_t n = yt_tensor_numel(grad);
        if (dims_len > 0) {
            int64_t d = dims[i];
            if (yt__wrap_dim(&d, yt_tensor_dim(grad), "roll_backward", "dims") != YT_OK)
                return NULL;
            n = yt_tensor_dim(grad) == 0 ? 1 : yt_tensor_sizes(grad)[d];
        }
        back[i] = n == 0 ? 0 : -(shifts[i] % n);
    }
    return yt_roll_ex(grad, back, shifts_len, dims, dims_len);
}
