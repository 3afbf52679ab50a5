/* Internal contract between the dataset object, the transforms and the loader (nn/dataset.c,
 * nn/transform.c, nn/loader*.c). Not installed. */
#ifndef YT_LOADER_INTERNAL_H
#define YT_LOADER_INTERNAL_H

#include "internal.h"

#include <pthread.h>

#include <yaten/data.h>

/* yt__fail for functions returning a pointer other than a tensor: records the error, gives NULL. */
#define YT__FAIL_NULL(...) ((void)yt__fail_status(__VA_ARGS__), NULL)

struct yt_dataset {
    atomic_int_fast64_t refcount;
    const yt_dataset_kind *kind;
    void *ctx;
    int64_t length;
    int input_ndim, target_ndim;
    int64_t input_shape[YT_MAX_DIM], target_shape[YT_MAX_DIM];
    yt_dtype input_dtype, target_dtype; /* target YT_DTYPE_NONE: no targets */
    int64_t input_numel, target_numel;  /* per sample (target 0 without targets) */
    size_t input_bytes, target_bytes;   /* per sample */
};

/* ---------------------------------------------------------------- random streams */

/* Independent streams drawn from one loader seed. */
#define YT__STREAM_SHUFFLE   UINT64_C(0x53485546464c45) /* "SHUFFLE" */
#define YT__STREAM_TRANSFORM UINT64_C(0x5452414e53464f) /* "TRANSFO" */

/* The Philox key of `stream` in `epoch` for a loader seeded with `seed`: a pure function of the
 * three, so any thread computes the same numbers. */
static inline uint64_t
yt__loader_key(uint64_t seed, uint64_t stream, int64_t epoch)
{
    uint32_t out[4];
    yt__philox(seed ^ stream, (uint64_t)epoch, out);
    return (uint64_t)out[0] | (uint64_t)out[1] << 32;
}

/* Writes the epoch's sample order into perm[0..n): a Fisher-Yates shuffle driven by `key`. */
YT_INTERNAL void yt__loader_permutation(int64_t *perm, int64_t n, uint64_t key);

/* ---------------------------------------------------------------- transforms */

#define YT__MAX_TRANSFORMS 16

/* One validated transform with the sample geometry it sees and produces ([C, H, W]). */
typedef struct yt__transform_step {
    yt_transform_kind kind;
    float *mean;          /* normalize: C means (owned) */
    float *std;           /* normalize: C stds (owned) */
    int64_t c, h, w;      /* input geometry */
    int64_t out_h, out_w; /* output geometry (a crop's size; the input's otherwise) */
    int64_t padding;
    double p;
} yt__transform_step;

typedef struct yt__transform_plan {
    int n;
    yt__transform_step steps[YT__MAX_TRANSFORMS];
    int out_ndim; /* sample shape after the transforms */
    int64_t out_shape[YT_MAX_DIM];
    int64_t in_numel, out_numel;
    int64_t max_numel;  /* largest sample along the way (scratch buffers) */
    bool changes_shape; /* a crop to another size: samples cannot be transformed in place */
} yt__transform_plan;

/* Validates `ts` against the dataset's samples and fills `plan` (n = 0 for no transforms).
 * Errors name `op` and the transform: "loader_new: transforms[1] (random_crop): ...". */
YT_INTERNAL yt_status yt__transform_plan_init(yt__transform_plan *plan, const char *op,
                                              const yt_transform *ts, int n, const yt_dataset *d);
YT_INTERNAL void yt__transform_plan_clear(yt__transform_plan *plan);

/* Applies the plan to the sample of dataset index `index` at `in` (in_numel floats; may be
 * overwritten) and leaves the result (out_numel floats) at `out`, which may equal `in` unless the
 * plan changes the shape. `scratch` holds 2 x max_numel floats. `key` is the epoch's transform key. */
YT_INTERNAL void yt__transform_apply(const yt__transform_plan *plan, uint64_t key, int64_t index,
                                     float *in, float *out, float *scratch);

/* ---------------------------------------------------------------- the loader */

#define YT__LOADER_MSG_CAP 512

typedef enum yt__slot_state {
    YT__SLOT_EMPTY,
    YT__SLOT_FILLING, /* a worker is loading it */
    YT__SLOT_READY,
    YT__SLOT_FAILED, /* the worker's error is in `error` and `message` */
} yt__slot_state;

/* One batch of the ring: raw buffers allocated once, reused batch after batch. */
typedef struct yt__slot {
    void *input, *target; /* min(batch_size, length) samples each (target NULL without one) */
    int64_t batch;        /* which batch of the epoch it holds */
    yt__slot_state state;
    yt_status error;
    char message[YT__LOADER_MSG_CAP];
} yt__slot;

/* A loading thread's own buffers (the caller's too, when workers = 0). */
typedef struct yt__loader_worker {
    yt_loader *loader;
    pthread_t thread;
    bool started;
    int64_t *indices; /* min(batch_size, length): all a batch can hold */
    void *raw;        /* as many untransformed samples, when the transforms change the shape */
    float *scratch;   /* 2 x plan.max_numel floats, when there are transforms */
} yt__loader_worker;

struct yt_loader {
    yt_dataset *dataset;
    int64_t batch_size, length, batches;
    bool shuffle, drop_last;
    yt__transform_plan plan;
    size_t input_bytes, target_bytes; /* per sample, after the transforms */
    int n_workers, prefetch;
    yt__loader_worker *workers; /* n_workers threads, then the caller's own */
    yt__slot *slots;            /* prefetch of them; batch b lives in slot b % prefetch */

    /* Everything below changes only under `mu`, and `seed`, `epoch`, `perm` and
     * `transform_key` only while no worker is loading (active false, in_flight 0). */
    pthread_mutex_t mu;
    pthread_cond_t work_cv;  /* workers wait for a batch to load */
    pthread_cond_t ready_cv; /* the caller waits for a batch, or for the workers to drain */
    uint64_t seed;
    int64_t epoch;
    int64_t pos;       /* the batch yt_loader_next returns next */
    int64_t fill_next; /* the batch the next free worker loads */
    int64_t *perm;     /* the epoch's sample order (shuffle only) */
    uint64_t transform_key;
    bool active; /* workers may load batches of `epoch` */
    bool shutdown;
    int in_flight; /* batches being loaded */
};

/* Moves the loader to (seed, epoch, pos): drops batches loaded ahead, waits for the ones being
 * loaded, computes the epoch's order and lets the workers go on from `pos`. */
YT_INTERNAL void yt__loader_seek(yt_loader *l, uint64_t seed, int64_t epoch, int64_t pos);

#endif
