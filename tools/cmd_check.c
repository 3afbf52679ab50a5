/* `yaten check [CONFIG]` (parse, check and show the model's shapes), `yaten config` (print the
 * embedded default) and the config reference of `yaten help config`. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "run.h"

int
cli_load_config(const char *cmd, const char *path, cfg_config *cfg)
{
    bool ok = path != NULL ? cfg_load_file(cfg, path)
                           : cfg_parse(cfg, "<default config>", cli_default_config,
                                       cli_default_config_len());
    if (!ok) {
        cfg_print_errors(cfg, stderr);
        fprintf(stderr, "yaten %s: %d problem%s in %s; nothing was run\n", cmd, cfg->doc.n_diags,
                cfg->doc.n_diags == 1 ? "" : "s", cfg->file ? cfg->file : path);
        cfg_free(cfg);
        return CLI_USAGE;
    }
    return CLI_OK;
}

void
cli_print_model(const cfg_config *cfg, FILE *f)
{
    const cfg_model *m = &cfg->model;
    char shape[96], args[256];
    fprintf(f, "  %-4s %-26s %-36s %s\n", "#", "layer", "arguments", "output");
    if (m->checked && m->n_layers > 0)
        fprintf(f, "  %-4s %-26s %-36s %s\n", "", "input", "",
                cli_shape_str(&m->layers[0].in_shape, shape, sizeof shape));
    for (int i = 0; i < m->n_layers; i++) {
        const cfg_layer *l = &m->layers[i];
        fprintf(f, "  %-4d %-26s %-36s %s\n", i, l->def->name, layer_describe(l, args, sizeof args),
                m->checked ? cli_shape_str(&l->out_shape, shape, sizeof shape) : "?");
    }
}

void
help_check(void)
{
    printf(
        "usage: yaten check [CONFIG.yaml]\n"
        "\n"
        "Parses and checks a config as `yaten train` does (keys, types, ranges, the shapes of the\n"
        "layers from the dataset's samples to the loss), prints the model layer by layer and\n"
        "trains nothing. Without CONFIG it checks the embedded default. Exit status 2 when the\n"
        "config has problems, each reported as CONFIG:LINE:COL: message.\n");
}

int
cmd_check(int argc, char **argv)
{
    const char *path = NULL;
    int n_pos;
    int rc = cli_parse_args("check", argc, argv, NULL, 0, &path, 1, &n_pos);
    if (rc < 0) {
        help_check();
        return CLI_OK;
    }
    if (rc != CLI_OK)
        return rc;
    cfg_config cfg;
    if ((rc = cli_load_config("check", path, &cfg)) != CLI_OK)
        return rc;
    /* The data files too: their samples' shapes are what the model must fit. */
    if ((rc = run_check_with_data(&cfg)) != CLI_OK) {
        cfg_free(&cfg);
        return rc;
    }
    printf("%s: OK\n", cfg.file);
    cli_print_model(&cfg, stdout);
    printf("loss %s, optimizer %s (lr %g), schedule %s, %lld epoch%s, batch size %lld\n",
           cfg_loss_names[cfg.loss.kind], cfg_optim_names[cfg.optim.kind], cfg.optim.lr,
           cfg_sched_names[cfg.schedule.kind], (long long)cfg.epochs, cfg.epochs == 1 ? "" : "s",
           (long long)cfg.data.batch_size);
    cfg_free(&cfg);
    return CLI_OK;
}

int
cmd_config(int argc, char **argv)
{
    int n_pos;
    const char *none;
    int rc = cli_parse_args("config", argc, argv, NULL, 0, &none, 0, &n_pos);
    if (rc < 0) {
        printf(
            "usage: yaten config\n\nPrints the embedded default config (examples/fashion_cnn.yaml) "
            "to start your own:\n  yaten config > my.yaml\n");
        return CLI_OK;
    }
    if (rc != CLI_OK)
        return rc;
    fwrite(cli_default_config, 1, cli_default_config_len(), stdout);
    return CLI_OK;
}

void
help_config_keys(void)
{
    printf(
        "A config is a YAML mapping. Paths are relative to the folder yaten runs in.\n"
        "\n"
        "data:                      (required)\n"
        "  dataset: fashion-mnist | mnist | idx | npy | csv         (required)\n"
        "  path: DIR                fashion-mnist/mnist folder (default /usr/share/datasets/<name>)\n"
        "  train: ...               idx: {images: F, labels: F}; npy: {inputs: F.npy, targets: F.npy};\n"
        "                           csv: FILE (required for idx, npy and csv)\n"
        "  test: ...                the same form; optional (no test: no test accuracy)\n"
        "  batch_size: 64           test_batch_size: max(256, batch_size)\n"
        "  shuffle: true            drop_last: false\n"
        "  workers: 1               loader threads (0: load in the training thread); prefetch: 2\n"
        "  label_column: 0          csv: the column holding the target (-1: the last)\n"
        "  header: false            csv: skip a header line\n"
        "  transforms:              applied in order to training samples (normalize to test ones too)\n"
        "    - normalize: {mean: [0.2860], std: [0.3530]}\n"
        "    - random_crop: {size: 28, padding: 4}\n"
        "    - random_horizontal_flip: {p: 0.5}\n"
        "model:                     (required)\n"
        "  input: [1, 28, 28]       a sample's shape (default: the dataset's); reshapes samples\n"
        "  layers:                  a list; `yaten help layers` lists every layer and argument\n"
        "    - conv2d: {out: 32, kernel: 3, padding: 1}   in is inferred from the previous layer\n"
        "    - relu\n"
        "loss: cross_entropy        or {name: NAME, ...}: cross_entropy (label_smoothing), nll, mse,\n"
        "                           l1, smooth_l1 (beta), bce, bce_with_logits\n"
        "optimizer:                 (required) {name: NAME, lr: ..., ...} with torch.optim's defaults:\n"
        "  sgd: lr (required), momentum, dampening, weight_decay, nesterov\n"
        "  adam, adamw: lr, betas: [0.9, 0.999], eps, weight_decay, amsgrad\n"
        "  rmsprop: lr, alpha, eps, weight_decay, momentum, centered\n"
        "  adagrad: lr, lr_decay, weight_decay, initial_accumulator_value, eps\n"
        "  all: maximize, clip_grad_norm, clip_grad_value\n"
        "schedule: none             or {name: NAME, interval: epoch | step, ...}:\n"
        "  step: step_size, gamma   multistep: milestones, gamma   exponential: gamma\n"
        "  cosine: t_max (default: the whole run), eta_min\n"
        "  warmup_cosine: warmup, start_factor, t_max, eta_min (linear warm-up, then cosine)\n"
        "  onecycle: max_lr, pct_start, div_factor, final_div_factor, anneal: cos | linear\n"
        "  plateau: monitor: test_loss | train_loss | test_acc, mode, factor, patience,\n"
        "           threshold, cooldown, min_lr\n"
        "epochs: N                  (required)\n"
        "seed: 0                    initial weights, shuffling, dropout and augmentation\n"
        "threads: 0                 0: the library's default\n"
        "device: cpu\n"
        "output: runs/NAME          metrics.csv, checkpoints, model.safetensors, metrics.png\n"
        "checkpoint_every: 1        epochs between checkpoints (0: only at the end)\n");
}
