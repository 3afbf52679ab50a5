/* reshape and contiguous: copy only when the layout leaves no choice. Written in public ops, so
 * autograd (view's and clone's backward) comes from the ops they call. */
#include "internal.h"
#include "kernels.h"

yt_tensor *
yt__composite_reshape(yt_tensor *self, const int64_t *shape, int shape_len)
{
    /* Check the element count first so the error names reshape, not the view it becomes. */
    yt_shape target;
    if (yt__infer_view_shape(&target, "reshape", shape, shape_len, yt_tensor_numel(self)) != YT_OK)
        return NULL;
    int64_t strides[YT_MAX_DIM];
    if (yt__view_strides(strides, self, &target))
        return yt_view(self, target.sizes, target.dim);
    /* A contiguous copy can always be viewed with any shape of the same numel. */
    yt_tensor *copy = yt_contiguous(self);
    yt_tensor *result = yt_view(copy, target.sizes, target.dim);
    yt_release(copy);
    if (result != NULL)
        yt__forget_private_base(result); /* the copy is reshape's own: the result is no view */
    return result;
}

yt_tensor *
yt__composite_contiguous(yt_tensor *self)
{
    if (yt_tensor_is_contiguous(self))
        return yt_retain(self);
    return yt_clone(self);
}
