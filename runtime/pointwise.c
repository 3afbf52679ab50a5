/* yt__pointwise: the iteration helper under every elementwise kernel and every copy.
 *
 * It turns (out, inputs) into per-operand byte strides over out's shape (0 where an input is
 * broadcast), drops size-1 dims, orders the dims so the one with the smallest strides is
 * innermost (PyTorch's TensorIterator rule), and merges dims that are laid out one after the
 * other. Contiguous operands collapse to a single dim and `loop` runs once over everything;
 * otherwise `loop` runs once per innermost row. Above YT_PARALLEL_GRAIN elements the flat range
 * is split across OpenMP threads, each starting mid-row where its share begins.
 *
 * Everything lives on the stack: no allocation, and per row only the loop call and an
 * odometer step. */
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

enum { MAX_OPERANDS = 8 }; /* out + 7 inputs */

typedef struct iter {
    int n_ops;
    int dim;                                   /* after dropping and merging */
    int64_t sizes[YT_MAX_DIM];                 /* innermost first */
    int64_t strides[YT_MAX_DIM][MAX_OPERANDS]; /* bytes, innermost first */
    char *base[MAX_OPERANDS];
} iter;

/* PyTorch's should_swap: > 0 when dim `a` (now inner of the two) should move outward because
 * an operand steps over more memory along it than along `b`. Broadcast (0) strides say
 * nothing; the output, first in the list, decides first. */
static int
should_swap(const iter *it, int a, int b)
{
    for (int k = 0; k < it->n_ops; k++) {
        int64_t sa = it->strides[a][k], sb = it->strides[b][k];
        if (sa == 0 || sb == 0)
            continue;
        if (sa < sb)
            return -1;
        if (sa > sb)
            return 1;
        if (it->sizes[a] > it->sizes[b])
            return 1; /* equal strides: the longer dim goes outside */
    }
    return 0;
}

static void
swap_dims(iter *it, int a, int b)
{
    int64_t s = it->sizes[a];
    it->sizes[a] = it->sizes[b];
    it->sizes[b] = s;
    for (int k = 0; k < it->n_ops; k++) {
        int64_t t = it->strides[a][k];
        it->strides[a][k] = it->strides[b][k];
        it->strides[b][k] = t;
    }
}

static void
reorder(iter *it)
{
    /* Insertion sort; stops early on a decided pair, so already-ordered dims stay put. */
    for (int i = 1; i < it->dim; i++) {
        int cur = i;
        for (int j = i - 1; j >= 0; j--) {
            int c = should_swap(it, j, cur);
            if (c > 0) {
                swap_dims(it, j, cur);
                cur = j;
            } else if (c < 0) {
                break;
            }
        }
    }
}

static void
coalesce(iter *it)
{
    int kept = 0;
    for (int d = 1; d < it->dim; d++) {
        bool mergeable = true;
        for (int k = 0; k < it->n_ops && mergeable; k++)
            mergeable = it->strides[kept][k] * it->sizes[kept] == it->strides[d][k];
        if (mergeable) {
            it->sizes[kept] *= it->sizes[d];
            continue;
        }
        kept++;
        if (kept != d) {
            it->sizes[kept] = it->sizes[d];
            memcpy(it->strides[kept], it->strides[d], sizeof it->strides[d]);
        }
    }
    it->dim = kept + 1;
}

/* Runs `loop` over flat elements [begin, end) of the iteration space. */
static void
run_range(const iter *it, int64_t begin, int64_t end, yt__loop_fn loop, const void *ctx)
{
    int64_t idx[YT_MAX_DIM];
    char *ptr[MAX_OPERANDS]; /* start of the current row */
    char *data[MAX_OPERANDS];
    int64_t rest = begin;
    for (int d = 0; d < it->dim; d++) {
        idx[d] = rest % it->sizes[d];
        rest /= it->sizes[d];
    }
    for (int k = 0; k < it->n_ops; k++) {
        ptr[k] = it->base[k];
        for (int d = 1; d < it->dim; d++)
            ptr[k] += idx[d] * it->strides[d][k];
    }
    const int64_t *inner = it->strides[0];
    int64_t pos = begin;
    while (pos < end) {
        int64_t n = it->sizes[0] - idx[0];
        if (n > end - pos)
            n = end - pos;
        for (int k = 0; k < it->n_ops; k++)
            data[k] = ptr[k] + idx[0] * inner[k];
        loop(data, inner, n, ctx);
        pos += n;
        idx[0] += n;
        if (idx[0] < it->sizes[0] || pos >= end)
            continue;
        /* Row done: step the odometer over the outer dims. */
        idx[0] = 0;
        for (int d = 1; d < it->dim; d++) {
            for (int k = 0; k < it->n_ops; k++)
                ptr[k] += it->strides[d][k];
            if (++idx[d] < it->sizes[d])
                break;
            idx[d] = 0;
            for (int k = 0; k < it->n_ops; k++)
                ptr[k] -= it->sizes[d] * it->strides[d][k];
        }
    }
}

/* Callers check broadcastability; reaching this is a bug in the caller. */
static yt_status
broadcast_error(const yt_tensor *out, int n_in, yt_tensor *const *in)
{
    char have[200], want[200];
    yt__format_sizes(want, sizeof want, out->sizes, out->dim);
    for (int k = 0; k < n_in; k++) {
        const yt_tensor *t = in[k];
        bool ok = t->dim <= out->dim;
        for (int i = 0; ok && i < t->dim; i++)
            ok = t->sizes[i] == 1 || t->sizes[i] == out->sizes[out->dim - t->dim + i];
        if (!ok) {
            yt__format_sizes(have, sizeof have, t->sizes, t->dim);
            return yt__fail_status(YT_ERR_INTERNAL,
                                   "pointwise: input %d of shape %s does not broadcast to %s", k,
                                   have, want);
        }
    }
    return yt__fail_status(YT_ERR_INTERNAL, "pointwise: inputs do not broadcast to %s", want);
}

yt_status
yt__pointwise(yt_tensor *out, int n_in, yt_tensor *const *in, yt__loop_fn loop, const void *ctx)
{
    if (n_in < 0 || n_in > MAX_OPERANDS - 1)
        return yt__fail_status(YT_ERR_INTERNAL, "pointwise: %d inputs, at most %d supported", n_in,
                               MAX_OPERANDS - 1);
    if (out->numel == 0)
        return YT_OK;

    iter it;
    it.n_ops = n_in + 1;
    const int ndim = out->dim;
    for (int k = 0; k < it.n_ops; k++) {
        const yt_tensor *t = k == 0 ? out : in[k - 1];
        if (t->device != YT_DEVICE_CPU)
            return yt__fail_status(YT_ERR_DEVICE, "pointwise: operand %d is on %s, expected cpu", k,
                                   yt_device_name(t->device));
        if (t->dim > ndim)
            return broadcast_error(out, n_in, in);
        it.base[k] = yt__data_ptr(t);
    }

    /* Per-operand byte strides in out's dims, innermost first; size-1 dims dropped. */
    it.dim = 0;
    for (int i = ndim - 1; i >= 0; i--) {
        int64_t size = out->sizes[i];
        if (size == 1) {
            for (int k = 1; k < it.n_ops; k++) {
                int d = in[k - 1]->dim - ndim + i;
                if (d >= 0 && in[k - 1]->sizes[d] != 1)
                    return broadcast_error(out, n_in, in);
            }
            continue;
        }
        for (int k = 0; k < it.n_ops; k++) {
            const yt_tensor *t = k == 0 ? out : in[k - 1];
            int d = t->dim - ndim + i;
            int64_t stride = 0;
            if (d >= 0) {
                if (t->sizes[d] == size)
                    stride = t->strides[d] * (int64_t)yt_dtype_size(t->dtype);
                else if (t->sizes[d] != 1)
                    return broadcast_error(out, n_in, in);
            }
            it.strides[it.dim][k] = stride;
        }
        it.sizes[it.dim++] = size;
    }
    if (it.dim == 0) {
        /* A single element: one dim of size 1, with element-sized strides so loops take their
         * contiguous path. */
        it.sizes[0] = 1;
        for (int k = 0; k < it.n_ops; k++) {
            const yt_tensor *t = k == 0 ? out : in[k - 1];
            it.strides[0][k] = (int64_t)yt_dtype_size(t->dtype);
        }
        it.dim = 1;
    }
    if (it.dim > 1) {
        reorder(&it);
        coalesce(&it);
    }

    int64_t numel = out->numel;
    int n_threads = 1;
    if (numel > YT_PARALLEL_GRAIN && !omp_in_parallel()) {
        int64_t want = (numel + YT_PARALLEL_GRAIN - 1) / YT_PARALLEL_GRAIN;
        int max = omp_get_max_threads();
        n_threads = want < max ? (int)want : max;
    }
    if (n_threads <= 1) {
        run_range(&it, 0, numel, loop, ctx);
        return YT_OK;
    }
#pragma omp parallel num_threads(n_threads)
    {
        int n = omp_get_num_threads();
        int tid = omp_get_thread_num();
        int64_t chunk = (numel + n - 1) / n;
        int64_t begin = chunk * tid;
        int64_t end = begin + chunk < numel ? begin + chunk : numel;
        if (begin < end)
            run_range(&it, begin, end, loop, ctx);
    }
    return YT_OK;
}
