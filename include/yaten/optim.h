/* Optimizers (SGD, Adam, AdamW, RMSprop, Adagrad), gradient clipping and learning-rate
 * schedulers, following torch.optim (1.13): the same update formulas in the same order, so
 * f32 and f64 runs agree with PyTorch to rounding. Included by <yaten.h>.
 *
 * An optimizer updates named parameters (a yt_named_tensors list, e.g. from
 * yt_module_parameters) in place, from the gradients autograd accumulated in them. Each update
 * is one fused loop over each parameter's data, outside autograd; it bumps the parameter's
 * version counter like an in-place op, so a graph that saved the old value refuses to
 * backpropagate through it.
 *
 * Parameters must be CPU, f32 or f64, contiguous leaves. The optimizer holds a reference to each
 * (and to its own state); it borrows nothing after the constructor returns.
 *
 * Ownership: an optimizer is reference counted (yt_optimizer_retain / yt_optimizer_release); a
 * scheduler holds a reference to its optimizer and is freed with yt_scheduler_release. */
#ifndef YATEN_OPTIM_H
#define YATEN_OPTIM_H

#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct yt_optimizer yt_optimizer;

/* ---------------------------------------------------------------- options
 * Every options struct starts with `lr`. Field names and meanings are torch.optim's. */

/* SGD. A zero-initialised struct plus an lr is PyTorch's default (SGD has no default lr):
 *   yt_sgd_options o = {.lr = 0.1, .momentum = 0.9};
 * Valid: lr >= 0, momentum >= 0, weight_decay >= 0; nesterov needs momentum > 0 and
 * dampening == 0. */
typedef struct yt_sgd_options {
    double lr, momentum, dampening, weight_decay;
    bool nesterov, maximize;
} yt_sgd_options;

/* Adam and AdamW. Valid: lr >= 0, 0 <= beta1, beta2 < 1, eps >= 0, weight_decay >= 0.
 * Adam adds weight_decay * param to the gradient (L2); AdamW decays the parameter itself
 * (param *= 1 - lr * weight_decay) before the update. */
typedef struct yt_adam_options {
    double lr, beta1, beta2, eps, weight_decay;
    bool amsgrad, maximize;
} yt_adam_options;
#define YT_ADAM_DEFAULTS                                                                           \
    {                                                                                              \
        .lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8                                      \
    }
#define YT_ADAMW_DEFAULTS                                                                          \
    {                                                                                              \
        .lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 1e-2                \
    }

/* RMSprop. Valid: lr, alpha, eps, weight_decay, momentum >= 0. */
typedef struct yt_rmsprop_options {
    double lr, alpha, eps, weight_decay, momentum;
    bool centered, maximize;
} yt_rmsprop_options;
#define YT_RMSPROP_DEFAULTS                                                                        \
    {                                                                                              \
        .lr = 1e-2, .alpha = 0.99, .eps = 1e-8                                                     \
    }

/* Adagrad. Valid: every value >= 0. The accumulator of each parameter starts at
 * initial_accumulator_value; the step's lr is lr / (1 + (step - 1) * lr_decay). */
typedef struct yt_adagrad_options {
    double lr, lr_decay, weight_decay, initial_accumulator_value, eps;
    bool maximize;
} yt_adagrad_options;
#define YT_ADAGRAD_DEFAULTS                                                                        \
    {                                                                                              \
        .lr = 1e-2, .eps = 1e-10                                                                   \
    }

/* ---------------------------------------------------------------- construction */

/* A new optimizer over `params` (one parameter group with options `o`).
 * `o` may be NULL for PyTorch's defaults (not for SGD, whose lr has no default).
 * Returns: a new optimizer (release with yt_optimizer_release), or NULL with the error set:
 * YT_ERR_VALUE for an invalid option, naming the constructor and the option
 * ("adam_new: beta2=1 must be in [0, 1)"), an empty or NULL list, a parameter that is the same
 * tensor as another; YT_ERR_DTYPE (not f32/f64), YT_ERR_DEVICE (not CPU), YT_ERR_STATE (not a
 * leaf), YT_ERR_SHAPE (not contiguous). */
YT_API yt_optimizer *yt_sgd_new(const yt_named_tensors *params, const yt_sgd_options *o);
YT_API yt_optimizer *yt_adam_new(const yt_named_tensors *params, const yt_adam_options *o);
YT_API yt_optimizer *yt_adamw_new(const yt_named_tensors *params, const yt_adam_options *o);
YT_API yt_optimizer *yt_rmsprop_new(const yt_named_tensors *params, const yt_rmsprop_options *o);
YT_API yt_optimizer *yt_adagrad_new(const yt_named_tensors *params, const yt_adagrad_options *o);

/* Adds a parameter group with its own options: `options` points to the optimizer kind's struct
 * (yt_sgd_options for SGD, yt_adam_options for Adam/AdamW, ...), or is NULL for the options
 * the optimizer was constructed with. Parameter names must be unique across all groups (they
 * key the state dict), and no tensor may be in two groups.
 * Errors: as the constructors; the optimizer is unchanged on error. */
YT_API yt_status yt_optimizer_add_param_group(yt_optimizer *opt, const yt_named_tensors *params,
                                              const void *options);

/* Adds a reference to `opt` and returns it (NULL gives NULL). */
YT_API yt_optimizer *yt_optimizer_retain(yt_optimizer *opt);
/* Drops a reference; at zero frees the optimizer, its state and its parameter references.
 * NULL is a no-op. */
YT_API void yt_optimizer_release(yt_optimizer *opt);

/* ---------------------------------------------------------------- training */

/* One update of every parameter that has a gradient (parameters without one are skipped, as in
 * PyTorch). Runs outside autograd, whatever the grad mode. State is allocated at a parameter's
 * first update; later steps allocate nothing (unless a gradient is non-contiguous or of another
 * dtype: it is then converted once per step).
 * Errors: YT_ERR_VALUE (NULL), YT_ERR_SHAPE (a gradient whose shape differs from its
 * parameter's), YT_ERR_DEVICE (a gradient not on the CPU), checked for every parameter before
 * any is modified; YT_ERR_NOMEM. */
YT_API yt_status yt_optimizer_step(yt_optimizer *opt);

/* Drops every parameter's gradient (PyTorch's zero_grad(set_to_none=True)). NULL is a no-op. */
YT_API void yt_optimizer_zero_grad(yt_optimizer *opt);

/* ---------------------------------------------------------------- groups and options */

YT_API int yt_optimizer_group_count(const yt_optimizer *opt);
/* "SGD", "Adam", "AdamW", "RMSprop", "Adagrad" (static string; "" for NULL). */
YT_API const char *yt_optimizer_name(const yt_optimizer *opt);

/* Learning rate of group `group`, or NAN with YT_ERR_VALUE (NULL, group out of range). */
YT_API double yt_optimizer_get_lr(const yt_optimizer *opt, int group);
/* Sets the learning rate of group `group`. Errors: YT_ERR_VALUE (NULL, group out of range,
 * lr negative or not finite). */
YT_API yt_status yt_optimizer_set_lr(yt_optimizer *opt, int group, double lr);

/* Copies group `group`'s options into `*options_out` (the kind's struct, of `size` bytes).
 * Errors: YT_ERR_VALUE (NULL, group out of range, size not the kind's struct size). */
YT_API yt_status yt_optimizer_get_options(const yt_optimizer *opt, int group, void *options_out,
                                          size_t size);
/* Replaces group `group`'s options (validated as in the constructor; the state is kept, and
 * buffers a new option needs, e.g. momentum, start as at a first step).
 * Errors: YT_ERR_VALUE (as get_options, or an invalid option). */
YT_API yt_status yt_optimizer_set_options(yt_optimizer *opt, int group, const void *options,
                                          size_t size);

/* Appends every parameter (all groups, in order) to `out`, under its name.
 * Errors: YT_ERR_VALUE (NULL), YT_ERR_NOMEM; on error `out` may hold some of them. */
YT_API yt_status yt_optimizer_parameters(const yt_optimizer *opt, yt_named_tensors *out);

/* ---------------------------------------------------------------- state
 * The state dict is a list of named tensors (0-d f64 for reals, 0-d i64 for counts and flags):
 *   group.<g>.lr, group.<g>.<option> ...        every option of every group
 *   group.<g>.initial_lr                          once a scheduler has set it
 *   state.<param>.step                            per parameter, once it was updated
 *   state.<param>.exp_avg, .exp_avg_sq, .max_exp_avg_sq (Adam, AdamW), .momentum_buffer (SGD,
 *   RMSprop), .square_avg, .grad_avg (RMSprop), .sum (Adagrad): copies, shaped like the param.
 * Keys use parameter names, not positions, so a state dict loads into an optimizer whose
 * parameters were listed in another order. */

/* Appends the state to `out` (new tensors: copies of the buffers, not aliases).
 * Errors: YT_ERR_VALUE (NULL; a name already in `out`), YT_ERR_NOMEM. */
YT_API yt_status yt_optimizer_state_dict(yt_optimizer *opt, yt_named_tensors *out);

/* Replaces the options of every group and the whole per-parameter state with the contents of
 * `sd` (copied; `sd` is borrowed). Parameters without entries in `sd` start afresh.
 * Everything is validated before anything changes, with an error naming the entry:
 * unknown keys, parameters the optimizer does not have, groups it does not have, missing
 * options or buffers, shapes and dtypes that differ from the parameter's, invalid values.
 * Errors: YT_ERR_VALUE, YT_ERR_SHAPE, YT_ERR_DTYPE, YT_ERR_NOMEM. */
YT_API yt_status yt_optimizer_load_state_dict(yt_optimizer *opt, const yt_named_tensors *sd);

/* ---------------------------------------------------------------- gradient clipping */

/* Scales the gradients of `params` (those that have one) so that their joint `norm_type`-norm
 * (norm_type > 0, or INFINITY for the largest magnitude) is at most max_norm, as
 * torch.nn.utils.clip_grad_norm_: coef = max_norm / (total + 1e-6), clamped to 1, multiplies
 * every gradient. Writes the total norm before clipping to `*total_norm` (may be NULL); 0
 * when no parameter has a gradient. The norm is accumulated in f64.
 * Errors: YT_ERR_VALUE (NULL params, max_norm negative or NaN, norm_type <= 0 or NaN). */
YT_API yt_status yt_clip_grad_norm(const yt_named_tensors *params, double max_norm,
                                   double norm_type, double *total_norm);

/* Clamps every gradient of `params` into [-clip, clip] in place.
 * Errors: YT_ERR_VALUE (NULL params, clip negative or NaN). */
YT_API yt_status yt_clip_grad_value(const yt_named_tensors *params, double clip);

/* ---------------------------------------------------------------- learning-rate schedulers
 * As torch.optim.lr_scheduler: a scheduler sets its optimizer's learning rates when created
 * (epoch 0) and at each yt_scheduler_step() (call it after yt_optimizer_step). The first
 * scheduler made for an optimizer records each group's lr as the group's initial_lr, which
 * later schedulers (and SequentialLR) start from. Each constructor returns a new scheduler
 * holding a reference to `opt`, or NULL with YT_ERR_VALUE naming the argument. */

typedef struct yt_scheduler yt_scheduler;

/* lr *= gamma every step_size steps. step_size >= 1, gamma > 0. */
YT_API yt_scheduler *yt_step_lr_new(yt_optimizer *opt, int64_t step_size, double gamma);
/* lr *= gamma at each milestone (a milestone listed k times multiplies by gamma^k).
 * milestones: n >= 0 values >= 0, in any order; gamma > 0. */
YT_API yt_scheduler *yt_multi_step_lr_new(yt_optimizer *opt, const int64_t *milestones, int n,
                                          double gamma);
/* lr *= gamma every step. gamma > 0. */
YT_API yt_scheduler *yt_exponential_lr_new(yt_optimizer *opt, double gamma);
/* Cosine from the initial lr down to eta_min over T_max steps (and back up after, as PyTorch).
 * T_max >= 1, eta_min finite. */
YT_API yt_scheduler *yt_cosine_annealing_lr_new(yt_optimizer *opt, int64_t T_max, double eta_min);
/* Linear warm-up: the factor on the initial lr goes from start_factor to end_factor over
 * total_iters steps. 0 < start_factor <= 1, 0 <= end_factor <= 1, total_iters >= 1. */
YT_API yt_scheduler *yt_linear_lr_new(yt_optimizer *opt, double start_factor, double end_factor,
                                      int64_t total_iters);

typedef enum yt_anneal_strategy { YT_ANNEAL_COS = 0, YT_ANNEAL_LINEAR } yt_anneal_strategy;
typedef struct yt_one_cycle_options {
    double max_lr;         /* peak lr of every group */
    const double *max_lrs; /* or one per group (borrowed; copied), NULL: max_lr for all */
    int64_t total_steps;   /* >= 1; stepping past it is an error */
    double pct_start;      /* fraction of the steps spent warming up, in [0, 1] */
    yt_anneal_strategy anneal_strategy;
    bool cycle_momentum; /* momentum (SGD, RMSprop) or beta1 (Adam) goes max -> base -> max */
    double base_momentum, max_momentum;
    double div_factor;       /* initial lr = max_lr / div_factor (> 0) */
    double final_div_factor; /* final lr = initial lr / final_div_factor (> 0) */
    bool three_phase;
} yt_one_cycle_options;
#define YT_ONE_CYCLE_DEFAULTS                                                                      \
    {                                                                                              \
        .pct_start = 0.3, .anneal_strategy = YT_ANNEAL_COS, .cycle_momentum = true,                \
        .base_momentum = 0.85, .max_momentum = 0.95, .div_factor = 25.0, .final_div_factor = 1e4   \
    }
/* The one-cycle policy (Smith): warm up to max_lr, anneal far below the initial lr. Errors also
 * when cycle_momentum is set and the optimizer has no momentum (Adagrad). */
YT_API yt_scheduler *yt_one_cycle_lr_new(yt_optimizer *opt, const yt_one_cycle_options *o);

typedef enum yt_plateau_mode { YT_PLATEAU_MIN = 0, YT_PLATEAU_MAX } yt_plateau_mode;
typedef enum yt_threshold_mode { YT_THRESHOLD_REL = 0, YT_THRESHOLD_ABS } yt_threshold_mode;
typedef struct yt_plateau_options {
    yt_plateau_mode mode; /* MIN: the metric should fall (a loss); MAX: rise (an accuracy) */
    double factor;        /* lr *= factor on a plateau; 0 < factor < 1 */
    int64_t patience;     /* steps without improvement tolerated, >= 0 */
    double threshold;     /* how much better counts as better, >= 0 */
    yt_threshold_mode threshold_mode;
    int64_t cooldown;      /* steps ignored after a reduction, >= 0 */
    double min_lr;         /* lower bound of every group's lr, >= 0 */
    const double *min_lrs; /* or one per group (borrowed; copied), NULL: min_lr for all */
    double eps;            /* reductions smaller than eps are skipped, >= 0 */
} yt_plateau_options;
#define YT_PLATEAU_DEFAULTS                                                                        \
    {                                                                                              \
        .mode = YT_PLATEAU_MIN, .factor = 0.1, .patience = 10, .threshold = 1e-4,                  \
        .threshold_mode = YT_THRESHOLD_REL, .eps = 1e-8                                            \
    }
/* ReduceLROnPlateau: step it with yt_scheduler_step_metric(s, metric). `o` NULL: defaults. */
YT_API yt_scheduler *yt_reduce_lr_on_plateau_new(yt_optimizer *opt, const yt_plateau_options *o);

/* SequentialLR: runs schedulers[0] until milestones[0], then schedulers[1] (restarted at its
 * epoch 0), and so on: e.g. a linear warm-up then cosine annealing. n >= 1 schedulers, all made
 * for `opt` (none a ReduceLROnPlateau or a SequentialLR), n - 1 increasing milestones >= 1.
 * Takes ownership of schedulers[0..n) in every case (they are released on error too, so
 * constructors can be nested in the call; NULL entries make it fail). */
YT_API yt_scheduler *yt_sequential_lr_new(yt_optimizer *opt, yt_scheduler *const *schedulers, int n,
                                          const int64_t *milestones);

/* Advances the schedule by one step and sets the optimizer's learning rates.
 * Errors: YT_ERR_VALUE (NULL; a ReduceLROnPlateau, which needs step_metric), YT_ERR_STATE (the
 * optimizer's group count changed since; a one-cycle schedule stepped past total_steps). */
YT_API yt_status yt_scheduler_step(yt_scheduler *s);
/* ReduceLROnPlateau's step with the epoch's metric. Errors: YT_ERR_VALUE (NULL; another kind),
 * YT_ERR_STATE (as yt_scheduler_step). */
YT_API yt_status yt_scheduler_step_metric(yt_scheduler *s, double metric);

/* The lr this scheduler last set for `group` (PyTorch's get_last_lr), or NAN with YT_ERR_VALUE. */
YT_API double yt_scheduler_get_last_lr(const yt_scheduler *s, int group);
/* Steps taken so far (PyTorch's last_epoch: 0 right after construction); -1 for NULL. */
YT_API int64_t yt_scheduler_last_epoch(const yt_scheduler *s);
/* "StepLR", "CosineAnnealingLR", ... (static string; "" for NULL). */
YT_API const char *yt_scheduler_name(const yt_scheduler *s);

/* Appends the schedule's position (0-d tensors): last_epoch, step_count, base_lr.<g>,
 * last_lr.<g>; for ReduceLROnPlateau last_epoch, last_lr.<g>, best, num_bad_epochs,
 * cooldown_counter; for SequentialLR last_epoch, last_lr.<g> and each scheduler's entries under
 * schedulers.<k>. The hyper-parameters are the constructor's and are not saved.
 * Errors: YT_ERR_VALUE (NULL; a name already in `out`), YT_ERR_NOMEM. */
YT_API yt_status yt_scheduler_state_dict(yt_scheduler *s, yt_named_tensors *out);
/* Restores a position saved by yt_scheduler_state_dict from a scheduler of the same kind and
 * group count (it does not change the optimizer: load the optimizer's state dict for that).
 * Errors: YT_ERR_VALUE naming the missing, unknown or invalid entry; nothing changes on error. */
YT_API yt_status yt_scheduler_load_state_dict(yt_scheduler *s, const yt_named_tensors *sd);

/* Frees the scheduler (and, for SequentialLR, the schedulers it owns) and drops its optimizer
 * reference. NULL is a no-op. */
YT_API void yt_scheduler_release(yt_scheduler *s);

#ifdef __cplusplus
}
#endif

#endif
