/* The module object and the helpers the built-in layers share (nn/module*.c, nn/layer_*.c).
 * Not installed. */
#ifndef YT_NN_MODULE_INTERNAL_H
#define YT_NN_MODULE_INTERNAL_H

#include <stdatomic.h>
#include <stdlib.h>

#include "internal.h"

struct yt_module {
    atomic_int_fast64_t refcount;
    const yt_module_kind *kind;
    void *ctx;
    bool training;
    yt_generator *gen;       /* dropout's generator (borrowed); NULL: the default one */
    yt_named_tensors params; /* registration order; layers index into it (params.tensors[i]) */
    yt_named_tensors buffers;
    int n_children, cap_children;
    char **child_names;
    yt_module **children;
};

/* Runs m's forward with the scope already suspended (inside another module's forward), so the
 * result is the caller's to release. Checks n against nothing: kinds check their own arity. */
YT_INTERNAL yt_tensor *yt__module_call(yt_module *m, yt_tensor *const *inputs, int n);
/* yt__module_call with one input. */
static inline yt_tensor *
yt__module_call1(yt_module *m, yt_tensor *x)
{
    return yt__module_call(m, &x, 1);
}

/* yt__fail for functions returning a module: records the error and returns NULL. */
YT_INTERNAL yt_module *yt__module_fail(yt_status code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Records "<Kind>: forward takes N input(s), got n" and returns NULL. */
YT_INTERNAL yt_tensor *yt__module_arity_error(const yt_module *m, int want, int got);

/* A module of a built-in kind whose ctx is a malloc'd copy of `ctx_size` bytes at `ctx` (freed
 * with free). NULL with YT_ERR_NOMEM. */
YT_INTERNAL yt_module *yt__module_new_copy(const yt_module_kind *kind, const void *ctx,
                                           size_t ctx_size);

/* New f32 parameter of `sizes` registered under `name` (uninitialised: the caller fills it).
 * Returns the module's tensor (borrowed), or NULL with the error set. */
YT_INTERNAL yt_tensor *yt__module_new_param(yt_module *m, const char *name, const int64_t *sizes,
                                            int ndim);
/* New buffer of `sizes` (0 dims for a scalar) and dtype, filled with `value`; borrowed result. */
YT_INTERNAL yt_tensor *yt__module_new_buffer(yt_module *m, const char *name, const int64_t *sizes,
                                             int ndim, yt_dtype dtype, double value);

/* PyTorch's reset_parameters for Linear and the convolutions: weight kaiming_uniform(a=sqrt(5)),
 * bias (may be NULL) U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in from the weight. */
YT_INTERNAL yt_status yt__init_affine_default(yt_tensor *weight, yt_tensor *bias);

/* Fills `t` with `value` outside autograd (no allocation beyond a 0-d tensor). */
YT_INTERNAL yt_status yt__fill(yt_tensor *t, double value);

/* "[2, 3]" of t's sizes into buf. */
YT_INTERNAL const char *yt__nn_shape_str(const yt_tensor *t, char *buf, size_t cap);

/* Appends printf-formatted text at buf + *len (capacity cap), keeping NUL termination and
 * truncating; *len saturates at cap - 1. */
YT_INTERNAL void yt__nn_appendf(char *buf, size_t cap, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Kinds whose identity other files test (summary input dtype, Sequential append). */
YT_INTERNAL extern const yt_module_kind yt__embedding_kind;
YT_INTERNAL extern const yt_module_kind yt__sequential_kind;
YT_INTERNAL extern const yt_module_kind yt__mha_kind;

/* MultiheadAttention's forward (nn/layer_attention.c) for callers already inside a forward (scope
 * suspended): query/key/value in the module's layout, `o` may be NULL, weights_out may be NULL. */
YT_INTERNAL yt_tensor *yt__mha_attend(yt_module *m, yt_tensor *query, yt_tensor *key,
                                      yt_tensor *value, const yt_mha_forward_options *o,
                                      yt_tensor **weights_out);

/* Summary recording (nn/module_summary.c): while yt_module_summary runs a forward pass on this
 * thread, yt__module_call reports each module's entry and output here; otherwise the pointer is
 * NULL and the hot path pays one thread-local load. */
typedef struct yt__summary_rec yt__summary_rec;
YT_INTERNAL extern _Thread_local yt__summary_rec *yt__summary_active;
/* Returns the record's slot for m (-1 when full or out of memory: the line is then skipped). */
YT_INTERNAL int yt__summary_enter(yt_module *m);
YT_INTERNAL void yt__summary_leave(int slot, const yt_tensor *out);

#endif
