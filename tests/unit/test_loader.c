/* The data loader: every sample exactly once per epoch, a different order each epoch, the same
 * batches for 0, 1 and 3 workers, drop_last and the short last batch, a resumed loader (state
 * dict mid-epoch) giving the remaining batches of an uninterrupted run, a dataset failing at one
 * index surfacing its error from yt_loader_next (workers or not) without a hang, release while
 * workers are loading, and the argument checks. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>

#include "test_util.h"

/* n samples: input [2, 3] f32 = 10 * i + (0..5), target i64 = i. */
static yt_dataset *
numbered_dataset(int64_t n)
{
    float *x = malloc(sizeof(float) * (size_t)(n * 6 + 1));
    int64_t *y = malloc(sizeof(int64_t) * (size_t)(n + 1));
    for (int64_t i = 0; i < n; i++) {
        for (int j = 0; j < 6; j++)
            x[i * 6 + j] = (float)(10 * i + j);
        y[i] = i;
    }
    yt_tensor *xs = yt_tensor_from_data(x, (const int64_t[]){n, 2, 3}, 3, YT_DTYPE_F32);
    yt_tensor *ys = yt_tensor_from_data(y, (const int64_t[]){n}, 1, YT_DTYPE_I64);
    yt_dataset *d = yt_tensor_dataset_new(xs, ys);
    cr_assert_not_null(d, "%s", yt_errmsg());
    yt_release(xs);
    yt_release(ys);
    free(x);
    free(y);
    return d;
}

/* What one epoch gave: the batch sizes, every target in order, every input value in order. */
typedef struct epoch_log {
    int64_t n_batches;
    int64_t sizes[256];
    int64_t targets[4096];
    float inputs[4096 * 8];
    int64_t n_targets, n_inputs;
} epoch_log;

/* Reads batches until the end of the epoch (or `max_batches`), checking each batch's shapes. */
static void
read_epoch(yt_loader *l, epoch_log *log, int64_t max_batches)
{
    memset(log, 0, sizeof *log);
    int nd;
    const int64_t *shape = yt_loader_input_shape(l, &nd);
    int64_t per = 1;
    for (int i = 0; i < nd; i++)
        per *= shape[i];
    while (log->n_batches < max_batches) {
        yt_tensor *x, *y;
        cr_assert_eq(yt_loader_next(l, &x, &y), YT_OK, "%s", yt_errmsg());
        if (x == NULL) {
            cr_assert_null(y);
            break;
        }
        int64_t b = yt_tensor_size(x, 0);
        cr_assert_eq(yt_tensor_dim(x), nd + 1);
        cr_assert_eq(yt_tensor_dim(y), 1);
        cr_assert_eq(yt_tensor_size(y, 0), b);
        cr_assert_eq(yt_tensor_numel(x), b * per);
        log->sizes[log->n_batches++] = b;
        memcpy(log->targets + log->n_targets, yt_tensor_data(y), sizeof(int64_t) * (size_t)b);
        log->n_targets += b;
        memcpy(log->inputs + log->n_inputs, yt_tensor_data(x), sizeof(float) * (size_t)(b * per));
        log->n_inputs += b * per;
        yt_release(x);
        yt_release(y);
    }
}

static bool
same_epoch(const epoch_log *a, const epoch_log *b)
{
    return a->n_batches == b->n_batches && a->n_targets == b->n_targets &&
           a->n_inputs == b->n_inputs &&
           memcmp(a->sizes, b->sizes, sizeof(int64_t) * (size_t)a->n_batches) == 0 &&
           memcmp(a->targets, b->targets, sizeof(int64_t) * (size_t)a->n_targets) == 0 &&
           memcmp(a->inputs, b->inputs, sizeof(float) * (size_t)a->n_inputs) == 0;
}

static yt_loader *
make_loader(yt_dataset *d, int64_t batch, bool shuffle, bool drop_last, uint64_t seed, int workers)
{
    yt_loader_options o = {.batch_size = batch,
                           .shuffle = shuffle,
                           .drop_last = drop_last,
                           .seed = seed,
                           .workers = workers};
    yt_loader *l = yt_loader_new(d, &o);
    cr_assert_not_null(l, "%s", yt_errmsg());
    return l;
}

static epoch_log log_a, log_b, log_c;

Test(loader, every_sample_once_per_epoch_in_a_new_order)
{
    const int64_t n = 103;
    yt_dataset *d = numbered_dataset(n);
    yt_loader *l = make_loader(d, 10, true, false, 42, 2);
    cr_assert_eq(yt_loader_batches_per_epoch(l), 11);
    for (int epoch = 0; epoch < 3; epoch++) {
        cr_assert_eq(yt_loader_epoch(l), epoch);
        epoch_log *log = epoch == 0 ? &log_a : epoch == 1 ? &log_b : &log_c;
        read_epoch(l, log, 1000);
        cr_assert_eq(log->n_batches, 11);
        for (int b = 0; b < 10; b++)
            cr_assert_eq(log->sizes[b], 10);
        cr_assert_eq(log->sizes[10], 3, "the last batch holds the 3 samples left");
        bool seen[103] = {false};
        for (int64_t i = 0; i < n; i++) {
            int64_t s = log->targets[i];
            cr_assert(s >= 0 && s < n && !seen[s], "sample %lld twice or out of range",
                      (long long)s);
            seen[s] = true;
            /* the inputs travel with their targets */
            for (int j = 0; j < 6; j++)
                cr_assert(log->inputs[i * 6 + j] == (float)(10 * s + j));
        }
    }
    cr_assert_neq(memcmp(log_a.targets, log_b.targets, sizeof(int64_t) * n), 0);
    cr_assert_neq(memcmp(log_b.targets, log_c.targets, sizeof(int64_t) * n), 0);
    int64_t in_place = 0;
    for (int64_t i = 0; i < n; i++)
        in_place += log_a.targets[i] == i;
    cr_assert(in_place < 10, "%lld of 103 samples unmoved by the shuffle", (long long)in_place);
    yt_loader_release(l);
    yt_dataset_release(d);
    YT_ASSERT_NO_LEAKS();
}

Test(loader, no_shuffle_keeps_dataset_order_and_drop_last_drops)
{
    yt_dataset *d = numbered_dataset(23);
    yt_loader *l = make_loader(d, 5, false, true, 1, 1);
    cr_assert_eq(yt_loader_batches_per_epoch(l), 4);
    read_epoch(l, &log_a, 1000);
    cr_assert_eq(log_a.n_batches, 4);
    cr_assert_eq(log_a.n_targets, 20);
    for (int64_t i = 0; i < 20; i++)
        cr_assert_eq(log_a.targets[i], i);
    yt_loader_release(l);
    /* batch larger than the dataset */
    l = make_loader(d, 50, false, true, 1, 0);
    cr_assert_eq(yt_loader_batches_per_epoch(l), 0);
    read_epoch(l, &log_a, 1000);
    cr_assert_eq(log_a.n_batches, 0);
    yt_loader_release(l);
    l = make_loader(d, 50, false, false, 1, 0);
    read_epoch(l, &log_a, 1000);
    cr_assert(log_a.n_batches == 1 && log_a.sizes[0] == 23);
    yt_loader_release(l);
    yt_dataset_release(d);
    YT_ASSERT_NO_LEAKS();
}

Test(loader, same_batches_for_any_worker_count)
{
    yt_dataset *d = numbered_dataset(77);
    const double mean = 3, std = 7;
    const yt_transform ts[3] = {yt_transform_random_crop(2, 2, 1),
                                yt_transform_random_horizontal_flip(0.5),
                                yt_transform_normalize(&mean, &std, 1)};
    const int workers[3] = {0, 1, 3};
    for (int epoch = 0; epoch < 2; epoch++) {
        for (int k = 0; k < 3; k++) {
            yt_loader_options o = {.batch_size = 8,
                                   .shuffle = true,
                                   .seed = 7,
                                   .workers = workers[k],
                                   .prefetch = k == 2 ? 2 : 0,
                                   .transforms = ts,
                                   .n_transforms = 3};
            yt_loader *l = yt_loader_new(d, &o);
            cr_assert_not_null(l, "%s", yt_errmsg());
            int nd;
            const int64_t *shape = yt_loader_input_shape(l, &nd);
            cr_assert(nd == 2 && shape[0] == 2 && shape[1] == 2);
            if (epoch > 0)
                cr_assert_eq(yt_loader_start_epoch(l, epoch), YT_OK);
            read_epoch(l, k == 0 ? &log_a : &log_b, 1000);
            yt_loader_release(l);
            if (k > 0)
                cr_assert(same_epoch(&log_a, &log_b), "epoch %d: %d workers differ from 0", epoch,
                          workers[k]);
        }
        cr_assert_eq(log_a.n_batches, 10);
    }
    yt_dataset_release(d);
    YT_ASSERT_NO_LEAKS();
}

/* A run interrupted after `stop` batches of epoch 1 and resumed from its state dict in a new
 * loader (seeded differently: the state's seed wins) sees the batches of an uninterrupted run. */
static void
check_resume(int workers, int64_t stop)
{
    yt_dataset *d = numbered_dataset(50);
    const yt_transform flip = yt_transform_random_horizontal_flip(0.5);
    yt_loader_options o = {.batch_size = 6,
                           .shuffle = true,
                           .seed = 11,
                           .workers = workers,
                           .transforms = &flip,
                           .n_transforms = 1};
    yt_loader *full = yt_loader_new(d, &o);
    read_epoch(full, &log_a, 1000); /* epoch 0 */
    read_epoch(full, &log_a, 1000); /* epoch 1, uninterrupted */
    read_epoch(full, &log_c, 1000); /* epoch 2 */
    yt_loader_release(full);

    yt_loader *first = yt_loader_new(d, &o);
    read_epoch(first, &log_b, 1000);
    read_epoch(first, &log_b, stop);
    yt_named_tensors sd = YT_NAMED_TENSORS_INIT;
    cr_assert_eq(yt_loader_state_dict(first, &sd), YT_OK, "%s", yt_errmsg());
    yt_loader_release(first);
    cr_assert_eq(sd.count, 5);
    yt_tensor *pos = yt_named_tensors_get(&sd, "batch");
    cr_assert(yt_item(pos) == (double)stop);
    yt_release(pos);

    o.seed = 999;
    yt_loader *resumed = yt_loader_new(d, &o);
    cr_assert_eq(yt_loader_load_state_dict(resumed, &sd), YT_OK, "%s", yt_errmsg());
    yt_named_tensors_clear(&sd);
    cr_assert_eq(yt_loader_epoch(resumed), 1);
    cr_assert_eq(yt_loader_position(resumed), stop);
    epoch_log *rest = &log_b;
    read_epoch(resumed, rest, 1000);
    cr_assert_eq(rest->n_batches, log_a.n_batches - stop);
    cr_assert_eq(
        memcmp(rest->targets, log_a.targets + stop * 6, sizeof(int64_t) * (size_t)rest->n_targets),
        0, "resumed batches differ");
    cr_assert_eq(
        memcmp(rest->inputs, log_a.inputs + stop * 36, sizeof(float) * (size_t)rest->n_inputs), 0,
        "resumed inputs (flips) differ");
    read_epoch(resumed, rest, 1000);
    cr_assert(same_epoch(rest, &log_c), "the epoch after the resumed one differs");
    yt_loader_release(resumed);
    yt_dataset_release(d);
}

Test(loader, resumed_loader_continues_the_same_batches)
{
    check_resume(0, 3);
    check_resume(2, 3);
    check_resume(3, 0);
    check_resume(1, 9); /* after the last batch, before the end was reported */
    YT_ASSERT_NO_LEAKS();
}

Test(loader, load_state_dict_checks_and_leaves_the_loader_unchanged)
{
    yt_dataset *d = numbered_dataset(20);
    yt_loader *l = make_loader(d, 4, true, false, 3, 2);
    yt_tensor *x;
    cr_assert_eq(yt_loader_next(l, &x, NULL), YT_OK);
    yt_release(x);
    yt_named_tensors sd = YT_NAMED_TENSORS_INIT;
    cr_assert_eq(yt_loader_state_dict(l, &sd), YT_OK);
    cr_assert_eq(yt_loader_state_dict(l, &sd), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "loader_state_dict: 'epoch' is already in out");

    yt_loader *other = make_loader(d, 5, true, false, 3, 0);
    cr_assert_eq(yt_loader_load_state_dict(other, &sd), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE,
                    "loader_load_state_dict: the state is of a loader with "
                    "batch_size=4 over 20 samples, this one has batch_size=5 over 20");
    cr_assert_eq(yt_loader_position(other), 0);
    yt_loader_release(other);

    /* a batch position past the epoch, a float entry, a missing entry */
    yt_named_tensors bad = YT_NAMED_TENSORS_INIT;
    const char *names[5] = {"epoch", "batch", "seed", "batch_size", "num_samples"};
    const double values[5] = {0, 6, 3, 4, 20};
    for (int i = 0; i < 5; i++) {
        yt_tensor *t = yt_scalar_tensor(yt_int((int64_t)values[i]), YT_DTYPE_I64);
        yt_named_tensors_add(&bad, names[i], t);
        yt_release(t);
    }
    cr_assert_eq(yt_loader_load_state_dict(l, &bad), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "loader_load_state_dict: batch=6 is out of range 0..5");
    yt_release(bad.tensors[1]);
    bad.tensors[1] = yt_scalar_tensor(yt_float(1.5), YT_DTYPE_F32);
    cr_assert_eq(yt_loader_load_state_dict(l, &bad), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "loader_load_state_dict: 'batch' must be one integer, got f32");
    yt_named_tensors_clear(&bad);
    cr_assert_eq(yt_loader_load_state_dict(l, &bad), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "loader_load_state_dict: 'epoch' is missing");
    cr_assert(yt_loader_epoch(l) == 0 && yt_loader_position(l) == 1);

    yt_named_tensors_clear(&sd);
    yt_loader_release(l);
    yt_dataset_release(d);
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- failing and slow datasets */

typedef struct flaky {
    int64_t bad_index; /* get_batch fails when asked for it */
    int sleep_us;      /* per batch, to keep workers busy */
} flaky;

static int64_t
flaky_length(void *ctx)
{
    (void)ctx;
    return 100;
}

static yt_status
flaky_get_batch(void *ctx_, const int64_t *indices, int64_t n, void *input, void *target)
{
    flaky *ctx = ctx_;
    if (ctx->sleep_us > 0) {
        struct timespec ts = {0, ctx->sleep_us * 1000L};
        nanosleep(&ts, NULL);
    }
    for (int64_t i = 0; i < n; i++) {
        if (indices[i] == ctx->bad_index) {
            /* the error of the loading thread, as any dataset records it */
            yt_tensor *x = yt_zeros((const int64_t[]){2}, 1);
            yt_tensor *bad = yt_view(x, (const int64_t[]){3}, 1);
            yt_release(x);
            yt_release(bad);
            return yt_errcode();
        }
        ((float *)input)[i] = (float)indices[i];
        ((int64_t *)target)[i] = indices[i];
    }
    return YT_OK;
}

static void
flaky_release(void *ctx)
{
    free(ctx);
}

static const yt_dataset_kind flaky_kind = {"Flaky", flaky_length, flaky_get_batch, flaky_release};

static yt_dataset *
flaky_dataset(int64_t bad_index, int sleep_us)
{
    flaky *ctx = malloc(sizeof *ctx);
    ctx->bad_index = bad_index;
    ctx->sleep_us = sleep_us;
    yt_dataset *d = yt_dataset_new(&flaky_kind, ctx, NULL, 0, YT_DTYPE_F32, NULL, 0, YT_DTYPE_I64);
    cr_assert_not_null(d, "%s", yt_errmsg());
    return d;
}

static void
check_failure(int workers)
{
    yt_dataset *d = flaky_dataset(37, 0);
    yt_loader *l = make_loader(d, 10, false, false, 0, workers);
    for (int b = 0; b < 3; b++) {
        yt_tensor *x, *y;
        cr_assert_eq(yt_loader_next(l, &x, &y), YT_OK, "%s", yt_errmsg());
        yt_release(x);
        yt_release(y);
    }
    /* batch 3 holds index 37: its error, from the worker's thread, arrives here; and again when
     * asked again (the batch is retried, never skipped) */
    for (int attempt = 0; attempt < 2; attempt++) {
        yt_tensor *x = (yt_tensor *)1, *y = (yt_tensor *)1;
        yt_clear_error();
        cr_assert_eq(yt_loader_next(l, &x, &y), YT_ERR_SHAPE, "workers=%d: %s", workers,
                     yt_errmsg());
        cr_assert(x == NULL && y == NULL);
        YT_ASSERT_ERROR(YT_ERR_SHAPE, "loader: batch 3 of epoch 0: view: ");
        cr_assert_eq(yt_loader_position(l), 3);
    }
    yt_loader_release(l);
    yt_dataset_release(d);
}

Test(loader, a_failing_get_batch_surfaces_from_next)
{
    check_failure(0);
    check_failure(1);
    check_failure(3);
    YT_ASSERT_NO_LEAKS();
}

Test(loader, release_while_workers_are_loading)
{
    yt_dataset *d = flaky_dataset(-1, 2000);
    for (int k = 0; k < 3; k++) {
        yt_loader_options o = {.batch_size = 4, .shuffle = true, .workers = 3, .prefetch = 6};
        yt_loader *l = yt_loader_new(d, &o);
        cr_assert_not_null(l, "%s", yt_errmsg());
        if (k > 0) {
            yt_tensor *x, *y;
            cr_assert_eq(yt_loader_next(l, &x, &y), YT_OK, "%s", yt_errmsg());
            yt_release(x);
            yt_release(y);
        }
        if (k == 2) /* seek while batches are being loaded */
            cr_assert_eq(yt_loader_start_epoch(l, 5), YT_OK);
        yt_loader_release(l);
    }
    yt_dataset_release(d);
    YT_ASSERT_NO_LEAKS();
}

Test(loader, batches_join_the_callers_scope_and_targets_are_optional)
{
    yt_dataset *d = numbered_dataset(9);
    yt_loader *l = make_loader(d, 4, false, false, 0, 2);
    cr_assert_eq(yt_scope_begin(), YT_OK);
    for (;;) {
        yt_tensor *x;
        cr_assert_eq(yt_loader_next(l, &x, NULL), YT_OK, "%s", yt_errmsg());
        if (x == NULL)
            break;
    }
    cr_assert_eq(yt_scope_end(), YT_OK);
    /* the next epoch began by itself */
    cr_assert(yt_loader_epoch(l) == 1 && yt_loader_position(l) == 0);
    yt_loader_release(l);

    /* a dataset without targets gives NULL targets */
    yt_tensor *xs = yt_zeros((const int64_t[]){5, 2}, 2);
    yt_dataset *u = yt_tensor_dataset_new(xs, NULL);
    l = make_loader(u, 2, false, false, 0, 1);
    yt_tensor *x, *y = (yt_tensor *)1;
    cr_assert_eq(yt_loader_next(l, &x, &y), YT_OK, "%s", yt_errmsg());
    cr_assert(x != NULL && y == NULL);
    yt_release(x);
    yt_loader_release(l);
    yt_dataset_release(u);
    yt_release(xs);
    yt_dataset_release(d);
    YT_ASSERT_NO_LEAKS();
}

Test(loader, options_are_checked)
{
    yt_dataset *d = numbered_dataset(4);
    yt_loader_options o = {.batch_size = 0};
    cr_assert_null(yt_loader_new(d, &o));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "loader_new: batch_size=0 must be positive");
    o = (yt_loader_options){.batch_size = 1, .workers = -1};
    cr_assert_null(yt_loader_new(d, &o));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "loader_new: workers=-1 is out of range 0..64");
    o = (yt_loader_options){.batch_size = 1, .workers = 1, .prefetch = 5000};
    cr_assert_null(yt_loader_new(d, &o));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "loader_new: prefetch=5000 is out of range 0..1024");
    o = (yt_loader_options){
        .batch_size = 1, .n_transforms = 17, .transforms = (const yt_transform[1]){{0}}};
    cr_assert_null(yt_loader_new(d, &o));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "loader_new: n_transforms=17 is out of range 0..16");
    cr_assert_null(yt_loader_new(NULL, &o));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "loader_new: dataset is NULL");
    cr_assert_eq(yt_loader_next(NULL, NULL, NULL), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "loader_next: loader is NULL");
    o = (yt_loader_options){.batch_size = 1};
    yt_loader *l = yt_loader_new(d, &o);
    cr_assert_eq(yt_loader_start_epoch(l, -1), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "loader_start_epoch: epoch=-1 is negative");
    cr_assert_eq(yt_loader_next(l, NULL, NULL), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "loader_next: inputs is NULL");
    yt_loader_release(l);
    yt_loader_release(NULL);
    cr_assert_eq(yt_loader_batches_per_epoch(NULL), 0);
    yt_dataset_release(d);
    YT_ASSERT_NO_LEAKS();
}

/* A batch_size past the dataset's length gives one short batch (none with drop_last), as in
 * PyTorch, and its buffers hold the dataset, not batch_size rows: (size_t)batch_size * bytes
 * used to wrap for 2^62 + 1 and overflow a 12-byte buffer, and INT64_MAX asked for 2^64 bytes. */
Test(loader, batch_size_past_the_length_gives_one_batch_of_everything)
{
    yt_dataset *d = numbered_dataset(5);
    const int64_t sizes[] = {6, (INT64_C(1) << 62) + 1, INT64_MAX};
    for (int i = 0; i < 3; i++)
        for (int workers = 0; workers <= 1; workers++)
            for (int shuffle = 0; shuffle <= 1; shuffle++) {
                yt_loader *l = make_loader(d, sizes[i], shuffle, false, 7, workers);
                cr_assert_eq(yt_loader_batches_per_epoch(l), 1);
                read_epoch(l, &log_a, 10);
                cr_assert_eq(log_a.n_batches, 1, "batch_size=%lld: %lld batches",
                             (long long)sizes[i], (long long)log_a.n_batches);
                cr_assert_eq(log_a.sizes[0], 5);
                int64_t seen = 0;
                for (int j = 0; j < 5; j++)
                    seen |= INT64_C(1) << log_a.targets[j];
                cr_assert_eq(seen, 0x1f, "targets are not 0..4 once each");
                yt_loader_release(l);

                l = make_loader(d, sizes[i], shuffle, true, 7, workers);
                cr_assert_eq(yt_loader_batches_per_epoch(l), 0);
                read_epoch(l, &log_a, 10);
                cr_assert_eq(log_a.n_batches, 0);
                yt_loader_release(l);
            }
    yt_dataset_release(d);
    YT_ASSERT_NO_LEAKS();
}
