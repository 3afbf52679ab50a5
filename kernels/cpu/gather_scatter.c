/* gather, scatter (src and value) and scatter_add on the CPU.
 *
 * All four walk the positions of `index` (a contiguous i64 copy) with a multi-index counter; a
 * position p reads or writes self/result at p with coordinate `dim` replaced by index[p]. Index
 * values are range-checked first (0..size-1; PyTorch does not wrap negative ones), so no write
 * happens on bad input. gather reads a strided self; scatter writes a contiguous result that
 * starts as a copy of self, and reads a strided src. */
#include <string.h>

#include "index_util.h"
#include "kernels.h"

/* Byte offsets of the current position in two tensors (a and b), advanced over `sizes`
 * (the index's shape) in row-major order; `skip` is the dim whose stride is left out of a. */
typedef struct walker {
    int nd;
    int64_t pos[YT_MAX_DIM];
    int64_t sizes[YT_MAX_DIM];
    int64_t step_a[YT_MAX_DIM], step_b[YT_MAX_DIM];
    int64_t off_a, off_b;
} walker;

/* Byte step of t along d; 0 for a 0-d t (one element, which index may cover as 1-D). */
static int64_t
step_of(const yt_tensor *t, int d, size_t es)
{
    return t != NULL && d < t->dim ? t->strides[d] * (int64_t)es : 0;
}

static void
walker_init(walker *w, const yt_tensor *index, const yt_tensor *a, int64_t skip, const yt_tensor *b,
            size_t es_a, size_t es_b)
{
    w->nd = index->dim;
    w->off_a = w->off_b = 0;
    for (int d = 0; d < w->nd; d++) {
        w->pos[d] = 0;
        w->sizes[d] = index->sizes[d];
        w->step_a[d] = d == skip ? 0 : step_of(a, d, es_a);
        w->step_b[d] = step_of(b, d, es_b);
    }
}

static inline void
walker_next(walker *w)
{
    for (int d = w->nd - 1; d >= 0; d--) {
        w->off_a += w->step_a[d];
        w->off_b += w->step_b[d];
        if (++w->pos[d] < w->sizes[d])
            return;
        w->off_a -= w->step_a[d] * w->sizes[d];
        w->off_b -= w->step_b[d] * w->sizes[d];
        w->pos[d] = 0;
    }
}

/* The index as i64, range-checked against size(dim) of `t`. NULL with the error set. */
static yt_tensor *
checked_index(const char *op, yt_tensor *index, const yt_tensor *t, int64_t dim)
{
    yt_tensor *idx = yt__index_i64(index);
    if (idx == NULL)
        return NULL;
    int64_t size = yt__size_as_1d(t, (int)dim);
    if (yt__check_index_range(op, (const int64_t *)yt__data_ptr(idx), idx->numel, size, dim) !=
        YT_OK) {
        yt_release(idx);
        return NULL;
    }
    return idx;
}

yt_status
yt__cpu_gather(yt_tensor *result, yt_tensor *self, int64_t dim, yt_tensor *index, bool sparse_grad)
{
    (void)sparse_grad; /* gradients are always dense */
    if (result->numel == 0)
        return YT_OK;
    yt_tensor *idx = checked_index("gather", index, self, dim);
    if (idx == NULL)
        return yt__last_status();
    size_t es = yt_dtype_size(self->dtype);
    int64_t stride_dim = self->dim > 0 ? self->strides[dim] * (int64_t)es : 0;
    const int64_t *iv = (const int64_t *)yt__data_ptr(idx);
    const char *s = yt__data_ptr(self);
    char *r = yt__data_ptr(result);
    walker w;
    walker_init(&w, idx, self, dim, NULL, es, 0);
    for (int64_t p = 0; p < idx->numel; p++) {
        yt__copy_elem(r + p * (int64_t)es, s + w.off_a + iv[p] * stride_dim, es);
        walker_next(&w);
    }
    yt_release(idx);
    return YT_OK;
}

/* src (when given) must be at least index's size in every dim; index at most self's outside
 * dim; all three of one rank (0-D counts as 1-D). */
static yt_status
check_scatter(const char *op, yt_tensor *self, int64_t dim, yt_tensor *index, yt_tensor *src)
{
    yt_shape unused;
    if (yt__shape_gather(&unused, op, self, dim, index) != YT_OK)
        return yt__last_status();
    if (src == NULL)
        return YT_OK;
    int sd = src->dim > 0 ? src->dim : 1, id = index->dim > 0 ? index->dim : 1;
    if (sd != id)
        return yt__fail_status(YT_ERR_SHAPE,
                               "%s: src must have the same number of dimensions as index, got "
                               "%d-D src and %d-D index",
                               op, src->dim, index->dim);
    for (int d = 0; d < id; d++)
        if (yt__size_as_1d(index, d) > yt__size_as_1d(src, d))
            return yt__fail_status(
                YT_ERR_SHAPE, "%s: index.size(%d)=%lld must not exceed src.size(%d)=%lld", op, d,
                (long long)yt__size_as_1d(index, d), d, (long long)yt__size_as_1d(src, d));
    return YT_OK;
}

typedef enum { SCATTER_COPY, SCATTER_ADD, SCATTER_VALUE } scatter_mode;

static yt_status
scatter(const char *op, yt_tensor *result, yt_tensor *self, int64_t dim, yt_tensor *index,
        yt_tensor *src, yt_scalar value, scatter_mode mode)
{
    if (check_scatter(op, self, dim, index, src) != YT_OK)
        return yt__last_status();
    yt_tensor *idx = checked_index(op, index, self, dim);
    if (idx == NULL)
        return yt__last_status();
    yt_status status = yt__copy_into(result, self);
    if (status != YT_OK || idx->numel == 0) {
        yt_release(idx);
        return status;
    }
    size_t es = yt_dtype_size(self->dtype);
    char fill[8] = {0};
    if (mode == SCATTER_VALUE) { /* the value converted to self's dtype, once */
        if (yt__scalar_to_bytes(value, result->dtype, fill) != YT_OK) {
            yt_release(idx);
            return yt__last_status();
        }
    }
    int64_t stride_dim = result->dim > 0 ? result->strides[dim] * (int64_t)es : 0;
    const int64_t *iv = (const int64_t *)yt__data_ptr(idx);
    char *r = yt__data_ptr(result);
    const char *s = src != NULL ? yt__data_ptr(src) : NULL;
    walker w;
    walker_init(&w, idx, result, dim, src, es, es);
    for (int64_t p = 0; p < idx->numel; p++) {
        char *to = r + w.off_a + iv[p] * stride_dim;
        if (mode == SCATTER_VALUE)
            yt__copy_elem(to, fill, es);
        else if (mode == SCATTER_COPY)
            yt__copy_elem(to, s + w.off_b, es);
        else
            yt__add_scaled(result->dtype, to, 1, s + w.off_b, 1, 1, yt_int(1));
        walker_next(&w);
    }
    yt_release(idx);
    return YT_OK;
}

yt_status
yt__cpu_scatter(yt_tensor *result, yt_tensor *self, int64_t dim, yt_tensor *index, yt_tensor *src)
{
    return scatter("scatter", result, self, dim, index, src, yt_int(0), SCATTER_COPY);
}

yt_status
yt__cpu_scatter_value(yt_tensor *result, yt_tensor *self, int64_t dim, yt_tensor *index,
                      yt_scalar value)
{
    return scatter("scatter", result, self, dim, index, NULL, value, SCATTER_VALUE);
}

yt_status
yt__cpu_scatter_add(yt_tensor *result, yt_tensor *self, int64_t dim, yt_tensor *index,
                    yt_tensor *src)
{
    return scatter("scatter_add", result, self, dim, index, src, yt_int(0), SCATTER_ADD);
}
