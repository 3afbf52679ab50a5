/* Shape helpers shared by runtime/views.c, runtime/shape_rules.c and kernels/composite/.
 * Internal; candidates for runtime/internal.h once the contract settles. */
#ifndef YT_SHAPE_UTIL_H
#define YT_SHAPE_UTIL_H

#include "internal.h"

/* Room for "[s0, s1, ...]" with YT_MAX_DIM int64 entries and the terminating NUL. */
#define YT__SIZES_BUF 192

/* Writes "[2, 3, 4]" into buf (truncated to cap). Returns buf, for use inside yt__fail calls. */
YT_INTERNAL const char *yt__format_sizes(char *buf, size_t cap, const int64_t *sizes, int dim);

/* Element count of `sizes`: false (and *out untouched) when it overflows int64. A zero anywhere
 * makes the count 0, however large the other sizes are. */
YT_INTERNAL bool yt__checked_numel(int64_t *out, const int64_t *sizes, int dim);

/* PyTorch's infer_size: `size` with at most one -1 replaced so that it holds `numel` elements.
 * Errors name `op`: "view: shape [2, 5] is invalid for input of size 12". */
YT_INTERNAL yt_status yt__infer_view_shape(yt_shape *out, const char *op, const int64_t *size,
                                           int size_len, int64_t numel);

/* PyTorch's computeStride: strides that let `self`'s elements be seen with `shape` (same numel)
 * without a copy. False when some new dimension would span two non-contiguous chunks. */
YT_INTERNAL bool yt__view_strides(int64_t *strides, const yt_tensor *self, const yt_shape *shape);

#endif
