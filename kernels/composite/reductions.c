/* Reductions written in public ops (autograd comes through their parts): logsumexp, var, std. */
#include <math.h>

#include "internal.h"
#include "kernels.h"

/* Whether any dim that `dim` reduces (every dim when dim_len == 0) has size 0. */
static bool
reduces_empty(const yt_tensor *self, const int64_t *dim, int dim_len)
{
    for (int i = 0; i < self->dim; i++) {
        bool reduced = dim_len == 0;
        for (int k = 0; k < dim_len; k++)
            reduced = reduced || dim[k] == i;
        if (reduced && self->sizes[i] == 0)
            return true;
    }
    return false;
}

/* log(sum(exp(self - m))) + m with m the (detached) maximum of each slice, replaced by 0 where it
 * is infinite so that all -inf slices give -inf and +inf ones +inf instead of NaN. Over an empty
 * slice the sum is 0 and the result -inf. */
yt_tensor *
yt__composite_logsumexp(yt_tensor *self, const int64_t *dim, int dim_len, bool keepdim)
{
    if (reduces_empty(self, dim, dim_len)) {
        yt_tensor *e = yt_exp(self);
        yt_tensor *s = yt_sum_dim_ex(e, dim, dim_len, keepdim, YT_DTYPE_NONE);
        yt_tensor *result = yt_log(s);
        yt_release(s);
        yt_release(e);
        return result;
    }
    yt_tensor *m = yt_amax_ex(self, dim, dim_len, true);
    yt_tensor *md = yt_detach(m);
    yt_tensor *zero = yt_zeros_like(md);
    yt_tensor *is_pinf = yt_eq_scalar(md, yt_float(INFINITY));
    yt_tensor *is_ninf = yt_eq_scalar(md, yt_float(-INFINITY));
    yt_tensor *m1 = yt_where(is_pinf, zero, md);
    yt_tensor *shift = yt_where(is_ninf, zero, m1);
    yt_tensor *shifted = yt_sub(self, shift);
    yt_tensor *e = yt_exp(shifted);
    yt_tensor *s = yt_sum_dim_ex(e, dim, dim_len, keepdim, YT_DTYPE_NONE);
    yt_tensor *l = yt_log(s);
    /* summing the size-1 dims of `shift` drops them exactly like the reduction did */
    yt_tensor *shift_r = yt_sum_dim_ex(shift, dim, dim_len, keepdim, YT_DTYPE_NONE);
    yt_tensor *result = yt_add(l, shift_r);
    yt_release(shift_r);
    yt_release(l);
    yt_release(s);
    yt_release(e);
    yt_release(shifted);
    yt_release(shift);
    yt_release(m1);
    yt_release(is_ninf);
    yt_release(is_pinf);
    yt_release(zero);
    yt_release(md);
    yt_release(m);
    return result;
}

/* Two passes over data shifted by the first element of each slice: sum((x - x0 - mean(x - x0))^2)
 * / max(0, N - correction). For a constant input x - x0 is exactly 0, so the variance is exactly
 * 0; the shift also keeps the sum of squares from cancelling when the mean is large. */
yt_tensor *
yt__composite_var(yt_tensor *self, const int64_t *dim, int dim_len, int64_t correction,
                  bool keepdim)
{
    int64_t n = 1;
    yt_tensor *x0 = yt_detach(self);
    for (int i = 0; i < self->dim && x0 != NULL; i++) {
        bool reduced = dim_len == 0;
        for (int k = 0; k < dim_len; k++)
            reduced = reduced || dim[k] == i;
        if (!reduced)
            continue;
        n *= self->sizes[i];
        yt_tensor *next = yt_slice_ex(x0, i, 0, 1, 1);
        yt_release(x0);
        x0 = next;
    }
    double c = correction == YT_NONE ? 1.0 : (double)correction;
    double denom = (double)n - c > 0 ? (double)n - c : 0.0; /* 0 gives NaN (or inf), as PyTorch */
    yt_tensor *shifted = yt_sub(self, x0);
    yt_tensor *mean = yt_mean_dim_ex(shifted, dim, dim_len, true, YT_DTYPE_NONE);
    yt_tensor *dev = yt_sub(shifted, mean);
    yt_tensor *sq = yt_mul(dev, dev);
    yt_tensor *s = yt_sum_dim_ex(sq, dim, dim_len, keepdim, YT_DTYPE_NONE);
    yt_tensor *result = yt_div_scalar(s, yt_float(denom));
    yt_release(s);
    yt_release(sq);
    yt_release(dev);
    yt_release(mean);
    yt_release(shifted);
    yt_release(x0);
    return result;
}

yt_tensor *
yt__composite_std(yt_tensor *self, const int64_t *dim, int dim_len, int64_t correction,
                  bool keepdim)
{
    yt_tensor *v = yt__composite_var(self, dim, dim_len, correction, keepdim);
    yt_tensor *result = yt_sqrt(v);
    yt_release(v);
    return result;
}
