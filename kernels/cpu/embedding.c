/* embedding and embedding_dense_backward on the CPU: row copies out of `weight`, and row sums into
 * the weight's gradient (a scatter-add over rows; the padding row gets nothing). Indices are
 * range-checked against the number of rows before anything is written. */
#include <string.h>

#include "index_util.h"
#include "kernels.h"

yt_status
yt__cpu_embedding(yt_tensor *result, yt_tensor *weight, yt_tensor *indices, int64_t padding_idx,
                  bool scale_grad_by_freq, bool sparse)
{
    (void)padding_idx; /* padding only matters for the gradient */
    (void)scale_grad_by_freq;
    (void)sparse;
    yt_tensor *idx = yt__index_i64(indices);
    if (idx == NULL)
        return yt__last_status();
    const int64_t *iv = (const int64_t *)yt__data_ptr(idx);
    int64_t rows = weight->sizes[0], cols = weight->sizes[1];
    yt_status status = yt__check_index_range("embedding", iv, idx->numel, rows, 0);
    if (status == YT_OK && result->numel > 0) {
        size_t es = yt_dtype_size(weight->dtype);
        const char *w = yt__data_ptr(weight);
        char *r = yt__data_ptr(result);
        int64_t rs = weight->strides[0] * (int64_t)es, cs = weight->strides[1] * (int64_t)es;
        for (int64_t i = 0; i < idx->numel; i++) {
            const char *row = w + iv[i] * rs;
            char *to = r + i * cols * (int64_t)es;
            if (cs == (int64_t)es)
                memcpy(to, row, (size_t)cols * es);
            else
                for (int64_t j = 0; j < cols; j++)
                    yt__copy_elem(to + j * (int64_t)es, row + j * cs, es);
        }
    }
    yt_release(idx);
    return status;
}

yt_status
yt__cpu_embedding_dense_backward(yt_tensor *result, yt_tensor *grad_output, yt_tensor *indices,
                                 int64_t num_weights, int64_t padding_idx, bool scale_grad_by_freq)
{
    size_t es = yt_dtype_size(result->dtype);
    if (result->numel > 0)
        memset(yt__data_ptr(result), 0, (size_t)result->numel * es);
    yt_tensor *idx = yt__index_i64(indices);
    if (idx == NULL)
        return yt__last_status();
    const int64_t *iv = (const int64_t *)yt__data_ptr(idx);
    int64_t n = idx->numel, cols = result->sizes[1];
    yt_status status = yt__check_index_range("embedding_dense_backward", iv, n, num_weights, 0);
    int64_t *counts = NULL;
    if (status == YT_OK && scale_grad_by_freq && n > 0) {
        counts = yt__cpu_alloc((size_t)num_weights * sizeof *counts);
        if (counts == NULL)
            status = yt__fail_status(YT_ERR_NOMEM, "embedding_dense_backward: out of memory");
        else {
            memset(counts, 0, (size_t)num_weights * sizeof *counts);
            for (int64_t i = 0; i < n; i++)
                counts[iv[i]]++;
        }
    }
    yt_tensor *g = NULL;
    if (status == YT_OK && n > 0 && cols > 0) {
        g = grad_output->is_contiguous ? yt_retain(grad_output)
                                       : yt__cast_copy(grad_output, grad_output->dtype);
        if (g == NULL)
            status = yt__last_status();
    }
    if (g != NULL) {
        const char *gs = yt__data_ptr(g);
        char *r = yt__data_ptr(result);
        for (int64_t i = 0; i < n; i++) {
            if (iv[i] == padding_idx)
                continue;
            yt_scalar alpha = yt_int(1);
            if (counts != NULL)
                alpha = yt_float(1.0 / (double)counts[iv[i]]);
            yt__add_scaled(result->dtype, r + iv[i] * cols * (int64_t)es, 1,
                           gs + i * cols * (int64_t)es, 1, cols, alpha);
        }
        yt_release(g);
    }
    if (counts != NULL)
        yt__cpu_free(counts, (size_t)num_weights * sizeof *counts);
    yt_release(idx);
    return status;
}
