/* ReduceLROnPlateau (torch.optim.lr_scheduler.ReduceLROnPlateau): multiplies every group's lr
 * by `factor` when the metric has not improved for more than `patience` steps, then ignores
 * `cooldown` steps. Not an _LRScheduler in PyTorch either: no base_lrs, no initial step. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lr_scheduler_internal.h"

typedef struct plateau_ctx {
    yt_plateau_options o;
    double best;
    int64_t num_bad_epochs;
    int64_t cooldown_counter;
    double min_lrs[]; /* [n_groups] */
} plateau_ctx;

static bool
is_better(const yt_plateau_options *o, double a, double best)
{
    if (o->mode == YT_PLATEAU_MIN && o->threshold_mode == YT_THRESHOLD_REL)
        return a < best * (1. - o->threshold);
    if (o->mode == YT_PLATEAU_MIN)
        return a < best - o->threshold;
    if (o->threshold_mode == YT_THRESHOLD_REL)
        return a > best * (o->threshold + 1.);
    return a > best + o->threshold;
}

static yt_status
step_metric(yt_scheduler *s, double metric)
{
    plateau_ctx *c = s->ctx;
    s->last_epoch++;
    if (is_better(&c->o, metric, c->best)) {
        c->best = metric;
        c->num_bad_epochs = 0;
    } else {
        c->num_bad_epochs++;
    }
    if (c->cooldown_counter > 0) {
        c->cooldown_counter--;
        c->num_bad_epochs = 0; /* bad epochs in cooldown do not count */
    }
    if (c->num_bad_epochs > c->o.patience) {
        for (int g = 0; g < s->n_groups; g++) {
            const double old_lr = yt__optim_real(s->opt->groups[g].options, 0);
            const double scaled = old_lr * c->o.factor;
            const double new_lr = c->min_lrs[g] > scaled ? c->min_lrs[g] : scaled; /* max() */
            if (old_lr - new_lr > c->o.eps)
                yt__optimizer_put_lr(s->opt, g, new_lr);
        }
        c->cooldown_counter = c->o.cooldown;
        c->num_bad_epochs = 0;
    }
    for (int g = 0; g < s->n_groups; g++)
        s->last_lrs[g] = yt__optim_real(s->opt->groups[g].options, 0);
    return YT_OK;
}

static yt_status
state_dict(yt_scheduler *s, yt_named_tensors *out, const char *prefix)
{
    const plateau_ctx *c = s->ctx;
    yt_status st = yt__sched_core_state(s, out, prefix, false);
    if (st == YT_OK)
        st = yt__optim_add_f64(out, c->best, "%sbest", prefix);
    if (st == YT_OK)
        st = yt__optim_add_i64(out, c->num_bad_epochs, "%snum_bad_epochs", prefix);
    if (st == YT_OK)
        st = yt__optim_add_i64(out, c->cooldown_counter, "%scooldown_counter", prefix);
    return st;
}

static yt_status
load(yt_scheduler *s, yt__sched_loader *ld, const char *prefix, bool apply)
{
    plateau_ctx *c = s->ctx;
    double best;
    int64_t bad, cooldown;
    if (yt__sched_core_load(s, ld, prefix, false, false) != YT_OK ||
        yt__sched_read_f64(ld, prefix, "best", &best) != YT_OK ||
        yt__sched_read_i64(ld, prefix, "num_bad_epochs", &bad) != YT_OK ||
        yt__sched_read_i64(ld, prefix, "cooldown_counter", &cooldown) != YT_OK)
        return yt__last_status();
    if (bad < 0 || cooldown < 0)
        return yt__fail_status(YT_ERR_VALUE, "%s: '%s%s'=%lld must be >= 0", ld->fn, prefix,
                               bad < 0 ? "num_bad_epochs" : "cooldown_counter",
                               (long long)(bad < 0 ? bad : cooldown));
    if (isnan(best))
        return yt__fail_status(YT_ERR_VALUE, "%s: '%sbest' is NaN", ld->fn, prefix);
    if (apply) {
        yt__sched_core_load(s, ld, prefix, false, true);
        c->best = best;
        c->num_bad_epochs = bad;
        c->cooldown_counter = cooldown;
    }
    return YT_OK;
}

static const yt__sched_kind plateau_kind = {
    .name = "ReduceLROnPlateau",
    .step_metric = step_metric,
    .state_dict = state_dict,
    .load = load,
    .release_ctx = free,
};

static yt_status
validate(const yt_optimizer *opt, const yt_plateau_options *o, const char *fn)
{
    if (o->mode != YT_PLATEAU_MIN && o->mode != YT_PLATEAU_MAX)
        return yt__fail_status(YT_ERR_VALUE,
                               "%s: mode=%d is neither YT_PLATEAU_MIN nor YT_PLATEAU_MAX", fn,
                               (int)o->mode);
    if (o->threshold_mode != YT_THRESHOLD_REL && o->threshold_mode != YT_THRESHOLD_ABS)
        return yt__fail_status(
            YT_ERR_VALUE, "%s: threshold_mode=%d is neither YT_THRESHOLD_REL nor YT_THRESHOLD_ABS",
            fn, (int)o->threshold_mode);
    if (!(o->factor > 0 && o->factor < 1))
        return yt__optim_bad_option(fn, "factor", o->factor, "in (0, 1)");
    if (o->patience < 0)
        return yt__fail_status(YT_ERR_VALUE, "%s: patience=%lld must be >= 0", fn,
                               (long long)o->patience);
    if (o->cooldown < 0)
        return yt__fail_status(YT_ERR_VALUE, "%s: cooldown=%lld must be >= 0", fn,
                               (long long)o->cooldown);
    if (!(o->threshold >= 0) || !isfinite(o->threshold))
        return yt__optim_bad_option(fn, "threshold", o->threshold, "finite and >= 0");
    if (!(o->eps >= 0) || !isfinite(o->eps))
        return yt__optim_bad_option(fn, "eps", o->eps, "finite and >= 0");
    for (int g = 0; g < opt->n_groups; g++) {
        double m = o->min_lrs != NULL ? o->min_lrs[g] : o->min_lr;
        if (!(m >= 0) || !isfinite(m)) {
            if (o->min_lrs != NULL)
                return yt__fail_status(YT_ERR_VALUE, "%s: min_lrs[%d]=%g must be finite and >= 0",
                                       fn, g, m);
            return yt__optim_bad_option(fn, "min_lr", m, "finite and >= 0");
        }
    }
    return YT_OK;
}

yt_scheduler *
yt_reduce_lr_on_plateau_new(yt_optimizer *opt, const yt_plateau_options *o)
{
    static const char fn[] = "reduce_lr_on_plateau_new";
    static const yt_plateau_options defaults = YT_PLATEAU_DEFAULTS;
    if (o == NULL)
        o = &defaults;
    if (yt__sched_check_opt(opt, fn) != YT_OK || validate(opt, o, fn) != YT_OK)
        return NULL;
    plateau_ctx *c = malloc(sizeof *c + (size_t)opt->n_groups * sizeof(double));
    if (c == NULL) {
        yt__fail_status(YT_ERR_NOMEM, "%s: out of memory", fn);
        return NULL;
    }
    c->o = *o;
    c->o.min_lrs = NULL; /* borrowed: copied below */
    c->best = o->mode == YT_PLATEAU_MIN ? INFINITY : -INFINITY;
    c->num_bad_epochs = 0;
    c->cooldown_counter = 0;
    for (int g = 0; g < opt->n_groups; g++)
        c->min_lrs[g] = o->min_lrs != NULL ? o->min_lrs[g] : o->min_lr;
    yt_scheduler *s = yt__sched_alloc(&plateau_kind, opt, c, fn);
    if (s != NULL)
        s->last_epoch = 0; /* PyTorch starts it at 0 and makes no initial step */
    return s;
}
