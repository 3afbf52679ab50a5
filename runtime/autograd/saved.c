/* Tensors saved for backward (PyTorch's SavedVariable). Inputs are kept as they are. Outputs
 * are kept as a detached alias, because the output holds its grad_fn and the grad_fn holds what
 * it saved: keeping the output itself would be a cycle that never frees. The version of the
 * storage at save time lets backward detect in-place writes since. */
#include <stdlib.h>

#include "internal.h"

static uint64_t
version_of(const yt_tensor *t)
{
    return atomic_load_explicit(&t->storage->version, memory_order_relaxed);
}

yt_status
yt__saved_init(yt_saved *saved, yt_tensor *t, bool is_output, int output_nr)
{
    saved->tensor = NULL;
    saved->version = 0;
    saved->is_output = is_output;
    saved->output_nr = output_nr;
    saved->defined = t != NULL;
    if (t == NULL)
        return YT_OK; /* an absent optional tensor stays absent */
    yt_tensor *kept = is_output || t->view_base != NULL ? yt__alias(t) : yt_retain(t);
    if (kept == NULL)
        return yt__last_status();
    if (!is_output && kept != t) {
        /* An input that is a view holds its base, whose history may come to hold this node (an
         * in-place write into the view: runtime/autograd/view_inplace.c); keeping the input itself
         * would then be a cycle. The alias keeps its identity but not the base. */
        kept->requires_grad = t->requires_grad;
        kept->grad_fn = t->grad_fn;
        kept->output_nr = t->output_nr;
        yt__node_retain(kept->grad_fn);
    }
    saved->tensor = kept;
    saved->version = version_of(t);
    return YT_OK;
}

yt_tensor *
yt__saved_unpack(yt_saved *saved, yt_node *owner, const char *name)
{
    const char *op = owner != NULL ? owner->kind->op_name : "backward";
    if (saved->tensor == NULL) {
        if (owner != NULL && owner->saved_released)
            return yt__fail(YT_ERR_STATE,
                            "%s: tried to backward through the graph a second time (its saved "
                            "tensors were freed); pass retain_graph=true to the first backward",
                            op);
        return yt__fail(YT_ERR_INTERNAL, "%s: saved tensor '%s' was never saved (%s)", op, name,
                        owner != NULL ? owner->kind->name : "no node");
    }
    uint64_t now = version_of(saved->tensor);
    if (now != saved->version)
        return yt__fail(YT_ERR_STATE,
                        "%s: saved tensor '%s' was modified by an in-place operation: version "
                        "%llu, expected %llu",
                        op, name, (unsigned long long)now, (unsigned long long)saved->version);
    if (!saved->is_output)
        return yt_retain(saved->tensor);
    /* A fresh handle that is again output `output_nr` of its node, so a backward recorded with
     * create_graph reaches the node through it (double backward). */
    yt_tensor *t = yt__alias(saved->tensor);
    if (t == NULL || owner == NULL)
        return t;
    yt__node_retain(owner);
    t->grad_fn = owner;
    t->output_nr = saved->output_nr;
    t->requires_grad = true;
    return t;
}

void
yt__saved_release(yt_saved *saved)
{
    yt_release(saved->tensor);
    saved->tensor = NULL;
}

yt_tensor *
yt__saved_unpack_optional(yt_saved *saved, yt_node *owner, const char *name)
{
    if (saved->tensor == NULL && !saved->defined)
        return NULL; /* the optional tensor was not given */
    return yt__saved_unpack(saved, owner, name);
}

yt_status
yt__saved_list_init(yt_saved **saved, yt_tensor *const *ts, int n)
{
    *saved = calloc(n > 0 ? (size_t)n : 1, sizeof(yt_saved));
    if (*saved == NULL)
        return yt__fail_status(YT_ERR_NOMEM, "backward: out of memory saving %d tensors", n);
    for (int i = 0; i < n; i++) {
        yt_status st = yt__saved_init(&(*saved)[i], ts[i], false, 0);
        if (st != YT_OK)
            return st; /* the node's release_saved frees what was saved */
    }
    return YT_OK;
}

yt_tensor **
yt__saved_list_unpack(yt_saved *saved, int n, yt_node *owner, const char *name)
{
    if (saved == NULL) {
        if (owner != NULL && owner->saved_released)
            yt__fail(YT_ERR_STATE,
                     "%s: tried to backward through the graph a second time (its saved tensors "
                     "were freed); pass retain_graph=true to the first backward",
                     owner->kind->op_name);
        else
            yt__fail(YT_ERR_INTERNAL, "backward: saved tensor list '%s' was never saved", name);
        return NULL;
    }
    yt_tensor **ts = calloc(n > 0 ? (size_t)n : 1, sizeof(yt_tensor *));
    if (ts == NULL) {
        yt__fail(YT_ERR_NOMEM, "backward: out of memory unpacking %d tensors", n);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        ts[i] = yt__saved_unpack_optional(&saved[i], owner, name);
        if (ts[i] == NULL && saved[i].defined) {
            yt__release_list(ts, i);
            return NULL;
        }
    }
    return ts;
}

void
yt__saved_list_release(yt_saved **saved, int n)
{
    if (*saved == NULL)
        return;
    for (int i = 0; i < n; i++)
        yt__saved_release(&(*saved)[i]);
    free(*saved);
    *saved = NULL;
}

void
yt__release_list(yt_tensor **ts, int n)
{
    if (ts == NULL)
        return;
    for (int i = 0; i < n; i++)
        yt_release(ts[i]);
    free(ts);
}
