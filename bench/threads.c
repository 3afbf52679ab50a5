/* One thread against two, in one process, on work from a few hundred elements up: issue 3's
 * "kernels stay single-threaded below a size threshold so 2 threads never lose to 1 on small
 * work". Each case is timed in batches of about 2 ms, alternating yt_set_num_threads(1) and (2)
 * batch by batch so both see the same machine; the fastest batch of each counts. Prints case,
 * elements, both times per call and their ratio (1t / 2t: >= 1 means two threads did not lose).
 *
 * Usage: bench/threads.sh BUILD_DIR [CASE...] (default: every case). */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <yaten.h>

#include "clock.h"

enum { ROUNDS = 15 };
static const double BATCH_S = 2e-3;

/* One call of a case on its operands; results are released at once, as a training step does. */
typedef yt_status (*case_fn)(yt_tensor *const *t);

typedef struct bench_case {
    const char *name;
    case_fn run;
    int n_shapes;
    int64_t shapes[3][4]; /* operand shapes, 0-terminated; the first one's size is reported */
} bench_case;

static yt_status
released(yt_tensor *t)
{
    if (t == NULL)
        return YT_ERR_INTERNAL;
    yt_release(t);
    return YT_OK;
}

static yt_status
add(yt_tensor *const *t)
{
    return yt_add_out(t[2], t[0], t[1]);
}

static yt_status
exp_(yt_tensor *const *t)
{
    return yt_exp_out(t[1], t[0]);
}

static yt_status
add_transposed(yt_tensor *const *t)
{
    yt_tensor *at = yt_t(t[0]);
    yt_status s = at == NULL ? YT_ERR_INTERNAL : yt_add_out(t[2], at, t[1]);
    yt_release(at);
    return s;
}

static yt_status
sum_rows(yt_tensor *const *t)
{
    int64_t dim = 1;
    return released(yt_sum_dim(t[0], &dim, 1));
}

static yt_status
sum_cols(yt_tensor *const *t)
{
    int64_t dim = 0;
    return released(yt_sum_dim(t[0], &dim, 1));
}

static yt_status
softmax(yt_tensor *const *t)
{
    return released(yt_softmax(t[0], 1));
}

static yt_status
layer_norm(yt_tensor *const *t)
{
    int64_t last = yt_tensor_size(t[0], 1);
    return released(yt_layer_norm(t[0], &last, 1));
}

static yt_status
mm(yt_tensor *const *t)
{
    return yt_mm_out(t[2], t[0], t[1]);
}

static yt_status
conv2d(yt_tensor *const *t)
{
    const int64_t one[2] = {1, 1};
    return released(yt_conv2d_ex(t[0], t[1], NULL, one, 2, one, 2, one, 2, 1));
}

static yt_status
max_pool2d(yt_tensor *const *t)
{
    const int64_t two[2] = {2, 2};
    return released(yt_max_pool2d(t[0], two, 2));
}

static yt_status
cumsum(yt_tensor *const *t)
{
    return released(yt_cumsum(t[0], 1));
}

#define VEC(n)                                                                                     \
    {                                                                                              \
        {n}, {n},                                                                                  \
        {                                                                                          \
            n                                                                                      \
        }                                                                                          \
    }
#define ROWS(r, c)                                                                                 \
    {                                                                                              \
        {r, c}, {r, c},                                                                            \
        {                                                                                          \
            r, c                                                                                   \
        }                                                                                          \
    }
#define MM(m, k, n)                                                                                \
    {                                                                                              \
        {m, k}, {k, n},                                                                            \
        {                                                                                          \
            m, n                                                                                   \
        }                                                                                          \
    }

static const bench_case CASES[] = {
    {"add", add, 3, VEC(256)},
    {"add", add, 3, VEC(4096)},
    {"add", add, 3, VEC(32768)},
    {"add", add, 3, VEC(65536)},
    {"add", add, 3, VEC(262144)},
    {"add", add, 3, VEC(1048576)},
    {"add", add, 3, VEC(4194304)},
    {"exp", exp_, 2, VEC(4096)},
    {"exp", exp_, 2, VEC(32768)},
    {"exp", exp_, 2, VEC(262144)},
    {"exp", exp_, 2, VEC(1048576)},
    {"add_transposed", add_transposed, 3, ROWS(64, 64)},
    {"add_transposed", add_transposed, 3, ROWS(256, 256)},
    {"add_transposed", add_transposed, 3, ROWS(1000, 1000)},
    {"sum_rows", sum_rows, 1, {{16, 256}}},
    {"sum_rows", sum_rows, 1, {{256, 256}}},
    {"sum_rows", sum_rows, 1, {{4096, 256}}},
    {"sum_cols", sum_cols, 1, {{256, 256}}},
    {"sum_cols", sum_cols, 1, {{4096, 256}}},
    {"softmax", softmax, 1, {{16, 100}}},
    {"softmax", softmax, 1, {{64, 1000}}},
    {"softmax", softmax, 1, {{1024, 1000}}},
    {"layer_norm", layer_norm, 1, {{16, 256}}},
    {"layer_norm", layer_norm, 1, {{256, 256}}},
    {"layer_norm", layer_norm, 1, {{4096, 256}}},
    {"cumsum", cumsum, 1, {{64, 100}}},
    {"cumsum", cumsum, 1, {{1024, 1000}}},
    {"mm", mm, 3, MM(8, 8, 8)},
    {"mm", mm, 3, MM(32, 32, 32)},
    {"mm", mm, 3, MM(64, 64, 64)},
    {"mm", mm, 3, MM(64, 128, 10)},
    {"mm", mm, 3, MM(64, 784, 256)},
    {"mm", mm, 3, MM(256, 256, 256)},
    {"conv2d", conv2d, 2, {{1, 4, 8, 8}, {4, 4, 3, 3}}},
    {"conv2d", conv2d, 2, {{8, 16, 14, 14}, {16, 16, 3, 3}}},
    {"conv2d", conv2d, 2, {{64, 32, 14, 14}, {32, 32, 3, 3}}},
    {"max_pool2d", max_pool2d, 1, {{1, 4, 8, 8}}},
    {"max_pool2d", max_pool2d, 1, {{64, 32, 28, 28}}},
};

static int
rank_of(const int64_t *shape)
{
    int d = 0;
    while (d < 4 && shape[d] != 0)
        d++;
    return d;
}

/* Seconds per call of the fastest batch at `threads` threads; < 0 on an error. */
static double
batch(const bench_case *c, yt_tensor *const *t, int threads, int calls)
{
    if (yt_set_num_threads(threads) != YT_OK)
        return -1;
    double t0 = bench_now_s();
    for (int i = 0; i < calls; i++)
        if (c->run(t) != YT_OK)
            return -1;
    return (bench_now_s() - t0) / calls;
}

static int
bench(const bench_case *c)
{
    yt_tensor *t[3] = {NULL, NULL, NULL};
    int rc = 1;
    for (int k = 0; k < c->n_shapes; k++)
        if ((t[k] = yt_rand(c->shapes[k], rank_of(c->shapes[k]))) == NULL)
            goto done;
    /* calls per batch: about BATCH_S of one thread's work */
    double once = batch(c, t, 1, 3);
    if (once < 0)
        goto done;
    int calls = once * 100 > BATCH_S ? 100 : (int)(BATCH_S / (once + 1e-9)) + 1;
    double best[2] = {1e30, 1e30};
    for (int r = 0; r < ROUNDS; r++)
        for (int k = 0; k < 2; k++) {
            double dt = batch(c, t, k + 1, calls);
            if (dt < 0)
                goto done;
            best[k] = dt < best[k] ? dt : best[k];
        }
    char shape[64] = "";
    for (int d = 0; d < rank_of(c->shapes[0]); d++)
        snprintf(shape + strlen(shape), sizeof shape - strlen(shape), d ? "x%lld" : "%lld",
                 (long long)c->shapes[0][d]);
    printf("%-16s %-16s %10lld %10.2f %10.2f %7.2f\n", c->name, shape,
           (long long)yt_tensor_numel(t[0]), best[0] * 1e6, best[1] * 1e6, best[0] / best[1]);
    fflush(stdout);
    rc = 0;
done:
    if (rc != 0)
        fprintf(stderr, "threads bench %s: %s\n", c->name, yt_errmsg());
    for (int k = 0; k < 3; k++)
        yt_release(t[k]);
    return rc;
}

int
main(int argc, char **argv)
{
    printf("%-16s %-16s %10s %10s %10s %7s\n", "case", "shape", "elements", "1t_us", "2t_us",
           "1t/2t");
    int rc = 0;
    for (size_t k = 0; k < sizeof CASES / sizeof CASES[0]; k++) {
        bool wanted = argc == 1;
        for (int i = 1; i < argc; i++)
            wanted |= !strcmp(argv[i], CASES[k].name);
        if (wanted)
            rc |= bench(&CASES[k]);
    }
    if (yt_live_tensors() != 0)
        fprintf(stderr, "threads bench: %lld tensors leaked\n", (long long)yt_live_tensors());
    return rc;
}
