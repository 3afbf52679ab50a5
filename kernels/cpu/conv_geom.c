/* Argument validation and output shapes of the convolution and pooling ops, shared by their
 * kernels and by the shape rules the generated op functions call. */
#include <string.h>

#include "conv.h"

yt_status
yt__conv_pair(int64_t out[2], const char *op, const char *arg, const int64_t *v, int len,
              int64_t dflt, int64_t min)
{
    char buf[YT__SIZES_BUF];
    if (len < 0 || len > 2 || (len > 0 && v == NULL))
        return yt__fail_status(YT_ERR_VALUE, "%s: %s=%s must have 1 or 2 entries (height, width)",
                               op, arg,
                               v == NULL ? "NULL" : yt__format_sizes(buf, sizeof buf, v, len));
    out[0] = len == 0 ? dflt : v[0];
    out[1] = len == 0 ? dflt : len == 1 ? v[0] : v[1];
    if (out[0] < min || out[1] < min)
        return yt__fail_status(YT_ERR_VALUE, "%s: %s=%s must be >= %lld", op, arg,
                               yt__format_sizes(buf, sizeof buf, v, len), (long long)min);
    return YT_OK;
}

int64_t
yt__pool_out_size(int64_t size, int64_t k, int64_t pad, int64_t stride, int64_t dil, bool ceil_mode)
{
    /* PyTorch's pooling_output_shape: floor_div(size + 2 pad - span + (ceil ? stride - 1 : 0),
     * stride) + 1 with span = dil * (k - 1) + 1, each step overflow-checked (stride may be near
     * INT64_MAX, so the ceiling is taken from the remainder instead of adding stride - 1). */
    int64_t span, avail, t;
    if (size < 0 || k < 1 || pad < 0 || stride < 1 || dil < 1)
        return -1;
    if (!yt__mul_ok(&span, dil, k - 1) || !yt__add_ok(&span, span, 1))
        return -1;
    if (!yt__mul_ok(&t, pad, 2) || !yt__add_ok(&avail, size, t))
        return -1;
    int64_t num = avail - span; /* both >= 0: cannot overflow */
    int64_t out;
    if (num >= 0)
        out = num / stride + (ceil_mode && num % stride != 0) + 1;
    else if (ceil_mode && num + stride - 1 >= 0)
        out = 1; /* a window wider than the padded input still has one place to start */
    else
        return -1;
    /* the last window must start inside the input or its left padding */
    int64_t last_start;
    if (ceil_mode && (!yt__mul_ok(&last_start, out - 1, stride) || last_start >= size + pad))
        out--;
    return out >= 1 ? out : -1;
}

/* size + 2 pad, or false (with the error recorded) when that overflows int64. */
static bool
padded_size(int64_t *out, const char *op, const int64_t sizes[2], const int64_t pad[2], int i)
{
    int64_t twice;
    if (yt__mul_ok(&twice, pad[i], 2) && yt__add_ok(out, sizes[i], twice))
        return true;
    yt__fail_status(YT_ERR_VALUE,
                    "%s: padding=%lldx%lld on an input of %lldx%lld gives a padded size that "
                    "overflows int64",
                    op, (long long)pad[0], (long long)pad[1], (long long)sizes[0],
                    (long long)sizes[1]);
    return false;
}

yt_status
yt__conv_geom_init(yt__conv_geom *g, const char *op, const int64_t *in_sizes, int in_dim,
                   const int64_t *w_sizes, int w_dim, const int64_t *stride, int stride_len,
                   const int64_t *padding, int padding_len, const int64_t *dilation,
                   int dilation_len, int64_t groups)
{
    char a[YT__SIZES_BUF], b[YT__SIZES_BUF];
    memset(g, 0, sizeof *g);
    if (in_dim != 3 && in_dim != 4)
        return yt__fail_status(YT_ERR_SHAPE,
                               "%s: input must be 3-D [C, H, W] or 4-D [N, C, H, W], got %d-D %s",
                               op, in_dim, yt__format_sizes(a, sizeof a, in_sizes, in_dim));
    if (w_dim != 4)
        return yt__fail_status(YT_ERR_SHAPE,
                               "%s: weight must be 4-D [out_channels, in_channels/groups, kH, kW], "
                               "got %d-D %s",
                               op, w_dim, yt__format_sizes(a, sizeof a, w_sizes, w_dim));
    int64_t s[2], p[2], d[2];
    if (yt__conv_pair(s, op, "stride", stride, stride_len, 1, 1) != YT_OK ||
        yt__conv_pair(p, op, "padding", padding, padding_len, 0, 0) != YT_OK ||
        yt__conv_pair(d, op, "dilation", dilation, dilation_len, 1, 1) != YT_OK)
        return yt__last_status();
    if (groups < 1)
        return yt__fail_status(YT_ERR_VALUE, "%s: groups=%lld must be >= 1", op, (long long)groups);
    g->batched = in_dim == 4;
    g->n = g->batched ? in_sizes[0] : 1;
    g->c_in = in_sizes[in_dim - 3];
    g->h = in_sizes[in_dim - 2];
    g->w = in_sizes[in_dim - 1];
    g->c_out = w_sizes[0];
    g->kh = w_sizes[2];
    g->kw = w_sizes[3];
    g->groups = groups;
    g->sh = s[0], g->sw = s[1], g->ph = p[0], g->pw = p[1], g->dh = d[0], g->dw = d[1];
    if (g->c_in % groups != 0)
        return yt__fail_status(YT_ERR_VALUE,
                               "%s: input.size(%d)=%lld (in_channels) is not divisible by "
                               "groups=%lld",
                               op, in_dim - 3, (long long)g->c_in, (long long)groups);
    if (g->c_out % groups != 0)
        return yt__fail_status(YT_ERR_VALUE,
                               "%s: weight.size(0)=%lld (out_channels) is not divisible by "
                               "groups=%lld",
                               op, (long long)g->c_out, (long long)groups);
    if (w_sizes[1] != g->c_in / groups)
        return yt__fail_status(YT_ERR_SHAPE,
                               "%s: weight.size(1)=%lld must equal in_channels/groups=%lld/%lld "
                               "(weight %s, input %s)",
                               op, (long long)w_sizes[1], (long long)g->c_in, (long long)groups,
                               yt__format_sizes(a, sizeof a, w_sizes, w_dim),
                               yt__format_sizes(b, sizeof b, in_sizes, in_dim));
    if (g->kh < 1 || g->kw < 1)
        return yt__fail_status(YT_ERR_SHAPE, "%s: weight has a zero-size kernel %lldx%lld", op,
                               (long long)g->kh, (long long)g->kw);
    const int64_t hw[2] = {g->h, g->w};
    int64_t padded[2];
    if (!padded_size(&padded[0], op, hw, p, 0) || !padded_size(&padded[1], op, hw, p, 1))
        return yt__last_status();
    g->oh = yt__pool_out_size(g->h, g->kh, g->ph, g->sh, g->dh, false);
    g->ow = yt__pool_out_size(g->w, g->kw, g->pw, g->sw, g->dw, false);
    if (g->oh < 1 || g->ow < 1)
        return yt__fail_status(YT_ERR_SHAPE,
                               "%s: kernel %lldx%lld (dilation %lldx%lld) is larger than the "
                               "padded input %lldx%lld (input %lldx%lld, padding %lldx%lld)",
                               op, (long long)g->kh, (long long)g->kw, (long long)g->dh,
                               (long long)g->dw, (long long)padded[0], (long long)padded[1],
                               (long long)g->h, (long long)g->w, (long long)g->ph,
                               (long long)g->pw);
    int64_t numel;
    int64_t out_sizes[4] = {g->n, g->c_out, g->oh, g->ow};
    if (!yt__checked_numel(&numel, out_sizes, 4))
        return yt__fail_status(YT_ERR_VALUE, "%s: the output size %s overflows", op,
                               yt__format_sizes(a, sizeof a, out_sizes, 4));
    return YT_OK;
}

static yt_status
check_shape(const char *op, const char *arg, const yt_tensor *t, const int64_t *want, int dim)
{
    bool same = t->dim == dim;
    for (int i = 0; same && i < dim; i++)
        same = t->sizes[i] == want[i];
    if (same)
        return YT_OK;
    char a[YT__SIZES_BUF], b[YT__SIZES_BUF];
    return yt__fail_status(YT_ERR_SHAPE, "%s: %s has shape %s, expected %s", op, arg,
                           yt__format_sizes(a, sizeof a, t->sizes, t->dim),
                           yt__format_sizes(b, sizeof b, want, dim));
}

yt_status
yt__conv_check_output(const yt__conv_geom *g, const char *op, const char *arg, const yt_tensor *t)
{
    int64_t want[4] = {g->n, g->c_out, g->oh, g->ow};
    return g->batched ? check_shape(op, arg, t, want, 4) : check_shape(op, arg, t, want + 1, 3);
}

/* Whether each of the `out` windows along a dim of `size` (kernel k, stride s, padding p,
 * dilation d) has a tap on the input. Padding is at most half the kernel, so without dilation
 * every window does; with it, the taps of a window can straddle the input, the first in the
 * padding and the next past the end (max_pool2d then had no element to take, and gave an index
 * outside the plane that its backward refused). PyTorch does not check this. */
static bool
windows_hold_input(int64_t size, int64_t k, int64_t s, int64_t p, int64_t d, int64_t out)
{
    for (int64_t o = 0; o < out; o++) {
        const int64_t start = o * s - p; /* the output size keeps o * s within the padded input */
        /* the first tap at or past 0 */
        const int64_t j = start >= 0 ? 0 : yt__ceil_div(-start, d);
        if (j >= k || (j > 0 && d > size - start) || start + j * d >= size)
            return false;
    }
    return true;
}

yt_status
yt__pool_geom_init(yt__pool_geom *g, const char *op, const yt_tensor *self,
                   const int64_t *kernel_size, int kernel_size_len, const int64_t *stride,
                   int stride_len, const int64_t *padding, int padding_len, const int64_t *dilation,
                   int dilation_len, bool ceil_mode)
{
    char a[YT__SIZES_BUF];
    memset(g, 0, sizeof *g);
    if (self->dim != 3 && self->dim != 4)
        return yt__fail_status(
            YT_ERR_SHAPE, "%s: self must be 3-D [C, H, W] or 4-D [N, C, H, W], got %d-D %s", op,
            self->dim, yt__format_sizes(a, sizeof a, self->sizes, self->dim));
    int64_t k[2], s[2], p[2], d[2];
    if (kernel_size_len == 0)
        return yt__fail_status(YT_ERR_VALUE, "%s: kernel_size must have 1 or 2 entries, got none",
                               op);
    if (yt__conv_pair(k, op, "kernel_size", kernel_size, kernel_size_len, 1, 1) != YT_OK ||
        yt__conv_pair(s, op, "stride", stride, stride_len, kernel_size[0], 1) != YT_OK ||
        yt__conv_pair(p, op, "padding", padding, padding_len, 0, 0) != YT_OK ||
        yt__conv_pair(d, op, "dilation", dilation, dilation_len, 1, 1) != YT_OK)
        return yt__last_status();
    if (stride_len == 0) /* PyTorch: an empty stride means the kernel size */
        s[0] = k[0], s[1] = k[1];
    if (p[0] > k[0] / 2 || p[1] > k[1] / 2)
        return yt__fail_status(
            YT_ERR_VALUE, "%s: padding=%lldx%lld must be at most half of kernel_size=%lldx%lld", op,
            (long long)p[0], (long long)p[1], (long long)k[0], (long long)k[1]);
    if (self->sizes[self->dim - 2] == 0 || self->sizes[self->dim - 1] == 0)
        return yt__fail_status(YT_ERR_SHAPE,
                               "%s: self's height and width must be non-zero (windows in the "
                               "padding alone would pool nothing), got %s",
                               op, yt__format_sizes(a, sizeof a, self->sizes, self->dim));
    g->batched = self->dim == 4;
    g->n = g->batched ? self->sizes[0] : 1;
    g->c = self->sizes[self->dim - 3];
    g->h = self->sizes[self->dim - 2];
    g->w = self->sizes[self->dim - 1];
    g->kh = k[0], g->kw = k[1], g->sh = s[0], g->sw = s[1];
    g->ph = p[0], g->pw = p[1], g->dh = d[0], g->dw = d[1];
    const int64_t hw[2] = {g->h, g->w};
    int64_t padded[2];
    if (!padded_size(&padded[0], op, hw, p, 0) || !padded_size(&padded[1], op, hw, p, 1))
        return yt__last_status();
    g->oh = yt__pool_out_size(g->h, g->kh, g->ph, g->sh, g->dh, ceil_mode);
    g->ow = yt__pool_out_size(g->w, g->kw, g->pw, g->sw, g->dw, ceil_mode);
    if (g->oh < 1 || g->ow < 1)
        return yt__fail_status(YT_ERR_SHAPE,
                               "%s: kernel %lldx%lld (dilation %lldx%lld) is larger than the "
                               "padded input %lldx%lld (output size would be < 1)",
                               op, (long long)g->kh, (long long)g->kw, (long long)g->dh,
                               (long long)g->dw, (long long)padded[0], (long long)padded[1]);
    if (!windows_hold_input(g->h, g->kh, g->sh, g->ph, g->dh, g->oh) ||
        !windows_hold_input(g->w, g->kw, g->sw, g->pw, g->dw, g->ow))
        return yt__fail_status(YT_ERR_VALUE,
                               "%s: with kernel %lldx%lld, stride %lldx%lld, padding %lldx%lld and "
                               "dilation %lldx%lld, a window over the %lldx%lld input takes no "
                               "element of it",
                               op, (long long)g->kh, (long long)g->kw, (long long)g->sh,
                               (long long)g->sw, (long long)g->ph, (long long)g->pw,
                               (long long)g->dh, (long long)g->dw, (long long)g->h,
                               (long long)g->w);
    /* The kernels size their work (and avg_pool its divisor) as outputs x window; a huge kernel
     * over a huge padding can make that product overflow even though the output is small. */
    int64_t work;
    int64_t out_sizes[4] = {g->n, g->c, g->oh, g->ow};
    if (!yt__checked_numel(&work, out_sizes, 4) || !yt__mul_ok(&work, work, g->kh) ||
        !yt__mul_ok(&work, work, g->kw))
        return yt__fail_status(YT_ERR_VALUE,
                               "%s: kernel_size=%lldx%lld times the output size %s "
                               "overflows int64",
                               op, (long long)g->kh, (long long)g->kw,
                               yt__format_sizes(a, sizeof a, out_sizes, 4));
    return YT_OK;
}

yt_status
yt__pool_check_output(const yt__pool_geom *g, const char *op, const char *arg, const yt_tensor *t)
{
    int64_t want[4] = {g->n, g->c, g->oh, g->ow};
    return g->batched ? check_shape(op, arg, t, want, 4) : check_shape(op, arg, t, want + 1, 3);
}

yt_tensor *
yt__conv_operand(yt_tensor *t, yt_dtype dtype)
{
    if (t->dtype == dtype && t->is_contiguous)
        return yt_retain(t);
    return yt__cast_copy(t, dtype);
}

yt_status
yt__conv_into(yt_tensor *result, yt__conv_fill_fn fill, void *ctx)
{
    yt_dtype dtype = yt__conv_compute_dtype(result->dtype);
    if (result->dtype == dtype && result->is_contiguous)
        return fill(result, ctx);
    yt_tensor *tmp = yt__empty_like(result, dtype);
    if (tmp == NULL)
        return yt__last_status();
    yt_status status = fill(tmp, ctx);
    if (status == YT_OK)
        status = yt__copy_into(result, tmp);
    yt_release(tmp);
    return status;
}
