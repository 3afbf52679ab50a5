/* libyaten.so as programs use it: linked at start-up, and loaded a second time by dlopen (a copy
 * of the file, so a separate instance, as a plugin or a Python ctypes binding would load it). The
 * library's thread-locals (last error, grad mode, allocator cache, live counts) go through TLS
 * descriptors (Makefile, TLS_DIALECT), whose start-up and dlopen cases take different paths in
 * the dynamic loader; each instance must compute, and keep each thread's state its own.
 * Usage: shared_lib COPY_OF_LIBYATEN_SO. Prints what failed and exits 1; nothing on success. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <yaten.h>

/* The functions the checks call, from one instance of the library. */
typedef struct api {
    const char *name;
    yt_tensor *(*full)(const int64_t *sizes, int dim, yt_scalar value);
    yt_tensor *(*add)(yt_tensor *self, yt_tensor *other);
    yt_tensor *(*sum)(yt_tensor *self);
    double (*item)(yt_tensor *t);
    void (*release)(yt_tensor *t);
    yt_status (*errcode)(void);
    const char *(*errmsg)(void);
    void (*clear_error)(void);
    bool (*set_grad_enabled)(bool enabled);
    bool (*grad_enabled)(void);
    int64_t (*live_tensors)(void);
} api;

static int failures;

static void
check(bool ok, const api *a, const char *what)
{
    if (!ok) {
        fprintf(stderr, "shared_lib: %s: %s\n", a->name, what);
        failures++;
    }
}

/* 2 + 3 over 100000 elements, summed: enough to be split over the kernel pool's threads, whose
 * thread-locals are their own. */
static void
check_add(const api *a)
{
    const int64_t sizes[1] = {100000};
    yt_tensor *x = a->full(sizes, 1, yt_float(2)), *y = a->full(sizes, 1, yt_float(3));
    yt_tensor *z = a->add(x, y);
    yt_tensor *total = a->sum(z);
    check(total != NULL && a->item(total) == 500000.0, a, "the sum of 2 + 3 over 100000 is wrong");
    a->release(total);
    a->release(z);
    a->release(x);
    a->release(y);
}

/* A failed op on this thread: its error stays here. */
static void *
fail_on_other_thread(void *arg)
{
    const api *a = arg;
    const int64_t two[1] = {2}, three[1] = {3};
    yt_tensor *x = a->full(two, 1, yt_float(1)), *y = a->full(three, 1, yt_float(1));
    yt_tensor *bad = a->add(x, y);
    check(bad == NULL && a->errcode() == YT_ERR_SHAPE, a, "a shape mismatch is not an error");
    check(strstr(a->errmsg(), "add") != NULL, a, "the error does not name add");
    a->set_grad_enabled(false);
    check(!a->grad_enabled(), a, "grad mode did not switch on the thread");
    a->release(x);
    a->release(y);
    return NULL;
}

static void
check_instance(const api *a)
{
    a->clear_error();
    check_add(a);
    pthread_t thread;
    if (pthread_create(&thread, NULL, fail_on_other_thread, (void *)a) != 0 ||
        pthread_join(thread, NULL) != 0) {
        check(false, a, "cannot run a thread");
        return;
    }
    check(a->errcode() == YT_OK, a, "another thread's error shows on this one");
    check(a->grad_enabled(), a, "another thread's grad mode shows on this one");
    check_add(a);
    check(a->live_tensors() == 0, a, "tensors left alive");
}

int
main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: shared_lib COPY_OF_LIBYATEN_SO\n");
        return 2;
    }
    const api linked = {.name = "linked",
                        .full = yt_full,
                        .add = yt_add,
                        .sum = yt_sum,
                        .item = yt_item,
                        .release = yt_release,
                        .errcode = yt_errcode,
                        .errmsg = yt_errmsg,
                        .clear_error = yt_clear_error,
                        .set_grad_enabled = yt_set_grad_enabled,
                        .grad_enabled = yt_grad_enabled,
                        .live_tensors = yt_live_tensors};
    check_instance(&linked);

    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        fprintf(stderr, "shared_lib: dlopen %s: %s\n", argv[1], dlerror());
        return 1;
    }
    api loaded = {.name = "dlopen"};
    /* dlsym's object pointers as function pointers: POSIX guarantees the conversion */
#define FIND(field, symbol) *(void **)&loaded.field = dlsym(lib, symbol)
    FIND(full, "yt_full");
    FIND(add, "yt_add");
    FIND(sum, "yt_sum");
    FIND(item, "yt_item");
    FIND(release, "yt_release");
    FIND(errcode, "yt_errcode");
    FIND(errmsg, "yt_errmsg");
    FIND(clear_error, "yt_clear_error");
    FIND(set_grad_enabled, "yt_set_grad_enabled");
    FIND(grad_enabled, "yt_grad_enabled");
    FIND(live_tensors, "yt_live_tensors");
#undef FIND
    if (!loaded.full || !loaded.add || !loaded.sum || !loaded.item || !loaded.release ||
        !loaded.errcode || !loaded.errmsg || !loaded.clear_error || !loaded.set_grad_enabled ||
        !loaded.grad_enabled || !loaded.live_tensors) {
        fprintf(stderr, "shared_lib: %s lacks a yt_ function\n", argv[1]);
        return 1;
    }
    check_instance(&loaded);
    /* the two instances' states are apart: an error in one is not the other's */
    const int64_t two[1] = {2}, three[1] = {3};
    yt_tensor *x = loaded.full(two, 1, yt_float(1)), *y = loaded.full(three, 1, yt_float(1));
    check(loaded.add(x, y) == NULL, &loaded, "a shape mismatch is not an error");
    check(yt_errcode() == YT_OK, &linked, "the dlopen instance's error shows in this one");
    loaded.release(x);
    loaded.release(y);
    dlclose(lib);
    return failures == 0 ? 0 : 1;
}
