/* Gradients of pow (PyTorch's pow_backward family), in public ops so double backward works. */
#include "internal.h"
#include "kernels.h"

/* d/dself pow(self, e) = e * self^(e-1); zero for e == 0, where the formula would give
 * 0 * self^-1 = NaN at self == 0. */
yt_tensor *
yt__composite_pow_backward(yt_tensor *grad, yt_tensor *self, yt_scalar exponent)
{
    double e = yt__scalar_to_double(exponent);
    if (e == 0.0)
        return yt_zeros_like(self);
    if (e == 1.0)
        return yt_retain(grad);
    if (e == 2.0) { /* squares (mse): 2 * self * grad, without the pow */
        yt_tensor *twice = yt_mul_scalar(self, exponent);
        yt_tensor *result = yt_mul(grad, twice);
        yt_release(twice);
        return result;
    }
    yt_tensor *power = yt_pow(self, yt_float(e - 1.0));
    yt_tensor *scaled = yt_mul_scalar(power, exponent);
    yt_tensor *result = yt_mul(grad, scaled);
    yt_release(scaled);
    yt_release(power);
    return result;
}

/* Elementwise version for a tensor exponent; the result has the broadcast shape (the caller
 * sums it to self's shape). */
yt_tensor *
yt__composite_pow_backward_self(yt_tensor *grad, yt_tensor *self, yt_tensor *exponent)
{
    yt_tensor *minus_one = yt_sub_scalar(exponent, yt_int(1));
    yt_tensor *power = yt_pow_tensor_tensor(self, minus_one);
    yt_tensor *scaled = yt_mul(exponent, power);
    yt_tensor *value = yt_mul(grad, scaled);
    yt_tensor *is_zero = yt_eq_scalar(exponent, yt_int(0));
    yt_tensor *zero = yt_zeros_ex(NULL, 0, yt_tensor_dtype(grad), yt_tensor_device(grad));
    yt_tensor *result = yt_where(is_zero, zero, value);
    yt_release(zero);
    yt_release(is_zero);
    yt_release(value);
    yt_release(scaled);
    yt_release(power);
    yt_release(minus_one);
    return result;
}

/* d/dexponent pow(self, e) = pow(self, e) * log(self), taken as 0 where self == 0 and e >= 0
 * (PyTorch's masking: the limit there is 0, while 0 * log(0) would be NaN). */
yt_tensor *
yt__composite_pow_backward_exponent(yt_tensor *grad, yt_tensor *self, yt_tensor *exponent,
                                    yt_tensor *output)
{
    /* log in the promoted dtype (output's), as PyTorch converts self before taking it. */
    yt_dtype dtype = yt_tensor_dtype(output);
    yt_tensor *base = yt_tensor_dtype(self) == dtype ? yt_retain(self) : yt_to(self, dtype);
    yt_tensor *log_base = yt_log(base);
    yt_tensor *value = yt_mul(output, log_base);
    yt_tensor *zero = yt_zeros_ex(NULL, 0, yt_tensor_dtype(grad), yt_tensor_device(grad));
    /* where(self == 0 && e >= 0, 0, value), with nested wheres for the missing logical_and. */
    yt_tensor *negative = yt_lt_scalar(exponent, yt_int(0));
    yt_tensor *at_zero = yt_where(negative, value, zero);
    yt_tensor *is_zero = yt_eq_scalar(self, yt_int(0));
    yt_tensor *masked = yt_where(is_zero, at_zero, value);
    yt_tensor *result = yt_mul(grad, masked);
    yt_release(masked);
    yt_release(is_zero);
    yt_release(at_zero);
    yt_release(negative);
    yt_release(zero);
    yt_release(value);
    yt_release(log_base);
    yt_release(base);
    return result;
}
