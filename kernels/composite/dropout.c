/* dropout: input * mask / (1 - p) with mask ~ Bernoulli(1 - p), drawn from the generator. The
 * scaled mask is saved by the multiplication, so the backward (grad * mask / (1 - p)) reuses it
 * instead of drawing again. */
#include "kernels.h"

yt_tensor *
yt__composite_dropout(yt_tensor *input, double p, bool train, yt_generator *generator)
{
    if (!(p >= 0.0 && p <= 1.0))
        return yt__fail(YT_ERR_VALUE,
                        "dropout: probability has to be between 0 and 1, but got p=%g", p);
    if (!train || p == 0.0)
        return yt_retain(input); /* the identity, as PyTorch returns input itself */
    if (p == 1.0)
        return yt_mul_scalar(input, yt_float(0.0)); /* everything dropped; no 1 / 0 scale */
    yt_tensor *mask = yt_bernoulli_p_ex(input, 1.0 - p, generator);
    if (mask != NULL && yt_mul_scalar_(mask, yt_float(1.0 / (1.0 - p))) != YT_OK) {
        yt_release(mask);
        return NULL;
    }
    yt_tensor *r = yt_mul(input, mask);
    yt_release(mask);
    return r;
}
