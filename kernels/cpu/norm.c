/* linalg_vector_norm on the CPU for any ord: ord = 2 sqrt(sum(x*x)), 1 sum(|x|), inf max(|x|),
 * -inf min(|x|), 0 the count of nonzeros, otherwise sum(|x|^ord)^(1/ord). Computed with the
 * public reduction ops (grad mode off: the op records its own backward) in the result's dtype,
 * and written into the preallocated result. */
#include <math.h>

#include "kernels.h"

static yt_tensor *
norm_of(yt_tensor *x, double p, const int64_t *dim, int dim_len, bool keepdim)
{
    yt_tensor *neg = yt_lt_scalar(x, yt_int(0));
    yt_tensor *minus = yt_neg(x);
    yt_tensor *absx = yt_where(neg, minus, x);
    yt_release(minus);
    yt_release(neg);
    yt_tensor *result = NULL;
    if (isinf(p)) {
        result = p > 0 ? yt_amax_ex(absx, dim, dim_len, keepdim)
                       : yt_amin_ex(absx, dim, dim_len, keepdim);
    } else if (p == 0) {
        yt_tensor *nz_b = yt_gt_scalar(absx, yt_int(0));
        yt_tensor *nz = yt_to(nz_b, yt_tensor_dtype(x));
        result = yt_sum_dim_ex(nz, dim, dim_len, keepdim, YT_DTYPE_NONE);
        yt_release(nz);
        yt_release(nz_b);
    } else if (p == 1) {
        result = yt_sum_dim_ex(absx, dim, dim_len, keepdim, YT_DTYPE_NONE);
    } else {
        yt_tensor *powed = p == 2 ? yt_mul(absx, absx) : yt_pow(absx, yt_float(p));
        yt_tensor *s = yt_sum_dim_ex(powed, dim, dim_len, keepdim, YT_DTYPE_NONE);
        result = p == 2 ? yt_sqrt(s) : yt_pow(s, yt_float(1.0 / p));
        yt_release(s);
        yt_release(powed);
    }
    yt_release(absx);
    return result;
}

yt_status
yt__cpu_linalg_vector_norm(yt_tensor *result, yt_tensor *self, yt_scalar ord, const int64_t *dim,
                           int dim_len, bool keepdim, yt_dtype dtype)
{
    (void)dtype; /* the result's dtype has it */
    double p = yt__scalar_to_double(ord);
    if (isnan(p))
        return yt__fail_status(YT_ERR_VALUE, "linalg_vector_norm: ord=nan is not a valid order");
    bool prev = yt_set_grad_enabled(false);
    yt__scope_suspend();
    yt_tensor *x = self->dtype == result->dtype ? yt_retain(self) : yt_to(self, result->dtype);
    yt_tensor *n = x == NULL ? NULL : norm_of(x, p, dim, dim_len, keepdim);
    yt_status st = n == NULL ? yt__last_status() : yt__copy_into(result, n);
    yt_release(n);
    yt_release(x);
    yt__scope_resume();
    yt_set_grad_enabled(prev);
    return st;
}
