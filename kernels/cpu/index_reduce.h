/* The index reduction shared by argmax/argmin and max.dim/min.dim (index_reduce.c). */
#ifndef YT_KERNELS_CPU_INDEX_REDUCE_H
#define YT_KERNELS_CPU_INDEX_REDUCE_H

#include "kernels.h"

/* Writes into contiguous i64 `indices` the position of the first largest (smallest when `min`)
 * element of `self` along `dim` (of the flattened tensor when YT_NONE), a NaN beating every
 * number; and, when `values` is not NULL, the element itself into contiguous `values` (any
 * dtype). Errors, named after `op`: a zero-size reduced dim. */
YT_INTERNAL yt_status yt__index_reduce(yt_tensor *values, yt_tensor *indices, yt_tensor *self,
                                       int64_t dim, bool min, const char *op);

#endif
