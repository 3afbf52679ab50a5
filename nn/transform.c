/* Per-sample transforms (normalize, random crop, random horizontal flip), applied by the loading
 * thread to each f32 input sample. The random choices for the sample of dataset index i come from
 * Philox block (i * 16 + k) under the epoch's transform key, k being the transform's position:
 * they depend on (seed, epoch, i) only, never on which thread loads the sample or when. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "loader_internal.h"

yt_transform
yt_transform_normalize(const double *mean, const double *std, int n_channels)
{
    yt_transform t = {.kind = YT_TRANSFORM_NORMALIZE};
    t.mean = mean;
    t.std = std;
    t.n_channels = n_channels;
    return t;
}

yt_transform
yt_transform_random_crop(int64_t height, int64_t width, int64_t padding)
{
    yt_transform t = {.kind = YT_TRANSFORM_RANDOM_CROP};
    t.size[0] = height;
    t.size[1] = width;
    t.padding = padding;
    return t;
}

yt_transform
yt_transform_random_horizontal_flip(double p)
{
    yt_transform t = {.kind = YT_TRANSFORM_RANDOM_HORIZONTAL_FLIP};
    t.p = p;
    return t;
}

static const char *
kind_name(yt_transform_kind kind)
{
    switch (kind) {
    case YT_TRANSFORM_NORMALIZE:
        return "normalize";
    case YT_TRANSFORM_RANDOM_CROP:
        return "random_crop";
    case YT_TRANSFORM_RANDOM_HORIZONTAL_FLIP:
        return "random_horizontal_flip";
    }
    return "?";
}

static yt_status
init_normalize(yt__transform_step *s, const char *op, int k, const yt_transform *t)
{
    if (t->mean == NULL || t->std == NULL)
        return yt__fail_status(YT_ERR_VALUE, "%s: transforms[%d] (normalize): %s is NULL", op, k,
                               t->mean == NULL ? "mean" : "std");
    if (t->n_channels != 1 && t->n_channels != s->c)
        return yt__fail_status(YT_ERR_VALUE,
                               "%s: transforms[%d] (normalize): n_channels=%d, but the samples "
                               "have %lld channels (give 1 value or %lld)",
                               op, k, t->n_channels, (long long)s->c, (long long)s->c);
    s->mean = malloc(sizeof(float) * (size_t)s->c);
    s->std = malloc(sizeof(float) * (size_t)s->c);
    if (s->mean == NULL || s->std == NULL)
        return yt__fail_status(YT_ERR_NOMEM, "%s: out of memory", op);
    for (int64_t c = 0; c < s->c; c++) {
        int64_t i = t->n_channels == 1 ? 0 : c;
        /* torchvision converts mean and std to the sample's dtype before subtracting. */
        s->mean[c] = (float)t->mean[i];
        s->std[c] = (float)t->std[i];
        if (!isfinite(t->mean[i]) || !isfinite(t->std[i]) || s->std[c] == 0.0f)
            return yt__fail_status(YT_ERR_VALUE,
                                   "%s: transforms[%d] (normalize): mean[%lld]=%g, std[%lld]=%g: "
                                   "both must be finite and std non-zero",
                                   op, k, (long long)i, t->mean[i], (long long)i, t->std[i]);
    }
    return YT_OK;
}

static yt_status
init_step(yt__transform_step *s, const char *op, int k, const yt_transform *t, int ndim)
{
    s->kind = t->kind;
    s->out_h = s->h;
    s->out_w = s->w;
    switch (t->kind) {
    case YT_TRANSFORM_NORMALIZE:
        return init_normalize(s, op, k, t);
    case YT_TRANSFORM_RANDOM_CROP:
        if (ndim != 2 && ndim != 3)
            return yt__fail_status(YT_ERR_VALUE,
                                   "%s: transforms[%d] (random_crop): samples must be [C, H, W] "
                                   "or [H, W], got %d-D",
                                   op, k, ndim);
        if (t->padding < 0 || t->padding > (int64_t)1 << 20)
            return yt__fail_status(YT_ERR_VALUE,
                                   "%s: transforms[%d] (random_crop): padding=%lld is out of "
                                   "range 0..1048576",
                                   op, k, (long long)t->padding);
        for (int i = 0; i < 2; i++) {
            int64_t avail = (i == 0 ? s->h : s->w) + 2 * t->padding;
            if (t->size[i] < 1 || t->size[i] > avail)
                return yt__fail_status(YT_ERR_VALUE,
                                       "%s: transforms[%d] (random_crop): size[%d]=%lld must be in "
                                       "1..%lld (the padded %s)",
                                       op, k, i, (long long)t->size[i], (long long)avail,
                                       i == 0 ? "height" : "width");
        }
        s->padding = t->padding;
        s->out_h = t->size[0];
        s->out_w = t->size[1];
        return YT_OK;
    case YT_TRANSFORM_RANDOM_HORIZONTAL_FLIP:
        if (ndim != 2 && ndim != 3)
            return yt__fail_status(YT_ERR_VALUE,
                                   "%s: transforms[%d] (random_horizontal_flip): samples must be "
                                   "[C, H, W] or [H, W], got %d-D",
                                   op, k, ndim);
        if (!(t->p >= 0.0 && t->p <= 1.0))
            return yt__fail_status(YT_ERR_VALUE,
                                   "%s: transforms[%d] (random_horizontal_flip): p=%g is out of "
                                   "range [0, 1]",
                                   op, k, t->p);
        s->p = t->p;
        return YT_OK;
    }
    return yt__fail_status(YT_ERR_VALUE, "%s: transforms[%d]: unknown kind %d", op, k,
                           (int)t->kind);
}

yt_status
yt__transform_plan_init(yt__transform_plan *plan, const char *op, const yt_transform *ts, int n,
                        const yt_dataset *d)
{
    memset(plan, 0, sizeof *plan);
    plan->out_ndim = d->input_ndim;
    memcpy(plan->out_shape, d->input_shape, sizeof plan->out_shape);
    plan->in_numel = plan->out_numel = plan->max_numel = d->input_numel;
    if (n == 0)
        return YT_OK;
    if (ts == NULL)
        return yt__fail_status(YT_ERR_VALUE, "%s: transforms is NULL but n_transforms=%d", op, n);
    if (n < 0 || n > YT__MAX_TRANSFORMS)
        return yt__fail_status(YT_ERR_VALUE, "%s: n_transforms=%d is out of range 0..%d", op, n,
                               YT__MAX_TRANSFORMS);
    if (d->input_dtype != YT_DTYPE_F32)
        return yt__fail_status(YT_ERR_DTYPE,
                               "%s: transforms need f32 samples, but dataset '%s' gives %s", op,
                               d->kind->name, yt_dtype_name(d->input_dtype));
    int ndim = d->input_ndim;
    if (ndim < 1 || ndim > 3)
        return yt__fail_status(YT_ERR_VALUE,
                               "%s: transforms need samples of 1 to 3 dims ([F], [H, W] or "
                               "[C, H, W]), but dataset '%s' gives %d-D samples",
                               op, d->kind->name, ndim);
    /* [F] is F channels of one element; [H, W] one channel. */
    int64_t c = ndim == 3 ? d->input_shape[0] : ndim == 2 ? 1 : d->input_shape[0];
    int64_t h = ndim == 1 ? 1 : d->input_shape[ndim - 2];
    int64_t w = ndim == 1 ? 1 : d->input_shape[ndim - 1];
    for (int k = 0; k < n; k++) {
        yt__transform_step *s = &plan->steps[k];
        plan->n = k + 1; /* so that clear frees what init_step allocated */
        s->c = c;
        s->h = h;
        s->w = w;
        if (init_step(s, op, k, &ts[k], ndim) != YT_OK)
            return yt__last_status();
        h = s->out_h;
        w = s->out_w;
        int64_t numel;
        if (!yt__mul_ok(&numel, c * h, w))
            return yt__fail_status(YT_ERR_NOMEM, "%s: transforms[%d] (%s): sample size overflows",
                                   op, k, kind_name(s->kind));
        if (numel > plan->max_numel)
            plan->max_numel = numel;
        if (s->out_h != s->h || s->out_w != s->w)
            plan->changes_shape = true;
    }
    if (ndim >= 2) {
        plan->out_shape[ndim - 2] = h;
        plan->out_shape[ndim - 1] = w;
    }
    plan->out_numel = c * h * w;
    return YT_OK;
}

void
yt__transform_plan_clear(yt__transform_plan *plan)
{
    for (int k = 0; k < plan->n; k++) {
        free(plan->steps[k].mean);
        free(plan->steps[k].std);
    }
    plan->n = 0;
}

/* ---------------------------------------------------------------- applying */

static void
normalize(const yt__transform_step *s, float *x)
{
    int64_t plane = s->h * s->w;
    for (int64_t c = 0; c < s->c; c++) {
        float m = s->mean[c], sd = s->std[c];
        float *p = x + c * plane;
        /* Division, not a multiplication by 1/std: the same roundings as torchvision. */
        for (int64_t i = 0; i < plane; i++)
            p[i] = (p[i] - m) / sd;
    }
}

static void
flip(const yt__transform_step *s, float *x)
{
    for (int64_t row = 0; row < s->c * s->h; row++) {
        float *r = x + row * s->w;
        for (int64_t a = 0, b = s->w - 1; a < b; a++, b--) {
            float t = r[a];
            r[a] = r[b];
            r[b] = t;
        }
    }
}

/* The top-left corner (top, left) in padded coordinates picks the window; samples outside the
 * original image are the zero padding. */
static void
crop(const yt__transform_step *s, const float *in, float *out, int64_t top, int64_t left)
{
    int64_t y0 = top - s->padding, x0 = left - s->padding;
    for (int64_t c = 0; c < s->c; c++) {
        const float *src = in + c * s->h * s->w;
        float *dst = out + c * s->out_h * s->out_w;
        for (int64_t y = 0; y < s->out_h; y++) {
            float *d = dst + y * s->out_w;
            int64_t sy = y0 + y;
            if (sy < 0 || sy >= s->h) {
                memset(d, 0, sizeof(float) * (size_t)s->out_w);
                continue;
            }
            /* columns [lo, hi) of the window fall inside the image */
            int64_t lo = x0 < 0 ? -x0 : 0;
            int64_t hi = s->w - x0 < s->out_w ? s->w - x0 : s->out_w;
            if (hi < lo)
                hi = lo;
            memset(d, 0, sizeof(float) * (size_t)lo);
            memcpy(d + lo, src + sy * s->w + x0 + lo, sizeof(float) * (size_t)(hi - lo));
            memset(d + hi, 0, sizeof(float) * (size_t)(s->out_w - hi));
        }
    }
}

/* Uniform integer in 0..range-1 from 32 random bits by a multiply-shift; its bias (below
 * range / 2^32) is far under anything a crop position could show. */
static int64_t
uniform_below(uint32_t bits, int64_t range)
{
    return (int64_t)(((uint64_t)bits * (uint64_t)range) >> 32);
}

void
yt__transform_apply(const yt__transform_plan *plan, uint64_t key, int64_t index, float *in,
                    float *out, float *scratch)
{
    float *cur = in;
    for (int k = 0; k < plan->n; k++) {
        const yt__transform_step *s = &plan->steps[k];
        uint32_t r[4] = {0, 0, 0, 0};
        if (s->kind != YT_TRANSFORM_NORMALIZE)
            yt__philox(key, (uint64_t)index * YT__MAX_TRANSFORMS + (uint64_t)k, r);
        switch (s->kind) {
        case YT_TRANSFORM_NORMALIZE:
            normalize(s, cur);
            break;
        case YT_TRANSFORM_RANDOM_HORIZONTAL_FLIP:
            /* 24 random bits, as a float uniform in [0, 1) has */
            if ((double)(r[0] >> 8) * 0x1p-24 < s->p)
                flip(s, cur);
            break;
        case YT_TRANSFORM_RANDOM_CROP: {
            int64_t top = uniform_below(r[0], s->h + 2 * s->padding - s->out_h + 1);
            int64_t left = uniform_below(r[1], s->w + 2 * s->padding - s->out_w + 1);
            /* ping-pong between the two scratch halves, never writing over `cur` */
            float *dst = cur == scratch ? scratch + plan->max_numel : scratch;
            crop(s, cur, dst, top, left);
            cur = dst;
            break;
        }
        }
    }
    if (cur != out)
        memcpy(out, cur, sizeof(float) * (size_t)plan->out_numel);
}
