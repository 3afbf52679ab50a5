/* Internal contract between the scheduler core (lr_scheduler.c) and the schedulers defined in
 * lr_scheduler_*.c. Not installed.
 *
 * The core is PyTorch's _LRScheduler: last_epoch and step_count, base_lrs taken from each
 * group's initial_lr, an initial step at construction, and a step that sets every group's lr
 * from the kind's chainable get_lr (or its closed form when an epoch is given, which only
 * SequentialLR does, at its milestones). */
#ifndef YT_LR_SCHEDULER_INTERNAL_H
#define YT_LR_SCHEDULER_INTERNAL_H

#include "optim_internal.h"

/* Reads entries of a state dict for one scheduler (keys are prefix + key), marking what it
 * reads so the top-level load can reject entries nobody read. */
typedef struct yt__sched_loader {
    const yt_named_tensors *sd;
    bool *used; /* [sd->count] */
    const char *fn;
} yt__sched_loader;

typedef struct yt__sched_kind {
    const char *name; /* "StepLR" */
    /* The lr of group g at s->last_epoch, from the group's current lr (PyTorch's get_lr). May set
     * other group options (one-cycle sets the momentum). NULL: not an epoch-based scheduler
     * (ReduceLROnPlateau, SequentialLR: they have their own step). */
    double (*get_lr)(yt_scheduler *s, int g);
    /* The lr of group g at s->last_epoch from base_lrs alone, or NULL when there is none. */
    double (*closed_form)(const yt_scheduler *s, int g);
    /* Refuses a step to `epoch` (one-cycle past total_steps), or NULL. */
    yt_status (*check_epoch)(const yt_scheduler *s, int64_t epoch);
    /* Steps of schedulers that are not driven by get_lr. */
    yt_status (*step)(yt_scheduler *s);
    yt_status (*step_metric)(yt_scheduler *s, double metric);
    /* State beyond the core's (NULL: none). `load` validates (apply false) or applies (apply
     * true, after a successful validation: then it cannot fail). */
    yt_status (*state_dict)(yt_scheduler *s, yt_named_tensors *out, const char *prefix);
    yt_status (*load)(yt_scheduler *s, yt__sched_loader *ld, const char *prefix, bool apply);
    void (*release_ctx)(void *ctx);
} yt__sched_kind;

struct yt_scheduler {
    const yt__sched_kind *kind;
    yt_optimizer *opt; /* strong reference */
    int n_groups;      /* the optimizer's group count when the scheduler was made */
    int64_t last_epoch;
    int64_t step_count;
    double *base_lrs; /* [n_groups] */
    double *last_lrs; /* [n_groups] */
    void *ctx;        /* the kind's, freed by release_ctx */
};

/* A scheduler of `kind` for `opt` (retained) with `ctx` (owned: released with the scheduler, or
 * right away on error), before its initial step. Errors name `fn`. */
YT_INTERNAL yt_scheduler *yt__sched_alloc(const yt__sched_kind *kind, yt_optimizer *opt, void *ctx,
                                          const char *fn);
/* PyTorch's _LRScheduler.__init__ with last_epoch=-1: records each group's initial_lr where
 * unset, takes base_lrs from them, and performs the initial step (epoch 0). Releases `s` and
 * returns NULL on error. */
YT_INTERNAL yt_scheduler *yt__sched_start(yt_scheduler *s);
/* _LRScheduler.step(): with has_epoch, last_epoch = epoch and the closed form when the kind has
 * one; otherwise last_epoch + 1 and get_lr. */
YT_INTERNAL yt_status yt__sched_lr_step(yt_scheduler *s, bool has_epoch, int64_t epoch);
/* Checks that the optimizer still has the scheduler's group count. */
YT_INTERNAL yt_status yt__sched_check_groups(const yt_scheduler *s, const char *fn);
/* Records "<fn>: opt is NULL" etc. for constructors: YT_OK when `opt` is usable. */
YT_INTERNAL yt_status yt__sched_check_opt(const yt_optimizer *opt, const char *fn);

/* State-dict reading for kinds: prefix + key must exist (marked used). */
YT_INTERNAL yt_status yt__sched_read_f64(yt__sched_loader *ld, const char *prefix, const char *key,
                                         double *out);
YT_INTERNAL yt_status yt__sched_read_i64(yt__sched_loader *ld, const char *prefix, const char *key,
                                         int64_t *out);
/* The core's part of a state dict: last_epoch, step_count, base_lr.<g>, last_lr.<g>. */
YT_INTERNAL yt_status yt__sched_core_state(yt_scheduler *s, yt_named_tensors *out,
                                           const char *prefix, bool with_base);
YT_INTERNAL yt_status yt__sched_core_load(yt_scheduler *s, yt__sched_loader *ld, const char *prefix,
                                          bool with_base, bool apply);
/* Validates (apply false) or applies one scheduler's state under `prefix`. */
YT_INTERNAL yt_status yt__sched_load(yt_scheduler *s, yt__sched_loader *ld, const char *prefix,
                                     bool apply);
/* Appends one scheduler's state under `prefix`. */
YT_INTERNAL yt_status yt__sched_state(yt_scheduler *s, yt_named_tensors *out, const char *prefix);

/* Python's floor division and modulo (b > 0), which PyTorch's formulas use. */
static inline int64_t
yt__floordiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

static inline int64_t
yt__pymod(int64_t a, int64_t b)
{
    int64_t r = a % b;
    return r < 0 ? r + b : r;
}

#endif
