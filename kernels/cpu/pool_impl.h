/* Pooling loops for one element type, included by pool2d.c once per type with T (float,
 * double) and SFX (f32, f64). Tensors are contiguous; a plane is one [h, w] image of one
 * channel; each loop runs planes [lo, hi), and pool2d.c spreads blocks of planes over the kernel
 * pool. */
#define CAT_(a, b) a##_##b
#define CAT(a, b)  CAT_(a, b)
#define MAX2X2_ROW CAT(max2x2_row, SFX)

/* max_pool2d: each output is the largest input in its window (NaN wins), and its index is the
 * flat position h * w + x of that input within the plane (the first one on ties). */
static void
CAT(max_pool_forward, SFX)(T *y, int64_t *idx, const T *x, const yt__pool_geom *g, int64_t lo,
                           int64_t hi)
{
    int64_t hw = g->h * g->w, ohw = g->oh * g->ow;
    bool simple2 = g->kh == 2 && g->kw == 2 && g->sh == 2 && g->sw == 2 && g->ph == 0 &&
                   g->pw == 0 && g->dh == 1 && g->dw == 1 && g->oh * 2 <= g->h && g->ow * 2 <= g->w;
    for (int64_t pl = lo; pl < hi; pl++) {
        const T *xp = x + pl * hw;
        T *yp = y + pl * ohw;
        int64_t *ip = idx + pl * ohw;
        if (simple2) { /* 2x2, stride 2: the CNN case (pool2d.c) */
            for (int64_t oy = 0; oy < g->oh; oy++)
                MAX2X2_ROW(yp + oy * g->ow, ip + oy * g->ow, xp + 2 * oy * g->w, g->w, g->ow,
                           2 * oy * g->w);
            continue;
        }
        for (int64_t oy = 0; oy < g->oh; oy++) {
            int64_t y0 = oy * g->sh - g->ph;
            int64_t iy0 = y0, iy1 = y0 + (g->kh - 1) * g->dh + 1;
            if (iy0 < 0) /* the first dilated row inside; a loop here could step 2^62 times */
                iy0 += (-iy0 + g->dh - 1) / g->dh * g->dh;
            if (iy1 > g->h)
                iy1 = g->h;
            for (int64_t ox = 0; ox < g->ow; ox++) {
                int64_t x0 = ox * g->sw - g->pw;
                int64_t ix0 = x0, ix1 = x0 + (g->kw - 1) * g->dw + 1;
                if (ix0 < 0)
                    ix0 += (-ix0 + g->dw - 1) / g->dw * g->dw;
                if (ix1 > g->w)
                    ix1 = g->w;
                T m = -(T)INFINITY;
                int64_t mi = iy0 * g->w + ix0;
                for (int64_t iy = iy0; iy < iy1; iy += g->dh)
                    for (int64_t ix = ix0; ix < ix1; ix += g->dw) {
                        T v = xp[iy * g->w + ix];
                        if (v > m || v != v)
                            m = v, mi = iy * g->w + ix;
                    }
                yp[oy * g->ow + ox] = m;
                ip[oy * g->ow + ox] = mi;
            }
        }
    }
}

/* result (planes of `hw` elements, zeroed here) += grad at the flat positions `idx`
 * (planes of `ohw`). The indices were range-checked by the caller. */
static void
CAT(index_scatter, SFX)(T *result, const T *grad, const int64_t *idx, int64_t lo, int64_t hi,
                        int64_t hw, int64_t ohw)
{
    for (int64_t pl = lo; pl < hi; pl++) {
        T *rp = result + pl * hw;
        const T *gp = grad + pl * ohw;
        const int64_t *ip = idx + pl * ohw;
        memset(rp, 0, (size_t)hw * sizeof(T));
        for (int64_t q = 0; q < ohw; q++)
            rp[ip[q]] += gp[q];
    }
}

/* result[pl, q] = src[pl, idx[pl, q]] */
static void
CAT(index_gather, SFX)(T *result, const T *src, const int64_t *idx, int64_t lo, int64_t hi,
                       int64_t hw, int64_t ohw)
{
    for (int64_t pl = lo; pl < hi; pl++) {
        T *rp = result + pl * ohw;
        const T *sp = src + pl * hw;
        const int64_t *ip = idx + pl * ohw;
        for (int64_t q = 0; q < ohw; q++)
            rp[q] = sp[ip[q]];
    }
}

/* avg_pool2d forward (backward = false: y from x) or its adjoint (backward = true: x from y,
 * x zeroed here). Windows and divisors follow PyTorch: the window is clipped to the padded
 * input for count_include_pad, to the input otherwise; divisor_override replaces both. */
static void
CAT(avg_pool, SFX)(T *x, T *y, const yt__pool_geom *g, bool count_include_pad, int64_t divisor,
                   bool backward, int64_t lo, int64_t hi)
{
    int64_t hw = g->h * g->w, ohw = g->oh * g->ow;
    for (int64_t pl = lo; pl < hi; pl++) {
        T *xp = x + pl * hw;
        T *yp = y + pl * ohw;
        if (backward)
            memset(xp, 0, (size_t)hw * sizeof(T));
        for (int64_t oy = 0; oy < g->oh; oy++) {
            int64_t y0 = oy * g->sh - g->ph, y1 = y0 + g->kh;
            if (y1 > g->h + g->ph)
                y1 = g->h + g->ph;
            int64_t py = y1 - y0;
            if (y0 < 0)
                y0 = 0;
            if (y1 > g->h)
                y1 = g->h;
            for (int64_t ox = 0; ox < g->ow; ox++) {
                int64_t x0 = ox * g->sw - g->pw, x1 = x0 + g->kw;
                if (x1 > g->w + g->pw)
                    x1 = g->w + g->pw;
                int64_t px = x1 - x0;
                if (x0 < 0)
                    x0 = 0;
                if (x1 > g->w)
                    x1 = g->w;
                T *out = yp + oy * g->ow + ox;
                if (y0 >= y1 || x0 >= x1) {
                    if (!backward)
                        *out = 0;
                    continue;
                }
                int64_t div = divisor != YT_NONE  ? divisor
                              : count_include_pad ? py * px
                                                  : (y1 - y0) * (x1 - x0);
                if (backward) {
                    T v = *out / (T)div;
                    for (int64_t iy = y0; iy < y1; iy++)
                        for (int64_t ix = x0; ix < x1; ix++)
                            xp[iy * g->w + ix] += v;
                } else {
                    T s = 0;
                    for (int64_t iy = y0; iy < y1; iy++)
                        for (int64_t ix = x0; ix < x1; ix++)
                            s += xp[iy * g->w + ix];
                    *out = s / (T)div;
                }
            }
        }
    }
}

/* adaptive_avg_pool2d (or its adjoint): output (oy, ox) averages rows
 * [floor(oy h / oh), ceil((oy + 1) h / oh)) and the same for columns. */
static void
CAT(adaptive_avg_pool, SFX)(T *x, T *y, const yt__pool_geom *g, bool backward, int64_t lo,
                            int64_t hi)
{
    int64_t hw = g->h * g->w, ohw = g->oh * g->ow;
    for (int64_t pl = lo; pl < hi; pl++) {
        T *xp = x + pl * hw;
        T *yp = y + pl * ohw;
        if (backward)
            memset(xp, 0, (size_t)hw * sizeof(T));
        for (int64_t oy = 0; oy < g->oh; oy++) {
            int64_t y0 = oy * g->h / g->oh, y1 = ((oy + 1) * g->h + g->oh - 1) / g->oh;
            for (int64_t ox = 0; ox < g->ow; ox++) {
                int64_t x0 = ox * g->w / g->ow, x1 = ((ox + 1) * g->w + g->ow - 1) / g->ow;
                T div = (T)((y1 - y0) * (x1 - x0));
                T *out = yp + oy * g->ow + ox;
                if (backward) {
                    T v = *out / div;
                    for (int64_t iy = y0; iy < y1; iy++)
                        for (int64_t ix = x0; ix < x1; ix++)
                            xp[iy * g->w + ix] += v;
                } else {
                    T s = 0;
                    for (int64_t iy = y0; iy < y1; iy++)
                        for (int64_t ix = x0; ix < x1; ix++)
                            s += xp[iy * g->w + ix];
                    *out = s / div;
                }
            }
        }
    }
}

#undef CAT_
#undef CAT
#undef MAX2X2_ROW
