/* yaten's kernel thread pool (see parallel.h).
 *
 * One job at a time lives in the pool's single slot. Its state word packs (generation, next
 * chunk, chunk count): a thread claims chunk i of generation g by moving (g, i, n) to
 * (g, i + 1, n) with a compare-and-swap, so a late worker can never claim a chunk of a job that
 * has been replaced, and a job cannot be replaced while one of its chunks is claimed and not yet
 * done (the caller waits for `done` to reach n before it returns). */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "parallel.h"

#define MAX_WORKERS 63
#define CHUNK_BITS  16
#define CHUNK_MASK  ((UINT64_C(1) << CHUNK_BITS) - 1)

static struct {
    _Atomic uint64_t state; /* gen << 32 | next << 16 | n */
    _Atomic int64_t done;
    yt__chunk_fn fn;
    void *ctx;
    _Atomic int helpers; /* workers allowed to take part in the current job */
    _Atomic int busy;    /* a caller owns the slot */
    _Atomic uint32_t wake_word;
    _Atomic int sleeping;
    pthread_mutex_t start_lock;
    int n_workers;
    int64_t spin_ns;
    pthread_t threads[MAX_WORKERS]; /* joinable: stop_workers waits for each to leave */
    _Atomic bool stopping;          /* stop_workers: every worker returns */
    bool forks_handled;             /* forget_workers is registered with pthread_atfork */
} pool = {.start_lock = PTHREAD_MUTEX_INITIALIZER};

static _Thread_local bool in_chunk;
static _Thread_local int thread_slot; /* yt__parallel_slot() */

static int64_t
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline void
cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static uint64_t
pack(uint64_t gen, uint64_t next, uint64_t n)
{
    return gen << 32 | next << CHUNK_BITS | n;
}

/* Claims and runs chunks of generation `gen` until none is left; returns how many it ran. */
static int64_t
work(uint64_t gen)
{
    int64_t ran = 0;
    uint64_t s = atomic_load_explicit(&pool.state, memory_order_acquire);
    for (;;) {
        uint64_t n = s & CHUNK_MASK, next = (s >> CHUNK_BITS) & CHUNK_MASK;
        if (s >> 32 != (gen & 0xffffffffu) || next >= n)
            return ran;
        if (!atomic_compare_exchange_weak_explicit(&pool.state, &s, pack(gen, next + 1, n),
                                                   memory_order_acq_rel, memory_order_acquire))
            continue;
        /* chunk `next` is ours: the job stays in the slot until we count it done */
        yt__chunk_fn fn = pool.fn;
        void *ctx = pool.ctx;
        fn(ctx, (int64_t)next);
        ran++;
        atomic_fetch_add_explicit(&pool.done, 1, memory_order_release);
        s = atomic_load_explicit(&pool.state, memory_order_acquire);
    }
}

static void
futex_wait(_Atomic uint32_t *word, uint32_t seen)
{
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
}

static void
futex_wake_all(_Atomic uint32_t *word)
{
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

static void *
worker_main(void *arg)
{
    int index = (int)(intptr_t)arg;
    in_chunk = true; /* a worker only ever runs chunks */
    uint64_t seen = atomic_load(&pool.state) >> 32;
    for (;;) {
        int64_t spin_end = now_ns() + pool.spin_ns;
        uint64_t gen;
        for (unsigned i = 0;; i++) {
            if (atomic_load_explicit(&pool.stopping, memory_order_relaxed))
                return NULL;
            gen = atomic_load_explicit(&pool.state, memory_order_acquire) >> 32;
            if (gen != seen)
                break;
            cpu_relax();
            /* give the core back often: on a loaded machine the caller may share ours */
            if ((i & 15) == 15)
                sched_yield();
            if ((i & 255) == 255 && now_ns() > spin_end) {
                uint32_t w = atomic_load(&pool.wake_word);
                atomic_fetch_add(&pool.sleeping, 1);
                gen = atomic_load(&pool.state) >> 32;
                /* stopping is read after w: stop_workers sets it before it moves wake_word */
                if (gen == seen && !atomic_load(&pool.stopping))
                    futex_wait(&pool.wake_word, w);
                atomic_fetch_sub(&pool.sleeping, 1);
                spin_end = now_ns() + pool.spin_ns;
            }
        }
        seen = gen;
        if (index < atomic_load_explicit(&pool.helpers, memory_order_relaxed)) {
            thread_slot = index + 1; /* the caller is 0; helpers < threads */
            work(gen);
        }
    }
    return NULL;
}

/* In the child of a fork: the parent's workers are not there (only the forking thread is), so
 * none is counted, and none joined at exit. */
static void
forget_workers(void)
{
    pool.start_lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER; /* its holder may be gone */
    pool.n_workers = 0;
    atomic_store(&pool.sleeping, 0);
    atomic_store(&pool.busy, 0);
}

/* When the library is unloaded (dlclose) or the process exits: the workers are told to stop,
 * woken, and joined, so that none is still running the library's code when it is unmapped. Before
 * this, a worker spinning after a job when dlclose came (it spins for spin_ns, 300 us by default)
 * crashed the process: tests/shared/shared_lib.c, which unloads a copy right after its last
 * parallel job, died with SIGSEGV in about two runs of three. */
__attribute__((destructor)) static void
stop_workers(void)
{
    pthread_mutex_lock(&pool.start_lock);
    atomic_store(&pool.stopping, true);
    atomic_fetch_add(&pool.wake_word, 1);
    futex_wake_all(&pool.wake_word);
    for (int i = 0; i < pool.n_workers; i++)
        pthread_join(pool.threads[i], NULL);
    pool.n_workers = 0;
    pthread_mutex_unlock(&pool.start_lock);
}

/* Starts workers up to `want` (once each; failures leave fewer). */
static int
ensure_workers(int want)
{
    if (want > MAX_WORKERS)
        want = MAX_WORKERS;
    if (__atomic_load_n(&pool.n_workers, __ATOMIC_ACQUIRE) >= want)
        return want;
    pthread_mutex_lock(&pool.start_lock);
    if (pool.spin_ns == 0) {
        const char *env = getenv("YT_SPIN_US");
        long us = env != NULL ? strtol(env, NULL, 10) : 300;
        pool.spin_ns = (us < 0 ? 0 : us) * 1000 + 1;
    }
    if (!pool.forks_handled) {
        /* a child of fork has none of the parent's workers: it starts its own */
        pool.forks_handled = pthread_atfork(NULL, NULL, forget_workers) == 0;
    }
    while (pool.n_workers < want && !atomic_load(&pool.stopping)) {
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 1 << 20);
        int rc = pthread_create(&pool.threads[pool.n_workers], &attr, worker_main,
                                (void *)(intptr_t)pool.n_workers);
        pthread_attr_destroy(&attr);
        if (rc != 0)
            break;
        __atomic_store_n(&pool.n_workers, pool.n_workers + 1, __ATOMIC_RELEASE);
    }
    int have = pool.n_workers;
    pthread_mutex_unlock(&pool.start_lock);
    return have < want ? have : want;
}

/* ---------------------------------------------------------------- lateness of the workers */

/* What the recent parallel jobs cost their callers in waiting for chunks a worker held, as in
 * gemm_threads.c: the second largest of the last 8. */
#define WAITS 8
static _Atomic int64_t waits[WAITS], seen_at[WAITS];
static _Atomic unsigned next_wait;
static _Atomic int64_t last_probe;
#define PROBE_NS 10000000
#define STALE_NS 100000000 /* an older wait counts as none (the machine may have quietened) */

static void
observe(int64_t wait_ns)
{
    unsigned slot = atomic_fetch_add_explicit(&next_wait, 1, memory_order_relaxed) % WAITS;
    atomic_store_explicit(&waits[slot], wait_ns, memory_order_relaxed);
    atomic_store_explicit(&seen_at[slot], now_ns(), memory_order_relaxed);
}

static int64_t
recent_wait(int64_t now)
{
    int64_t w[WAITS];
    for (int i = 0; i < WAITS; i++) {
        int64_t v = atomic_load_explicit(&waits[i], memory_order_relaxed);
        if (now - atomic_load_explicit(&seen_at[i], memory_order_relaxed) > STALE_NS)
            v = 0;
        int j = i;
        for (; j > 0 && w[j - 1] > v; j--)
            w[j] = w[j - 1];
        w[j] = v;
    }
    return w[WAITS - 2];
}

int
yt__parallel_slot(void)
{
    return in_chunk ? thread_slot : 0;
}

int
yt__max_threads(void)
{
    return in_chunk ? 1 : yt_get_num_threads();
}

/* Below this a job is not split; sleeping workers are woken only for jobs above WAKE_NS. */
#define MIN_NS  3000.0
#define WAKE_NS 40000.0

static _Atomic bool always; /* yt__parallel_set_always */

void
yt__parallel_set_always(bool on)
{
    atomic_store_explicit(&always, on, memory_order_relaxed);
}

int
yt__parallel_threads(double ns, int max_threads)
{
    if (max_threads <= 1 || in_chunk || ns < MIN_NS)
        return 1;
    if (atomic_load_explicit(&always, memory_order_relaxed))
        return max_threads;
    if (ns < WAKE_NS && atomic_load_explicit(&pool.sleeping, memory_order_relaxed) > 0)
        return 1;
    double saved = ns * (1.0 - 1.0 / max_threads);
    int64_t now = now_ns();
    if (saved >= 2.0 * (double)recent_wait(now))
        return max_threads;
    /* a probe, at most one per PROBE_NS, to notice a machine that has quietened down */
    int64_t last = atomic_load_explicit(&last_probe, memory_order_relaxed);
    if (now - last >= PROBE_NS &&
        atomic_compare_exchange_strong_explicit(&last_probe, &last, now, memory_order_relaxed,
                                                memory_order_relaxed))
        return max_threads;
    return 1;
}

int
yt__parallel_cut(double ns, int max_threads)
{
    return max_threads > 1 && !in_chunk && ns >= WAKE_NS ? max_threads : 1;
}

/* ---------------------------------------------------------------- running a job */

static int64_t
run_serial(int64_t n_chunks, yt__chunk_fn fn, void *ctx)
{
    bool was = in_chunk; /* chunks see one thread, however they are run */
    int was_slot = thread_slot;
    in_chunk = true;
    thread_slot = 0;
    for (int64_t c = 0; c < n_chunks; c++)
        fn(ctx, c);
    in_chunk = was;
    thread_slot = was_slot;
    return 0;
}

int64_t
yt__parallel_run(int64_t n_chunks, int threads, yt__chunk_fn fn, void *ctx)
{
    if (n_chunks <= 0)
        return 0;
    if (threads <= 1 || n_chunks == 1 || in_chunk || n_chunks > (int64_t)CHUNK_MASK)
        return run_serial(n_chunks, fn, ctx);
    int expected = 0;
    if (!atomic_compare_exchange_strong(&pool.busy, &expected, 1))
        return run_serial(n_chunks, fn, ctx); /* another thread's job holds the pool */
    int helpers = ensure_workers(threads - 1);
    if (helpers <= 0) {
        atomic_store(&pool.busy, 0);
        return run_serial(n_chunks, fn, ctx);
    }
    pool.fn = fn;
    pool.ctx = ctx;
    atomic_store_explicit(&pool.done, 0, memory_order_relaxed);
    atomic_store_explicit(&pool.helpers, helpers, memory_order_relaxed);
    uint64_t gen = (atomic_load_explicit(&pool.state, memory_order_relaxed) >> 32) + 1;
    atomic_store(&pool.state, pack(gen & 0xffffffffu, 0, (uint64_t)n_chunks)); /* seq_cst */
    if (atomic_load(&pool.sleeping) > 0) {
        atomic_fetch_add(&pool.wake_word, 1);
        futex_wake_all(&pool.wake_word);
    }
    in_chunk = true; /* nested parallel calls from our own chunks run serially */
    thread_slot = 0;
    int64_t t_start = now_ns();
    int64_t mine = work(gen);
    int64_t t_mine = now_ns();
    in_chunk = false;
    /* every chunk is claimed; wait for those the workers hold */
    if (atomic_load_explicit(&pool.done, memory_order_acquire) < n_chunks) {
        for (unsigned i = 0; atomic_load_explicit(&pool.done, memory_order_acquire) < n_chunks;
             i++) {
            cpu_relax();
            if ((i & 15) == 15)
                sched_yield(); /* the worker holding a chunk may be waiting for our core */
        }
    }
    /* What splitting cost: the job's time beyond running every chunk here, at the pace the
     * caller ran its own (a worker that came late but helped costs nothing; one descheduled
     * while holding a chunk costs the wait) */
    int64_t t_end = now_ns(), cost;
    if (mine > 0)
        cost = t_end - t_start - (t_mine - t_start) * n_chunks / mine;
    else
        cost = t_end - t_mine;
    if (cost < 0)
        cost = 0;
    observe(cost);
    atomic_store_explicit(&pool.busy, 0, memory_order_release);
    return cost;
}
