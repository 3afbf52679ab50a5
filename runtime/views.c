/* View ops: new handles over self's storage (sharing its version counter) with new sizes, strides
 * and offset; no data moves. The generated callers have already checked dtypes, wrapped dims into
 * 0..dim-1 and will record autograd; the checks here cover what only the geometry can tell, and
 * keep every function safe when called with out-of-range values. */
#include "internal.h"
#include "kernels.h"

/* Every view is built here. An empty view touches no memory, so it keeps self's offset: slicing
 * past the end (or through a zero-size dim of empty storage, whose data may be NULL) then never
 * forms a pointer outside the allocation. */
static yt_tensor *
make_view(yt_tensor *self, int dim, const int64_t *sizes, const int64_t *strides, int64_t offset)
{
    for (int i = 0; i < dim && offset != self->offset; i++)
        if (sizes[i] == 0)
            offset = self->offset;
    yt_tensor *view = yt__view_of(self, dim, sizes, strides, offset);
    if (view == NULL)
        return NULL;
    /* for in-place writes through it (runtime/autograd/view_inplace.c); with grad mode off (as in
     * inference) there is no history to rebase, and none is kept */
    if (yt__tls.grad_disabled || self->no_grad_view)
        view->no_grad_view = true;
    else
        view->view_base = yt_retain(self->view_base != NULL ? self->view_base : self);
    return view;
}

static yt_tensor *
alias(yt_tensor *self)
{
    return make_view(self, self->dim, self->sizes, self->strides, self->offset);
}

/* self->offset + index * stride. It cannot overflow for a view that holds elements (they lie in
 * the storage); on overflow the view is empty and make_view discards the value. */
static int64_t
offset_at(const yt_tensor *self, int64_t index, int64_t stride)
{
    int64_t delta, offset;
    if (!yt__mul_ok(&delta, index, stride) || !yt__add_ok(&offset, self->offset, delta))
        return self->offset;
    return offset;
}

/* Dims arrive wrapped; a 0-d self accepts dim 0 as PyTorch does. */
static yt_status
check_dim(const char *op, const char *arg, int64_t dim, int ndim)
{
    int limit = ndim > 0 ? ndim : 1;
    if (dim < 0 || dim >= limit)
        return yt__fail_status(YT_ERR_VALUE, "%s: %s=%lld is out of range for a %d-D self", op, arg,
                               (long long)dim, ndim);
    return YT_OK;
}

yt_tensor *
yt__view_transpose_int(yt_tensor *self, int64_t dim0, int64_t dim1)
{
    if (check_dim("transpose", "dim0", dim0, self->dim) != YT_OK ||
        check_dim("transpose", "dim1", dim1, self->dim) != YT_OK)
        return NULL;
    if (self->dim == 0 || dim0 == dim1)
        return alias(self);
    int64_t sizes[YT_MAX_DIM], strides[YT_MAX_DIM];
    for (int i = 0; i < self->dim; i++) {
        sizes[i] = self->sizes[i];
        strides[i] = self->strides[i];
    }
    sizes[dim0] = self->sizes[dim1];
    strides[dim0] = self->strides[dim1];
    sizes[dim1] = self->sizes[dim0];
    strides[dim1] = self->strides[dim0];
    return make_view(self, self->dim, sizes, strides, self->offset);
}

yt_tensor *
yt__view_t(yt_tensor *self)
{
    if (self->dim > 2)
        return yt__fail(YT_ERR_SHAPE, "t: self must be at most 2-D, got %d-D", self->dim);
    if (self->dim < 2)
        return alias(self); /* 0-D and 1-D come back as they are */
    return yt__view_transpose_int(self, 0, 1);
}

yt_tensor *
yt__view_permute(yt_tensor *self, const int64_t *dims, int dims_len)
{
    if (dims_len != self->dim)
        return yt__fail(YT_ERR_SHAPE, "permute: dims has %d entries but self is %d-D", dims_len,
                        self->dim);
    int64_t sizes[YT_MAX_DIM], strides[YT_MAX_DIM];
    bool seen[YT_MAX_DIM] = {false};
    for (int i = 0; i < dims_len; i++) {
        int64_t d = dims[i] < 0 ? dims[i] + self->dim : dims[i];
        if (d < 0 || d >= self->dim)
            return yt__fail(YT_ERR_VALUE, "permute: dims[%d]=%lld is out of range for a %d-D self",
                            i, (long long)dims[i], self->dim);
        if (seen[d])
            return yt__fail(YT_ERR_VALUE, "permute: dims has dim %lld more than once (dims[%d])",
                            (long long)d, i);
        seen[d] = true;
        sizes[i] = self->sizes[d];
        strides[i] = self->strides[d];
    }
    return make_view(self, self->dim, sizes, strides, self->offset);
}

yt_status
yt__infer_view_shape(yt_shape *out, const char *op, const int64_t *size, int size_len,
                     int64_t numel)
{
    if (size_len < 0 || size_len > YT_MAX_DIM || (size == NULL && size_len > 0))
        return yt__fail_status(YT_ERR_VALUE, "%s: shape has %d entries (expected 0..%d)", op,
                               size_len, YT_MAX_DIM);
    int infer = -1;
    int64_t known[YT_MAX_DIM] = {0}; /* the sizes with the -1 taken as 1 */
    for (int i = 0; i < size_len; i++) {
        known[i] = size[i];
        if (size[i] == -1) {
            if (infer >= 0)
                return yt__fail_status(YT_ERR_VALUE,
                                       "%s: only one dimension can be inferred, but size[%d] and "
                                       "size[%d] are both -1",
                                       op, infer, i);
            infer = i;
            known[i] = 1;
        } else if (size[i] < 0) {
            return yt__fail_status(
                YT_ERR_VALUE, "%s: size[%d]=%lld is invalid (expected >= 0, or -1 to infer it)", op,
                i, (long long)size[i]);
        }
    }
    char buf[YT__SIZES_BUF];
    int64_t product;
    /* An overflowing product cannot equal (or divide) any real numel. */
    bool fits = yt__checked_numel(&product, known, size_len);
    if (infer >= 0) {
        if (fits && product == 0)
            return yt__fail_status(YT_ERR_SHAPE,
                                   "%s: cannot reshape tensor of 0 elements into shape %s because "
                                   "the unspecified dimension size -1 can be any value and is "
                                   "ambiguous",
                                   op, yt__format_sizes(buf, sizeof buf, size, size_len));
        if (!fits || numel % product != 0)
            return yt__fail_status(YT_ERR_SHAPE, "%s: shape %s is invalid for input of size %lld",
                                   op, yt__format_sizes(buf, sizeof buf, size, size_len),
                                   (long long)numel);
        known[infer] = numel / product;
    } else if (!fits || product != numel) {
        return yt__fail_status(YT_ERR_SHAPE, "%s: shape %s is invalid for input of size %lld", op,
                               yt__format_sizes(buf, sizeof buf, size, size_len), (long long)numel);
    }
    out->dim = size_len;
    for (int i = 0; i < size_len; i++)
        out->sizes[i] = known[i];
    return YT_OK;
}

bool
yt__view_strides(int64_t *strides, const yt_tensor *self, const yt_shape *shape)
{
    int nd = shape->dim;
    if (self->dim == 0) { /* one element: any strides do */
        for (int i = 0; i < nd; i++)
            strides[i] = 1;
        return true;
    }
    if (self->numel == 0) {
        bool same = self->dim == nd;
        for (int i = 0; same && i < nd; i++)
            same = self->sizes[i] == shape->sizes[i];
        if (same) {
            for (int i = 0; i < nd; i++)
                strides[i] = self->strides[i];
            return true;
        }
        /* No element is ever addressed: contiguous-like strides, with zeros counted as one. */
        for (int d = nd - 1; d >= 0; d--) {
            int64_t next = d == nd - 1 ? 1 : strides[d + 1];
            int64_t size = d == nd - 1 ? 1 : (shape->sizes[d + 1] > 1 ? shape->sizes[d + 1] : 1);
            if (!yt__mul_ok(&strides[d], next, size))
                strides[d] = 1;
        }
        return true;
    }
    /* Walk self's dims from the innermost, grouping them into chunks that are contiguous with one
     * another; each chunk must be covered exactly by a run of the new dims. */
    int view_d = nd - 1;
    int64_t chunk_base_stride = self->strides[self->dim - 1];
    int64_t tensor_numel = 1, view_numel = 1;
    for (int tensor_d = self->dim - 1; tensor_d >= 0; tensor_d--) {
        tensor_numel *= self->sizes[tensor_d]; /* a factor of numel: cannot overflow */
        bool chunk_ends = tensor_d == 0;
        if (!chunk_ends && self->sizes[tensor_d - 1] != 1) {
            int64_t span;
            chunk_ends = !yt__mul_ok(&span, tensor_numel, chunk_base_stride) ||
                         self->strides[tensor_d - 1] != span;
        }
        if (!chunk_ends)
            continue;
        while (view_d >= 0 && (view_numel < tensor_numel || shape->sizes[view_d] == 1)) {
            if (!yt__mul_ok(&strides[view_d], view_numel, chunk_base_stride))
                return false;
            view_numel *= shape->sizes[view_d]; /* a product of the new sizes: at most numel */
            view_d--;
        }
        if (view_numel != tensor_numel)
            return false;
        if (tensor_d > 0) {
            chunk_base_stride = self->strides[tensor_d - 1];
            tensor_numel = 1;
            view_numel = 1;
        }
    }
    return view_d == -1;
}

yt_tensor *
yt__view_view(yt_tensor *self, const int64_t *size, int size_len)
{
    yt_shape shape;
    if (yt__infer_view_shape(&shape, "view", size, size_len, self->numel) != YT_OK)
        return NULL;
    int64_t strides[YT_MAX_DIM];
    if (!yt__view_strides(strides, self, &shape))
        return yt__fail(
            YT_ERR_SHAPE,
            "view: size is not compatible with input tensor's size and stride (at least "
            "one dimension spans across two contiguous subspaces); use reshape instead");
    return make_view(self, shape.dim, shape.sizes, strides, self->offset);
}

yt_tensor *
yt__view_expand(yt_tensor *self, const int64_t *size, int size_len)
{
    char want[YT__SIZES_BUF], have[YT__SIZES_BUF];
    if (size_len < 0 || size_len > YT_MAX_DIM || (size == NULL && size_len > 0))
        return yt__fail(YT_ERR_VALUE, "expand: size has %d entries (expected 0..%d)", size_len,
                        YT_MAX_DIM);
    if (size_len < self->dim)
        return yt__fail(YT_ERR_SHAPE,
                        "expand: the number of sizes provided (%d) must be greater or equal to the "
                        "number of dimensions in the tensor (%d)",
                        size_len, self->dim);
    int64_t sizes[YT_MAX_DIM], strides[YT_MAX_DIM];
    /* Align from the right: self's dims are the trailing ones, new dims lead. */
    for (int i = size_len - 1; i >= 0; i--) {
        int d = self->dim - (size_len - i);
        int64_t sz = d >= 0 ? self->sizes[d] : 1;
        int64_t st;
        if (d >= 0)
            st = self->strides[d];
        else if (i == size_len - 1 || !yt__mul_ok(&st, sizes[i + 1], strides[i + 1]))
            st = 1; /* a new size-1 dim: its stride is never used to step */
        int64_t target = size[i];
        if (target == -1) {
            if (d < 0)
                return yt__fail(YT_ERR_VALUE,
                                "expand: size[%d]=-1 is not allowed in a leading, non-existing "
                                "dimension",
                                i);
            target = sz;
        } else if (target < 0) {
            return yt__fail(YT_ERR_VALUE, "expand: size[%d]=%lld is negative", i,
                            (long long)target);
        }
        if (sz != target) {
            if (sz != 1)
                return yt__fail(YT_ERR_SHAPE,
                                "expand: the expanded size %lld must match the existing size %lld "
                                "at non-singleton dimension %d (target sizes %s, self sizes %s)",
                                (long long)target, (long long)sz, i,
                                yt__format_sizes(want, sizeof want, size, size_len),
                                yt__format_sizes(have, sizeof have, self->sizes, self->dim));
            sz = target;
            st = 0; /* every index reads the one element */
        }
        sizes[i] = sz;
        strides[i] = st;
    }
    int64_t numel;
    if (!yt__checked_numel(&numel, sizes, size_len))
        return yt__fail(YT_ERR_NOMEM,
                        "expand: target sizes %s have too many elements (overflows int64)",
                        yt__format_sizes(want, sizeof want, sizes, size_len));
    return make_view(self, size_len, sizes, strides, self->offset);
}

yt_tensor *
yt__view_squeeze(yt_tensor *self)
{
    int64_t sizes[YT_MAX_DIM], strides[YT_MAX_DIM];
    int n = 0;
    for (int i = 0; i < self->dim; i++) {
        if (self->sizes[i] != 1) {
            sizes[n] = self->sizes[i];
            strides[n] = self->strides[i];
            n++;
        }
    }
    return make_view(self, n, sizes, strides, self->offset);
}

yt_tensor *
yt__view_squeeze_dim(yt_tensor *self, int64_t dim)
{
    if (check_dim("squeeze", "dim", dim, self->dim) != YT_OK)
        return NULL;
    if (self->dim == 0 || self->sizes[dim] != 1)
        return alias(self); /* PyTorch leaves dims of other sizes in place */
    int64_t sizes[YT_MAX_DIM], strides[YT_MAX_DIM];
    int n = 0;
    for (int i = 0; i < self->dim; i++) {
        if (i != dim) {
            sizes[n] = self->sizes[i];
            strides[n] = self->strides[i];
            n++;
        }
    }
    return make_view(self, n, sizes, strides, self->offset);
}

yt_tensor *
yt__view_unsqueeze(yt_tensor *self, int64_t dim)
{
    if (dim < 0 || dim > self->dim)
        return yt__fail(YT_ERR_VALUE,
                        "unsqueeze: dim=%lld is out of range for a %d-D self "
                        "(expected 0..%d)",
                        (long long)dim, self->dim, self->dim);
    if (self->dim >= YT_MAX_DIM)
        return yt__fail(YT_ERR_SHAPE, "unsqueeze: self is already %d-D, the most a tensor can have",
                        self->dim);
    int64_t sizes[YT_MAX_DIM], strides[YT_MAX_DIM];
    int n = 0;
    for (int i = 0; i <= self->dim; i++) {
        if (i == dim) {
            /* PyTorch's choice: the stride that would step over the dim it precedes. */
            int64_t st = 1;
            if (dim < self->dim && !yt__mul_ok(&st, self->sizes[dim], self->strides[dim]))
                st = 1;
            sizes[n] = 1;
            strides[n] = st;
            n++;
        }
        if (i < self->dim) {
            sizes[n] = self->sizes[i];
            strides[n] = self->strides[i];
            n++;
        }
    }
    return make_view(self, n, sizes, strides, self->offset);
}

yt_tensor *
yt__view_slice_tensor(yt_tensor *self, int64_t dim, int64_t start, int64_t end, int64_t step)
{
    if (self->dim == 0)
        return yt__fail(YT_ERR_SHAPE, "slice: cannot slice a 0-D tensor");
    if (check_dim("slice", "dim", dim, self->dim) != YT_OK)
        return NULL;
    if (step <= 0)
        return yt__fail(YT_ERR_VALUE, "slice: expected step > 0, got step=%lld", (long long)step);
    int64_t n = self->sizes[dim];
    /* Python's rules: None means the ends, negatives count from the end, then clamp. Adding n
     * to a negative value cannot overflow. */
    int64_t lo = start == YT_NONE ? 0 : start;
    int64_t hi = end == YT_NONE ? n : end;
    if (lo < 0)
        lo += n;
    if (hi < 0)
        hi += n;
    if (lo < 0)
        lo = 0;
    else if (lo > n)
        lo = n;
    if (hi < lo)
        hi = lo;
    else if (hi > n)
        hi = n;
    int64_t len = hi - lo;
    int64_t sizes[YT_MAX_DIM], strides[YT_MAX_DIM];
    for (int i = 0; i < self->dim; i++) {
        sizes[i] = self->sizes[i];
        strides[i] = self->strides[i];
    }
    sizes[dim] = len == 0 ? 0 : 1 + (len - 1) / step; /* ceil(len / step) without overflow */
    /* stride * step overflows only when step >= len, i.e. one element: then it never steps. */
    if (!yt__mul_ok(&strides[dim], self->strides[dim], step))
        strides[dim] = self->strides[dim];
    return make_view(self, self->dim, sizes, strides, offset_at(self, lo, self->strides[dim]));
}

yt_tensor *
yt__view_select_int(yt_tensor *self, int64_t dim, int64_t index)
{
    if (self->dim == 0)
        return yt__fail(YT_ERR_SHAPE, "select: cannot select on a 0-D tensor");
    if (check_dim("select", "dim", dim, self->dim) != YT_OK)
        return NULL;
    int64_t n = self->sizes[dim];
    if (index < -n || index >= n)
        return yt__fail(YT_ERR_VALUE,
                        "select: index %lld is out of range for dimension %lld of size %lld",
                        (long long)index, (long long)dim, (long long)n);
    if (index < 0)
        index += n;
    int64_t sizes[YT_MAX_DIM], strides[YT_MAX_DIM];
    int k = 0;
    for (int i = 0; i < self->dim; i++) {
        if (i != dim) {
            sizes[k] = self->sizes[i];
            strides[k] = self->strides[i];
            k++;
        }
    }
    return make_view(self, k, sizes, strides, offset_at(self, index, self->strides[dim]));
}
