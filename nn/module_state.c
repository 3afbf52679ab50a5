/* A module tree's tensors by dotted name: parameters, state dicts (save and strict load), parameter
 * counts, dtype conversion. None of this runs on a training step, so it favours plain code (linear
 * scans, names built in a path buffer) over speed. */
#include <stdlib.h>
#include <string.h>

#include "module_internal.h"

enum { PATH_CAP = 1024, MSG_CAP = 480 };

/* Drops the entries from `start` on, restoring the list a failed call had appended to. */
static void
truncate_list(yt_named_tensors *list, int64_t start)
{
    for (int64_t i = start; i < list->count; i++) {
        yt_release(list->tensors[i]);
        free(list->names[i]);
    }
    if (list->count > start)
        list->count = start;
}

static bool
holds_tensor(const yt_named_tensors *list, int64_t start, const yt_tensor *t)
{
    for (int64_t i = start; i < list->count; i++)
        if (list->tensors[i] == t)
            return true;
    return false;
}

/* What a walk collects. */
typedef enum { WANT_PARAMS, WANT_STATE } want_kind;

typedef struct walk_state {
    yt_named_tensors *out;
    int64_t start; /* first entry this walk added */
    want_kind want;
    char path[PATH_CAP];
} walk_state;

static yt_status
add_named(walk_state *w, size_t len, const char *name, yt_tensor *t, bool alias)
{
    size_t n = strlen(name);
    if (len + n + 1 > PATH_CAP)
        return yt__fail_status(YT_ERR_VALUE, "module: the name '%.*s%s' is longer than %d bytes",
                               (int)len, w->path, name, PATH_CAP - 1);
    memcpy(w->path + len, name, n + 1);
    if (!alias)
        return yt_named_tensors_add(w->out, w->path, t);
    /* State dicts hold detached aliases, as PyTorch's state_dict() returns detached tensors. */
    yt_tensor *a = yt__alias(t);
    if (a == NULL)
        return yt_errcode();
    a->requires_grad = false;
    yt_status st = yt_named_tensors_add(w->out, w->path, a);
    yt_release(a);
    return st;
}

/* Depth-first: own parameters (and buffers for state dicts), then each child under "name.". */
static yt_status
walk_tree(walk_state *w, const yt_module *m, size_t len)
{
    for (int64_t i = 0; i < m->params.count; i++) {
        yt_tensor *t = m->params.tensors[i];
        if (w->want == WANT_PARAMS && holds_tensor(w->out, w->start, t))
            continue; /* shared: listed once, under its first name */
        if (add_named(w, len, m->params.names[i], t, w->want == WANT_STATE) != YT_OK)
            return yt_errcode();
    }
    if (w->want == WANT_STATE)
        for (int64_t i = 0; i < m->buffers.count; i++)
            if (add_named(w, len, m->buffers.names[i], m->buffers.tensors[i], true) != YT_OK)
                return yt_errcode();
    for (int i = 0; i < m->n_children; i++) {
        size_t n = strlen(m->child_names[i]);
        if (len + n + 2 > PATH_CAP)
            return yt__fail_status(YT_ERR_VALUE, "module: a name under '%.*s' is longer than %d",
                                   (int)len, w->path, PATH_CAP - 1);
        memcpy(w->path + len, m->child_names[i], n);
        w->path[len + n] = '.';
        if (walk_tree(w, m->children[i], len + n + 1) != YT_OK)
            return yt_errcode();
    }
    return YT_OK;
}

static yt_status
collect(yt_module *m, yt_named_tensors *out, want_kind want, const char *fn)
{
    if (m == NULL)
        return yt__null_status(fn, "m");
    if (out == NULL)
        return yt__fail_status(YT_ERR_VALUE, "%s: out is NULL", fn);
    walk_state *w = malloc(sizeof *w);
    if (w == NULL)
        return yt__fail_status(YT_ERR_NOMEM, "%s: out of memory", fn);
    w->out = out;
    w->start = out->count;
    w->want = want;
    w->path[0] = '\0';
    yt_status st = walk_tree(w, m, 0);
    if (st != YT_OK)
        truncate_list(out, w->start);
    free(w);
    return st;
}

yt_status
yt_module_parameters(yt_module *m, yt_named_tensors *out)
{
    return collect(m, out, WANT_PARAMS, "module_parameters");
}

yt_status
yt_module_state_dict(yt_module *m, yt_named_tensors *out)
{
    return collect(m, out, WANT_STATE, "module_state_dict");
}

int64_t
yt_module_num_parameters(yt_module *m)
{
    if (m == NULL)
        return 0;
    yt_named_tensors params = YT_NAMED_TENSORS_INIT;
    int64_t total = 0;
    if (yt_module_parameters(m, &params) == YT_OK)
        for (int64_t i = 0; i < params.count; i++)
            total += params.tensors[i]->numel;
    yt_named_tensors_clear(&params);
    return total;
}

/* ---------------------------------------------------------------- load_state_dict */

static bool
same_sizes(const yt_tensor *a, const yt_tensor *b)
{
    if (a->dim != b->dim)
        return false;
    for (int i = 0; i < a->dim; i++)
        if (a->sizes[i] != b->sizes[i])
            return false;
    return true;
}

/* Appends "'name'" to a comma-separated list in msg. */
static void
list_key(char *msg, size_t *len, int *count, const char *name)
{
    yt__nn_appendf(msg, MSG_CAP, len, "%s'%s'", *count ? ", " : "", name);
    (*count)++;
}

yt_status
yt_module_load_state_dict(yt_module *m, const yt_named_tensors *sd, bool strict)
{
    if (m == NULL)
        return yt__null_status("module_load_state_dict", "m");
    if (sd == NULL)
        return yt__fail_status(YT_ERR_VALUE, "module_load_state_dict: sd is NULL");
    /* The module's own tensors under their state-dict names (aliases share their storage). */
    yt_named_tensors own = YT_NAMED_TENSORS_INIT;
    if (yt_module_state_dict(m, &own) != YT_OK)
        return yt_errcode();

    char missing[MSG_CAP] = "", unexpected[MSG_CAP] = "", mismatch[MSG_CAP] = "";
    size_t missing_len = 0, unexpected_len = 0, mismatch_len = 0;
    int n_missing = 0, n_unexpected = 0, n_mismatch = 0;
    for (int64_t i = 0; i < own.count; i++) {
        int64_t j = yt_named_tensors_find(sd, own.names[i]);
        if (j < 0) {
            list_key(missing, &missing_len, &n_missing, own.names[i]);
            continue;
        }
        yt_tensor *src = sd->tensors[j];
        if (!same_sizes(src, own.tensors[i])) {
            char have[128], want[128];
            yt__nn_appendf(mismatch, MSG_CAP, &mismatch_len,
                           "%ssize mismatch for '%s': the state dict has %s, the module %s",
                           n_mismatch ? "; " : "", own.names[i],
                           yt__nn_shape_str(src, have, sizeof have),
                           yt__nn_shape_str(own.tensors[i], want, sizeof want));
            n_mismatch++;
        }
    }
    for (int64_t j = 0; j < sd->count; j++)
        if (yt_named_tensors_find(&own, sd->names[j]) < 0)
            list_key(unexpected, &unexpected_len, &n_unexpected, sd->names[j]);

    bool key_errors = strict && (n_missing > 0 || n_unexpected > 0);
    if (n_mismatch > 0 || key_errors) {
        char msg[3 * MSG_CAP];
        size_t len = 0;
        msg[0] = '\0';
        yt__nn_appendf(msg, sizeof msg, &len, "load_state_dict: %s: ", m->kind->name);
        if (n_mismatch > 0)
            yt__nn_appendf(msg, sizeof msg, &len, "%s", mismatch);
        if (key_errors && n_missing > 0)
            yt__nn_appendf(msg, sizeof msg, &len, "%smissing key%s %s", n_mismatch ? "; " : "",
                           n_missing > 1 ? "s" : "", missing);
        if (key_errors && n_unexpected > 0)
            yt__nn_appendf(msg, sizeof msg, &len, "%sunexpected key%s %s",
                           n_mismatch || n_missing ? "; " : "", n_unexpected > 1 ? "s" : "",
                           unexpected);
        yt_named_tensors_clear(&own);
        return yt__fail_status(n_mismatch > 0 ? YT_ERR_SHAPE : YT_ERR_VALUE, "%s", msg);
    }

    yt_status st = YT_OK;
    for (int64_t i = 0; i < own.count && st == YT_OK; i++) {
        int64_t j = yt_named_tensors_find(sd, own.names[i]);
        if (j < 0)
            continue;
        if (sd->tensors[j]->device != own.tensors[i]->device) {
            st = yt__fail_status(
                YT_ERR_DEVICE, "load_state_dict: '%s' is on %s, the module's on %s", own.names[i],
                yt_device_name(sd->tensors[j]->device), yt_device_name(own.tensors[i]->device));
            break;
        }
        st = yt__copy_into(own.tensors[i], sd->tensors[j]);
        if (st == YT_OK)
            yt__bump_version(own.tensors[i]);
    }
    yt_named_tensors_clear(&own);
    return st;
}

/* ---------------------------------------------------------------- dtype conversion */

/* Tensors already converted in this call, so a tensor shared by two modules stays shared. */
typedef struct convert_map {
    yt_tensor **from, **to;
    int64_t count, cap;
} convert_map;

static yt_tensor *
convert(convert_map *map, yt_tensor *t, yt_dtype dtype, bool is_param)
{
    for (int64_t i = 0; i < map->count; i++)
        if (map->from[i] == t)
            return yt_retain(map->to[i]);
    bool was = yt_set_grad_enabled(false);
    yt__scope_suspend();
    yt_tensor *c = yt_to(t, dtype);
    yt__scope_resume();
    yt_set_grad_enabled(was);
    if (c == NULL)
        return NULL;
    if (c == t) { /* yt_to may hand back the same tensor: give the module a distinct one */
        yt_release(c);
        c = yt__alias(t);
        if (c == NULL)
            return NULL;
    }
    c->requires_grad = is_param && t->requires_grad;
    if (map->count == map->cap) {
        int64_t cap = map->cap ? 2 * map->cap : 16;
        yt_tensor **from = realloc(map->from, (size_t)cap * sizeof *from);
        if (from != NULL)
            map->from = from;
        yt_tensor **to = realloc(map->to, (size_t)cap * sizeof *to);
        if (to != NULL)
            map->to = to;
        if (from == NULL || to == NULL) {
            yt_release(c);
            return yt__fail(YT_ERR_NOMEM, "module_to: out of memory");
        }
        map->cap = cap;
    }
    map->from[map->count] = t;
    map->to[map->count++] = c; /* borrowed: the module list holds the reference */
    return c;
}

static yt_status
convert_list(convert_map *map, yt_named_tensors *list, yt_dtype dtype, bool is_param)
{
    for (int64_t i = 0; i < list->count; i++) {
        yt_tensor *t = list->tensors[i];
        if (!yt_dtype_is_floating(t->dtype) || t->dtype == dtype)
            continue;
        yt_tensor *c = convert(map, t, dtype, is_param);
        if (c == NULL)
            return yt_errcode();
        list->tensors[i] = c;
        yt_release(t);
    }
    return YT_OK;
}

static yt_status
convert_tree(convert_map *map, yt_module *m, yt_dtype dtype)
{
    if (convert_list(map, &m->params, dtype, true) != YT_OK ||
        convert_list(map, &m->buffers, dtype, false) != YT_OK)
        return yt_errcode();
    for (int i = 0; i < m->n_children; i++)
        if (convert_tree(map, m->children[i], dtype) != YT_OK)
            return yt_errcode();
    return YT_OK;
}

yt_status
yt_module_to(yt_module *m, yt_dtype dtype)
{
    if (m == NULL)
        return yt__null_status("module_to", "m");
    if (dtype != YT_DTYPE_F32 && dtype != YT_DTYPE_F64)
        return yt__fail_status(YT_ERR_DTYPE, "module_to: dtype=%s; modules hold f32 or f64",
                               yt_dtype_name(dtype));
    convert_map map = {0};
    yt_status st = convert_tree(&map, m, dtype);
    free(map.from);
    free(map.to);
    return st;
}
