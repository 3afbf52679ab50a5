/* GEMM throughput: yaten's yt_mm_out against a direct BLIS call with the same operands and
 * strides (the serial BLIS the library links: one thread whatever THREADS says), f32, for square sizes, the MLP shapes and their backward products (transposed
 * views). Usage: build/bench/gemm THREADS. One line per case:
 *   gemm_<case>_<T>t yaten <GFLOP/s> blis <GFLOP/s>
 * Each number is the fastest of up to 11 timed batches (each >= 5 ms): on a machine shared
 * with other jobs the fastest batch is the one least disturbed. bench/gemm.sh interleaves this
 * with PyTorch (timed the same way) and prints the table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <yaten.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wtype-limits"
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#pragma GCC diagnostic ignored "-Wshadow"
#include <blis.h>
#pragma GCC diagnostic pop

typedef struct {
    const char *name;
    int64_t m, k, n;
    bool ta, tb; /* A (m x k) is the transpose of a stored k x m matrix; likewise B */
} gemm_case;

static const gemm_case cases[] = {
    {"n64", 64, 64, 64, false, false},
    {"n128", 128, 128, 128, false, false},
    {"n256", 256, 256, 256, false, false},
    {"n512", 512, 512, 512, false, false},
    {"n1024", 1024, 1024, 1024, false, false},
    /* MLP forward x @ W^T with W stored [out, in] as nn.Linear does, and its two backward
     * products: dX = dY @ W (plain), dW = dY^T @ X (A transposed). Also plain forms. */
    {"64x784x256", 64, 784, 256, false, false},
    {"64x256x128", 64, 256, 128, false, false},
    {"64x128x10", 64, 128, 10, false, false},
    {"64x784x256_bt", 64, 784, 256, false, true},
    {"64x256x128_bt", 64, 256, 128, false, true},
    {"64x128x10_bt", 64, 128, 10, false, true},
    {"dW_256x64x784_at", 256, 64, 784, true, false},
    {"dW_128x64x256_at", 128, 64, 256, true, false},
    {"dW_10x64x128_at", 10, 64, 128, true, false},
    /* dW = X^T @ dY, for a weight stored [in, out] (x @ W); nn.Linear's [out, in] weight gets
     * dY^T @ X (the dW cases above, as in PyTorch: mm_mat2_backward) */
    {"dWt_784x64x256_at", 784, 64, 256, true, false},
    {"dWt_256x64x128_at", 256, 64, 128, true, false},
    {"dWt_128x64x10_at", 128, 64, 10, true, false},
    {"dX_64x256x784", 64, 256, 784, false, false},
    {"dX_64x128x256", 64, 128, 256, false, false},
    {"dX_64x10x128", 64, 10, 128, false, false},
};

/* GEMM_CLOCK=thread times with the calling thread's CPU time (one-thread runs on a shared
 * machine: time spent preempted does not count); the default is wall-clock time. */
static clockid_t clock_id = CLOCK_MONOTONIC;

static double
now(void)
{
    struct timespec ts;
    clock_gettime(clock_id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct {
    yt_tensor *a, *b, *c; /* a, b: views with the case's layout */
    float *pa, *pb, *pc;
    int64_t rsa, csa, rsb, csb;
    int threads;
    const gemm_case *g;
} setup;

static void
run_yaten(setup *s)
{
    if (yt_mm_out(s->c, s->a, s->b) != YT_OK) {
        fprintf(stderr, "yt_mm_out: %s\n", yt_errmsg());
        exit(1);
    }
}

static void
run_blis(setup *s)
{
    float one = 1.0f, zero = 0.0f;
    rntm_t rntm = BLIS_RNTM_INITIALIZER;
    bli_rntm_set_num_threads(1, &rntm); /* a BLIS built without threads */
    bli_sgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, s->g->m, s->g->n, s->g->k, &one, s->pa,
                 s->rsa, s->csa, s->pb, s->rsb, s->csb, &zero, s->pc, s->g->n, 1, NULL, &rntm);
}

/* Seconds per call of the fastest of up to 11 batches of >= 5 ms, within ~0.4 s. */
static double
time_it(void (*fn)(setup *), setup *s)
{
    double t0 = now(), t1;
    int calls = 0;
    do {
        fn(s);
        calls++;
        t1 = now();
    } while (calls < 2 || t1 - t0 < 0.05);
    double per_call = (t1 - t0) / calls;
    int per_batch = (int)(0.005 / per_call) + 1;
    int nb = (int)(0.4 / (per_call * per_batch));
    nb = nb < 3 ? 3 : nb > 11 ? 11 : nb;
    double v[11];
    for (int b = 0; b < nb; b++) {
        double s0 = now();
        for (int i = 0; i < per_batch; i++)
            fn(s);
        v[b] = (now() - s0) / per_batch;
    }
    qsort(v, (size_t)nb, sizeof v[0], cmp_double);
    return v[0];
}

static yt_tensor *
matrix(int64_t rows, int64_t cols, bool transposed)
{
    int64_t sizes[2] = {transposed ? cols : rows, transposed ? rows : cols};
    yt_tensor *t = yt_rand(sizes, 2);
    if (!transposed)
        return t;
    yt_tensor *v = yt_t(t);
    yt_release(t);
    return v;
}

int
main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 1;
    const char *clock_name = getenv("GEMM_CLOCK");
    if (clock_name != NULL && strcmp(clock_name, "thread") == 0)
        clock_id = CLOCK_THREAD_CPUTIME_ID;
    /* BLIS picks its kernel set once, when first used: the library's choice (skx on AVX-512
     * CPUs its cpuid table does not know) must come before the direct calls below, or they run
     * BLIS's generic kernels at a fifth of its speed while yaten's own kernels never touch BLIS */
    fprintf(stderr, "BLIS kernels: %s\n", yt_blas_info());
    if (yt_set_num_threads(threads) != YT_OK) {
        fprintf(stderr, "threads: %s\n", yt_errmsg());
        return 1;
    }
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const gemm_case *g = &cases[i];
        setup s = {.threads = threads, .g = g};
        s.a = matrix(g->m, g->k, g->ta);
        s.b = matrix(g->k, g->n, g->tb);
        int64_t cs[2] = {g->m, g->n};
        s.c = yt_zeros(cs, 2);
        run_yaten(&s);
        s.pa = yt_tensor_data(s.a);
        s.pb = yt_tensor_data(s.b);
        s.pc = malloc(sizeof(float) * (size_t)(g->m * g->n));
        s.rsa = yt_tensor_stride(s.a, 0), s.csa = yt_tensor_stride(s.a, 1);
        s.rsb = yt_tensor_stride(s.b, 0), s.csb = yt_tensor_stride(s.b, 1);
        double flop = 2.0 * (double)g->m * (double)g->n * (double)g->k;
        double ty = time_it(run_yaten, &s), tb = time_it(run_blis, &s);
        printf("gemm_%s_%dt yaten %.1f blis %.1f\n", g->name, threads, flop / ty * 1e-9,
               flop / tb * 1e-9);
        fflush(stdout);
        free(s.pc);
        yt_release(s.c);
        yt_release(s.b);
        yt_release(s.a);
    }
    return 0;
}
