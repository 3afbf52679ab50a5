/* Looking at a model: yt_module_summary (one line per module run by a forward pass, with output
 * shapes and parameter counts) and yt_module_print (PyTorch's print(model)). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "module_internal.h"

enum { MAX_ROWS = 4096, MAX_DEPTH = 64, DESC_CAP = 256 };

typedef struct summary_row {
    yt_module *m;
    const char *name; /* its name in the parent that ran it ("" for the root); borrowed */
    int depth;
    bool has_output;
    yt_shape out;
} summary_row;

struct yt__summary_rec {
    summary_row *rows;
    int n_rows;
    int stack[MAX_DEPTH]; /* rows of the modules now running */
    int depth;
};

_Thread_local yt__summary_rec *yt__summary_active;

/* The name under which `parent` holds `m` (the first, if it holds it twice). */
static const char *
name_in(const yt_module *parent, const yt_module *m)
{
    for (int i = 0; parent != NULL && i < parent->n_children; i++)
        if (parent->children[i] == m)
            return parent->child_names[i];
    return "";
}

int
yt__summary_enter(yt_module *m)
{
    yt__summary_rec *r = yt__summary_active;
    if (r->n_rows == MAX_ROWS || r->depth == MAX_DEPTH)
        return -1;
    int slot = r->n_rows++;
    summary_row *row = &r->rows[slot];
    yt_module *parent = r->depth > 0 ? r->rows[r->stack[r->depth - 1]].m : NULL;
    row->m = m;
    row->name = name_in(parent, m);
    row->depth = r->depth;
    row->has_output = false;
    r->stack[r->depth++] = slot;
    return slot;
}

void
yt__summary_leave(int slot, const yt_tensor *out)
{
    yt__summary_rec *r = yt__summary_active;
    if (slot < 0)
        return;
    r->depth--;
    if (out != NULL) {
        r->rows[slot].has_output = true;
        yt__shape_of(&r->rows[slot].out, out);
    }
}

/* ---------------------------------------------------------------- modes, saved and restored */

typedef struct mode_list {
    yt_module **m;
    bool *training;
    int count, cap;
} mode_list;

static bool
save_modes(mode_list *l, yt_module *m)
{
    if (l->count == l->cap) {
        int cap = l->cap ? 2 * l->cap : 32;
        yt_module **ms = realloc(l->m, (size_t)cap * sizeof *ms);
        if (ms != NULL)
            l->m = ms;
        bool *tr = realloc(l->training, (size_t)cap * sizeof *tr);
        if (tr != NULL)
            l->training = tr;
        if (ms == NULL || tr == NULL)
            return false;
        l->cap = cap;
    }
    l->m[l->count] = m;
    l->training[l->count++] = m->training;
    for (int i = 0; i < m->n_children; i++)
        if (!save_modes(l, m->children[i]))
            return false;
    return true;
}

/* The dtype of zeros to feed: i64 indices when the first leaf is an Embedding, else the dtype of
 * the first parameter found (f32 when there is none). */
static yt_dtype
input_dtype(const yt_module *m)
{
    const yt_module *leaf = m;
    while (leaf->n_children > 0)
        leaf = leaf->children[0];
    if (leaf->kind == &yt__embedding_kind)
        return YT_DTYPE_I64;
    if (m->params.count > 0)
        return m->params.tensors[0]->dtype;
    for (int i = 0; i < m->n_children; i++) {
        yt_dtype d = input_dtype(m->children[i]);
        if (d != YT_DTYPE_F32)
            return d;
    }
    return YT_DTYPE_F32;
}

/* 235146 -> "235,146" into out (at least 32 bytes). */
static const char *
fmt_count(int64_t n, char *out)
{
    char digits[24];
    int len = snprintf(digits, sizeof digits, "%lld", (long long)n), j = 0;
    for (int i = 0; i < len; i++) {
        if (i > 0 && (len - i) % 3 == 0 && digits[i - 1] != '-')
            out[j++] = ',';
        out[j++] = digits[i];
    }
    out[j] = '\0';
    return out;
}

static void
describe(const yt_module *m, char *buf)
{
    buf[0] = '\0';
    if (m->kind->describe != NULL && m->kind->describe(m, buf, DESC_CAP) != YT_OK)
        buf[0] = '\0';
}

/* "  0: Conv2d(1, 8, kernel_size=(3, 3), stride=(1, 1))" into buf. */
static void
layer_text(const summary_row *row, char *buf, size_t cap)
{
    char desc[DESC_CAP];
    size_t len = 0;
    buf[0] = '\0';
    describe(row->m, desc);
    yt__nn_appendf(buf, cap, &len, "%*s%s%s%s(%s)", 2 * row->depth, "", row->name,
                   row->name[0] ? ": " : "", row->m->kind->name, desc);
}

static void
print_rule(FILE *f, int width)
{
    for (int i = 0; i < width; i++)
        fputc('=', f);
    fputc('\n', f);
}

enum { LAYER_CAP = 160, SHAPE_WIDTH = 22, COUNT_WIDTH = 12 };

/* The layer column is as wide as its longest entry, so nothing is cut. */
static int
layer_width(const yt__summary_rec *r)
{
    int width = (int)strlen("Layer (type)");
    for (int i = 0; i < r->n_rows; i++) {
        char layer[LAYER_CAP];
        layer_text(&r->rows[i], layer, sizeof layer);
        if ((int)strlen(layer) > width)
            width = (int)strlen(layer);
    }
    return width;
}

static void
print_rows(FILE *f, const yt__summary_rec *r, int width)
{
    fprintf(f, "%-*s %-*s %*s\n", width, "Layer (type)", SHAPE_WIDTH, "Output shape", COUNT_WIDTH,
            "Param #");
    print_rule(f, width + SHAPE_WIDTH + COUNT_WIDTH + 2);
    for (int i = 0; i < r->n_rows; i++) {
        const summary_row *row = &r->rows[i];
        char layer[LAYER_CAP], shape[96], count[32];
        size_t len = 0;
        layer_text(row, layer, sizeof layer);
        shape[0] = '\0';
        if (row->has_output) {
            yt__nn_appendf(shape, sizeof shape, &len, "[");
            for (int d = 0; d < row->out.dim; d++)
                yt__nn_appendf(shape, sizeof shape, &len, "%s%lld", d ? ", " : "",
                               (long long)row->out.sizes[d]);
            yt__nn_appendf(shape, sizeof shape, &len, "]");
        } else {
            yt__nn_appendf(shape, sizeof shape, &len, "-");
        }
        fprintf(f, "%-*s %-*s %*s\n", width, layer, SHAPE_WIDTH, shape, COUNT_WIDTH,
                fmt_count(yt_module_num_parameters(row->m), count));
    }
}

static void
print_totals(FILE *f, yt_module *m, int width)
{
    yt_named_tensors params = YT_NAMED_TENSORS_INIT;
    int64_t total = 0, trainable = 0;
    if (yt_module_parameters(m, &params) == YT_OK)
        for (int64_t i = 0; i < params.count; i++) {
            total += params.tensors[i]->numel;
            if (params.tensors[i]->requires_grad)
                trainable += params.tensors[i]->numel;
        }
    yt_named_tensors_clear(&params);
    print_rule(f, width + SHAPE_WIDTH + COUNT_WIDTH + 2);
    char a[32], b[32], c[32];
    fprintf(f, "Total params: %s\nTrainable params: %s\nNon-trainable params: %s\n",
            fmt_count(total, a), fmt_count(trainable, b), fmt_count(total - trainable, c));
}

/* Runs m on zeros of the shape in eval mode under no-grad, restoring every module's mode after;
 * reports to `rec` when not NULL. Returns the output (NULL with the error set) and the input. */
static yt_tensor *
dry_run(yt_module *m, const int64_t *shape, int ndim, yt__summary_rec *rec, const char *fn,
        yt_tensor **input)
{
    *input = NULL;
    if (m == NULL)
        return yt__null_arg(fn, "m");
    if (ndim < 0 || ndim > YT_MAX_DIM || (ndim > 0 && shape == NULL))
        return yt__fail(YT_ERR_VALUE, "%s: %s", fn,
                        ndim < 0 || ndim > YT_MAX_DIM ? "ndim out of 0..8" : "input_shape is NULL");
    if (yt__summary_active != NULL)
        return yt__fail(YT_ERR_STATE, "%s: a summary is already running on this thread", fn);
    mode_list modes = {0};
    if (!save_modes(&modes, m)) {
        free(modes.m);
        free(modes.training);
        return yt__fail(YT_ERR_NOMEM, "%s: out of memory", fn);
    }
    yt_module_train(m, false);
    bool was = yt_set_grad_enabled(false);
    yt__scope_suspend();
    yt_tensor *x = yt_zeros_ex(shape, ndim, input_dtype(m), YT_DEVICE_CPU);
    yt_tensor *out = NULL;
    if (x != NULL) {
        yt__summary_active = rec;
        out = yt__module_call1(m, x);
        yt__summary_active = NULL;
    }
    yt__scope_resume();
    yt_set_grad_enabled(was);
    for (int i = 0; i < modes.count; i++)
        modes.m[i]->training = modes.training[i];
    free(modes.m);
    free(modes.training);
    *input = x;
    return out;
}

yt_status
yt_module_summary(yt_module *m, const int64_t *input_shape, int ndim, void *file)
{
    FILE *f = file != NULL ? (FILE *)file : stdout;
    yt__summary_rec rec = {0};
    rec.rows = malloc(MAX_ROWS * sizeof *rec.rows);
    if (rec.rows == NULL)
        return yt__fail_status(YT_ERR_NOMEM, "module_summary: out of memory");
    yt_tensor *x = NULL;
    yt_tensor *out = dry_run(m, input_shape, ndim, &rec, "module_summary", &x);
    yt_status st = YT_OK;
    if (out == NULL) {
        st = yt_errcode();
    } else {
        char in_shape[96];
        fprintf(f, "Input shape: %s (%s)\n", yt__nn_shape_str(x, in_shape, sizeof in_shape),
                yt_dtype_name(x->dtype));
        int width = layer_width(&rec);
        print_rows(f, &rec, width);
        print_totals(f, m, width);
    }
    yt_release(out);
    yt_release(x);
    free(rec.rows);
    return st;
}

yt_status
yt_module_output_shape(yt_module *m, const int64_t *input_shape, int ndim, int64_t *out_shape,
                       int *out_ndim)
{
    if (out_shape == NULL || out_ndim == NULL)
        return yt__fail_status(YT_ERR_VALUE, "module_output_shape: %s is NULL",
                               out_shape == NULL ? "out_shape" : "out_ndim");
    yt_tensor *x = NULL;
    yt_tensor *out = dry_run(m, input_shape, ndim, NULL, "module_output_shape", &x);
    yt_release(x);
    if (out == NULL)
        return yt_errcode();
    *out_ndim = out->dim;
    for (int i = 0; i < out->dim; i++)
        out_shape[i] = out->sizes[i];
    yt_release(out);
    return YT_OK;
}

/* ---------------------------------------------------------------- print(model) */

static void
print_tree(FILE *f, const yt_module *m, int indent)
{
    char desc[DESC_CAP];
    describe(m, desc);
    if (m->n_children == 0) {
        fprintf(f, "%s(%s)", m->kind->name, desc);
        return;
    }
    fprintf(f, "%s(\n", m->kind->name);
    if (desc[0] != '\0')
        fprintf(f, "%*s%s\n", indent + 2, "", desc);
    for (int i = 0; i < m->n_children; i++) {
        fprintf(f, "%*s(%s): ", indent + 2, "", m->child_names[i]);
        print_tree(f, m->children[i], indent + 2);
        fputc('\n', f);
    }
    fprintf(f, "%*s)", indent, "");
}

yt_status
yt_module_print(yt_module *m, void *file)
{
    if (m == NULL)
        return yt__null_status("module_print", "m");
    FILE *f = file != NULL ? (FILE *)file : stdout;
    print_tree(f, m, 0);
    fputc('\n', f);
    return YT_OK;
}
