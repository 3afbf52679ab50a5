/* linear(input, weight, bias) = input @ weight^T + bias, in public ops (autograd and double
 * backward come from addmm / matmul):
 *   2-D weight with a bias  one addmm(bias, input, weight^T): the bias is the GEMM's C (beta 1);
 *                           an N-D input's leading dims fold into the rows (a view when its
 *                           strides allow, else a copy, as matmul does), the result is viewed
 *                           back: no separate pass adding the bias, none summing its gradient
 *                           through a broadcast add
 *   otherwise               matmul(input, weight^T) (+ bias): N-D inputs fold into one mm
 * weight^T is a transposed view; the GEMM reads it in place. bias may be NULL (None). The
 * generated yt_linear has checked ranks and sizes. */
#include "internal.h"
#include "kernels.h"

/* bias must broadcast to the output (input's leading dims, then out_features for a 2-D weight);
 * checked here so that a wrong size is reported as linear's bias, not as addmm's self. */
static bool
bias_fits(yt_tensor *input, yt_tensor *weight, yt_tensor *bias)
{
    int di = yt_tensor_dim(input), dw = yt_tensor_dim(weight), db = yt_tensor_dim(bias);
    int64_t out[YT_MAX_DIM];
    int n = 0;
    for (int i = 0; i < di - 1; i++)
        out[n++] = yt_tensor_size(input, i);
    if (dw == 2)
        out[n++] = yt_tensor_size(weight, 0);
    for (int i = 1; i <= db && i <= n; i++) {
        int64_t b = yt_tensor_size(bias, db - i);
        if (b != 1 && b != out[n - i]) {
            char bs[YT__SIZES_BUF], os[YT__SIZES_BUF], is[YT__SIZES_BUF], ws[YT__SIZES_BUF];
            yt__fail(YT_ERR_SHAPE,
                     "linear: bias of shape %s cannot broadcast to the output shape %s "
                     "(input %s, weight %s)",
                     yt__format_sizes(bs, sizeof bs, yt_tensor_sizes(bias), db),
                     yt__format_sizes(os, sizeof os, out, n),
                     yt__format_sizes(is, sizeof is, yt_tensor_sizes(input), di),
                     yt__format_sizes(ws, sizeof ws, yt_tensor_sizes(weight), dw));
            return false;
        }
    }
    return true;
}

yt_tensor *
yt__composite_linear(yt_tensor *input, yt_tensor *weight, yt_tensor *bias)
{
    int di = yt_tensor_dim(input), dw = yt_tensor_dim(weight);
    if (bias != NULL && !bias_fits(input, weight, bias))
        return NULL;
    yt_tensor *wt = dw == 2 ? yt_t(weight) : yt_retain(weight);
    yt_tensor *result;
    if (di == 2 && dw == 2 && bias != NULL) {
        result = yt_addmm(bias, input, wt);
    } else if (di > 2 && dw == 2 && bias != NULL) {
        const int64_t *sizes = yt_tensor_sizes(input);
        int64_t out_sizes[YT_MAX_DIM], rows;
        if (!yt__checked_numel(&rows, sizes, di - 1)) {
            char buf[YT__SIZES_BUF];
            yt_release(wt);
            return yt__fail(YT_ERR_NOMEM, "linear: input of shape %s has too many rows to fold",
                            yt__format_sizes(buf, sizeof buf, sizes, di));
        }
        for (int i = 0; i < di - 1; i++)
            out_sizes[i] = sizes[i];
        out_sizes[di - 1] = yt_tensor_size(weight, 0);
        const int64_t flat_sizes[2] = {rows, sizes[di - 1]};
        yt_tensor *flat = yt_reshape(input, flat_sizes, 2);
        yt_tensor *prod = yt_addmm(bias, flat, wt);
        result = yt_view(prod, out_sizes, di);
        yt_release(prod);
        yt_release(flat);
    } else {
        yt_tensor *prod = yt_matmul(input, wt);
        result = bias == NULL || prod == NULL ? yt_retain(prod) : yt_add(prod, bias);
        yt_release(prod);
    }
    yt_release(wt);
    return result;
}
