/* Normalization kernels: batch_norm (training, running stats) and layer_norm, forward and
 * forward + backward (dx, dweight, dbias), on the shapes of the issue. Prints "name value us"
 * lines (median over rounds); bench/norm.sh runs it interleaved with bench/norm_torch.py.
 *
 * Measures the kernels with their output allocation, below the generated op layer (the public
 * ops wait for the generator's `Tensor?` and multi-result schemas). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "norm.h"

static double
now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#define ROUNDS 15

typedef struct bcase {
    const char *name;
    bool batch; /* batch_norm, else layer_norm over the last dim */
    int dim;
    int64_t sizes[4];
} bcase;

/* One forward (and backward when `bwd`) with fresh outputs, as an op call would make them. */
static void
run_once(const bcase *c, yt_tensor *x, yt_tensor *w, yt_tensor *b, yt_tensor *rm, yt_tensor *rv,
         yt_tensor *dy, bool bwd)
{
    yt_tensor *y = yt__empty_like(x, YT_DTYPE_F32);
    int64_t rows = x->numel / x->sizes[x->dim - 1];
    yt_shape sshape = {1, {c->batch ? x->sizes[1] : rows}};
    yt_tensor *m = yt__empty(&sshape, YT_DTYPE_F32, YT_DEVICE_CPU);
    yt_tensor *r = yt__empty(&sshape, YT_DTYPE_F32, YT_DEVICE_CPU);
    yt__rownorm p = {rows, x->sizes[x->dim - 1], 1, 1, 1e-5, true};
    if (c->batch)
        yt__batchnorm_forward(y, m, r, x, w, b, rm, rv, true, 0.1, 1e-5);
    else
        yt__rownorm_forward(y, m, r, x, w, b, &p);
    if (bwd) {
        yt_tensor *dx = yt__empty_like(x, YT_DTYPE_F32), *dw = yt__empty_like(w, YT_DTYPE_F32),
                  *db = yt__empty_like(w, YT_DTYPE_F32);
        if (c->batch)
            yt__batchnorm_backward(dx, dw, db, dy, x, w, rm, rv, m, r, true, 1e-5);
        else
            yt__rownorm_backward(dx, dw, db, dy, x, m, r, w, &p);
        yt_release(dx);
        yt_release(dw);
        yt_release(db);
    }
    yt_release(y);
    yt_release(m);
    yt_release(r);
}

int
main(void)
{
    static const bcase cases[] = {
        {"batch_norm_64x8x26x26", true, 4, {64, 8, 26, 26}},
        {"batch_norm_64x16x11x11", true, 4, {64, 16, 11, 11}},
        {"layer_norm_8x64x128", false, 3, {8, 64, 128}},
        {"layer_norm_4096x1024", false, 2, {4096, 1024}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const bcase *c = &cases[k];
        int64_t psize = c->batch ? c->sizes[1] : c->sizes[c->dim - 1];
        yt_tensor *x = yt_randn(c->sizes, c->dim), *dy = yt_randn(c->sizes, c->dim);
        yt_tensor *w = yt_randn(&psize, 1), *b = yt_randn(&psize, 1);
        yt_tensor *rm = yt_zeros(&psize, 1), *rv = yt_ones(&psize, 1);
        int64_t numel = x->numel;
        int iters = (int)(2e7 / (double)numel) + 1;
        for (int bwd = 0; bwd < 2; bwd++) {
            double t[ROUNDS];
            for (int i = 0; i < iters; i++) /* warm-up */
                run_once(c, x, w, b, rm, rv, dy, bwd);
            for (int r = 0; r < ROUNDS; r++) {
                double t0 = now_us();
                for (int i = 0; i < iters; i++)
                    run_once(c, x, w, b, rm, rv, dy, bwd);
                t[r] = (now_us() - t0) / iters;
            }
            qsort(t, ROUNDS, sizeof t[0], cmp_double);
            printf("yaten_%s_%s %.1f us\n", c->name, bwd ? "fwdbwd" : "fwd", t[ROUNDS / 2]);
        }
        yt_release(x);
        yt_release(dy);
        yt_release(w);
        yt_release(b);
        yt_release(rm);
        yt_release(rv);
    }
    if (yt_live_tensors() != 0)
        fprintf(stderr, "norm bench: %lld tensors leaked\n", (long long)yt_live_tensors());
    return 0;
}
