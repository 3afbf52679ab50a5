/* row_norm and its backward kernels on the CPU: the 4-D input [A, G, K, S] is A*G rows of K*S
 * elements, with a [G, K] weight/bias (norm_rows.c does the work). The generated op checked the
 * dims and the weight/bias shapes; these entries check what YAML cannot say. */
#include <string.h>

#include "kernels.h"
#include "norm.h"

static yt__rownorm
geometry(const yt_tensor *input, bool center, double eps)
{
    const int64_t *s = input->sizes;
    /* with elements, the products divide numel and cannot overflow; without, nothing is
     * computed (and a product of the other sizes might overflow) */
    if (input->numel == 0)
        return (yt__rownorm){0, 0, s[3], s[1], eps, center};
    return (yt__rownorm){s[0] * s[1], s[2] * s[3], s[3], s[1], eps, center};
}

/* weight of a backward op (may be NULL): [G, K] of input [A, G, K, S]. */
static yt_status
check_weight(const yt_tensor *weight, const yt_tensor *input, const char *op)
{
    if (weight == NULL || (weight->dim == 2 && weight->sizes[0] == input->sizes[1] &&
                           weight->sizes[1] == input->sizes[2]))
        return YT_OK;
    char a[YT__SIZES_BUF];
    return yt__fail_status(YT_ERR_SHAPE, "%s: weight has shape %s, expected [%lld, %lld]", op,
                           yt__format_sizes(a, sizeof a, weight->sizes, weight->dim),
                           (long long)input->sizes[1], (long long)input->sizes[2]);
}

yt_status
yt__cpu_row_norm(yt_tensor *result, yt_tensor *input, yt_tensor *weight, yt_tensor *bias,
                 bool center, double eps)
{
    yt__rownorm p = geometry(input, center, eps);
    return yt__rownorm_forward(result, NULL, NULL, input, weight, bias, &p);
}

yt_status
yt__cpu_row_norm_backward_input(yt_tensor *result, yt_tensor *grad_out, yt_tensor *input,
                                yt_tensor *weight, bool center, double eps)
{
    const char *op = "row_norm_backward_input";
    if (yt__check_same_shape(op, "grad_out", grad_out, "input", input) != YT_OK ||
        check_weight(weight, input, op) != YT_OK)
        return yt__last_status();
    yt__rownorm p = geometry(input, center, eps);
    return yt__rownorm_backward(result, NULL, NULL, grad_out, input, NULL, NULL, weight, &p);
}

yt_status
yt__cpu_row_norm_backward_weight(yt_tensor *result, yt_tensor *grad_out, yt_tensor *input,
                                 bool center, double eps)
{
    if (yt__check_same_shape("row_norm_backward_weight", "grad_out", grad_out, "input", input) !=
        YT_OK)
        return yt__last_status();
    yt__rownorm p = geometry(input, center, eps);
    return yt__rownorm_backward(NULL, result, NULL, grad_out, input, NULL, NULL, NULL, &p);
}

yt_status
yt__cpu_row_norm_backward_bias(yt_tensor *result, yt_tensor *grad_out)
{
    yt__rownorm p = geometry(grad_out, true, 0.0);
    return yt__rownorm_backward(NULL, NULL, result, grad_out, NULL, NULL, NULL, NULL, &p);
}

/* All three gradients in one pass (row_norm's backward without a graph); the ones not asked for
 * are zeros. */
yt_status
yt__cpu_row_norm_backward(yt_tensor *d_input, yt_tensor *d_weight, yt_tensor *d_bias,
                          yt_tensor *grad_out, yt_tensor *input, yt_tensor *weight, bool center,
                          double eps, bool input_grad, bool weight_grad, bool bias_grad)
{
    const char *op = "row_norm_backward";
    if (yt__check_same_shape(op, "grad_out", grad_out, "input", input) != YT_OK ||
        check_weight(weight, input, op) != YT_OK)
        return yt__last_status();
    yt_tensor *skipped[3] = {input_grad ? NULL : d_input, weight_grad ? NULL : d_weight,
                             bias_grad ? NULL : d_bias};
    for (int i = 0; i < 3; i++) /* fresh contiguous results of the generated function */
        if (skipped[i] != NULL && skipped[i]->numel > 0)
            memset(yt__data_ptr(skipped[i]), 0,
                   (size_t)skipped[i]->numel * yt_dtype_size(skipped[i]->dtype));
    if (!input_grad && !weight_grad && !bias_grad)
        return YT_OK;
    yt__rownorm p = geometry(input, center, eps);
    return yt__rownorm_backward(input_grad ? d_input : NULL, weight_grad ? d_weight : NULL,
                                bias_grad ? d_bias : NULL, grad_out, input, NULL, NULL, weight, &p);
}
