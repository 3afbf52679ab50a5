/* Backward of the reductions (sum.dim, mean.dim, amax): the gradient of the reduced result is
 * spread back over the input's shape. Written in public ops so double backward works. */
#include <math.h>

#include "internal.h"
#include "kernels.h"

/* Which of the `ndim` dims were reduced: `dim` wrapped against ndim (empty = all of them).
 * Returns the count, or -1 with the error recorded. */
static int
reduced_dims(bool *reduced, int ndim, const int64_t *dim, int dim_len, const char *op)
{
    int64_t wrapped[YT_MAX_DIM];
    for (int i = 0; i < dim_len; i++)
        wrapped[i] = dim[i];
    if (yt__wrap_dims(wrapped, dim_len, ndim, op, "dim") != YT_OK)
        return -1;
    for (int i = 0; i < ndim; i++)
        reduced[i] = dim_len == 0;
    for (int i = 0; i < dim_len; i++)
        if (ndim > 0) /* a 0-d input accepts dim 0, which names nothing */
            reduced[wrapped[i]] = true;
    int n = 0;
    for (int i = 0; i < ndim; i++)
        n += reduced[i];
    return n;
}

/* `t` (a reduction's result, or its gradient) with the reduced dims put back as size 1 when
 * keepdim dropped them, so that it broadcasts against the input of `ndim` dims. */
static yt_tensor *
restore_reduced_dims(yt_tensor *t, const bool *reduced, int n_reduced, int ndim, bool keepdim,
                     const char *op, const char *arg)
{
    int expect = keepdim ? ndim : ndim - n_reduced;
    if (yt_tensor_dim(t) != expect)
        return yt__fail(YT_ERR_SHAPE,
                        "%s: %s is %d-D but a %s reduction of %d dims over a %d-D "
                        "input gives %d-D",
                        op, arg, yt_tensor_dim(t), keepdim ? "keepdim" : "non-keepdim", n_reduced,
                        ndim, expect);
    yt_tensor *result = yt_retain(t);
    if (keepdim)
        return result;
    for (int i = 0; i < ndim; i++) {
        if (reduced[i]) {
            yt_tensor *next = yt_unsqueeze(result, i);
            yt_release(result);
            result = next;
        }
    }
    return result;
}

yt_tensor *
yt__composite_sum_backward(yt_tensor *grad, const int64_t *sizes, int sizes_len, const int64_t *dim,
                           int dim_len, bool keepdim)
{
    bool reduced[YT_MAX_DIM];
    int n = reduced_dims(reduced, sizes_len, dim, dim_len, "sum_backward");
    if (n < 0)
        return NULL;
    yt_tensor *g =
        restore_reduced_dims(grad, reduced, n, sizes_len, keepdim, "sum_backward", "grad");
    yt_tensor *result = yt_expand(g, sizes, sizes_len);
    yt_release(g);
    return result;
}

yt_tensor *
yt__composite_mean_backward(yt_tensor *grad, const int64_t *sizes, int sizes_len,
                            const int64_t *dim, int dim_len, bool keepdim)
{
    bool reduced[YT_MAX_DIM];
    int n = reduced_dims(reduced, sizes_len, dim, dim_len, "mean_backward");
    if (n < 0)
        return NULL;
    int64_t count = 1;
    for (int i = 0; i < sizes_len; i++) {
        if (!reduced[i])
            continue;
        if (sizes[i] < 0)
            return yt__fail(YT_ERR_VALUE, "mean_backward: sizes[%d]=%lld is negative", i,
                            (long long)sizes[i]);
        if (!yt__mul_ok(&count, count, sizes[i]))
            return yt__fail(YT_ERR_NOMEM,
                            "mean_backward: the reduced element count overflows int64");
    }
    /* count == 0 means a reduced dim of size 0: the expanded gradient is then empty and the
     * division never happens on an element. */
    yt_tensor *g =
        restore_reduced_dims(grad, reduced, n, sizes_len, keepdim, "mean_backward", "grad");
    yt_tensor *expanded = yt_expand(g, sizes, sizes_len);
    yt_tensor *result = yt_div_scalar(expanded, yt_int(count));
    yt_release(expanded);
    yt_release(g);
    return result;
}

/* The gradient goes to every element equal to the maximum, split equally among ties (PyTorch's
 * amax rule): grad / count * mask. A NaN maximum matches nothing and gives NaN, as in PyTorch. */
yt_tensor *
yt__composite_amax_backward(yt_tensor *grad, yt_tensor *self, yt_tensor *output, const int64_t *dim,
                            int dim_len, bool keepdim)
{
    int ndim = yt_tensor_dim(self);
    bool reduced[YT_MAX_DIM];
    int n = reduced_dims(reduced, ndim, dim, dim_len, "amax_backward");
    if (n < 0)
        return NULL;
    int64_t sum_dims[YT_MAX_DIM];
    int n_sum = 0;
    for (int i = 0; i < ndim; i++)
        if (reduced[i])
            sum_dims[n_sum++] = i;
    yt_tensor *g = restore_reduced_dims(grad, reduced, n, ndim, keepdim, "amax_backward", "grad");
    yt_tensor *o = g == NULL ? NULL
                             : restore_reduced_dims(output, reduced, n, ndim, keepdim,
                                                    "amax_backward", "output");
    yt_tensor *is_max = yt_eq(self, o);
    yt_tensor *mask = yt_to(is_max, yt_tensor_dtype(grad));
    /* n_sum == 0 only for a 0-d self (or no dims at all), where the mask is its own count. */
    yt_tensor *count =
        n_sum > 0 ? yt_sum_dim_ex(mask, sum_dims, n_sum, true, YT_DTYPE_NONE) : yt_retain(mask);
    yt_tensor *share = yt_div(g, count);
    yt_tensor *result = yt_mul(share, mask);
    yt_release(share);
    yt_release(count);
    yt_release(mask);
    yt_release(is_max);
    yt_release(o);
    yt_release(g);
    return result;
}

/* Gradient of the full max/min: amax's rule over every dim. */
yt_tensor *
yt__composite_evenly_distribute_backward(yt_tensor *grad, yt_tensor *self, yt_tensor *value)
{
    return yt_amax_backward(grad, self, value, NULL, 0, false);
}

/* The product of the other elements of each slice along `dim` of `self` (keepdim-shaped
 * reductions), exact with zeros: with no zero in the slice it is prod / x; with one zero it is
 * the product of the nonzero elements at the zero and 0 elsewhere; with more it is 0. Written as
 * a / b * [no zero] + [x == 0] * p * [one zero], where p is the product with zeros replaced by
 * 1, so that every step is differentiable. */
static yt_tensor *
prod_of_others(yt_tensor *self, int64_t dim)
{
    yt_tensor *is_zero = yt_eq_scalar(self, yt_int(0));
    yt_tensor *nz = yt_to(is_zero, yt_tensor_dtype(self));
    yt_tensor *x1 = yt_add(self, nz); /* zeros become 1 */
    yt_tensor *p = yt_prod_dim_int_ex(x1, dim, true, YT_DTYPE_NONE);
    yt_tensor *zeros = yt_sum_dim_ex(nz, &dim, 1, true, YT_DTYPE_NONE);
    yt_tensor *none_b = yt_eq_scalar(zeros, yt_int(0));
    yt_tensor *one_b = yt_eq_scalar(zeros, yt_int(1));
    yt_tensor *none = yt_to(none_b, yt_tensor_dtype(self));
    yt_tensor *one = yt_to(one_b, yt_tensor_dtype(self));
    yt_tensor *ratio = yt_div(p, x1);
    yt_tensor *a = yt_mul(ratio, none);
    yt_tensor *p_one = yt_mul(p, one);
    yt_tensor *b = yt_mul(nz, p_one);
    yt_tensor *result = yt_add(a, b);
    yt_release(b);
    yt_release(p_one);
    yt_release(a);
    yt_release(ratio);
    yt_release(one);
    yt_release(none);
    yt_release(one_b);
    yt_release(none_b);
    yt_release(zeros);
    yt_release(p);
    yt_release(x1);
    yt_release(nz);
    yt_release(is_zero);
    return result;
}

yt_tensor *
yt__composite_prod_dim_backward(yt_tensor *grad, yt_tensor *self, yt_tensor *output, int64_t dim,
                                bool keepdim)
{
    (void)output; /* recomputed without the zeros */
    int ndim = yt_tensor_dim(self);
    if (ndim == 0) { /* the product of one element: d/dx x = 1 */
        return yt_mul_scalar(grad, yt_int(1));
    }
    bool reduced[YT_MAX_DIM];
    int n = reduced_dims(reduced, ndim, &dim, 1, "prod_dim_backward");
    if (n < 0)
        return NULL;
    yt_tensor *g =
        restore_reduced_dims(grad, reduced, n, ndim, keepdim, "prod_dim_backward", "grad");
    int64_t d = dim < 0 ? dim + ndim : dim;
    yt_tensor *others = prod_of_others(self, d);
    yt_tensor *result = yt_mul(g, others);
    yt_release(others);
    yt_release(g);
    return result;
}

yt_tensor *
yt__composite_prod_backward(yt_tensor *grad, yt_tensor *self, yt_tensor *output)
{
    (void)output;
    int64_t flat_size = -1;
    yt_tensor *flat = yt_reshape(self, &flat_size, 1);
    yt_tensor *others = flat == NULL ? NULL : prod_of_others(flat, 0);
    yt_tensor *shaped =
        others == NULL ? NULL : yt_reshape(others, yt_tensor_sizes(self), yt_tensor_dim(self));
    yt_tensor *result = yt_mul(grad, shaped);
    yt_release(shaped);
    yt_release(others);
    yt_release(flat);
    return result;
}

/* sign(x) as x's dtype: (x > 0) - (x < 0). */
static yt_tensor *
sign_of(yt_tensor *x)
{
    yt_tensor *pos_b = yt_gt_scalar(x, yt_int(0));
    yt_tensor *neg_b = yt_lt_scalar(x, yt_int(0));
    yt_tensor *pos = yt_to(pos_b, yt_tensor_dtype(x));
    yt_tensor *neg = yt_to(neg_b, yt_tensor_dtype(x));
    yt_tensor *result = yt_sub(pos, neg);
    yt_release(neg);
    yt_release(pos);
    yt_release(neg_b);
    yt_release(pos_b);
    return result;
}

/* Gradient of linalg_vector_norm: grad * sign(x) * |x|^(p-1) / norm^(p-1) for finite p (so
 * grad * x / norm for p = 2, grad * sign(x) for p = 1), amax's tie rule on |x| for p = inf, and
 * 0 where the norm is 0 (PyTorch's choice at the kink); no gradient for ord = 0. */
yt_tensor *
yt__composite_norm_backward(yt_tensor *grad, yt_tensor *self, yt_scalar ord, yt_tensor *output,
                            const int64_t *dim, int dim_len, bool keepdim)
{
    double p = yt__scalar_to_double(ord);
    int ndim = yt_tensor_dim(self);
    bool reduced[YT_MAX_DIM];
    int n = reduced_dims(reduced, ndim, dim, dim_len, "norm_backward");
    if (n < 0)
        return NULL;
    yt_tensor *sign = sign_of(self);
    yt_tensor *absx = yt_mul(self, sign);
    if (p == 0) { /* the count of nonzeros is flat: no gradient */
        yt_release(absx);
        yt_release(sign);
        return yt_zeros_like(self);
    }
    if (isinf(p)) { /* +inf and -inf: the chosen magnitudes share the gradient */
        yt_tensor *share = yt_amax_backward(grad, absx, output, dim, dim_len, keepdim);
        yt_tensor *result = yt_mul(share, sign);
        yt_release(share);
        yt_release(absx);
        yt_release(sign);
        return result;
    }
    yt_tensor *g = restore_reduced_dims(grad, reduced, n, ndim, keepdim, "norm_backward", "grad");
    yt_tensor *o = g == NULL ? NULL
                             : restore_reduced_dims(output, reduced, n, ndim, keepdim,
                                                    "norm_backward", "output");
    yt_tensor *scale;
    if (p == 1.0) {
        scale = yt_retain(sign);
    } else {
        /* sign(x) |x|^(p-1) / norm^(p-1), with norm = 0 replaced by 1 (its share is 0); for
         * p < 1, |x|^(p-1) is infinite at x == 0, where PyTorch takes the share as 0 */
        yt_tensor *is_zero = yt_eq_scalar(o, yt_int(0));
        yt_tensor *zmask = yt_to(is_zero, yt_tensor_dtype(o));
        yt_tensor *o1 = yt_add(o, zmask);
        yt_tensor *num = p == 2.0 ? yt_retain(absx) : yt_pow(absx, yt_float(p - 1));
        if (p < 1.0 && num != NULL) {
            yt_tensor *x_zero = yt_eq_scalar(absx, yt_int(0));
            yt_tensor *zero = yt_zeros_ex(NULL, 0, yt_tensor_dtype(absx), yt_tensor_device(absx));
            yt_tensor *masked = yt_where(x_zero, zero, num);
            yt_release(zero);
            yt_release(x_zero);
            yt_release(num);
            num = masked;
        }
        yt_tensor *den = p == 2.0 ? yt_retain(o1) : yt_pow(o1, yt_float(p - 1));
        yt_tensor *ratio = yt_div(num, den);
        yt_tensor *signed_ratio = yt_mul(ratio, sign);
        yt_tensor *keep = yt_rsub(zmask, yt_int(1)); /* 1 - [norm == 0] */
        scale = yt_mul(signed_ratio, keep);
        yt_release(keep);
        yt_release(signed_ratio);
        yt_release(ratio);
        yt_release(den);
        yt_release(num);
        yt_release(o1);
        yt_release(zmask);
        yt_release(is_zero);
    }
    yt_tensor *result = yt_mul(g, scale);
    yt_release(scale);
    yt_release(o);
    yt_release(g);
    yt_release(absx);
    yt_release(sign);
    return result;
}

/* Gradient of max.dim/min.dim: grad (with `dim` restored) times the one-hot mask
 * arange(sizes[dim]) == indices, broadcast to `sizes`. A product, so it is differentiable in
 * grad, and no index can land out of range. */
yt_tensor *
yt__composite_value_selecting_reduction_backward(yt_tensor *grad, int64_t dim, yt_tensor *indices,
                                                 const int64_t *sizes, int sizes_len, bool keepdim)
{
    if (sizes_len == 0) /* a 0-d input: the gradient is grad itself */
        return yt_mul_scalar(grad, yt_int(1));
    int64_t d = dim;
    if (yt__wrap_dim(&d, sizes_len, "value_selecting_reduction_backward", "dim") != YT_OK)
        return NULL;
    bool reduced[YT_MAX_DIM] = {false};
    reduced[d] = true;
    yt_tensor *g = restore_reduced_dims(grad, reduced, 1, sizes_len, keepdim,
                                        "value_selecting_reduction_backward", "grad");
    yt_tensor *idx = g == NULL
                         ? NULL
                         : restore_reduced_dims(indices, reduced, 1, sizes_len, keepdim,
                                                "value_selecting_reduction_backward", "indices");
    int64_t shape[YT_MAX_DIM];
    for (int i = 0; i < sizes_len; i++)
        shape[i] = i == d ? sizes[d] : 1;
    yt_tensor *ar = idx == NULL ? NULL
                                : yt_arange_ex(yt_int(0), yt_int(sizes[d]), yt_int(1), YT_DTYPE_I64,
                                               YT_DEVICE_CPU);
    yt_tensor *col = yt_view(ar, shape, sizes_len);
    yt_tensor *hit = yt_eq(col, idx);
    yt_tensor *mask = yt_to(hit, yt_tensor_dtype(grad));
    yt_tensor *result = yt_mul(g, mask); /* g: sizes with 1 at d; mask: sizes[d] at d */
    yt_release(mask);
    yt_release(hit);
    yt_release(col);
    yt_release(ar);
    yt_release(idx);
    yt_release(g);
    return result;
}

/* grad * exp(self - result), grad and result broadcast back over the reduced dims (PyTorch's
 * formula: NaN over an all -inf slice, as there). */
yt_tensor *
yt__composite_logsumexp_backward(yt_tensor *grad, yt_tensor *self, yt_tensor *result,
                                 const int64_t *dim, int dim_len, bool keepdim)
{
    int ndim = yt_tensor_dim(self);
    bool reduced[YT_MAX_DIM];
    int n = reduced_dims(reduced, ndim, dim, dim_len, "logsumexp_backward");
    if (n < 0)
        return NULL;
    yt_tensor *g =
        restore_reduced_dims(grad, reduced, n, ndim, keepdim, "logsumexp_backward", "grad");
    yt_tensor *r = g == NULL ? NULL
                             : restore_reduced_dims(result, reduced, n, ndim, keepdim,
                                                    "logsumexp_backward", "result");
    yt_tensor *shifted = yt_sub(self, r);
    yt_tensor *e = yt_exp(shifted);
    yt_tensor *out = yt_mul(g, e);
    yt_release(e);
    yt_release(shifted);
    yt_release(r);
    yt_release(g);
    return out;
}

/* grad * 2 (self - mean(self)) / max(0, N - correction), N the reduced element count. */
yt_tensor *
yt__composite_var_backward(yt_tensor *grad, yt_tensor *self, const int64_t *dim, int dim_len,
                           int64_t correction, bool keepdim)
{
    int ndim = yt_tensor_dim(self);
    bool reduced[YT_MAX_DIM];
    int n = reduced_dims(reduced, ndim, dim, dim_len, "var_backward");
    if (n < 0)
        return NULL;
    int64_t count = 1;
    for (int i = 0; i < ndim; i++)
        if (reduced[i])
            count *= yt_tensor_size(self, i);
    double c = correction == YT_NONE ? 1.0 : (double)correction;
    double denom = (double)count - c > 0 ? (double)count - c : 0.0;
    yt_tensor *g = restore_reduced_dims(grad, reduced, n, ndim, keepdim, "var_backward", "grad");
    yt_tensor *mean = yt_mean_dim_ex(self, dim, dim_len, true, YT_DTYPE_NONE);
    yt_tensor *dev = yt_sub(self, mean);
    yt_tensor *gd = yt_mul(g, dev);
    yt_tensor *out = yt_mul_scalar(gd, yt_float(2.0 / denom));
    yt_release(gd);
    yt_release(dev);
    yt_release(mean);
    yt_release(g);
    return out;
}

/* var_backward of grad / (2 result), with 0 where the result is 0 (PyTorch's masked_fill); the
 * zero results are replaced by 1 before dividing so no inf or NaN reaches double backward. */
yt_tensor *
yt__composite_std_backward(yt_tensor *grad, yt_tensor *self, yt_tensor *result, const int64_t *dim,
                           int dim_len, int64_t correction, bool keepdim)
{
    yt_tensor *is_zero = yt_eq_scalar(result, yt_int(0));
    yt_tensor *zmask = yt_to(is_zero, yt_tensor_dtype(result));
    yt_tensor *r1 = yt_add(result, zmask);
    yt_tensor *keep = yt_rsub(zmask, yt_int(1)); /* 1 - [result == 0] */
    yt_tensor *two_r = yt_mul_scalar(r1, yt_int(2));
    yt_tensor *q = yt_div(grad, two_r);
    yt_tensor *gv = yt_mul(q, keep);
    yt_tensor *out = yt_var_backward(gv, self, dim, dim_len, correction, keepdim);
    yt_release(gv);
    yt_release(q);
    yt_release(two_r);
    yt_release(keep);
    yt_release(r1);
    yt_release(zmask);
    yt_release(is_zero);
    return out;
}
