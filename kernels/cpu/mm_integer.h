/* Integer matrix products (kernels/cpu/mm_integer.c). */
#ifndef YT_KERNELS_CPU_MM_INTEGER_H
#define YT_KERNELS_CPU_MM_INTEGER_H

#include "internal.h"

/* result = beta * bias + alpha * a @ b for integer tensors, 2-D or 3-D (batched, equal batch
 * sizes); bias (NULL: beta is taken as 0) broadcasts to result's shape and is not read when
 * beta == 0. Arithmetic wraps at result's width. result may share storage with the inputs. */
YT_INTERNAL yt_status yt__mm_integer(yt_tensor *result, yt_tensor *bias, yt_tensor *a, yt_tensor *b,
                                     int64_t beta, int64_t alpha);

#endif
