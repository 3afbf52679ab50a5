/* Losses written in public ops, so their gradients (and gradients of gradients) come from the
 * ops they are made of: mse, l1, smooth_l1, huber, binary cross-entropy (plain and with logits),
 * nll, cross_entropy (dispatching class indices to the fused kernel) and the backward of that
 * fused kernel. The generated functions refuse class and element weights (weight, pos_weight) that
 * require grad, as PyTorch does (derivatives.yaml marks them non_differentiable), so the weights
 * arriving here carry no graph; cross_entropy's weight is differentiable with class
 * probabilities, as in PyTorch. */
#include <math.h>
#include <string.h>

#include "kernels.h"
#include "loss.h"

/* |d| as relu(d) + relu(-d): its gradient at 0 is 0, PyTorch's sign(0). */
static yt_tensor *
abs_of(yt_tensor *d)
{
    yt_tensor *nd = yt_neg(d);
    yt_tensor *a = yt_relu(d), *b = yt_relu(nd);
    yt_tensor *r = yt_add(a, b);
    yt_release(nd);
    yt_release(a);
    yt_release(b);
    return r;
}

/* target must broadcast with self (PyTorch broadcasts, with a warning); checked here so that a
 * mismatch is the loss's error, not that of the sub inside it. */
static yt_status
check_broadcasts(yt_tensor *self, yt_tensor *target, const char *op)
{
    int n = self->dim > target->dim ? self->dim : target->dim;
    for (int i = 1; i <= n; i++) {
        int64_t s = i <= self->dim ? self->sizes[self->dim - i] : 1;
        int64_t t = i <= target->dim ? target->sizes[target->dim - i] : 1;
        if (s != t && s != 1 && t != 1) {
            char a[YT__SIZES_BUF], b[YT__SIZES_BUF];
            return yt__fail_status(YT_ERR_SHAPE,
                                   "%s: target of shape %s does not broadcast with self (the "
                                   "input) of shape %s: target.size(%d)=%lld, self.size(%d)=%lld",
                                   op, yt__format_sizes(a, sizeof a, target->sizes, target->dim),
                                   yt__format_sizes(b, sizeof b, self->sizes, self->dim),
                                   target->dim - i, (long long)t, self->dim - i, (long long)s);
        }
    }
    return YT_OK;
}

yt_tensor *
yt__composite_mse_loss(yt_tensor *self, yt_tensor *target, const char *reduction)
{
    if (check_broadcasts(self, target, "mse_loss") != YT_OK)
        return NULL;
    yt_tensor *d = yt_sub(self, target);
    yt_tensor *sq = yt_mul(d, d);
    yt_release(d);
    return yt__reduce_loss(sq, yt__reduction_code(reduction));
}

yt_tensor *
yt__composite_l1_loss(yt_tensor *self, yt_tensor *target, const char *reduction)
{
    if (check_broadcasts(self, target, "l1_loss") != YT_OK)
        return NULL;
    yt_tensor *d = yt_sub(self, target);
    yt_tensor *a = abs_of(d);
    yt_release(d);
    return yt__reduce_loss(a, yt__reduction_code(reduction));
}

/* where(|d| < t, quad_scale * d^2, lin_scale * (|d| - t / 2)): smooth_l1 has quad_scale 1/(2 beta)
 * and lin_scale 1, huber 1/2 and delta. */
static yt_tensor *
piecewise(yt_tensor *self, yt_tensor *target, double t, double quad_scale, double lin_scale,
          const char *reduction)
{
    yt_tensor *d = yt_sub(self, target);
    yt_tensor *a = abs_of(d);
    yt_tensor *small = yt_lt_scalar(a, yt_float(t));
    yt_tensor *sq = yt_mul(d, d);
    yt_tensor *quad = yt_mul_scalar(sq, yt_float(quad_scale));
    yt_tensor *shifted = yt_sub_scalar(a, yt_float(0.5 * t));
    yt_tensor *lin =
        lin_scale == 1.0 ? yt_retain(shifted) : yt_mul_scalar(shifted, yt_float(lin_scale));
    yt_tensor *loss = yt_where(small, quad, lin);
    yt_release(d);
    yt_release(a);
    yt_release(small);
    yt_release(sq);
    yt_release(quad);
    yt_release(shifted);
    yt_release(lin);
    return yt__reduce_loss(loss, yt__reduction_code(reduction));
}

yt_tensor *
yt__composite_smooth_l1_loss(yt_tensor *self, yt_tensor *target, const char *reduction, double beta)
{
    if (!(beta >= 0.0))
        return yt__fail(YT_ERR_VALUE, "smooth_l1_loss: beta must be >= 0, got beta=%g", beta);
    if (check_broadcasts(self, target, "smooth_l1_loss") != YT_OK)
        return NULL;
    if (beta == 0.0) { /* plain l1, with PyTorch's gradient -1 at self == target (its kernel's
                          * d <= -beta branch), where l1_loss has sign(0) = 0 */
        yt_tensor *d = yt_sub(self, target);
        yt_tensor *pos = yt_gt_scalar(d, yt_int(0));
        yt_tensor *nd = yt_neg(d);
        yt_tensor *a = yt_where(pos, d, nd);
        yt_release(d);
        yt_release(pos);
        yt_release(nd);
        return yt__reduce_loss(a, yt__reduction_code(reduction));
    }
    return piecewise(self, target, beta, 0.5 / beta, 1.0, reduction);
}

yt_tensor *
yt__composite_huber_loss(yt_tensor *self, yt_tensor *target, const char *reduction, double delta)
{
    if (!(delta > 0.0))
        return yt__fail(YT_ERR_VALUE, "huber_loss: delta must be > 0, got delta=%g", delta);
    if (check_broadcasts(self, target, "huber_loss") != YT_OK)
        return NULL;
    return piecewise(self, target, delta, 0.5, delta, reduction);
}

/* ---------------------------------------------------------------- shared checks */

static bool
same_shape(const yt_tensor *a, const yt_tensor *b)
{
    if (a->dim != b->dim)
        return false;
    for (int i = 0; i < a->dim; i++)
        if (a->sizes[i] != b->sizes[i])
            return false;
    return true;
}

static yt_status
check_target_shape(yt_tensor *self, yt_tensor *target, const char *op)
{
    char a[YT__SIZES_BUF], b[YT__SIZES_BUF];
    if (same_shape(self, target))
        return YT_OK;
    return yt__fail_status(YT_ERR_SHAPE, "%s: target shape %s must equal self shape %s", op,
                           yt__format_sizes(a, sizeof a, target->sizes, target->dim),
                           yt__format_sizes(b, sizeof b, self->sizes, self->dim));
}

/* An element weight (NULL: none) must broadcast to self's shape without growing it, as PyTorch
 * expands it to the input. */
static yt_status
check_expands_to(yt_tensor *w, yt_tensor *self, const char *op, const char *name)
{
    char a[YT__SIZES_BUF], b[YT__SIZES_BUF];
    if (w == NULL)
        return YT_OK;
    bool ok = w->dim <= self->dim;
    for (int i = 1; ok && i <= w->dim; i++) {
        int64_t ws = w->sizes[w->dim - i];
        ok = ws == 1 || ws == self->sizes[self->dim - i];
    }
    if (ok)
        return YT_OK;
    return yt__fail_status(YT_ERR_SHAPE, "%s: %s of shape %s does not broadcast to self shape %s",
                           op, name, yt__format_sizes(a, sizeof a, w->sizes, w->dim),
                           yt__format_sizes(b, sizeof b, self->sizes, self->dim));
}

/* loss * weight; takes over loss. NULL weight: loss itself. */
static yt_tensor *
times_weight(yt_tensor *loss, yt_tensor *weight)
{
    if (weight == NULL || loss == NULL)
        return loss;
    yt_tensor *r = yt_mul(loss, weight);
    yt_release(loss);
    return r;
}

/* ---------------------------------------------------------------- binary cross-entropy */

yt_tensor *
yt__composite_binary_cross_entropy(yt_tensor *self, yt_tensor *target, yt_tensor *weight,
                                   const char *reduction)
{
    const char *op = "binary_cross_entropy";
    if (check_target_shape(self, target, op) != YT_OK ||
        check_expands_to(weight, self, op, "weight") != YT_OK)
        return NULL;
    /* PyTorch's check: every input element in [0, 1] */
    yt_tensor *xv = yt__cast_copy(self, YT_DTYPE_F64);
    if (xv == NULL)
        return NULL;
    const double *v = self->numel > 0 ? (const double *)yt__data_ptr(xv) : NULL;
    for (int64_t i = 0; i < self->numel; i++) {
        if (!(v[i] >= 0.0 && v[i] <= 1.0)) {
            double bad = v[i];
            yt__release_cast(xv, self);
            return yt__fail(YT_ERR_VALUE,
                            "%s: all elements of self should be between 0 and 1, but element %lld "
                            "is %g",
                            op, (long long)i, bad);
        }
    }
    yt__release_cast(xv, self);
    /* -(t * log(x) + (1 - t) * log1p(-x)), each log clamped at -100; its own derivative gives
     * PyTorch's gradients, finite where x is 0 or 1 */
    yt_tensor *loss = yt_binary_cross_entropy_elementwise(self, target);
    return yt__reduce_loss(times_weight(loss, weight), yt__reduction_code(reduction));
}

/* (1 - t) x + (1 + (pos_weight - 1) t) softplus(-x): softplus is linear past 20, so +-1e4 logits
 * give finite losses and gradients. */
yt_tensor *
yt__composite_binary_cross_entropy_with_logits(yt_tensor *self, yt_tensor *target,
                                               yt_tensor *weight, yt_tensor *pos_weight,
                                               const char *reduction)
{
    const char *op = "binary_cross_entropy_with_logits";
    if (check_target_shape(self, target, op) != YT_OK ||
        check_expands_to(weight, self, op, "weight") != YT_OK ||
        check_expands_to(pos_weight, self, op, "pos_weight") != YT_OK)
        return NULL;
    yt_tensor *one_minus_t = yt_rsub(target, yt_int(1));
    yt_tensor *lin = yt_mul(one_minus_t, self);
    yt_tensor *nx = yt_neg(self);
    yt_tensor *sp = yt_softplus(nx);
    yt_tensor *scaled;
    if (pos_weight != NULL) {
        yt_tensor *pw1 = yt_sub_scalar(pos_weight, yt_int(1));
        yt_tensor *pt = yt_mul(pw1, target);
        yt_tensor *lw = yt_add_scalar(pt, yt_int(1));
        scaled = yt_mul(lw, sp);
        yt_release(pw1);
        yt_release(pt);
        yt_release(lw);
    } else {
        scaled = yt_retain(sp);
    }
    yt_tensor *loss = yt_add(lin, scaled);
    yt_release(one_minus_t);
    yt_release(lin);
    yt_release(nx);
    yt_release(sp);
    yt_release(scaled);
    return yt__reduce_loss(times_weight(loss, weight), yt__reduction_code(reduction));
}

/* ---------------------------------------------------------------- class losses */

/* log_softmax over `dim` in public ops: x - m - log(sum(exp(x - m))), with the row max m
 * detached (the result does not depend on it, and its gradient would be noise). */
static yt_tensor *
log_softmax_of(yt_tensor *x, int64_t dim)
{
    yt_tensor *m = yt_amax_ex(x, &dim, 1, true);
    yt_tensor *md = yt_detach(m);
    yt_tensor *z = yt_sub(x, md);
    yt_tensor *e = yt_exp(z);
    yt_tensor *se = yt_sum_dim_ex(e, &dim, 1, true, YT_DTYPE_NONE);
    yt_tensor *lse = yt_log(se);
    yt_tensor *r = yt_sub(z, lse);
    yt_release(m);
    yt_release(md);
    yt_release(z);
    yt_release(e);
    yt_release(se);
    yt_release(lse);
    return r;
}

/* -sum_c K[row, c] self[row, c] with the constant coefficients K (class weights at the target
 * class, zero on ignored rows); the mean divides by the summed weights of the rows that count
 * (0 / 0 = NaN when none do, as PyTorch). */
yt_tensor *
yt__composite_nll_loss(yt_tensor *self, yt_tensor *target, yt_tensor *weight, const char *reduction,
                       int64_t ignore_index)
{
    double total = 0.0;
    yt_tensor *k =
        yt__class_coefficients(self, target, weight, ignore_index, 0.0, &total, "nll_loss");
    if (k == NULL)
        return NULL;
    int64_t cdim = self->dim == 1 ? 0 : 1;
    yt_tensor *prod = yt_mul(self, k);
    yt_tensor *rows = yt_sum_dim(prod, &cdim, 1);
    yt_tensor *loss = yt_neg(rows);
    yt_release(k);
    yt_release(prod);
    yt_release(rows);
    int red = yt__reduction_code(reduction);
    if (red != YT__REDUCTION_MEAN)
        return yt__reduce_loss(loss, red);
    yt_tensor *sum = yt_sum(loss);
    yt_tensor *r = yt_div_scalar(sum, yt_float(total));
    yt_release(loss);
    yt_release(sum);
    return r;
}

/* Class probabilities (PyTorch's cross_entropy_loss_prob_target): -sum_c w_c t'_c log_softmax(x)_c
 * with t' = (1 - ls) t + ls / C; the mean divides by the number of rows (NaN when there are
 * none). */
static yt_tensor *
cross_entropy_probs(yt_tensor *self, yt_tensor *target, yt_tensor *weight, int reduction,
                    int64_t ignore_index, double ls)
{
    const char *op = "cross_entropy_loss";
    char a[YT__SIZES_BUF];
    if (!yt_dtype_is_floating(target->dtype))
        return yt__fail(YT_ERR_DTYPE,
                        "%s: a target shaped like self holds class probabilities and must be "
                        "floating, got %s",
                        op, yt_dtype_name(target->dtype));
    if (ignore_index >= 0)
        return yt__fail(YT_ERR_VALUE,
                        "%s: ignore_index=%lld is not supported for class-probability targets", op,
                        (long long)ignore_index);
    int64_t cdim = self->dim == 1 ? 0 : 1, c = self->sizes[cdim];
    if (weight != NULL && (weight->dim != 1 || weight->sizes[0] != c))
        return yt__fail(YT_ERR_SHAPE, "%s: weight must be 1-D with %lld elements, got shape %s", op,
                        (long long)c, yt__format_sizes(a, sizeof a, weight->sizes, weight->dim));
    yt_tensor *logp = log_softmax_of(self, cdim);
    yt_tensor *t = ls > 0.0 ? yt_mul_scalar(target, yt_float(1.0 - ls)) : yt_retain(target);
    if (ls > 0.0) {
        yt_tensor *t2 = yt_add_scalar(t, yt_float(ls / (double)c));
        yt_release(t);
        t = t2;
    }
    yt_tensor *prod = yt_mul(logp, t);
    if (weight != NULL) {
        /* weight along the class dim: (C) for 1-D self, else (C, 1, ..., 1) */
        int64_t wshape[YT_MAX_DIM];
        int wd = self->dim - (int)cdim;
        wshape[0] = c;
        for (int i = 1; i < wd; i++)
            wshape[i] = 1;
        yt_tensor *wv = yt_view(weight, wshape, wd);
        prod = times_weight(prod, wv);
        yt_release(wv);
    }
    yt_tensor *rows = yt_sum_dim(prod, &cdim, 1);
    yt_tensor *loss = yt_neg(rows);
    yt_release(logp);
    yt_release(t);
    yt_release(prod);
    yt_release(rows);
    if (reduction != YT__REDUCTION_MEAN || loss == NULL)
        return yt__reduce_loss(loss, reduction);
    /* numel / C rows; an empty input (or C = 0) divides 0 by 0 */
    double n_rows = self->numel > 0 ? (double)(self->numel / c) : 0.0;
    yt_tensor *sum = yt_sum(loss);
    yt_tensor *r = yt_div_scalar(sum, yt_float(n_rows));
    yt_release(loss);
    yt_release(sum);
    return r;
}

/* PyTorch's dispatch: a target of self's shape holds class probabilities, any other shape class
 * indices (the fused kernel). */
yt_tensor *
yt__composite_cross_entropy_loss(yt_tensor *self, yt_tensor *target, yt_tensor *weight,
                                 const char *reduction, int64_t ignore_index,
                                 double label_smoothing)
{
    if (!(label_smoothing >= 0.0 && label_smoothing <= 1.0))
        return yt__fail(YT_ERR_VALUE,
                        "cross_entropy_loss: label_smoothing must be in [0, 1], got %g",
                        label_smoothing);
    if (same_shape(self, target))
        return cross_entropy_probs(self, target, weight, yt__reduction_code(reduction),
                                   ignore_index, label_smoothing);
    /* Class indices go to the fused kernel, whose errors are renamed; but a floating target of
     * the wrong shape would be refused there for its dtype. */
    char a[YT__SIZES_BUF], b[YT__SIZES_BUF];
    if (yt_dtype_is_floating(target->dtype))
        return yt__fail(YT_ERR_SHAPE,
                        "cross_entropy_loss: a floating target holds class probabilities and "
                        "must have self's shape %s, got %s (class indices must be integers)",
                        yt__format_sizes(a, sizeof a, self->sizes, self->dim),
                        yt__format_sizes(b, sizeof b, target->sizes, target->dim));
    int64_t c = self->dim == 0 ? 0 : self->dim == 1 ? self->sizes[0] : self->sizes[1];
    if (self->dim > 0 && weight != NULL && (weight->dim != 1 || weight->sizes[0] != c))
        return yt__fail(YT_ERR_SHAPE,
                        "cross_entropy_loss: weight must be 1-D with %lld elements (one per "
                        "class), got shape %s",
                        (long long)c, yt__format_sizes(a, sizeof a, weight->sizes, weight->dim));
    /* class indices: PyTorch's nll_loss_forward refuses the weight (cross_entropy_index would too,
     * under its own name) */
    if (weight != NULL && yt_grad_enabled() && yt_requires_grad(weight))
        return yt__fail(YT_ERR_VALUE,
                        "cross_entropy_loss: weight requires grad, but cross_entropy_loss is not "
                        "differentiable with respect to weight with class-index targets");
    yt_tensor *loss =
        yt_cross_entropy_index_ex(self, target, weight, reduction, ignore_index, label_smoothing);
    if (loss == NULL) /* its errors, about the same arguments, are this op's */
        yt__error_rename("cross_entropy_index", "cross_entropy_loss");
    return loss;
}

/* Gradient of the fused cross_entropy_index: g * (A p - K), with K the class coefficients, A its
 * sum over classes, p = softmax(self) and g the (unsqueezed, and for the mean divided)
 * grad_output. Written in public ops, so it is differentiable in grad_output and self. */
yt_tensor *
yt__composite_cross_entropy_index_backward(yt_tensor *grad_output, yt_tensor *self,
                                           yt_tensor *target, yt_tensor *weight,
                                           const char *reduction, int64_t ignore_index,
                                           double label_smoothing)
{
    const char *op = "cross_entropy_index_backward";
    if (!yt_grad_enabled() || (!yt_requires_grad(grad_output) && !yt_requires_grad(self)))
        /* nothing to record (the usual backward): the same values from one kernel */
        return yt__cross_entropy_index_grad(grad_output, self, target, weight, reduction,
                                            ignore_index, label_smoothing);
    double total = 0.0;
    yt_tensor *k =
        yt__class_coefficients(self, target, weight, ignore_index, label_smoothing, &total, op);
    if (k == NULL)
        return NULL;
    int red = yt__reduction_code(reduction);
    int64_t cdim = self->dim == 1 ? 0 : 1;
    yt_tensor *a = yt_sum_dim_ex(k, &cdim, 1, true, YT_DTYPE_NONE);
    yt_tensor *logp = log_softmax_of(self, cdim);
    yt_tensor *p = yt_exp(logp);
    yt_tensor *ap = yt_mul(a, p);
    yt_tensor *diff = yt_sub(ap, k);
    yt_tensor *g;
    if (red == YT__REDUCTION_NONE)
        g = self->dim == 1 ? yt_retain(grad_output) : yt_unsqueeze(grad_output, cdim);
    else if (red == YT__REDUCTION_MEAN)
        g = yt_div_scalar(grad_output, yt_float(total));
    else
        g = yt_retain(grad_output);
    yt_tensor *r = yt_mul(diff, g);
    yt_release(k);
    yt_release(a);
    yt_release(logp);
    yt_release(p);
    yt_release(ap);
    yt_release(diff);
    yt_release(g);
    return r;
}
