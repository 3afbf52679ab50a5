/* The benchmarks' clock: seconds on CLOCK_MONOTONIC, as a double. */
#ifndef YT_BENCH_CLOCK_H
#define YT_BENCH_CLOCK_H

#include <time.h>

static inline double
bench_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
