/* safetensors files (include/yaten/io.h).
 *
 * The format, as the reference implementation (huggingface/safetensors, safetensors/src/tensor.rs)
 * writes and checks it:
 * - 8 bytes: N, the header length, an unsigned 64-bit little-endian integer. The reader refuses
 *   N > 100,000,000 (MAX_HEADER_SIZE) and N beyond the end of the file.
 * - N bytes: a UTF-8 JSON object starting with '{'. Key "__metadata__" (optional) maps to an
 *   object of string -> string; every other key is a tensor name mapping to
 *   {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, shape entries and offsets
 *   being unsigned integers (usize). [] is the shape of a scalar; sizes of 0 are allowed.
 *   The writer pads the header with spaces to a multiple of 8 bytes, so the data buffer starts
 *   8-aligned, and lays the tensors out by decreasing dtype alignment (then name), so each one
 *   starts at a multiple of its element size.
 * - The rest of the file: the data buffer. Offsets are relative to its start, [begin, end) with
 *   end - begin = numel x element size (checked with overflow checks), elements row-major ('C'
 *   order) and little-endian. Sorted by offsets, the tensors must tile the buffer exactly: each
 *   begins where the previous one ended, the first at 0, and the last ends at the end of the
 *   file ("MetadataIncompleteBuffer"): no holes and no overlaps, so no bytes hide in a file.
 * - dtypes: BOOL U8 I8 F8_E5M2 F8_E4M3 I16 U16 F16 BF16 I32 U32 F32 F64 I64 U64 (sizes 1 1 1 1 1
 *   2 2 2 2 4 4 4 8 8 8); yaten reads and writes the ten it has and names the others in errors.
 *
 * yaten is stricter than the reference reader in three places: duplicate keys are an error
 * (serde would keep the last), a tensor entry with keys besides the three is an error (serde
 * ignores them), and "__metadata__" must be an object (serde also accepts null).
 *
 * Loading validates the whole header before reading any data, then reads each tensor's bytes
 * straight into its storage with pread: no per-element work (except BOOL, normalised to 0/1). */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io_file.h"

#define MAX_HEADER_BYTES 100000000

static const struct {
    const char *name;
    yt_dtype dtype;
} dtype_table[] = {
    {"F64", YT_DTYPE_F64}, {"F32", YT_DTYPE_F32},   {"F16", YT_DTYPE_F16}, {"BF16", YT_DTYPE_BF16},
    {"I64", YT_DTYPE_I64}, {"I32", YT_DTYPE_I32},   {"I16", YT_DTYPE_I16}, {"I8", YT_DTYPE_I8},
    {"U8", YT_DTYPE_U8},   {"BOOL", YT_DTYPE_BOOL},
};
#define N_DTYPES (sizeof dtype_table / sizeof dtype_table[0])

static const char *
dtype_to_st(yt_dtype dtype)
{
    for (size_t i = 0; i < N_DTYPES; i++)
        if (dtype_table[i].dtype == dtype)
            return dtype_table[i].name;
    return NULL;
}

static bool
dtype_from_st(const char *name, yt_dtype *out)
{
    for (size_t i = 0; i < N_DTYPES; i++)
        if (strcmp(dtype_table[i].name, name) == 0) {
            *out = dtype_table[i].dtype;
            return true;
        }
    return false;
}

static const char *
json_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a real number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }
    return "?";
}

/* ---------------------------------------------------------------- header parsing */

static void
index_clear(yt_safetensors_index *index)
{
    for (int64_t i = 0; i < index->count; i++)
        free(index->entries[i].name);
    free(index->entries);
    *index = (yt_safetensors_index)YT_SAFETENSORS_INDEX_INIT;
}

void
yt_safetensors_index_clear(yt_safetensors_index *index)
{
    if (index != NULL)
        index_clear(index);
}

/* Fills `e` from one tensor entry of the header; checks everything but the other tensors. */
static yt_status
parse_entry(const char *path, const char *name, json_t *v, int64_t buffer_bytes,
            yt_safetensors_entry *e)
{
    if (name[0] == '\0')
        return yt__fail_status(YT_ERR_IO, "%s: a tensor has an empty name", path);
    if (!json_is_object(v))
        return yt__fail_status(YT_ERR_IO, "%s: tensor '%s': entry is %s, not an object", path, name,
                               json_kind(v));
    const char *key;
    json_t *field;
    json_object_foreach(v, key, field)
    {
        if (strcmp(key, "dtype") != 0 && strcmp(key, "shape") != 0 &&
            strcmp(key, "data_offsets") != 0)
            return yt__fail_status(YT_ERR_IO,
                                   "%s: tensor '%s': unknown key '%s' (expected dtype, shape, "
                                   "data_offsets)",
                                   path, name, key);
    }
    json_t *dtype = json_object_get(v, "dtype");
    json_t *shape = json_object_get(v, "shape");
    json_t *offsets = json_object_get(v, "data_offsets");
    if (dtype == NULL || shape == NULL || offsets == NULL)
        return yt__fail_status(YT_ERR_IO, "%s: tensor '%s': '%s' is missing", path, name,
                               dtype == NULL   ? "dtype"
                               : shape == NULL ? "shape"
                                               : "data_offsets");

    if (!json_is_string(dtype))
        return yt__fail_status(YT_ERR_IO, "%s: tensor '%s': dtype is %s, not a string", path, name,
                               json_kind(dtype));
    if (!dtype_from_st(json_string_value(dtype), &e->dtype))
        return yt__fail_status(YT_ERR_IO,
                               "%s: tensor '%s': dtype '%s' is not supported (yaten reads F64 "
                               "F32 F16 BF16 I64 I32 I16 I8 U8 BOOL)",
                               path, name, json_string_value(dtype));

    if (!json_is_array(shape))
        return yt__fail_status(YT_ERR_IO, "%s: tensor '%s': shape is %s, not an array", path, name,
                               json_kind(shape));
    size_t ndim = json_array_size(shape);
    if (ndim > YT_MAX_DIM)
        return yt__fail_status(YT_ERR_IO, "%s: tensor '%s': shape has %zu dimensions (at most %d)",
                               path, name, ndim, YT_MAX_DIM);
    e->ndim = (int)ndim;
    for (size_t d = 0; d < ndim; d++) {
        json_t *s = json_array_get(shape, d);
        if (!json_is_integer(s))
            return yt__fail_status(YT_ERR_IO, "%s: tensor '%s': shape[%zu] is %s, not an integer",
                                   path, name, d, json_kind(s));
        if (json_integer_value(s) < 0)
            return yt__fail_status(YT_ERR_IO, "%s: tensor '%s': shape[%zu]=%lld is negative", path,
                                   name, d, (long long)json_integer_value(s));
        e->shape[d] = (int64_t)json_integer_value(s);
    }

    if (!json_is_array(offsets) || json_array_size(offsets) != 2)
        return yt__fail_status(
            YT_ERR_IO, "%s: tensor '%s': data_offsets is not an array of two integers", path, name);
    for (size_t k = 0; k < 2; k++) {
        json_t *o = json_array_get(offsets, k);
        if (!json_is_integer(o) || json_integer_value(o) < 0)
            return yt__fail_status(YT_ERR_IO,
                                   "%s: tensor '%s': data_offsets[%zu] is not a non-negative "
                                   "integer",
                                   path, name, k);
    }
    e->begin = (int64_t)json_integer_value(json_array_get(offsets, 0));
    e->end = (int64_t)json_integer_value(json_array_get(offsets, 1));
    if (e->end < e->begin)
        return yt__fail_status(YT_ERR_IO,
                               "%s: tensor '%s': data_offsets [%lld, %lld) end before "
                               "they begin",
                               path, name, (long long)e->begin, (long long)e->end);
    if (e->end > buffer_bytes)
        return yt__fail_status(YT_ERR_IO,
                               "%s: tensor '%s': data_offsets [%lld, %lld) run past the end of "
                               "the data buffer (%lld bytes)",
                               path, name, (long long)e->begin, (long long)e->end,
                               (long long)buffer_bytes);

    char sizes[YT__SIZES_BUF];
    int64_t numel = 1, nbytes;
    for (int d = 0; d < e->ndim; d++)
        if (!yt__mul_ok(&numel, numel, e->shape[d]))
            numel = -1;
    if (numel < 0 || !yt__mul_ok(&nbytes, numel, (int64_t)yt_dtype_size(e->dtype)))
        return yt__fail_status(YT_ERR_IO, "%s: tensor '%s': %s %s holds more than 2^63 bytes", path,
                               name, yt_dtype_name(e->dtype),
                               yt__format_sizes(sizes, sizeof sizes, e->shape, e->ndim));
    if (nbytes != e->end - e->begin)
        return yt__fail_status(YT_ERR_IO,
                               "%s: tensor '%s': data_offsets [%lld, %lld) hold %lld bytes but %s "
                               "%s needs %lld",
                               path, name, (long long)e->begin, (long long)e->end,
                               (long long)(e->end - e->begin), yt_dtype_name(e->dtype),
                               yt__format_sizes(sizes, sizeof sizes, e->shape, e->ndim),
                               (long long)nbytes);
    e->name = strdup(name);
    if (e->name == NULL)
        return yt__fail_status(YT_ERR_NOMEM, "%s: out of memory", path);
    return YT_OK;
}

static yt_status
parse_metadata(const char *path, json_t *v, yt_metadata *meta)
{
    if (!json_is_object(v))
        return yt__fail_status(YT_ERR_IO, "%s: __metadata__ is %s, not an object", path,
                               json_kind(v));
    const char *key;
    json_t *value;
    json_object_foreach(v, key, value)
    {
        if (!json_is_string(value))
            return yt__fail_status(YT_ERR_IO, "%s: __metadata__ '%s' is %s, not a string", path,
                                   key, json_kind(value));
        if (key[0] == '\0')
            return yt__fail_status(YT_ERR_IO, "%s: __metadata__ has an empty key", path);
        if (meta != NULL && yt_metadata_set(meta, key, json_string_value(value)) != YT_OK)
            return yt_errcode();
    }
    return YT_OK;
}

/* Sort order of the coverage check: by data offsets, ties by header position. */
static int
by_offsets(const void *a, const void *b, void *ctx)
{
    const yt_safetensors_entry *entries = ctx;
    int64_t i = *(const int64_t *)a, j = *(const int64_t *)b;
    const yt_safetensors_entry *x = &entries[i], *y = &entries[j];
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return i < j ? -1 : (i > j);
}

/* Checks that the entries, sorted by offsets, tile [0, buffer_bytes) exactly. `order` receives
 * the sorted permutation (the loader reads in this order). */
static yt_status
check_coverage(const char *path, const yt_safetensors_index *index, int64_t buffer_bytes,
               int64_t *order)
{
    for (int64_t i = 0; i < index->count; i++)
        order[i] = i;
    if (index->count > 1)
        qsort_r(order, (size_t)index->count, sizeof *order, by_offsets, index->entries);
    int64_t cursor = 0;
    const yt_safetensors_entry *prev = NULL;
    for (int64_t k = 0; k < index->count; k++) {
        const yt_safetensors_entry *e = &index->entries[order[k]];
        if (e->begin < cursor)
            return yt__fail_status(YT_ERR_IO,
                                   "%s: tensor '%s': data_offsets [%lld, %lld) overlap tensor "
                                   "'%s' [%lld, %lld)",
                                   path, e->name, (long long)e->begin, (long long)e->end,
                                   prev->name, (long long)prev->begin, (long long)prev->end);
        if (e->begin > cursor)
            return yt__fail_status(YT_ERR_IO,
                                   "%s: bytes [%lld, %lld) of the data buffer belong to no tensor "
                                   "(a hole before tensor '%s')",
                                   path, (long long)cursor, (long long)e->begin, e->name);
        cursor = e->end;
        prev = e;
    }
    if (cursor != buffer_bytes)
        return yt__fail_status(YT_ERR_IO,
                               "%s: bytes [%lld, %lld) at the end of the data buffer belong to no "
                               "tensor",
                               path, (long long)cursor, (long long)buffer_bytes);
    return YT_OK;
}

/* Reads and validates the header of the open file `fd` (`file_size` bytes). On success fills
 * `index` and, when `order` is not NULL, gives the entries sorted by offsets (caller frees). */
static yt_status
read_header(const char *path, int fd, int64_t file_size, yt_safetensors_index *index,
            yt_metadata *meta, int64_t **order)
{
    *index = (yt_safetensors_index)YT_SAFETENSORS_INDEX_INIT;
    if (file_size < 8)
        return yt__fail_status(YT_ERR_IO,
                               "%s: the file is %lld bytes, too short for the 8-byte header "
                               "length",
                               path, (long long)file_size);
    unsigned char len_bytes[8];
    if (yt__in_read(fd, path, 0, len_bytes, 8, "the header length") != YT_OK)
        return yt_errcode();
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = n << 8 | len_bytes[i];
    if (n > MAX_HEADER_BYTES)
        return yt__fail_status(YT_ERR_IO,
                               "%s: header length %llu is absurd (more than %d bytes): not a "
                               "safetensors file?",
                               path, (unsigned long long)n, MAX_HEADER_BYTES);
    if ((int64_t)n > file_size - 8)
        return yt__fail_status(YT_ERR_IO,
                               "%s: header length %llu runs past the end of the file (%lld bytes)",
                               path, (unsigned long long)n, (long long)file_size);
    int64_t buffer_bytes = file_size - 8 - (int64_t)n;

    char *text = malloc(n + 1);
    if (text == NULL)
        return yt__fail_status(YT_ERR_NOMEM, "%s: out of memory for a %llu-byte header", path,
                               (unsigned long long)n);
    if (yt__in_read(fd, path, 8, text, n, "the header") != YT_OK) {
        free(text);
        return yt_errcode();
    }
    text[n] = '\0';
    if (n == 0 || text[0] != '{') {
        free(text);
        return yt__fail_status(YT_ERR_IO, "%s: the header does not start with '{'", path);
    }
    json_error_t jerr;
    json_t *root = json_loadb(text, n, JSON_REJECT_DUPLICATES, &jerr);
    free(text);
    if (root == NULL && json_error_code(&jerr) == json_error_duplicate_key)
        return yt__fail_status(YT_ERR_IO, "%s: the header names a key twice (%s, header byte %d)",
                               path, jerr.text, jerr.position);
    if (root == NULL)
        return yt__fail_status(YT_ERR_IO, "%s: the header is not valid JSON: %s (header byte %d)",
                               path, jerr.text, jerr.position);
    if (!json_is_object(root)) {
        json_decref(root);
        return yt__fail_status(YT_ERR_IO, "%s: the header is not a JSON object", path);
    }

    yt_status st = YT_OK;
    yt_metadata meta_tmp = YT_METADATA_INIT;
    size_t n_keys = json_object_size(root);
    index->entries = calloc(n_keys ? n_keys : 1, sizeof *index->entries);
    int64_t *sorted = malloc(sizeof(int64_t) * (n_keys ? n_keys : 1));
    if (index->entries == NULL || sorted == NULL)
        st = yt__fail_status(YT_ERR_NOMEM, "%s: out of memory for %zu tensors", path, n_keys);
    const char *key;
    json_t *value;
    json_object_foreach(root, key, value)
    {
        if (st != YT_OK)
            break;
        if (strcmp(key, "__metadata__") == 0) {
            st = parse_metadata(path, value, meta != NULL ? &meta_tmp : NULL);
        } else {
            st = parse_entry(path, key, value, buffer_bytes, &index->entries[index->count]);
            if (st == YT_OK)
                index->count++;
        }
    }
    json_decref(root);
    if (st == YT_OK)
        st = check_coverage(path, index, buffer_bytes, sorted);
    if (st == YT_OK && meta != NULL) {
        /* Commit the metadata last: a failure above leaves `meta` as it was. */
        if (meta->count == 0) {
            yt_metadata_clear(meta);
            *meta = meta_tmp;
            meta_tmp = (yt_metadata)YT_METADATA_INIT;
        } else {
            for (int64_t i = 0; i < meta_tmp.count && st == YT_OK; i++)
                st = yt_metadata_set(meta, meta_tmp.keys[i], meta_tmp.values[i]);
        }
    }
    yt_metadata_clear(&meta_tmp);
    if (st != YT_OK) {
        free(sorted);
        index_clear(index);
        return st;
    }
    index->data_start = 8 + (int64_t)n;
    index->file_size = file_size;
    if (order != NULL)
        *order = sorted;
    else
        free(sorted);
    return YT_OK;
}

yt_status
yt_safetensors_read_index(const char *path, yt_safetensors_index *out, yt_metadata *meta_out)
{
    if (path == NULL || out == NULL)
        return yt__fail_status(YT_ERR_VALUE, "safetensors_read_index: %s is NULL",
                               path == NULL ? "path" : "out");
    *out = (yt_safetensors_index)YT_SAFETENSORS_INDEX_INIT;
    int fd;
    int64_t size;
    if (yt__in_open(path, &fd, &size) != YT_OK)
        return yt_errcode();
    yt_status st = read_header(path, fd, size, out, meta_out, NULL);
    close(fd);
    return st;
}

/* ---------------------------------------------------------------- load */

/* Drops the entries a failed load appended to `list` after its first `count`. */
static void
truncate_list(yt_named_tensors *list, int64_t count)
{
    while (list->count > count) {
        list->count--;
        free(list->names[list->count]);
        yt_release(list->tensors[list->count]);
    }
}

yt_status
yt_safetensors_load(const char *path, yt_named_tensors *out, yt_metadata *meta_out)
{
    if (path == NULL || out == NULL)
        return yt__fail_status(YT_ERR_VALUE, "safetensors_load: %s is NULL",
                               path == NULL ? "path" : "out");
    int fd;
    int64_t size;
    if (yt__in_open(path, &fd, &size) != YT_OK)
        return yt_errcode();
    yt_safetensors_index index;
    int64_t *order = NULL;
    /* Metadata goes to a private set first, committed only when every tensor is read. */
    yt_metadata meta_tmp = YT_METADATA_INIT;
    yt_status st = read_header(path, fd, size, &index, meta_out ? &meta_tmp : NULL, &order);
    if (st != YT_OK) {
        close(fd);
        return st;
    }
    for (int64_t i = 0; i < index.count && st == YT_OK; i++)
        if (yt_named_tensors_find(out, index.entries[i].name) >= 0)
            st = yt__fail_status(YT_ERR_VALUE, "%s: tensor '%s' is already in the output list",
                                 path, index.entries[i].name);

    yt_tensor **tensors = calloc((size_t)(index.count ? index.count : 1), sizeof *tensors);
    if (st == YT_OK && tensors == NULL)
        st = yt__fail_status(YT_ERR_NOMEM, "%s: out of memory", path);
    /* Read in file order (sequential I/O), then list in header order. */
    for (int64_t k = 0; k < index.count && st == YT_OK; k++) {
        const yt_safetensors_entry *e = &index.entries[order[k]];
        yt_shape shape = {.dim = e->ndim};
        memcpy(shape.sizes, e->shape, sizeof(int64_t) * (size_t)e->ndim);
        yt_tensor *t = yt__empty(&shape, e->dtype, YT_DEVICE_CPU);
        if (t == NULL) {
            st = yt_errcode();
            break;
        }
        tensors[order[k]] = t;
        size_t nbytes = (size_t)(e->end - e->begin);
        if (nbytes == 0)
            continue;
        char what[64];
        snprintf(what, sizeof what, "tensor '%.40s'", e->name);
        st = yt__in_read(fd, path, index.data_start + e->begin, yt_tensor_data(t), nbytes, what);
        if (st == YT_OK && e->dtype == YT_DTYPE_BOOL)
            yt__normalize_bool(yt_tensor_data(t), nbytes);
    }
    close(fd);

    int64_t count0 = out->count;
    for (int64_t i = 0; i < index.count && st == YT_OK; i++)
        st = yt_named_tensors_add(out, index.entries[i].name, tensors[i]);
    if (st == YT_OK && meta_out != NULL) {
        if (meta_out->count == 0) {
            yt_metadata_clear(meta_out);
            *meta_out = meta_tmp;
            meta_tmp = (yt_metadata)YT_METADATA_INIT;
        } else {
            for (int64_t i = 0; i < meta_tmp.count && st == YT_OK; i++)
                st = yt_metadata_set(meta_out, meta_tmp.keys[i], meta_tmp.values[i]);
        }
    }
    if (st != YT_OK)
        truncate_list(out, count0);
    for (int64_t i = 0; tensors != NULL && i < index.count; i++)
        yt_release(tensors[i]);
    free(tensors);
    free(order);
    index_clear(&index);
    yt_metadata_clear(&meta_tmp);
    return st;
}

/* ---------------------------------------------------------------- save */

static int
cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static yt_status
check_save_args(const char *path, const yt_named_tensors *tensors, const yt_metadata *meta)
{
    static const char op[] = "safetensors_save";
    if (path == NULL || tensors == NULL)
        return yt__fail_status(YT_ERR_VALUE, "%s: %s is NULL", op,
                               path == NULL ? "path" : "tensors");
    if (tensors->count < 0 || (tensors->count > 0 && (!tensors->names || !tensors->tensors)))
        return yt__fail_status(YT_ERR_VALUE, "%s: %s: the tensor list is malformed", op, path);
    for (int64_t i = 0; i < tensors->count; i++) {
        const char *name = tensors->names[i];
        yt_tensor *t = tensors->tensors[i];
        if (name == NULL || name[0] == '\0')
            return yt__fail_status(YT_ERR_VALUE, "%s: %s: tensors->names[%lld] is %s", op, path,
                                   (long long)i, name == NULL ? "NULL" : "empty");
        if (strcmp(name, "__metadata__") == 0)
            return yt__fail_status(YT_ERR_VALUE,
                                   "%s: %s: '__metadata__' is reserved and cannot name a tensor",
                                   op, path);
        if (t == NULL)
            return yt__fail_status(YT_ERR_VALUE, "%s: %s: tensor '%s' is NULL", op, path, name);
        if (yt_tensor_device(t) != YT_DEVICE_CPU)
            return yt__fail_status(YT_ERR_DEVICE,
                                   "%s: %s: tensor '%s' is on %s; move it to the CPU first", op,
                                   path, name, yt_device_name(yt_tensor_device(t)));
        if (dtype_to_st(yt_tensor_dtype(t)) == NULL)
            return yt__fail_status(YT_ERR_DTYPE, "%s: %s: tensor '%s' has dtype %s", op, path, name,
                                   yt_dtype_name(yt_tensor_dtype(t)));
    }
    if (tensors->count > 1) {
        const char **names = malloc(sizeof(char *) * (size_t)tensors->count);
        if (names == NULL)
            return yt__fail_status(YT_ERR_NOMEM, "%s: out of memory", op);
        memcpy(names, tensors->names, sizeof(char *) * (size_t)tensors->count);
        qsort(names, (size_t)tensors->count, sizeof *names, cmp_names);
        for (int64_t i = 1; i < tensors->count; i++)
            if (strcmp(names[i - 1], names[i]) == 0) {
                yt_status st = yt__fail_status(
                    YT_ERR_VALUE, "%s: %s: tensor name '%s' appears twice", op, path, names[i]);
                free(names);
                return st;
            }
        free(names);
    }
    if (meta != NULL) {
        for (int64_t i = 0; i < meta->count; i++) {
            if (meta->keys[i] == NULL || meta->values[i] == NULL || meta->keys[i][0] == '\0')
                return yt__fail_status(
                    YT_ERR_VALUE, "%s: %s: metadata entry %lld is %s", op, path, (long long)i,
                    meta->keys[i] == NULL || meta->keys[i][0] == '\0' ? "missing its key"
                                                                      : "missing its value");
            for (int64_t j = 0; j < i; j++)
                if (strcmp(meta->keys[i], meta->keys[j]) == 0)
                    return yt__fail_status(YT_ERR_VALUE, "%s: %s: metadata key '%s' appears twice",
                                           op, path, meta->keys[i]);
        }
    }
    return YT_OK;
}

/* Layout order of the data: decreasing element size, then list order (a stable sort), so each
 * tensor starts at a multiple of its element size. */
static int
by_element_size(const void *a, const void *b, void *ctx)
{
    const yt_named_tensors *list = ctx;
    int64_t i = *(const int64_t *)a, j = *(const int64_t *)b;
    size_t si = yt_dtype_size(yt_tensor_dtype(list->tensors[i]));
    size_t sj = yt_dtype_size(yt_tensor_dtype(list->tensors[j]));
    if (si != sj)
        return si > sj ? -1 : 1;
    return i < j ? -1 : (i > j);
}

/* The JSON header (unpadded) for `tensors` laid out in `order`. NULL with an error recorded. */
static char *
build_header(const char *path, const yt_named_tensors *tensors, const yt_metadata *meta,
             const int64_t *order)
{
    static const char op[] = "safetensors_save";
    int64_t *begin = malloc(sizeof(int64_t) * (size_t)(tensors->count ? tensors->count : 1));
    json_t *root = json_object();
    if (begin == NULL || root == NULL) {
        free(begin);
        json_decref(root);
        yt__fail_status(YT_ERR_NOMEM, "%s: out of memory", op);
        return NULL;
    }
    int64_t offset = 0;
    for (int64_t k = 0; k < tensors->count; k++) {
        yt_tensor *t = tensors->tensors[order[k]];
        begin[order[k]] = offset;
        offset += yt_tensor_numel(t) * (int64_t)yt_dtype_size(yt_tensor_dtype(t));
    }
    yt_status st = YT_OK;
    if (meta != NULL && meta->count > 0) {
        json_t *m = json_object();
        if (m == NULL || json_object_set_new(root, "__metadata__", m) != 0)
            st = yt__fail_status(YT_ERR_NOMEM, "%s: out of memory", op);
        for (int64_t i = 0; st == YT_OK && i < meta->count; i++)
            if (json_object_set_new(m, meta->keys[i], json_string(meta->values[i])) != 0)
                st = yt__fail_status(YT_ERR_VALUE, "%s: %s: metadata '%s' is not valid UTF-8", op,
                                     path, meta->keys[i]);
    }
    for (int64_t i = 0; st == YT_OK && i < tensors->count; i++) {
        yt_tensor *t = tensors->tensors[i];
        int64_t nbytes = yt_tensor_numel(t) * (int64_t)yt_dtype_size(yt_tensor_dtype(t));
        json_t *shape = json_array();
        for (int d = 0; shape != NULL && d < yt_tensor_dim(t); d++)
            if (json_array_append_new(shape, json_integer(yt_tensor_size(t, d))) != 0) {
                json_decref(shape);
                shape = NULL;
            }
        if (shape == NULL) {
            st = yt__fail_status(YT_ERR_NOMEM, "%s: out of memory", op);
            break;
        }
        /* "o" hands `shape` to the entry (or frees it if packing fails). */
        json_t *entry =
            json_pack("{s:s, s:o, s:[I, I]}", "dtype", dtype_to_st(yt_tensor_dtype(t)), "shape",
                      shape, "data_offsets", (json_int_t)begin[i], (json_int_t)(begin[i] + nbytes));
        if (entry == NULL)
            st = yt__fail_status(YT_ERR_NOMEM, "%s: out of memory", op);
        else if (json_object_set_new(root, tensors->names[i], entry) != 0)
            st = yt__fail_status(YT_ERR_VALUE, "%s: %s: tensor name '%s' is not valid UTF-8", op,
                                 path, tensors->names[i]);
    }
    char *text = NULL;
    if (st == YT_OK) {
        text = json_dumps(root, JSON_COMPACT);
        if (text == NULL)
            yt__fail_status(YT_ERR_NOMEM, "%s: out of memory", op);
    }
    json_decref(root);
    free(begin);
    return text;
}

yt_status
yt_safetensors_save(const char *path, const yt_named_tensors *tensors, const yt_metadata *meta)
{
    if (check_save_args(path, tensors, meta) != YT_OK)
        return yt_errcode();
    int64_t *order = malloc(sizeof(int64_t) * (size_t)(tensors->count ? tensors->count : 1));
    if (order == NULL)
        return yt__fail_status(YT_ERR_NOMEM, "safetensors_save: out of memory");
    for (int64_t i = 0; i < tensors->count; i++)
        order[i] = i;
    if (tensors->count > 1)
        qsort_r(order, (size_t)tensors->count, sizeof *order, by_element_size, (void *)tensors);
    char *header = build_header(path, tensors, meta, order);
    if (header == NULL) {
        free(order);
        return yt_errcode();
    }
    size_t len = strlen(header);
    size_t padded = (len + 7) / 8 * 8;
    unsigned char len_bytes[8];
    for (int i = 0; i < 8; i++)
        len_bytes[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    static const char spaces[8] = "        ";

    yt__out_file o;
    yt_status st = yt__out_open(&o, path);
    if (st == YT_OK)
        st = yt__out_write(&o, len_bytes, 8);
    if (st == YT_OK)
        st = yt__out_write(&o, header, len);
    if (st == YT_OK)
        st = yt__out_write(&o, spaces, padded - len);
    for (int64_t k = 0; st == YT_OK && k < tensors->count; k++)
        st = yt__out_write_tensor(&o, tensors->tensors[order[k]]);
    if (st == YT_OK)
        st = yt__out_commit(&o);
    else if (o.f != NULL)
        yt__out_abort(&o);
    free(header);
    free(order);
    return st;
}
