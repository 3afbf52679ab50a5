/* The yaten side of the differential training test (tests/optim/test_train_vs_torch.py).
 *
 * Usage: optim_train_runner MODEL OPTIMIZER STEPS BATCH INPUTS.npy TARGETS.npy OUTDIR [DTYPE]
 *   MODEL      mlp (Linear 784-256-128-10 with ReLUs) or cnn (the CNN: conv 1->8 3x3,
 *              ReLU, max-pool 2, conv 8->16 3x3, ReLU, max-pool 2, flatten, Linear 400->10)
 *   OPTIMIZER  sgd (lr 0.05, momentum 0.9) or adam (lr 1e-3)
 *   DTYPE      f32 (the default) or f64: the model and the inputs are converted to it after
 *              init.safetensors is written
 * Builds the model with yaten's default initialisation (seed 1234), writes its state dict to
 * OUTDIR/init.safetensors (the test loads it into PyTorch), then takes STEPS steps of
 * cross-entropy training on consecutive BATCH-row slices of the inputs, printing "loss STEP
 * VALUE" before each update, and writes the trained state dict to OUTDIR/final.safetensors. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaten.h>

static void
die(const char *what)
{
    fprintf(stderr, "optim_train_runner: %s: %s (%s)\n", what, yt_errmsg(),
            yt_status_name(yt_errcode()));
    exit(1);
}

/* Appends `child` to `seq` and drops the caller's reference (append retains). */
static void
append(yt_module *seq, yt_module *child)
{
    if (child == NULL || yt_sequential_append(seq, child) != YT_OK)
        die("building the model");
    yt_module_release(child);
}

static yt_module *
make_mlp(void)
{
    yt_module *m = yt_sequential_new();
    append(m, yt_linear_new(784, 256, true));
    append(m, yt_relu_new());
    append(m, yt_linear_new(256, 128, true));
    append(m, yt_relu_new());
    append(m, yt_linear_new(128, 10, true));
    return m;
}

static yt_module *
make_cnn(void)
{
    yt_module *m = yt_sequential_new();
    yt_conv2d_options c1 = yt_conv2d_options_default(1, 8, 3);
    yt_conv2d_options c2 = yt_conv2d_options_default(8, 16, 3);
    append(m, yt_conv2d_new(&c1));
    append(m, yt_relu_new());
    append(m, yt_max_pool2d_new(2, 0, 0));
    append(m, yt_conv2d_new(&c2));
    append(m, yt_relu_new());
    append(m, yt_max_pool2d_new(2, 0, 0));
    append(m, yt_flatten_new(1, -1));
    append(m, yt_linear_new(400, 10, true));
    return m;
}

static void
save_state(yt_module *m, const char *dir, const char *file)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    yt_named_tensors sd = YT_NAMED_TENSORS_INIT;
    if (yt_module_state_dict(m, &sd) != YT_OK || yt_safetensors_save(path, &sd, NULL) != YT_OK)
        die(path);
    yt_named_tensors_clear(&sd);
}

int
main(int argc, char **argv)
{
    const bool f64 = argc == 9 && strcmp(argv[8], "f64") == 0;
    if ((argc != 8 && argc != 9) || (argc == 9 && !f64 && strcmp(argv[8], "f32") != 0)) {
        fprintf(stderr,
                "usage: %s mlp|cnn sgd|adam STEPS BATCH INPUTS.npy TARGETS.npy OUTDIR [f32|f64]\n",
                argv[0]);
        return 2;
    }
    const int steps = atoi(argv[3]);
    const int64_t batch = atoll(argv[4]);
    yt_set_num_threads(1);
    yt_manual_seed(1234);
    yt_module *model = strcmp(argv[1], "cnn") == 0 ? make_cnn() : make_mlp();
    save_state(model, argv[7], "init.safetensors");

    yt_tensor *inputs = yt_npy_load(argv[5]), *targets = yt_npy_load(argv[6]);
    if (inputs == NULL || targets == NULL)
        die("loading the batches");
    if (f64) {
        yt_tensor *wide = yt_to(inputs, YT_DTYPE_F64);
        if (wide == NULL || yt_module_to(model, YT_DTYPE_F64) != YT_OK)
            die("converting to f64");
        yt_release(inputs);
        inputs = wide;
    }
    if (yt_tensor_size(inputs, 0) < steps * batch || yt_tensor_size(targets, 0) < steps * batch) {
        fprintf(stderr, "optim_train_runner: the .npy files hold fewer than STEPS * BATCH rows\n");
        return 1;
    }

    yt_named_tensors params = YT_NAMED_TENSORS_INIT;
    if (yt_module_parameters(model, &params) != YT_OK)
        die("parameters");
    yt_optimizer *opt;
    if (strcmp(argv[2], "adam") == 0) {
        const yt_adam_options o = YT_ADAM_DEFAULTS;
        opt = yt_adam_new(&params, &o);
    } else {
        const yt_sgd_options o = {.lr = 0.05, .momentum = 0.9};
        opt = yt_sgd_new(&params, &o);
    }
    yt_module *loss_fn = yt_cross_entropy_loss_new(NULL);
    if (opt == NULL || loss_fn == NULL)
        die("optimizer");

    for (int step = 0; step < steps; step++) {
        yt_scope_begin();
        yt_tensor *x = yt_narrow(inputs, 0, step * batch, batch);
        yt_tensor *y = yt_narrow(targets, 0, step * batch, batch);
        yt_tensor *loss = yt_module_forward2(loss_fn, yt_module_forward(model, x), y);
        if (loss == NULL || yt_backward(loss, NULL, NULL) != YT_OK)
            die("training step");
        printf("loss %d %.9g\n", step, yt_item(loss));
        if (yt_optimizer_step(opt) != YT_OK)
            die("optimizer step");
        yt_optimizer_zero_grad(opt);
        yt_scope_end();
    }
    save_state(model, argv[7], "final.safetensors");

    yt_optimizer_release(opt);
    yt_module_release(loss_fn);
    yt_named_tensors_clear(&params);
    yt_release(inputs);
    yt_release(targets);
    yt_module_release(model);
    if (yt_live_tensors() != 0) {
        fprintf(stderr, "optim_train_runner: %lld tensors still alive at exit\n",
                (long long)yt_live_tensors());
        return 1;
    }
    return 0;
}
