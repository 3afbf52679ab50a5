/* tril and triu on the CPU: copy self into the contiguous result, then clear the other triangle of
 * each matrix with memset (all-zero bytes are 0 in every dtype, f16/bf16 and bool included). */
#include <string.h>

#include "kernels.h"

/* Clears, in every row i of every matrix, columns [lo(i), hi(i)): below the diagonal for triu,
 * above it for tril. */
static yt_status
clear_triangle(yt_tensor *result, yt_tensor *self, int64_t diagonal, bool lower)
{
    yt_status status = yt__copy_into(result, self);
    if (status != YT_OK || result->numel == 0)
        return status;
    int64_t rows = result->sizes[result->dim - 2], cols = result->sizes[result->dim - 1];
    int64_t batch = result->numel / (rows * cols);
    size_t es = yt_dtype_size(result->dtype);
    char *base = yt__data_ptr(result);
    for (int64_t b = 0; b < batch; b++) {
        for (int64_t i = 0; i < rows; i++) {
            int64_t lo, hi;
            /* i + diagonal cannot overflow for sane diagonals; clamp the huge ones first */
            int64_t dg = diagonal > cols ? cols : diagonal < -rows ? -rows : diagonal;
            if (lower) { /* tril keeps j <= i + diagonal */
                lo = i + dg + 1;
                hi = cols;
            } else { /* triu keeps j >= i + diagonal */
                lo = 0;
                hi = i + dg;
            }
            if (lo < 0)
                lo = 0;
            if (hi > cols)
                hi = cols;
            if (lo < hi)
                memset(base + ((b * rows + i) * cols + lo) * (int64_t)es, 0,
                       (size_t)(hi - lo) * es);
        }
    }
    return YT_OK;
}

yt_status
yt__cpu_tril(yt_tensor *result, yt_tensor *self, int64_t diagonal)
{
    return clear_triangle(result, self, diagonal, true);
}

yt_status
yt__cpu_triu(yt_tensor *result, yt_tensor *self, int64_t diagonal)
{
    return clear_triangle(result, self, diagonal, false);
}
