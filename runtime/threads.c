/* The thread count of yaten's kernels (the kernel pool, runtime/parallel.c): one setting for the
 * whole process, like PyTorch's torch.set_num_threads. Until yt_set_num_threads is called it is
 * OMP_NUM_THREADS when that holds a valid count (PyTorch and the bench scripts read it too), else
 * the number of CPUs this process may run on. */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

/* 0 until first read or set */
static _Atomic int num_threads;

/* The leading count of OMP_NUM_THREADS ("4", or "4,2" as OpenMP's per-level list), or 0 when it
 * is unset or not a positive integer. */
static int
env_threads(void)
{
    const char *s = getenv("OMP_NUM_THREADS");
    if (s == NULL)
        return 0;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    while (*end == ' ' || *end == '\t')
        end++;
    if (end == s || errno != 0 || (*end != '\0' && *end != ',') || v < 1 || v > 1024)
        return 0;
    return (int)v;
}

static int
cpu_threads(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

yt_status
yt_set_num_threads(int threads)
{
    if (threads < 1)
        return yt__fail_status(YT_ERR_VALUE, "set_num_threads: threads=%d must be at least 1",
                               threads);
    atomic_store_explicit(&num_threads, threads, memory_order_relaxed);
    return YT_OK;
}

int
yt_get_num_threads(void)
{
    int n = atomic_load_explicit(&num_threads, memory_order_relaxed);
    if (n > 0)
        return n;
    int dflt = env_threads();
    if (dflt == 0)
        dflt = cpu_threads();
    /* a concurrent yt_set_num_threads wins over the default */
    atomic_compare_exchange_strong_explicit(&num_threads, &n, dflt, memory_order_relaxed,
                                            memory_order_relaxed);
    return atomic_load_explicit(&num_threads, memory_order_relaxed);
}
