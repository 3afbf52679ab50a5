/* Kernels and composites of the end-to-end fixture ops (tests/codegen/fixture_e2e.yaml), written
 * with public ops and grad mode off. Test-only: never part of the library. */
#include <string.h>

#include "kernels.h"

/* Copies `value` (owned) into `dst`; NULL value: the error of the op that made it. */
static yt_status
store(yt_tensor *dst, yt_tensor *value)
{
    yt_status st = value == NULL ? yt_errcode() : yt__copy_into(dst, value);
    yt_release(value);
    return st;
}

yt_status
yt__cpu_eztwo(yt_tensor *a, yt_tensor *b, yt_tensor *idx, yt_tensor *self, yt_tensor *weight,
              const char *mode, const yt_scalar *lo)
{
    /* weight's gradient is grad_a as it stands: a weight that broadcast would need it summed */
    if (weight != NULL &&
        (weight->dim != self->dim ||
         memcmp(weight->sizes, self->sizes, sizeof(int64_t) * (size_t)self->dim) != 0))
        return yt__fail_status(YT_ERR_SHAPE, "eztwo: weight must have self's shape");
    bool prev = yt_set_grad_enabled(false);
    yt_tensor *t = yt_mul_scalar(self, yt_int(2));
    if (weight != NULL) {
        yt_tensor *u = yt_add(t, weight);
        yt_release(t);
        t = u;
    }
    if (lo != NULL) {
        yt_tensor *u = yt_add_scalar(t, *lo);
        yt_release(t);
        t = u;
    }
    yt_status st = store(a, t);
    if (st == YT_OK)
        st = store(b, yt_mul(self, self));
    if (st == YT_OK) { /* mode arrives validated and canonical */
        yt_tensor *zeros = yt_zeros_like(idx);
        st = store(idx, yt_add_scalar(zeros, yt_int(strcmp(mode, "cube") == 0)));
        yt_release(zeros);
    }
    yt_set_grad_enabled(prev);
    return st;
}

yt_status
yt__shape_ezcat(yt_shape *out, const char *op, yt_tensor *const *tensors, int tensors_len)
{
    out->dim = 1;
    out->sizes[0] = 0;
    for (int i = 0; i < tensors_len; i++) {
        if (tensors[i]->dim != 1)
            return yt__fail_status(YT_ERR_SHAPE, "%s: tensors[%d] must be 1-D", op, i);
        out->sizes[0] += tensors[i]->sizes[0];
    }
    return YT_OK;
}

yt_status
yt__cpu_ezcat(yt_tensor *result, yt_tensor *const *tensors, int tensors_len)
{
    bool prev = yt_set_grad_enabled(false);
    yt_status st = YT_OK;
    int64_t offset = 0;
    for (int i = 0; st == YT_OK && i < tensors_len; i++) {
        int64_t n = tensors[i]->sizes[0];
        yt_tensor *part = yt_slice_ex(result, 0, offset, offset + n, 1);
        st = part == NULL ? yt_errcode() : yt__copy_into(part, tensors[i]);
        yt_release(part);
        offset += n;
    }
    yt_set_grad_enabled(prev);
    return st;
}

int64_t
yt__composite_ezunpack(yt_tensor *grad, yt_tensor *const *tensors, int tensors_len, yt_tensor **out,
                       int64_t out_capacity)
{
    if (yt__check_capacity("ezunpack", tensors_len, out, out_capacity) != YT_OK)
        return -1;
    int64_t offset = 0;
    for (int i = 0; out != NULL && i < tensors_len; i++) {
        int64_t n = tensors[i]->sizes[0];
        out[i] = yt_slice_ex(grad, 0, offset, offset + n, 1);
        if (out[i] == NULL) {
            for (int k = 0; k < i; k++)
                yt_release(out[k]);
            return -1;
        }
        offset += n;
    }
    return tensors_len;
}

int64_t
yt__composite_ezsplit(yt_tensor *self, int64_t size, yt_tensor **out, int64_t out_capacity)
{
    int64_t rows = self->dim > 0 ? self->sizes[0] : 1;
    int64_t count = (rows + size - 1) / size;
    if (yt__check_capacity("ezsplit", count, out, out_capacity) != YT_OK)
        return -1;
    for (int64_t i = 0; out != NULL && i < count; i++) {
        int64_t end = (i + 1) * size < rows ? (i + 1) * size : rows;
        out[i] = yt_slice_ex(self, 0, i * size, end, 1);
        if (out[i] == NULL) {
            for (int64_t k = 0; k < i; k++)
                yt_release(out[k]);
            return -1;
        }
    }
    return count;
}

yt_status
yt__cpu_ezscale(yt_tensor *result, yt_tensor *self, yt_tensor *weight)
{
    bool prev = yt_set_grad_enabled(false);
    yt_status st = store(result, yt_mul(self, weight));
    yt_set_grad_enabled(prev);
    return st;
}
