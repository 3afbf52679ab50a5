/* The module object: creation and release, parameters, buffers and children by name, forward
 * dispatch, modes. State dicts are in module_state.c, summaries in module_summary.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "module_internal.h"

/* ---------------------------------------------------------------- life cycle */

yt_module *
yt__module_fail(yt_status code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    yt__fail(code, "%s", msg);
    return NULL;
}

yt_module *
yt_module_new(const yt_module_kind *kind, void *ctx)
{
    if (kind == NULL || kind->name == NULL || kind->forward == NULL) {
        if (kind != NULL && kind->release_ctx != NULL && ctx != NULL)
            kind->release_ctx(ctx);
        return yt__module_fail(YT_ERR_VALUE, "module_new: %s is NULL",
                               kind == NULL         ? "kind"
                               : kind->name == NULL ? "kind->name"
                                                    : "kind->forward");
    }
    yt_module *m = calloc(1, sizeof *m);
    if (m == NULL) {
        if (kind->release_ctx != NULL && ctx != NULL)
            kind->release_ctx(ctx);
        return yt__module_fail(YT_ERR_NOMEM, "module_new: out of memory for a %s", kind->name);
    }
    atomic_init(&m->refcount, 1);
    m->kind = kind;
    m->ctx = ctx;
    m->training = true;
    return m;
}

yt_module *
yt__module_new_copy(const yt_module_kind *kind, const void *ctx, size_t ctx_size)
{
    void *copy = malloc(ctx_size > 0 ? ctx_size : 1);
    if (copy == NULL)
        return yt__module_fail(YT_ERR_NOMEM, "%s: out of memory", kind->name);
    memcpy(copy, ctx, ctx_size);
    return yt_module_new(kind, copy);
}

void *
yt_module_ctx(yt_module *m)
{
    return m != NULL ? m->ctx : NULL;
}

const yt_module_kind *
yt_module_kind_of(const yt_module *m)
{
    return m != NULL ? m->kind : NULL;
}

const char *
yt_module_kind_name(const yt_module *m)
{
    return m != NULL ? m->kind->name : NULL;
}

yt_module *
yt_module_retain(yt_module *m)
{
    if (m != NULL)
        atomic_fetch_add_explicit(&m->refcount, 1, memory_order_relaxed);
    return m;
}

void
yt_module_release(yt_module *m)
{
    if (m == NULL || atomic_fetch_sub_explicit(&m->refcount, 1, memory_order_acq_rel) != 1)
        return;
    yt_named_tensors_clear(&m->params);
    yt_named_tensors_clear(&m->buffers);
    for (int i = 0; i < m->n_children; i++) {
        yt_module_release(m->children[i]);
        free(m->child_names[i]);
    }
    free(m->children);
    free(m->child_names);
    if (m->kind->release_ctx != NULL && m->ctx != NULL)
        m->kind->release_ctx(m->ctx);
    free(m);
}

/* ---------------------------------------------------------------- forward */

yt_tensor *
yt__module_call(yt_module *m, yt_tensor *const *inputs, int n)
{
    if (yt__summary_active == NULL)
        return m->kind->forward(m, inputs, n);
    int slot = yt__summary_enter(m);
    yt_tensor *out = m->kind->forward(m, inputs, n);
    yt__summary_leave(slot, out);
    return out;
}

yt_tensor *
yt__module_arity_error(const yt_module *m, int want, int got)
{
    return yt__fail(YT_ERR_VALUE, "%s: forward takes %d input%s%s, got %d", m->kind->name, want,
                    want == 1 ? "" : "s", want == 2 ? " (input, target)" : "", got);
}

yt_tensor *
yt_module_forward_n(yt_module *m, yt_tensor *const *inputs, int n)
{
    if (m == NULL)
        return yt__null_arg("module_forward", "m");
    if (n < 1 || inputs == NULL)
        return yt__fail(YT_ERR_VALUE, "module_forward: %s: needs at least one input, got %s",
                        m->kind->name, inputs == NULL ? "inputs=NULL" : "n=0");
    for (int i = 0; i < n; i++)
        if (inputs[i] == NULL)
            return yt__null_arg("module_forward", "an input");
    if (m->kind->n_inputs > 0 && n != m->kind->n_inputs)
        return yt__module_arity_error(m, m->kind->n_inputs, n);
    /* Layers release their own temporaries; only the result goes to the caller's scope. */
    yt__scope_suspend();
    yt_tensor *out = yt__module_call(m, inputs, n);
    yt__scope_resume();
    return yt__scope_track(out);
}

yt_tensor *
yt_module_forward(yt_module *m, yt_tensor *x)
{
    return yt_module_forward_n(m, &x, 1);
}

yt_tensor *
yt_module_forward2(yt_module *m, yt_tensor *input, yt_tensor *target)
{
    yt_tensor *in[2] = {input, target};
    return yt_module_forward_n(m, in, 2);
}

/* ---------------------------------------------------------------- registration */

static bool
name_taken(const yt_module *m, const char *name)
{
    if (yt_named_tensors_find(&m->params, name) >= 0 ||
        yt_named_tensors_find(&m->buffers, name) >= 0)
        return true;
    for (int i = 0; i < m->n_children; i++)
        if (strcmp(m->child_names[i], name) == 0)
            return true;
    return false;
}

static yt_status
check_name(const yt_module *m, const char *fn, const char *name)
{
    if (name == NULL)
        return yt__fail_status(YT_ERR_VALUE, "%s: name is NULL", fn);
    if (name[0] == '\0')
        return yt__fail_status(YT_ERR_VALUE, "%s: name is empty", fn);
    if (strchr(name, '.') != NULL)
        return yt__fail_status(YT_ERR_VALUE, "%s: name '%s' contains '.' (dots separate levels)",
                               fn, name);
    if (name_taken(m, name))
        return yt__fail_status(YT_ERR_VALUE, "%s: %s already has a parameter, buffer or child '%s'",
                               fn, m->kind->name, name);
    return YT_OK;
}

yt_status
yt_module_register_parameter(yt_module *m, const char *name, yt_tensor *t)
{
    if (m == NULL)
        return yt__null_status("module_register_parameter", "m");
    if (t == NULL)
        return yt__null_status("module_register_parameter", "t");
    if (check_name(m, "module_register_parameter", name) != YT_OK)
        return yt_errcode();
    if (t->grad_fn != NULL)
        return yt__fail_status(YT_ERR_STATE,
                               "module_register_parameter: '%s' is not a leaf (it was produced by "
                               "%s); register yt_detach() of it",
                               name, t->grad_fn->kind->name);
    if (!yt_dtype_is_floating(t->dtype))
        return yt__fail_status(YT_ERR_DTYPE,
                               "module_register_parameter: '%s' is %s; parameters must be floating",
                               name, yt_dtype_name(t->dtype));
    if (yt_named_tensors_add(&m->params, name, t) != YT_OK)
        return yt_errcode();
    t->requires_grad = true;
    return YT_OK;
}

yt_status
yt_module_register_buffer(yt_module *m, const char *name, yt_tensor *t)
{
    if (m == NULL)
        return yt__null_status("module_register_buffer", "m");
    if (t == NULL)
        return yt__null_status("module_register_buffer", "t");
    if (check_name(m, "module_register_buffer", name) != YT_OK)
        return yt_errcode();
    return yt_named_tensors_add(&m->buffers, name, t);
}

/* True when `target` is `root` or one of its descendants. */
static bool
contains(const yt_module *root, const yt_module *target)
{
    if (root == target)
        return true;
    for (int i = 0; i < root->n_children; i++)
        if (contains(root->children[i], target))
            return true;
    return false;
}

yt_status
yt_module_add_child(yt_module *m, const char *name, yt_module *child)
{
    if (m == NULL)
        return yt__null_status("module_add_child", "m");
    if (child == NULL)
        return yt__null_status("module_add_child", "child");
    if (check_name(m, "module_add_child", name) != YT_OK)
        return yt_errcode();
    if (contains(child, m))
        return yt__fail_status(YT_ERR_VALUE,
                               "module_add_child: adding the %s as child '%s' of the %s would "
                               "make a cycle (the %s contains it)",
                               child->kind->name, name, m->kind->name, child->kind->name);
    if (m->n_children == m->cap_children) {
        int cap = m->cap_children ? 2 * m->cap_children : 4;
        yt_module **children = realloc(m->children, (size_t)cap * sizeof *children);
        if (children == NULL)
            return yt__fail_status(YT_ERR_NOMEM, "module_add_child: out of memory");
        m->children = children;
        char **names = realloc(m->child_names, (size_t)cap * sizeof *names);
        if (names == NULL)
            return yt__fail_status(YT_ERR_NOMEM, "module_add_child: out of memory");
        m->child_names = names;
        m->cap_children = cap;
    }
    char *copy = strdup(name);
    if (copy == NULL)
        return yt__fail_status(YT_ERR_NOMEM, "module_add_child: out of memory");
    m->child_names[m->n_children] = copy;
    m->children[m->n_children++] = yt_module_retain(child);
    if (m->gen != NULL)
        yt_module_set_generator(child, m->gen);
    return YT_OK;
}

/* ---------------------------------------------------------------- lookup */

static yt_module *
own_child(yt_module *m, const char *name, size_t len)
{
    for (int i = 0; i < m->n_children; i++)
        if (strncmp(m->child_names[i], name, len) == 0 && m->child_names[i][len] == '\0')
            return m->children[i];
    return NULL;
}

/* Walks the dotted prefix of `path` (every part but the last); returns the module holding the
 * last part and sets *last, or NULL when a part names no child. */
static yt_module *
walk(yt_module *m, const char *path, const char **last)
{
    const char *dot;
    while ((dot = strchr(path, '.')) != NULL) {
        m = own_child(m, path, (size_t)(dot - path));
        if (m == NULL)
            return NULL;
        path = dot + 1;
    }
    *last = path;
    return m;
}

yt_tensor *
yt_module_get(yt_module *m, const char *name)
{
    if (m == NULL)
        return yt__null_arg("module_get", "m");
    if (name == NULL)
        return yt__fail(YT_ERR_VALUE, "module_get: name is NULL");
    const char *last = NULL;
    yt_module *owner = walk(m, name, &last);
    int64_t i = owner != NULL ? yt_named_tensors_find(&owner->params, last) : -1;
    if (i >= 0)
        return yt__scope_track(yt_retain(owner->params.tensors[i]));
    i = owner != NULL ? yt_named_tensors_find(&owner->buffers, last) : -1;
    if (i >= 0)
        return yt__scope_track(yt_retain(owner->buffers.tensors[i]));
    return yt__fail(YT_ERR_VALUE, "module_get: the %s has no parameter or buffer '%s'",
                    m->kind->name, name);
}

yt_module *
yt_module_get_child(yt_module *m, const char *name)
{
    if (m == NULL) {
        yt__null_arg("module_get_child", "m");
        return NULL;
    }
    if (name == NULL) {
        yt__fail(YT_ERR_VALUE, "module_get_child: name is NULL");
        return NULL;
    }
    const char *last = NULL;
    yt_module *owner = walk(m, name, &last);
    yt_module *child = owner != NULL ? own_child(owner, last, strlen(last)) : NULL;
    if (child == NULL)
        yt__fail(YT_ERR_VALUE, "module_get_child: the %s has no child '%s'", m->kind->name, name);
    return child;
}

int
yt_module_child_count(const yt_module *m)
{
    return m != NULL ? m->n_children : 0;
}

yt_module *
yt_module_child(yt_module *m, int i)
{
    return m != NULL && i >= 0 && i < m->n_children ? m->children[i] : NULL;
}

const char *
yt_module_child_name(const yt_module *m, int i)
{
    return m != NULL && i >= 0 && i < m->n_children ? m->child_names[i] : NULL;
}

/* ---------------------------------------------------------------- modes */

void
yt_module_train(yt_module *m, bool training)
{
    if (m == NULL)
        return;
    m->training = training;
    for (int i = 0; i < m->n_children; i++)
        yt_module_train(m->children[i], training);
}

bool
yt_module_is_training(const yt_module *m)
{
    return m != NULL && m->training;
}

void
yt_module_set_generator(yt_module *m, yt_generator *gen)
{
    if (m == NULL)
        return;
    m->gen = gen;
    for (int i = 0; i < m->n_children; i++)
        yt_module_set_generator(m->children[i], gen);
}

void
yt_module_zero_grad(yt_module *m)
{
    if (m == NULL)
        return;
    for (int64_t i = 0; i < m->params.count; i++)
        yt_zero_grad(m->params.tensors[i]);
    for (int i = 0; i < m->n_children; i++)
        yt_module_zero_grad(m->children[i]);
}

/* ---------------------------------------------------------------- helpers for the layers */

/* A parameter or buffer that could not be made, in the module's terms: "Linear: parameter
 * 'weight': size [...] has too many elements (overflows int64)", not empty's. */
static yt_tensor *
new_tensor(yt_module *m, const char *what, const char *name, const int64_t *sizes, int ndim,
           yt_dtype dtype)
{
    yt__scope_suspend();
    yt_tensor *t = yt_empty_ex(sizes, ndim, dtype, YT_DEVICE_CPU);
    yt__scope_resume();
    if (t != NULL)
        return t;
    const char *msg = yt_errmsg(), *inner = strncmp(msg, "empty: ", 7) == 0 ? msg + 7 : msg;
    return yt__fail(yt_errcode(), "%s: %s '%s': %s", m->kind->name, what, name, inner);
}

yt_tensor *
yt__module_new_param(yt_module *m, const char *name, const int64_t *sizes, int ndim)
{
    yt_tensor *t = new_tensor(m, "parameter", name, sizes, ndim, YT_DTYPE_F32);
    if (t == NULL)
        return NULL;
    yt_status st = yt_module_register_parameter(m, name, t);
    yt_release(t); /* the module holds it now */
    return st == YT_OK ? t : NULL;
}

yt_tensor *
yt__module_new_buffer(yt_module *m, const char *name, const int64_t *sizes, int ndim,
                      yt_dtype dtype, double value)
{
    yt_tensor *t = new_tensor(m, "buffer", name, sizes, ndim, dtype);
    if (t == NULL)
        return NULL;
    yt_status st = yt__fill(t, value);
    if (st == YT_OK)
        st = yt_module_register_buffer(m, name, t);
    yt_release(t);
    return st == YT_OK ? t : NULL;
}

yt_status
yt__fill(yt_tensor *t, double value)
{
    yt__scope_suspend();
    yt_tensor *s = yt_scalar_tensor(yt_float(value), t->dtype);
    yt__scope_resume();
    if (s == NULL)
        return yt_errcode();
    yt_status st = yt__copy_into(t, s);
    yt_release(s);
    if (st == YT_OK)
        yt__bump_version(t);
    return st;
}

const char *
yt__nn_shape_str(const yt_tensor *t, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    yt__nn_appendf(buf, cap, &len, "[");
    for (int i = 0; i < t->dim; i++)
        yt__nn_appendf(buf, cap, &len, "%s%lld", i ? ", " : "", (long long)t->sizes[i]);
    yt__nn_appendf(buf, cap, &len, "]");
    return buf;
}

void
yt__nn_appendf(char *buf, size_t cap, size_t *len, const char *fmt, ...)
{
    if (cap == 0 || *len >= cap - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *len, cap - *len, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    *len = *len + (size_t)n >= cap ? cap - 1 : *len + (size_t)n;
}
