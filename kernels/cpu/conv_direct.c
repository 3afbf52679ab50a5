/* Stride-1 convolutions (every convolution of the benchmark CNN) without a column matrix: see
 * conv_direct_impl.h for the method. Scratch comes from the caching allocator. */
/* -std=c11 turns off the fusing of a * b + c into one FMA; these loops are made of them. */
#pragma GCC optimize("O3", "fp-contract=fast")

#include <string.h>

#include "conv.h"
#include "cpu_isa.h"
#include "parallel.h"

#define ATTR
#define T   float
#define SFX f32
#define VL  8
#include "conv_direct_impl.h"
#undef T
#undef SFX
#undef VL

#define T   double
#define SFX f64
#define VL  4
#include "conv_direct_impl.h"
#undef T
#undef SFX
#undef VL
#undef ATTR

/* f32 with 16 lanes where the CPU has AVX-512 (twice the AVX2 rate on the machines here);
 * chosen at run time, as the library is built for x86-64-v3. */
#define ATTR __attribute__((target("avx512f")))
#define T    float
#define SFX  f32x16
#define VL   16
#include "conv_direct_impl.h"
#undef T
#undef SFX
#undef VL
#undef ATTR

bool
yt__conv_direct_ok(const yt__conv_geom *g)
{
    return g->sh == 1 && g->sw == 1;
}

static int64_t
round_up(int64_t v, int64_t m)
{
    return (v + m - 1) / m * m;
}

/* Offsets of the kernel taps (a, i, j) in a padded [a_count, rows, cols] buffer. */
static void
tap_offsets(int64_t *off, int64_t a_count, const yt__conv_geom *g, int64_t rows, int64_t cols)
{
    int64_t k = 0;
    for (int64_t a = 0; a < a_count; a++)
        for (int64_t i = 0; i < g->kh; i++)
            for (int64_t j = 0; j < g->kw; j++)
                off[k++] = a * rows * cols + i * g->dh * cols + j * g->dw;
}

#define DIRECT_DISPATCH(SUFFIX, TYPE, LANES)                                                       \
    do {                                                                                           \
        TYPE *sc = (TYPE *)scratch;                                                                \
        if (kind == YT_CONV_FORWARD) {                                                             \
            direct_forward_##SUFFIX(out, a, b, bias, g, off, sc, per_thread, nt, threads);         \
        } else if (kind == YT_CONV_BACKWARD_INPUT) {                                               \
            TYPE *wt = (TYPE *)(scratch + thread_bytes * (size_t)nt);                              \
            const TYPE *w = b;                                                                     \
            /* wt[gi][(c, i, j), o] = w[gi * og + o, c, i, j] */                                   \
            for (int64_t gi = 0; gi < g->groups; gi++)                                             \
                for (int64_t o = 0; o < og; o++)                                                   \
                    for (int64_t k = 0; k < cg * khw; k++)                                         \
                        wt[(gi * cg * khw + k) * og + o] = w[(gi * og + o) * cg * khw + k];        \
            direct_backward_input_##SUFFIX(out, a, wt, g, off, sc, per_thread, nt, threads);       \
        } else {                                                                                   \
            TYPE *acc = (TYPE *)(scratch + thread_bytes * (size_t)nt);                             \
            direct_backward_weight_##SUFFIX((vu_##SUFFIX *)acc, a, b, g, off, sc, per_thread, nt,  \
                                            threads);                                              \
            TYPE *gw = out;                                                                        \
            for (int64_t q = 0; q < wsize; q++) {                                                  \
                TYPE v = 0;                                                                        \
                for (int u = 0; u < nt; u++)                                                       \
                    for (int l = 0; l < LANES; l++)                                                \
                        v += acc[((int64_t)u * wsize + q) * LANES + l];                            \
                gw[q] = v;                                                                         \
            }                                                                                      \
        }                                                                                          \
    } while (0)

yt_status
yt__conv_direct(yt__conv_kind kind, void *out, const void *a, const void *b, const void *bias,
                const yt__conv_geom *g, bool f64, int nt)
{
    size_t es = f64 ? sizeof(double) : sizeof(float);
    bool wide = !f64 && yt__cpu_isa() == YT__ISA_AVX512;
    /* the nt image blocks are fixed (their partial sums are added in order); how many threads
     * run them follows the pool (about 40 multiply-adds per ns on one thread) */
    double macs = (double)g->n * (double)g->c_out * (double)(g->oh * g->ow) *
                  (double)(g->c_in / g->groups * g->kh * g->kw);
    int threads = nt > 1 ? yt__parallel_threads(macs / 40.0, nt) : 1;
    int64_t lanes = f64 ? 4 : wide ? 16 : 8;
    int64_t cg = g->c_in / g->groups, og = g->c_out / g->groups, khw = g->kh * g->kw;
    int64_t hp = g->h + 2 * g->ph, wp = g->w + 2 * g->pw;
    int64_t eh = g->dh * (g->kh - 1), ew = g->dw * (g->kw - 1);
    int64_t slack = (eh > ew ? eh : ew) + 4 * lanes;
    /* Every count below is a small multiple of one of these. Beyond 2^48 elements none could be
     * allocated anyway, and their products could overflow int64 ("same" padding with dilation
     * 2^40 makes a padded plane of 2^82 elements): refused first, in double, which cannot. */
    double plane = (double)cg * (double)hp * (double)wp;
    double rows = (double)(og > cg * khw ? og : cg * khw) * ((double)g->oh * (double)wp + 1.0);
    if (plane > 0x1p48 || rows > 0x1p48)
        return yt__fail_status(YT_ERR_NOMEM,
                               "conv2d: cannot allocate the scratch for a padded input of "
                               "%lldx%lld over %lld channels",
                               (long long)hp, (long long)wp, (long long)cg);
    int64_t wsize = g->c_out * cg * khw;
    int64_t per_thread, n_off, shared;
    if (kind == YT_CONV_FORWARD) {
        per_thread = cg * hp * wp + slack + og * round_up(g->oh * wp, 2 * lanes);
        n_off = cg * khw;
        shared = 0;
    } else if (kind == YT_CONV_BACKWARD_INPUT) {
        int64_t nw = g->oh * wp;
        /* gy wide, columns, padded gx, og row offsets (int64 = 2 f32 or 1 f64 elements) */
        per_thread = og * (nw + slack) + cg * khw * round_up(nw, 2 * lanes) + cg * hp * wp + og * 2;
        n_off = cg * khw;
        shared = wsize; /* the transposed weight */
    } else {
        int64_t q = ((g->oh - 1) * wp + g->ow + lanes - 1) / lanes * lanes;
        per_thread = DIRECT_WEIGHT_IMAGES * (cg * hp * wp + slack + og * q);
        n_off = cg * khw;
        shared = wsize * lanes * nt; /* vector partials */
    }
    size_t thread_bytes = ((size_t)per_thread * es + 63) / 64 * 64;
    size_t shared_bytes = ((size_t)shared * es + 63) / 64 * 64; /* keeps `off` aligned */
    size_t bytes = thread_bytes * (size_t)nt + shared_bytes + (size_t)n_off * sizeof(int64_t);
    char *scratch = yt__cpu_alloc(bytes);
    if (scratch == NULL)
        return yt__fail_status(YT_ERR_NOMEM, "conv2d: cannot allocate %zu bytes of scratch", bytes);
    int64_t *off = (int64_t *)(scratch + thread_bytes * (size_t)nt + shared_bytes);
    tap_offsets(off, cg, g, hp, wp);
    per_thread = (int64_t)(thread_bytes / es);
    if (f64)
        DIRECT_DISPATCH(f64, double, 4);
    else if (wide)
        DIRECT_DISPATCH(f32x16, float, 16);
    else
        DIRECT_DISPATCH(f32, float, 8);
    yt__cpu_free(scratch, bytes);
    return YT_OK;
}
