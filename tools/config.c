/* Parsing and checking an experiment config: YAML (libyaml) -> cfg_config, with every problem
 * reported as `CONFIG:LINE:COL: message` before anything is built. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

const char *const cfg_dataset_names[] = {"fashion-mnist", "mnist", "idx", "npy", "csv"};
const char *const cfg_loss_names[] = {"cross_entropy",  "nll", "mse", "l1", "smooth_l1", "bce",
                                      "bce_with_logits"};
const char *const cfg_optim_names[] = {"sgd", "adam", "adamw", "rmsprop", "adagrad"};
const char *const cfg_sched_names[] = {"none",   "step",          "multistep", "exponential",
                                       "cosine", "warmup_cosine", "onecycle",  "plateau"};

/* Keys that belong to some variants only ("momentum" is SGD's and RMSprop's): a key valid for
 * another variant is reported as not applying, rather than unknown. */
static bool
check_variant_keys(yr_doc *d, const yaml_node_t *map, const char *where, const char *variant,
                   const char *const *own, int n_own, const char *const *all, int n_all)
{
    bool ok = true;
    int n = yr_map_len(map);
    for (int i = 0; i < n; i++) {
        yaml_node_t *key = yr_map_key(d, map, i);
        const char *k = yr_scalar(key);
        if (k == NULL)
            continue;
        bool mine = false, other = false;
        for (int j = 0; j < n_own; j++)
            mine = mine || strcmp(k, own[j]) == 0;
        for (int j = 0; j < n_all; j++)
            other = other || strcmp(k, all[j]) == 0;
        if (!mine && other) {
            yr_error(d, key, "%s: '%s' does not apply to %s", where, k, variant);
            ok = false;
        }
    }
    /* Unknown keys and duplicates: checked against the union. */
    return yr_check_keys(d, map, where, all, n_all) && ok;
}

/* ---- data */

static const char *const data_keys[] = {
    "dataset",   "path",    "train",    "test",         "batch_size", "test_batch_size", "shuffle",
    "drop_last", "workers", "prefetch", "label_column", "header",     "transforms"};

static bool
parse_split(yr_doc *d, const yaml_node_t *node, const char *where, cfg_dataset_kind kind,
            cfg_split *out)
{
    out->pos = yr_pos_of(node);
    if (kind == DATASET_CSV) {
        if (yr_is_map(node)) {
            static const char *const keys[] = {"file"};
            if (!yr_check_keys(d, node, where, keys, 1) || !yr_require(d, node, where, "file"))
                return false;
            char what[64];
            snprintf(what, sizeof what, "%s.file", where);
            return yr_string(d, yr_get(d, node, "file"), what, &out->inputs);
        }
        return yr_string(d, node, where, &out->inputs);
    }
    const char *in_key = kind == DATASET_IDX ? "images" : "inputs";
    const char *tg_key = kind == DATASET_IDX ? "labels" : "targets";
    if (!yr_is_map(node)) {
        char got[96];
        yr_error(d, node, "%s: expected {%s: FILE, %s: FILE}, got %s", where, in_key, tg_key,
                 yr_describe(node, got, sizeof got));
        return false;
    }
    const char *keys[] = {in_key, tg_key};
    bool ok = yr_check_keys(d, node, where, keys, 2);
    ok = yr_require(d, node, where, in_key) && ok;
    ok = yr_require(d, node, where, tg_key) && ok;
    if (!ok)
        return false;
    char what[64];
    snprintf(what, sizeof what, "%s.%s", where, in_key);
    ok = yr_string(d, yr_get(d, node, in_key), what, &out->inputs);
    snprintf(what, sizeof what, "%s.%s", where, tg_key);
    return yr_string(d, yr_get(d, node, tg_key), what, &out->targets) && ok;
}

static bool
parse_transform(yr_doc *d, const yaml_node_t *item, int index, cfg_transform *t)
{
    static const char *const names[] = {"normalize", "random_crop", "random_horizontal_flip"};
    char where[64], got[96];
    snprintf(where, sizeof where, "data.transforms[%d]", index);
    t->pos = yr_pos_of(item);
    const yaml_node_t *name = item, *args = NULL;
    if (yr_is_map(item) && yr_map_len(item) == 1) {
        name = yr_map_key(d, item, 0);
        args = yr_map_value(d, item, 0);
    } else if (!yr_is_scalar(item)) {
        yr_error(d, item, "%s: expected a transform name or `name: {arguments}`, got %s", where,
                 yr_describe(item, got, sizeof got));
        return false;
    }
    int kind;
    if (!yr_enum(d, name, where, names, COUNT(names), &kind))
        return false;
    t->kind = (cfg_transform_kind)kind;
    t->p = 0.5;
    if (args != NULL && !yr_is_null(args) && !yr_is_map(args)) {
        yr_error(d, args, "%s: expected a mapping of arguments, got %s", names[kind],
                 yr_describe(args, got, sizeof got));
        return false;
    }
    bool ok = true;
    char what[64];
    if (t->kind == TRANSFORM_NORMALIZE) {
        static const char *const keys[] = {"mean", "std"};
        if (!yr_is_map(args)) {
            yr_error(d, item, "normalize: needs {mean: [...], std: [...]}");
            return false;
        }
        ok = yr_check_keys(d, args, "normalize", keys, 2);
        ok = yr_require(d, args, "normalize", "mean") && ok;
        ok = yr_require(d, args, "normalize", "std") && ok;
        if (!ok)
            return false;
        ok = yr_floats(d, yr_get(d, args, "mean"), "normalize.mean", -INFINITY, INFINITY,
                       CFG_MAX_CHANNELS, t->mean, &t->n_mean);
        yaml_node_t *std_node = yr_get(d, args, "std");
        ok = yr_floats(d, std_node, "normalize.std", -INFINITY, INFINITY, CFG_MAX_CHANNELS, t->std,
                       &t->n_std) &&
             ok;
        for (int i = 0; ok && i < t->n_std; i++) {
            if (!(t->std[i] > 0)) {
                yr_error(d, std_node, "normalize.std: must be positive, got %g", t->std[i]);
                ok = false;
            }
        }
        if (ok && t->n_mean != t->n_std) {
            yr_error(d, std_node, "normalize: mean has %d value%s but std has %d", t->n_mean,
                     t->n_mean == 1 ? "" : "s", t->n_std);
            ok = false;
        }
    } else if (t->kind == TRANSFORM_RANDOM_CROP) {
        static const char *const keys[] = {"size", "padding"};
        if (!yr_is_map(args)) {
            yr_error(d, item, "random_crop: needs {size: N, padding: P}");
            return false;
        }
        ok = yr_check_keys(d, args, "random_crop", keys, 2) &&
             yr_require(d, args, "random_crop", "size");
        if (!ok)
            return false;
        int n;
        ok = yr_ints(d, yr_get(d, args, "size"), "random_crop.size", 1, INT64_MAX, 2, t->size, &n);
        if (n == 1)
            t->size[1] = t->size[0];
        yaml_node_t *pad = yr_get(d, args, "padding");
        if (pad != NULL)
            ok = yr_int(d, pad, "random_crop.padding", 0, INT64_MAX, &t->padding) && ok;
    } else if (yr_is_map(args)) {
        static const char *const keys[] = {"p"};
        ok = yr_check_keys(d, args, "random_horizontal_flip", keys, 1);
        yaml_node_t *p = yr_get(d, args, "p");
        snprintf(what, sizeof what, "random_horizontal_flip.p");
        if (p != NULL)
            ok = yr_float(d, p, what, 0, 1, &t->p) && ok;
    }
    return ok;
}

static bool
parse_data(cfg_config *cfg, const yaml_node_t *node)
{
    yr_doc *d = &cfg->doc;
    cfg_data *data = &cfg->data;
    data->pos = yr_pos_of(node);
    data->batch_size = 64;
    data->test_batch_size = 0;
    data->shuffle = true;
    data->workers = 1;
    data->prefetch = 2;
    if (!yr_is_map(node)) {
        char got[96];
        yr_error(d, node, "data: expected a mapping, got %s", yr_describe(node, got, sizeof got));
        return false;
    }
    bool ok = yr_check_keys(d, node, "data", data_keys, COUNT(data_keys));
    if (!yr_require(d, node, "data", "dataset"))
        return false;
    int kind;
    if (!yr_enum(d, yr_get(d, node, "dataset"), "data.dataset", cfg_dataset_names,
                 COUNT(cfg_dataset_names), &kind))
        return false;
    data->dataset = (cfg_dataset_kind)kind;
    bool builtin = kind == DATASET_FASHION_MNIST || kind == DATASET_MNIST;

    yaml_node_t *v;
    if ((v = yr_get(d, node, "path")) != NULL) {
        if (!builtin) {
            yr_error(d, v, "data.path: only for fashion-mnist and mnist; %s takes train: and test:",
                     cfg_dataset_names[kind]);
            ok = false;
        } else {
            ok = yr_string(d, v, "data.path", &data->path) && ok;
        }
    } else if (builtin) {
        data->path = strdup(kind == DATASET_FASHION_MNIST ? "/usr/share/datasets/fashion-mnist"
                                                          : "/usr/share/datasets/mnist");
    }
    static const char *const split_names[] = {"train", "test"};
    cfg_split *splits[] = {&data->train, &data->test};
    for (int s = 0; s < 2; s++) {
        char where[32];
        snprintf(where, sizeof where, "data.%s", split_names[s]);
        v = yr_get(d, node, split_names[s]);
        if (builtin && v != NULL) {
            yr_error(d, v, "%s: not used with %s (it reads the standard files in data.path)", where,
                     cfg_dataset_names[kind]);
            ok = false;
        } else if (!builtin && v == NULL && s == 0) {
            ok = yr_require(d, node, "data", "train") && ok;
        } else if (!builtin && v != NULL) {
            ok = parse_split(d, v, where, data->dataset, splits[s]) && ok;
            if (s == 1)
                data->has_test = true;
        }
    }
    if (builtin)
        data->has_test = true;

    if ((v = yr_get(d, node, "batch_size")) != NULL)
        ok = yr_int(d, v, "data.batch_size", 1, 1 << 24, &data->batch_size) && ok;
    if ((v = yr_get(d, node, "test_batch_size")) != NULL)
        ok = yr_int(d, v, "data.test_batch_size", 1, 1 << 24, &data->test_batch_size) && ok;
    if (data->test_batch_size == 0)
        data->test_batch_size = data->batch_size > 256 ? data->batch_size : 256;
    if ((v = yr_get(d, node, "shuffle")) != NULL)
        ok = yr_bool(d, v, "data.shuffle", &data->shuffle) && ok;
    if ((v = yr_get(d, node, "drop_last")) != NULL)
        ok = yr_bool(d, v, "data.drop_last", &data->drop_last) && ok;
    if ((v = yr_get(d, node, "workers")) != NULL)
        ok = yr_int(d, v, "data.workers", 0, 64, &data->workers) && ok;
    if ((v = yr_get(d, node, "prefetch")) != NULL)
        ok = yr_int(d, v, "data.prefetch", 1, 1024, &data->prefetch) && ok;
    const char *csv_only[] = {"label_column", "header"};
    for (int i = 0; i < 2; i++) {
        v = yr_get(d, node, csv_only[i]);
        if (v != NULL && kind != DATASET_CSV) {
            yr_error(d, v, "data.%s: only for csv datasets", csv_only[i]);
            ok = false;
        }
    }
    if ((v = yr_get(d, node, "label_column")) != NULL && kind == DATASET_CSV)
        ok = yr_int(d, v, "data.label_column", -1024, 1 << 20, &data->label_column) && ok;
    if ((v = yr_get(d, node, "header")) != NULL && kind == DATASET_CSV)
        ok = yr_bool(d, v, "data.header", &data->header) && ok;
    if ((v = yr_get(d, node, "transforms")) != NULL && !yr_is_null(v)) {
        if (!yr_is_seq(v)) {
            char got[96];
            yr_error(d, v, "data.transforms: expected a list, got %s",
                     yr_describe(v, got, sizeof got));
            ok = false;
        } else if (yr_seq_len(v) > CFG_MAX_TRANSFORMS) {
            yr_error(d, v, "data.transforms: at most %d transforms, got %d", CFG_MAX_TRANSFORMS,
                     yr_seq_len(v));
            ok = false;
        } else {
            for (int i = 0; i < yr_seq_len(v); i++)
                ok = parse_transform(d, yr_seq_item(d, v, i), i,
                                     &data->transforms[data->n_transforms++]) &&
                     ok;
        }
    }
    return ok;
}

/* ---- model */

static bool
parse_model(cfg_config *cfg, const yaml_node_t *node)
{
    static const char *const keys[] = {"input", "layers"};
    yr_doc *d = &cfg->doc;
    cfg_model *m = &cfg->model;
    m->pos = yr_pos_of(node);
    if (!yr_is_map(node)) {
        char got[96];
        yr_error(d, node, "model: expected a mapping with layers:, got %s",
                 yr_describe(node, got, sizeof got));
        return false;
    }
    bool ok = yr_check_keys(d, node, "model", keys, COUNT(keys));
    yaml_node_t *v = yr_get(d, node, "input");
    if (v != NULL) {
        m->input_pos = yr_pos_of(v);
        m->input_given = yr_ints(d, v, "model.input", 1, INT64_MAX, SHAPE_MAX_DIM - 1, m->input.d,
                                 &m->input.ndim);
        ok = m->input_given && ok;
    }
    if (!yr_require(d, node, "model", "layers"))
        return false;
    v = yr_get(d, node, "layers");
    if (!yr_is_seq(v) || yr_seq_len(v) == 0) {
        char got[96];
        yr_error(d, v, "model.layers: expected a non-empty list of layers, got %s",
                 yr_describe(v, got, sizeof got));
        return false;
    }
    int n = yr_seq_len(v);
    m->layers = calloc((size_t)n, sizeof *m->layers);
    if (m->layers == NULL) {
        yr_error(d, v, "model.layers: out of memory");
        return false;
    }
    m->n_layers = n;
    for (int i = 0; i < n; i++)
        ok = layers_parse(d, yr_seq_item(d, v, i), i, &m->layers[i]) && ok;
    return ok;
}

/* ---- loss */

static bool
parse_loss(cfg_config *cfg, const yaml_node_t *node)
{
    static const char *const all[] = {"name", "label_smoothing", "beta"};
    static const char *const ce[] = {"name", "label_smoothing"};
    static const char *const sl1[] = {"name", "beta"};
    static const char *const plain[] = {"name"};
    yr_doc *d = &cfg->doc;
    cfg_loss *loss = &cfg->loss;
    loss->pos = yr_pos_of(node);
    loss->beta = 1.0;
    int kind;
    if (!yr_is_map(node))
        return yr_enum(d, node, "loss", cfg_loss_names, COUNT(cfg_loss_names), &kind) &&
               ((loss->kind = (cfg_loss_kind)kind), true);
    if (!yr_require(d, node, "loss", "name") ||
        !yr_enum(d, yr_get(d, node, "name"), "loss.name", cfg_loss_names, COUNT(cfg_loss_names),
                 &kind))
        return false;
    loss->kind = (cfg_loss_kind)kind;
    const char *const *own = kind == LOSS_CROSS_ENTROPY ? ce : kind == LOSS_SMOOTH_L1 ? sl1 : plain;
    int n_own = kind == LOSS_CROSS_ENTROPY || kind == LOSS_SMOOTH_L1 ? 2 : 1;
    bool ok =
        check_variant_keys(d, node, "loss", cfg_loss_names[kind], own, n_own, all, COUNT(all));
    yaml_node_t *v;
    if ((v = yr_get(d, node, "label_smoothing")) != NULL && kind == LOSS_CROSS_ENTROPY)
        ok = yr_float(d, v, "loss.label_smoothing", 0, 1, &loss->label_smoothing) && ok;
    if ((v = yr_get(d, node, "beta")) != NULL && kind == LOSS_SMOOTH_L1)
        ok = yr_float(d, v, "loss.beta", 0, INFINITY, &loss->beta) && ok;
    return ok;
}

/* ---- optimizer */

static bool
parse_optimizer(cfg_config *cfg, const yaml_node_t *node)
{
    static const char *const all[] = {"name",
                                      "lr",
                                      "weight_decay",
                                      "momentum",
                                      "dampening",
                                      "nesterov",
                                      "betas",
                                      "eps",
                                      "amsgrad",
                                      "alpha",
                                      "centered",
                                      "lr_decay",
                                      "initial_accumulator_value",
                                      "maximize",
                                      "clip_grad_norm",
                                      "clip_grad_value"};
    static const char *const sgd[] = {
        "name",     "lr",       "weight_decay",   "momentum",       "dampening",
        "nesterov", "maximize", "clip_grad_norm", "clip_grad_value"};
    static const char *const adam[] = {
        "name",    "lr",       "weight_decay",   "betas",          "eps",
        "amsgrad", "maximize", "clip_grad_norm", "clip_grad_value"};
    static const char *const rmsprop[] = {
        "name", "lr",       "weight_decay", "momentum",       "alpha",
        "eps",  "centered", "maximize",     "clip_grad_norm", "clip_grad_value"};
    static const char *const adagrad[] = {"name",
                                          "lr",
                                          "weight_decay",
                                          "lr_decay",
                                          "eps",
                                          "initial_accumulator_value",
                                          "maximize",
                                          "clip_grad_norm",
                                          "clip_grad_value"};
    yr_doc *d = &cfg->doc;
    cfg_optim *o = &cfg->optim;
    o->pos = yr_pos_of(node);
    if (!yr_is_map(node)) {
        char got[96];
        yr_error(d, node, "optimizer: expected a mapping such as {name: adam, lr: 0.001}, got %s",
                 yr_describe(node, got, sizeof got));
        return false;
    }
    int kind;
    if (!yr_require(d, node, "optimizer", "name") ||
        !yr_enum(d, yr_get(d, node, "name"), "optimizer.name", cfg_optim_names,
                 COUNT(cfg_optim_names), &kind))
        return false;
    o->kind = (cfg_optim_kind)kind;
    const char *const *own[] = {sgd, adam, adam, rmsprop, adagrad};
    const int n_own[] = {COUNT(sgd), COUNT(adam), COUNT(adam), COUNT(rmsprop), COUNT(adagrad)};
    bool ok = check_variant_keys(d, node, "optimizer", cfg_optim_names[kind], own[kind],
                                 n_own[kind], all, COUNT(all));
    /* torch.optim's defaults */
    o->lr = kind == OPTIM_SGD ? 0 : kind == OPTIM_RMSPROP || kind == OPTIM_ADAGRAD ? 0.01 : 0.001;
    o->weight_decay = kind == OPTIM_ADAMW ? 0.01 : 0;
    o->beta1 = 0.9, o->beta2 = 0.999;
    o->eps = kind == OPTIM_ADAGRAD ? 1e-10 : 1e-8;
    o->alpha = 0.99;
    if (kind == OPTIM_SGD && !yr_require(d, node, "optimizer", "lr"))
        ok = false;
    yaml_node_t *v;
    if ((v = yr_get(d, node, "lr")) != NULL)
        ok = yr_float_gt(d, v, "optimizer.lr", 0, INFINITY, &o->lr) && ok;
    if ((v = yr_get(d, node, "weight_decay")) != NULL)
        ok = yr_float(d, v, "optimizer.weight_decay", 0, INFINITY, &o->weight_decay) && ok;
    if ((v = yr_get(d, node, "momentum")) != NULL)
        ok = yr_float(d, v, "optimizer.momentum", 0, INFINITY, &o->momentum) && ok;
    if ((v = yr_get(d, node, "dampening")) != NULL)
        ok = yr_float(d, v, "optimizer.dampening", 0, 1, &o->dampening) && ok;
    if ((v = yr_get(d, node, "nesterov")) != NULL &&
        yr_bool(d, v, "optimizer.nesterov", &o->nesterov)) {
        if (o->nesterov && (o->momentum <= 0 || o->dampening != 0)) {
            yr_error(
                d, v,
                "optimizer.nesterov: needs momentum > 0 and dampening 0 (got momentum %g, dampening %g)",
                o->momentum, o->dampening);
            ok = false;
        }
    }
    if ((v = yr_get(d, node, "betas")) != NULL) {
        double b[2];
        int n = 0;
        if (yr_floats(d, v, "optimizer.betas", 0, 1, 2, b, &n) && n != 2) {
            yr_error(d, v, "optimizer.betas: expected [beta1, beta2], got one number");
            ok = false;
        } else if (n == 2 && (b[0] >= 1 || b[1] >= 1)) {
            yr_error(d, v, "optimizer.betas: each must be in [0, 1), got [%g, %g]", b[0], b[1]);
            ok = false;
        } else if (n == 2) {
            o->beta1 = b[0], o->beta2 = b[1];
        } else {
            ok = false;
        }
    }
    if ((v = yr_get(d, node, "eps")) != NULL)
        ok = yr_float(d, v, "optimizer.eps", 0, INFINITY, &o->eps) && ok;
    if ((v = yr_get(d, node, "amsgrad")) != NULL)
        ok = yr_bool(d, v, "optimizer.amsgrad", &o->amsgrad) && ok;
    if ((v = yr_get(d, node, "alpha")) != NULL)
        ok = yr_float(d, v, "optimizer.alpha", 0, INFINITY, &o->alpha) && ok;
    if ((v = yr_get(d, node, "centered")) != NULL)
        ok = yr_bool(d, v, "optimizer.centered", &o->centered) && ok;
    if ((v = yr_get(d, node, "lr_decay")) != NULL)
        ok = yr_float(d, v, "optimizer.lr_decay", 0, INFINITY, &o->lr_decay) && ok;
    if ((v = yr_get(d, node, "initial_accumulator_value")) != NULL)
        ok = yr_float(d, v, "optimizer.initial_accumulator_value", 0, INFINITY,
                      &o->initial_accumulator_value) &&
             ok;
    if ((v = yr_get(d, node, "maximize")) != NULL)
        ok = yr_bool(d, v, "optimizer.maximize", &o->maximize) && ok;
    if ((v = yr_get(d, node, "clip_grad_norm")) != NULL)
        ok = yr_float_gt(d, v, "optimizer.clip_grad_norm", 0, INFINITY, &o->clip_grad_norm) && ok;
    if ((v = yr_get(d, node, "clip_grad_value")) != NULL)
        ok = yr_float_gt(d, v, "optimizer.clip_grad_value", 0, INFINITY, &o->clip_grad_value) && ok;
    return ok;
}

/* ---- schedule */

static bool
parse_schedule(cfg_config *cfg, const yaml_node_t *node)
{
    static const char *const all[] = {
        "name",      "interval",   "step_size",        "gamma",        "milestones",
        "t_max",     "eta_min",    "warmup",           "start_factor", "max_lr",
        "pct_start", "div_factor", "final_div_factor", "anneal",       "mode",
        "monitor",   "factor",     "patience",         "threshold",    "cooldown",
        "min_lr"};
    static const char *const k_none[] = {"name"};
    static const char *const k_step[] = {"name", "interval", "step_size", "gamma"};
    static const char *const k_multi[] = {"name", "interval", "milestones", "gamma"};
    static const char *const k_exp[] = {"name", "interval", "gamma"};
    static const char *const k_cos[] = {"name", "interval", "t_max", "eta_min"};
    static const char *const k_wcos[] = {"name",         "interval", "warmup",
                                         "start_factor", "t_max",    "eta_min"};
    static const char *const k_one[] = {"name",       "interval",         "max_lr", "pct_start",
                                        "div_factor", "final_div_factor", "anneal"};
    static const char *const k_plat[] = {"name",     "interval",  "mode",     "monitor", "factor",
                                         "patience", "threshold", "cooldown", "min_lr"};
    static const char *const *const own[] = {k_none, k_step, k_multi, k_exp,
                                             k_cos,  k_wcos, k_one,   k_plat};
    static const int n_own[] = {COUNT(k_none), COUNT(k_step), COUNT(k_multi), COUNT(k_exp),
                                COUNT(k_cos),  COUNT(k_wcos), COUNT(k_one),   COUNT(k_plat)};
    static const char *const intervals[] = {"epoch", "step"};
    static const char *const anneals[] = {"cos", "linear"};
    static const char *const modes[] = {"min", "max"};
    static const char *const monitors[] = {"test_loss", "train_loss", "test_acc"};
    yr_doc *d = &cfg->doc;
    cfg_schedule *s = &cfg->schedule;
    s->pos = yr_pos_of(node);
    s->gamma = 0.1;
    s->start_factor = 1.0 / 3.0;
    s->pct_start = 0.3, s->div_factor = 25, s->final_div_factor = 1e4, s->anneal_cos = true;
    s->factor = 0.1, s->patience = 10, s->threshold = 1e-4;
    int kind;
    if (!yr_is_map(node)) {
        if (!yr_enum(d, node, "schedule", cfg_sched_names, COUNT(cfg_sched_names), &kind))
            return false;
        s->kind = (cfg_sched_kind)kind;
        if (kind != SCHED_NONE && kind != SCHED_COSINE) {
            yr_error(d, node, "schedule: %s needs arguments; write {name: %s, ...}",
                     cfg_sched_names[kind], cfg_sched_names[kind]);
            return false;
        }
        return true;
    }
    if (!yr_require(d, node, "schedule", "name") ||
        !yr_enum(d, yr_get(d, node, "name"), "schedule.name", cfg_sched_names,
                 COUNT(cfg_sched_names), &kind))
        return false;
    s->kind = (cfg_sched_kind)kind;
    s->per_step = kind == SCHED_ONECYCLE;
    bool ok = check_variant_keys(d, node, "schedule", cfg_sched_names[kind], own[kind], n_own[kind],
                                 all, COUNT(all));
    yaml_node_t *v;
    int k;
    if ((v = yr_get(d, node, "interval")) != NULL &&
        yr_enum(d, v, "schedule.interval", intervals, 2, &k)) {
        if (kind == SCHED_ONECYCLE && k == 0) {
            yr_error(d, v, "schedule.interval: onecycle steps after every batch (interval: step)");
            ok = false;
        } else if (kind == SCHED_PLATEAU && k == 1) {
            yr_error(d, v,
                     "schedule.interval: plateau watches a per-epoch metric (interval: epoch)");
            ok = false;
        }
        s->per_step = k == 1;
    } else if (v != NULL) {
        ok = false;
    }
    const char *needs[] = {[SCHED_STEP] = "step_size",
                           [SCHED_MULTISTEP] = "milestones",
                           [SCHED_EXPONENTIAL] = "gamma",
                           [SCHED_WARMUP_COSINE] = "warmup",
                           [SCHED_ONECYCLE] = "max_lr"};
    if (kind < COUNT(needs) && needs[kind] != NULL && !yr_require(d, node, "schedule", needs[kind]))
        ok = false;
    if ((v = yr_get(d, node, "step_size")) != NULL)
        ok = yr_int(d, v, "schedule.step_size", 1, INT64_MAX, &s->step_size) && ok;
    if ((v = yr_get(d, node, "gamma")) != NULL)
        ok = yr_float_gt(d, v, "schedule.gamma", 0, INFINITY, &s->gamma) && ok;
    if ((v = yr_get(d, node, "milestones")) != NULL) {
        if (yr_ints(d, v, "schedule.milestones", 1, INT64_MAX, CFG_MAX_MILESTONES, s->milestones,
                    &s->n_milestones)) {
            for (int i = 1; i < s->n_milestones; i++) {
                if (s->milestones[i] <= s->milestones[i - 1]) {
                    yr_error(d, yr_seq_item(d, v, i),
                             "schedule.milestones: must increase, but %lld follows %lld",
                             (long long)s->milestones[i], (long long)s->milestones[i - 1]);
                    ok = false;
                    break;
                }
            }
        } else {
            ok = false;
        }
    }
    if ((v = yr_get(d, node, "t_max")) != NULL)
        ok = yr_int(d, v, "schedule.t_max", 1, INT64_MAX, &s->t_max) && ok;
    if ((v = yr_get(d, node, "eta_min")) != NULL)
        ok = yr_float(d, v, "schedule.eta_min", 0, INFINITY, &s->eta_min) && ok;
    if ((v = yr_get(d, node, "warmup")) != NULL)
        ok = yr_int(d, v, "schedule.warmup", 1, INT64_MAX, &s->warmup) && ok;
    if ((v = yr_get(d, node, "start_factor")) != NULL)
        ok = yr_float_gt(d, v, "schedule.start_factor", 0, 1, &s->start_factor) && ok;
    if ((v = yr_get(d, node, "max_lr")) != NULL)
        ok = yr_float_gt(d, v, "schedule.max_lr", 0, INFINITY, &s->max_lr) && ok;
    if ((v = yr_get(d, node, "pct_start")) != NULL)
        ok = yr_float(d, v, "schedule.pct_start", 0, 1, &s->pct_start) && ok;
    if ((v = yr_get(d, node, "div_factor")) != NULL)
        ok = yr_float_gt(d, v, "schedule.div_factor", 0, INFINITY, &s->div_factor) && ok;
    if ((v = yr_get(d, node, "final_div_factor")) != NULL)
        ok =
            yr_float_gt(d, v, "schedule.final_div_factor", 0, INFINITY, &s->final_div_factor) && ok;
    if ((v = yr_get(d, node, "anneal")) != NULL) {
        ok = yr_enum(d, v, "schedule.anneal", anneals, 2, &k) && ok;
        s->anneal_cos = k == 0;
    }
    if ((v = yr_get(d, node, "monitor")) != NULL)
        ok = yr_enum(d, v, "schedule.monitor", monitors, 3, &s->monitor) && ok;
    s->mode_max = s->monitor == 2;
    if ((v = yr_get(d, node, "mode")) != NULL) {
        ok = yr_enum(d, v, "schedule.mode", modes, 2, &k) && ok;
        s->mode_max = k == 1;
    }
    if ((v = yr_get(d, node, "factor")) != NULL)
        ok = yr_float_gt(d, v, "schedule.factor", 0, 1, &s->factor) && ok;
    if (s->factor >= 1 && kind == SCHED_PLATEAU) {
        yr_error(d, v, "schedule.factor: must be below 1, got %g", s->factor);
        ok = false;
    }
    if ((v = yr_get(d, node, "patience")) != NULL)
        ok = yr_int(d, v, "schedule.patience", 0, INT64_MAX, &s->patience) && ok;
    if ((v = yr_get(d, node, "threshold")) != NULL)
        ok = yr_float(d, v, "schedule.threshold", 0, INFINITY, &s->threshold) && ok;
    if ((v = yr_get(d, node, "cooldown")) != NULL)
        ok = yr_int(d, v, "schedule.cooldown", 0, INT64_MAX, &s->cooldown) && ok;
    if ((v = yr_get(d, node, "min_lr")) != NULL)
        ok = yr_float(d, v, "schedule.min_lr", 0, INFINITY, &s->min_lr) && ok;
    return ok;
}

/* ---- shapes */

static int64_t
builtin_classes(cfg_dataset_kind k)
{
    return k == DATASET_FASHION_MNIST || k == DATASET_MNIST ? 10 : 0;
}

bool
cfg_check_shapes(cfg_config *cfg, const cli_shape *input, const cli_shape *target,
                 int64_t n_classes)
{
    yr_doc *d = &cfg->doc;
    cfg_model *m = &cfg->model;
    char a[96], b[96];
    /* Transforms see one sample as the dataset gives it. */
    for (int i = 0; i < cfg->data.n_transforms; i++) {
        const cfg_transform *t = &cfg->data.transforms[i];
        /* Channels as the loader's normalize counts them: [C, H, W] and [F] samples have C and
         * F, [H, W] samples one. */
        int64_t channels = input->ndim == 3 || input->ndim == 1 ? input->d[0] : 1;
        if (t->kind == TRANSFORM_NORMALIZE && t->n_mean != 1 && t->n_mean != channels) {
            yr_error_at(d, t->pos,
                        "normalize: %d means for %lld channel%s (input %s); give 1 or %lld",
                        t->n_mean, (long long)channels, channels == 1 ? "" : "s",
                        cli_shape_str(input, a, sizeof a), (long long)channels);
            return false;
        }
        if (t->kind != TRANSFORM_NORMALIZE && input->ndim < 2) {
            yr_error_at(
                d, t->pos,
                "%s: needs image samples ([height, width] or [channels, height, width]), but the dataset gives %s",
                t->kind == TRANSFORM_RANDOM_CROP ? "random_crop" : "random_horizontal_flip",
                cli_shape_str(input, a, sizeof a));
            return false;
        }
        /* Test samples are not cropped, so a crop keeps the size (the padding makes the shift). */
        int64_t h = input->ndim >= 2 ? input->d[input->ndim - 2] : 0,
                w = input->ndim >= 2 ? input->d[input->ndim - 1] : 0;
        if (t->kind == TRANSFORM_RANDOM_CROP && (t->size[0] != h || t->size[1] != w)) {
            yr_error_at(
                d, t->pos,
                "random_crop: size %lldx%lld differs from the %lldx%lld samples; test samples are not cropped, so keep size %lld and shift with padding",
                (long long)t->size[0], (long long)t->size[1], (long long)h, (long long)w,
                (long long)h);
            return false;
        }
    }
    cli_shape in = *input;
    if (m->input_given) {
        int64_t have = 1, want = 1;
        for (int i = 0; i < in.ndim; i++)
            have *= in.d[i];
        for (int i = 0; i < m->input.ndim; i++)
            want *= m->input.d[i];
        if (have != want) {
            yr_error_at(
                d, m->input_pos,
                "model.input: %s holds %lld values but the dataset's samples are %s (%lld values)",
                cli_shape_str(&m->input, a, sizeof a), (long long)want,
                cli_shape_str(&in, b, sizeof b), (long long)have);
            return false;
        }
        bool integer = in.integer;
        in = m->input;
        in.integer = integer;
    }
    if (!layers_infer(d, m->layers, m->n_layers, &in, &m->output))
        return false;
    m->checked = true;

    /* The loss against the model's output and the targets. */
    const cfg_layer *last = &m->layers[m->n_layers - 1];
    cfg_loss_kind k = cfg->loss.kind;
    const char *loss = cfg_loss_names[k];
    bool classes = k == LOSS_CROSS_ENTROPY || k == LOSS_NLL;
    cli_shape out = m->output;
    if (classes && target->integer) {
        /* output [C, d1, ...] against targets [d1, ...] */
        bool ok = out.ndim == target->ndim + 1;
        for (int i = 0; ok && i < target->ndim; i++)
            ok = out.d[i + 1] == target->d[i];
        if (!ok) {
            yr_error_at(
                d, last->pos,
                "%s: the model gives %s per sample, but %s needs [classes] for class-index targets of shape %s",
                last->def->name, cli_shape_str(&out, a, sizeof a), loss,
                cli_shape_str(target, b, sizeof b));
            return false;
        }
        if (n_classes > out.d[0]) {
            yr_error_at(
                d, last->pos,
                "%s: the model gives %lld output%s per sample, but the dataset has %lld classes (%s needs one output per class)",
                last->def->name, (long long)out.d[0], out.d[0] == 1 ? "" : "s",
                (long long)n_classes, loss);
            return false;
        }
        return true;
    }
    if (!classes && target->integer) {
        yr_error_at(
            d, cfg->loss.pos,
            "loss: %s compares the output with real-valued targets, but the dataset gives class labels (use cross_entropy)",
            loss);
        return false;
    }
    bool same = out.ndim == target->ndim;
    for (int i = 0; same && i < out.ndim; i++)
        same = out.d[i] == target->d[i];
    if (!same) {
        yr_error_at(
            d, last->pos,
            "%s: the model gives %s per sample, but the targets are %s (%s needs equal shapes)",
            last->def->name, cli_shape_str(&out, a, sizeof a), cli_shape_str(target, b, sizeof b),
            loss);
        return false;
    }
    return true;
}

/* ---- top level */

static const char *const top_keys[] = {
    "data", "model",   "loss",   "optimizer", "schedule",        "epochs",
    "seed", "threads", "device", "output",    "checkpoint_every"};

static char *
default_output(const char *file)
{
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    if (base[0] == '<') /* the embedded default */
        base = "fashion_cnn";
    size_t len = strcspn(base, ".");
    char *out = malloc(len + 6);
    if (out != NULL)
        snprintf(out, len + 6, "runs/%.*s", (int)len, base);
    return out;
}

bool
cfg_parse(cfg_config *cfg, const char *file, const char *text, size_t len)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->file = strdup(file);
    cfg->text = malloc(len + 1);
    if (cfg->file == NULL || cfg->text == NULL) {
        yr_load(&cfg->doc, file, "", 0);
        yr_error_at(&cfg->doc, (yr_pos){0, 0}, "out of memory");
        return false;
    }
    memcpy(cfg->text, text, len);
    cfg->text[len] = '\0';
    yr_doc *d = &cfg->doc;
    if (!yr_load(d, cfg->file, cfg->text, len))
        return false;
    yaml_node_t *root = yr_root(d);
    if (root == NULL || yr_is_null(root)) {
        yr_error_at(d, (yr_pos){0, 0},
                    "the config is empty (expected data:, model:, optimizer: and epochs:)");
        return false;
    }
    if (!yr_is_map(root)) {
        char got[96];
        yr_error(d, root, "expected a mapping of sections (data:, model:, ...), got %s",
                 yr_describe(root, got, sizeof got));
        return false;
    }
    bool ok = yr_check_keys(d, root, "", top_keys, COUNT(top_keys));
    cfg->epochs = 1;
    cfg->checkpoint_every = 1;
    cfg->loss.kind = LOSS_CROSS_ENTROPY;
    cfg->loss.beta = 1.0;
    cfg->schedule.kind = SCHED_NONE;
    yaml_node_t *v;
    /* Required sections are reported together, then each present section is checked. */
    static const char *const required[] = {"data", "model", "optimizer", "epochs"};
    for (int i = 0; i < COUNT(required); i++)
        ok = yr_require(d, root, "", required[i]) && ok;
    if ((v = yr_get(d, root, "epochs")) != NULL)
        ok = yr_int(d, v, "epochs", 1, 1000000, &cfg->epochs) && ok;
    bool data_ok = true, model_ok = true, loss_ok = true;
    if ((v = yr_get(d, root, "data")) != NULL)
        ok = (data_ok = parse_data(cfg, v)) && ok;
    if ((v = yr_get(d, root, "model")) != NULL)
        ok = (model_ok = parse_model(cfg, v)) && ok;
    if ((v = yr_get(d, root, "loss")) != NULL)
        ok = (loss_ok = parse_loss(cfg, v)) && ok;
    if ((v = yr_get(d, root, "optimizer")) != NULL)
        ok = parse_optimizer(cfg, v) && ok;
    bool sched_ok = true;
    if ((v = yr_get(d, root, "schedule")) != NULL)
        ok = (sched_ok = parse_schedule(cfg, v)) && ok;
    if ((v = yr_get(d, root, "seed")) != NULL) {
        int64_t seed = 0;
        ok = yr_int(d, v, "seed", 0, INT64_MAX, &seed) && ok;
        cfg->seed = (uint64_t)seed;
    }
    if ((v = yr_get(d, root, "threads")) != NULL)
        ok = yr_int(d, v, "threads", 0, 1024, &cfg->threads) && ok;
    if ((v = yr_get(d, root, "device")) != NULL) {
        static const char *const devices[] = {"cpu", "cuda"};
        int dev;
        if (!yr_enum(d, v, "device", devices, 2, &dev)) {
            ok = false;
        } else if (dev == 1) {
            yr_error(d, v, "device: this yaten was built without CUDA; use device: cpu");
            ok = false;
        }
    }
    if ((v = yr_get(d, root, "output")) != NULL)
        ok = yr_string(d, v, "output", &cfg->output) && ok;
    else
        cfg->output = default_output(file);
    if ((v = yr_get(d, root, "checkpoint_every")) != NULL)
        ok = yr_int(d, v, "checkpoint_every", 0, INT64_MAX, &cfg->checkpoint_every) && ok;

    /* Schedules whose lengths are counted in epochs can be checked against `epochs` now. */
    cfg_schedule *s = &cfg->schedule;
    if (sched_ok && !s->per_step && s->kind == SCHED_WARMUP_COSINE && s->warmup >= cfg->epochs) {
        yr_error_at(d, s->pos,
                    "schedule.warmup: %lld warm-up epochs leave nothing of the %lld-epoch run",
                    (long long)s->warmup, (long long)cfg->epochs);
        ok = false;
    }
    /* Shapes: known now for the built-in datasets, and checked even when other sections have
     * problems, so that one run reports everything. They need a parsed model, data and loss. */
    if (builtin_classes(cfg->data.dataset) > 0 && yr_get(d, root, "data") != NULL && data_ok &&
        model_ok && loss_ok && cfg->model.n_layers > 0) {
        cli_shape input = {.ndim = 3, .d = {1, 28, 28}}, target = {.ndim = 0, .integer = true};
        ok = cfg_check_shapes(cfg, &input, &target, builtin_classes(cfg->data.dataset)) && ok;
    }
    yr_sort_diags(d);
    return ok;
}

bool
cfg_load_file(cfg_config *cfg, const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t len = 0, cap = 0;
    if (f != NULL) {
        for (;;) {
            if (len + 4096 > cap) {
                cap = cap ? 2 * cap : 65536;
                char *nb = realloc(buf, cap);
                if (nb == NULL)
                    break;
                buf = nb;
            }
            size_t got = fread(buf + len, 1, cap - len, f);
            len += got;
            if (got == 0)
                break;
        }
    }
    if (f == NULL || ferror(f) || buf == NULL) {
        int err = errno;
        memset(cfg, 0, sizeof *cfg);
        cfg->file = strdup(path);
        yr_load(&cfg->doc, cfg->file, "", 0);
        yr_error_at(&cfg->doc, (yr_pos){0, 0}, "cannot read the config: %s", strerror(err));
        if (f != NULL)
            fclose(f);
        free(buf);
        return false;
    }
    fclose(f);
    bool ok = cfg_parse(cfg, path, buf, len);
    free(buf);
    return ok;
}

void
cfg_print_errors(const cfg_config *cfg, FILE *f)
{
    yr_print_diags(&cfg->doc, f);
}

void
cfg_free(cfg_config *cfg)
{
    free(cfg->data.path);
    free(cfg->data.train.inputs);
    free(cfg->data.train.targets);
    free(cfg->data.test.inputs);
    free(cfg->data.test.targets);
    free(cfg->model.layers);
    free(cfg->output);
    yr_free(&cfg->doc);
    free(cfg->text);
    free(cfg->file);
    memset(cfg, 0, sizeof *cfg);
}
