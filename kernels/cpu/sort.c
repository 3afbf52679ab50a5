/* Sorting along one dimension on the CPU: argsort (and sort and topk, which share
 * yt__sort_lines). Each line's keys are copied out (as f64 for floating dtypes, i64 otherwise, so
 * every value compares exactly) and a permutation is merge-sorted, which is stable: equal keys
 * keep their order, matching PyTorch's stable=True. NaN sorts above +inf. */
#include <stdlib.h>
#include <string.h>

#include "index_util.h"
#include "kernels.h"
#include "sort.h"

/* a before b in the sorted order (descending: larger first). */
static inline bool
before_f64(double a, double b, bool descending)
{
    if (descending)
        return a > b || (a != a && b == b);
    return a < b || (b != b && a == a);
}

static inline bool
before_i64(int64_t a, int64_t b, bool descending)
{
    return descending ? a > b : a < b;
}

/* Bottom-up merge sort of perm[0..n) by keys; tmp has room for n entries. */
#define DEFINE_MERGE_SORT(NAME, KEY, BEFORE)                                                       \
    static void NAME(int64_t *perm, int64_t *tmp, const KEY *keys, int64_t n, bool descending)     \
    {                                                                                              \
        for (int64_t i = 0; i < n; i++)                                                            \
            perm[i] = i;                                                                           \
        int64_t *src = perm, *dst = tmp;                                                           \
        for (int64_t width = 1; width < n; width *= 2) {                                           \
            for (int64_t lo = 0; lo < n; lo += 2 * width) {                                        \
                int64_t mid = lo + width < n ? lo + width : n;                                     \
                int64_t hi = lo + 2 * width < n ? lo + 2 * width : n;                              \
                int64_t i = lo, j = mid, o = lo;                                                   \
                while (i < mid && j < hi)                                                          \
                    /* take from the right only when strictly before: stability */                 \
                    dst[o++] =                                                                     \
                        BEFORE(keys[src[j]], keys[src[i]], descending) ? src[j++] : src[i++];      \
                while (i < mid)                                                                    \
                    dst[o++] = src[i++];                                                           \
                while (j < hi)                                                                     \
                    dst[o++] = src[j++];                                                           \
            }                                                                                      \
            int64_t *t = src;                                                                      \
            src = dst;                                                                             \
            dst = t;                                                                               \
        }                                                                                          \
        if (src != perm)                                                                           \
            memcpy(perm, src, (size_t)n * sizeof *perm);                                           \
    }
DEFINE_MERGE_SORT(sort_f64, double, before_f64)
DEFINE_MERGE_SORT(sort_i64, int64_t, before_i64)

yt_status
yt__sort_lines(yt_tensor *values, yt_tensor *indices, yt_tensor *self, int64_t dim, bool descending,
               int64_t k)
{
    int64_t outer = 1, n = 1, inner = 1;
    if (self->dim > 0) {
        for (int d = 0; d < dim; d++)
            outer *= self->sizes[d];
        n = self->sizes[dim];
        for (int d = (int)dim + 1; d < self->dim; d++)
            inner *= self->sizes[d];
    }
    if (k < 0 || k > n)
        return yt__fail_status(YT_ERR_VALUE, "sort: k=%lld is out of range for a line of %lld",
                               (long long)k, (long long)n);
    if (outer * inner == 0 || k == 0)
        return YT_OK;
    bool floating = yt_dtype_is_floating(self->dtype);
    yt_tensor *keys = yt__cast_copy(self, floating ? YT_DTYPE_F64 : YT_DTYPE_I64);
    yt_tensor *vals = values == NULL ? NULL : yt__cast_copy(self, self->dtype); /* contiguous */
    size_t bytes = (size_t)n * (2 * sizeof(int64_t) + sizeof(double));
    char *scratch = malloc(bytes);
    yt_status status = YT_OK;
    if (keys == NULL || (values != NULL && vals == NULL))
        status = yt__last_status();
    else if (scratch == NULL)
        status = yt__fail_status(YT_ERR_NOMEM, "sort: out of memory for %lld-element lines",
                                 (long long)n);
    if (status == YT_OK) {
        int64_t *perm = (int64_t *)scratch, *tmp = perm + n;
        char *line = (char *)(tmp + n); /* n keys of 8 bytes */
        const char *kd = yt__data_ptr(keys);
        int64_t *out_i = (int64_t *)yt__data_ptr(indices);
        size_t es = yt_dtype_size(self->dtype);
        const char *vd = vals != NULL ? yt__data_ptr(vals) : NULL;
        char *out_v = values != NULL ? yt__data_ptr(values) : NULL;
        for (int64_t o = 0; o < outer; o++) {
            for (int64_t in = 0; in < inner; in++) {
                for (int64_t j = 0; j < n; j++)
                    memcpy(line + j * 8, kd + ((o * n + j) * inner + in) * 8, 8);
                if (floating)
                    sort_f64(perm, tmp, (const double *)line, n, descending);
                else
                    sort_i64(perm, tmp, (const int64_t *)line, n, descending);
                for (int64_t j = 0; j < k; j++) {
                    int64_t at = (o * k + j) * inner + in;
                    out_i[at] = perm[j];
                    if (out_v != NULL)
                        yt__copy_elem(out_v + at * (int64_t)es,
                                      vd + ((o * n + perm[j]) * inner + in) * (int64_t)es, es);
                }
            }
        }
    }
    free(scratch);
    yt_release(vals);
    yt_release(keys);
    return status;
}

yt_status
yt__cpu_argsort(yt_tensor *result, yt_tensor *self, int64_t dim, bool descending)
{
    int64_t n = yt__size_as_1d(self, (int)dim);
    return yt__sort_lines(NULL, result, self, dim, descending, n);
}

yt_status
yt__cpu_argsort_stable(yt_tensor *result, yt_tensor *self, bool stable, int64_t dim,
                       bool descending)
{
    (void)stable; /* always stable, which is one of the orders stable=false allows */
    return yt__cpu_argsort(result, self, dim, descending);
}

yt_status
yt__cpu_sort(yt_tensor *values, yt_tensor *indices, yt_tensor *self, int64_t dim, bool descending)
{
    int64_t n = yt__size_as_1d(self, (int)dim);
    return yt__sort_lines(values, indices, self, dim, descending, n);
}

yt_status
yt__cpu_sort_stable(yt_tensor *values, yt_tensor *indices, yt_tensor *self, const bool *stable,
                    int64_t dim, bool descending)
{
    (void)stable; /* always stable */
    return yt__cpu_sort(values, indices, self, dim, descending);
}

yt_status
yt__cpu_topk(yt_tensor *values, yt_tensor *indices, yt_tensor *self, int64_t k, int64_t dim,
             bool largest, bool sorted)
{
    (void)sorted; /* always sorted: one valid order for sorted=False too */
    /* a 0-d self gives 0-d results, its element, for k = 0 as well (as PyTorch's topk does): with
     * k = 0 nothing would be written to them */
    if (self->dim == 0)
        k = 1;
    return yt__sort_lines(values, indices, self, dim, largest, k);
}

yt_status
yt__shape_topk(yt_shape *out, const char *op, yt_tensor *self, int64_t k, int64_t dim)
{
    int64_t n = yt__size_as_1d(self, (int)dim);
    if (k < 0 || k > n)
        return yt__fail_status(YT_ERR_VALUE,
                               "%s: k=%lld is out of range for dimension %lld of size %lld "
                               "(expected 0..%lld)",
                               op, (long long)k, (long long)dim, (long long)n, (long long)n);
    yt__shape_of(out, self);
    if (self->dim > 0)
        out->sizes[dim] = k;
    return YT_OK;
}
