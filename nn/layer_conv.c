/* Convolutions: Conv1d, Conv2d (zero, reflect or replicate padding; padding="same") and
 * ConvTranspose2d, each one call of the matching op (plus a pad for non-zero padding modes). */
#include <stdio.h>
#include <string.h>

#include "module_internal.h"

static const char *const mode_names[] = {"zeros", "reflect", "replicate"};

/* Checks the arguments every convolution shares; `nd` spatial dims. */
static yt_status
check_conv(const char *fn, int64_t in, int64_t out, const int64_t *k, const int64_t *s,
           const int64_t *p, const int64_t *d, int nd, int64_t groups, bool same,
           yt_padding_mode mode)
{
    if (in <= 0 || out <= 0)
        return yt__fail_status(YT_ERR_VALUE, "%s: %s=%lld must be positive", fn,
                               in <= 0 ? "in_channels" : "out_channels",
                               (long long)(in <= 0 ? in : out));
    static const char *const axis[2] = {"[0]", "[1]"};
    for (int i = 0; i < nd; i++) {
        const char *ax = nd == 1 ? "" : axis[i];
        if (k[i] <= 0)
            return yt__fail_status(YT_ERR_VALUE, "%s: kernel_size%s=%lld must be positive", fn, ax,
                                   (long long)k[i]);
        if (s[i] <= 0)
            return yt__fail_status(YT_ERR_VALUE, "%s: stride%s=%lld must be positive", fn, ax,
                                   (long long)s[i]);
        if (p[i] < 0)
            return yt__fail_status(YT_ERR_VALUE, "%s: padding%s=%lld must be >= 0", fn, ax,
                                   (long long)p[i]);
        if (d[i] <= 0)
            return yt__fail_status(YT_ERR_VALUE, "%s: dilation%s=%lld must be positive", fn, ax,
                                   (long long)d[i]);
        if (k[i] - 1 > INT64_MAX / d[i] / 2)
            return yt__fail_status(YT_ERR_VALUE,
                                   "%s: dilation%s=%lld times kernel_size%s=%lld is too large", fn,
                                   ax, (long long)d[i], ax, (long long)k[i]);
        if (same && s[i] != 1)
            return yt__fail_status(YT_ERR_VALUE,
                                   "%s: padding_same needs stride 1, got stride%s=%lld (PyTorch: "
                                   "padding='same' is not supported for strided convolutions)",
                                   fn, ax, (long long)s[i]);
    }
    if (groups <= 0)
        return yt__fail_status(YT_ERR_VALUE, "%s: groups=%lld must be positive", fn,
                               (long long)groups);
    if (in % groups != 0 || out % groups != 0)
        return yt__fail_status(YT_ERR_VALUE, "%s: groups=%lld must divide %s=%lld", fn,
                               (long long)groups, in % groups ? "in_channels" : "out_channels",
                               (long long)(in % groups ? in : out));
    if ((int)mode < 0 || (int)mode > (int)YT_PADDING_REPLICATE)
        return yt__fail_status(YT_ERR_VALUE, "%s: padding_mode=%d is not a yt_padding_mode", fn,
                               (int)mode);
    return YT_OK;
}

static yt_tensor *
channel_error(const yt_module *m, const yt_tensor *x, int64_t in, int ndim_batched)
{
    char shape[96], desc[160];
    m->kind->describe(m, desc, sizeof desc);
    if (x->dim != ndim_batched && x->dim != ndim_batched - 1)
        return yt__fail(YT_ERR_SHAPE, "%s(%s): input is %s, expected %d-D (batched) or %d-D",
                        m->kind->name, desc, yt__nn_shape_str(x, shape, sizeof shape), ndim_batched,
                        ndim_batched - 1);
    int cdim = x->dim == ndim_batched ? 1 : 0;
    return yt__fail(YT_ERR_SHAPE, "%s(%s): input %s has %lld channels, expected in_channels=%lld",
                    m->kind->name, desc, yt__nn_shape_str(x, shape, sizeof shape),
                    (long long)x->sizes[cdim], (long long)in);
}

static bool
channels_ok(const yt_tensor *x, int64_t in, int ndim_batched)
{
    if (x->dim == ndim_batched)
        return x->sizes[1] == in;
    return x->dim == ndim_batched - 1 && x->sizes[0] == in;
}

/* Explicit pad amounts, last dim first (yt_pad's order), for the non-zero padding modes. */
static void
pad_amounts(int64_t *pad, const int64_t *k, const int64_t *p, const int64_t *d, int nd, bool same)
{
    for (int i = 0; i < nd; i++) {
        int64_t lo = p[i], hi = p[i];
        if (same) {
            int64_t total = d[i] * (k[i] - 1);
            lo = total / 2;
            hi = total - lo;
        }
        pad[2 * (nd - 1 - i)] = lo;
        pad[2 * (nd - 1 - i) + 1] = hi;
    }
}

static void
describe_common(char *buf, size_t cap, size_t *len, int64_t in, int64_t out, const int64_t *k,
                const int64_t *s, const int64_t *p, const int64_t *d, int nd, bool same)
{
    if (nd == 1) {
        yt__nn_appendf(buf, cap, len, "%lld, %lld, kernel_size=(%lld,), stride=(%lld,)",
                       (long long)in, (long long)out, (long long)k[0], (long long)s[0]);
        if (same)
            yt__nn_appendf(buf, cap, len, ", padding=same");
        else if (p[0] != 0)
            yt__nn_appendf(buf, cap, len, ", padding=(%lld,)", (long long)p[0]);
        if (d[0] != 1)
            yt__nn_appendf(buf, cap, len, ", dilation=(%lld,)", (long long)d[0]);
        return;
    }
    yt__nn_appendf(buf, cap, len, "%lld, %lld, kernel_size=(%lld, %lld), stride=(%lld, %lld)",
                   (long long)in, (long long)out, (long long)k[0], (long long)k[1], (long long)s[0],
                   (long long)s[1]);
    if (same)
        yt__nn_appendf(buf, cap, len, ", padding=same");
    else if (p[0] != 0 || p[1] != 0)
        yt__nn_appendf(buf, cap, len, ", padding=(%lld, %lld)", (long long)p[0], (long long)p[1]);
    if (d[0] != 1 || d[1] != 1)
        yt__nn_appendf(buf, cap, len, ", dilation=(%lld, %lld)", (long long)d[0], (long long)d[1]);
}

static void
describe_tail(char *buf, size_t cap, size_t *len, int64_t groups, bool bias, yt_padding_mode mode)
{
    if (groups != 1)
        yt__nn_appendf(buf, cap, len, ", groups=%lld", (long long)groups);
    if (!bias)
        yt__nn_appendf(buf, cap, len, ", bias=False");
    if (mode != YT_PADDING_ZEROS)
        yt__nn_appendf(buf, cap, len, ", padding_mode=%s", mode_names[mode]);
}

/* Registers weight of `wsize` and (when bias) bias [out] and initialises both as PyTorch. */
static yt_module *
finish_conv(yt_module *m, const int64_t *wsize, int wdim, int64_t out, bool bias)
{
    if (m == NULL)
        return NULL;
    yt_tensor *w = yt__module_new_param(m, "weight", wsize, wdim);
    yt_tensor *b = bias && w != NULL ? yt__module_new_param(m, "bias", &out, 1) : NULL;
    if (w == NULL || (bias && b == NULL) || yt__init_affine_default(w, b) != YT_OK) {
        yt_module_release(m);
        return NULL;
    }
    return m;
}

/* ---------------------------------------------------------------- Conv2d */

yt_conv2d_options
yt_conv2d_options_default(int64_t in_channels, int64_t out_channels, int64_t kernel_size)
{
    yt_conv2d_options o = {
        .in_channels = in_channels,
        .out_channels = out_channels,
        .kernel_size = {kernel_size, kernel_size},
        .stride = {1, 1},
        .dilation = {1, 1},
        .groups = 1,
        .bias = true,
    };
    return o;
}

static yt_tensor *
conv2d_forward(yt_module *m, yt_tensor *const *in, int n)
{
    if (n != 1)
        return yt__module_arity_error(m, 1, n);
    const yt_conv2d_options *o = m->ctx;
    yt_tensor *x = in[0], *w = m->params.tensors[0], *b = o->bias ? m->params.tensors[1] : NULL;
    if (!channels_ok(x, o->in_channels, 4))
        return channel_error(m, x, o->in_channels, 4);
    if (o->padding_mode == YT_PADDING_ZEROS) {
        if (o->padding_same)
            return yt_conv2d_padding_ex(x, w, b, o->stride, 2, "same", o->dilation, 2, o->groups);
        return yt_conv2d_ex(x, w, b, o->stride, 2, o->padding, 2, o->dilation, 2, o->groups);
    }
    int64_t pad[4];
    pad_amounts(pad, o->kernel_size, o->padding, o->dilation, 2, o->padding_same);
    yt_tensor *xp = yt_pad_ex(x, pad, 4, mode_names[o->padding_mode], NULL);
    static const int64_t zero[2] = {0, 0};
    yt_tensor *y = yt_conv2d_ex(xp, w, b, o->stride, 2, zero, 2, o->dilation, 2, o->groups);
    yt_release(xp);
    return y;
}

static yt_status
conv2d_describe(const yt_module *m, char *buf, size_t cap)
{
    const yt_conv2d_options *o = m->ctx;
    size_t len = 0;
    buf[0] = '\0';
    describe_common(buf, cap, &len, o->in_channels, o->out_channels, o->kernel_size, o->stride,
                    o->padding, o->dilation, 2, o->padding_same);
    describe_tail(buf, cap, &len, o->groups, o->bias, o->padding_mode);
    return YT_OK;
}

static const yt_module_kind conv2d_kind = {
    .name = "Conv2d",
    .forward = conv2d_forward,
    .describe = conv2d_describe,
    .release_ctx = free,
};

yt_module *
yt_conv2d_new(const yt_conv2d_options *o)
{
    if (o == NULL)
        return yt__module_fail(YT_ERR_VALUE,
                               "conv2d_new: o is NULL (start from yt_conv2d_options_default)");
    if (check_conv("conv2d_new", o->in_channels, o->out_channels, o->kernel_size, o->stride,
                   o->padding, o->dilation, 2, o->groups, o->padding_same,
                   o->padding_mode) != YT_OK)
        return NULL;
    const int64_t wsize[4] = {o->out_channels, o->in_channels / o->groups, o->kernel_size[0],
                              o->kernel_size[1]};
    return finish_conv(yt__module_new_copy(&conv2d_kind, o, sizeof *o), wsize, 4, o->out_channels,
                       o->bias);
}

/* ---------------------------------------------------------------- Conv1d */

yt_conv1d_options
yt_conv1d_options_default(int64_t in_channels, int64_t out_channels, int64_t kernel_size)
{
    yt_conv1d_options o = {
        .in_channels = in_channels,
        .out_channels = out_channels,
        .kernel_size = kernel_size,
        .stride = 1,
        .dilation = 1,
        .groups = 1,
        .bias = true,
    };
    return o;
}

static yt_tensor *
conv1d_forward(yt_module *m, yt_tensor *const *in, int n)
{
    if (n != 1)
        return yt__module_arity_error(m, 1, n);
    const yt_conv1d_options *o = m->ctx;
    yt_tensor *x = in[0], *w = m->params.tensors[0], *b = o->bias ? m->params.tensors[1] : NULL;
    if (!channels_ok(x, o->in_channels, 3))
        return channel_error(m, x, o->in_channels, 3);
    if (o->padding_mode == YT_PADDING_ZEROS) {
        if (o->padding_same)
            return yt_conv1d_padding_ex(x, w, b, &o->stride, 1, "same", &o->dilation, 1, o->groups);
        return yt_conv1d_ex(x, w, b, &o->stride, 1, &o->padding, 1, &o->dilation, 1, o->groups);
    }
    int64_t pad[2];
    pad_amounts(pad, &o->kernel_size, &o->padding, &o->dilation, 1, o->padding_same);
    yt_tensor *xp = yt_pad_ex(x, pad, 2, mode_names[o->padding_mode], NULL);
    static const int64_t zero = 0;
    yt_tensor *y = yt_conv1d_ex(xp, w, b, &o->stride, 1, &zero, 1, &o->dilation, 1, o->groups);
    yt_release(xp);
    return y;
}

static yt_status
conv1d_describe(const yt_module *m, char *buf, size_t cap)
{
    const yt_conv1d_options *o = m->ctx;
    size_t len = 0;
    buf[0] = '\0';
    describe_common(buf, cap, &len, o->in_channels, o->out_channels, &o->kernel_size, &o->stride,
                    &o->padding, &o->dilation, 1, o->padding_same);
    describe_tail(buf, cap, &len, o->groups, o->bias, o->padding_mode);
    return YT_OK;
}

static const yt_module_kind conv1d_kind = {
    .name = "Conv1d",
    .forward = conv1d_forward,
    .describe = conv1d_describe,
    .release_ctx = free,
};

yt_module *
yt_conv1d_new(const yt_conv1d_options *o)
{
    if (o == NULL)
        return yt__module_fail(YT_ERR_VALUE,
                               "conv1d_new: o is NULL (start from yt_conv1d_options_default)");
    if (check_conv("conv1d_new", o->in_channels, o->out_channels, &o->kernel_size, &o->stride,
                   &o->padding, &o->dilation, 1, o->groups, o->padding_same,
                   o->padding_mode) != YT_OK)
        return NULL;
    const int64_t wsize[3] = {o->out_channels, o->in_channels / o->groups, o->kernel_size};
    return finish_conv(yt__module_new_copy(&conv1d_kind, o, sizeof *o), wsize, 3, o->out_channels,
                       o->bias);
}

/* ---------------------------------------------------------------- ConvTranspose2d */

yt_conv_transpose2d_options
yt_conv_transpose2d_options_default(int64_t in_channels, int64_t out_channels, int64_t kernel_size)
{
    yt_conv_transpose2d_options o = {
        .in_channels = in_channels,
        .out_channels = out_channels,
        .kernel_size = {kernel_size, kernel_size},
        .stride = {1, 1},
        .dilation = {1, 1},
        .groups = 1,
        .bias = true,
    };
    return o;
}

static yt_tensor *
conv_transpose2d_forward(yt_module *m, yt_tensor *const *in, int n)
{
    if (n != 1)
        return yt__module_arity_error(m, 1, n);
    const yt_conv_transpose2d_options *o = m->ctx;
    yt_tensor *x = in[0], *w = m->params.tensors[0], *b = o->bias ? m->params.tensors[1] : NULL;
    if (!channels_ok(x, o->in_channels, 4))
        return channel_error(m, x, o->in_channels, 4);
    return yt_conv_transpose2d_ex(x, w, b, o->stride, 2, o->padding, 2, o->output_padding, 2,
                                  o->groups, o->dilation, 2);
}

static yt_status
conv_transpose2d_describe(const yt_module *m, char *buf, size_t cap)
{
    const yt_conv_transpose2d_options *o = m->ctx;
    size_t len = 0;
    buf[0] = '\0';
    describe_common(buf, cap, &len, o->in_channels, o->out_channels, o->kernel_size, o->stride,
                    o->padding, o->dilation, 2, false);
    if (o->output_padding[0] != 0 || o->output_padding[1] != 0)
        yt__nn_appendf(buf, cap, &len, ", output_padding=(%lld, %lld)",
                       (long long)o->output_padding[0], (long long)o->output_padding[1]);
    describe_tail(buf, cap, &len, o->groups, o->bias, YT_PADDING_ZEROS);
    return YT_OK;
}

static const yt_module_kind conv_transpose2d_kind = {
    .name = "ConvTranspose2d",
    .forward = conv_transpose2d_forward,
    .describe = conv_transpose2d_describe,
    .release_ctx = free,
};

yt_module *
yt_conv_transpose2d_new(const yt_conv_transpose2d_options *o)
{
    if (o == NULL)
        return yt__module_fail(YT_ERR_VALUE, "conv_transpose2d_new: o is NULL (start from "
                                             "yt_conv_transpose2d_options_default)");
    if (check_conv("conv_transpose2d_new", o->in_channels, o->out_channels, o->kernel_size,
                   o->stride, o->padding, o->dilation, 2, o->groups, false,
                   YT_PADDING_ZEROS) != YT_OK)
        return NULL;
    for (int i = 0; i < 2; i++)
        if (o->output_padding[i] < 0 ||
            (o->output_padding[i] >= o->stride[i] && o->output_padding[i] >= o->dilation[i]))
            return yt__module_fail(YT_ERR_VALUE,
                                   "conv_transpose2d_new: output_padding[%d]=%lld must be >= 0 and "
                                   "smaller than stride[%d]=%lld or dilation[%d]=%lld",
                                   i, (long long)o->output_padding[i], i, (long long)o->stride[i],
                                   i, (long long)o->dilation[i]);
    const int64_t wsize[4] = {o->in_channels, o->out_channels / o->groups, o->kernel_size[0],
                              o->kernel_size[1]};
    return finish_conv(yt__module_new_copy(&conv_transpose2d_kind, o, sizeof *o), wsize, 4,
                       o->out_channels, o->bias);
}
