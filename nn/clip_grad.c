/* Gradient clipping (torch.nn.utils.clip_grad_norm_ and clip_grad_value_): in place on the
 * gradients autograd accumulated, outside autograd. The joint norm is accumulated in f64
 * whatever the gradients' dtype (PyTorch reduces in the gradients' dtype, so f32 norms agree to
 * rounding), then every gradient is scaled by the same coefficient. */
#include <math.h>
#include <stdlib.h>

#include "optim_internal.h"

/* A contiguous f32/f64 view of a gradient's values: the gradient itself, or an f64 copy that
 * write_back() copies into it afterwards (other dtypes, non-contiguous layouts). */
typedef struct grad_data {
    yt_tensor *grad;
    yt_tensor *work;
} grad_data;

static yt_status
open_grad(grad_data *gd, yt_tensor *grad)
{
    gd->grad = grad;
    gd->work = grad;
    if (grad->is_contiguous && (grad->dtype == YT_DTYPE_F32 || grad->dtype == YT_DTYPE_F64))
        return YT_OK;
    gd->work = yt__cast_copy(grad, YT_DTYPE_F64);
    return gd->work != NULL ? YT_OK : yt__last_status();
}

static yt_status
close_grad(grad_data *gd, bool modified)
{
    yt_status st = YT_OK;
    if (modified && gd->work != gd->grad)
        st = yt__copy_into(gd->grad, gd->work);
    if (modified)
        yt__bump_version(gd->grad);
    yt__release_cast(gd->work, gd->grad);
    return st;
}

/* Sum of |x|^p (p finite), or the largest |x| (p infinite; NaN wins, as torch.max). */
static double
norm_part(const yt_tensor *t, double p)
{
    const int64_t n = t->numel;
    double acc = 0.0;
    if (t->dtype == YT_DTYPE_F32) {
        const float *x = (const float *)yt__data_ptr(t);
        if (isinf(p)) {
            for (int64_t i = 0; i < n; i++) {
                double a = fabs((double)x[i]);
                acc = (a > acc || isnan(a)) && !isnan(acc) ? a : acc;
            }
        } else if (p == 2) {
#pragma omp simd reduction(+ : acc)
            for (int64_t i = 0; i < n; i++)
                acc += (double)x[i] * (double)x[i];
        } else if (p == 1) {
#pragma omp simd reduction(+ : acc)
            for (int64_t i = 0; i < n; i++)
                acc += fabs((double)x[i]);
        } else {
            for (int64_t i = 0; i < n; i++)
                acc += pow(fabs((double)x[i]), p);
        }
    } else {
        const double *x = (const double *)yt__data_ptr(t);
        if (isinf(p)) {
            for (int64_t i = 0; i < n; i++) {
                double a = fabs(x[i]);
                acc = (a > acc || isnan(a)) && !isnan(acc) ? a : acc;
            }
        } else if (p == 2) {
#pragma omp simd reduction(+ : acc)
            for (int64_t i = 0; i < n; i++)
                acc += x[i] * x[i];
        } else if (p == 1) {
#pragma omp simd reduction(+ : acc)
            for (int64_t i = 0; i < n; i++)
                acc += fabs(x[i]);
        } else {
            for (int64_t i = 0; i < n; i++)
                acc += pow(fabs(x[i]), p);
        }
    }
    return acc;
}

static void
scale(yt_tensor *t, double coef)
{
    const int64_t n = t->numel;
    if (t->dtype == YT_DTYPE_F32) {
        float *x = (float *)yt__data_ptr(t);
        const float c = (float)coef;
#pragma omp simd
        for (int64_t i = 0; i < n; i++)
            x[i] *= c;
    } else {
        double *x = (double *)yt__data_ptr(t);
#pragma omp simd
        for (int64_t i = 0; i < n; i++)
            x[i] *= coef;
    }
}

static yt_status
check_params(const yt_named_tensors *params, const char *fn)
{
    if (params == NULL)
        return yt__fail_status(YT_ERR_VALUE, "%s: params is NULL", fn);
    for (int64_t i = 0; i < params->count; i++) {
        const yt_tensor *g = params->tensors[i]->grad;
        if (g != NULL && g->device != YT_DEVICE_CPU)
            return yt__fail_status(YT_ERR_DEVICE, "%s: the gradient of '%s' is on %s", fn,
                                   params->names[i], yt_device_name(g->device));
    }
    return YT_OK;
}

yt_status
yt_clip_grad_norm(const yt_named_tensors *params, double max_norm, double norm_type,
                  double *total_norm)
{
    static const char fn[] = "clip_grad_norm";
    if (check_params(params, fn) != YT_OK)
        return yt__last_status();
    if (!(max_norm >= 0))
        return yt__optim_bad_option(fn, "max_norm", max_norm, ">= 0");
    if (!(norm_type > 0))
        return yt__optim_bad_option(fn, "norm_type", norm_type, "> 0 (or INFINITY)");
    grad_data *gds = calloc((size_t)params->count + 1, sizeof *gds);
    if (gds == NULL)
        return yt__fail_status(YT_ERR_NOMEM, "%s: out of memory", fn);
    yt_status st = YT_OK;
    int64_t n_open = 0;
    double acc = 0.0;
    bool all_f32 = true;
    for (int64_t i = 0; i < params->count && st == YT_OK; i++) {
        yt_tensor *grad = params->tensors[i]->grad;
        if (grad == NULL)
            continue;
        all_f32 = all_f32 && grad->dtype == YT_DTYPE_F32;
        st = open_grad(&gds[n_open], grad);
        if (st != YT_OK)
            break;
        double part = norm_part(gds[n_open++].work, norm_type);
        if (isinf(norm_type))
            acc = (part > acc || isnan(part)) && !isnan(acc) ? part : acc;
        else
            acc += part;
    }
    double total = isinf(norm_type) || norm_type == 1 ? acc
                   : norm_type == 2                   ? sqrt(acc)
                                                      : pow(acc, 1.0 / norm_type);
    if (n_open == 0)
        total = 0.0;
    /* clip_coef = max_norm / (total_norm + 1e-6), clamped to 1 (NaN stays NaN, as torch.clamp),
     * computed like PyTorch in the gradients' dtype when they are all f32. */
    double coef;
    if (all_f32) {
        float c = (float)max_norm / ((float)total + 1e-6f);
        coef = c > 1.0f ? 1.0 : (double)c;
    } else {
        coef = max_norm / (total + 1e-6);
        if (coef > 1.0)
            coef = 1.0;
    }
    for (int64_t i = 0; i < n_open; i++) {
        if (st == YT_OK)
            scale(gds[i].work, coef);
        yt_status cst = close_grad(&gds[i], st == YT_OK);
        if (st == YT_OK)
            st = cst;
    }
    free(gds);
    if (st == YT_OK && total_norm != NULL)
        *total_norm = total;
    return st;
}

static void
clamp(yt_tensor *t, double clip)
{
    const int64_t n = t->numel;
    if (t->dtype == YT_DTYPE_F32) {
        float *x = (float *)yt__data_ptr(t);
        const float hi = (float)clip, lo = -hi;
#pragma omp simd
        for (int64_t i = 0; i < n; i++)
            x[i] = x[i] < lo ? lo : x[i] > hi ? hi : x[i]; /* NaN stays NaN */
    } else {
        double *x = (double *)yt__data_ptr(t);
        const double hi = clip, lo = -hi;
#pragma omp simd
        for (int64_t i = 0; i < n; i++)
            x[i] = x[i] < lo ? lo : x[i] > hi ? hi : x[i];
    }
}

yt_status
yt_clip_grad_value(const yt_named_tensors *params, double clip)
{
    static const char fn[] = "clip_grad_value";
    if (check_params(params, fn) != YT_OK)
        return yt__last_status();
    if (!(clip >= 0))
        return yt__optim_bad_option(fn, "clip", clip, ">= 0");
    for (int64_t i = 0; i < params->count; i++) {
        yt_tensor *grad = params->tensors[i]->grad;
        if (grad == NULL)
            continue;
        grad_data gd;
        yt_status st = open_grad(&gd, grad);
        if (st != YT_OK)
            return st;
        clamp(gd.work, clip);
        st = close_grad(&gd, true);
        if (st != YT_OK)
            return st;
    }
    return YT_OK;
}
