/* Storage: the refcounted block of memory under one or more tensors (a tensor and its views
 * share one storage and its version counter), and the live-byte counter tests use to prove
 * nothing leaks (counted per thread: runtime/counters.c). */
#include <stdlib.h>

#include "internal.h"

yt_storage *
yt__storage_new(size_t nbytes, yt_device device)
{
    if (device != YT_DEVICE_CPU) {
        /* Only the CPU allocator lives here; other devices fail cleanly instead of crashing. */
        return (yt_storage *)yt__fail(YT_ERR_DEVICE, "storage: no allocator for device %s",
                                      yt_device_name(device));
    }
    yt_storage *s = yt__cpu_alloc(sizeof *s);
    if (s == NULL)
        return (yt_storage *)yt__fail(YT_ERR_NOMEM, "storage: out of memory");
    s->data = yt__cpu_alloc(nbytes);
    if (s->data == NULL) {
        yt__cpu_free(s, sizeof *s);
        return (yt_storage *)yt__fail(YT_ERR_NOMEM, "storage: cannot allocate %zu bytes", nbytes);
    }
    atomic_init(&s->refcount, 1);
    atomic_init(&s->version, 0);
    s->nbytes = nbytes;
    s->device = device;
    yt__count_live(0, (int64_t)nbytes);
    return s;
}

void
yt__storage_retain(yt_storage *s)
{
    if (s != NULL)
        atomic_fetch_add_explicit(&s->refcount, 1, memory_order_relaxed);
}

void
yt__storage_release(yt_storage *s)
{
    if (s == NULL)
        return;
    /* acq_rel: the thread that frees must see every other thread's writes to the data. */
    if (atomic_fetch_sub_explicit(&s->refcount, 1, memory_order_acq_rel) != 1)
        return;
    yt__count_live(0, -(int64_t)s->nbytes);
    yt__cpu_free(s->data, s->nbytes);
    yt__cpu_free(s, sizeof *s);
}
