/* NumPy .npy files (include/yaten/io.h).
 *
 * The format (NumPy's numpy/lib/format.py, NEP 1):
 * - 6 bytes of magic "\x93NUMPY", then the format version as two bytes (major, minor):
 *   1.0, 2.0 or 3.0.
 * - The header length: 2 bytes little-endian in 1.0, 4 bytes in 2.0 and 3.0.
 * - The header: the repr of a Python dict with exactly the keys 'descr' (a dtype string such as
 *   '<f4': byte order '<' little, '>' big, '|' not applicable, then kind and size), 'fortran_order'
 *   (True or False) and 'shape' (a tuple of ints: () for a scalar, (3,) for one dimension),
 *   written by NumPy as "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", padded with
 *   spaces and ended by '\n' so that the data starts at a multiple of 64 bytes (16 in old
 *   versions). 1.0 and 2.0 headers are latin-1, 3.0 headers UTF-8.
 * - The data: numel x itemsize bytes, in C order, or in Fortran order (column-major) when
 *   fortran_order is True.
 *
 * The header grammar is tiny and fixed, so it is parsed here by hand (no Python evaluator): a
 * dict of quoted keys whose values are a quoted string, True/False, or a tuple of non-negative
 * integers, with optional trailing commas as Python allows. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io_file.h"

#define MAX_HEADER_BYTES 1000000 /* NumPy's own reader stops at 10,000 by default */

static const struct {
    const char *kind; /* descr without the byte-order character */
    yt_dtype dtype;
} descr_table[] = {
    {"f8", YT_DTYPE_F64}, {"f4", YT_DTYPE_F32}, {"f2", YT_DTYPE_F16},
    {"i8", YT_DTYPE_I64}, {"i4", YT_DTYPE_I32}, {"i2", YT_DTYPE_I16},
    {"i1", YT_DTYPE_I8},  {"u1", YT_DTYPE_U8},  {"b1", YT_DTYPE_BOOL},
};

/* ---------------------------------------------------------------- header parsing */

typedef struct npy_header {
    char descr[32];
    bool fortran_order;
    int ndim;
    int64_t shape[YT_MAX_DIM];
} npy_header;

typedef struct parser {
    const char *p, *begin, *end;
    const char *path;
} parser;

static void
skip_space(parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static bool
accept(parser *ps, char c)
{
    skip_space(ps);
    if (ps->p < ps->end && *ps->p == c) {
        ps->p++;
        return true;
    }
    return false;
}

static yt_status
syntax(parser *ps, const char *expected)
{
    return yt__fail_status(YT_ERR_IO, "%s: bad .npy header: expected %s at header byte %td",
                           ps->path, expected, ps->p - ps->begin);
}

/* A quoted string without escapes (none of the header's strings needs one), into buf. */
static yt_status
parse_string(parser *ps, char *buf, size_t cap)
{
    skip_space(ps);
    if (ps->p >= ps->end || (*ps->p != '\'' && *ps->p != '"'))
        return syntax(ps, "a quoted string");
    char quote = *ps->p++;
    size_t n = 0;
    while (ps->p < ps->end && *ps->p != quote) {
        if (*ps->p == '\\' || *ps->p == '\n')
            return syntax(ps, "a string without escapes");
        if (n + 1 >= cap)
            return syntax(ps, "a shorter string");
        buf[n++] = *ps->p++;
    }
    if (ps->p >= ps->end)
        return syntax(ps, "the end of a string");
    ps->p++;
    buf[n] = '\0';
    return YT_OK;
}

static yt_status
parse_bool(parser *ps, bool *out)
{
    skip_space(ps);
    size_t left = (size_t)(ps->end - ps->p);
    if (left >= 4 && memcmp(ps->p, "True", 4) == 0) {
        ps->p += 4;
        *out = true;
        return YT_OK;
    }
    if (left >= 5 && memcmp(ps->p, "False", 5) == 0) {
        ps->p += 5;
        *out = false;
        return YT_OK;
    }
    return syntax(ps, "True or False for 'fortran_order'");
}

/* "(2, 3)", "(3,)", "()": a Python tuple of non-negative integers (a lone "(3)" is the int 3). */
static yt_status
parse_shape(parser *ps, npy_header *h)
{
    if (!accept(ps, '('))
        return syntax(ps, "a tuple for 'shape'");
    h->ndim = 0;
    bool trailing_comma = false;
    for (;;) {
        skip_space(ps);
        if (accept(ps, ')'))
            break;
        if (ps->p >= ps->end || !isdigit((unsigned char)*ps->p))
            return syntax(ps, "a non-negative integer in 'shape'");
        int64_t v = 0;
        while (ps->p < ps->end && isdigit((unsigned char)*ps->p)) {
            if (!yt__mul_ok(&v, v, 10) || !yt__add_ok(&v, v, *ps->p - '0'))
                return yt__fail_status(YT_ERR_IO,
                                       "%s: bad .npy header: a size in 'shape' is "
                                       "larger than 2^63",
                                       ps->path);
            ps->p++;
        }
        if (ps->p < ps->end && *ps->p == 'L') /* Python 2's long literal */
            ps->p++;
        if (h->ndim == YT_MAX_DIM)
            return yt__fail_status(YT_ERR_IO, "%s: 'shape' has more than %d dimensions", ps->path,
                                   YT_MAX_DIM);
        h->shape[h->ndim++] = v;
        trailing_comma = accept(ps, ',');
        if (!trailing_comma) {
            if (!accept(ps, ')'))
                return syntax(ps, "',' or ')' in 'shape'");
            break;
        }
    }
    if (h->ndim == 1 && !trailing_comma)
        return yt__fail_status(YT_ERR_IO,
                               "%s: bad .npy header: 'shape' is (%lld), an int, not a tuple "
                               "(write (%lld,))",
                               ps->path, (long long)h->shape[0], (long long)h->shape[0]);
    return YT_OK;
}

static yt_status
parse_header(const char *path, const char *text, size_t n, npy_header *h)
{
    parser ps = {text, text, text + n, path};
    bool seen[3] = {false, false, false};
    static const char *const keys[3] = {"descr", "fortran_order", "shape"};
    if (!accept(&ps, '{'))
        return syntax(&ps, "'{'");
    for (;;) {
        if (accept(&ps, '}'))
            break;
        char key[32];
        if (parse_string(&ps, key, sizeof key) != YT_OK)
            return yt_errcode();
        int k = 0;
        while (k < 3 && strcmp(key, keys[k]) != 0)
            k++;
        if (k == 3)
            return yt__fail_status(YT_ERR_IO,
                                   "%s: bad .npy header: unknown key '%s' (expected 'descr', "
                                   "'fortran_order', 'shape')",
                                   path, key);
        if (seen[k])
            return yt__fail_status(YT_ERR_IO, "%s: bad .npy header: key '%s' appears twice", path,
                                   key);
        seen[k] = true;
        if (!accept(&ps, ':'))
            return syntax(&ps, "':'");
        yt_status st = k == 0   ? parse_string(&ps, h->descr, sizeof h->descr)
                       : k == 1 ? parse_bool(&ps, &h->fortran_order)
                                : parse_shape(&ps, h);
        if (st != YT_OK)
            return st;
        if (!accept(&ps, ',')) {
            if (!accept(&ps, '}'))
                return syntax(&ps, "',' or '}'");
            break;
        }
    }
    skip_space(&ps);
    if (ps.p != ps.end)
        return syntax(&ps, "only spaces after the dict");
    for (int k = 0; k < 3; k++)
        if (!seen[k])
            return yt__fail_status(YT_ERR_IO, "%s: bad .npy header: key '%s' is missing", path,
                                   keys[k]);
    return YT_OK;
}

static yt_status
dtype_of_descr(const char *path, const char *descr, yt_dtype *out)
{
    char order = descr[0];
    const char *kind = order != '\0' ? descr + 1 : descr;
    for (size_t i = 0; i < sizeof descr_table / sizeof descr_table[0]; i++) {
        if (strcmp(kind, descr_table[i].kind) != 0)
            continue;
        /* '=' is native order, little-endian here; a 1-byte type has no byte order at all. */
        bool one_byte = yt_dtype_size(descr_table[i].dtype) == 1;
        if (order == '<' || order == '=' || (one_byte && (order == '|' || order == '>'))) {
            *out = descr_table[i].dtype;
            return YT_OK;
        }
        if (order == '>')
            return yt__fail_status(YT_ERR_IO,
                                   "%s: dtype '%s' is big-endian; yaten reads little-endian "
                                   "arrays (in NumPy: a.astype(a.dtype.newbyteorder('<')))",
                                   path, descr);
    }
    return yt__fail_status(YT_ERR_IO,
                           "%s: dtype '%s' is not supported (yaten reads <f8 <f4 <f2 <i8 <i4 <i2 "
                           "|i1 |u1 |b1)",
                           path, descr);
}

/* ---------------------------------------------------------------- load */

static yt_tensor *
load_fd(const char *path, int fd, int64_t file_size)
{
    unsigned char pre[12];
    if (file_size < 10)
        return yt__fail(YT_ERR_IO, "%s: the file is %lld bytes, too short for a .npy file", path,
                        (long long)file_size);
    if (yt__in_read(fd, path, 0, pre, 10, "the .npy preamble") != YT_OK)
        return NULL;
    if (memcmp(pre, "\x93NUMPY", 6) != 0)
        return yt__fail(YT_ERR_IO, "%s: not a .npy file (the magic \\x93NUMPY is missing)", path);
    int major = pre[6], minor = pre[7];
    if (major < 1 || major > 3 || minor != 0)
        return yt__fail(YT_ERR_IO, "%s: .npy format version %d.%d is not supported (1.0, 2.0, 3.0)",
                        path, major, minor);
    int64_t header_at = major == 1 ? 10 : 12;
    uint64_t hlen = (uint64_t)pre[8] | (uint64_t)pre[9] << 8;
    if (major > 1) {
        if (file_size < 12)
            return yt__fail(YT_ERR_IO, "%s: the file ends inside the header length", path);
        if (yt__in_read(fd, path, 10, pre + 10, 2, "the header length") != YT_OK)
            return NULL;
        hlen |= (uint64_t)pre[10] << 16 | (uint64_t)pre[11] << 24;
    }
    if (hlen > MAX_HEADER_BYTES)
        return yt__fail(YT_ERR_IO, "%s: header length %llu is absurd (more than %d bytes)", path,
                        (unsigned long long)hlen, MAX_HEADER_BYTES);
    if ((int64_t)hlen > file_size - header_at)
        return yt__fail(YT_ERR_IO,
                        "%s: header length %llu runs past the end of the file (%lld bytes)", path,
                        (unsigned long long)hlen, (long long)file_size);
    char *text = malloc(hlen + 1);
    if (text == NULL)
        return yt__fail(YT_ERR_NOMEM, "%s: out of memory", path);
    npy_header h = {.ndim = 0};
    yt_status st = yt__in_read(fd, path, header_at, text, hlen, "the header");
    if (st == YT_OK)
        st = parse_header(path, text, hlen, &h);
    free(text);
    yt_dtype dtype = YT_DTYPE_F32;
    if (st == YT_OK)
        st = dtype_of_descr(path, h.descr, &dtype);
    if (st != YT_OK)
        return NULL;

    /* A Fortran-order array is the C-order array of the reversed shape, transposed. */
    yt_shape shape = {.dim = h.ndim};
    for (int d = 0; d < h.ndim; d++)
        shape.sizes[d] = h.fortran_order ? h.shape[h.ndim - 1 - d] : h.shape[d];
    int64_t numel, nbytes;
    char sizes[YT__SIZES_BUF];
    if (!yt__checked_numel(&numel, shape.sizes, shape.dim) ||
        !yt__mul_ok(&nbytes, numel, (int64_t)yt_dtype_size(dtype)))
        return yt__fail(YT_ERR_IO, "%s: shape %s of '%s' holds more than 2^63 bytes", path,
                        yt__format_sizes(sizes, sizeof sizes, h.shape, h.ndim), h.descr);
    int64_t data_at = header_at + (int64_t)hlen;
    int64_t have = file_size - data_at;
    if (have != nbytes)
        return yt__fail(YT_ERR_IO, "%s: %s '%s' needs %lld bytes of data but the file has %lld%s",
                        path, yt__format_sizes(sizes, sizeof sizes, h.shape, h.ndim), h.descr,
                        (long long)nbytes, (long long)have,
                        have < nbytes ? " (truncated)" : " (trailing bytes)");
    yt_tensor *t = yt__empty(&shape, dtype, YT_DEVICE_CPU);
    if (t == NULL)
        return NULL;
    if (nbytes > 0 &&
        yt__in_read(fd, path, data_at, yt_tensor_data(t), (size_t)nbytes, "the data") != YT_OK) {
        yt_release(t);
        return NULL;
    }
    if (dtype == YT_DTYPE_BOOL)
        yt__normalize_bool(yt_tensor_data(t), (size_t)nbytes);
    if (h.fortran_order && h.ndim > 1) {
        int64_t dims[YT_MAX_DIM];
        for (int d = 0; d < h.ndim; d++)
            dims[d] = h.ndim - 1 - d;
        yt__scope_suspend();
        yt_tensor *view = yt_permute(t, dims, h.ndim);
        yt_tensor *c = yt_contiguous(view);
        yt__scope_resume();
        yt_release(view);
        yt_release(t);
        t = c;
    }
    return t;
}

yt_tensor *
yt_npy_load(const char *path)
{
    if (path == NULL)
        return yt__fail(YT_ERR_VALUE, "npy_load: path is NULL");
    int fd;
    int64_t size;
    if (yt__in_open(path, &fd, &size) != YT_OK)
        return NULL;
    yt_tensor *t = load_fd(path, fd, size);
    close(fd);
    return yt__scope_track(t);
}

/* ---------------------------------------------------------------- save */

static const char *
descr_of(yt_dtype dtype)
{
    switch (dtype) {
    case YT_DTYPE_F64:
        return "<f8";
    case YT_DTYPE_F32:
        return "<f4";
    case YT_DTYPE_F16:
        return "<f2";
    case YT_DTYPE_I64:
        return "<i8";
    case YT_DTYPE_I32:
        return "<i4";
    case YT_DTYPE_I16:
        return "<i2";
    case YT_DTYPE_I8:
        return "|i1";
    case YT_DTYPE_U8:
        return "|u1";
    case YT_DTYPE_BOOL:
        return "|b1";
    default:
        return NULL;
    }
}

yt_status
yt_npy_save(const char *path, yt_tensor *t)
{
    if (path == NULL || t == NULL)
        return yt__fail_status(YT_ERR_VALUE, "npy_save: %s is NULL", path == NULL ? "path" : "t");
    const char *descr = descr_of(yt_tensor_dtype(t));
    if (descr == NULL)
        return yt__fail_status(YT_ERR_DTYPE,
                               "npy_save: %s: NumPy has no %s dtype (convert with yt_to first)",
                               path, yt_dtype_name(yt_tensor_dtype(t)));
    if (yt_tensor_device(t) != YT_DEVICE_CPU)
        return yt__fail_status(YT_ERR_DEVICE, "npy_save: %s: the tensor is on %s", path,
                               yt_device_name(yt_tensor_device(t)));

    /* NumPy's own layout: the dict repr with a trailing ", ", spaces, '\n', data 64-aligned. */
    char header[512];
    int n = snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                     descr);
    for (int d = 0; d < yt_tensor_dim(t); d++)
        n += snprintf(header + n, sizeof header - (size_t)n, d ? ", %lld" : "%lld",
                      (long long)yt_tensor_size(t, d));
    n +=
        snprintf(header + n, sizeof header - (size_t)n, "%s), }", yt_tensor_dim(t) == 1 ? "," : "");
    size_t total = (size_t)(10 + n + 1 + 63) / 64 * 64; /* preamble 10 bytes in version 1.0 */
    size_t hlen = total - 10;
    memset(header + n, ' ', hlen - (size_t)n - 1);
    header[hlen - 1] = '\n';
    unsigned char pre[10] = {0x93,
                             'N',
                             'U',
                             'M',
                             'P',
                             'Y',
                             1,
                             0,
                             (unsigned char)(hlen & 0xff),
                             (unsigned char)(hlen >> 8)};

    yt__out_file o;
    yt_status st = yt__out_open(&o, path);
    if (st != YT_OK)
        return st;
    st = yt__out_write(&o, pre, sizeof pre);
    if (st == YT_OK)
        st = yt__out_write(&o, header, hlen);
    if (st == YT_OK)
        st = yt__out_write_tensor(&o, t);
    if (st == YT_OK)
        return yt__out_commit(&o);
    yt__out_abort(&o);
    return st;
}
