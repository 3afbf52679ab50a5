/* The `yaten` config parser (tools/config.c, tools/layers.c): every problem is reported as
 * `CONFIG:LINE:COL: message` before anything runs, with "did you mean" for misspelt keys and
 * values, types and ranges, YAML syntax errors with libyaml's position, and impossible layer
 * shapes found by propagating the input's shape, reported at the layer's line. Each expected
 * message is asserted whole. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "config.h"
#include "test_util.h"

/* A valid config whose pieces the tests replace: data and the rest at fixed lines. */
#define DATA  "data: {dataset: fashion-mnist}\n"
#define OPTIM "optimizer: {name: sgd, lr: 0.1}\n"
#define TAIL  OPTIM "epochs: 1\n"

static cfg_config cfg;

/* Parses `text` as "t.yaml" and asserts the diagnostics are exactly the NULL-terminated list. */
static void
expect_problems(const char *text, ...)
{
    bool ok = cfg_parse(&cfg, "t.yaml", text, strlen(text));
    va_list ap;
    va_start(ap, text);
    int n = 0;
    for (const char *want; (want = va_arg(ap, const char *)) != NULL; n++) {
        cr_assert(n < cfg.doc.n_diags, "expected problem %d: %s\n(only %d reported)", n + 1, want,
                  cfg.doc.n_diags);
        cr_assert_str_eq(cfg.doc.diags[n], want, "problem %d:\n  got:  %s\n  want: %s", n + 1,
                         cfg.doc.diags[n], want);
    }
    va_end(ap);
    cr_assert_eq(cfg.doc.n_diags, n, "%d problems reported, expected %d; extra: %s",
                 cfg.doc.n_diags, n, cfg.doc.n_diags > n ? cfg.doc.diags[n] : "");
    cr_assert_eq(ok, n == 0, "cfg_parse returned %d with %d problems", ok, n);
    cfg_free(&cfg);
}

static void
expect_ok(const char *text)
{
    bool ok = cfg_parse(&cfg, "t.yaml", text, strlen(text));
    cr_assert(ok, "config rejected: %s", cfg.doc.n_diags ? cfg.doc.diags[0] : "(no message)");
}

Test(cli_config, the_embedded_default_and_the_examples_are_valid)
{
    cr_assert(cfg_parse(&cfg, "<default config>", cli_default_config, cli_default_config_len()),
              "%s", cfg.doc.n_diags ? cfg.doc.diags[0] : "");
    cr_assert_eq(cfg.data.dataset, DATASET_FASHION_MNIST);
    cr_assert_eq(cfg.data.batch_size, 64);
    cr_assert_eq(cfg.model.n_layers, 12);
    cr_assert(cfg.model.checked);
    cr_assert_eq(cfg.model.output.ndim, 1);
    cr_assert_eq(cfg.model.output.d[0], 10);
    cr_assert_eq(layer_int(&cfg.model.layers[9], "in"), 3136, "linear's in is inferred");
    cr_assert_eq(layer_int(&cfg.model.layers[5], "num_features"), 64);
    cr_assert_eq(cfg.optim.kind, OPTIM_ADAM);
    cr_assert_float_eq(cfg.optim.lr, 1e-3, 1e-15);
    cr_assert_eq(cfg.epochs, 3);
    cr_assert_str_eq(cfg.output, "runs/fashion_cnn");
    cfg_free(&cfg);

    const char *files[] = {"examples/fashion_cnn.yaml", "examples/fashion_mlp.yaml"};
    for (int i = 0; i < 2; i++) {
        cr_assert(cfg_load_file(&cfg, files[i]), "%s: %s", files[i],
                  cfg.doc.n_diags ? cfg.doc.diags[0] : "");
        cfg_free(&cfg);
    }
    YT_ASSERT_NO_LEAKS();
}

Test(cli_config, values_and_defaults)
{
    expect_ok(
        "data:\n"
        "  dataset: npy\n"
        "  train: {inputs: x.npy, targets: y.npy}\n"
        "  batch_size: 32\n"
        "  shuffle: false\n"
        "  transforms: [{random_crop: {size: [24, 20], padding: 2}}, random_horizontal_flip]\n"
        "model:\n"
        "  layers: [{linear: {out: 3, bias: false}}, {dropout: 0.25}, {max_pool2d: [2, 3]}]\n"
        "loss: {name: smooth_l1, beta: 0.5}\n"
        "optimizer: {name: adamw, betas: [0.8, 0.9], amsgrad: true}\n"
        "schedule: {name: multistep, milestones: [2, 5], gamma: 0.5}\n"
        "epochs: 7\n"
        "seed: 42\n");
    cr_assert_eq(cfg.data.dataset, DATASET_NPY);
    cr_assert_str_eq(cfg.data.train.inputs, "x.npy");
    cr_assert_str_eq(cfg.data.train.targets, "y.npy");
    cr_assert(!cfg.data.has_test);
    cr_assert_eq(cfg.data.batch_size, 32);
    cr_assert_eq(cfg.data.test_batch_size, 256);
    cr_assert(!cfg.data.shuffle);
    cr_assert_eq(cfg.data.n_transforms, 2);
    cr_assert_eq(cfg.data.transforms[0].size[0], 24);
    cr_assert_eq(cfg.data.transforms[0].size[1], 20);
    cr_assert_eq(cfg.data.transforms[0].padding, 2);
    cr_assert_float_eq(cfg.data.transforms[1].p, 0.5, 0);
    cr_assert(!cfg.model.checked, "npy shapes are known only once the files are open");
    cr_assert(!layer_bool(&cfg.model.layers[0], "bias"));
    cr_assert_float_eq(layer_float(&cfg.model.layers[1], "p"), 0.25, 0);
    int n;
    const int64_t *k = layer_ints(&cfg.model.layers[2], "kernel", &n);
    cr_assert(n == 2 && k[0] == 2 && k[1] == 3);
    cr_assert_eq(cfg.loss.kind, LOSS_SMOOTH_L1);
    cr_assert_float_eq(cfg.loss.beta, 0.5, 0);
    cr_assert_eq(cfg.optim.kind, OPTIM_ADAMW);
    cr_assert_float_eq(cfg.optim.lr, 1e-3, 0, "torch.optim.AdamW's default lr");
    cr_assert_float_eq(cfg.optim.weight_decay, 1e-2, 0, "torch.optim.AdamW's default");
    cr_assert_float_eq(cfg.optim.beta1, 0.8, 0);
    cr_assert(cfg.optim.amsgrad);
    cr_assert_eq(cfg.schedule.kind, SCHED_MULTISTEP);
    cr_assert_eq(cfg.schedule.n_milestones, 2);
    cr_assert_eq(cfg.schedule.milestones[1], 5);
    cr_assert_eq(cfg.epochs, 7);
    cr_assert_eq(cfg.seed, 42);
    cr_assert_str_eq(cfg.output, "runs/t");

    /* Shapes once the dataset says what a sample is. Test samples are not cropped, so a crop
     * must keep the samples' size. */
    cli_shape in = {.ndim = 3, .d = {3, 28, 28}}, target = {.ndim = 3, .d = {3, 14, 1}};
    cr_assert(!cfg_check_shapes(&cfg, &in, &target, 0));
    cr_assert_str_eq(
        cfg.doc.diags[0],
        "t.yaml:6:16: random_crop: size 24x20 differs from the 28x28 samples; test samples are not cropped, so keep size 28 and shift with padding");
    /* [3, 24, 20]: linear on the last dimension gives [3, 24, 3], a 2x3 max-pool [3, 12, 1]. */
    in.d[1] = 24, in.d[2] = 20;
    target.d[1] = 12;
    cfg_free(&cfg);
    expect_ok("data: {dataset: npy, train: {inputs: x.npy, targets: y.npy}}\n"
              "model:\n"
              "  layers: [{linear: {out: 3, bias: false}}, {dropout: 0.25}, {max_pool2d: [2, 3]}]\n"
              "loss: {name: smooth_l1, beta: 0.5}\n" OPTIM "epochs: 7\n");
    cr_assert(cfg_check_shapes(&cfg, &in, &target, 0), "%s", cfg.doc.diags[0]);
    cr_assert_eq(layer_int(&cfg.model.layers[0], "in"), 20);
    cr_assert(cfg.model.checked);
    cfg_free(&cfg);
    YT_ASSERT_NO_LEAKS();
}

Test(cli_config, misspelt_keys_get_a_suggestion)
{
    expect_problems(DATA "model:\n  layers: [flatten, {linear: {out: 10}}]\n" OPTIM "epohcs: 3\n",
                    "t.yaml:5:1: unknown key 'epohcs' (did you mean 'epochs'?)", NULL);
    /* and not "missing required key 'epochs'": its misspelling says it all */
    YT_ASSERT_NO_LEAKS();
}

Test(cli_config, unknown_keys_everywhere)
{
    expect_problems(
        "data:\n"
        "  dataset: fashion-mnist\n"
        "  batch_sise: 64\n"
        "model:\n"
        "  layers:\n"
        "    - conv2d: {out: 8, kernal: 3}\n"
        "    - flatten\n"
        "    - linear: {out: 10}\n"
        "optimizer: {name: sgd, lr: 0.1, momentun: 0.9}\n"
        "epochs: 1\n"
        "sed: 3\n"
        "frobnicate: 1\n",
        "t.yaml:3:3: data: unknown key 'batch_sise' (did you mean 'batch_size'?)",
        "t.yaml:6:24: conv2d: unknown key 'kernal' (did you mean 'kernel'?)",
        "t.yaml:9:33: optimizer: unknown key 'momentun' (did you mean 'momentum'?)",
        "t.yaml:11:1: unknown key 'sed' (did you mean 'seed'?)",
        "t.yaml:12:1: unknown key 'frobnicate'; expected one of: data, model, loss, optimizer, schedule, epochs, seed, threads, device, output, checkpoint_every",
        NULL);
    YT_ASSERT_NO_LEAKS();
}

Test(cli_config, wrong_types_and_ranges)
{
    expect_problems("data:\n"
                    "  dataset: fashion-mnist\n"
                    "  batch_size: abc\n"
                    "  shuffle: maybe\n"
                    "  workers: -1\n"
                    "model:\n"
                    "  layers: [flatten, {linear: {out: 2.5}}, {dropout: 1.5}]\n"
                    "optimizer: {name: sgd, lr: 0}\n"
                    "epochs: \"3\"\n"
                    "seed: [1]\n",
                    "t.yaml:3:15: data.batch_size: expected an integer, got 'abc'",
                    "t.yaml:4:12: data.shuffle: expected true or false, got 'maybe'",
                    "t.yaml:5:12: data.workers: must be between 0 and 64, got -1",
                    "t.yaml:7:36: linear.out: expected an integer, got '2.5'",
                    "t.yaml:7:53: dropout.p: must be between 0 and 1, got 1.5",
                    "t.yaml:8:28: optimizer.lr: must be greater than 0, got 0",
                    "t.yaml:9:9: epochs: expected an integer, got the string '3'",
                    "t.yaml:10:7: seed: expected an integer, got a list", NULL);
    YT_ASSERT_NO_LEAKS();
}

Test(cli_config, unknown_names_and_values)
{
    expect_problems(
        "data: {dataset: fashion_mnist}\n"
        "model:\n"
        "  layers: [flaten, {conv3d: {out: 3}}]\n"
        "loss: crossentropy\n"
        "optimizer: {name: adamm}\n"
        "schedule: {name: cosine, interval: batch}\n"
        "epochs: 1\n"
        "device: metal\n",
        "t.yaml:1:17: data.dataset: unknown value 'fashion_mnist' (did you mean 'fashion-mnist'?)",
        "t.yaml:3:12: model.layers[0]: unknown layer 'flaten' (did you mean 'flatten'?)",
        "t.yaml:3:21: model.layers[1]: unknown layer 'conv3d' (did you mean 'conv2d'?)",
        "t.yaml:4:7: loss: unknown value 'crossentropy' (did you mean 'cross_entropy'?)",
        "t.yaml:5:19: optimizer.name: unknown value 'adamm' (did you mean 'adam'?)",
        "t.yaml:6:36: schedule.interval: unknown value 'batch'; expected one of: epoch, step",
        "t.yaml:8:9: device: unknown value 'metal'; expected one of: cpu, cuda", NULL);
    YT_ASSERT_NO_LEAKS();
}

Test(cli_config, missing_sections_and_keys)
{
    expect_problems(
        "data: {batch_size: 8}\n"
        "model: {layers: [{conv2d: {out: 4}}]}\n"
        "schedule: {name: step}\n",
        "t.yaml:1:1: missing required key 'optimizer'", "t.yaml:1:1: missing required key 'epochs'",
        "t.yaml:1:7: data: missing required key 'dataset'",
        "t.yaml:2:27: conv2d: missing required argument 'kernel' (kernel size: k or [kh, kw])",
        "t.yaml:3:11: schedule: missing required key 'step_size'", NULL);
    expect_problems(
        "", "t.yaml: the config is empty (expected data:, model:, optimizer: and epochs:)", NULL);
    expect_problems("- data\n",
                    "t.yaml:1:1: expected a mapping of sections (data:, model:, ...), got a list",
                    NULL);
    YT_ASSERT_NO_LEAKS();
}

Test(cli_config, keys_of_other_variants_and_duplicates)
{
    expect_problems(DATA
                    "model: {layers: [flatten, {linear: {out: 10, in_features: 784, in: 784}}]}\n"
                    "loss: {name: mse, label_smoothing: 0.1}\n"
                    "optimizer: {name: adam, momentum: 0.9, lr: 0.1, lr: 0.2}\n"
                    "epochs: 1\n",
                    "t.yaml:2:64: linear: 'in_features' and 'in' are the same argument; give one",
                    "t.yaml:3:19: loss: 'label_smoothing' does not apply to mse",
                    "t.yaml:4:25: optimizer: 'momentum' does not apply to adam",
                    "t.yaml:4:49: optimizer: duplicate key 'lr' (first given at line 4)", NULL);
    YT_ASSERT_NO_LEAKS();
}

Test(cli_config, yaml_syntax_errors_carry_libyaml_positions)
{
    expect_problems(
        "data: {dataset: fashion-mnist\nmodel: [\n",
        "t.yaml:2:6: YAML syntax error: did not find expected ',' or '}' while parsing a flow mapping (line 1, column 7)",
        NULL);
    expect_problems("epochs: 1\n  seed: 2\n",
                    "t.yaml:2:7: YAML syntax error: mapping values are not allowed in this context",
                    NULL);
    expect_problems(
        "data:\n\tdataset: npy\n",
        "t.yaml:2:1: YAML syntax error: found character that cannot start any token while scanning for the next token (line 2, column 1)",
        NULL);
    YT_ASSERT_NO_LEAKS();
}

Test(cli_config, a_missing_dash_between_layers)
{
    expect_problems(
        DATA "model:\n"
             "  layers:\n"
             "    - flatten\n"
             "    - linear: {out: 8}\n"
             "      relu:\n" TAIL,
        "t.yaml:6:7: model.layers[1]: one layer per list item, but 'relu' follows 'linear' in the same item (is a '-' missing?)",
        NULL);
    YT_ASSERT_NO_LEAKS();
}

Test(cli_config, impossible_shapes_are_reported_at_the_layer)
{
    /* LeNet-style stack on 28x28: 24 -> 12 -> 8 -> 4, then a 5x5 kernel no longer fits. */
    expect_problems(DATA "model:\n"
                         "  layers:\n"
                         "    - conv2d: {out: 8, kernel: 5}\n"
                         "    - max_pool2d: 2\n"
                         "    - conv2d: {out: 16, kernel: 5}\n"
                         "    - max_pool2d: 2\n"
                         "    - conv2d: {out: 16, kernel: 5}\n" TAIL,
                    "t.yaml:8:7: conv2d: kernel 5 is larger than the 4x4 input (padded)", NULL);
    expect_problems(
        DATA "model:\n"
             "  layers:\n"
             "    - conv2d: {out: 16, kernel: 5}\n"
             "    - max_pool2d: {kernel: 2}\n"
             "    - flatten\n"
             "    - linear: {in: 500, out: 10}\n" TAIL,
        "t.yaml:7:7: linear: in=500 but the previous layer (flatten) gives 2304 features", NULL);
    expect_problems(
        DATA "model: {layers: [{linear: {in: 784, out: 10}}]}\n" TAIL,
        "t.yaml:2:18: linear: in=784 but the input gives [1, 28, 28], whose last dimension has 28 features; add a flatten layer before it",
        NULL);
    expect_problems(
        DATA "model: {layers: [flatten, {conv2d: {out: 4, kernel: 3}}]}\n" TAIL,
        "t.yaml:2:27: conv2d: expects a [channels, height, width] input, but the previous layer (flatten) gives [784]",
        NULL);
    expect_problems(DATA "model: {layers: [{conv2d: {in: 3, out: 4, kernel: 3}}]}\n" TAIL,
                    "t.yaml:2:18: conv2d: in=3 but the input gives 1 channel", NULL);
    expect_problems(DATA "model: {layers: [{conv2d: {out: 4, kernel: 3, groups: 3}}]}\n" TAIL,
                    "t.yaml:2:18: conv2d: groups=3 must divide both in=1 and out=4", NULL);
    expect_problems(
        DATA "model: {layers: [{conv2d: {out: 4, kernel: [3, 40], dilation: 2}}]}\n" TAIL,
        "t.yaml:2:18: conv2d: kernel 3x40 with dilation 2 spans more than the 28x28 input (padded)",
        NULL);
    expect_problems(DATA "model: {layers: [{max_pool2d: {kernel: 2, padding: 2}}]}\n" TAIL,
                    "t.yaml:2:18: max_pool2d: padding 2 must be at most half the kernel 2", NULL);
    expect_problems(DATA "model: {layers: [{batch_norm2d: {num_features: 3}}]}\n" TAIL,
                    "t.yaml:2:18: batch_norm2d: num_features=3 but the input gives 1 channel",
                    NULL);
    expect_problems(
        DATA "model: {layers: [{flatten: {start: 0}}]}\n" TAIL,
        "t.yaml:2:18: flatten: start=0 would merge the batch dimension into the features; use start: 1",
        NULL);
    expect_problems(
        DATA "model: {layers: [{layer_norm: {shape: [28, 27]}}]}\n" TAIL,
        "t.yaml:2:18: layer_norm: shape [28, 27] does not match the last dimensions of [1, 28, 28] from the input",
        NULL);
    expect_problems(
        DATA "model: {layers: [{reshape: {shape: [-1, 7, 5]}}]}\n" TAIL,
        "t.yaml:2:18: reshape: shape [-1, 7, 5] does not hold the 784 elements of [1, 28, 28] from the input",
        NULL);
    expect_problems(
        DATA "model: {layers: [{embedding: {num: 10, dim: 4}}]}\n" TAIL,
        "t.yaml:2:18: embedding: expects integer indices, but the input gives floating-point values",
        NULL);
    YT_ASSERT_NO_LEAKS();
}

Test(cli_config, the_loss_against_the_model_and_the_dataset)
{
    expect_problems(
        DATA "model: {layers: [flatten, {linear: {out: 8}}]}\n" TAIL,
        "t.yaml:2:27: linear: the model gives 8 outputs per sample, but the dataset has 10 classes (cross_entropy needs one output per class)",
        NULL);
    expect_problems(
        DATA "model: {layers: [{linear: {out: 10}}]}\n" TAIL,
        "t.yaml:2:18: linear: the model gives [1, 28, 10] per sample, but cross_entropy needs [classes] for class-index targets of shape []",
        NULL);
    expect_problems(
        DATA "model: {layers: [flatten, {linear: {out: 10}}]}\nloss: mse\n" TAIL,
        "t.yaml:3:7: loss: mse compares the output with real-valued targets, but the dataset gives class labels (use cross_entropy)",
        NULL);
    YT_ASSERT_NO_LEAKS();
}

Test(cli_config, data_sections_by_dataset)
{
    expect_problems(
        "data: {dataset: npy, path: /x, train: {inputs: x.npy}}\n"
        "model: {layers: [relu]}\n" TAIL,
        "t.yaml:1:28: data.path: only for fashion-mnist and mnist; npy takes train: and test:",
        "t.yaml:1:39: data.train: missing required key 'targets'", NULL);
    expect_problems(
        "data: {dataset: fashion-mnist, train: {images: a, labels: b}, header: true}\n"
        "model: {layers: [flatten, {linear: {out: 10}}]}\n" TAIL,
        "t.yaml:1:39: data.train: not used with fashion-mnist (it reads the standard files in data.path)",
        "t.yaml:1:71: data.header: only for csv datasets", NULL);
    expect_problems(
        "data:\n"
        "  dataset: csv\n"
        "  train: t.csv\n"
        "  transforms: [{normalize: {mean: [0.5, 0.5], std: [0.2]}}, {random_crop: {sise: 3}}]\n"
        "model: {layers: [relu]}\n" TAIL,
        "t.yaml:4:52: normalize: mean has 2 values but std has 1",
        "t.yaml:4:76: random_crop: unknown key 'sise' (did you mean 'size'?)", NULL);
    YT_ASSERT_NO_LEAKS();
}

Test(cli_config, optimizer_and_schedule_rules)
{
    expect_problems(
        DATA "model: {layers: [flatten, {linear: {out: 10}}]}\n"
             "optimizer: {name: sgd, lr: 0.1, nesterov: true}\n"
             "schedule: {name: warmup_cosine, warmup: 3}\n"
             "epochs: 3\n",
        "t.yaml:3:43: optimizer.nesterov: needs momentum > 0 and dampening 0 (got momentum 0, dampening 0)",
        "t.yaml:4:11: schedule.warmup: 3 warm-up epochs leave nothing of the 3-epoch run", NULL);
    expect_problems(DATA "model: {layers: [flatten, {linear: {out: 10}}]}\n"
                         "optimizer: {name: adam, betas: [0.9, 1.0]}\n"
                         "schedule: {name: multistep, milestones: [3, 2]}\n"
                         "epochs: 3\n",
                    "t.yaml:3:32: optimizer.betas: each must be in [0, 1), got [0.9, 1]",
                    "t.yaml:4:45: schedule.milestones: must increase, but 2 follows 3", NULL);
    expect_problems(
        DATA "model: {layers: [flatten, {linear: {out: 10}}]}\n" OPTIM
             "schedule: {name: onecycle, interval: epoch}\n"
             "epochs: 3\n",
        "t.yaml:4:11: schedule: missing required key 'max_lr'",
        "t.yaml:4:38: schedule.interval: onecycle steps after every batch (interval: step)", NULL);
    YT_ASSERT_NO_LEAKS();
}

Test(cli_config, cuda_is_a_clear_error)
{
    expect_problems(DATA "model: {layers: [flatten, {linear: {out: 10}}]}\n" TAIL "device: cuda\n",
                    "t.yaml:5:9: device: this yaten was built without CUDA; use device: cpu", NULL);
    YT_ASSERT_NO_LEAKS();
}

Test(cli_config, an_unreadable_file)
{
    cr_assert(!cfg_load_file(&cfg, "/nonexistent/x.yaml"));
    cr_assert_eq(cfg.doc.n_diags, 1);
    cr_assert_str_eq(cfg.doc.diags[0],
                     "/nonexistent/x.yaml: cannot read the config: No such file or directory");
    cfg_free(&cfg);
    YT_ASSERT_NO_LEAKS();
}

Test(cli_config, did_you_mean)
{
    static const char *const keys[] = {"batch_size", "shuffle", "workers", "dataset"};
    cr_assert_str_eq(yr_suggest("batch_sise", keys, 4), "batch_size");
    cr_assert_str_eq(yr_suggest("Shuffle", keys, 4), "shuffle", "case does not count");
    cr_assert_str_eq(yr_suggest("wokrers", keys, 4), "workers", "a transposition is one edit");
    cr_assert_null(yr_suggest("colour", keys, 4));
    cr_assert_null(yr_suggest("x", keys, 4));
    YT_ASSERT_NO_LEAKS();
}
