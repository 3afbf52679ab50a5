/* Caching CPU allocator.
 *
 * A first touch of fresh memory costs a page fault (~10 us per 4 KiB page on our machines), and
 * a training step allocates the same sizes every iteration. So freed blocks are kept on
 * per-size-class free lists and handed out again; steady-state training then never returns to
 * malloc and never faults. Blocks are 64-byte aligned (one cache line, any SIMD width).
 *
 * Size classes: multiples of 64 bytes up to 512, then four classes per power of two (at most
 * 25% slack). The caller passes the size back to yt__cpu_free, so blocks need no header and the
 * free list links live inside the free blocks themselves.
 *
 * Each thread keeps a few blocks per small class for itself (no lock at all); behind that,
 * each class has a shared list with its own lock.
 *
 * Under AddressSanitizer the cache is bypassed so use-after-free and overflows are caught. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sysconf(_SC_PHYS_PAGES) */
#endif
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

enum {
    ALIGN = 64,
    SMALL_MAX = 512,                /* classes 0..7: 64, 128, ..., 512 */
    SMALL_CLASSES = SMALL_MAX / 64, /* 8 */
    FIRST_LARGE_LOG2 = 9,           /* sizes in (2^9, 2^10] are the first large group */
    LAST_LARGE_LOG2 = 61,           /* sizes up to 2^62 */
    N_CLASSES = SMALL_CLASSES + 4 * (LAST_LARGE_LOG2 - FIRST_LARGE_LOG2 + 1),
};

/* Class index of a request of `n` bytes and the block size it gets, or -1 when too large. */
static inline int
class_of(size_t n, size_t *rounded)
{
    if (n <= SMALL_MAX) {
        size_t c = n == 0 ? 0 : (n - 1) / 64;
        *rounded = (c + 1) * 64;
        return (int)c;
    }
    int k = 63 - __builtin_clzll((unsigned long long)(n - 1)); /* 2^k < n <= 2^(k+1) */
    if (k > LAST_LARGE_LOG2)
        return -1;
    size_t base = (size_t)1 << k;
    size_t step = base >> 2;
    size_t j = (n - 1 - base) / step; /* 0..3 */
    *rounded = base + (j + 1) * step;
    return SMALL_CLASSES + 4 * (k - FIRST_LARGE_LOG2) + (int)j;
}

#if defined(__SANITIZE_ADDRESS__)

void *
yt__cpu_alloc(size_t nbytes)
{
    size_t rounded;
    if (class_of(nbytes, &rounded) < 0)
        return NULL;
    return aligned_alloc(ALIGN, rounded);
}

void
yt__cpu_free(void *ptr, size_t nbytes)
{
    (void)nbytes;
    free(ptr);
}

int64_t
yt_allocator_cached_bytes(void)
{
    return 0;
}

void
yt_allocator_trim(void)
{
}

#else

/* Blocks of at least HUGE_MIN_BYTES start on a 2 MiB boundary, are rounded up to whole 2 MiB, and
 * ask for transparent huge pages: one fault per 2 MiB instead of 512 (about 10 us each here),
 * and one TLB entry where strided kernels (transposed operands, GEMM packing) would otherwise
 * miss on every 4 KiB page. Linux grants them where /sys/kernel/mm/transparent_hugepage/enabled
 * is "madvise" or "always"; a granted huge page is backed whole once touched, so such a block
 * holds its rounded-up size (block_footprint), which the cache limit counts: at worst twice the
 * request, just above the threshold.
 * From 1 MiB, not 2: with 4 KiB pages, a kernel streaming through 1 MiB operands ran at one of
 * two speeds depending on the process (softmax_backward_data of [16384, 16] f32, one thread:
 * 80 or 140 us, half the runs each; torch 60), at 80 us in every run with huge pages. */
enum { HUGE_MIN_BYTES = 1 << 20, HUGE_PAGE_BYTES = 2 << 20 };

/* Bytes a block of `rounded` (its class size) takes from the system. */
static size_t
block_footprint(size_t rounded)
{
    return rounded < HUGE_MIN_BYTES
               ? rounded
               : (rounded + HUGE_PAGE_BYTES - 1) / HUGE_PAGE_BYTES * HUGE_PAGE_BYTES;
}

typedef struct free_block {
    struct free_block *next;
} free_block;

typedef struct size_class {
    pthread_mutex_t lock;
    free_block *head;
} size_class;

static size_class classes[N_CLASSES];
static pthread_once_t classes_once = PTHREAD_ONCE_INIT;
static atomic_size_t cached_bytes;
/* Idle cached bytes beyond this (a quarter of RAM) go back to the system at once, so a program
 * whose sizes drift (varying batch shapes) cannot grow the cache without bound. */
static size_t cache_limit;

static void
init_classes(void)
{
    for (int i = 0; i < N_CLASSES; i++)
        pthread_mutex_init(&classes[i].lock, NULL);
    long pages = sysconf(_SC_PHYS_PAGES);
    long page_size = sysconf(_SC_PAGESIZE);
    cache_limit = (size_t)1 << 30;
    if (pages > 0 && page_size > 0)
        cache_limit = (size_t)pages / 4 * (size_t)page_size;
}

/* Block size of class `c` (the inverse of class_of). */
static size_t
class_size(int c)
{
    if (c < SMALL_CLASSES)
        return (size_t)(c + 1) * 64;
    int k = FIRST_LARGE_LOG2 + (c - SMALL_CLASSES) / 4;
    int j = (c - SMALL_CLASSES) % 4;
    return ((size_t)1 << (k - 2)) * (size_t)(4 + j + 1);
}

static void *
aligned_block(size_t rounded)
{
    if (rounded < HUGE_MIN_BYTES)
        return aligned_alloc(ALIGN, rounded); /* a multiple of 64, as aligned_alloc requires */
    size_t whole = block_footprint(rounded);
    void *p = aligned_alloc(HUGE_PAGE_BYTES, whole);
#ifdef MADV_HUGEPAGE
    if (p != NULL)
        madvise(p, whole, MADV_HUGEPAGE); /* advice: failure changes nothing */
#endif
    return p;
}

static void *
system_alloc(size_t rounded)
{
    void *p = aligned_block(rounded);
    if (p == NULL) {
        /* Idle blocks of other sizes may be what stands between us and success. */
        yt_allocator_trim();
        p = aligned_block(rounded);
    }
    return p;
}

/* Shared lists: take one block of class c, or NULL. */
static free_block *
global_pop(int c, size_t rounded)
{
    pthread_once(&classes_once, init_classes);
    size_class *sc = &classes[c];
    pthread_mutex_lock(&sc->lock);
    free_block *b = sc->head;
    if (b != NULL)
        sc->head = b->next;
    pthread_mutex_unlock(&sc->lock);
    if (b != NULL)
        atomic_fetch_sub_explicit(&cached_bytes, block_footprint(rounded), memory_order_relaxed);
    return b;
}

static void
global_push(int c, size_t rounded, free_block *b)
{
    pthread_once(&classes_once, init_classes);
    size_t bytes = block_footprint(rounded);
    if (atomic_load_explicit(&cached_bytes, memory_order_relaxed) + bytes > cache_limit) {
        free(b);
        return;
    }
    atomic_fetch_add_explicit(&cached_bytes, bytes, memory_order_relaxed);
    size_class *sc = &classes[c];
    pthread_mutex_lock(&sc->lock);
    b->next = sc->head;
    sc->head = b;
    pthread_mutex_unlock(&sc->lock);
}

/* A small per-thread stack of blocks in front of the shared lists, for classes up to 64 KiB:
 * an op's result is usually freed on the thread that made it, so the common alloc/free pair
 * costs no lock and no atomic. Bounded (TCACHE_DEPTH blocks per class, a few MiB per thread),
 * and given back to the shared lists when the thread exits. */
enum { TCACHE_CLASSES = SMALL_CLASSES + 4 * (16 - FIRST_LARGE_LOG2), TCACHE_DEPTH = 8 };

typedef struct thread_cache {
    free_block *head[TCACHE_CLASSES];
    unsigned char count[TCACHE_CLASSES];
    bool registered; /* the exit hook is set for this thread */
} thread_cache;

static _Thread_local thread_cache tcache;
static pthread_key_t tcache_key;
static pthread_once_t tcache_key_once = PTHREAD_ONCE_INIT;

static void
tcache_flush(void)
{
    for (int c = 0; c < TCACHE_CLASSES; c++) {
        free_block *b = tcache.head[c];
        tcache.head[c] = NULL;
        tcache.count[c] = 0;
        while (b != NULL) {
            free_block *next = b->next;
            global_push(c, class_size(c), b);
            b = next;
        }
    }
}

static void
tcache_on_thread_exit(void *arg)
{
    (void)arg;
    tcache_flush();
}

static void
make_tcache_key(void)
{
    pthread_key_create(&tcache_key, tcache_on_thread_exit);
}

void *
yt__cpu_alloc(size_t nbytes)
{
    size_t rounded;
    int c = class_of(nbytes, &rounded);
    if (c < 0)
        return NULL;
    if (c < TCACHE_CLASSES && tcache.head[c] != NULL) {
        free_block *b = tcache.head[c];
        tcache.head[c] = b->next;
        tcache.count[c]--;
        return b;
    }
    free_block *b = global_pop(c, rounded);
    if (b != NULL)
        return b;
    return system_alloc(rounded);
}

void
yt__cpu_free(void *ptr, size_t nbytes)
{
    if (ptr == NULL)
        return;
    size_t rounded;
    int c = class_of(nbytes, &rounded);
    if (c < 0) {
        free(ptr);
        return;
    }
    free_block *b = ptr;
    if (c < TCACHE_CLASSES && tcache.count[c] < TCACHE_DEPTH) {
        if (!tcache.registered) {
            /* Any non-NULL value makes the exit hook run for this thread. */
            pthread_once(&tcache_key_once, make_tcache_key);
            pthread_setspecific(tcache_key, &tcache);
            tcache.registered = true;
        }
        b->next = tcache.head[c];
        tcache.head[c] = b;
        tcache.count[c]++;
        return;
    }
    global_push(c, rounded, b);
}

int64_t
yt_allocator_cached_bytes(void)
{
    return (int64_t)atomic_load_explicit(&cached_bytes, memory_order_relaxed);
}

void
yt_allocator_trim(void)
{
    tcache_flush(); /* this thread's; other threads' small stacks stay */
    pthread_once(&classes_once, init_classes);
    for (int c = 0; c < N_CLASSES; c++) {
        size_class *sc = &classes[c];
        pthread_mutex_lock(&sc->lock);
        free_block *b = sc->head;
        sc->head = NULL;
        pthread_mutex_unlock(&sc->lock);
        size_t freed = 0;
        while (b != NULL) {
            free_block *next = b->next;
            free(b);
            freed++;
            b = next;
        }
        if (freed > 0)
            atomic_fetch_sub_explicit(&cached_bytes, freed * block_footprint(class_size(c)),
                                      memory_order_relaxed);
    }
}

#endif
