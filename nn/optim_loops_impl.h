/* Typed update loops (optim_loops.c includes this once per dtype, with NT = float or double,
 * FN(name) giving each function a per-type name, FMA the fused multiply-add and SQRT the square
 * root of NT).
 *
 * Each loop is one pass over the parameter, its gradient and its buffers, in torch.optim's
 * single-tensor order and with its rounding: scalars are rounded to NT first (as a Python number
 * becomes the tensor's dtype), `x.add_(y, alpha=a)` is FMA(y, a, x), `x.addcmul_(y, z, value=s)`
 * is FMA(s * y, z, x), and `x.addcdiv_(y, z, value=s)` is x + (s * y) / z: what ATen's AVX2
 * kernels compute, so the results match PyTorch bit for bit on this machine.
 *
 * The loops take their option flags as arguments and are always inlined into a dispatcher that
 * passes constants: GCC does not vectorise a select on a loop-invariant flag, but it does
 * vectorise each copy once the flag is a constant and the select has folded away. */

/* SGD. The momentum buffer starts as clone(d_p): a fresh (zero-filled) buffer is updated with
 * buf_scale = 0 and d_scale = 1, i.e. 0 * 0 + d; later steps use momentum and 1 - dampening. */
YT_ALWAYS_INLINE void
FN(sgd_loop)(const sgd_consts *c, const yt__optim_update *u, bool decay, bool momentum,
             bool nesterov)
{
    NT *restrict p = u->param;
    const NT *restrict g = u->grad;
    NT *restrict buf = u->slot[0];
    const NT wd = (NT)c->weight_decay, mom = (NT)c->momentum, neg_lr = (NT)c->neg_lr,
             sign = c->maximize ? -1 : 1;
    const NT buf_scale = u->fresh[0] ? 0 : mom;
    const NT d_scale = u->fresh[0] ? 1 : (NT)c->one_minus_dampening;
    const int64_t n = u->n;
#pragma omp simd
    for (int64_t i = 0; i < n; i++) {
        NT d = sign * g[i];
        if (decay)
            d = FMA(p[i], wd, d);
        if (momentum) {
            const NT b = FMA(d, d_scale, buf[i] * buf_scale);
            buf[i] = b;
            d = nesterov ? FMA(b, mom, d) : b;
        }
        p[i] = FMA(d, neg_lr, p[i]);
    }
}

static void
FN(sgd)(const sgd_consts *c, const yt__optim_update *u)
{
    const bool decay = c->weight_decay != 0;
    if (u->slot[0] == NULL) {
        if (decay)
            FN(sgd_loop)(c, u, true, false, false);
        else
            FN(sgd_loop)(c, u, false, false, false);
    } else if (c->nesterov) {
        if (decay)
            FN(sgd_loop)(c, u, true, true, true);
        else
            FN(sgd_loop)(c, u, false, true, true);
    } else {
        if (decay)
            FN(sgd_loop)(c, u, true, true, false);
        else
            FN(sgd_loop)(c, u, false, true, false);
    }
}

/* Adam and AdamW: AdamW decays the parameter first (param.mul_(1 - lr * weight_decay)); Adam
 * adds weight_decay * param to the gradient. */
YT_ALWAYS_INLINE void
FN(adam_loop)(const adam_consts *c, const yt__optim_update *u, bool l2, bool decoupled,
              bool amsgrad)
{
    NT *restrict p = u->param;
    const NT *restrict g = u->grad;
    NT *restrict m = u->slot[0];
    NT *restrict v = u->slot[1];
    NT *restrict vmax = u->slot[2];
    const NT wd = (NT)c->weight_decay, param_scale = (NT)c->param_scale, b1 = (NT)c->beta1,
             b2 = (NT)c->beta2, one_minus_b1 = (NT)c->one_minus_beta1,
             one_minus_b2 = (NT)c->one_minus_beta2, bc2_sqrt = (NT)c->bias_correction2_sqrt,
             eps = (NT)c->eps, neg_step = (NT)c->neg_step_size, sign = c->maximize ? -1 : 1;
    const int64_t n = u->n;
#pragma omp simd
    for (int64_t i = 0; i < n; i++) {
        NT gi = sign * g[i];
        if (l2)
            gi = FMA(p[i], wd, gi);
        NT pi = p[i];
        if (decoupled)
            pi = pi * param_scale;
        const NT mi = FMA(gi, one_minus_b1, m[i] * b1);
        const NT vi = FMA(one_minus_b2 * gi, gi, v[i] * b2);
        m[i] = mi;
        v[i] = vi;
        NT vhat = vi;
        if (amsgrad) { /* torch.maximum: NaN wins */
            const NT old = vmax[i];
            vhat = (old > vi || old != old) ? old : vi;
            vmax[i] = vhat;
        }
        const NT denom = SQRT(vhat) / bc2_sqrt + eps;
        p[i] = pi + (neg_step * mi) / denom;
    }
}

static void
FN(adam)(const adam_consts *c, const yt__optim_update *u)
{
    const bool l2 = c->l2 && c->weight_decay != 0, amsgrad = u->slot[2] != NULL;
    if (!c->l2) {
        if (amsgrad)
            FN(adam_loop)(c, u, false, true, true);
        else
            FN(adam_loop)(c, u, false, true, false);
    } else if (l2) {
        if (amsgrad)
            FN(adam_loop)(c, u, true, false, true);
        else
            FN(adam_loop)(c, u, true, false, false);
    } else {
        if (amsgrad)
            FN(adam_loop)(c, u, false, false, true);
        else
            FN(adam_loop)(c, u, false, false, false);
    }
}

YT_ALWAYS_INLINE void
FN(rmsprop_loop)(const rmsprop_consts *c, const yt__optim_update *u, bool decay, bool centered,
                 bool momentum)
{
    NT *restrict p = u->param;
    const NT *restrict g = u->grad;
    NT *restrict sq = u->slot[0];
    NT *restrict buf = u->slot[1];
    NT *restrict gavg = u->slot[2];
    const NT wd = (NT)c->weight_decay, alpha = (NT)c->alpha,
             one_minus_alpha = (NT)c->one_minus_alpha, eps = (NT)c->eps, mom = (NT)c->momentum,
             neg_lr = (NT)c->neg_lr, sign = c->maximize ? -1 : 1;
    const int64_t n = u->n;
#pragma omp simd
    for (int64_t i = 0; i < n; i++) {
        NT gi = sign * g[i];
        if (decay)
            gi = FMA(p[i], wd, gi);
        const NT s = FMA(one_minus_alpha * gi, gi, sq[i] * alpha);
        sq[i] = s;
        NT avg;
        if (centered) {
            const NT ga = FMA(gi, one_minus_alpha, gavg[i] * alpha);
            gavg[i] = ga;
            avg = SQRT(FMA(-ga, ga, s)); /* square_avg.addcmul(grad_avg, grad_avg, value=-1) */
        } else {
            avg = SQRT(s);
        }
        avg = avg + eps;
        if (momentum) {
            const NT b = buf[i] * mom + gi / avg; /* buf.mul_(momentum).addcdiv_(grad, avg) */
            buf[i] = b;
            p[i] = FMA(b, neg_lr, p[i]);
        } else {
            p[i] = p[i] + (neg_lr * gi) / avg;
        }
    }
}

static void
FN(rmsprop)(const rmsprop_consts *c, const yt__optim_update *u)
{
    const int flags =
        (c->weight_decay != 0) << 2 | (u->slot[2] != NULL) << 1 | (u->slot[1] != NULL);
    switch (flags) {
    case 0:
        FN(rmsprop_loop)(c, u, false, false, false);
        break;
    case 1:
        FN(rmsprop_loop)(c, u, false, false, true);
        break;
    case 2:
        FN(rmsprop_loop)(c, u, false, true, false);
        break;
    case 3:
        FN(rmsprop_loop)(c, u, false, true, true);
        break;
    case 4:
        FN(rmsprop_loop)(c, u, true, false, false);
        break;
    case 5:
        FN(rmsprop_loop)(c, u, true, false, true);
        break;
    case 6:
        FN(rmsprop_loop)(c, u, true, true, false);
        break;
    default:
        FN(rmsprop_loop)(c, u, true, true, true);
        break;
    }
}

YT_ALWAYS_INLINE void
FN(adagrad_loop)(const adagrad_consts *c, const yt__optim_update *u, bool decay)
{
    NT *restrict p = u->param;
    const NT *restrict g = u->grad;
    NT *restrict sum = u->slot[0];
    const NT wd = (NT)c->weight_decay, eps = (NT)c->eps, neg_clr = (NT)c->neg_clr,
             sign = c->maximize ? -1 : 1;
    const int64_t n = u->n;
#pragma omp simd
    for (int64_t i = 0; i < n; i++) {
        NT gi = sign * g[i];
        if (decay)
            gi = FMA(p[i], wd, gi);
        const NT s = FMA(gi, gi, sum[i]); /* state_sum.addcmul_(grad, grad, value=1) */
        sum[i] = s;
        const NT std = SQRT(s) + eps;
        p[i] = p[i] + (neg_clr * gi) / std;
    }
}

static void
FN(adagrad)(const adagrad_consts *c, const yt__optim_update *u)
{
    if (c->weight_decay != 0)
        FN(adagrad_loop)(c, u, true);
    else
        FN(adagrad_loop)(c, u, false);
}
