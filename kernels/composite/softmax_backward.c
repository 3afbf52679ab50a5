/* Double backward of softmax and log_softmax: the derivatives of the fused backward kernels
 * (softmax_backward_data, log_softmax_backward_data), written in public ops so that they are
 * differentiable in turn. y is the forward output, g the incoming gradient of the backward
 * kernel's input grad_output, G the gradient arriving at the backward kernel's result. */
#include "internal.h"
#include "kernels.h"

/* sum(t, [dim], keepdim=True) */
static yt_tensor *
sum_keep(yt_tensor *t, int64_t dim)
{
    return yt_sum_dim_ex(t, &dim, 1, true, YT_DTYPE_NONE);
}

/* softmax_backward_data computes y * (g - sum(g * y)); its derivative with respect to y is
 * G * (g - sum(g * y)) - g * sum(G * y). */
yt_tensor *
yt__composite_softmax_double_backward(yt_tensor *grad, yt_tensor *grad_output, yt_tensor *output,
                                      int64_t dim)
{
    yt_tensor *gy = yt_mul(grad_output, output);
    yt_tensor *s_gy = sum_keep(gy, dim);
    yt_tensor *centered = yt_sub(grad_output, s_gy);
    yt_tensor *first = yt_mul(grad, centered);
    yt_tensor *Gy = yt_mul(grad, output);
    yt_tensor *s_Gy = sum_keep(Gy, dim);
    yt_tensor *second = yt_mul(grad_output, s_Gy);
    yt_tensor *result = yt_sub(first, second);
    yt_release(second);
    yt_release(s_Gy);
    yt_release(Gy);
    yt_release(first);
    yt_release(centered);
    yt_release(s_gy);
    yt_release(gy);
    return result;
}

/* log_softmax_backward_data computes g - exp(y) * sum(g); its derivative with respect to y is
 * -G * exp(y) * sum(g). */
yt_tensor *
yt__composite_log_softmax_double_backward(yt_tensor *grad, yt_tensor *grad_output,
                                          yt_tensor *output, int64_t dim)
{
    yt_tensor *e = yt_exp(output);
    yt_tensor *s_g = sum_keep(grad_output, dim);
    yt_tensor *ge = yt_mul(grad, e);
    yt_tensor *prod = yt_mul(ge, s_g);
    yt_tensor *result = yt_neg(prod);
    yt_release(prod);
    yt_release(ge);
    yt_release(s_g);
    yt_release(e);
    return result;
}

/* The adjoint of g -> g - exp(y) * sum(g): G -> G - sum(G * exp(y)). */
yt_tensor *
yt__composite_log_softmax_backward_data_adjoint(yt_tensor *grad, yt_tensor *output, int64_t dim)
{
    yt_tensor *e = yt_exp(output);
    yt_tensor *ge = yt_mul(grad, e);
    yt_tensor *s = sum_keep(ge, dim);
    yt_tensor *result = yt_sub(grad, s);
    yt_release(s);
    yt_release(ge);
    yt_release(e);
    return result;
}
