/* maybe_multiply: self * other, skipped when other is 1 (the alpha and beta of add, addmm, ...
 * in their backward formulas are 1 almost always; the product would only copy the gradient).
 * Returning self itself is safe for autograd: the result is the same tensor, with its own
 * history. */
#include "internal.h"
#include "kernels.h"

yt_tensor *
yt__composite_maybe_multiply(yt_tensor *self, yt_scalar other)
{
    if (yt__scalar_to_double(other) == 1.0)
        return yt_retain(self);
    return yt_mul_scalar(self, other);
}
