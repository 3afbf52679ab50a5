/* linear(input, weight, bias) = input @ weight^T + bias, in public ops (autograd and double
 * backward come from addmm / matmul):
 *   2-D input with a bias   one addmm(bias, input, weight^T): the bias is the GEMM's C (beta 1)
 *   otherwise               matmul(input, weight^T) (+ bias): N-D inputs fold into one mm
 * weight^T is a transposed view; the GEMM reads it in place. bias may be NULL (None). */
#include "internal.h"
#include "kernels.h"

/* Declared in generated/kernels.h once the ops.yaml entry (which needs `Tensor?`) is enabled. */
YT_INTERNAL yt_tensor *yt__composite_linear(yt_tensor *input, yt_tensor *weight, yt_tensor *bias);

yt_tensor *
yt__composite_linear(yt_tensor *input, yt_tensor *weight, yt_tensor *bias)
{
    int di = yt_tensor_dim(input), dw = yt_tensor_dim(weight);
    if (di < 1)
        return yt__fail(YT_ERR_SHAPE, "linear: input must be at least 1-D, got 0-D");
    if (dw < 1 || dw > 2)
        return yt__fail(YT_ERR_SHAPE, "linear: weight must be 1-D or 2-D, got %d-D", dw);
    if (yt_tensor_size(input, -1) != yt_tensor_size(weight, -1))
        return yt__fail(
            YT_ERR_SHAPE, "linear: input.size(-1)=%lld does not match weight.size(-1)=%lld",
            (long long)yt_tensor_size(input, -1), (long long)yt_tensor_size(weight, -1));
    yt_tensor *wt = dw == 2 ? yt_t(weight) : yt_retain(weight);
    yt_tensor *result;
    if (di == 2 && dw == 2 && bias != NULL) {
        result = yt_addmm(bias, input, wt);
    } else {
        yt_tensor *prod = yt_matmul(input, wt);
        result = bias == NULL || prod == NULL ? yt_retain(prod) : yt_add(prod, bias);
        yt_release(prod);
    }
    yt_release(wt);
    return result;
}
