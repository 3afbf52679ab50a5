/* OneCycleLR (torch.optim.lr_scheduler.OneCycleLR): the lr rises from max_lr / div_factor to
 * max_lr over the first pct_start of the steps, then anneals (cosine or linear) to
 * initial_lr / final_div_factor; the momentum (SGD, RMSprop) or beta1 (Adam) moves the other
 * way between max_momentum and base_momentum. three_phase inserts a symmetric descent back to
 * the initial lr before the final annealing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lr_scheduler_internal.h"

/* Which per-group value a phase starts or ends at. */
typedef enum { AT_INITIAL_LR, AT_MAX_LR, AT_MIN_LR } lr_point;
typedef enum { AT_MAX_MOMENTUM, AT_BASE_MOMENTUM } momentum_point;

typedef struct phase {
    double end_step;
    lr_point start_lr, end_lr;
    momentum_point start_momentum, end_momentum;
} phase;

typedef struct one_cycle_ctx {
    yt_one_cycle_options o;
    int n_phases;
    phase phases[3];
    double *max_lr, *min_lr, *max_momentum, *base_momentum; /* [n_groups] */
} one_cycle_ctx;

static void
release_ctx(void *ctx)
{
    one_cycle_ctx *c = ctx;
    if (c == NULL)
        return;
    free(c->max_lr);
    free(c->min_lr);
    free(c->max_momentum);
    free(c->base_momentum);
    free(c);
}

/* _annealing_cos / _annealing_linear, in PyTorch's operation order. */
static double
anneal(yt_anneal_strategy strategy, double start, double end, double pct)
{
    if (strategy == YT_ANNEAL_LINEAR)
        return (end - start) * pct + start;
    const double cos_out = cos(M_PI * pct) + 1;
    return end + (start - end) / 2.0 * cos_out;
}

static double
lr_at(const yt_scheduler *s, int g, lr_point at)
{
    const one_cycle_ctx *c = s->ctx;
    return at == AT_INITIAL_LR ? yt__optimizer_initial_lr(s->opt, g)
           : at == AT_MAX_LR   ? c->max_lr[g]
                               : c->min_lr[g];
}

static double
momentum_at(const one_cycle_ctx *c, int g, momentum_point at)
{
    return at == AT_MAX_MOMENTUM ? c->max_momentum[g] : c->base_momentum[g];
}

static yt_status
check_epoch(const yt_scheduler *s, int64_t epoch)
{
    const one_cycle_ctx *c = s->ctx;
    if (epoch > c->o.total_steps)
        return yt__fail_status(YT_ERR_STATE,
                               "scheduler_step: OneCycleLR stepped %lld times but total_steps=%lld",
                               (long long)epoch + 1, (long long)c->o.total_steps);
    return YT_OK;
}

static double
get_lr(yt_scheduler *s, int g)
{
    const one_cycle_ctx *c = s->ctx;
    const double step = (double)s->last_epoch;
    double start_step = 0;
    for (int i = 0; i < c->n_phases; i++) {
        const phase *ph = &c->phases[i];
        if (step <= ph->end_step || i == c->n_phases - 1) {
            const double pct = (step - start_step) / (ph->end_step - start_step);
            const double lr = anneal(c->o.anneal_strategy, lr_at(s, g, ph->start_lr),
                                     lr_at(s, g, ph->end_lr), pct);
            if (c->o.cycle_momentum)
                yt__optimizer_set_momentum(s->opt, g,
                                           anneal(c->o.anneal_strategy,
                                                  momentum_at(c, g, ph->start_momentum),
                                                  momentum_at(c, g, ph->end_momentum), pct));
            return lr;
        }
        start_step = ph->end_step;
    }
    return NAN; /* not reached: the last phase always matches */
}

static const yt__sched_kind one_cycle_kind = {
    .name = "OneCycleLR",
    .get_lr = get_lr,
    .check_epoch = check_epoch,
    .release_ctx = release_ctx,
};

static yt_status
validate(const yt_optimizer *opt, const yt_one_cycle_options *o, const char *fn)
{
    if (o->total_steps < 1)
        return yt__fail_status(YT_ERR_VALUE, "%s: total_steps=%lld must be >= 1", fn,
                               (long long)o->total_steps);
    if (!(o->pct_start >= 0 && o->pct_start <= 1))
        return yt__optim_bad_option(fn, "pct_start", o->pct_start, "in [0, 1]");
    if (o->anneal_strategy != YT_ANNEAL_COS && o->anneal_strategy != YT_ANNEAL_LINEAR)
        return yt__fail_status(
            YT_ERR_VALUE, "%s: anneal_strategy=%d is neither YT_ANNEAL_COS nor YT_ANNEAL_LINEAR",
            fn, (int)o->anneal_strategy);
    if (!(o->div_factor > 0) || !isfinite(o->div_factor))
        return yt__optim_bad_option(fn, "div_factor", o->div_factor, "finite and > 0");
    if (!(o->final_div_factor > 0) || !isfinite(o->final_div_factor))
        return yt__optim_bad_option(fn, "final_div_factor", o->final_div_factor, "finite and > 0");
    for (int g = 0; g < opt->n_groups; g++) {
        double m = o->max_lrs != NULL ? o->max_lrs[g] : o->max_lr;
        if (!(m >= 0) || !isfinite(m)) {
            if (o->max_lrs != NULL)
                return yt__fail_status(YT_ERR_VALUE, "%s: max_lrs[%d]=%g must be finite and >= 0",
                                       fn, g, m);
            return yt__optim_bad_option(fn, "max_lr", m, "finite and >= 0");
        }
    }
    if (o->cycle_momentum) {
        if (!yt__optimizer_has_momentum(opt))
            return yt__fail_status(YT_ERR_VALUE,
                                   "%s: cycle_momentum needs an optimizer with momentum or beta1, "
                                   "and %s has neither (set cycle_momentum = false)",
                                   fn, opt->kind->name);
        if (!(o->base_momentum >= 0) || !isfinite(o->base_momentum))
            return yt__optim_bad_option(fn, "base_momentum", o->base_momentum, "finite and >= 0");
        if (!(o->max_momentum >= 0) || !isfinite(o->max_momentum))
            return yt__optim_bad_option(fn, "max_momentum", o->max_momentum, "finite and >= 0");
    }
    return YT_OK;
}

/* PyTorch's _schedule_phases. */
static void
set_phases(one_cycle_ctx *c)
{
    const yt_one_cycle_options *o = &c->o;
    const double total = (double)o->total_steps;
    if (o->three_phase) {
        c->n_phases = 3;
        c->phases[0] = (phase){o->pct_start * total - 1, AT_INITIAL_LR, AT_MAX_LR, AT_MAX_MOMENTUM,
                               AT_BASE_MOMENTUM};
        c->phases[1] = (phase){2 * o->pct_start * total - 2, AT_MAX_LR, AT_INITIAL_LR,
                               AT_BASE_MOMENTUM, AT_MAX_MOMENTUM};
        c->phases[2] =
            (phase){total - 1, AT_INITIAL_LR, AT_MIN_LR, AT_MAX_MOMENTUM, AT_MAX_MOMENTUM};
    } else {
        c->n_phases = 2;
        c->phases[0] = (phase){o->pct_start * total - 1, AT_INITIAL_LR, AT_MAX_LR, AT_MAX_MOMENTUM,
                               AT_BASE_MOMENTUM};
        c->phases[1] = (phase){total - 1, AT_MAX_LR, AT_MIN_LR, AT_BASE_MOMENTUM, AT_MAX_MOMENTUM};
    }
}

/* A phase of no steps divides by zero (PyTorch raises ZeroDivisionError when it reaches it). */
static yt_status
check_phases(const one_cycle_ctx *c, const char *fn)
{
    double start = 0;
    for (int i = 0; i < c->n_phases; i++) {
        if (!(c->phases[i].end_step > start))
            return yt__fail_status(YT_ERR_VALUE,
                                   "%s: pct_start=%g with total_steps=%lld leaves phase %d of the "
                                   "cycle without steps",
                                   fn, c->o.pct_start, (long long)c->o.total_steps, i + 1);
        start = c->phases[i].end_step;
    }
    return YT_OK;
}

yt_scheduler *
yt_one_cycle_lr_new(yt_optimizer *opt, const yt_one_cycle_options *o)
{
    static const char fn[] = "one_cycle_lr_new";
    if (yt__sched_check_opt(opt, fn) != YT_OK)
        return NULL;
    if (o == NULL) {
        yt__fail_status(YT_ERR_VALUE, "%s: o is NULL (max_lr and total_steps have no default)", fn);
        return NULL;
    }
    if (validate(opt, o, fn) != YT_OK)
        return NULL;
    const int n = opt->n_groups;
    one_cycle_ctx *c = calloc(1, sizeof *c);
    if (c != NULL) {
        c->max_lr = calloc((size_t)n, sizeof(double));
        c->min_lr = calloc((size_t)n, sizeof(double));
        c->max_momentum = calloc((size_t)n, sizeof(double));
        c->base_momentum = calloc((size_t)n, sizeof(double));
    }
    if (c == NULL || !c->max_lr || !c->min_lr || !c->max_momentum || !c->base_momentum) {
        release_ctx(c);
        yt__fail_status(YT_ERR_NOMEM, "%s: out of memory", fn);
        return NULL;
    }
    c->o = *o;
    c->o.max_lrs = NULL; /* borrowed: copied into max_lr below */
    set_phases(c);
    if (check_phases(c, fn) != YT_OK) {
        release_ctx(c);
        return NULL;
    }
    yt_scheduler *s = yt__sched_alloc(&one_cycle_kind, opt, c, fn);
    if (s == NULL)
        return NULL;
    for (int g = 0; g < n; g++) {
        c->max_lr[g] = o->max_lrs != NULL ? o->max_lrs[g] : o->max_lr;
        yt__optimizer_set_initial_lr(opt, g, c->max_lr[g] / o->div_factor);
        c->min_lr[g] = yt__optimizer_initial_lr(opt, g) / o->final_div_factor;
        c->max_momentum[g] = o->max_momentum;
        c->base_momentum[g] = o->base_momentum;
        if (o->cycle_momentum)
            yt__optimizer_set_momentum(opt, g, o->max_momentum);
    }
    return yt__sched_start(s);
}
