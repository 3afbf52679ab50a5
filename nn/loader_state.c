/* Where a loader is: the epoch's sample order (a function of seed and epoch) and the state dict
 * that lets a resumed run continue with exactly the batches an uninterrupted run would see. */
#include <string.h>

#include "loader_internal.h"

void
yt__loader_permutation(int64_t *perm, int64_t n, uint64_t key)
{
    for (int64_t i = 0; i < n; i++)
        perm[i] = i;
    /* Fisher-Yates from the top, one 64-bit draw per swap: swap i takes Philox block i / 2 of the
     * key's stream, half `i % 2` of it. */
    uint32_t r[4];
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t k = n - 1 - i;
        if (k % 2 == 0)
            yt__philox(key, (uint64_t)(k / 2), r);
        uint64_t bits = (uint64_t)r[2 * (k % 2)] | (uint64_t)r[2 * (k % 2) + 1] << 32;
        /* j uniform in 0..i by a multiply-shift (bias below (i + 1) / 2^64) */
        int64_t j = (int64_t)(((unsigned __int128)bits * (uint64_t)(i + 1)) >> 64);
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

/* ---------------------------------------------------------------- state dicts */

static const char *const state_names[] = {"epoch", "batch", "seed", "batch_size", "num_samples"};
enum { N_STATE = 5 };

yt_status
yt_loader_state_dict(yt_loader *l, yt_named_tensors *out)
{
    if (l == NULL || out == NULL)
        return yt__fail_status(YT_ERR_VALUE, "loader_state_dict: %s is NULL",
                               l == NULL ? "loader" : "out");
    const int64_t values[N_STATE] = {l->epoch, l->pos, (int64_t)l->seed, l->batch_size, l->length};
    for (int i = 0; i < N_STATE; i++)
        if (yt_named_tensors_find(out, state_names[i]) >= 0)
            return yt__fail_status(YT_ERR_VALUE, "loader_state_dict: '%s' is already in out",
                                   state_names[i]);
    /* The list holds the only references: the caller's scope must not get one. */
    yt__scope_suspend();
    yt_status st = YT_OK;
    for (int i = 0; i < N_STATE && st == YT_OK; i++) {
        yt_tensor *t = yt_scalar_tensor(yt_int(values[i]), YT_DTYPE_I64);
        st = t == NULL ? yt__last_status() : yt_named_tensors_add(out, state_names[i], t);
        yt_release(t);
    }
    yt__scope_resume();
    return st;
}

/* The single integer of sd[name] into *v. */
static yt_status
read_int(const yt_named_tensors *sd, const char *name, int64_t *v)
{
    int64_t i = yt_named_tensors_find(sd, name);
    if (i < 0)
        return yt__fail_status(YT_ERR_VALUE, "loader_load_state_dict: '%s' is missing", name);
    yt_tensor *t = sd->tensors[i];
    yt_dtype dt = yt_tensor_dtype(t);
    if (yt_tensor_numel(t) != 1 || yt_dtype_is_floating(dt) || dt == YT_DTYPE_BOOL)
        return yt__fail_status(YT_ERR_VALUE,
                               "loader_load_state_dict: '%s' must be one integer, got %s with %lld "
                               "elements",
                               name, yt_dtype_name(dt), (long long)yt_tensor_numel(t));
    return yt_tensor_copy_to(t, v, sizeof *v, YT_DTYPE_I64);
}

yt_status
yt_loader_load_state_dict(yt_loader *l, const yt_named_tensors *sd)
{
    static const char op[] = "loader_load_state_dict";
    if (l == NULL || sd == NULL)
        return yt__fail_status(YT_ERR_VALUE, "%s: %s is NULL", op, l == NULL ? "loader" : "sd");
    int64_t v[N_STATE];
    for (int i = 0; i < N_STATE; i++)
        if (read_int(sd, state_names[i], &v[i]) != YT_OK)
            return yt__last_status();
    int64_t epoch = v[0], batch = v[1];
    if (v[3] != l->batch_size || v[4] != l->length)
        return yt__fail_status(YT_ERR_VALUE,
                               "%s: the state is of a loader with batch_size=%lld over %lld "
                               "samples, this one has batch_size=%lld over %lld",
                               op, (long long)v[3], (long long)v[4], (long long)l->batch_size,
                               (long long)l->length);
    if (epoch < 0)
        return yt__fail_status(YT_ERR_VALUE, "%s: epoch=%lld is negative", op, (long long)epoch);
    if (batch < 0 || batch > l->batches)
        return yt__fail_status(YT_ERR_VALUE, "%s: batch=%lld is out of range 0..%lld", op,
                               (long long)batch, (long long)l->batches);
    yt__loader_seek(l, (uint64_t)v[2], epoch, batch);
    return YT_OK;
}
