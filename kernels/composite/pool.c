/* max_pool2d: max_pool2d_with_indices without the indices (they stay saved in its backward
 * node), as in PyTorch. */
#include "internal.h"
#include "kernels.h"

yt_tensor *
yt__composite_max_pool2d(yt_tensor *self, const int64_t *kernel_size, int kernel_size_len,
                         const int64_t *stride, int stride_len, const int64_t *padding,
                         int padding_len, const int64_t *dilation, int dilation_len, bool ceil_mode)
{
    yt_tensor *values = NULL, *indices = NULL;
    if (yt_max_pool2d_with_indices_ex(self, kernel_size, kernel_size_len, stride, stride_len,
                                      padding, padding_len, dilation, dilation_len, ceil_mode,
                                      &values, &indices) != YT_OK) {
        /* the same arguments: its errors are this op's */
        yt__error_rename("max_pool2d_with_indices", "max_pool2d");
        return NULL;
    }
    yt_release(indices);
    return values;
}
