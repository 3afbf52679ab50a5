/* dtypes, devices and scalars: names, sizes, PyTorch's type promotion and result_type, scalar
 * conversions, and the f16 / bf16 bit conversions every kernel uses. */
#include <math.h>
#include <string.h>

#include "internal.h"

static bool
valid_dtype(yt_dtype d)
{
    return (unsigned)d < YT_DTYPE_COUNT;
}

const char *
yt_dtype_name(yt_dtype dtype)
{
    static const char *const names[YT_DTYPE_COUNT] = {
        [YT_DTYPE_BOOL] = "bool", [YT_DTYPE_U8] = "u8",     [YT_DTYPE_I8] = "i8",
        [YT_DTYPE_I16] = "i16",   [YT_DTYPE_I32] = "i32",   [YT_DTYPE_I64] = "i64",
        [YT_DTYPE_F16] = "f16",   [YT_DTYPE_BF16] = "bf16", [YT_DTYPE_F32] = "f32",
        [YT_DTYPE_F64] = "f64",
    };
    if (dtype == YT_DTYPE_NONE)
        return "none";
    if (!valid_dtype(dtype))
        return "?";
    return names[dtype];
}

const unsigned char yt__dtype_bytes[YT_DTYPE_COUNT] = {
    [YT_DTYPE_BOOL] = 1, [YT_DTYPE_U8] = 1,  [YT_DTYPE_I8] = 1,  [YT_DTYPE_I16] = 2,
    [YT_DTYPE_I32] = 4,  [YT_DTYPE_I64] = 8, [YT_DTYPE_F16] = 2, [YT_DTYPE_BF16] = 2,
    [YT_DTYPE_F32] = 4,  [YT_DTYPE_F64] = 8,
};

size_t
yt_dtype_size(yt_dtype dtype)
{
    if (!valid_dtype(dtype))
        return 0;
    return yt__dtype_bytes[dtype];
}

bool
yt_dtype_is_floating(yt_dtype dtype)
{
    return dtype == YT_DTYPE_F16 || dtype == YT_DTYPE_BF16 || dtype == YT_DTYPE_F32 ||
           dtype == YT_DTYPE_F64;
}

/* PyTorch's promotion table (c10/core/ScalarType.cpp), restricted to yaten's dtypes and laid
 * out in yt_dtype order. Written out rather than computed so it can be checked against
 * PyTorch's line by line: note u8 + i8 -> i16 and f16 + bf16 -> f32. */
/* clang-format off */
#define BL  YT_DTYPE_BOOL
#define U8  YT_DTYPE_U8
#define I8  YT_DTYPE_I8
#define I16 YT_DTYPE_I16
#define I32 YT_DTYPE_I32
#define I64 YT_DTYPE_I64
#define F16 YT_DTYPE_F16
#define BF  YT_DTYPE_BF16
#define F32 YT_DTYPE_F32
#define F64 YT_DTYPE_F64
static const signed char promote_table[YT_DTYPE_COUNT][YT_DTYPE_COUNT] = {
    /*         BL   U8   I8   I16  I32  I64  F16  BF   F32  F64 */
    /* BL  */ {BL,  U8,  I8,  I16, I32, I64, F16, BF,  F32, F64},
    /* U8  */ {U8,  U8,  I16, I16, I32, I64, F16, BF,  F32, F64},
    /* I8  */ {I8,  I16, I8,  I16, I32, I64, F16, BF,  F32, F64},
    /* I16 */ {I16, I16, I16, I16, I32, I64, F16, BF,  F32, F64},
    /* I32 */ {I32, I32, I32, I32, I32, I64, F16, BF,  F32, F64},
    /* I64 */ {I64, I64, I64, I64, I64, I64, F16, BF,  F32, F64},
    /* F16 */ {F16, F16, F16, F16, F16, F16, F16, F32, F32, F64},
    /* BF  */ {BF,  BF,  BF,  BF,  BF,  BF,  F32, BF,  F32, F64},
    /* F32 */ {F32, F32, F32, F32, F32, F32, F32, F32, F32, F64},
    /* F64 */ {F64, F64, F64, F64, F64, F64, F64, F64, F64, F64},
};
#undef BL
#undef U8
#undef I8
#undef I16
#undef I32
#undef I64
#undef F16
#undef BF
#undef F32
#undef F64
/* clang-format on */

yt_dtype
yt_promote_types(yt_dtype a, yt_dtype b)
{
    if (!valid_dtype(a) || !valid_dtype(b)) {
        yt__fail(YT_ERR_DTYPE, "yt_promote_types: invalid dtype (a=%d, b=%d)", (int)a, (int)b);
        return YT_DTYPE_NONE;
    }
    return (yt_dtype)promote_table[a][b];
}

const char *
yt_device_name(yt_device device)
{
    switch (device) {
    case YT_DEVICE_CPU:
        return "cpu";
    case YT_DEVICE_CUDA:
        return "cuda";
    case YT_DEVICE_NONE:
        return "none";
    default:
        return "?";
    }
}

/* ---------------------------------------------------------------- result_type */

/* Promotion that treats NONE as "nothing yet". */
static yt_dtype
promote_skip_none(yt_dtype a, yt_dtype b)
{
    if (a == YT_DTYPE_NONE)
        return b;
    if (b == YT_DTYPE_NONE)
        return a;
    return (yt_dtype)promote_table[a][b];
}

/* PyTorch's combine_categories: a lower-priority group only matters when it is of a higher
 * category (bool < integral < floating) than the higher-priority group. */
static yt_dtype
combine_categories(yt_dtype higher, yt_dtype lower)
{
    if (yt_dtype_is_floating(higher))
        return higher;
    if (higher == YT_DTYPE_BOOL || yt_dtype_is_floating(lower))
        return promote_skip_none(higher, lower);
    return higher != YT_DTYPE_NONE ? higher : lower;
}

yt_dtype
yt__result_type(int n_tensors, yt_tensor *const *tensors, int n_scalars, const yt_scalar *scalars)
{
    /* Tensors of one dtype and no scalars promote to that dtype: most calls, decided before the
     * category walk, which was 9 % of yt_add on 1-element tensors (perf, bench/overhead's loop). */
    if (n_scalars == 0 && n_tensors > 0 && tensors[0] != NULL && valid_dtype(tensors[0]->dtype)) {
        int same = 1;
        while (same < n_tensors && tensors[same] != NULL &&
               tensors[same]->dtype == tensors[0]->dtype)
            same++;
        if (same == n_tensors)
            return tensors[0]->dtype;
    }
    yt_dtype dim_result = YT_DTYPE_NONE;
    yt_dtype zero_result = YT_DTYPE_NONE;
    yt_dtype scalar_result = YT_DTYPE_NONE;

    for (int i = 0; i < n_tensors; i++) {
        const yt_tensor *t = tensors[i];
        if (t == NULL || !valid_dtype(t->dtype))
            continue; /* an absent optional tensor takes no part */
        if (t->dim > 0)
            dim_result = promote_skip_none(dim_result, t->dtype);
        else
            zero_result = promote_skip_none(zero_result, t->dtype);
    }
    for (int i = 0; i < n_scalars; i++) {
        /* A Python float counts as the default dtype (f32), not as f64. */
        yt_dtype d;
        switch (scalars[i].kind) {
        case YT_SCALAR_BOOL:
            d = YT_DTYPE_BOOL;
            break;
        case YT_SCALAR_INT:
            d = YT_DTYPE_I64;
            break;
        default:
            d = YT_DTYPE_F32;
            break;
        }
        scalar_result = promote_skip_none(scalar_result, d);
    }
    return combine_categories(dim_result, combine_categories(zero_result, scalar_result));
}

bool
yt__can_cast(yt_dtype from, yt_dtype to)
{
    if (yt_dtype_is_floating(from) && !yt_dtype_is_floating(to))
        return false;
    if (from != YT_DTYPE_BOOL && to == YT_DTYPE_BOOL)
        return false;
    return true;
}

yt_dtype
yt__to_floating(yt_dtype d)
{
    return yt_dtype_is_floating(d) ? d : YT_DTYPE_F32;
}

double
yt__scalar_to_double(yt_scalar s)
{
    switch (s.kind) {
    case YT_SCALAR_BOOL:
        return s.v.b ? 1.0 : 0.0;
    case YT_SCALAR_INT:
        return (double)s.v.i;
    default:
        return s.v.f;
    }
}

int64_t
yt__scalar_to_i64(yt_scalar s)
{
    switch (s.kind) {
    case YT_SCALAR_BOOL:
        return s.v.b ? 1 : 0;
    case YT_SCALAR_INT:
        return s.v.i;
    default:
        break;
    }
    /* Out-of-range float -> int conversion is undefined in C: saturate, NaN becomes 0. */
    double f = s.v.f;
    if (isnan(f))
        return 0;
    if (f >= 9223372036854775808.0)
        return INT64_MAX;
    if (f < -9223372036854775808.0)
        return INT64_MIN;
    return (int64_t)f;
}

yt_dtype
yt__scalar_dtype(yt_scalar s)
{
    switch (s.kind) {
    case YT_SCALAR_BOOL:
        return YT_DTYPE_BOOL;
    case YT_SCALAR_INT:
        return YT_DTYPE_I64;
    default:
        return YT_DTYPE_F64;
    }
}

/* ---------------------------------------------------------------- f16 / bf16 */

static uint32_t
f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float
bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

float
yt__f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;

    if (exp == 0x1f) /* inf / NaN: keep the payload, quieting a NaN (as F16C and PyTorch do) */
        return bits_f32(sign | 0x7f800000u | (mant << 13) | (mant != 0 ? 0x400000u : 0));
    if (exp != 0) /* normal: rebias 15 -> 127 */
        return bits_f32(sign | ((exp + 112) << 23) | (mant << 13));
    if (mant == 0)
        return bits_f32(sign);
    /* Subnormal half (mant * 2^-24) is a normal float: shift the leading one into place. */
    uint32_t e = 113;
    while (!(mant & 0x400u)) {
        mant <<= 1;
        e--;
    }
    return bits_f32(sign | (e << 23) | ((mant & 0x3ffu) << 13));
}

uint16_t
yt__f32_to_f16(float f)
{
    uint32_t x = f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t a = x & 0x7fffffffu;

    if (a >= 0x7f800000u) {
        if (a > 0x7f800000u) /* NaN: quiet, keep the top payload bits */
            return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
        return (uint16_t)(sign | 0x7c00u);
    }
    /* 65520 is halfway between 65504 (odd mantissa) and 2^16: ties to even give inf. */
    if (a >= 0x477ff000u)
        return (uint16_t)(sign | 0x7c00u);
    if (a >= 0x38800000u) {
        /* Normal half: round the 13 dropped bits to nearest even, then rebias 127 -> 15. A
         * carry out of the mantissa correctly bumps the exponent. */
        a += 0xfffu + ((a >> 13) & 1u);
        return (uint16_t)(sign | ((a - 0x38000000u) >> 13));
    }
    /* 2^-25 is halfway between 0 and the smallest subnormal 2^-24: ties to even give 0. */
    if (a <= 0x33000000u)
        return sign;
    /* Subnormal half: mantissa = value * 2^24, rounded to nearest even. */
    uint32_t e = a >> 23;
    uint32_t m = (a & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e; /* 14..24 */
    uint32_t h = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u)))
        h++; /* may carry into the smallest normal: the encoding works out */
    return (uint16_t)(sign | h);
}

float
yt__bf16_to_f32(uint16_t h)
{
    return bits_f32((uint32_t)h << 16);
}

uint16_t
yt__f32_to_bf16(float f)
{
    uint32_t x = f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) /* NaN: quiet, and never round into inf */
        return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u); /* round to nearest even; overflow becomes inf */
    return (uint16_t)(x >> 16);
}
