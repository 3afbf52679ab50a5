/* The sizes of the last-level cache, for kernels that choose between cached and non-temporal
 * stores, and of L2, both for the prefetching choices of runtime/pointwise.c. Read once from
 * Linux's sysfs, which reports what this machine (or VM) is given: cpuid's figure (sysconf's
 * _SC_LEVEL3_CACHE_SIZE) can be the whole host's, 320 MiB in a 2-vCPU guest whose sysfs says
 * 32 MiB.
 *
 * Some guests' sysfs reports the host's whole cache as well: 300 MiB "shared by" the 2 vCPUs of
 * an Intel Xeon guest, where a read of a buffer over and over ran at 17 GB/s up to 32 MiB, 10 at
 * 64 and 7 from 128 MiB on (one thread), so operands of 80 MiB came from memory; taken at its
 * word, the cache kept their outputs out of streaming stores ([10000, 1000] f32, one thread, a
 * process each, best of 10, plain against streamed: a + b 7.5-8.3 against 6.0-6.4 ms, -a 5.5-5.9
 * against 4.2-5.0, relu(a) 5.5-6.1 against 3.8-5.0). Today's parts give a core 2 to 12 MiB of
 * their last level (5 on a 64-core Xeon, 4 to 12 on AMD's), so the size is taken as at most
 * MAX_BYTES_PER_CPU for each CPU online. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "internal.h"

enum { FALLBACK_BYTES = 32 << 20, FALLBACK_L2_BYTES = 1 << 20, MAX_INDEX = 8 };
static const int64_t MAX_BYTES_PER_CPU = 16 << 20;

static int64_t cache_bytes, l2_bytes;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;
static _Atomic int64_t test_bytes; /* yt__set_cache_bytes; 0: the machine's */

/* One line of sysfs as an integer ("3", "32768K"), or -1. */
static int64_t
read_sysfs_int(int index, const char *field)
{
    char path[96];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/%s", index, field);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    long long v = -1;
    char unit = '\0';
    int got = fscanf(f, "%lld%c", &v, &unit);
    fclose(f);
    if (got < 1 || v < 0)
        return -1;
    if (unit == 'K')
        v *= 1024;
    else if (unit == 'M')
        v *= 1024 * 1024;
    return (int64_t)v;
}

static void
find_cache_bytes(void)
{
    int64_t best_level = 0, bytes = 0;
    for (int i = 0; i < MAX_INDEX; i++) {
        int64_t level = read_sysfs_int(i, "level"), size = read_sysfs_int(i, "size");
        if (level > best_level && size > 0) {
            best_level = level;
            bytes = size;
        }
        if (level == 2 && size > 0)
            l2_bytes = size;
    }
    if (l2_bytes <= 0) {
        long v = sysconf(_SC_LEVEL2_CACHE_SIZE);
        l2_bytes = v > 0 ? v : FALLBACK_L2_BYTES;
    }
    if (bytes <= 0) {
        long v = sysconf(_SC_LEVEL3_CACHE_SIZE);
        bytes = v > 0 ? v : FALLBACK_BYTES;
    }
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus > 0 && bytes > cpus * MAX_BYTES_PER_CPU)
        bytes = cpus * MAX_BYTES_PER_CPU;
    cache_bytes = bytes;
}

int64_t
yt__cache_bytes(void)
{
    int64_t forced = atomic_load_explicit(&test_bytes, memory_order_relaxed);
    if (forced > 0)
        return forced;
    pthread_once(&cache_once, find_cache_bytes);
    return cache_bytes;
}

int64_t
yt__l2_bytes(void)
{
    pthread_once(&cache_once, find_cache_bytes);
    return l2_bytes;
}

void
yt__set_cache_bytes(int64_t bytes)
{
    atomic_store_explicit(&test_bytes, bytes > 0 ? bytes : 0, memory_order_relaxed);
}
