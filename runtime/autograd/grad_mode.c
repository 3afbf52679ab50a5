/* Public autograd state: requires_grad flags, leaf gradients, detach, and the thread-local grad
 * and anomaly modes. */
#include "internal.h"

yt_status
yt_set_requires_grad(yt_tensor *t, bool requires_grad)
{
    if (t == NULL)
        return yt__null_status("set_requires_grad", "t");
    if (t->grad_fn != NULL)
        return yt__fail_status(YT_ERR_STATE,
                               "set_requires_grad: only leaf tensors can change requires_grad; "
                               "this one was produced by %s (use yt_detach() for a leaf copy)",
                               t->grad_fn->kind->name);
    if (requires_grad && !yt_dtype_is_floating(t->dtype))
        return yt__fail_status(YT_ERR_DTYPE,
                               "set_requires_grad: only floating tensors can require grad, got %s",
                               yt_dtype_name(t->dtype));
    t->requires_grad = requires_grad;
    return YT_OK;
}

bool
yt_requires_grad(const yt_tensor *t)
{
    return t != NULL && t->requires_grad;
}

bool
yt_is_leaf(const yt_tensor *t)
{
    return t != NULL && t->grad_fn == NULL;
}

const char *
yt_grad_fn_name(const yt_tensor *t)
{
    return t != NULL && t->grad_fn != NULL ? t->grad_fn->kind->name : NULL;
}

yt_tensor *
yt_grad(yt_tensor *t)
{
    if (t == NULL || t->grad == NULL)
        return NULL;
    return yt__scope_track(yt_retain(t->grad));
}

void
yt_zero_grad(yt_tensor *t)
{
    if (t == NULL)
        return;
    yt_tensor *grad = t->grad;
    t->grad = NULL;
    yt_release(grad);
}

yt_tensor *
yt_detach(yt_tensor *t)
{
    if (t == NULL)
        return yt__null_arg("detach", "t");
    yt_tensor *alias = yt__alias(t);
    if (alias == NULL)
        return NULL;
    alias->requires_grad = false;
    return yt__scope_track(alias);
}

bool
yt_grad_enabled(void)
{
    return !yt__tls.grad_disabled;
}

bool
yt_set_grad_enabled(bool enabled)
{
    bool previous = !yt__tls.grad_disabled;
    yt__tls.grad_disabled = !enabled;
    return previous;
}

void
yt_set_anomaly_enabled(bool enabled)
{
    yt__tls.anomaly_enabled = enabled;
}
