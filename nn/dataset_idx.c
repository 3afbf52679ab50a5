/* MNIST-style IDX files (http://yann.lecun.com/exdb/mnist/): a 4-byte magic (0, 0, dtype code,
 * rank), rank big-endian u32 sizes, then the data. Read through zlib's gz* calls, which read gzip
 * and raw files alike. The images stay bytes in memory (47 MB for Fashion-MNIST's training set
 * instead of 188 MB of floats) and become f32 in get_batch, on the loading thread. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "loader_internal.h"

enum { IDX_UBYTE = 0x08, READ_CHUNK = 1 << 24 };

typedef struct idx_ctx {
    uint8_t *images; /* count x rows x cols */
    uint8_t *labels; /* count */
    int64_t count, rows, cols;
    float scale[256]; /* byte -> f32 in [0, 1] */
} idx_ctx;

static const char *
dtype_code_name(int code)
{
    switch (code) {
    case 0x08:
        return "unsigned byte";
    case 0x09:
        return "signed byte";
    case 0x0B:
        return "short";
    case 0x0C:
        return "int";
    case 0x0D:
        return "float";
    case 0x0E:
        return "double";
    }
    return "unknown";
}

/* Reads up to `n` bytes; returns the count read, or -1 after recording a gzip error. */
static int64_t
read_bytes(gzFile f, const char *path, void *buf, int64_t n)
{
    int64_t done = 0;
    while (done < n) {
        int64_t want = n - done < READ_CHUNK ? n - done : READ_CHUNK;
        int got = gzread(f, (char *)buf + done, (unsigned)want);
        if (got < 0) {
            int errnum;
            const char *msg = gzerror(f, &errnum);
            if (errnum == Z_ERRNO)
                msg = strerror(errno);
            yt__fail(YT_ERR_IO, "%s: cannot read: %s", path, msg);
            return -1;
        }
        if (got == 0)
            break;
        done += got;
    }
    return done;
}

/* "; gzip: unexpected end of file" when zlib saw a cut-off stream, else "". */
static const char *
gzip_note(gzFile f)
{
    int errnum;
    const char *msg = gzerror(f, &errnum);
    return errnum == Z_BUF_ERROR || errnum == Z_DATA_ERROR ? msg : "";
}

/* Reads an IDX file of unsigned bytes with `rank` dims into *data (malloc'd) and dims[]. */
static yt_status
read_idx(const char *path, int rank, const char *layout, int64_t *dims, uint8_t **data)
{
    *data = NULL;
    errno = 0;
    gzFile f = gzopen(path, "rb");
    if (f == NULL)
        return yt__fail_status(YT_ERR_IO, "%s: cannot open: %s", path,
                               errno ? strerror(errno) : "out of memory");
    gzbuffer(f, 1 << 17);
    yt_status st = YT_OK;
    uint8_t head[4 + 4 * 3];
    int64_t got = read_bytes(f, path, head, 4);
    if (got < 0) {
        st = YT_ERR_IO;
        goto done;
    }
    if (got < 4) {
        st = yt__fail_status(YT_ERR_IO, "%s: truncated: %s, shorter than the 4-byte IDX magic%s%s",
                             path, got == 0 ? "empty file" : "the file ends",
                             *gzip_note(f) ? ": " : "", gzip_note(f));
        goto done;
    }
    if (head[0] != 0 || head[1] != 0) {
        st = yt__fail_status(YT_ERR_IO,
                             "%s: not an IDX file: it starts with bytes %02x %02x %02x %02x, "
                             "expected 00 00 <dtype code> <rank>",
                             path, head[0], head[1], head[2], head[3]);
        goto done;
    }
    if (head[2] != IDX_UBYTE) {
        st = yt__fail_status(YT_ERR_IO,
                             "%s: IDX dtype code 0x%02x (%s) is not supported: MNIST-style files "
                             "hold unsigned bytes (0x08)",
                             path, head[2], dtype_code_name(head[2]));
        goto done;
    }
    if (head[3] != rank) {
        st = yt__fail_status(YT_ERR_IO, "%s: the IDX file has %d dims, expected %d (%s)", path,
                             head[3], rank, layout);
        goto done;
    }
    got = read_bytes(f, path, head + 4, 4 * rank);
    if (got < 0) {
        st = YT_ERR_IO;
        goto done;
    }
    if (got < 4 * rank) {
        st = yt__fail_status(YT_ERR_IO,
                             "%s: truncated: the file ends inside the %d sizes of the "
                             "IDX header",
                             path, rank);
        goto done;
    }
    int64_t total = 1;
    for (int i = 0; i < rank; i++) {
        const uint8_t *b = head + 4 + 4 * i;
        dims[i] = (int64_t)b[0] << 24 | (int64_t)b[1] << 16 | (int64_t)b[2] << 8 | b[3];
        if (!yt__mul_ok(&total, total, dims[i]) || total > ((int64_t)1 << 40)) {
            st =
                yt__fail_status(YT_ERR_IO, "%s: the IDX sizes announce more than 2^40 bytes", path);
            goto done;
        }
    }
    /* Grow the buffer as the data arrives, so a corrupt header announcing terabytes fails on
     * the missing data instead of on a huge allocation. */
    int64_t cap = total < READ_CHUNK ? total : READ_CHUNK, have = 0;
    uint8_t *buf = malloc((size_t)(cap > 0 ? cap : 1));
    if (buf == NULL) {
        st =
            yt__fail_status(YT_ERR_NOMEM, "%s: out of memory for %lld bytes", path, (long long)cap);
        goto done;
    }
    *data = buf;
    for (;;) {
        got = read_bytes(f, path, buf + have, cap - have);
        if (got < 0) {
            st = YT_ERR_IO;
            goto done;
        }
        have += got;
        if (have < cap || cap == total)
            break;
        cap = total - cap < cap ? total : 2 * cap;
        buf = realloc(*data, (size_t)cap);
        if (buf == NULL) {
            st = yt__fail_status(YT_ERR_NOMEM, "%s: out of memory for %lld bytes", path,
                                 (long long)cap);
            goto done;
        }
        *data = buf;
    }
    if (have < total) {
        st = yt__fail_status(YT_ERR_IO,
                             "%s: truncated: the header announces %lld bytes of data (%s), the "
                             "file holds %lld%s%s",
                             path, (long long)total, layout, (long long)have,
                             *gzip_note(f) ? "; gzip: " : "", gzip_note(f));
        goto done;
    }
    uint8_t extra;
    got = read_bytes(f, path, &extra, 1);
    if (got < 0) {
        st = YT_ERR_IO;
        goto done;
    }
    if (got > 0)
        st = yt__fail_status(YT_ERR_IO,
                             "%s: more data after the %lld bytes the header announces: the sizes "
                             "in the header are wrong",
                             path, (long long)total);
done:
    gzclose(f);
    if (st != YT_OK) {
        free(*data);
        *data = NULL;
    }
    return st;
}

static int64_t
idx_length(void *ctx)
{
    return ((idx_ctx *)ctx)->count;
}

static yt_status
idx_get_batch(void *ctx_, const int64_t *indices, int64_t n, void *input, void *target)
{
    const idx_ctx *ctx = ctx_;
    int64_t pixels = ctx->rows * ctx->cols;
    float *out = input;
    int64_t *labels = target;
    for (int64_t i = 0; i < n; i++) {
        const uint8_t *img = ctx->images + indices[i] * pixels;
        float *o = out + i * pixels;
        for (int64_t p = 0; p < pixels; p++)
            o[p] = ctx->scale[img[p]];
        labels[i] = ctx->labels[indices[i]];
    }
    return YT_OK;
}

static void
idx_release(void *ctx_)
{
    idx_ctx *ctx = ctx_;
    if (ctx == NULL)
        return;
    free(ctx->images);
    free(ctx->labels);
    free(ctx);
}

static const yt_dataset_kind idx_kind = {
    .name = "IDX",
    .length = idx_length,
    .get_batch = idx_get_batch,
    .release_ctx = idx_release,
};

yt_dataset *
yt_idx_dataset_open(const char *images_path, const char *labels_path)
{
    if (images_path == NULL || labels_path == NULL)
        return YT__FAIL_NULL(YT_ERR_VALUE, "idx_dataset_open: %s is NULL",
                             images_path == NULL ? "images_path" : "labels_path");
    idx_ctx *ctx = calloc(1, sizeof *ctx);
    if (ctx == NULL)
        return YT__FAIL_NULL(YT_ERR_NOMEM, "idx_dataset_open: out of memory");
    int64_t idims[3], ldims[1];
    if (read_idx(images_path, 3, "images: count, rows, columns", idims, &ctx->images) != YT_OK ||
        read_idx(labels_path, 1, "labels: count", ldims, &ctx->labels) != YT_OK) {
        idx_release(ctx);
        return NULL;
    }
    if (idims[0] != ldims[0]) {
        idx_release(ctx);
        return YT__FAIL_NULL(YT_ERR_IO, "%s: %lld labels, but %s holds %lld images", labels_path,
                             (long long)ldims[0], images_path, (long long)idims[0]);
    }
    ctx->count = idims[0];
    ctx->rows = idims[1];
    ctx->cols = idims[2];
    for (int v = 0; v < 256; v++)
        ctx->scale[v] = (float)v / 255.0f; /* ToTensor: byte tensor .float().div(255) */
    const int64_t shape[3] = {1, ctx->rows, ctx->cols};
    return yt_dataset_new(&idx_kind, ctx, shape, 3, YT_DTYPE_F32, NULL, 0, YT_DTYPE_I64);
}
