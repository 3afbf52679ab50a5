/* .npy: round trips in every dtype NumPy shares with yaten (0-d, zero-size, non-contiguous),
 * NumPy's exact header bytes, hand-made headers in every version and order, and one test per
 * malformed-file rule, each checking the message and that nothing leaks. NumPy itself reads and
 * writes these files in tests/io/test_npy_interop.py. */
#include <math.h>
#include <stdint.h>

#include "test_io_util.h"

TestSuite(npy, .init = io_tmp_begin, .fini = io_tmp_end);

static yt_tensor *
iota_in(yt_dtype dtype, const int64_t *sizes, int nd)
{
    yt_tensor *f = test_iota(sizes, nd);
    yt_tensor *g = dtype == YT_DTYPE_BOOL ? yt_remainder_scalar(f, yt_int(3)) : yt_retain(f);
    yt_tensor *t = yt_to(g, dtype);
    yt_release(g);
    yt_release(f);
    cr_assert_not_null(t, "%s", yt_errmsg());
    return t;
}

Test(npy, round_trip_every_dtype_and_shape)
{
    const yt_dtype dtypes[] = {YT_DTYPE_F64, YT_DTYPE_F32, YT_DTYPE_F16, YT_DTYPE_I64, YT_DTYPE_I32,
                               YT_DTYPE_I16, YT_DTYPE_I8,  YT_DTYPE_U8,  YT_DTYPE_BOOL};
    const int64_t s0[1] = {0}, s5[] = {5}, s23[] = {2, 3}, s034[] = {0, 3, 4},
                  s2345[] = {2, 3, 4, 5};
    const int64_t *shapes[] = {s0, s5, s23, s034, s2345};
    const int nds[] = {0, 1, 2, 3, 4};
    const char *path = io_path("a.npy");
    for (size_t k = 0; k < sizeof dtypes / sizeof dtypes[0]; k++) {
        for (int s = 0; s < 5; s++) {
            yt_tensor *t = iota_in(dtypes[k], shapes[s], nds[s]);
            cr_assert_eq(yt_npy_save(path, t), YT_OK, "%s", yt_errmsg());
            yt_tensor *got = yt_npy_load(path);
            io_expect_same(got, t, yt_dtype_name(dtypes[k]));
            yt_release(got);
            if (nds[s] >= 2) { /* a non-contiguous view is written in row-major order */
                yt_tensor *v = yt_transpose(t, 0, 1);
                cr_assert_eq(yt_npy_save(path, v), YT_OK, "%s", yt_errmsg());
                got = yt_npy_load(path);
                io_expect_same(got, v, "transposed");
                yt_release(got);
                yt_release(v);
            }
            yt_release(t);
        }
    }
    cr_assert_eq(io_file_count(), 1, "a temporary file was left behind");
    YT_ASSERT_NO_LEAKS();
}

Test(npy, writes_numpys_header_bytes)
{
    const int64_t s23[] = {2, 3}, s3[] = {3};
    yt_tensor *t = iota_in(YT_DTYPE_F32, s23, 2);
    const char *path = io_path("h.npy");
    cr_assert_eq(yt_npy_save(path, t), YT_OK, "%s", yt_errmsg());
    size_t n;
    unsigned char *raw = io_read_bytes(path, &n);
    /* What numpy.save writes for np.zeros((2, 3), np.float32): data at byte 128. */
    const char want[] = "\x93NUMPY\x01\x00\x76\x00{'descr': '<f4', 'fortran_order': False, "
                        "'shape': (2, 3), }";
    cr_assert(memcmp(raw, want, sizeof want - 1) == 0, "header: %.80s", raw + 10);
    cr_assert_eq(n, 128 + 24);
    cr_assert_eq(raw[127], '\n');
    for (size_t i = sizeof want - 1; i < 127; i++)
        cr_assert_eq(raw[i], ' ');
    free(raw);
    yt_release(t);

    /* One dimension: "(3,)"; zero dimensions: "()"; 1-byte types: '|'. */
    t = iota_in(YT_DTYPE_U8, s3, 1);
    cr_assert_eq(yt_npy_save(path, t), YT_OK);
    raw = io_read_bytes(path, &n);
    cr_assert(
        strstr((char *)raw + 10, "{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }"));
    free(raw);
    yt_release(t);
    t = yt_scalar_tensor(yt_bool(true), YT_DTYPE_BOOL);
    cr_assert_eq(yt_npy_save(path, t), YT_OK);
    raw = io_read_bytes(path, &n);
    cr_assert(strstr((char *)raw + 10, "{'descr': '|b1', 'fortran_order': False, 'shape': (), }"));
    cr_assert_eq(n, 129);
    free(raw);
    yt_release(t);
    YT_ASSERT_NO_LEAKS();
}

Test(npy, save_rejects_bad_arguments)
{
    const int64_t s2[] = {2};
    yt_tensor *t = iota_in(YT_DTYPE_BF16, s2, 1);
    const char *path = io_path("b.npy");
    cr_assert_eq(yt_npy_save(path, t), YT_ERR_DTYPE);
    YT_ASSERT_ERROR(YT_ERR_DTYPE, "npy_save: ");
    cr_assert(strstr(yt_errmsg(), "NumPy has no bf16 dtype") != NULL, "%s", yt_errmsg());
    cr_assert_eq(yt_npy_save(NULL, t), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "npy_save: path is NULL");
    cr_assert_eq(yt_npy_save(path, NULL), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "npy_save: t is NULL");
    cr_assert_null(yt_npy_load(NULL));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "npy_load: path is NULL");
    cr_assert_eq(io_file_count(), 0);
    yt_release(t);
    YT_ASSERT_NO_LEAKS();
}

/* Writes a .npy file: version major.0, the header text (padded to end with '\n' unless `raw`),
 * and `data_len` bytes of data. */
static const char *
write_npy(const char *name, int major, const char *header, const void *data, size_t data_len)
{
    const char *path = io_path(name);
    size_t h = strlen(header);
    size_t pre = major == 1 ? 10 : 12;
    unsigned char *buf = malloc(pre + h + data_len + 1);
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)major;
    buf[7] = 0;
    for (size_t i = 0; i < pre - 8; i++)
        buf[8 + i] = (unsigned char)(h >> (8 * i));
    memcpy(buf + pre, header, h);
    if (data_len > 0)
        memcpy(buf + pre + h, data, data_len);
    io_write_bytes(path, buf, pre + h + data_len);
    free(buf);
    return path;
}

static void
expect_bad(const char *path, const char *what)
{
    cr_assert_null(yt_npy_load(path), "expected an error for: %s", what);
    char prefix[300];
    snprintf(prefix, sizeof prefix, "%s: ", path);
    YT_ASSERT_ERROR(YT_ERR_IO, prefix);
    cr_assert(strstr(yt_errmsg(), what) != NULL, "message '%s' does not say '%s'", yt_errmsg(),
              what);
    YT_ASSERT_NO_LEAKS();
}

Test(npy, reads_every_version_order_and_spelling)
{
    const float c_order[] = {0, 1, 2, 3, 4, 5}; /* [[0, 1, 2], [3, 4, 5]] */
    const float f_order[] = {0, 3, 1, 4, 2, 5}; /* the same array, column-major */
    const double want[] = {0, 1, 2, 3, 4, 5};
    const int64_t s23[] = {2, 3};
    const char *hc = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }      \n";
    const char *hf = "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }       \n";
    for (int major = 1; major <= 3; major++) {
        yt_tensor *t = yt_npy_load(write_npy("c.npy", major, hc, c_order, sizeof c_order));
        test_expect_values(t, want, 6, s23, 2);
        yt_release(t);
        t = yt_npy_load(write_npy("f.npy", major, hf, f_order, sizeof f_order));
        test_expect_values(t, want, 6, s23, 2);
        cr_assert(yt_tensor_is_contiguous(t));
        yt_release(t);
    }
    /* Fortran order in 3-D: element [i][j][k] at i + 2j + 6k. */
    int16_t f3[24];
    double w3[24];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++) {
                f3[i + 2 * j + 6 * k] = (int16_t)(100 * i + 10 * j + k);
                w3[(i * 3 + j) * 4 + k] = 100 * i + 10 * j + k;
            }
    const int64_t s234[] = {2, 3, 4};
    yt_tensor *t = yt_npy_load(
        write_npy("f3.npy", 1, "{'descr': '<i2', 'fortran_order': True, 'shape': (2, 3, 4), }\n",
                  f3, sizeof f3));
    test_expect_values(t, w3, 24, s234, 3);
    yt_release(t);

    /* Other spellings Python's repr or NumPy's history produce: keys in any order, double
     * quotes, no trailing comma, Python 2 longs, '=' native order, '<' on a 1-byte type. */
    const int64_t s3[] = {3};
    const double w012[] = {0, 1, 2};
    const int8_t i8[] = {0, 1, 2};
    const char *spellings[] = {
        "{'shape': (3,), 'fortran_order': False, 'descr': '|i1'}\n",
        "{\"descr\": \"|i1\", \"fortran_order\": False, \"shape\": (3L,)}\n",
        "{'descr':'<i1','fortran_order':False,'shape':(3,),}",
        "{'descr': '=i1', 'fortran_order': True, 'shape': (3,), }   \n",
    };
    for (size_t k = 0; k < sizeof spellings / sizeof spellings[0]; k++) {
        t = yt_npy_load(write_npy("s.npy", 1, spellings[k], i8, 3));
        cr_assert_not_null(t, "%s: %s", spellings[k], yt_errmsg());
        test_expect_values(t, w012, 3, s3, 1);
        cr_assert_eq(yt_tensor_dtype(t), YT_DTYPE_I8);
        yt_release(t);
    }
    /* Bool bytes other than 0 and 1 read as true. */
    const unsigned char b[] = {0, 2, 255};
    const double wb[] = {0, 1, 1};
    t = yt_npy_load(
        write_npy("b.npy", 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }\n", b, 3));
    test_expect_values(t, wb, 3, s3, 1);
    cr_assert_eq(((unsigned char *)yt_tensor_data(t))[2], 1);
    yt_release(t);
    YT_ASSERT_NO_LEAKS();
}

Test(npy, loads_into_the_open_scope)
{
    const int64_t s2[] = {2};
    yt_tensor *t = iota_in(YT_DTYPE_F64, s2, 1);
    const char *path = io_path("s.npy");
    cr_assert_eq(yt_npy_save(path, t), YT_OK);
    yt_release(t);
    yt_scope_begin();
    cr_assert_not_null(yt_npy_load(path)); /* owned by the scope */
    yt_scope_end();
    YT_ASSERT_NO_LEAKS();
}

#define HDR(descr, fortran, shape)                                                                 \
    "{'descr': '" descr "', 'fortran_order': " fortran ", 'shape': " shape ", }\n"

Test(npy, rejects_bad_preambles)
{
    const char zeros[64] = {0};
    io_write_bytes(io_path("short"), "\x93NUMPY", 6);
    expect_bad(io_path("short"), "the file is 6 bytes, too short for a .npy file");
    io_write_bytes(io_path("magic"), "PK\x03\x04 not numpy at all", 22);
    expect_bad(io_path("magic"), "not a .npy file (the magic \\x93NUMPY is missing)");
    expect_bad(write_npy("v4", 4, HDR("<f4", "False", "(1,)"), zeros, 4),
               ".npy format version 4.0 is not supported");
    const char *p = write_npy("v1", 1, HDR("<f4", "False", "(1,)"), zeros, 4);
    size_t n;
    unsigned char *raw = io_read_bytes(p, &n);
    raw[7] = 1; /* version 1.1 */
    io_write_bytes(p, raw, n);
    expect_bad(p, "version 1.1 is not supported");
    raw[7] = 0;
    raw[8] = 0xff; /* header length 0x..ff: past the end */
    io_write_bytes(p, raw, n);
    expect_bad(p, "runs past the end of the file");
    free(raw);
    io_write_bytes(io_path("v2cut"), "\x93NUMPY\x02\x00\x05\x00", 10);
    expect_bad(io_path("v2cut"), "the file ends inside the header length");
    io_write_bytes(io_path("v2big"), "\x93NUMPY\x02\x00\x00\x00\x00\x10", 12);
    expect_bad(io_path("v2big"), "header length 268435456 is absurd");
}

Test(npy, rejects_bad_headers)
{
    const char zeros[64] = {0};
    expect_bad(
        write_npy("dup", 1,
                  "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}\n",
                  zeros, 4),
        "key 'descr' appears twice");
    expect_bad(write_npy("extra", 1,
                         "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}\n", zeros,
                         4),
               "unknown key 'x'");
    expect_bad(write_npy("missing", 1, "{'descr': '<f4', 'shape': (1,)}\n", zeros, 4),
               "key 'fortran_order' is missing");
    expect_bad(write_npy("notbool", 1, HDR("<f4", "0", "(1,)"), zeros, 4),
               "expected True or False for 'fortran_order'");
    expect_bad(write_npy("int", 1, HDR("<f4", "False", "(4)"), zeros, 16),
               "'shape' is (4), an int, not a tuple");
    expect_bad(write_npy("list", 1, HDR("<f4", "False", "[4]"), zeros, 16),
               "expected a tuple for 'shape'");
    expect_bad(write_npy("neg", 1, HDR("<f4", "False", "(-1,)"), zeros, 4),
               "expected a non-negative integer in 'shape'");
    expect_bad(write_npy("real", 1, HDR("<f4", "False", "(2.0,)"), zeros, 8),
               "expected ',' or ')' in 'shape'");
    expect_bad(write_npy("huge", 1, HDR("<f4", "False", "(99999999999999999999,)"), zeros, 4),
               "a size in 'shape' is larger than 2^63");
    expect_bad(write_npy("rank", 1, HDR("|u1", "False", "(1, 1, 1, 1, 1, 1, 1, 1, 1)"), zeros, 1),
               "'shape' has more than 8 dimensions");
    expect_bad(write_npy("struct", 1,
                         "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,)}\n",
                         zeros, 4),
               "expected a quoted string");
    expect_bad(write_npy("garbage", 1,
                         "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x\n", zeros, 4),
               "expected only spaces after the dict");
    expect_bad(write_npy("open", 1, "{'descr': '<f4", zeros, 4), "expected the end of a string");
    expect_bad(write_npy("escape", 1, HDR("<f\\x34", "False", "(1,)"), zeros, 4),
               "expected a string without escapes");
    expect_bad(write_npy("nobrace", 1, "'descr': '<f4'\n", zeros, 4), "expected '{'");
}

Test(npy, rejects_unsupported_dtypes_and_wrong_sizes)
{
    const char zeros[64] = {0};
    expect_bad(write_npy("be", 1, HDR(">f4", "False", "(1,)"), zeros, 4),
               "dtype '>f4' is big-endian");
    expect_bad(write_npy("u2", 1, HDR("<u2", "False", "(1,)"), zeros, 2),
               "dtype '<u2' is not supported");
    expect_bad(write_npy("c8", 1, HDR("<c8", "False", "(1,)"), zeros, 8), "dtype '<c8'");
    expect_bad(write_npy("obj", 1, HDR("|O", "False", "(1,)"), zeros, 8), "dtype '|O'");
    expect_bad(write_npy("wide", 1, HDR("|f4", "False", "(1,)"), zeros, 4), "dtype '|f4'");
    expect_bad(write_npy("trunc", 1, HDR("<f8", "False", "(2, 3)"), zeros, 40),
               "[2, 3] '<f8' needs 48 bytes of data but the file has 40 (truncated)");
    expect_bad(write_npy("trail", 1, HDR("<f8", "False", "(2,)"), zeros, 17),
               "needs 16 bytes of data but the file has 17 (trailing bytes)");
    expect_bad(write_npy("ovf", 1, HDR("<f8", "False", "(4611686018427387904, 4)"), zeros, 8),
               "holds more than 2^63 bytes");
    expect_bad(io_path("absent.npy"), "cannot open");
}
