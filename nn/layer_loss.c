/* Losses as modules: forward_n(input, target), one call of the matching loss op. Optional
 * weights are buffers, as in PyTorch (so they travel with a state dict). */
#include <math.h>

#include "module_internal.h"

static const char *const reduction_names[] = {"mean", "sum", "none"};

typedef struct loss_ctx {
    yt_reduction reduction;
    int64_t ignore_index;
    double value;            /* label_smoothing, beta or delta */
    bool weight, pos_weight; /* buffers 0 and (weight ? 1 : 0) */
} loss_ctx;

static yt_tensor *
weight_of(yt_module *m)
{
    return ((const loss_ctx *)m->ctx)->weight ? m->buffers.tensors[0] : NULL;
}

static yt_tensor *
cross_entropy_forward(yt_module *m, yt_tensor *const *in, int n)
{
    if (n != 2)
        return yt__module_arity_error(m, 2, n);
    const loss_ctx *c = m->ctx;
    return yt_cross_entropy_loss_ex(in[0], in[1], weight_of(m), reduction_names[c->reduction],
                                    c->ignore_index, c->value);
}

static yt_tensor *
nll_forward(yt_module *m, yt_tensor *const *in, int n)
{
    if (n != 2)
        return yt__module_arity_error(m, 2, n);
    const loss_ctx *c = m->ctx;
    return yt_nll_loss_ex(in[0], in[1], weight_of(m), reduction_names[c->reduction],
                          c->ignore_index);
}

static yt_tensor *
mse_forward(yt_module *m, yt_tensor *const *in, int n)
{
    if (n != 2)
        return yt__module_arity_error(m, 2, n);
    return yt_mse_loss_ex(in[0], in[1], reduction_names[((const loss_ctx *)m->ctx)->reduction]);
}

static yt_tensor *
l1_forward(yt_module *m, yt_tensor *const *in, int n)
{
    if (n != 2)
        return yt__module_arity_error(m, 2, n);
    return yt_l1_loss_ex(in[0], in[1], reduction_names[((const loss_ctx *)m->ctx)->reduction]);
}

static yt_tensor *
smooth_l1_forward(yt_module *m, yt_tensor *const *in, int n)
{
    if (n != 2)
        return yt__module_arity_error(m, 2, n);
    const loss_ctx *c = m->ctx;
    return yt_smooth_l1_loss_ex(in[0], in[1], reduction_names[c->reduction], c->value);
}

static yt_tensor *
huber_forward(yt_module *m, yt_tensor *const *in, int n)
{
    if (n != 2)
        return yt__module_arity_error(m, 2, n);
    const loss_ctx *c = m->ctx;
    return yt_huber_loss_ex(in[0], in[1], reduction_names[c->reduction], c->value);
}

static yt_tensor *
bce_forward(yt_module *m, yt_tensor *const *in, int n)
{
    if (n != 2)
        return yt__module_arity_error(m, 2, n);
    const loss_ctx *c = m->ctx;
    return yt_binary_cross_entropy_ex(in[0], in[1], weight_of(m), reduction_names[c->reduction]);
}

static yt_tensor *
bce_logits_forward(yt_module *m, yt_tensor *const *in, int n)
{
    if (n != 2)
        return yt__module_arity_error(m, 2, n);
    const loss_ctx *c = m->ctx;
    yt_tensor *pos = c->pos_weight ? m->buffers.tensors[c->weight ? 1 : 0] : NULL;
    return yt_binary_cross_entropy_with_logits_ex(in[0], in[1], weight_of(m), pos,
                                                  reduction_names[c->reduction]);
}

static const yt_module_kind cross_entropy_kind = {
    .name = "CrossEntropyLoss", .forward = cross_entropy_forward, .release_ctx = free};
static const yt_module_kind nll_kind = {
    .name = "NLLLoss", .forward = nll_forward, .release_ctx = free};
static const yt_module_kind mse_kind = {
    .name = "MSELoss", .forward = mse_forward, .release_ctx = free};
static const yt_module_kind l1_kind = {
    .name = "L1Loss", .forward = l1_forward, .release_ctx = free};
static const yt_module_kind smooth_l1_kind = {
    .name = "SmoothL1Loss", .forward = smooth_l1_forward, .release_ctx = free};
static const yt_module_kind huber_kind = {
    .name = "HuberLoss", .forward = huber_forward, .release_ctx = free};
static const yt_module_kind bce_kind = {
    .name = "BCELoss", .forward = bce_forward, .release_ctx = free};
static const yt_module_kind bce_logits_kind = {
    .name = "BCEWithLogitsLoss", .forward = bce_logits_forward, .release_ctx = free};

static bool
reduction_ok(yt_reduction r, const char *fn)
{
    if ((int)r >= (int)YT_REDUCTION_MEAN && (int)r <= (int)YT_REDUCTION_NONE)
        return true;
    yt__fail(YT_ERR_VALUE, "%s: reduction=%d is not a yt_reduction (MEAN, SUM or NONE)", fn,
             (int)r);
    return false;
}

static bool
floating_or_null(yt_tensor *t, const char *fn, const char *arg)
{
    if (t == NULL || yt_dtype_is_floating(t->dtype))
        return true;
    yt__fail(YT_ERR_DTYPE, "%s: %s is %s; it must be floating", fn, arg, yt_dtype_name(t->dtype));
    return false;
}

/* The module, with `weight` and `pos_weight` (either may be NULL) registered as buffers. */
static yt_module *
loss_new(const yt_module_kind *kind, const loss_ctx *c, yt_tensor *weight, yt_tensor *pos_weight)
{
    yt_module *m = yt__module_new_copy(kind, c, sizeof *c);
    if (m == NULL)
        return NULL;
    if ((weight != NULL && yt_module_register_buffer(m, "weight", weight) != YT_OK) ||
        (pos_weight != NULL && yt_module_register_buffer(m, "pos_weight", pos_weight) != YT_OK)) {
        yt_module_release(m);
        return NULL;
    }
    return m;
}

yt_cross_entropy_options
yt_cross_entropy_options_default(void)
{
    yt_cross_entropy_options o = {.reduction = YT_REDUCTION_MEAN, .ignore_index = -100};
    return o;
}

static yt_module *
class_loss_new(const yt_module_kind *kind, const char *fn, const yt_cross_entropy_options *o,
               bool smoothing)
{
    yt_cross_entropy_options d = yt_cross_entropy_options_default();
    if (o == NULL)
        o = &d;
    if (!reduction_ok(o->reduction, fn) || !floating_or_null(o->weight, fn, "weight"))
        return NULL;
    if (o->weight != NULL && o->weight->dim != 1)
        return yt__module_fail(YT_ERR_SHAPE,
                               "%s: weight must be 1-D (one weight per class), got %d-D", fn,
                               o->weight->dim);
    if (!(o->label_smoothing >= 0 && o->label_smoothing <= 1))
        return yt__module_fail(YT_ERR_VALUE, "%s: label_smoothing=%g must be in [0, 1]", fn,
                               o->label_smoothing);
    if (!smoothing && o->label_smoothing != 0)
        return yt__module_fail(YT_ERR_VALUE, "%s: label_smoothing=%g: NLLLoss has no smoothing", fn,
                               o->label_smoothing);
    loss_ctx c = {o->reduction, o->ignore_index, o->label_smoothing, o->weight != NULL, false};
    return loss_new(kind, &c, o->weight, NULL);
}

yt_module *
yt_cross_entropy_loss_new(const yt_cross_entropy_options *o)
{
    return class_loss_new(&cross_entropy_kind, "cross_entropy_loss_new", o, true);
}

yt_module *
yt_nll_loss_new(const yt_cross_entropy_options *o)
{
    return class_loss_new(&nll_kind, "nll_loss_new", o, false);
}

yt_module *
yt_mse_loss_new(yt_reduction reduction)
{
    if (!reduction_ok(reduction, "mse_loss_new"))
        return NULL;
    loss_ctx c = {.reduction = reduction};
    return loss_new(&mse_kind, &c, NULL, NULL);
}

yt_module *
yt_l1_loss_new(yt_reduction reduction)
{
    if (!reduction_ok(reduction, "l1_loss_new"))
        return NULL;
    loss_ctx c = {.reduction = reduction};
    return loss_new(&l1_kind, &c, NULL, NULL);
}

yt_module *
yt_smooth_l1_loss_new(yt_reduction reduction, double beta)
{
    if (!reduction_ok(reduction, "smooth_l1_loss_new"))
        return NULL;
    if (!(beta >= 0) || !isfinite(beta))
        return yt__module_fail(YT_ERR_VALUE, "smooth_l1_loss_new: beta=%g must be finite and >= 0",
                               beta);
    loss_ctx c = {.reduction = reduction, .value = beta};
    return loss_new(&smooth_l1_kind, &c, NULL, NULL);
}

yt_module *
yt_huber_loss_new(yt_reduction reduction, double delta)
{
    if (!reduction_ok(reduction, "huber_loss_new"))
        return NULL;
    if (!(delta > 0) || !isfinite(delta))
        return yt__module_fail(YT_ERR_VALUE, "huber_loss_new: delta=%g must be finite and > 0",
                               delta);
    loss_ctx c = {.reduction = reduction, .value = delta};
    return loss_new(&huber_kind, &c, NULL, NULL);
}

yt_module *
yt_bce_loss_new(yt_tensor *weight, yt_reduction reduction)
{
    if (!reduction_ok(reduction, "bce_loss_new") ||
        !floating_or_null(weight, "bce_loss_new", "weight"))
        return NULL;
    loss_ctx c = {.reduction = reduction, .weight = weight != NULL};
    return loss_new(&bce_kind, &c, weight, NULL);
}

yt_module *
yt_bce_with_logits_loss_new(yt_tensor *weight, yt_tensor *pos_weight, yt_reduction reduction)
{
    const char *fn = "bce_with_logits_loss_new";
    if (!reduction_ok(reduction, fn) || !floating_or_null(weight, fn, "weight") ||
        !floating_or_null(pos_weight, fn, "pos_weight"))
        return NULL;
    loss_ctx c = {
        .reduction = reduction, .weight = weight != NULL, .pos_weight = pos_weight != NULL};
    return loss_new(&bce_logits_kind, &c, weight, pos_weight);
}
