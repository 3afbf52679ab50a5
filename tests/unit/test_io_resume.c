/* Checkpoint resume: a small CNN with dropout trains on a shuffled, randomly cropped and flipped
 * in-memory dataset with AdamW and a warm-up + cosine schedule. A run interrupted at step k,
 * saved with yt_checkpoint_save and continued by fresh objects (another initialisation, another
 * RNG state) after yt_checkpoint_load must produce bit-identical losses and parameters to the
 * uninterrupted run: the checkpoint holds everything the run depends on (weights, optimizer
 * moments and step counts, the schedule's position, the loader's epoch/batch/seed, the RNG). */
#include <stdint.h>

#include "test_io_util.h"

TestSuite(resume, .init = io_tmp_begin, .fini = io_tmp_end);

#define N_SAMPLES 100 /* batches of 16: six full ones and one of 4 per epoch */
#define N_STEPS   24

typedef struct run {
    yt_module *model, *loss;
    yt_named_tensors params;
    yt_optimizer *opt;
    yt_scheduler *sched;
    yt_loader *loader;
} run;

static yt_dataset *
make_dataset(void)
{
    const int64_t xs[] = {N_SAMPLES, 1, 8, 8}, ys[] = {N_SAMPLES};
    yt_generator *g = yt_generator_create(2024);
    /* Noise shifted by the class index: learnable in a few steps. */
    const int64_t col[] = {N_SAMPLES, 1, 1, 1};
    yt_scope_begin();
    yt_tensor *y = yt_scope_keep(yt_randint_ex(4, ys, 1, g, YT_DTYPE_I64, YT_DEVICE_NONE));
    yt_tensor *noise = yt_randn_ex(xs, 4, g, YT_DTYPE_F32, YT_DEVICE_NONE);
    yt_tensor *x = yt_scope_keep(yt_add(noise, yt_reshape(yt_to(y, YT_DTYPE_F32), col, 4)));
    yt_scope_end();
    cr_assert(x != NULL && y != NULL, "%s", yt_errmsg());
    yt_dataset *d = yt_tensor_dataset_new(x, y);
    cr_assert_not_null(d, "%s", yt_errmsg());
    yt_release(x);
    yt_release(y);
    yt_generator_release(g);
    return d;
}

static void
append(yt_module *seq, yt_module *m)
{
    cr_assert_not_null(m, "%s", yt_errmsg());
    cr_assert_eq(yt_sequential_append(seq, m), YT_OK, "%s", yt_errmsg());
    yt_module_release(m);
}

/* Fresh objects; the weights come from the default generator seeded with `init_seed`. */
static void
run_new(run *r, yt_dataset *d, uint64_t init_seed)
{
    yt_manual_seed(init_seed);
    r->model = yt_sequential_new();
    yt_conv2d_options conv = yt_conv2d_options_default(1, 4, 3);
    conv.padding[0] = conv.padding[1] = 1;
    append(r->model, yt_conv2d_new(&conv));
    append(r->model, yt_relu_new());
    append(r->model, yt_dropout_new(0.25));
    append(r->model, yt_flatten_new(1, -1));
    append(r->model, yt_linear_new(4 * 8 * 8, 4, true));
    r->loss = yt_cross_entropy_loss_new(NULL);
    r->params = (yt_named_tensors)YT_NAMED_TENSORS_INIT;
    cr_assert_eq(yt_module_parameters(r->model, &r->params), YT_OK, "%s", yt_errmsg());
    yt_adam_options adam = {
        .lr = 0.01, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.01};
    r->opt = yt_adamw_new(&r->params, &adam);
    cr_assert_not_null(r->opt, "%s", yt_errmsg());
    yt_scheduler *phases[2] = {yt_linear_lr_new(r->opt, 0.1, 1.0, 5),
                               yt_cosine_annealing_lr_new(r->opt, N_STEPS, 1e-4)};
    const int64_t milestone = 5;
    r->sched = yt_sequential_lr_new(r->opt, phases, 2, &milestone);
    cr_assert_not_null(r->sched, "%s", yt_errmsg());
    yt_transform tf[2] = {yt_transform_random_crop(8, 8, 1),
                          yt_transform_random_horizontal_flip(0.5)};
    yt_loader_options lo = {.batch_size = 16,
                            .shuffle = true,
                            .seed = 99,
                            .workers = 2,
                            .transforms = tf,
                            .n_transforms = 2};
    r->loader = yt_loader_new(d, &lo);
    cr_assert_not_null(r->loader, "%s", yt_errmsg());
}

static void
run_free(run *r)
{
    yt_loader_release(r->loader);
    yt_scheduler_release(r->sched);
    yt_optimizer_release(r->opt);
    yt_named_tensors_clear(&r->params);
    yt_module_release(r->loss);
    yt_module_release(r->model);
}

/* One training step; returns the loss. */
static double
train_step(run *r)
{
    yt_scope_begin();
    yt_tensor *x = NULL, *y = NULL;
    cr_assert_eq(yt_loader_next(r->loader, &x, &y), YT_OK, "%s", yt_errmsg());
    if (x == NULL) /* the end of an epoch: the next call starts the next one */
        cr_assert_eq(yt_loader_next(r->loader, &x, &y), YT_OK, "%s", yt_errmsg());
    yt_tensor *loss = yt_module_forward2(r->loss, yt_module_forward(r->model, x), y);
    cr_assert_not_null(loss, "%s", yt_errmsg());
    yt_optimizer_zero_grad(r->opt);
    cr_assert_eq(yt_backward(loss, NULL, NULL), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(yt_optimizer_step(r->opt), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(yt_scheduler_step(r->sched), YT_OK, "%s", yt_errmsg());
    double value = yt_item(loss);
    yt_scope_end();
    return value;
}

enum { MODEL, OPTIM, SCHED, LOADER, RNG, N_PARTS };
static const char *const prefixes[N_PARTS] = {"model.", "optimizer.", "scheduler.", "loader.",
                                              "rng."};

static void
save_checkpoint(run *r, const char *path)
{
    yt_named_tensors lists[N_PARTS];
    yt_checkpoint_part parts[N_PARTS];
    for (int i = 0; i < N_PARTS; i++) {
        lists[i] = (yt_named_tensors)YT_NAMED_TENSORS_INIT;
        parts[i] = (yt_checkpoint_part){prefixes[i], &lists[i]};
    }
    cr_assert_eq(yt_module_state_dict(r->model, &lists[MODEL]), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(yt_optimizer_state_dict(r->opt, &lists[OPTIM]), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(yt_scheduler_state_dict(r->sched, &lists[SCHED]), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(yt_loader_state_dict(r->loader, &lists[LOADER]), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(yt_generator_state_dict(NULL, &lists[RNG]), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(yt_checkpoint_save(path, parts, N_PARTS, NULL), YT_OK, "%s", yt_errmsg());
    for (int i = 0; i < N_PARTS; i++)
        yt_named_tensors_clear(&lists[i]);
}

static void
load_checkpoint(run *r, const char *path)
{
    yt_named_tensors lists[N_PARTS];
    yt_checkpoint_part parts[N_PARTS];
    for (int i = 0; i < N_PARTS; i++) {
        lists[i] = (yt_named_tensors)YT_NAMED_TENSORS_INIT;
        parts[i] = (yt_checkpoint_part){prefixes[i], &lists[i]};
    }
    cr_assert_eq(yt_checkpoint_load(path, parts, N_PARTS, NULL), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(yt_module_load_state_dict(r->model, &lists[MODEL], true), YT_OK, "%s",
                 yt_errmsg());
    cr_assert_eq(yt_optimizer_load_state_dict(r->opt, &lists[OPTIM]), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(yt_scheduler_load_state_dict(r->sched, &lists[SCHED]), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(yt_loader_load_state_dict(r->loader, &lists[LOADER]), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(yt_generator_load_state_dict(NULL, &lists[RNG]), YT_OK, "%s", yt_errmsg());
    for (int i = 0; i < N_PARTS; i++)
        yt_named_tensors_clear(&lists[i]);
}

/* Interrupts at each of `stops` (after that many steps) and checks the resumed run against the
 * uninterrupted one. */
static void
check_resume(const int64_t *stops, int n_stops)
{
    yt_dataset *d = make_dataset();
    run a;
    double losses[N_STEPS];
    run_new(&a, d, 1);
    char path[8][48];
    cr_assert(n_stops <= 8);
    for (int64_t step = 0; step < N_STEPS; step++) {
        for (int s = 0; s < n_stops; s++)
            if (stops[s] == step) {
                snprintf(path[s], sizeof path[s], "step%lld.safetensors", (long long)step);
                save_checkpoint(&a, io_path(path[s]));
            }
        losses[step] = train_step(&a);
    }
    cr_assert(losses[N_STEPS - 1] < losses[0], "training should lower the loss (%g -> %g)",
              losses[0], losses[N_STEPS - 1]);
    yt_generator_state rng_a, rng_b;
    yt_generator_get_state(NULL, &rng_a); /* dropout drew from it at every step */

    for (int s = 0; s < n_stops; s++) {
        run b;
        run_new(&b, d, 12345); /* other weights and another RNG state until the load */
        load_checkpoint(&b, io_path(path[s]));
        for (int64_t step = stops[s]; step < N_STEPS; step++) {
            double loss = train_step(&b);
            cr_assert(memcmp(&loss, &losses[step], sizeof loss) == 0,
                      "resumed at step %lld: step %lld's loss is %.17g, uninterrupted %.17g",
                      (long long)stops[s], (long long)step, loss, losses[step]);
        }
        cr_assert_eq(b.params.count, a.params.count);
        for (int64_t i = 0; i < a.params.count; i++)
            io_expect_same(b.params.tensors[i], a.params.tensors[i], a.params.names[i]);
        yt_generator_get_state(NULL, &rng_b);
        cr_assert(rng_a.seed == rng_b.seed && rng_a.offset == rng_b.offset,
                  "the RNG ends where the uninterrupted run left it");
        run_free(&b);
    }
    run_free(&a);
    yt_dataset_release(d);
}

Test(resume, continues_bit_identically_mid_epoch_and_at_epoch_ends)
{
    /* 3: inside the warm-up and epoch 0; 7: right after the first epoch's last batch (the loader
     * at the end-of-epoch position); 10: mid-epoch 1 inside the cosine phase. */
    const int64_t stops[] = {3, 7, 10};
    check_resume(stops, 3);
    YT_ASSERT_NO_LEAKS();
}
