/* The epoch-based schedulers of torch.optim.lr_scheduler whose lr follows from one formula:
 * StepLR, MultiStepLR, ExponentialLR, CosineAnnealingLR and LinearLR. Each has PyTorch's
 * chainable form (get_lr, from the group's current lr) and its closed form (from base_lrs),
 * written with the same operations in the same order, so the sequences agree to the last bit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lr_scheduler_internal.h"

static double
group_lr(const yt_scheduler *s, int g)
{
    return yt__optim_real(s->opt->groups[g].options, 0);
}

static yt_scheduler *
make(const yt__sched_kind *kind, yt_optimizer *opt, void *ctx, const char *fn)
{
    yt_scheduler *s = yt__sched_alloc(kind, opt, ctx, fn);
    return s != NULL ? yt__sched_start(s) : NULL;
}

/* Allocates a copy of `size` bytes of `src`; NULL with the error set. */
static void *
ctx_copy(const void *src, size_t size, const char *fn)
{
    void *c = malloc(size);
    if (c == NULL) {
        yt__fail_status(YT_ERR_NOMEM, "%s: out of memory", fn);
        return NULL;
    }
    memcpy(c, src, size);
    return c;
}

static yt_status
check_gamma(double gamma, const char *fn)
{
    if (!(gamma > 0) || !isfinite(gamma))
        return yt__optim_bad_option(fn, "gamma", gamma, "finite and > 0");
    return YT_OK;
}

/* ---------------------------------------------------------------- StepLR */

typedef struct step_ctx {
    int64_t step_size;
    double gamma;
} step_ctx;

static double
step_get_lr(yt_scheduler *s, int g)
{
    const step_ctx *c = s->ctx;
    if (s->last_epoch == 0 || yt__pymod(s->last_epoch, c->step_size) != 0)
        return group_lr(s, g);
    return group_lr(s, g) * c->gamma;
}

static double
step_closed_form(const yt_scheduler *s, int g)
{
    const step_ctx *c = s->ctx;
    return s->base_lrs[g] * pow(c->gamma, (double)yt__floordiv(s->last_epoch, c->step_size));
}

static const yt__sched_kind step_kind = {
    .name = "StepLR",
    .get_lr = step_get_lr,
    .closed_form = step_closed_form,
    .release_ctx = free,
};

yt_scheduler *
yt_step_lr_new(yt_optimizer *opt, int64_t step_size, double gamma)
{
    static const char fn[] = "step_lr_new";
    if (yt__sched_check_opt(opt, fn) != YT_OK || check_gamma(gamma, fn) != YT_OK)
        return NULL;
    if (step_size < 1) {
        yt__fail_status(YT_ERR_VALUE, "%s: step_size=%lld must be >= 1", fn, (long long)step_size);
        return NULL;
    }
    const step_ctx c = {step_size, gamma};
    void *ctx = ctx_copy(&c, sizeof c, fn);
    return ctx != NULL ? make(&step_kind, opt, ctx, fn) : NULL;
}

/* ---------------------------------------------------------------- MultiStepLR */

typedef struct multi_step_ctx {
    double gamma;
    int n;
    int64_t milestones[]; /* sorted; a milestone given k times appears k times */
} multi_step_ctx;

/* How many milestones equal `epoch` (PyTorch's Counter lookup). */
static int64_t
milestone_count(const multi_step_ctx *c, int64_t epoch)
{
    int64_t k = 0;
    for (int i = 0; i < c->n; i++)
        k += c->milestones[i] == epoch;
    return k;
}

/* bisect_right(milestones, epoch): how many milestones are <= epoch. */
static int64_t
milestones_passed(const multi_step_ctx *c, int64_t epoch)
{
    int64_t k = 0;
    for (int i = 0; i < c->n; i++)
        k += c->milestones[i] <= epoch;
    return k;
}

static double
multi_step_get_lr(yt_scheduler *s, int g)
{
    const multi_step_ctx *c = s->ctx;
    const int64_t k = milestone_count(c, s->last_epoch);
    if (k == 0)
        return group_lr(s, g);
    return group_lr(s, g) * pow(c->gamma, (double)k);
}

static double
multi_step_closed_form(const yt_scheduler *s, int g)
{
    const multi_step_ctx *c = s->ctx;
    return s->base_lrs[g] * pow(c->gamma, (double)milestones_passed(c, s->last_epoch));
}

static const yt__sched_kind multi_step_kind = {
    .name = "MultiStepLR",
    .get_lr = multi_step_get_lr,
    .closed_form = multi_step_closed_form,
    .release_ctx = free,
};

static int
cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

yt_scheduler *
yt_multi_step_lr_new(yt_optimizer *opt, const int64_t *milestones, int n, double gamma)
{
    static const char fn[] = "multi_step_lr_new";
    if (yt__sched_check_opt(opt, fn) != YT_OK || check_gamma(gamma, fn) != YT_OK)
        return NULL;
    if (n < 0 || (n > 0 && milestones == NULL)) {
        yt__fail_status(YT_ERR_VALUE, "%s: %s", fn,
                        n < 0 ? "n is negative" : "milestones is NULL but n > 0");
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        if (milestones[i] < 0) {
            yt__fail_status(YT_ERR_VALUE, "%s: milestones[%d]=%lld must be >= 0", fn, i,
                            (long long)milestones[i]);
            return NULL;
        }
    }
    multi_step_ctx *c = malloc(sizeof *c + (size_t)n * sizeof(int64_t));
    if (c == NULL) {
        yt__fail_status(YT_ERR_NOMEM, "%s: out of memory", fn);
        return NULL;
    }
    c->gamma = gamma;
    c->n = n;
    if (n > 0)
        memcpy(c->milestones, milestones, (size_t)n * sizeof(int64_t));
    qsort(c->milestones, (size_t)n, sizeof(int64_t), cmp_i64);
    return make(&multi_step_kind, opt, c, fn);
}

/* ---------------------------------------------------------------- ExponentialLR */

static double
exponential_get_lr(yt_scheduler *s, int g)
{
    if (s->last_epoch == 0)
        return group_lr(s, g);
    return group_lr(s, g) * *(const double *)s->ctx;
}

static double
exponential_closed_form(const yt_scheduler *s, int g)
{
    return s->base_lrs[g] * pow(*(const double *)s->ctx, (double)s->last_epoch);
}

static const yt__sched_kind exponential_kind = {
    .name = "ExponentialLR",
    .get_lr = exponential_get_lr,
    .closed_form = exponential_closed_form,
    .release_ctx = free,
};

yt_scheduler *
yt_exponential_lr_new(yt_optimizer *opt, double gamma)
{
    static const char fn[] = "exponential_lr_new";
    if (yt__sched_check_opt(opt, fn) != YT_OK || check_gamma(gamma, fn) != YT_OK)
        return NULL;
    void *ctx = ctx_copy(&gamma, sizeof gamma, fn);
    return ctx != NULL ? make(&exponential_kind, opt, ctx, fn) : NULL;
}

/* ---------------------------------------------------------------- CosineAnnealingLR */

typedef struct cosine_ctx {
    int64_t T_max;
    double eta_min;
} cosine_ctx;

static double
cosine_get_lr(yt_scheduler *s, int g)
{
    const cosine_ctx *c = s->ctx;
    const double T = (double)c->T_max, e = (double)s->last_epoch, base = s->base_lrs[g];
    if (s->last_epoch == 0)
        return group_lr(s, g);
    if (s->step_count == 1 && s->last_epoch > 0)
        return c->eta_min + (base - c->eta_min) * (1 + cos(e * M_PI / T)) / 2;
    if (yt__pymod(s->last_epoch - 1 - c->T_max, 2 * c->T_max) == 0)
        return group_lr(s, g) + (base - c->eta_min) * (1 - cos(M_PI / T)) / 2;
    return (1 + cos(M_PI * e / T)) / (1 + cos(M_PI * (e - 1) / T)) * (group_lr(s, g) - c->eta_min) +
           c->eta_min;
}

static double
cosine_closed_form(const yt_scheduler *s, int g)
{
    const cosine_ctx *c = s->ctx;
    return c->eta_min + (s->base_lrs[g] - c->eta_min) *
                            (1 + cos(M_PI * (double)s->last_epoch / (double)c->T_max)) / 2;
}

static const yt__sched_kind cosine_kind = {
    .name = "CosineAnnealingLR",
    .get_lr = cosine_get_lr,
    .closed_form = cosine_closed_form,
    .release_ctx = free,
};

yt_scheduler *
yt_cosine_annealing_lr_new(yt_optimizer *opt, int64_t T_max, double eta_min)
{
    static const char fn[] = "cosine_annealing_lr_new";
    if (yt__sched_check_opt(opt, fn) != YT_OK)
        return NULL;
    if (T_max < 1 || T_max > (INT64_MAX >> 2)) {
        yt__fail_status(YT_ERR_VALUE, "%s: T_max=%lld must be >= 1", fn, (long long)T_max);
        return NULL;
    }
    if (!isfinite(eta_min)) {
        yt__optim_bad_option(fn, "eta_min", eta_min, "finite");
        return NULL;
    }
    const cosine_ctx c = {T_max, eta_min};
    void *ctx = ctx_copy(&c, sizeof c, fn);
    return ctx != NULL ? make(&cosine_kind, opt, ctx, fn) : NULL;
}

/* ---------------------------------------------------------------- LinearLR */

typedef struct linear_ctx {
    double start_factor, end_factor;
    int64_t total_iters;
} linear_ctx;

static double
linear_get_lr(yt_scheduler *s, int g)
{
    const linear_ctx *c = s->ctx;
    if (s->last_epoch == 0)
        return group_lr(s, g) * c->start_factor;
    if (s->last_epoch > c->total_iters)
        return group_lr(s, g);
    const double span = c->end_factor - c->start_factor;
    return group_lr(s, g) * (1. + span / ((double)c->total_iters * c->start_factor +
                                          (double)(s->last_epoch - 1) * span));
}

static double
linear_closed_form(const yt_scheduler *s, int g)
{
    const linear_ctx *c = s->ctx;
    const int64_t e = s->last_epoch < c->total_iters ? s->last_epoch : c->total_iters;
    return s->base_lrs[g] * (c->start_factor + (c->end_factor - c->start_factor) * (double)e /
                                                   (double)c->total_iters);
}

static const yt__sched_kind linear_kind = {
    .name = "LinearLR",
    .get_lr = linear_get_lr,
    .closed_form = linear_closed_form,
    .release_ctx = free,
};

yt_scheduler *
yt_linear_lr_new(yt_optimizer *opt, double start_factor, double end_factor, int64_t total_iters)
{
    static const char fn[] = "linear_lr_new";
    if (yt__sched_check_opt(opt, fn) != YT_OK)
        return NULL;
    /* PyTorch 1.13 accepts start_factor = 0 and then divides by zero at the first step. */
    if (!(start_factor > 0 && start_factor <= 1)) {
        yt__optim_bad_option(fn, "start_factor", start_factor, "in (0, 1]");
        return NULL;
    }
    if (!(end_factor >= 0 && end_factor <= 1)) {
        yt__optim_bad_option(fn, "end_factor", end_factor, "in [0, 1]");
        return NULL;
    }
    if (total_iters < 1) {
        yt__fail_status(YT_ERR_VALUE, "%s: total_iters=%lld must be >= 1", fn,
                        (long long)total_iters);
        return NULL;
    }
    const linear_ctx c = {start_factor, end_factor, total_iters};
    void *ctx = ctx_copy(&c, sizeof c, fn);
    return ctx != NULL ? make(&linear_kind, opt, ctx, fn) : NULL;
}
