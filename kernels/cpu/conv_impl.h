/* Convolution loops for one element type, included by conv2d.c once per type with
 *   T      the element type (float, double)
 *   SFX    the name suffix (f32, f64)
 *   GEMM   yt__conv_gemm_f32 / yt__conv_gemm_f64
 * All tensors are contiguous: x [n, c_in, h, w], weight [c_out, c_in/groups, kh, kw],
 * y [n, c_out, oh, ow]. A column matrix holds, for one image and group, row (c, i, j) = the
 * input under kernel tap (i, j) of channel c at every output position (zero in the padding). */
#define CAT_(a, b)      a##_##b
#define CAT(a, b)       CAT_(a, b)
#define IM2COL          CAT(im2col, SFX)
#define COL2IM          CAT(col2im, SFX)
#define FORWARD         CAT(conv_forward, SFX)
#define BACKWARD_INPUT  CAT(conv_backward_input, SFX)
#define BACKWARD_WEIGHT CAT(conv_backward_weight, SFX)
#define WEIGHT_SUM      CAT(conv_weight_sum, SFX)
#define DIRECT1         CAT(conv_direct_c1, SFX)

/* Output range [lo, hi) of positions o whose tap o * s - p + off lands inside [0, size). */
static inline void
CAT(tap_range, SFX)(int64_t *lo, int64_t *hi, int64_t off, int64_t p, int64_t s, int64_t size,
                    int64_t out)
{
    /* o * s - p + off >= 0  <=>  o >= ceil((p - off) / s) */
    int64_t a = p - off;
    int64_t l = a <= 0 ? 0 : yt__ceil_div(a, s);
    /* o * s - p + off <= size - 1  <=>  o <= floor((size - 1 + p - off) / s) */
    int64_t b = size - 1 + p - off;
    int64_t h = b < 0 ? 0 : b / s + 1;
    *lo = l < out ? l : out;
    *hi = h < out ? h : out;
    if (*hi < *lo)
        *hi = *lo;
}

static void
IM2COL(const T *x, T *col, int64_t channels, const yt__conv_geom *g)
{
    int64_t oh = g->oh, ow = g->ow, hw = g->h * g->w;
    for (int64_t c = 0; c < channels; c++) {
        const T *xc = x + c * hw;
        for (int64_t i = 0; i < g->kh; i++) {
            int64_t ylo, yhi;
            CAT(tap_range, SFX)(&ylo, &yhi, i * g->dh, g->ph, g->sh, g->h, oh);
            for (int64_t j = 0; j < g->kw; j++, col += oh * ow) {
                int64_t xlo, xhi;
                CAT(tap_range, SFX)(&xlo, &xhi, j * g->dw, g->pw, g->sw, g->w, ow);
                for (int64_t oy = 0; oy < oh; oy++) {
                    T *dst = col + oy * ow;
                    if (oy < ylo || oy >= yhi) {
                        for (int64_t ox = 0; ox < ow; ox++)
                            dst[ox] = 0;
                        continue;
                    }
                    const T *src = xc + (oy * g->sh - g->ph + i * g->dh) * g->w - g->pw + j * g->dw;
                    for (int64_t ox = 0; ox < xlo; ox++)
                        dst[ox] = 0;
                    if (g->sw == 1)
                        for (int64_t ox = xlo; ox < xhi; ox++)
                            dst[ox] = src[ox];
                    else
                        for (int64_t ox = xlo; ox < xhi; ox++)
                            dst[ox] = src[ox * g->sw];
                    for (int64_t ox = xhi; ox < ow; ox++)
                        dst[ox] = 0;
                }
            }
        }
    }
}

/* The adjoint of IM2COL: adds every column entry back to the input position it came from. */
static void
COL2IM(const T *col, T *x, int64_t channels, const yt__conv_geom *g)
{
    int64_t oh = g->oh, ow = g->ow, hw = g->h * g->w;
    for (int64_t c = 0; c < channels; c++) {
        T *xc = x + c * hw;
        for (int64_t i = 0; i < g->kh; i++) {
            int64_t ylo, yhi;
            CAT(tap_range, SFX)(&ylo, &yhi, i * g->dh, g->ph, g->sh, g->h, oh);
            for (int64_t j = 0; j < g->kw; j++, col += oh * ow) {
                int64_t xlo, xhi;
                CAT(tap_range, SFX)(&xlo, &xhi, j * g->dw, g->pw, g->sw, g->w, ow);
                for (int64_t oy = ylo; oy < yhi; oy++) {
                    const T *src = col + oy * ow;
                    T *dst = xc + (oy * g->sh - g->ph + i * g->dh) * g->w - g->pw + j * g->dw;
                    if (g->sw == 1)
                        for (int64_t ox = xlo; ox < xhi; ox++)
                            dst[ox] += src[ox];
                    else
                        for (int64_t ox = xlo; ox < xhi; ox++)
                            dst[ox * g->sw] += src[ox];
                }
            }
        }
    }
}

/* Whether the column matrix of one image and group is the input itself (1x1 kernel, stride 1,
 * no padding). */
static inline bool
CAT(col_is_input, SFX)(const yt__conv_geom *g)
{
    return g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0;
}

/* One input channel per group with no padding and stride 1 (the first layer of a CNN): each
 * output row is a sum of kh * kw shifted input rows, without a column matrix. */
static void
DIRECT1(T *y, const T *x, const T *w, const T *bias, int64_t og, const yt__conv_geom *g)
{
    int64_t oh = g->oh, ow = g->ow;
    for (int64_t o = 0; o < og; o++) {
        const T *wo = w + o * g->kh * g->kw;
        T b = bias != NULL ? bias[o] : 0;
        for (int64_t oy = 0; oy < oh; oy++) {
            T *dst = y + (o * oh + oy) * ow;
            for (int64_t ox = 0; ox < ow; ox++)
                dst[ox] = b;
            for (int64_t i = 0; i < g->kh; i++) {
                const T *row = x + (oy + i * g->dh) * g->w;
                for (int64_t j = 0; j < g->kw; j++) {
                    T wv = wo[i * g->kw + j];
                    const T *src = row + j * g->dw;
                    for (int64_t ox = 0; ox < ow; ox++)
                        dst[ox] += wv * src[ox];
                }
            }
        }
    }
}

/* The arguments of one pass, for its chunks. Forward and backward_input: chunk c takes images
 * [n c / chunks, n (c + 1) / chunks), each image on its own (the split never changes a value).
 * backward_weight: chunk c sums the images of block c into its partial (block 0 into gw, the
 * others into `partials`), and WEIGHT_SUM adds the partials into gw in block order; `chunks`
 * comes from the size only, so the bits do not depend on the threads. The column matrix of a
 * chunk is scratch slot yt__parallel_slot() (`slots` of them: one per thread that may run). */
typedef struct CAT(conv_job, SFX) {
    T *out;
    const T *a, *b, *bias;
    const yt__conv_geom *g;
    T *scratch, *partials;
    int64_t chunks, sum_chunks, slots;
} CAT(conv_job, SFX);

static T *
CAT(conv_col, SFX)(const CAT(conv_job, SFX) * j)
{
    const yt__conv_geom *g = j->g;
    int64_t kdim = g->c_in / g->groups * g->kh * g->kw, p = g->oh * g->ow;
    if (j->scratch == NULL) /* no column matrix needed (p == 0) */
        return NULL;
    int64_t s = j->slots > 1 ? yt__parallel_slot() : 0;
    return j->scratch + s * kdim * p;
}

/* y = conv(x, w) + bias for the images of chunk c. */
static void
FORWARD(void *ctx, int64_t c)
{
    const CAT(conv_job, SFX) *j = ctx;
    const yt__conv_geom *g = j->g;
    T *y = j->out;
    const T *x = j->a, *w = j->b, *bias = j->bias;
    int64_t cg = g->c_in / g->groups, og = g->c_out / g->groups;
    int64_t kdim = cg * g->kh * g->kw, p = g->oh * g->ow, hw = g->h * g->w;
    bool direct = cg == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0;
    bool as_input = CAT(col_is_input, SFX)(g);
    T *col = CAT(conv_col, SFX)(j);
    for (int64_t n = g->n * c / j->chunks; n < g->n * (c + 1) / j->chunks; n++) {
        for (int64_t gi = 0; gi < g->groups; gi++) {
            const T *xg = x + (n * g->c_in + gi * cg) * hw;
            const T *wg = w + gi * og * kdim;
            const T *bg = bias != NULL ? bias + gi * og : NULL;
            T *yg = y + (n * g->c_out + gi * og) * p;
            if (direct) {
                DIRECT1(yg, xg, wg, bg, og, g);
                continue;
            }
            const T *colg = xg;
            if (!as_input) {
                IM2COL(xg, col, cg, g);
                colg = col;
            }
            GEMM(false, false, og, p, kdim, 1, wg, kdim, 1, colg, p, 1, 0, yg, p, 1);
            if (bg != NULL)
                for (int64_t o = 0; o < og; o++)
                    for (int64_t q = 0; q < p; q++)
                        yg[o * p + q] += bg[o];
        }
    }
}

/* gx = col2im(w^T gy) for the images of chunk c. */
static void
BACKWARD_INPUT(void *ctx, int64_t c)
{
    const CAT(conv_job, SFX) *j = ctx;
    const yt__conv_geom *g = j->g;
    T *gx = j->out;
    const T *gy = j->a, *w = j->b;
    int64_t cg = g->c_in / g->groups, og = g->c_out / g->groups;
    int64_t kdim = cg * g->kh * g->kw, p = g->oh * g->ow, hw = g->h * g->w;
    bool as_input = CAT(col_is_input, SFX)(g);
    T *col = CAT(conv_col, SFX)(j);
    for (int64_t n = g->n * c / j->chunks; n < g->n * (c + 1) / j->chunks; n++) {
        for (int64_t gi = 0; gi < g->groups; gi++) {
            T *gxg = gx + (n * g->c_in + gi * cg) * hw;
            const T *wg = w + gi * og * kdim;
            const T *gyg = gy + (n * g->c_out + gi * og) * p;
            /* col [kdim, p] = wg^T [kdim, og] @ gyg [og, p] */
            if (as_input) {
                GEMM(true, false, kdim, p, og, 1, wg, kdim, 1, gyg, p, 1, 0, gxg, p, 1);
                continue;
            }
            GEMM(true, false, kdim, p, og, 1, wg, kdim, 1, gyg, p, 1, 0, col, p, 1);
            for (int64_t q = 0; q < cg * hw; q++)
                gxg[q] = 0;
            COL2IM(col, gxg, cg, g);
        }
    }
}

/* The partial weight gradient of block c: sum over its images of gy_n [og, p] @ col_n^T
 * [p, kdim], per group. */
static void
BACKWARD_WEIGHT(void *ctx, int64_t c)
{
    const CAT(conv_job, SFX) *j = ctx;
    const yt__conv_geom *g = j->g;
    const T *gy = j->a, *x = j->b;
    int64_t cg = g->c_in / g->groups, og = g->c_out / g->groups;
    int64_t kdim = cg * g->kh * g->kw, p = g->oh * g->ow, hw = g->h * g->w;
    int64_t wsize = g->c_out * kdim;
    bool as_input = CAT(col_is_input, SFX)(g);
    T *col = CAT(conv_col, SFX)(j);
    T *acc = c == 0 ? j->out : j->partials + (c - 1) * wsize;
    for (int64_t q = 0; q < wsize; q++)
        acc[q] = 0;
    for (int64_t n = g->n * c / j->chunks; n < g->n * (c + 1) / j->chunks; n++) {
        for (int64_t gi = 0; gi < g->groups; gi++) {
            const T *xg = x + (n * g->c_in + gi * cg) * hw;
            const T *gyg = gy + (n * g->c_out + gi * og) * p;
            const T *colg = xg;
            if (!as_input) {
                IM2COL(xg, col, cg, g);
                colg = col;
            }
            GEMM(false, true, og, kdim, p, 1, gyg, p, 1, colg, p, 1, 1, acc + gi * og * kdim, kdim,
                 1);
        }
    }
}

/* gw += the partials of blocks 1.. in order, for the weight elements of sum chunk c. */
static void
WEIGHT_SUM(void *ctx, int64_t c)
{
    const CAT(conv_job, SFX) *j = ctx;
    const yt__conv_geom *g = j->g;
    int64_t wsize = g->c_out * (g->c_in / g->groups * g->kh * g->kw);
    T *gw = j->out;
    for (int64_t q = wsize * c / j->sum_chunks; q < wsize * (c + 1) / j->sum_chunks; q++)
        for (int64_t u = 1; u < j->chunks; u++)
            gw[q] += j->partials[(u - 1) * wsize + q];
}

#undef CAT_
#undef CAT
#undef IM2COL
#undef COL2IM
#undef FORWARD
#undef BACKWARD_INPUT
#undef BACKWARD_WEIGHT
#undef WEIGHT_SUM
#undef DIRECT1
