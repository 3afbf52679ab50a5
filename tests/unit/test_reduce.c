/* Reductions and softmax: values and PyTorch semantics the generated per-op cases do not pin
 * down (numerics at +-1e4, all -inf rows, NaN propagation, empty reductions, ties, zeros in
 * prod's gradient, exact zero variance of constants). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cpu_isa.h" /* capped to run the narrower kernels */
#include "parallel.h"
#include "softmax_rows.h"
#include "test_util.h"

static yt_tensor *
make(const double *v, const int64_t *sizes, int ndim, yt_dtype dtype)
{
    yt_tensor *f = yt_tensor_from_data(v, sizes, ndim, YT_DTYPE_F64);
    yt_tensor *t = dtype == YT_DTYPE_F64 ? yt_retain(f) : yt_to(f, dtype);
    yt_release(f);
    cr_assert_not_null(t, "%s", yt_errmsg());
    return t;
}

static yt_tensor *
vec(const double *v, int64_t n, yt_dtype dtype)
{
    return make(v, &n, 1, dtype);
}

/* Reads `t` as doubles into out[0..n) and releases it. */
static void
take(yt_tensor *t, double *out, int64_t n)
{
    cr_assert_not_null(t, "%s", yt_errmsg());
    cr_assert_eq(yt_tensor_numel(t), n, "numel %lld, expected %lld", (long long)yt_tensor_numel(t),
                 (long long)n);
    cr_assert_eq(yt_tensor_copy_to(t, out, sizeof(double) * (size_t)n, YT_DTYPE_F64), YT_OK, "%s",
                 yt_errmsg());
    yt_release(t);
}

static double
one(yt_tensor *t)
{
    double v;
    take(t, &v, 1);
    return v;
}

static void
expect_near(const double *got, const double *want, int64_t n, double tol)
{
    for (int64_t i = 0; i < n; i++) {
        if (isnan(want[i])) {
            cr_assert(isnan(got[i]), "element %lld: %.17g, expected NaN", (long long)i, got[i]);
            continue;
        }
        if (isinf(want[i])) {
            cr_assert_eq(got[i], want[i], "element %lld: %.17g, expected %g", (long long)i, got[i],
                         want[i]);
            continue;
        }
        cr_assert(fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i])),
                  "element %lld: %.17g, expected %.17g", (long long)i, got[i], want[i]);
    }
}

/* ---------------------------------------------------------------- softmax */

Test(softmax, stable_at_1e4)
{
    const yt_dtype dts[] = {YT_DTYPE_F32, YT_DTYPE_F64};
    for (int d = 0; d < 2; d++) {
        double x[] = {1e4, -1e4, 0, 1e4};
        yt_tensor *t = vec(x, 4, dts[d]);
        double s[4], ls[4];
        take(yt_softmax(t, 0), s, 4);
        take(yt_log_softmax(t, 0), ls, 4);
        expect_near(s, (double[]){0.5, 0, 0, 0.5}, 4, 1e-6);
        expect_near(ls, (double[]){-M_LN2, -2e4 - M_LN2, -1e4 - M_LN2, -M_LN2}, 4, 1e-6);
        yt_release(t);
    }
    YT_ASSERT_NO_LEAKS();
}

/* softmax and log_softmax of short rows and narrow column blocks, against double references:
 * rows of 1 to 50 (19 of them: groups of 8 rows, 8 rows at a time up to 32 elements, and the 3
 * rows left over; longer rows one by one, with every tail of the 8- and 16-lane exp sums; one row
 * has a NaN, which makes that row NaN), and along dim 0 of [n, w] for w of 1, 3, 8 and 11 (column
 * blocks with a masked tail). */
Test(softmax, short_rows_and_narrow_columns_match_double)
{
    enum { ROWS = 19, MAXN = 50, MAXW = 11 };
    static const int64_t widths[] = {1, 3, 8, 11};
    static double x[ROWS * MAXN], want[2][ROWS * MAXN], got[ROWS * MAXN];
    for (int64_t n = 1; n <= MAXN; n++)
        for (int wi = -1; wi < 4; wi++) {
            /* wi < 0: softmax along dim 1 of [ROWS, n]; else along dim 0 of [n, w] */
            const int64_t w = wi < 0 ? 1 : widths[wi], count = wi < 0 ? ROWS : w;
            const int64_t numel = count * n, step = wi < 0 ? 1 : w, start = wi < 0 ? n : 1;
            for (int64_t i = 0; i < numel; i++)
                x[i] = 6 * sin(0.7 * (double)(i * (n + 3)) + (double)w);
            if (wi < 0)
                x[5 * n + n / 2] = NAN;
            int64_t sizes[2] = {wi < 0 ? ROWS : n, wi < 0 ? n : w};
            yt_tensor *t = make(x, sizes, 2, YT_DTYPE_F32);
            cr_assert_eq(yt_tensor_copy_to(t, x, sizeof(double) * (size_t)numel, YT_DTYPE_F64),
                         YT_OK);
            for (int64_t c = 0; c < count; c++) {
                const double *xc = x + c * start;
                double m = -INFINITY, s = 0;
                for (int64_t k = 0; k < n; k++)
                    m = fmax(m, xc[k * step]);
                for (int64_t k = 0; k < n; k++)
                    s += exp(xc[k * step] - m);
                for (int64_t k = 0; k < n; k++) {
                    want[0][c * start + k * step] = exp(xc[k * step] - m) / s;
                    want[1][c * start + k * step] = xc[k * step] - m - log(s);
                }
            }
            const int64_t dim = wi < 0 ? 1 : 0;
            take(yt_softmax(t, dim), got, numel);
            expect_near(got, want[0], numel, 2e-6);
            take(yt_log_softmax(t, dim), got, numel);
            expect_near(got, want[1], numel, 2e-6);
            yt_release(t);
        }
    YT_ASSERT_NO_LEAKS();
}

/* softmax_backward_data and log_softmax_backward_data of rows of 1 to 70 (19 rows: groups of 8,
 * their sums 8 rows at a time up to 64 elements, and the 3 rows left over) against double. */
Test(softmax, backward_short_rows_match_double)
{
    enum { ROWS = 19, MAXN = 70 };
    static double gv[ROWS * MAXN], yv[ROWS * MAXN], want[ROWS * MAXN], got[ROWS * MAXN];
    for (int64_t n = 1; n <= MAXN; n++) {
        const int64_t sizes[] = {ROWS, n}, numel = ROWS * n;
        for (int64_t i = 0; i < numel; i++) {
            gv[i] = 2 * sin(0.31 * (double)i + (double)n);
            yv[i] = 0.5 + 0.4 * cos(0.17 * (double)i); /* softmax-like values in (0, 1) */
        }
        yt_tensor *g = make(gv, sizes, 2, YT_DTYPE_F32), *y = make(yv, sizes, 2, YT_DTYPE_F32);
        cr_assert_eq(yt_tensor_copy_to(g, gv, sizeof(double) * (size_t)numel, YT_DTYPE_F64), YT_OK);
        cr_assert_eq(yt_tensor_copy_to(y, yv, sizeof(double) * (size_t)numel, YT_DTYPE_F64), YT_OK);
        for (int op = 0; op < 2; op++) {
            for (int64_t r = 0; r < ROWS; r++) {
                const double *gr = gv + r * n, *yr = yv + r * n;
                double s = 0;
                for (int64_t i = 0; i < n; i++)
                    s += op == 0 ? gr[i] * yr[i] : gr[i];
                for (int64_t i = 0; i < n; i++)
                    want[r * n + i] = op == 0 ? yr[i] * (gr[i] - s) : gr[i] - exp(yr[i]) * s;
            }
            take(op == 0 ? yt_softmax_backward_data(g, y, 1)
                         : yt_log_softmax_backward_data(g, y, 1),
                 got, numel);
            expect_near(got, want, numel, 1e-5);
        }
        yt_release(g);
        yt_release(y);
    }
    YT_ASSERT_NO_LEAKS();
}

/* Rows split between 2 threads at rows that are not multiples of 8 give the bits of 1 thread:
 * a short row's result does not depend on the rows computed with it (softmax, log_softmax and
 * their backward kernels). */
Test(softmax, short_rows_same_bits_at_1_and_2_threads)
{
    enum { ROWS = 7001 };
    static const int64_t lengths[] = {5, 16, 27, 40};
    int saved = yt_get_num_threads();
    yt__parallel_set_always(true);
    for (int li = 0; li < 4; li++) {
        const int64_t n = lengths[li], sizes[] = {ROWS, n}, numel = ROWS * n;
        double *x = malloc(sizeof(double) * (size_t)numel);
        double *got = malloc(sizeof(double) * 2 * (size_t)numel);
        for (int64_t i = 0; i < numel; i++)
            x[i] = 5 * sin(0.37 * (double)i);
        yt_tensor *t = make(x, sizes, 2, YT_DTYPE_F32), *y = yt_softmax(t, 1);
        for (int op = 0; op < 4; op++) {
            for (int threads = 1; threads <= 2; threads++) {
                yt_set_num_threads(threads);
                take(op == 0   ? yt_softmax(t, 1)
                     : op == 1 ? yt_log_softmax(t, 1)
                     : op == 2 ? yt_softmax_backward_data(t, y, 1)
                               : yt_log_softmax_backward_data(t, y, 1),
                     got + (threads - 1) * numel, numel);
            }
            cr_assert(memcmp(got, got + numel, sizeof(double) * (size_t)numel) == 0,
                      "n=%lld op %d: 1 and 2 threads differ", (long long)n, op);
        }
        yt_release(y);
        yt_release(t);
        free(x);
        free(got);
    }
    yt__parallel_set_always(false);
    yt_set_num_threads(saved);
    YT_ASSERT_NO_LEAKS();
}

/* The backward kernels take their gradient unbroadcast: any other shape is refused by name. */
Test(softmax, backward_refuses_a_gradient_of_another_shape)
{
    const int64_t out_sizes[] = {3, 2}, grad_sizes[] = {2, 3}, grad_wide[] = {3, 3},
                  grad_more[] = {1, 3, 2};
    yt_tensor *x = yt_ones(out_sizes, 2), *out = yt_softmax(x, 1);
    yt_tensor *grad = yt_ones(grad_sizes, 2), *wide = yt_ones(grad_wide, 2);
    yt_tensor *grad3 = yt_ones(grad_more, 3);
    cr_assert_null(yt_softmax_backward_data(grad, out, 1));
    YT_ASSERT_ERROR(YT_ERR_SHAPE,
                    "softmax_backward_data: grad_output has shape [2, 3] but output has shape");
    cr_assert_null(yt_log_softmax_backward_data(wide, out, 1));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "log_softmax_backward_data: grad_output has shape [3, 3] but "
                                  "output has shape [3, 2]");
    cr_assert_null(yt_log_softmax_backward_data(grad3, out, 1));
    YT_ASSERT_ERROR(YT_ERR_SHAPE,
                    "log_softmax_backward_data: grad_output.dim=3 does not match output.dim=2");
    yt_release(grad3);
    yt_release(wide);
    yt_release(grad);
    yt_release(out);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

/* PyTorch gives NaN for a row of -inf (softmax and log_softmax); other rows are unaffected. */
Test(softmax, all_minus_inf_row_is_nan)
{
    double x[] = {-INFINITY, -INFINITY, -INFINITY, 0, 1, 2};
    int64_t sizes[] = {2, 3};
    const yt_dtype dts[] = {YT_DTYPE_F32, YT_DTYPE_F64};
    for (int d = 0; d < 2; d++) {
        yt_tensor *t = make(x, sizes, 2, dts[d]);
        double s[6], ls[6];
        take(yt_softmax(t, 1), s, 6);
        take(yt_log_softmax(t, 1), ls, 6);
        double e = exp(0) + exp(1) + exp(2);
        expect_near(s, (double[]){NAN, NAN, NAN, 1 / e, exp(1) / e, exp(2) / e}, 6, 1e-6);
        expect_near(ls, (double[]){NAN, NAN, NAN, -log(e), 1 - log(e), 2 - log(e)}, 6, 1e-6);
        /* the same along dim 0 (the inner > 1 layout): column 0 is {-inf, 0} */
        yt_tensor *tt = yt_transpose(t, 0, 1);
        yt_tensor *c = yt_contiguous(tt);
        double s0[6];
        take(yt_softmax(c, 1), s0, 6);
        cr_assert(fabs(s0[0] - 0.0) < 1e-7 && fabs(s0[1] - 1.0) < 1e-6, "%g %g", s0[0], s0[1]);
        yt_release(c);
        yt_release(tt);
        yt_release(t);
    }
    YT_ASSERT_NO_LEAKS();
}

/* The vectorised exp against libm's, over long rows and both layouts. */
Test(softmax, f32_matches_f64_reference)
{
    int64_t sizes[] = {3, 1000};
    double *x = malloc(sizeof(double) * 3000), *want = malloc(sizeof(double) * 3000),
           *got = malloc(sizeof(double) * 3000);
    uint64_t s = 7;
    for (int i = 0; i < 3000; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = ((double)(s >> 11) / 9007199254740992.0 - 0.5) * 60; /* [-30, 30) */
    }
    yt_tensor *t32 = make(x, sizes, 2, YT_DTYPE_F32);
    yt_tensor *t64 = yt_to(t32, YT_DTYPE_F64); /* the same inputs, in double */
    /* x - max rounds in f32 (ulp 4e-6 at 40), so tiny results carry ~1e-5 relative error, as in
     * PyTorch */
    for (int dim = 0; dim < 2; dim++) {
        take(yt_softmax(t64, dim), want, 3000);
        take(yt_softmax(t32, dim), got, 3000);
        for (int i = 0; i < 3000; i++)
            cr_assert(fabs(got[i] - want[i]) <= 1e-5 * want[i] + 1e-9, "dim %d [%d]: %g vs %g", dim,
                      i, got[i], want[i]);
        take(yt_log_softmax(t64, dim), want, 3000);
        take(yt_log_softmax(t32, dim), got, 3000);
        expect_near(got, want, 3000, 1e-5);
    }
    yt_release(t32);
    yt_release(t64);
    free(x);
    free(want);
    free(got);
    YT_ASSERT_NO_LEAKS();
}

/* softmax_backward_data and log_softmax_backward_data against a double reference, with the
 * result written through the cache and, with the cache size set to 1 byte, by non-temporal
 * stores (the path for operands larger than the last-level cache). Row lengths of 1021 and 3
 * start rows off a 32-byte boundary, so the streamed rows begin and end with scalar stores. Both
 * paths must give the same bits, at 1 and 2 threads. */
Test(softmax, backward_streamed_matches_cached)
{
    const int64_t lengths[] = {1021, 1024, 3};
    const int64_t rows = 41;
    int saved = yt_get_num_threads();
    yt__parallel_set_always(true);
    for (int li = 0; li < 3; li++) {
        int64_t n = lengths[li], numel = rows * n, sizes[] = {rows, n};
        double *g = malloc(sizeof(double) * (size_t)numel),
               *x = malloc(sizeof(double) * (size_t)numel);
        double *want = malloc(sizeof(double) * (size_t)numel);
        double *cached = malloc(sizeof(double) * (size_t)numel);
        double *streamed = malloc(sizeof(double) * (size_t)numel);
        uint64_t s = 11 + (uint64_t)n;
        for (int64_t i = 0; i < numel; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            g[i] = ((double)(s >> 11) / 9007199254740992.0 - 0.5) * 4;
            x[i] = ((double)(s >> 20) / 17592186044416.0 - 0.5) * 8;
        }
        yt_tensor *gt = make(g, sizes, 2, YT_DTYPE_F32), *xt = make(x, sizes, 2, YT_DTYPE_F32);
        /* the reference reads the f32 values the kernels see */
        cr_assert_eq(yt_tensor_copy_to(gt, g, sizeof(double) * (size_t)numel, YT_DTYPE_F64), YT_OK);
        for (int log = 0; log < 2; log++) {
            yt_tensor *y = log ? yt_log_softmax(xt, 1) : yt_softmax(xt, 1);
            double *yv = malloc(sizeof(double) * (size_t)numel);
            take(yt_retain(y), yv, numel);
            for (int64_t r = 0; r < rows; r++) {
                double dot = 0;
                for (int64_t j = 0; j < n; j++)
                    dot += log ? g[r * n + j] : g[r * n + j] * yv[r * n + j];
                for (int64_t j = 0; j < n; j++) {
                    int64_t at = r * n + j;
                    want[at] = log ? g[at] - exp(yv[at]) * dot : yv[at] * (g[at] - dot);
                }
            }
            for (int threads = 1; threads <= 2; threads++) {
                yt_set_num_threads(threads);
                yt__set_cache_bytes(0);
                take(log ? yt_log_softmax_backward_data(gt, y, 1)
                         : yt_softmax_backward_data(gt, y, 1),
                     cached, numel);
                yt__set_cache_bytes(1);
                take(log ? yt_log_softmax_backward_data(gt, y, 1)
                         : yt_softmax_backward_data(gt, y, 1),
                     streamed, numel);
                yt__set_cache_bytes(0);
                expect_near(cached, want, numel, 1e-5);
                for (int64_t i = 0; i < numel; i++)
                    cr_assert_eq(streamed[i], cached[i],
                                 "n=%lld log=%d threads=%d [%lld]: streamed %.9g, cached %.9g",
                                 (long long)n, log, threads, (long long)i, streamed[i], cached[i]);
            }
            free(yv);
            yt_release(y);
        }
        yt_release(gt);
        yt_release(xt);
        free(g);
        free(x);
        free(want);
        free(cached);
        free(streamed);
    }
    yt__parallel_set_always(false);
    yt_set_num_threads(saved);
    YT_ASSERT_NO_LEAKS();
}

/* softmax, log_softmax and their backward kernels give the same bits with every instruction set
 * the CPU runs (capped in turn: the 16-lane forms keep the 8-lane sums' order), and the rows that
 * attention and cross_entropy fuse with their own work are the ops' own: rows short enough to go
 * 8 at a time, and long ones with a masked tail. */
Test(softmax, same_bits_on_every_instruction_set_and_in_fused_rows)
{
    enum { ROWS = 9, MAX_N = 1031 };
    static const int64_t lengths[] = {5, 16, 33, 100, 1031};
    static float x[ROWS * MAX_N], g[ROWS * MAX_N], first[4][ROWS * MAX_N], got[ROWS * MAX_N],
        fused[ROWS * MAX_N];
    for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
        const int64_t n = lengths[li], sizes[] = {ROWS, n}, numel = ROWS * n;
        for (int64_t i = 0; i < numel; i++) {
            x[i] = (float)(9 * sin(0.37 * (double)i));
            g[i] = (float)cos(0.11 * (double)i);
        }
        yt_tensor *t = yt_tensor_from_data(x, sizes, 2, YT_DTYPE_F32);
        yt_tensor *gt = yt_tensor_from_data(g, sizes, 2, YT_DTYPE_F32);
        bool have_first = false;
        for (yt__isa widest = YT__ISA_NONE; widest <= YT__ISA_AVX512; widest++) {
            if (yt__cap_cpu_isa(widest) != widest)
                continue; /* not on this CPU */
            yt_tensor *y = yt_softmax(t, 1), *ly = yt_log_softmax(t, 1);
            cr_assert(y != NULL && ly != NULL, "%s", yt_errmsg());
            yt_tensor *const results[4] = {yt_retain(y), ly, yt_softmax_backward_data(gt, y, 1),
                                           yt_log_softmax_backward_data(gt, ly, 1)};
            for (int op = 0; op < 4; op++) {
                cr_assert_not_null(results[op], "%s", yt_errmsg());
                float *dst = have_first ? got : first[op];
                cr_assert_eq(yt_tensor_copy_to(results[op], dst, sizeof(float) * (size_t)numel,
                                               YT_DTYPE_F32),
                             YT_OK, "%s", yt_errmsg());
                yt_release(results[op]);
                cr_assert(memcmp(dst, first[op], sizeof(float) * (size_t)numel) == 0,
                          "n=%lld op %d: instruction set %d differs", (long long)n, op, widest);
            }
            have_first = true;
            yt__softmax_rows_f32(fused, x, ROWS, n);
            cr_assert(memcmp(fused, first[0], sizeof(float) * (size_t)numel) == 0,
                      "n=%lld, instruction set %d: fused softmax rows differ from softmax",
                      (long long)n, widest);
            yt__softmax_backward_rows_f32(fused, g, first[0], ROWS, n);
            cr_assert(memcmp(fused, first[2], sizeof(float) * (size_t)numel) == 0,
                      "n=%lld, instruction set %d: fused backward rows differ from the op's",
                      (long long)n, widest);
            yt_release(y);
        }
        yt_release(t);
        yt_release(gt);
    }
    yt__cap_cpu_isa(YT__ISA_AVX512);
    YT_ASSERT_NO_LEAKS();
}

/* Reductions over the last dim of many f32 and f64 rows, against double references, at 1 and 2
 * threads, which must give the same bits. Rows of 2 are reduced across the rows, as an outer
 * reduction (and so are rows of 5 in var); of 5, 13 and 40, 8 rows at a time in sum, norm and
 * logsumexp (row_batch; 5003 rows end mid-group), 4 at a time in amax and amin (f32 up to 32)
 * and row by row in var; of 150, row by row in all (5003 rows end mid-batch of 4096). f64 rows up
 * to 128 go 4 at a time in sum, amax and amin (and logsumexp's take their exps 4 at a time). Some
 * rows have a NaN. sum, amax, amin, var, logsumexp and norm cover the kinds of loops the driver
 * calls (row / rows, with and without the output's index, row_batch). */
Test(reduce, many_short_rows)
{
    const int64_t lengths[] = {2, 5, 13, 40, 150}, rows = 5003;
    int saved = yt_get_num_threads();
    yt__parallel_set_always(true);
    for (int li = 0; li < 10; li++) {
        const yt_dtype dtype = li < 5 ? YT_DTYPE_F32 : YT_DTYPE_F64;
        const int64_t n = lengths[li % 5], numel = rows * n, sizes[] = {rows, n}, last = 1;
        double *x = malloc(sizeof(double) * (size_t)numel);
        double *want = malloc(sizeof(double) * (size_t)rows * 6);
        double *got = malloc(sizeof(double) * (size_t)rows * 2);
        uint64_t s = 7 + (uint64_t)n;
        for (int64_t i = 0; i < numel; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            x[i] = ((double)(s >> 11) / 9007199254740992.0 - 0.5) * 8;
        }
        for (int64_t r = 3; r < rows; r += 97)
            x[r * n + r % n] = NAN; /* NaN wins in every op, wherever it is in its row */
        yt_tensor *t = make(x, sizes, 2, dtype);
        /* the references read the f32 values the kernels see */
        cr_assert_eq(yt_tensor_copy_to(t, x, sizeof(double) * (size_t)numel, YT_DTYPE_F64), YT_OK);
        for (int64_t r = 0; r < rows; r++) {
            const double *row = x + r * n;
            double sum = 0, max = -INFINITY, min = INFINITY, sq = 0, se = 0, norm = 0;
            for (int64_t j = 0; j < n; j++) {
                sum += row[j];
                norm += row[j] * row[j];
                max = row[j] > max || isnan(row[j]) ? row[j] : max;
                min = row[j] < min || isnan(row[j]) ? row[j] : min;
            }
            for (int64_t j = 0; j < n; j++) {
                sq += (row[j] - sum / n) * (row[j] - sum / n);
                se += exp(row[j] - max);
            }
            want[r] = sum;
            want[rows + r] = max;
            want[2 * rows + r] = sq / (n - 1);
            want[3 * rows + r] = max + log(se);
            want[4 * rows + r] = sqrt(norm);
            want[5 * rows + r] = min;
        }
        for (int op = 0; op < 6; op++) {
            for (int threads = 1; threads <= 2; threads++) {
                yt_set_num_threads(threads);
                yt_tensor *r = op == 0   ? yt_sum_dim(t, &last, 1)
                               : op == 1 ? yt_amax_ex(t, &last, 1, false)
                               : op == 2 ? yt_var_ex(t, &last, 1, YT_NONE, false)
                               : op == 3 ? yt_logsumexp(t, &last, 1)
                               : op == 4 ? yt_linalg_vector_norm_ex(t, yt_float(2), &last, 1, false,
                                                                    YT_DTYPE_NONE)
                                         : yt_amin_ex(t, &last, 1, false);
                take(r, got + (threads - 1) * rows, rows);
            }
            expect_near(got, want + op * rows, rows, 1e-5);
            for (int64_t r = 0; r < rows; r++)
                cr_assert(memcmp(&got[rows + r], &got[r], sizeof(double)) == 0,
                          "%s n=%lld op %d row %lld: %.9g at 2 threads, %.9g at 1",
                          yt_dtype_name(dtype), (long long)n, op, (long long)r, got[rows + r],
                          got[r]);
        }
        yt_release(t);
        free(x);
        free(want);
        free(got);
    }
    yt__parallel_set_always(false);
    yt_set_num_threads(saved);
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- logsumexp */

/* Rows of 1 to 12 elements (f32: one or two blocks of 8 columns, 16 rows at a time where the CPU
 * has AVX-512, else 8; f64: groups of 4 rows, the last 4 of a row as one vector), 29 of them (so
 * a partial group of 16 and one of 8 or 4), read from a [29, 12] tensor, with special rows among
 * random ones. */
Test(logsumexp, short_rows_with_special_values)
{
    enum { ROWS = 29, WIDTH = 12 };
    double x[ROWS * WIDTH];
    uint64_t s = 11;
    for (int i = 0; i < ROWS * WIDTH; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = ((double)(s >> 11) / 9007199254740992.0 - 0.5) * 20;
    }
    for (int j = 0; j < WIDTH; j++) {
        x[2 * WIDTH + j] = -INFINITY; /* all -inf: -inf */
        x[5 * WIDTH + j] = j == 0 ? -INFINITY : x[5 * WIDTH + j];
        x[7 * WIDTH + j] = 1e4 + j;                       /* large: no overflow */
        x[9 * WIDTH + j] = j % 2 ? -1e4 : 0;              /* wide spread: no underflow to -inf */
        x[12 * WIDTH + j] = j % 2 ? INFINITY : -INFINITY; /* +inf wins, even over -inf */
    }
    x[14 * WIDTH + 0] = INFINITY;
    x[17 * WIDTH + 0] = NAN;
    x[20 * WIDTH + 0] = NAN; /* in the partial group of 16 */
    x[20 * WIDTH + 1] = INFINITY;
    for (int j = 0; j < WIDTH; j++)
        x[26 * WIDTH + j] = -INFINITY; /* in its second 8 */
    x[28 * WIDTH + 3] = NAN;           /* the last row */
    const int64_t sizes[] = {ROWS, WIDTH}, last = 1;
    for (int64_t case_ = 0; case_ < 2 * WIDTH; case_++) {
        const bool f64 = case_ >= WIDTH;
        const int64_t n = case_ % WIDTH + 1;
        yt_tensor *wide = make(x, sizes, 2, f64 ? YT_DTYPE_F64 : YT_DTYPE_F32);
        cr_assert_eq(yt_tensor_copy_to(wide, x, sizeof x, YT_DTYPE_F64), YT_OK);
        yt_tensor *t = yt_narrow(wide, 1, 0, n);
        cr_assert_not_null(t, "%s", yt_errmsg());
        double got[ROWS], want[ROWS];
        take(yt_logsumexp(t, &last, 1), got, ROWS);
        for (int r = 0; r < ROWS; r++) {
            const double *row = x + r * WIDTH;
            double max = -INFINITY, se = 0;
            bool nan = false;
            for (int j = 0; j < n; j++) {
                nan |= isnan(row[j]);
                max = row[j] > max ? row[j] : max;
            }
            double shift = isinf(max) ? 0 : max;
            for (int j = 0; j < n; j++)
                se += exp(row[j] - shift);
            want[r] = nan ? NAN : shift + log(se);
        }
        for (int r = 0; r < ROWS; r++)
            cr_assert(isnan(want[r])   ? isnan(got[r])
                      : isinf(want[r]) ? got[r] == want[r]
                                       : fabs(got[r] - want[r]) <= 4e-7 * fabs(want[r]) + 2e-6,
                      "n=%lld%s row %d: %.9g, expected %.9g", (long long)n, f64 ? " f64" : "", r,
                      got[r], want[r]);
        yt_release(t);
        yt_release(wide);
    }
    YT_ASSERT_NO_LEAKS();
}

Test(logsumexp, stable_and_infinite)
{
    int64_t d0 = 0;
    double big[] = {1e4, 1e4};
    yt_tensor *t = vec(big, 2, YT_DTYPE_F32);
    cr_assert_float_eq(one(yt_logsumexp(t, &d0, 1)), 1e4 + M_LN2, 1e-2);
    yt_release(t);
    double ninf[] = {-INFINITY, -INFINITY};
    t = vec(ninf, 2, YT_DTYPE_F64);
    double v = one(yt_logsumexp(t, &d0, 1));
    cr_assert(isinf(v) && v < 0, "logsumexp of -inf row: %g", v);
    yt_release(t);
    double pinf[] = {INFINITY, 1};
    t = vec(pinf, 2, YT_DTYPE_F64);
    v = one(yt_logsumexp(t, &d0, 1));
    cr_assert(isinf(v) && v > 0, "logsumexp with +inf: %g", v);
    yt_release(t);
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- var / std */

Test(var, constant_input_is_exactly_zero)
{
    double *x = malloc(sizeof(double) * 1000);
    for (int i = 0; i < 1000; i++)
        x[i] = 0.1;
    const yt_dtype dts[] = {YT_DTYPE_F32, YT_DTYPE_F64};
    for (int d = 0; d < 2; d++) {
        yt_tensor *t = vec(x, 1000, dts[d]);
        cr_assert_eq(one(yt_var(t)), 0.0);
        cr_assert_eq(one(yt_std(t)), 0.0);
        yt_release(t);
    }
    free(x);
    YT_ASSERT_NO_LEAKS();
}

Test(var, correction)
{
    double x[] = {1, 2, 3, 4};
    yt_tensor *t = vec(x, 4, YT_DTYPE_F64);
    cr_assert_float_eq(one(yt_var(t)), 5.0 / 3.0, 1e-12);
    cr_assert_float_eq(one(yt_var_ex(t, NULL, 0, 0, false)), 1.25, 1e-12);
    cr_assert_float_eq(one(yt_std_ex(t, NULL, 0, 0, false)), sqrt(1.25), 1e-12);
    yt_release(t);
    /* N - correction <= 0 gives NaN, as in PyTorch */
    t = vec(x, 1, YT_DTYPE_F64);
    cr_assert(isnan(one(yt_var(t))));
    yt_release(t);
    YT_ASSERT_NO_LEAKS();
}

/* var and std over the last dim of [2, 13, n] f32 (n = 1..33: short rows go 8 at a time, 13 rows
 * end mid-group) against double, with correction 0, 1 and n (a zero divisor: inf, or NaN for a
 * constant row); row 4 of each slab is constant (0.1, inexact in binary) and must give exactly
 * 0, row 9 has a NaN. */
Test(var, short_f32_rows)
{
    enum { SLABS = 2, ROWS = 13, MAXN = 33, COUNT = SLABS * ROWS };
    static double x[COUNT * MAXN], want[COUNT], got[COUNT];
    for (int64_t n = 1; n <= MAXN; n++) {
        const int64_t sizes[] = {SLABS, ROWS, n}, last = 2;
        for (int64_t i = 0; i < COUNT * n; i++)
            x[i] = 3 * sin(0.7 * (double)i + (double)n) + 1e3;
        for (int64_t s = 0; s < SLABS; s++) {
            for (int64_t j = 0; j < n; j++)
                x[(s * ROWS + 4) * n + j] = 0.1;
            x[(s * ROWS + 9) * n + n / 2] = NAN;
        }
        yt_tensor *t = make(x, sizes, 3, YT_DTYPE_F32);
        cr_assert_eq(yt_tensor_copy_to(t, x, sizeof(double) * (size_t)(COUNT * n), YT_DTYPE_F64),
                     YT_OK);
        const int64_t corrections[] = {0, 1, n};
        for (int ci = 0; ci < 3; ci++) {
            const int64_t c = corrections[ci];
            for (int64_t r = 0; r < COUNT; r++) {
                const double *row = x + r * n;
                double mean = 0, sq = 0;
                for (int64_t j = 0; j < n; j++)
                    mean += row[j] / (double)n;
                for (int64_t j = 0; j < n; j++)
                    sq += (row[j] - mean) * (row[j] - mean);
                want[r] = r % ROWS == 4 ? 0.0 / (double)(n - c) : sq / (double)(n - c);
            }
            for (int root = 0; root < 2; root++) {
                take(root ? yt_std_ex(t, &last, 1, c, false) : yt_var_ex(t, &last, 1, c, false),
                     got, COUNT);
                for (int64_t r = 0; r < COUNT; r++) {
                    const double w = root ? sqrt(want[r]) : want[r];
                    if (isnan(w) || isinf(w) || w == 0) {
                        cr_assert(memcmp(&got[r], &w, sizeof w) == 0 || (isnan(w) && isnan(got[r])),
                                  "n=%lld correction %lld row %lld: %g, expected %g", (long long)n,
                                  (long long)c, (long long)r, got[r], w);
                        continue;
                    }
                    cr_assert(fabs(got[r] - w) <= 1e-4 * w + 1e-6,
                              "n=%lld correction %lld row %lld root %d: %.9g, expected %.9g",
                              (long long)n, (long long)c, (long long)r, root, got[r], w);
                }
            }
        }
        yt_release(t);
    }
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- empty reductions */

Test(reduce, empty_semantics)
{
    int64_t sizes[] = {0, 3};
    yt_tensor *t = make(NULL, sizes, 2, YT_DTYPE_F32);
    int64_t d0 = 0;
    double v[3];
    take(yt_sum_dim(t, &d0, 1), v, 3);
    expect_near(v, (double[]){0, 0, 0}, 3, 0);
    take(yt_prod_dim_int(t, 0), v, 3);
    expect_near(v, (double[]){1, 1, 1}, 3, 0);
    take(yt_mean_dim(t, &d0, 1), v, 3);
    expect_near(v, (double[]){NAN, NAN, NAN}, 3, 0);
    cr_assert_eq(one(yt_sum(t)), 0.0);
    cr_assert_eq(one(yt_prod(t)), 1.0);
    cr_assert(isnan(one(yt_mean(t))));
    cr_assert_eq(one(yt_all(t)), 1.0);
    cr_assert_eq(one(yt_any(t)), 0.0);
    take(yt_logsumexp(t, &d0, 1), v, 3);
    expect_near(v, (double[]){-INFINITY, -INFINITY, -INFINITY}, 3, 0);

    cr_assert_null(yt_amax_ex(t, &d0, 1, false));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "amax: cannot reduce over a zero-size dimension");
    cr_assert_null(yt_amin(t));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "amin:");
    cr_assert_null(yt_max(t));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "max:");
    cr_assert_null(yt_argmax(t));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "argmax: self is empty");
    cr_assert_null(yt_argmin_ex(t, 0, false));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "argmin: cannot reduce over a zero-size dimension");
    /* reducing the non-empty dim of an empty tensor is fine: the result is empty */
    yt_tensor *r = yt_amax_ex(t, (int64_t[]){1}, 1, false);
    cr_assert_not_null(r, "%s", yt_errmsg());
    cr_assert_eq(yt_tensor_numel(r), 0);
    yt_release(r);
    yt_release(t);
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- NaN and ties */

/* argmax / argmin and max.dim / min.dim over the last dim of f32 and f64 rows of 1 to 40 and 100
 * elements (f32: 8 rows at a time in lanes up to 32, one row in 8 lanes beyond; f64: from 4 on,
 * one row in 4 lanes, its last 4 elements as one vector), 21 rows, against a
 * scalar reference: small integers, so ties are everywhere (the first wins), and rows with one
 * or two NaNs (the first NaN wins), +inf or -inf. */
Test(reduce, argmax_rows_match_scalar_reference)
{
    enum { ROWS = 21, MAXN = 100 };
    static double x[ROWS * MAXN], got[ROWS], got_v[ROWS];
    for (int64_t case_ = 0; case_ < 2 * 41; case_++) {
        const bool f64 = case_ >= 41;
        const int64_t n = case_ % 41 == 40 ? 100 : case_ % 41 + 1; /* 1 to 40, then 100 */
        const int64_t sizes[] = {ROWS, n}, numel = ROWS * n;
        uint64_t s = 3 + (uint64_t)n;
        for (int64_t i = 0; i < numel; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            x[i] = (double)((s >> 33) % 7) - 3;
        }
        x[2 * n + (n - 1)] = NAN; /* the last element */
        x[5 * n + n / 3] = NAN;
        x[5 * n + n / 2] = NAN; /* the first of two NaNs wins (the same one when n < 3) */
        x[8 * n + n / 2] = INFINITY;
        x[11 * n + (n - 1) / 2] = -INFINITY;
        x[20 * n] = NAN; /* the last, partial group of 8 */
        yt_tensor *t = make(x, sizes, 2, f64 ? YT_DTYPE_F64 : YT_DTYPE_F32);
        for (int min = 0; min < 2; min++) {
            yt_tensor *values = NULL, *indices = NULL;
            take(min ? yt_argmin_ex(t, 1, false) : yt_argmax_ex(t, 1, false), got, ROWS);
            cr_assert_eq(min ? yt_min_dim(t, 1, &values, &indices)
                             : yt_max_dim(t, 1, &values, &indices),
                         YT_OK, "%s", yt_errmsg());
            take(values, got_v, ROWS);
            double got_i[ROWS];
            take(indices, got_i, ROWS);
            for (int64_t r = 0; r < ROWS; r++) {
                const double *row = x + r * n;
                int64_t at = 0;
                for (int64_t i = 1; i < n; i++)
                    if (!isnan(row[at]) &&
                        (isnan(row[i]) || (min ? row[i] < row[at] : row[i] > row[at])))
                        at = i;
                cr_assert(got[r] == (double)at && got_i[r] == (double)at,
                          "n=%lld%s %s row %lld: %g and %g, expected %lld", (long long)n,
                          f64 ? " f64" : "", min ? "min" : "max", (long long)r, got[r], got_i[r],
                          (long long)at);
                cr_assert(memcmp(&got_v[r], &row[at], sizeof(double)) == 0 ||
                              (isnan(got_v[r]) && isnan(row[at])),
                          "n=%lld row %lld: value %g, expected %g", (long long)n, (long long)r,
                          got_v[r], row[at]);
            }
        }
        yt_release(t);
    }
    YT_ASSERT_NO_LEAKS();
}

Test(reduce, nan_propagates_and_ties_pick_first)
{
    double x[] = {1, NAN, 3, NAN};
    const yt_dtype dts[] = {YT_DTYPE_F32, YT_DTYPE_F64, YT_DTYPE_F16};
    for (int d = 0; d < 3; d++) {
        yt_tensor *t = vec(x, 4, dts[d]);
        cr_assert(isnan(one(yt_amax(t))));
        cr_assert(isnan(one(yt_amin(t))));
        cr_assert(isnan(one(yt_max(t))));
        cr_assert(isnan(one(yt_min(t))));
        cr_assert_eq(one(yt_argmax(t)), 1.0);
        cr_assert_eq(one(yt_argmin(t)), 1.0);
        yt_release(t);
    }
    /* long rows take the blocked path */
    double *y = calloc(300, sizeof(double));
    y[250] = NAN;
    yt_tensor *t = vec(y, 300, YT_DTYPE_F32);
    cr_assert(isnan(one(yt_amax(t))));
    cr_assert(isnan(one(yt_amin(t))));
    yt_release(t);
    free(y);

    double ties[] = {1, 3, 3, -2, -2};
    t = vec(ties, 5, YT_DTYPE_I64);
    cr_assert_eq(one(yt_argmax(t)), 1.0);
    cr_assert_eq(one(yt_argmin(t)), 3.0);
    cr_assert_eq(one(yt_amax(t)), 3.0);
    cr_assert_eq(one(yt_amin(t)), -2.0);
    yt_release(t);
    YT_ASSERT_NO_LEAKS();
}

Test(reduce, argmax_keepdim_and_dims)
{
    double x[] = {1, 5, 2, 7, 0, 3};
    int64_t sizes[] = {2, 3};
    yt_tensor *t = make(x, sizes, 2, YT_DTYPE_F32);
    double v[3];
    take(yt_argmax_ex(t, 1, false), v, 2);
    expect_near(v, (double[]){1, 0}, 2, 0);
    take(yt_argmax_ex(t, 0, false), v, 3);
    expect_near(v, (double[]){1, 0, 1}, 3, 0);
    yt_tensor *k = yt_argmax_ex(t, YT_NONE, true);
    cr_assert_eq(yt_tensor_dim(k), 2);
    cr_assert_eq(one(k), 3.0);
    yt_release(t);
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- prod, cumsum, all/any */

/* prod over the last dim of f32 and f64 rows of 1 to 40 and of 100 (f64 4 rows at a time, f32 8,
 * up to 128; across the rows under 3), 4001 rows (a last, partial group), against double (f32 rows
 * multiply in f32: within n roundings of 2^-24 each), at 1 and 2 threads, which give the same
 * bits: factors near 1, and rows with a 0, a NaN, an inf, and 0 * inf. */
Test(prod, short_rows_match_double)
{
    enum { ROWS = 4001, MAXN = 100 };
    static double x[ROWS * MAXN], want[ROWS], got[2][ROWS];
    int saved = yt_get_num_threads();
    yt__parallel_set_always(true);
    for (int64_t case_ = 0; case_ < 2 * 41; case_++) {
        const bool f64 = case_ >= 41;
        const int64_t n = case_ % 41 == 40 ? 100 : case_ % 41 + 1; /* 1 to 40, then 100 */
        const int64_t sizes[] = {ROWS, n}, numel = ROWS * n, last = 1;
        for (int64_t i = 0; i < numel; i++)
            x[i] = 1 + 0.3 * sin(0.7 * (double)i + (double)n);
        x[3 * n + n / 2] = 0;
        x[6 * n] = NAN;
        x[9 * n + n - 1] = INFINITY;
        x[12 * n] = INFINITY;
        x[12 * n + n - 1] = 0; /* 0 * inf (inf alone when n == 1) */
        x[(ROWS - 1) * n] = -2;
        yt_tensor *t = make(x, sizes, 2, f64 ? YT_DTYPE_F64 : YT_DTYPE_F32);
        cr_assert_eq(yt_tensor_copy_to(t, x, sizeof(double) * (size_t)numel, YT_DTYPE_F64), YT_OK);
        for (int64_t r = 0; r < ROWS; r++) {
            want[r] = 1;
            for (int64_t i = 0; i < n; i++)
                want[r] *= x[r * n + i];
        }
        for (int threads = 1; threads <= 2; threads++) {
            yt_set_num_threads(threads);
            take(yt_prod_dim_int(t, last), got[threads - 1], ROWS);
            expect_near(got[threads - 1], want, ROWS, f64 ? 1e-12 : (double)n * 0x1p-24);
        }
        cr_assert(memcmp(got[0], got[1], sizeof got[0]) == 0, "n=%lld%s: 1 and 2 threads differ",
                  (long long)n, f64 ? " f64" : "");
        yt_release(t);
    }
    yt__parallel_set_always(false);
    yt_set_num_threads(saved);
    YT_ASSERT_NO_LEAKS();
}

/* prod over long f32 and f64 rows (8 chains of 8 f32 or 4 f64 lanes, the last 1-63 or 1-31
 * elements a vector at a time with the last 1-7 or 1-3 through a masked load; rows of 5000 also
 * pass a driver chunk), against double (f32 within n roundings of 2^-24 each): factors near 1,
 * and rows with a 0 and a NaN as the last element, in the masked load or a full one. */
Test(prod, long_rows_match_double)
{
    const int64_t lengths[] = {34, 63, 71, 129, 1000, 5000};
    for (int f64 = 0; f64 < 2; f64++)
        for (int li = 0; li < 6; li++) {
            const int64_t n = lengths[li], sizes[] = {3, n};
            double *x = malloc(sizeof(double) * 3 * (size_t)n), want[3], got[3];
            for (int64_t i = 0; i < 3 * n; i++)
                x[i] = 1 + 0.01 * sin(0.37 * (double)i);
            x[2 * n - 1] = 0;
            x[3 * n - 1] = NAN;
            yt_tensor *t = make(x, sizes, 2, f64 ? YT_DTYPE_F64 : YT_DTYPE_F32);
            cr_assert_eq(yt_tensor_copy_to(t, x, sizeof(double) * 3 * (size_t)n, YT_DTYPE_F64),
                         YT_OK);
            for (int r = 0; r < 3; r++) {
                want[r] = 1;
                for (int64_t i = 0; i < n; i++)
                    want[r] *= x[r * n + i];
            }
            take(yt_prod_dim_int(t, 1), got, 3);
            const double tol = f64 ? 1e-12 : (double)n * 0x1p-24;
            cr_assert(fabs(got[0] - want[0]) <= tol * fabs(want[0]), "n=%lld%s: %.9g, want %.9g",
                      (long long)n, f64 ? " f64" : "", got[0], want[0]);
            cr_assert(got[1] == 0 && isnan(got[2]), "n=%lld: %g %g", (long long)n, got[1], got[2]);
            yt_release(t);
            free(x);
        }
    YT_ASSERT_NO_LEAKS();
}

Test(prod, gradient_with_zeros)
{
    double x[] = {2, 0, 3};
    yt_tensor *t = vec(x, 3, YT_DTYPE_F64);
    yt_set_requires_grad(t, true);
    yt_tensor *p = yt_prod(t);
    cr_assert_eq(yt_backward(p, NULL, NULL), YT_OK, "%s", yt_errmsg());
    double g[3];
    take(yt_grad(t), g, 3);
    expect_near(g, (double[]){0, 6, 0}, 3, 0);
    yt_release(p);
    yt_release(t);

    double x2[] = {2, 0, 0};
    t = vec(x2, 3, YT_DTYPE_F64);
    yt_set_requires_grad(t, true);
    p = yt_prod_dim_int(t, 0);
    cr_assert_eq(yt_backward(p, NULL, NULL), YT_OK, "%s", yt_errmsg());
    take(yt_grad(t), g, 3);
    expect_near(g, (double[]){0, 0, 0}, 3, 0);
    yt_release(p);
    yt_release(t);
    YT_ASSERT_NO_LEAKS();
}

Test(cumsum, values_and_dtype)
{
    double x[] = {1, 2, 3, 4, 5, 6};
    int64_t sizes[] = {2, 3};
    yt_tensor *t = make(x, sizes, 2, YT_DTYPE_I32);
    yt_tensor *c = yt_cumsum(t, 1);
    cr_assert_eq(yt_tensor_dtype(c), YT_DTYPE_I64);
    double v[6];
    take(c, v, 6);
    expect_near(v, (double[]){1, 3, 6, 4, 9, 15}, 6, 0);
    take(yt_cumsum(t, 0), v, 6);
    expect_near(v, (double[]){1, 2, 3, 5, 7, 9}, 6, 0);
    yt_release(t);
    YT_ASSERT_NO_LEAKS();
}

/* cumsum and cumsum_backward (running sums from the end back) along every dim of shapes that take
 * each of the kernel's paths (runs side by side with a remainder run, few columns as runs, column
 * blocks), in f32, f64 and (cumsum only) i64, against running sums in double (i64: exact). Each
 * run starts and ends at 1e8 with 1s, 2s and 3s between: an f32 running sum would stay at 1e8
 * (f32's spacing there is 8) where the double one PyTorch keeps moves on, and the backward's
 * small elements next to the last 1e8 are lost by `sum - cumsum + grad`. */
Test(cumsum, every_layout_matches_a_running_sum)
{
    static const int64_t shapes[][3] = {{5, 7, 1}, {3, 5, 2}, {7, 3, 9}, {2, 6, 300}};
    static const yt_dtype dtypes[] = {YT_DTYPE_F32, YT_DTYPE_F64, YT_DTYPE_I64};
    enum { MAX = 2 * 6 * 300 };
    static double x[MAX], want[2][MAX], got[MAX];
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int dim = 0; dim < 3; dim++) {
            const int64_t *sz = shapes[si];
            int64_t n = sz[0] * sz[1] * sz[2], inner = 1;
            for (int d = dim + 1; d < 3; d++)
                inner *= sz[d];
            const int64_t len = sz[dim], outer = n / (len * inner);
            for (int64_t i = 0; i < n; i++) {
                int64_t k = (i / inner) % len;
                x[i] = k == 0 || k == len - 1 ? 1e8 : 1 + (double)(i % 3);
            }
            for (int64_t o = 0; o < outer; o++)
                for (int64_t j = 0; j < inner; j++) {
                    double forward = 0, backward = 0;
                    for (int64_t k = 0; k < len; k++) {
                        int64_t at = (o * len + k) * inner + j;
                        int64_t back = (o * len + len - 1 - k) * inner + j;
                        forward += x[at];
                        want[0][at] = forward;
                        backward += x[back];
                        want[1][back] = backward;
                    }
                }
            for (size_t di = 0; di < sizeof dtypes / sizeof dtypes[0]; di++)
                for (int reversed = 0; reversed < 2; reversed++) {
                    if (reversed && dtypes[di] == YT_DTYPE_I64)
                        continue; /* cumsum_backward takes floating gradients */
                    yt_tensor *t = make(x, sz, 3, dtypes[di]);
                    take(reversed ? yt_cumsum_backward(t, dim) : yt_cumsum(t, dim), got, n);
                    yt_release(t);
                    for (int64_t i = 0; i < n; i++) {
                        double w = want[reversed][i];
                        w = dtypes[di] == YT_DTYPE_F32 ? (double)(float)w : w;
                        cr_assert_eq(got[i], w,
                                     "%s, shape %lld x %lld x %lld, dim %d, %s: element %lld "
                                     "%.17g, expected %.17g",
                                     reversed ? "cumsum_backward" : "cumsum", (long long)sz[0],
                                     (long long)sz[1], (long long)sz[2], dim,
                                     yt_dtype_name(dtypes[di]), (long long)i, got[i], w);
                    }
                }
        }
    YT_ASSERT_NO_LEAKS();
}

Test(logical, all_any)
{
    double x[] = {1, 0, NAN, 0, 0, 2};
    int64_t sizes[] = {2, 3};
    yt_tensor *t = make(x, sizes, 2, YT_DTYPE_F32);
    cr_assert_eq(one(yt_all(t)), 0.0);
    cr_assert_eq(one(yt_any(t)), 1.0);
    double v[3];
    take(yt_all_dim(t, 0), v, 3);
    expect_near(v, (double[]){0, 0, 1}, 3, 0); /* NaN is nonzero: true */
    take(yt_any_dim(t, 1), v, 2);
    expect_near(v, (double[]){1, 1}, 2, 0);
    yt_release(t);
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- norm */

Test(norm, orders_and_zero_gradient)
{
    double x[] = {3, -4};
    yt_tensor *t = vec(x, 2, YT_DTYPE_F64);
    cr_assert_float_eq(one(yt_linalg_vector_norm(t)), 5.0, 1e-12);
    cr_assert_float_eq(one(yt_linalg_vector_norm_ex(t, yt_int(1), NULL, 0, false, YT_DTYPE_NONE)),
                       7.0, 1e-12);
    cr_assert_float_eq(
        one(yt_linalg_vector_norm_ex(t, yt_float(INFINITY), NULL, 0, false, YT_DTYPE_NONE)), 4.0,
        1e-12);
    cr_assert_float_eq(one(yt_linalg_vector_norm_ex(t, yt_int(0), NULL, 0, false, YT_DTYPE_NONE)),
                       2.0, 1e-12);
    yt_release(t);
    double z[] = {0, 0};
    t = vec(z, 2, YT_DTYPE_F64);
    yt_set_requires_grad(t, true);
    yt_tensor *n = yt_linalg_vector_norm(t);
    cr_assert_eq(yt_backward(n, NULL, NULL), YT_OK, "%s", yt_errmsg());
    double g[2];
    take(yt_grad(t), g, 2);
    expect_near(g, (double[]){0, 0}, 2, 0);
    yt_release(n);
    yt_release(t);
    YT_ASSERT_NO_LEAKS();
}

/* For ord < 1, |x|^(ord-1) is infinite at x == 0: PyTorch's norm_backward takes those shares
 * as 0 (and all of them when the norm is 0), not NaN. */
Test(vector_norm, gradient_below_ord_one_is_zero_at_zeros)
{
    const double x[] = {0, 1, 2, 0};
    const double ords[] = {0.5, -1.0};
    const double want[][4] = {{0, 2.414213562373095, 1.7071067811865475, 0}, {0, 0, 0, 0}};
    for (int k = 0; k < 2; k++) {
        yt_tensor *t = vec(x, 4, YT_DTYPE_F64);
        yt_set_requires_grad(t, true);
        yt_tensor *n =
            yt_linalg_vector_norm_ex(t, yt_float(ords[k]), NULL, 0, false, YT_DTYPE_NONE);
        cr_assert_eq(yt_backward(n, NULL, NULL), YT_OK, "%s", yt_errmsg());
        double g[4];
        take(yt_grad(t), g, 4);
        expect_near(g, want[k], 4, 1e-12);
        yt_release(n);
        yt_release(t);
    }
    YT_ASSERT_NO_LEAKS();
}

/* Integral and bool inputs: mean and softmax take a floating dtype, logsumexp computes in f32,
 * as in PyTorch. */
Test(mean, integral_input_with_a_floating_dtype)
{
    const int64_t s23[] = {2, 3};
    yt_tensor *a = make((double[]){1, 2, 3, 4, 5, 6}, s23, 2, YT_DTYPE_I32);
    yt_tensor *m = yt_mean_ex(a, YT_DTYPE_F64);
    cr_assert_not_null(m, "%s", yt_errmsg());
    cr_assert_eq(yt_tensor_dtype(m), YT_DTYPE_F64);
    const double mean = one(m); /* once: the assertion macro evaluates its arguments twice */
    cr_assert_float_eq(mean, 3.5, 1e-12);
    cr_assert_null(yt_mean(a));
    YT_ASSERT_ERROR(YT_ERR_DTYPE,
                    "mean: the result dtype i64 is not floating; pass a floating dtype");
    yt_tensor *l = yt_logsumexp(a, (int64_t[]){1}, 1);
    cr_assert_not_null(l, "%s", yt_errmsg());
    cr_assert_eq(yt_tensor_dtype(l), YT_DTYPE_F32);
    double g[2];
    take(l, g, 2);
    expect_near(g, (double[]){3.40760596444438, 6.40760596444438}, 2, 1e-5);
    yt_tensor *sm = yt_softmax_ex(a, 1, YT_DTYPE_F32);
    cr_assert_not_null(sm, "%s", yt_errmsg());
    cr_assert_eq(yt_tensor_dtype(sm), YT_DTYPE_F32);
    yt_release(sm);
    yt_release(a);
    YT_ASSERT_NO_LEAKS();
}

/* f32 sums add in float registers over short runs (rows and columns) and in double beyond: the
 * result stays within a few float ulps of the exact (f64) sum for long rows and columns. */
Test(sum, f32_accuracy_both_layouts)
{
    int64_t sizes[] = {1000, 777};
    int64_t n = sizes[0] * sizes[1];
    double *x = malloc(sizeof(double) * (size_t)n);
    uint64_t s = 3;
    for (int64_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (double)(s >> 11) / 9007199254740992.0 + 0.5; /* [0.5, 1.5): no cancellation */
    }
    yt_tensor *t32 = make(x, sizes, 2, YT_DTYPE_F32);
    yt_tensor *t64 = yt_to(t32, YT_DTYPE_F64);
    double *got = malloc(sizeof(double) * 1000), *want = malloc(sizeof(double) * 1000);
    for (int64_t d = 0; d < 2; d++) {
        int64_t m = sizes[1 - d];
        take(yt_sum_dim(t32, &d, 1), got, m);
        take(yt_sum_dim(t64, &d, 1), want, m);
        expect_near(got, want, m, 1e-6);
    }
    cr_assert_float_eq(one(yt_sum(t32)), one(yt_sum(t64)), 1e-6 * (double)n);
    yt_release(t64);
    yt_release(t32);
    free(x);
    free(got);
    free(want);
    YT_ASSERT_NO_LEAKS();
}

/* Long f32 rows (sum.c: TWO_STREAMS elements or more) are read as two halves in step, then a
 * tail; shorter rows as one stream. Small integers keep every partial sum exact, so each row's
 * sum must equal the exact one: an element skipped or counted twice shows. At 1 and 2 threads
 * (the 2-thread plan splits a single long row). */
Test(sum, long_rows_count_every_element)
{
    const int64_t lengths[] = {40037, 32768, 32767, 65637, 100};
    int threads_before = yt_get_num_threads();
    for (int threads = 1; threads <= 2; threads++) {
        cr_assert_eq(yt_set_num_threads(threads), YT_OK);
        for (size_t c = 0; c < sizeof lengths / sizeof lengths[0]; c++) {
            int64_t sizes[2] = {3, lengths[c]}, n = 3 * lengths[c], dim = 1;
            double *x = malloc(sizeof(double) * (size_t)n), want[3] = {0, 0, 0}, got[3];
            for (int64_t i = 0; i < n; i++) {
                x[i] = (double)((i * 7 + i / 1000) % 5);
                want[i / lengths[c]] += x[i];
            }
            yt_tensor *t = make(x, sizes, 2, YT_DTYPE_F32);
            take(yt_sum_dim(t, &dim, 1), got, 3);
            for (int r = 0; r < 3; r++)
                cr_assert_eq(got[r], want[r],
                             "%d threads, rows of %lld: row %d sums to %.17g, not %.17g", threads,
                             (long long)lengths[c], r, got[r], want[r]);
            cr_assert_eq(one(yt_sum(t)), want[0] + want[1] + want[2], "%d threads, all of 3 x %lld",
                         threads, (long long)lengths[c]);
            yt_release(t);
            free(x);
        }
    }
    cr_assert_eq(yt_set_num_threads(threads_before), YT_OK);
    YT_ASSERT_NO_LEAKS();
}

/* The backward of max.dim/min.dim puts each gradient at its index along dim, zeros elsewhere. */
Test(reduce, value_selecting_reduction_backward)
{
    double g[] = {10, 20};
    double idx[] = {2, 0};
    yt_tensor *grad = vec(g, 2, YT_DTYPE_F64);
    yt_tensor *indices = vec(idx, 2, YT_DTYPE_I64);
    int64_t sizes[] = {2, 3};
    double v[6];
    take(yt_value_selecting_reduction_backward(grad, 1, indices, sizes, 2, false), v, 6);
    expect_near(v, (double[]){0, 0, 10, 20, 0, 0}, 6, 0);
    take(yt_value_selecting_reduction_backward(grad, 0, indices, (int64_t[]){3, 2}, 2, false), v,
         6);
    expect_near(v, (double[]){0, 20, 0, 0, 10, 0}, 6, 0);
    yt_release(indices);
    yt_release(grad);
    YT_ASSERT_NO_LEAKS();
}

/* max.dim / min.dim: values and first indices, NaN winning, and the gradient at the index. */
Test(reduce, max_dim_values_indices_gradient)
{
    double x[] = {1, 3, 3, NAN, 0, -1};
    int64_t sizes[] = {2, 3};
    yt_tensor *t = make(x, sizes, 2, YT_DTYPE_F64);
    yt_tensor *values = NULL, *indices = NULL;
    cr_assert_eq(yt_max_dim(t, 1, &values, &indices), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(yt_tensor_dtype(indices), YT_DTYPE_I64);
    double v[2], i[2];
    take(values, v, 2);
    take(indices, i, 2);
    expect_near(v, (double[]){3, NAN}, 2, 0);
    expect_near(i, (double[]){1, 0}, 2, 0);
    cr_assert_eq(yt_min_dim(t, 1, &values, &indices), YT_OK, "%s", yt_errmsg());
    take(values, v, 2);
    take(indices, i, 2);
    expect_near(v, (double[]){1, NAN}, 2, 0);
    expect_near(i, (double[]){0, 0}, 2, 0);
    yt_release(t);

    double y[] = {1, 5, 2, 7, 0, 3};
    t = make(y, sizes, 2, YT_DTYPE_F64);
    yt_set_requires_grad(t, true);
    cr_assert_eq(yt_max_dim(t, 0, &values, &indices), YT_OK, "%s", yt_errmsg());
    yt_tensor *l = yt_sum(values);
    cr_assert_eq(yt_backward(l, NULL, NULL), YT_OK, "%s", yt_errmsg());
    double g[6];
    take(yt_grad(t), g, 6);
    expect_near(g, (double[]){0, 1, 0, 1, 0, 1}, 6, 0);
    yt_release(l);
    yt_release(values);
    yt_release(indices);
    yt_release(t);

    int64_t empty[] = {0, 3};
    t = make(NULL, empty, 2, YT_DTYPE_F32);
    cr_assert_neq(yt_max_dim(t, 0, &values, &indices), YT_OK);
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "max: cannot reduce over a zero-size dimension");
    cr_assert_null(values);
    yt_release(t);
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- fused kernels: f32 vs f64 */

/* The fused f32 paths (inner rows, outer column blocks, threaded sizes) against the f64 ones on
 * the same data, with a non-multiple-of-32 width and a column of constants. */
Test(fused, f32_matches_f64_inner_and_outer)
{
    enum { R = 700, C = 301 };
    double *x = malloc(sizeof(double) * R * C);
    for (int i = 0; i < R * C; i++)
        x[i] = i % C == 5 ? 0.1 : 3.0 + sin(0.37 * i) * 2.0;
    int64_t sizes[] = {R, C};
    yt_tensor *t32 = make(x, sizes, 2, YT_DTYPE_F32);
    yt_tensor *t64 = make(x, sizes, 2, YT_DTYPE_F64);
    double *a = malloc(sizeof(double) * R), *b = malloc(sizeof(double) * R);
    for (int64_t d = 0; d < 2; d++) {
        int64_t n = d == 0 ? C : R;
        for (int op = 0; op < 5; op++) {
            yt_tensor *r32 =
                op == 0   ? yt_logsumexp(t32, &d, 1)
                : op == 1 ? yt_var_ex(t32, &d, 1, YT_NONE, false)
                : op == 2 ? yt_std_ex(t32, &d, 1, 0, false)
                          : yt_linalg_vector_norm_ex(t32, yt_int(2), &d, 1, false, YT_DTYPE_NONE);
            yt_tensor *r64 =
                op == 0   ? yt_logsumexp(t64, &d, 1)
                : op == 1 ? yt_var_ex(t64, &d, 1, YT_NONE, false)
                : op == 2 ? yt_std_ex(t64, &d, 1, 0, false)
                          : yt_linalg_vector_norm_ex(t64, yt_int(2), &d, 1, false, YT_DTYPE_NONE);
            take(r32, a, n);
            take(r64, b, n);
            for (int64_t i = 0; i < n; i++)
                cr_assert(fabs(a[i] - b[i]) <= 1e-5 * (1 + fabs(b[i])),
                          "op %d dim %lld [%lld]: f32 %.9g f64 %.9g", op, (long long)d,
                          (long long)i, a[i], b[i]);
            if (d == 0 && (op == 1 || op == 2))
                cr_assert_eq(a[5], 0.0, "constant column: var/std %g", a[5]);
        }
    }
    free(a);
    free(b);
    yt_release(t32);
    yt_release(t64);
    free(x);
    YT_ASSERT_NO_LEAKS();
}

/* -inf / NaN columns through the outer logsumexp path; NaN in a long row for the inf norm. */
Test(fused, outer_logsumexp_and_inf_norm_specials)
{
    enum { R = 40, C = 70 };
    double x[R * C];
    for (int i = 0; i < R * C; i++)
        x[i] = i % C == 3 ? -INFINITY : i % C == 4 && i / C == 17 ? NAN : 0.5 * (i % 7);
    int64_t sizes[] = {R, C}, d0 = 0;
    yt_tensor *t = make(x, sizes, 2, YT_DTYPE_F32);
    double v[C];
    take(yt_logsumexp(t, &d0, 1), v, C);
    cr_assert(isinf(v[3]) && v[3] < 0, "all -inf column: %g", v[3]);
    cr_assert(isnan(v[4]), "NaN column: %g", v[4]);
    cr_assert(isfinite(v[0]), "column 0: %g", v[0]);
    double m = one(yt_linalg_vector_norm_ex(t, yt_float(INFINITY), NULL, 0, false, YT_DTYPE_NONE));
    cr_assert(isnan(m), "inf norm with a NaN: %g", m);
    yt_release(t);
    YT_ASSERT_NO_LEAKS();
}
