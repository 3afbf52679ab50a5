/* Adam and AdamW (torch.optim.Adam, torch.optim.AdamW): amsgrad, weight decay (L2 for Adam,
 * decoupled for AdamW), maximize. The updates are in optim_loops.c. */
#include <stddef.h>

#include "optim_internal.h"

static const yt__optim_field fields[] = {
    {"lr", offsetof(yt_adam_options, lr), false},
    {"beta1", offsetof(yt_adam_options, beta1), false},
    {"beta2", offsetof(yt_adam_options, beta2), false},
    {"eps", offsetof(yt_adam_options, eps), false},
    {"weight_decay", offsetof(yt_adam_options, weight_decay), false},
    {"amsgrad", offsetof(yt_adam_options, amsgrad), true},
    {"maximize", offsetof(yt_adam_options, maximize), true},
};

enum { EXP_AVG, EXP_AVG_SQ, MAX_EXP_AVG_SQ };
static const char *const slots[] = {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};

static yt_status
validate(const void *options, const char *fn)
{
    const yt_adam_options *o = options;
    if (o->lr < 0)
        return yt__optim_bad_option(fn, "lr", o->lr, ">= 0");
    if (o->eps < 0)
        return yt__optim_bad_option(fn, "eps", o->eps, ">= 0");
    if (!(o->beta1 >= 0 && o->beta1 < 1))
        return yt__optim_bad_option(fn, "beta1", o->beta1, "in [0, 1)");
    if (!(o->beta2 >= 0 && o->beta2 < 1))
        return yt__optim_bad_option(fn, "beta2", o->beta2, "in [0, 1)");
    if (o->weight_decay < 0)
        return yt__optim_bad_option(fn, "weight_decay", o->weight_decay, ">= 0");
    return YT_OK;
}

static bool
slot_used(const void *options, int i)
{
    return i != MAX_EXP_AVG_SQ || ((const yt_adam_options *)options)->amsgrad;
}

static double
slot_init(const void *options, int i)
{
    (void)options;
    (void)i;
    return 0.0;
}

const yt__optim_kind yt__optim_adam = {
    .name = "Adam",
    .ctor = "adam_new",
    .options_size = sizeof(yt_adam_options),
    .fields = fields,
    .n_fields = (int)(sizeof fields / sizeof fields[0]),
    .slots = slots,
    .n_slots = 3,
    .has_step = true,
    .momentum_offset = offsetof(yt_adam_options, beta1),
    .validate = validate,
    .slot_used = slot_used,
    .slot_required = slot_used,
    .slot_init = slot_init,
    .update = yt__optim_adam_update,
};

const yt__optim_kind yt__optim_adamw = {
    .name = "AdamW",
    .ctor = "adamw_new",
    .options_size = sizeof(yt_adam_options),
    .fields = fields,
    .n_fields = (int)(sizeof fields / sizeof fields[0]),
    .slots = slots,
    .n_slots = 3,
    .has_step = true,
    .momentum_offset = offsetof(yt_adam_options, beta1),
    .validate = validate,
    .slot_used = slot_used,
    .slot_required = slot_used,
    .slot_init = slot_init,
    .update = yt__optim_adamw_update,
};

yt_optimizer *
yt_adam_new(const yt_named_tensors *params, const yt_adam_options *o)
{
    static const yt_adam_options defaults = YT_ADAM_DEFAULTS;
    return yt__optimizer_new(&yt__optim_adam, params, o, &defaults);
}

yt_optimizer *
yt_adamw_new(const yt_named_tensors *params, const yt_adam_options *o)
{
    static const yt_adam_options defaults = YT_ADAMW_DEFAULTS;
    return yt__optimizer_new(&yt__optim_adamw, params, o, &defaults);
}
