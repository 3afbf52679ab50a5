/* RMSprop (torch.optim.RMSprop): smoothing constant alpha, momentum, centered (variance
 * estimate from the mean gradient), weight decay, maximize. The update is in optim_loops.c. */
#include <stddef.h>

#include "optim_internal.h"

static const yt__optim_field fields[] = {
    {"lr", offsetof(yt_rmsprop_options, lr), false},
    {"alpha", offsetof(yt_rmsprop_options, alpha), false},
    {"eps", offsetof(yt_rmsprop_options, eps), false},
    {"weight_decay", offsetof(yt_rmsprop_options, weight_decay), false},
    {"momentum", offsetof(yt_rmsprop_options, momentum), false},
    {"centered", offsetof(yt_rmsprop_options, centered), true},
    {"maximize", offsetof(yt_rmsprop_options, maximize), true},
};

enum { SQUARE_AVG, MOMENTUM_BUFFER, GRAD_AVG };
static const char *const slots[] = {"square_avg", "momentum_buffer", "grad_avg"};

static yt_status
validate(const void *options, const char *fn)
{
    const yt_rmsprop_options *o = options;
    if (o->lr < 0)
        return yt__optim_bad_option(fn, "lr", o->lr, ">= 0");
    if (o->eps < 0)
        return yt__optim_bad_option(fn, "eps", o->eps, ">= 0");
    if (o->momentum < 0)
        return yt__optim_bad_option(fn, "momentum", o->momentum, ">= 0");
    if (o->weight_decay < 0)
        return yt__optim_bad_option(fn, "weight_decay", o->weight_decay, ">= 0");
    if (o->alpha < 0)
        return yt__optim_bad_option(fn, "alpha", o->alpha, ">= 0");
    return YT_OK;
}

static bool
slot_used(const void *options, int i)
{
    const yt_rmsprop_options *o = options;
    return i == SQUARE_AVG || (i == MOMENTUM_BUFFER && o->momentum > 0) ||
           (i == GRAD_AVG && o->centered);
}

static double
slot_init(const void *options, int i)
{
    (void)options;
    (void)i;
    return 0.0;
}

const yt__optim_kind yt__optim_rmsprop = {
    .name = "RMSprop",
    .ctor = "rmsprop_new",
    .options_size = sizeof(yt_rmsprop_options),
    .fields = fields,
    .n_fields = (int)(sizeof fields / sizeof fields[0]),
    .slots = slots,
    .n_slots = 3,
    .has_step = true,
    .momentum_offset = offsetof(yt_rmsprop_options, momentum),
    .validate = validate,
    .slot_used = slot_used,
    .slot_required = slot_used,
    .slot_init = slot_init,
    .update = yt__optim_rmsprop_update,
};

yt_optimizer *
yt_rmsprop_new(const yt_named_tensors *params, const yt_rmsprop_options *o)
{
    static const yt_rmsprop_options defaults = YT_RMSPROP_DEFAULTS;
    return yt__optimizer_new(&yt__optim_rmsprop, params, o, &defaults);
}
