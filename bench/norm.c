/* Normalization through the public ops (argument checks, dispatch and autograd included):
 * batch_norm (training, running statistics), layer_norm and group_norm, forward alone and
 * forward + backward (gradients of input, weight and bias), on the shapes of the issue. Prints
 * "name value us" lines (median over rounds); bench/norm.sh runs it interleaved with
 * bench/norm_torch.py. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <yaten.h>

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

enum kind { BATCH, LAYER, GROUP };

typedef struct bcase {
    const char *name;
    enum kind kind;
    int dim;
    int64_t sizes[4];
} bcase;

typedef struct args {
    yt_tensor *x, *w, *b, *rm, *rv, *dy;
} args;

static yt_tensor *
forward(const bcase *c, const args *a)
{
    switch (c->kind) {
    case BATCH:
        return yt_batch_norm(a->x, a->w, a->b, a->rm, a->rv, true, 0.1, 1e-5, false);
    case LAYER:
        return yt_layer_norm_ex(a->x, &c->sizes[c->dim - 1], 1, a->w, a->b, 1e-5, true);
    default:
        return yt_group_norm_ex(a->x, 8, a->w, a->b, 1e-5, true);
    }
}

/* One forward (and backward when `bwd`), as a training step would run them. */
static void
run_once(const bcase *c, const args *a, bool bwd)
{
    yt_tensor *y = forward(c, a);
    if (y == NULL) {
        fprintf(stderr, "norm bench: %s\n", yt_errmsg());
        exit(1);
    }
    if (bwd) {
        if (yt_backward(y, a->dy, NULL) != YT_OK) {
            fprintf(stderr, "norm bench: %s\n", yt_errmsg());
            exit(1);
        }
        yt_zero_grad(a->x);
        yt_zero_grad(a->w);
        yt_zero_grad(a->b);
    }
    yt_release(y);
}

int
main(void)
{
    static const bcase cases[] = {
        {"batch_norm_64x8x26x26", BATCH, 4, {64, 8, 26, 26}},
        {"batch_norm_64x16x11x11", BATCH, 4, {64, 16, 11, 11}},
        {"layer_norm_8x64x128", LAYER, 3, {8, 64, 128}},
        {"layer_norm_4096x1024", LAYER, 2, {4096, 1024}},
        {"group_norm_32x64x16x16", GROUP, 4, {32, 64, 16, 16}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const bcase *c = &cases[k];
        int64_t psize = c->kind == LAYER ? c->sizes[c->dim - 1] : c->sizes[1];
        args a = {yt_randn(c->sizes, c->dim), yt_randn(&psize, 1), yt_randn(&psize, 1),
                  yt_zeros(&psize, 1),        yt_ones(&psize, 1),  yt_randn(c->sizes, c->dim)};
        int64_t numel = 1;
        for (int i = 0; i < c->dim; i++)
            numel *= c->sizes[i];
        int iters = (int)(2e7 / (double)numel) + 1;
        for (int bwd = 0; bwd < 2; bwd++) {
            yt_set_requires_grad(a.x, bwd);
            yt_set_requires_grad(a.w, bwd);
            yt_set_requires_grad(a.b, bwd);
            double t[ROUNDS];
            for (int i = 0; i < iters; i++) /* warm-up */
                run_once(c, &a, bwd);
            for (int r = 0; r < ROUNDS; r++) {
                double t0 = now_us();
                for (int i = 0; i < iters; i++)
                    run_once(c, &a, bwd);
                t[r] = (now_us() - t0) / iters;
            }
            qsort(t, ROUNDS, sizeof t[0], cmp_double);
            printf("yaten_%s_%s %.1f us\n", c->name, bwd ? "fwdbwd" : "fwd", t[ROUNDS / 2]);
        }
        yt_tensor *all[] = {a.x, a.w, a.b, a.rm, a.rv, a.dy};
        for (size_t j = 0; j < sizeof all / sizeof all[0]; j++)
            yt_release(all[j]);
    }
    if (yt_live_tensors() != 0)
        fprintf(stderr, "norm bench: %lld tensors leaked\n", (long long)yt_live_tensors());
    return 0;
}
