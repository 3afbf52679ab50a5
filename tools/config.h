/* An experiment config (`yaten train CONFIG.yaml`): the typed result of parsing and checking the
 * YAML. Every problem is reported as `CONFIG:LINE:COL: message` before anything is built. The
 * keys, their defaults and ranges are listed in README.md ("The yaten command"). */
#ifndef YT_TOOLS_CONFIG_H
#define YT_TOOLS_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "layers.h"
#include "yamlread.h"

enum { CFG_MAX_TRANSFORMS = 8, CFG_MAX_CHANNELS = 16, CFG_MAX_MILESTONES = 32 };

typedef enum cfg_dataset_kind {
    DATASET_FASHION_MNIST,
    DATASET_MNIST,
    DATASET_IDX,
    DATASET_NPY,
    DATASET_CSV,
} cfg_dataset_kind;
extern const char *const cfg_dataset_names[];

/* One split: idx/npy take `inputs` + `targets` (idx: images + labels), csv one `file`. */
typedef struct cfg_split {
    char *inputs, *targets;
    yr_pos pos;
} cfg_split;

typedef enum cfg_transform_kind {
    TRANSFORM_NORMALIZE,
    TRANSFORM_RANDOM_CROP,
    TRANSFORM_RANDOM_HORIZONTAL_FLIP,
} cfg_transform_kind;

typedef struct cfg_transform {
    cfg_transform_kind kind;
    yr_pos pos;
    double mean[CFG_MAX_CHANNELS], std[CFG_MAX_CHANNELS]; /* normalize */
    int n_mean, n_std;
    int64_t size[2], padding; /* random_crop */
    double p;                 /* random_horizontal_flip */
} cfg_transform;

typedef struct cfg_data {
    cfg_dataset_kind dataset;
    yr_pos pos;
    char *path; /* fashion-mnist / mnist folder */
    cfg_split train, test;
    bool has_test;
    int64_t batch_size, test_batch_size;
    bool shuffle, drop_last;
    int64_t workers, prefetch;
    int64_t label_column; /* csv */
    bool header;          /* csv */
    cfg_transform transforms[CFG_MAX_TRANSFORMS];
    int n_transforms;
} cfg_data;

typedef struct cfg_model {
    yr_pos pos;
    cli_shape input; /* model.input, or the dataset's (ndim 0 = not known yet) */
    bool input_given;
    yr_pos input_pos;
    cfg_layer *layers;
    int n_layers;
    cli_shape output; /* after layers_infer */
    bool checked;     /* shapes inferred */
} cfg_model;

typedef enum cfg_loss_kind {
    LOSS_CROSS_ENTROPY,
    LOSS_NLL,
    LOSS_MSE,
    LOSS_L1,
    LOSS_SMOOTH_L1,
    LOSS_BCE,
    LOSS_BCE_WITH_LOGITS,
} cfg_loss_kind;
extern const char *const cfg_loss_names[];

typedef struct cfg_loss {
    cfg_loss_kind kind;
    yr_pos pos;
    double label_smoothing; /* cross_entropy */
    double beta;            /* smooth_l1 */
} cfg_loss;

typedef enum cfg_optim_kind {
    OPTIM_SGD,
    OPTIM_ADAM,
    OPTIM_ADAMW,
    OPTIM_RMSPROP,
    OPTIM_ADAGRAD
} cfg_optim_kind;
extern const char *const cfg_optim_names[];

typedef struct cfg_optim {
    cfg_optim_kind kind;
    yr_pos pos;
    double lr, weight_decay;
    double momentum, dampening;                 /* sgd, rmsprop (momentum) */
    bool nesterov;                              /* sgd */
    double beta1, beta2, eps;                   /* adam, adamw; eps also rmsprop, adagrad */
    bool amsgrad;                               /* adam, adamw */
    double alpha;                               /* rmsprop */
    bool centered;                              /* rmsprop */
    double lr_decay, initial_accumulator_value; /* adagrad */
    bool maximize;
    double clip_grad_norm, clip_grad_value; /* 0 = off */
} cfg_optim;

typedef enum cfg_sched_kind {
    SCHED_NONE,
    SCHED_STEP,
    SCHED_MULTISTEP,
    SCHED_EXPONENTIAL,
    SCHED_COSINE,
    SCHED_WARMUP_COSINE,
    SCHED_ONECYCLE,
    SCHED_PLATEAU,
} cfg_sched_kind;
extern const char *const cfg_sched_names[];

typedef struct cfg_schedule {
    cfg_sched_kind kind;
    yr_pos pos;
    bool per_step; /* `interval: step`: step the scheduler after every batch, not every epoch */
    int64_t step_size;
    double gamma;
    int64_t milestones[CFG_MAX_MILESTONES];
    int n_milestones;
    int64_t t_max; /* 0 = the whole run (epochs, or batches when per_step) */
    double eta_min;
    int64_t warmup;      /* warmup_cosine: warm-up length (epochs or batches) */
    double start_factor; /* warmup_cosine */
    double max_lr, pct_start, div_factor, final_div_factor; /* onecycle */
    bool anneal_cos;                                        /* onecycle */
    bool mode_max;                                          /* plateau: metric should rise */
    int monitor; /* plateau: 0 test_loss, 1 train_loss, 2 test_acc */
    double factor, threshold, min_lr;
    int64_t patience, cooldown;
} cfg_schedule;

typedef struct cfg_config {
    char *file; /* name in messages: the path, or "<default config>" */
    char *text; /* the YAML source (stored in checkpoints) */
    cfg_data data;
    cfg_model model;
    cfg_loss loss;
    cfg_optim optim;
    cfg_schedule schedule;
    int64_t epochs;
    uint64_t seed;
    int64_t threads;          /* 0 = the library's default */
    char *output;             /* output folder */
    int64_t checkpoint_every; /* epochs; 0 = only at the end */
    yr_doc doc;               /* kept for messages reported after parsing (shapes) */
} cfg_config;

/* Parses and checks `text` (the YAML of `file`). Returns true when the config is usable; every
 * problem is in cfg->doc's diagnostics (print them with cfg_print_errors). The model's shapes are
 * inferred when model.input or the dataset fixes the input shape; otherwise call
 * cfg_check_shapes once the dataset is open. Free with cfg_free in every case. */
bool cfg_parse(cfg_config *cfg, const char *file, const char *text, size_t len);

/* Reads `path` and parses it. A missing or unreadable file is reported as `PATH: message`. */
bool cfg_load_file(cfg_config *cfg, const char *path);

/* Infers the layers' shapes from `input` (a sample's shape) and checks the loss against the
 * model's output and `target` (ndim 0 with integer=true: class indices; `n_classes` > 0 when
 * known). Reports at the layer's line. */
bool cfg_check_shapes(cfg_config *cfg, const cli_shape *input, const cli_shape *target,
                      int64_t n_classes);

void cfg_print_errors(const cfg_config *cfg, FILE *f);
void cfg_free(cfg_config *cfg);

/* The embedded default config (examples/fashion_cnn.yaml, compiled into the binary). */
extern const char cli_default_config[];
size_t cli_default_config_len(void);

#endif
