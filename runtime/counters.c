/* Live-tensor and live-byte counters, kept per thread.
 *
 * Every op creates and frees tensors, so a shared atomic counter would put two locked
 * read-modify-write instructions on each op's path. Each thread instead updates its own block
 * with plain relaxed loads and stores; yt_live_tensors() / yt_live_bytes() add up the blocks of
 * live threads plus what exited threads left behind. A thread may free what another allocated,
 * so one block can go negative; only the sum means anything. */
#include <pthread.h>
#include <stdlib.h>

#include "internal.h"

static pthread_mutex_t blocks_lock = PTHREAD_MUTEX_INITIALIZER;
static yt__live_counters *blocks;              /* blocks of live threads */
static int64_t retired_tensors, retired_bytes; /* totals of exited threads; under the lock */
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

_Thread_local yt__live_counters *yt__tls_counters;

/* Thread exit: fold the block into the retired totals and unlink it. */
static void
retire_block(void *arg)
{
    yt__live_counters *c = arg;
    pthread_mutex_lock(&blocks_lock);
    retired_tensors += atomic_load_explicit(&c->tensors, memory_order_relaxed);
    retired_bytes += atomic_load_explicit(&c->bytes, memory_order_relaxed);
    for (yt__live_counters **p = &blocks; *p != NULL; p = &(*p)->next) {
        if (*p == c) {
            *p = c->next;
            break;
        }
    }
    pthread_mutex_unlock(&blocks_lock);
    free(c);
}

static void
make_exit_key(void)
{
    pthread_key_create(&exit_key, retire_block);
}

yt__live_counters *
yt__live_counters_register(void)
{
    /* Static fallback: if even this small malloc fails, count into a shared block rather than
     * lose the numbers (racy only in that already-broken situation). */
    static yt__live_counters fallback;
    yt__live_counters *c = calloc(1, sizeof *c);
    if (c == NULL) {
        yt__tls_counters = &fallback;
        return &fallback;
    }
    pthread_once(&exit_key_once, make_exit_key);
    pthread_setspecific(exit_key, c);
    pthread_mutex_lock(&blocks_lock);
    c->next = blocks;
    blocks = c;
    pthread_mutex_unlock(&blocks_lock);
    yt__tls_counters = c;
    return c;
}

static int64_t
sum_counters(bool bytes)
{
    pthread_mutex_lock(&blocks_lock);
    int64_t total = bytes ? retired_bytes : retired_tensors;
    for (yt__live_counters *c = blocks; c != NULL; c = c->next)
        total += atomic_load_explicit(bytes ? &c->bytes : &c->tensors, memory_order_relaxed);
    pthread_mutex_unlock(&blocks_lock);
    return total;
}

int64_t
yt_live_tensors(void)
{
    return sum_counters(false);
}

int64_t
yt_live_bytes(void)
{
    return sum_counters(true);
}
