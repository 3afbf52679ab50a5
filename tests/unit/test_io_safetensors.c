/* safetensors: round trips in every dtype (0-d, zero-size, non-contiguous, special float values),
 * the layout the writer promises (8-aligned header, element-aligned tensors, list order), metadata,
 * atomic replacement, and one test per malformed-file rule of the loader, each checking the
 * message and that the output list and metadata are left as they were. */
#include <math.h>
#include <stdint.h>

#include "test_io_util.h"

TestSuite(safetensors, .init = io_tmp_begin, .fini = io_tmp_end);

static const yt_dtype all_dtypes[] = {YT_DTYPE_F64, YT_DTYPE_F32, YT_DTYPE_F16, YT_DTYPE_BF16,
                                      YT_DTYPE_I64, YT_DTYPE_I32, YT_DTYPE_I16, YT_DTYPE_I8,
                                      YT_DTYPE_U8,  YT_DTYPE_BOOL};
#define N_ALL (int)(sizeof all_dtypes / sizeof all_dtypes[0])

/* Values 0..n-1 (mod 2 for bool, shifted negative for signed types) in `dtype`. */
static yt_tensor *
values_in(yt_dtype dtype, const int64_t *sizes, int nd)
{
    yt_tensor *f = test_iota(sizes, nd);
    yt_tensor *g = f;
    if (dtype == YT_DTYPE_BOOL)
        g = yt_remainder_scalar(f, yt_int(2));
    else if (dtype != YT_DTYPE_U8)
        g = yt_sub_scalar(f, yt_float(3));
    yt_tensor *t = yt_to(g, dtype);
    if (g != f)
        yt_release(g);
    yt_release(f);
    cr_assert_not_null(t, "%s", yt_errmsg());
    return t;
}

static void
add(yt_named_tensors *list, const char *name, yt_tensor *t)
{
    cr_assert_eq(yt_named_tensors_add(list, name, t), YT_OK, "%s", yt_errmsg());
    yt_release(t);
}

Test(safetensors, round_trip_every_dtype_and_shape)
{
    yt_named_tensors list = YT_NAMED_TENSORS_INIT;
    const int64_t s23[] = {2, 3}, s03[] = {0, 3}, s34[] = {3, 4};
    char name[64];
    for (int k = 0; k < N_ALL; k++) {
        const char *dn = yt_dtype_name(all_dtypes[k]);
        snprintf(name, sizeof name, "%s.matrix", dn);
        add(&list, name, values_in(all_dtypes[k], s23, 2));
        snprintf(name, sizeof name, "%s.scalar", dn);
        add(&list, name, values_in(all_dtypes[k], NULL, 0));
        snprintf(name, sizeof name, "%s.empty", dn);
        add(&list, name, values_in(all_dtypes[k], s03, 2));
        snprintf(name, sizeof name, "%s.transposed", dn);
        yt_tensor *m = values_in(all_dtypes[k], s34, 2);
        add(&list, name, yt_t(m)); /* a non-contiguous view */
        yt_release(m);
    }
    /* Bytes that must survive untouched: NaN payloads, infinities, -0, denormals, extremes. */
    const float fs[] = {NAN, -INFINITY, INFINITY, -0.0f, 1e-45f, 3.4e38f};
    const double ds[] = {-NAN, 5e-324, -0.0, 1.7976931348623157e308};
    const int64_t is[] = {INT64_MIN, INT64_MAX, -1};
    const int64_t n6 = 6, n4 = 4, n3 = 3;
    add(&list, "special.f32", yt_tensor_from_data(fs, &n6, 1, YT_DTYPE_F32));
    add(&list, "special.f64", yt_tensor_from_data(ds, &n4, 1, YT_DTYPE_F64));
    add(&list, "special.i64", yt_tensor_from_data(is, &n3, 1, YT_DTYPE_I64));
    add(&list, "unicode \xc3\xa9\xe2\x82\xac \"quoted\"\\", values_in(YT_DTYPE_F32, s23, 2));

    yt_metadata meta = YT_METADATA_INIT;
    cr_assert_eq(yt_metadata_set(&meta, "format", "pt"), YT_OK);
    cr_assert_eq(yt_metadata_set(&meta, "note", "caf\xc3\xa9 \"x\"\n"), YT_OK);
    const char *path = io_path("all.safetensors");
    cr_assert_eq(yt_safetensors_save(path, &list, &meta), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(io_file_count(), 1, "a temporary file was left behind");

    yt_named_tensors got = YT_NAMED_TENSORS_INIT;
    yt_metadata got_meta = YT_METADATA_INIT;
    cr_assert_eq(yt_safetensors_load(path, &got, &got_meta), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(got.count, list.count);
    for (int64_t i = 0; i < list.count; i++) {
        cr_assert_str_eq(got.names[i], list.names[i], "the list order is kept");
        io_expect_same(got.tensors[i], list.tensors[i], list.names[i]);
    }
    cr_assert_eq(got_meta.count, 2);
    cr_assert_str_eq(yt_metadata_get(&got_meta, "format"), "pt");
    cr_assert_str_eq(yt_metadata_get(&got_meta, "note"), "caf\xc3\xa9 \"x\"\n");

    yt_named_tensors_clear(&list);
    yt_named_tensors_clear(&got);
    yt_metadata_clear(&meta);
    yt_metadata_clear(&got_meta);
    YT_ASSERT_NO_LEAKS();
}

Test(safetensors, layout_is_aligned_and_covers_the_buffer)
{
    /* u8 first, f64 last in the list: the writer still puts the f64 data first. */
    yt_named_tensors list = YT_NAMED_TENSORS_INIT;
    const int64_t s3[] = {3}, s5[] = {5};
    add(&list, "bytes", values_in(YT_DTYPE_U8, s3, 1));
    add(&list, "halfs", values_in(YT_DTYPE_F16, s5, 1));
    add(&list, "doubles", values_in(YT_DTYPE_F64, s3, 1));
    add(&list, "ints", values_in(YT_DTYPE_I32, s3, 1));
    const char *path = io_path("a.safetensors");
    cr_assert_eq(yt_safetensors_save(path, &list, NULL), YT_OK, "%s", yt_errmsg());

    yt_safetensors_index index = YT_SAFETENSORS_INDEX_INIT;
    cr_assert_eq(yt_safetensors_read_index(path, &index, NULL), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(index.count, 4);
    cr_assert_eq(index.data_start % 8, 0, "the header is padded to a multiple of 8");
    int64_t covered = 0;
    for (int64_t i = 0; i < index.count; i++) {
        const yt_safetensors_entry *e = &index.entries[i];
        cr_assert_str_eq(e->name, list.names[i]);
        cr_assert_eq(e->begin % (int64_t)yt_dtype_size(e->dtype), 0, "'%s' is misaligned", e->name);
        covered += e->end - e->begin;
    }
    cr_assert_eq(index.entries[2].begin, 0, "the widest dtype comes first");
    cr_assert_eq(index.data_start + covered, index.file_size);
    yt_safetensors_index_clear(&index);

    /* Header bytes: a JSON object, padded with spaces. */
    size_t n;
    unsigned char *raw = io_read_bytes(path, &n);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | raw[i];
    cr_assert_eq(raw[8], '{');
    cr_assert_eq(hlen % 8, 0);
    cr_assert(raw[8 + hlen - 1] == '}' || raw[8 + hlen - 1] == ' ');
    free(raw);
    yt_named_tensors_clear(&list);
    YT_ASSERT_NO_LEAKS();
}

Test(safetensors, empty_file_and_replacing_an_existing_file)
{
    yt_named_tensors empty = YT_NAMED_TENSORS_INIT;
    const char *path = io_path("e.safetensors");
    io_write_bytes(path, "old contents", 12);
    cr_assert_eq(yt_safetensors_save(path, &empty, NULL), YT_OK, "%s", yt_errmsg());
    size_t n;
    unsigned char *raw = io_read_bytes(path, &n);
    /* The reference writer's bytes for no tensors and no metadata (tensor.rs test_empty). */
    const unsigned char want[] = {8, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', ' ', ' ', ' ', ' '};
    cr_assert_eq(n, sizeof want);
    cr_assert(memcmp(raw, want, n) == 0);
    free(raw);
    yt_named_tensors got = YT_NAMED_TENSORS_INIT;
    yt_metadata meta = YT_METADATA_INIT;
    cr_assert_eq(yt_safetensors_load(path, &got, &meta), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(got.count, 0);
    cr_assert_eq(meta.count, 0);
    cr_assert_eq(io_file_count(), 1);
    YT_ASSERT_NO_LEAKS();
}

Test(safetensors, matches_the_reference_writer_bytes)
{
    /* tensor.rs test_serialization: "attn.0" f32 [1, 2, 3] = 0..5 serializes to these bytes. */
    const float v[] = {0, 1, 2, 3, 4, 5};
    const int64_t s[] = {1, 2, 3};
    yt_named_tensors list = YT_NAMED_TENSORS_INIT;
    add(&list, "attn.0", yt_tensor_from_data(v, s, 3, YT_DTYPE_F32));
    const char *path = io_path("ref.safetensors");
    cr_assert_eq(yt_safetensors_save(path, &list, NULL), YT_OK, "%s", yt_errmsg());
    const char header[] =
        "{\"attn.0\":{\"dtype\":\"F32\",\"shape\":[1,2,3],\"data_offsets\":[0,24]}}";
    size_t n;
    unsigned char *raw = io_read_bytes(path, &n);
    cr_assert_eq(raw[0], 64);
    cr_assert(memcmp(raw + 8, header, sizeof header - 1) == 0, "header: %.64s", raw + 8);
    cr_assert_eq(n, 8 + 64 + 24);
    cr_assert(memcmp(raw + 72, v, 24) == 0);
    free(raw);
    yt_named_tensors_clear(&list);
    YT_ASSERT_NO_LEAKS();
}

Test(safetensors, save_rejects_bad_arguments)
{
    yt_named_tensors list = YT_NAMED_TENSORS_INIT;
    const int64_t s2[] = {2};
    add(&list, "a", values_in(YT_DTYPE_F32, s2, 1));
    const char *path = io_path("x.safetensors");

    cr_assert_eq(yt_safetensors_save(NULL, &list, NULL), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "safetensors_save: path is NULL");
    cr_assert_eq(yt_safetensors_save(path, NULL, NULL), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "safetensors_save: tensors is NULL");

    /* Lists built by hand can hold what yt_named_tensors_add refuses. */
    char *names[2] = {"a", "a"};
    yt_tensor *ts[2] = {list.tensors[0], list.tensors[0]};
    yt_named_tensors dup = {2, names, ts, 2};
    cr_assert_eq(yt_safetensors_save(path, &dup, NULL), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "safetensors_save: ");
    cr_assert(strstr(yt_errmsg(), "tensor name 'a' appears twice") != NULL, "%s", yt_errmsg());
    names[1] = "__metadata__";
    cr_assert_eq(yt_safetensors_save(path, &dup, NULL), YT_ERR_VALUE);
    cr_assert(strstr(yt_errmsg(), "'__metadata__' is reserved") != NULL, "%s", yt_errmsg());
    names[1] = "b";
    ts[1] = NULL;
    cr_assert_eq(yt_safetensors_save(path, &dup, NULL), YT_ERR_VALUE);
    cr_assert(strstr(yt_errmsg(), "tensor 'b' is NULL") != NULL, "%s", yt_errmsg());
    ts[1] = list.tensors[0];
    names[1] = "bad \xff utf-8";
    cr_assert_eq(yt_safetensors_save(path, &dup, NULL), YT_ERR_VALUE);
    cr_assert(strstr(yt_errmsg(), "is not valid UTF-8") != NULL, "%s", yt_errmsg());

    yt_metadata meta = YT_METADATA_INIT;
    cr_assert_eq(yt_metadata_set(&meta, "k", "\xc3("), YT_OK);
    cr_assert_eq(yt_safetensors_save(path, &list, &meta), YT_ERR_VALUE);
    cr_assert(strstr(yt_errmsg(), "metadata 'k' is not valid UTF-8") != NULL, "%s", yt_errmsg());
    yt_metadata_clear(&meta);

    /* A directory that does not exist: an I/O error naming the path. */
    const char *nowhere = io_path("no/such/dir.safetensors");
    cr_assert_eq(yt_safetensors_save(nowhere, &list, NULL), YT_ERR_IO);
    YT_ASSERT_ERROR(YT_ERR_IO, nowhere);
    cr_assert_eq(io_file_count(), 0, "nothing is written when a save fails");
    yt_named_tensors_clear(&list);
    YT_ASSERT_NO_LEAKS();
}

Test(safetensors, metadata_set_get_replace)
{
    yt_metadata m = YT_METADATA_INIT;
    cr_assert_eq(yt_metadata_set(&m, "a", "1"), YT_OK);
    cr_assert_eq(yt_metadata_set(&m, "b", "2"), YT_OK);
    cr_assert_eq(yt_metadata_set(&m, "a", "3"), YT_OK);
    cr_assert_eq(m.count, 2);
    cr_assert_str_eq(m.keys[0], "a");
    cr_assert_str_eq(yt_metadata_get(&m, "a"), "3");
    cr_assert_null(yt_metadata_get(&m, "c"));
    cr_assert_null(yt_metadata_get(NULL, "a"));
    cr_assert_eq(yt_metadata_set(&m, "", "x"), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "metadata_set: the key is empty");
    cr_assert_eq(yt_metadata_set(&m, "a", NULL), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "metadata_set: value is NULL");
    for (int i = 0; i < 100; i++) {
        char k[16];
        snprintf(k, sizeof k, "key%d", i);
        cr_assert_eq(yt_metadata_set(&m, k, k), YT_OK);
    }
    cr_assert_eq(m.count, 102);
    cr_assert_str_eq(yt_metadata_get(&m, "key99"), "key99");
    yt_metadata_clear(&m);
    cr_assert_eq(m.count, 0);
    yt_metadata_clear(NULL);
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- malformed files */

/* Writes a safetensors file from its parts: the header length field (`hlen` < 0: the header's
 * real length), the header text and `data_len` bytes of data (0x01 each). */
static const char *
write_st_n(const char *name, int64_t hlen, const char *header, size_t h, size_t data_len)
{
    const char *path = io_path(name);
    uint64_t field = hlen < 0 ? h : (uint64_t)hlen;
    unsigned char *buf = malloc(8 + h + data_len + 1);
    for (int i = 0; i < 8; i++)
        buf[i] = (unsigned char)(field >> (8 * i));
    memcpy(buf + 8, header, h);
    memset(buf + 8 + h, 1, data_len);
    io_write_bytes(path, buf, 8 + h + data_len);
    free(buf);
    return path;
}

static const char *
write_st(const char *name, int64_t hlen, const char *header, size_t data_len)
{
    return write_st_n(name, hlen, header, strlen(header), data_len);
}

/* Loads `path` into a list and metadata that already hold one entry each; expects YT_ERR_IO with
 * a message "<path>: ..." containing `what`, and both left as they were. */
static void
expect_bad(const char *path, const char *what)
{
    yt_named_tensors out = YT_NAMED_TENSORS_INIT;
    yt_metadata meta = YT_METADATA_INIT;
    const int64_t s1 = 1;
    add(&out, "before", values_in(YT_DTYPE_F32, &s1, 1));
    cr_assert_eq(yt_metadata_set(&meta, "before", "1"), YT_OK);
    cr_assert_eq(yt_safetensors_load(path, &out, &meta), YT_ERR_IO, "expected an error for: %s",
                 what);
    char prefix[300];
    snprintf(prefix, sizeof prefix, "%s: ", path);
    YT_ASSERT_ERROR(YT_ERR_IO, prefix);
    cr_assert(strstr(yt_errmsg(), what) != NULL, "message '%s' does not say '%s'", yt_errmsg(),
              what);
    cr_assert_eq(out.count, 1, "the list is unchanged");
    cr_assert_eq(meta.count, 1, "the metadata is unchanged");
    /* The header-only reader agrees. */
    yt_safetensors_index index = YT_SAFETENSORS_INDEX_INIT;
    cr_assert_eq(yt_safetensors_read_index(path, &index, NULL), YT_ERR_IO);
    cr_assert_eq(index.count, 0);
    yt_named_tensors_clear(&out);
    yt_metadata_clear(&meta);
    YT_ASSERT_NO_LEAKS();
}

#define T1(dtype, shape, offsets)                                                                  \
    "{\"t\":{\"dtype\":" dtype ",\"shape\":" shape ",\"data_offsets\":" offsets "}}"

Test(safetensors, rejects_bad_header_lengths)
{
    io_write_bytes(io_path("short"), "\x08\0\0", 3);
    expect_bad(io_path("short"), "the file is 3 bytes, too short for the 8-byte header length");
    expect_bad(write_st("past_end", 4096, "{}", 0),
               "header length 4096 runs past the end of the file (10 bytes)");
    expect_bad(write_st("absurd", 100000001, "{}", 0), "header length 100000001 is absurd");
    expect_bad(write_st("huge", INT64_MAX, "{}", 0), "is absurd");
    expect_bad(write_st("zero", 0, "", 0), "the header does not start with '{'");
    const char *missing = io_path("missing.safetensors");
    yt_named_tensors out = YT_NAMED_TENSORS_INIT;
    cr_assert_eq(yt_safetensors_load(missing, &out, NULL), YT_ERR_IO);
    YT_ASSERT_ERROR(YT_ERR_IO, missing);
    cr_assert(strstr(yt_errmsg(), "cannot open: No such file") != NULL, "%s", yt_errmsg());
    cr_assert_eq(yt_safetensors_load(io_dir, &out, NULL), YT_ERR_IO);
    cr_assert(strstr(yt_errmsg(), "not a regular file") != NULL, "%s", yt_errmsg());
    YT_ASSERT_NO_LEAKS();
}

Test(safetensors, rejects_headers_that_are_not_json_objects)
{
    expect_bad(write_st("garbage", -1, "{not json}", 0), "the header is not valid JSON");
    expect_bad(write_st("array", -1, "[1, 2]", 0), "does not start with '{'");
    expect_bad(write_st("trailing", -1, "{} x", 0), "the header is not valid JSON");
    expect_bad(write_st("cut", -1, "{\"t\":{\"dtype\":\"F32\"", 0), "the header is not valid JSON");
    expect_bad(write_st_n("nul", -1, "{}\0 ", 4, 0), "the header is not valid JSON");
    expect_bad(write_st("utf8", -1, "{\"\xff\":1}", 0), "the header is not valid JSON");
    expect_bad(write_st("entry", -1, "{\"t\":[1]}", 0), "tensor 't': entry is an array");
}

Test(safetensors, rejects_bad_dtypes_and_shapes)
{
    expect_bad(write_st("u16", -1, T1("\"U16\"", "[1]", "[0,2]"), 2),
               "tensor 't': dtype 'U16' is not supported");
    expect_bad(write_st("xyz", -1, T1("\"f32\"", "[1]", "[0,4]"), 4), "dtype 'f32'");
    expect_bad(write_st("dnum", -1, T1("4", "[1]", "[0,4]"), 4),
               "dtype is an integer, not a string");
    expect_bad(write_st("neg", -1, T1("\"F32\"", "[2,-1]", "[0,4]"), 4),
               "tensor 't': shape[1]=-1 is negative");
    expect_bad(write_st("real", -1, T1("\"F32\"", "[2.5]", "[0,4]"), 4),
               "shape[0] is a real number, not an integer");
    expect_bad(write_st("str", -1, T1("\"F32\"", "[\"2\"]", "[0,4]"), 4),
               "shape[0] is a string, not an integer");
    expect_bad(write_st("obj", -1, T1("\"F32\"", "{}", "[0,4]"), 4),
               "shape is an object, not an array");
    expect_bad(write_st("rank", -1, T1("\"U8\"", "[1,1,1,1,1,1,1,1,1]", "[0,1]"), 1),
               "shape has 9 dimensions (at most 8)");
    expect_bad(write_st("big", -1, T1("\"F32\"", "[99999999999999999999]", "[0,4]"), 4),
               "the header is not valid JSON");
    expect_bad(write_st("missing", -1, "{\"t\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4),
               "tensor 't': 'data_offsets' is missing");
    expect_bad(write_st("extra", -1,
                        "{\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],"
                        "\"offset\":0}}",
                        4),
               "tensor 't': unknown key 'offset'");
    expect_bad(write_st("noname", -1,
                        "{\"\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4),
               "a tensor has an empty name");
}

Test(safetensors, rejects_sizes_that_do_not_match)
{
    /* The brief's example: f32 [5, 6] needs 120 bytes. */
    expect_bad(
        write_st("model.safetensors", -1,
                 "{\"fc.weight\":{\"dtype\":\"F32\",\"shape\":[5,6],\"data_offsets\":[0,100]}"
                 "}",
                 100),
        "tensor 'fc.weight': data_offsets [0, 100) hold 100 bytes but f32 [5, 6] needs "
        "120");
    expect_bad(write_st("overflow", -1, T1("\"F64\"", "[4611686018427387904,4]", "[0,8]"), 8),
               "tensor 't': f64 [4611686018427387904, 4] holds more than 2^63 bytes");
    expect_bad(write_st("overflow2", -1, T1("\"F64\"", "[1152921504606846976,1]", "[0,8]"), 8),
               "holds more than 2^63 bytes");
    expect_bad(write_st("three", -1, T1("\"U8\"", "[1]", "[0,1,2]"), 1),
               "data_offsets is not an array of two integers");
    expect_bad(write_st("negoff", -1, T1("\"U8\"", "[1]", "[-1,0]"), 1),
               "data_offsets[0] is not a non-negative integer");
    expect_bad(write_st("backwards", -1, T1("\"U8\"", "[0]", "[4,0]"), 4),
               "data_offsets [4, 0) end before they begin");
    expect_bad(write_st("outside", -1, T1("\"U8\"", "[4]", "[4,8]"), 6),
               "tensor 't': data_offsets [4, 8) run past the end of the data buffer (6 bytes)");
}

Test(safetensors, rejects_overlaps_holes_and_trailing_bytes)
{
    expect_bad(write_st("overlap", -1,
                        "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
                        "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[2,6]}}",
                        6),
               "tensor 'b': data_offsets [2, 6) overlap tensor 'a' [0, 4)");
    /* The same range twice (two names aliasing the same bytes). */
    expect_bad(write_st("alias", -1,
                        "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
                        "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}",
                        4),
               "tensor 'b': data_offsets [0, 4) overlap tensor 'a' [0, 4)");
    expect_bad(write_st("hole", -1,
                        "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
                        "\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[4,6]}}",
                        6),
               "bytes [2, 4) of the data buffer belong to no tensor (a hole before tensor 'b')");
    expect_bad(write_st("start", -1, T1("\"U8\"", "[2]", "[2,4]"), 4),
               "bytes [0, 2) of the data buffer belong to no tensor");
    expect_bad(write_st("trailing", -1, T1("\"U8\"", "[2]", "[0,2]"), 5),
               "bytes [2, 5) at the end of the data buffer belong to no tensor");
    expect_bad(write_st("nothing", -1, "{}", 3), "bytes [0, 3) at the end");
}

Test(safetensors, rejects_duplicates_and_bad_metadata)
{
    expect_bad(write_st("dup", -1,
                        "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                        "\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}",
                        2),
               "the header names a key twice");
    expect_bad(write_st("metanum", -1, "{\"__metadata__\":{\"k\":1}}", 0),
               "__metadata__ 'k' is an integer, not a string");
    expect_bad(write_st("metanull", -1, "{\"__metadata__\":null}", 0),
               "__metadata__ is null, not an object");
    expect_bad(write_st("metadup", -1, "{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", 0),
               "the header names a key twice");
    expect_bad(write_st("metakey", -1, "{\"__metadata__\":{\"\":\"1\"}}", 0),
               "__metadata__ has an empty key");
}

Test(safetensors, accepts_what_the_format_allows)
{
    /* Zero-size tensors at the same offset, any header order, padding, metadata anywhere. */
    const char *path = write_st("ok", -1,
                                "{\"b\":{\"dtype\":\"I16\",\"shape\":[1],\"data_offsets\":[2,4]},"
                                "\"z1\":{\"dtype\":\"F32\",\"shape\":[0,5],\"data_offsets\":[2,2]},"
                                "\"__metadata__\":{\"k\":\"v\"},"
                                "\"z0\":{\"dtype\":\"F64\",\"shape\":[3,0],\"data_offsets\":[0,0]},"
                                "\"a\":{\"dtype\":\"BOOL\",\"shape\":[2],\"data_offsets\":[0,2]}"
                                "}       ",
                                4);
    yt_named_tensors out = YT_NAMED_TENSORS_INIT;
    yt_metadata meta = YT_METADATA_INIT;
    cr_assert_eq(yt_safetensors_load(path, &out, &meta), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(out.count, 4);
    cr_assert_str_eq(out.names[0], "b");
    cr_assert_str_eq(out.names[3], "a");
    cr_assert_str_eq(yt_metadata_get(&meta, "k"), "v");
    cr_assert_eq(yt_tensor_numel(out.tensors[1]), 0);
    /* BOOL bytes of 1 read as true; the I16 reads 0x0101. */
    const unsigned char *b = yt_tensor_data(out.tensors[3]);
    cr_assert(b[0] == 1 && b[1] == 1);
    cr_assert_eq(*(int16_t *)yt_tensor_data(out.tensors[0]), 0x0101);

    /* Loading again into the same list: the names clash, nothing is added. */
    cr_assert_eq(yt_safetensors_load(path, &out, NULL), YT_ERR_VALUE);
    cr_assert(strstr(yt_errmsg(), "tensor 'b' is already in the output list") != NULL, "%s",
              yt_errmsg());
    cr_assert_eq(out.count, 4);
    yt_named_tensors_clear(&out);
    yt_metadata_clear(&meta);
    YT_ASSERT_NO_LEAKS();
}

Test(safetensors, bool_bytes_other_than_one_are_true)
{
    const char *path = io_path("b.safetensors");
    const char header[] = T1("\"BOOL\"", "[3]", "[0,3]") "     ";
    unsigned char buf[8 + sizeof header - 1 + 3];
    uint64_t h = sizeof header - 1;
    for (int i = 0; i < 8; i++)
        buf[i] = (unsigned char)(h >> (8 * i));
    memcpy(buf + 8, header, h);
    buf[8 + h] = 0;
    buf[9 + h] = 7;
    buf[10 + h] = 255;
    io_write_bytes(path, buf, sizeof buf);
    yt_named_tensors out = YT_NAMED_TENSORS_INIT;
    cr_assert_eq(yt_safetensors_load(path, &out, NULL), YT_OK, "%s", yt_errmsg());
    const double want[] = {0, 1, 1};
    const int64_t s3 = 3;
    test_expect_values(out.tensors[0], want, 3, &s3, 1);
    const unsigned char *b = yt_tensor_data(out.tensors[0]);
    cr_assert(b[0] == 0 && b[1] == 1 && b[2] == 1);
    yt_named_tensors_clear(&out);
    YT_ASSERT_NO_LEAKS();
}

Test(safetensors, load_rejects_bad_arguments)
{
    yt_named_tensors out = YT_NAMED_TENSORS_INIT;
    cr_assert_eq(yt_safetensors_load(NULL, &out, NULL), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "safetensors_load: path is NULL");
    cr_assert_eq(yt_safetensors_load("x", NULL, NULL), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "safetensors_load: out is NULL");
    cr_assert_eq(yt_safetensors_read_index(NULL, NULL, NULL), YT_ERR_VALUE);
    yt_safetensors_index_clear(NULL);
    YT_ASSERT_NO_LEAKS();
}
