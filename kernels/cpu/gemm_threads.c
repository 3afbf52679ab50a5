/* The small-path GEMM's thread count (see gemm_threads.h). */
#include <time.h>

#include "gemm_threads.h"
#include "gemm_small.h"

/* Below this many multiply-adds one thread is always used: even an idle second thread costs
 * about as much as it saves. Overridable at build time for threshold experiments. */
#ifndef PARALLEL_MACS
#define PARALLEL_MACS (96.0 * 96.0 * 96.0)
#endif

#define WAITS 8
/* What an idle machine shows; also what a wait older than STALE_NS counts as, so that a burst
 * of stalls (another process took the core for a while) does not keep products on one thread
 * long after the machine has quietened down. */
#define IDLE_WAIT 1500
#define STALE_NS  100000000
/* The recent waits, in ns, and when each was seen. */
static int64_t waits[WAITS] = {IDLE_WAIT, IDLE_WAIT, IDLE_WAIT, IDLE_WAIT,
                               IDLE_WAIT, IDLE_WAIT, IDLE_WAIT, IDLE_WAIT};
static int64_t seen_at[WAITS];
static unsigned next_wait;
/* When a refused product last ran in parallel anyway, to measure the waits again. */
#define PROBE_NS 10000000
static int64_t last_probe;
static int always;

int64_t
yt__gemm_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

double
yt__gemm_split_saving_ns(double macs, int threads, bool f64)
{
    /* Multiply-adds per ns of one thread, on the high side (so the saving is not overrated):
     * f32 AVX-512 runs about 120, AVX2 half that, f64 half again. */
    double rate = (yt__cpu_isa() == YT__ISA_AVX512 ? 130.0 : 65.0) * (f64 ? 0.5 : 1.0);
    return macs / rate * (1.0 - 1.0 / threads);
}

int
yt__gemm_threads(double macs, int max_threads, bool f64)
{
    if (max_threads <= 1)
        return 1;
    int mode = __atomic_load_n(&always, __ATOMIC_RELAXED);
    if (mode == 1)
        return max_threads;
    if (macs < PARALLEL_MACS)
        return 1;
    /* the second largest of the recent costs: one spike is ignored, two are not (a median let
     * 3 stalls of a millisecond in 8 products of 130 us through) */
    int64_t w[WAITS], now = mode == 0 ? yt__gemm_now_ns() : 0;
    for (int i = 0; i < WAITS; i++) {
        int64_t v = __atomic_load_n(&waits[i], __ATOMIC_RELAXED);
        if (mode == 0 && now - __atomic_load_n(&seen_at[i], __ATOMIC_RELAXED) > STALE_NS)
            v = v < IDLE_WAIT ? v : IDLE_WAIT;
        int j = i;
        for (; j > 0 && w[j - 1] > v; j--)
            w[j] = w[j - 1];
        w[j] = v;
    }
    int64_t wait = w[WAITS - 2];
    if (yt__gemm_split_saving_ns(macs, max_threads, f64) >= 2.0 * (double)wait)
        return max_threads;
    /* a probe, at most one per PROBE_NS: it may stall on a busy machine */
    int64_t last = __atomic_load_n(&last_probe, __ATOMIC_RELAXED);
    if (mode == 0 && now - last >= PROBE_NS &&
        __atomic_compare_exchange_n(&last_probe, &last, now, false, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED))
        return max_threads;
    return 1;
}

void
yt__gemm_threads_observe(int64_t wait_ns)
{
    unsigned slot = __atomic_fetch_add(&next_wait, 1, __ATOMIC_RELAXED) % WAITS;
    __atomic_store_n(&waits[slot], wait_ns > 0 ? wait_ns : 0, __ATOMIC_RELAXED);
    __atomic_store_n(&seen_at[slot], yt__gemm_now_ns(), __ATOMIC_RELAXED);
}

void
yt__gemm_threads_set_always(int value)
{
    __atomic_store_n(&always, value, __ATOMIC_RELAXED);
}
