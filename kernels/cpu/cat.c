/* cat on the CPU. The result is seen as [outer, total, inner] around `dim`, each input as
 * [outer, n_i, inner]: an input that is contiguous and of the result's dtype is one memcpy of
 * n_i * inner elements per outer index (one memcpy in all when dim is the first non-trivial dim);
 * any other input is copied into its narrowed view of the result by the strided, converting copy.
 * Copies of 8 MiB and more split the outer loop over the kernel pool. Legacy rule kept from
 * PyTorch: 1-D inputs of size 0 are skipped whatever their rank mismatch. */
#include <string.h>

#include "kernels.h"
#include "parallel.h"

/* memcpy is memory-bound: a second thread pays off only for large copies */
#define PARALLEL_BYTES (8 << 20)

/* `outer` runs of `run` bytes, from src (packed) to dst (`stride` bytes apart), in `chunks`. */
typedef struct copy_job {
    char *dst;
    const char *src;
    size_t run, stride;
    int64_t outer, chunks;
} copy_job;

static void
copy_chunk(void *ctx, int64_t c)
{
    const copy_job *j = ctx;
    for (int64_t o = j->outer * c / j->chunks; o < j->outer * (c + 1) / j->chunks; o++)
        memcpy(j->dst + (size_t)o * j->stride, j->src + (size_t)o * j->run, j->run);
}

static bool
skipped(const yt_tensor *t)
{
    return t->dim == 1 && t->sizes[0] == 0;
}

yt_status
yt__cpu_cat(yt_tensor *result, yt_tensor *const *tensors, int tensors_len, int64_t dim)
{
    if (result->numel == 0)
        return YT_OK;
    if (yt__wrap_dim(&dim, result->dim, "cat", "dim") != YT_OK)
        return yt__last_status();
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < dim; d++)
        outer *= result->sizes[d];
    for (int d = (int)dim + 1; d < result->dim; d++)
        inner *= result->sizes[d];
    int64_t total = result->sizes[dim];
    size_t es = yt_dtype_size(result->dtype);
    char *out = yt__data_ptr(result);
    int64_t at = 0; /* offset along dim */
    for (int i = 0; i < tensors_len; i++) {
        yt_tensor *t = tensors[i];
        if (skipped(t))
            continue;
        int64_t n = t->sizes[dim];
        if (n == 0)
            continue;
        if (t->is_contiguous && t->dtype == result->dtype) {
            const char *src = yt__data_ptr(t);
            size_t run = (size_t)(n * inner) * es, stride = (size_t)(total * inner) * es;
            char *dst = out + (size_t)(at * inner) * es;
            if (outer == 1) {
                memcpy(dst, src, run);
            } else {
                double bytes = (double)outer * (double)run;
                /* about 5 bytes per nanosecond on one thread */
                int threads = bytes > PARALLEL_BYTES
                                  ? yt__parallel_threads(bytes / 5.0, yt__max_threads())
                                  : 1;
                copy_job j = {dst, src, run, stride, outer, 1};
                j.chunks = yt__parallel_chunks(outer, threads);
                yt__parallel_run(j.chunks, threads, copy_chunk, &j);
            }
        } else {
            int64_t sizes[YT_MAX_DIM];
            memcpy(sizes, result->sizes, sizeof(int64_t) * (size_t)result->dim);
            sizes[dim] = n;
            yt_tensor *part = yt__view_of(result, result->dim, sizes, result->strides,
                                          result->offset + at * result->strides[dim]);
            yt_status status = part == NULL ? yt__last_status() : yt__copy_into(part, t);
            yt_release(part);
            if (status != YT_OK)
                return status;
        }
        at += n;
    }
    return YT_OK;
}

yt_status
yt__shape_cat(yt_shape *out, const char *op, yt_tensor *const *tensors, int tensors_len,
              int64_t dim)
{
    const yt_tensor *ref = NULL;
    int ref_i = 0;
    for (int i = 0; i < tensors_len && ref == NULL; i++)
        if (!skipped(tensors[i])) {
            ref = tensors[i];
            ref_i = i;
        }
    if (ref == NULL) { /* only legacy empty tensors: the result is one of them */
        out->dim = 1;
        out->sizes[0] = 0;
        return YT_OK;
    }
    if (ref->dim == 0)
        return yt__fail_status(YT_ERR_SHAPE,
                               "%s: zero-dimensional tensor (at position %d) cannot be "
                               "concatenated",
                               op, ref_i);
    if (yt__wrap_dim(&dim, ref->dim, op, "dim") != YT_OK)
        return yt__last_status();
    yt__shape_of(out, ref);
    int64_t total = 0;
    for (int i = 0; i < tensors_len; i++) {
        const yt_tensor *t = tensors[i];
        if (skipped(t))
            continue;
        if (t->dim != ref->dim)
            return yt__fail_status(YT_ERR_SHAPE,
                                   "%s: tensors must have the same number of dimensions: got %d "
                                   "and %d (tensor %d)",
                                   op, ref->dim, t->dim, i);
        for (int d = 0; d < t->dim; d++)
            if (d != dim && t->sizes[d] != ref->sizes[d])
                return yt__fail_status(YT_ERR_SHAPE,
                                       "%s: sizes of tensors must match except in dimension "
                                       "%lld: expected size %lld but got size %lld for tensor "
                                       "number %d in the list",
                                       op, (long long)dim, (long long)ref->sizes[d],
                                       (long long)t->sizes[d], i);
        if (!yt__add_ok(&total, total, t->sizes[dim]))
            return yt__fail_status(YT_ERR_VALUE, "%s: the concatenated size overflows", op);
    }
    out->sizes[dim] = total;
    int64_t numel;
    if (!yt__checked_numel(&numel, out->sizes, out->dim))
        return yt__fail_status(YT_ERR_VALUE, "%s: the result has too many elements", op);
    return YT_OK;
}
