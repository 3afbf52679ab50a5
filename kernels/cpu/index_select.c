/* index_select, index_add and index_copy on the CPU. All three see self as [outer, n, inner]
 * around `dim` (a 0-D self is [1, 1, 1]) and move `inner`-element runs: memcpy for select and
 * copy, a typed add for index_add. The result is contiguous (the generated caller allocates it);
 * inputs that are not are copied first. Index values must lie in 0..n-1: PyTorch does not wrap
 * negative ones here either. */
#include <string.h>

#include "index_util.h"
#include "kernels.h"

typedef struct geometry {
    int64_t outer, n, inner;
} geometry;

static geometry
around(const yt_tensor *t, int64_t dim)
{
    geometry g = {1, 1, 1};
    if (t->dim == 0)
        return g;
    for (int d = 0; d < dim; d++)
        g.outer *= t->sizes[d];
    g.n = t->sizes[dim];
    for (int d = (int)dim + 1; d < t->dim; d++)
        g.inner *= t->sizes[d];
    return g;
}

static yt_tensor *
contiguous_of(yt_tensor *t)
{
    return t->is_contiguous ? yt_retain(t) : yt__cast_copy(t, t->dtype);
}

yt_status
yt__cpu_index_select(yt_tensor *result, yt_tensor *self, int64_t dim, yt_tensor *index)
{
    yt_tensor *idx = yt__index_i64(index);
    if (idx == NULL)
        return yt__last_status();
    geometry g = around(self, dim);
    const int64_t *iv = (const int64_t *)yt__data_ptr(idx);
    int64_t k = idx->numel;
    yt_status status = yt__check_index_range("index_select", iv, k, g.n, dim);
    if (status != YT_OK || result->numel == 0) {
        yt_release(idx);
        return status;
    }
    yt_tensor *src = contiguous_of(self);
    if (src == NULL) {
        yt_release(idx);
        return yt__last_status();
    }
    size_t es = yt_dtype_size(self->dtype), run = (size_t)g.inner * es;
    const char *s = yt__data_ptr(src);
    char *d = yt__data_ptr(result);
    for (int64_t o = 0; o < g.outer; o++)
        for (int64_t i = 0; i < k; i++)
            memcpy(d + (size_t)(o * k + i) * run, s + (size_t)(o * g.n + iv[i]) * run, run);
    yt_release(src);
    yt_release(idx);
    return YT_OK;
}

/* source must be self's shape with size(dim) = index.numel (0-D counts as 1-D of size 1). */
static yt_status
check_source(const char *op, yt_tensor *self, int64_t dim, yt_tensor *index, yt_tensor *source)
{
    if (index->dim > 1)
        return yt__fail_status(YT_ERR_SHAPE, "%s: index must be 0-D or 1-D, got %d-D", op,
                               index->dim);
    int sd = self->dim > 0 ? self->dim : 1, rd = source->dim > 0 ? source->dim : 1;
    bool ok = sd == rd;
    for (int d = 0; ok && d < sd; d++) {
        int64_t want = d == dim ? index->numel : yt__size_as_1d(self, d);
        int64_t have = yt__size_as_1d(source, d);
        ok = want == have;
    }
    if (!ok) {
        char a[YT__SIZES_BUF], b[YT__SIZES_BUF];
        return yt__fail_status(YT_ERR_SHAPE,
                               "%s: source has shape %s; expected self's shape %s with size %lld "
                               "(index.numel) at dim %lld",
                               op, yt__format_sizes(a, sizeof a, source->sizes, source->dim),
                               yt__format_sizes(b, sizeof b, self->sizes, self->dim),
                               (long long)index->numel, (long long)dim);
    }
    return YT_OK;
}

static yt_status
index_put_runs(const char *op, yt_tensor *result, yt_tensor *self, int64_t dim, yt_tensor *index,
               yt_tensor *source, bool add, yt_scalar alpha)
{
    if (check_source(op, self, dim, index, source) != YT_OK)
        return yt__last_status();
    yt_tensor *idx = yt__index_i64(index);
    if (idx == NULL)
        return yt__last_status();
    geometry g = around(self, dim);
    const int64_t *iv = (const int64_t *)yt__data_ptr(idx);
    int64_t k = idx->numel;
    yt_status status = yt__check_index_range(op, iv, k, g.n, dim);
    if (status == YT_OK)
        status = yt__copy_into(result, self);
    yt_tensor *src = status == YT_OK && result->numel > 0 ? contiguous_of(source) : NULL;
    if (src != NULL) {
        size_t es = yt_dtype_size(self->dtype), run = (size_t)g.inner * es;
        const char *s = yt__data_ptr(src);
        char *d = yt__data_ptr(result);
        for (int64_t o = 0; o < g.outer; o++) {
            for (int64_t i = 0; i < k; i++) {
                char *to = d + (size_t)(o * g.n + iv[i]) * run;
                const char *from = s + (size_t)(o * k + i) * run;
                if (add)
                    yt__add_scaled(self->dtype, to, 1, from, 1, g.inner, alpha);
                else
                    memcpy(to, from, run);
            }
        }
        yt_release(src);
    } else if (status == YT_OK && result->numel > 0) {
        status = yt__last_status();
    }
    yt_release(idx);
    return status;
}

yt_status
yt__cpu_index_add(yt_tensor *result, yt_tensor *self, int64_t dim, yt_tensor *index,
                  yt_tensor *source, yt_scalar alpha)
{
    return index_put_runs("index_add", result, self, dim, index, source, true, alpha);
}

yt_status
yt__cpu_index_copy(yt_tensor *result, yt_tensor *self, int64_t dim, yt_tensor *index,
                   yt_tensor *source)
{
    return index_put_runs("index_copy", result, self, dim, index, source, false, yt_int(1));
}
