/* In-memory datasets over tensors whose first dim indexes the samples (PyTorch's TensorDataset);
 * .npy arrays become datasets through it. get_batch copies rows with memcpy: no tensor is made on
 * the loading threads. */
#include <stdlib.h>
#include <string.h>

#include "loader_internal.h"

typedef struct tensor_ctx {
    yt_tensor *inputs, *targets;  /* contiguous, detached; targets may be NULL */
    size_t input_row, target_row; /* bytes per sample */
    int64_t length;
} tensor_ctx;

static int64_t
tensor_length(void *ctx)
{
    return ((tensor_ctx *)ctx)->length;
}

static yt_status
tensor_get_batch(void *ctx_, const int64_t *indices, int64_t n, void *input, void *target)
{
    tensor_ctx *ctx = ctx_;
    const char *in = yt__data_ptr(ctx->inputs);
    for (int64_t i = 0; i < n; i++)
        memcpy((char *)input + (size_t)i * ctx->input_row, in + (size_t)indices[i] * ctx->input_row,
               ctx->input_row);
    if (ctx->targets != NULL) {
        const char *tg = yt__data_ptr(ctx->targets);
        for (int64_t i = 0; i < n; i++)
            memcpy((char *)target + (size_t)i * ctx->target_row,
                   tg + (size_t)indices[i] * ctx->target_row, ctx->target_row);
    }
    return YT_OK;
}

static void
tensor_release(void *ctx_)
{
    tensor_ctx *ctx = ctx_;
    if (ctx == NULL)
        return;
    yt_release(ctx->inputs);
    yt_release(ctx->targets);
    free(ctx);
}

static const yt_dataset_kind tensor_kind = {
    .name = "TensorDataset",
    .length = tensor_length,
    .get_batch = tensor_get_batch,
    .release_ctx = tensor_release,
};

/* A detached, contiguous handle on `t`'s values (the dataset's own reference). */
static yt_tensor *
own_contiguous(yt_tensor *t)
{
    bool grad = yt_set_grad_enabled(false);
    yt_tensor *d = yt_detach(t);
    yt_tensor *c = yt_contiguous(d);
    yt_release(d);
    yt_set_grad_enabled(grad);
    return c;
}

static yt_status
check_tensor(const char *what, yt_tensor *t)
{
    if (yt_tensor_device(t) != YT_DEVICE_CPU)
        return yt__fail_status(YT_ERR_DEVICE,
                               "tensor_dataset_new: %s is on %s; datasets hold CPU tensors", what,
                               yt_device_name(yt_tensor_device(t)));
    if (yt_tensor_dim(t) < 1)
        return yt__fail_status(
            YT_ERR_VALUE, "tensor_dataset_new: %s is 0-D; its first dim must index samples", what);
    return YT_OK;
}

yt_dataset *
yt_tensor_dataset_new(yt_tensor *inputs, yt_tensor *targets)
{
    static const char op[] = "tensor_dataset_new";
    if (inputs == NULL)
        return YT__FAIL_NULL(YT_ERR_VALUE, "%s: inputs is NULL", op);
    if (check_tensor("inputs", inputs) != YT_OK ||
        (targets != NULL && check_tensor("targets", targets) != YT_OK))
        return NULL;
    int64_t n = yt_tensor_size(inputs, 0);
    if (targets != NULL && yt_tensor_size(targets, 0) != n)
        return YT__FAIL_NULL(YT_ERR_VALUE,
                             "%s: inputs.size(0)=%lld samples but targets.size(0)=%lld", op,
                             (long long)n, (long long)yt_tensor_size(targets, 0));
    tensor_ctx *ctx = calloc(1, sizeof *ctx);
    if (ctx == NULL)
        return YT__FAIL_NULL(YT_ERR_NOMEM, "%s: out of memory", op);
    /* Internal references: not the caller's scope's to release. */
    yt__scope_suspend();
    ctx->inputs = own_contiguous(inputs);
    ctx->targets = targets == NULL ? NULL : own_contiguous(targets);
    yt__scope_resume();
    if (ctx->inputs == NULL || (targets != NULL && ctx->targets == NULL)) {
        tensor_release(ctx);
        return NULL;
    }
    ctx->length = n;
    const int64_t *in_sizes = yt_tensor_sizes(inputs);
    int64_t in_numel = 0; /* the sizes of a live tensor cannot overflow */
    yt__checked_numel(&in_numel, in_sizes + 1, yt_tensor_dim(inputs) - 1);
    ctx->input_row = (size_t)in_numel * yt_dtype_size(yt_tensor_dtype(inputs));
    const int64_t *tg_sizes = NULL;
    int tg_ndim = 0;
    yt_dtype tg_dtype = YT_DTYPE_NONE;
    if (targets != NULL) {
        tg_sizes = yt_tensor_sizes(targets) + 1;
        tg_ndim = yt_tensor_dim(targets) - 1;
        tg_dtype = yt_tensor_dtype(targets);
        int64_t tg_numel = 0;
        yt__checked_numel(&tg_numel, tg_sizes, tg_ndim);
        ctx->target_row = (size_t)tg_numel * yt_dtype_size(tg_dtype);
    }
    return yt_dataset_new(&tensor_kind, ctx, in_sizes + 1, yt_tensor_dim(inputs) - 1,
                          yt_tensor_dtype(inputs), tg_sizes, tg_ndim, tg_dtype);
}
