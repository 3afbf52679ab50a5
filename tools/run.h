/* What `yaten train`, `yaten eval` and `yaten check` share: loading a config, opening its
 * datasets, building its model, loss, optimizer and schedule, evaluating, and checkpoints. */
#ifndef YT_TOOLS_RUN_H
#define YT_TOOLS_RUN_H

#include <signal.h>
#include <stdio.h>

#include <yaten.h>

#include "config.h"

/* Loads `path` (NULL: the embedded default) into *cfg. On problems prints them and a summary to
 * stderr, frees cfg and returns CLI_USAGE. */
int cli_load_config(const char *cmd, const char *path, cfg_config *cfg);

/* The layer table with each layer's arguments and output shape. */
void cli_print_model(const cfg_config *cfg, FILE *f);

/* Opens the config's datasets to learn the sample and target shapes and checks the model
 * against them. Prints problems; returns CLI_OK or CLI_USAGE. */
int run_check_with_data(cfg_config *cfg);

enum { HISTORY_COLS = 6 }; /* epoch, train_loss, test_loss, test_acc, lr, seconds */

/* Where training stands: what a checkpoint holds beside the library objects' state dicts. */
typedef struct train_progress {
    int64_t epoch;   /* the epoch under way (0-based); = epochs when training is done */
    int64_t batches; /* batches done in this epoch */
    int64_t samples; /* samples done in this epoch */
    double loss_sum; /* sum of the batch losses of this epoch */
    double seconds;  /* training time spent in this epoch so far */
    double lr;       /* the learning rate at the start of this epoch (for metrics.csv) */
    int64_t step;    /* optimizer steps since the start of training */
    double *history; /* n_history rows of HISTORY_COLS values, one per finished epoch */
    int64_t n_history;
} train_progress;

typedef struct run_state {
    cfg_config *cfg;
    const char *cmd;
    yt_dataset *train_set, *test_set;
    yt_loader *train, *test;
    yt_module *model, *loss;
    yt_named_tensors params;
    yt_optimizer *optim;
    yt_scheduler *sched;
    bool classes;      /* class-index targets: accuracy is measured */
    bool float_inputs; /* integer inputs are converted to f32 (no embedding first) */
    bool reshape;      /* model.input differs from the loader's sample shape */
    int input_ndim;    /* with the batch dimension */
    int64_t input_shape[SHAPE_MAX_DIM + 1];
    yt_dtype target_dtype; /* what the loss wants: i64 for classes, else f32 */
} run_state;

/* Opens the datasets (the test split only when `train` is false) and their loaders, and checks
 * the config's shapes against them. Returns CLI_OK, CLI_USAGE (a config problem, reported as
 * CONFIG:LINE:COL) or CLI_FAILED. */
int run_open(run_state *r, cfg_config *cfg, const char *cmd, bool train);

/* Seeds the default generator and builds the model and loss, then (when `train`) the optimizer
 * and schedule. */
int run_build(run_state *r, bool train);

void run_close(run_state *r);

/* The batch as the model wants it: reshaped to model.input, integers converted to f32. Returns a
 * new reference in the current scope, or NULL with the library's error. */
yt_tensor *run_prepare_input(run_state *r, yt_tensor *x);
yt_tensor *run_prepare_target(run_state *r, yt_tensor *y);

/* Mean loss and accuracy (NAN without class targets) over the test loader (for eval without a
 * test split: the training split), in eval mode without gradients; NAN for both without a test
 * loader. Stops early when *stop (may be NULL) becomes non-zero. Returns CLI_OK or CLI_FAILED
 * (message printed). */
int run_evaluate(run_state *r, volatile sig_atomic_t *stop, double *loss, double *acc);

/* Checkpoints: model, optimizer, scheduler, training loader, default generator and progress in
 * one safetensors file, with the config's text in the metadata. */
int run_save_checkpoint(run_state *r, const train_progress *p, const char *path);
int run_load_checkpoint(run_state *r, train_progress *p, const char *path);
/* The "config" stored in a checkpoint (malloc'd), or NULL when it has none. */
char *run_checkpoint_config(const char *path);
/* The model's weights only (for eval): a checkpoint's model part or a plain state dict. */
int run_load_weights(run_state *r, const char *path);

void progress_free(train_progress *p);

#endif
