/* Argument helpers for generated code: broadcasting of shapes (PyTorch's rules) and wrapping
 * of possibly negative dims, each with a message that names the argument and its values. */
#include <string.h>

#include "internal.h"

/* Whether every tensor is present and of the first's shape, which is then the result: most calls,
 * for which the walk below was 7 % of yt_add on 1-element tensors (perf, bench/overhead's loop). */
static bool
same_shapes(int n, yt_tensor *const *tensors)
{
    if (n < 1 || tensors[0] == NULL)
        return false;
    const yt_tensor *first = tensors[0];
    for (int k = 1; k < n; k++) {
        if (tensors[k] == NULL || tensors[k]->dim != first->dim)
            return false;
        for (int d = 0; d < first->dim; d++)
            if (tensors[k]->sizes[d] != first->sizes[d])
                return false;
    }
    return true;
}

yt_status
yt__broadcast_shapes(yt_shape *out, const char *op, int n, yt_tensor *const *tensors,
                     const char *const *names)
{
    if (same_shapes(n, tensors)) {
        out->dim = tensors[0]->dim;
        memcpy(out->sizes, tensors[0]->sizes, (size_t)out->dim * sizeof out->sizes[0]);
        return YT_OK;
    }
    int dim = 0;
    for (int k = 0; k < n; k++)
        if (tensors[k] != NULL && tensors[k]->dim > dim)
            dim = tensors[k]->dim;
    out->dim = dim;

    /* Walk the dims right-aligned. `from` remembers which tensor set the size, so a conflict
     * names both tensors, each in its own dim numbering. */
    for (int i = 0; i < dim; i++) {
        int64_t size = 1;
        int from = -1;
        for (int k = 0; k < n; k++) {
            const yt_tensor *t = tensors[k];
            if (t == NULL)
                continue;
            int d = t->dim - dim + i; /* this tensor's dim aligned with output dim i */
            if (d < 0)
                continue;
            int64_t s = t->sizes[d];
            if (s == 1 || s == size)
                continue;
            if (size == 1) {
                size = s;
                from = k;
                continue;
            }
            const yt_tensor *f = tensors[from];
            return yt__fail_status(YT_ERR_SHAPE,
                                   "%s: %s.size(%d)=%lld cannot broadcast with %s.size(%d)=%lld",
                                   op, names ? names[from] : "input", f->dim - dim + i,
                                   (long long)size, names ? names[k] : "input", d, (long long)s);
        }
        out->sizes[i] = size;
    }
    return YT_OK;
}

yt_status
yt__wrap_dim(int64_t *dim, int ndim, const char *op, const char *arg)
{
    /* A 0-d tensor behaves like a 1-d one here: dims -1 and 0 both name "the" element. */
    int64_t n = ndim > 0 ? ndim : 1;
    int64_t d = *dim;
    if (d < -n || d >= n)
        return yt__fail_status(YT_ERR_VALUE,
                               "%s: %s=%lld is out of range for a %d-D self (expected %lld..%lld)",
                               op, arg, (long long)d, ndim, (long long)-n, (long long)(n - 1));
    *dim = d < 0 ? d + n : d;
    return YT_OK;
}

yt_status
yt__wrap_dims(int64_t *dims, int n, int ndim, const char *op, const char *arg)
{
    if (n < 0 || n > YT_MAX_DIM)
        return yt__fail_status(YT_ERR_VALUE, "%s: %s has %d entries, expected 0..%d", op, arg, n,
                               YT_MAX_DIM);
    if (n > 0 && dims == NULL)
        return yt__fail_status(YT_ERR_VALUE, "%s: %s is NULL but has %d entries", op, arg, n);
    unsigned seen = 0;
    for (int i = 0; i < n; i++) {
        if (yt__wrap_dim(&dims[i], ndim, op, arg) != YT_OK)
            return YT_ERR_VALUE;
        unsigned bit = 1u << dims[i];
        if (seen & bit)
            return yt__fail_status(YT_ERR_VALUE, "%s: dim %lld appears more than once in %s", op,
                                   (long long)dims[i], arg);
        seen |= bit;
    }
    return YT_OK;
}
