/* Helpers of the loader fuzz targets: the input as a file (an in-memory memfd, so no disk I/O per
 * run), a scratch directory in /dev/shm for save/load round trips, and checks that abort (which
 * libFuzzer reports with the input that caused it). */
#ifndef YT_FUZZ_UTIL_H
#define YT_FUZZ_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <yaten.h>

#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s (last error: %s)\n", __FILE__, __LINE__,      \
                    #cond, yt_errmsg());                                                           \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static inline const char *
fuzz_input_file(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("yt_fuzz_input", 0);
        FUZZ_CHECK(fd >= 0);
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    FUZZ_CHECK(ftruncate(fd, 0) == 0);
    FUZZ_CHECK(size == 0 || pwrite(fd, data, size, 0) == (ssize_t)size);
    return path;
}

static char fuzz_dir[64];

static void
fuzz_remove_scratch(void)
{
    char path[128];
    snprintf(path, sizeof path, "%s/again.safetensors", fuzz_dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/again.npy", fuzz_dir);
    unlink(path);
    rmdir(fuzz_dir);
}

static inline const char *
fuzz_scratch_path(const char *name)
{
    static char path[128];
    if (fuzz_dir[0] == '\0') {
        snprintf(fuzz_dir, sizeof fuzz_dir, "/dev/shm/yt_fuzz_%ld", (long)getpid());
        mkdir(fuzz_dir, 0700);
        atexit(fuzz_remove_scratch);
    }
    snprintf(path, sizeof path, "%s/%s", fuzz_dir, name);
    return path;
}

static inline void
fuzz_check_same_tensor(yt_tensor *a, yt_tensor *b)
{
    FUZZ_CHECK(yt_tensor_dtype(a) == yt_tensor_dtype(b));
    FUZZ_CHECK(yt_tensor_dim(a) == yt_tensor_dim(b));
    for (int d = 0; d < yt_tensor_dim(a); d++)
        FUZZ_CHECK(yt_tensor_size(a, d) == yt_tensor_size(b, d));
    FUZZ_CHECK(yt_tensor_is_contiguous(a) && yt_tensor_is_contiguous(b));
    size_t n = (size_t)yt_tensor_numel(a) * yt_dtype_size(yt_tensor_dtype(a));
    FUZZ_CHECK(n == 0 || memcmp(yt_tensor_data(a), yt_tensor_data(b), n) == 0);
}

static inline void
fuzz_check_no_leaks(void)
{
    FUZZ_CHECK(yt_live_tensors() == 0);
    FUZZ_CHECK(yt_live_bytes() == 0);
    yt_clear_error();
}

#endif
