/* Training-step time of the three models of issue 4, the same models, data shapes and step as
 * /work/shared/reference-bench/torch_train.py (bench/train_torch.py here):
 *   mlp          784-256-128-10, ReLU, cross-entropy, batch 64
 *   cnn          conv(1->8,3x3) relu maxpool2 conv(8->16,3x3) relu maxpool2 flatten
 *                linear(400->10), 28x28 input, batch 64, cross-entropy
 *   transformer  encoder block d_model 128, 4 heads, FF 512, seq 64, batch 8, post-norm, ReLU,
 *                no dropout, MSE to a random target
 * One step = zero grads (grad = None) + forward + loss + backward + SGD step (yt_sgd, lr 0.01), in a
 * scope.
 * The models are the nn modules a user builds (Sequential, Linear, Conv2d, MaxPool2d,
 * TransformerEncoderLayer, CrossEntropyLoss, MSELoss), initialised by them as PyTorch does; with
 * --ops the same models are written with the public ops on leaf tensors (same initialisation), to
 * see what the module layer costs.
 *
 * Usage: train THREADS [mlp|cnn|transformer|demo ...] [--steps 200] [--warmup 20] [--ops]
 * (demo: the `yaten train` default CNN with batch norm, for profiling; not run by default)
 * Output: "train_<model>_<T>t <median ms> ms/step", plus p10/p90 lines.
 * BENCH_CLOCK=cpu times process CPU time instead of wall time (fairer at 1 thread under load). */
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <yaten.h>

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

static void *
check(void *p, const char *what)
{
    if (p == NULL) {
        fprintf(stderr, "train bench: %s: %s\n", what, yt_errmsg());
        exit(1);
    }
    return p;
}

static void
check_status(yt_status s, const char *what)
{
    if (s != YT_OK) {
        fprintf(stderr, "train bench: %s: %s\n", what, yt_errmsg());
        exit(1);
    }
}

/* ---- parameters */

enum { MAX_PARAMS = 16 };

typedef struct model {
    const char *name;
    yt_tensor *params[MAX_PARAMS];
    int n_params;
    yt_tensor *x, *y;
    yt_tensor *(*loss)(struct model *m); /* forward + loss, new reference in the step's scope */
    yt_module *net, *criterion;          /* module models (else NULL) */
    yt_optimizer *opt;                   /* SGD, lr 0.01, over params */
} model;

/* A leaf parameter of `size` drawn from U(-bound, bound). */
static yt_tensor *
param_uniform(model *m, const int64_t *size, int ndim, double bound)
{
    yt_tensor *u = yt_rand(size, ndim);
    yt_tensor *w = yt_add_scalar(yt_mul_scalar(u, yt_float(2 * bound)), yt_float(-bound));
    check(w, "parameter init");
    check_status(yt_set_requires_grad(w, true), "requires_grad");
    m->params[m->n_params++] = w;
    return w;
}

static yt_tensor *
param_const(model *m, const int64_t *size, int ndim, double value)
{
    yt_tensor *w = yt_add_scalar(yt_zeros(size, ndim), yt_float(value));
    check(w, "parameter init");
    check_status(yt_set_requires_grad(w, true), "requires_grad");
    m->params[m->n_params++] = w;
    return w;
}

/* nn.Linear's default init: weight [out, in] and bias [out] from U(+-1/sqrt(in)) (kaiming-uniform
 * with a=sqrt(5) has the same bound). */
static void
linear_params(model *m, int64_t in, int64_t out, yt_tensor **w, yt_tensor **b)
{
    const int64_t ws[2] = {out, in}, bs[1] = {out};
    double bound = 1.0 / sqrt((double)in);
    *w = param_uniform(m, ws, 2, bound);
    *b = param_uniform(m, bs, 1, bound);
}

static void
conv_params(model *m, int64_t cin, int64_t cout, int64_t k, yt_tensor **w, yt_tensor **b)
{
    const int64_t ws[4] = {cout, cin, k, k}, bs[1] = {cout};
    double bound = 1.0 / sqrt((double)(cin * k * k));
    *w = param_uniform(m, ws, 4, bound);
    *b = param_uniform(m, bs, 1, bound);
}

/* ---- models */

typedef struct mlp_params {
    yt_tensor *w1, *b1, *w2, *b2, *w3, *b3;
} mlp_params;
static mlp_params mlp;

static yt_tensor *
mlp_loss(model *m)
{
    yt_tensor *h = yt_relu(yt_linear_ex(m->x, mlp.w1, mlp.b1));
    h = yt_relu(yt_linear_ex(h, mlp.w2, mlp.b2));
    return yt_cross_entropy_loss(yt_linear_ex(h, mlp.w3, mlp.b3), m->y);
}

static void
mlp_setup(model *m)
{
    linear_params(m, 784, 256, &mlp.w1, &mlp.b1);
    linear_params(m, 256, 128, &mlp.w2, &mlp.b2);
    linear_params(m, 128, 10, &mlp.w3, &mlp.b3);
    const int64_t xs[2] = {64, 784}, ys[1] = {64};
    m->x = check(yt_randn(xs, 2), "input");
    m->y = check(yt_randint(10, ys, 1), "target");
    m->loss = mlp_loss;
}

typedef struct cnn_params {
    yt_tensor *c1w, *c1b, *c2w, *c2b, *fw, *fb;
} cnn_params;
static cnn_params cnn;

static yt_tensor *
cnn_loss(model *m)
{
    static const int64_t k2[1] = {2};
    yt_tensor *h = yt_conv2d_ex(m->x, cnn.c1w, cnn.c1b, NULL, 0, NULL, 0, NULL, 0, 1);
    h = yt_max_pool2d(yt_relu(h), k2, 1);
    h = yt_conv2d_ex(h, cnn.c2w, cnn.c2b, NULL, 0, NULL, 0, NULL, 0, 1);
    h = yt_max_pool2d(yt_relu(h), k2, 1);
    h = yt_flatten_ex(h, 1, -1);
    return yt_cross_entropy_loss(yt_linear_ex(h, cnn.fw, cnn.fb), m->y);
}

static void
cnn_setup(model *m)
{
    conv_params(m, 1, 8, 3, &cnn.c1w, &cnn.c1b);
    conv_params(m, 8, 16, 3, &cnn.c2w, &cnn.c2b);
    linear_params(m, 400, 10, &cnn.fw, &cnn.fb);
    const int64_t xs[4] = {64, 1, 28, 28}, ys[1] = {64};
    m->x = check(yt_randn(xs, 4), "input");
    m->y = check(yt_randint(10, ys, 1), "target");
    m->loss = cnn_loss;
}

enum { TF_B = 8, TF_T = 64, TF_D = 128, TF_H = 4, TF_FF = 512 };

typedef struct tf_params {
    yt_tensor *in_w, *in_b, *out_w, *out_b, *l1w, *l1b, *l2w, *l2b, *n1w, *n1b, *n2w, *n2b;
} tf_params;
static tf_params tf;

/* [B, T, D] -> [B, H, T, D/H] view. */
static yt_tensor *
heads(yt_tensor *t)
{
    const int64_t s[4] = {TF_B, TF_T, TF_H, TF_D / TF_H};
    return yt_transpose(yt_reshape(t, s, 4), 1, 2);
}

static yt_tensor *
tf_loss(model *m)
{
    static const int64_t dshape[1] = {TF_D}, bt_d[3] = {TF_B, TF_T, TF_D};
    yt_tensor *qkv = yt_linear_ex(m->x, tf.in_w, tf.in_b), *p[3];
    if (yt_split_ex(qkv, TF_D, -1, p, 3) != 3)
        check(NULL, "split");
    yt_tensor *a = yt_scaled_dot_product_attention(heads(p[0]), heads(p[1]), heads(p[2]));
    a = yt_reshape(yt_transpose(a, 1, 2), bt_d, 3);
    a = yt_linear_ex(a, tf.out_w, tf.out_b);
    yt_tensor *x1 = yt_layer_norm_ex(yt_add(m->x, a), dshape, 1, tf.n1w, tf.n1b, 1e-5, true);
    yt_tensor *f = yt_linear_ex(yt_relu(yt_linear_ex(x1, tf.l1w, tf.l1b)), tf.l2w, tf.l2b);
    yt_tensor *x2 = yt_layer_norm_ex(yt_add(x1, f), dshape, 1, tf.n2w, tf.n2b, 1e-5, true);
    return yt_mse_loss(x2, m->y);
}

static void
tf_setup(model *m)
{
    const int64_t in_w[2] = {3 * TF_D, TF_D}, d3[1] = {3 * TF_D}, d[1] = {TF_D};
    tf.in_w = param_uniform(m, in_w, 2, sqrt(6.0 / (TF_D + 3 * TF_D))); /* xavier-uniform */
    tf.in_b = param_const(m, d3, 1, 0.0);
    const int64_t dd[2] = {TF_D, TF_D};
    tf.out_w = param_uniform(m, dd, 2, 1.0 / sqrt((double)TF_D));
    tf.out_b = param_const(m, d, 1, 0.0); /* MultiheadAttention zeroes out_proj.bias */
    linear_params(m, TF_D, TF_FF, &tf.l1w, &tf.l1b);
    linear_params(m, TF_FF, TF_D, &tf.l2w, &tf.l2b);
    tf.n1w = param_const(m, d, 1, 1.0);
    tf.n1b = param_const(m, d, 1, 0.0);
    tf.n2w = param_const(m, d, 1, 1.0);
    tf.n2b = param_const(m, d, 1, 0.0);
    const int64_t xs[3] = {TF_B, TF_T, TF_D};
    m->x = check(yt_randn(xs, 3), "input");
    m->y = check(yt_randn(xs, 3), "target");
    m->loss = tf_loss;
}

/* ---- the same models as nn modules */

static void
add(yt_module *seq, yt_module *child)
{
    check(child, "module");
    check_status(yt_sequential_append(seq, child), "sequential_append");
    yt_module_release(child);
}

static yt_tensor *
module_loss(model *m)
{
    return yt_module_forward2(m->criterion, yt_module_forward(m->net, m->x), m->y);
}

/* Registers the module's parameters as the model's (for the SGD step). */
static void
module_params(model *m)
{
    yt_named_tensors list = YT_NAMED_TENSORS_INIT;
    check_status(yt_module_parameters(m->net, &list), "parameters");
    for (int64_t i = 0; i < list.count && m->n_params < MAX_PARAMS; i++)
        m->params[m->n_params++] = yt_retain(list.tensors[i]);
    yt_named_tensors_clear(&list);
    m->loss = module_loss;
}

static void
mlp_modules(model *m)
{
    m->net = check(yt_sequential_new(), "sequential");
    add(m->net, yt_linear_new(784, 256, true));
    add(m->net, yt_relu_new());
    add(m->net, yt_linear_new(256, 128, true));
    add(m->net, yt_relu_new());
    add(m->net, yt_linear_new(128, 10, true));
    m->criterion = check(yt_cross_entropy_loss_new(NULL), "loss");
    module_params(m);
    const int64_t xs[2] = {64, 784}, ys[1] = {64};
    m->x = check(yt_randn(xs, 2), "input");
    m->y = check(yt_randint(10, ys, 1), "target");
}

static void
cnn_modules(model *m)
{
    yt_conv2d_options c1 = yt_conv2d_options_default(1, 8, 3),
                      c2 = yt_conv2d_options_default(8, 16, 3);
    m->net = check(yt_sequential_new(), "sequential");
    add(m->net, yt_conv2d_new(&c1));
    add(m->net, yt_relu_new());
    add(m->net, yt_max_pool2d_new(2, 0, 0));
    add(m->net, yt_conv2d_new(&c2));
    add(m->net, yt_relu_new());
    add(m->net, yt_max_pool2d_new(2, 0, 0));
    add(m->net, yt_flatten_new(1, -1));
    add(m->net, yt_linear_new(400, 10, true));
    m->criterion = check(yt_cross_entropy_loss_new(NULL), "loss");
    module_params(m);
    const int64_t xs[4] = {64, 1, 28, 28}, ys[1] = {64};
    m->x = check(yt_randn(xs, 4), "input");
    m->y = check(yt_randint(10, ys, 1), "target");
}

/* The `yaten train` default model (examples/fashion_cnn.yaml), for profiling the demo's step:
 * conv(1->32, pad 1) BN relu pool, conv(32->64, pad 1) BN relu pool, linear(3136->128) relu,
 * linear(128->10). Not part of the default set. */
static void
demo_modules(model *m)
{
    yt_conv2d_options c1 = yt_conv2d_options_default(1, 32, 3),
                      c2 = yt_conv2d_options_default(32, 64, 3);
    c1.padding[0] = c1.padding[1] = c2.padding[0] = c2.padding[1] = 1;
    m->net = check(yt_sequential_new(), "sequential");
    add(m->net, yt_conv2d_new(&c1));
    add(m->net, yt_batch_norm2d_new(32, 1e-5, 0.1, true, true));
    add(m->net, yt_relu_new());
    add(m->net, yt_max_pool2d_new(2, 0, 0));
    add(m->net, yt_conv2d_new(&c2));
    add(m->net, yt_batch_norm2d_new(64, 1e-5, 0.1, true, true));
    add(m->net, yt_relu_new());
    add(m->net, yt_max_pool2d_new(2, 0, 0));
    add(m->net, yt_flatten_new(1, -1));
    add(m->net, yt_linear_new(3136, 128, true));
    add(m->net, yt_relu_new());
    add(m->net, yt_linear_new(128, 10, true));
    m->criterion = check(yt_cross_entropy_loss_new(NULL), "loss");
    module_params(m);
    const int64_t xs[4] = {64, 1, 28, 28}, ys[1] = {64};
    m->x = check(yt_randn(xs, 4), "input");
    m->y = check(yt_randint(10, ys, 1), "target");
}

static void
tf_modules(model *m)
{
    m->net = check(yt_transformer_encoder_layer_new(TF_D, TF_H, TF_FF, 0.0, "relu", false, true),
                   "transformer_encoder_layer");
    m->criterion = check(yt_mse_loss_new(YT_REDUCTION_MEAN), "loss");
    module_params(m);
    const int64_t xs[3] = {TF_B, TF_T, TF_D};
    m->x = check(yt_randn(xs, 3), "input");
    m->y = check(yt_randn(xs, 3), "target");
}

/* ---- the step */

static void
step(model *m)
{
    yt_scope_begin();
    yt_optimizer_zero_grad(m->opt);
    yt_tensor *loss = check(m->loss(m), "forward");
    check_status(yt_backward(loss, NULL, NULL), "backward");
    check_status(yt_optimizer_step(m->opt), "sgd step");
    yt_scope_end();
}

static void
run(const char *name, void (*setup)(model *), int threads, int steps, int warmup)
{
    model m = {.name = name};
    yt_manual_seed(0);
    yt_scope_begin(); /* set-up temporaries; the parameters and data are kept */
    setup(&m);
    for (int i = 0; i < m.n_params; i++)
        yt_scope_keep(m.params[i]);
    yt_scope_keep(m.x);
    yt_scope_keep(m.y);
    yt_scope_end();
    yt_named_tensors list = YT_NAMED_TENSORS_INIT;
    for (int i = 0; i < m.n_params; i++) {
        char pname[16];
        snprintf(pname, sizeof pname, "p%d", i);
        check_status(yt_named_tensors_add(&list, pname, m.params[i]), "parameter list");
    }
    const yt_sgd_options sgd = {.lr = 0.01};
    m.opt = check(yt_sgd_new(&list, &sgd), "sgd_new");
    yt_named_tensors_clear(&list);
    for (int i = 0; i < warmup; i++)
        step(&m);
    double *t = check(malloc(sizeof *t * (size_t)steps), "malloc");
    for (int i = 0; i < steps; i++) {
        double t0 = now_ms();
        step(&m);
        t[i] = now_ms() - t0;
    }
    qsort(t, (size_t)steps, sizeof *t, cmp_double);
    double med = steps % 2 ? t[steps / 2] : 0.5 * (t[steps / 2 - 1] + t[steps / 2]);
    printf("train_%s_%dt %.3f ms/step\n", name, threads, med);
    printf("train_%s_%dt_p10 %.3f ms/step\n", name, threads, t[steps / 10]);
    printf("train_%s_%dt_p90 %.3f ms/step\n", name, threads, t[steps * 9 / 10]);
    fflush(stdout);
    free(t);
    for (int i = 0; i < m.n_params; i++)
        yt_release(m.params[i]);
    yt_release(m.x);
    yt_release(m.y);
    yt_module_release(m.net);
    yt_module_release(m.criterion);
    yt_optimizer_release(m.opt);
}

int
main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr,
                "usage: %s THREADS [mlp|cnn|transformer ...] [--steps N] [--warmup N] [--ops]\n",
                argv[0]);
        return 2;
    }
    const char *clock_env = getenv("BENCH_CLOCK");
    if (clock_env != NULL && clock_env[0] == 'c')
        bench_clock = CLOCK_PROCESS_CPUTIME_ID;
    int threads = atoi(argv[1]), steps = 200, warmup = 20;
    bool ops = false;
    check_status(yt_set_num_threads(threads), "threads");
    const char *models[8];
    int n_models = 0;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
            steps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--warmup") == 0 && i + 1 < argc)
            warmup = atoi(argv[++i]);
        else if (strcmp(argv[i], "--ops") == 0)
            ops = true;
        else if (n_models < 8)
            models[n_models++] = argv[i];
    }
    if (steps < 1) {
        fprintf(stderr, "train bench: --steps must be positive\n");
        return 2;
    }
    if (n_models == 0) {
        models[0] = "mlp", models[1] = "cnn", models[2] = "transformer";
        n_models = 3;
    }
    for (int i = 0; i < n_models; i++) {
        if (strcmp(models[i], "mlp") == 0)
            run("mlp", ops ? mlp_setup : mlp_modules, threads, steps, warmup);
        else if (strcmp(models[i], "cnn") == 0)
            run("cnn", ops ? cnn_setup : cnn_modules, threads, steps, warmup);
        else if (strcmp(models[i], "transformer") == 0)
            run("transformer", ops ? tf_setup : tf_modules, threads, steps, warmup);
        else if (strcmp(models[i], "demo") == 0 && !ops)
            run("demo", demo_modules, threads, steps, warmup);
        else {
            fprintf(stderr, "train bench: unknown model '%s'\n", models[i]);
            return 2;
        }
    }
    return 0;
}
