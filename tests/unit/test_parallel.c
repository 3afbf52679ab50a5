/* The kernel thread pool (runtime/parallel.c): every chunk runs exactly once whatever the thread
 * count, nested and concurrent callers fall back to running their chunks themselves, and the
 * thread-count policy stays on one thread for tiny jobs. Each test ends by proving nothing
 * leaked. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include <criterion/criterion.h>

#include "parallel.h"
#include "test_util.h"

enum { MAX_CHUNKS = 300 };

typedef struct counts {
    _Atomic int hits[MAX_CHUNKS];
    _Atomic int inner_threads; /* yt__max_threads() seen inside a chunk, OR-ed as bits */
} counts;

static void
count_chunk(void *ctx, int64_t chunk)
{
    counts *c = ctx;
    atomic_fetch_add(&c->hits[chunk], 1);
    atomic_fetch_or(&c->inner_threads, 1 << yt__max_threads());
}

static void
check_once(counts *c, int64_t n, const char *what)
{
    for (int64_t i = 0; i < MAX_CHUNKS; i++)
        cr_assert_eq(atomic_load(&c->hits[i]), i < n ? 1 : 0, "%s: chunk %lld ran %d times", what,
                     (long long)i, atomic_load(&c->hits[i]));
}

Test(parallel, every_chunk_runs_once)
{
    static const int64_t sizes[] = {0, 1, 2, 3, 7, 64, 255};
    for (int threads = 1; threads <= 4; threads++) {
        yt_set_num_threads(threads);
        for (int rep = 0; rep < 200; rep++)
            for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
                counts c = {0};
                int64_t wait = yt__parallel_run(sizes[s], threads, count_chunk, &c);
                cr_assert(wait >= 0);
                char what[64];
                snprintf(what, sizeof what, "%lld chunks, %d threads", (long long)sizes[s],
                         threads);
                check_once(&c, sizes[s], what);
                if (sizes[s] > 0) /* chunks never see more than one thread */
                    cr_assert_eq(atomic_load(&c.inner_threads), 1 << 1, "%s", what);
            }
    }
    yt_set_num_threads(1);
    YT_ASSERT_NO_LEAKS();
}

/* A chunk that runs a whole job of its own: the inner job runs on the chunk's thread. */
typedef struct nested {
    counts inner[4];
} nested;

static void
nested_chunk(void *ctx, int64_t chunk)
{
    nested *n = ctx;
    yt__parallel_run(50, 2, count_chunk, &n->inner[chunk]);
}

Test(parallel, nested_jobs_run_inside_their_chunk)
{
    yt_set_num_threads(2);
    for (int rep = 0; rep < 100; rep++) {
        nested n = {0};
        yt__parallel_run(4, 2, nested_chunk, &n);
        for (int i = 0; i < 4; i++)
            check_once(&n.inner[i], 50, "inner job");
    }
    yt_set_num_threads(1);
    YT_ASSERT_NO_LEAKS();
}

/* Two user threads issuing jobs at once: one owns the pool, the other runs its chunks itself. */
static void *
caller(void *arg)
{
    _Atomic int *failures = arg;
    yt_set_num_threads(2);
    for (int rep = 0; rep < 500; rep++) {
        counts c = {0};
        yt__parallel_run(37, 2, count_chunk, &c);
        for (int i = 0; i < MAX_CHUNKS; i++)
            if (atomic_load(&c.hits[i]) != (i < 37 ? 1 : 0))
                atomic_fetch_add(failures, 1);
    }
    return NULL;
}

Test(parallel, concurrent_callers)
{
    _Atomic int failures = 0;
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, caller, &failures), 0);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    cr_assert_eq(atomic_load(&failures), 0);
    YT_ASSERT_NO_LEAKS();
}

Test(parallel, thread_policy)
{
    cr_assert_eq(yt__parallel_threads(1e9, 1), 1);   /* one thread configured */
    cr_assert_eq(yt__parallel_threads(100.0, 2), 1); /* far too small to split */
    cr_assert(yt__parallel_threads(1e9, 2) == 2 || yt__parallel_threads(1e9, 2) == 1);
    YT_ASSERT_NO_LEAKS();
}
