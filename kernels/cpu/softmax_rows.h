/* Softmax over contiguous rows, for kernels that fuse it with other work (attention.c); the
 * same code as the softmax op's last-dim case (softmax.c). `rows` rows of `n` elements each,
 * row r at r * n; out may be x (or g) itself. */
#ifndef YT_KERNELS_CPU_SOFTMAX_ROWS_H
#define YT_KERNELS_CPU_SOFTMAX_ROWS_H

#include "internal.h"

YT_INTERNAL void yt__softmax_rows_f32(float *out, const float *x, int64_t rows, int64_t n);
YT_INTERNAL void yt__softmax_rows_f64(double *out, const double *x, int64_t rows, int64_t n);
/* out = y * (g - sum(g * y)) per row: the gradient of softmax y = softmax(x) for upstream g. */
YT_INTERNAL void yt__softmax_backward_rows_f32(float *out, const float *g, const float *y,
                                               int64_t rows, int64_t n);
YT_INTERNAL void yt__softmax_backward_rows_f64(double *out, const double *g, const double *y,
                                               int64_t rows, int64_t n);

#endif
