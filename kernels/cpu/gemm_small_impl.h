/* Body of the small-GEMM path for one element type, included by gemm_small.c with
 *   T  the element type     SFX  the name suffix (s or d)
 * Packing and blocking are plain C; only the microkernels (defined in gemm_small.c with their
 * target attributes) use vector instructions. */

#define CAT_(a, b) a##b
#define CAT(a, b)  CAT_(a, b)
#define FN(name)   CAT(name, SFX)

/* A's rows [0, rows) x cols [0, kc) into MR-row micro-panels: for each p, MR values of column p
 * (rows past `rows` are zero). Reads any strides: p outer, i inner walks rsa-strided rows. */
static void
FN(pack_a_)(int64_t rows, int64_t kc, const T *a, int64_t rsa, int64_t csa, int mr, T *out)
{
    for (int64_t i0 = 0; i0 < rows; i0 += mr) {
        int64_t h = rows - i0 < mr ? rows - i0 : mr;
        const T *src = a + i0 * rsa;
        if (h == mr && rsa == 1) {
            for (int64_t p = 0; p < kc; p++)
                memcpy(out + p * mr, src + p * csa, (size_t)mr * sizeof(T));
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

/* B's rows [0, kc) x cols [0, cols) into NR-column micro-panels: for each p, NR values of row p
 * (columns past `cols` are zero). Unit column stride copies rows; otherwise columns are walked
 * so that reads stay sequential along rsb. */
static void
FN(pack_b_)(int64_t kc, int64_t cols, const T *b, int64_t rsb, int64_t csb, int nr, T *out)
{
    for (int64_t j0 = 0; j0 < cols; j0 += nr) {
        int64_t w = cols - j0 < nr ? cols - j0 : nr;
        const T *src = b + j0 * csb;
        if (csb == 1) {
            for (int64_t p = 0; p < kc; p++) {
                memcpy(out + p * nr, src + p * rsb, (size_t)w * sizeof(T));
                for (int64_t j = w; j < nr; j++)
                    out[p * nr + j] = 0;
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

/* C (m x n) = alpha * A B + beta * C for one thread, A and B already in no-transpose form.
 * Loops: kc blocks of k (B's block packed once per kc block and column block), MC-row blocks of
 * A packed into L2, then MR x NR tiles with the B micro-panel reused from L1 across the rows. */
static yt_status
FN(small_gemm_)(const FN(ukr_info_) * u, int64_t m, int64_t n, int64_t k, T alpha, const T *a,
                int64_t rsa, int64_t csa, const T *b, int64_t rsb, int64_t csb, T beta, T *c,
                int64_t rsc, int64_t csc)
{
    const int mr = u->mr, nr = u->nr;
    int64_t kc_max = k < SMALL_KC ? k : SMALL_KC;
    int64_t mc_max = m < SMALL_MC ? m : SMALL_MC;
    int64_t nc_max = n < SMALL_NC ? n : SMALL_NC;
    int64_t mc_pad = (mc_max + mr - 1) / mr * mr, nc_pad = (nc_max + nr - 1) / nr * nr;
    size_t a_bytes = (size_t)(mc_pad * kc_max) * sizeof(T);
    size_t b_bytes = (size_t)(nc_pad * kc_max) * sizeof(T);
    T *pa = yt__cpu_alloc(a_bytes), *pb = yt__cpu_alloc(b_bytes);
    if (pa == NULL || pb == NULL) {
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
            T beta_pc = pc == 0 ? beta : (T)1; /* later k blocks accumulate */
            /* A row-major B with short rows is read in place (its whole-width panels); only
             * the last partial panel is packed. Long rows are packed: their kc-row panels
             * would collide in L1 sets. */
            bool direct = csb == 1 && rsb * (int64_t)sizeof(T) <= SMALL_DIRECT_ROW_BYTES;
            int64_t full = direct ? nc / nr * nr : 0;
            if (full < nc)
                FN(pack_b_)(kc, nc - full, b + pc * rsb + (jc + full) * csb, rsb, csb, nr, pb);
            for (int64_t ic = 0; ic < m; ic += SMALL_MC) {
                int64_t mc = m - ic < SMALL_MC ? m - ic : SMALL_MC;
                FN(pack_a_)(mc, kc, a + ic * rsa + pc * csa, rsa, csa, mr, pa);
                for (int64_t jr = 0; jr < nc; jr += nr) {
                    int nw = nc - jr < nr ? (int)(nc - jr) : nr;
                    const T *pbj = jr < full ? b + pc * rsb + jc + jr : pb + (jr - full) * kc;
                    int64_t ldb = jr < full ? rsb : nr;
                    for (int64_t ir = 0; ir < mc; ir += mr) {
                        int mh = mc - ir < mr ? (int)(mc - ir) : mr;
                        T *cij = c + (ic + ir) * rsc + (jc + jr) * csc;
                        u->fn(kc, pa + ir * kc, pbj, ldb, cij, rsc, csc, alpha, beta_pc, mh, nw);
                    }
                }
            }
        }
    }
    yt__cpu_free(pb, b_bytes);
    yt__cpu_free(pa, a_bytes);
    return YT_OK;
}

#undef FN
#undef CAT
#undef CAT_
