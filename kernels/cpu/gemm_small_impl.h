/* Body of the small-GEMM path for one element type, included by gemm_small.c with
 *   T  the element type     SFX  the name suffix (s or d)     KSET  its kernel-set type
 * Packing and blocking are plain C; the microkernels and transposes (gemm_ukr.h) carry the
 * vector instructions. */

#define CAT_(a, b) a##b
#define CAT(a, b)  CAT_(a, b)
#define FN(name)   CAT(name, SFX)

/* A's rows [0, rows) x cols [0, kc) into mr-row panels: for each p, mr values of column p (rows
 * past `rows` are zero). A column-major A copies runs; a row-major one is transposed in
 * LANES x LANES blocks; anything else is gathered. */
static void
FN(pack_a_)(const KSET *u, int64_t rows, int64_t kc, const T *a, int64_t rsa, int64_t csa, T *out)
{
    const int mr = u->mr, lanes = u->lanes;
    for (int64_t i0 = 0; i0 < rows; i0 += mr) {
        int64_t h = rows - i0 < mr ? rows - i0 : mr;
        const T *src = a + i0 * rsa;
        if (rsa == 1) {
            for (int64_t p = 0; p < kc; p++) {
                memcpy(out + p * mr, src + p * csa, (size_t)h * sizeof(T));
                for (int64_t i = h; i < mr; i++)
                    out[p * mr + i] = 0;
            }
        } else if (csa == 1) {
            for (int64_t p0 = 0; p0 < kc; p0 += lanes) {
                int cols = kc - p0 < lanes ? (int)(kc - p0) : lanes;
                for (int r0 = 0; r0 < mr; r0 += lanes) {
                    int width = mr - r0 < lanes ? mr - r0 : lanes;
                    int64_t left = h - r0 < 0 ? 0 : h - r0;
                    int nrows = left < width ? (int)left : width;
                    const T *s = nrows > 0 ? src + r0 * rsa + p0 : src;
                    u->tr(s, rsa, nrows, cols, out + p0 * mr + r0, mr, width);
                }
            }
        } else {
            for (int64_t p = 0; p < kc; p++) {
                T *dst = out + p * mr;
                const T *col = src + p * csa;
                int64_t i = 0;
                for (; i < h; i++)
                    dst[i] = col[i * rsa];
                for (; i < mr; i++)
                    dst[i] = 0;
            }
        }
        out += (int64_t)mr * kc;
    }
}

/* Width of the packed B panel holding columns [j0, cols): nr, or one vector for a last panel
 * that narrow. */
static int
FN(panel_width_)(const KSET *u, int64_t j0, int64_t cols)
{
    return cols - j0 <= u->lanes ? u->lanes : 2 * u->lanes;
}

/* B's rows [0, kc) x cols [0, cols) into panels nr columns wide (the last one may be one vector
 * wide): for each p, the panel's values of row p (columns past `cols` are zero). Unit column
 * stride copies rows; a column-major B (the transposed weight of x @ W^T) is transposed in
 * blocks; otherwise columns are walked so that reads stay sequential along rsb. */
static void
FN(pack_b_)(const KSET *u, int64_t kc, int64_t cols, const T *b, int64_t rsb, int64_t csb, T *out)
{
    const int lanes = u->lanes;
    for (int64_t j0 = 0; j0 < cols; j0 += 2 * lanes) {
        const int nr = FN(panel_width_)(u, j0, cols);
        int64_t w = cols - j0 < nr ? cols - j0 : nr;
        const T *src = b + j0 * csb;
        if (csb == 1) {
            for (int64_t p = 0; p < kc; p++) {
                memcpy(out + p * nr, src + p * rsb, (size_t)w * sizeof(T));
                for (int64_t j = w; j < nr; j++)
                    out[p * nr + j] = 0;
            }
        } else if (rsb == 1) {
            for (int64_t p0 = 0; p0 < kc; p0 += lanes) {
                int np = kc - p0 < lanes ? (int)(kc - p0) : lanes;
                for (int v0 = 0; v0 < nr; v0 += lanes) {
                    int64_t left = w - v0 < 0 ? 0 : w - v0;
                    int nrows = left < lanes ? (int)left : lanes;
                    const T *s = nrows > 0 ? src + v0 * csb + p0 : src;
                    u->tr(s, csb, nrows, np, out + p0 * nr + v0, nr, lanes);
                }
            }
        } else {
            for (int64_t j = 0; j < w; j++) {
                const T *col = src + j * csb;
                for (int64_t p = 0; p < kc; p++)
                    out[p * nr + j] = col[p * rsb];
            }
            for (int64_t j = w; j < nr; j++)
                for (int64_t p = 0; p < kc; p++)
                    out[p * nr + j] = 0;
        }
        out += (int64_t)nr * kc;
    }
}

/* C (m x n) = alpha * A B + beta * C (+ bias[j] in column j when bias is not NULL; then beta
 * must be 0) for one thread, A and B already in no-transpose form.
 * Loops: kc blocks of k (B's block packed once per kc block and column block, unless read in
 * place), MC-row blocks of A (packed, unless read in place), then MR x NR tiles with the B
 * micro-panel reused from L1 across the rows. In-place A tiles need a kernel of exactly their
 * height; a last tile of another height is packed on its own. */
static yt_status
FN(small_gemm_)(const KSET *u, int64_t m, int64_t n, int64_t k, T alpha, const T *a, int64_t rsa,
                int64_t csa, const T *b, int64_t rsb, int64_t csb, T beta, T *c, int64_t rsc,
                int64_t csc, const T *bias)
{
    const int mr = u->mr, lanes = u->lanes, nr = 2 * lanes;
    const int a_mode = a_access(rsa, csa, sizeof(T));
    const bool b_direct = b_in_place(rsb, csb, sizeof(T));
    int64_t kc_max = k < SMALL_KC ? k : SMALL_KC;
    int64_t mc_max = a_mode != 0 ? mr : m < SMALL_MC ? m : SMALL_MC;
    int64_t nc_max = b_direct ? 0 : n < SMALL_NC ? n : SMALL_NC;
    int64_t mc_pad = round_up(mc_max, mr), nc_pad = round_up(nc_max, nr);
    size_t a_bytes = (size_t)(mc_pad * kc_max) * sizeof(T);
    size_t b_bytes = (size_t)(nc_pad * kc_max) * sizeof(T);
    T *pa = yt__cpu_alloc(a_bytes), *pb = b_bytes > 0 ? yt__cpu_alloc(b_bytes) : NULL;
    if (pa == NULL || (b_bytes > 0 && pb == NULL)) {
        if (pa != NULL)
            yt__cpu_free(pa, a_bytes);
        if (pb != NULL)
            yt__cpu_free(pb, b_bytes);
        return yt__fail_status(YT_ERR_NOMEM, "gemm: no memory for %zu bytes of packing buffers",
                               a_bytes + b_bytes);
    }
    for (int64_t jc = 0; jc < n; jc += SMALL_NC) {
        int64_t nc = n - jc < SMALL_NC ? n - jc : SMALL_NC;
        for (int64_t pc = 0; pc < k; pc += SMALL_KC) {
            int64_t kc = k - pc < SMALL_KC ? k - pc : SMALL_KC;
            T beta_pc = pc == 0 ? beta : (T)1;        /* later k blocks accumulate */
            const T *bias_pc = pc == 0 ? bias : NULL; /* added once, with the first block */
            if (!b_direct)
                FN(pack_b_)(u, kc, nc, b + pc * rsb + jc * csb, rsb, csb, pb);
            for (int64_t ic = 0; ic < m; ic += SMALL_MC) {
                int64_t mc = m - ic < SMALL_MC ? m - ic : SMALL_MC;
                const T *ablk = a + ic * rsa + pc * csa;
                /* the one tile that is packed when A is read in place: the last, if no kernel
                 * has its height */
                int64_t packed_row = -1;
                if (a_mode == 0) {
                    FN(pack_a_)(u, mc, kc, ablk, rsa, csa, pa);
                } else {
                    int64_t last = (mc - 1) / mr * mr, h = mc - last;
                    if (h != u->mrs[0] && h != u->mrs[1] && h != u->mrs[2]) {
                        FN(pack_a_)(u, h, kc, ablk + last * rsa, rsa, csa, pa);
                        packed_row = last;
                    }
                }
                for (int64_t jr = 0; jr < nc; jr += nr) {
                    int nw = nc - jr < nr ? (int)(nc - jr) : nr;
                    int wide = nw > lanes;
                    const T *pbj = b_direct ? b + pc * rsb + (jc + jr) * csb : pb + jr * kc;
                    int64_t ldb = b_direct ? rsb : FN(panel_width_)(u, jr, nc);
                    for (int64_t ir = 0; ir < mc; ir += mr) {
                        int mh = mc - ir < mr ? (int)(mc - ir) : mr;
                        int h = mh > u->mrs[1] ? 0 : mh > u->mrs[2] ? 1 : 2;
                        T *cij = c + (ic + ir) * rsc + (jc + jr) * csc;
                        if (a_mode == 0 || ir == packed_row) {
                            const T *at = a_mode == 0 ? pa + ir * kc : pa;
                            u->fn[h][wide][0](kc, at, mr, pbj, ldb, cij, rsc, csc, alpha, beta_pc,
                                              mh, nw, bias_pc ? bias_pc + jc + jr : NULL);
                        } else {
                            const T *at = ablk + ir * rsa;
                            int64_t lda = a_mode == 2 ? rsa : csa;
                            u->fn[h][wide][a_mode == 2](kc, at, lda, pbj, ldb, cij, rsc, csc, alpha,
                                                        beta_pc, mh, nw,
                                                        bias_pc ? bias_pc + jc + jr : NULL);
                        }
                    }
                }
            }
        }
    }
    if (pb != NULL)
        yt__cpu_free(pb, b_bytes);
    yt__cpu_free(pa, a_bytes);
    return YT_OK;
}

#undef FN
#undef CAT
#undef CAT_
