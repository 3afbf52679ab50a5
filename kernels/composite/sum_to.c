/* sum_to: undoes a broadcast from `size` to self's shape by summing the broadcast dims (the
 * backward of every broadcasting op). Written in public ops, so it is itself differentiable. */
#include "internal.h"
#include "kernels.h"

yt_tensor *
yt__composite_sum_to(yt_tensor *self, const int64_t *size, int size_len)
{
    char want[YT__SIZES_BUF], have[YT__SIZES_BUF];
    int ndim = yt_tensor_dim(self);
    const int64_t *sizes = yt_tensor_sizes(self);
    if (size_len > ndim)
        return yt__fail(YT_ERR_SHAPE, "sum_to: size %s has more dims than self's shape %s",
                        yt__format_sizes(want, sizeof want, size, size_len),
                        yt__format_sizes(have, sizeof have, sizes, ndim));
    int lead = ndim - size_len;
    int64_t dims[YT_MAX_DIM];
    int n = 0;
    for (int i = 0; i < lead; i++)
        dims[n++] = i;
    for (int i = lead; i < ndim; i++) {
        int64_t target = size[i - lead];
        if (target == sizes[i])
            continue;
        if (target != 1)
            return yt__fail(YT_ERR_SHAPE,
                            "sum_to: self's shape %s cannot be summed to size %s: size[%d]=%lld "
                            "is neither 1 nor self.size(%d)=%lld",
                            yt__format_sizes(have, sizeof have, sizes, ndim),
                            yt__format_sizes(want, sizeof want, size, size_len), i - lead,
                            (long long)target, i, (long long)sizes[i]);
        dims[n++] = i;
    }
    if (n == 0)
        return yt_retain(self); /* already of shape `size` */
    /* keepdim, then view: the leading dims go, the size-1 ones stay as `size` asks. Summing in
     * self's dtype keeps integral gradients integral instead of promoting them to i64. */
    yt_tensor *summed = yt_sum_dim_ex(self, dims, n, true, yt_tensor_dtype(self));
    if (lead == 0)
        return summed;
    yt_tensor *result = yt_view(summed, size, size_len);
    yt_release(summed);
    return result;
}
