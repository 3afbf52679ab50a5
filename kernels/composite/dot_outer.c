/* dot and outer, written in public ops so autograd (and double backward) come from mm and mul.
 *   dot(a, b)   = mm([1, k], [k, 1]) viewed as 0-d: one GEMM call, exact zero for k = 0
 *   outer(a, b) = a[:, None] * b[None, :]  (a broadcast multiply: no reduction to do) */
#include "internal.h"
#include "kernels.h"

yt_tensor *
yt__composite_dot(yt_tensor *self, yt_tensor *tensor)
{
    yt_tensor *row = yt_unsqueeze(self, 0);
    yt_tensor *col = yt_unsqueeze(tensor, 1);
    yt_tensor *prod = yt_mm(row, col); /* [1, 1] */
    yt_tensor *result = yt_view(prod, NULL, 0);
    yt_release(prod);
    yt_release(col);
    yt_release(row);
    return result;
}

yt_tensor *
yt__composite_outer(yt_tensor *self, yt_tensor *vec2)
{
    yt_tensor *col = yt_unsqueeze(self, 1);
    yt_tensor *row = yt_unsqueeze(vec2, 0);
    yt_tensor *result = yt_mul(col, row);
    yt_release(row);
    yt_release(col);
    return result;
}
