/* native_layer_norm on the CPU: the rows are the leading dims of `input`, each normalised over
 * the trailing `normalized_shape` (norm_rows.c does the work). */
#include <stdio.h>

#include "norm.h"

/* Checks that `t` (weight or bias, may be NULL) has exactly the shape `normalized_shape`. */
static yt_status
check_affine(const yt_tensor *t, const char *arg, const int64_t *ns, int n)
{
    if (t == NULL)
        return YT_OK;
    bool same = t->dim == n;
    for (int i = 0; same && i < n; i++)
        same = t->sizes[i] == ns[i];
    if (same)
        return YT_OK;
    char have[YT__SIZES_BUF], want[YT__SIZES_BUF];
    return yt__fail_status(YT_ERR_SHAPE,
                           "native_layer_norm: %s has shape %s, expected normalized_shape %s", arg,
                           yt__format_sizes(have, sizeof have, t->sizes, t->dim),
                           yt__format_sizes(want, sizeof want, ns, n));
}

yt_status
yt__cpu_native_layer_norm(yt_tensor *out, yt_tensor *mean, yt_tensor *rstd, yt_tensor *input,
                          const int64_t *normalized_shape, int normalized_shape_len,
                          yt_tensor *weight, yt_tensor *bias, double eps)
{
    const int n = normalized_shape_len, axis = input->dim - n;
    char have[YT__SIZES_BUF], want[YT__SIZES_BUF];
    if (n < 1)
        return yt__fail_status(YT_ERR_VALUE,
                               "native_layer_norm: normalized_shape must have at least 1 entry");
    bool match = axis >= 0;
    for (int i = 0; match && i < n; i++)
        match = input->sizes[axis + i] == normalized_shape[i];
    if (!match)
        return yt__fail_status(
            YT_ERR_SHAPE,
            "native_layer_norm: normalized_shape %s does not match the trailing dims of input of "
            "shape %s",
            yt__format_sizes(want, sizeof want, normalized_shape, n),
            yt__format_sizes(have, sizeof have, input->sizes, input->dim));
    if (check_affine(weight, "weight", normalized_shape, n) != YT_OK ||
        check_affine(bias, "bias", normalized_shape, n) != YT_OK)
        return yt__last_status();
    int64_t D = 1, M = 1;
    for (int i = 0; i < input->dim; i++)
        *(i < axis ? &M : &D) *= input->sizes[i];
    if (mean->numel != M || rstd->numel != M)
        return yt__fail_status(YT_ERR_INTERNAL,
                               "native_layer_norm: mean/rstd hold %lld/%lld, "
                               "expected %lld values",
                               (long long)mean->numel, (long long)rstd->numel, (long long)M);
    yt__rownorm p = {M, D, 1, 1, eps, true};
    return yt__rownorm_forward(out, mean, rstd, input, weight, bias, &p);
}
