/* Backward nodes: allocation, reference counting, edges to the inputs' nodes or leaves, and the
 * link from a result to the node that produced it. */
#include <stdalign.h>
#include <string.h>

#include "internal.h"

/* Creation order for the engine's "later nodes first" rule; shared by all threads. */
static atomic_uint_fast64_t next_seq = 1;

/* A node's memory is one block from the caching allocator (as tensors' are: a training step
 * records the same nodes every iteration; glibc's calloc bypasses its per-thread cache): this
 * header, then the op's node struct (yt_node first), then the per-node arrays. The header keeps
 * the block's size for its free, and links nodes that died while another node was being
 * destroyed, so freeing a long chain runs as a loop instead of a recursion as deep as the graph. */
typedef struct node_header {
    yt_node *next_dead;
    size_t bytes;
} node_header;

#define NODE_ALIGN alignof(max_align_t)

static size_t
round_up(size_t n)
{
    return (n + NODE_ALIGN - 1) / NODE_ALIGN * NODE_ALIGN;
}

static node_header *
header_of(yt_node *node)
{
    return (node_header *)((char *)node - round_up(sizeof(node_header)));
}

bool
yt__any_requires_grad(int n, yt_tensor *const *tensors)
{
    if (yt__tls.grad_disabled)
        return false;
    for (int i = 0; i < n; i++)
        if (tensors[i] != NULL && tensors[i]->requires_grad)
            return true;
    return false;
}

yt_node *
yt__node_new(const yt_node_kind *kind, int n_inputs, int n_outputs)
{
    if (kind->size < sizeof(yt_node) || n_inputs < 0 || n_outputs < 1) {
        yt__fail(YT_ERR_INTERNAL, "%s: invalid backward node %s (size %zu, %d inputs, %d outputs)",
                 kind->op_name, kind->name, kind->size, n_inputs, n_outputs);
        return NULL;
    }
    size_t ni = (size_t)n_inputs, no = (size_t)n_outputs;
    size_t off_node = round_up(sizeof(node_header));
    size_t off_next = off_node + round_up(kind->size);
    size_t off_shapes = off_next + round_up(ni * sizeof(yt_edge));
    size_t off_accum = off_shapes + round_up(no * sizeof(yt_shape));
    size_t off_dtypes = off_accum + round_up(no * sizeof(yt_tensor *));
    size_t off_needs = off_dtypes + round_up(no * sizeof(yt_dtype));
    size_t total = off_needs + round_up(ni * sizeof(bool));
    char *block = yt__cpu_alloc(total);
    if (block == NULL) {
        yt__fail(YT_ERR_NOMEM, "%s: out of memory allocating %s (%zu bytes)", kind->op_name,
                 kind->name, total);
        return NULL;
    }
    memset(block, 0, total);
    ((node_header *)block)->bytes = total;
    yt_node *node = (yt_node *)(block + off_node);
    node->kind = kind;
    atomic_init(&node->refcount, 1);
    node->seq = atomic_fetch_add_explicit(&next_seq, 1, memory_order_relaxed);
    node->n_inputs = n_inputs;
    node->n_outputs = n_outputs;
    node->next = (yt_edge *)(block + off_next);
    node->out_shapes = (yt_shape *)(block + off_shapes);
    node->grad_accum = (yt_tensor **)(block + off_accum);
    node->out_dtypes = (yt_dtype *)(block + off_dtypes);
    node->needs_grad = (bool *)(block + off_needs);
    for (int i = 0; i < n_outputs; i++)
        node->out_dtypes[i] = YT_DTYPE_NONE;
    return node;
}

void
yt__node_retain(yt_node *node)
{
    if (node != NULL)
        atomic_fetch_add_explicit(&node->refcount, 1, memory_order_relaxed);
}

/* Frees one node whose count reached zero. Releasing what it holds may bring other counts to
 * zero; those are queued by yt__node_release, not destroyed here. */
static void
destroy(yt_node *node)
{
    node->kind->release_saved(node);
    if (node->kind->release_rest != NULL)
        node->kind->release_rest(node);
    for (int i = 0; i < node->n_inputs; i++) {
        yt__node_release(node->next[i].node);
        yt_release(node->next[i].leaf);
    }
    for (int i = 0; i < node->n_outputs; i++)
        yt_release(node->grad_accum[i]);
    node_header *header = header_of(node);
    yt__cpu_free(header, header->bytes);
}

static _Thread_local yt_node *dead_head;
static _Thread_local bool destroying;

void
yt__node_release(yt_node *node)
{
    if (node == NULL)
        return;
    if (atomic_fetch_sub_explicit(&node->refcount, 1, memory_order_acq_rel) != 1)
        return;
    header_of(node)->next_dead = dead_head;
    dead_head = node;
    if (destroying)
        return; /* the outer call's loop below frees it */
    destroying = true;
    while (dead_head != NULL) {
        yt_node *dead = dead_head;
        dead_head = header_of(dead)->next_dead;
        destroy(dead);
    }
    destroying = false;
}

void
yt__node_set_edge(yt_node *node, int i, yt_tensor *input)
{
    yt_edge *edge = &node->next[i];
    edge->node = NULL;
    edge->leaf = NULL;
    edge->input_nr = 0;
    node->needs_grad[i] = false;
    if (input == NULL || !input->requires_grad)
        return;
    if (input->view_base != NULL)
        yt__refresh_view(input); /* on failure the stale history is all there is */
    node->needs_grad[i] = true;
    if (input->grad_fn != NULL) {
        yt__node_retain(input->grad_fn);
        edge->node = input->grad_fn;
        edge->input_nr = input->output_nr;
    } else {
        edge->leaf = yt_retain(input);
    }
}

void
yt__node_set_output(yt_node *node, yt_tensor *result, int output_nr)
{
    /* Only floating tensors carry gradients (yt_set_requires_grad refuses others): a bool or
     * integer result of an op whose inputs require grad (masked_fill of a bool self with a value
     * that requires grad) stays out of the graph. */
    if (!yt_dtype_is_floating(result->dtype))
        return;
    yt__node_retain(node);
    yt_node *old = result->grad_fn; /* in-place ops rebase the result's history */
    result->grad_fn = node;
    result->output_nr = output_nr;
    result->requires_grad = true;
    if (result->view_base != NULL)
        result->view_version =
            atomic_load_explicit(&result->storage->version, memory_order_relaxed);
    yt__node_release(old);
    yt__shape_of(&node->out_shapes[output_nr], result);
    node->out_dtypes[output_nr] = result->dtype;
}

yt_status
yt__check_inplace(yt_tensor *self, const char *op)
{
    if (self == NULL || yt__tls.grad_disabled)
        return YT_OK;
    if (self->grad_fn == NULL && self->requires_grad)
        return yt__fail_status(YT_ERR_STATE,
                               "%s: a leaf tensor that requires grad can't be modified in place; "
                               "modify a yt_detach() of it, or do it with grad mode off "
                               "(yt_set_grad_enabled(false))",
                               op);
    if (self->no_grad_view)
        return yt__fail_status(YT_ERR_STATE,
                               "%s: self is a view made with grad mode off; writing it in place "
                               "with grad mode on could not update its base's history; make the "
                               "view with grad mode on, or write a clone() of it",
                               op);
    const yt_tensor *base = self->view_base;
    if (base != NULL && base->grad_fn == NULL && base->requires_grad)
        return yt__fail_status(YT_ERR_STATE,
                               "%s: a view of a leaf tensor that requires grad can't be modified "
                               "in place; modify a yt_detach() of the leaf, or do it with grad "
                               "mode off (yt_set_grad_enabled(false))",
                               op);
    return YT_OK;
}
