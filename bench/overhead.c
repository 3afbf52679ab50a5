/* Per-call overhead of yaten's op path, on 1-element tensors where the arithmetic is free:
 *   add_nograd      yt_add + yt_release, no input requires grad
 *   add_grad        the same with both inputs requiring grad (a backward node is recorded)
 *   chain_fwd_bwd   50 x (x * 1.0001 + 0.1) = 100 ops, then backward; ns per op
 * Prints "name value unit" lines; medians over rounds. bench/overhead_torch.cpp measures the
 * same with PyTorch's C++ API, and bench/overhead.sh runs both interleaved. */
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <yaten.h>

enum { ROUNDS = 9, CHAIN_MULS = 50 };

static double
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double
median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void
die(const char *what)
{
    fprintf(stderr, "overhead: %s: %s\n", what, yt_errmsg());
    exit(1);
}

static yt_tensor *
chain(yt_tensor *x)
{
    yt_tensor *cur = yt_retain(x);
    for (int i = 0; i < CHAIN_MULS; i++) {
        yt_tensor *m = yt_mul_scalar(cur, yt_float(1.0001));
        yt_tensor *a = yt_add_scalar(m, yt_float(0.1));
        yt_release(m);
        yt_release(cur);
        cur = a;
    }
    return cur;
}

int
main(void)
{
    const int64_t one[1] = {1};
    yt_tensor *a = yt_rand(one, 1), *b = yt_rand(one, 1);
    yt_tensor *ga = yt_rand(one, 1), *gb = yt_rand(one, 1);
    yt_tensor *x0 = yt_ones(one, 1);
    if (!a || !b || !ga || !gb || !x0 || yt_set_requires_grad(ga, true) ||
        yt_set_requires_grad(gb, true) || yt_set_requires_grad(x0, true))
        die("set-up");

    /* the chain's gradient must be right before its speed means anything */
    yt_tensor *y = chain(x0);
    if (yt_backward(y, NULL, NULL) != YT_OK)
        die("backward");
    yt_tensor *g = yt_grad(x0);
    double want = pow(1.0001, CHAIN_MULS);
    if (fabs(yt_item(g) - want) > 1e-6) {
        fprintf(stderr, "overhead: chain gradient %.9f, expected %.9f\n", yt_item(g), want);
        return 1;
    }
    yt_release(g);
    yt_release(y);
    yt_zero_grad(x0);

    double s_add[ROUNDS], s_grad[ROUNDS], s_chain[ROUNDS];
    const int n_add = 200000, n_chain = 2000;
    for (int r = -1; r < ROUNDS; r++) { /* round -1 warms caches and the allocator */
        double t0 = now_ns();
        for (int i = 0; i < n_add; i++)
            yt_release(yt_add(a, b));
        double t1 = now_ns();
        for (int i = 0; i < n_add; i++)
            yt_release(yt_add(ga, gb));
        double t2 = now_ns();
        for (int i = 0; i < n_chain; i++) {
            yt_tensor *out = chain(x0);
            if (yt_backward(out, NULL, NULL) != YT_OK)
                die("chain backward");
            yt_release(out);
            yt_zero_grad(x0);
        }
        double t3 = now_ns();
        if (r >= 0) {
            s_add[r] = (t1 - t0) / n_add;
            s_grad[r] = (t2 - t1) / n_add;
            s_chain[r] = (t3 - t2) / n_chain / (2 * CHAIN_MULS);
        }
    }
    printf("yaten_add_nograd %.0f ns\n", median(s_add, ROUNDS));
    printf("yaten_add_grad %.0f ns\n", median(s_grad, ROUNDS));
    printf("yaten_chain_fwd_bwd %.0f ns/op\n", median(s_chain, ROUNDS));
    yt_release(a);
    yt_release(b);
    yt_release(ga);
    yt_release(gb);
    yt_release(x0);
    if (yt_live_tensors() != 0) {
        fprintf(stderr, "overhead: %lld tensors leaked\n", (long long)yt_live_tensors());
        return 1;
    }
    return 0;
}
