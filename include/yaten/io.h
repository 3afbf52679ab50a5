/* Serialization: safetensors files (tensors and state dicts), NumPy .npy arrays, checkpoints
 * (model, optimizer, scheduler, loader and RNG state in one safetensors file), and string
 * metadata. Included by <yaten.h>; not meant to be included on its own.
 *
 * Errors: a file that cannot be opened, read or written, or whose contents are malformed, gives
 * YT_ERR_IO with a message that starts with the path and says what is wrong:
 *   "model.safetensors: tensor 'fc.weight': data_offsets [0, 100) hold 100 bytes but f32 [5, 6]
 *    needs 120".
 * Bad arguments give YT_ERR_VALUE (NULL, empty or duplicate names), YT_ERR_DTYPE (a dtype the
 * format cannot hold) or YT_ERR_DEVICE (a tensor not on the CPU); allocation failures
 * YT_ERR_NOMEM. Loaders never leave partial results behind: on error the output list and
 * metadata are as they were on entry.
 *
 * Files are written to a temporary file beside the destination, flushed to disk (fsync) and
 * renamed over it, so a crash or a full disk never leaves a torn file under the final name. */
#ifndef YATEN_IO_H
#define YATEN_IO_H

#include "named.h"
#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- metadata: ordered string key/value pairs (safetensors "__metadata__") ---- */

typedef struct yt_metadata {
    int64_t count;
    char **keys;      /* keys[i]: NUL-terminated, owned by the struct */
    char **values;    /* values[i]: NUL-terminated, owned by the struct */
    int64_t capacity; /* internal */
} yt_metadata;

/* An empty set: `yt_metadata meta = YT_METADATA_INIT;` */
/* clang-format off */
#define YT_METADATA_INIT {0, NULL, NULL, 0}
/* clang-format on */

/* Sets `key` to `value` (both copied): replaces the value of an existing key in place, or
 * appends a new pair. Errors: YT_ERR_VALUE (NULL meta, key or value; empty key), YT_ERR_NOMEM.
 * On error `meta` is unchanged. */
YT_API yt_status yt_metadata_set(yt_metadata *meta, const char *key, const char *value);

/* The value of `key`, borrowed from `meta` (valid until the next set or clear), or NULL (no error
 * recorded) when absent or when meta/key is NULL. */
YT_API const char *yt_metadata_get(const yt_metadata *meta, const char *key);

/* Frees every key and value and leaves an empty set. NULL is a no-op. */
YT_API void yt_metadata_clear(yt_metadata *meta);

/* ---- safetensors ---- */

/* Writes `tensors` (and `meta`, may be NULL) to `path` in the safetensors format
 * (https://github.com/huggingface/safetensors): the header lists the tensors in the order of the
 * list; the data of each tensor is written contiguous, row-major and little-endian, laid out by
 * decreasing element size (then list order), so every tensor starts at a multiple of its element
 * size, as the reference writer does. Tensors may be non-contiguous views, 0-d or zero-size; all
 * ten yaten dtypes are stored (F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL). Arguments are borrowed.
 * Errors: YT_ERR_VALUE (NULL path or list, NULL tensor, empty, duplicate or non-UTF-8 name, the
 * reserved name "__metadata__", NULL or non-UTF-8 metadata), YT_ERR_DEVICE (not on the CPU),
 * YT_ERR_IO (cannot write; the destination is then untouched), YT_ERR_NOMEM. */
YT_API yt_status yt_safetensors_save(const char *path, const yt_named_tensors *tensors,
                                     const yt_metadata *meta);

/* Reads the safetensors file at `path` and appends its tensors (new contiguous CPU tensors, in the
 * header's order) to `out`, and its metadata to `meta_out` (may be NULL: metadata ignored). The
 * whole header is validated before any data is read: header length within the file and at most
 * 100,000,000 bytes (the reference implementation's limit), a JSON object with no duplicate keys,
 * known dtypes, shapes of at most YT_MAX_DIM non-negative integers, shape x dtype size equal to the
 * byte range (overflow-checked), byte ranges that tile the data buffer exactly (no overlap, no
 * hole, nothing after the last tensor), string metadata values. BOOL bytes other than 0 and 1 are
 * read as true. Errors: YT_ERR_IO (cannot read, or malformed: see above), YT_ERR_VALUE (NULL path
 * or out, a name already in `out`), YT_ERR_NOMEM. On error `out` and `meta_out` are unchanged. */
YT_API yt_status yt_safetensors_load(const char *path, yt_named_tensors *out,
                                     yt_metadata *meta_out);

/* One tensor's entry in a safetensors header. */
typedef struct yt_safetensors_entry {
    char *name; /* owned by the index */
    yt_dtype dtype;
    int ndim;
    int64_t shape[YT_MAX_DIM];
    int64_t begin, end; /* byte range, relative to the start of the data buffer */
} yt_safetensors_entry;

/* The header of a safetensors file: what `yaten inspect` shows, read without the data. */
typedef struct yt_safetensors_index {
    int64_t count;
    yt_safetensors_entry *entries; /* header order */
    int64_t data_start;            /* file offset of the data buffer (8 + header length) */
    int64_t file_size;
} yt_safetensors_index;

/* clang-format off */
#define YT_SAFETENSORS_INDEX_INIT {0, NULL, 0, 0}
/* clang-format on */

/* Reads and validates the header of `path` exactly as yt_safetensors_load does, without reading
 * tensor data, into `*out` (which the caller frees with yt_safetensors_index_clear) and its
 * metadata into `meta_out` (may be NULL). Errors: as yt_safetensors_load; on error `*out` is left
 * empty and `meta_out` unchanged. */
YT_API yt_status yt_safetensors_read_index(const char *path, yt_safetensors_index *out,
                                           yt_metadata *meta_out);

/* Frees the entries of `index` and leaves it empty. NULL is a no-op. */
YT_API void yt_safetensors_index_clear(yt_safetensors_index *index);

/* ---- NumPy .npy ---- */

/* Writes `t` to `path` as a .npy file (format version 1.0,
 * C order, little-endian; descr <f8 <f4 <f2 <i8 <i4 <i2 |i1 |u1 |b1). `t` may be a non-contiguous
 * view, 0-d or zero-size; it is borrowed. Errors: YT_ERR_VALUE (NULL path or tensor), YT_ERR_DTYPE
 * (bf16: NumPy has no bfloat16), YT_ERR_DEVICE, YT_ERR_IO, YT_ERR_NOMEM. */
YT_API yt_status yt_npy_save(const char *path, yt_tensor *t);

/* Reads a .npy file (format versions 1.0, 2.0, 3.0; descr as above, where 1-byte types may carry
 * any byte-order mark; fortran_order True or False). Returns: a new contiguous CPU tensor (C
 * order: a Fortran-order array is transposed on load), or NULL with YT_ERR_IO (cannot read; bad
 * magic, version or header; big-endian or unsupported descr; data shorter or longer than the
 * shape needs), YT_ERR_VALUE (NULL path) or YT_ERR_NOMEM. */
YT_API yt_tensor *yt_npy_load(const char *path);

/* ---- checkpoints ---- */

/* One part of a checkpoint: a name prefix ("model.", "optimizer.", "scheduler.", "loader.",
 * "rng.") and the list of its tensors (names without the prefix). */
typedef struct yt_checkpoint_part {
    const char *prefix;
    yt_named_tensors *tensors;
} yt_checkpoint_part;

/* Writes one safetensors file holding every part's tensors under "<prefix><name>", with metadata
 * "format" = "yaten-checkpoint", "version" = "1", "parts" = the prefixes joined by ',', plus the
 * caller's `meta` (may be NULL). Arguments are borrowed. Errors: YT_ERR_VALUE (NULL path or
 * parts, n_parts < 1, a NULL list, an empty prefix or one holding ',', two prefixes where one
 * starts the other, meta using a reserved key "format", "version" or "parts"), and those of
 * yt_safetensors_save. */
YT_API yt_status yt_checkpoint_save(const char *path, const yt_checkpoint_part *parts, int n_parts,
                                    const yt_metadata *meta);

/* Reads a checkpoint written by yt_checkpoint_save and fills each requested part's list (which
 * must be empty on entry) with that part's tensors, the prefix stripped. Parts in the file that
 * are not requested are skipped (an evaluation loads only "model."). The caller's metadata goes to
 * `meta_out` (may be NULL) without the reserved keys. Errors: YT_ERR_IO (not a yaten checkpoint or
 * another version, a requested part missing from the file, a tensor whose name has none of the
 * file's prefixes, and the errors of yt_safetensors_load), YT_ERR_VALUE (arguments as for save, a
 * non-empty list). On error every list and `meta_out` are unchanged. */
YT_API yt_status yt_checkpoint_load(const char *path, yt_checkpoint_part *parts, int n_parts,
                                    yt_metadata *meta_out);

/* The state of `gen` (NULL: the default generator) as a state dict: "seed" and "offset", 0-d i64
 * tensors holding the uint64 values' bits (values above INT64_MAX read as negative numbers; they
 * round-trip exactly). Appends to `out`. Errors: YT_ERR_VALUE (NULL out, a name already in it),
 * YT_ERR_NOMEM. */
YT_API yt_status yt_generator_state_dict(yt_generator *gen, yt_named_tensors *out);

/* Restores a state dict made by yt_generator_state_dict into `gen` (NULL: the default generator).
 * Errors: YT_ERR_VALUE (NULL sd; "seed" or "offset" missing, not a one-element i64 tensor, or an
 * unexpected name in sd); `gen` is unchanged on error. */
YT_API yt_status yt_generator_load_state_dict(yt_generator *gen, const yt_named_tensors *sd);

#ifdef __cplusplus
}
#endif

#endif
