/* The thread count of yaten's kernels: the kernel pool (runtime/parallel.c) and the OpenMP loops
 * that remain both take it from OpenMP's per-thread setting. */
#include <omp.h>

#include "internal.h"

yt_status
yt_set_num_threads(int threads)
{
    if (threads < 1)
        return yt__fail_status(YT_ERR_VALUE, "set_num_threads: threads=%d must be at least 1",
                               threads);
    omp_set_num_threads(threads);
    return YT_OK;
}

int
yt_get_num_threads(void)
{
    return omp_get_max_threads();
}
