/* Learning-rate schedulers: argument validation, the first values of each schedule, misuse
 * (step vs step_metric, stepping past one-cycle's end, groups added later), ownership
 * (SequentialLR and nested constructors, schedulers outliving their optimizer's last user
 * reference) and state dicts that resume a schedule exactly. The full sequences are compared
 * with PyTorch in tests/optim/test_optim_vs_torch.py. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "test_util.h"

/* An SGD optimizer (momentum 0.9) with one group per lr, each holding one scalar parameter. */
static yt_optimizer *
sgd(int n_groups, const double *lrs)
{
    yt_optimizer *opt = NULL;
    for (int g = 0; g < n_groups; g++) {
        yt_named_tensors ps = YT_NAMED_TENSORS_INIT;
        char name[8] = {'p', (char)('0' + g), 0};
        yt_tensor *t = yt_scalar_tensor(yt_float(1), YT_DTYPE_F64);
        yt_named_tensors_add(&ps, name, t);
        yt_release(t);
        const yt_sgd_options o = {.lr = lrs[g], .momentum = 0.9};
        if (g == 0)
            opt = yt_sgd_new(&ps, &o);
        else
            cr_assert_eq(yt_optimizer_add_param_group(opt, &ps, &o), YT_OK, "%s", yt_errmsg());
        cr_assert_not_null(opt, "%s", yt_errmsg());
        yt_named_tensors_clear(&ps);
    }
    return opt;
}

static void
expect_lrs(yt_scheduler *s, yt_optimizer *opt, const double *want, int n)
{
    for (int i = 0; i < n; i++) {
        if (i > 0)
            cr_assert_eq(yt_scheduler_step(s), YT_OK, "%s", yt_errmsg());
        double lr = yt_optimizer_get_lr(opt, 0);
        cr_assert(fabs(lr - want[i]) <= 1e-15 * fabs(want[i]), "step %d: lr %.17g, expected %.17g",
                  i, lr, want[i]);
        cr_assert_eq(yt_scheduler_get_last_lr(s, 0), lr);
        cr_assert_eq(yt_scheduler_last_epoch(s), i);
    }
}

Test(sched, first_values)
{
    const double lr[1] = {1.0};
    yt_optimizer *opt = sgd(1, lr);
    yt_scheduler *s = yt_step_lr_new(opt, 2, 0.5);
    cr_assert_not_null(s, "%s", yt_errmsg());
    cr_assert_str_eq(yt_scheduler_name(s), "StepLR");
    const double step[6] = {1, 1, 0.5, 0.5, 0.25, 0.25};
    expect_lrs(s, opt, step, 6);
    yt_scheduler_release(s);

    /* chainable forms scale the group's current lr, as PyTorch's get_lr does */
    cr_assert_eq(yt_optimizer_set_lr(opt, 0, 1.0), YT_OK);
    s = yt_linear_lr_new(opt, 0.5, 1.0, 2);
    const double lin[4] = {0.5, 0.75, 1.0, 1.0};
    expect_lrs(s, opt, lin, 4);
    yt_scheduler_release(s);

    const int64_t ms[3] = {3, 1, 3};
    s = yt_multi_step_lr_new(opt, ms, 3, 0.5);
    const double multi[5] = {1.0, 0.5, 0.5, 0.125, 0.125};
    expect_lrs(s, opt, multi, 5);
    yt_scheduler_release(s);
    yt_optimizer_release(opt);
    YT_ASSERT_NO_LEAKS();
}

Test(sched, constructor_errors)
{
    const double lr[1] = {0.1};
    yt_optimizer *opt = sgd(1, lr);
    cr_assert_null(yt_step_lr_new(NULL, 1, 0.1));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "step_lr_new: opt is NULL");
    cr_assert_null(yt_step_lr_new(opt, 0, 0.1));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "step_lr_new: step_size=0 must be >= 1");
    cr_assert_null(yt_step_lr_new(opt, 3, 0));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "step_lr_new: gamma=0 must be finite and > 0");
    const int64_t bad_ms[2] = {5, -1};
    cr_assert_null(yt_multi_step_lr_new(opt, bad_ms, 2, 0.1));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "multi_step_lr_new: milestones[1]=-1 must be >= 0");
    cr_assert_null(yt_exponential_lr_new(opt, NAN));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "exponential_lr_new: gamma=nan must be finite and > 0");
    cr_assert_null(yt_cosine_annealing_lr_new(opt, 0, 0));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "cosine_annealing_lr_new: T_max=0 must be >= 1");
    cr_assert_null(yt_linear_lr_new(opt, 0, 1, 5));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "linear_lr_new: start_factor=0 must be in (0, 1]");
    cr_assert_null(yt_linear_lr_new(opt, 0.5, 1.5, 5));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "linear_lr_new: end_factor=1.5 must be in [0, 1]");

    yt_one_cycle_options oc = YT_ONE_CYCLE_DEFAULTS;
    oc.max_lr = 0.1;
    cr_assert_null(yt_one_cycle_lr_new(opt, &oc));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "one_cycle_lr_new: total_steps=0 must be >= 1");
    oc.total_steps = 10;
    oc.pct_start = 0.1; /* warm-up phase ends at step 0: PyTorch divides by zero */
    cr_assert_null(yt_one_cycle_lr_new(opt, &oc));
    YT_ASSERT_ERROR(YT_ERR_VALUE,
                    "one_cycle_lr_new: pct_start=0.1 with total_steps=10 leaves phase 1 of the "
                    "cycle without steps");
    oc.pct_start = 1.5;
    cr_assert_null(yt_one_cycle_lr_new(opt, &oc));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "one_cycle_lr_new: pct_start=1.5 must be in [0, 1]");
    cr_assert_null(yt_one_cycle_lr_new(opt, NULL));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "one_cycle_lr_new: o is NULL");

    yt_plateau_options po = YT_PLATEAU_DEFAULTS;
    po.factor = 1.0;
    cr_assert_null(yt_reduce_lr_on_plateau_new(opt, &po));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "reduce_lr_on_plateau_new: factor=1 must be in (0, 1)");
    po = (yt_plateau_options)YT_PLATEAU_DEFAULTS;
    po.mode = (yt_plateau_mode)7;
    cr_assert_null(yt_reduce_lr_on_plateau_new(opt, &po));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "reduce_lr_on_plateau_new: mode=7 is neither");
    po = (yt_plateau_options)YT_PLATEAU_DEFAULTS;
    po.patience = -1;
    cr_assert_null(yt_reduce_lr_on_plateau_new(opt, &po));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "reduce_lr_on_plateau_new: patience=-1 must be >= 0");
    /* nothing above touched the optimizer */
    cr_assert_eq(yt_optimizer_get_lr(opt, 0), 0.1);
    yt_optimizer_release(opt);

    /* one-cycle needs momentum or beta1 unless cycle_momentum is off */
    yt_tensor *t = yt_scalar_tensor(yt_float(1), YT_DTYPE_F64);
    yt_named_tensors ps = YT_NAMED_TENSORS_INIT;
    yt_named_tensors_add(&ps, "p", t);
    yt_release(t);
    yt_optimizer *ada = yt_adagrad_new(&ps, NULL);
    oc = (yt_one_cycle_options)YT_ONE_CYCLE_DEFAULTS;
    oc.max_lr = 0.1;
    oc.total_steps = 100;
    cr_assert_null(yt_one_cycle_lr_new(ada, &oc));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "one_cycle_lr_new: cycle_momentum needs an optimizer with "
                                  "momentum or beta1, and Adagrad has neither");
    oc.cycle_momentum = false;
    yt_scheduler *s = yt_one_cycle_lr_new(ada, &oc);
    cr_assert_not_null(s, "%s", yt_errmsg());
    /* max_lr / div_factor through the cosine annealing at pct 0: PyTorch 1.13 gives exactly this */
    cr_assert_eq(yt_optimizer_get_lr(ada, 0), 0.0040000000000000036, "%.17g",
                 yt_optimizer_get_lr(ada, 0));
    yt_scheduler_release(s);
    yt_optimizer_release(ada);
    yt_named_tensors_clear(&ps);
    YT_ASSERT_NO_LEAKS();
}

Test(sched, misuse)
{
    const double lrs[2] = {0.1, 0.01};
    yt_optimizer *opt = sgd(1, lrs);
    yt_scheduler *plateau = yt_reduce_lr_on_plateau_new(opt, NULL);
    cr_assert_eq(yt_scheduler_step(plateau), YT_ERR_VALUE);
    YT_ASSERT_ERROR(
        YT_ERR_VALUE,
        "scheduler_step: ReduceLROnPlateau needs a metric: use yt_scheduler_step_metric");
    yt_scheduler *step = yt_step_lr_new(opt, 1, 0.5);
    cr_assert_eq(yt_scheduler_step_metric(step, 1.0), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE,
                    "scheduler_step_metric: StepLR does not take a metric: use yt_scheduler_step");
    cr_assert_eq(yt_scheduler_step(NULL), YT_ERR_VALUE);
    cr_assert(isnan(yt_scheduler_get_last_lr(step, 1)));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "scheduler_get_last_lr: group=1 is out of range");

    /* a group added after the scheduler was made */
    yt_tensor *t = yt_scalar_tensor(yt_float(1), YT_DTYPE_F64);
    yt_named_tensors ps = YT_NAMED_TENSORS_INIT;
    yt_named_tensors_add(&ps, "q", t);
    yt_release(t);
    cr_assert_eq(yt_optimizer_add_param_group(opt, &ps, NULL), YT_OK);
    cr_assert_eq(yt_scheduler_step(step), YT_ERR_STATE);
    YT_ASSERT_ERROR(
        YT_ERR_STATE,
        "scheduler_step: StepLR was made for 1 param group but the optimizer now has 2");
    yt_named_tensors_clear(&ps);
    yt_scheduler_release(step);
    yt_scheduler_release(plateau);

    /* one-cycle refuses to step past total_steps, and stays where it was */
    yt_one_cycle_options oc = YT_ONE_CYCLE_DEFAULTS;
    oc.max_lr = 1.0;
    oc.total_steps = 4;
    oc.pct_start = 0.5;
    yt_scheduler *cyc = yt_one_cycle_lr_new(opt, &oc);
    cr_assert_not_null(cyc, "%s", yt_errmsg());
    for (int i = 0; i < 4; i++)
        cr_assert_eq(yt_scheduler_step(cyc), YT_OK, "%s", yt_errmsg());
    double lr = yt_optimizer_get_lr(opt, 0);
    cr_assert_eq(yt_scheduler_step(cyc), YT_ERR_STATE);
    YT_ASSERT_ERROR(YT_ERR_STATE, "scheduler_step: OneCycleLR stepped 6 times but total_steps=4");
    cr_assert_eq(yt_optimizer_get_lr(opt, 0), lr);
    cr_assert_eq(yt_scheduler_last_epoch(cyc), 4);
    yt_scheduler_release(cyc);
    yt_optimizer_release(opt);
    YT_ASSERT_NO_LEAKS();
}

Test(sched, sequential_ownership)
{
    const double lr[1] = {1.0};
    yt_optimizer *opt = sgd(1, lr);
    const int64_t ms[1] = {3};
    /* a failing nested constructor: the other scheduler is released, its error survives */
    yt_scheduler *s = yt_sequential_lr_new(
        opt,
        (yt_scheduler *[]){yt_linear_lr_new(opt, 0.5, 1, 3), yt_cosine_annealing_lr_new(opt, 0, 0)},
        2, ms);
    cr_assert_null(s);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "cosine_annealing_lr_new: T_max=0 must be >= 1");
    /* plateau and a scheduler of another optimizer cannot be sequenced */
    yt_optimizer *other = sgd(1, lr);
    s = yt_sequential_lr_new(opt, (yt_scheduler *[]){yt_reduce_lr_on_plateau_new(opt, NULL)}, 1,
                             NULL);
    cr_assert_null(s);
    YT_ASSERT_ERROR(
        YT_ERR_VALUE,
        "sequential_lr_new: schedulers[0] is a ReduceLROnPlateau, which cannot be sequenced");
    s = yt_sequential_lr_new(
        opt, (yt_scheduler *[]){yt_step_lr_new(opt, 1, 0.5), yt_step_lr_new(other, 1, 0.5)}, 2, ms);
    cr_assert_null(s);
    YT_ASSERT_ERROR(YT_ERR_VALUE,
                    "sequential_lr_new: schedulers[1] (StepLR) belongs to another optimizer");
    const int64_t bad_ms[2] = {4, 4};
    s = yt_sequential_lr_new(opt,
                             (yt_scheduler *[]){yt_step_lr_new(opt, 1, 0.5),
                                                yt_step_lr_new(opt, 1, 0.5),
                                                yt_step_lr_new(opt, 1, 0.5)},
                             3, bad_ms);
    cr_assert_null(s);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "sequential_lr_new: milestones[1]=4 must be >= 1 and greater");
    yt_optimizer_release(other);

    /* warm-up then cosine; the scheduler keeps the optimizer alive */
    s = yt_sequential_lr_new(
        opt,
        (yt_scheduler *[]){yt_linear_lr_new(opt, 0.5, 1, 3), yt_cosine_annealing_lr_new(opt, 4, 0)},
        2, ms);
    cr_assert_not_null(s, "%s", yt_errmsg());
    cr_assert_str_eq(yt_scheduler_name(s), "SequentialLR");
    yt_optimizer_release(opt); /* the scheduler's reference remains */
    const double want[8] = {0.5,
                            2.0 / 3,
                            5.0 / 6,
                            1.0,
                            1.0 * (1 + cos(M_PI / 4)) / 2,
                            (1 + cos(M_PI / 2)) / 2,
                            (1 + cos(3 * M_PI / 4)) / 2,
                            0};
    for (int i = 0; i < 8; i++) {
        if (i > 0)
            cr_assert_eq(yt_scheduler_step(s), YT_OK, "%s", yt_errmsg());
        double got = yt_scheduler_get_last_lr(s, 0);
        cr_assert(fabs(got - want[i]) < 1e-15, "step %d: %.17g, expected %.17g", i, got, want[i]);
    }
    yt_scheduler_release(s);
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- state dicts */

typedef yt_scheduler *(*make_sched)(yt_optimizer *opt);

static yt_scheduler *
make_step(yt_optimizer *opt)
{
    return yt_step_lr_new(opt, 3, 0.5);
}

static yt_scheduler *
make_cosine(yt_optimizer *opt)
{
    return yt_cosine_annealing_lr_new(opt, 7, 0.001);
}

static yt_scheduler *
make_one_cycle(yt_optimizer *opt)
{
    yt_one_cycle_options oc = YT_ONE_CYCLE_DEFAULTS;
    oc.max_lr = 0.5;
    oc.total_steps = 20;
    oc.three_phase = true;
    return yt_one_cycle_lr_new(opt, &oc);
}

static yt_scheduler *
make_plateau(yt_optimizer *opt)
{
    yt_plateau_options po = YT_PLATEAU_DEFAULTS;
    po.patience = 1;
    po.cooldown = 1;
    po.factor = 0.5;
    return yt_reduce_lr_on_plateau_new(opt, &po);
}

static yt_scheduler *
make_sequential(yt_optimizer *opt)
{
    const int64_t ms[2] = {4, 9};
    return yt_sequential_lr_new(opt,
                                (yt_scheduler *[]){yt_linear_lr_new(opt, 0.2, 1, 4),
                                                   yt_exponential_lr_new(opt, 0.9),
                                                   yt_cosine_annealing_lr_new(opt, 6, 0)},
                                3, ms);
}

static void
advance(yt_scheduler *s, int step)
{
    static const double metrics[] = {1.0, 0.9, 0.95, 0.97, 0.96, 0.5, 0.6, 0.7, 0.8, 0.9};
    yt_status st = strcmp(yt_scheduler_name(s), "ReduceLROnPlateau") == 0
                       ? yt_scheduler_step_metric(s, metrics[step % 10])
                       : yt_scheduler_step(s);
    cr_assert_eq(st, YT_OK, "%s", yt_errmsg());
}

/* Save optimizer and scheduler after k steps, load both into fresh ones, continue: the lrs
 * (and momenta) match an uninterrupted schedule exactly. */
static void
check_resume(make_sched make)
{
    enum { K = 6, MORE = 10 };
    const double lrs[2] = {0.1, 0.03};
    yt_optimizer *o1 = sgd(2, lrs), *o2 = sgd(2, lrs), *o3 = sgd(2, lrs);
    yt_scheduler *straight = make(o1), *first = make(o2);
    cr_assert(straight != NULL && first != NULL, "%s", yt_errmsg());
    const char *name = yt_scheduler_name(straight);
    for (int i = 0; i < K; i++) {
        advance(straight, i);
        advance(first, i);
    }
    yt_named_tensors osd = YT_NAMED_TENSORS_INIT, ssd = YT_NAMED_TENSORS_INIT;
    cr_assert_eq(yt_optimizer_state_dict(o2, &osd), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(yt_scheduler_state_dict(first, &ssd), YT_OK, "%s", yt_errmsg());
    yt_scheduler_release(first);
    yt_scheduler *resumed = make(o3); /* constructed as a resumed run would be, then loaded */
    cr_assert_eq(yt_optimizer_load_state_dict(o3, &osd), YT_OK, "%s: %s", name, yt_errmsg());
    cr_assert_eq(yt_scheduler_load_state_dict(resumed, &ssd), YT_OK, "%s: %s", name, yt_errmsg());
    for (int i = K; i < K + MORE; i++) {
        advance(straight, i);
        advance(resumed, i);
        for (int g = 0; g < 2; g++) {
            yt_sgd_options a, b;
            yt_optimizer_get_options(o1, g, &a, sizeof a);
            yt_optimizer_get_options(o3, g, &b, sizeof b);
            cr_assert(a.lr == b.lr && a.momentum == b.momentum,
                      "%s step %d group %d: lr %.17g vs %.17g, momentum %.17g vs %.17g", name, i, g,
                      a.lr, b.lr, a.momentum, b.momentum);
            cr_assert_eq(yt_scheduler_get_last_lr(straight, g),
                         yt_scheduler_get_last_lr(resumed, g));
        }
        cr_assert_eq(yt_scheduler_last_epoch(straight), yt_scheduler_last_epoch(resumed));
    }
    yt_named_tensors_clear(&osd);
    yt_named_tensors_clear(&ssd);
    yt_scheduler_release(straight);
    yt_scheduler_release(resumed);
    yt_optimizer_release(o1);
    yt_optimizer_release(o2);
    yt_optimizer_release(o3);
}

Test(sched, state_round_trip)
{
    check_resume(make_step);
    check_resume(make_cosine);
    check_resume(make_one_cycle);
    check_resume(make_plateau);
    check_resume(make_sequential);
    YT_ASSERT_NO_LEAKS();
}

Test(sched, state_dict_contents_and_errors)
{
    const double lrs[2] = {0.1, 0.03};
    yt_optimizer *opt = sgd(2, lrs);
    yt_scheduler *s = make_sequential(opt);
    cr_assert_not_null(s, "%s", yt_errmsg());
    yt_named_tensors sd = YT_NAMED_TENSORS_INIT;
    cr_assert_eq(yt_scheduler_state_dict(s, &sd), YT_OK);
    const char *keys[] = {"last_epoch",
                          "last_lr.0",
                          "last_lr.1",
                          "schedulers.0.last_epoch",
                          "schedulers.0.step_count",
                          "schedulers.0.base_lr.1",
                          "schedulers.2.last_lr.0"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        cr_assert_geq(yt_named_tensors_find(&sd, keys[i]), 0, "missing %s", keys[i]);

    yt_named_tensors bad = YT_NAMED_TENSORS_INIT;
    for (int64_t i = 0; i < sd.count; i++)
        yt_named_tensors_add(&bad, sd.names[i], sd.tensors[i]);
    yt_tensor *extra = yt_scalar_tensor(yt_int(1), YT_DTYPE_I64);
    yt_named_tensors_add(&bad, "schedulers.3.last_epoch", extra);
    yt_release(extra);
    cr_assert_eq(yt_scheduler_load_state_dict(s, &bad), YT_ERR_VALUE);
    YT_ASSERT_ERROR(
        YT_ERR_VALUE,
        "scheduler_load_state_dict: SequentialLR: unknown entry 'schedulers.3.last_epoch'");
    yt_named_tensors_clear(&bad);

    for (int64_t i = 0; i < sd.count; i++)
        if (strcmp(sd.names[i], "schedulers.1.base_lr.1") != 0)
            yt_named_tensors_add(&bad, sd.names[i], sd.tensors[i]);
    cr_assert_eq(yt_scheduler_load_state_dict(s, &bad), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE,
                    "scheduler_load_state_dict: the state dict has no 'schedulers.1.base_lr.1'");
    yt_named_tensors_clear(&bad);

    for (int64_t i = 0; i < sd.count; i++) {
        yt_tensor *t = strcmp(sd.names[i], "schedulers.0.last_epoch") == 0
                           ? yt_scalar_tensor(yt_float(2), YT_DTYPE_F64)
                           : yt_retain(sd.tensors[i]);
        yt_named_tensors_add(&bad, sd.names[i], t);
        yt_release(t);
    }
    cr_assert_eq(yt_scheduler_load_state_dict(s, &bad), YT_ERR_DTYPE);
    YT_ASSERT_ERROR(YT_ERR_DTYPE, "scheduler_load_state_dict: 'schedulers.0.last_epoch' must be an "
                                  "integer tensor, got f64");
    yt_named_tensors_clear(&bad);
    cr_assert_eq(yt_scheduler_load_state_dict(s, &sd), YT_OK, "%s", yt_errmsg());

    /* a state dict of another kind */
    yt_scheduler *step = yt_step_lr_new(opt, 2, 0.5);
    cr_assert_eq(yt_scheduler_load_state_dict(step, &sd), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "scheduler_load_state_dict: the state dict has no 'step_count'");
    yt_scheduler_release(step);

    yt_named_tensors_clear(&sd);
    yt_scheduler_release(s);
    yt_optimizer_release(opt);
    YT_ASSERT_NO_LEAKS();
}
