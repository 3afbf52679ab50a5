/* The backward engine: finds the nodes reachable from the root, counts for each how many
 * gradients it waits for, then runs ready nodes, latest-created first, handing each result to the
 * next node or accumulating it into a leaf's grad. Single-threaded; a graph must not be walked
 * by two backward calls at once (the nodes' pending/grad_accum fields are per-call scratch). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

/* ---------------------------------------------------------------- messages */

static bool
same_sizes(const int64_t *a, int dim_a, const int64_t *b, int dim_b)
{
    if (dim_a != dim_b)
        return false;
    for (int i = 0; i < dim_a; i++)
        if (a[i] != b[i])
            return false;
    return true;
}

/* ---------------------------------------------------------------- the graph of one backward */

typedef struct graph {
    yt_node **nodes; /* every reachable node, each retained for the duration of the call */
    int n_nodes, cap_nodes;
    yt_node **set; /* open-addressing hash set of `nodes` (power-of-two capacity) */
    size_t cap_set;
    yt_node **heap; /* ready nodes, max-heap on seq */
    int n_heap;
} graph;

static size_t
hash_ptr(const yt_node *node, size_t cap)
{
    uint64_t h = (uint64_t)(uintptr_t)node;
    h ^= h >> 29;
    h *= 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 17) & (cap - 1);
}

static bool
set_contains(const graph *g, const yt_node *node)
{
    for (size_t i = hash_ptr(node, g->cap_set);; i = (i + 1) & (g->cap_set - 1)) {
        if (g->set[i] == node)
            return true;
        if (g->set[i] == NULL)
            return false;
    }
}

static void
set_put(yt_node **set, size_t cap, yt_node *node)
{
    size_t i = hash_ptr(node, cap);
    while (set[i] != NULL)
        i = (i + 1) & (cap - 1);
    set[i] = node;
}

/* Adds `node` (not yet in the graph) to the node list and the set, growing both. */
static yt_status
graph_add(graph *g, yt_node *node)
{
    if (g->n_nodes == g->cap_nodes) {
        int cap = g->cap_nodes ? g->cap_nodes * 2 : 64;
        yt_node **nodes = realloc(g->nodes, sizeof(yt_node *) * (size_t)cap);
        if (nodes == NULL)
            return yt__fail_status(YT_ERR_NOMEM, "backward: out of memory for %d graph nodes", cap);
        g->nodes = nodes;
        g->cap_nodes = cap;
    }
    if ((size_t)(g->n_nodes + 1) * 2 > g->cap_set) {
        size_t cap = g->cap_set ? g->cap_set * 2 : 128;
        yt_node **set = calloc(cap, sizeof(yt_node *));
        if (set == NULL)
            return yt__fail_status(YT_ERR_NOMEM, "backward: out of memory for %d graph nodes",
                                   g->n_nodes + 1);
        for (int i = 0; i < g->n_nodes; i++)
            set_put(set, cap, g->nodes[i]);
        free(g->set);
        g->set = set;
        g->cap_set = cap;
    }
    yt__node_retain(node);
    g->nodes[g->n_nodes++] = node;
    set_put(g->set, g->cap_set, node);
    return YT_OK;
}

/* Every node reachable from `root` through edges, with `pending` set to the number of edges from
 * reachable nodes into it. The node list doubles as the work stack, so deep graphs need no
 * recursion. */
static yt_status
discover(graph *g, yt_node *root)
{
    yt_status st = graph_add(g, root);
    for (int i = 0; st == YT_OK && i < g->n_nodes; i++) {
        yt_node *node = g->nodes[i];
        for (int k = 0; st == YT_OK && k < node->n_inputs; k++) {
            yt_node *next = node->next[k].node;
            if (next != NULL && !set_contains(g, next))
                st = graph_add(g, next);
        }
    }
    if (st != YT_OK)
        return st;
    for (int i = 0; i < g->n_nodes; i++)
        g->nodes[i]->pending = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        yt_node *node = g->nodes[i];
        for (int k = 0; k < node->n_inputs; k++)
            if (node->next[k].node != NULL)
                node->next[k].node->pending++;
    }
    g->heap = malloc(sizeof(yt_node *) * (size_t)g->n_nodes);
    if (g->heap == NULL)
        return yt__fail_status(YT_ERR_NOMEM, "backward: out of memory for %d graph nodes",
                               g->n_nodes);
    return YT_OK;
}

/* Each node enters the heap once (when its last dependency arrives), so n_nodes slots suffice. */
static void
heap_push(graph *g, yt_node *node)
{
    int i = g->n_heap++;
    while (i > 0) {
        int parent = (i - 1) / 2;
        if (g->heap[parent]->seq >= node->seq)
            break;
        g->heap[i] = g->heap[parent];
        i = parent;
    }
    g->heap[i] = node;
}

static yt_node *
heap_pop(graph *g)
{
    yt_node *top = g->heap[0];
    yt_node *last = g->heap[--g->n_heap];
    int i = 0, n = g->n_heap;
    for (;;) {
        int child = 2 * i + 1;
        if (child >= n)
            break;
        if (child + 1 < n && g->heap[child + 1]->seq > g->heap[child]->seq)
            child++;
        if (g->heap[child]->seq <= last->seq)
            break;
        g->heap[i] = g->heap[child];
        i = child;
    }
    if (n > 0)
        g->heap[i] = last;
    return top;
}

/* Drops every scratch gradient and the graph's node references (success and error paths). */
static void
graph_free(graph *g)
{
    for (int i = 0; i < g->n_nodes; i++) {
        yt_node *node = g->nodes[i];
        for (int k = 0; k < node->n_outputs; k++) {
            yt_release(node->grad_accum[k]);
            node->grad_accum[k] = NULL;
        }
        node->pending = 0;
        yt__node_release(node);
    }
    free(g->nodes);
    free(g->set);
    free(g->heap);
}

/* ---------------------------------------------------------------- accumulation */

/* Adds `g` (owned) into leaf->grad. Without create_graph the stored gradient is a plain tensor:
 * detached, contiguous, and not shared with anything the caller could write to in place
 * (PyTorch's AccumulateGrad layout and stealing rules). With create_graph it keeps its graph. */
static yt_status
accumulate_leaf(yt_tensor *leaf, yt_tensor *g, bool create_graph)
{
    if (!create_graph && (g->requires_grad || g->grad_fn != NULL)) {
        yt_tensor *detached = yt_detach(g);
        yt_release(g);
        if (detached == NULL)
            return yt__last_status();
        g = detached;
    }
    if (leaf->grad == NULL) {
        bool shared = atomic_load(&g->refcount) > 1 || atomic_load(&g->storage->refcount) > 1 ||
                      !g->is_contiguous;
        if (shared) {
            yt_tensor *copy = yt_clone(g);
            yt_release(g);
            if (copy == NULL)
                return yt__last_status();
            g = copy;
        }
        leaf->grad = g;
        return YT_OK;
    }
    yt_tensor *sum = yt_add(leaf->grad, g);
    yt_release(g);
    if (sum == NULL)
        return yt__last_status();
    yt_release(leaf->grad);
    leaf->grad = sum;
    return YT_OK;
}

/* Checks a gradient computed by `node` for its input `i` against the shape the input had, and
 * casts it to the input's dtype (as PyTorch's validate_outputs does). Takes `*g` (owned). */
static yt_status
conform(yt_node *node, int i, yt_tensor **g, const int64_t *sizes, int dim, yt_dtype dtype)
{
    if (!same_sizes((*g)->sizes, (*g)->dim, sizes, dim)) {
        char have[200], want[200];
        yt__format_sizes(have, sizeof have, (*g)->sizes, (*g)->dim);
        yt__format_sizes(want, sizeof want, sizes, dim);
        return yt__fail_status(YT_ERR_INTERNAL,
                               "backward of %s (%s) returned a gradient of shape %s for input %d, "
                               "which has shape %s (a bug in its derivative formula)",
                               node->kind->op_name, node->kind->name, have, i, want);
    }
    if ((*g)->dtype != dtype) {
        yt_tensor *cast = yt_to(*g, dtype);
        if (cast == NULL)
            return yt__last_status();
        yt_release(*g);
        *g = cast;
    }
    return YT_OK;
}

/* Anomaly mode: fails when a gradient holds a NaN. */
static yt_status
check_nan(yt_node *node, int i, yt_tensor *g)
{
    if (!yt_dtype_is_floating(g->dtype) || g->numel == 0)
        return YT_OK;
    double *values = malloc(sizeof(double) * (size_t)g->numel);
    if (values == NULL)
        return yt__fail_status(YT_ERR_NOMEM, "backward: out of memory checking %s for NaN",
                               node->kind->name);
    yt_status st = yt_tensor_copy_to(g, values, sizeof(double) * (size_t)g->numel, YT_DTYPE_F64);
    int64_t bad = -1;
    for (int64_t k = 0; st == YT_OK && k < g->numel && bad < 0; k++)
        if (isnan(values[k]))
            bad = k;
    free(values);
    if (st != YT_OK)
        return st;
    if (bad >= 0)
        return yt__fail_status(YT_ERR_VALUE,
                               "backward of %s (%s) produced NaN in its gradient for input %d "
                               "(first at element %lld of %lld)",
                               node->kind->op_name, node->kind->name, i, (long long)bad,
                               (long long)g->numel);
    return YT_OK;
}

/* One dependency of the node behind `edge` is settled (whether or not a gradient came). */
static void
settle(graph *gr, const yt_edge *edge)
{
    if (edge->node != NULL && --edge->node->pending == 0)
        heap_push(gr, edge->node);
}

/* Whether the pending gradient `acc` can take `g` added in place: the engine holds the only
 * reference to it and to its storage (nothing else sees the write), it is a plain contiguous
 * tensor of g's dtype with no history, and g does not share its memory. */
static bool
owned_buffer(const yt_tensor *acc, const yt_tensor *g)
{
    return atomic_load(&acc->refcount) == 1 && atomic_load(&acc->storage->refcount) == 1 &&
           acc->is_contiguous && acc->dtype == g->dtype && acc->grad_fn == NULL &&
           !acc->requires_grad && acc->storage != g->storage &&
           same_sizes(acc->sizes, acc->dim, g->sizes, g->dim);
}

/* Hands gradient `g` (owned, may be NULL: no gradient) for input `i` of `node` on. */
static yt_status
deliver(graph *gr, yt_node *node, int i, yt_tensor *g, bool create_graph)
{
    const yt_edge *edge = &node->next[i];
    yt_status st = YT_OK;
    if (g != NULL && edge->node != NULL) {
        yt_node *next = edge->node;
        int k = edge->input_nr;
        st = conform(node, i, &g, next->out_shapes[k].sizes, next->out_shapes[k].dim,
                     next->out_dtypes[k]);
        if (st == YT_OK && next->grad_accum[k] == NULL) {
            next->grad_accum[k] = g;
            g = NULL;
        } else if (st == YT_OK && !create_graph && owned_buffer(next->grad_accum[k], g)) {
            st = yt_add_(next->grad_accum[k], g); /* PyTorch's InputBuffer: sum in place */
        } else if (st == YT_OK && !create_graph && owned_buffer(g, next->grad_accum[k])) {
            st = yt_add_(g, next->grad_accum[k]);
            if (st == YT_OK) {
                yt_release(next->grad_accum[k]);
                next->grad_accum[k] = g;
                g = NULL;
            }
        } else if (st == YT_OK) {
            yt_tensor *sum = yt_add(next->grad_accum[k], g);
            if (sum == NULL) {
                st = yt__last_status();
            } else {
                yt_release(next->grad_accum[k]);
                next->grad_accum[k] = sum;
            }
        }
    } else if (g != NULL && edge->leaf != NULL) {
        yt_tensor *leaf = edge->leaf;
        st = conform(node, i, &g, leaf->sizes, leaf->dim, leaf->dtype);
        if (st == YT_OK) {
            st = accumulate_leaf(leaf, g, create_graph);
            g = NULL;
        }
    }
    yt_release(g);
    settle(gr, edge);
    return st;
}

/* Runs one ready node: its backward on the gradients it received, then hands the results on. */
static yt_status
run_node(graph *gr, yt_node *node, const yt_backward_options *opts)
{
    int device = -1;
    for (int k = 0; k < node->n_outputs; k++)
        if (node->grad_accum[k] != NULL)
            device = node->grad_accum[k]->device;
    if (device < 0) {
        /* no gradient reached any output (every producer returned none): nothing flows on */
        for (int i = 0; i < node->n_inputs; i++)
            settle(gr, &node->next[i]);
        return YT_OK;
    }
    yt_tensor **grads =
        calloc((size_t)node->n_outputs + (size_t)node->n_inputs, sizeof(yt_tensor *));
    if (grads == NULL)
        return yt__fail_status(YT_ERR_NOMEM, "backward: out of memory running %s",
                               node->kind->name);
    yt_tensor **out = grads + node->n_outputs;
    yt_status st = YT_OK;
    for (int k = 0; k < node->n_outputs; k++) {
        grads[k] = node->grad_accum[k];
        node->grad_accum[k] = NULL;
        if (grads[k] == NULL && st == YT_OK) {
            grads[k] = yt_zeros_ex(node->out_shapes[k].sizes, node->out_shapes[k].dim,
                                   node->out_dtypes[k], (yt_device)device);
            if (grads[k] == NULL)
                st = yt__last_status();
        }
    }
    if (st == YT_OK) {
        st = node->kind->backward(node, grads, out);
        if (st != YT_OK && yt_errcode() == YT_OK)
            st = yt__fail_status(st, "backward of %s (%s) failed without an error message",
                                 node->kind->op_name, node->kind->name);
    }
    for (int k = 0; k < node->n_outputs; k++)
        yt_release(grads[k]);
    if (st == YT_OK && !opts->retain_graph) {
        node->kind->release_saved(node);
        node->saved_released = true;
    }
    for (int i = 0; st == YT_OK && yt__tls.anomaly_enabled && i < node->n_inputs; i++)
        if (out[i] != NULL)
            st = check_nan(node, i, out[i]);
    for (int i = 0; i < node->n_inputs; i++) {
        yt_tensor *g = out[i];
        out[i] = NULL;
        if (st != YT_OK || !node->needs_grad[i]) {
            yt_release(g);
            continue;
        }
        st = deliver(gr, node, i, g, opts->create_graph);
    }
    free(grads);
    return st;
}

/* ---------------------------------------------------------------- entry point */

/* The gradient of the root: `grad` checked against root's shape and cast to its dtype, or ones
 * for single-element roots. A new reference, or NULL with the error recorded. */
static yt_tensor *
root_gradient(yt_tensor *root, yt_tensor *grad)
{
    char have[200], want[200];
    if (grad == NULL) {
        if (root->numel != 1) {
            yt__format_sizes(have, sizeof have, root->sizes, root->dim);
            return yt__fail(YT_ERR_SHAPE,
                            "backward: grad can be omitted only for single-element roots, but "
                            "root has shape %s (%lld elements); pass a grad of that shape",
                            have, (long long)root->numel);
        }
        return yt_ones_ex(root->sizes, root->dim, root->dtype, root->device);
    }
    if (!same_sizes(grad->sizes, grad->dim, root->sizes, root->dim)) {
        yt__format_sizes(have, sizeof have, grad->sizes, grad->dim);
        yt__format_sizes(want, sizeof want, root->sizes, root->dim);
        return yt__fail(YT_ERR_SHAPE, "backward: grad has shape %s but root has shape %s", have,
                        want);
    }
    if (grad->device != root->device)
        return yt__fail(YT_ERR_DEVICE, "backward: grad is on %s but root is on %s",
                        yt_device_name(grad->device), yt_device_name(root->device));
    if (!yt_dtype_is_floating(grad->dtype))
        return yt__fail(YT_ERR_DTYPE, "backward: grad must be floating like root (%s), got %s",
                        yt_dtype_name(root->dtype), yt_dtype_name(grad->dtype));
    return grad->dtype == root->dtype ? yt_retain(grad) : yt_to(grad, root->dtype);
}

static yt_status
run_graph(yt_tensor *root, yt_tensor *root_grad, const yt_backward_options *opts)
{
    if (root->grad_fn == NULL)
        return accumulate_leaf(root, root_grad, opts->create_graph);
    graph gr = {0};
    yt_status st = discover(&gr, root->grad_fn);
    if (st != YT_OK) {
        yt_release(root_grad);
        graph_free(&gr);
        return st;
    }
    root->grad_fn->grad_accum[root->output_nr] = root_grad;
    heap_push(&gr, root->grad_fn);
    while (st == YT_OK && gr.n_heap > 0)
        st = run_node(&gr, heap_pop(&gr), opts);
    graph_free(&gr);
    return st;
}

yt_status
yt_backward(yt_tensor *root, yt_tensor *grad, const yt_backward_options *opts)
{
    if (root == NULL)
        return yt__null_status("backward", "root");
    if (root->view_base != NULL && !yt__refresh_view(root))
        return yt__last_status();
    if (!root->requires_grad)
        return yt__fail_status(YT_ERR_STATE,
                               "backward: root does not require grad and has no grad_fn (was it "
                               "computed with grad mode off, or from inputs that don't require "
                               "grad?)");
    yt_backward_options o = {false, false};
    if (opts != NULL)
        o = *opts;
    /* As in PyTorch, create_graph keeps the graph unless told otherwise: the new graph refers
     * to this one's nodes (saved outputs are re-attached to them). */
    if (o.create_graph)
        o.retain_graph = true;

    yt__scope_suspend(); /* temporaries are released here, not by the user's scope */
    bool was_disabled = yt__tls.grad_disabled;
    yt__tls.grad_disabled = !o.create_graph;
    yt_status st = YT_OK;
    yt_tensor *root_grad = root_gradient(root, grad);
    if (root_grad == NULL)
        st = yt__last_status();
    else
        st = run_graph(root, root_grad, &o);
    yt__tls.grad_disabled = was_disabled;
    yt__scope_resume();
    return st;
}
