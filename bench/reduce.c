/* Reductions and softmax timings, the yaten half of bench/reduce.sh (bench/reduce_torch.py is
 * the PyTorch half, same cases). Prints "name microseconds" per case: the fastest of 15 batches
 * of about 5 ms each (the machine is shared: the fastest batch is the one least disturbed; a
 * median mostly measures the neighbours). Threads: OMP_NUM_THREADS. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <yaten.h>

#include "clock.h"

typedef yt_tensor *(*case_fn)(yt_tensor *x, yt_tensor *y);

static yt_tensor *
sum_last(yt_tensor *x, yt_tensor *y)
{
    (void)y;
    int64_t d = 1;
    return yt_sum_dim(x, &d, 1);
}

static yt_tensor *
sum_first(yt_tensor *x, yt_tensor *y)
{
    (void)y;
    int64_t d = 0;
    return yt_sum_dim(x, &d, 1);
}

static yt_tensor *
sum_all(yt_tensor *x, yt_tensor *y)
{
    (void)y;
    return yt_sum(x);
}

static yt_tensor *
amax_last(yt_tensor *x, yt_tensor *y)
{
    (void)y;
    int64_t d = 1;
    return yt_amax_ex(x, &d, 1, false);
}

static yt_tensor *
softmax_last(yt_tensor *x, yt_tensor *y)
{
    (void)y;
    return yt_softmax(x, 1);
}

static yt_tensor *
log_softmax_last(yt_tensor *x, yt_tensor *y)
{
    (void)y;
    return yt_log_softmax(x, 1);
}

static yt_tensor *
softmax_first(yt_tensor *x, yt_tensor *y)
{
    (void)y;
    return yt_softmax(x, 0);
}

static yt_tensor *
softmax_bwd(yt_tensor *x, yt_tensor *y)
{
    return yt_softmax_backward_data(x, y, 1);
}

static yt_tensor *
logsumexp_last(yt_tensor *x, yt_tensor *y)
{
    (void)y;
    int64_t d = 1;
    return yt_logsumexp(x, &d, 1);
}

static yt_tensor *
cumsum_last(yt_tensor *x, yt_tensor *y)
{
    (void)y;
    return yt_cumsum(x, 1);
}

static yt_tensor *
cumsum_first(yt_tensor *x, yt_tensor *y)
{
    (void)y;
    return yt_cumsum(x, 0);
}

static yt_tensor *
var_last(yt_tensor *x, yt_tensor *y)
{
    (void)y;
    int64_t d = 1;
    return yt_var_ex(x, &d, 1, YT_NONE, false);
}

static yt_tensor *
var_first(yt_tensor *x, yt_tensor *y)
{
    (void)y;
    int64_t d = 0;
    return yt_var_ex(x, &d, 1, YT_NONE, false);
}

static yt_tensor *
norm2_all(yt_tensor *x, yt_tensor *y)
{
    (void)y;
    return yt_linalg_vector_norm(x);
}

static yt_tensor *
norm2_last(yt_tensor *x, yt_tensor *y)
{
    (void)y;
    int64_t d = 1;
    return yt_linalg_vector_norm_ex(x, yt_float(2), &d, 1, false, YT_DTYPE_NONE);
}

static int
cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static yt_tensor *
argmax_last(yt_tensor *x, yt_tensor *y)
{
    (void)y;
    return yt_argmax_ex(x, 1, false);
}

static yt_tensor *
prod_last(yt_tensor *x, yt_tensor *y)
{
    (void)y;
    return yt_prod_dim_int(x, 1);
}

static yt_tensor *
log_softmax_bwd(yt_tensor *x, yt_tensor *y)
{
    return yt_log_softmax_backward_data(x, y, 1);
}

/* class targets for cross_entropy_16384x16: 16384 of them in [0, 16), made in main */
static yt_tensor *targets;

static yt_tensor *
cross_entropy(yt_tensor *x, yt_tensor *y)
{
    (void)y;
    return yt_cross_entropy_index(x, targets);
}

static const char *only; /* run only the cases whose name contains this (argv[1]) */

static void
bench(const char *name, case_fn fn, int64_t rows, int64_t cols)
{
    if (only != NULL && strstr(name, only) == NULL)
        return;
    int64_t sizes[] = {rows, cols};
    yt_tensor *x = yt_randn(sizes, 2);
    yt_tensor *y = yt_softmax(x, 1);
    /* calibrate: calls per batch for ~20 ms */
    double t0 = bench_now_s();
    int calls = 0;
    while (bench_now_s() - t0 < 0.005) {
        yt_release(fn(x, y));
        calls++;
    }
    double times[15];
    for (int b = 0; b < 15; b++) {
        double s = bench_now_s();
        for (int i = 0; i < calls; i++)
            yt_release(fn(x, y));
        times[b] = (bench_now_s() - s) / calls;
    }
    qsort(times, 15, sizeof(double), cmp);
    printf("%s %.2f us\n", name, times[0] * 1e6);
    yt_release(y);
    yt_release(x);
}

int
main(int argc, char **argv)
{
    only = argc > 1 ? argv[1] : NULL;
    bench("sum_4096x4096_dim1", sum_last, 4096, 4096);
    bench("sum_4096x4096_dim0", sum_first, 4096, 4096);
    bench("sum_4096x4096_all", sum_all, 4096, 4096);
    bench("amax_4096x4096_dim1", amax_last, 4096, 4096);
    bench("softmax_64x1000", softmax_last, 64, 1000);
    bench("softmax_4096x1024", softmax_last, 4096, 1024);
    bench("log_softmax_4096x1024", log_softmax_last, 4096, 1024);
    bench("softmax_dim0_1024x4096", softmax_first, 1024, 4096);
    bench("softmax_bwd_4096x1024", softmax_bwd, 4096, 1024);
    bench("logsumexp_4096x1024_dim1", logsumexp_last, 4096, 1024);
    bench("cumsum_64x100_dim1", cumsum_last, 64, 100);
    bench("cumsum_1024x1000_dim1", cumsum_last, 1024, 1000);
    bench("cumsum_1024x1000_dim0", cumsum_first, 1024, 1000);
    bench("var_4096x4096_dim1", var_last, 4096, 4096);
    bench("var_4096x4096_dim0", var_first, 4096, 4096);
    bench("norm2_4096x4096", norm2_all, 4096, 4096);
    /* short rows: the per-row costs, not the memory, decide these */
    bench("sum_16384x16_dim1", sum_last, 16384, 16);
    bench("sum_65536x4_dim1", sum_last, 65536, 4);
    bench("amax_65536x4_dim1", amax_last, 65536, 4);
    bench("softmax_16384x16", softmax_last, 16384, 16);
    bench("log_softmax_16384x16", log_softmax_last, 16384, 16);
    bench("logsumexp_65536x4_dim1", logsumexp_last, 65536, 4);
    bench("norm2_16384x16_dim1", norm2_last, 16384, 16);
    bench("var_16384x16_dim1", var_last, 16384, 16);
    bench("argmax_16384x16_dim1", argmax_last, 16384, 16);
    bench("prod_16384x16_dim1", prod_last, 16384, 16);
    bench("prod_4096x64_dim1", prod_last, 4096, 64);
    bench("prod_65536x4_dim1", prod_last, 65536, 4);
    bench("prod_1024x1000_dim1", prod_last, 1024, 1000);
    bench("softmax_bwd_16384x16", softmax_bwd, 16384, 16);
    bench("log_softmax_bwd_16384x16", log_softmax_bwd, 16384, 16);
    /* 10 classes, the commonest short row: not a whole number of vectors */
    bench("softmax_16384x10", softmax_last, 16384, 10);
    bench("softmax_bwd_16384x10", softmax_bwd, 16384, 10);
    const int64_t n_targets = 16384;
    targets = yt_randint(16, &n_targets, 1);
    bench("cross_entropy_16384x16", cross_entropy, 16384, 16);
    yt_release(targets);
    if (yt_live_tensors() != 0)
        fprintf(stderr, "reduce bench: %lld tensors leaked\n", (long long)yt_live_tensors());
    return 0;
}
