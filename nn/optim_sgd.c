/* SGD (torch.optim.SGD): momentum, dampening, Nesterov momentum, L2 weight decay, maximize.
 * The update is yt__optim_sgd_update (optim_loops.c). */
#include <math.h>
#include <stddef.h>

#include "optim_internal.h"

static const yt__optim_field fields[] = {
    {"lr", offsetof(yt_sgd_options, lr), false},
    {"momentum", offsetof(yt_sgd_options, momentum), false},
    {"dampening", offsetof(yt_sgd_options, dampening), false},
    {"weight_decay", offsetof(yt_sgd_options, weight_decay), false},
    {"nesterov", offsetof(yt_sgd_options, nesterov), true},
    {"maximize", offsetof(yt_sgd_options, maximize), true},
};

static const char *const slots[] = {"momentum_buffer"};

static yt_status
validate(const void *options, const char *fn)
{
    const yt_sgd_options *o = options;
    if (o->lr < 0)
        return yt__optim_bad_option(fn, "lr", o->lr, ">= 0");
    if (o->momentum < 0)
        return yt__optim_bad_option(fn, "momentum", o->momentum, ">= 0");
    if (o->weight_decay < 0)
        return yt__optim_bad_option(fn, "weight_decay", o->weight_decay, ">= 0");
    if (o->nesterov && (o->momentum <= 0 || o->dampening != 0))
        return yt__fail_status(YT_ERR_VALUE,
                               "%s: nesterov needs momentum > 0 and dampening == 0 (got "
                               "momentum=%g, dampening=%g)",
                               fn, o->momentum, o->dampening);
    return YT_OK;
}

static bool
slot_used(const void *options, int i)
{
    (void)i;
    return ((const yt_sgd_options *)options)->momentum != 0;
}

/* A missing buffer is allowed: it restarts from the next gradient, as in PyTorch. */
static bool
slot_required(const void *options, int i)
{
    (void)options;
    (void)i;
    return false;
}

/* The buffer starts as a copy of the first (decayed) gradient. */
static double
slot_init(const void *options, int i)
{
    (void)options;
    (void)i;
    return NAN;
}

const yt__optim_kind yt__optim_sgd = {
    .name = "SGD",
    .ctor = "sgd_new",
    .options_size = sizeof(yt_sgd_options),
    .fields = fields,
    .n_fields = (int)(sizeof fields / sizeof fields[0]),
    .slots = slots,
    .n_slots = 1,
    .has_step = false,
    .momentum_offset = offsetof(yt_sgd_options, momentum),
    .validate = validate,
    .slot_used = slot_used,
    .slot_required = slot_required,
    .slot_init = slot_init,
    .update = yt__optim_sgd_update,
};

yt_optimizer *
yt_sgd_new(const yt_named_tensors *params, const yt_sgd_options *o)
{
    return yt__optimizer_new(&yt__optim_sgd, params, o, NULL);
}
