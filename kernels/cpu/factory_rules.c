/* Result dtype and shape rules of the creation ops, called by the generated code. */
#include "internal.h"

yt_dtype
yt__dtype_full(yt_scalar fill_value, yt_dtype dtype)
{
    if (dtype != YT_DTYPE_NONE)
        return dtype;
    /* PyTorch infers the dtype from the fill value: full((2,), 3) is int64, True is bool. */
    switch (fill_value.kind) {
    case YT_SCALAR_BOOL:
        return YT_DTYPE_BOOL;
    case YT_SCALAR_INT:
        return YT_DTYPE_I64;
    default:
        return YT_DTYPE_F32;
    }
}

yt_dtype
yt__dtype_index(yt_dtype dtype)
{
    return dtype != YT_DTYPE_NONE ? dtype : YT_DTYPE_I64;
}

yt_status
yt__shape_vector(yt_shape *out, const char *op, int64_t n)
{
    if (n < 0)
        return yt__fail_status(YT_ERR_VALUE, "%s: the number of elements must be >= 0, got %lld",
                               op, (long long)n);
    out->dim = 1;
    out->sizes[0] = n;
    return YT_OK;
}

yt_status
yt__shape_eye(yt_shape *out, const char *op, int64_t n, int64_t m)
{
    if (n < 0 || m < 0)
        return yt__fail_status(YT_ERR_VALUE, "%s: n=%lld and m=%lld must be >= 0", op, (long long)n,
                               (long long)m);
    int64_t numel;
    if (!yt__mul_ok(&numel, n, m))
        return yt__fail_status(YT_ERR_NOMEM, "%s: %lld x %lld elements overflow int64", op,
                               (long long)n, (long long)m);
    out->dim = 2;
    out->sizes[0] = n;
    out->sizes[1] = m;
    return YT_OK;
}
