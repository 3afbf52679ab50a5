/* Training checkpoints: the model, optimizer, schedule, training loader, default generator and the
 * progress of the run in one safetensors file (yt_checkpoint_save), so that `--resume` continues
 * bit-identically: the same weights, moments, learning rate, next batch and random numbers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "run.h"

enum { PART_MODEL, PART_OPTIM, PART_LOADER, PART_RNG, PART_TRAIN, PART_SCHED, N_PARTS };
static const char *const prefixes[N_PARTS] = {"model.", "optimizer.", "loader.",
                                              "rng.",   "train.",     "scheduler."};

void
progress_free(train_progress *p)
{
    free(p->history);
    memset(p, 0, sizeof *p);
}

static void
clear_all(yt_named_tensors *lists, int n)
{
    for (int i = 0; i < n; i++)
        yt_named_tensors_clear(&lists[i]);
}

static yt_status
add_i64(yt_named_tensors *l, const char *name, int64_t v)
{
    return yt_named_tensors_add(l, name, yt_scalar_tensor(yt_int(v), YT_DTYPE_I64));
}

static yt_status
add_f64(yt_named_tensors *l, const char *name, double v)
{
    return yt_named_tensors_add(l, name, yt_scalar_tensor(yt_float(v), YT_DTYPE_F64));
}

int
run_save_checkpoint(run_state *r, const train_progress *p, const char *path)
{
    yt_named_tensors lists[N_PARTS];
    for (int i = 0; i < N_PARTS; i++)
        lists[i] = (yt_named_tensors)YT_NAMED_TENSORS_INIT;
    yt_metadata meta = YT_METADATA_INIT;
    int n_parts = r->sched ? N_PARTS : N_PARTS - 1;
    /* The scope owns the 0-d tensors made here; the lists keep their own references. */
    yt_scope_begin();
    static const double no_rows[HISTORY_COLS];
    const int64_t hist_size[2] = {p->n_history, HISTORY_COLS};
    yt_tensor *hist =
        yt_tensor_from_data(p->history ? p->history : no_rows, hist_size, 2, YT_DTYPE_F64);
    yt_status st = yt_module_state_dict(r->model, &lists[PART_MODEL]);
    if (st == YT_OK)
        st = yt_optimizer_state_dict(r->optim, &lists[PART_OPTIM]);
    if (st == YT_OK)
        st = yt_loader_state_dict(r->train, &lists[PART_LOADER]);
    if (st == YT_OK)
        st = yt_generator_state_dict(NULL, &lists[PART_RNG]);
    if (st == YT_OK && r->sched)
        st = yt_scheduler_state_dict(r->sched, &lists[PART_SCHED]);
    yt_named_tensors *t = &lists[PART_TRAIN];
    if (st == YT_OK)
        st = add_i64(t, "epoch", p->epoch);
    if (st == YT_OK)
        st = add_i64(t, "batches", p->batches);
    if (st == YT_OK)
        st = add_i64(t, "samples", p->samples);
    if (st == YT_OK)
        st = add_i64(t, "step", p->step);
    if (st == YT_OK)
        st = add_f64(t, "loss_sum", p->loss_sum);
    if (st == YT_OK)
        st = add_f64(t, "seconds", p->seconds);
    if (st == YT_OK)
        st = add_f64(t, "lr", p->lr);
    if (st == YT_OK)
        st = yt_named_tensors_add(t, "history", hist);
    yt_scope_end();
    if (st == YT_OK)
        st = yt_metadata_set(&meta, "config", r->cfg->text);
    if (st == YT_OK)
        st = yt_metadata_set(&meta, "yaten_version", yt_version());
    yt_checkpoint_part parts[N_PARTS];
    for (int i = 0; i < N_PARTS; i++)
        parts[i] = (yt_checkpoint_part){prefixes[i], &lists[i]};
    if (st == YT_OK)
        st = yt_checkpoint_save(path, parts, n_parts, &meta);
    yt_metadata_clear(&meta);
    clear_all(lists, N_PARTS);
    if (st != YT_OK) {
        fprintf(stderr, "yaten %s: cannot save the checkpoint: %s\n", r->cmd, yt_errmsg());
        return CLI_FAILED;
    }
    return CLI_OK;
}

/* A 0-d value of the "train." part. Called inside a scope, which owns what _get returns. */
static bool
read_value(const yt_named_tensors *l, const char *name, double *out, const char *path)
{
    yt_tensor *t = yt_named_tensors_get(l, name);
    if (t == NULL || yt_tensor_numel(t) != 1) {
        fprintf(stderr, "yaten: %s: the checkpoint's train.%s is missing or not a single value\n",
                path, name);
        return false;
    }
    *out = yt_item(t);
    return true;
}

static bool
read_progress_values(const yt_named_tensors *l, train_progress *p, const char *path)
{
    double v[7];
    static const char *const names[7] = {"epoch",    "batches", "samples", "step",
                                         "loss_sum", "seconds", "lr"};
    for (int i = 0; i < 7; i++)
        if (!read_value(l, names[i], &v[i], path))
            return false;
    p->epoch = (int64_t)v[0], p->batches = (int64_t)v[1], p->samples = (int64_t)v[2];
    p->step = (int64_t)v[3], p->loss_sum = v[4], p->seconds = v[5], p->lr = v[6];
    yt_tensor *h = yt_named_tensors_get(l, "history");
    bool ok = h != NULL && yt_tensor_dim(h) == 2 && yt_tensor_size(h, 1) == HISTORY_COLS;
    if (ok) {
        p->n_history = yt_tensor_size(h, 0);
        size_t bytes = sizeof(double) * (size_t)(p->n_history * HISTORY_COLS);
        p->history = malloc(bytes ? bytes : 1);
        ok = p->history != NULL && yt_tensor_copy_to(h, p->history, bytes, YT_DTYPE_F64) == YT_OK;
    }
    if (!ok)
        fprintf(stderr, "yaten: %s: the checkpoint's train.history is missing or malformed\n",
                path);
    return ok;
}

static bool
read_progress(const yt_named_tensors *l, train_progress *p, const char *path)
{
    yt_scope_begin();
    bool ok = read_progress_values(l, p, path);
    yt_scope_end();
    return ok;
}

int
run_load_checkpoint(run_state *r, train_progress *p, const char *path)
{
    yt_named_tensors lists[N_PARTS];
    for (int i = 0; i < N_PARTS; i++)
        lists[i] = (yt_named_tensors)YT_NAMED_TENSORS_INIT;
    yt_checkpoint_part parts[N_PARTS];
    for (int i = 0; i < N_PARTS; i++)
        parts[i] = (yt_checkpoint_part){prefixes[i], &lists[i]};
    int n_parts = r->sched ? N_PARTS : N_PARTS - 1;
    const char *what = "reading";
    yt_status st = yt_checkpoint_load(path, parts, n_parts, NULL);
    if (st == YT_OK && (what = "model", 1))
        st = yt_module_load_state_dict(r->model, &lists[PART_MODEL], true);
    if (st == YT_OK && (what = "optimizer", 1))
        st = yt_optimizer_load_state_dict(r->optim, &lists[PART_OPTIM]);
    if (st == YT_OK && r->sched && (what = "schedule", 1))
        st = yt_scheduler_load_state_dict(r->sched, &lists[PART_SCHED]);
    if (st == YT_OK && (what = "data loader", 1))
        st = yt_loader_load_state_dict(r->train, &lists[PART_LOADER]);
    if (st == YT_OK && (what = "random generator", 1))
        st = yt_generator_load_state_dict(NULL, &lists[PART_RNG]);
    int rc = CLI_OK;
    if (st != YT_OK) {
        fprintf(stderr, "yaten %s: cannot resume from %s (%s): %s\n", r->cmd, path, what,
                yt_errmsg());
        rc = CLI_FAILED;
    } else if (!read_progress(&lists[PART_TRAIN], p, path)) {
        rc = CLI_FAILED;
    }
    clear_all(lists, N_PARTS);
    return rc;
}

char *
run_checkpoint_config(const char *path)
{
    yt_safetensors_index index = YT_SAFETENSORS_INDEX_INIT;
    yt_metadata meta = YT_METADATA_INIT;
    char *text = NULL;
    if (yt_safetensors_read_index(path, &index, &meta) == YT_OK) {
        const char *c = yt_metadata_get(&meta, "config");
        text = c ? strdup(c) : NULL;
    }
    yt_safetensors_index_clear(&index);
    yt_metadata_clear(&meta);
    return text;
}

int
run_load_weights(run_state *r, const char *path)
{
    yt_safetensors_index index = YT_SAFETENSORS_INDEX_INIT;
    yt_metadata meta = YT_METADATA_INIT;
    yt_named_tensors sd = YT_NAMED_TENSORS_INIT;
    yt_status st = yt_safetensors_read_index(path, &index, &meta);
    if (st == YT_OK) {
        const char *format = yt_metadata_get(&meta, "format");
        if (format != NULL && strcmp(format, "yaten-checkpoint") == 0) {
            yt_checkpoint_part part = {"model.", &sd};
            st = yt_checkpoint_load(path, &part, 1, NULL);
        } else {
            st = yt_safetensors_load(path, &sd, NULL);
        }
    }
    if (st == YT_OK)
        st = yt_module_load_state_dict(r->model, &sd, true);
    yt_named_tensors_clear(&sd);
    yt_safetensors_index_clear(&index);
    yt_metadata_clear(&meta);
    if (st != YT_OK) {
        fprintf(stderr, "yaten %s: cannot load the weights from %s: %s\n", r->cmd, path,
                yt_errmsg());
        return CLI_FAILED;
    }
    return CLI_OK;
}
