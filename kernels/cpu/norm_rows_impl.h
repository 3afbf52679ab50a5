/* Typed loops of the row-normalisation engine (norm_rows.c includes this once per compute
 * type, with NT = float or double and FN(name) giving each function a per-type name, after
 * norm_sums_impl.h). */

/* Mean (0 when !center) and 1/sqrt(var + eps) of rows [r, r + n), n <= NORM_TILE: the sums row
 * by row, then the square roots together (independent of each other, so they overlap instead
 * of every row waiting for its own). The backward recomputes them with this same code, so both
 * see the same values. */
static void
FN(tile_stats)(const NT *x, const yt__rownorm *p, int64_t r, int n, double *m, double *rs)
{
    const int64_t D = p->row_len;
    double var[NORM_TILE];
    for (int t = 0; t < n; t++) {
        const NT *xr = x + (r + t) * D;
        m[t] = p->center ? FN(sum)(xr, D) / (double)D : 0.0;
        var[t] = FN(sumsq)(xr, D, (NT)m[t]) / (double)D;
    }
    for (int t = 0; t < n; t++)
        rs[t] = 1.0 / sqrt(var[t] + p->eps);
}

/* Rows [r0, r1) of the forward. */
static void
FN(forward_rows)(const NT *x, NT *y, NT *mean, NT *rstd, const NT *w, const NT *b,
                 const yt__rownorm *p, int64_t r0, int64_t r1)
{
    const int64_t D = p->row_len, S = p->inner, K = S > 0 ? D / S : 0;
    double tm[NORM_TILE], trs[NORM_TILE];
    for (int64_t r = r0; r < r1; r++) {
        const int t = (int)((r - r0) % NORM_TILE);
        if (t == 0)
            FN(tile_stats)(x, p, r, r1 - r < NORM_TILE ? (int)(r1 - r) : NORM_TILE, tm, trs);
        const NT *xr = x + r * D;
        NT *yr = y + r * D;
        const double m = tm[t], rs = trs[t];
        if (mean)
            mean[r] = (NT)m;
        if (rstd)
            rstd[r] = (NT)rs;
        const NT *wr = w ? w + (r % p->groups) * K : NULL;
        const NT *br = b ? b + (r % p->groups) * K : NULL;
        const NT mm = (NT)m, rr = (NT)rs;
        if (S == 1) {
            if (wr && br) {
#pragma omp simd
                for (int64_t i = 0; i < D; i++)
                    yr[i] = (xr[i] - mm) * rr * wr[i] + br[i];
            } else if (wr) {
#pragma omp simd
                for (int64_t i = 0; i < D; i++)
                    yr[i] = (xr[i] - mm) * rr * wr[i];
            } else if (br) {
#pragma omp simd
                for (int64_t i = 0; i < D; i++)
                    yr[i] = (xr[i] - mm) * rr + br[i];
            } else {
#pragma omp simd
                for (int64_t i = 0; i < D; i++)
                    yr[i] = (xr[i] - mm) * rr;
            }
            continue;
        }
        for (int64_t k = 0; k < K; k++) {
            const NT sc = rr * (wr ? wr[k] : (NT)1);
            const NT sh = (br ? br[k] : (NT)0) - mm * sc;
            const NT *xs = xr + k * S;
            NT *ys = yr + k * S;
#pragma omp simd
            for (int64_t s = 0; s < S; s++)
                ys[s] = xs[s] * sc + sh;
        }
    }
}

/* Rows [r0, r1) of the backward. dwacc/dbacc (length G*K, may be NULL) receive this thread's
 * sums of dy * xhat and dy. mean/rstd NULL: recomputed per row. */
static void
FN(backward_rows)(const NT *dy, const NT *x, const NT *mean, const NT *rstd, const NT *w, NT *dx,
                  NT *dwacc, NT *dbacc, const yt__rownorm *p, int64_t r0, int64_t r1)
{
    const int64_t D = p->row_len, S = p->inner, K = S > 0 ? D / S : 0;
    double tm[NORM_TILE], trs[NORM_TILE];
    for (int64_t r = r0; r < r1; r++) {
        const NT *xr = x ? x + r * D : NULL, *gr = dy + r * D;
        const int64_t base = (r % p->groups) * K;
        const NT *wr = w ? w + base : NULL;
        NT *dwr = dwacc ? dwacc + base : NULL, *dbr = dbacc ? dbacc + base : NULL;
        double m = 0, rs = 0;
        if (!dx && !dwr) {
            /* only the bias sums: no statistics, x not read (it may be NULL) */
        } else if (rstd) {
            m = p->center ? (double)mean[r] : 0.0;
            rs = (double)rstd[r];
        } else {
            const int t = (int)((r - r0) % NORM_TILE);
            if (t == 0)
                FN(tile_stats)(x, p, r, r1 - r < NORM_TILE ? (int)(r1 - r) : NORM_TILE, tm, trs);
            m = tm[t];
            rs = trs[t];
        }
        const NT mm = (NT)m, rr = (NT)rs;
        double a = 0, bs = 0; /* sum dy*w and sum dy*w*x over the row */
        if (S == 1) {
            if (dx)
                FN(dot2)(gr, xr, wr, D, &a, &bs);
            if (dwr) {
#pragma omp simd
                for (int64_t i = 0; i < D; i++)
                    dwr[i] += gr[i] * (xr[i] - mm) * rr;
            }
            if (dbr) {
#pragma omp simd
                for (int64_t i = 0; i < D; i++)
                    dbr[i] += gr[i];
            }
        } else {
            for (int64_t k = 0; k < K; k++) {
                double db, ds = 0; /* sums of dy and dy * x over the run */
                if (dx || dwr)
                    FN(dot2)(gr + k * S, xr + k * S, NULL, S, &db, &ds);
                else
                    db = FN(sum)(gr + k * S, S);
                double wk = wr ? (double)wr[k] : 1.0;
                a += db * wk;
                bs += ds * wk;
                if (dwr)
                    dwr[k] += (NT)(((double)ds - m * db) * rs);
                if (dbr)
                    dbr[k] += db;
            }
        }
        if (!dx)
            continue;
        /* dx = rs * w * dy + c2 * x + c3 (the mean and variance terms folded into c2, c3) */
        const double r3 = rs * rs * rs / (double)D;
        const double c2d = p->center ? (a * m - bs) * r3 : -bs * r3;
        const NT c2 = (NT)c2d;
        const NT c3 = p->center ? (NT)(-c2d * m - a * rs / (double)D) : (NT)0;
        NT *dxr = dx + r * D;
        if (S == 1) {
            if (wr) {
#pragma omp simd
                for (int64_t i = 0; i < D; i++)
                    dxr[i] = rr * wr[i] * gr[i] + c2 * xr[i] + c3;
            } else {
#pragma omp simd
                for (int64_t i = 0; i < D; i++)
                    dxr[i] = rr * gr[i] + c2 * xr[i] + c3;
            }
            continue;
        }
        for (int64_t k = 0; k < K; k++) {
            const NT sc = rr * (wr ? wr[k] : (NT)1);
            const NT *xs = xr + k * S, *gs = gr + k * S;
            NT *dxs = dxr + k * S;
#pragma omp simd
            for (int64_t s = 0; s < S; s++)
                dxs[s] = sc * gs[s] + c2 * xs[s] + c3;
        }
    }
}
