/* Shared helpers of the indexing kernels (see index_util.h). */
#include <string.h>

#include "index_util.h"

yt_tensor *
yt__index_i64(yt_tensor *index)
{
    if (index->dtype == YT_DTYPE_I64 && index->is_contiguous)
        return yt_retain(index);
    return yt__cast_copy(index, YT_DTYPE_I64);
}

yt_status
yt__check_index_range(const char *op, const int64_t *idx, int64_t n, int64_t size, int64_t dim)
{
    for (int64_t i = 0; i < n; i++)
        if ((uint64_t)idx[i] >= (uint64_t)size)
            return yt__fail_status(YT_ERR_VALUE,
                                   "%s: index %lld is out of bounds for dimension %lld with size "
                                   "%lld",
                                   op, (long long)idx[i], (long long)dim, (long long)size);
    return YT_OK;
}

yt_status
yt__scalar_to_bytes(yt_scalar value, yt_dtype dtype, char *out)
{
    yt_shape scalar = {.dim = 0};
    yt_dtype from = yt__scalar_dtype(value);
    yt_tensor *src = yt__empty(&scalar, from, YT_DEVICE_CPU);
    yt_tensor *dst = yt__empty(&scalar, dtype, YT_DEVICE_CPU);
    yt_status status = src == NULL || dst == NULL ? yt__last_status() : YT_OK;
    if (status == YT_OK) {
        char *p = yt__data_ptr(src);
        if (from == YT_DTYPE_F64) {
            double v = yt__scalar_to_double(value);
            memcpy(p, &v, sizeof v);
        } else if (from == YT_DTYPE_I64) {
            int64_t v = yt__scalar_to_i64(value);
            memcpy(p, &v, sizeof v);
        } else {
            bool v = yt__scalar_to_i64(value) != 0;
            memcpy(p, &v, sizeof v);
        }
        status = yt__copy_into(dst, src);
    }
    if (status == YT_OK)
        memcpy(out, yt__data_ptr(dst), yt_dtype_size(dtype));
    yt_release(src);
    yt_release(dst);
    return status;
}

#define ADD_LOOP(CTYPE, EXPR)                                                                      \
    do {                                                                                           \
        for (int64_t i = 0; i < n; i++) {                                                          \
            CTYPE *d = (CTYPE *)dst + i * dst_step;                                                \
            CTYPE s = ((const CTYPE *)src)[i * src_step];                                          \
            *d = EXPR;                                                                             \
        }                                                                                          \
    } while (0)

#define ADD_INT(CTYPE, UTYPE) ADD_LOOP(CTYPE, (CTYPE)((UTYPE)*d + (UTYPE)s * (UTYPE)ai))

void
yt__add_scaled(yt_dtype dtype, char *dst, int64_t dst_step, const char *src, int64_t src_step,
               int64_t n, yt_scalar alpha)
{
    double af = yt__scalar_to_double(alpha);
    int64_t ai = yt__scalar_to_i64(alpha);
    switch (dtype) {
    case YT_DTYPE_F64:
        if (af == 1.0)
            ADD_LOOP(double, *d + s);
        else
            ADD_LOOP(double, *d + af * s);
        break;
    case YT_DTYPE_F32: {
        float a = (float)af;
        if (af == 1.0)
            ADD_LOOP(float, *d + s);
        else
            ADD_LOOP(float, *d + a * s);
        break;
    }
    case YT_DTYPE_F16:
        ADD_LOOP(uint16_t, yt__f32_to_f16(yt__f16_to_f32(*d) + (float)af * yt__f16_to_f32(s)));
        break;
    case YT_DTYPE_BF16:
        ADD_LOOP(uint16_t, yt__f32_to_bf16(yt__bf16_to_f32(*d) + (float)af * yt__bf16_to_f32(s)));
        break;
    case YT_DTYPE_I64:
        ADD_INT(int64_t, uint64_t);
        break;
    case YT_DTYPE_I32:
        ADD_INT(int32_t, uint32_t);
        break;
    case YT_DTYPE_I16:
        ADD_INT(int16_t, uint16_t);
        break;
    case YT_DTYPE_I8:
        ADD_INT(int8_t, uint8_t);
        break;
    case YT_DTYPE_U8:
        ADD_INT(uint8_t, uint8_t);
        break;
    default: /* bool: or, when alpha is true */
        ADD_LOOP(bool, *d || (s && af != 0.0));
        break;
    }
}
