/* Adagrad (torch.optim.Adagrad): lr decay, initial accumulator value, weight decay, maximize.
 * The update is in optim_loops.c. */
#include <stddef.h>

#include "optim_internal.h"

static const yt__optim_field fields[] = {
    {"lr", offsetof(yt_adagrad_options, lr), false},
    {"lr_decay", offsetof(yt_adagrad_options, lr_decay), false},
    {"weight_decay", offsetof(yt_adagrad_options, weight_decay), false},
    {"initial_accumulator_value", offsetof(yt_adagrad_options, initial_accumulator_value), false},
    {"eps", offsetof(yt_adagrad_options, eps), false},
    {"maximize", offsetof(yt_adagrad_options, maximize), true},
};

static const char *const slots[] = {"sum"};

static yt_status
validate(const void *options, const char *fn)
{
    const yt_adagrad_options *o = options;
    if (o->lr < 0)
        return yt__optim_bad_option(fn, "lr", o->lr, ">= 0");
    if (o->lr_decay < 0)
        return yt__optim_bad_option(fn, "lr_decay", o->lr_decay, ">= 0");
    if (o->weight_decay < 0)
        return yt__optim_bad_option(fn, "weight_decay", o->weight_decay, ">= 0");
    if (o->initial_accumulator_value < 0)
        return yt__optim_bad_option(fn, "initial_accumulator_value", o->initial_accumulator_value,
                                    ">= 0");
    if (o->eps < 0)
        return yt__optim_bad_option(fn, "eps", o->eps, ">= 0");
    return YT_OK;
}

static bool
slot_used(const void *options, int i)
{
    (void)options;
    (void)i;
    return true;
}

static double
slot_init(const void *options, int i)
{
    (void)i;
    return ((const yt_adagrad_options *)options)->initial_accumulator_value;
}

const yt__optim_kind yt__optim_adagrad = {
    .name = "Adagrad",
    .ctor = "adagrad_new",
    .options_size = sizeof(yt_adagrad_options),
    .fields = fields,
    .n_fields = (int)(sizeof fields / sizeof fields[0]),
    .slots = slots,
    .n_slots = 1,
    .has_step = true,
    .momentum_offset = -1,
    .validate = validate,
    .slot_used = slot_used,
    .slot_required = slot_used,
    .slot_init = slot_init,
    .update = yt__optim_adagrad_update,
};

yt_optimizer *
yt_adagrad_new(const yt_named_tensors *params, const yt_adagrad_options *o)
{
    static const yt_adagrad_options defaults = YT_ADAGRAD_DEFAULTS;
    return yt__optimizer_new(&yt__optim_adagrad, params, o, &defaults);
}
