/* How many threads a small-path GEMM uses: from its size, and from what parallel products have
 * recently cost the calling thread.
 *
 * On a machine of its own a second thread starts within a microsecond or two and pays from
 * about 96^3 multiply-adds. With OMP_WAIT_POLICY=PASSIVE each region wakes a sleeping thread
 * (tens of microseconds in a VM), and on a shared, oversubscribed machine (other processes on
 * the other cores) a thread may start, or be preempted, milliseconds late while the product
 * waits for it: two threads then lose badly to one. So the driver reports, after each parallel
 * product, what the split cost the calling thread: starting the region, and waiting for the
 * others once its own share was done. A product runs in parallel only when the time a split
 * saves (estimated from its size) is at least twice the second largest of the last 8 such
 * costs; a cost older than 100 ms counts as an idle machine's, so a burst of stalls does not
 * keep products on one thread after the machine has quietened down. Every 10 ms a refused
 * product runs in parallel anyway, so that a quieter machine is noticed sooner (at the cost of
 * one possible stall per 10 ms). Thread-safe (relaxed atomics; a lost update only delays the
 * adaptation). */
#ifndef YT_KERNELS_CPU_GEMM_THREADS_H
#define YT_KERNELS_CPU_GEMM_THREADS_H

#include "internal.h"

/* Threads for a product of `macs` multiply-adds on the small path: 1, or `max_threads`. */
YT_INTERNAL int yt__gemm_threads(double macs, int max_threads, bool f64);

/* The time, in ns, that splitting a product of `macs` multiply-adds over `threads` is taken to
 * save the calling thread on this CPU (from the small path's instruction set). */
YT_INTERNAL double yt__gemm_split_saving_ns(double macs, int threads, bool f64);

/* Reports what a parallel product cost its calling thread beyond its own share: `wait_ns`. */
YT_INTERNAL void yt__gemm_threads_observe(int64_t wait_ns);

/* For tests: 1 splits every product over max_threads (whatever its size), 0 (the default)
 * decides as above, -1 decides as above without probes. Not for concurrent use with GEMMs. */
YT_INTERNAL void yt__gemm_threads_set_always(int always);

/* Monotonic time in nanoseconds. */
YT_INTERNAL int64_t yt__gemm_now_ns(void);

#endif
