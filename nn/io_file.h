/* File plumbing shared by the safetensors, .npy and checkpoint code (nn/io_file.c): writing through
 * a temporary file that is renamed into place, positioned reads that report short files, and the
 * bytes of a tensor in row-major order. Internal; not installed. */
#ifndef YT_NN_IO_FILE_H
#define YT_NN_IO_FILE_H

#include <stdio.h>

#include "internal.h"

/* The formats are little-endian and yaten writes and reads tensor memory as is. */
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "yaten's file formats assume a little-endian host"
#endif

typedef struct yt__out_file {
    FILE *f;
    const char *path; /* the destination (borrowed) */
    char *tmp_path;   /* "<path>.<pid>.<n>.tmp", beside the destination */
} yt__out_file;

/* Creates the temporary file for `path`. Errors: YT_ERR_IO "PATH: cannot create ...: strerror". */
YT_INTERNAL yt_status yt__out_open(yt__out_file *o, const char *path);

/* Appends n bytes. Errors: YT_ERR_IO naming the path. */
YT_INTERNAL yt_status yt__out_write(yt__out_file *o, const void *data, size_t n);

/* Appends the elements of `t` (CPU) in row-major order, copying a non-contiguous tensor once. */
YT_INTERNAL yt_status yt__out_write_tensor(yt__out_file *o, yt_tensor *t);

/* Flushes, fsyncs and renames the temporary file over the destination. On failure removes the
 * temporary file. Either way `o` is closed. */
YT_INTERNAL yt_status yt__out_commit(yt__out_file *o);

/* Closes and removes the temporary file (after an error). */
YT_INTERNAL void yt__out_abort(yt__out_file *o);

/* Opens `path` for reading and returns its descriptor and size (a regular file).
 * Errors: YT_ERR_IO "PATH: cannot open: strerror" / "PATH: not a regular file". */
YT_INTERNAL yt_status yt__in_open(const char *path, int *fd, int64_t *size);

/* Reads exactly n bytes at `offset` into buf. Errors: YT_ERR_IO naming the path and what (`what`,
 * e.g. "tensor 'w'") could not be read: a read error or the file ending early. */
YT_INTERNAL yt_status yt__in_read(int fd, const char *path, int64_t offset, void *buf, size_t n,
                                  const char *what);

/* Sets every byte of a bool tensor's data that is not 0 to 1 (C's bool holds only 0 and 1). */
YT_INTERNAL void yt__normalize_bool(unsigned char *data, size_t n);

#endif
