/* Pooling layers: MaxPool2d, AvgPool2d and AdaptiveAvgPool2d, one op call each. */
#include <stdio.h>

#include "module_internal.h"

yt_pool2d_options
yt_pool2d_options_default(int64_t kernel_size)
{
    yt_pool2d_options o = {
        .kernel_size = {kernel_size, kernel_size},
        .stride = {kernel_size, kernel_size},
        .dilation = {1, 1},
        .count_include_pad = true,
    };
    return o;
}

static yt_tensor *
max_pool2d_forward(yt_module *m, yt_tensor *const *in, int n)
{
    if (n != 1)
        return yt__module_arity_error(m, 1, n);
    const yt_pool2d_options *o = m->ctx;
    return yt_max_pool2d_ex(in[0], o->kernel_size, 2, o->stride, 2, o->padding, 2, o->dilation, 2,
                            o->ceil_mode);
}

static yt_tensor *
avg_pool2d_forward(yt_module *m, yt_tensor *const *in, int n)
{
    if (n != 1)
        return yt__module_arity_error(m, 1, n);
    const yt_pool2d_options *o = m->ctx;
    return yt_avg_pool2d_ex(in[0], o->kernel_size, 2, o->stride, 2, o->padding, 2, o->ceil_mode,
                            o->count_include_pad,
                            o->divisor_override > 0 ? o->divisor_override : YT_NONE);
}

/* PyTorch prints an int for square arguments and a tuple otherwise. */
static void
pair(char *buf, size_t cap, size_t *len, const char *name, const int64_t *v)
{
    if (v[0] == v[1])
        yt__nn_appendf(buf, cap, len, "%s=%lld", name, (long long)v[0]);
    else
        yt__nn_appendf(buf, cap, len, "%s=(%lld, %lld)", name, (long long)v[0], (long long)v[1]);
}

static yt_status
max_pool2d_describe(const yt_module *m, char *buf, size_t cap)
{
    const yt_pool2d_options *o = m->ctx;
    size_t len = 0;
    buf[0] = '\0';
    pair(buf, cap, &len, "kernel_size", o->kernel_size);
    pair(buf, cap, &len, ", stride", o->stride);
    pair(buf, cap, &len, ", padding", o->padding);
    pair(buf, cap, &len, ", dilation", o->dilation);
    yt__nn_appendf(buf, cap, &len, ", ceil_mode=%s", o->ceil_mode ? "True" : "False");
    return YT_OK;
}

static yt_status
avg_pool2d_describe(const yt_module *m, char *buf, size_t cap)
{
    const yt_pool2d_options *o = m->ctx;
    size_t len = 0;
    buf[0] = '\0';
    pair(buf, cap, &len, "kernel_size", o->kernel_size);
    pair(buf, cap, &len, ", stride", o->stride);
    pair(buf, cap, &len, ", padding", o->padding);
    if (o->ceil_mode)
        yt__nn_appendf(buf, cap, &len, ", ceil_mode=True");
    if (!o->count_include_pad)
        yt__nn_appendf(buf, cap, &len, ", count_include_pad=False");
    if (o->divisor_override > 0)
        yt__nn_appendf(buf, cap, &len, ", divisor_override=%lld", (long long)o->divisor_override);
    return YT_OK;
}

static const yt_module_kind max_pool2d_kind = {
    .name = "MaxPool2d",
    .forward = max_pool2d_forward,
    .describe = max_pool2d_describe,
    .release_ctx = free,
};

static const yt_module_kind avg_pool2d_kind = {
    .name = "AvgPool2d",
    .forward = avg_pool2d_forward,
    .describe = avg_pool2d_describe,
    .release_ctx = free,
};

static yt_module *
pool_new(const yt_module_kind *kind, const char *fn, const yt_pool2d_options *o, bool is_max)
{
    if (o == NULL)
        return yt__module_fail(YT_ERR_VALUE, "%s: o is NULL (start from yt_pool2d_options_default)",
                               fn);
    for (int i = 0; i < 2; i++) {
        if (o->kernel_size[i] <= 0)
            return yt__module_fail(YT_ERR_VALUE, "%s: kernel_size[%d]=%lld must be positive", fn, i,
                                   (long long)o->kernel_size[i]);
        if (o->stride[i] <= 0)
            return yt__module_fail(YT_ERR_VALUE, "%s: stride[%d]=%lld must be positive", fn, i,
                                   (long long)o->stride[i]);
        if (o->padding[i] < 0 || o->padding[i] > o->kernel_size[i] / 2)
            return yt__module_fail(
                YT_ERR_VALUE,
                "%s: padding[%d]=%lld must be between 0 and half of kernel_size[%d]=%lld", fn, i,
                (long long)o->padding[i], i, (long long)o->kernel_size[i]);
        if (is_max && o->dilation[i] <= 0)
            return yt__module_fail(YT_ERR_VALUE, "%s: dilation[%d]=%lld must be positive", fn, i,
                                   (long long)o->dilation[i]);
        if (!is_max && o->dilation[i] != 1)
            return yt__module_fail(YT_ERR_VALUE,
                                   "%s: dilation[%d]=%lld: average pooling has no dilation", fn, i,
                                   (long long)o->dilation[i]);
    }
    if (is_max && (o->divisor_override != 0 || !o->count_include_pad))
        return yt__module_fail(
            YT_ERR_VALUE, "%s: divisor_override and count_include_pad are average pooling options",
            fn);
    if (o->divisor_override < 0)
        return yt__module_fail(YT_ERR_VALUE, "%s: divisor_override=%lld must be positive (0: none)",
                               fn, (long long)o->divisor_override);
    return yt__module_new_copy(kind, o, sizeof *o);
}

yt_module *
yt_max_pool2d_new_ex(const yt_pool2d_options *o)
{
    return pool_new(&max_pool2d_kind, "max_pool2d_new", o, true);
}

yt_module *
yt_avg_pool2d_new_ex(const yt_pool2d_options *o)
{
    return pool_new(&avg_pool2d_kind, "avg_pool2d_new", o, false);
}

static yt_pool2d_options
square(int64_t kernel_size, int64_t stride, int64_t padding)
{
    yt_pool2d_options o = yt_pool2d_options_default(kernel_size);
    if (stride != 0)
        o.stride[0] = o.stride[1] = stride;
    o.padding[0] = o.padding[1] = padding;
    return o;
}

yt_module *
yt_max_pool2d_new(int64_t kernel_size, int64_t stride, int64_t padding)
{
    yt_pool2d_options o = square(kernel_size, stride, padding);
    return pool_new(&max_pool2d_kind, "max_pool2d_new", &o, true);
}

yt_module *
yt_avg_pool2d_new(int64_t kernel_size, int64_t stride, int64_t padding)
{
    yt_pool2d_options o = square(kernel_size, stride, padding);
    return pool_new(&avg_pool2d_kind, "avg_pool2d_new", &o, false);
}

/* ---------------------------------------------------------------- AdaptiveAvgPool2d */

typedef struct adaptive_ctx {
    int64_t out[2];
} adaptive_ctx;

static yt_tensor *
adaptive_forward(yt_module *m, yt_tensor *const *in, int n)
{
    if (n != 1)
        return yt__module_arity_error(m, 1, n);
    return yt_adaptive_avg_pool2d(in[0], ((const adaptive_ctx *)m->ctx)->out, 2);
}

static yt_status
adaptive_describe(const yt_module *m, char *buf, size_t cap)
{
    const adaptive_ctx *c = m->ctx;
    snprintf(buf, cap, "output_size=(%lld, %lld)", (long long)c->out[0], (long long)c->out[1]);
    return YT_OK;
}

static const yt_module_kind adaptive_kind = {
    .name = "AdaptiveAvgPool2d",
    .forward = adaptive_forward,
    .describe = adaptive_describe,
    .release_ctx = free,
};

yt_module *
yt_adaptive_avg_pool2d_new(int64_t out_h, int64_t out_w)
{
    if (out_h <= 0 || out_w <= 0)
        return yt__module_fail(YT_ERR_VALUE, "adaptive_avg_pool2d_new: %s=%lld must be positive",
                               out_h <= 0 ? "out_h" : "out_w",
                               (long long)(out_h <= 0 ? out_h : out_w));
    adaptive_ctx c = {{out_h, out_w}};
    return yt__module_new_copy(&adaptive_kind, &c, sizeof c);
}
