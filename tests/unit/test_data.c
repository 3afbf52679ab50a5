/* Datasets and transforms: IDX files written here (raw and gzipped) load with the right values,
 * bad ones (wrong magic, dtype or rank, truncated, count mismatch, trailing data) fail with
 * "PATH: what is wrong"; Fashion-MNIST itself when installed; CSV parsing and its "PATH:LINE"
 * errors; tensor datasets and user-defined kinds; the transforms' values (normalize checked
 * against PyTorch, crop and flip against their definitions) and their argument checks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include <criterion/criterion.h>

#include "test_util.h"

/* ---------------------------------------------------------------- files in a temporary folder */

static char tmpdir[64];

static void
make_tmpdir(void)
{
    strcpy(tmpdir, "/tmp/yt_test_data_XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir), "mkdtemp failed");
}

static void
remove_tmpdir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(data, .init = make_tmpdir, .fini = remove_tmpdir);

/* tmpdir/name, in a static buffer of 64 rotating slots (enough for one test) */
static const char *
path_of(const char *name)
{
    static char bufs[64][256];
    static int next;
    char *p = bufs[next++ % 64];
    snprintf(p, 256, "%s/%s", tmpdir, name);
    return p;
}

static void
write_file(const char *path, const void *data, size_t n, bool gzip)
{
    if (gzip) {
        gzFile f = gzopen(path, "wb");
        cr_assert_not_null(f);
        cr_assert_eq(gzwrite(f, data, (unsigned)n), (int)n);
        cr_assert_eq(gzclose(f), Z_OK);
    } else {
        FILE *f = fopen(path, "wb");
        cr_assert_not_null(f);
        cr_assert_eq(fwrite(data, 1, n, f), n);
        fclose(f);
    }
}

static void
write_text(const char *path, const char *text)
{
    write_file(path, text, strlen(text), false);
}

/* An IDX header (magic 00 00 code rank, then big-endian sizes) followed by `data`. */
static size_t
idx_bytes(uint8_t *out, int code, int rank, const uint32_t *dims, const uint8_t *data, size_t n)
{
    size_t at = 0;
    out[at++] = 0;
    out[at++] = 0;
    out[at++] = (uint8_t)code;
    out[at++] = (uint8_t)rank;
    for (int i = 0; i < rank; i++) {
        out[at++] = (uint8_t)(dims[i] >> 24);
        out[at++] = (uint8_t)(dims[i] >> 16);
        out[at++] = (uint8_t)(dims[i] >> 8);
        out[at++] = (uint8_t)dims[i];
    }
    memcpy(out + at, data, n);
    return at + n;
}

enum { N_IMG = 5, ROWS = 3, COLS = 4, PIX = ROWS * COLS };

static uint8_t
pixel(int i, int p)
{
    return (uint8_t)(i * 53 + p * 17 + (i == 0 && p == 0 ? 255 : 0));
}

/* images.idx / labels.idx (".gz" when gzip): N_IMG images of ROWS x COLS, labels 7 - i. */
static void
write_idx_pair(const char *images, const char *labels, bool gzip)
{
    uint8_t pixels[N_IMG * PIX], lab[N_IMG], buf[512];
    for (int i = 0; i < N_IMG; i++) {
        for (int p = 0; p < PIX; p++)
            pixels[i * PIX + p] = pixel(i, p);
        lab[i] = (uint8_t)(7 - i);
    }
    const uint32_t idims[3] = {N_IMG, ROWS, COLS}, ldims[1] = {N_IMG};
    write_file(images, buf, idx_bytes(buf, 0x08, 3, idims, pixels, sizeof pixels), gzip);
    write_file(labels, buf, idx_bytes(buf, 0x08, 1, ldims, lab, sizeof lab), gzip);
}

static void
check_idx_values(yt_dataset *d)
{
    cr_assert_not_null(d, "%s", yt_errmsg());
    cr_assert_eq(yt_dataset_length(d), N_IMG);
    cr_assert_str_eq(yt_dataset_name(d), "IDX");
    int nd;
    const int64_t *shape = yt_dataset_input_shape(d, &nd);
    cr_assert(nd == 3 && shape[0] == 1 && shape[1] == ROWS && shape[2] == COLS);
    yt_dataset_target_shape(d, &nd);
    cr_assert_eq(nd, 0);
    cr_assert_eq(yt_dataset_input_dtype(d), YT_DTYPE_F32);
    cr_assert_eq(yt_dataset_target_dtype(d), YT_DTYPE_I64);
    for (int i = 0; i < N_IMG; i++) {
        yt_tensor *x, *y;
        cr_assert_eq(yt_dataset_get(d, i, &x, &y), YT_OK, "%s", yt_errmsg());
        const float *v = yt_tensor_data(x);
        for (int p = 0; p < PIX; p++) {
            /* torchvision's ToTensor: byte.float().div(255) */
            float want = (float)pixel(i, p) / 255.0f;
            cr_assert(v[p] == want, "image %d pixel %d: %.9g, expected %.9g", i, p, v[p], want);
        }
        cr_assert_eq(yt_tensor_dtype(y), YT_DTYPE_I64);
        cr_assert_eq(yt_tensor_dim(y), 0);
        cr_assert_eq(*(int64_t *)yt_tensor_data(y), 7 - i);
        yt_release(x);
        yt_release(y);
    }
}

Test(data, idx_raw_and_gzip_load_the_same_values)
{
    write_idx_pair(path_of("img.idx"), path_of("lab.idx"), false);
    write_idx_pair(path_of("img.idx.gz"), path_of("lab.idx.gz"), true);
    yt_dataset *raw = yt_idx_dataset_open(path_of("img.idx"), path_of("lab.idx"));
    check_idx_values(raw);
    yt_dataset *gz = yt_idx_dataset_open(path_of("img.idx.gz"), path_of("lab.idx.gz"));
    check_idx_values(gz);
    /* the extremes: 255 -> 1, and a batch read of several indices in any order */
    float batch[3 * PIX];
    int64_t labels[3];
    const int64_t idx[3] = {4, 0, 4};
    cr_assert_eq(yt_dataset_get_batch(gz, idx, 3, batch, labels), YT_OK, "%s", yt_errmsg());
    cr_assert(batch[PIX] == 1.0f && labels[0] == 3 && labels[1] == 7 && labels[2] == 3);
    cr_assert_eq(memcmp(batch, batch + 2 * PIX, sizeof(float) * PIX), 0);
    yt_dataset_release(raw);
    yt_dataset_release(gz);
    YT_ASSERT_NO_LEAKS();
}

/* Opens images/labels and expects YT_ERR_IO with a message starting "PATH: " and holding `what`. */
static void
expect_idx_error(const char *images, const char *labels, const char *path, const char *what)
{
    yt_dataset *d = yt_idx_dataset_open(images, labels);
    cr_assert_null(d, "opened a bad file (%s)", what);
    char prefix[300];
    snprintf(prefix, sizeof prefix, "%s: ", path);
    YT_ASSERT_ERROR(YT_ERR_IO, prefix);
    cr_assert_not_null(strstr(yt_errmsg(), what), "message '%s' does not say '%s'", yt_errmsg(),
                       what);
}

Test(data, idx_bad_files_give_clear_errors)
{
    const char *img = path_of("img.idx"), *lab = path_of("lab.idx");
    write_idx_pair(img, lab, false);
    uint8_t good[512], buf[512];
    FILE *f = fopen(img, "rb");
    size_t n = fread(good, 1, sizeof good, f);
    fclose(f);
    const char *bad = path_of("bad.idx");

    memcpy(buf, good, n);
    buf[1] = 1; /* wrong magic */
    write_file(bad, buf, n, false);
    expect_idx_error(bad, lab, bad, "not an IDX file: it starts with bytes 00 01 08 03");

    memcpy(buf, good, n);
    buf[2] = 0x0D; /* floats */
    write_file(bad, buf, n, false);
    expect_idx_error(bad, lab, bad, "dtype code 0x0d (float) is not supported");

    expect_idx_error(lab, lab, lab, "has 1 dims, expected 3");

    write_file(bad, good, 10, false); /* cut inside the sizes */
    expect_idx_error(bad, lab, bad, "truncated: the file ends inside the 3 sizes");

    write_file(bad, good, n - 5, false); /* cut inside the pixels */
    expect_idx_error(bad, lab, bad, "truncated: the header announces 60 bytes of data");
    expect_idx_error(bad, lab, bad, "the file holds 55");

    write_file(bad, good, 0, false);
    expect_idx_error(bad, lab, bad, "empty file");

    memcpy(buf, good, n);
    buf[n] = 9; /* one byte too many */
    write_file(bad, buf, n + 1, false);
    expect_idx_error(bad, lab, bad, "more data after the 60 bytes the header announces");

    /* a gzip stream cut short reads as truncated too */
    const char *gz = path_of("img.idx.gz");
    write_idx_pair(gz, path_of("lab.idx.gz"), true);
    f = fopen(gz, "rb");
    size_t gn = fread(buf, 1, sizeof buf, f);
    fclose(f);
    write_file(bad, buf, gn - 12, false);
    expect_idx_error(bad, lab, bad, "truncated");

    /* 4 labels for 5 images */
    uint8_t l4[4] = {1, 2, 3, 4};
    const uint32_t d4[1] = {4};
    write_file(bad, buf, idx_bytes(buf, 0x08, 1, d4, l4, 4), false);
    expect_idx_error(img, bad, bad, "4 labels, but");

    expect_idx_error(path_of("missing.idx"), lab, path_of("missing.idx"),
                     "cannot open: No such file or directory");
    cr_assert_null(yt_idx_dataset_open(NULL, lab));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "idx_dataset_open: images_path is NULL");
    YT_ASSERT_NO_LEAKS();
}

#define FASHION "/usr/share/datasets/fashion-mnist/"

Test(data, fashion_mnist_test_set)
{
    const char *img = FASHION "t10k-images-idx3-ubyte.gz",
               *lab = FASHION "t10k-labels-idx1-ubyte.gz";
    if (access(img, R_OK) != 0 || access(lab, R_OK) != 0)
        cr_skip_test("Fashion-MNIST is not installed (dataset-fashion-mnist)");
    yt_dataset *d = yt_idx_dataset_open(img, lab);
    cr_assert_not_null(d, "%s", yt_errmsg());
    cr_assert_eq(yt_dataset_length(d), 10000);
    int nd;
    const int64_t *shape = yt_dataset_input_shape(d, &nd);
    cr_assert(nd == 3 && shape[0] == 1 && shape[1] == 28 && shape[2] == 28);
    /* The test set has 1000 images of each of the 10 classes (Fashion-MNIST's README). */
    int64_t count[10] = {0};
    float *x = malloc(sizeof(float) * 784);
    for (int64_t i = 0; i < 10000; i++) {
        int64_t y;
        cr_assert_eq(yt_dataset_get_batch(d, &i, 1, x, &y), YT_OK, "%s", yt_errmsg());
        cr_assert(y >= 0 && y < 10, "label %lld", (long long)y);
        count[y]++;
        for (int p = 0; p < 784; p++)
            cr_assert(x[p] >= 0.0f && x[p] <= 1.0f);
    }
    for (int c = 0; c < 10; c++)
        cr_assert_eq(count[c], 1000, "class %d has %lld images", c, (long long)count[c]);
    free(x);
    yt_dataset_release(d);
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- CSV */

Test(data, csv_values_header_label_column_and_blank_lines)
{
    const char *p = path_of("a.csv");
    write_text(p, "x0, label ,x1\r\n"
                  "1.5, 2, -3\r\n"
                  "\n"
                  "  4e-1 ,0,  7 \r\n"
                  "inf,1,0x10\n");
    yt_dataset *d = yt_csv_dataset_open(p, 1, true);
    cr_assert_not_null(d, "%s", yt_errmsg());
    cr_assert_eq(yt_dataset_length(d), 3);
    int nd;
    const int64_t *shape = yt_dataset_input_shape(d, &nd);
    cr_assert(nd == 1 && shape[0] == 2);
    const int64_t idx[3] = {0, 1, 2};
    float x[6];
    int64_t y[3];
    cr_assert_eq(yt_dataset_get_batch(d, idx, 3, x, y), YT_OK, "%s", yt_errmsg());
    const float want[6] = {1.5f, -3.0f, 0.4f, 7.0f, INFINITY, 16.0f};
    for (int i = 0; i < 6; i++)
        cr_assert(x[i] == want[i], "feature %d is %g, expected %g", i, x[i], want[i]);
    cr_assert(y[0] == 2 && y[1] == 0 && y[2] == 1);
    yt_dataset_release(d);

    /* no header, label last (-1), a final line without newline */
    write_text(p, "1,2,3\n4,5,6");
    d = yt_csv_dataset_open(p, -1, false);
    cr_assert_not_null(d, "%s", yt_errmsg());
    yt_tensor *in, *tg;
    cr_assert_eq(yt_dataset_get(d, -1, &in, &tg), YT_OK, "%s", yt_errmsg());
    test_expect_values(in, (const double[]){4, 5}, 2, (const int64_t[]){2}, 1);
    cr_assert_eq(*(int64_t *)yt_tensor_data(tg), 6);
    yt_release(in);
    yt_release(tg);
    yt_dataset_release(d);
    YT_ASSERT_NO_LEAKS();
}

/* Writes `text` to a.csv, opens it and expects `code` with message "a.csv:<where>". */
static void
expect_csv_error(const char *text, int label_column, bool header, yt_status code, const char *where)
{
    const char *p = path_of("a.csv");
    write_text(p, text);
    cr_assert_null(yt_csv_dataset_open(p, label_column, header), "accepted: %s", text);
    char prefix[320];
    snprintf(prefix, sizeof prefix, "%s%s", p, where);
    YT_ASSERT_ERROR(code, prefix);
}

Test(data, csv_errors_name_the_line)
{
    expect_csv_error("1,2,3\n4,x5,6\n", -1, false, YT_ERR_IO, ":2: column 2: 'x5' is not a number");
    expect_csv_error("a,b,c\n1,2,3\n\n4,5\n", 0, true, YT_ERR_IO,
                     ":4: 2 columns, but line 1 has 3");
    expect_csv_error("1,2,3\n4,5,6,7\n", 0, false, YT_ERR_IO, ":2: 4 columns, but line 1 has 3");
    expect_csv_error("1,2,3.5\n", -1, false, YT_ERR_IO,
                     ":1: column 3: the label '3.5' is not an integer class index");
    expect_csv_error("1,,3\n", 0, false, YT_ERR_IO, ":1: column 2 is empty");
    expect_csv_error("1,1e300,3\n", 0, false, YT_ERR_IO, ":1: column 2: 1e300 is out of f32 range");
    expect_csv_error("5\n", 0, false, YT_ERR_IO, ":1: 1 column; a CSV dataset needs a label");
    expect_csv_error("1,2\n", 2, false, YT_ERR_VALUE,
                     ":1: label_column=2 is out of range for 2 columns (expected -2..1)");
    expect_csv_error("x,y\n\n", 0, true, YT_ERR_IO, ": no data rows");
    cr_assert_null(yt_csv_dataset_open(path_of("none.csv"), 0, false));
    YT_ASSERT_ERROR(YT_ERR_IO, path_of("none.csv"));
    cr_assert_not_null(strstr(yt_errmsg(), ": cannot open: No such file"), "%s", yt_errmsg());
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- tensor datasets, user kinds */

Test(data, tensor_dataset_rows_and_checks)
{
    /* inputs: a transposed (non-contiguous) 3 x 2 view; targets: i64 [3] */
    yt_tensor *base = test_iota((const int64_t[]){2, 3}, 2);
    yt_tensor *inputs = yt_transpose(base, 0, 1);
    yt_tensor *targets =
        test_from((const double[]){10, 11, 12}, (const int64_t[]){3}, 1, YT_DTYPE_I64);
    yt_dataset *d = yt_tensor_dataset_new(inputs, targets);
    cr_assert_not_null(d, "%s", yt_errmsg());
    cr_assert_eq(yt_dataset_length(d), 3);
    yt_tensor *x, *y;
    cr_assert_eq(yt_dataset_get(d, 1, &x, &y), YT_OK, "%s", yt_errmsg());
    test_expect_values(x, (const double[]){1, 4}, 2, (const int64_t[]){2}, 1);
    test_expect_values(y, (const double[]){11}, 1, NULL, 0);
    yt_release(x);
    yt_release(y);
    cr_assert_eq(yt_dataset_get(d, 3, &x, &y), YT_ERR_VALUE);
    YT_ASSERT_ERROR(
        YT_ERR_VALUE,
        "dataset_get: index 3 is out of range for dataset 'TensorDataset' of 3 samples");
    cr_assert(x == NULL && y == NULL);
    const int64_t bad[2] = {0, -1};
    double buf[4];
    int64_t lab[2];
    cr_assert_eq(yt_dataset_get_batch(d, bad, 2, buf, lab), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "dataset_get_batch: indices[1]=-1 is out of range");
    cr_assert_eq(yt_dataset_get_batch(d, bad, 1, buf, NULL), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "dataset_get_batch: target is NULL but dataset 'TensorDataset'");

    /* without targets */
    yt_dataset *u = yt_tensor_dataset_new(inputs, NULL);
    cr_assert_eq(yt_dataset_target_dtype(u), YT_DTYPE_NONE);
    cr_assert_eq(yt_dataset_get(u, 2, &x, &y), YT_OK, "%s", yt_errmsg());
    test_expect_values(x, (const double[]){2, 5}, 2, (const int64_t[]){2}, 1);
    cr_assert_null(y);
    yt_release(x);

    yt_tensor *two = test_iota((const int64_t[]){2}, 1);
    cr_assert_null(yt_tensor_dataset_new(inputs, two));
    YT_ASSERT_ERROR(YT_ERR_VALUE,
                    "tensor_dataset_new: inputs.size(0)=3 samples but targets.size(0)=2");
    yt_tensor *scalar = yt_scalar_tensor(yt_float(1), YT_DTYPE_F32);
    cr_assert_null(yt_tensor_dataset_new(scalar, NULL));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "tensor_dataset_new: inputs is 0-D");

    /* the dataset holds its own references: the caller may release the tensors */
    yt_release(scalar);
    yt_release(two);
    yt_release(targets);
    yt_release(inputs);
    yt_release(base);
    cr_assert_eq(yt_dataset_get(d, 0, &x, NULL), YT_OK, "%s", yt_errmsg());
    test_expect_values(x, (const double[]){0, 3}, 2, (const int64_t[]){2}, 1);
    yt_release(x);
    yt_dataset_release(u);
    yt_dataset_release(d);
    YT_ASSERT_NO_LEAKS();
}

static int released;

static int64_t
seven(void *ctx)
{
    (void)ctx;
    return 7;
}

static int64_t
minus_one(void *ctx)
{
    (void)ctx;
    return -1;
}

static yt_status
index_batch(void *ctx, const int64_t *indices, int64_t n, void *input, void *target)
{
    (void)ctx;
    (void)target;
    for (int64_t i = 0; i < n; i++)
        ((int32_t *)input)[i] = (int32_t)indices[i] * 2;
    return YT_OK;
}

static void
count_release(void *ctx)
{
    (void)ctx;
    released++;
}

Test(data, user_kinds_and_dataset_new_checks)
{
    static const yt_dataset_kind kind = {"Doubles", seven, index_batch, count_release};
    released = 0;
    yt_dataset *d = yt_dataset_new(&kind, NULL, NULL, 0, YT_DTYPE_I32, NULL, 0, YT_DTYPE_NONE);
    cr_assert_not_null(d, "%s", yt_errmsg());
    cr_assert_eq(yt_dataset_retain(d), d);
    yt_dataset_release(d);
    cr_assert_eq(released, 0);
    yt_tensor *x;
    cr_assert_eq(yt_dataset_get(d, 5, &x, NULL), YT_OK, "%s", yt_errmsg());
    cr_assert(yt_tensor_dim(x) == 0 && yt_item(x) == 10.0);
    yt_release(x);
    yt_dataset_release(d);
    cr_assert_eq(released, 1);

    /* a failing yt_dataset_new still frees the ctx it was given */
    static const yt_dataset_kind negative = {"Negative", minus_one, index_batch, count_release};
    cr_assert_null(yt_dataset_new(&negative, NULL, NULL, 0, YT_DTYPE_I32, NULL, 0, YT_DTYPE_NONE));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "dataset_new: dataset 'Negative' reports length -1");
    cr_assert_eq(released, 2);
    const int64_t neg[1] = {-2};
    cr_assert_null(yt_dataset_new(&kind, NULL, neg, 1, YT_DTYPE_F32, NULL, 0, YT_DTYPE_NONE));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "dataset_new: input_shape[0]=-2 is negative");
    cr_assert_null(yt_dataset_new(&kind, NULL, NULL, 9, YT_DTYPE_F32, NULL, 0, YT_DTYPE_NONE));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "dataset_new: input_ndim=9 is out of range 0..8");
    cr_assert_null(yt_dataset_new(&kind, NULL, NULL, 0, YT_DTYPE_F32, NULL, 0, YT_DTYPE_COUNT));
    YT_ASSERT_ERROR(YT_ERR_DTYPE, "dataset_new: target_dtype=10 is not a dtype");
    cr_assert_eq(released, 5);
    cr_assert_null(yt_dataset_new(NULL, NULL, NULL, 0, YT_DTYPE_F32, NULL, 0, YT_DTYPE_NONE));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "dataset_new: kind is NULL");
    cr_assert_eq(yt_dataset_length(NULL), 0);
    yt_dataset_release(NULL);
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- transforms */

/* All `n` samples of one epoch, in dataset order (no shuffle, workers as given). */
static float *
transformed(yt_dataset *d, const yt_transform *ts, int n_ts, uint64_t seed, int workers,
            int64_t *numel)
{
    yt_loader_options o = {
        .batch_size = 4, .seed = seed, .workers = workers, .transforms = ts, .n_transforms = n_ts};
    yt_loader *l = yt_loader_new(d, &o);
    cr_assert_not_null(l, "%s", yt_errmsg());
    int nd;
    const int64_t *shape = yt_loader_input_shape(l, &nd);
    int64_t per = 1;
    for (int i = 0; i < nd; i++)
        per *= shape[i];
    *numel = per;
    float *all = malloc(sizeof(float) * (size_t)(per * yt_dataset_length(d)));
    int64_t at = 0;
    for (;;) {
        yt_tensor *x;
        cr_assert_eq(yt_loader_next(l, &x, NULL), YT_OK, "%s", yt_errmsg());
        if (x == NULL)
            break;
        memcpy(all + at, yt_tensor_data(x), sizeof(float) * (size_t)yt_tensor_numel(x));
        at += yt_tensor_numel(x);
        yt_release(x);
    }
    cr_assert_eq(at, per * yt_dataset_length(d));
    yt_loader_release(l);
    return all;
}

/* n samples of [2, 3, 5] with values that identify sample, channel, row and column. */
static yt_dataset *
image_dataset(int64_t n)
{
    const int64_t sizes[4] = {n, 2, 3, 5};
    yt_tensor *x = test_iota(sizes, 4);
    yt_tensor *f = yt_to(x, YT_DTYPE_F32);
    yt_tensor *scaled = yt_mul_scalar(f, yt_float(0.37));
    yt_dataset *d = yt_tensor_dataset_new(scaled, NULL);
    cr_assert_not_null(d, "%s", yt_errmsg());
    yt_release(scaled);
    yt_release(f);
    yt_release(x);
    return d;
}

/* PyTorch's (x - mean) / std over the same samples, through /usr/bin/python3; false when torch
 * is missing. */
static bool
torch_normalize(int64_t n, const double *mean, const double *std, float *out)
{
    char cmd[1024];
    snprintf(
        cmd, sizeof cmd,
        "/usr/bin/python3 -c \"import sys, torch\n"
        "x = (torch.arange(%lld * 30, dtype=torch.float64).float() * 0.37).reshape(-1, 2, 3, 5)\n"
        "m = torch.tensor([%.17g, %.17g]).view(2, 1, 1); s = torch.tensor([%.17g, %.17g]).view(2, 1, 1)\n"
        "sys.stdout.buffer.write(((x - m) / s).contiguous().numpy().tobytes())\" 2>/dev/null",
        (long long)n, mean[0], mean[1], std[0], std[1]);
    FILE *p = popen(cmd, "r");
    if (p == NULL)
        return false;
    size_t got = fread(out, sizeof(float), (size_t)n * 30, p);
    return pclose(p) == 0 && got == (size_t)n * 30;
}

Test(data, normalize_matches_pytorch)
{
    const int64_t n = 6;
    yt_dataset *d = image_dataset(n);
    const double mean[2] = {0.1307, 4.5}, std[2] = {0.3081, 2.25};
    yt_transform t = yt_transform_normalize(mean, std, 2);
    int64_t per;
    float *got = transformed(d, &t, 1, 1, 0, &per);
    cr_assert_eq(per, 30);
    float want[6 * 30];
    if (!torch_normalize(n, mean, std, want))
        cr_skip_test("/usr/bin/python3 with torch is not available");
    for (int64_t i = 0; i < n * 30; i++)
        cr_assert(got[i] == want[i], "element %lld: %.9g, PyTorch %.9g", (long long)i, got[i],
                  want[i]);
    free(got);
    /* one value for every channel */
    yt_transform one = yt_transform_normalize(mean, std, 1);
    got = transformed(d, &one, 1, 1, 2, &per);
    float x = 31 * 0.37f; /* sample 1, channel 0, element 1 */
    cr_assert(got[31] == (x - (float)mean[0]) / (float)std[0]);
    free(got);
    yt_dataset_release(d);
    YT_ASSERT_NO_LEAKS();
}

/* The value of sample `s` of image_dataset at (c, y, x), 0 outside the 3 x 5 image. */
static float
source(int64_t s, int64_t c, int64_t y, int64_t x)
{
    if (y < 0 || y >= 3 || x < 0 || x >= 5)
        return 0.0f;
    return (float)(((s * 2 + c) * 3 + y) * 5 + x) * 0.37f;
}

Test(data, random_crop_is_a_padded_window_fixed_by_the_seed)
{
    const int64_t n = 160;
    yt_dataset *d = image_dataset(n);
    yt_transform t = yt_transform_random_crop(2, 4, 1);
    int64_t per;
    float *a = transformed(d, &t, 1, 5, 0, &per);
    float *b = transformed(d, &t, 1, 5, 3, &per);
    float *c = transformed(d, &t, 1, 6, 0, &per);
    cr_assert_eq(per, 2 * 2 * 4);
    cr_assert_eq(memcmp(a, b, sizeof(float) * (size_t)(n * per)), 0,
                 "the crops depend on the worker count");
    cr_assert_neq(memcmp(a, c, sizeof(float) * (size_t)(n * per)), 0, "the seed changes nothing");
    /* each output is the window at some (top, left) of the image padded by 1 (5 x 7); every one
     * of the 4 x 4 possible positions turns up among 160 samples */
    bool seen[4][4] = {{false}};
    for (int64_t s = 0; s < n; s++) {
        const float *o = a + s * per;
        int found = 0;
        for (int top = 0; top < 4; top++)
            for (int left = 0; left < 4; left++) {
                bool match = true;
                for (int ch = 0; ch < 2 && match; ch++)
                    for (int y = 0; y < 2 && match; y++)
                        for (int x = 0; x < 4 && match; x++)
                            match =
                                o[(ch * 2 + y) * 4 + x] == source(s, ch, top + y - 1, left + x - 1);
                if (match) {
                    seen[top][left] = true;
                    found++;
                }
            }
        cr_assert_eq(found, 1, "sample %lld is not one window of its padded image", (long long)s);
    }
    for (int top = 0; top < 4; top++)
        for (int left = 0; left < 4; left++)
            cr_assert(seen[top][left], "window (%d, %d) never chosen", top, left);
    free(a);
    free(b);
    free(c);
    yt_dataset_release(d);
    YT_ASSERT_NO_LEAKS();
}

Test(data, horizontal_flip_and_chained_transforms)
{
    const int64_t n = 64;
    yt_dataset *d = image_dataset(n);
    int64_t per;
    yt_transform always = yt_transform_random_horizontal_flip(1.0);
    float *f = transformed(d, &always, 1, 1, 0, &per);
    for (int64_t s = 0; s < n; s++)
        for (int ch = 0; ch < 2; ch++)
            for (int y = 0; y < 3; y++)
                for (int x = 0; x < 5; x++)
                    cr_assert(f[s * per + (ch * 3 + y) * 5 + x] == source(s, ch, y, 4 - x));
    free(f);
    yt_transform never = yt_transform_random_horizontal_flip(0.0);
    f = transformed(d, &never, 1, 1, 0, &per);
    for (int64_t s = 0; s < n; s++)
        cr_assert(f[s * per + 1] == source(s, 0, 0, 1));
    free(f);
    /* p = 0.5: some flipped, some not, the same ones for 0 and 2 workers */
    yt_transform half = yt_transform_random_horizontal_flip(0.5);
    float *a = transformed(d, &half, 1, 9, 0, &per);
    float *b = transformed(d, &half, 1, 9, 2, &per);
    cr_assert_eq(memcmp(a, b, sizeof(float) * (size_t)(n * per)), 0);
    int flipped = 0;
    for (int64_t s = 0; s < n; s++)
        flipped += a[s * per] == source(s, 0, 0, 4);
    cr_assert(flipped > 16 && flipped < 48, "%d of 64 flipped with p = 0.5", flipped);
    free(a);
    free(b);
    /* crop then flip then normalize, in that order; the output shape follows the crop */
    const double m = 1.0, sd = 2.0;
    const yt_transform chain[3] = {yt_transform_random_crop(3, 5, 0),
                                   yt_transform_random_horizontal_flip(1.0),
                                   yt_transform_normalize(&m, &sd, 1)};
    f = transformed(d, chain, 3, 1, 1, &per);
    cr_assert_eq(per, 30);
    cr_assert(f[0] == (source(0, 0, 0, 4) - 1.0f) / 2.0f);
    free(f);
    yt_dataset_release(d);
    YT_ASSERT_NO_LEAKS();
}

/* yt_loader_new with one transform must fail with `code` and a message starting `prefix`. */
static void
expect_transform_error(yt_dataset *d, yt_transform t, yt_status code, const char *prefix)
{
    yt_loader_options o = {.batch_size = 2, .transforms = &t, .n_transforms = 1};
    cr_assert_null(yt_loader_new(d, &o));
    YT_ASSERT_ERROR(code, prefix);
}

Test(data, transform_arguments_are_checked)
{
    yt_dataset *d = image_dataset(2);
    const double m[3] = {0, 0, 0}, s[3] = {1, 0, 1};
    expect_transform_error(d, yt_transform_normalize(m, s, 3), YT_ERR_VALUE,
                           "loader_new: transforms[0] (normalize): n_channels=3, but the samples "
                           "have 2 channels");
    expect_transform_error(d, yt_transform_normalize(m, s + 1, 1), YT_ERR_VALUE,
                           "loader_new: transforms[0] (normalize): mean[0]=0, std[0]=0: both must "
                           "be finite and std non-zero");
    expect_transform_error(d, yt_transform_normalize(NULL, s, 1), YT_ERR_VALUE,
                           "loader_new: transforms[0] (normalize): mean is NULL");
    expect_transform_error(d, yt_transform_random_crop(6, 5, 1), YT_ERR_VALUE,
                           "loader_new: transforms[0] (random_crop): size[0]=6 must be in 1..5 "
                           "(the padded height)");
    expect_transform_error(d, yt_transform_random_crop(2, 2, -1), YT_ERR_VALUE,
                           "loader_new: transforms[0] (random_crop): padding=-1 is out of range");
    expect_transform_error(d, yt_transform_random_horizontal_flip(1.5), YT_ERR_VALUE,
                           "loader_new: transforms[0] (random_horizontal_flip): p=1.5 is out of "
                           "range [0, 1]");
    expect_transform_error(d, yt_transform_random_horizontal_flip(NAN), YT_ERR_VALUE,
                           "loader_new: transforms[0] (random_horizontal_flip): p=nan");
    yt_transform bad = {.kind = 99};
    expect_transform_error(d, bad, YT_ERR_VALUE, "loader_new: transforms[0]: unknown kind 99");

    /* transforms need f32 samples of 1 to 3 dims */
    yt_tensor *bytes = yt_zeros_ex((const int64_t[]){2, 3, 3}, 3, YT_DTYPE_U8, YT_DEVICE_NONE);
    yt_dataset *u8 = yt_tensor_dataset_new(bytes, NULL);
    expect_transform_error(u8, yt_transform_random_horizontal_flip(0.5), YT_ERR_DTYPE,
                           "loader_new: transforms need f32 samples, but dataset 'TensorDataset' "
                           "gives u8");
    yt_tensor *flat = yt_zeros((const int64_t[]){2, 3}, 2);
    yt_dataset *vec = yt_tensor_dataset_new(flat, NULL);
    expect_transform_error(vec, yt_transform_random_crop(2, 2, 0), YT_ERR_VALUE,
                           "loader_new: transforms[0] (random_crop): samples must be [C, H, W] "
                           "or [H, W], got 1-D");
    yt_release(flat);
    yt_release(bytes);
    yt_dataset_release(vec);
    yt_dataset_release(u8);
    yt_dataset_release(d);
    YT_ASSERT_NO_LEAKS();
}
