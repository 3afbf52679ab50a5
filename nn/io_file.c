/* File plumbing for the serialization code (nn/io_file.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io_file.h"

/* Distinguishes temporary files of concurrent saves from one process (the pid covers processes). */
static atomic_uint tmp_counter;

yt_status
yt__out_open(yt__out_file *o, const char *path)
{
    o->f = NULL;
    o->path = path;
    o->tmp_path = NULL;
    size_t cap = strlen(path) + 64;
    char *tmp = malloc(cap);
    if (tmp == NULL)
        return yt__fail_status(YT_ERR_NOMEM, "%s: out of memory", path);
    /* O_EXCL: never write into a file someone else created; 0666 lets the umask decide the mode,
     * as for any file the program creates (mkstemp would force 0600). */
    for (int attempt = 0; attempt < 100; attempt++) {
        unsigned n = atomic_fetch_add(&tmp_counter, 1);
        snprintf(tmp, cap, "%s.%ld.%u.tmp", path, (long)getpid(), n);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno == EEXIST)
            continue;
        if (fd < 0) {
            int err = errno;
            free(tmp);
            return yt__fail_status(YT_ERR_IO, "%s: cannot create a temporary file beside it: %s",
                                   path, strerror(err));
        }
        o->f = fdopen(fd, "wb");
        if (o->f == NULL) {
            int err = errno;
            close(fd);
            unlink(tmp);
            free(tmp);
            return yt__fail_status(YT_ERR_IO, "%s: %s", path, strerror(err));
        }
        o->tmp_path = tmp;
        return YT_OK;
    }
    free(tmp);
    return yt__fail_status(YT_ERR_IO, "%s: cannot create a temporary file beside it", path);
}

yt_status
yt__out_write(yt__out_file *o, const void *data, size_t n)
{
    if (n > 0 && fwrite(data, 1, n, o->f) != n)
        return yt__fail_status(YT_ERR_IO, "%s: write failed: %s", o->path, strerror(errno));
    return YT_OK;
}

yt_status
yt__out_write_tensor(yt__out_file *o, yt_tensor *t)
{
    size_t nbytes = (size_t)yt_tensor_numel(t) * yt_dtype_size(yt_tensor_dtype(t));
    if (nbytes == 0)
        return YT_OK;
    if (yt_tensor_is_contiguous(t))
        return yt__out_write(o, yt_tensor_data(t), nbytes);
    /* A strided view is copied once into row-major order: outside any scope of the caller's,
     * and without recording autograd history. */
    yt__scope_suspend();
    bool grad = yt_set_grad_enabled(false);
    yt_tensor *c = yt_contiguous(t);
    yt_set_grad_enabled(grad);
    yt__scope_resume();
    if (c == NULL)
        return yt_errcode();
    yt_status st = yt__out_write(o, yt_tensor_data(c), nbytes);
    yt_release(c);
    return st;
}

yt_status
yt__out_commit(yt__out_file *o)
{
    yt_status st = YT_OK;
    int err = 0;
    if (fflush(o->f) != 0 || fsync(fileno(o->f)) != 0)
        err = errno;
    if (fclose(o->f) != 0 && err == 0)
        err = errno;
    o->f = NULL;
    if (err != 0) {
        st = yt__fail_status(YT_ERR_IO, "%s: write failed: %s", o->path, strerror(err));
    } else if (rename(o->tmp_path, o->path) != 0) {
        err = errno;
        st = yt__fail_status(YT_ERR_IO, "%s: cannot rename %s over it: %s", o->path, o->tmp_path,
                             strerror(err));
    }
    if (st != YT_OK)
        unlink(o->tmp_path);
    free(o->tmp_path);
    o->tmp_path = NULL;
    return st;
}

void
yt__out_abort(yt__out_file *o)
{
    if (o->f != NULL)
        fclose(o->f);
    if (o->tmp_path != NULL)
        unlink(o->tmp_path);
    free(o->tmp_path);
    o->f = NULL;
    o->tmp_path = NULL;
}

yt_status
yt__in_open(const char *path, int *fd, int64_t *size)
{
    int f = open(path, O_RDONLY | O_CLOEXEC);
    if (f < 0)
        return yt__fail_status(YT_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(f, &sb) != 0) {
        int err = errno;
        close(f);
        return yt__fail_status(YT_ERR_IO, "%s: cannot stat: %s", path, strerror(err));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(f);
        return yt__fail_status(YT_ERR_IO, "%s: not a regular file", path);
    }
    *fd = f;
    *size = (int64_t)sb.st_size;
    return YT_OK;
}

yt_status
yt__in_read(int fd, const char *path, int64_t offset, void *buf, size_t n, const char *what)
{
    char *p = buf;
    size_t done = 0;
    while (done < n) {
        ssize_t got = pread(fd, p + done, n - done, (off_t)(offset + (int64_t)done));
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return yt__fail_status(YT_ERR_IO, "%s: cannot read %s: %s", path, what,
                                   strerror(errno));
        if (got == 0)
            return yt__fail_status(YT_ERR_IO, "%s: the file ends inside %s (%zu of %zu bytes read)",
                                   path, what, done, n);
        done += (size_t)got;
    }
    return YT_OK;
}

void
yt__normalize_bool(unsigned char *data, size_t n)
{
    for (size_t i = 0; i < n; i++)
        data[i] = data[i] != 0;
}
