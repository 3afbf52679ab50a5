/* The dataset object (include/yaten/data.h): a kind's callbacks, its ctx, and the sample shapes
 * and dtypes, checked once here so that every kind's get_batch can trust its arguments. */
#include <stdlib.h>
#include <string.h>

#include "loader_internal.h"

/* Checks one sample shape and returns its element count and byte size. */
static yt_status
check_shape(const char *what, const int64_t *shape, int ndim, yt_dtype dtype, int64_t *numel,
            size_t *bytes)
{
    static const char op[] = "dataset_new";
    if (ndim < 0 || ndim > YT_MAX_DIM)
        return yt__fail_status(YT_ERR_VALUE, "%s: %s_ndim=%d is out of range 0..%d", op, what, ndim,
                               YT_MAX_DIM);
    if (ndim > 0 && shape == NULL)
        return yt__fail_status(YT_ERR_VALUE, "%s: %s_shape is NULL but %s_ndim=%d", op, what, what,
                               ndim);
    if ((unsigned)dtype >= YT_DTYPE_COUNT)
        return yt__fail_status(YT_ERR_DTYPE, "%s: %s_dtype=%d is not a dtype", op, what,
                               (int)dtype);
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0)
            return yt__fail_status(YT_ERR_VALUE, "%s: %s_shape[%d]=%lld is negative", op, what, i,
                                   (long long)shape[i]);
    int64_t n, b;
    if (!yt__checked_numel(&n, shape, ndim) || !yt__mul_ok(&b, n, (int64_t)yt_dtype_size(dtype)))
        return yt__fail_status(YT_ERR_NOMEM, "%s: a %s sample's size overflows", op, what);
    *numel = n;
    *bytes = (size_t)b;
    return YT_OK;
}

static yt_status
fill(yt_dataset *d, const int64_t *input_shape, int input_ndim, yt_dtype input_dtype,
     const int64_t *target_shape, int target_ndim, yt_dtype target_dtype)
{
    if (check_shape("input", input_shape, input_ndim, input_dtype, &d->input_numel,
                    &d->input_bytes) != YT_OK)
        return yt__last_status();
    d->input_ndim = input_ndim;
    if (input_ndim > 0)
        memcpy(d->input_shape, input_shape, sizeof(int64_t) * (size_t)input_ndim);
    d->input_dtype = input_dtype;
    d->target_dtype = target_dtype;
    if (target_dtype != YT_DTYPE_NONE) {
        if (check_shape("target", target_shape, target_ndim, target_dtype, &d->target_numel,
                        &d->target_bytes) != YT_OK)
            return yt__last_status();
        d->target_ndim = target_ndim;
        if (target_ndim > 0)
            memcpy(d->target_shape, target_shape, sizeof(int64_t) * (size_t)target_ndim);
    }
    d->length = d->kind->length(d->ctx);
    if (d->length < 0)
        return yt__fail_status(YT_ERR_VALUE, "dataset_new: dataset '%s' reports length %lld",
                               d->kind->name, (long long)d->length);
    return YT_OK;
}

yt_dataset *
yt_dataset_new(const yt_dataset_kind *kind, void *ctx, const int64_t *input_shape, int input_ndim,
               yt_dtype input_dtype, const int64_t *target_shape, int target_ndim,
               yt_dtype target_dtype)
{
    if (kind == NULL || kind->length == NULL || kind->get_batch == NULL || kind->name == NULL) {
        yt__fail(YT_ERR_VALUE, "dataset_new: %s is NULL",
                 kind == NULL           ? "kind"
                 : kind->name == NULL   ? "kind->name"
                 : kind->length == NULL ? "kind->length"
                                        : "kind->get_batch");
        if (kind != NULL && kind->release_ctx != NULL)
            kind->release_ctx(ctx);
        return NULL;
    }
    yt_dataset *d = calloc(1, sizeof *d);
    if (d == NULL) {
        yt__fail(YT_ERR_NOMEM, "dataset_new: out of memory");
        if (kind->release_ctx != NULL)
            kind->release_ctx(ctx);
        return NULL;
    }
    atomic_init(&d->refcount, 1);
    d->kind = kind;
    d->ctx = ctx;
    if (fill(d, input_shape, input_ndim, input_dtype, target_shape, target_ndim, target_dtype) !=
        YT_OK) {
        yt_dataset_release(d);
        return NULL;
    }
    return d;
}

yt_dataset *
yt_dataset_retain(yt_dataset *d)
{
    if (d != NULL)
        atomic_fetch_add_explicit(&d->refcount, 1, memory_order_relaxed);
    return d;
}

void
yt_dataset_release(yt_dataset *d)
{
    if (d == NULL || atomic_fetch_sub_explicit(&d->refcount, 1, memory_order_acq_rel) != 1)
        return;
    if (d->kind->release_ctx != NULL)
        d->kind->release_ctx(d->ctx);
    free(d);
}

int64_t
yt_dataset_length(const yt_dataset *d)
{
    return d == NULL ? 0 : d->length;
}

const char *
yt_dataset_name(const yt_dataset *d)
{
    return d == NULL ? "" : d->kind->name;
}

const int64_t *
yt_dataset_input_shape(const yt_dataset *d, int *ndim)
{
    if (ndim != NULL)
        *ndim = d == NULL ? 0 : d->input_ndim;
    return d == NULL ? NULL : d->input_shape;
}

const int64_t *
yt_dataset_target_shape(const yt_dataset *d, int *ndim)
{
    if (ndim != NULL)
        *ndim = d == NULL ? 0 : d->target_ndim;
    return d == NULL ? NULL : d->target_shape;
}

yt_dtype
yt_dataset_input_dtype(const yt_dataset *d)
{
    return d == NULL ? YT_DTYPE_NONE : d->input_dtype;
}

yt_dtype
yt_dataset_target_dtype(const yt_dataset *d)
{
    return d == NULL ? YT_DTYPE_NONE : d->target_dtype;
}

yt_status
yt_dataset_get_batch(yt_dataset *d, const int64_t *indices, int64_t n, void *input, void *target)
{
    static const char op[] = "dataset_get_batch";
    if (d == NULL)
        return yt__fail_status(YT_ERR_VALUE, "%s: dataset is NULL", op);
    if (n < 0)
        return yt__fail_status(YT_ERR_VALUE, "%s: n=%lld is negative", op, (long long)n);
    if (n == 0)
        return YT_OK;
    if (indices == NULL || input == NULL)
        return yt__fail_status(YT_ERR_VALUE, "%s: %s is NULL", op,
                               indices == NULL ? "indices" : "input");
    if (target == NULL && d->target_dtype != YT_DTYPE_NONE)
        return yt__fail_status(YT_ERR_VALUE, "%s: target is NULL but dataset '%s' has targets", op,
                               d->kind->name);
    for (int64_t i = 0; i < n; i++)
        if (indices[i] < 0 || indices[i] >= d->length)
            return yt__fail_status(YT_ERR_VALUE,
                                   "%s: indices[%lld]=%lld is out of range for dataset '%s' of "
                                   "%lld samples",
                                   op, (long long)i, (long long)indices[i], d->kind->name,
                                   (long long)d->length);
    yt_status st = d->kind->get_batch(d->ctx, indices, n, input,
                                      d->target_dtype == YT_DTYPE_NONE ? NULL : target);
    if (st != YT_OK && yt_errcode() == YT_OK)
        return yt__fail_status(st, "%s: dataset '%s' failed (%s) without a message", op,
                               d->kind->name, yt_status_name(st));
    return st;
}

/* A contiguous, untracked tensor of one sample's shape. */
static yt_tensor *
sample_tensor(const int64_t *shape, int ndim, yt_dtype dtype)
{
    yt_shape s = {.dim = ndim};
    if (ndim > 0)
        memcpy(s.sizes, shape, sizeof(int64_t) * (size_t)ndim);
    return yt__empty(&s, dtype, YT_DEVICE_CPU);
}

yt_status
yt_dataset_get(yt_dataset *d, int64_t i, yt_tensor **input, yt_tensor **target)
{
    static const char op[] = "dataset_get";
    if (input != NULL)
        *input = NULL;
    if (target != NULL)
        *target = NULL;
    if (d == NULL || input == NULL)
        return yt__fail_status(YT_ERR_VALUE, "%s: %s is NULL", op, d == NULL ? "dataset" : "input");
    int64_t at = i < 0 ? i + d->length : i;
    if (at < 0 || at >= d->length)
        return yt__fail_status(YT_ERR_VALUE,
                               "%s: index %lld is out of range for dataset '%s' of %lld samples",
                               op, (long long)i, d->kind->name, (long long)d->length);
    yt_tensor *in = sample_tensor(d->input_shape, d->input_ndim, d->input_dtype);
    yt_tensor *tg = NULL;
    if (in != NULL && d->target_dtype != YT_DTYPE_NONE)
        tg = sample_tensor(d->target_shape, d->target_ndim, d->target_dtype);
    if (in == NULL || (tg == NULL && d->target_dtype != YT_DTYPE_NONE) ||
        yt_dataset_get_batch(d, &at, 1, yt__data_ptr(in), tg ? yt__data_ptr(tg) : NULL) != YT_OK) {
        yt_release(in);
        yt_release(tg);
        return yt__last_status();
    }
    if (target == NULL) {
        yt_release(tg);
        tg = NULL;
    }
    /* Tracked only now, as results handed to the caller (a failure above must not leave a
     * released tensor in the caller's scope). */
    *input = yt__scope_track(in);
    if (*input == NULL) {
        yt_release(tg);
        return yt__last_status();
    }
    if (tg != NULL) {
        *target = yt__scope_track(tg);
        if (*target == NULL) {
            *input = NULL; /* the scope that tracked it releases it */
            return yt__last_status();
        }
    }
    return YT_OK;
}
