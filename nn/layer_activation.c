/* Layers without parameters that map a tensor elementwise or reshape it: the activations,
 * softmax/log-softmax, Dropout and Flatten. Each forward is one op call. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "module_internal.h"

/* One number of configuration: a slope, an alpha, a probability or a dim. */
typedef struct act_ctx {
    double value;
    int64_t dim, end_dim;
    const char *approximate; /* GELU: "none" or "tanh" (static strings) */
} act_ctx;

/* Each forward checks it got one input and makes one op call. */
static yt_tensor *
relu_forward(yt_module *m, yt_tensor *const *in, int n)
{
    if (n != 1)
        return yt__module_arity_error(m, 1, n);
    yt_tensor *x = in[0];
    return yt_relu(x);
}

static yt_tensor *
tanh_forward(yt_module *m, yt_tensor *const *in, int n)
{
    if (n != 1)
        return yt__module_arity_error(m, 1, n);
    yt_tensor *x = in[0];
    return yt_tanh(x);
}

static yt_tensor *
sigmoid_forward(yt_module *m, yt_tensor *const *in, int n)
{
    if (n != 1)
        return yt__module_arity_error(m, 1, n);
    yt_tensor *x = in[0];
    return yt_sigmoid(x);
}

static yt_tensor *
silu_forward(yt_module *m, yt_tensor *const *in, int n)
{
    if (n != 1)
        return yt__module_arity_error(m, 1, n);
    yt_tensor *x = in[0];
    return yt_silu(x);
}

static yt_tensor *
gelu_forward(yt_module *m, yt_tensor *const *in, int n)
{
    if (n != 1)
        return yt__module_arity_error(m, 1, n);
    const act_ctx *c = m->ctx;
    yt_tensor *x = in[0];
    return yt_gelu_ex(x, c->approximate);
}

static yt_tensor *
leaky_relu_forward(yt_module *m, yt_tensor *const *in, int n)
{
    if (n != 1)
        return yt__module_arity_error(m, 1, n);
    const act_ctx *c = m->ctx;
    yt_tensor *x = in[0];
    return yt_leaky_relu_ex(x, yt_float(c->value));
}

static yt_tensor *
elu_forward(yt_module *m, yt_tensor *const *in, int n)
{
    if (n != 1)
        return yt__module_arity_error(m, 1, n);
    const act_ctx *c = m->ctx;
    yt_tensor *x = in[0];
    return yt_elu_ex(x, yt_float(c->value), yt_float(1.0), yt_float(1.0));
}

static yt_tensor *
softmax_forward(yt_module *m, yt_tensor *const *in, int n)
{
    if (n != 1)
        return yt__module_arity_error(m, 1, n);
    const act_ctx *c = m->ctx;
    yt_tensor *x = in[0];
    return yt_softmax(x, c->dim);
}

static yt_tensor *
log_softmax_forward(yt_module *m, yt_tensor *const *in, int n)
{
    if (n != 1)
        return yt__module_arity_error(m, 1, n);
    const act_ctx *c = m->ctx;
    yt_tensor *x = in[0];
    return yt_log_softmax(x, c->dim);
}

static yt_tensor *
flatten_forward(yt_module *m, yt_tensor *const *in, int n)
{
    if (n != 1)
        return yt__module_arity_error(m, 1, n);
    const act_ctx *c = m->ctx;
    yt_tensor *x = in[0];
    return yt_flatten_ex(x, c->dim, c->end_dim);
}

static yt_status
gelu_describe(const yt_module *m, char *buf, size_t cap)
{
    snprintf(buf, cap, "approximate='%s'", ((const act_ctx *)m->ctx)->approximate);
    return YT_OK;
}

static yt_status
leaky_relu_describe(const yt_module *m, char *buf, size_t cap)
{
    snprintf(buf, cap, "negative_slope=%g", ((const act_ctx *)m->ctx)->value);
    return YT_OK;
}

static yt_status
elu_describe(const yt_module *m, char *buf, size_t cap)
{
    snprintf(buf, cap, "alpha=%g", ((const act_ctx *)m->ctx)->value);
    return YT_OK;
}

static yt_status
dim_describe(const yt_module *m, char *buf, size_t cap)
{
    snprintf(buf, cap, "dim=%lld", (long long)((const act_ctx *)m->ctx)->dim);
    return YT_OK;
}

static yt_status
flatten_describe(const yt_module *m, char *buf, size_t cap)
{
    const act_ctx *c = m->ctx;
    snprintf(buf, cap, "start_dim=%lld, end_dim=%lld", (long long)c->dim, (long long)c->end_dim);
    return YT_OK;
}

static const yt_module_kind relu_kind = {.name = "ReLU", .forward = relu_forward};
static const yt_module_kind tanh_kind = {.name = "Tanh", .forward = tanh_forward};
static const yt_module_kind sigmoid_kind = {.name = "Sigmoid", .forward = sigmoid_forward};
static const yt_module_kind silu_kind = {.name = "SiLU", .forward = silu_forward};
static const yt_module_kind gelu_kind = {
    .name = "GELU", .forward = gelu_forward, .describe = gelu_describe, .release_ctx = free};
static const yt_module_kind leaky_relu_kind = {.name = "LeakyReLU",
                                               .forward = leaky_relu_forward,
                                               .describe = leaky_relu_describe,
                                               .release_ctx = free};
static const yt_module_kind elu_kind = {
    .name = "ELU", .forward = elu_forward, .describe = elu_describe, .release_ctx = free};
static const yt_module_kind softmax_kind = {
    .name = "Softmax", .forward = softmax_forward, .describe = dim_describe, .release_ctx = free};
static const yt_module_kind log_softmax_kind = {.name = "LogSoftmax",
                                                .forward = log_softmax_forward,
                                                .describe = dim_describe,
                                                .release_ctx = free};
static const yt_module_kind flatten_kind = {.name = "Flatten",
                                            .forward = flatten_forward,
                                            .describe = flatten_describe,
                                            .release_ctx = free};

yt_module *
yt_relu_new(void)
{
    return yt_module_new(&relu_kind, NULL);
}

yt_module *
yt_tanh_new(void)
{
    return yt_module_new(&tanh_kind, NULL);
}

yt_module *
yt_sigmoid_new(void)
{
    return yt_module_new(&sigmoid_kind, NULL);
}

yt_module *
yt_silu_new(void)
{
    return yt_module_new(&silu_kind, NULL);
}

yt_module *
yt_gelu_new(const char *approximate)
{
    act_ctx c = {0};
    if (approximate == NULL || strcmp(approximate, "none") == 0)
        c.approximate = "none";
    else if (strcmp(approximate, "tanh") == 0)
        c.approximate = "tanh";
    else
        return yt__module_fail(YT_ERR_VALUE, "gelu_new: approximate='%s' is not 'none' or 'tanh'",
                               approximate);
    return yt__module_new_copy(&gelu_kind, &c, sizeof c);
}

yt_module *
yt_leaky_relu_new(double negative_slope)
{
    if (!isfinite(negative_slope))
        return yt__module_fail(YT_ERR_VALUE, "leaky_relu_new: negative_slope=%g is not finite",
                               negative_slope);
    act_ctx c = {.value = negative_slope};
    return yt__module_new_copy(&leaky_relu_kind, &c, sizeof c);
}

yt_module *
yt_elu_new(double alpha)
{
    if (!isfinite(alpha))
        return yt__module_fail(YT_ERR_VALUE, "elu_new: alpha=%g is not finite", alpha);
    act_ctx c = {.value = alpha};
    return yt__module_new_copy(&elu_kind, &c, sizeof c);
}

yt_module *
yt_softmax_new(int64_t dim)
{
    act_ctx c = {.dim = dim};
    return yt__module_new_copy(&softmax_kind, &c, sizeof c);
}

yt_module *
yt_log_softmax_new(int64_t dim)
{
    act_ctx c = {.dim = dim};
    return yt__module_new_copy(&log_softmax_kind, &c, sizeof c);
}

yt_module *
yt_flatten_new(int64_t start_dim, int64_t end_dim)
{
    act_ctx c = {.dim = start_dim, .end_dim = end_dim};
    return yt__module_new_copy(&flatten_kind, &c, sizeof c);
}

/* ---------------------------------------------------------------- Dropout */

static yt_tensor *
dropout_forward(yt_module *m, yt_tensor *const *in, int n)
{
    if (n != 1)
        return yt__module_arity_error(m, 1, n);
    double p = ((const act_ctx *)m->ctx)->value;
    if (!m->training || p == 0.0)
        return yt_retain(in[0]); /* the identity, as PyTorch returns its input */
    return yt_dropout_ex(in[0], p, true, m->gen);
}

static yt_status
dropout_describe(const yt_module *m, char *buf, size_t cap)
{
    snprintf(buf, cap, "p=%g, inplace=False", ((const act_ctx *)m->ctx)->value);
    return YT_OK;
}

static const yt_module_kind dropout_kind = {
    .name = "Dropout",
    .forward = dropout_forward,
    .describe = dropout_describe,
    .release_ctx = free,
};

yt_module *
yt_dropout_new(double p)
{
    if (!(p >= 0 && p <= 1))
        return yt__module_fail(YT_ERR_VALUE, "dropout_new: p=%g must be in [0, 1]", p);
    act_ctx c = {.value = p};
    return yt__module_new_copy(&dropout_kind, &c, sizeof c);
}
