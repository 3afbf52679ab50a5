/* Out-of-line helpers of the generated pointwise kernels (see pointwise_math.h). */
#include "pointwise_math.h"

/* Sets *found when the row holds a zero; rows may run on several threads, and they only ever
 * store true. */
#define DEFINE_ZERO_SCAN(T)                                                                        \
    static void zero_scan_##T(char **data, const int64_t *strides, int64_t n, const void *ctx)     \
    {                                                                                              \
        bool any = false;                                                                          \
        for (int64_t i = 0; i < n; i++)                                                            \
            any |= *(const T *)(data[1] + i * strides[1]) == 0;                                    \
        if (any)                                                                                   \
            __atomic_store_n((bool *)ctx, true, __ATOMIC_RELAXED);                                 \
    }

DEFINE_ZERO_SCAN(uint8_t)
DEFINE_ZERO_SCAN(int8_t)
DEFINE_ZERO_SCAN(int16_t)
DEFINE_ZERO_SCAN(int32_t)
DEFINE_ZERO_SCAN(int64_t)

bool
yt__pw_has_zero(yt_tensor *t)
{
    yt__loop_fn loop;
    switch (t->dtype) {
    case YT_DTYPE_U8:
        loop = zero_scan_uint8_t;
        break;
    case YT_DTYPE_I8:
        loop = zero_scan_int8_t;
        break;
    case YT_DTYPE_I16:
        loop = zero_scan_int16_t;
        break;
    case YT_DTYPE_I32:
        loop = zero_scan_int32_t;
        break;
    case YT_DTYPE_I64:
        loop = zero_scan_int64_t;
        break;
    default:
        return false;
    }
    /* The tensor is both the (unwritten) output operand and the input: same shape, no copy. */
    bool found = false;
    yt_tensor *const in[1] = {t};
    if (yt__pointwise(t, 1, in, loop, &found) != YT_OK)
        return false;
    return found;
}
