/* Gradients of mm and addmm for their matrix operands, in public ops (double backward comes
 * from mm, t and mul), laid out as PyTorch's mm_mat1_backward / mm_mat2_backward lay them out:
 * a column-major operand (a transposed view, like nn.Linear's weight^T inside addmm) gets a
 * column-major gradient, computed as the transpose of the product taken in the other order.
 * The weight's gradient then arrives in the weight's own (row-major) layout and is accumulated
 * without a transposing copy. alpha == 1 multiplies nothing. */
#include "internal.h"
#include "kernels.h"

/* PyTorch's test: strides (1, rows). */
static bool
column_major(yt_tensor *t)
{
    return yt_tensor_stride(t, 0) == 1 && yt_tensor_stride(t, 1) == yt_tensor_size(t, 0);
}

static bool
is_one(yt_scalar s)
{
    return (s.kind == YT_SCALAR_INT && s.v.i == 1) || (s.kind == YT_SCALAR_FLOAT && s.v.f == 1.0) ||
           (s.kind == YT_SCALAR_BOOL && s.v.b);
}

/* alpha * x @ y, or (alpha * y^T @ x^T)^T when `transposed` (a column-major result). Takes
 * nothing; returns a new reference. */
static yt_tensor *
scaled_product(yt_tensor *x, yt_tensor *y, yt_scalar alpha, bool transposed)
{
    yt_tensor *xt = transposed ? yt_t(y) : yt_retain(x);
    yt_tensor *yt = transposed ? yt_t(x) : yt_retain(y);
    yt_tensor *prod = yt_mm(xt, yt);
    yt_release(yt);
    yt_release(xt);
    if (prod != NULL && !is_one(alpha)) {
        yt_tensor *scaled = yt_mul_scalar(prod, alpha);
        yt_release(prod);
        prod = scaled;
    }
    if (!transposed || prod == NULL)
        return prod;
    yt_tensor *result = yt_t(prod);
    yt_release(prod);
    return result;
}

yt_tensor *
yt__composite_mm_mat1_backward(yt_tensor *grad, yt_tensor *mat2, yt_tensor *mat1, yt_scalar alpha)
{
    yt_tensor *m2t = yt_t(mat2);
    yt_tensor *result = scaled_product(grad, m2t, alpha, column_major(mat1));
    yt_release(m2t);
    return result;
}

yt_tensor *
yt__composite_mm_mat2_backward(yt_tensor *grad, yt_tensor *mat1, yt_tensor *mat2, yt_scalar alpha)
{
    yt_tensor *m1t = yt_t(mat1);
    yt_tensor *result = scaled_product(m1t, grad, alpha, column_major(mat2));
    yt_release(m1t);
    return result;
}
