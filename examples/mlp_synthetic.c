/* The first `make demo`: trains a 2-layer MLP on synthetic data with plain SGD and prints a
 * falling loss. The data comes from a fixed random "teacher" network, so a student of the same
 * shape can fit it: y = tanh(x W1) W2.
 *
 * It shows the whole user-facing loop: tensors, ops, scopes, backward, reading gradients, and an
 * in-place parameter update under no-grad. */
#include <stdio.h>
#include <stdlib.h>

#include <yaten.h>

enum { N_SAMPLES = 512, N_IN = 32, N_HIDDEN = 64, N_OUT = 4, STEPS = 300 };

static int
fail(const char *what)
{
    fprintf(stderr, "mlp_synthetic: %s: %s (%s)\n", what, yt_errmsg(),
            yt_status_name(yt_errcode()));
    return 1;
}

/* A leaf parameter drawn from U(-bound, bound), bound = 1/sqrt(fan_in) as in PyTorch's Linear. */
static yt_tensor *
parameter(int64_t fan_in, int64_t fan_out)
{
    const int64_t size[2] = {fan_in, fan_out};
    double bound = 1.0 / __builtin_sqrt((double)fan_in);
    yt_tensor *u = yt_rand(size, 2);
    yt_tensor *w = yt_add_scalar(yt_mul_scalar(u, yt_float(2 * bound)), yt_float(-bound));
    if (w != NULL && yt_set_requires_grad(w, true) != YT_OK)
        return NULL;
    return w;
}

int
main(void)
{
    yt_manual_seed(0);
    printf("yaten %s (BLIS kernels: %s): 2-layer MLP (%d-%d-%d) on %d synthetic samples, SGD\n",
           yt_version(), yt_blas_info(), N_IN, N_HIDDEN, N_OUT, N_SAMPLES);

    /* Everything created in this scope is released at its end, except what yt_scope_keep()s. */
    yt_scope_begin();
    const int64_t x_size[2] = {N_SAMPLES, N_IN}, t1_size[2] = {N_IN, N_HIDDEN},
                  t2_size[2] = {N_HIDDEN, N_OUT};
    yt_tensor *x = yt_randn(x_size, 2);
    yt_tensor *teacher1 = yt_mul_scalar(yt_randn(t1_size, 2), yt_float(0.5));
    yt_tensor *teacher2 = yt_randn(t2_size, 2);
    yt_tensor *y = yt_matmul(yt_tanh(yt_matmul(x, teacher1)), teacher2);
    yt_tensor *w1 = parameter(N_IN, N_HIDDEN), *w2 = parameter(N_HIDDEN, N_OUT);
    if (y == NULL || w1 == NULL || w2 == NULL)
        return fail("set-up");

    const double lr = 0.05;
    double first = 0, last = 0;
    for (int step = 0; step < STEPS; step++) {
        yt_scope_begin(); /* per-step temporaries */
        yt_tensor *hidden = yt_relu(yt_matmul(x, w1));
        yt_tensor *pred = yt_matmul(hidden, w2);
        yt_tensor *diff = yt_sub(pred, y);
        yt_tensor *loss = yt_mean(yt_mul(diff, diff));
        if (loss == NULL || yt_backward(loss, NULL, NULL) != YT_OK)
            return fail("training step");
        last = yt_item(loss);
        if (step == 0)
            first = last;

        /* SGD: w -= lr * grad, in place and outside the graph. */
        bool was_enabled = yt_set_grad_enabled(false);
        yt_tensor *params[2] = {w1, w2};
        for (int i = 0; i < 2; i++) {
            yt_tensor *grad = yt_grad(params[i]); /* owned by the step's scope */
            if (yt_add_ex_(params[i], grad, yt_float(-lr)) != YT_OK)
                return fail("update");
            yt_zero_grad(params[i]);
        }
        yt_set_grad_enabled(was_enabled);
        if (step % 25 == 0 || step == STEPS - 1)
            printf("step %3d  loss %.6f\n", step, last);
        yt_scope_end();
    }
    yt_scope_end();
    yt_allocator_trim();

    printf("loss %.4f -> %.4f (%.1fx lower); live tensors after cleanup: %lld\n", first, last,
           first / last, (long long)yt_live_tensors());
    return last < first ? 0 : 1;
}
