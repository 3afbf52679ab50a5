/* Tensors saved for backward (PyTorch's SavedVariable). Inputs are kept as they are. Outputs
 * are kept as a detached alias, because the output holds its grad_fn and the grad_fn holds what
 * it saved: keeping the output itself would be a cycle that never frees. The version of the
 * storage at save time lets backward detect in-place writes since. */
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
    yt_tensor *kept = is_output ? yt__alias(t) : yt_retain(t);
    if (kept == NULL)
        return yt__last_status();
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
