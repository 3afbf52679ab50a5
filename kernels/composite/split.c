/* split, chunk, unbind and stack, in public ops: the pieces are views of self (narrow / select),
 * so they share its storage and autograd comes from slice's and select's backward. A NULL `out`
 * with capacity 0 only counts the pieces. */
#include <stdlib.h>

#include "internal.h"
#include "kernels.h"

/* Writes up to `capacity` pieces; on failure releases those written and returns -1. */
static int64_t
narrow_pieces(const char *op, yt_tensor *self, int64_t dim, int64_t piece, int64_t count,
              yt_tensor **out, int64_t capacity)
{
    if (yt__check_capacity(op, count, out, capacity) != YT_OK)
        return -1;
    if (out == NULL)
        return count;
    int64_t size = yt_tensor_dim(self) > 0 ? yt_tensor_sizes(self)[dim] : 0;
    for (int64_t i = 0; i < count; i++) {
        int64_t start = i * piece;
        int64_t len = size - start < piece ? size - start : piece;
        out[i] = yt_narrow(self, dim, start, len);
        if (out[i] == NULL) {
            for (int64_t j = 0; j < i; j++) {
                yt_release(out[j]);
                out[j] = NULL;
            }
            return -1;
        }
    }
    return count;
}

int64_t
yt__composite_split(yt_tensor *self, int64_t split_size, int64_t dim, yt_tensor **out,
                    int64_t out_capacity)
{
    if (yt_tensor_dim(self) == 0) {
        yt__fail(YT_ERR_SHAPE, "split: self must be at least 1-D, got 0-D");
        return -1;
    }
    int64_t size = yt_tensor_sizes(self)[dim];
    if (split_size < 0 || (split_size == 0 && size != 0)) {
        yt__fail(YT_ERR_VALUE, "split: split_size=%lld must be positive (or 0 for an empty dim)",
                 (long long)split_size);
        return -1;
    }
    /* PyTorch: an empty dim still gives one (empty) piece */
    int64_t count = split_size == 0 || size == 0 ? 1 : yt__ceil_div(size, split_size);
    return narrow_pieces("split", self, dim, split_size == 0 ? 0 : split_size, count, out,
                         out_capacity);
}

int64_t
yt__composite_split_with_sizes(yt_tensor *self, const int64_t *split_sizes, int split_sizes_len,
                               int64_t dim, yt_tensor **out, int64_t out_capacity)
{
    if (yt_tensor_dim(self) == 0) {
        yt__fail(YT_ERR_SHAPE, "split_with_sizes: self must be at least 1-D, got 0-D");
        return -1;
    }
    int64_t size = yt_tensor_sizes(self)[dim], total = 0;
    /* every entry first, so that [6, -1] names the -1 rather than a sum already too large */
    for (int i = 0; i < split_sizes_len; i++)
        if (split_sizes[i] < 0) {
            yt__fail(YT_ERR_VALUE, "split_with_sizes: split_sizes[%d]=%lld must not be negative", i,
                     (long long)split_sizes[i]);
            return -1;
        }
    for (int i = 0; i < split_sizes_len; i++) {
        total += split_sizes[i] <= size ? split_sizes[i] : size + 1;
        if (total > size)
            break; /* already too many; stopping here keeps the sum from overflowing */
    }
    if (total != size) {
        yt__fail(YT_ERR_SHAPE,
                 "split_with_sizes: split_sizes add up to %s%lld but self.size(%lld)=%lld",
                 total > size ? "more than " : "", (long long)(total > size ? size : total),
                 (long long)dim, (long long)size);
        return -1;
    }
    if (yt__check_capacity("split_with_sizes", split_sizes_len, out, out_capacity) != YT_OK)
        return -1;
    if (out == NULL)
        return split_sizes_len;
    int64_t start = 0;
    for (int i = 0; i < split_sizes_len; i++) {
        out[i] = yt_narrow(self, dim, start, split_sizes[i]);
        if (out[i] == NULL) {
            for (int j = 0; j < i; j++) {
                yt_release(out[j]);
                out[j] = NULL;
            }
            return -1;
        }
        start += split_sizes[i];
    }
    return split_sizes_len;
}

int64_t
yt__composite_chunk(yt_tensor *self, int64_t chunks, int64_t dim, yt_tensor **out,
                    int64_t out_capacity)
{
    if (yt_tensor_dim(self) == 0) {
        yt__fail(YT_ERR_SHAPE, "chunk: self must be at least 1-D, got 0-D");
        return -1;
    }
    if (chunks <= 0) {
        yt__fail(YT_ERR_VALUE, "chunk: chunks=%lld must be positive", (long long)chunks);
        return -1;
    }
    int64_t size = yt_tensor_sizes(self)[dim];
    int64_t piece = yt__ceil_div(size, chunks); /* PyTorch: ceil, so fewer chunks may come */
    if (piece == 0)
        return narrow_pieces("chunk", self, dim, 0, chunks, out, out_capacity);
    return narrow_pieces("chunk", self, dim, piece, yt__ceil_div(size, piece), out, out_capacity);
}

int64_t
yt__composite_unbind(yt_tensor *self, int64_t dim, yt_tensor **out, int64_t out_capacity)
{
    if (yt_tensor_dim(self) == 0) {
        yt__fail(YT_ERR_SHAPE, "unbind: self must be at least 1-D, got 0-D");
        return -1;
    }
    int64_t count = yt_tensor_sizes(self)[dim];
    if (yt__check_capacity("unbind", count, out, out_capacity) != YT_OK)
        return -1;
    if (out == NULL)
        return count;
    for (int64_t i = 0; i < count; i++) {
        out[i] = yt_select(self, dim, i);
        if (out[i] == NULL) {
            for (int64_t j = 0; j < i; j++) {
                yt_release(out[j]);
                out[j] = NULL;
            }
            return -1;
        }
    }
    return count;
}

yt_tensor *
yt__composite_stack(yt_tensor *const *tensors, int tensors_len, int64_t dim)
{
    if (tensors_len <= 0)
        return yt__fail(YT_ERR_VALUE, "stack: expected a non-empty list of tensors");
    int nd = yt_tensor_dim(tensors[0]);
    for (int i = 1; i < tensors_len; i++) {
        bool same = yt_tensor_dim(tensors[i]) == nd;
        for (int d = 0; same && d < nd; d++)
            same = yt_tensor_sizes(tensors[i])[d] == yt_tensor_sizes(tensors[0])[d];
        if (!same) {
            char a[YT__SIZES_BUF], b[YT__SIZES_BUF];
            return yt__fail(YT_ERR_SHAPE,
                            "stack: expects each tensor to be equal size, but got %s at entry 0 "
                            "and %s at entry %d",
                            yt__format_sizes(a, sizeof a, yt_tensor_sizes(tensors[0]), nd),
                            yt__format_sizes(b, sizeof b, yt_tensor_sizes(tensors[i]),
                                             yt_tensor_dim(tensors[i])),
                            i);
        }
    }
    if (nd >= YT_MAX_DIM) /* else the inner unsqueeze reports it under its own name */
        return yt__fail(YT_ERR_SHAPE,
                        "stack: tensors are %d-D; stacking them would need %d dims (at most %d)",
                        nd, nd + 1, YT_MAX_DIM);
    if (yt__wrap_dim(&dim, nd + 1, "stack", "dim") != YT_OK)
        return NULL;
    yt_tensor **parts = calloc((size_t)tensors_len, sizeof *parts);
    if (parts == NULL)
        return yt__fail(YT_ERR_NOMEM, "stack: out of memory");
    yt_tensor *result = NULL;
    int made = 0;
    for (; made < tensors_len; made++) {
        parts[made] = yt_unsqueeze(tensors[made], dim);
        if (parts[made] == NULL)
            break;
    }
    if (made == tensors_len)
        result = yt_cat_ex(parts, tensors_len, dim);
    for (int i = 0; i < made; i++)
        yt_release(parts[i]);
    free(parts);
    return result;
}

int64_t
yt__composite_cat_backward(yt_tensor *grad, int64_t dim, yt_tensor *const *tensors, int tensors_len,
                           yt_tensor **out, int64_t out_capacity)
{
    if (yt__check_capacity("cat_backward", tensors_len, out, out_capacity) != YT_OK)
        return -1;
    if (out == NULL)
        return tensors_len;
    if (yt__wrap_dim(&dim, yt_tensor_dim(grad), "cat_backward", "dim") != YT_OK)
        return -1;
    int64_t at = 0;
    for (int i = 0; i < tensors_len; i++) {
        yt_tensor *t = tensors[i];
        if (yt_tensor_dim(t) == 1 && yt_tensor_sizes(t)[0] == 0 && yt_tensor_dim(grad) != 1) {
            /* a skipped legacy empty input: its gradient is empty too */
            static const int64_t empty[1] = {0};
            out[i] = yt_zeros_ex(empty, 1, yt_tensor_dtype(grad), yt_tensor_device(grad));
        } else {
            int64_t n = yt_tensor_dim(t) > dim ? yt_tensor_sizes(t)[dim] : 0;
            out[i] = yt_narrow(grad, dim, at, n);
            at += n;
        }
        if (out[i] == NULL) {
            for (int j = 0; j < i; j++) {
                yt_release(out[j]);
                out[j] = NULL;
            }
            return -1;
        }
    }
    return tensors_len;
}
