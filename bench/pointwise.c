/* Elementwise throughput of yaten's pointwise ops with out= (the result buffer is reused), f32,
 * one thread. Prints "yaten CASE N GB/s" lines; bench/pointwise_torch.py prints the same for
 * PyTorch and bench/pointwise.sh runs both interleaved and tabulates them.
 *
 * GB/s counts every operand once per output element (out + inputs, broadcast inputs as if
 * materialised), the STREAM convention of /work/shared/reference-bench/torch_bw.py, applied
 * identically on both sides so the ratio is what matters.
 *
 * Usage: pointwise [CASE...]   (default: every case) */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <yaten.h>

enum { COLS = 1000 };

typedef struct bench_case {
    const char *name;
    int n_in; /* operands read per output element */
} bench_case;

static const bench_case CASES[] = {
    {"add", 2},
    {"mul", 2},
    {"div", 2},
    {"add_scalar", 1},
    {"neg", 1},
    {"exp", 1},
    {"sigmoid", 1},
    {"tanh", 1},
    {"relu", 1},
    {"sqrt", 1},
    {"gelu", 1},
    {"add_bcast_row", 2},
    {"add_bcast_col", 2},
    {"add_transposed", 2},
    {"exp_transposed", 1},
};
static const int64_t SIZES[] = {1 << 16, 1 << 20, 10000000};

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One call of the case into `out`. */
static yt_status
run(const char *c, yt_tensor *out, yt_tensor *a, yt_tensor *b, yt_tensor *row, yt_tensor *col,
    yt_tensor *at)
{
    if (!strcmp(c, "add"))
        return yt_add_out(out, a, b);
    if (!strcmp(c, "mul"))
        return yt_mul_out(out, a, b);
    if (!strcmp(c, "div"))
        return yt_div_out(out, a, b);
    if (!strcmp(c, "add_scalar"))
        return yt_add_scalar_out(out, a, yt_float(2.0));
    if (!strcmp(c, "neg"))
        return yt_neg_out(out, a);
    if (!strcmp(c, "exp"))
        return yt_exp_out(out, a);
    if (!strcmp(c, "sigmoid"))
        return yt_sigmoid_out(out, a);
    if (!strcmp(c, "tanh"))
        return yt_tanh_out(out, a);
    if (!strcmp(c, "relu"))
        return yt_relu_out(out, a);
    if (!strcmp(c, "sqrt"))
        return yt_sqrt_out(out, b);
    if (!strcmp(c, "gelu"))
        return yt_gelu_out(out, a);
    if (!strcmp(c, "add_bcast_row"))
        return yt_add_out(out, a, row);
    if (!strcmp(c, "add_bcast_col"))
        return yt_add_out(out, a, col);
    if (!strcmp(c, "add_transposed"))
        return yt_add_out(out, at, b);
    if (!strcmp(c, "exp_transposed"))
        return yt_exp_out(out, at);
    return YT_ERR_VALUE;
}

static void
bench(const bench_case *c, int64_t n)
{
    int64_t rows = n / COLS;
    int64_t shape[2] = {rows, COLS}, tshape[2] = {COLS, rows}, rshape[1] = {COLS},
            cshape[2] = {rows, 1};
    yt_tensor *u = yt_rand(shape, 2);
    yt_tensor *a = yt_sub_scalar(u, yt_float(0.5));
    yt_release(u);
    yt_tensor *b = yt_rand(shape, 2);
    yt_tensor *row = yt_rand(rshape, 1), *col = yt_rand(cshape, 2);
    yt_tensor *ta = yt_rand(tshape, 2);
    yt_tensor *at = yt_transpose(ta, 0, 1);
    yt_tensor *out = yt_zeros(shape, 2);
    if (out == NULL || at == NULL || a == NULL) {
        fprintf(stderr, "pointwise bench: %s\n", yt_errmsg());
        exit(1);
    }
    if (run(c->name, out, a, b, row, col, at) != YT_OK) {
        fprintf(stderr, "pointwise bench %s: %s\n", c->name, yt_errmsg());
        exit(1);
    }
    /* Batches of >= 20 ms within a 0.4 s budget; the best batch's time per call. */
    double best = 1e30, start = now_s();
    int per_batch = 1;
    while (now_s() - start < 0.4) {
        double t0 = now_s();
        for (int i = 0; i < per_batch; i++)
            run(c->name, out, a, b, row, col, at);
        double dt = now_s() - t0;
        if (dt < 0.02) {
            per_batch *= 2;
            continue;
        }
        if (dt / per_batch < best)
            best = dt / per_batch;
    }
    double bytes = 4.0 * (double)(rows * COLS) * (c->n_in + 1);
    printf("yaten %s %lld %.2f\n", c->name, (long long)(rows * COLS), bytes / best / 1e9);
    fflush(stdout);
    yt_release(a);
    yt_release(b);
    yt_release(row);
    yt_release(col);
    yt_release(ta);
    yt_release(at);
    yt_release(out);
}

int
main(int argc, char **argv)
{
    for (size_t k = 0; k < sizeof CASES / sizeof CASES[0]; k++) {
        bool wanted = argc == 1;
        for (int i = 1; i < argc; i++)
            wanted |= !strcmp(argv[i], CASES[k].name);
        if (!wanted)
            continue;
        for (size_t s = 0; s < sizeof SIZES / sizeof SIZES[0]; s++)
            bench(&CASES[k], SIZES[s]);
    }
    return 0;
}
