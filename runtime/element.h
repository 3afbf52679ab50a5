/* One element of any dtype, loaded widened and stored narrowed, the way PyTorch's casts convert:
 * values widen to int64 (bool and integers) or double (floating types); stores narrow them again:
 * integers wrap, bool is `value != 0` (NaN is true), float -> integer truncates (out of range
 * saturates, NaN gives 0, where C would leave it undefined), f16 / bf16 go through f32 with
 * round-to-nearest-even.
 *
 * Per-dtype functions (yt__load_<d>, yt__store_<d>_from_i64, yt__store_<d>_from_f64; bool is
 * spelled `bl`, since <stdbool.h> makes `bool` a macro that would expand inside the token pasting)
 * serve loops specialised by dtype (runtime/copy.c); yt__elem_* dispatch on a runtime dtype, for
 * code handling one value at a time (fill values, arange, the factory kernels). Internal. */
#ifndef YT_RUNTIME_ELEMENT_H
#define YT_RUNTIME_ELEMENT_H

#include <string.h>

#include "internal.h"

/* Float -> integer without C's undefined behaviour out of range. */
static inline int64_t
yt__f64_to_i64(double v)
{
    if (v != v)
        return 0;
    if (v >= 9223372036854775808.0)
        return INT64_MAX;
    if (v < -9223372036854775808.0)
        return INT64_MIN;
    return (int64_t)v;
}

/* yt__load_<dtype>: one element at p, widened. */
#define YT__DEFINE_LOAD(NAME, CTYPE, WIDE, EXPR)                                                   \
    static inline WIDE yt__load_##NAME(const char *p)                                              \
    {                                                                                              \
        CTYPE x;                                                                                   \
        memcpy(&x, p, sizeof x);                                                                   \
        return (WIDE)(EXPR);                                                                       \
    }
YT__DEFINE_LOAD(bl, bool, int64_t, x)
YT__DEFINE_LOAD(u8, uint8_t, int64_t, x)
YT__DEFINE_LOAD(i8, int8_t, int64_t, x)
YT__DEFINE_LOAD(i16, int16_t, int64_t, x)
YT__DEFINE_LOAD(i32, int32_t, int64_t, x)
YT__DEFINE_LOAD(i64, int64_t, int64_t, x)
YT__DEFINE_LOAD(f16, uint16_t, double, yt__f16_to_f32(x))
YT__DEFINE_LOAD(bf16, uint16_t, double, yt__bf16_to_f32(x))
YT__DEFINE_LOAD(f32, float, double, x)
YT__DEFINE_LOAD(f64, double, double, x)
#undef YT__DEFINE_LOAD

/* yt__store_<dtype>_from_<wide>: narrows one widened value into p. */
#define YT__DEFINE_STORE(NAME, CTYPE, FROM_I64, FROM_F64)                                          \
    static inline void yt__store_##NAME##_from_i64(char *p, int64_t v)                             \
    {                                                                                              \
        CTYPE x = (CTYPE)(FROM_I64);                                                               \
        memcpy(p, &x, sizeof x);                                                                   \
    }                                                                                              \
    static inline void yt__store_##NAME##_from_f64(char *p, double v)                              \
    {                                                                                              \
        CTYPE x = (CTYPE)(FROM_F64);                                                               \
        memcpy(p, &x, sizeof x);                                                                   \
    }
YT__DEFINE_STORE(bl, bool, v != 0, v != 0)
YT__DEFINE_STORE(u8, uint8_t, v, yt__f64_to_i64(v))
YT__DEFINE_STORE(i8, int8_t, v, yt__f64_to_i64(v))
YT__DEFINE_STORE(i16, int16_t, v, yt__f64_to_i64(v))
YT__DEFINE_STORE(i32, int32_t, v, yt__f64_to_i64(v))
YT__DEFINE_STORE(i64, int64_t, v, yt__f64_to_i64(v))
YT__DEFINE_STORE(f16, uint16_t, yt__f32_to_f16((float)v), yt__f32_to_f16((float)v))
YT__DEFINE_STORE(bf16, uint16_t, yt__f32_to_bf16((float)v), yt__f32_to_bf16((float)v))
YT__DEFINE_STORE(f32, float, v, v)
YT__DEFINE_STORE(f64, double, v, v)
#undef YT__DEFINE_STORE

/* Stores the integer `v` as element `i` of contiguous `data` of `dtype`. */
static inline void
yt__elem_store_i64(char *data, yt_dtype dtype, int64_t i, int64_t v)
{
    switch (dtype) {
    case YT_DTYPE_BOOL:
        yt__store_bl_from_i64(data + i * 1, v);
        break;
    case YT_DTYPE_U8:
        yt__store_u8_from_i64(data + i * 1, v);
        break;
    case YT_DTYPE_I8:
        yt__store_i8_from_i64(data + i * 1, v);
        break;
    case YT_DTYPE_I16:
        yt__store_i16_from_i64(data + i * 2, v);
        break;
    case YT_DTYPE_I32:
        yt__store_i32_from_i64(data + i * 4, v);
        break;
    case YT_DTYPE_I64:
        yt__store_i64_from_i64(data + i * 8, v);
        break;
    case YT_DTYPE_F16:
        yt__store_f16_from_i64(data + i * 2, v);
        break;
    case YT_DTYPE_BF16:
        yt__store_bf16_from_i64(data + i * 2, v);
        break;
    case YT_DTYPE_F32:
        yt__store_f32_from_i64(data + i * 4, v);
        break;
    default:
        yt__store_f64_from_i64(data + i * 8, v);
        break;
    }
}

/* Stores the double `v` as element `i` of contiguous `data` of `dtype`. */
static inline void
yt__elem_store_f64(char *data, yt_dtype dtype, int64_t i, double v)
{
    switch (dtype) {
    case YT_DTYPE_BOOL:
        yt__store_bl_from_f64(data + i * 1, v);
        break;
    case YT_DTYPE_U8:
        yt__store_u8_from_f64(data + i * 1, v);
        break;
    case YT_DTYPE_I8:
        yt__store_i8_from_f64(data + i * 1, v);
        break;
    case YT_DTYPE_I16:
        yt__store_i16_from_f64(data + i * 2, v);
        break;
    case YT_DTYPE_I32:
        yt__store_i32_from_f64(data + i * 4, v);
        break;
    case YT_DTYPE_I64:
        yt__store_i64_from_f64(data + i * 8, v);
        break;
    case YT_DTYPE_F16:
        yt__store_f16_from_f64(data + i * 2, v);
        break;
    case YT_DTYPE_BF16:
        yt__store_bf16_from_f64(data + i * 2, v);
        break;
    case YT_DTYPE_F32:
        yt__store_f32_from_f64(data + i * 4, v);
        break;
    default:
        yt__store_f64_from_f64(data + i * 8, v);
        break;
    }
}

#endif
