/* Stride-1 convolution without a column matrix, for one element type. Included by
 * conv_direct.c with
 *   T    element type (float, double)      VL   lanes of the vectors used
 *   SFX  name suffix (f32, f64, ...)        ATTR attributes of every function (a target ISA)
 *
 * With stride 1, a convolution over an input plane padded to [Hp, Wp] is, in "wide" output
 * coordinates q = oy * Wp + ox (ox running over all Wp columns, the last ones garbage),
 *   y[o, q] = sum over k = (c, i, j) of W[o, k] * xp[c * Hp * Wp + i * dh * Wp + j * dw + q]
 * : a GEMM whose B operand has row k = the padded input shifted by off[k], contiguous in q. So
 * the input is copied (padded) once and never unfolded kh * kw times. The garbage columns are
 * dropped when the result is copied out, and zeroed in the gradient before the weight-gradient
 * reduction. Buffers carry DIRECT_SLACK zero elements at the end for vector over-reads. */
#define CAT_(a, b) a##_##b
#define CAT(a, b)  CAT_(a, b)

typedef T CAT(vu, SFX) __attribute__((vector_size(VL * sizeof(T)), aligned(sizeof(T))));

/* Rows of a gemm_rows register tile: 8 with 32 vector registers (AVX-512), else 4; and at most
 * GEMM_NV vectors of columns: 3 x 8 accumulators plus 3 B vectors fit AVX-512's 32 registers,
 * 2 x 4 plus 2 fit AVX2's 16. */
#define GEMM_MR (VL * sizeof(T) == 64 ? 8 : 4)
#define GEMM_NV (VL * sizeof(T) == 64 ? 3 : 2)

/* One register tile of gemm_rows: rows m0 .. m0 + mr (of MR computed), nv * VL columns from n0.
 * Inlined with a constant nv, so the vector loops unroll. */
ATTR YT_ALWAYS_INLINE void
CAT(gemm_tile, SFX)(const T *const *ar, int64_t mr, int nv, int64_t n0, int64_t K, const T *b,
                    const int64_t *off, T *c, int64_t ldc)
{
    typedef CAT(vu, SFX) V;
    enum { MR = GEMM_MR };
    V acc[MR][GEMM_NV];
    for (int r = 0; r < MR; r++)
        for (int v = 0; v < nv; v++)
            acc[r][v] = (V){0};
    for (int64_t k = 0; k < K; k++) {
        const T *br = b + off[k] + n0;
        V bv[GEMM_NV];
        for (int v = 0; v < nv; v++)
            bv[v] = *(const V *)(br + v * VL);
        for (int r = 0; r < MR; r++) {
            T a = ar[r][k];
            for (int v = 0; v < nv; v++)
                acc[r][v] += a * bv[v];
        }
    }
    for (int64_t r = 0; r < mr; r++)
        for (int v = 0; v < nv; v++)
            *(V *)(c + r * ldc + n0 + v * VL) = acc[r][v];
}

/* C[m, n] = sum_k A[m * lda + k] * b[off[k] + n] for m < M, n < N; C rows `ldc` apart, with
 * room for whole vectors: columns up to N rounded up to VL are written (garbage past N). Reads
 * b rows up to VL - 1 elements past N. Tiles of GEMM_NV vectors, then one of fewer for the rest
 * (a 143-wide plane: three of 3 x 16 lanes, not five of 2 x 16). */
ATTR static void
CAT(gemm_rows, SFX)(int64_t M, int64_t N, int64_t K, const T *a, int64_t lda, const T *b,
                    const int64_t *off, T *c, int64_t ldc)
{
    enum { MR = GEMM_MR, NV = GEMM_NV };
    for (int64_t m0 = 0; m0 < M; m0 += MR) {
        int64_t mr = M - m0 < MR ? M - m0 : MR;
        const T *ar[MR];
        for (int r = 0; r < MR; r++) /* rows past M repeat row m0 (computed, not stored) */
            ar[r] = a + (m0 + (r < mr ? r : 0)) * lda;
        T *cm = c + m0 * ldc;
        int64_t n0 = 0;
        for (; n0 + NV * VL <= N; n0 += NV * VL)
            CAT(gemm_tile, SFX)(ar, mr, NV, n0, K, b, off, cm, ldc);
        int64_t rest = (N - n0 + VL - 1) / VL; /* vectors left, at most NV */
        if (rest == NV)
            CAT(gemm_tile, SFX)(ar, mr, NV, n0, K, b, off, cm, ldc);
        else if (NV > 2 && rest == 2) /* with NV = 2 (AVX2, f64), rest == NV above */
            CAT(gemm_tile, SFX)(ar, mr, 2, n0, K, b, off, cm, ldc);
        else if (rest == 1)
            CAT(gemm_tile, SFX)(ar, mr, 1, n0, K, b, off, cm, ldc);
    }
}

/* acc[m * Kn + k] (vectors) += A_i[m, q] * b_i[off[k] + q] over q < Q (a multiple of VL) and
 * images i < nimg (A_i = a + i * astride, b_i = b + i * bstride), for m < M, k < Kn: per-lane
 * partial sums of the weight gradient, reduced once at the end. A tile's sums stay in
 * registers over all the images. */
ATTR static void
CAT(dot_rows, SFX)(int64_t M, int64_t Kn, int64_t Q, int64_t nimg, const T *a, int64_t lda,
                   int64_t astride, const T *b, int64_t bstride, const int64_t *off,
                   CAT(vu, SFX) * acc)
{
    typedef CAT(vu, SFX) V;
    for (int64_t m0 = 0; m0 < M; m0 += 4) {
        int64_t mr = M - m0 < 4 ? M - m0 : 4;
        int64_t r1 = (mr > 1 ? 1 : 0) * lda, r2 = (mr > 2 ? 2 : 0) * lda;
        int64_t r3 = (mr > 3 ? 3 : 0) * lda;
        for (int64_t k0 = 0; k0 < Kn; k0 += 3) {
            int64_t kr = Kn - k0 < 3 ? Kn - k0 : 3;
            int64_t o0 = off[k0], o1 = off[k0 + (kr > 1 ? 1 : 0)], o2 = off[k0 + (kr > 2 ? 2 : 0)];
            V s00 = {0}, s01 = {0}, s02 = {0}, s10 = {0}, s11 = {0}, s12 = {0};
            V s20 = {0}, s21 = {0}, s22 = {0}, s30 = {0}, s31 = {0}, s32 = {0};
            for (int64_t i = 0; i < nimg; i++) {
                const T *a0 = a + i * astride + m0 * lda, *bi = b + i * bstride;
                const T *b0 = bi + o0, *b1 = bi + o1, *b2 = bi + o2;
                for (int64_t q = 0; q < Q; q += VL) {
                    V x0 = *(const V *)(b0 + q), x1 = *(const V *)(b1 + q);
                    V x2 = *(const V *)(b2 + q);
                    V g0 = *(const V *)(a0 + q), g1 = *(const V *)(a0 + r1 + q);
                    V g2 = *(const V *)(a0 + r2 + q), g3 = *(const V *)(a0 + r3 + q);
                    s00 += g0 * x0, s01 += g0 * x1, s02 += g0 * x2;
                    s10 += g1 * x0, s11 += g1 * x1, s12 += g1 * x2;
                    s20 += g2 * x0, s21 += g2 * x1, s22 += g2 * x2;
                    s30 += g3 * x0, s31 += g3 * x1, s32 += g3 * x2;
                }
            }
            V s[4][3] = {{s00, s01, s02}, {s10, s11, s12}, {s20, s21, s22}, {s30, s31, s32}};
            for (int64_t r = 0; r < mr; r++)
                for (int64_t kk = 0; kk < kr; kk++)
                    acc[(m0 + r) * Kn + k0 + kk] += s[r][kk];
        }
    }
}

/* dst [ch, hp, wp] (then `slack` zeros) = src [ch, h, w] with (top, left) zero borders of
 * (ph, pw) and whatever remains to hp, wp on the bottom and right. Rows are short (tens of
 * elements): plain loops, not a memcpy call per row. */
ATTR static void
CAT(pad_planes, SFX)(T *dst, const T *src, int64_t ch, int64_t h, int64_t w, int64_t hp, int64_t wp,
                     int64_t ph, int64_t pw, int64_t slack)
{
    if (hp == h && wp == w) {
        memcpy(dst, src, (size_t)(ch * h * w) * sizeof(T));
    } else {
        for (int64_t c = 0; c < ch; c++) {
            T *d = dst + c * hp * wp;
            const T *s = src + c * h * w;
            for (int64_t y = 0; y < hp; y++) {
                T *dr = d + y * wp;
                int64_t sy = y - ph;
                if (sy < 0 || sy >= h) {
                    for (int64_t x = 0; x < wp; x++)
                        dr[x] = 0;
                    continue;
                }
                const T *sr = s + sy * w - pw;
                for (int64_t x = 0; x < pw; x++)
                    dr[x] = 0;
                for (int64_t x = pw; x < pw + w; x++)
                    dr[x] = sr[x];
                for (int64_t x = pw + w; x < wp; x++)
                    dr[x] = 0;
            }
        }
    }
    T *tail = dst + ch * hp * wp;
    for (int64_t i = 0; i < slack; i++)
        tail[i] = 0;
}

/* dst rows (pitch dp) = src rows (pitch sp) + add, `cols` elements per row. Rows are short
 * (tens of elements): whole vectors wherever the vector read and write both stay before the
 * last row's end (the spill lands in later rows, written afterwards, or in a wide buffer's
 * garbage columns), exact elements otherwise. */
ATTR static void
CAT(copy_rows, SFX)(T *dst, int64_t dp, const T *src, int64_t sp, int64_t rows, int64_t cols, T add)
{
    typedef CAT(vu, SFX) V;
    int64_t wide = (cols + VL - 1) / VL * VL;
    int64_t dend = (rows - 1) * dp + cols, send = (rows - 1) * sp + cols;
    for (int64_t r = 0; r < rows; r++) {
        T *d = dst + r * dp;
        const T *s = src + r * sp;
        if (r * dp + wide <= dend && r * sp + wide <= send) {
            for (int64_t x = 0; x < cols; x += VL)
                *(V *)(d + x) = *(const V *)(s + x) + add;
        } else {
            for (int64_t x = 0; x < cols; x++)
                d[x] = s[x] + add;
        }
    }
}

/* Slack (zero elements) after every padded buffer: vector over-reads of gemm_rows / dot_rows. */
ATTR static inline int64_t
CAT(direct_slack, SFX)(const yt__conv_geom *g)
{
    int64_t a = g->dw * (g->kw - 1), b = g->dh * (g->kh - 1);
    return (a > b ? a : b) + 4 * VL;
}

/* The arguments of one direct convolution pass, for its chunks (blocks of images, each with its
 * own scratch: the `nt` blocks are fixed by the caller, the threads that run them are not). */
typedef struct CAT(direct_job, SFX) {
    T *out;
    const T *x, *w, *bias, *gy;
    CAT(vu, SFX) * accs;
    const yt__conv_geom *g;
    const int64_t *off;
    T *scratch;
    int64_t per_thread;
    int nt;
} CAT(direct_job, SFX);

/* y = conv(x, w) + bias for the images of block c; scratch: per block, `per_thread` elements. */
ATTR static void
CAT(direct_forward_block, SFX)(void *arg, int64_t c)
{
    const CAT(direct_job, SFX) *j = arg;
    const yt__conv_geom *g = j->g;
    T *y = j->out;
    const T *x = j->x, *w = j->w, *bias = j->bias;
    const int64_t *off = j->off;
    int64_t cg = g->c_in / g->groups, og = g->c_out / g->groups, kdim = cg * g->kh * g->kw;
    int64_t hp = g->h + 2 * g->ph, wp = g->w + 2 * g->pw, nw = g->oh * wp;
    int64_t slack = CAT(direct_slack, SFX)(g), ohw = g->oh * g->ow;
    int64_t ldc = (nw + 2 * VL - 1) / (2 * VL) * (2 * VL);
    for (int64_t n = g->n * c / j->nt; n < g->n * (c + 1) / j->nt; n++) {
        T *xp = j->scratch + c * j->per_thread;
        T *yw = xp + cg * hp * wp + slack;
        for (int64_t gi = 0; gi < g->groups; gi++) {
            CAT(pad_planes, SFX)
            (xp, x + (n * g->c_in + gi * cg) * g->h * g->w, cg, g->h, g->w, hp, wp, g->ph, g->pw,
             slack);
            CAT(gemm_rows, SFX)(og, nw, kdim, w + gi * og * kdim, kdim, xp, off, yw, ldc);
            for (int64_t o = 0; o < og; o++) {
                T b = bias != NULL ? bias[gi * og + o] : 0;
                T *dst = y + (n * g->c_out + gi * og + o) * ohw;
                CAT(copy_rows, SFX)(dst, g->ow, yw + o * ldc, wp, g->oh, g->ow, b);
            }
        }
    }
}

ATTR static void
CAT(direct_forward, SFX)(T *y, const T *x, const T *w, const T *bias, const yt__conv_geom *g,
                         const int64_t *off, T *scratch, int64_t per_thread, int nt, int threads)
{
    CAT(direct_job, SFX) j = {y, x, w, bias, NULL, NULL, g, off, scratch, per_thread, nt};
    yt__parallel_run(nt, threads, CAT(direct_forward_block, SFX), &j);
}

/* gx = col2im(wt @ gy): with wt [groups][kdim = cg * kh * kw, og] the transposed weight and gy
 * in wide coordinates of the padded input (zero garbage columns), the column row of tap
 * (c, i, j) is added to the padded input plane c shifted by off[(c, i, j)], a contiguous add;
 * the padding is cropped at the end. Scratch per thread: gy wide [og, nw + slack], columns
 * [kdim, nw], padded gx [cg, hp, wp], after og row offsets. */
ATTR static void
CAT(direct_backward_input_block, SFX)(void *arg, int64_t blk)
{
    const CAT(direct_job, SFX) *j = arg;
    const yt__conv_geom *g = j->g;
    T *gx = j->out;
    const T *gy = j->gy, *wt = j->w;
    const int64_t *off = j->off;
    int64_t cg = g->c_in / g->groups, og = g->c_out / g->groups, kdim = cg * g->kh * g->kw;
    int64_t hp = g->h + 2 * g->ph, wp = g->w + 2 * g->pw, plane = hp * wp;
    int64_t nw = g->oh * wp, slack = CAT(direct_slack, SFX)(g), hw = g->h * g->w;
    int64_t gpitch = nw + slack, ldc = (nw + 2 * VL - 1) / (2 * VL) * (2 * VL);
    for (int64_t n = g->n * blk / j->nt; n < g->n * (blk + 1) / j->nt; n++) {
        /* B row offsets first (the block's scratch is 64-byte aligned), then the buffers */
        int64_t *rows = (int64_t *)(j->scratch + blk * j->per_thread);
        T *gyw = (T *)(rows + og);
        T *col = gyw + og * gpitch;
        T *gxp = col + kdim * ldc;
        for (int64_t o = 0; o < og; o++)
            rows[o] = o * gpitch;
        for (int64_t gi = 0; gi < g->groups; gi++) {
            for (int64_t o = 0; o < og; o++) {
                const T *src = gy + (n * g->c_out + gi * og + o) * g->oh * g->ow;
                T *dst = gyw + o * gpitch;
                CAT(copy_rows, SFX)(dst, wp, src, g->ow, g->oh, g->ow, 0);
                for (int64_t oy = 0; oy < g->oh; oy++)
                    for (int64_t ox = g->ow; ox < wp; ox++)
                        dst[oy * wp + ox] = 0;
                for (int64_t i = nw; i < gpitch; i++)
                    dst[i] = 0;
            }
            CAT(gemm_rows, SFX)(kdim, nw, og, wt + gi * kdim * og, og, gyw, rows, col, ldc);
            for (int64_t i = 0; i < cg * plane; i++)
                gxp[i] = 0;
            for (int64_t k = 0; k < kdim; k++) {
                int64_t c = k / (g->kh * g->kw), o_k = off[k] - c * plane;
                T *dst = gxp + c * plane + o_k;
                const T *src = col + k * ldc;
                int64_t len = plane - o_k < nw ? plane - o_k : nw;
                for (int64_t q = 0; q < len; q++)
                    dst[q] += src[q];
            }
            for (int64_t c = 0; c < cg; c++) {
                T *dst = gx + (n * g->c_in + gi * cg + c) * hw;
                CAT(copy_rows, SFX)
                (dst, g->w, gxp + c * plane + g->ph * wp + g->pw, wp, g->h, g->w, 0);
            }
        }
    }
}

ATTR static void
CAT(direct_backward_input, SFX)(T *gx, const T *gy, const T *wt, const yt__conv_geom *g,
                                const int64_t *off, T *scratch, int64_t per_thread, int nt,
                                int threads)
{
    CAT(direct_job, SFX) j = {gx, NULL, wt, NULL, gy, NULL, g, off, scratch, per_thread, nt};
    yt__parallel_run(nt, threads, CAT(direct_backward_input_block, SFX), &j);
}

/* Images per pass of the weight-gradient reduction (their buffers stay in L2). */
#define DIRECT_WEIGHT_IMAGES 8

/* Per-block vector partials acc [c_out * kdim] of the weight gradient; the caller reduces them
 * in block order. The scratch of a block holds DIRECT_WEIGHT_IMAGES padded inputs, then as many
 * wide gradients. */
ATTR static void
CAT(direct_backward_weight_block, SFX)(void *arg, int64_t c)
{
    const CAT(direct_job, SFX) *j = arg;
    const yt__conv_geom *g = j->g;
    const T *gy = j->gy, *x = j->x;
    const int64_t *off = j->off;
    CAT(vu, SFX) *accs = j->accs;
    T *scratch = j->scratch;
    int64_t per_thread = j->per_thread;
    int64_t cg = g->c_in / g->groups, og = g->c_out / g->groups, kdim = cg * g->kh * g->kw;
    int64_t hp = g->h + 2 * g->ph, wp = g->w + 2 * g->pw;
    int64_t q = ((g->oh - 1) * wp + g->ow + VL - 1) / VL * VL;
    int64_t slack = CAT(direct_slack, SFX)(g), wsize = g->c_out * kdim;
    int64_t xstride = cg * hp * wp + slack, gstride = og * q;
    {
        int64_t t = c, tn = j->nt;
        T *xp = scratch + (int64_t)t * per_thread;
        T *gw = xp + DIRECT_WEIGHT_IMAGES * xstride;
        CAT(vu, SFX) *acc = accs + (int64_t)t * wsize;
        memset(acc, 0, (size_t)wsize * sizeof *acc);
        int64_t lo = g->n * t / tn, hi = g->n * (t + 1) / tn;
        for (int64_t n0 = lo; n0 < hi; n0 += DIRECT_WEIGHT_IMAGES) {
            int64_t nb = hi - n0 < DIRECT_WEIGHT_IMAGES ? hi - n0 : DIRECT_WEIGHT_IMAGES;
            for (int64_t gi = 0; gi < g->groups; gi++) {
                for (int64_t i = 0; i < nb; i++) {
                    int64_t n = n0 + i;
                    CAT(pad_planes, SFX)
                    (xp + i * xstride, x + (n * g->c_in + gi * cg) * g->h * g->w, cg, g->h, g->w,
                     hp, wp, g->ph, g->pw, slack);
                    /* gy in wide coordinates, zero in the garbage columns and up to q */
                    for (int64_t o = 0; o < og; o++) {
                        const T *src = gy + (n * g->c_out + gi * og + o) * g->oh * g->ow;
                        T *dst = gw + i * gstride + o * q;
                        CAT(copy_rows, SFX)(dst, wp, src, g->ow, g->oh, g->ow, 0);
                        for (int64_t oy = 0; oy < g->oh; oy++) {
                            int64_t end = oy + 1 < g->oh ? wp : q - oy * wp;
                            for (int64_t ox = g->ow; ox < end; ox++)
                                dst[oy * wp + ox] = 0;
                        }
                    }
                }
                CAT(dot_rows, SFX)
                (og, kdim, q, nb, gw, q, gstride, xp, xstride, off, acc + gi * og * kdim);
            }
        }
    }
}

ATTR static void
CAT(direct_backward_weight, SFX)(CAT(vu, SFX) * accs, const T *gy, const T *x,
                                 const yt__conv_geom *g, const int64_t *off, T *scratch,
                                 int64_t per_thread, int nt, int threads)
{
    CAT(direct_job, SFX) j = {NULL, x, NULL, NULL, gy, accs, g, off, scratch, per_thread, nt};
    yt__parallel_run(nt, threads, CAT(direct_backward_weight_block, SFX), &j);
}

#undef CAT_
#undef CAT
