/* Trains an MLP (784-256-128-10) on Fashion-MNIST with the library alone: a dataset and a loader
 * with worker threads, nn modules, a loss module, Adam, and a safetensors file of the weights that
 * PyTorch's load_state_dict accepts. `yaten train examples/fashion_mlp.yaml` runs the same model
 * from a config; this is the C a program of your own would contain.
 *
 * Usage: fashion_mlp [EPOCHS] [DATA_DIR]   (default 1 epoch, /usr/share/datasets/fashion-mnist) */
#include <stdio.h>
#include <stdlib.h>

#include <yaten.h>

static int
fail(const char *what)
{
    fprintf(stderr, "fashion_mlp: %s: %s\n", what, yt_errmsg());
    return 1;
}

/* A loader over the IDX files `prefix`-images-idx3-ubyte.gz / -labels-idx1-ubyte.gz in `dir`. */
static yt_loader *
open_split(const char *dir, const char *prefix, bool shuffle, int workers)
{
    char images[512], labels[512];
    snprintf(images, sizeof images, "%s/%s-images-idx3-ubyte.gz", dir, prefix);
    snprintf(labels, sizeof labels, "%s/%s-labels-idx1-ubyte.gz", dir, prefix);
    yt_dataset *data = yt_idx_dataset_open(images, labels);
    if (data == NULL)
        return NULL;
    const double mean = 0.2860, std = 0.3530; /* Fashion-MNIST's training-set statistics */
    yt_transform normalize = yt_transform_normalize(&mean, &std, 1);
    yt_loader_options o = {.batch_size = 64, .shuffle = shuffle, .seed = 0, .workers = workers,
                           .transforms = &normalize, .n_transforms = 1};
    yt_loader *loader = yt_loader_new(data, &o);
    yt_dataset_release(data); /* the loader keeps its own reference */
    return loader;
}

/* Fraction of the test set the model classifies correctly (eval mode, no graph). */
static double
accuracy(yt_module *model, yt_loader *test)
{
    yt_module_train(model, false);
    bool grad_was = yt_set_grad_enabled(false);
    int64_t correct = 0, seen = 0;
    for (;;) {
        yt_scope_begin();
        yt_tensor *x, *y;
        if (yt_loader_next(test, &x, &y) != YT_OK || x == NULL) {
            yt_scope_end();
            break;
        }
        yt_tensor *predicted = yt_argmax_ex(yt_module_forward(model, x), 1, false);
        yt_tensor *hits = yt_sum(yt_eq(predicted, y));
        correct += (int64_t)yt_item(hits);
        seen += yt_tensor_size(y, 0);
        yt_scope_end();
    }
    yt_set_grad_enabled(grad_was);
    yt_module_train(model, true);
    return seen > 0 ? (double)correct / (double)seen : 0;
}

int
main(int argc, char **argv)
{
    int epochs = argc > 1 ? atoi(argv[1]) : 1;
    const char *dir = argc > 2 ? argv[2] : "/usr/share/datasets/fashion-mnist";
    yt_manual_seed(0); /* the layers' initial weights come from the default generator */

    yt_loader *train = open_split(dir, "train", true, 1), *test = open_split(dir, "t10k", false, 0);
    if (train == NULL || test == NULL)
        return fail("data");

    yt_module *model = yt_sequential_new();
    yt_module *layers[] = {yt_flatten_new(1, -1), yt_linear_new(784, 256, true), yt_relu_new(),
                           yt_linear_new(256, 128, true),  yt_relu_new(),
                           yt_linear_new(128, 10, true)};
    for (size_t i = 0; i < sizeof layers / sizeof layers[0]; i++) {
        if (yt_sequential_append(model, layers[i]) != YT_OK)
            return fail("model");
        yt_module_release(layers[i]); /* the Sequential holds it now */
    }
    yt_module *loss_fn = yt_cross_entropy_loss_new(NULL);
    yt_named_tensors params = YT_NAMED_TENSORS_INIT;
    if (loss_fn == NULL || yt_module_parameters(model, &params) != YT_OK)
        return fail("set-up");
    yt_adam_options adam = YT_ADAM_DEFAULTS;
    yt_optimizer *opt = yt_adam_new(&params, &adam);
    if (opt == NULL)
        return fail("optimizer");
    printf("MLP with %lld parameters, Adam lr %g, batch 64\n",
           (long long)yt_module_num_parameters(model), adam.lr);

    double test_accuracy = 0;
    for (int epoch = 0; epoch < epochs; epoch++) {
        double loss_sum = 0;
        int64_t steps = 0;
        for (;;) {
            yt_scope_begin(); /* releases this step's batch, activations and graph */
            yt_tensor *x, *y;
            if (yt_loader_next(train, &x, &y) != YT_OK)
                return fail("loading a batch");
            if (x == NULL) { /* end of the epoch */
                yt_scope_end();
                break;
            }
            yt_tensor *loss = yt_module_forward2(loss_fn, yt_module_forward(model, x), y);
            if (loss == NULL || yt_backward(loss, NULL, NULL) != YT_OK ||
                yt_optimizer_step(opt) != YT_OK)
                return fail("training step");
            yt_optimizer_zero_grad(opt);
            loss_sum += yt_item(loss);
            steps++;
            yt_scope_end();
        }
        test_accuracy = accuracy(model, test);
        printf("epoch %d  train loss %.4f  test accuracy %.2f%%\n", epoch + 1,
               loss_sum / (double)steps, 100 * test_accuracy);
    }

    /* The weights under PyTorch's names ("1.weight", ...): torch's load_state_dict takes them. */
    yt_named_tensors state = YT_NAMED_TENSORS_INIT;
    if (yt_module_state_dict(model, &state) != YT_OK ||
        yt_safetensors_save("fashion_mlp.safetensors", &state, NULL) != YT_OK)
        return fail("saving");
    printf("saved fashion_mlp.safetensors\n");

    yt_named_tensors_clear(&state);
    yt_named_tensors_clear(&params);
    yt_optimizer_release(opt);
    yt_module_release(loss_fn);
    yt_module_release(model);
    yt_loader_release(test);
    yt_loader_release(train);
    if (yt_live_tensors() != 0)
        return fail("tensors still alive at exit");
    if (test_accuracy < 0.8) { /* one epoch reaches about 85% */
        fprintf(stderr, "fashion_mlp: test accuracy %.2f%% is below 80%%\n", 100 * test_accuracy);
        return 1;
    }
    return 0;
}
