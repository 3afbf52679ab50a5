/* Helpers shared by the loss composites and kernels (kernels/composite/loss*.c,
 * kernels/cpu/loss_cross_entropy.c). Kernel-private: not part of the internal contract. */
#ifndef YT_KERNELS_COMPOSITE_LOSS_H
#define YT_KERNELS_COMPOSITE_LOSS_H

#include "internal.h"

/* The `str reduction` argument as an enum (aten's numbering). The generated code has already
 * checked the string against the choices none, mean and sum. */
enum { YT__REDUCTION_NONE = 0, YT__REDUCTION_MEAN = 1, YT__REDUCTION_SUM = 2 };

YT_INTERNAL int yt__reduction_code(const char *reduction);

/* `loss` reduced as asked (its reference is taken over): itself, its mean or its sum. */
YT_INTERNAL yt_tensor *yt__reduce_loss(yt_tensor *loss, int reduction);

/* Geometry of a class-index loss: self is (C), (N, C) or (N, C, d1, ...), target (), (N) or
 * (N, d1, ...). Rows are the (n, d...) positions, each with C classes spaced `inner` apart. */
typedef struct yt__class_layout {
    int64_t n;     /* batch size (1 for a 1-D self) */
    int64_t c;     /* classes */
    int64_t inner; /* product of d1, ... (1 when none) */
} yt__class_layout;

/* Validates self/target/weight shapes and dtypes for `op` and fills the layout. */
YT_INTERNAL yt_status yt__class_layout_of(yt__class_layout *lay, yt_tensor *self, yt_tensor *target,
                                          yt_tensor *weight, const char *op);

/* Per-row target classes (contiguous int64, n * inner entries) and class weights (c entries,
 * all 1 without weight), range-checked: every target is ignore_index or in [0, C). Free both
 * with yt__class_targets_free. */
YT_INTERNAL yt_status yt__class_targets(int64_t **targets, double **weights,
                                        const yt__class_layout *lay, yt_tensor *target,
                                        yt_tensor *weight, int64_t ignore_index, const char *op);
YT_INTERNAL void yt__class_targets_free(int64_t *targets, double *weights,
                                        const yt__class_layout *lay);

/* The constant K (self's shape and dtype) with loss_row = -sum_c K[row, c] * logp[row, c]:
 * (1 - ls) * w_t at the target class plus ls / C * w_c on every class, zero on ignored rows.
 * *total_weight gets the sum of w_t over rows that are not ignored (the mean's divisor). */
YT_INTERNAL yt_tensor *yt__class_coefficients(yt_tensor *self, yt_tensor *target, yt_tensor *weight,
                                              int64_t ignore_index, double label_smoothing,
                                              double *total_weight, const char *op);

/* cross_entropy_index_backward's values in one pass (kernels/cpu/loss_cross_entropy.c), for
 * when no graph is recorded: a new tensor shaped like self, or NULL with the error set. */
YT_INTERNAL yt_tensor *yt__cross_entropy_index_grad(yt_tensor *grad_output, yt_tensor *self,
                                                    yt_tensor *target, yt_tensor *weight,
                                                    const char *reduction, int64_t ignore_index,
                                                    double label_smoothing);

#endif
