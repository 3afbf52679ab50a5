/* yaten's own thread pool for kernels: a parallel loop that never makes the caller wait for a
 * thread that has not started.
 *
 * A job is a fixed number of chunks (the kernel decides them, so results never depend on which
 * thread ran what). The calling thread publishes the job and starts claiming chunks at once; the
 * pool's workers claim the others as they arrive. A worker that is asleep, descheduled by
 * another process or slow to wake simply finds no chunk left: the caller only ever waits for
 * chunks a worker has already claimed. So on a shared machine two threads cost at most a chunk's
 * delay over one, while on a quiet one they split the work.
 *
 * After a job a worker spins for a while (YT_SPIN_US microseconds, default 300) before it sleeps
 * on a futex: the kernels of a training step follow each other within microseconds, and waking a
 * sleeping thread costs tens of microseconds in a VM. The caller wakes sleepers only for jobs
 * worth it (see yt__parallel_threads).
 *
 * Thread count: yt_get_num_threads() (process-wide). One caller uses the pool at a time; a
 * concurrent caller, or a call from inside a chunk, runs its chunks itself. This is yaten's only
 * thread pool: the library starts no OpenMP threads (it is built with -fopenmp-simd) and links
 * a BLIS that starts none either. */
#ifndef YT_RUNTIME_PARALLEL_H
#define YT_RUNTIME_PARALLEL_H

#include "internal.h"

typedef void (*yt__chunk_fn)(void *ctx, int64_t chunk);

/* Runs fn(ctx, c) for every c in [0, n_chunks) on up to `threads` threads (the caller included),
 * and returns when all have run: what splitting cost the caller, in nanoseconds (the job's time
 * beyond running all the chunks itself at its own pace; 0 when it gained or ran alone). `fn` must not fail through the thread-local error state
 * (record failures in ctx). n_chunks <= 65535. */
YT_INTERNAL int64_t yt__parallel_run(int64_t n_chunks, int threads, yt__chunk_fn fn, void *ctx);

/* Inside a chunk of a job run on `threads` threads: a number in [0, threads) that no chunk
 * running at the same time has, to pick per-thread scratch (never to decide a result). 0
 * outside a chunk. */
YT_INTERNAL int yt__parallel_slot(void);

/* How many threads a job of about `ns` nanoseconds of one thread's work should use: 1 below a
 * couple of microseconds; `max_threads` when the pool's workers are awake (spinning) or the job
 * is long enough to pay for waking them; 1 while recent jobs show workers that arrive late
 * (another process holds the other cores). */
YT_INTERNAL int yt__parallel_threads(double ns, int max_threads);

/* Parts to cut a job of about `ns` nanoseconds of one thread's work into, when the cut itself
 * changes the result (partial sums combined in part order): max_threads when the job is long
 * enough for the pool to wake sleeping workers for it, else 1. It follows the size and the
 * configured threads only, never the load, so the same program gives the same bits; a cut below
 * that size would mostly run on the caller alone, which then pays for the parts and their
 * combining and gains nothing (sum over dim 0 of [64, 1024] f32: 7.6 us at 1 thread, 9.2 us at
 * 2 with the workers asleep). */
YT_INTERNAL int yt__parallel_cut(double ns, int max_threads);

/* Chunks to cut `units` independent units of work (rows, planes, output groups...) into for
 * `threads` threads: four a thread, so that a thread that starts late or runs slow holds up at
 * most a quarter of its share, but no more than there are units; 1 on one thread. */
static inline int64_t
yt__parallel_chunks(int64_t units, int threads)
{
    const int64_t most = 4 * (int64_t)threads;
    return threads > 1 ? (units < most ? units : most) : 1;
}

/* For tests: with `on`, yt__parallel_threads gives max_threads to every job it would not refuse
 * for its size, whatever the load, so that tests exercise the split at every run. */
YT_INTERNAL void yt__parallel_set_always(bool on);

/* yt_get_num_threads(), or 1 inside a chunk. Kernels
 * whose results depend on how the work is cut (sums of per-chunk partial results) derive their
 * chunks from this and the problem's size only, never from yt__parallel_threads, which follows
 * the machine's load: the same program then gives the same bits whichever threads ran. */
YT_INTERNAL int yt__max_threads(void);

#endif
