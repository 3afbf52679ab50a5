/* Autograd of in-place writes whose new values do not depend on the old ones (uniform_, normal_,
 * bernoulli_): derivatives.yaml's `inplace_grad: zero`.
 *
 * In `y = x * 2; yt_uniform_(y)` nothing of x is left in y, so x's gradient through y is zero.
 * Leaving y's grad_fn as it was would hand y's gradient to x as if the write had not happened; so
 * the write records a node whose gradient for y's old history is zero, as PyTorch's
 * `self: zeros_like(grad)` does for these ops. y still requires grad, and x.grad comes out as
 * zeros (not absent), as in PyTorch. */
#include "internal.h"

static yt_status
overwrite_backward(yt_node *node, yt_tensor *const *grads, yt_tensor **out)
{
    if (!node->needs_grad[0])
        return YT_OK;
    const yt_tensor *g = grads[0];
    out[0] = yt_zeros_ex(g->sizes, g->dim, g->dtype, g->device);
    return out[0] == NULL ? yt__last_status() : YT_OK;
}

static void
nothing_saved(yt_node *node)
{
    (void)node;
}

static const yt_node_kind overwrite_kind = {
    .name = "OverwriteBackward",
    .op_name = "in-place write of new values",
    .size = sizeof(yt_node),
    .backward = overwrite_backward,
    .release_saved = nothing_saved,
};

yt_status
yt__record_overwrite(yt_tensor *self, const char *op)
{
    yt_node *node = yt__node_new(&overwrite_kind, 1, 1);
    if (node == NULL)
        return yt__last_status();
    yt__node_set_edge(node, 0, self);
    yt__node_set_output(node, self, 0);
    yt__node_release(node);
    return yt__rebase_view(self, op);
}
