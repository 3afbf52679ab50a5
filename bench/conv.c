/* conv2d and max_pool2d of the benchmark CNN (f32, batch 64), forward and backward:
 *   conv1  [64, 1, 28, 28] * [8, 1, 3, 3] + bias      backward: weight and bias (the input is data)
 *   conv2  [64, 8, 13, 13] * [16, 8, 3, 3] + bias     backward: input, weight and bias
 *   pool1  max_pool2d(2) of [64, 8, 26, 26]           backward: input
 *   pool2  max_pool2d(2) of [64, 16, 11, 11]
 * Prints "yaten_<case>_<fwd|bwd|fwdbwd> <ms> ms" (medians; bwd timed alone, each call after an
 * untimed forward pass that records the graph); bench/conv_torch.py prints the same
 * for PyTorch and bench/conv.sh runs both interleaved. Threads: OMP_NUM_THREADS. */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <yaten.h>

/* BENCH_CLOCK=cpu measures process CPU time instead of wall time: on a loaded machine that is
 * the fairer number at one thread (at two it also counts spinning). */
static clockid_t bench_clock = CLOCK_MONOTONIC;

static double
now_ms(void)
{
    struct timespec ts;
    clock_gettime(bench_clock, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void
check(const void *p, const char *what)
{
    if (p == NULL) {
        fprintf(stderr, "conv bench: %s: %s\n", what, yt_errmsg());
        exit(1);
    }
}

/* Median ms per call of fn over 7 batches of at least 20 ms. With `before` set, each call of fn
 * follows a call of before(ctx) that is not timed (the forward pass a backward one needs). */
static double
median_ms(void (*before)(void *), void (*fn)(void *), void *ctx)
{
    double per = 0;
    for (int warm = 0; warm < 3; warm++) {
        if (before != NULL)
            before(ctx);
        double t0 = now_ms();
        fn(ctx);
        per = now_ms() - t0;
    }
    int inner = (int)(20.0 / (per > 1e-3 ? per : 1e-3)) + 1;
    double v[7];
    for (int r = 0; r < 7; r++) {
        double spent = 0;
        if (before == NULL) {
            double s = now_ms();
            for (int i = 0; i < inner; i++)
                fn(ctx);
            spent = now_ms() - s;
        } else {
            for (int i = 0; i < inner; i++) {
                before(ctx);
                double s = now_ms();
                fn(ctx);
                spent += now_ms() - s;
            }
        }
        v[r] = spent / inner;
    }
    qsort(v, 7, sizeof *v, cmp_double);
    return v[3];
}

typedef struct conv_case {
    yt_tensor *x, *w, *b, *g;
    yt_tensor *y; /* the forward pass's output, recorded for backward */
} conv_case;

static void
conv_fwd(void *ctx)
{
    conv_case *c = ctx;
    yt_set_grad_enabled(false);
    yt_tensor *y = yt_conv2d_ex(c->x, c->w, c->b, NULL, 0, NULL, 0, NULL, 0, 1);
    check(y, "conv2d");
    yt_release(y);
    yt_set_grad_enabled(true);
}

static void
conv_record(void *ctx)
{
    conv_case *c = ctx;
    c->y = yt_conv2d_ex(c->x, c->w, c->b, NULL, 0, NULL, 0, NULL, 0, 1);
    check(c->y, "conv2d");
}

static void
pool_fwd(void *ctx)
{
    conv_case *c = ctx;
    static const int64_t k[] = {2};
    yt_set_grad_enabled(false);
    yt_tensor *y = yt_max_pool2d(c->x, k, 1);
    check(y, "max_pool2d");
    yt_release(y);
    yt_set_grad_enabled(true);
}

static void
pool_record(void *ctx)
{
    conv_case *c = ctx;
    static const int64_t k[] = {2};
    c->y = yt_max_pool2d(c->x, k, 1);
    check(c->y, "max_pool2d");
}

/* The backward pass of the output conv_record or pool_record left, then the gradients zeroed. */
static void
bwd(void *ctx)
{
    conv_case *c = ctx;
    if (yt_backward(c->y, c->g, NULL) != YT_OK)
        check(NULL, "backward");
    yt_release(c->y);
    c->y = NULL;
    yt_tensor *leaves[3] = {c->x, c->w, c->b};
    for (int i = 0; i < 3; i++)
        if (leaves[i] != NULL)
            yt_zero_grad(leaves[i]);
}

static yt_tensor *
randn(int64_t a, int64_t b, int64_t c, int64_t d, int dim, bool grad)
{
    int64_t sizes[4] = {a, b, c, d};
    yt_tensor *t = yt_randn(sizes, dim);
    check(t, "randn");
    if (grad)
        yt_set_requires_grad(t, true);
    return t;
}

/* fwdbwd: a forward pass recorded for backward and the backward pass, timed together */
static void
fwdbwd(void (*record)(void *), conv_case *c)
{
    record(c);
    bwd(c);
}

static void
conv_fwdbwd(void *ctx)
{
    fwdbwd(conv_record, ctx);
}

static void
pool_fwdbwd(void *ctx)
{
    fwdbwd(pool_record, ctx);
}

/* Forward alone (no graph), backward alone (after an untimed recorded forward), and both. */
static void
report(const char *name, void (*fwd)(void *), void (*record)(void *), void (*both)(void *),
       conv_case *c)
{
    const double f = median_ms(NULL, fwd, c), b = median_ms(record, bwd, c);
    const double fb = median_ms(NULL, both, c);
    printf("yaten_%s_fwd %.4f ms\nyaten_%s_bwd %.4f ms\nyaten_%s_fwdbwd %.4f ms\n", name, f, name,
           b, name, fb);
    fflush(stdout);
}

static void
conv_bench(const char *name, int64_t n, int64_t ci, int64_t h, int64_t co, int64_t k,
           bool input_grad)
{
    conv_case c = {randn(n, ci, h, h, 4, input_grad), randn(co, ci, k, k, 4, true),
                   randn(co, 0, 0, 0, 1, true), randn(n, co, h - k + 1, h - k + 1, 4, false), NULL};
    report(name, conv_fwd, conv_record, conv_fwdbwd, &c);
    yt_release(c.x), yt_release(c.w), yt_release(c.b), yt_release(c.g);
}

static void
pool_bench(const char *name, int64_t n, int64_t ch, int64_t h)
{
    conv_case c = {randn(n, ch, h, h, 4, true), NULL, NULL, randn(n, ch, h / 2, h / 2, 4, false),
                   NULL};
    report(name, pool_fwd, pool_record, pool_fwdbwd, &c);
    yt_release(c.x), yt_release(c.g);
}

int
main(void)
{
    const char *clock_env = getenv("BENCH_CLOCK");
    if (clock_env != NULL && clock_env[0] == 'c')
        bench_clock = CLOCK_PROCESS_CPUTIME_ID;
    yt_manual_seed(0);
    conv_bench("conv1", 64, 1, 28, 8, 3, false);
    conv_bench("conv2", 64, 8, 13, 16, 3, true);
    pool_bench("pool1", 64, 8, 26);
    pool_bench("pool2", 64, 16, 11);
    return 0;
}
