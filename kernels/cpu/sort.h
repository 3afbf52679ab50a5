/* The row sorter behind argsort, sort and topk (kernels/cpu/sort.c). */
#ifndef YT_KERNELS_CPU_SORT_H
#define YT_KERNELS_CPU_SORT_H

#include "internal.h"

/* Sorts every line of `self` along `dim` (stable; NaN is larger than every number, as in
 * PyTorch) and writes the first `k` positions of each sorted line: their indices into `indices`
 * (i64) and, when `values` is not NULL, their values. Both outputs are contiguous, with self's
 * shape except size k along dim. */
YT_INTERNAL yt_status yt__sort_lines(yt_tensor *values, yt_tensor *indices, yt_tensor *self,
                                     int64_t dim, bool descending, int64_t k);

#endif
