/* logsumexp over contiguous f32 rows, for kernels that fuse it with other work
 * (loss_cross_entropy.c); the same code as the logsumexp op's last-dim case (logsumexp.c). */
#ifndef YT_KERNELS_CPU_LOGSUMEXP_ROWS_H
#define YT_KERNELS_CPU_LOGSUMEXP_ROWS_H

#include "internal.h"

/* lse[r] = log(sum_i exp(x[r * n + i])) for r < rows, n > 0, as the op gives it: an infinite
 * maximum shifts by 0, so a row of -inf gives -inf, one with +inf (and no NaN) +inf; a NaN gives
 * NaN. */
YT_INTERNAL void yt__logsumexp_rows_f32(double *lse, const float *x, int64_t rows, int64_t n);

#endif
