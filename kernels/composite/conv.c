/* conv1d, the "same"/"valid" padding overloads, conv_transpose2d and conv2d's bias gradient,
 * written in public ops (conv2d and conv2d_backward_input do the work), so their gradients come
 * from those ops' own. */
#include <string.h>

#include "conv.h"
#include "kernels.h"

/* Padding that keeps the size with stride 1: total = d (k - 1) per dim, the odd one extra at
 * the bottom/right (PyTorch). Returns the symmetric padding to convolve with (the larger half)
 * and, in `crop`, whether the first output row/column must be dropped. */
static yt_status
same_padding(const char *op, const int64_t *stride, int stride_len, const int64_t *dilation,
             int dilation_len, const int64_t *kernel, int n, int64_t *pad, bool *crop)
{
    char buf[YT__SIZES_BUF];
    for (int i = 0; i < stride_len; i++)
        if (stride[i] != 1)
            return yt__fail_status(YT_ERR_VALUE, "%s: padding='same' needs stride 1, got stride=%s",
                                   op, yt__format_sizes(buf, sizeof buf, stride, stride_len));
    for (int i = 0; i < n; i++) {
        int64_t d = dilation_len == 0 ? 1 : dilation[dilation_len == 1 ? 0 : i], total;
        if (d < 1)
            return yt__fail_status(YT_ERR_VALUE, "%s: dilation=%s must be >= 1", op,
                                   yt__format_sizes(buf, sizeof buf, dilation, dilation_len));
        if (!yt__mul_ok(&total, d, kernel[i] - 1))
            return yt__fail_status(YT_ERR_VALUE, "%s: dilation * (kernel size - 1) overflows", op);
        pad[i] = total - total / 2;
        crop[i] = total % 2 != 0;
    }
    return YT_OK;
}

yt_tensor *
yt__composite_conv2d_padding(yt_tensor *input, yt_tensor *weight, yt_tensor *bias,
                             const int64_t *stride, int stride_len, const char *padding,
                             const int64_t *dilation, int dilation_len, int64_t groups)
{
    if (strcmp(padding, "valid") == 0)
        return yt_conv2d_ex(input, weight, bias, stride, stride_len, NULL, 0, dilation,
                            dilation_len, groups);
    int64_t pad[2];
    bool crop[2];
    if (same_padding("conv2d", stride, stride_len, dilation, dilation_len, weight->sizes + 2, 2,
                     pad, crop) != YT_OK)
        return NULL;
    yt_tensor *y = yt_conv2d_ex(input, weight, bias, stride, stride_len, pad, 2, dilation,
                                dilation_len, groups);
    for (int i = 0; i < 2 && y != NULL; i++) {
        if (!crop[i])
            continue;
        yt_tensor *cut = yt_slice_ex(y, yt_tensor_dim(y) - 2 + i, 1, YT_NONE, 1);
        yt_release(y);
        y = cut;
    }
    return y;
}

/* conv1d's arguments as conv2d's over a height of 1, validated under conv1d's name. */
typedef struct conv1d_args {
    yt_tensor *x, *w;
    int64_t stride[2], padding[2], dilation[2];
} conv1d_args;

/* conv1d's geometry checked in its own 1-D terms (input [N,] C, L, weight [out, in/groups, k]),
 * so that no error speaks of the 2-D conv it is lifted to ("stride=[1, 0]"). The generated
 * function has checked the ranks and the list lengths. */
static yt_status
conv1d_check(yt_tensor *input, yt_tensor *weight, int64_t stride, int64_t padding, int64_t dilation,
             int64_t groups)
{
    char a[YT__SIZES_BUF], b[YT__SIZES_BUF];
    if (stride < 1)
        return yt__fail_status(YT_ERR_VALUE, "conv1d: stride=[%lld] must be >= 1",
                               (long long)stride);
    if (padding < 0)
        return yt__fail_status(YT_ERR_VALUE, "conv1d: padding=[%lld] must be >= 0",
                               (long long)padding);
    if (dilation < 1)
        return yt__fail_status(YT_ERR_VALUE, "conv1d: dilation=[%lld] must be >= 1",
                               (long long)dilation);
    if (groups < 1)
        return yt__fail_status(YT_ERR_VALUE, "conv1d: groups=%lld must be >= 1", (long long)groups);
    int cdim = input->dim - 2;
    int64_t c_in = input->sizes[cdim], len = input->sizes[cdim + 1];
    int64_t c_out = weight->sizes[0], k = weight->sizes[2];
    if (c_in % groups != 0)
        return yt__fail_status(
            YT_ERR_VALUE,
            "conv1d: input.size(%d)=%lld (in_channels) is not divisible by groups=%lld", cdim,
            (long long)c_in, (long long)groups);
    if (c_out % groups != 0)
        return yt__fail_status(
            YT_ERR_VALUE,
            "conv1d: weight.size(0)=%lld (out_channels) is not divisible by groups=%lld",
            (long long)c_out, (long long)groups);
    if (weight->sizes[1] != c_in / groups)
        return yt__fail_status(
            YT_ERR_SHAPE,
            "conv1d: weight.size(1)=%lld must equal in_channels/groups=%lld/%lld "
            "(weight %s, input %s)",
            (long long)weight->sizes[1], (long long)c_in, (long long)groups,
            yt__format_sizes(a, sizeof a, weight->sizes, weight->dim),
            yt__format_sizes(b, sizeof b, input->sizes, input->dim));
    if (k < 1)
        return yt__fail_status(YT_ERR_SHAPE, "conv1d: weight has a zero-size kernel (weight %s)",
                               yt__format_sizes(a, sizeof a, weight->sizes, weight->dim));
    int64_t padded;
    if (!yt__mul_ok(&padded, padding, 2) || !yt__add_ok(&padded, padded, len))
        return yt__fail_status(YT_ERR_VALUE,
                               "conv1d: padding=[%lld] on an input of length %lld gives a padded "
                               "length that overflows int64",
                               (long long)padding, (long long)len);
    if (yt__pool_out_size(len, k, padding, stride, dilation, false) < 1)
        return yt__fail_status(YT_ERR_SHAPE,
                               "conv1d: kernel %lld (dilation %lld) is larger than the padded "
                               "input %lld (input %lld, padding %lld)",
                               (long long)k, (long long)dilation, (long long)padded, (long long)len,
                               (long long)padding);
    return YT_OK;
}

static yt_status
conv1d_lift(conv1d_args *a, yt_tensor *input, yt_tensor *weight, const int64_t *stride,
            int stride_len, const int64_t *padding, int padding_len, const int64_t *dilation,
            int dilation_len, int64_t groups)
{
    a->x = a->w = NULL;
    a->stride[0] = 1, a->stride[1] = stride_len ? stride[0] : 1;
    a->padding[0] = 0, a->padding[1] = padding_len ? padding[0] : 0;
    a->dilation[0] = 1, a->dilation[1] = dilation_len ? dilation[0] : 1;
    if (conv1d_check(input, weight, a->stride[1], a->padding[1], a->dilation[1], groups) != YT_OK)
        return yt__last_status();
    int64_t xs[4] = {1, 1, 1, 1}, ws[4] = {1, 1, 1, 1};
    int xd = input->dim + 1;
    for (int i = 0; i < input->dim; i++)
        xs[i < input->dim - 1 ? i : i + 1] = input->sizes[i];
    for (int i = 0; i < 3; i++)
        ws[i < 2 ? i : 3] = weight->sizes[i];
    yt__conv_geom g;
    if (yt__conv_geom_init(&g, "conv1d", xs, xd, ws, 4, a->stride, 2, a->padding, 2, a->dilation, 2,
                           groups) != YT_OK)
        return yt__last_status();
    a->x = yt_unsqueeze(input, -2);
    a->w = yt_unsqueeze(weight, -2);
    return a->x != NULL && a->w != NULL ? YT_OK : yt__last_status();
}

static yt_tensor *
conv1d_finish(conv1d_args *a, yt_tensor *y)
{
    yt_release(a->x);
    yt_release(a->w);
    yt_tensor *r = yt_squeeze_dim(y, -2);
    yt_release(y);
    return r;
}

yt_tensor *
yt__composite_conv1d(yt_tensor *input, yt_tensor *weight, yt_tensor *bias, const int64_t *stride,
                     int stride_len, const int64_t *padding, int padding_len,
                     const int64_t *dilation, int dilation_len, int64_t groups)
{
    conv1d_args a;
    if (conv1d_lift(&a, input, weight, stride, stride_len, padding, padding_len, dilation,
                    dilation_len, groups) != YT_OK)
        return conv1d_finish(&a, NULL);
    yt_tensor *y = yt_conv2d_ex(a.x, a.w, bias, a.stride, 2, a.padding, 2, a.dilation, 2, groups);
    return conv1d_finish(&a, y);
}

yt_tensor *
yt__composite_conv1d_padding(yt_tensor *input, yt_tensor *weight, yt_tensor *bias,
                             const int64_t *stride, int stride_len, const char *padding,
                             const int64_t *dilation, int dilation_len, int64_t groups)
{
    char buf[YT__SIZES_BUF];
    if (stride_len > 1 || dilation_len > 1)
        return yt__fail(YT_ERR_VALUE, "conv1d: %s=%s must have at most 1 entry",
                        stride_len > 1 ? "stride" : "dilation",
                        stride_len > 1 ? yt__format_sizes(buf, sizeof buf, stride, stride_len)
                                       : yt__format_sizes(buf, sizeof buf, dilation, dilation_len));
    bool same = strcmp(padding, "same") == 0;
    if (same && stride_len == 1 && stride[0] != 1)
        return yt__fail(YT_ERR_VALUE, "conv1d: padding='same' needs stride 1, got stride=[%lld]",
                        (long long)stride[0]);
    int64_t pad = 0;
    bool crop = false;
    if (same && same_padding("conv1d", NULL, 0, dilation, dilation_len, weight->sizes + 2, 1, &pad,
                             &crop) != YT_OK)
        return NULL;
    conv1d_args a;
    if (conv1d_lift(&a, input, weight, stride, stride_len, &pad, 1, dilation, dilation_len,
                    groups) != YT_OK)
        return conv1d_finish(&a, NULL);
    yt_tensor *y = yt_conv2d_ex(a.x, a.w, bias, a.stride, 2, a.padding, 2, a.dilation, 2, groups);
    if (y != NULL && crop) {
        yt_tensor *cut = yt_slice_ex(y, yt_tensor_dim(y) - 1, 1, YT_NONE, 1);
        yt_release(y);
        y = cut;
    }
    return conv1d_finish(&a, y);
}

yt_tensor *
yt__composite_conv_transpose2d(yt_tensor *input, yt_tensor *weight, yt_tensor *bias,
                               const int64_t *stride, int stride_len, const int64_t *padding,
                               int padding_len, const int64_t *output_padding,
                               int output_padding_len, int64_t groups, const int64_t *dilation,
                               int dilation_len)
{
    const char *op = "conv_transpose2d";
    char a[YT__SIZES_BUF], b[YT__SIZES_BUF];
    int64_t s[2], p[2], op2[2], d[2];
    if (yt__conv_pair(s, op, "stride", stride, stride_len, 1, 1) != YT_OK ||
        yt__conv_pair(p, op, "padding", padding, padding_len, 0, 0) != YT_OK ||
        yt__conv_pair(op2, op, "output_padding", output_padding, output_padding_len, 0, 0) !=
            YT_OK ||
        yt__conv_pair(d, op, "dilation", dilation, dilation_len, 1, 1) != YT_OK)
        return NULL;
    int dim = input->dim;
    int64_t c_in = input->sizes[dim - 3];
    if (weight->sizes[0] != c_in)
        return yt__fail(YT_ERR_SHAPE,
                        "%s: weight.size(0)=%lld must equal the input channels input.size(%d)=%lld "
                        "(weight %s, input %s)",
                        op, (long long)weight->sizes[0], dim - 3, (long long)c_in,
                        yt__format_sizes(a, sizeof a, weight->sizes, weight->dim),
                        yt__format_sizes(b, sizeof b, input->sizes, dim));
    if (c_in % groups != 0)
        return yt__fail(YT_ERR_VALUE, "%s: input channels %lld are not divisible by groups=%lld",
                        op, (long long)c_in, (long long)groups);
    int64_t c_out, size[4];
    if (!yt__mul_ok(&c_out, weight->sizes[1], groups))
        return yt__fail(YT_ERR_VALUE, "%s: output channels overflow", op);
    for (int i = 0; i < 2; i++) {
        if (op2[i] >= s[i] && op2[i] >= d[i]) { /* PyTorch's rule */
            char c[YT__SIZES_BUF];
            return yt__fail(YT_ERR_VALUE,
                            "%s: output_padding=%s must be smaller than stride=%s or dilation=%s "
                            "in each dim",
                            op, yt__format_sizes(a, sizeof a, op2, 2),
                            yt__format_sizes(b, sizeof b, s, 2),
                            yt__format_sizes(c, sizeof c, d, 2));
        }
        /* (in - 1) s - 2 p + d (k - 1) + output_padding + 1 */
        int64_t in = input->sizes[dim - 2 + i], k = weight->sizes[2 + i], t, u, out;
        if (!yt__mul_ok(&t, in - 1, s[i]) || !yt__mul_ok(&u, d[i], k - 1) ||
            !yt__add_ok(&out, t, u) || !yt__add_ok(&out, out, op2[i] + 1) ||
            !yt__mul_ok(&u, p[i], 2))
            return yt__fail(YT_ERR_VALUE, "%s: the output size overflows", op);
        out -= u;
        if (in == 0 || out < 1)
            return yt__fail(YT_ERR_SHAPE,
                            "%s: output size %lld in dim %d is not positive (input %s, weight %s)",
                            op, (long long)out, dim - 2 + i,
                            yt__format_sizes(a, sizeof a, input->sizes, dim),
                            yt__format_sizes(b, sizeof b, weight->sizes, weight->dim));
        size[2 + i] = out;
    }
    if (bias != NULL && (bias->dim != 1 || bias->sizes[0] != c_out))
        return yt__fail(YT_ERR_SHAPE, "%s: bias must be 1-D of size out_channels=%lld, got %s", op,
                        (long long)c_out, yt__format_sizes(a, sizeof a, bias->sizes, bias->dim));
    size[0] = dim == 4 ? input->sizes[0] : 0;
    size[1] = c_out;
    const int64_t *input_size = dim == 4 ? size : size + 1;
    /* conv2d over an output of this size gives in + output_padding / stride positions, one more
     * for each whole stride in output_padding (possible when output_padding < dilation): the
     * transposed convolution is the adjoint of that conv2d applied to the input with zeros in
     * those extra positions (bottom / right). */
    const int64_t extra[4] = {0, op2[1] / s[1], 0, op2[0] / s[0]}; /* pad's order: W, then H */
    yt_tensor *x = extra[1] == 0 && extra[3] == 0 ? yt_retain(input)
                                                  : yt_pad_ex(input, extra, 4, "constant", NULL);
    yt_tensor *y = yt_conv2d_backward_input(x, weight, input_size, dim, s, 2, p, 2, d, 2, groups);
    yt_release(x);
    if (y == NULL || bias == NULL)
        return y;
    int64_t bshape[3] = {c_out, 1, 1};
    yt_tensor *bv = yt_view(bias, bshape, 3);
    yt_tensor *r = yt_add(y, bv);
    yt_release(bv);
    yt_release(y);
    return r;
}

yt_tensor *
yt__composite_conv2d_backward_bias(yt_tensor *grad_output)
{
    static const int64_t batched[3] = {0, 2, 3}, unbatched[2] = {1, 2};
    if (grad_output->dim == 4)
        return yt_sum_dim(grad_output, batched, 3);
    return yt_sum_dim(grad_output, unbatched, 2);
}
