/* Helpers shared by the serialization tests (test_io_*.c): a private temporary directory per
 * test, raw file writing for malformed-file cases, and exact tensor comparison. */
#ifndef YT_TEST_IO_UTIL_H
#define YT_TEST_IO_UTIL_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"

/* A fresh directory under /tmp for one test; io_tmp_end removes it and everything in it. */
static char io_dir[64];

static inline void
io_tmp_begin(void)
{
    snprintf(io_dir, sizeof io_dir, "/tmp/yt_test_io_XXXXXX");
    cr_assert_not_null(mkdtemp(io_dir), "mkdtemp failed");
}

/* "<io_dir>/<name>" in a static rotating buffer (up to 4 live paths); room for names of up to
 * 440 bytes, so that GCC sees no truncation for the tests' 384-byte name buffers. */
enum { IO_PATH_BYTES = 512 };

static inline const char *
io_path(const char *name)
{
    static char bufs[4][IO_PATH_BYTES];
    static int next;
    char *p = bufs[next++ % 4];
    snprintf(p, IO_PATH_BYTES, "%s/%s", io_dir, name);
    return p;
}

/* Files in io_dir (checks that no temporary file was left behind). */
static inline int
io_file_count(void)
{
    DIR *d = opendir(io_dir);
    cr_assert_not_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

static inline void
io_tmp_end(void)
{
    DIR *d = opendir(io_dir);
    if (d == NULL)
        return;
    struct dirent *e;
    char p[512];
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            snprintf(p, sizeof p, "%s/%s", io_dir, e->d_name);
            unlink(p);
        }
    closedir(d);
    rmdir(io_dir);
}

static inline void
io_write_bytes(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot write %s", path);
    cr_assert_eq(fwrite(data, 1, n, f), n);
    fclose(f);
}

static inline unsigned char *
io_read_bytes(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot read %s", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)len + 1);
    cr_assert_eq(fread(buf, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return buf;
}

/* Asserts that `got` has `want`'s dtype and sizes and the same bytes in row-major order. */
static inline void
io_expect_same(yt_tensor *got, yt_tensor *want, const char *what)
{
    cr_assert_not_null(got, "%s: %s", what, yt_errmsg());
    cr_assert_eq(yt_tensor_dtype(got), yt_tensor_dtype(want), "%s: dtype %s, expected %s", what,
                 yt_dtype_name(yt_tensor_dtype(got)), yt_dtype_name(yt_tensor_dtype(want)));
    cr_assert_eq(yt_tensor_dim(got), yt_tensor_dim(want), "%s: rank %d, expected %d", what,
                 yt_tensor_dim(got), yt_tensor_dim(want));
    for (int d = 0; d < yt_tensor_dim(want); d++)
        cr_assert_eq(yt_tensor_size(got, d), yt_tensor_size(want, d), "%s: size(%d)", what, d);
    cr_assert(yt_tensor_is_contiguous(got), "%s: a loaded tensor is contiguous", what);
    yt_tensor *w = yt_contiguous(want);
    size_t n = (size_t)yt_tensor_numel(want) * yt_dtype_size(yt_tensor_dtype(want));
    cr_assert(n == 0 || memcmp(yt_tensor_data(got), yt_tensor_data(w), n) == 0,
              "%s: the bytes differ", what);
    yt_release(w);
}

#endif
