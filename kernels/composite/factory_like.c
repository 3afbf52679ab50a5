/* The _like factories: the matching factory called with `self`'s size, device and (unless
 * `dtype` is given) dtype. The result has no autograd history. */
#include "internal.h"
#include "kernels.h"

static yt_dtype
like_dtype(const yt_tensor *self, yt_dtype dtype)
{
    return dtype != YT_DTYPE_NONE ? dtype : self->dtype;
}

yt_tensor *
yt__composite_empty_like(yt_tensor *self, yt_dtype dtype)
{
    return yt_empty_ex(self->sizes, self->dim, like_dtype(self, dtype), self->device);
}

yt_tensor *
yt__composite_ones_like(yt_tensor *self, yt_dtype dtype)
{
    return yt_ones_ex(self->sizes, self->dim, like_dtype(self, dtype), self->device);
}

yt_tensor *
yt__composite_full_like(yt_tensor *self, yt_scalar fill_value, yt_dtype dtype)
{
    return yt_full_ex(self->sizes, self->dim, fill_value, like_dtype(self, dtype), self->device);
}

yt_tensor *
yt__composite_rand_like(yt_tensor *self, yt_generator *generator, yt_dtype dtype)
{
    return yt_rand_ex(self->sizes, self->dim, generator, like_dtype(self, dtype), self->device);
}

yt_tensor *
yt__composite_randn_like(yt_tensor *self, yt_generator *generator, yt_dtype dtype)
{
    return yt_randn_ex(self->sizes, self->dim, generator, like_dtype(self, dtype), self->device);
}
