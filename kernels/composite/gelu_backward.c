/* Second derivative of gelu (PyTorch's gelu_double_backward), written in public ops so that it
 * is differentiable in turn. gelu_backward(g, x) = g * gelu'(x); its derivative in x, applied
 * to the incoming gradient gg, is gg * g * gelu''(x):
 *   erf form:  gelu''(x) = pdf(x) * (2 - x^2),  pdf(x) = exp(-x^2 / 2) / sqrt(2 pi)
 *   tanh form: with u = k (x + c x^3), t = tanh(u), u' = k (1 + 3 c x^2),
 *              gelu''(x) = (1 - t^2) * (u' - x t u'^2 + 3 k c x^2)   (k = sqrt(2 / pi), c = 0.044715) */
#include <string.h>

#include "internal.h"
#include "kernels.h"

enum { MAX_TEMPS = 24 };

/* Temporaries released together at the end; NULL entries (a failed op) are harmless. */
typedef struct temps {
    yt_tensor *t[MAX_TEMPS];
    int n;
} temps;

static yt_tensor *
keep(temps *ts, yt_tensor *t)
{
    ts->t[ts->n++] = t;
    return t;
}

static void
release_all(temps *ts)
{
    for (int i = 0; i < ts->n; i++)
        yt_release(ts->t[i]);
}

static yt_tensor *
second_derivative_erf(temps *ts, yt_tensor *x2)
{
    yt_tensor *half_x2 = keep(ts, yt_mul_scalar(x2, yt_float(-0.5)));
    yt_tensor *e = keep(ts, yt_exp(half_x2));
    yt_tensor *pdf = keep(ts, yt_mul_scalar(e, yt_float(0.3989422804014327)));
    yt_tensor *two_minus = keep(ts, yt_rsub(x2, yt_float(2.0)));
    return keep(ts, yt_mul(pdf, two_minus));
}

static yt_tensor *
second_derivative_tanh(temps *ts, yt_tensor *x, yt_tensor *x2)
{
    const double k = 0.7978845608028654, c = 0.044715;
    yt_tensor *inner =
        keep(ts, yt_add_scalar(keep(ts, yt_mul_scalar(x2, yt_float(c))), yt_float(1.0)));
    yt_tensor *u = keep(ts, yt_mul_scalar(keep(ts, yt_mul(x, inner)), yt_float(k)));
    yt_tensor *t = keep(ts, yt_tanh(u));
    yt_tensor *sech2 = keep(ts, yt_rsub(keep(ts, yt_mul(t, t)), yt_float(1.0)));
    /* u' = k (1 + 3 c x^2); then u' - x t u'^2 + 3 k c x^2 */
    yt_tensor *du =
        keep(ts, yt_add_scalar(keep(ts, yt_mul_scalar(x2, yt_float(3.0 * k * c))), yt_float(k)));
    yt_tensor *xt = keep(ts, yt_mul(x, t));
    yt_tensor *xt_du2 = keep(ts, yt_mul(keep(ts, yt_mul(xt, du)), du));
    yt_tensor *sum = keep(ts, yt_add_ex(keep(ts, yt_sub(du, xt_du2)), x2, yt_float(3.0 * k * c)));
    return keep(ts, yt_mul(sech2, sum));
}

yt_tensor *
yt__composite_gelu_double_backward(yt_tensor *grad_grad, yt_tensor *grad_output, yt_tensor *self,
                                   const char *approximate)
{
    temps ts = {.n = 0};
    yt_tensor *x2 = keep(&ts, yt_mul(self, self));
    yt_tensor *g2 = strcmp(approximate, "tanh") == 0 ? second_derivative_tanh(&ts, self, x2)
                                                     : second_derivative_erf(&ts, x2);
    yt_tensor *scaled = keep(&ts, yt_mul(grad_output, g2));
    yt_tensor *result = yt_mul(grad_grad, scaled);
    release_all(&ts);
    return result;
}
