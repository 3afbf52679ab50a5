/* Class-index targets of nll_loss and cross_entropy: shape validation, range checks, and the
 * constant coefficient tensor the composites contract log-probabilities with. */
#include <stdlib.h>
#include <string.h>

#include "../cpu/factory.h"
#include "kernels.h"
#include "loss.h"

int
yt__reduction_code(const char *reduction)
{
    if (strcmp(reduction, "none") == 0)
        return YT__REDUCTION_NONE;
    return strcmp(reduction, "sum") == 0 ? YT__REDUCTION_SUM : YT__REDUCTION_MEAN;
}

yt_tensor *
yt__reduce_loss(yt_tensor *loss, int reduction)
{
    if (loss == NULL || reduction == YT__REDUCTION_NONE)
        return loss;
    yt_tensor *r = reduction == YT__REDUCTION_MEAN ? yt_mean(loss) : yt_sum(loss);
    yt_release(loss);
    return r;
}

yt_status
yt__class_layout_of(yt__class_layout *lay, yt_tensor *self, yt_tensor *target, yt_tensor *weight,
                    const char *op)
{
    char a[YT__SIZES_BUF], b[YT__SIZES_BUF];
    if (self->dim < 1)
        return yt__fail_status(YT_ERR_SHAPE, "%s: self must have at least 1 dimension, got 0-D",
                               op);
    if (yt_dtype_is_floating(target->dtype) || target->dtype == YT_DTYPE_BOOL)
        return yt__fail_status(YT_ERR_DTYPE, "%s: class-index target must be integral, got %s", op,
                               yt_dtype_name(target->dtype));
    bool ok = target->dim == (self->dim == 1 ? 0 : self->dim - 1);
    if (ok && self->dim >= 2) {
        ok = target->sizes[0] == self->sizes[0];
        for (int i = 2; i < self->dim && ok; i++)
            ok = target->sizes[i - 1] == self->sizes[i];
    }
    if (!ok)
        return yt__fail_status(YT_ERR_SHAPE,
                               "%s: target shape %s does not match self shape %s (expected self's "
                               "shape without the class dimension 1)",
                               op, yt__format_sizes(a, sizeof a, target->sizes, target->dim),
                               yt__format_sizes(b, sizeof b, self->sizes, self->dim));
    int cdim = self->dim == 1 ? 0 : 1;
    lay->c = self->sizes[cdim];
    lay->n = self->dim == 1 ? 1 : self->sizes[0];
    lay->inner = 1;
    for (int i = 2; i < self->dim; i++)
        lay->inner *= self->sizes[i];
    if (weight != NULL && (weight->dim != 1 || weight->sizes[0] != lay->c))
        return yt__fail_status(YT_ERR_SHAPE,
                               "%s: weight must be 1-D with %lld elements (one per class), got "
                               "shape %s",
                               op, (long long)lay->c,
                               yt__format_sizes(a, sizeof a, weight->sizes, weight->dim));
    return YT_OK;
}

/* The bytes of yt__class_targets' two arrays: from the caching allocator, since a loss runs every
 * step (malloc's 128 KiB of targets for 16384 rows came back from the kernel, page faults and
 * all, on every call). */
static size_t
targets_bytes(const yt__class_layout *lay)
{
    int64_t rows = lay->n * lay->inner;
    return sizeof(int64_t) * (size_t)(rows > 0 ? rows : 1);
}

static size_t
weights_bytes(const yt__class_layout *lay)
{
    return sizeof(double) * (size_t)(lay->c > 0 ? lay->c : 1);
}

void
yt__class_targets_free(int64_t *targets, double *weights, const yt__class_layout *lay)
{
    yt__cpu_free(targets, targets_bytes(lay));
    yt__cpu_free(weights, weights_bytes(lay));
}

yt_status
yt__class_targets(int64_t **targets, double **weights, const yt__class_layout *lay,
                  yt_tensor *target, yt_tensor *weight, int64_t ignore_index, const char *op)
{
    int64_t rows = lay->n * lay->inner;
    *targets = yt__cpu_alloc(targets_bytes(lay));
    *weights = yt__cpu_alloc(weights_bytes(lay));
    yt_tensor *t = yt__cast_copy(target, YT_DTYPE_I64);
    yt_tensor *w = weight != NULL ? yt__cast_copy(weight, YT_DTYPE_F64) : NULL;
    yt_status st = YT_OK;
    if (*targets == NULL || *weights == NULL || t == NULL || (weight != NULL && w == NULL)) {
        st = yt_errcode() != YT_OK ? yt_errcode()
                                   : yt__fail_status(YT_ERR_NOMEM, "%s: out of memory", op);
        goto done;
    }
    const int64_t *tv = rows > 0 ? (const int64_t *)yt__data_ptr(t) : NULL;
    for (int64_t i = 0; i < rows; i++) {
        int64_t k = tv[i];
        if (k != ignore_index && (k < 0 || k >= lay->c)) {
            st = yt__fail_status(YT_ERR_VALUE,
                                 "%s: target value %lld at index %lld is out of range [0, %lld)",
                                 op, (long long)k, (long long)i, (long long)lay->c);
            goto done;
        }
        (*targets)[i] = k;
    }
    for (int64_t c = 0; c < lay->c; c++)
        (*weights)[c] = w != NULL ? ((const double *)yt__data_ptr(w))[c] : 1.0;
done:
    yt__release_cast(t, target);
    if (w != NULL)
        yt__release_cast(w, weight);
    if (st != YT_OK) {
        yt__class_targets_free(*targets, *weights, lay);
        *targets = NULL;
        *weights = NULL;
    }
    return st;
}

yt_tensor *
yt__class_coefficients(yt_tensor *self, yt_tensor *target, yt_tensor *weight, int64_t ignore_index,
                       double label_smoothing, double *total_weight, const char *op)
{
    yt__class_layout lay;
    int64_t *tg;
    double *w;
    if (yt__class_layout_of(&lay, self, target, weight, op) != YT_OK ||
        yt__class_targets(&tg, &w, &lay, target, weight, ignore_index, op) != YT_OK)
        return NULL;
    yt_tensor *k = yt_zeros_like(self); /* contiguous, self's dtype */
    if (k == NULL) {
        yt__class_targets_free(tg, w, &lay);
        return NULL;
    }
    char *kd = k->numel > 0 ? yt__data_ptr(k) : NULL;
    double ls = label_smoothing, total = 0.0;
    for (int64_t n = 0; n < lay.n; n++) {
        for (int64_t s = 0; s < lay.inner; s++) {
            int64_t t = tg[n * lay.inner + s];
            if (t == ignore_index)
                continue;
            total += w[t];
            int64_t base = n * lay.c * lay.inner + s;
            for (int64_t c = 0; c < lay.c && ls > 0.0; c++)
                yt__store_double(kd, k->dtype, base + c * lay.inner, ls / (double)lay.c * w[c]);
            int64_t at = base + t * lay.inner;
            yt__store_double(kd, k->dtype, at,
                             yt__load_double(kd, k->dtype, at) + (1.0 - ls) * w[t]);
        }
    }
    yt__class_targets_free(tg, w, &lay);
    *total_weight = total;
    return k;
}

yt_status
yt__shape_class_loss(yt_shape *out, const char *op, yt_tensor *self, yt_tensor *target,
                     yt_tensor *weight, const char *reduction)
{
    yt__class_layout lay;
    if (yt__class_layout_of(&lay, self, target, weight, op) != YT_OK)
        return yt__last_status();
    if (yt__reduction_code(reduction) == YT__REDUCTION_NONE)
        yt__shape_of(out, target);
    else
        out->dim = 0;
    return YT_OK;
}
