/* Element stores shared by the factory and random kernels (kernels/cpu/factory.c, random.c,
 * dropout.c). Kernel-private: not part of the internal contract. */
#ifndef YT_KERNELS_CPU_FACTORY_H
#define YT_KERNELS_CPU_FACTORY_H

#include "element.h"
#include "internal.h"

/* Writes `v` as element `i` of contiguous `data` of `dtype`: floating dtypes round to nearest,
 * integral ones truncate toward zero (the caller keeps `v` in range), bool is v != 0. */
static inline void
yt__store_double(char *data, yt_dtype dtype, int64_t i, double v)
{
    yt__elem_store_f64(data, dtype, i, v);
}

/* Writes the integer `v` as element `i` of contiguous `data` (exact for integral dtypes; the
 * caller keeps `v` in range; floating dtypes get (double)v rounded). */
static inline void
yt__store_int(char *data, yt_dtype dtype, int64_t i, int64_t v)
{
    if (dtype == YT_DTYPE_F16 || dtype == YT_DTYPE_BF16 || dtype == YT_DTYPE_F32 ||
        dtype == YT_DTYPE_F64)
        yt__elem_store_f64(data, dtype, i, (double)v);
    else
        yt__elem_store_i64(data, dtype, i, v);
}

/* Element `i` of contiguous `data` as a double. */
static inline double
yt__load_double(const char *data, yt_dtype dtype, int64_t i)
{
    switch (dtype) {
    case YT_DTYPE_BOOL:
        return ((const bool *)data)[i];
    case YT_DTYPE_U8:
        return ((const uint8_t *)data)[i];
    case YT_DTYPE_I8:
        return ((const int8_t *)data)[i];
    case YT_DTYPE_I16:
        return ((const int16_t *)data)[i];
    case YT_DTYPE_I32:
        return ((const int32_t *)data)[i];
    case YT_DTYPE_I64:
        return (double)((const int64_t *)data)[i];
    case YT_DTYPE_F16:
        return yt__f16_to_f32(((const uint16_t *)data)[i]);
    case YT_DTYPE_BF16:
        return yt__bf16_to_f32(((const uint16_t *)data)[i]);
    case YT_DTYPE_F32:
        return ((const float *)data)[i];
    default:
        return ((const double *)data)[i];
    }
}

#endif
