/* Autograd of in-place writes into views (PyTorch's rebase_history and CopySlices).
 *
 * In `y = x * 2; y[0] *= 5` the write goes into y through the view y[0]. The in-place op records
 * its node (fn) as the view's grad_fn, whose self edge leads to the view's old history; y's own
 * grad_fn still describes y before the write, so a gradient reaching y would skip it.
 * yt__rebase_view therefore gives y a copy_slices node: y's old value gets the incoming gradient
 * with the view's part replaced by fn's gradient for the view's old value, and fn's other inputs
 * get fn's gradients for them. The view's grad_fn becomes a view_of_base node, which scatters its
 * gradient into zeros shaped like y and hands that to y's new history. Views of y made before the
 * write still describe y before it: they notice from the storage version and take a view_of_base
 * node of y's current history when next recorded or backpropagated from (yt__refresh_view).
 *
 * Both nodes compute with plain copies, so a backward with create_graph through them is refused
 * rather than silently losing the second-order terms. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Where the base's and the view's elements lie in a buffer laid out like the base's storage, from
 * the lowest element the base reaches to the highest. */
typedef struct slices {
    int base_dim, view_dim;
    int64_t base_sizes[YT_MAX_DIM], base_strides[YT_MAX_DIM];
    int64_t view_sizes[YT_MAX_DIM], view_strides[YT_MAX_DIM];
    int64_t base_offset, view_offset; /* in the buffer, whose element 0 is the lowest */
    int64_t span;                     /* buffer elements */
    yt_dtype dtype;
    yt_device device;
} slices;

static void
slices_of(slices *g, const yt_tensor *base, const yt_tensor *view)
{
    g->base_dim = base->dim;
    g->view_dim = view->dim;
    memcpy(g->base_sizes, base->sizes, sizeof g->base_sizes);
    memcpy(g->base_strides, base->strides, sizeof g->base_strides);
    memcpy(g->view_sizes, view->sizes, sizeof g->view_sizes);
    memcpy(g->view_strides, view->strides, sizeof g->view_strides);
    int64_t first, last;
    yt__element_span(base, &first, &last);
    g->base_offset = base->offset - first;
    g->view_offset = view->offset - first;
    g->span = last - first + 1;
    g->dtype = base->dtype;
    g->device = base->device;
}

/* A buffer with handles on the base's and the view's elements in it (new references). It is
 * zeroed unless `filled`: the caller then writes every base element, and only a base with gaps
 * between its elements needs zeros in them. */
static yt_status
slices_buffer(const slices *g, bool filled, yt_tensor **whole, yt_tensor **part)
{
    *whole = *part = NULL;
    int64_t base_numel = 1;
    for (int d = 0; d < g->base_dim; d++)
        base_numel *= g->base_sizes[d];
    yt_tensor *buffer = filled && base_numel == g->span
                            ? yt_empty_ex(&g->span, 1, g->dtype, g->device)
                            : yt_zeros_ex(&g->span, 1, g->dtype, g->device);
    if (buffer == NULL)
        return yt__last_status();
    *whole = yt__view_of(buffer, g->base_dim, g->base_sizes, g->base_strides, g->base_offset);
    *part = yt__view_of(buffer, g->view_dim, g->view_sizes, g->view_strides, g->view_offset);
    yt_release(buffer);
    if (*whole == NULL || *part == NULL) {
        yt_release(*whole);
        yt_release(*part);
        *whole = *part = NULL;
        return yt__last_status();
    }
    return YT_OK;
}

static yt_status
refuse_double_backward(const char *op)
{
    return yt__fail_status(YT_ERR_STATE,
                           "backward: create_graph through %s written in place into a view is not "
                           "supported (the gradient of that write has no graph of its own)",
                           op);
}

/* ---------------------------------------------------------------- copy_slices */

typedef struct copy_slices_node {
    yt_node base; /* must be first */
    yt_node *fn;  /* the in-place op's node (strong); its self edge is this node's edge 0 */
    slices g;
} copy_slices_node;

static yt_status
copy_slices_backward(yt_node *node_, yt_tensor *const *grads, yt_tensor **out)
{
    copy_slices_node *node = (copy_slices_node *)node_;
    yt_node *fn = node->fn;
    if (!yt__tls.grad_disabled)
        return refuse_double_backward(fn->kind->op_name);
    yt_tensor *whole, *part, *fn_grad = NULL;
    yt_tensor **fn_out = calloc((size_t)fn->n_inputs, sizeof *fn_out);
    yt_status st = fn_out == NULL ? yt__fail_status(YT_ERR_NOMEM, "backward: out of memory")
                                  : slices_buffer(&node->g, true, &whole, &part);
    if (st != YT_OK) {
        free(fn_out);
        return st;
    }
    st = yt__copy_into(whole, grads[0]);
    /* fn's output is the view: its gradient is the view's part of the base's */
    if (st == YT_OK)
        fn_grad = yt__cast_copy(part, part->dtype);
    if (st == YT_OK && fn_grad == NULL)
        st = yt__last_status();
    if (st == YT_OK)
        st = fn->kind->backward(fn, &fn_grad, fn_out);
    if (st == YT_OK && node->base.needs_grad[0]) {
        /* the view's old elements get fn's gradient for self; the rest of the base passes on */
        if (fn_out[0] != NULL) {
            st = yt__copy_into(part, fn_out[0]);
        } else {
            yt_tensor *zeros = yt_zeros_ex(part->sizes, part->dim, part->dtype, part->device);
            st = zeros == NULL ? yt__last_status() : yt__copy_into(part, zeros);
            yt_release(zeros);
        }
        if (st == YT_OK)
            out[0] = yt_retain(whole);
    }
    for (int i = 1; i < fn->n_inputs; i++) {
        if (st == YT_OK)
            out[i] = fn_out[i];
        else
            yt_release(fn_out[i]);
    }
    yt_release(fn_out[0]);
    free(fn_out);
    yt_release(fn_grad);
    yt_release(part);
    yt_release(whole);
    return st;
}

static void
copy_slices_release_saved(yt_node *node_)
{
    yt_node *fn = ((copy_slices_node *)node_)->fn;
    fn->kind->release_saved(fn);
    fn->saved_released = true;
}

static void
copy_slices_release_fn(yt_node *node_)
{
    yt__node_release(((copy_slices_node *)node_)->fn);
}

static const yt_node_kind copy_slices_kind = {
    .name = "CopySlices",
    .op_name = "in-place write into a view",
    .size = sizeof(copy_slices_node),
    .backward = copy_slices_backward,
    .release_saved = copy_slices_release_saved,
    .release_rest = copy_slices_release_fn,
};

/* ---------------------------------------------------------------- view_of_base */

typedef struct view_of_base_node {
    yt_node base; /* must be first */
    slices g;
} view_of_base_node;

static yt_status
view_of_base_backward(yt_node *node_, yt_tensor *const *grads, yt_tensor **out)
{
    view_of_base_node *node = (view_of_base_node *)node_;
    if (!yt__tls.grad_disabled)
        return refuse_double_backward("a tensor");
    if (!node->base.needs_grad[0])
        return YT_OK;
    yt_tensor *whole, *part;
    yt_status st = slices_buffer(&node->g, false, &whole, &part);
    if (st == YT_OK)
        st = yt__copy_into(part, grads[0]);
    if (st == YT_OK)
        out[0] = yt_retain(whole);
    yt_release(part);
    yt_release(whole);
    return st;
}

static void
nothing_saved(yt_node *node)
{
    (void)node;
}

static const yt_node_kind view_of_base_kind = {
    .name = "AsStridedBackward",
    .op_name = "view",
    .size = sizeof(view_of_base_node),
    .backward = view_of_base_backward,
    .release_saved = nothing_saved,
};

/* Makes `view`'s grad_fn the view of its base's current history. */
static yt_status
set_view_of_base(yt_tensor *view)
{
    view_of_base_node *node = (view_of_base_node *)yt__node_new(&view_of_base_kind, 1, 1);
    if (node == NULL)
        return yt__last_status();
    slices_of(&node->g, view->view_base, view);
    yt__node_set_edge(&node->base, 0, view->view_base);
    yt__node_set_output(&node->base, view, 0);
    yt__node_release(&node->base);
    return YT_OK;
}

yt_status
yt__rebase_view(yt_tensor *self, const char *op)
{
    yt_tensor *base = self->view_base;
    yt_node *fn = self->grad_fn;
    if (base == NULL || fn == NULL || self->numel == 0)
        return YT_OK;
    if (fn->n_inputs < 1 || fn->n_outputs != 1)
        return yt__fail_status(YT_ERR_INTERNAL, "%s: in-place node %s has %d inputs, %d outputs",
                               op, fn->kind->name, fn->n_inputs, fn->n_outputs);
    copy_slices_node *node = (copy_slices_node *)yt__node_new(&copy_slices_kind, fn->n_inputs, 1);
    if (node == NULL)
        return yt__last_status();
    slices_of(&node->g, base, self);
    /* edge 0: the base's history before the write; the others: fn's, moved over */
    yt__node_set_edge(&node->base, 0, base);
    for (int i = 1; i < fn->n_inputs; i++) {
        node->base.next[i] = fn->next[i];
        node->base.needs_grad[i] = fn->needs_grad[i];
        memset(&fn->next[i], 0, sizeof fn->next[i]);
    }
    /* fn's self edge led to the view's old history, which the base's old history covers */
    yt__node_release(fn->next[0].node);
    yt_release(fn->next[0].leaf);
    memset(&fn->next[0], 0, sizeof fn->next[0]);
    fn->needs_grad[0] = node->base.needs_grad[0];
    yt__node_retain(fn);
    node->fn = fn;
    yt__node_set_output(&node->base, base, 0);
    yt__node_release(&node->base);
    return set_view_of_base(self);
}

void
yt__forget_private_base(yt_tensor *view)
{
    yt_tensor *base = view->view_base;
    if (base == NULL || atomic_load_explicit(&base->refcount, memory_order_acquire) != 1)
        return;
    view->view_base = NULL;
    yt_release(base);
}

bool
yt__refresh_view(yt_tensor *t)
{
    yt_tensor *base = t->view_base;
    if (base == NULL || !t->requires_grad || !base->requires_grad ||
        t->view_version == atomic_load_explicit(&t->storage->version, memory_order_relaxed))
        return true;
    return set_view_of_base(t) == YT_OK;
}
