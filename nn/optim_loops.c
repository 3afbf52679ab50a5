/* The fused updates of the optimizer kinds: the per-step scalars are computed here in double, as
 * torch.optim computes them in Python, then one typed loop (optim_loops_impl.h) updates the
 * parameter and its buffers in a single pass. Built with -fno-math-errno (Makefile) so the
 * square roots vectorise; explicit fma() calls are the only contractions (C11 mode keeps GCC
 * from fusing anything else). */
#include <math.h>

#include "optim_internal.h"

typedef struct sgd_consts {
    double weight_decay, momentum, one_minus_dampening, neg_lr;
    bool maximize, nesterov;
} sgd_consts;

typedef struct adam_consts {
    double weight_decay, param_scale, beta1, beta2, one_minus_beta1, one_minus_beta2;
    double bias_correction2_sqrt, eps, neg_step_size;
    bool maximize, l2; /* l2: Adam's coupled decay; otherwise AdamW's param_scale */
} adam_consts;

typedef struct rmsprop_consts {
    double weight_decay, alpha, one_minus_alpha, eps, momentum, neg_lr;
    bool maximize;
} rmsprop_consts;

typedef struct adagrad_consts {
    double weight_decay, eps, neg_clr;
    bool maximize;
} adagrad_consts;

#define NT     float
#define FN(fn) fn##_f32
#define FMA    fmaf
#define SQRT   sqrtf
#include "optim_loops_impl.h"
#undef NT
#undef FN
#undef FMA
#undef SQRT

#define NT     double
#define FN(fn) fn##_f64
#define FMA    fma
#define SQRT   sqrt
#include "optim_loops_impl.h"
#undef NT
#undef FN
#undef FMA
#undef SQRT

void
yt__optim_sgd_update(const void *options, const yt__optim_update *u)
{
    const yt_sgd_options *o = options;
    const sgd_consts c = {
        .weight_decay = o->weight_decay,
        .momentum = o->momentum,
        .one_minus_dampening = 1 - o->dampening,
        .neg_lr = -o->lr,
        .maximize = o->maximize,
        .nesterov = o->nesterov,
    };
    if (u->dtype == YT_DTYPE_F32)
        sgd_f32(&c, u);
    else
        sgd_f64(&c, u);
}

/* torch: bias_correction1 = 1 - beta1 ** step; step_size = lr / bias_correction1;
 * bias_correction2_sqrt = math.sqrt(1 - beta2 ** step). */
static void
adam_update(const yt_adam_options *o, const yt__optim_update *u, bool l2)
{
    const double step = (double)u->step;
    const double bias_correction1 = 1 - pow(o->beta1, step);
    const double bias_correction2 = 1 - pow(o->beta2, step);
    const adam_consts c = {
        .weight_decay = o->weight_decay,
        .param_scale = 1 - o->lr * o->weight_decay,
        .beta1 = o->beta1,
        .beta2 = o->beta2,
        .one_minus_beta1 = 1 - o->beta1,
        .one_minus_beta2 = 1 - o->beta2,
        .bias_correction2_sqrt = sqrt(bias_correction2),
        .eps = o->eps,
        .neg_step_size = -(o->lr / bias_correction1),
        .maximize = o->maximize,
        .l2 = l2,
    };
    if (u->dtype == YT_DTYPE_F32)
        adam_f32(&c, u);
    else
        adam_f64(&c, u);
}

void
yt__optim_adam_update(const void *options, const yt__optim_update *u)
{
    adam_update(options, u, true);
}

void
yt__optim_adamw_update(const void *options, const yt__optim_update *u)
{
    adam_update(options, u, false);
}

void
yt__optim_rmsprop_update(const void *options, const yt__optim_update *u)
{
    const yt_rmsprop_options *o = options;
    const rmsprop_consts c = {
        .weight_decay = o->weight_decay,
        .alpha = o->alpha,
        .one_minus_alpha = 1 - o->alpha,
        .eps = o->eps,
        .momentum = o->momentum,
        .neg_lr = -o->lr,
        .maximize = o->maximize,
    };
    if (u->dtype == YT_DTYPE_F32)
        rmsprop_f32(&c, u);
    else
        rmsprop_f64(&c, u);
}

/* torch: clr = lr / (1 + (step - 1) * lr_decay). */
void
yt__optim_adagrad_update(const void *options, const yt__optim_update *u)
{
    const yt_adagrad_options *o = options;
    const adagrad_consts c = {
        .weight_decay = o->weight_decay,
        .eps = o->eps,
        .neg_clr = -(o->lr / (1 + ((double)u->step - 1) * o->lr_decay)),
        .maximize = o->maximize,
    };
    if (u->dtype == YT_DTYPE_F32)
        adagrad_f32(&c, u);
    else
        adagrad_f64(&c, u);
}
