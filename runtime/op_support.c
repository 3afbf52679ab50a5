/* Small helpers the generated op functions call: NULL propagation, kernel-input casts, out=
 * validation, and snapshots for in-place autograd. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

yt_tensor *
yt__null_arg(const char *op, const char *arg)
{
    if (yt_errcode() == YT_OK)
        yt__fail(YT_ERR_VALUE, "%s: %s is NULL", op, arg);
    return NULL;
}

yt_status
yt__null_status(const char *op, const char *arg)
{
    yt__null_arg(op, arg);
    return yt_errcode();
}

yt_tensor *
yt__null_elem(const char *op, const char *arg, int index)
{
    if (yt_errcode() == YT_OK)
        yt__fail(YT_ERR_VALUE, "%s: %s[%d] is NULL", op, arg, index);
    return NULL;
}

yt_status
yt__null_elem_status(const char *op, const char *arg, int index)
{
    yt__null_elem(op, arg, index);
    return yt_errcode();
}

yt_status
yt__last_status(void)
{
    yt_status st = yt_errcode();
    return st != YT_OK ? st : YT_ERR_INTERNAL;
}

yt_tensor *
yt__cast_copy(yt_tensor *t, yt_dtype dtype)
{
    yt_shape shape;
    yt__shape_of(&shape, t);
    yt_tensor *copy = yt__empty(&shape, dtype, t->device);
    if (copy != NULL && yt__copy_into(copy, t) != YT_OK) {
        yt_release(copy);
        return NULL;
    }
    return copy;
}

void
yt__release_cast(yt_tensor *cast, yt_tensor *orig)
{
    if (cast != orig)
        yt_release(cast);
}

yt_status
yt__check_out(yt_tensor *dst, const yt_shape *shape, yt_dtype dtype, yt_device device,
              const char *op, const char *arg)
{
    bool same = dst->dim == shape->dim;
    for (int i = 0; same && i < shape->dim; i++)
        same = dst->sizes[i] == shape->sizes[i];
    if (!same) {
        char have[160], want[160];
        yt__format_sizes(have, sizeof have, dst->sizes, dst->dim);
        yt__format_sizes(want, sizeof want, shape->sizes, shape->dim);
        return yt__fail_status(YT_ERR_SHAPE, "%s: %s has shape %s but the result has shape %s", op,
                               arg, have, want);
    }
    if (dst->device != device)
        return yt__fail_status(YT_ERR_DEVICE, "%s: %s is on %s but the result is on %s", op, arg,
                               yt_device_name(dst->device), yt_device_name(device));
    if (!yt__can_cast(dtype, dst->dtype))
        return yt__fail_status(YT_ERR_DTYPE, "%s: result type %s can't be cast to %s's dtype %s",
                               op, yt_dtype_name(dtype), arg, yt_dtype_name(dst->dtype));
    for (int i = 0; i < dst->dim; i++)
        if (dst->strides[i] == 0 && dst->sizes[i] > 1)
            return yt__fail_status(YT_ERR_VALUE,
                                   "%s: %s has several elements sharing one memory location "
                                   "(an expanded view); write into a contiguous copy instead",
                                   op, arg);
    return YT_OK;
}

/* Bytes [*lo, *hi) of t's storage that its elements occupy (numel > 0). */
static void
byte_span(const yt_tensor *t, int64_t *lo, int64_t *hi)
{
    int64_t first, last;
    yt__element_span(t, &first, &last);
    const int64_t es = (int64_t)yt_dtype_size(t->dtype);
    *lo = first * es;
    *hi = (last + 1) * es;
}

/* Whether `in`, broadcast to dst's shape, has dst's element at every index. */
static bool
same_elements(const yt_tensor *dst, const yt_tensor *in)
{
    if (in->dtype != dst->dtype || in->offset != dst->offset || in->dim > dst->dim)
        return false;
    for (int i = 0; i < dst->dim; i++) {
        if (dst->sizes[i] == 1)
            continue;
        const int j = i - (dst->dim - in->dim);
        const int64_t stride = j >= 0 && in->sizes[j] == dst->sizes[i] ? in->strides[j] : 0;
        if (stride != dst->strides[i])
            return false;
    }
    return true;
}

bool
yt__writes_over_inputs(const yt_tensor *dst, int64_t n, yt_tensor *const *inputs, bool elementwise)
{
    if (dst->numel == 0)
        return false;
    int64_t lo, hi;
    byte_span(dst, &lo, &hi);
    for (int64_t k = 0; k < n; k++) {
        const yt_tensor *in = inputs[k];
        if (in == NULL || in->storage != dst->storage || in->numel == 0)
            continue;
        if (elementwise && same_elements(dst, in))
            continue;
        int64_t in_lo, in_hi;
        byte_span(in, &in_lo, &in_hi);
        if (in_lo < hi && lo < in_hi)
            return true;
    }
    return false;
}

yt_tensor *
yt__snapshot(yt_tensor *t)
{
    yt_tensor *copy = yt__cast_copy(t, t->dtype);
    if (copy == NULL)
        return NULL;
    copy->requires_grad = t->requires_grad;
    copy->output_nr = t->output_nr;
    copy->grad_fn = t->grad_fn;
    if (copy->grad_fn != NULL)
        yt__node_retain(copy->grad_fn);
    return copy;
}
