/* The learning-rate scheduler core (PyTorch's _LRScheduler) and its public entry points: step,
 * state dicts, accessors. The schedulers themselves are in lr_scheduler_basic.c (step,
 * multi-step, exponential, cosine, linear), lr_scheduler_one_cycle.c, lr_scheduler_plateau.c and
 * lr_scheduler_sequential.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lr_scheduler_internal.h"

/* ---------------------------------------------------------------- construction */

yt_status
yt__sched_check_opt(const yt_optimizer *opt, const char *fn)
{
    if (opt == NULL)
        return yt__fail_status(YT_ERR_VALUE, "%s: opt is NULL", fn);
    return YT_OK;
}

yt_scheduler *
yt__sched_alloc(const yt__sched_kind *kind, yt_optimizer *opt, void *ctx, const char *fn)
{
    yt_scheduler *s = calloc(1, sizeof *s);
    const int n = opt->n_groups;
    double *base = calloc((size_t)n + 1, sizeof *base), *last = calloc((size_t)n + 1, sizeof *last);
    if (s == NULL || base == NULL || last == NULL) {
        free(s);
        free(base);
        free(last);
        if (kind->release_ctx != NULL)
            kind->release_ctx(ctx);
        yt__fail_status(YT_ERR_NOMEM, "%s: out of memory", fn);
        return NULL;
    }
    s->kind = kind;
    s->opt = yt_optimizer_retain(opt);
    s->n_groups = n;
    s->last_epoch = -1;
    s->base_lrs = base;
    s->last_lrs = last;
    s->ctx = ctx;
    for (int g = 0; g < n; g++)
        last[g] = yt__optim_real(opt->groups[g].options, 0);
    return s;
}

yt_scheduler *
yt__sched_start(yt_scheduler *s)
{
    for (int g = 0; g < s->n_groups; g++) {
        if (isnan(yt__optimizer_initial_lr(s->opt, g)))
            yt__optimizer_set_initial_lr(s->opt, g, yt__optim_real(s->opt->groups[g].options, 0));
        s->base_lrs[g] = yt__optimizer_initial_lr(s->opt, g);
    }
    s->last_epoch = -1;
    s->step_count = 0;
    if (yt__sched_lr_step(s, false, 0) != YT_OK) {
        yt_scheduler_release(s);
        return NULL;
    }
    return s;
}

void
yt_scheduler_release(yt_scheduler *s)
{
    if (s == NULL)
        return;
    if (s->kind->release_ctx != NULL)
        s->kind->release_ctx(s->ctx);
    yt_optimizer_release(s->opt);
    free(s->base_lrs);
    free(s->last_lrs);
    free(s);
}

/* ---------------------------------------------------------------- stepping */

yt_status
yt__sched_check_groups(const yt_scheduler *s, const char *fn)
{
    if (s->opt->n_groups != s->n_groups)
        return yt__fail_status(
            YT_ERR_STATE, "%s: %s was made for %d param group%s but the optimizer now has %d", fn,
            s->kind->name, s->n_groups, s->n_groups == 1 ? "" : "s", s->opt->n_groups);
    return YT_OK;
}

yt_status
yt__sched_lr_step(yt_scheduler *s, bool has_epoch, int64_t epoch)
{
    const int64_t next = has_epoch ? epoch : s->last_epoch + 1;
    if (s->kind->check_epoch != NULL && s->kind->check_epoch(s, next) != YT_OK)
        return yt__last_status();
    s->step_count++;
    s->last_epoch = next;
    const bool closed = has_epoch && s->kind->closed_form != NULL;
    /* Each group's lr depends only on that group, so computing and setting them one by one is
     * PyTorch's compute-all-then-set. */
    for (int g = 0; g < s->n_groups; g++) {
        double lr = closed ? s->kind->closed_form(s, g) : s->kind->get_lr(s, g);
        yt__optimizer_put_lr(s->opt, g, lr);
        s->last_lrs[g] = lr;
    }
    return YT_OK;
}

yt_status
yt_scheduler_step(yt_scheduler *s)
{
    static const char fn[] = "scheduler_step";
    if (s == NULL)
        return yt__fail_status(YT_ERR_VALUE, "%s: s is NULL", fn);
    if (yt__sched_check_groups(s, fn) != YT_OK)
        return yt__last_status();
    if (s->kind->step != NULL)
        return s->kind->step(s);
    if (s->kind->get_lr == NULL)
        return yt__fail_status(YT_ERR_VALUE, "%s: %s needs a metric: use yt_scheduler_step_metric",
                               fn, s->kind->name);
    return yt__sched_lr_step(s, false, 0);
}

yt_status
yt_scheduler_step_metric(yt_scheduler *s, double metric)
{
    static const char fn[] = "scheduler_step_metric";
    if (s == NULL)
        return yt__fail_status(YT_ERR_VALUE, "%s: s is NULL", fn);
    if (s->kind->step_metric == NULL)
        return yt__fail_status(YT_ERR_VALUE, "%s: %s does not take a metric: use yt_scheduler_step",
                               fn, s->kind->name);
    if (yt__sched_check_groups(s, fn) != YT_OK)
        return yt__last_status();
    return s->kind->step_metric(s, metric);
}

/* ---------------------------------------------------------------- accessors */

double
yt_scheduler_get_last_lr(const yt_scheduler *s, int group)
{
    if (s == NULL) {
        yt__fail_status(YT_ERR_VALUE, "scheduler_get_last_lr: s is NULL");
        return NAN;
    }
    if (group < 0 || group >= s->n_groups) {
        yt__fail_status(YT_ERR_VALUE,
                        "scheduler_get_last_lr: group=%d is out of range (the scheduler has %d)",
                        group, s->n_groups);
        return NAN;
    }
    return s->last_lrs[group];
}

int64_t
yt_scheduler_last_epoch(const yt_scheduler *s)
{
    return s != NULL ? s->last_epoch : -1;
}

const char *
yt_scheduler_name(const yt_scheduler *s)
{
    return s != NULL ? s->kind->name : "";
}

/* ---------------------------------------------------------------- state dicts */

yt_status
yt__sched_core_state(yt_scheduler *s, yt_named_tensors *out, const char *prefix, bool with_base)
{
    yt_status st = yt__optim_add_i64(out, s->last_epoch, "%slast_epoch", prefix);
    if (st == YT_OK && with_base)
        st = yt__optim_add_i64(out, s->step_count, "%sstep_count", prefix);
    for (int g = 0; st == YT_OK && with_base && g < s->n_groups; g++)
        st = yt__optim_add_f64(out, s->base_lrs[g], "%sbase_lr.%d", prefix, g);
    for (int g = 0; st == YT_OK && g < s->n_groups; g++)
        st = yt__optim_add_f64(out, s->last_lrs[g], "%slast_lr.%d", prefix, g);
    return st;
}

yt_status
yt__sched_state(yt_scheduler *s, yt_named_tensors *out, const char *prefix)
{
    if (s->kind->state_dict != NULL)
        return s->kind->state_dict(s, out, prefix);
    return yt__sched_core_state(s, out, prefix, true);
}

yt_status
yt_scheduler_state_dict(yt_scheduler *s, yt_named_tensors *out)
{
    if (s == NULL || out == NULL)
        return yt__fail_status(YT_ERR_VALUE, "scheduler_state_dict: %s is NULL",
                               s == NULL ? "s" : "out");
    return yt__sched_state(s, out, "");
}

static yt_tensor *
loader_entry(yt__sched_loader *ld, const char *prefix, const char *key, char *full, size_t cap)
{
    snprintf(full, cap, "%s%s", prefix, key);
    int64_t i = yt_named_tensors_find(ld->sd, full);
    if (i < 0)
        return yt__fail(YT_ERR_VALUE, "%s: the state dict has no '%s'", ld->fn, full);
    ld->used[i] = true;
    return ld->sd->tensors[i];
}

yt_status
yt__sched_read_f64(yt__sched_loader *ld, const char *prefix, const char *key, double *out)
{
    char full[256];
    if (loader_entry(ld, prefix, key, full, sizeof full) == NULL)
        return yt__last_status();
    return yt__optim_read_f64(ld->sd, full, ld->fn, out);
}

yt_status
yt__sched_read_i64(yt__sched_loader *ld, const char *prefix, const char *key, int64_t *out)
{
    char full[256];
    if (loader_entry(ld, prefix, key, full, sizeof full) == NULL)
        return yt__last_status();
    return yt__optim_read_i64(ld->sd, full, ld->fn, out);
}

yt_status
yt__sched_core_load(yt_scheduler *s, yt__sched_loader *ld, const char *prefix, bool with_base,
                    bool apply)
{
    int64_t last_epoch, step_count = 0;
    if (yt__sched_read_i64(ld, prefix, "last_epoch", &last_epoch) != YT_OK)
        return yt__last_status();
    if (last_epoch < -1)
        return yt__fail_status(YT_ERR_VALUE, "%s: '%slast_epoch'=%lld must be >= -1", ld->fn,
                               prefix, (long long)last_epoch);
    if (with_base) {
        if (yt__sched_read_i64(ld, prefix, "step_count", &step_count) != YT_OK)
            return yt__last_status();
        if (step_count < 0)
            return yt__fail_status(YT_ERR_VALUE, "%s: '%sstep_count'=%lld must be >= 0", ld->fn,
                                   prefix, (long long)step_count);
    }
    for (int g = 0; g < s->n_groups; g++) {
        char key[48];
        double base = 0, last;
        if (with_base) {
            snprintf(key, sizeof key, "base_lr.%d", g);
            if (yt__sched_read_f64(ld, prefix, key, &base) != YT_OK)
                return yt__last_status();
        }
        snprintf(key, sizeof key, "last_lr.%d", g);
        if (yt__sched_read_f64(ld, prefix, key, &last) != YT_OK)
            return yt__last_status();
        if (!isfinite(base) || !isfinite(last))
            return yt__fail_status(YT_ERR_VALUE,
                                   "%s: %s: the learning rates of group %d must be finite", ld->fn,
                                   s->kind->name, g);
        if (apply) {
            if (with_base)
                s->base_lrs[g] = base;
            s->last_lrs[g] = last;
        }
    }
    if (apply) {
        s->last_epoch = last_epoch;
        s->step_count = step_count;
    }
    return YT_OK;
}

yt_status
yt__sched_load(yt_scheduler *s, yt__sched_loader *ld, const char *prefix, bool apply)
{
    if (s->kind->load != NULL)
        return s->kind->load(s, ld, prefix, apply);
    return yt__sched_core_load(s, ld, prefix, true, apply);
}

yt_status
yt_scheduler_load_state_dict(yt_scheduler *s, const yt_named_tensors *sd)
{
    static const char fn[] = "scheduler_load_state_dict";
    if (s == NULL || sd == NULL)
        return yt__fail_status(YT_ERR_VALUE, "%s: %s is NULL", fn, s == NULL ? "s" : "sd");
    yt__sched_loader ld = {.sd = sd, .used = calloc((size_t)sd->count + 1, sizeof(bool)), .fn = fn};
    if (ld.used == NULL)
        return yt__fail_status(YT_ERR_NOMEM, "%s: out of memory", fn);
    yt_status st = yt__sched_load(s, &ld, "", false);
    for (int64_t i = 0; st == YT_OK && i < sd->count; i++)
        if (!ld.used[i])
            st = yt__fail_status(YT_ERR_VALUE, "%s: %s: unknown entry '%s'", fn, s->kind->name,
                                 sd->names[i]);
    if (st == YT_OK)
        st = yt__sched_load(s, &ld, "", true);
    free(ld.used);
    return st;
}
