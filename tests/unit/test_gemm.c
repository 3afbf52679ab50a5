/* The internal GEMM entry (kernels/cpu/gemm.h) against a double-precision triple loop: random
 * shapes on both sides of the small-path / BLIS threshold, transposes, row-major, column-major,
 * padded, negative and zero (broadcast) strides, alpha / beta, k = 0, m or n = 0, NaN handling
 * (beta = 0 overwrites C), batches, one and two threads (BLIS's path split over the pool too), and
 * elements around C left alone. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cpu_isa.h" /* capped to run the narrower kernels */
#include "gemm.h"
#include "gemm_threads.h"
#include "test_util.h"

static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint64_t
next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int64_t
pick(int64_t lo, int64_t hi) /* uniform in [lo, hi] */
{
    return lo + (int64_t)(next() % (uint64_t)(hi - lo + 1));
}

static double
uniform(void) /* [-1, 1) */
{
    return (double)(next() >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/* A rows x cols layout inside a buffer: element (r, c) at base + r * rs + c * cs. `kind`:
 * 0 row-major, 1 column-major, 2 row-major with padding, 3 rows reversed (negative rs),
 * 4 zero row stride (one row broadcast; read-only operands only), 5 row-major and 6
 * column-major with a 1024-element leading dimension (4 KiB rows in f32: the GEMM packs such
 * operands instead of reading them in place). */
typedef struct {
    int64_t base, rs, cs, span;
} layout;

static layout
make_layout(int64_t rows, int64_t cols, int kind)
{
    layout l = {0, 0, 0, 0};
    int64_t pad = 3;
    switch (kind) {
    case 0:
        l.rs = cols, l.cs = 1;
        break;
    case 1:
        l.rs = 1, l.cs = rows;
        break;
    case 2:
        l.rs = 2 * (cols + pad), l.cs = 2;
        break;
    case 3:
        l.rs = -cols, l.cs = 1, l.base = (rows > 0 ? rows - 1 : 0) * cols;
        break;
    case 4:
        l.rs = 0, l.cs = 1;
        break;
    case 5:
        l.rs = 1024, l.cs = 1;
        cr_assert_leq(cols, 1024);
        break;
    default:
        l.rs = 1, l.cs = 1024;
        cr_assert_leq(rows, 1024);
        break;
    }
    int64_t hi = l.base, lo = l.base;
    if (rows > 0 && cols > 0) {
        int64_t r = (rows - 1) * l.rs, c = (cols - 1) * l.cs;
        hi += (r > 0 ? r : 0) + c;
        lo += (r < 0 ? r : 0);
    }
    cr_assert_geq(lo, 0);
    l.span = hi + 1 + 8; /* + a tail that must stay untouched */
    return l;
}

typedef struct {
    bool f64, ta, tb;
    int64_t m, n, k;
    double alpha, beta;
    int ka, kb, kc;
    bool nan_c; /* fill C with NaN (beta = 0 must overwrite) */
    int threads;
} gemm_case;

/* Runs one case through yt__gemm_* and checks every element of C and the untouched rest. */
static void
run_case(const gemm_case *t)
{
    int64_t ar = t->ta ? t->k : t->m, ac = t->ta ? t->m : t->k;
    int64_t br = t->tb ? t->n : t->k, bc = t->tb ? t->k : t->n;
    layout la = make_layout(ar, ac, t->ka), lb = make_layout(br, bc, t->kb);
    layout lc = make_layout(t->m, t->n, t->kc);
    double *a = malloc((size_t)la.span * sizeof *a), *b = malloc((size_t)lb.span * sizeof *b);
    double *c0 = malloc((size_t)lc.span * sizeof *c0);
    float *af = malloc((size_t)la.span * sizeof *af), *bf = malloc((size_t)lb.span * sizeof *bf);
    float *cf = malloc((size_t)lc.span * sizeof *cf);
    double *cd = malloc((size_t)lc.span * sizeof *cd);
    for (int64_t i = 0; i < la.span; i++)
        af[i] = (float)(a[i] = uniform());
    for (int64_t i = 0; i < lb.span; i++)
        bf[i] = (float)(b[i] = uniform());
    for (int64_t i = 0; i < lc.span; i++) {
        c0[i] = t->nan_c ? NAN : uniform();
        cf[i] = (float)c0[i];
        cd[i] = c0[i];
    }
    int saved_threads = yt_get_num_threads();
    yt_set_num_threads(t->threads);
    yt__gemm_threads_set_always(t->threads > 1); /* the split path even for small products */
    yt_status s;
    if (t->f64)
        s = yt__gemm_f64(t->ta, t->tb, t->m, t->n, t->k, t->alpha, a + la.base, la.rs, la.cs,
                         b + lb.base, lb.rs, lb.cs, t->beta, cd + lc.base, lc.rs, lc.cs);
    else
        s = yt__gemm_f32(t->ta, t->tb, t->m, t->n, t->k, (float)t->alpha, af + la.base, la.rs,
                         la.cs, bf + lb.base, lb.rs, lb.cs, (float)t->beta, cf + lc.base, lc.rs,
                         lc.cs);
    yt_set_num_threads(saved_threads);
    yt__gemm_threads_set_always(0);
    cr_assert_eq(s, YT_OK, "%s", yt_errmsg());

    bool *touched = calloc((size_t)lc.span, sizeof *touched);
    double eps = (double)(t->k + 2) * (t->f64 ? 2.3e-16 : 1.2e-7);
    for (int64_t i = 0; i < t->m; i++)
        for (int64_t j = 0; j < t->n; j++) {
            double ref = 0, mag = 0;
            for (int64_t p = 0; p < t->k; p++) {
                int64_t ia = la.base + (t->ta ? p * la.rs + i * la.cs : i * la.rs + p * la.cs);
                int64_t ib = lb.base + (t->tb ? j * lb.rs + p * lb.cs : p * lb.rs + j * lb.cs);
                double x = t->f64 ? a[ia] : (double)af[ia], y = t->f64 ? b[ib] : (double)bf[ib];
                ref += x * y;
                mag += fabs(x * y);
            }
            int64_t ic = lc.base + i * lc.rs + j * lc.cs;
            double cin = t->f64 ? c0[ic] : (double)(float)c0[ic];
            ref = t->alpha * ref + (t->beta == 0 ? 0 : t->beta * cin);
            mag = fabs(t->alpha) * mag + (t->beta == 0 ? 0 : fabs(t->beta * cin));
            double got = t->f64 ? cd[ic] : (double)cf[ic];
            touched[ic] = true;
            cr_assert(fabs(got - ref) <= eps * (mag + 1),
                      "%s m=%lld n=%lld k=%lld ta=%d tb=%d layouts %d/%d/%d alpha=%g beta=%g "
                      "threads=%d: C[%lld, %lld] = %.9g, expected %.9g",
                      t->f64 ? "f64" : "f32", (long long)t->m, (long long)t->n, (long long)t->k,
                      t->ta, t->tb, t->ka, t->kb, t->kc, t->alpha, t->beta, t->threads,
                      (long long)i, (long long)j, got, ref);
        }
    for (int64_t i = 0; i < lc.span; i++)
        if (!touched[i]) {
            double got = t->f64 ? cd[i] : (double)cf[i];
            double want = t->f64 ? c0[i] : (double)(float)c0[i];
            cr_assert(memcmp(&got, &want, sizeof got) == 0 || (isnan(got) && isnan(want)),
                      "element %lld outside C was written", (long long)i);
        }
    free(touched);
    free(cd);
    free(cf);
    free(bf);
    free(af);
    free(c0);
    free(b);
    free(a);
}

static const double scalars[] = {1.0, 0.0, -0.5, 2.0};

Test(gemm, random_small_shapes)
{
    for (int it = 0; it < 400; it++) {
        gemm_case t = {.f64 = it % 2, .ta = next() % 2, .tb = next() % 2};
        t.m = pick(1, 40), t.n = pick(1, 70), t.k = pick(1, 300);
        t.alpha = scalars[next() % 4], t.beta = scalars[next() % 4];
        if (t.alpha == 0)
            t.alpha = 1.5;
        t.ka = (int)(next() % 5), t.kb = (int)(next() % 5), t.kc = (int)(next() % 4);
        t.threads = 1 + (int)(next() % 2);
        run_case(&t);
    }
}

Test(gemm, tile_edges_and_operand_paths)
{
    /* Every tile height and the narrow / wide / masked column edges, with each operand read in
     * place or packed (copied, transposed in registers, or gathered), k around the vector
     * length and past one k block. */
    static const int64_t ns[] = {1, 3, 8, 10, 15, 16, 17, 24, 31, 32, 33, 40, 48, 63, 64, 65};
    static const int64_t ks[] = {1, 7, 15, 16, 17, 33, 128, 257};
    for (int it = 0; it < 500; it++) {
        gemm_case t = {.f64 = it % 3 == 0, .ta = next() % 2, .tb = next() % 2};
        t.m = pick(1, 30), t.n = ns[next() % 16], t.k = ks[next() % 8];
        if (it % 2)
            t.m = ns[next() % 16], t.n = pick(1, 30); /* either orientation gets the edges */
        t.alpha = scalars[next() % 4], t.beta = scalars[next() % 4];
        if (t.alpha == 0)
            t.alpha = -1;
        t.ka = (int)(next() % 7), t.kb = (int)(next() % 7), t.kc = (int)(next() % 4);
        if (t.kc == 3)
            t.kc = 5 + (int)(next() % 2);
        t.threads = 1 + (int)(next() % 2);
        run_case(&t);
    }
}

Test(gemm, every_kernel_set)
{
    /* The AVX2 kernels (and, at level 0, BLIS or the plain loop) on this CPU too. */
    for (yt__isa level = YT__ISA_NONE; level <= YT__ISA_AVX512; level++) {
        const yt__isa got = yt__cap_cpu_isa(level);
        for (int it = 0; it < 150; it++) {
            gemm_case t = {.f64 = it % 2, .ta = next() % 2, .tb = next() % 2};
            t.m = pick(1, 40), t.n = pick(1, 40), t.k = pick(1, 300);
            t.alpha = it % 3 == 0 ? 1.0 : -0.5, t.beta = scalars[next() % 4];
            t.ka = (int)(next() % 7), t.kb = (int)(next() % 7), t.kc = (int)(next() % 3);
            t.threads = 1 + (int)(next() % 2);
            run_case(&t);
        }
        if (got < level)
            break;
    }
    yt__cap_cpu_isa(YT__ISA_AVX512);
}

Test(gemm, blis_path_split_over_threads)
{
    /* With the small path off (kernel level 0) products go to BLIS, which runs single-threaded:
     * past 96^3 multiply-adds one BLIS call per block of rows (or columns, when C is wider) of C,
     * on two threads here. Shapes put block edges off the 16-row steps and leave a short last
     * block; every layout BLIS takes. */
    const yt__isa got = yt__cap_cpu_isa(YT__ISA_NONE);
    cr_assert_eq(got, YT__ISA_NONE);
    for (int it = 0; it < 24; it++) {
        gemm_case t = {.f64 = it % 2, .ta = next() % 2, .tb = next() % 2};
        t.m = pick(97, 260), t.n = pick(97, 260), t.k = pick(100, 300);
        if (it % 3 == 0) /* C wider than tall: split by columns */
            t.m = pick(30, 40), t.n = pick(250, 300), t.k = pick(250, 300);
        t.alpha = it % 3 == 0 ? 1.0 : -0.5, t.beta = scalars[it % 4];
        t.ka = (int)(next() % 3), t.kb = (int)(next() % 3), t.kc = (int)(next() % 3);
        t.nan_c = t.beta == 0 && it / 4 % 2 == 0;
        t.threads = 2;
        run_case(&t);
    }
    yt__cap_cpu_isa(YT__ISA_AVX512);
}

Test(gemm, random_large_shapes)
{
    /* Past the small-path threshold (BLIS, or the small path where BLIS refuses the strides)
     * and across the small path's kc / mc blocks. */
    for (int it = 0; it < 12; it++) {
        gemm_case t = {.f64 = it % 2, .ta = next() % 2, .tb = next() % 2};
        t.m = pick(150, 300), t.n = pick(150, 300), t.k = pick(200, 2200); /* kc is 1024 */
        t.alpha = it % 3 == 0 ? 1.0 : -0.5, t.beta = scalars[it % 4];
        t.ka = (int)(next() % 5), t.kb = (int)(next() % 5), t.kc = (int)(next() % 4);
        t.threads = 1 + it % 2;
        run_case(&t);
    }
}

Test(gemm, mlp_shapes_and_their_transposes)
{
    const int64_t shapes[][3] = {{64, 256, 784}, {64, 128, 256}, {64, 10, 128},  {64, 64, 64},
                                 {784, 256, 64}, {64, 784, 256}, {256, 128, 64}, {128, 10, 64}};
    for (int s = 0; s < 8; s++)
        for (int tr = 0; tr < 4; tr++) {
            gemm_case t = {.f64 = false,
                           .ta = tr & 1,
                           .tb = tr >> 1,
                           .m = shapes[s][0],
                           .n = shapes[s][1],
                           .k = shapes[s][2],
                           .alpha = 1,
                           .beta = 0,
                           .threads = 1 + s % 2,
                           .nan_c = true};
            run_case(&t);
        }
}

Test(gemm, empty_sizes)
{
    for (int f = 0; f < 2; f++)
        for (int kc = 0; kc < 4; kc++) {
            /* k = 0: C = beta * C; beta = 0 writes zeros over NaN. */
            gemm_case t = {
                .f64 = f, .m = 5, .n = 7, .k = 0, .alpha = 1, .beta = 0.5, .kc = kc, .threads = 1};
            run_case(&t);
            t.beta = 0;
            t.nan_c = true;
            run_case(&t);
            /* m or n = 0: nothing written (run_case checks the tail). */
            t.m = 0, t.k = 3;
            run_case(&t);
            t.m = 4, t.n = 0;
            run_case(&t);
        }
}

Test(gemm, beta_zero_overwrites_nan_and_nan_inputs_propagate)
{
    float a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1}, c[4] = {NAN, NAN, INFINITY, NAN};
    cr_assert_eq(yt__gemm_f32(false, false, 2, 2, 2, 1.0f, a, 2, 1, b, 2, 1, 0.0f, c, 2, 1), YT_OK);
    for (int i = 0; i < 4; i++)
        cr_assert_float_eq(c[i], a[i], 0);
    a[0] = NAN; /* row 0 of the product becomes NaN, row 1 stays finite */
    cr_assert_eq(yt__gemm_f32(false, false, 2, 2, 2, 1.0f, a, 2, 1, b, 2, 1, 0.0f, c, 2, 1), YT_OK);
    cr_assert(isnan(c[0]) && isnan(c[1]) && c[2] == 3 && c[3] == 4);
    /* beta != 0 reads C: NaN in C propagates. */
    float c2[4] = {NAN, 0, 0, 0}, a2[4] = {1, 2, 3, 4};
    cr_assert_eq(yt__gemm_f32(false, false, 2, 2, 2, 1.0f, a2, 2, 1, b, 2, 1, 1.0f, c2, 2, 1),
                 YT_OK);
    cr_assert(isnan(c2[0]) && c2[1] == 2);
}

Test(gemm, overlapping_c_is_an_error)
{
    float a[4] = {0}, b[4] = {0}, c[4] = {0};
    cr_assert_eq(yt__gemm_f32(false, false, 2, 2, 2, 1.0f, a, 2, 1, b, 2, 1, 0.0f, c, 1, 1),
                 YT_ERR_VALUE);
    cr_assert(strstr(yt_errmsg(), "share memory") != NULL, "%s", yt_errmsg());
    cr_assert_eq(yt__gemm_f32(false, false, 2, 2, 2, 1.0f, a, 2, 1, b, 2, 1, 0.0f, c, 0, 1),
                 YT_ERR_VALUE);
}

Test(gemm, batched_with_broadcast_operand)
{
    for (int threads = 1; threads <= 2; threads++) {
        const int64_t batch = 7, m = 9, n = 33, k = 20;
        float *a = malloc(sizeof(float) * (size_t)(m * k));
        float *b = malloc(sizeof(float) * (size_t)(batch * k * n));
        float *c = malloc(sizeof(float) * (size_t)(batch * m * n));
        for (int64_t i = 0; i < m * k; i++)
            a[i] = (float)uniform();
        for (int64_t i = 0; i < batch * k * n; i++)
            b[i] = (float)uniform();
        yt_set_num_threads(threads);
        yt__gemm_threads_set_always(threads > 1); /* entries spread over the threads */
        /* A shared by every entry (batch stride 0), B transposed per entry. */
        cr_assert_eq(yt__gemm_batched_f32(false, true, batch, m, n, k, 1.0f, a, 0, k, 1, b, k * n,
                                          k, 1, 0.0f, c, m * n, n, 1),
                     YT_OK, "%s", yt_errmsg());
        for (int64_t e = 0; e < batch; e++)
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < n; j++) {
                    double ref = 0;
                    for (int64_t p = 0; p < k; p++)
                        ref += (double)a[i * k + p] * b[e * k * n + j * k + p];
                    cr_assert(fabs(c[e * m * n + i * n + j] - ref) < 1e-5);
                }
        free(c);
        free(b);
        free(a);
    }
}

Test(gemm, thread_count_adapts_to_waits)
{
    const double mlp = 64.0 * 784 * 256, tiny = 32.0 * 32 * 32;
    cr_assert_eq(yt__gemm_threads(mlp, 1, false), 1);
    cr_assert_eq(yt__gemm_threads(tiny, 2, false), 1); /* below the floor: always one */
    cr_assert_eq(yt__gemm_threads(mlp, 2, false), 2);  /* an idle machine (initial waits) */
    /* Others keep the second core busy: the calling thread waited 5 ms each time. */
    for (int i = 0; i < 8; i++)
        yt__gemm_threads_observe(5000000);
    int parallel = 0;
    for (int i = 0; i < 64; i++)
        parallel += yt__gemm_threads(mlp, 2, false) == 2;
    cr_assert_leq(parallel, 1, "%d of 64 ran in parallel: only a probe should", parallel);
    yt__gemm_threads_set_always(-1); /* no probes from here: the rest must not depend on time */
    /* A huge product still pays for the wait. */
    cr_assert_eq(yt__gemm_threads(2048.0 * 2048 * 2048, 2, false), 2);
    /* Quiet probes bring the costs down: with one stall left among the last 8 it splits
     * again. */
    for (int i = 0; i < 6; i++) {
        yt__gemm_threads_observe(800);
        cr_assert_eq(yt__gemm_threads(mlp, 2, false), 1);
    }
    yt__gemm_threads_observe(800);
    cr_assert_eq(yt__gemm_threads(mlp, 2, false), 2);
    /* Around the floor: a product splits while the time a second thread saves (96^3: ~3.4 us
     * with AVX-512, twice that with AVX2) is at least twice the waits; a quarter above that
     * break-even 100^3 and 96^3 stay on one thread, a quarter below 100^3 splits. */
    const double near_floor = 100.0 * 100 * 100;
    const int64_t even = (int64_t)(yt__gemm_split_saving_ns(near_floor, 2, false) / 2);
    cr_assert_gt(even, 1000, "%lld ns", (long long)even);
    for (int i = 0; i < 8; i++)
        yt__gemm_threads_observe(even + even / 4);
    cr_assert_eq(yt__gemm_threads(near_floor, 2, false), 1);
    cr_assert_eq(yt__gemm_threads(96.0 * 96 * 96, 2, false), 1);
    for (int i = 0; i < 8; i++)
        yt__gemm_threads_observe(even - even / 4);
    cr_assert_eq(yt__gemm_threads(near_floor, 2, false), 2);
    yt__gemm_threads_set_always(0);
}
