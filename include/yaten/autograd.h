/* Reverse-mode automatic differentiation.
 *
 * Ops record a graph as they run when grad mode is on and an input requires grad. yt_backward()
 * walks it and accumulates gradients into the `grad` of leaf tensors that require grad. */
#ifndef YATEN_AUTOGRAD_H
#define YATEN_AUTOGRAD_H

#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Marks a leaf tensor as requiring grad (or not). Errors: YT_ERR_STATE for a non-leaf
 * (a tensor with a grad_fn), YT_ERR_DTYPE for non-floating dtypes. */
YT_API yt_status yt_set_requires_grad(yt_tensor *t, bool requires_grad);
YT_API bool yt_requires_grad(const yt_tensor *t);
/* True when `t` was not produced by a recorded op (it has no grad_fn). */
YT_API bool yt_is_leaf(const yt_tensor *t);
/* Name of the backward node that produced `t` ("MulBackward"), or NULL for leaves. */
YT_API const char *yt_grad_fn_name(const yt_tensor *t);

/* The accumulated gradient of a leaf: a new reference, or NULL (no error) when none yet. */
YT_API yt_tensor *yt_grad(yt_tensor *t);
/* Drops the accumulated gradient (PyTorch's `grad = None`). */
YT_API void yt_zero_grad(yt_tensor *t);

/* A new tensor sharing `t`'s storage, cut from the graph (requires_grad false). */
YT_API yt_tensor *yt_detach(yt_tensor *t);

typedef struct yt_backward_options {
    bool retain_graph; /* keep saved tensors so backward can run again through this graph */
    bool create_graph; /* record the backward pass itself, for higher-order derivatives */
} yt_backward_options;

/* Backpropagates from `root`. `grad` is d(out)/d(root) with root's shape; NULL means 1 and is
 * only allowed for single-element roots. `opts` may be NULL (both false).
 * Errors: YT_ERR_STATE (root does not require grad; the graph was already freed by an earlier
 * backward without retain_graph; a saved tensor was modified in place), YT_ERR_SHAPE. */
YT_API yt_status yt_backward(yt_tensor *root, yt_tensor *grad, const yt_backward_options *opts);

/* Thread-local grad mode. yt_set_grad_enabled returns the previous value, so
 *   bool prev = yt_set_grad_enabled(false); ... ; yt_set_grad_enabled(prev);
 * is a no_grad block. */
YT_API bool yt_grad_enabled(void);
YT_API bool yt_set_grad_enabled(bool enabled);

/* Anomaly mode: backward fails with YT_ERR_VALUE naming the forward op whose backward produced a
 * NaN. Thread-local; off by default. */
YT_API void yt_set_anomaly_enabled(bool enabled);

/* A function of `n_inputs` tensors returning one tensor (new reference), for gradcheck. */
typedef yt_tensor *(*yt_grad_fn_t)(yt_tensor *const *inputs, int n_inputs, void *ctx);

typedef struct yt_gradcheck_options {
    double eps;  /* finite-difference step; 0 means 1e-6 */
    double atol; /* 0 means 1e-5 */
    double rtol; /* 0 means 1e-3 */
} yt_gradcheck_options;

/* Compares analytic gradients of fn (for every input that requires grad; f64 inputs) against
 * central finite differences. Returns YT_OK when they agree, else YT_ERR_VALUE with a message
 * naming the input, the element and both values. `opts` may be NULL. */
YT_API yt_status yt_gradcheck(yt_grad_fn_t fn, yt_tensor *const *inputs, int n_inputs, void *ctx,
                              const yt_gradcheck_options *opts);
/* The same for second derivatives: checks the gradients of (grad_output . d fn) with respect to
 * the inputs and to a random grad_output, using create_graph. */
YT_API yt_status yt_gradgradcheck(yt_grad_fn_t fn, yt_tensor *const *inputs, int n_inputs,
                                  void *ctx, const yt_gradcheck_options *opts);

#ifdef __cplusplus
}
#endif

#endif
