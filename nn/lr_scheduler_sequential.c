/* SequentialLR (torch.optim.lr_scheduler.SequentialLR): hands the steps to one scheduler after
 * another at the milestones, restarting each at its epoch 0 through its closed form; the usual
 * use is a linear warm-up followed by cosine annealing. It owns its schedulers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lr_scheduler_internal.h"

typedef struct sequential_ctx {
    int n;
    yt_scheduler **schedulers; /* [n], owned */
    int64_t *milestones;       /* [n - 1], increasing */
} sequential_ctx;

static void
release_ctx(void *ctx)
{
    sequential_ctx *c = ctx;
    if (c == NULL)
        return;
    for (int i = 0; i < c->n; i++)
        yt_scheduler_release(c->schedulers[i]);
    free(c->schedulers);
    free(c->milestones);
    free(c);
}

static yt_status
step(yt_scheduler *s)
{
    sequential_ctx *c = s->ctx;
    const int64_t epoch = s->last_epoch + 1;
    int idx = 0; /* bisect_right(milestones, epoch) */
    while (idx < c->n - 1 && c->milestones[idx] <= epoch)
        idx++;
    yt_scheduler *sub = c->schedulers[idx];
    yt_status st = idx > 0 && c->milestones[idx - 1] == epoch ? yt__sched_lr_step(sub, true, 0)
                                                              : yt__sched_lr_step(sub, false, 0);
    if (st != YT_OK)
        return st;
    s->last_epoch = epoch;
    memcpy(s->last_lrs, sub->last_lrs, (size_t)s->n_groups * sizeof(double));
    return YT_OK;
}

static yt_status
state_dict(yt_scheduler *s, yt_named_tensors *out, const char *prefix)
{
    sequential_ctx *c = s->ctx;
    yt_status st = yt__sched_core_state(s, out, prefix, false);
    for (int i = 0; st == YT_OK && i < c->n; i++) {
        char sub[200];
        snprintf(sub, sizeof sub, "%sschedulers.%d.", prefix, i);
        st = yt__sched_state(c->schedulers[i], out, sub);
    }
    return st;
}

static yt_status
load(yt_scheduler *s, yt__sched_loader *ld, const char *prefix, bool apply)
{
    sequential_ctx *c = s->ctx;
    yt_status st = yt__sched_core_load(s, ld, prefix, false, apply);
    for (int i = 0; st == YT_OK && i < c->n; i++) {
        char sub[200];
        snprintf(sub, sizeof sub, "%sschedulers.%d.", prefix, i);
        st = yt__sched_load(c->schedulers[i], ld, sub, apply);
    }
    return st;
}

static const yt__sched_kind sequential_kind = {
    .name = "SequentialLR",
    .step = step,
    .state_dict = state_dict,
    .load = load,
    .release_ctx = release_ctx,
};

static yt_status
validate(yt_optimizer *opt, yt_scheduler *const *schedulers, int n, const int64_t *milestones,
         const char *fn)
{
    if (yt__sched_check_opt(opt, fn) != YT_OK)
        return yt__last_status();
    if (n < 1 || schedulers == NULL)
        return yt__fail_status(YT_ERR_VALUE, "%s: %s", fn,
                               n < 1 ? "needs at least one scheduler" : "schedulers is NULL");
    if (n > 1 && milestones == NULL)
        return yt__fail_status(YT_ERR_VALUE, "%s: milestones is NULL but there are %d schedulers",
                               fn, n);
    for (int i = 0; i < n; i++) {
        const yt_scheduler *sub = schedulers[i];
        if (sub == NULL)
            return yt__null_status(fn, "a scheduler");
        if (sub->opt != opt)
            return yt__fail_status(YT_ERR_VALUE,
                                   "%s: schedulers[%d] (%s) belongs to another optimizer", fn, i,
                                   sub->kind->name);
        if (sub->kind->get_lr == NULL)
            return yt__fail_status(YT_ERR_VALUE,
                                   "%s: schedulers[%d] is a %s, which cannot be sequenced", fn, i,
                                   sub->kind->name);
        for (int j = 0; j < i; j++)
            if (schedulers[j] == sub)
                return yt__fail_status(YT_ERR_VALUE, "%s: schedulers[%d] is schedulers[%d] again",
                                       fn, i, j);
        if (yt__sched_check_groups(sub, fn) != YT_OK)
            return yt__last_status();
    }
    for (int i = 0; i + 1 < n; i++) {
        if (milestones[i] < 1 || (i > 0 && milestones[i] <= milestones[i - 1]))
            return yt__fail_status(
                YT_ERR_VALUE,
                "%s: milestones[%d]=%lld must be >= 1 and greater than the one before", fn, i,
                (long long)milestones[i]);
    }
    return YT_OK;
}

yt_scheduler *
yt_sequential_lr_new(yt_optimizer *opt, yt_scheduler *const *schedulers, int n,
                     const int64_t *milestones)
{
    static const char fn[] = "sequential_lr_new";
    sequential_ctx *c = NULL;
    if (validate(opt, schedulers, n, milestones, fn) == YT_OK) {
        c = calloc(1, sizeof *c);
        if (c != NULL) {
            c->schedulers = calloc((size_t)n, sizeof *c->schedulers);
            c->milestones = calloc((size_t)n, sizeof *c->milestones);
        }
        if (c == NULL || c->schedulers == NULL || c->milestones == NULL) {
            if (c != NULL) {
                free(c->schedulers);
                free(c->milestones);
                free(c);
            }
            c = NULL;
            yt__fail_status(YT_ERR_NOMEM, "%s: out of memory", fn);
        }
    }
    if (c == NULL) { /* ownership of the schedulers was passed in: release them */
        for (int i = 0; schedulers != NULL && i < n; i++)
            yt_scheduler_release(schedulers[i]);
        return NULL;
    }
    c->n = n;
    memcpy(c->schedulers, schedulers, (size_t)n * sizeof *c->schedulers);
    if (n > 1)
        memcpy(c->milestones, milestones, (size_t)(n - 1) * sizeof *c->milestones);
    yt_scheduler *s = yt__sched_alloc(&sequential_kind, opt, c, fn);
    if (s == NULL)
        return NULL;
    /* PyTorch: last_epoch = -1 + 1; every group back to its initial_lr; each scheduler one
     * epoch back; then the first scheduler's initial step. */
    s->last_epoch = 0;
    for (int g = 0; g < s->n_groups; g++)
        yt__optimizer_put_lr(opt, g, yt__optimizer_initial_lr(opt, g));
    for (int i = 0; i < n; i++)
        c->schedulers[i]->last_epoch -= 1;
    yt_scheduler *first = c->schedulers[0];
    first->step_count = 0;
    if (yt__sched_lr_step(first, false, 0) != YT_OK) {
        yt_scheduler_release(s);
        return NULL;
    }
    memcpy(s->last_lrs, first->last_lrs, (size_t)s->n_groups * sizeof(double));
    return s;
}
