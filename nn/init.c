/* Weight initialisation (torch.nn.init): in-place fills that autograd does not record, with
 * PyTorch's formulas for the fans, gains and bounds. */
#include <math.h>
#include <string.h>

#include "module_internal.h"

static yt_status
check_target(yt_tensor *t, const char *fn)
{
    if (t == NULL)
        return yt__null_status(fn, "t");
    if (!yt_dtype_is_floating(t->dtype))
        return yt__fail_status(YT_ERR_DTYPE, "%s: t is %s; initialisers fill floating tensors", fn,
                               yt_dtype_name(t->dtype));
    return YT_OK;
}

/* PyTorch's init functions run under no_grad: a parameter (a leaf requiring grad) may be filled
 * in place. */
static yt_status
fill_uniform(yt_tensor *t, double a, double b, yt_generator *gen)
{
    bool was = yt_set_grad_enabled(false);
    yt_status st = yt_uniform_ex_(t, a, b, gen);
    yt_set_grad_enabled(was);
    return st;
}

static yt_status
fill_normal(yt_tensor *t, double mean, double std, yt_generator *gen)
{
    bool was = yt_set_grad_enabled(false);
    yt_status st = yt_normal_ex_(t, mean, std, gen);
    yt_set_grad_enabled(was);
    return st;
}

yt_status
yt_init_uniform_(yt_tensor *t, double a, double b, yt_generator *gen)
{
    if (check_target(t, "init_uniform_") != YT_OK)
        return yt_errcode();
    if (!(a <= b) || !isfinite(a) || !isfinite(b))
        return yt__fail_status(YT_ERR_VALUE,
                               "init_uniform_: [a, b) = [%g, %g) is not a finite range", a, b);
    return fill_uniform(t, a, b, gen);
}

yt_status
yt_init_normal_(yt_tensor *t, double mean, double std, yt_generator *gen)
{
    if (check_target(t, "init_normal_") != YT_OK)
        return yt_errcode();
    if (!(std >= 0) || !isfinite(std) || !isfinite(mean))
        return yt__fail_status(
            YT_ERR_VALUE, "init_normal_: mean=%g, std=%g (std must be finite and >= 0)", mean, std);
    return fill_normal(t, mean, std, gen);
}

yt_status
yt_init_constant_(yt_tensor *t, double value)
{
    if (check_target(t, "init_constant_") != YT_OK)
        return yt_errcode();
    return yt__fill(t, value);
}

yt_status
yt_init_zeros_(yt_tensor *t)
{
    if (check_target(t, "init_zeros_") != YT_OK)
        return yt_errcode();
    return yt__fill(t, 0.0);
}

yt_status
yt_init_ones_(yt_tensor *t)
{
    if (check_target(t, "init_ones_") != YT_OK)
        return yt_errcode();
    return yt__fill(t, 1.0);
}

static yt_status
fans(yt_tensor *t, int64_t *fan_in, int64_t *fan_out, const char *fn)
{
    if (t->dim < 2)
        return yt__fail_status(YT_ERR_VALUE,
                               "%s: t is %d-D; fan in and fan out need at least 2 dimensions", fn,
                               t->dim);
    int64_t receptive = 1;
    for (int i = 2; i < t->dim; i++)
        receptive *= t->sizes[i];
    *fan_in = t->sizes[1] * receptive;
    *fan_out = t->sizes[0] * receptive;
    return YT_OK;
}

yt_status
yt_init_calculate_fans(yt_tensor *t, int64_t *fan_in, int64_t *fan_out)
{
    if (t == NULL)
        return yt__null_status("init_calculate_fans", "t");
    if (fan_in == NULL || fan_out == NULL)
        return yt__fail_status(YT_ERR_VALUE, "init_calculate_fans: %s is NULL",
                               fan_in == NULL ? "fan_in" : "fan_out");
    return fans(t, fan_in, fan_out, "init_calculate_fans");
}

double
yt_init_calculate_gain(const char *nonlinearity, double param)
{
    static const char *const unit[] = {"linear",           "conv1d",           "conv2d",
                                       "conv3d",           "conv_transpose1d", "conv_transpose2d",
                                       "conv_transpose3d", "sigmoid"};
    if (nonlinearity == NULL) {
        yt__fail(YT_ERR_VALUE, "init_calculate_gain: nonlinearity is NULL");
        return NAN;
    }
    for (size_t i = 0; i < sizeof unit / sizeof unit[0]; i++)
        if (strcmp(nonlinearity, unit[i]) == 0)
            return 1.0;
    if (strcmp(nonlinearity, "tanh") == 0)
        return 5.0 / 3.0;
    if (strcmp(nonlinearity, "relu") == 0)
        return sqrt(2.0);
    if (strcmp(nonlinearity, "leaky_relu") == 0) {
        if (!isfinite(param)) {
            yt__fail(YT_ERR_VALUE, "init_calculate_gain: negative_slope=%g is not finite", param);
            return NAN;
        }
        return sqrt(2.0 / (1.0 + param * param));
    }
    if (strcmp(nonlinearity, "selu") == 0)
        return 3.0 / 4.0;
    yt__fail(YT_ERR_VALUE,
             "init_calculate_gain: unsupported nonlinearity '%s' (known: linear, conv1d, conv2d, "
             "conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d, sigmoid, tanh, relu, "
             "leaky_relu, selu)",
             nonlinearity);
    return NAN;
}

/* The standard deviation kaiming_* aim for: gain / sqrt(fan). *skip is set for zero-element
 * tensors, which PyTorch leaves alone. */
static yt_status
kaiming_std(yt_tensor *t, double a, const char *mode, const char *nonlinearity, const char *fn,
            double *std, bool *skip)
{
    if (check_target(t, fn) != YT_OK)
        return yt_errcode();
    const char *m = mode != NULL ? mode : "fan_in";
    bool fan_in_mode = strcmp(m, "fan_in") == 0;
    if (!fan_in_mode && strcmp(m, "fan_out") != 0)
        return yt__fail_status(YT_ERR_VALUE, "%s: mode='%s' is not 'fan_in' or 'fan_out'", fn, m);
    int64_t fan_in = 0, fan_out = 0;
    if (fans(t, &fan_in, &fan_out, fn) != YT_OK)
        return yt_errcode();
    *skip = t->numel == 0;
    if (*skip)
        return YT_OK;
    double gain = yt_init_calculate_gain(nonlinearity != NULL ? nonlinearity : "leaky_relu", a);
    if (isnan(gain))
        return yt__fail_status(YT_ERR_VALUE, "%s: %s", fn, yt_errmsg());
    *std = gain / sqrt((double)(fan_in_mode ? fan_in : fan_out));
    return YT_OK;
}

yt_status
yt_init_kaiming_uniform_(yt_tensor *t, double a, const char *mode, const char *nonlinearity,
                         yt_generator *gen)
{
    double std = 0;
    bool skip = false;
    if (kaiming_std(t, a, mode, nonlinearity, "init_kaiming_uniform_", &std, &skip) != YT_OK)
        return yt_errcode();
    if (skip)
        return YT_OK;
    double bound = sqrt(3.0) * std;
    return fill_uniform(t, -bound, bound, gen);
}

yt_status
yt_init_kaiming_normal_(yt_tensor *t, double a, const char *mode, const char *nonlinearity,
                        yt_generator *gen)
{
    double std = 0;
    bool skip = false;
    if (kaiming_std(t, a, mode, nonlinearity, "init_kaiming_normal_", &std, &skip) != YT_OK)
        return yt_errcode();
    return skip ? YT_OK : fill_normal(t, 0.0, std, gen);
}

static yt_status
xavier_std(yt_tensor *t, double gain, const char *fn, double *std)
{
    if (check_target(t, fn) != YT_OK)
        return yt_errcode();
    if (!isfinite(gain))
        return yt__fail_status(YT_ERR_VALUE, "%s: gain=%g is not finite", fn, gain);
    int64_t fan_in = 0, fan_out = 0;
    if (fans(t, &fan_in, &fan_out, fn) != YT_OK)
        return yt_errcode();
    *std = fan_in + fan_out > 0 ? gain * sqrt(2.0 / (double)(fan_in + fan_out)) : 0.0;
    return YT_OK;
}

yt_status
yt_init_xavier_uniform_(yt_tensor *t, double gain, yt_generator *gen)
{
    double std = 0;
    if (xavier_std(t, gain, "init_xavier_uniform_", &std) != YT_OK)
        return yt_errcode();
    double a = sqrt(3.0) * std;
    return fill_uniform(t, -a, a, gen);
}

yt_status
yt_init_xavier_normal_(yt_tensor *t, double gain, yt_generator *gen)
{
    double std = 0;
    if (xavier_std(t, gain, "init_xavier_normal_", &std) != YT_OK)
        return yt_errcode();
    return fill_normal(t, 0.0, std, gen);
}

yt_status
yt__init_affine_default(yt_tensor *weight, yt_tensor *bias)
{
    if (yt_init_kaiming_uniform_(weight, sqrt(5.0), "fan_in", "leaky_relu", NULL) != YT_OK)
        return yt_errcode();
    if (bias == NULL)
        return YT_OK;
    int64_t fan_in = 0, fan_out = 0;
    if (fans(weight, &fan_in, &fan_out, "init") != YT_OK)
        return yt_errcode();
    double bound = fan_in > 0 ? 1.0 / sqrt((double)fan_in) : 0.0;
    return fill_uniform(bias, -bound, bound, NULL);
}
