/* pad (constant, reflect, replicate), in public ops. pad lists (left, right) pairs from the last
 * dimension backwards, as in PyTorch. Constant padding writes self into zeros with slice_backward
 * (whose gradient is the slice back) and, for a non-zero value, fills the border with where; a
 * negative pad crops with narrow. Reflect and replicate read self through index_select with a
 * computed index along each padded dimension, so the gradient accumulates with index_add; a
 * negative pad there drops positions from the index, and the other side still reflects (or
 * repeats) self's own edge, as in PyTorch. */
#include <string.h>

#include "internal.h"
#include "kernels.h"

/* Pads (or crops) one dim with zeros; x's reference is consumed. */
static yt_tensor *
constant_dim(yt_tensor *x, int d, int64_t left, int64_t right)
{
    if (x == NULL)
        return NULL;
    int64_t n = yt_tensor_sizes(x)[d];
    if (left < 0 || right < 0) { /* crop first */
        int64_t lo = left < 0 ? -left : 0, hi = right < 0 ? -right : 0;
        yt_tensor *c = yt_narrow(x, d, lo, n - lo - hi);
        yt_release(x);
        x = c;
        if (x == NULL)
            return NULL;
        n -= lo + hi;
        left = left < 0 ? 0 : left;
        right = right < 0 ? 0 : right;
    }
    if (left == 0 && right == 0)
        return x;
    int64_t sizes[YT_MAX_DIM];
    memcpy(sizes, yt_tensor_sizes(x), sizeof(int64_t) * (size_t)yt_tensor_dim(x));
    sizes[d] = n + left + right;
    yt_tensor *p = yt_slice_backward(x, sizes, yt_tensor_dim(x), d, left, left + n, 1);
    yt_release(x);
    return p;
}

/* index_select along d with positions [-left, n + right) mapped into 0..n-1. */
static yt_tensor *
gather_dim(yt_tensor *x, int d, int64_t left, int64_t right, bool reflect)
{
    if (x == NULL)
        return NULL;
    int64_t n = yt_tensor_sizes(x)[d], m = n + left + right;
    yt_shape s = {.dim = 1, .sizes = {m}};
    yt_tensor *idx = yt__empty(&s, YT_DTYPE_I64, YT_DEVICE_CPU);
    if (idx == NULL) {
        yt_release(x);
        return NULL;
    }
    int64_t *iv = m > 0 ? (int64_t *)yt__data_ptr(idx) : NULL;
    for (int64_t i = 0; i < m; i++) {
        int64_t j = i - left;
        if (reflect)
            j = j < 0 ? -j : j >= n ? 2 * (n - 1) - j : j;
        else
            j = j < 0 ? 0 : j >= n ? n - 1 : j;
        iv[i] = j;
    }
    yt_tensor *r = yt_index_select(x, d, idx);
    yt_release(idx);
    yt_release(x);
    return r;
}

yt_tensor *
yt__composite_pad(yt_tensor *self, const int64_t *pad, int pad_len, const char *mode,
                  const double *value)
{
    int nd = yt_tensor_dim(self);
    const int64_t *sizes = yt_tensor_sizes(self);
    bool constant = strcmp(mode, "constant") == 0, reflect = strcmp(mode, "reflect") == 0;
    if (pad_len % 2 != 0)
        return yt__fail(YT_ERR_VALUE, "pad: pad has %d entries; it must hold (left, right) pairs",
                        pad_len);
    if (pad_len / 2 > nd)
        return yt__fail(YT_ERR_SHAPE, "pad: pad has %d pairs but self is only %d-D", pad_len / 2,
                        nd);
    if (!constant && value != NULL && *value != 0.0)
        return yt__fail(YT_ERR_VALUE, "pad: mode '%s' doesn't take a value (got %g)", mode, *value);
    for (int i = 0; i < pad_len / 2; i++) {
        int d = nd - 1 - i;
        int64_t l = pad[2 * i], r = pad[2 * i + 1], n = sizes[d], m;
        if (!yt__add_ok(&m, n, l) || !yt__add_ok(&m, m, r) || m < 0)
            return yt__fail(YT_ERR_VALUE,
                            "pad: padding (%lld, %lld) of dim %d (size %lld) gives a negative "
                            "or overflowing size",
                            (long long)l, (long long)r, d, (long long)n);
        /* a side may crop no more than the dim holds (the other side's growth does not make room
         * for it: pad (-2^63, 2^63 - 1) would crop 2^63 elements of a dim of 2) */
        if (l < -n || r < -n)
            return yt__fail(YT_ERR_VALUE,
                            "pad: padding (%lld, %lld) of dim %d crops more than its size %lld",
                            (long long)l, (long long)r, d, (long long)n);
        if (reflect && (l >= n || r >= n))
            return yt__fail(YT_ERR_VALUE,
                            "pad: reflect padding (%lld, %lld) must be less than the size %lld "
                            "of dim %d",
                            (long long)l, (long long)r, (long long)n, d);
        if (!constant && !reflect && n == 0 && (l > 0 || r > 0))
            return yt__fail(YT_ERR_VALUE, "pad: replicate padding of dim %d, which is empty", d);
    }
    /* The fill value is converted first, so that one that does not fit self's dtype is pad's
     * error (naming value) rather than the inner full's; a 0-D full can fail no other way but
     * out of memory. As in PyTorch, only a pad that adds a border needs the value. */
    bool grows = false;
    for (int i = 0; i < pad_len; i++)
        grows = grows || pad[i] > 0;
    yt_tensor *fill = NULL;
    if (constant && grows && value != NULL && *value != 0.0) {
        fill = yt_full_ex(NULL, 0, yt_float(*value), yt_tensor_dtype(self), yt_tensor_device(self));
        if (fill == NULL && yt_errcode() == YT_ERR_VALUE)
            return yt__fail(YT_ERR_VALUE,
                            "pad: value=%g cannot be converted to %s without overflow", *value,
                            yt_dtype_name(yt_tensor_dtype(self)));
        if (fill == NULL)
            return NULL;
    }
    yt_tensor *x = yt_retain(self);
    for (int i = 0; i < pad_len / 2 && x != NULL; i++) {
        int d = nd - 1 - i;
        if (constant)
            x = constant_dim(x, d, pad[2 * i], pad[2 * i + 1]);
        else if (pad[2 * i] != 0 || pad[2 * i + 1] != 0)
            x = gather_dim(x, d, pad[2 * i], pad[2 * i + 1], reflect);
    }
    if (x == self) { /* nothing padded: still a new tensor, as in PyTorch */
        yt_release(x);
        yt_release(fill);
        return yt_clone(self);
    }
    if (x == NULL || fill == NULL) {
        yt_release(fill);
        return x;
    }
    /* the border takes `value`: a mask of where self landed, padded the same way */
    yt_tensor *mask = yt_ones_ex(sizes, nd, YT_DTYPE_BOOL, yt_tensor_device(self));
    for (int i = 0; i < pad_len / 2 && mask != NULL; i++)
        mask = constant_dim(mask, nd - 1 - i, pad[2 * i], pad[2 * i + 1]);
    yt_tensor *result = mask == NULL || fill == NULL ? NULL : yt_where(mask, x, fill);
    yt_release(fill);
    yt_release(mask);
    yt_release(x);
    return result;
}
