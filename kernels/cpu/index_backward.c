/* slice_backward and select_backward on the CPU: zeros of the input's shape, with the gradient
 * copied into the part the forward view selected.
 *
 * These ops are public and their generated wrappers check only `input_sizes`, so dim, start,
 * end, step and index arrive raw (as the forward op saw them) and are resolved and checked here,
 * with the same rules as the slice and select views. */
#include <stdio.h>
#include <string.h>

#include "kernels.h"

/* grad_output must have exactly the shape of the part it fills. */
static yt_status
check_grad_shape(const char *op, const yt_tensor *grad, const int64_t *sizes, int dim)
{
    bool same = grad->dim == dim;
    for (int i = 0; same && i < dim; i++)
        same = grad->sizes[i] == sizes[i];
    if (same)
        return YT_OK;
    char have[160], want[160];
    yt__format_sizes(have, sizeof have, grad->sizes, grad->dim);
    yt__format_sizes(want, sizeof want, sizes, dim);
    return yt__fail_status(YT_ERR_SHAPE, "%s: grad_output has shape %s, expected %s", op, have,
                           want);
}

/* Where the part lies in the contiguous result seen as [outer, row]: elements [lo, hi) of every
 * row (the part of a step-1 slice or a select), or lo == hi when unknown (any step). */
typedef struct band {
    int64_t outer, row, lo, hi;
} band;

/* The band of a slice [start, start + len) (step 1) of dim `dim` of a contiguous tensor. */
static band
band_of(const int64_t *sizes, int ndim, int64_t dim, int64_t start, int64_t len)
{
    band b = {1, 1, 0, 0};
    int64_t inner = 1;
    for (int i = 0; i < ndim; i++) {
        if (i < dim)
            b.outer *= sizes[i];
        else if (i > dim)
            inner *= sizes[i];
    }
    b.row = sizes[dim] * inner;
    b.lo = start * inner;
    b.hi = (start + len) * inner;
    return b;
}

/* Zero-fills `result` (only around the part's band when known: the part is written anyway) and
 * copies `grad` into its view of the given geometry (offset relative to result's first element). */
static yt_status
scatter_into_zeros(yt_tensor *result, yt_tensor *grad, int dim, const int64_t *sizes,
                   const int64_t *strides, int64_t offset, band b)
{
    size_t es = yt_dtype_size(result->dtype);
    char *base = result->numel > 0 ? yt__data_ptr(result) : NULL;
    if (result->numel > 0 && b.hi > b.lo && grad->numel > 0) {
        for (int64_t o = 0; o < b.outer; o++) {
            char *r = base + (size_t)(o * b.row) * es;
            memset(r, 0, (size_t)b.lo * es);
            memset(r + (size_t)b.hi * es, 0, (size_t)(b.row - b.hi) * es);
        }
    } else if (result->numel > 0) {
        memset(base, 0, (size_t)result->numel * es);
    }
    if (grad->numel == 0)
        return YT_OK;
    yt_tensor *part = yt__view_of(result, dim, sizes, strides, result->offset + offset);
    if (part == NULL)
        return yt__last_status();
    yt_status status = yt__copy_into(part, grad);
    yt_release(part);
    return status;
}

/* Python's slice bound: negative counts from the end, then clamped to 0..size. */
static int64_t
clamp_bound(int64_t bound, int64_t fallback, int64_t size)
{
    if (bound == YT_NONE)
        return fallback;
    if (bound < 0)
        bound = bound < -size ? 0 : bound + size;
    return bound > size ? size : bound;
}

yt_status
yt__cpu_slice_backward(yt_tensor *result, yt_tensor *grad_output, const int64_t *input_sizes,
                       int input_sizes_len, int64_t dim, int64_t start, int64_t end, int64_t step)
{
    const char *op = "slice_backward";
    if (input_sizes_len == 0)
        return yt__fail_status(YT_ERR_VALUE,
                               "%s: input_sizes is empty (a 0-d tensor cannot be sliced)", op);
    if (yt__wrap_dim(&dim, input_sizes_len, op, "dim") != YT_OK)
        return yt__last_status();
    if (step <= 0)
        return yt__fail_status(YT_ERR_VALUE, "%s: expected step > 0, got step=%lld", op,
                               (long long)step);
    int64_t size = input_sizes[dim];
    start = clamp_bound(start, 0, size);
    end = clamp_bound(end, size, size);
    int64_t len = end <= start ? 0 : 1 + (end - start - 1) / step;

    int64_t sizes[YT_MAX_DIM], strides[YT_MAX_DIM];
    memcpy(sizes, input_sizes, (size_t)input_sizes_len * sizeof *sizes);
    sizes[dim] = len;
    if (check_grad_shape(op, grad_output, sizes, input_sizes_len) != YT_OK)
        return yt__last_status();
    yt__contiguous_strides(strides, input_sizes, input_sizes_len);
    int64_t offset = start * strides[dim];
    if (len > 1)
        strides[dim] *= step; /* fits: len > 1 implies step < size */
    band b = step == 1 || len <= 1 ? band_of(input_sizes, input_sizes_len, dim, start, len)
                                   : (band){1, 1, 0, 0};
    return scatter_into_zeros(result, grad_output, input_sizes_len, sizes, strides, offset, b);
}

yt_status
yt__cpu_select_backward(yt_tensor *result, yt_tensor *grad_output, const int64_t *input_sizes,
                        int input_sizes_len, int64_t dim, int64_t index)
{
    const char *op = "select_backward";
    if (input_sizes_len == 0)
        return yt__fail_status(
            YT_ERR_VALUE, "%s: input_sizes is empty (a 0-d tensor has no dimension to select from)",
            op);
    if (yt__wrap_dim(&dim, input_sizes_len, op, "dim") != YT_OK)
        return yt__last_status();
    int64_t size = input_sizes[dim];
    if (index < -size || index >= size)
        return yt__fail_status(YT_ERR_VALUE,
                               "%s: index=%lld is out of range for dimension %lld of size %lld", op,
                               (long long)index, (long long)dim, (long long)size);
    if (index < 0)
        index += size;

    int64_t all_strides[YT_MAX_DIM], sizes[YT_MAX_DIM], strides[YT_MAX_DIM];
    yt__contiguous_strides(all_strides, input_sizes, input_sizes_len);
    int n = 0;
    for (int i = 0; i < input_sizes_len; i++) {
        if (i == dim)
            continue;
        sizes[n] = input_sizes[i];
        strides[n] = all_strides[i];
        n++;
    }
    if (check_grad_shape(op, grad_output, sizes, n) != YT_OK)
        return yt__last_status();
    return scatter_into_zeros(result, grad_output, n, sizes, strides, index * all_strides[dim],
                              band_of(input_sizes, input_sizes_len, dim, index, 1));
}
