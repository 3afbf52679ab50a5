/* Internal contract between the optimizer core (optimizer.c, optimizer_state.c), the optimizer
 * kinds (optim_sgd.c, optim_adam.c, ...), their fused update loops (optim_loops.c) and the
 * learning-rate schedulers. Not installed. */
#ifndef YT_OPTIM_INTERNAL_H
#define YT_OPTIM_INTERNAL_H

#include <stdatomic.h>

#include "internal.h"

/* Most per-parameter buffers a kind keeps (Adam: exp_avg, exp_avg_sq, max_exp_avg_sq). */
enum { YT__OPTIM_MAX_SLOTS = 3 };

/* One field of a kind's options struct, for validation messages and state dicts. */
typedef struct yt__optim_field {
    const char *name; /* "lr", "momentum", "nesterov" */
    size_t offset;    /* offsetof in the options struct */
    bool is_flag;     /* bool field (saved as i64 0/1); otherwise double */
} yt__optim_field;

/* What one update of one parameter (or a chunk of it) works on: contiguous arrays of `n`
 * elements of `dtype`, and the parameter's step count after this step's increment. */
typedef struct yt__optim_update {
    yt_dtype dtype; /* f32 or f64 */
    int64_t n;
    int64_t step;
    void *param;
    const void *grad;
    void *slot[YT__OPTIM_MAX_SLOTS]; /* NULL where the group's options do not use the slot */
    bool fresh[YT__OPTIM_MAX_SLOTS]; /* allocated for this step and not yet initialised */
} yt__optim_update;

typedef struct yt__optim_kind {
    const char *name; /* "SGD": messages and yt_optimizer_name */
    const char *ctor; /* "sgd_new": messages of the constructor */
    size_t options_size;
    const yt__optim_field *fields; /* fields[0] is lr, at offset 0 */
    int n_fields;
    const char *const *slots; /* per-parameter buffer names, as torch's state keys */
    int n_slots;
    bool has_step; /* keeps a per-parameter step count (state.<p>.step) */
    /* Offset of the field one-cycle scheduling cycles (momentum, beta1), or -1 for none. */
    ptrdiff_t momentum_offset;
    /* Checks options; on error records "<fn>: <field>=<value> must be ..." and returns it. */
    yt_status (*validate)(const void *options, const char *fn);
    /* Whether the update with these options uses slot `i`, and whether a loaded state that has
     * a step must hold it (SGD's momentum buffer may be missing: it then restarts). */
    bool (*slot_used)(const void *options, int i);
    bool (*slot_required)(const void *options, int i);
    /* The value a new slot starts at, or NAN for "a copy of the first update's direction"
     * (SGD's momentum buffer), which the update writes itself when fresh[i] is set. */
    double (*slot_init)(const void *options, int i);
    /* The fused update of u->n elements (see optim_loops.c). */
    void (*update)(const void *options, const yt__optim_update *u);
} yt__optim_kind;

/* One parameter and its state. */
typedef struct yt__optim_param {
    char *name;
    yt_tensor *tensor; /* strong reference */
    int group;
    bool has_state; /* updated at least once, or loaded */
    int64_t step;
    yt_tensor *slot[YT__OPTIM_MAX_SLOTS]; /* strong references, NULL until needed */
} yt__optim_param;

/* One parameter's update in a step (the step's scratch, kept by the optimizer). */
typedef struct yt__optim_work {
    yt__optim_update u;
    const void *options;
    int64_t param_index;
    yt_tensor *cast; /* the gradient converted to the parameter's layout and dtype, or NULL */
} yt__optim_work;

typedef struct yt__optim_group {
    void *options;     /* kind->options_size bytes, owned */
    double initial_lr; /* NAN until a scheduler records it */
} yt__optim_group;

struct yt_optimizer {
    atomic_int_fast64_t refcount;
    const yt__optim_kind *kind;
    void *defaults; /* the constructor's options, for add_param_group(NULL) */
    yt__optim_group *groups;
    int n_groups;
    yt__optim_param *params;
    int64_t n_params;
    yt__optim_work *work; /* [n_params]: a step's work items */
    int64_t *chunk_start; /* [n_params + 1]: first chunk of each work item */
};

/* The kinds (optim_sgd.c, optim_adam.c, optim_rmsprop.c, optim_adagrad.c). */
extern const yt__optim_kind yt__optim_sgd, yt__optim_adam, yt__optim_adamw, yt__optim_rmsprop,
    yt__optim_adagrad;

/* Fused updates (optim_loops.c), one per kind, following torch.optim's single-tensor code. */
YT_INTERNAL void yt__optim_sgd_update(const void *options, const yt__optim_update *u);
YT_INTERNAL void yt__optim_adam_update(const void *options, const yt__optim_update *u);
YT_INTERNAL void yt__optim_adamw_update(const void *options, const yt__optim_update *u);
YT_INTERNAL void yt__optim_rmsprop_update(const void *options, const yt__optim_update *u);
YT_INTERNAL void yt__optim_adagrad_update(const void *options, const yt__optim_update *u);

/* A new optimizer of `kind` over `params` with `options` (NULL: `defaults`, or an error naming
 * the constructor when `defaults` is NULL). */
YT_INTERNAL yt_optimizer *yt__optimizer_new(const yt__optim_kind *kind,
                                            const yt_named_tensors *params, const void *options,
                                            const void *defaults);

/* Field value helpers for the kinds. */
static inline double
yt__optim_real(const void *options, size_t offset)
{
    return *(const double *)((const char *)options + offset);
}

/* Records "<fn>: <name>=<value> must be <what>" (YT_ERR_VALUE) and returns it. */
YT_INTERNAL yt_status yt__optim_bad_option(const char *fn, const char *name, double value,
                                           const char *what);
/* Checks that every real field of `options` is finite (NaN and infinities are never valid
 * hyper-parameters); records the error as yt__optim_bad_option. */
YT_INTERNAL yt_status yt__optim_check_finite(const yt__optim_kind *kind, const void *options,
                                             const char *fn);

/* Scalar state as 0-d tensors, outside any user scope (state_dict, schedulers). */
YT_INTERNAL yt_tensor *yt__optim_scalar_f64(double v);
YT_INTERNAL yt_tensor *yt__optim_scalar_i64(int64_t v);
/* Adds a 0-d f64 / i64 tensor named printf(fmt, ...) to `out`. */
YT_INTERNAL yt_status yt__optim_add_f64(yt_named_tensors *out, double v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
YT_INTERNAL yt_status yt__optim_add_i64(yt_named_tensors *out, int64_t v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Reads the 0-d tensor named `key` of `sd` as a real (any floating dtype) or as an integer (any
 * integral dtype). Errors name `fn` and the key: missing, not 0-d, wrong kind of dtype. */
YT_INTERNAL yt_status yt__optim_read_f64(const yt_named_tensors *sd, const char *key,
                                         const char *fn, double *out);
YT_INTERNAL yt_status yt__optim_read_i64(const yt_named_tensors *sd, const char *key,
                                         const char *fn, int64_t *out);

/* Scheduler support: a group's initial_lr (NAN when unset) and the field one-cycle cycles.
 * The caller has checked the group index. */
YT_INTERNAL double yt__optimizer_initial_lr(const yt_optimizer *opt, int group);
YT_INTERNAL void yt__optimizer_set_initial_lr(yt_optimizer *opt, int group, double lr);
YT_INTERNAL bool yt__optimizer_has_momentum(const yt_optimizer *opt);
YT_INTERNAL double yt__optimizer_momentum(const yt_optimizer *opt, int group);
YT_INTERNAL void yt__optimizer_set_momentum(yt_optimizer *opt, int group, double m);
/* Sets a group's lr without validation (schedulers compute it; PyTorch does not check). */
YT_INTERNAL void yt__optimizer_put_lr(yt_optimizer *opt, int group, double lr);

#endif
