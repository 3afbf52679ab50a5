/* Normalisation layers: BatchNorm1d/2d (running statistics, train/eval), LayerNorm, GroupNorm,
 * RMSNorm; each one call of the matching fused op. */
#include <math.h>
#include <stdio.h>

#include "module_internal.h"

/* ---------------------------------------------------------------- BatchNorm */

typedef struct batch_norm_ctx {
    int64_t num_features;
    double eps, momentum; /* momentum NAN: cumulative average (PyTorch's None) */
    bool affine, track;
    int spatial; /* BatchNorm1d: -1 (2-D or 3-D input); BatchNorm2d: 2 (4-D input) */
} batch_norm_ctx;

enum { BN_RUNNING_MEAN, BN_RUNNING_VAR, BN_NUM_BATCHES };

static yt_tensor *
batch_norm_forward(yt_module *m, yt_tensor *const *in, int n)
{
    if (n != 1)
        return yt__module_arity_error(m, 1, n);
    const batch_norm_ctx *c = m->ctx;
    yt_tensor *x = in[0];
    char shape[96];
    if (c->spatial < 0 ? x->dim != 2 && x->dim != 3 : x->dim != 4)
        return yt__fail(YT_ERR_SHAPE, "%s(%lld): expected %s input, got %s", m->kind->name,
                        (long long)c->num_features, c->spatial < 0 ? "2-D or 3-D" : "4-D",
                        yt__nn_shape_str(x, shape, sizeof shape));
    if (x->sizes[1] != c->num_features)
        return yt__fail(
            YT_ERR_SHAPE, "%s(%lld): input %s has %lld channels (size(1)), expected %lld",
            m->kind->name, (long long)c->num_features, yt__nn_shape_str(x, shape, sizeof shape),
            (long long)x->sizes[1], (long long)c->num_features);
    if (m->training && x->numel / c->num_features <= 1)
        return yt__fail(YT_ERR_VALUE,
                        "%s(%lld): expected more than 1 value per channel when training, got input "
                        "%s",
                        m->kind->name, (long long)c->num_features,
                        yt__nn_shape_str(x, shape, sizeof shape));
    double factor = isnan(c->momentum) ? 0.0 : c->momentum;
    if (m->training && c->track) {
        yt_tensor *count = m->buffers.tensors[BN_NUM_BATCHES];
        int64_t *batches = (int64_t *)yt__data_ptr(count); /* a CPU 0-d i64: no op needed */
        *batches += 1;
        yt__bump_version(count);
        if (isnan(c->momentum))
            factor = 1.0 / (double)*batches;
    }
    yt_tensor *w = c->affine ? m->params.tensors[0] : NULL,
              *b = c->affine ? m->params.tensors[1] : NULL;
    yt_tensor *mean = c->track ? m->buffers.tensors[BN_RUNNING_MEAN] : NULL;
    yt_tensor *var = c->track ? m->buffers.tensors[BN_RUNNING_VAR] : NULL;
    /* Without running statistics, eval mode normalises with the batch's, as PyTorch. */
    return yt_batch_norm(x, w, b, mean, var, m->training || !c->track, factor, c->eps, false);
}

static yt_status
batch_norm_describe(const yt_module *m, char *buf, size_t cap)
{
    const batch_norm_ctx *c = m->ctx;
    char momentum[32];
    if (isnan(c->momentum))
        snprintf(momentum, sizeof momentum, "None");
    else
        snprintf(momentum, sizeof momentum, "%g", c->momentum);
    snprintf(buf, cap, "%lld, eps=%g, momentum=%s, affine=%s, track_running_stats=%s",
             (long long)c->num_features, c->eps, momentum, c->affine ? "True" : "False",
             c->track ? "True" : "False");
    return YT_OK;
}

static const yt_module_kind batch_norm1d_kind = {
    .name = "BatchNorm1d",
    .forward = batch_norm_forward,
    .describe = batch_norm_describe,
    .release_ctx = free,
};

static const yt_module_kind batch_norm2d_kind = {
    .name = "BatchNorm2d",
    .forward = batch_norm_forward,
    .describe = batch_norm_describe,
    .release_ctx = free,
};

static yt_module *
batch_norm_new(const yt_module_kind *kind, const char *fn, int spatial, int64_t num_features,
               double eps, double momentum, bool affine, bool track)
{
    if (num_features <= 0)
        return yt__module_fail(YT_ERR_VALUE, "%s: num_features=%lld must be positive", fn,
                               (long long)num_features);
    if (!(eps >= 0) || !isfinite(eps))
        return yt__module_fail(YT_ERR_VALUE, "%s: eps=%g must be finite and >= 0", fn, eps);
    if (!isnan(momentum) && !(momentum >= 0 && momentum <= 1))
        return yt__module_fail(YT_ERR_VALUE,
                               "%s: momentum=%g must be in [0, 1] (or NAN for a cumulative "
                               "average)",
                               fn, momentum);
    batch_norm_ctx c = {num_features, eps, momentum, affine, track, spatial};
    yt_module *m = yt__module_new_copy(kind, &c, sizeof c);
    if (m == NULL)
        return NULL;
    bool ok = true;
    if (affine) {
        yt_tensor *w = yt__module_new_param(m, "weight", &num_features, 1);
        yt_tensor *b = w != NULL ? yt__module_new_param(m, "bias", &num_features, 1) : NULL;
        ok = b != NULL && yt__fill(w, 1.0) == YT_OK && yt__fill(b, 0.0) == YT_OK;
    }
    if (ok && track)
        ok = yt__module_new_buffer(m, "running_mean", &num_features, 1, YT_DTYPE_F32, 0.0) &&
             yt__module_new_buffer(m, "running_var", &num_features, 1, YT_DTYPE_F32, 1.0) &&
             yt__module_new_buffer(m, "num_batches_tracked", NULL, 0, YT_DTYPE_I64, 0.0);
    if (!ok) {
        yt_module_release(m);
        return NULL;
    }
    return m;
}

yt_module *
yt_batch_norm1d_new(int64_t num_features, double eps, double momentum, bool affine,
                    bool track_running_stats)
{
    return batch_norm_new(&batch_norm1d_kind, "batch_norm1d_new", -1, num_features, eps, momentum,
                          affine, track_running_stats);
}

yt_module *
yt_batch_norm2d_new(int64_t num_features, double eps, double momentum, bool affine,
                    bool track_running_stats)
{
    return batch_norm_new(&batch_norm2d_kind, "batch_norm2d_new", 2, num_features, eps, momentum,
                          affine, track_running_stats);
}

/* ---------------------------------------------------------------- LayerNorm and RMSNorm */

typedef struct shape_norm_ctx {
    int64_t shape[YT_MAX_DIM];
    int ndim;
    double eps; /* RMSNorm: NAN for the dtype's epsilon */
    bool affine;
} shape_norm_ctx;

static yt_tensor *
layer_norm_forward(yt_module *m, yt_tensor *const *in, int n)
{
    if (n != 1)
        return yt__module_arity_error(m, 1, n);
    const shape_norm_ctx *c = m->ctx;
    yt_tensor *w = c->affine ? m->params.tensors[0] : NULL,
              *b = c->affine ? m->params.tensors[1] : NULL;
    return yt_layer_norm_ex(in[0], c->shape, c->ndim, w, b, c->eps, false);
}

static yt_tensor *
rms_norm_forward(yt_module *m, yt_tensor *const *in, int n)
{
    if (n != 1)
        return yt__module_arity_error(m, 1, n);
    const shape_norm_ctx *c = m->ctx;
    return yt_rms_norm_ex(in[0], c->shape, c->ndim, c->affine ? m->params.tensors[0] : NULL,
                          isnan(c->eps) ? NULL : &c->eps);
}

static yt_status
shape_norm_describe(const yt_module *m, char *buf, size_t cap)
{
    const shape_norm_ctx *c = m->ctx;
    size_t len = 0;
    buf[0] = '\0';
    yt__nn_appendf(buf, cap, &len, "(");
    for (int i = 0; i < c->ndim; i++)
        yt__nn_appendf(buf, cap, &len, "%s%lld", i ? ", " : "", (long long)c->shape[i]);
    if (isnan(c->eps))
        yt__nn_appendf(buf, cap, &len, "%s), eps=None", c->ndim == 1 ? "," : "");
    else
        yt__nn_appendf(buf, cap, &len, "%s), eps=%g", c->ndim == 1 ? "," : "", c->eps);
    yt__nn_appendf(buf, cap, &len, ", elementwise_affine=%s", c->affine ? "True" : "False");
    return YT_OK;
}

static const yt_module_kind layer_norm_kind = {
    .name = "LayerNorm",
    .forward = layer_norm_forward,
    .describe = shape_norm_describe,
    .release_ctx = free,
};

static const yt_module_kind rms_norm_kind = {
    .name = "RMSNorm",
    .forward = rms_norm_forward,
    .describe = shape_norm_describe,
    .release_ctx = free,
};

static yt_module *
shape_norm_new(const yt_module_kind *kind, const char *fn, const int64_t *shape, int ndim,
               double eps, bool affine, bool with_bias)
{
    if (ndim < 1 || ndim > YT_MAX_DIM || shape == NULL)
        return yt__module_fail(YT_ERR_VALUE, "%s: normalized_shape needs 1..%d sizes, got %s", fn,
                               YT_MAX_DIM, shape == NULL ? "NULL" : "a count out of range");
    shape_norm_ctx c = {.ndim = ndim, .eps = eps, .affine = affine};
    for (int i = 0; i < ndim; i++) {
        if (shape[i] <= 0)
            return yt__module_fail(YT_ERR_VALUE, "%s: normalized_shape[%d]=%lld must be positive",
                                   fn, i, (long long)shape[i]);
        c.shape[i] = shape[i];
    }
    if (!isnan(eps) && (!(eps >= 0) || !isfinite(eps)))
        return yt__module_fail(YT_ERR_VALUE, "%s: eps=%g must be finite and >= 0", fn, eps);
    if (isnan(eps) && with_bias)
        return yt__module_fail(YT_ERR_VALUE, "%s: eps is NAN", fn);
    yt_module *m = yt__module_new_copy(kind, &c, sizeof c);
    if (m == NULL || !affine)
        return m;
    yt_tensor *w = yt__module_new_param(m, "weight", shape, ndim);
    bool ok = w != NULL && yt__fill(w, 1.0) == YT_OK;
    if (ok && with_bias) {
        yt_tensor *b = yt__module_new_param(m, "bias", shape, ndim);
        ok = b != NULL && yt__fill(b, 0.0) == YT_OK;
    }
    if (!ok) {
        yt_module_release(m);
        return NULL;
    }
    return m;
}

yt_module *
yt_layer_norm_new(const int64_t *normalized_shape, int ndim, double eps, bool elementwise_affine)
{
    return shape_norm_new(&layer_norm_kind, "layer_norm_new", normalized_shape, ndim, eps,
                          elementwise_affine, true);
}

yt_module *
yt_rms_norm_new(const int64_t *normalized_shape, int ndim, double eps, bool elementwise_affine)
{
    return shape_norm_new(&rms_norm_kind, "rms_norm_new", normalized_shape, ndim, eps,
                          elementwise_affine, false);
}

/* ---------------------------------------------------------------- GroupNorm */

typedef struct group_norm_ctx {
    int64_t groups, channels;
    double eps;
    bool affine;
} group_norm_ctx;

static yt_tensor *
group_norm_forward(yt_module *m, yt_tensor *const *in, int n)
{
    if (n != 1)
        return yt__module_arity_error(m, 1, n);
    const group_norm_ctx *c = m->ctx;
    yt_tensor *x = in[0];
    if (x->dim < 2 || x->sizes[1] != c->channels) {
        char shape[96];
        return yt__fail(YT_ERR_SHAPE, "GroupNorm(%lld, %lld): input %s must be [N, %lld, ...]",
                        (long long)c->groups, (long long)c->channels,
                        yt__nn_shape_str(x, shape, sizeof shape), (long long)c->channels);
    }
    yt_tensor *w = c->affine ? m->params.tensors[0] : NULL,
              *b = c->affine ? m->params.tensors[1] : NULL;
    return yt_group_norm_ex(x, c->groups, w, b, c->eps, false);
}

static yt_status
group_norm_describe(const yt_module *m, char *buf, size_t cap)
{
    const group_norm_ctx *c = m->ctx;
    snprintf(buf, cap, "%lld, %lld, eps=%g, affine=%s", (long long)c->groups,
             (long long)c->channels, c->eps, c->affine ? "True" : "False");
    return YT_OK;
}

static const yt_module_kind group_norm_kind = {
    .name = "GroupNorm",
    .forward = group_norm_forward,
    .describe = group_norm_describe,
    .release_ctx = free,
};

yt_module *
yt_group_norm_new(int64_t num_groups, int64_t num_channels, double eps, bool affine)
{
    if (num_groups <= 0 || num_channels <= 0)
        return yt__module_fail(YT_ERR_VALUE, "group_norm_new: %s=%lld must be positive",
                               num_groups <= 0 ? "num_groups" : "num_channels",
                               (long long)(num_groups <= 0 ? num_groups : num_channels));
    if (num_channels % num_groups != 0)
        return yt__module_fail(
            YT_ERR_VALUE, "group_norm_new: num_channels=%lld must be divisible by num_groups=%lld",
            (long long)num_channels, (long long)num_groups);
    if (!(eps >= 0) || !isfinite(eps))
        return yt__module_fail(YT_ERR_VALUE, "group_norm_new: eps=%g must be finite and >= 0", eps);
    group_norm_ctx c = {num_groups, num_channels, eps, affine};
    yt_module *m = yt__module_new_copy(&group_norm_kind, &c, sizeof c);
    if (m == NULL || !affine)
        return m;
    yt_tensor *w = yt__module_new_param(m, "weight", &num_channels, 1);
    yt_tensor *b = w != NULL ? yt__module_new_param(m, "bias", &num_channels, 1) : NULL;
    if (b == NULL || yt__fill(w, 1.0) != YT_OK || yt__fill(b, 0.0) != YT_OK) {
        yt_module_release(m);
        return NULL;
    }
    return m;
}
