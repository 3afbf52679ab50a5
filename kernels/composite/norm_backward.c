/* Backward helpers of row_norm and batch_norm_training, in public ops so that they are
 * differentiable again (the first backward runs the fused kernels; these serve double backward).
 *
 * Both ops normalise sets of D values (row_norm: the K*S values of each (a, g) of [A, G, K, S];
 * batch_norm: the N*S values of each channel of [N, C, S]). With xhat = (x - mean) * r,
 * r = 1/sqrt(var + eps) (mean 0 and var the mean square when not centering), <.> the mean over a
 * set, and P(v) = v - <v> - xhat * <v * xhat> (without the <v> term when not centering), the
 * input gradient for an upstream gradient g and weight w is
 *     dx = BI(g, x, w) = r * P(g * w).
 * P is symmetric, and the variation of xhat is r * P(dx), which gives for a gradient u of dx:
 *     d/dg:  w * BI(u, x, None)
 *     d/dx:  -r * (<u * dx> * xhat + <g * w * xhat> * BI(u, x, None) + <u * xhat> * dx)
 *     d/dw:  the per-weight sum of g * BI(u, x, None) (a formula in derivatives.yaml). */
#include "internal.h"
#include "kernels.h"

/* How one of the two ops groups its values. */
typedef struct norm_sets {
    bool batch;  /* batch_norm_training (else row_norm) */
    bool center; /* subtract the mean */
    double eps;  /* added to the variance */
    int n_dims;  /* the dims each set of statistics spans */
    int64_t dims[YT_MAX_DIM];
} norm_sets;

static norm_sets
row_sets(bool center, double eps)
{
    return (norm_sets){false, center, eps, 2, {2, 3}};
}

static norm_sets
batch_sets(const yt_tensor *input, double eps)
{
    norm_sets s = {true, true, eps, 0, {0}};
    for (int i = 0; i < input->dim; i++)
        if (i != 1)
            s.dims[s.n_dims++] = i;
    return s;
}

/* BI(g, x, w), the op's own kernel. */
static yt_tensor *
backward_input(const norm_sets *s, yt_tensor *g, yt_tensor *x, yt_tensor *w)
{
    return s->batch ? yt_batch_norm_backward_input(g, x, w, s->eps)
                    : yt_row_norm_backward_input(g, x, w, s->center, s->eps);
}

/* xhat, the op's own forward without weight and bias. */
static yt_tensor *
normalized(const norm_sets *s, yt_tensor *x)
{
    return s->batch ? yt_batch_norm_training(x, NULL, NULL, NULL, NULL, 0.0, s->eps)
                    : yt_row_norm(x, NULL, NULL, s->center, s->eps);
}

/* The weight ([G, K] or [C]) viewed to broadcast against x. NULL stays NULL. */
static yt_tensor *
weight_view(const norm_sets *s, yt_tensor *w, const yt_tensor *x)
{
    if (w == NULL)
        return NULL;
    if (!s->batch)
        return yt_unsqueeze(w, -1); /* [G, K, 1] against [A, G, K, S] */
    int64_t shape[YT_MAX_DIM];
    shape[0] = w->sizes[0];
    for (int i = 1; i < x->dim - 1; i++)
        shape[i] = 1;
    return yt_view(w, shape, x->dim - 1); /* [C, 1, ...] against [N, C, ...] */
}

/* Temporaries released together at the end (NULL entries are fine: ops propagate NULL). */
typedef struct pool {
    int n;
    yt_tensor *t[32];
} pool;

static yt_tensor *
keep(pool *p, yt_tensor *t)
{
    p->t[p->n++] = t;
    return t;
}

static void
drain(pool *p)
{
    for (int i = 0; i < p->n; i++)
        yt_release(p->t[i]);
}

static yt_tensor *
set_mean(pool *p, const norm_sets *s, yt_tensor *t)
{
    return keep(p, yt_mean_dim_ex(t, s->dims, s->n_dims, true, YT_DTYPE_NONE));
}

/* r = 1/sqrt(<(x - <x>)^2> + eps) per set (keepdim), in public ops so it is differentiable. */
static yt_tensor *
set_rstd(pool *p, const norm_sets *s, yt_tensor *x)
{
    yt_tensor *xc = s->center ? keep(p, yt_sub(x, set_mean(p, s, x))) : x;
    yt_tensor *var = set_mean(p, s, keep(p, yt_mul(xc, xc)));
    return keep(p, yt_rsqrt(keep(p, yt_add_scalar(var, yt_float(s->eps)))));
}

static yt_tensor *
double_backward_input(const norm_sets *s, yt_tensor *u, yt_tensor *g, yt_tensor *x, yt_tensor *w)
{
    pool p = {0, {0}};
    yt_tensor *dx = keep(&p, backward_input(s, g, x, w));
    yt_tensor *bu = keep(&p, backward_input(s, u, x, NULL));
    yt_tensor *xh = keep(&p, normalized(s, x));
    yt_tensor *r = set_rstd(&p, s, x);
    yt_tensor *wv = keep(&p, weight_view(s, w, x));
    yt_tensor *gw = w ? keep(&p, yt_mul(g, wv)) : g;
    yt_tensor *a1 = keep(&p, yt_mul(set_mean(&p, s, keep(&p, yt_mul(u, dx))), xh));
    yt_tensor *a2 = keep(&p, yt_mul(set_mean(&p, s, keep(&p, yt_mul(gw, xh))), bu));
    yt_tensor *a3 = keep(&p, yt_mul(set_mean(&p, s, keep(&p, yt_mul(u, xh))), dx));
    yt_tensor *sum = keep(&p, yt_add(keep(&p, yt_add(a1, a2)), a3));
    yt_tensor *out = yt_mul(keep(&p, yt_neg(r)), sum);
    drain(&p);
    return out;
}

static yt_tensor *
double_backward_grad_out(const norm_sets *s, yt_tensor *u, yt_tensor *x, yt_tensor *w)
{
    yt_tensor *bu = backward_input(s, u, x, NULL);
    if (w == NULL)
        return bu;
    yt_tensor *wv = weight_view(s, w, x);
    yt_tensor *out = yt_mul(bu, wv);
    yt_release(bu);
    yt_release(wv);
    return out;
}

/* grad, grad_out and input must share one shape (the op's input shape). */
static bool
same_shapes(const char *op, yt_tensor *grad, yt_tensor *grad_out, yt_tensor *input)
{
    yt_tensor *ts[2] = {grad, grad_out};
    const char *names[2] = {"grad", "grad_out"};
    for (int k = 0; k < 2; k++) {
        yt_tensor *t = ts[k];
        if (t == NULL)
            continue;
        bool same = t->dim == input->dim;
        for (int i = 0; same && i < t->dim; i++)
            same = t->sizes[i] == input->sizes[i];
        if (!same) {
            char a[YT__SIZES_BUF], b[YT__SIZES_BUF];
            yt__fail(YT_ERR_SHAPE, "%s: %s has shape %s but input has shape %s", op, names[k],
                     yt__format_sizes(a, sizeof a, t->sizes, t->dim),
                     yt__format_sizes(b, sizeof b, input->sizes, input->dim));
            return false;
        }
    }
    return true;
}

yt_tensor *
yt__composite_row_norm_double_backward_input(yt_tensor *grad, yt_tensor *grad_out, yt_tensor *input,
                                             yt_tensor *weight, bool center, double eps)
{
    if (!same_shapes("row_norm_double_backward_input", grad, grad_out, input))
        return NULL;
    norm_sets s = row_sets(center, eps);
    return double_backward_input(&s, grad, grad_out, input, weight);
}

yt_tensor *
yt__composite_row_norm_double_backward_grad_out(yt_tensor *grad, yt_tensor *input,
                                                yt_tensor *weight, bool center, double eps)
{
    if (!same_shapes("row_norm_double_backward_grad_out", grad, NULL, input))
        return NULL;
    norm_sets s = row_sets(center, eps);
    return double_backward_grad_out(&s, grad, input, weight);
}

yt_tensor *
yt__composite_batch_norm_backward_bias_backward(yt_tensor *grad, const int64_t *sizes,
                                                int sizes_len)
{
    if (grad->sizes[0] != sizes[1]) {
        char a[YT__SIZES_BUF];
        return yt__fail(YT_ERR_SHAPE,
                        "batch_norm_backward_bias_backward: grad.size(0)=%lld does not match "
                        "sizes[1] of %s",
                        (long long)grad->sizes[0], yt__format_sizes(a, sizeof a, sizes, sizes_len));
    }
    int64_t shape[YT_MAX_DIM];
    shape[0] = grad->sizes[0];
    for (int i = 1; i < sizes_len - 1; i++)
        shape[i] = 1;
    yt_tensor *v = yt_view(grad, shape, sizes_len - 1); /* [C, 1, ...] */
    yt_tensor *out = yt_expand(v, sizes, sizes_len);
    yt_release(v);
    return out;
}

yt_tensor *
yt__composite_batch_norm_double_backward_input(yt_tensor *grad, yt_tensor *grad_out,
                                               yt_tensor *input, yt_tensor *weight, double eps)
{
    if (!same_shapes("batch_norm_double_backward_input", grad, grad_out, input))
        return NULL;
    norm_sets s = batch_sets(input, eps);
    return double_backward_input(&s, grad, grad_out, input, weight);
}

yt_tensor *
yt__composite_batch_norm_double_backward_grad_out(yt_tensor *grad, yt_tensor *input,
                                                  yt_tensor *weight, double eps)
{
    if (!same_shapes("batch_norm_double_backward_grad_out", grad, NULL, input))
        return NULL;
    norm_sets s = batch_sets(input, eps);
    return double_backward_grad_out(&s, grad, input, weight);
}
