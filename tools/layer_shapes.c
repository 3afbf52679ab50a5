/* Shape inference for the layer table (layers.c): the output shape of each layer kind from its
 * input's, the arguments it infers (`in`, `num_features`), and the messages for shapes that cannot
 * work, as PyTorch would fail on them at run time but said before anything runs. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "layer_shapes.h"

const char *
cli_shape_str(const cli_shape *s, char *buf, size_t cap)
{
    size_t used = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < s->ndim && used < cap; i++)
        used +=
            (size_t)snprintf(buf + used, cap - used, "%s%lld", i ? ", " : "", (long long)s->d[i]);
    if (used < cap)
        snprintf(buf + used, cap - used, "]");
    return buf;
}

static bool fail(char *err, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static bool
fail(char *err, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
    return false;
}

/* ---- shape helpers */

static const char *
plural(int64_t n)
{
    return n == 1 ? "" : "s";
}

/* "5" or "5x3" */
const char *
layer_pair_str(const int64_t *v, int n, char *buf, size_t cap)
{
    if (n == 1 || v[0] == v[1])
        snprintf(buf, cap, "%lld", (long long)v[0]);
    else
        snprintf(buf, cap, "%lldx%lld", (long long)v[0], (long long)v[1]);
    return buf;
}

/* An argument inferred from the input (`in`, `num_features`): set it, or check the given value. */
static bool
match_inferred(cfg_layer *l, const char *name, int64_t have, const char *unit, const char *src,
               char *err, size_t cap)
{
    layer_value *v = layer_value_of(l, name);
    if (v->given && v->i[0] != have)
        return fail(err, cap, "%s=%lld but %s gives %lld %s%s", name, (long long)v->i[0], src,
                    (long long)have, unit, plural(have));
    v->i[0] = have;
    v->n = 1;
    return true;
}

static bool
need_dims(const cli_shape *in, int ndim, const char *what, const char *src, char *err, size_t cap)
{
    if (in->ndim == ndim)
        return true;
    char s[96];
    return fail(err, cap, "expects a %s input, but %s gives %s", what, src,
                cli_shape_str(in, s, sizeof s));
}

/* Output length of a convolution or pooling window along one dimension, or -1 when the (dilated)
 * window does not fit in the padded input. */
static int64_t
window_out(int64_t n, int64_t k, int64_t stride, int64_t pad, int64_t dilation)
{
    int64_t span = dilation * (k - 1) + 1;
    if (n + 2 * pad < span)
        return -1;
    return (n + 2 * pad - span) / stride + 1;
}

/* Spatial output of a 1-D (nd=1) or 2-D window op over in->d[1..]: fills out->d[1..]. */
static bool
spatial(const cli_shape *in, int nd, const int64_t *k, const int64_t *stride, const int64_t *pad,
        const int64_t *dil, bool same, cli_shape *out, char *err, size_t cap)
{
    int64_t padded[2], o[2];
    for (int i = 0; i < nd; i++) {
        if (same) {
            o[i] = in->d[1 + i];
            continue;
        }
        padded[i] = in->d[1 + i] + 2 * pad[i];
        o[i] = window_out(in->d[1 + i], k[i], stride[i], pad[i], dil[i]);
        if (o[i] < 0) {
            char ks[48], ins[64], dils[48];
            layer_pair_str(k, nd, ks, sizeof ks);
            if (nd == 2)
                snprintf(ins, sizeof ins, "%lldx%lld", (long long)padded[0],
                         (long long)in->d[2] + 2 * pad[1]);
            else
                snprintf(ins, sizeof ins, "input of length %lld", (long long)padded[0]);
            bool dilated = dil[0] != 1 || (nd == 2 && dil[1] != 1);
            if (dilated)
                return fail(
                    err, cap, "kernel %s with dilation %s spans more than the %s%s (padded)", ks,
                    layer_pair_str(dil, nd, dils, sizeof dils), ins, nd == 2 ? " input" : "");
            return fail(err, cap, "kernel %s is larger than the %s%s (padded)", ks, ins,
                        nd == 2 ? " input" : "");
        }
    }
    out->ndim = in->ndim;
    out->d[0] = in->d[0];
    for (int i = 0; i < nd; i++)
        out->d[1 + i] = o[i];
    return true;
}

/* ---- infer functions */

bool
infer_identity(cfg_layer *l, const cli_shape *in, const char *src, cli_shape *out, char *err,
               size_t cap)
{
    (void)l, (void)src, (void)err, (void)cap;
    *out = *in;
    return true;
}

bool
infer_linear(cfg_layer *l, const cli_shape *in, const char *src, cli_shape *out, char *err,
             size_t cap)
{
    if (in->ndim < 1)
        return fail(err, cap, "expects at least a 1-D input, but %s gives a scalar", src);
    int64_t features = in->d[in->ndim - 1];
    layer_value *v = layer_value_of(l, "in");
    if (v->given && v->i[0] != features && in->ndim > 1) {
        char s[96];
        int64_t numel = 1;
        for (int i = 0; i < in->ndim; i++)
            numel *= in->d[i];
        if (numel == v->i[0])
            return fail(
                err, cap,
                "in=%lld but %s gives %s, whose last dimension has %lld feature%s; add a flatten layer before it",
                (long long)v->i[0], src, cli_shape_str(in, s, sizeof s), (long long)features,
                plural(features));
    }
    if (!match_inferred(l, "in", features, "feature", src, err, cap))
        return false;
    *out = *in;
    out->d[out->ndim - 1] = layer_int(l, "out");
    return true;
}

static bool
check_groups(cfg_layer *l, int64_t in_ch, char *err, size_t cap)
{
    int64_t groups = layer_int(l, "groups"), out_ch = layer_int(l, "out");
    if (in_ch % groups != 0 || out_ch % groups != 0)
        return fail(err, cap, "groups=%lld must divide both in=%lld and out=%lld",
                    (long long)groups, (long long)in_ch, (long long)out_ch);
    return true;
}

static bool
infer_conv(cfg_layer *l, const cli_shape *in, const char *src, cli_shape *out, char *err,
           size_t cap, int nd)
{
    if (!need_dims(in, nd + 1, nd == 2 ? "[channels, height, width]" : "[channels, length]", src,
                   err, cap))
        return false;
    if (!match_inferred(l, "in", in->d[0], "channel", src, err, cap) ||
        !check_groups(l, in->d[0], err, cap))
        return false;
    int n;
    const int64_t *k = layer_ints(l, "kernel", &n), *s = layer_ints(l, "stride", &n),
                  *d = layer_ints(l, "dilation", &n);
    const int64_t *p = layer_ints(l, "padding", &n);
    bool same = n < 0;
    if (same && (s[0] != 1 || (nd == 2 && s[1] != 1)))
        return fail(err, cap, "padding: same needs stride 1 (got stride %lld)", (long long)s[0]);
    static const int64_t zero[2] = {0, 0};
    if (!spatial(in, nd, k, s, same ? zero : p, d, same, out, err, cap))
        return false;
    out->d[0] = layer_int(l, "out");
    return true;
}

bool
infer_conv1d(cfg_layer *l, const cli_shape *in, const char *src, cli_shape *out, char *err,
             size_t cap)
{
    return infer_conv(l, in, src, out, err, cap, 1);
}

bool
infer_conv2d(cfg_layer *l, const cli_shape *in, const char *src, cli_shape *out, char *err,
             size_t cap)
{
    return infer_conv(l, in, src, out, err, cap, 2);
}

bool
infer_conv_transpose2d(cfg_layer *l, const cli_shape *in, const char *src, cli_shape *out,
                       char *err, size_t cap)
{
    if (!need_dims(in, 3, "[channels, height, width]", src, err, cap))
        return false;
    if (!match_inferred(l, "in", in->d[0], "channel", src, err, cap) ||
        !check_groups(l, in->d[0], err, cap))
        return false;
    int n;
    const int64_t *k = layer_ints(l, "kernel", &n), *s = layer_ints(l, "stride", &n),
                  *p = layer_ints(l, "padding", &n), *op = layer_ints(l, "output_padding", &n),
                  *d = layer_ints(l, "dilation", &n);
    out->ndim = 3;
    out->d[0] = layer_int(l, "out");
    for (int i = 0; i < 2; i++) {
        if (op[i] >= s[i] && op[i] >= d[i])
            return fail(err, cap,
                        "output_padding %lld must be smaller than stride %lld or dilation %lld",
                        (long long)op[i], (long long)s[i], (long long)d[i]);
        int64_t o = (in->d[1 + i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + op[i] + 1;
        if (o < 1)
            return fail(err, cap,
                        "padding %lld leaves an empty output (size %lld) from the %lldx%lld input",
                        (long long)p[i], (long long)o, (long long)in->d[1], (long long)in->d[2]);
        out->d[1 + i] = o;
    }
    return true;
}

bool
infer_pool2d(cfg_layer *l, const cli_shape *in, const char *src, cli_shape *out, char *err,
             size_t cap)
{
    if (!need_dims(in, 3, "[channels, height, width]", src, err, cap))
        return false;
    int n;
    const int64_t *k = layer_ints(l, "kernel", &n), *p = layer_ints(l, "padding", &n);
    layer_value *sv = layer_value_of(l, "stride");
    if (!sv->given) { /* PyTorch: stride defaults to the kernel size */
        sv->i[0] = k[0], sv->i[1] = k[1], sv->n = 2;
    }
    for (int i = 0; i < 2; i++)
        if (2 * p[i] > k[i]) {
            char ps[48], ks[48];
            return fail(err, cap, "padding %s must be at most half the kernel %s",
                        layer_pair_str(p, 2, ps, sizeof ps), layer_pair_str(k, 2, ks, sizeof ks));
        }
    static const int64_t one[2] = {1, 1};
    return spatial(in, 2, k, sv->i, p, one, false, out, err, cap);
}

bool
infer_adaptive_pool2d(cfg_layer *l, const cli_shape *in, const char *src, cli_shape *out, char *err,
                      size_t cap)
{
    if (!need_dims(in, 3, "[channels, height, width]", src, err, cap))
        return false;
    int n;
    const int64_t *o = layer_ints(l, "output", &n);
    *out = *in;
    out->d[1] = o[0];
    out->d[2] = o[1];
    return true;
}

static bool
infer_batch_norm(cfg_layer *l, const cli_shape *in, const char *src, cli_shape *out, char *err,
                 size_t cap, bool two_d)
{
    if (two_d ? !need_dims(in, 3, "[channels, height, width]", src, err, cap)
              : (in->ndim != 1 && in->ndim != 2)) {
        char s[96];
        if (!two_d)
            return fail(err, cap,
                        "expects a [features] or [channels, length] input, but %s gives %s", src,
                        cli_shape_str(in, s, sizeof s));
        return false;
    }
    if (!match_inferred(l, "num_features", in->d[0], in->ndim == 1 ? "feature" : "channel", src,
                        err, cap))
        return false;
    *out = *in;
    return true;
}

bool
infer_batch_norm1d(cfg_layer *l, const cli_shape *in, const char *src, cli_shape *out, char *err,
                   size_t cap)
{
    return infer_batch_norm(l, in, src, out, err, cap, false);
}

bool
infer_batch_norm2d(cfg_layer *l, const cli_shape *in, const char *src, cli_shape *out, char *err,
                   size_t cap)
{
    return infer_batch_norm(l, in, src, out, err, cap, true);
}

/* layer_norm / rms_norm: `shape` must equal the input's trailing dimensions; default: the last. */
bool
infer_trailing_norm(cfg_layer *l, const cli_shape *in, const char *src, cli_shape *out, char *err,
                    size_t cap)
{
    layer_value *v = layer_value_of(l, "shape");
    if (!v->given) {
        if (in->ndim < 1)
            return fail(err, cap, "expects at least a 1-D input, but %s gives a scalar", src);
        v->n = 1;
        v->i[0] = in->d[in->ndim - 1];
    }
    bool ok = v->n <= in->ndim;
    for (int i = 0; ok && i < v->n; i++)
        ok = v->i[i] == in->d[in->ndim - v->n + i];
    if (!ok) {
        cli_shape want = {.ndim = v->n};
        memcpy(want.d, v->i, sizeof(int64_t) * (size_t)v->n);
        char a[96], b[96];
        return fail(err, cap, "shape %s does not match the last dimensions of %s from %s",
                    cli_shape_str(&want, a, sizeof a), cli_shape_str(in, b, sizeof b), src);
    }
    *out = *in;
    return true;
}

bool
infer_group_norm(cfg_layer *l, const cli_shape *in, const char *src, cli_shape *out, char *err,
                 size_t cap)
{
    if (in->ndim < 1)
        return fail(err, cap, "expects a [channels, ...] input, but %s gives a scalar", src);
    if (!match_inferred(l, "channels", in->d[0], "channel", src, err, cap))
        return false;
    int64_t groups = layer_int(l, "groups");
    if (in->d[0] % groups != 0)
        return fail(err, cap, "groups=%lld does not divide the %lld channels", (long long)groups,
                    (long long)in->d[0]);
    *out = *in;
    return true;
}

/* Flatten's start/end count the batch dimension, as in PyTorch (start: 1 keeps the batch). */
bool
infer_flatten(cfg_layer *l, const cli_shape *in, const char *src, cli_shape *out, char *err,
              size_t cap)
{
    int full = in->ndim + 1;
    int64_t start = layer_int(l, "start"), end = layer_int(l, "end");
    int64_t s = start < 0 ? start + full : start, e = end < 0 ? end + full : end;
    char sh[96];
    if (s < 0 || s >= full || e < 0 || e >= full)
        return fail(
            err, cap,
            "start=%lld, end=%lld are out of range for %s from %s (with the batch dimension: %d dimensions)",
            (long long)start, (long long)end, cli_shape_str(in, sh, sizeof sh), src, full);
    if (s == 0)
        return fail(err, cap,
                    "start=%lld would merge the batch dimension into the features; use start: 1",
                    (long long)start);
    if (s > e)
        return fail(err, cap, "start=%lld comes after end=%lld", (long long)start, (long long)end);
    out->ndim = 0;
    out->integer = in->integer;
    for (int i = 1; i < s; i++)
        out->d[out->ndim++] = in->d[i - 1];
    int64_t prod = 1;
    for (int64_t i = s; i <= e; i++)
        prod *= in->d[i - 1];
    out->d[out->ndim++] = prod;
    for (int i = (int)e + 1; i < full; i++)
        out->d[out->ndim++] = in->d[i - 1];
    return true;
}

bool
infer_softmax(cfg_layer *l, const cli_shape *in, const char *src, cli_shape *out, char *err,
              size_t cap)
{
    int full = in->ndim + 1;
    int64_t dim = layer_int(l, "dim"), d = dim < 0 ? dim + full : dim;
    char sh[96];
    if (d < 0 || d >= full)
        return fail(
            err, cap,
            "dim=%lld is out of range for %s from %s (with the batch dimension: %d dimensions)",
            (long long)dim, cli_shape_str(in, sh, sizeof sh), src, full);
    if (d == 0)
        return fail(err, cap, "dim=%lld is the batch dimension; use dim: -1 (the features)",
                    (long long)dim);
    *out = *in;
    return true;
}

bool
infer_embedding(cfg_layer *l, const cli_shape *in, const char *src, cli_shape *out, char *err,
                size_t cap)
{
    if (!in->integer)
        return fail(err, cap, "expects integer indices, but %s gives floating-point values", src);
    if (in->ndim >= SHAPE_MAX_DIM)
        return fail(err, cap, "the input has too many dimensions (%d)", in->ndim);
    int64_t num = layer_int(l, "num");
    if (layer_given(l, "padding_idx") && layer_int(l, "padding_idx") >= num)
        return fail(err, cap, "padding_idx=%lld must be smaller than num=%lld",
                    (long long)layer_int(l, "padding_idx"), (long long)num);
    *out = *in;
    out->integer = false;
    out->d[out->ndim++] = layer_int(l, "dim");
    return true;
}

bool
infer_reshape(cfg_layer *l, const cli_shape *in, const char *src, cli_shape *out, char *err,
              size_t cap)
{
    int n;
    const int64_t *shape = layer_ints(l, "shape", &n);
    int64_t numel = 1, known = 1;
    int wild = -1;
    for (int i = 0; i < in->ndim; i++)
        numel *= in->d[i];
    for (int i = 0; i < n; i++) {
        if (shape[i] == -1) {
            if (wild >= 0)
                return fail(err, cap, "shape may hold -1 only once");
            wild = i;
        } else {
            known *= shape[i];
        }
    }
    cli_shape want = {.ndim = n, .integer = in->integer};
    memcpy(want.d, shape, sizeof(int64_t) * (size_t)n);
    char a[96], b[96];
    if (wild >= 0 ? numel % known != 0 : numel != known)
        return fail(err, cap, "shape %s does not hold the %lld elements of %s from %s",
                    cli_shape_str(&want, a, sizeof a), (long long)numel,
                    cli_shape_str(in, b, sizeof b), src);
    if (wild >= 0)
        want.d[wild] = numel / known;
    *out = want;
    return true;
}

bool
infer_transformer(cfg_layer *l, const cli_shape *in, const char *src, cli_shape *out, char *err,
                  size_t cap)
{
    if (!need_dims(in, 2, "[sequence, features]", src, err, cap))
        return false;
    if (!match_inferred(l, "d_model", in->d[1], "feature", src, err, cap))
        return false;
    int64_t heads = layer_int(l, "nhead");
    if (in->d[1] % heads != 0)
        return fail(err, cap, "d_model=%lld is not divisible by nhead=%lld", (long long)in->d[1],
                    (long long)heads);
    *out = *in;
    return true;
}

bool
layers_infer(yr_doc *d, cfg_layer *layers, int n, const cli_shape *input, cli_shape *output)
{
    cli_shape cur = *input;
    for (int i = 0; i < n; i++) {
        cfg_layer *l = &layers[i];
        char src[96], err[384];
        if (i == 0)
            snprintf(src, sizeof src, "the input");
        else
            snprintf(src, sizeof src, "the previous layer (%s)", layers[i - 1].def->name);
        l->in_shape = cur;
        cli_shape next = {0};
        next.integer = false;
        if (!l->def->infer(l, &cur, src, &next, err, sizeof err)) {
            yr_error_at(d, l->pos, "%s: %s", l->def->name, err);
            return false;
        }
        if (l->def->infer != infer_embedding && l->def->infer != infer_flatten &&
            l->def->infer != infer_reshape)
            next.integer = false;
        l->out_shape = next;
        cur = next;
    }
    *output = cur;
    return true;
}
