/* Result shapes of the convolution and pooling ops (the `shape:` rules their generated op
 * functions call, declared in internal.h). They validate every geometry argument, so a bad
 * call fails before anything is allocated. */
#include "conv.h"

yt_status
yt__shape_conv2d(yt_shape *out, const char *op, yt_tensor *input, yt_tensor *weight,
                 const int64_t *stride, int stride_len, const int64_t *padding, int padding_len,
                 const int64_t *dilation, int dilation_len, int64_t groups)
{
    yt__conv_geom g;
    if (yt__conv_geom_init(&g, op, input->sizes, input->dim, weight->sizes, weight->dim, stride,
                           stride_len, padding, padding_len, dilation, dilation_len,
                           groups) != YT_OK)
        return yt__last_status();
    int64_t sizes[4] = {g.n, g.c_out, g.oh, g.ow};
    int skip = g.batched ? 0 : 1;
    out->dim = 4 - skip;
    for (int i = 0; i < out->dim; i++)
        out->sizes[i] = sizes[i + skip];
    return YT_OK;
}

static void
pool_shape(yt_shape *out, const yt__pool_geom *g)
{
    int64_t sizes[4] = {g->n, g->c, g->oh, g->ow};
    int skip = g->batched ? 0 : 1;
    out->dim = 4 - skip;
    for (int i = 0; i < out->dim; i++)
        out->sizes[i] = sizes[i + skip];
}

yt_status
yt__shape_pool2d(yt_shape *out, const char *op, yt_tensor *self, const int64_t *kernel_size,
                 int kernel_size_len, const int64_t *stride, int stride_len, const int64_t *padding,
                 int padding_len, const int64_t *dilation, int dilation_len, bool ceil_mode)
{
    yt__pool_geom g;
    if (yt__pool_geom_init(&g, op, self, kernel_size, kernel_size_len, stride, stride_len, padding,
                           padding_len, dilation, dilation_len, ceil_mode) != YT_OK)
        return yt__last_status();
    pool_shape(out, &g);
    return YT_OK;
}

yt_status
yt__shape_avg_pool2d(yt_shape *out, const char *op, yt_tensor *self, const int64_t *kernel_size,
                     int kernel_size_len, const int64_t *stride, int stride_len,
                     const int64_t *padding, int padding_len, bool ceil_mode,
                     int64_t divisor_override)
{
    if (divisor_override == 0)
        return yt__fail_status(YT_ERR_VALUE, "%s: divisor_override=0 must not be zero", op);
    return yt__shape_pool2d(out, op, self, kernel_size, kernel_size_len, stride, stride_len,
                            padding, padding_len, NULL, 0, ceil_mode);
}

yt_status
yt__shape_adaptive_pool2d(yt_shape *out, const char *op, yt_tensor *self,
                          const int64_t *output_size, int output_size_len)
{
    char a[YT__SIZES_BUF];
    if (self->dim != 3 && self->dim != 4)
        return yt__fail_status(
            YT_ERR_SHAPE, "%s: self must be 3-D [C, H, W] or 4-D [N, C, H, W], got %d-D %s", op,
            self->dim, yt__format_sizes(a, sizeof a, self->sizes, self->dim));
    if (self->sizes[self->dim - 2] == 0 || self->sizes[self->dim - 1] == 0)
        return yt__fail_status(YT_ERR_SHAPE,
                               "%s: self's height and width must be non-zero (an output element "
                               "would average nothing), got %s",
                               op, yt__format_sizes(a, sizeof a, self->sizes, self->dim));
    if (output_size_len == 0)
        return yt__fail_status(YT_ERR_VALUE, "%s: output_size must have 1 or 2 entries, got none",
                               op);
    int64_t o[2];
    if (yt__conv_pair(o, op, "output_size", output_size, output_size_len, 1, 0) != YT_OK)
        return yt__last_status();
    yt__shape_of(out, self);
    out->sizes[out->dim - 2] = o[0];
    out->sizes[out->dim - 1] = o[1];
    return YT_OK;
}

yt_status
yt__shape_like(yt_shape *out, const char *op, yt_tensor *t)
{
    (void)op;
    yt__shape_of(out, t);
    return YT_OK;
}
