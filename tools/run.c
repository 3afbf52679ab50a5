/* Datasets, loaders, model, loss, optimizer and schedule of a config, and evaluation. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "model.h"
#include "run.h"

/* A problem caused by the config (a file it names, a shape that does not fit), at its position. */
static int config_error(run_state *r, yr_pos pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
config_error(run_state *r, yr_pos pos, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (pos.line > 0)
        fprintf(stderr, "%s:%d:%d: %s\n", r->cfg->file, pos.line, pos.col, msg);
    else
        fprintf(stderr, "%s: %s\n", r->cfg->file, msg);
    return CLI_USAGE;
}

static int
failed(run_state *r, const char *what)
{
    fprintf(stderr, "yaten %s: %s: %s\n", r->cmd, what, yt_errmsg());
    return CLI_FAILED;
}

/* ---- datasets */

/* DIR/NAME.gz when it exists, else DIR/NAME when that exists, else DIR/NAME.gz (the error names
 * it). */
static void
idx_file(const char *dir, const char *name, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/%s.gz", dir, name);
    if (access(buf, R_OK) == 0)
        return;
    snprintf(buf, cap, "%s/%s", dir, name);
    if (access(buf, R_OK) == 0)
        return;
    snprintf(buf, cap, "%s/%s.gz", dir, name);
}

static yt_dataset *
open_npy(const cfg_split *s)
{
    yt_tensor *x = yt_npy_load(s->inputs);
    yt_tensor *y = x ? yt_npy_load(s->targets) : NULL;
    yt_dataset *d = y ? yt_tensor_dataset_new(x, y) : NULL;
    yt_release(y);
    yt_release(x);
    return d;
}

static yt_dataset *
open_split(run_state *r, bool test)
{
    const cfg_data *data = &r->cfg->data;
    const cfg_split *s = test ? &data->test : &data->train;
    yt_dataset *d = NULL;
    yr_pos pos = s->pos;
    switch (data->dataset) {
    case DATASET_FASHION_MNIST:
    case DATASET_MNIST: {
        char images[4096], labels[4096];
        idx_file(data->path, test ? "t10k-images-idx3-ubyte" : "train-images-idx3-ubyte", images,
                 sizeof images);
        idx_file(data->path, test ? "t10k-labels-idx1-ubyte" : "train-labels-idx1-ubyte", labels,
                 sizeof labels);
        d = yt_idx_dataset_open(images, labels);
        pos = data->pos;
        if (d == NULL && data->dataset == DATASET_FASHION_MNIST &&
            strcmp(data->path, "/usr/share/datasets/fashion-mnist") == 0 &&
            access(images, R_OK) != 0)
            fprintf(stderr,
                    "yaten: Fashion-MNIST comes with the Debian package dataset-fashion-mnist "
                    "(make deps-demo installs it)\n");
        break;
    }
    case DATASET_IDX:
        d = yt_idx_dataset_open(s->inputs, s->targets);
        break;
    case DATASET_NPY:
        d = open_npy(s);
        break;
    case DATASET_CSV:
        d = yt_csv_dataset_open(s->inputs, (int)data->label_column, data->header);
        break;
    }
    if (d == NULL) {
        config_error(r, pos, "data.%s: %s", test ? "test" : "train", yt_errmsg());
        return NULL;
    }
    if (yt_dataset_length(d) == 0) {
        config_error(r, pos, "data.%s: the dataset has no samples", test ? "test" : "train");
        yt_dataset_release(d);
        return NULL;
    }
    return d;
}

static bool
is_integral(yt_dtype t)
{
    return t != YT_DTYPE_NONE && !yt_dtype_is_floating(t);
}

static cli_shape
shape_of(const int64_t *d, int ndim, bool integer)
{
    cli_shape s = {.ndim = ndim, .integer = integer};
    for (int i = 0; i < ndim && i < SHAPE_MAX_DIM; i++)
        s.d[i] = d[i];
    return s;
}

/* Number of classes of integer targets: 10 for the MNISTs, max + 1 for in-memory npy targets,
 * unknown (0) otherwise. */
static int64_t
count_classes(run_state *r)
{
    cfg_dataset_kind k = r->cfg->data.dataset;
    if (k == DATASET_FASHION_MNIST || k == DATASET_MNIST)
        return 10;
    if (k != DATASET_NPY)
        return 0;
    yt_tensor *y = yt_npy_load(r->cfg->data.train.targets);
    yt_tensor *m = y ? yt_amax(y) : NULL;
    int64_t n = m ? (int64_t)yt_item(m) + 1 : 0;
    yt_release(m);
    yt_release(y);
    yt_clear_error();
    return n;
}

/* The first layer takes integer indices: keep integer inputs as they are. */
static bool
embedding_first(const cfg_config *cfg)
{
    return cfg->model.n_layers > 0 && strcmp(cfg->model.layers[0].def->name, "embedding") == 0;
}

static int
check_shapes(run_state *r)
{
    cfg_config *cfg = r->cfg;
    int nd, td;
    const int64_t *in = yt_dataset_input_shape(r->train_set, &nd);
    const int64_t *tg = yt_dataset_target_shape(r->train_set, &td);
    yt_dtype it = yt_dataset_input_dtype(r->train_set), tt = yt_dataset_target_dtype(r->train_set);
    if (tt == YT_DTYPE_NONE)
        return config_error(r, cfg->data.train.pos, "data.train: the dataset has no targets");
    if (nd > SHAPE_MAX_DIM - 1 || td > SHAPE_MAX_DIM - 1)
        return config_error(r, cfg->data.train.pos, "data.train: samples have too many dimensions");
    cli_shape input = shape_of(in, nd, is_integral(it) && embedding_first(cfg));
    cli_shape target = shape_of(tg, td, is_integral(tt));
    if (r->test_set != NULL && r->test_set != r->train_set) {
        int nd2, td2;
        const int64_t *in2 = yt_dataset_input_shape(r->test_set, &nd2);
        const int64_t *tg2 = yt_dataset_target_shape(r->test_set, &td2);
        cli_shape a = shape_of(in2, nd2, false), b = shape_of(tg2, td2, false);
        bool same = nd2 == nd && td2 == td && memcmp(in, in2, sizeof(int64_t) * (size_t)nd) == 0 &&
                    memcmp(tg, tg2, sizeof(int64_t) * (size_t)td) == 0;
        if (!same) {
            char s1[96], s2[96], s3[96], s4[96];
            input.integer = target.integer = false;
            return config_error(
                r, cfg->data.test.pos,
                "data.test: samples %s with targets %s, but the training samples are %s with targets %s",
                cli_shape_str(&a, s1, sizeof s1), cli_shape_str(&b, s2, sizeof s2),
                cli_shape_str(&input, s3, sizeof s3), cli_shape_str(&target, s4, sizeof s4));
        }
    }
    int before = cfg->doc.n_diags;
    if (!cfg_check_shapes(cfg, &input, &target, target.integer ? count_classes(r) : 0)) {
        yr_sort_diags(&cfg->doc);
        for (int i = before; i < cfg->doc.n_diags && i < YR_MAX_DIAGS; i++)
            fprintf(stderr, "%s\n", cfg->doc.diags[i]);
        return CLI_USAGE;
    }
    r->classes =
        target.integer && (cfg->loss.kind == LOSS_CROSS_ENTROPY || cfg->loss.kind == LOSS_NLL);
    r->target_dtype = target.integer ? YT_DTYPE_I64 : YT_DTYPE_F32;
    r->float_inputs = !embedding_first(cfg);
    /* The model's input with the batch dimension; a reshape when model.input differs. */
    const cli_shape *mi = &cfg->model.layers[0].in_shape;
    r->input_ndim = mi->ndim + 1;
    r->input_shape[0] = -1;
    memcpy(r->input_shape + 1, mi->d, sizeof(int64_t) * (size_t)mi->ndim);
    int ln;
    const int64_t *ls =
        r->train ? yt_loader_input_shape(r->train, &ln) : yt_loader_input_shape(r->test, &ln);
    r->reshape = ln != mi->ndim || memcmp(ls, mi->d, sizeof(int64_t) * (size_t)ln) != 0;
    return CLI_OK;
}

static int
make_loader(run_state *r, yt_dataset *d, bool train, yt_loader **out)
{
    const cfg_data *data = &r->cfg->data;
    yt_transform tf[CFG_MAX_TRANSFORMS];
    int n = 0;
    for (int i = 0; i < data->n_transforms; i++) {
        const cfg_transform *t = &data->transforms[i];
        if (t->kind == TRANSFORM_NORMALIZE)
            tf[n++] = yt_transform_normalize(t->mean, t->std, t->n_mean);
        else if (train && t->kind == TRANSFORM_RANDOM_CROP)
            tf[n++] = yt_transform_random_crop(t->size[0], t->size[1], t->padding);
        else if (train)
            tf[n++] = yt_transform_random_horizontal_flip(t->p);
    }
    yt_loader_options o = {
        .batch_size = train ? data->batch_size : data->test_batch_size,
        .shuffle = train && data->shuffle,
        .drop_last = train && data->drop_last,
        .seed = r->cfg->seed,
        .workers = (int)data->workers,
        .prefetch = (int)data->prefetch,
        .transforms = tf,
        .n_transforms = n,
    };
    *out = yt_loader_new(d, &o);
    if (*out == NULL) {
        yr_pos pos = data->n_transforms ? data->transforms[0].pos : data->pos;
        return config_error(r, pos, "data: %s", yt_errmsg());
    }
    return CLI_OK;
}

int
run_open(run_state *r, cfg_config *cfg, const char *cmd, bool train)
{
    memset(r, 0, sizeof *r);
    r->cfg = cfg;
    r->cmd = cmd;
    yt_named_tensors empty = YT_NAMED_TENSORS_INIT;
    r->params = empty;
    int rc;
    bool has_test = cfg->data.has_test;
    /* The training split gives the shapes; eval without a test split evaluates on it. */
    if ((r->train_set = open_split(r, false)) == NULL)
        return CLI_USAGE;
    if (has_test && (r->test_set = open_split(r, true)) == NULL)
        return CLI_USAGE;
    if (!has_test && !train) {
        if (strcmp(cmd, "eval") == 0)
            fprintf(stderr,
                    "yaten %s: the config has no data.test: evaluating on the training split\n",
                    cmd);
        r->test_set = yt_dataset_retain(r->train_set);
    }
    if (train && (rc = make_loader(r, r->train_set, true, &r->train)) != CLI_OK)
        return rc;
    if (r->test_set != NULL && (rc = make_loader(r, r->test_set, false, &r->test)) != CLI_OK)
        return rc;
    return check_shapes(r);
}

int
run_check_with_data(cfg_config *cfg)
{
    run_state r;
    int rc = run_open(&r, cfg, "check", false);
    run_close(&r);
    return rc;
}

/* ---- model, optimizer, schedule */

static yt_optimizer *
make_optimizer(run_state *r)
{
    const cfg_optim *o = &r->cfg->optim;
    switch (o->kind) {
    case OPTIM_SGD: {
        yt_sgd_options s = {.lr = o->lr,
                            .momentum = o->momentum,
                            .dampening = o->dampening,
                            .weight_decay = o->weight_decay,
                            .nesterov = o->nesterov,
                            .maximize = o->maximize};
        return yt_sgd_new(&r->params, &s);
    }
    case OPTIM_ADAM:
    case OPTIM_ADAMW: {
        yt_adam_options a = {.lr = o->lr,
                             .beta1 = o->beta1,
                             .beta2 = o->beta2,
                             .eps = o->eps,
                             .weight_decay = o->weight_decay,
                             .amsgrad = o->amsgrad,
                             .maximize = o->maximize};
        return o->kind == OPTIM_ADAM ? yt_adam_new(&r->params, &a) : yt_adamw_new(&r->params, &a);
    }
    case OPTIM_RMSPROP: {
        yt_rmsprop_options s = {.lr = o->lr,
                                .alpha = o->alpha,
                                .eps = o->eps,
                                .weight_decay = o->weight_decay,
                                .momentum = o->momentum,
                                .centered = o->centered,
                                .maximize = o->maximize};
        return yt_rmsprop_new(&r->params, &s);
    }
    case OPTIM_ADAGRAD: {
        yt_adagrad_options a = {.lr = o->lr,
                                .lr_decay = o->lr_decay,
                                .weight_decay = o->weight_decay,
                                .initial_accumulator_value = o->initial_accumulator_value,
                                .eps = o->eps,
                                .maximize = o->maximize};
        return yt_adagrad_new(&r->params, &a);
    }
    }
    return NULL;
}

static yt_scheduler *
make_scheduler(run_state *r, bool *none)
{
    const cfg_schedule *s = &r->cfg->schedule;
    int64_t total = r->cfg->epochs * (s->per_step ? yt_loader_batches_per_epoch(r->train) : 1);
    *none = false;
    switch (s->kind) {
    case SCHED_NONE:
        *none = true;
        return NULL;
    case SCHED_STEP:
        return yt_step_lr_new(r->optim, s->step_size, s->gamma);
    case SCHED_MULTISTEP:
        return yt_multi_step_lr_new(r->optim, s->milestones, s->n_milestones, s->gamma);
    case SCHED_EXPONENTIAL:
        return yt_exponential_lr_new(r->optim, s->gamma);
    case SCHED_COSINE:
        return yt_cosine_annealing_lr_new(r->optim, s->t_max ? s->t_max : total, s->eta_min);
    case SCHED_WARMUP_COSINE: {
        int64_t rest = s->t_max ? s->t_max : total - s->warmup;
        yt_scheduler *parts[2] = {
            yt_linear_lr_new(r->optim, s->start_factor, 1.0, s->warmup),
            yt_cosine_annealing_lr_new(r->optim, rest > 0 ? rest : 1, s->eta_min),
        };
        return yt_sequential_lr_new(r->optim, parts, 2, &s->warmup);
    }
    case SCHED_ONECYCLE: {
        yt_one_cycle_options o = YT_ONE_CYCLE_DEFAULTS;
        o.max_lr = s->max_lr;
        o.total_steps = total;
        o.pct_start = s->pct_start;
        o.div_factor = s->div_factor;
        o.final_div_factor = s->final_div_factor;
        o.anneal_strategy = s->anneal_cos ? YT_ANNEAL_COS : YT_ANNEAL_LINEAR;
        return yt_one_cycle_lr_new(r->optim, &o);
    }
    case SCHED_PLATEAU: {
        yt_plateau_options o = YT_PLATEAU_DEFAULTS;
        o.mode = s->mode_max ? YT_PLATEAU_MAX : YT_PLATEAU_MIN;
        o.factor = s->factor;
        o.patience = s->patience;
        o.threshold = s->threshold;
        o.cooldown = s->cooldown;
        o.min_lr = s->min_lr;
        return yt_reduce_lr_on_plateau_new(r->optim, &o);
    }
    }
    return NULL;
}

int
run_build(run_state *r, bool train)
{
    cfg_config *cfg = r->cfg;
    char err[1024];
    yt_manual_seed(cfg->seed);
    if ((r->model = model_build(cfg, err, sizeof err)) == NULL ||
        (r->loss = loss_build(cfg, err, sizeof err)) == NULL) {
        fprintf(stderr, "%s\n", err);
        return CLI_FAILED;
    }
    if (!train)
        return CLI_OK;
    if (yt_module_parameters(r->model, &r->params) != YT_OK)
        return failed(r, "model");
    if (r->params.count == 0) {
        fprintf(stderr, "%s: model: the layers have no parameters to train\n", cfg->file);
        return CLI_USAGE;
    }
    if ((r->optim = make_optimizer(r)) == NULL)
        return config_error(r, cfg->optim.pos, "optimizer: %s", yt_errmsg());
    bool none;
    r->sched = make_scheduler(r, &none);
    if (r->sched == NULL && !none)
        return config_error(r, cfg->schedule.pos, "schedule: %s", yt_errmsg());
    return CLI_OK;
}

void
run_close(run_state *r)
{
    yt_scheduler_release(r->sched);
    yt_optimizer_release(r->optim);
    yt_named_tensors_clear(&r->params);
    yt_module_release(r->loss);
    yt_module_release(r->model);
    yt_loader_release(r->test);
    yt_loader_release(r->train);
    yt_dataset_release(r->test_set);
    yt_dataset_release(r->train_set);
    memset(r, 0, sizeof *r);
}

/* ---- batches and evaluation */

yt_tensor *
run_prepare_input(run_state *r, yt_tensor *x)
{
    if (x == NULL)
        return NULL;
    if (r->float_inputs && yt_tensor_dtype(x) != YT_DTYPE_F32)
        x = yt_to(x, YT_DTYPE_F32);
    if (r->reshape) {
        int64_t shape[SHAPE_MAX_DIM + 1];
        memcpy(shape, r->input_shape, sizeof(int64_t) * (size_t)r->input_ndim);
        shape[0] = yt_tensor_size(x, 0);
        x = yt_reshape(x, shape, r->input_ndim);
    }
    return x;
}

yt_tensor *
run_prepare_target(run_state *r, yt_tensor *y)
{
    if (y != NULL && yt_tensor_dtype(y) != r->target_dtype)
        return yt_to(y, r->target_dtype);
    return y;
}

int
run_evaluate(run_state *r, volatile sig_atomic_t *stop, double *loss, double *acc)
{
    *loss = *acc = NAN;
    if (r->test == NULL)
        return CLI_OK;
    bool was_training = yt_module_is_training(r->model);
    bool grad = yt_set_grad_enabled(false);
    yt_module_train(r->model, false);
    double loss_sum = 0, correct = 0;
    int64_t n = 0;
    int rc = yt_loader_start_epoch(r->test, 0) == YT_OK ? CLI_OK : failed(r, "test data");
    while (rc == CLI_OK && !(stop && *stop)) {
        yt_scope_begin();
        yt_tensor *x = NULL, *y = NULL;
        if (yt_loader_next(r->test, &x, &y) != YT_OK) {
            rc = failed(r, "test data");
        } else if (x != NULL) {
            int64_t b = yt_tensor_size(x, 0);
            y = run_prepare_target(r, y);
            yt_tensor *out = yt_module_forward(r->model, run_prepare_input(r, x));
            yt_tensor *l = yt_module_forward2(r->loss, out, y);
            yt_tensor *hits = r->classes ? yt_sum(yt_eq(yt_argmax_ex(out, 1, false), y)) : NULL;
            if (l == NULL || (r->classes && hits == NULL)) {
                rc = failed(r, "evaluation");
            } else {
                loss_sum += yt_item(l) * (double)b;
                correct += r->classes ? yt_item(hits) : 0;
                n += b;
            }
        }
        yt_scope_end();
        if (x == NULL)
            break;
    }
    yt_module_train(r->model, was_training);
    yt_set_grad_enabled(grad);
    if (rc == CLI_OK && n > 0) {
        *loss = loss_sum / (double)n;
        *acc = r->classes ? correct / (double)n : NAN;
    }
    return rc;
}
