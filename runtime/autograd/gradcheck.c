/* gradcheck and gradgradcheck: analytic Jacobians (one backward per output element) against
 * central finite differences, in f64 on copies of the inputs so the caller's tensors and their
 * .grad are never touched. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* A function of n_inputs tensors with n_outputs results (new references in outs). need_graph:
 * the results must carry their graph (analytic pass), or may not (finite differences). */
typedef yt_status (*multi_fn)(void *ctx, yt_tensor *const *inputs, bool need_graph,
                              yt_tensor **outs);

typedef struct check {
    const char *who; /* "gradcheck" / "gradgradcheck": starts every message */
    multi_fn fn;
    void *ctx;
    int n_inputs, n_outputs;
    int grad_output_input; /* index of the input that is gradgradcheck's grad_output, or -1 */
    double eps, atol, rtol;
    /* filled by the check */
    yt_tensor **inputs; /* [n_inputs]: f64 contiguous leaf copies of checked inputs, else the
                           caller's tensor (retained) */
    bool *checked;      /* [n_inputs] */
    int64_t *out_numel; /* [n_outputs] */
    int64_t total_out;  /* elements over all outputs: Jacobian columns */
    double **analytic;  /* [n_inputs]: numel(input) x total_out, row-major */
    double **numerical;
} check;

static void
release_all(yt_tensor **ts, int n)
{
    for (int i = 0; i < n; i++) {
        yt_release(ts[i]);
        ts[i] = NULL;
    }
}

static void *
alloc_doubles(int64_t n)
{
    return calloc(n > 0 ? (size_t)n : 1, sizeof(double));
}

/* A NULL input: an earlier failure (kept) or a caller error. */
static yt_status
null_input(const char *who, int i)
{
    if (yt_errcode() != YT_OK)
        return yt_errcode();
    return yt__fail_status(YT_ERR_VALUE, "%s: inputs[%d] is NULL", who, i);
}

/* A fresh contiguous f64 leaf holding `t`'s values, requiring grad. */
static yt_tensor *
leaf_copy(yt_tensor *t)
{
    double *values = alloc_doubles(t->numel);
    if (values == NULL)
        return yt__fail(YT_ERR_NOMEM, "gradcheck: out of memory copying an input");
    yt_tensor *copy = NULL;
    if (yt_tensor_copy_to(t, values, sizeof(double) * (size_t)t->numel, YT_DTYPE_F64) == YT_OK)
        copy = yt_tensor_from_data(values, t->sizes, t->dim, YT_DTYPE_F64);
    free(values);
    if (copy != NULL && yt_set_requires_grad(copy, true) != YT_OK) {
        yt_release(copy);
        copy = NULL;
    }
    return copy;
}

static yt_status
prepare_inputs(check *c, yt_tensor *const *inputs)
{
    int n_checked = 0;
    for (int i = 0; i < c->n_inputs; i++) {
        yt_tensor *t = inputs[i];
        if (t == NULL)
            return null_input(c->who, i);
        if (!t->requires_grad) {
            c->inputs[i] = yt_retain(t);
            continue;
        }
        if (t->dtype != YT_DTYPE_F64)
            return yt__fail_status(YT_ERR_DTYPE,
                                   "%s: input %d requires grad and must be f64 for finite "
                                   "differences to be accurate, got %s",
                                   c->who, i, yt_dtype_name(t->dtype));
        if (t->device != YT_DEVICE_CPU)
            return yt__fail_status(YT_ERR_DEVICE, "%s: input %d is on %s; only cpu is supported",
                                   c->who, i, yt_device_name(t->device));
        c->inputs[i] = leaf_copy(t);
        if (c->inputs[i] == NULL)
            return yt__last_status();
        c->checked[i] = true;
        n_checked++;
    }
    if (n_checked == 0)
        return yt__fail_status(YT_ERR_VALUE,
                               "%s: no input requires grad, so there is nothing to "
                               "check (call yt_set_requires_grad on the inputs)",
                               c->who);
    return YT_OK;
}

/* Runs the function; checks every result is a floating tensor with the expected element count
 * (when `out_numel` was recorded by an earlier run). */
static yt_status
evaluate(check *c, bool need_graph, yt_tensor **outs)
{
    yt_status st = c->fn(c->ctx, c->inputs, need_graph, outs);
    if (st != YT_OK) {
        release_all(outs, c->n_outputs);
        return st;
    }
    for (int o = 0; o < c->n_outputs; o++) {
        if (!yt_dtype_is_floating(outs[o]->dtype))
            st = yt__fail_status(YT_ERR_DTYPE,
                                 "%s: the function returned a %s tensor; it must "
                                 "return a floating one",
                                 c->who, yt_dtype_name(outs[o]->dtype));
        else if (c->out_numel[o] >= 0 && outs[o]->numel != c->out_numel[o])
            st = yt__fail_status(YT_ERR_VALUE,
                                 "%s: the function returned %lld elements, then %lld for a "
                                 "perturbed input; it must return the same shape",
                                 c->who, (long long)c->out_numel[o], (long long)outs[o]->numel);
        if (st != YT_OK) {
            release_all(outs, c->n_outputs);
            return st;
        }
    }
    return YT_OK;
}

/* Reads every output, flattened one after another, into `dst` (total_out values). */
static yt_status
read_outputs(check *c, yt_tensor **outs, double *dst)
{
    int64_t col = 0;
    for (int o = 0; o < c->n_outputs; o++) {
        size_t bytes = sizeof(double) * (size_t)outs[o]->numel;
        yt_status st = yt_tensor_copy_to(outs[o], dst + col, bytes, YT_DTYPE_F64);
        if (st != YT_OK)
            return st;
        col += outs[o]->numel;
    }
    return YT_OK;
}

/* Column `col` of every checked input's Jacobian from one backward of output element
 * (o, k); inputs that received no gradient keep zeros. */
static yt_status
backward_one(check *c, yt_tensor *out, int64_t k, int64_t col, double *onehot, double *row)
{
    memset(onehot, 0, sizeof(double) * (size_t)out->numel);
    onehot[k] = 1.0;
    yt_tensor *grad = yt_tensor_from_data(onehot, out->sizes, out->dim, YT_DTYPE_F64);
    if (grad == NULL)
        return yt__last_status();
    yt_backward_options opts = {.retain_graph = true, .create_graph = false};
    yt_status st = yt_backward(out, grad, &opts);
    yt_release(grad);
    for (int i = 0; i < c->n_inputs; i++) {
        if (!c->checked[i])
            continue;
        yt_tensor *x = c->inputs[i];
        if (st == YT_OK && x->grad != NULL) {
            st = yt_tensor_copy_to(x->grad, row, sizeof(double) * (size_t)x->numel, YT_DTYPE_F64);
            for (int64_t j = 0; st == YT_OK && j < x->numel; j++)
                c->analytic[i][j * c->total_out + col] = row[j];
        }
        yt_zero_grad(x);
    }
    return st;
}

static yt_status
analytic_jacobian(check *c, yt_tensor **outs)
{
    int64_t max_in = 1, max_out = 1;
    for (int i = 0; i < c->n_inputs; i++)
        if (c->inputs[i]->numel > max_in)
            max_in = c->inputs[i]->numel;
    for (int o = 0; o < c->n_outputs; o++)
        if (outs[o]->numel > max_out)
            max_out = outs[o]->numel;
    double *onehot = alloc_doubles(max_out), *row = alloc_doubles(max_in);
    yt_status st = onehot != NULL && row != NULL
                       ? YT_OK
                       : yt__fail_status(YT_ERR_NOMEM, "%s: out of memory", c->who);
    int64_t col = 0;
    for (int o = 0; st == YT_OK && o < c->n_outputs; o++) {
        /* an output that does not require grad has an all-zero analytic Jacobian */
        for (int64_t k = 0; st == YT_OK && outs[o]->requires_grad && k < outs[o]->numel; k++)
            st = backward_one(c, outs[o], k, col + k, onehot, row);
        col += outs[o]->numel;
    }
    free(onehot);
    free(row);
    return st;
}

/* Central differences, perturbing each element of each checked input's copy in place. The
 * copies are ours and nothing saved them, so writing their memory directly is safe. */
static yt_status
numerical_jacobian(check *c)
{
    double *plus = alloc_doubles(c->total_out), *minus = alloc_doubles(c->total_out);
    yt_tensor **outs = calloc((size_t)c->n_outputs, sizeof(yt_tensor *));
    yt_status st = plus != NULL && minus != NULL && outs != NULL
                       ? YT_OK
                       : yt__fail_status(YT_ERR_NOMEM, "%s: out of memory", c->who);
    for (int i = 0; st == YT_OK && i < c->n_inputs; i++) {
        if (!c->checked[i])
            continue;
        yt_tensor *x = c->inputs[i];
        double *data = (double *)yt__data_ptr(x);
        for (int64_t j = 0; st == YT_OK && j < x->numel; j++) {
            double orig = data[j];
            data[j] = orig + c->eps;
            yt__bump_version(x);
            st = evaluate(c, false, outs);
            if (st == YT_OK) {
                st = read_outputs(c, outs, plus);
                release_all(outs, c->n_outputs);
            }
            data[j] = orig - c->eps;
            yt__bump_version(x);
            if (st == YT_OK)
                st = evaluate(c, false, outs);
            if (st == YT_OK) {
                st = read_outputs(c, outs, minus);
                release_all(outs, c->n_outputs);
            }
            data[j] = orig;
            yt__bump_version(x);
            for (int64_t col = 0; st == YT_OK && col < c->total_out; col++)
                c->numerical[i][j * c->total_out + col] = (plus[col] - minus[col]) / (2 * c->eps);
        }
    }
    free(plus);
    free(minus);
    free(outs);
    return st;
}

static yt_status
compare(check *c)
{
    for (int i = 0; i < c->n_inputs; i++) {
        if (!c->checked[i])
            continue;
        for (int64_t j = 0; j < c->inputs[i]->numel; j++) {
            for (int64_t col = 0; col < c->total_out; col++) {
                double a = c->analytic[i][j * c->total_out + col];
                double n = c->numerical[i][j * c->total_out + col];
                if (fabs(a - n) <= c->atol + c->rtol * fabs(n))
                    continue;
                char input[64], output[64];
                if (i == c->grad_output_input)
                    snprintf(input, sizeof input, "input %d (grad_output)", i);
                else
                    snprintf(input, sizeof input, "input %d", i);
                int o = 0;
                int64_t k = col;
                while (k >= c->out_numel[o])
                    k -= c->out_numel[o++];
                if (c->n_outputs == 1)
                    snprintf(output, sizeof output, "output element %lld", (long long)k);
                else
                    snprintf(output, sizeof output, "output %d element %lld", o, (long long)k);
                return yt__fail_status(YT_ERR_VALUE,
                                       "%s: %s element %lld: analytic %.6g vs numerical %.6g (%s)",
                                       c->who, input, (long long)j, a, n, output);
            }
        }
    }
    return YT_OK;
}

static yt_status
run_check(check *c)
{
    yt_tensor **outs = calloc((size_t)c->n_outputs, sizeof(yt_tensor *));
    if (outs == NULL)
        return yt__fail_status(YT_ERR_NOMEM, "%s: out of memory", c->who);
    for (int o = 0; o < c->n_outputs; o++)
        c->out_numel[o] = -1;
    yt_status st = evaluate(c, true, outs);
    c->total_out = 0;
    for (int o = 0; st == YT_OK && o < c->n_outputs; o++) {
        c->out_numel[o] = outs[o]->numel;
        c->total_out += outs[o]->numel;
    }
    for (int i = 0; st == YT_OK && i < c->n_inputs; i++) {
        if (!c->checked[i])
            continue;
        int64_t n = c->inputs[i]->numel * c->total_out;
        c->analytic[i] = alloc_doubles(n);
        c->numerical[i] = alloc_doubles(n);
        if (c->analytic[i] == NULL || c->numerical[i] == NULL)
            st = yt__fail_status(YT_ERR_NOMEM, "%s: out of memory for a %lld-entry Jacobian",
                                 c->who, (long long)n);
    }
    if (st == YT_OK)
        st = analytic_jacobian(c, outs);
    release_all(outs, c->n_outputs); /* frees the graph before the inputs are perturbed */
    free(outs);
    if (st == YT_OK)
        st = numerical_jacobian(c);
    if (st == YT_OK)
        st = compare(c);
    return st;
}

/* Sets up, runs and tears down one check with grad mode on and scope tracking suspended (the
 * function's results are owned here, not by a scope the caller has open). */
static yt_status
check_run(check *c, yt_tensor *const *inputs, const yt_gradcheck_options *opts)
{
    c->eps = opts != NULL && opts->eps > 0 ? opts->eps : 1e-6;
    c->atol = opts != NULL && opts->atol > 0 ? opts->atol : 1e-5;
    c->rtol = opts != NULL && opts->rtol > 0 ? opts->rtol : 1e-3;
    size_t ni = (size_t)c->n_inputs, no = (size_t)c->n_outputs;
    c->inputs = calloc(ni ? ni : 1, sizeof(yt_tensor *));
    c->checked = calloc(ni ? ni : 1, sizeof(bool));
    c->analytic = calloc(ni ? ni : 1, sizeof(double *));
    c->numerical = calloc(ni ? ni : 1, sizeof(double *));
    c->out_numel = calloc(no ? no : 1, sizeof(int64_t));
    yt_status st = YT_OK;
    if (c->inputs == NULL || c->checked == NULL || c->analytic == NULL || c->numerical == NULL ||
        c->out_numel == NULL)
        st = yt__fail_status(YT_ERR_NOMEM, "%s: out of memory", c->who);
    yt__scope_suspend();
    bool prev = yt_set_grad_enabled(true);
    if (st == YT_OK)
        st = prepare_inputs(c, inputs);
    if (st == YT_OK)
        st = run_check(c);
    for (int i = 0; c->inputs != NULL && i < c->n_inputs; i++) {
        if (c->checked != NULL && c->checked[i] && c->inputs[i] != NULL)
            yt_zero_grad(c->inputs[i]);
        yt_release(c->inputs[i]);
    }
    for (int i = 0; c->analytic != NULL && c->numerical != NULL && i < c->n_inputs; i++) {
        free(c->analytic[i]);
        free(c->numerical[i]);
    }
    yt_set_grad_enabled(prev);
    yt__scope_resume();
    free(c->inputs);
    free(c->checked);
    free(c->analytic);
    free(c->numerical);
    free(c->out_numel);
    return st;
}

/* ---------------------------------------------------------------- gradcheck */

typedef struct plain_ctx {
    yt_grad_fn_t fn;
    int n_inputs;
    void *ctx;
} plain_ctx;

static yt_tensor *
call_user(const plain_ctx *p, yt_tensor *const *inputs, const char *who)
{
    yt_tensor *y = p->fn(inputs, p->n_inputs, p->ctx);
    if (y == NULL && yt_errcode() == YT_OK)
        yt__fail(YT_ERR_VALUE, "%s: the function returned NULL without recording an error", who);
    return y;
}

static yt_status
eval_plain(void *ctx, yt_tensor *const *inputs, bool need_graph, yt_tensor **outs)
{
    bool prev = yt_set_grad_enabled(need_graph);
    outs[0] = call_user(ctx, inputs, "gradcheck");
    yt_set_grad_enabled(prev);
    return outs[0] != NULL ? YT_OK : yt__last_status();
}

yt_status
yt_gradcheck(yt_grad_fn_t fn, yt_tensor *const *inputs, int n_inputs, void *ctx,
             const yt_gradcheck_options *opts)
{
    if (fn == NULL || (inputs == NULL && n_inputs > 0) || n_inputs < 0)
        return yt__fail_status(YT_ERR_VALUE, "gradcheck: fn is NULL or inputs/n_inputs=%d invalid",
                               n_inputs);
    for (int i = 0; i < n_inputs; i++)
        if (inputs[i] == NULL)
            return null_input("gradcheck", i);
    plain_ctx p = {fn, n_inputs, ctx};
    check c = {.who = "gradcheck",
               .fn = eval_plain,
               .ctx = &p,
               .n_inputs = n_inputs,
               .n_outputs = 1,
               .grad_output_input = -1};
    return check_run(&c, inputs, opts);
}

/* ---------------------------------------------------------------- gradgradcheck */

typedef struct gg_ctx {
    plain_ctx plain;
    const bool *differentiated; /* [n_inputs]: inputs that required grad in the caller's call */
} gg_ctx;

/* g(inputs..., grad_output) = the gradients of <grad_output, fn(inputs)> with respect to each
 * differentiated input: backward with create_graph, so g is itself differentiable. */
static yt_status
eval_gradgrad(void *ctx, yt_tensor *const *inputs, bool need_graph, yt_tensor **outs)
{
    const gg_ctx *g = ctx;
    int n = g->plain.n_inputs;
    yt_tensor *grad_output = inputs[n];
    bool prev = yt_set_grad_enabled(true);
    yt_status st = YT_OK;
    for (int i = 0; i < n; i++)
        if (g->differentiated[i])
            yt_zero_grad(inputs[i]);
    yt_tensor *y = call_user(&g->plain, inputs, "gradgradcheck");
    if (y == NULL)
        st = yt__last_status();
    if (st == YT_OK && y->requires_grad) {
        yt_backward_options opts = {.retain_graph = need_graph, .create_graph = need_graph};
        st = yt_backward(y, grad_output, &opts);
    }
    yt_release(y);
    int o = 0;
    for (int i = 0; i < n; i++) {
        if (!g->differentiated[i])
            continue;
        yt_tensor *x = inputs[i];
        yt_tensor *gi = NULL;
        if (st == YT_OK)
            gi = x->grad != NULL ? yt_retain(x->grad)
                                 : yt_zeros_ex(x->sizes, x->dim, x->dtype, x->device);
        if (st == YT_OK && gi == NULL)
            st = yt__last_status();
        yt_zero_grad(x); /* x.grad holds a graph back to x: drop it now, no cycle survives */
        outs[o++] = gi;
    }
    yt_set_grad_enabled(prev);
    if (st != YT_OK)
        release_all(outs, o);
    return st;
}

/* Deterministic values in [-1, 1) from splitmix64, independent of the global generator. */
static double
next_uniform(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) / 4503599627370496.0 - 1.0;
}

/* A random f64 grad_output shaped like fn's result (evaluated once with grad mode off). */
static yt_tensor *
random_grad_output(const plain_ctx *p, yt_tensor *const *inputs)
{
    bool prev = yt_set_grad_enabled(false);
    yt_tensor *y = call_user(p, inputs, "gradgradcheck");
    yt_set_grad_enabled(prev);
    if (y == NULL)
        return NULL;
    double *values = alloc_doubles(y->numel);
    yt_tensor *v = NULL;
    if (values == NULL) {
        yt__fail(YT_ERR_NOMEM, "gradgradcheck: out of memory");
    } else {
        uint64_t state = 0x5eed;
        for (int64_t k = 0; k < y->numel; k++)
            values[k] = next_uniform(&state);
        v = yt_tensor_from_data(values, y->sizes, y->dim, YT_DTYPE_F64);
    }
    free(values);
    yt_release(y);
    if (v != NULL && yt_set_requires_grad(v, true) != YT_OK) {
        yt_release(v);
        v = NULL;
    }
    return v;
}

yt_status
yt_gradgradcheck(yt_grad_fn_t fn, yt_tensor *const *inputs, int n_inputs, void *ctx,
                 const yt_gradcheck_options *opts)
{
    if (fn == NULL || (inputs == NULL && n_inputs > 0) || n_inputs < 0)
        return yt__fail_status(YT_ERR_VALUE,
                               "gradgradcheck: fn is NULL or inputs/n_inputs=%d invalid", n_inputs);
    for (int i = 0; i < n_inputs; i++)
        if (inputs[i] == NULL)
            return null_input("gradgradcheck", i);
    size_t ni = (size_t)n_inputs;
    bool *differentiated = calloc(ni + 1, sizeof(bool));
    yt_tensor **all = calloc(ni + 1, sizeof(yt_tensor *));
    if (differentiated == NULL || all == NULL) {
        free(differentiated);
        free(all);
        return yt__fail_status(YT_ERR_NOMEM, "gradgradcheck: out of memory");
    }
    int n_diff = 0;
    for (int i = 0; i < n_inputs; i++) {
        differentiated[i] = inputs[i]->requires_grad;
        n_diff += differentiated[i];
        all[i] = inputs[i];
    }
    yt_status st = YT_OK;
    if (n_diff == 0)
        st = yt__fail_status(YT_ERR_VALUE, "gradgradcheck: no input requires grad, so there is "
                                           "nothing to check (call yt_set_requires_grad on the "
                                           "inputs)");
    plain_ctx p = {fn, n_inputs, ctx};
    yt__scope_suspend();
    yt_tensor *grad_output = NULL;
    if (st == YT_OK) {
        grad_output = random_grad_output(&p, inputs);
        if (grad_output == NULL)
            st = yt__last_status();
    }
    yt__scope_resume();
    if (st == YT_OK) {
        all[n_inputs] = grad_output;
        gg_ctx g = {p, differentiated};
        check c = {.who = "gradgradcheck",
                   .fn = eval_gradgrad,
                   .ctx = &g,
                   .n_inputs = n_inputs + 1,
                   .n_outputs = n_diff,
                   .grad_output_input = n_inputs};
        st = check_run(&c, all, opts);
    }
    yt_release(grad_output);
    free(differentiated);
    free(all);
    return st;
}
