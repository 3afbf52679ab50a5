/* The data loader: batches of a dataset, in a seeded order, loaded ahead by worker threads.
 *
 * Workers claim batches in order (fill_next) and load batch b into ring slot b % prefetch, which
 * is free once batch b - prefetch has been consumed; so at most `prefetch` batches are ahead and
 * the slots' buffers are allocated once. The consuming thread waits for slot pos % prefetch to
 * hold batch pos, copies it into new tensors and frees the slot. Which worker loads a batch never
 * matters: the order and the random transforms are functions of (seed, epoch, sample index).
 * A worker's error is copied into its slot (code and message) and recorded again on the
 * consuming thread by yt_loader_next. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader_internal.h"

enum { MAX_WORKERS = 64, MAX_PREFETCH = 1024 };

/* Loads batch `b` of the current epoch into `input`/`target` (contiguous, batch_size samples of
 * the transformed shape) with worker `w`'s buffers. Reads perm and transform_key, which do not
 * change while a batch is being loaded. */
static yt_status
load_batch(yt_loader *l, yt__loader_worker *w, int64_t b, void *input, void *target)
{
    int64_t start = b * l->batch_size;
    int64_t n = l->length - start < l->batch_size ? l->length - start : l->batch_size;
    for (int64_t j = 0; j < n; j++)
        w->indices[j] = l->perm != NULL ? l->perm[start + j] : start + j;
    const yt__transform_plan *plan = &l->plan;
    void *raw = plan->changes_shape ? w->raw : input;
    yt_status st = yt_dataset_get_batch(l->dataset, w->indices, n, raw, target);
    if (st != YT_OK || plan->n == 0)
        return st;
    for (int64_t j = 0; j < n; j++)
        yt__transform_apply(plan, l->transform_key, w->indices[j],
                            (float *)raw + j * plan->in_numel, (float *)input + j * plan->out_numel,
                            w->scratch);
    return YT_OK;
}

static void *
worker_main(void *arg)
{
    yt__loader_worker *w = arg;
    yt_loader *l = w->loader;
    pthread_mutex_lock(&l->mu);
    for (;;) {
        while (!l->shutdown &&
               !(l->active && l->fill_next < l->batches && l->fill_next < l->pos + l->prefetch))
            pthread_cond_wait(&l->work_cv, &l->mu);
        if (l->shutdown)
            break;
        int64_t b = l->fill_next++;
        yt__slot *s = &l->slots[b % l->prefetch];
        s->batch = b;
        s->state = YT__SLOT_FILLING;
        l->in_flight++;
        pthread_mutex_unlock(&l->mu);

        yt_clear_error();
        yt_status st = load_batch(l, w, b, s->input, s->target);

        pthread_mutex_lock(&l->mu);
        l->in_flight--;
        s->error = st;
        if (st != YT_OK)
            snprintf(s->message, sizeof s->message, "%s", yt_errmsg());
        s->state = st == YT_OK ? YT__SLOT_READY : YT__SLOT_FAILED;
        pthread_cond_broadcast(&l->ready_cv);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

void
yt__loader_seek(yt_loader *l, uint64_t seed, int64_t epoch, int64_t pos)
{
    pthread_mutex_lock(&l->mu);
    l->active = false;
    while (l->in_flight > 0)
        pthread_cond_wait(&l->ready_cv, &l->mu);
    /* No worker is loading and none can start: the epoch's state may change. */
    for (int i = 0; i < l->prefetch; i++) {
        l->slots[i].state = YT__SLOT_EMPTY;
        l->slots[i].batch = -1;
    }
    l->seed = seed;
    l->epoch = epoch;
    l->pos = l->fill_next = pos;
    if (l->perm != NULL)
        yt__loader_permutation(l->perm, l->length, yt__loader_key(seed, YT__STREAM_SHUFFLE, epoch));
    l->transform_key = yt__loader_key(seed, YT__STREAM_TRANSFORM, epoch);
    l->active = true;
    pthread_cond_broadcast(&l->work_cv);
    pthread_mutex_unlock(&l->mu);
}

/* ---------------------------------------------------------------- creation and release */

static yt_status
check_options(const yt_dataset *d, const yt_loader_options *o)
{
    static const char op[] = "loader_new";
    if (d == NULL || o == NULL)
        return yt__fail_status(YT_ERR_VALUE, "%s: %s is NULL", op,
                               d == NULL ? "dataset" : "options");
    if (o->batch_size < 1)
        return yt__fail_status(YT_ERR_VALUE, "%s: batch_size=%lld must be positive", op,
                               (long long)o->batch_size);
    if (o->workers < 0 || o->workers > MAX_WORKERS)
        return yt__fail_status(YT_ERR_VALUE, "%s: workers=%d is out of range 0..%d", op, o->workers,
                               MAX_WORKERS);
    if (d->input_ndim >= YT_MAX_DIM || d->target_ndim >= YT_MAX_DIM)
        return yt__fail_status(
            YT_ERR_VALUE, "%s: dataset '%s' has %d-D %s; batches of them would exceed %d dims", op,
            d->kind->name, d->input_ndim >= YT_MAX_DIM ? d->input_ndim : d->target_ndim,
            d->input_ndim >= YT_MAX_DIM ? "inputs" : "targets", YT_MAX_DIM);
    if (o->prefetch < 0 || o->prefetch > MAX_PREFETCH)
        return yt__fail_status(YT_ERR_VALUE, "%s: prefetch=%d is out of range 0..%d", op,
                               o->prefetch, MAX_PREFETCH);
    return YT_OK;
}

/* malloc that records an error; n == 0 gives a valid pointer. */
static void *
alloc(size_t n)
{
    void *p = malloc(n > 0 ? n : 1);
    if (p == NULL)
        yt__fail(YT_ERR_NOMEM, "loader_new: out of memory for %zu bytes", n);
    return p;
}

/* alloc for `count` items of `size` bytes, failing with a message instead of wrapping. */
static void *
alloc_array(int64_t count, size_t size, const char *what)
{
    size_t n;
    if (count < 0 || __builtin_mul_overflow((size_t)count, size, &n))
        return yt__fail(YT_ERR_NOMEM,
                        "loader_new: %s needs %lld x %zu bytes, more than fits in memory", what,
                        (long long)count, size);
    return alloc(n);
}

static yt_status
alloc_buffers(yt_loader *l)
{
    /* No batch holds more than the whole dataset, so a batch_size past the length (PyTorch gives
     * one short batch, or none with drop_last) needs only `length` rows. */
    int64_t rows = l->batch_size < l->length ? l->batch_size : l->length;
    for (int i = 0; i <= l->n_workers; i++) {
        yt__loader_worker *w = &l->workers[i];
        w->loader = l;
        if ((w->indices = alloc_array(rows, sizeof(int64_t), "a batch's indices")) == NULL)
            return YT_ERR_NOMEM;
        if (l->plan.changes_shape &&
            (w->raw = alloc_array(rows, l->dataset->input_bytes, "a batch of raw inputs")) == NULL)
            return YT_ERR_NOMEM;
        if (l->plan.n > 0 && (w->scratch = alloc_array(l->plan.max_numel, 2 * sizeof(float),
                                                       "transform scratch")) == NULL)
            return YT_ERR_NOMEM;
    }
    for (int i = 0; i < l->prefetch; i++) {
        yt__slot *s = &l->slots[i];
        s->batch = -1;
        if ((s->input = alloc_array(rows, l->input_bytes, "a batch of inputs")) == NULL)
            return YT_ERR_NOMEM;
        if (l->dataset->target_dtype != YT_DTYPE_NONE &&
            (s->target = alloc_array(rows, l->target_bytes, "a batch of targets")) == NULL)
            return YT_ERR_NOMEM;
    }
    if (l->shuffle &&
        (l->perm = alloc_array(l->length, sizeof(int64_t), "the shuffle permutation")) == NULL)
        return YT_ERR_NOMEM;
    return YT_OK;
}

/* Starts the workers with every signal blocked, so that signals (Ctrl-C) reach the program's
 * own threads, never a loader thread. */
static yt_status
start_workers(yt_loader *l)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int err = 0;
    for (int i = 0; i < l->n_workers && err == 0; i++) {
        err = pthread_create(&l->workers[i].thread, NULL, worker_main, &l->workers[i]);
        l->workers[i].started = err == 0;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err != 0)
        return yt__fail_status(YT_ERR_INTERNAL, "loader_new: cannot start a worker thread: %s",
                               strerror(err));
    return YT_OK;
}

yt_loader *
yt_loader_new(yt_dataset *d, const yt_loader_options *o)
{
    if (check_options(d, o) != YT_OK)
        return NULL;
    yt_loader *l = calloc(1, sizeof *l);
    if (l == NULL)
        return YT__FAIL_NULL(YT_ERR_NOMEM, "loader_new: out of memory");
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->work_cv, NULL);
    pthread_cond_init(&l->ready_cv, NULL);
    l->dataset = yt_dataset_retain(d);
    l->batch_size = o->batch_size;
    l->length = d->length;
    l->shuffle = o->shuffle;
    l->drop_last = o->drop_last;
    l->batches = l->length / l->batch_size;
    if (!o->drop_last && l->length % l->batch_size != 0)
        l->batches++;
    l->n_workers = o->workers;
    l->prefetch = o->workers == 0 ? 0 : o->prefetch > 0 ? o->prefetch : 2 * o->workers;
    if (yt__transform_plan_init(&l->plan, "loader_new", o->transforms, o->n_transforms, d) !=
        YT_OK) {
        yt_loader_release(l);
        return NULL;
    }
    l->input_bytes = (size_t)l->plan.out_numel * yt_dtype_size(d->input_dtype);
    l->target_bytes = d->target_bytes;
    l->workers = calloc((size_t)l->n_workers + 1, sizeof *l->workers);
    l->slots = calloc((size_t)l->prefetch + 1, sizeof *l->slots);
    if (l->workers == NULL || l->slots == NULL) {
        yt_loader_release(l);
        return YT__FAIL_NULL(YT_ERR_NOMEM, "loader_new: out of memory");
    }
    if (alloc_buffers(l) != YT_OK || start_workers(l) != YT_OK) {
        yt_loader_release(l);
        return NULL;
    }
    /* Epoch 0 from its first batch: the workers start loading it now. */
    yt__loader_seek(l, o->seed, 0, 0);
    return l;
}

void
yt_loader_release(yt_loader *l)
{
    if (l == NULL)
        return;
    pthread_mutex_lock(&l->mu);
    l->shutdown = true;
    pthread_cond_broadcast(&l->work_cv);
    pthread_mutex_unlock(&l->mu);
    /* A worker inside get_batch finishes that batch, then sees shutdown. */
    for (int i = 0; l->workers != NULL && i < l->n_workers; i++)
        if (l->workers[i].started)
            pthread_join(l->workers[i].thread, NULL);
    for (int i = 0; l->workers != NULL && i <= l->n_workers; i++) {
        free(l->workers[i].indices);
        free(l->workers[i].raw);
        free(l->workers[i].scratch);
    }
    for (int i = 0; l->slots != NULL && i < l->prefetch; i++) {
        free(l->slots[i].input);
        free(l->slots[i].target);
    }
    free(l->workers);
    free(l->slots);
    free(l->perm);
    yt__transform_plan_clear(&l->plan);
    yt_dataset_release(l->dataset);
    pthread_cond_destroy(&l->ready_cv);
    pthread_cond_destroy(&l->work_cv);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

/* ---------------------------------------------------------------- iteration */

/* Untracked [n, sample...] tensors for one batch. */
static yt_status
batch_tensors(yt_loader *l, int64_t n, yt_tensor **input, yt_tensor **target)
{
    const yt_dataset *d = l->dataset;
    yt_shape s = {.dim = l->plan.out_ndim + 1, .sizes = {n}};
    memcpy(s.sizes + 1, l->plan.out_shape, sizeof(int64_t) * (size_t)l->plan.out_ndim);
    *input = yt__empty(&s, d->input_dtype, YT_DEVICE_CPU);
    *target = NULL;
    if (*input == NULL || d->target_dtype == YT_DTYPE_NONE)
        return *input == NULL ? yt__last_status() : YT_OK;
    yt_shape t = {.dim = d->target_ndim + 1, .sizes = {n}};
    memcpy(t.sizes + 1, d->target_shape, sizeof(int64_t) * (size_t)d->target_ndim);
    *target = yt__empty(&t, d->target_dtype, YT_DEVICE_CPU);
    return *target == NULL ? yt__last_status() : YT_OK;
}

/* Waits for batch `b` in its slot; returns the slot, READY or FAILED. */
static yt__slot *
wait_batch(yt_loader *l, int64_t b)
{
    yt__slot *s = &l->slots[b % l->prefetch];
    pthread_mutex_lock(&l->mu);
    while (!(s->batch == b && (s->state == YT__SLOT_READY || s->state == YT__SLOT_FAILED)))
        pthread_cond_wait(&l->ready_cv, &l->mu);
    pthread_mutex_unlock(&l->mu);
    return s;
}

yt_status
yt_loader_next(yt_loader *l, yt_tensor **inputs, yt_tensor **targets)
{
    if (inputs != NULL)
        *inputs = NULL;
    if (targets != NULL)
        *targets = NULL;
    if (l == NULL || inputs == NULL)
        return yt__fail_status(YT_ERR_VALUE, "loader_next: %s is NULL",
                               l == NULL ? "loader" : "inputs");
    int64_t b = l->pos;
    if (b >= l->batches) {
        /* The end of the epoch: report it, and let the workers start on the next one. */
        yt__loader_seek(l, l->seed, l->epoch + 1, 0);
        return YT_OK;
    }
    int64_t start = b * l->batch_size;
    int64_t n = l->length - start < l->batch_size ? l->length - start : l->batch_size;
    yt_tensor *in, *tg;
    if (batch_tensors(l, n, &in, &tg) != YT_OK) {
        yt_release(in);
        return yt__last_status();
    }
    yt_status st;
    if (l->n_workers == 0) {
        st = load_batch(l, &l->workers[0], b, yt__data_ptr(in), tg ? yt__data_ptr(tg) : NULL);
        if (st != YT_OK)
            st = yt__fail_status(st, "loader: batch %lld of epoch %lld: %s", (long long)b,
                                 (long long)l->epoch, yt_errmsg());
        else
            l->pos++;
    } else {
        yt__slot *s = wait_batch(l, b);
        st = s->error;
        if (st == YT_OK) {
            /* The slot is ours until marked empty: no worker claims batch b + prefetch before. */
            memcpy(yt__data_ptr(in), s->input, (size_t)n * l->input_bytes);
            if (tg != NULL)
                memcpy(yt__data_ptr(tg), s->target, (size_t)n * l->target_bytes);
            pthread_mutex_lock(&l->mu);
            s->state = YT__SLOT_EMPTY;
            l->pos++;
            pthread_cond_broadcast(&l->work_cv);
            pthread_mutex_unlock(&l->mu);
        } else {
            st = yt__fail_status(st, "loader: batch %lld of epoch %lld: %s", (long long)b,
                                 (long long)l->epoch, s->message);
            /* Load the failed batch again on the next call (batches after it are dropped). */
            yt__loader_seek(l, l->seed, l->epoch, b);
        }
    }
    if (st != YT_OK) {
        yt_release(in);
        yt_release(tg);
        return st;
    }
    if (targets == NULL) {
        yt_release(tg);
        tg = NULL;
    }
    /* Results handed to the caller join the caller's scope, as every op's results do. */
    *inputs = yt__scope_track(in);
    if (*inputs == NULL) {
        yt_release(tg);
        return yt__last_status();
    }
    if (tg != NULL && (*targets = yt__scope_track(tg)) == NULL) {
        *inputs = NULL;
        return yt__last_status();
    }
    return YT_OK;
}

yt_status
yt_loader_start_epoch(yt_loader *l, int64_t epoch)
{
    if (l == NULL)
        return yt__fail_status(YT_ERR_VALUE, "loader_start_epoch: loader is NULL");
    if (epoch < 0)
        return yt__fail_status(YT_ERR_VALUE, "loader_start_epoch: epoch=%lld is negative",
                               (long long)epoch);
    yt__loader_seek(l, l->seed, epoch, 0);
    return YT_OK;
}

int64_t
yt_loader_batches_per_epoch(const yt_loader *l)
{
    return l == NULL ? 0 : l->batches;
}

int64_t
yt_loader_epoch(const yt_loader *l)
{
    return l == NULL ? 0 : l->epoch;
}

int64_t
yt_loader_position(const yt_loader *l)
{
    return l == NULL ? 0 : l->pos;
}

const int64_t *
yt_loader_input_shape(const yt_loader *l, int *ndim)
{
    if (ndim != NULL)
        *ndim = l == NULL ? 0 : l->plan.out_ndim;
    return l == NULL ? NULL : l->plan.out_shape;
}
