/* Result shapes and dtypes that ops.yaml names by function (shape: yt__shape_reduce(...),
 * result_dtype: yt__dtype_sum(...)), plus the size helpers declared in internal.h. Called by generated
 * code after the arguments have been checked and dims wrapped. */
#include <math.h>
#include <stdio.h>

#include "internal.h"

const char *
yt__format_sizes(char *buf, size_t cap, const int64_t *sizes, int dim)
{
    if (cap == 0)
        return buf;
    size_t used = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < dim && used < cap; i++)
        used +=
            (size_t)snprintf(buf + used, cap - used, i ? ", %lld" : "%lld", (long long)sizes[i]);
    if (used < cap)
        snprintf(buf + used, cap - used, "]");
    return buf;
}

yt_status
yt__check_same_shape(const char *op, const char *name, const yt_tensor *t, const char *ref_name,
                     const yt_tensor *ref)
{
    bool same = t->dim == ref->dim;
    for (int i = 0; same && i < ref->dim; i++)
        same = t->sizes[i] == ref->sizes[i];
    if (same)
        return YT_OK;
    char a[YT__SIZES_BUF], b[YT__SIZES_BUF];
    return yt__fail_status(YT_ERR_SHAPE, "%s: %s has shape %s but %s has shape %s", op, name,
                           yt__format_sizes(a, sizeof a, t->sizes, t->dim), ref_name,
                           yt__format_sizes(b, sizeof b, ref->sizes, ref->dim));
}

bool
yt__checked_numel(int64_t *out, const int64_t *sizes, int dim)
{
    /* A zero wins over an overflow elsewhere: [2^40, 2^40, 0] holds no elements. */
    for (int i = 0; i < dim; i++) {
        if (sizes[i] == 0) {
            *out = 0;
            return true;
        }
    }
    int64_t n = 1;
    for (int i = 0; i < dim; i++)
        if (!yt__mul_ok(&n, n, sizes[i]))
            return false;
    *out = n;
    return true;
}

yt_status
yt__shape_reduce(yt_shape *out, const char *op, yt_tensor *self, const int64_t *dim, int dim_len,
                 bool keepdim)
{
    if (dim_len < 0 || dim_len > YT_MAX_DIM || (dim == NULL && dim_len > 0))
        return yt__fail_status(YT_ERR_VALUE, "%s: dim has %d entries (expected 0..%d)", op, dim_len,
                               YT_MAX_DIM);
    bool reduced[YT_MAX_DIM] = {false};
    /* A 0-d self accepts dim 0 (wrapped from 0 or -1), as in PyTorch. */
    int limit = self->dim > 0 ? self->dim : 1;
    for (int i = 0; i < dim_len; i++) {
        if (dim[i] < 0 || dim[i] >= limit)
            return yt__fail_status(YT_ERR_VALUE, "%s: dim[%d]=%lld is out of range for a %d-D self",
                                   op, i, (long long)dim[i], self->dim);
        if (self->dim > 0)
            reduced[dim[i]] = true;
    }
    out->dim = 0;
    for (int i = 0; i < self->dim; i++) {
        bool r = dim_len == 0 || reduced[i]; /* an empty list reduces every dim */
        if (!r)
            out->sizes[out->dim++] = self->sizes[i];
        else if (keepdim)
            out->sizes[out->dim++] = 1;
    }
    return YT_OK;
}

yt_status
yt__shape_from_sizes(yt_shape *out, const char *op, const char *arg, const int64_t *size,
                     int size_len)
{
    if (size_len < 0 || size_len > YT_MAX_DIM || (size == NULL && size_len > 0))
        return yt__fail_status(YT_ERR_VALUE, "%s: %s has %d entries (expected 0..%d)", op, arg,
                               size_len, YT_MAX_DIM);
    for (int i = 0; i < size_len; i++) {
        if (size[i] < 0)
            return yt__fail_status(YT_ERR_VALUE, "%s: %s[%d]=%lld is negative", op, arg, i,
                                   (long long)size[i]);
    }
    int64_t numel;
    if (!yt__checked_numel(&numel, size, size_len)) {
        char buf[YT__SIZES_BUF];
        return yt__fail_status(YT_ERR_NOMEM, "%s: %s %s has too many elements (overflows int64)",
                               op, arg, yt__format_sizes(buf, sizeof buf, size, size_len));
    }
    out->dim = size_len;
    for (int i = 0; i < size_len; i++)
        out->sizes[i] = size[i];
    return YT_OK;
}

/* Exact length for integer bounds: |end - start| fits in uint64 once the signs agree. */
static yt_status
arange_length_int(int64_t *len, const char *op, int64_t start, int64_t end, int64_t step)
{
    if (step == 0)
        return yt__fail_status(YT_ERR_VALUE, "%s: step must be nonzero", op);
    if ((step > 0 && end < start) || (step < 0 && end > start))
        return yt__fail_status(YT_ERR_VALUE,
                               "%s: upper bound and larger bound inconsistent with step sign "
                               "(start=%lld, end=%lld, step=%lld)",
                               op, (long long)start, (long long)end, (long long)step);
    uint64_t span = step > 0 ? (uint64_t)end - (uint64_t)start : (uint64_t)start - (uint64_t)end;
    uint64_t ustep = step > 0 ? (uint64_t)step : 0u - (uint64_t)step;
    uint64_t n = span / ustep + (span % ustep != 0);
    if (n > (uint64_t)INT64_MAX)
        return yt__fail_status(YT_ERR_NOMEM, "%s: arange(%lld, %lld, %lld) has too many elements",
                               op, (long long)start, (long long)end, (long long)step);
    *len = (int64_t)n;
    return YT_OK;
}

/* Length for floating bounds, computed in double as PyTorch does: ceil((end - start) / step). */
static yt_status
arange_length_double(int64_t *len, const char *op, double start, double end, double step)
{
    if (!isfinite(start) || !isfinite(end))
        return yt__fail_status(YT_ERR_VALUE, "%s: unsupported range: %g -> %g", op, start, end);
    if (!(step > 0 || step < 0)) /* also refuses NaN */
        return yt__fail_status(YT_ERR_VALUE, "%s: step must be nonzero, got step=%g", op, step);
    if ((step > 0 && end < start) || (step < 0 && end > start))
        return yt__fail_status(YT_ERR_VALUE,
                               "%s: upper bound and larger bound inconsistent with step sign "
                               "(start=%g, end=%g, step=%g)",
                               op, start, end, step);
    double n = ceil((end - start) / step);
    /* 2^63 is exactly representable; anything at or above it (or NaN, from inf / inf) overflows. */
    if (!(n >= 0 && n < 9223372036854775808.0))
        return yt__fail_status(YT_ERR_NOMEM, "%s: arange(%g, %g, %g) has too many elements", op,
                               start, end, step);
    *len = (int64_t)n;
    return YT_OK;
}

/* A float bound truncated toward zero for an integral arange; false when it is not finite or
 * does not fit int64. */
static bool
truncate_bound(int64_t *out, yt_scalar s)
{
    if (s.kind != YT_SCALAR_FLOAT) {
        *out = yt__scalar_to_i64(s);
        return true;
    }
    double t = trunc(s.v.f);
    if (!(t >= -9223372036854775808.0 && t < 9223372036854775808.0))
        return false;
    *out = (int64_t)t;
    return true;
}

yt_status
yt__shape_arange(yt_shape *out, const char *op, yt_scalar start, yt_scalar end, yt_scalar step,
                 yt_dtype dtype)
{
    int64_t len = 0;
    yt_status st;
    /* An integral result counts in integers, with float bounds truncated as PyTorch does:
     * arange(0, 5.5, 1.5, dtype=i64) is [0, 1, 2, 3, 4]. */
    bool integral = dtype != YT_DTYPE_NONE
                        ? !yt_dtype_is_floating(dtype)
                        : start.kind != YT_SCALAR_FLOAT && end.kind != YT_SCALAR_FLOAT &&
                              step.kind != YT_SCALAR_FLOAT;
    if (integral) {
        int64_t a, b, c;
        if (!truncate_bound(&a, start) || !truncate_bound(&b, end) || !truncate_bound(&c, step))
            return yt__fail_status(YT_ERR_VALUE,
                                   "%s: start=%g, end=%g and step=%g must be finite and fit in "
                                   "int64 for an integral result",
                                   op, yt__scalar_to_double(start), yt__scalar_to_double(end),
                                   yt__scalar_to_double(step));
        st = arange_length_int(&len, op, a, b, c);
    } else {
        st = arange_length_double(&len, op, yt__scalar_to_double(start), yt__scalar_to_double(end),
                                  yt__scalar_to_double(step));
    }
    if (st != YT_OK)
        return st;
    out->dim = 1;
    out->sizes[0] = len;
    return YT_OK;
}

yt_dtype
yt__dtype_sum(yt_tensor *self, yt_dtype dtype)
{
    if (dtype != YT_DTYPE_NONE)
        return dtype;
    /* Integral and bool sums accumulate in i64 so they do not wrap, as in PyTorch. */
    return yt_dtype_is_floating(self->dtype) ? self->dtype : YT_DTYPE_I64;
}

yt_dtype
yt__dtype_factory(yt_dtype dtype)
{
    return dtype != YT_DTYPE_NONE ? dtype : YT_DTYPE_F32;
}

yt_dtype
yt__dtype_arange(yt_scalar start, yt_scalar end, yt_scalar step, yt_dtype dtype)
{
    if (dtype != YT_DTYPE_NONE)
        return dtype;
    bool integral = start.kind != YT_SCALAR_FLOAT && end.kind != YT_SCALAR_FLOAT &&
                    step.kind != YT_SCALAR_FLOAT;
    return integral ? YT_DTYPE_I64 : YT_DTYPE_F32;
}

yt_status
yt__shape_reduce_dim(yt_shape *out, const char *op, yt_tensor *self, int64_t dim, bool keepdim)
{
    if (dim == YT_NONE) { /* every dim, as if self were flattened */
        out->dim = keepdim ? self->dim : 0;
        for (int i = 0; i < out->dim; i++)
            out->sizes[i] = 1;
        return YT_OK;
    }
    if (yt__wrap_dim(&dim, self->dim, op, "dim") != YT_OK)
        return yt_errcode();
    return yt__shape_reduce(out, op, self, &dim, self->dim > 0 ? 1 : 0, keepdim);
}

yt_dtype
yt__dtype_logical(yt_tensor *self)
{
    return self->dtype == YT_DTYPE_U8 ? YT_DTYPE_U8 : YT_DTYPE_BOOL;
}
