/* Helpers shared by the indexing kernels (index_select/add/copy, gather/scatter, embedding):
 * index tensors as contiguous i64, range checks with PyTorch-style messages, and typed
 * accumulation for the ops that add. Kernel-private: not part of internal.h. */
#ifndef YT_KERNELS_CPU_INDEX_UTIL_H
#define YT_KERNELS_CPU_INDEX_UTIL_H

#include "internal.h"

/* `index` as a contiguous i64 tensor (a new reference; `index` itself when it already is). */
YT_INTERNAL yt_tensor *yt__index_i64(yt_tensor *index);

/* Checks that every one of the n values lies in 0..size-1; the first bad one is reported as
 * "gather: index 7 is out of bounds for dimension 1 with size 5". */
YT_INTERNAL yt_status yt__check_index_range(const char *op, const int64_t *idx, int64_t n,
                                            int64_t size, int64_t dim);

/* dst[i * dst_step] += alpha * src[i * src_step] for i < n, in `dtype` (steps in elements).
 * bool adds as logical or; integers wrap; f16/bf16 add in f32. */
YT_INTERNAL void yt__add_scaled(yt_dtype dtype, char *dst, int64_t dst_step, const char *src,
                                int64_t src_step, int64_t n, yt_scalar alpha);

/* `value` converted to `dtype` (PyTorch's cast rules), written as one element into out[0..7]. */
YT_INTERNAL yt_status yt__scalar_to_bytes(yt_scalar value, yt_dtype dtype, char *out);

/* Copies one element of `size` bytes. */
static inline void
yt__copy_elem(char *dst, const char *src, size_t size)
{
    switch (size) {
    case 1:
        *dst = *src;
        break;
    case 2:
        __builtin_memcpy(dst, src, 2);
        break;
    case 4:
        __builtin_memcpy(dst, src, 4);
        break;
    default:
        __builtin_memcpy(dst, src, 8);
        break;
    }
}

#endif
