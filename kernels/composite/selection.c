/* one_hot, nonzero and masked_select: ops whose result size depends on the values. The values are
 * read here (CPU), the result allocated to fit; masked_select then picks the elements with
 * index_select so that it stays differentiable. */
#include <string.h>

#include "internal.h"
#include "kernels.h"

yt_tensor *
yt__composite_one_hot(yt_tensor *self, int64_t num_classes)
{
    if (num_classes < -1)
        return yt__fail(YT_ERR_VALUE, "one_hot: num_classes=%lld must be -1 (infer) or >= 0",
                        (long long)num_classes);
    if (yt_tensor_dim(self) >= YT_MAX_DIM)
        return yt__fail(YT_ERR_SHAPE, "one_hot: self is %d-D; the result would exceed %d-D",
                        yt_tensor_dim(self), YT_MAX_DIM);
    yt_tensor *idx = yt__cast_copy(self, YT_DTYPE_I64);
    if (idx == NULL)
        return NULL;
    const int64_t *iv = (const int64_t *)yt__data_ptr(idx);
    int64_t n = idx->numel;
    if (num_classes == -1) {
        if (n == 0) {
            yt_release(idx);
            return yt__fail(YT_ERR_VALUE,
                            "one_hot: cannot infer num_classes from an empty tensor; pass it");
        }
        int64_t top = iv[0];
        for (int64_t i = 1; i < n; i++)
            top = iv[i] > top ? iv[i] : top;
        if (top == INT64_MAX) { /* top + 1 classes would not fit in int64 */
            yt_release(idx);
            return yt__fail(YT_ERR_VALUE,
                            "one_hot: class value %lld would need num_classes=%lld + 1, which "
                            "overflows int64",
                            (long long)top, (long long)top);
        }
        num_classes = top < 0 ? 0 : top + 1;
    }
    for (int64_t i = 0; i < n; i++) {
        if (iv[i] < 0 || iv[i] >= num_classes) {
            int64_t bad = iv[i];
            yt_release(idx);
            return yt__fail(YT_ERR_VALUE,
                            "one_hot: class value %lld is out of range for num_classes=%lld "
                            "(expected 0..%lld)",
                            (long long)bad, (long long)num_classes, (long long)num_classes - 1);
        }
    }
    yt_shape shape;
    yt__shape_of(&shape, self);
    shape.sizes[shape.dim++] = num_classes;
    yt_tensor *result = yt__empty(&shape, YT_DTYPE_I64, self->device);
    if (result != NULL && result->numel > 0) {
        int64_t *r = (int64_t *)yt__data_ptr(result);
        memset(r, 0, (size_t)result->numel * sizeof *r);
        for (int64_t i = 0; i < n; i++)
            r[i * num_classes + iv[i]] = 1;
    }
    yt_release(idx);
    return result;
}

/* Row-major flat positions of the true elements of a contiguous bool tensor, as an i64 tensor of
 * shape [count]. */
static yt_tensor *
true_positions(yt_tensor *mask)
{
    const bool *m = (const bool *)yt__data_ptr(mask);
    int64_t count = 0;
    for (int64_t i = 0; i < mask->numel; i++)
        count += m[i];
    yt_shape shape = {.dim = 1, .sizes = {count}};
    yt_tensor *pos = yt__empty(&shape, YT_DTYPE_I64, mask->device);
    if (pos == NULL)
        return NULL;
    int64_t *p = count > 0 ? (int64_t *)yt__data_ptr(pos) : NULL;
    for (int64_t i = 0, k = 0; i < mask->numel; i++)
        if (m[i])
            p[k++] = i;
    return pos;
}

yt_tensor *
yt__composite_nonzero(yt_tensor *self)
{
    yt_tensor *mask = yt__cast_copy(self, YT_DTYPE_BOOL); /* NaN counts as nonzero */
    if (mask == NULL)
        return NULL;
    yt_tensor *pos = true_positions(mask);
    yt_release(mask);
    if (pos == NULL)
        return NULL;
    int nd = self->dim;
    int64_t count = pos->numel;
    yt_shape shape = {.dim = 2, .sizes = {count, nd}};
    yt_tensor *result = yt__empty(&shape, YT_DTYPE_I64, self->device);
    if (result != NULL && result->numel > 0) {
        const int64_t *p = (const int64_t *)yt__data_ptr(pos);
        int64_t *r = (int64_t *)yt__data_ptr(result);
        for (int64_t k = 0; k < count; k++) {
            int64_t flat = p[k];
            for (int d = nd - 1; d >= 0; d--) { /* unravel; sizes are > 0 as an element exists */
                r[k * nd + d] = flat % self->sizes[d];
                flat /= self->sizes[d];
            }
        }
    }
    yt_release(pos);
    return result;
}

yt_tensor *
yt__composite_masked_select(yt_tensor *self, yt_tensor *mask)
{
    yt_shape shape;
    yt_tensor *const both[2] = {self, mask};
    static const char *const names[2] = {"self", "mask"};
    if (yt__broadcast_shapes(&shape, "masked_select", 2, both, names) != YT_OK)
        return NULL;
    yt_tensor *m = yt_expand(mask, shape.sizes, shape.dim);
    yt_tensor *mc = m == NULL ? NULL : yt__cast_copy(m, YT_DTYPE_BOOL); /* contiguous */
    yt_tensor *pos = mc == NULL ? NULL : true_positions(mc);
    yt_release(mc);
    yt_release(m);
    if (pos == NULL)
        return NULL;
    static const int64_t flat[1] = {-1};
    yt_tensor *s = yt_expand(self, shape.sizes, shape.dim);
    yt_tensor *sf = yt_reshape(s, flat, 1);
    yt_tensor *result = yt_index_select(sf, 0, pos);
    yt_release(sf);
    yt_release(s);
    yt_release(pos);
    return result;
}
