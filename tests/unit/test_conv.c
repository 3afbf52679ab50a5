/* Convolution and pooling: values against naive reference loops (groups, dilation, stride,
 * padding, "same", unbatched inputs, ceil_mode, count_include_pad, divisor_override), the f32
 * fast paths at the benchmark CNN's shapes, the strided path split over two threads, no-bias
 * gradients, and the error messages. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "parallel.h"
#include "test_util.h"

static uint64_t rng_state = 1;

static double
uniform(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) / 9007199254740992.0 * 4.0 - 2.0;
}

/* A tensor of random values and its values as doubles (caller frees). */
static yt_tensor *
random_tensor(const int64_t *sizes, int dim, yt_dtype dtype, double **values)
{
    int64_t n = 1;
    for (int i = 0; i < dim; i++)
        n *= sizes[i];
    double *v = malloc(sizeof(double) * (size_t)(n + 1));
    for (int64_t i = 0; i < n; i++)
        v[i] = uniform();
    yt_tensor *f64 = yt_tensor_from_data(v, sizes, dim, YT_DTYPE_F64);
    yt_tensor *t = dtype == YT_DTYPE_F64 ? yt_retain(f64) : yt_to(f64, dtype);
    yt_release(f64);
    cr_assert_not_null(t, "%s", yt_errmsg());
    if (dtype != YT_DTYPE_F64) /* the reference sees the rounded values */
        yt_tensor_copy_to(t, v, sizeof(double) * (size_t)n, YT_DTYPE_F64);
    *values = v;
    return t;
}

static double *
values_of(yt_tensor *t)
{
    cr_assert_not_null(t, "%s", yt_errmsg());
    int64_t n = yt_tensor_numel(t);
    double *v = malloc(sizeof(double) * (size_t)(n + 1));
    cr_assert_eq(yt_tensor_copy_to(t, v, sizeof(double) * (size_t)n, YT_DTYPE_F64), YT_OK);
    return v;
}

static void
assert_close(const double *got, const double *want, int64_t n, double tol, const char *what)
{
    for (int64_t i = 0; i < n; i++)
        cr_assert(fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i])),
                  "%s: element %lld is %.10g, expected %.10g", what, (long long)i, got[i], want[i]);
}

/* The values of a leaf's gradient (yt_grad gives a new reference). */
static double *
grad_values(yt_tensor *t)
{
    yt_tensor *g = yt_grad(t);
    double *v = values_of(g);
    yt_release(g);
    return v;
}

/* ---------------------------------------------------------------- conv2d */

typedef struct conv_spec {
    int64_t n, c, h, w, o, kh, kw, groups, sh, sw, ph, pw, dh, dw;
} conv_spec;

static int64_t
out_size(int64_t in, int64_t k, int64_t p, int64_t s, int64_t d)
{
    return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

/* y = conv(x, w) + b and, for an upstream gradient gy, gx, gw, gb. */
static void
reference_conv(const conv_spec *s, const double *x, const double *w, const double *b,
               const double *gy, double *y, double *gx, double *gw, double *gb)
{
    int64_t oh = out_size(s->h, s->kh, s->ph, s->sh, s->dh);
    int64_t ow = out_size(s->w, s->kw, s->pw, s->sw, s->dw);
    int64_t cg = s->c / s->groups, og = s->o / s->groups;
    for (int64_t i = 0; i < s->n * s->c * s->h * s->w; i++)
        gx[i] = 0;
    for (int64_t i = 0; i < s->o * cg * s->kh * s->kw; i++)
        gw[i] = 0;
    for (int64_t i = 0; i < s->o; i++)
        gb[i] = 0;
    for (int64_t n = 0; n < s->n; n++)
        for (int64_t o = 0; o < s->o; o++)
            for (int64_t oy = 0; oy < oh; oy++)
                for (int64_t ox = 0; ox < ow; ox++) {
                    int64_t yi = ((n * s->o + o) * oh + oy) * ow + ox;
                    double acc = b != NULL ? b[o] : 0;
                    gb[o] += gy[yi];
                    for (int64_t c = 0; c < cg; c++)
                        for (int64_t i = 0; i < s->kh; i++)
                            for (int64_t j = 0; j < s->kw; j++) {
                                int64_t iy = oy * s->sh - s->ph + i * s->dh;
                                int64_t ix = ox * s->sw - s->pw + j * s->dw;
                                if (iy < 0 || iy >= s->h || ix < 0 || ix >= s->w)
                                    continue;
                                int64_t xi = ((n * s->c + o / og * cg + c) * s->h + iy) * s->w + ix;
                                int64_t wi = ((o * cg + c) * s->kh + i) * s->kw + j;
                                acc += x[xi] * w[wi];
                                gx[xi] += gy[yi] * w[wi];
                                gw[wi] += gy[yi] * x[xi];
                            }
                    y[yi] = acc;
                }
}

static void
check_conv(const conv_spec *s, yt_dtype dtype, bool with_bias, double tol)
{
    int64_t oh = out_size(s->h, s->kh, s->ph, s->sh, s->dh);
    int64_t ow = out_size(s->w, s->kw, s->pw, s->sw, s->dw);
    int64_t xs[4] = {s->n, s->c, s->h, s->w}, ws[4] = {s->o, s->c / s->groups, s->kh, s->kw};
    int64_t bs[1] = {s->o}, ys[4] = {s->n, s->o, oh, ow};
    double *xv, *wv, *bv, *gyv;
    yt_tensor *x = random_tensor(xs, 4, dtype, &xv), *w = random_tensor(ws, 4, dtype, &wv);
    yt_tensor *b = random_tensor(bs, 1, dtype, &bv), *gy = random_tensor(ys, 4, dtype, &gyv);
    yt_set_requires_grad(x, true);
    yt_set_requires_grad(w, true);
    yt_set_requires_grad(b, true);
    int64_t stride[2] = {s->sh, s->sw}, padding[2] = {s->ph, s->pw}, dilation[2] = {s->dh, s->dw};
    yt_tensor *y =
        yt_conv2d_ex(x, w, with_bias ? b : NULL, stride, 2, padding, 2, dilation, 2, s->groups);
    cr_assert_not_null(y, "%s", yt_errmsg());
    cr_assert_eq(yt_backward(y, gy, NULL), YT_OK, "%s", yt_errmsg());

    int64_t ny = s->n * s->o * oh * ow, nx = s->n * s->c * s->h * s->w;
    int64_t nw = s->o * (s->c / s->groups) * s->kh * s->kw;
    double *ry = malloc(sizeof(double) * (size_t)(ny + 1)),
           *rgx = malloc(sizeof(double) * (size_t)(nx + 1));
    double *rgw = malloc(sizeof(double) * (size_t)(nw + 1)),
           *rgb = malloc(sizeof(double) * (size_t)(s->o + 1));
    reference_conv(s, xv, wv, with_bias ? bv : NULL, gyv, ry, rgx, rgw, rgb);
    double *got_y = values_of(y), *got_gx = grad_values(x), *got_gw = grad_values(w);
    assert_close(got_y, ry, ny, tol, "conv2d forward");
    assert_close(got_gx, rgx, nx, tol, "conv2d grad input");
    assert_close(got_gw, rgw, nw, tol, "conv2d grad weight");
    if (with_bias) {
        double *got_gb = grad_values(b);
        assert_close(got_gb, rgb, s->o, tol, "conv2d grad bias");
        free(got_gb);
    } else {
        yt_tensor *gb = yt_grad(b);
        cr_assert_null(gb, "bias was not used but got a gradient");
    }
    free(got_y), free(got_gx), free(got_gw), free(ry), free(rgx), free(rgw), free(rgb);
    free(xv), free(wv), free(bv), free(gyv);
    yt_release(y), yt_release(x), yt_release(w), yt_release(b), yt_release(gy);
    YT_ASSERT_NO_LEAKS();
}

Test(conv2d, matches_reference_loops)
{
    static const conv_spec specs[] = {
        /* n  c   h   w  o kh kw g sh sw ph pw dh dw */
        {2, 3, 7, 6, 4, 3, 2, 1, 1, 1, 0, 0, 1, 1},
        {2, 4, 7, 9, 6, 3, 2, 2, 1, 1, 1, 2, 1, 1},  /* groups, padding */
        {2, 4, 7, 9, 6, 3, 2, 2, 2, 1, 1, 0, 1, 1},  /* stride (the im2col path) */
        {2, 6, 10, 9, 6, 3, 3, 3, 1, 1, 2, 1, 2, 1}, /* dilation, 3 groups */
        {2, 6, 10, 9, 4, 2, 3, 2, 2, 3, 1, 1, 2, 2}, /* everything at once */
        {3, 3, 5, 5, 5, 1, 1, 1, 1, 1, 0, 0, 1, 1},  /* 1x1 */
        {2, 3, 6, 6, 5, 5, 5, 1, 1, 1, 2, 2, 1, 1},  /* 5x5, padding 2 */
        {2, 4, 5, 5, 4, 3, 3, 4, 1, 1, 1, 1, 1, 1},  /* depthwise */
    };
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        check_conv(&specs[i], YT_DTYPE_F64, true, 1e-12);
        check_conv(&specs[i], YT_DTYPE_F32, i % 2 == 0, 1e-4);
    }
}

Test(conv2d, benchmark_cnn_shapes_f32)
{
    static const conv_spec c1 = {64, 1, 28, 28, 8, 3, 3, 1, 1, 1, 0, 0, 1, 1};
    static const conv_spec c2 = {64, 8, 13, 13, 16, 3, 3, 1, 1, 1, 0, 0, 1, 1};
    check_conv(&c1, YT_DTYPE_F32, true, 2e-4);
    check_conv(&c2, YT_DTYPE_F32, true, 2e-4);
}

Test(conv2d, strided_above_the_thread_threshold_on_two_threads)
{
    /* 16 images of 16 x 32 x 32 into 32 channels, stride 2: 18.9M multiply-adds, above the size
     * (2M) from which the im2col path spreads images over threads and the weight gradient sums
     * blocks of images into partials; the grouped one doubles the output channels, staying there */
    static const conv_spec specs[] = {
        {16, 16, 32, 32, 32, 3, 3, 1, 2, 2, 1, 1, 1, 1},
        {16, 16, 32, 32, 64, 3, 3, 2, 2, 2, 1, 1, 1, 1},
    };
    int saved = yt_get_num_threads();
    yt_set_num_threads(2);
    yt__parallel_set_always(true);
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        check_conv(&specs[i], YT_DTYPE_F64, true, 1e-12);
        check_conv(&specs[i], YT_DTYPE_F32, true, 2e-4);
    }
    yt__parallel_set_always(false);
    yt_set_num_threads(saved);
}

Test(conv2d, unbatched_input_and_same_padding)
{
    int64_t xs[3] = {2, 5, 6}, ws[4] = {3, 2, 2, 3};
    double *xv, *wv;
    yt_tensor *x = random_tensor(xs, 3, YT_DTYPE_F64, &xv),
              *w = random_tensor(ws, 4, YT_DTYPE_F64, &wv);
    yt_tensor *same = yt_conv2d_padding_ex(x, w, NULL, NULL, 0, "same", NULL, 0, 1);
    cr_assert_not_null(same, "%s", yt_errmsg());
    cr_assert_eq(yt_tensor_dim(same), 3);
    cr_assert(yt_tensor_size(same, 0) == 3 && yt_tensor_size(same, 1) == 5 &&
              yt_tensor_size(same, 2) == 6);
    /* "same" = total padding d (k - 1) = (1, 2), the odd row at the bottom: output (y, x) reads
     * input rows y .. y + 1 and columns x - 1 .. x + 1 */
    double *got = values_of(same);
    for (int64_t o = 0; o < 3; o++)
        for (int64_t y = 0; y < 5; y++)
            for (int64_t xx = 0; xx < 6; xx++) {
                double acc = 0;
                for (int64_t c = 0; c < 2; c++)
                    for (int64_t i = 0; i < 2; i++)
                        for (int64_t j = 0; j < 3; j++) {
                            int64_t iy = y + i, ix = xx - 1 + j;
                            if (iy < 5 && ix >= 0 && ix < 6)
                                acc +=
                                    xv[(c * 5 + iy) * 6 + ix] * wv[((o * 2 + c) * 2 + i) * 3 + j];
                        }
                double g = got[(o * 5 + y) * 6 + xx];
                cr_assert(fabs(g - acc) < 1e-12, "same (%lld, %lld, %lld): %g vs %g", (long long)o,
                          (long long)y, (long long)xx, g, acc);
            }
    free(got), free(xv), free(wv);
    yt_release(same), yt_release(x), yt_release(w);
    YT_ASSERT_NO_LEAKS();
}

Test(conv1d, equals_conv2d_over_height_one)
{
    int64_t xs[3] = {2, 4, 11}, ws[3] = {6, 2, 3}, bs[1] = {6};
    double *xv, *wv, *bv;
    yt_tensor *x = random_tensor(xs, 3, YT_DTYPE_F64, &xv),
              *w = random_tensor(ws, 3, YT_DTYPE_F64, &wv);
    yt_tensor *b = random_tensor(bs, 1, YT_DTYPE_F64, &bv);
    int64_t s = 2, p = 1, d = 2;
    yt_tensor *y = yt_conv1d_ex(x, w, b, &s, 1, &p, 1, &d, 1, 2);
    cr_assert_not_null(y, "%s", yt_errmsg());
    int64_t ol = (11 + 2 - 2 * 2 - 1) / 2 + 1;
    cr_assert_eq(yt_tensor_size(y, 2), ol);
    double *got = values_of(y);
    for (int64_t n = 0; n < 2; n++)
        for (int64_t o = 0; o < 6; o++)
            for (int64_t l = 0; l < ol; l++) {
                double acc = bv[o];
                for (int64_t c = 0; c < 2; c++)
                    for (int64_t k = 0; k < 3; k++) {
                        int64_t il = l * 2 - 1 + k * 2;
                        if (il >= 0 && il < 11)
                            acc += xv[(n * 4 + o / 3 * 2 + c) * 11 + il] * wv[(o * 2 + c) * 3 + k];
                    }
                cr_assert(fabs(got[(n * 6 + o) * ol + l] - acc) < 1e-12);
            }
    free(got), free(xv), free(wv), free(bv);
    yt_release(y), yt_release(x), yt_release(w), yt_release(b);
    YT_ASSERT_NO_LEAKS();
}

/* y[n, o, iy s - p + i d, ix s - p + j d] += x[n, c, iy, ix] w[c, o % og, i, j] */
static void
transpose_matches_scatter(const int64_t s[2], const int64_t p[2], const int64_t op[2],
                          const int64_t d[2])
{
    int64_t n = 2, c = 4, h = 3, w = 4, og = 3, g = 2, kh = 3, kw = 2;
    int64_t oh = (h - 1) * s[0] - 2 * p[0] + d[0] * (kh - 1) + op[0] + 1;
    int64_t ow = (w - 1) * s[1] - 2 * p[1] + d[1] * (kw - 1) + op[1] + 1;
    int64_t xs[4] = {n, c, h, w}, ws[4] = {c, og, kh, kw};
    double *xv, *wv;
    yt_tensor *x = random_tensor(xs, 4, YT_DTYPE_F64, &xv),
              *wt = random_tensor(ws, 4, YT_DTYPE_F64, &wv);
    yt_tensor *y = yt_conv_transpose2d_ex(x, wt, NULL, s, 2, p, 2, op, 2, g, d, 2);
    cr_assert_not_null(y, "%s", yt_errmsg());
    cr_assert(yt_tensor_size(y, 1) == og * g && yt_tensor_size(y, 2) == oh &&
              yt_tensor_size(y, 3) == ow);
    int64_t ny = n * og * g * oh * ow;
    double *ref = calloc((size_t)ny, sizeof(double));
    int64_t cg = c / g;
    for (int64_t b = 0; b < n; b++)
        for (int64_t ci = 0; ci < c; ci++)
            for (int64_t iy = 0; iy < h; iy++)
                for (int64_t ix = 0; ix < w; ix++)
                    for (int64_t o = 0; o < og; o++)
                        for (int64_t i = 0; i < kh; i++)
                            for (int64_t j = 0; j < kw; j++) {
                                int64_t yy = iy * s[0] - p[0] + i * d[0];
                                int64_t xx = ix * s[1] - p[1] + j * d[1];
                                if (yy < 0 || yy >= oh || xx < 0 || xx >= ow)
                                    continue;
                                int64_t oc = ci / cg * og + o;
                                ref[((b * og * g + oc) * oh + yy) * ow + xx] +=
                                    xv[((b * c + ci) * h + iy) * w + ix] *
                                    wv[((ci * og + o) * kh + i) * kw + j];
                            }
    double *got = values_of(y);
    assert_close(got, ref, ny, 1e-12, "conv_transpose2d");
    free(got), free(ref), free(xv), free(wv);
    yt_release(y), yt_release(x), yt_release(wt);
    YT_ASSERT_NO_LEAKS();
}

Test(conv_transpose2d, matches_scatter_reference)
{
    const int64_t s[2] = {2, 3}, p[2] = {1, 0}, op[2] = {1, 2}, d[2] = {1, 2};
    transpose_matches_scatter(s, p, op, d);
}

/* PyTorch allows output_padding below the stride or the dilation: at or above the stride, the
 * extra rows and columns also hold the taps the padding would otherwise crop. */
Test(conv_transpose2d, output_padding_at_or_above_the_stride_below_the_dilation)
{
    const int64_t s[2] = {1, 2}, p[2] = {2, 1}, op[2] = {2, 3}, d[2] = {3, 4};
    transpose_matches_scatter(s, p, op, d);
    const int64_t s2[2] = {2, 1}, p2[2] = {0, 1}, op2[2] = {1, 1}, d2[2] = {1, 2};
    transpose_matches_scatter(s2, p2, op2, d2);
}

static yt_tensor *
transpose_below_dilation(yt_tensor *const *in, int n, void *ctx)
{
    (void)n, (void)ctx;
    const int64_t s[2] = {1, 2}, p[2] = {1, 0}, op[2] = {1, 2}, d[2] = {2, 3};
    return yt_conv_transpose2d_ex(in[0], in[1], in[2], s, 2, p, 2, op, 2, 1, d, 2);
}

/* ... and its gradients (through the zero padding of the input) and their gradients. */
Test(conv_transpose2d, output_padding_below_the_dilation_gradcheck)
{
    const int64_t xs[4] = {1, 2, 3, 2}, ws[4] = {2, 2, 2, 2}, bs[1] = {2};
    double *v[3];
    yt_tensor *in[3] = {random_tensor(xs, 4, YT_DTYPE_F64, &v[0]),
                        random_tensor(ws, 4, YT_DTYPE_F64, &v[1]),
                        random_tensor(bs, 1, YT_DTYPE_F64, &v[2])};
    for (int i = 0; i < 3; i++) {
        free(v[i]);
        cr_assert_eq(yt_set_requires_grad(in[i], true), YT_OK);
    }
    cr_assert_eq(yt_gradcheck(transpose_below_dilation, in, 3, NULL, NULL), YT_OK, "%s",
                 yt_errmsg());
    cr_assert_eq(yt_gradgradcheck(transpose_below_dilation, in, 3, NULL, NULL), YT_OK, "%s",
                 yt_errmsg());
    for (int i = 0; i < 3; i++)
        yt_release(in[i]);
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- pooling */

Test(avg_pool2d, windows_and_divisors)
{
    /* one 4x5 plane of 0..19; kernel 3, stride 2, padding 1, ceil_mode */
    double v[20];
    for (int i = 0; i < 20; i++)
        v[i] = i;
    int64_t xs[4] = {1, 1, 4, 5};
    yt_tensor *x = yt_tensor_from_data(v, xs, 4, YT_DTYPE_F64);
    int64_t k = 3, s = 2, p = 1;
    for (int mode = 0; mode < 3; mode++) {
        bool include = mode == 0;
        int64_t divisor = mode == 2 ? 2 : YT_NONE;
        yt_tensor *y = yt_avg_pool2d_ex(x, &k, 1, &s, 1, &p, 1, true, include, divisor);
        cr_assert_not_null(y, "%s", yt_errmsg());
        /* ceil: rows (4 + 2 - 3 + 1) / 2 + 1 = 3, but row 2 would start at 3 >= 4 + 1? no: 3 */
        int64_t oh = yt_tensor_size(y, 2), ow = yt_tensor_size(y, 3);
        cr_assert(oh == 3 && ow == 3, "got %lldx%lld", (long long)oh, (long long)ow);
        double *got = values_of(y);
        for (int64_t oy = 0; oy < oh; oy++)
            for (int64_t ox = 0; ox < ow; ox++) {
                int64_t y0 = oy * s - p, x0 = ox * s - p;
                int64_t y1 = y0 + k < 4 + p ? y0 + k : 4 + p, x1 = x0 + k < 5 + p ? x0 + k : 5 + p;
                int64_t padded = (y1 - y0) * (x1 - x0);
                double sum = 0;
                int64_t count = 0;
                for (int64_t yy = y0 < 0 ? 0 : y0; yy < (y1 < 4 ? y1 : 4); yy++)
                    for (int64_t xx = x0 < 0 ? 0 : x0; xx < (x1 < 5 ? x1 : 5); xx++)
                        sum += v[yy * 5 + xx], count++;
                double want = sum / (double)(mode == 2 ? 2 : include ? padded : count);
                cr_assert(fabs(got[oy * ow + ox] - want) < 1e-12, "mode %d (%lld, %lld): %g vs %g",
                          mode, (long long)oy, (long long)ox, got[oy * ow + ox], want);
            }
        free(got);
        yt_release(y);
    }
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

Test(adaptive_avg_pool2d, uneven_windows)
{
    double v[35];
    for (int i = 0; i < 35; i++)
        v[i] = i * 0.5;
    int64_t xs[3] = {1, 7, 5}, os[2] = {3, 2};
    yt_tensor *x = yt_tensor_from_data(v, xs, 3, YT_DTYPE_F64);
    yt_tensor *y = yt_adaptive_avg_pool2d(x, os, 2);
    double *got = values_of(y);
    for (int64_t oy = 0; oy < 3; oy++)
        for (int64_t ox = 0; ox < 2; ox++) {
            int64_t y0 = oy * 7 / 3, y1 = ((oy + 1) * 7 + 2) / 3, x0 = ox * 5 / 2,
                    x1 = ((ox + 1) * 5 + 1) / 2;
            double sum = 0;
            for (int64_t yy = y0; yy < y1; yy++)
                for (int64_t xx = x0; xx < x1; xx++)
                    sum += v[yy * 5 + xx];
            cr_assert(fabs(got[oy * 2 + ox] - sum / (double)((y1 - y0) * (x1 - x0))) < 1e-12);
        }
    free(got);
    yt_release(y), yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

/* A result too large to allocate is reported in the op's name, not the allocator's. */
Test(adaptive_avg_pool2d, huge_output_size_names_the_op)
{
    int64_t xs[3] = {1, 4, 4}, os[2] = {INT64_MAX / 4, INT64_MAX / 4};
    yt_tensor *x = yt_ones(xs, 3);
    cr_assert_null(yt_adaptive_avg_pool2d(x, os, 2));
    YT_ASSERT_ERROR(YT_ERR_NOMEM, "adaptive_avg_pool2d: a f32 tensor of shape [1, "
                                  "2305843009213693951, 2305843009213693951] needs more than 2^63 "
                                  "bytes");
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

Test(max_pool2d_backward, scatters_at_indices_and_checks_them)
{
    double g[4] = {1, 2, 3, 4};
    int64_t gs[4] = {1, 1, 2, 2}, ss[4] = {1, 1, 4, 4};
    int64_t idx[4] = {5, 2, 8, 8}; /* two outputs share position 8: their gradients add */
    yt_tensor *grad = yt_tensor_from_data(g, gs, 4, YT_DTYPE_F64);
    yt_tensor *self = yt_zeros_ex(ss, 4, YT_DTYPE_F64, YT_DEVICE_NONE);
    yt_tensor *ind = yt_tensor_from_data(idx, gs, 4, YT_DTYPE_I64);
    int64_t k = 2;
    yt_tensor *r = yt_max_pool2d_with_indices_backward(grad, self, &k, 1, NULL, 0, NULL, 0, NULL, 0,
                                                       false, ind);
    double *got = values_of(r);
    double want[16] = {0};
    want[5] = 1, want[2] = 2, want[8] = 7;
    assert_close(got, want, 16, 0, "max_pool2d_with_indices_backward");
    free(got);
    yt_release(r);
    int64_t bad[4] = {5, 2, 16, 0};
    yt_tensor *bad_ind = yt_tensor_from_data(bad, gs, 4, YT_DTYPE_I64);
    cr_assert_null(yt_max_pool2d_with_indices_backward(grad, self, &k, 1, NULL, 0, NULL, 0, NULL, 0,
                                                       false, bad_ind));
    YT_ASSERT_ERROR(YT_ERR_VALUE,
                    "max_pool2d_with_indices_backward: indices[2]=16 is out of range");
    yt_release(bad_ind), yt_release(grad), yt_release(self), yt_release(ind);
    YT_ASSERT_NO_LEAKS();
}

Test(max_pool2d, matches_reference_with_padding_dilation_ceil_mode)
{
    int64_t xs[4] = {2, 3, 7, 8};
    double *xv;
    yt_tensor *x = random_tensor(xs, 4, YT_DTYPE_F64, &xv);
    int64_t k[2] = {3, 2}, s[2] = {2, 3}, p[2] = {1, 1}, d[2] = {2, 1};
    yt_tensor *values = NULL, *indices = NULL;
    cr_assert_eq(yt_max_pool2d_with_indices_ex(x, k, 2, s, 2, p, 2, d, 2, true, &values, &indices),
                 YT_OK, "%s", yt_errmsg());
    int64_t oh = yt_tensor_size(values, 2), ow = yt_tensor_size(values, 3);
    /* ceil: rows (7 + 2 - 4 - 1 + 1) / 2 + 1 = 3 -> last start 4 < 7 + 1: 3; cols (8 + 2 - 1 - 1 +
     * 2) / 3 + 1 = 4 -> last start 9 >= 8 + 1: 3 */
    cr_assert(oh == 3 && ow == 3, "got %lldx%lld", (long long)oh, (long long)ow);
    double *got = values_of(values), *gi = values_of(indices);
    for (int64_t pl = 0; pl < 6; pl++)
        for (int64_t oy = 0; oy < oh; oy++)
            for (int64_t ox = 0; ox < ow; ox++) {
                double best = -INFINITY;
                int64_t at = -1;
                for (int64_t i = 0; i < k[0]; i++)
                    for (int64_t j = 0; j < k[1]; j++) {
                        int64_t yy = oy * s[0] - p[0] + i * d[0], xx = ox * s[1] - p[1] + j * d[1];
                        if (yy < 0 || yy >= 7 || xx < 0 || xx >= 8)
                            continue;
                        double v = xv[pl * 56 + yy * 8 + xx];
                        if (at < 0 || v > best)
                            best = v, at = yy * 8 + xx;
                    }
                int64_t q = (pl * oh + oy) * ow + ox;
                cr_assert(got[q] == best && gi[q] == (double)at, "plane %lld (%lld, %lld)",
                          (long long)pl, (long long)oy, (long long)ox);
            }
    free(got), free(gi), free(xv);
    yt_release(values), yt_release(indices), yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

Test(max_pool2d, nan_wins_ties_take_the_first_and_the_gradient_goes_there)
{
    float v[16] = {1,  5,  2,         0,         3,  NAN, 7,         7,
                   -1, -2, -INFINITY, -INFINITY, -3, -4,  -INFINITY, -INFINITY};
    int64_t xs[4] = {1, 1, 4, 4}, k = 2;
    yt_tensor *x = yt_tensor_from_data(v, xs, 4, YT_DTYPE_F32);
    yt_set_requires_grad(x, true);
    yt_tensor *y = yt_max_pool2d(x, &k, 1);
    double *got = values_of(y);
    cr_assert(isnan(got[0]) && got[1] == 7 && got[2] == -1 && got[3] == -INFINITY);
    double ones[4] = {1, 1, 1, 1};
    int64_t ys[4] = {1, 1, 2, 2};
    yt_tensor *g = yt_tensor_from_data(ones, ys, 4, YT_DTYPE_F64);
    yt_tensor *gf = yt_to(g, YT_DTYPE_F32);
    cr_assert_eq(yt_backward(y, gf, NULL), YT_OK, "%s", yt_errmsg());
    double *gx = grad_values(x);
    double want[16] = {0};
    want[5] = want[6] = want[8] = want[10] = 1; /* NaN, the first 7, -1, the first -inf */
    assert_close(gx, want, 16, 0, "max_pool2d gradient");
    free(got), free(gx);
    yt_release(g), yt_release(gf), yt_release(y), yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

Test(max_pool2d, vectorized_2x2_rows_match_reference)
{
    /* width 37: 18 outputs per row = two 8-wide steps and a scalar tail; values from a small
     * set so ties are common, and a few NaN */
    int64_t xs[4] = {2, 3, 20, 37};
    int64_t n = 2 * 3 * 20 * 37;
    float *v = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        v[i] = i % 97 == 5 ? NAN : (float)((i * 7919) % 5);
    yt_tensor *x = yt_tensor_from_data(v, xs, 4, YT_DTYPE_F32);
    int64_t k = 2;
    yt_tensor *values = NULL, *indices = NULL;
    cr_assert_eq(yt_max_pool2d_with_indices_ex(x, &k, 1, NULL, 0, NULL, 0, NULL, 0, false, &values,
                                               &indices),
                 YT_OK, "%s", yt_errmsg());
    double *got = values_of(values), *gi = values_of(indices);
    for (int64_t pl = 0; pl < 6; pl++)
        for (int64_t oy = 0; oy < 10; oy++)
            for (int64_t ox = 0; ox < 18; ox++) {
                float best = 0;
                int64_t at = -1;
                for (int64_t i = 0; i < 2; i++)
                    for (int64_t j = 0; j < 2; j++) {
                        int64_t q = (2 * oy + i) * 37 + 2 * ox + j;
                        float e = v[pl * 740 + q];
                        if (at < 0 || e > best || isnan(e))
                            best = e, at = q;
                    }
                int64_t o = (pl * 10 + oy) * 18 + ox;
                cr_assert(gi[o] == (double)at && (isnan(best) ? isnan(got[o]) : got[o] == best),
                          "plane %lld (%lld, %lld): %g at %g, expected %g at %lld", (long long)pl,
                          (long long)oy, (long long)ox, got[o], gi[o], best, (long long)at);
            }
    free(got), free(gi), free(v);
    yt_release(values), yt_release(indices), yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- errors */

static yt_tensor *
zeros4(int64_t a, int64_t b, int64_t c, int64_t d, int dim)
{
    int64_t s[4] = {a, b, c, d};
    return yt_zeros(s, dim);
}

Test(conv2d, errors_name_op_argument_and_values)
{
    yt_tensor *x = zeros4(2, 4, 5, 5, 4), *w = zeros4(6, 2, 3, 3, 4), *w3 = zeros4(6, 3, 3, 3, 4);
    yt_tensor *big = zeros4(6, 4, 7, 7, 4), *b5 = zeros4(5, 0, 0, 0, 1);
    yt_tensor *xd = yt_to(x, YT_DTYPE_F64);
    int64_t zero[2] = {0, 1}, neg[1] = {-1}, three[3] = {1, 1, 1};

    cr_assert_null(yt_conv2d_ex(x, w, NULL, zero, 2, NULL, 0, NULL, 0, 2));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "conv2d: stride=[0, 1] must be >= 1");
    cr_assert_null(yt_conv2d_ex(x, w, NULL, NULL, 0, neg, 1, NULL, 0, 2));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "conv2d: padding=[-1] must be >= 0");
    cr_assert_null(yt_conv2d_ex(x, w, NULL, three, 3, NULL, 0, NULL, 0, 2));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "conv2d: stride=[1, 1, 1] must have 1 or 2 entries");
    cr_assert_null(yt_conv2d_ex(x, w, NULL, NULL, 0, NULL, 0, NULL, 0, 3));
    YT_ASSERT_ERROR(YT_ERR_VALUE,
                    "conv2d: input.size(1)=4 (in_channels) is not divisible by groups=3");
    cr_assert_null(yt_conv2d_ex(x, w3, NULL, NULL, 0, NULL, 0, NULL, 0, 2));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "conv2d: weight.size(1)=3 must equal in_channels/groups=4/2");
    cr_assert_null(yt_conv2d_ex(x, big, NULL, NULL, 0, NULL, 0, NULL, 0, 1));
    YT_ASSERT_ERROR(YT_ERR_SHAPE,
                    "conv2d: kernel 7x7 (dilation 1x1) is larger than the padded input 5x5");
    cr_assert_null(yt_conv2d_ex(x, w, b5, NULL, 0, NULL, 0, NULL, 0, 2));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "conv2d: bias must be 1-D of size out_channels=6, got shape [5]");
    cr_assert_null(yt_conv2d_ex(xd, w, NULL, NULL, 0, NULL, 0, NULL, 0, 2));
    YT_ASSERT_ERROR(YT_ERR_DTYPE, "conv2d: weight has dtype f32 but input has dtype f64");
    int64_t two = 2;
    cr_assert_null(yt_conv2d_padding_ex(x, w, NULL, &two, 1, "same", NULL, 0, 2));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "conv2d: padding='same' needs stride 1, got stride=[2]");
    cr_assert_null(yt_conv2d_padding_ex(x, w, NULL, NULL, 0, "full", NULL, 0, 2));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "conv2d: padding must be one of 'valid', 'same', got 'full'");
    yt_tensor *wt = zeros4(4, 2, 3, 3, 4);
    cr_assert_null(yt_conv_transpose2d_ex(x, wt, NULL, &two, 1, NULL, 0, &two, 1, 1, NULL, 0));
    yt_release(wt);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "conv_transpose2d: output_padding=[2, 2] must be smaller than "
                                  "stride=[2, 2] or dilation=[1, 1] in each dim");
    int64_t op_big[2] = {1, 2}, dil[2] = {1, 2};
    wt = zeros4(4, 2, 3, 3, 4);
    cr_assert_null(yt_conv_transpose2d_ex(x, wt, NULL, NULL, 0, NULL, 0, op_big, 2, 1, dil, 2));
    yt_release(wt);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "conv_transpose2d: output_padding=[1, 2] must be smaller than "
                                  "stride=[1, 1] or dilation=[1, 2] in each dim");
    yt_release(x), yt_release(w), yt_release(w3), yt_release(big), yt_release(b5), yt_release(xd);
    YT_ASSERT_NO_LEAKS();
}

Test(pool2d, errors_name_op_argument_and_values)
{
    yt_tensor *x = zeros4(1, 2, 4, 4, 4);
    int64_t k = 3, p2 = 2, big = 9;
    cr_assert_null(yt_avg_pool2d_ex(x, &k, 1, NULL, 0, &p2, 1, false, true, YT_NONE));
    YT_ASSERT_ERROR(YT_ERR_VALUE,
                    "avg_pool2d: padding=2x2 must be at most half of kernel_size=3x3");
    cr_assert_null(yt_avg_pool2d_ex(x, &big, 1, NULL, 0, NULL, 0, false, true, YT_NONE));
    YT_ASSERT_ERROR(YT_ERR_SHAPE,
                    "avg_pool2d: kernel 9x9 (dilation 1x1) is larger than the padded input 4x4");
    cr_assert_null(yt_avg_pool2d_ex(x, &k, 1, NULL, 0, NULL, 0, false, true, 0));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "avg_pool2d: divisor_override=0 must not be zero");
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

/* Geometry whose arithmetic overflows int64 is refused with the arguments named; it used to
 * overflow (UB) in the output-size rule (num + stride - 1) and in the messages (h + 2 * ph). */
Test(pool2d, geometry_overflow_is_an_error_not_ub)
{
    yt_tensor *x = zeros4(1, 4, 5, 5, 4), *w = zeros4(6, 2, 3, 3, 4);
    const int64_t one[2] = {1, 1}, huge_pad[2] = {INT64_MAX, 0};
    cr_assert_null(yt_conv2d_ex(x, w, NULL, one, 2, huge_pad, 2, one, 2, 2));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "conv2d: padding=9223372036854775807x0 on an input of 5x5 "
                                  "gives a padded size that overflows int64");

    /* ceil_mode with a stride near INT64_MAX: one row of windows (PyTorch's formula, exactly) */
    const int64_t k3[2] = {3, 3}, st[2] = {INT64_MAX, 1}, p1[2] = {1, 1};
    yt_tensor *y = yt_max_pool2d_ex(x, k3, 2, st, 2, p1, 2, one, 2, true);
    test_expect_sizes(y, (const int64_t[]){1, 4, 1, 5}, 4);
    yt_release(y);

    const int64_t kbig[2] = {INT64_MAX, 3}, pbig[2] = {INT64_MAX / 2, 0};
    cr_assert_null(yt_max_pool2d_ex(x, kbig, 2, one, 2, pbig, 2, one, 2, false));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "max_pool2d: padding=4611686018427387903x0 on an input of 5x5 "
                                  "gives a padded size that overflows int64");
    /* 1 + 2 * (2^62 - 1) fits exactly: one output, but a window of INT64_MAX x 3 positions */
    yt_tensor *row = zeros4(1, 1, 1, 3, 4);
    cr_assert_null(yt_avg_pool2d_ex(row, kbig, 2, NULL, 0, pbig, 2, false, true, YT_NONE));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "avg_pool2d: kernel_size=9223372036854775807x3 times the output "
                                  "size [1, 1, 1, 1] overflows int64");
    yt_release(row), yt_release(x), yt_release(w);
    YT_ASSERT_NO_LEAKS();
}

/* PyTorch's rule for ceil_mode: out = (in + 2 pad - dil (k - 1) - 1 + stride - 1) // stride + 1
 * (floor division), less one if the last window starts past the input and left padding, and
 * only out >= 1 is required: a window wider than the input still fits once. Shapes and values
 * checked against torch 2.x (max_pool2d / avg_pool2d with count_include_pad=True). */
/* A window far wider than the input: the first row of it inside the input is found in one step,
 * not by stepping 2^40 rows from the padding. */
Test(pool2d, huge_window_over_padding_takes_no_time)
{
    yt_tensor *x1 = yt_full((const int64_t[]){1, 1, 1, 1}, 4, yt_float(3.0));
    const int64_t k[2] = {(int64_t)1 << 41, 1}, pad[2] = {(int64_t)1 << 40, 0}, one[2] = {1, 1};
    yt_tensor *m = yt_max_pool2d_ex(x1, k, 2, one, 2, pad, 2, one, 2, false);
    test_expect_values(m, (const double[]){3, 3}, 2, (const int64_t[]){1, 1, 2, 1}, 4);
    yt_release(m);
    yt_release(x1);
    YT_ASSERT_NO_LEAKS();
}

Test(pool2d, ceil_mode_allows_a_window_wider_than_the_input_as_pytorch_does)
{
    yt_tensor *x1 = yt_full((const int64_t[]){1, 1, 1, 1}, 4, yt_float(3.0));
    int64_t n;
    for (int k = 2; k <= 3; k++)
        for (int64_t s = k; s <= 5; s++) {
            /* k = 2, s = 2: the reported case; torch gives 1x1 for all of these */
            yt_tensor *m =
                yt_max_pool2d_ex(x1, (const int64_t[]){k}, 1, &s, 1, NULL, 0, NULL, 0, true);
            yt_tensor *a =
                yt_avg_pool2d_ex(x1, (const int64_t[]){k}, 1, &s, 1, NULL, 0, true, true, YT_NONE);
            test_expect_sizes(m, (const int64_t[]){1, 1, 1, 1}, 4);
            test_expect_sizes(a, (const int64_t[]){1, 1, 1, 1}, 4);
            double *vm = test_values(m, &n), *va = test_values(a, &n);
            cr_assert(vm[0] == 3.0 && va[0] == 3.0, "k=%d s=%lld: max %g avg %g, torch 3 and 3", k,
                      (long long)s, vm[0], va[0]);
            free(vm), free(va), yt_release(m), yt_release(a);
        }
    /* without ceil_mode the same call is an error, as in torch */
    const int64_t k2 = 2;
    cr_assert_null(yt_max_pool2d_ex(x1, &k2, 1, &k2, 1, NULL, 0, NULL, 0, false));
    YT_ASSERT_ERROR(YT_ERR_SHAPE,
                    "max_pool2d: kernel 2x2 (dilation 1x1) is larger than the padded input 1x1");
    const int64_t k3 = 3, s2 = 2; /* (1 - 3 + 1) // 2 + 1 = 0 */
    cr_assert_null(yt_avg_pool2d_ex(x1, &k3, 1, &s2, 1, NULL, 0, true, true, YT_NONE));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "avg_pool2d: kernel 3x3 (dilation 1x1) is larger than the "
                                  "padded input 1x1");

    /* 5x5 plane of 0..24: kernel 6, stride 2 gives torch 1x1 (max 24, mean of all 25 = 12);
     * kernel 7 is refused by torch ((5 - 7 + 1) // 2 + 1 = 0) */
    yt_tensor *x5 = test_iota((const int64_t[]){1, 1, 5, 5}, 4);
    const int64_t k6 = 6, k7 = 7;
    yt_tensor *m = yt_max_pool2d_ex(x5, &k6, 1, &s2, 1, NULL, 0, NULL, 0, true);
    yt_tensor *a = yt_avg_pool2d_ex(x5, &k6, 1, &s2, 1, NULL, 0, true, true, YT_NONE);
    test_expect_sizes(m, (const int64_t[]){1, 1, 1, 1}, 4);
    test_expect_sizes(a, (const int64_t[]){1, 1, 1, 1}, 4);
    double *vm = test_values(m, &n), *va = test_values(a, &n);
    cr_assert(vm[0] == 24.0 && va[0] == 12.0, "max %g avg %g, torch 24 and 12", vm[0], va[0]);
    free(vm), free(va), yt_release(m), yt_release(a);
    cr_assert_null(yt_max_pool2d_ex(x5, &k7, 1, &s2, 1, NULL, 0, NULL, 0, true));
    YT_ASSERT_ERROR(YT_ERR_SHAPE,
                    "max_pool2d: kernel 7x7 (dilation 1x1) is larger than the padded input 5x5");
    yt_release(x1), yt_release(x5);
    YT_ASSERT_NO_LEAKS();
}

/* conv1d is conv2d over a height of 1, but its errors speak of the 1-D call: they used to say
 * "stride=[1, 0]" and show 2-D kernels and inputs. */
Test(conv1d, errors_are_in_1d_terms)
{
    yt_tensor *x = yt_zeros((const int64_t[]){1, 4, 5}, 3);
    yt_tensor *w = yt_zeros((const int64_t[]){6, 4, 3}, 3);
    yt_tensor *w7 = yt_zeros((const int64_t[]){6, 4, 7}, 3);
    yt_tensor *w3 = yt_zeros((const int64_t[]){6, 3, 3}, 3);
    const int64_t zero = 0, one = 1, neg = -1, huge = INT64_MAX;
    cr_assert_null(yt_conv1d_ex(x, w, NULL, &zero, 1, &zero, 1, &one, 1, 1));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "conv1d: stride=[0] must be >= 1");
    cr_assert_null(yt_conv1d_ex(x, w, NULL, &one, 1, &neg, 1, &one, 1, 1));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "conv1d: padding=[-1] must be >= 0");
    cr_assert_null(yt_conv1d_ex(x, w, NULL, &one, 1, &zero, 1, &zero, 1, 1));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "conv1d: dilation=[0] must be >= 1");
    cr_assert_null(yt_conv1d_ex(x, w7, NULL, NULL, 0, NULL, 0, NULL, 0, 1));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "conv1d: kernel 7 (dilation 1) is larger than the padded input "
                                  "5 (input 5, padding 0)");
    cr_assert_null(yt_conv1d_padding_ex(x, w7, NULL, NULL, 0, "valid", NULL, 0, 1));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "conv1d: kernel 7 (dilation 1) is larger than the padded input "
                                  "5 (input 5, padding 0)");
    cr_assert_null(yt_conv1d_ex(x, w, NULL, NULL, 0, &huge, 1, NULL, 0, 1));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "conv1d: padding=[9223372036854775807] on an input of length 5 "
                                  "gives a padded length that overflows int64");
    cr_assert_null(yt_conv1d_ex(x, w3, NULL, NULL, 0, NULL, 0, NULL, 0, 1));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "conv1d: weight.size(1)=3 must equal in_channels/groups=4/1 "
                                  "(weight [6, 3, 3], input [1, 4, 5])");
    cr_assert_null(yt_conv1d_ex(x, w, NULL, NULL, 0, NULL, 0, NULL, 0, 3));
    YT_ASSERT_ERROR(YT_ERR_VALUE,
                    "conv1d: input.size(1)=4 (in_channels) is not divisible by groups=3");
    yt_tensor *y = yt_conv1d_ex(x, w, NULL, NULL, 0, &one, 1, NULL, 0, 1);
    test_expect_sizes(y, (const int64_t[]){1, 6, 5}, 3);
    yt_release(y), yt_release(x), yt_release(w), yt_release(w7), yt_release(w3);
    YT_ASSERT_NO_LEAKS();
}

/* An input of height or width 0 is refused by the pools (as PyTorch refuses it): with padding
 * its windows would lie in the padding alone, and max_pool2d gave -inf with index 0 into a plane
 * of no elements, which its backward then rejected. A batch of 0, or 0 channels, stays legal. */
Test(pool2d, zero_height_or_width_is_refused)
{
    const int64_t k = 3, st = 2, pad = 1;
    yt_tensor *flat = yt_zeros_ex((const int64_t[]){1, 2, 0, 5}, 4, YT_DTYPE_F64, YT_DEVICE_NONE);
    yt_tensor *thin = yt_zeros((const int64_t[]){2, 4, 0}, 3);
    yt_tensor *values = NULL, *indices = NULL;
    cr_assert_eq(yt_max_pool2d_with_indices_ex(flat, &k, 1, &st, 1, &pad, 1, NULL, 0, true, &values,
                                               &indices),
                 YT_ERR_SHAPE);
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "max_pool2d_with_indices: self's height and width must be "
                                  "non-zero (windows in the padding alone would pool nothing), "
                                  "got [1, 2, 0, 5]");
    cr_assert_null(yt_avg_pool2d_ex(thin, &k, 1, &st, 1, &pad, 1, false, true, YT_NONE));
    cr_assert_eq(yt_errcode(), YT_ERR_SHAPE, "%s", yt_errmsg());
    cr_assert_null(yt_adaptive_avg_pool2d(thin, (const int64_t[]){2, 2}, 2));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "adaptive_avg_pool2d: self's height and width must be non-zero");
    yt_tensor *no_batch = yt_zeros((const int64_t[]){0, 2, 4, 4}, 4);
    yt_tensor *pooled = yt_max_pool2d(no_batch, &k, 1);
    cr_assert_not_null(pooled, "%s", yt_errmsg());
    cr_assert_eq(yt_tensor_numel(pooled), 0);
    yt_release(pooled), yt_release(no_batch), yt_release(thin), yt_release(flat);
    YT_ASSERT_NO_LEAKS();
}

/* An empty batch makes an empty output however large its plane, and the weight's gradient is a
 * sum over no images: zeros, with no scratch sized from that plane (padding 2^40 asked for
 * petabytes of it; found by a sweep of unusual int arguments). */
Test(conv2d, empty_batch_with_a_huge_plane_gives_zero_weight_gradients)
{
    const int64_t in_sizes[] = {0, 2, 4, 4}, w_sizes[] = {3, 2, 3, 3};
    const int64_t padding[] = {(int64_t)1 << 40, (int64_t)1 << 40};
    double *xv, *wv;
    yt_tensor *x = random_tensor(in_sizes, 4, YT_DTYPE_F64, &xv);
    yt_tensor *w = random_tensor(w_sizes, 4, YT_DTYPE_F64, &wv);
    cr_assert_eq(yt_set_requires_grad(x, true), YT_OK);
    cr_assert_eq(yt_set_requires_grad(w, true), YT_OK);
    yt_tensor *y = yt_conv2d_ex(x, w, NULL, NULL, 0, padding, 2, NULL, 0, 1);
    cr_assert_not_null(y, "%s", yt_errmsg());
    const int64_t plane = ((int64_t)1 << 41) + 2, y_sizes[] = {0, 3, plane, plane};
    test_expect_sizes(y, y_sizes, 4);
    yt_tensor *loss = yt_sum(y);
    cr_assert_eq(yt_backward(loss, NULL, NULL), YT_OK, "%s", yt_errmsg());
    yt_tensor *gw = yt_grad(w);
    cr_assert_not_null(gw);
    double zeros[3 * 2 * 3 * 3] = {0};
    test_expect_values(gw, zeros, 3 * 2 * 3 * 3, w_sizes, 4);
    yt_release(gw);
    yt_release(loss);
    yt_release(y);
    yt_release(w);
    yt_release(x);
    free(wv);
    free(xv);
    YT_ASSERT_NO_LEAKS();
}

/* "same" padding with a huge dilation keeps the output small but pads the input by 2^40 on each
 * side: the scratch for that plane cannot be allocated, and its element count overflowed int64
 * (UBSan saw it in conv_direct.c, the stride-1 path) before it was refused. Now a clear error. */
Test(conv2d, huge_padded_plane_is_refused_not_overflowed)
{
    const int64_t in_sizes[] = {2, 3, 6, 5}, w_sizes[] = {4, 3, 3, 2};
    const int64_t dilation[] = {(int64_t)1 << 40, (int64_t)1 << 40};
    double *xv, *wv;
    yt_tensor *x = random_tensor(in_sizes, 4, YT_DTYPE_F64, &xv);
    yt_tensor *w = random_tensor(w_sizes, 4, YT_DTYPE_F64, &wv);
    yt_tensor *y = yt_conv2d_padding_ex(x, w, NULL, NULL, 0, "same", dilation, 2, 1);
    cr_assert_null(y);
    cr_assert_eq(yt_errcode(), YT_ERR_NOMEM, "%s", yt_errmsg());
    cr_assert(strstr(yt_errmsg(), "conv2d") == yt_errmsg() && strstr(yt_errmsg(), "scratch"), "%s",
              yt_errmsg());
    yt_release(w);
    yt_release(x);
    free(wv);
    free(xv);
    YT_ASSERT_NO_LEAKS();
}

/* A stride near INT64_MAX leaves one output row; finding the taps that land inside the input
 * computed ceil((p - off) / s) as (p - off + s - 1) / s, which overflowed (UBSan, found by the
 * sweep of bad arguments). The row must be the one any stride past the input gives. */
Test(conv2d, stride_near_int64_max_gives_the_first_row)
{
    const int64_t in_sizes[] = {1, 2, 5, 6}, w_sizes[] = {3, 2, 2, 3};
    const int64_t huge[] = {INT64_MAX, 1}, past[] = {100, 1}, padding[] = {1, 0};
    double *xv, *wv;
    yt_tensor *x = random_tensor(in_sizes, 4, YT_DTYPE_F64, &xv);
    yt_tensor *w = random_tensor(w_sizes, 4, YT_DTYPE_F64, &wv);
    yt_tensor *got = yt_conv2d_ex(x, w, NULL, huge, 2, padding, 2, NULL, 0, 1);
    yt_tensor *want = yt_conv2d_ex(x, w, NULL, past, 2, padding, 2, NULL, 0, 1);
    cr_assert_not_null(got, "%s", yt_errmsg());
    cr_assert_not_null(want, "%s", yt_errmsg());
    const int64_t sizes[] = {1, 3, 1, 4};
    test_expect_sizes(got, sizes, 4);
    cr_assert_eq(test_max_abs_diff(got, want), 0.0);
    yt_release(want);
    yt_release(got);
    yt_release(w);
    yt_release(x);
    free(wv);
    free(xv);
    YT_ASSERT_NO_LEAKS();
}

/* With dilation, a window's taps can straddle the input: the first in the padding and the next
 * past the end, so the window pools nothing. max_pool2d gave such a window an index outside the
 * plane, which its backward then refused (found by the sweep of bad arguments); refused now,
 * naming the geometry. A dilation that leaves every window a tap still works. */
Test(pool2d, windows_holding_no_input_element_are_refused)
{
    const int64_t sizes[] = {2, 5, 7};
    double *xv;
    yt_tensor *x = random_tensor(sizes, 3, YT_DTYPE_F64, &xv);
    const int64_t kernel[] = {3, 2}, stride[] = {2, 1 << 20}, padding[] = {1, 1};
    const int64_t dilation[] = {1, 1 << 20};
    cr_assert_null(yt_max_pool2d_ex(x, kernel, 2, stride, 2, padding, 2, dilation, 2, true));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "max_pool2d: with kernel 3x2, stride 2x1048576, padding 1x1 and "
                                  "dilation 1x1048576, a window over the 5x7 input takes no "
                                  "element of it");
    const int64_t fits[] = {1, 3}, one[] = {1, 1};
    yt_tensor *y = yt_max_pool2d_ex(x, kernel, 2, one, 2, padding, 2, fits, 2, false);
    cr_assert_not_null(y, "%s", yt_errmsg());
    yt_release(y);
    yt_release(x);
    free(xv);
    YT_ASSERT_NO_LEAKS();
}
