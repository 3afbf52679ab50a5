/* flip on the CPU: a private view of self with negated strides along the flipped dims (starting at
 * their last element), copied into the contiguous result by the pointwise copy loop. The view
 * never escapes, so no public tensor has a negative stride. */
#include "kernels.h"

yt_status
yt__cpu_flip(yt_tensor *result, yt_tensor *self, const int64_t *dims, int dims_len)
{
    if (self->numel == 0)
        return YT_OK;
    int64_t strides[YT_MAX_DIM];
    int64_t offset = self->offset;
    for (int i = 0; i < self->dim; i++)
        strides[i] = self->strides[i];
    for (int i = 0; i < dims_len; i++) {
        int64_t d = dims[i]; /* wrapped and de-duplicated by the caller */
        if (self->dim == 0 || d < 0 || d >= self->dim)
            continue;
        /* (size - 1) * stride: the view's elements lie inside self's, so this fits */
        offset += (self->sizes[d] - 1) * self->strides[d];
        strides[d] = -self->strides[d];
    }
    yt_tensor *view = yt__view_of(self, self->dim, self->sizes, strides, offset);
    if (view == NULL)
        return yt__last_status();
    yt_status status = yt__copy_into(result, view);
    yt_release(view);
    return status;
}
