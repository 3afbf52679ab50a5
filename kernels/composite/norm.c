/* The public normalization ops as composites over their kernels (autograd comes from the parts):
 *   layer_norm, rms_norm: input [..., *normalized_shape] viewed as row_norm's [M, 1, D, 1]
 *   group_norm:           input [N, C, *] viewed as row_norm's [N, G, C/G, H*W]
 *   batch_norm:           training: batch_norm_training; eval: (x - rm) / sqrt(rv + eps) * w + b
 *                         in public ops, so it is differentiable in every argument.
 * The generated functions checked dtypes, devices and ranks; these check the sizes that YAML
 * cannot compare (whole shapes, divisibility). */
#include "internal.h"
#include "kernels.h"

/* Whether t (may be NULL: nothing to check) has exactly the sizes `want`. */
static bool
has_sizes(const yt_tensor *t, const int64_t *want, int n)
{
    if (t == NULL)
        return true;
    bool same = t->dim == n;
    for (int i = 0; same && i < n; i++)
        same = t->sizes[i] == want[i];
    return same;
}

/* The checks layer_norm and rms_norm share: the trailing dims of input and the shapes of weight
 * and bias (either may be NULL) equal normalized_shape. */
static yt_status
check_normalized_shape(const char *op, yt_tensor *input, const int64_t *ns, int n,
                       yt_tensor *weight, yt_tensor *bias)
{
    char a[YT__SIZES_BUF], b[YT__SIZES_BUF];
    bool match = true;
    for (int i = 0; i < n; i++)
        match = match && input->sizes[input->dim - n + i] == ns[i];
    if (!match)
        return yt__fail_status(YT_ERR_SHAPE,
                               "%s: normalized_shape %s does not match the trailing dims of input "
                               "of shape %s",
                               op, yt__format_sizes(a, sizeof a, ns, n),
                               yt__format_sizes(b, sizeof b, input->sizes, input->dim));
    const char *arg = !has_sizes(weight, ns, n) ? "weight"
                      : !has_sizes(bias, ns, n) ? "bias"
                                                : NULL;
    if (arg != NULL) {
        yt_tensor *t = arg[0] == 'w' ? weight : bias;
        return yt__fail_status(YT_ERR_SHAPE, "%s: %s has shape %s, expected normalized_shape %s",
                               op, arg, yt__format_sizes(a, sizeof a, t->sizes, t->dim),
                               yt__format_sizes(b, sizeof b, ns, n));
    }
    return YT_OK;
}

/* row_norm of `input` seen as [s0, s1, s2, s3] with weight/bias seen as [s1, s2], and the result
 * given back in input's shape. */
static yt_tensor *
row_norm_as(yt_tensor *input, const int64_t s[4], yt_tensor *weight, yt_tensor *bias, bool center,
            double eps)
{
    const int64_t affine[2] = {s[1], s[2]};
    yt_tensor *x = yt_reshape(input, s, 4);
    yt_tensor *w = weight ? yt_reshape(weight, affine, 2) : NULL;
    yt_tensor *b = bias ? yt_reshape(bias, affine, 2) : NULL;
    yt_tensor *y = (weight && !w) || (bias && !b) ? NULL : yt_row_norm(x, w, b, center, eps);
    yt_tensor *out = yt_reshape(y, input->sizes, input->dim);
    yt_release(x);
    yt_release(w);
    yt_release(b);
    yt_release(y);
    return out;
}

/* Product of sizes[from..to). It can only overflow when another size of the tensor is 0 (the
 * element count fits), and then 0 serves as well: the view is empty either way. */
static int64_t
size_product(const int64_t *sizes, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++)
        if (!yt__mul_ok(&p, p, sizes[i]))
            return 0;
    return p;
}

/* [M, 1, D, 1]: rows are the leading dims, D the product of the last n. */
static void
rows_geometry(int64_t s[4], const yt_tensor *input, int n)
{
    s[0] = size_product(input->sizes, 0, input->dim - n);
    s[2] = size_product(input->sizes, input->dim - n, input->dim);
    s[1] = s[3] = 1;
}

yt_tensor *
yt__composite_layer_norm(yt_tensor *input, const int64_t *normalized_shape,
                         int normalized_shape_len, yt_tensor *weight, yt_tensor *bias, double eps,
                         bool cudnn_enable)
{
    (void)cudnn_enable; /* PyTorch's backend switch; there is one CPU path */
    if (check_normalized_shape("layer_norm", input, normalized_shape, normalized_shape_len, weight,
                               bias) != YT_OK)
        return NULL;
    int64_t s[4];
    rows_geometry(s, input, normalized_shape_len);
    return row_norm_as(input, s, weight, bias, true, eps);
}

/* torch.finfo(dtype).eps: rms_norm's default eps. */
static double
machine_epsilon(yt_dtype dtype)
{
    switch (dtype) {
    case YT_DTYPE_F64:
        return 2.220446049250313e-16;
    case YT_DTYPE_F16:
        return 9.765625e-04;
    case YT_DTYPE_BF16:
        return 7.8125e-03;
    default:
        return 1.1920928955078125e-07;
    }
}

yt_tensor *
yt__composite_rms_norm(yt_tensor *input, const int64_t *normalized_shape, int normalized_shape_len,
                       yt_tensor *weight, const double *eps)
{
    if (check_normalized_shape("rms_norm", input, normalized_shape, normalized_shape_len, weight,
                               NULL) != YT_OK)
        return NULL;
    int64_t s[4];
    rows_geometry(s, input, normalized_shape_len);
    return row_norm_as(input, s, weight, NULL, false, eps ? *eps : machine_epsilon(input->dtype));
}

yt_tensor *
yt__composite_group_norm(yt_tensor *input, int64_t num_groups, yt_tensor *weight, yt_tensor *bias,
                         double eps, bool cudnn_enabled)
{
    (void)cudnn_enabled;
    const int64_t C = input->sizes[1];
    if (C % num_groups != 0)
        return yt__fail(YT_ERR_SHAPE,
                        "group_norm: input.size(1)=%lld channels do not split into num_groups=%lld "
                        "equal groups",
                        (long long)C, (long long)num_groups);
    const int64_t hw = size_product(input->sizes, 2, input->dim);
    const int64_t s[4] = {input->sizes[0], num_groups, C / num_groups, hw};
    return row_norm_as(input, s, weight, bias, true, eps);
}

/* [C] viewed as [C, 1, ..., 1] to broadcast against an input of `dim` dims ([N, C, ...]). */
static yt_tensor *
per_channel(yt_tensor *t, int dim)
{
    int64_t s[YT_MAX_DIM];
    s[0] = t ? t->sizes[0] : 0;
    for (int i = 1; i < dim - 1; i++)
        s[i] = 1;
    return yt_view(t, s, dim - 1);
}

/* Eval mode in public ops: y = b' + x * a with a = w / sqrt(rv + eps) and b' = b - rm * a per
 * channel (PyTorch's arithmetic), one pass over x. */
static yt_tensor *
batch_norm_eval(yt_tensor *input, yt_tensor *weight, yt_tensor *bias, yt_tensor *running_mean,
                yt_tensor *running_var, double eps)
{
    yt_tensor *shifted = yt_add_scalar(running_var, yt_float(eps));
    yt_tensor *invstd = yt_rsqrt(shifted);
    yt_tensor *a = weight ? yt_mul(invstd, weight) : yt_retain(invstd);
    yt_tensor *ma = yt_mul(running_mean, a);
    yt_tensor *b = bias ? yt_sub(bias, ma) : yt_neg(ma);
    yt_tensor *av = per_channel(a, input->dim), *bv = per_channel(b, input->dim);
    yt_tensor *y = yt_addcmul(bv, input, av);
    yt_tensor *temps[] = {shifted, invstd, a, ma, b, av, bv};
    for (size_t i = 0; i < sizeof temps / sizeof temps[0]; i++)
        yt_release(temps[i]);
    return y;
}

yt_tensor *
yt__composite_batch_norm(yt_tensor *input, yt_tensor *weight, yt_tensor *bias,
                         yt_tensor *running_mean, yt_tensor *running_var, bool training,
                         double momentum, double eps, bool cudnn_enabled)
{
    (void)cudnn_enabled;
    char have[YT__SIZES_BUF];
    if (training) {
        /* values per channel, N * spatial (as PyTorch counts it, also when C is 0) */
        int64_t count = input->sizes[0], rest = size_product(input->sizes, 2, input->dim);
        if (!yt__mul_ok(&count, count, rest))
            count = INT64_MAX;
        if (count <= 1)
            return yt__fail(YT_ERR_VALUE,
                            "batch_norm: expected more than 1 value per channel when training, got "
                            "input of shape %s",
                            yt__format_sizes(have, sizeof have, input->sizes, input->dim));
        return yt_batch_norm_training(input, weight, bias, running_mean, running_var, momentum,
                                      eps);
    }
    if (running_mean == NULL || running_var == NULL)
        return yt__fail(YT_ERR_VALUE, "batch_norm: running_mean and running_var are required when "
                                      "training=False");
    return batch_norm_eval(input, weight, bias, running_mean, running_var, eps);
}
