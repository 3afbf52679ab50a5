/* Data: datasets, per-sample transforms and a loader that batches, shuffles and prefetches on
 * worker threads. Included by <yaten.h>; not meant to be included on its own.
 *
 * A dataset is a length and a thread-safe reader that writes samples into caller-owned buffers
 * (no tensor per sample). The loader collates samples into [B, ...] tensors. Everything random
 * (the shuffle, crop offsets, flips) is a pure function of (loader seed, epoch, sample index), so
 * the batches are the same for any number of workers and a resumed run sees exactly the batches
 * an uninterrupted one would.
 *
 * Ownership: datasets and loaders are reference-counted or owned objects made by the functions
 * below; tensors returned are new references (tracked by the innermost open scope, like every
 * other result). */
#ifndef YATEN_DATA_H
#define YATEN_DATA_H

#include "named.h"
#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- datasets ---- */

typedef struct yt_dataset yt_dataset;

/* What a dataset does, for user-defined datasets too. */
typedef struct yt_dataset_kind {
    const char *name; /* "IDX", "CSV"; used in error messages */
    /* Number of samples; read once, by yt_dataset_new (a dataset does not change size). */
    int64_t (*length)(void *ctx);
    /* Writes samples indices[0..n) (each in 0..length-1) into caller-owned, contiguous buffers:
     * `input` holds n x input_numel elements of the input dtype, `target` n x target_numel of the
     * target dtype (NULL when the dataset has no targets). Called from worker threads at the same
     * time: must be thread-safe. Returns YT_OK, or an error code after recording the message with
     * the thread's error (the loader carries it to the consuming thread). */
    yt_status (*get_batch)(void *ctx, const int64_t *indices, int64_t n, void *input, void *target);
    /* Frees ctx (may be NULL when there is nothing to free). */
    void (*release_ctx)(void *ctx);
} yt_dataset_kind;

/* A dataset of kind `kind` over `ctx`, whose samples are `input_shape` (input_ndim dims, 0 for a
 * scalar) of `input_dtype`, and whose targets are `target_shape` of `target_dtype`
 * (YT_DTYPE_NONE: no targets; target_shape is then ignored). `kind` must outlive the dataset.
 * Ownership: the dataset owns ctx from this call on; it is freed with kind->release_ctx when
 * the last reference is released, or at once when this call fails.
 * Returns: a dataset with one reference, or NULL with YT_ERR_VALUE (NULL kind or callbacks,
 * ndim out of 0..YT_MAX_DIM, negative sizes, length() < 0), YT_ERR_DTYPE, YT_ERR_NOMEM. */
YT_API yt_dataset *yt_dataset_new(const yt_dataset_kind *kind, void *ctx,
                                  const int64_t *input_shape, int input_ndim, yt_dtype input_dtype,
                                  const int64_t *target_shape, int target_ndim,
                                  yt_dtype target_dtype);

/* Adds a reference and returns `d` (NULL gives NULL). A loader holds one on its dataset. */
YT_API yt_dataset *yt_dataset_retain(yt_dataset *d);

/* Drops a reference; the dataset and its ctx are freed at zero. NULL is a no-op. */
YT_API void yt_dataset_release(yt_dataset *d);

/* Number of samples (0 for NULL). */
YT_API int64_t yt_dataset_length(const yt_dataset *d);

/* The kind's name ("" for NULL). */
YT_API const char *yt_dataset_name(const yt_dataset *d);

/* Per-sample input shape: a pointer to *ndim sizes, valid while `d` lives. NULL for NULL. */
YT_API const int64_t *yt_dataset_input_shape(const yt_dataset *d, int *ndim);
/* Per-sample target shape (*ndim = 0 and a non-NULL pointer for scalar targets). */
YT_API const int64_t *yt_dataset_target_shape(const yt_dataset *d, int *ndim);
YT_API yt_dtype yt_dataset_input_dtype(const yt_dataset *d);
/* YT_DTYPE_NONE when the dataset has no targets. */
YT_API yt_dtype yt_dataset_target_dtype(const yt_dataset *d);

/* Checks the indices (each in 0..length-1) and calls the kind's get_batch. Thread-safe when the
 * kind's get_batch is. Errors: YT_ERR_VALUE (NULL buffers, n < 0, an index out of range), or
 * whatever get_batch reports. */
YT_API yt_status yt_dataset_get_batch(yt_dataset *d, const int64_t *indices, int64_t n, void *input,
                                      void *target);

/* Sample `i` (negative counts from the end) as new tensors of the sample shapes. `target` may be
 * NULL when the caller does not want it; *target is set to NULL when the dataset has none.
 * Errors: YT_ERR_VALUE (NULL dataset or input, i out of range), or get_batch's error; the
 * outputs are then NULL. */
YT_API yt_status yt_dataset_get(yt_dataset *d, int64_t i, yt_tensor **input, yt_tensor **target);

/* In-memory samples: row i of `inputs` and of `targets` (NULL: no targets) is sample i. Both must
 * be CPU tensors of at least one dim with the same size(0); any dtype. The dataset holds
 * references to them (a contiguous copy when they are not contiguous), as PyTorch's
 * TensorDataset does: writing to them later changes the samples.
 * Errors: YT_ERR_VALUE (NULL inputs, 0-d tensors, different sample counts), YT_ERR_DEVICE. */
YT_API yt_dataset *yt_tensor_dataset_new(yt_tensor *inputs, yt_tensor *targets);

/* MNIST-style IDX files (MNIST, Fashion-MNIST): `images_path` an idx3 file of unsigned bytes
 * (count, rows, columns), `labels_path` an idx1 file of unsigned bytes (count). Each may be
 * gzip-compressed or raw. The whole set is kept in memory as bytes; samples are f32 [1, rows,
 * columns] scaled to [0, 1] (byte / 255, as torchvision's ToTensor), targets i64 scalars.
 * Errors: YT_ERR_IO "PATH: what is wrong" (cannot open, not an IDX file: wrong magic, dtype code
 * or rank; truncated; bytes after the data; image and label counts differ), YT_ERR_NOMEM. */
YT_API yt_dataset *yt_idx_dataset_open(const char *images_path, const char *labels_path);

/* A CSV file of numbers, one sample per line: every column except `label_column` (negative
 * counts from the end: -1 is the last) is an input feature (f32 [columns - 1]), and the label
 * column holds integer class indices (i64 scalar targets). `header`: the first line holds column
 * names and is skipped. Fields may be surrounded by spaces; blank lines are skipped.
 * Errors: YT_ERR_IO "PATH:LINE: what is wrong" (a field that is not a number, a label that is not
 * an integer, a row with a different number of columns than the first), "PATH: ..." (cannot
 * open, no data rows, fewer than 2 columns, label_column out of range), YT_ERR_NOMEM. */
YT_API yt_dataset *yt_csv_dataset_open(const char *path, int label_column, bool header);

/* ---- transforms (applied to each f32 input sample, in order, on the loading thread) ---- */

typedef enum yt_transform_kind {
    YT_TRANSFORM_NORMALIZE = 1,
    YT_TRANSFORM_RANDOM_CROP,
    YT_TRANSFORM_RANDOM_HORIZONTAL_FLIP,
} yt_transform_kind;

/* A transform description; build it with the functions below. Samples are [C, H, W] or [H, W]
 * (one channel); for normalize, a 1-D sample [F] has F channels of one element each. */
typedef struct yt_transform {
    yt_transform_kind kind;
    /* normalize: x = (x - mean[c]) / std[c] in f32, as torchvision's Normalize. n_channels
     * entries (1: the same for every channel); borrowed until yt_loader_new returns. */
    const double *mean;
    const double *std;
    int n_channels;
    /* random_crop: pads H and W with `padding` zeros on each side, then takes a size[0] x size[1]
     * window at a uniformly random position (torchvision's RandomCrop). */
    int64_t size[2];
    int64_t padding;
    /* random_horizontal_flip: reverses W with probability p. */
    double p;
} yt_transform;

YT_API yt_transform yt_transform_normalize(const double *mean, const double *std, int n_channels);
YT_API yt_transform yt_transform_random_crop(int64_t height, int64_t width, int64_t padding);
YT_API yt_transform yt_transform_random_horizontal_flip(double p);

/* ---- the loader ---- */

typedef struct yt_loader yt_loader;

typedef struct yt_loader_options {
    int64_t batch_size; /* >= 1 */
    bool shuffle;       /* a new seeded permutation each epoch (a function of seed and epoch) */
    bool drop_last;     /* drop the last batch when it is smaller than batch_size */
    uint64_t seed;      /* for the shuffle and the random transforms */
    int workers;        /* threads loading batches ahead; 0 loads in the caller's thread */
    int prefetch;       /* batches loaded ahead (ring size) with workers > 0; 0 means 2 x workers */
    const yt_transform *transforms; /* n_transforms entries, copied by yt_loader_new */
    int n_transforms;
} yt_loader_options;

/* A loader over `d` (retained), at the first batch of epoch 0. The worker threads start at once
 * and begin loading it. A loader is used from one thread at a time.
 * Errors: YT_ERR_VALUE (NULL arguments, batch_size < 1, workers out of 0..64, prefetch out of
 * 0..1024, more than 16 transforms, a transform that does not fit the samples' shape, std = 0,
 * 8-D samples: a batch would have 9 dims),
 * YT_ERR_DTYPE (transforms on non-f32 inputs), YT_ERR_NOMEM, YT_ERR_INTERNAL (a thread that
 * cannot start). */
YT_API yt_loader *yt_loader_new(yt_dataset *d, const yt_loader_options *o);

/* The next batch of the current epoch: *inputs [B, ...] and *targets [B, ...] (new references;
 * `targets` may be NULL when not wanted, and *targets is NULL for datasets without targets).
 * At the end of the epoch returns YT_OK with *inputs NULL, and moves to the next epoch, whose
 * first batch the following call returns. Batches come in order whatever the worker count.
 * Errors: YT_ERR_VALUE (NULL loader or inputs), or the error of the dataset's get_batch with its
 * message (from a worker thread too), prefixed with the batch: "loader: batch 3 of epoch 0: ...".
 * After an error the same batch is loaded again by the next call. */
YT_API yt_status yt_loader_next(yt_loader *l, yt_tensor **inputs, yt_tensor **targets);

/* Restarts the loader at the first batch of `epoch` (>= 0); batches loaded ahead are dropped.
 * Not needed between epochs (yt_loader_next moves on by itself). Errors: YT_ERR_VALUE. */
YT_API yt_status yt_loader_start_epoch(yt_loader *l, int64_t epoch);

/* Batches per epoch: ceil(length / batch_size), or floor with drop_last. 0 for NULL. */
YT_API int64_t yt_loader_batches_per_epoch(const yt_loader *l);
/* The current epoch, and the index of the batch the next call returns (0 for NULL). */
YT_API int64_t yt_loader_epoch(const yt_loader *l);
YT_API int64_t yt_loader_position(const yt_loader *l);
/* Per-sample input shape after the transforms (what a batch has after its first dim). */
YT_API const int64_t *yt_loader_input_shape(const yt_loader *l, int *ndim);

/* Appends the loader's position as 0-d i64 tensors: "epoch", "batch" (the next batch's index),
 * "seed" (the bits of the u64 seed), and "batch_size" and "num_samples" to check a load against.
 * Errors: YT_ERR_VALUE (NULL arguments, a name already in `out`), YT_ERR_NOMEM. */
YT_API yt_status yt_loader_state_dict(yt_loader *l, yt_named_tensors *out);

/* Restores a state saved by yt_loader_state_dict: the next call returns the batch an
 * uninterrupted run would have returned (same seed, epoch and position). Batches loaded ahead are
 * dropped. Errors: YT_ERR_VALUE (a missing entry, one that is not a single integer, a batch
 * position past the epoch, a batch_size or num_samples different from this loader's); the
 * loader is then unchanged. */
YT_API yt_status yt_loader_load_state_dict(yt_loader *l, const yt_named_tensors *sd);

/* Stops and joins the workers (waiting for batches being loaded), frees the buffers and drops
 * the dataset reference. Tensors already returned stay valid. NULL is a no-op. */
YT_API void yt_loader_release(yt_loader *l);

#ifdef __cplusplus
}
#endif

#endif
