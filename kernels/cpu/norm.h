/* Private helpers of the normalization kernels (row_norm, behind layer_norm, group_norm and
 * rms_norm; batch_norm) and of the composites that call them. Not part of the internal contract.
 *
 * layer_norm, group_norm and rms_norm share one "row" engine: the input is M rows of D
 * contiguous elements, each row normalised by its own mean (unless `center` is false, as in RMS
 * norm) and 1/sqrt(var + eps); the affine weight/bias has one value per run of S elements, and
 * row r uses the values starting at (r % G) * (D / S). layer_norm is S = 1, G = 1 (one value per
 * column); group_norm is S = H*W, G = groups (one value per channel). The row_norm op presents
 * this as a 4-D input [A, G, K, S] (M = A*G rows of D = K*S) with a [G, K] weight. */
#ifndef YT_KERNELS_CPU_NORM_H
#define YT_KERNELS_CPU_NORM_H

/* by path, so the tests and benchmarks can include this header too */
#include "../../runtime/internal.h"

typedef struct yt__rownorm {
    int64_t rows;    /* M */
    int64_t row_len; /* D */
    int64_t inner;   /* S: elements per affine value; divides D */
    int64_t groups;  /* G: row r uses affine values from (r % G) * (D / S) */
    double eps;      /* added to the variance (mean square when !center) */
    bool center;     /* subtract the mean (layer/group norm) or not (RMS norm) */
} yt__rownorm;

/* Forward: y = (x - mean) * rstd * w + b, and the per-row mean and rstd when wanted (any of
 * mean, rstd, weight, bias may be NULL). Tensors of any strides and floating dtype: f16/bf16
 * compute in f32. `x` and `y` hold M*D elements, mean/rstd M, weight/bias G*D/S. */
YT_INTERNAL yt_status yt__rownorm_forward(yt_tensor *y, yt_tensor *mean, yt_tensor *rstd,
                                          yt_tensor *x, yt_tensor *weight, yt_tensor *bias,
                                          const yt__rownorm *p);

/* Backward of the same: any of dx, dw, db may be NULL (not wanted). dw and db are summed over
 * the rows in one pass with dx. `mean`/`rstd` as the forward saved them, or both NULL: then each
 * row's statistics are recomputed from x exactly as the forward computed them. When only db is
 * wanted, x is not read and may be NULL. */
YT_INTERNAL yt_status yt__rownorm_backward(yt_tensor *dx, yt_tensor *dw, yt_tensor *db,
                                           yt_tensor *dy, yt_tensor *x, yt_tensor *mean,
                                           yt_tensor *rstd, yt_tensor *weight,
                                           const yt__rownorm *p);

/* `t` as a contiguous tensor of dtype `dt`: `t` itself (a new reference) when it already is,
 * else a copy. NULL in, NULL out (no error). */
YT_INTERNAL yt_tensor *yt__norm_contig(yt_tensor *t, yt_dtype dt);

/* The dtype the norm kernels compute in: f64 for f64, f32 for the other floating dtypes. */
static inline yt_dtype
yt__norm_compute_dtype(yt_dtype d)
{
    return d == YT_DTYPE_F64 ? YT_DTYPE_F64 : YT_DTYPE_F32;
}

/* batch_norm on x viewed as [N, C, S] (S = product of the dims after 1). Training: batch
 * statistics (save_mean, save_invstd get them when not NULL; running stats, when given, are
 * updated in place with `momentum` and the unbiased variance). Eval: the running stats. */
YT_INTERNAL yt_status yt__batchnorm_forward(yt_tensor *y, yt_tensor *save_mean,
                                            yt_tensor *save_invstd, yt_tensor *x, yt_tensor *weight,
                                            yt_tensor *bias, yt_tensor *running_mean,
                                            yt_tensor *running_var, bool training, double momentum,
                                            double eps);

/* Backward of batch_norm. Training: save_mean/save_invstd are the batch statistics, or both NULL
 * to recompute them from x as the forward did; eval: the running stats are used (and save_*
 * ignored). Any of dx, dw, db may be NULL; when only db is wanted, x is not read and may be
 * NULL (its geometry is dy's). */
YT_INTERNAL yt_status yt__batchnorm_backward(yt_tensor *dx, yt_tensor *dw, yt_tensor *db,
                                             yt_tensor *dy, yt_tensor *x, yt_tensor *weight,
                                             yt_tensor *running_mean, yt_tensor *running_var,
                                             yt_tensor *save_mean, yt_tensor *save_invstd,
                                             bool training, double eps);

#endif
