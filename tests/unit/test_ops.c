/* Runs the per-op cases generated from ops.yaml (generated/tests/op_cases.c):
 *  - gradcheck and gradgradcheck in f64 for every differentiable sample,
 *  - variant consistency: function vs in-place vs out=, strided vs contiguous inputs,
 *  - NULL propagation for every tensor argument,
 *  - one error-input case per declared check (clear error naming the op, no crash), and one per
 *    non-differentiable argument that requires grad (refused, as PyTorch refuses it),
 * and proves after each case that no tensor or byte leaked. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "op_cases.h"
#include "test_util.h"

/* Deterministic input values (no dependency on the RNG under test). */
/* The sweeps' random choices (random bad inputs and arguments, below). */
static uint64_t
sweep_next(uint64_t *state)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return *state >> 33;
}

static int
sweep_pick(uint64_t *state, int n)
{
    return (int)(sweep_next(state) % (uint64_t)n);
}

static double
value_at(uint64_t *state, const char *domain)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    double u = (double)(*state >> 11) / 9007199254740992.0; /* [0, 1) */
    if (domain != NULL && strcmp(domain, "positive") == 0)
        return 0.5 + 1.5 * u;
    if (domain != NULL && strcmp(domain, "nonzero") == 0)
        return (u < 0.5 ? -1.0 : 1.0) * (0.2 + 1.6 * fabs(u - 0.5));
    if (domain != NULL && strcmp(domain, "unit") == 0)
        return 0.05 + 0.9 * u;
    return 4.0 * u - 2.0;
}

/* The tensor `spec` describes, NULL (with the error recorded) when it has more than max_numel
 * elements. Its values come from `state`: in `domain`, or for an index tensor in [0, high) (one
 * in four out of range, either side, when bad_index), rounded for integer and half-precision
 * dtypes, 0 / 1 for bool. A stepped input's values are made over the wider tensor it is a view
 * of. */
static yt_tensor *
spec_tensor(const yt_case_tensor *spec, uint64_t *state, const char *domain, bool bad_index,
            int64_t max_numel)
{
    const int64_t step = spec->step > 1 ? spec->step : 1;
    int64_t sizes[YT_MAX_DIM], numel = 1;
    for (int i = 0; i < spec->dim; i++) {
        sizes[i] = spec->sizes[i] * (i == spec->dim - 1 ? step : 1);
        numel *= sizes[i];
    }
    if (numel > max_numel)
        return NULL;
    double *values = malloc(sizeof(double) * (size_t)(numel > 0 ? numel : 1));
    cr_assert_not_null(values);
    for (int64_t i = 0; i < numel; i++) {
        double v = value_at(state, spec->high > 0 ? NULL : domain);
        if (spec->high > 0) {
            v = floor((v + 2.0) / 4.0 * (double)spec->high); /* an index in [0, high) */
            if (bad_index && sweep_pick(state, 4) == 0)
                v = sweep_pick(state, 2) ? (double)spec->high : -(double)spec->high - 1;
        } else if (spec->dtype == YT_DTYPE_BOOL) {
            v = v > 0;
        } else if (spec->dtype != YT_DTYPE_F64 && spec->dtype != YT_DTYPE_F32) {
            v = floor(v * 3);
        }
        values[i] = v;
    }
    yt_tensor *f64 = yt_tensor_from_data(values, sizes, spec->dim, YT_DTYPE_F64);
    free(values);
    yt_tensor *t = spec->dtype == YT_DTYPE_F64 ? yt_retain(f64) : yt_to(f64, spec->dtype);
    yt_release(f64);
    if (t != NULL && spec->transpose && spec->dim >= 2) {
        yt_tensor *view = yt_transpose(t, -2, -1);
        yt_release(t);
        t = view;
    }
    if (t != NULL && step > 1 && spec->dim > 0) {
        const int last = spec->dim - 1;
        yt_tensor *view = yt_slice_ex(t, last, 0, sizes[last], step);
        yt_release(t);
        t = view;
    }
    cr_assert_not_null(t, "building input %s: %s", spec->name, yt_errmsg());
    return t;
}

static yt_tensor *
make_input(const yt_case_tensor *spec, uint64_t *state, const char *domain, bool requires_grad)
{
    yt_tensor *t = spec_tensor(spec, state, domain, false, INT64_MAX);
    if (requires_grad && !spec->no_grad && spec->dtype == YT_DTYPE_F64)
        yt_set_requires_grad(t, true);
    return t;
}

static int
make_inputs(yt_tensor **out, const yt_case_tensor *specs, int n, const char *domain, bool grad)
{
    uint64_t state = 42;
    for (int i = 0; i < n; i++) {
        out[i] = make_input(&specs[i], &state, domain, grad);
        cr_assert_not_null(out[i], "building input %s: %s", specs[i].name, yt_errmsg());
    }
    return n;
}

static void
release_all(yt_tensor **ts, int n)
{
    for (int i = 0; i < n; i++)
        yt_release(ts[i]);
}

static int *
case_indices(int n)
{
    int *idx = cr_malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++)
        idx[i] = i;
    return idx;
}

static yt_tensor *
call_case(yt_tensor *const *inputs, int n_inputs, void *ctx)
{
    (void)n_inputs;
    const yt_op_case *c = ctx;
    return c->call(inputs, NULL);
}

/* Asserts two results hold the same values (compared as f64; NaN equals NaN). */
static void
assert_same_values(yt_tensor *a, yt_tensor *b, const char *what, const yt_op_case *c)
{
    cr_assert_eq(yt_tensor_dim(a), yt_tensor_dim(b), "%s %s: rank %d vs %d", c->where, what,
                 yt_tensor_dim(a), yt_tensor_dim(b));
    int64_t n = yt_tensor_numel(a);
    cr_assert_eq(n, yt_tensor_numel(b), "%s %s: numel differs", c->where, what);
    double *va = malloc(sizeof(double) * (size_t)(n + 1)),
           *vb = malloc(sizeof(double) * (size_t)(n + 1));
    cr_assert_eq(yt_tensor_copy_to(a, va, sizeof(double) * (size_t)n, YT_DTYPE_F64), YT_OK, "%s",
                 yt_errmsg());
    cr_assert_eq(yt_tensor_copy_to(b, vb, sizeof(double) * (size_t)n, YT_DTYPE_F64), YT_OK, "%s",
                 yt_errmsg());
    for (int64_t i = 0; i < n; i++) {
        bool same =
            (isnan(va[i]) && isnan(vb[i])) || fabs(va[i] - vb[i]) <= 1e-12 * (1 + fabs(va[i]));
        cr_assert(same, "%s (%s) %s: element %lld is %.17g vs %.17g", c->op, c->where, what,
                  (long long)i, va[i], vb[i]);
    }
    free(va);
    free(vb);
}

ParameterizedTestParameters(ops, gradcheck)
{
    return cr_make_param_array(int, case_indices(yt_op_case_count), (size_t)yt_op_case_count);
}

ParameterizedTest(int *index, ops, gradcheck)
{
    const yt_op_case *c = &yt_op_cases[*index];
    if (!c->differentiable) {
        /* forward only: it must run and not leak */
        yt_tensor *inputs[YT_CASE_MAX_INPUTS];
        make_inputs(inputs, c->inputs, c->n_inputs, c->domain, false);
        yt_tensor *r = c->call(inputs, NULL);
        cr_assert_not_null(r, "%s (%s): %s", c->op, c->where, yt_errmsg());
        yt_release(r);
        release_all(inputs, c->n_inputs);
        YT_ASSERT_NO_LEAKS();
        return;
    }
    yt_tensor *inputs[YT_CASE_MAX_INPUTS];
    make_inputs(inputs, c->inputs, c->n_inputs, c->domain, true);
    yt_status st = yt_gradcheck(call_case, inputs, c->n_inputs, (void *)c, NULL);
    cr_assert_eq(st, YT_OK, "gradcheck %s (%s): %s", c->op, c->where, yt_errmsg());
    st = yt_gradgradcheck(call_case, inputs, c->n_inputs, (void *)c, NULL);
    cr_assert_eq(st, YT_OK, "gradgradcheck %s (%s): %s", c->op, c->where, yt_errmsg());
    release_all(inputs, c->n_inputs);
    YT_ASSERT_NO_LEAKS();
}

/* Random ops draw the same numbers for every variant. */
static yt_tensor *
seeded(yt_case_fn fn, yt_tensor *const *inputs, void *ctx)
{
    yt_manual_seed(1234);
    return fn(inputs, ctx);
}

ParameterizedTestParameters(ops, variants)
{
    return cr_make_param_array(int, case_indices(yt_op_case_count), (size_t)yt_op_case_count);
}

ParameterizedTest(int *index, ops, variants)
{
    const yt_op_case *c = &yt_op_cases[*index];
    yt_tensor *inputs[YT_CASE_MAX_INPUTS], *contiguous[YT_CASE_MAX_INPUTS];
    make_inputs(inputs, c->inputs, c->n_inputs, c->domain, false);
    for (int i = 0; i < c->n_inputs; i++)
        contiguous[i] = yt_contiguous(inputs[i]);
    yt_tensor *expect = seeded(c->call, inputs, NULL);
    cr_assert_not_null(expect, "%s (%s): %s", c->op, c->where, yt_errmsg());
    yt_tensor *from_contiguous = seeded(c->call, contiguous, NULL);
    cr_assert_not_null(from_contiguous, "%s (%s) contiguous: %s", c->op, c->where, yt_errmsg());
    assert_same_values(expect, from_contiguous, "strided vs contiguous inputs", c);
    yt_release(from_contiguous);
    if (c->call_inplace != NULL) {
        yt_tensor *r = seeded(c->call_inplace, inputs, NULL);
        cr_assert_not_null(r, "%s (%s) in-place: %s", c->op, c->where, yt_errmsg());
        assert_same_values(expect, r, "in-place vs function", c);
        yt_release(r);
    }
    if (c->call_out != NULL) {
        yt_tensor *r = seeded(c->call_out, inputs, expect);
        cr_assert_not_null(r, "%s (%s) out=: %s", c->op, c->where, yt_errmsg());
        assert_same_values(expect, r, "out= vs function", c);
        yt_release(r);
    }
    yt_release(expect);
    release_all(contiguous, c->n_inputs);
    release_all(inputs, c->n_inputs);
    YT_ASSERT_NO_LEAKS();
}

ParameterizedTestParameters(ops, null_arguments)
{
    return cr_make_param_array(int, case_indices(yt_op_case_count), (size_t)yt_op_case_count);
}

ParameterizedTest(int *index, ops, null_arguments)
{
    const yt_op_case *c = &yt_op_cases[*index];
    yt_tensor *inputs[YT_CASE_MAX_INPUTS];
    make_inputs(inputs, c->inputs, c->n_inputs, c->domain, false);
    for (int i = 0; i < c->n_inputs; i++) {
        if (c->inputs[i].optional)
            continue; /* NULL means None there */
        yt_tensor *saved = inputs[i];
        inputs[i] = NULL;
        yt_clear_error();
        yt_tensor *r = c->call(inputs, NULL);
        cr_assert_null(r, "%s (%s): NULL %s gave a tensor", c->op, c->where, c->inputs[i].name);
        cr_assert_neq(yt_errcode(), YT_OK, "%s: no error recorded for NULL %s", c->op,
                      c->inputs[i].name);
        cr_assert(strstr(yt_errmsg(), c->inputs[i].name) != NULL,
                  "%s: message '%s' does not name %s", c->op, yt_errmsg(), c->inputs[i].name);
        inputs[i] = saved;
    }
    yt_clear_error();
    release_all(inputs, c->n_inputs);
    YT_ASSERT_NO_LEAKS();
}

ParameterizedTestParameters(ops, error_inputs)
{
    return cr_make_param_array(int, case_indices(yt_error_case_count), (size_t)yt_error_case_count);
}

ParameterizedTest(int *index, ops, error_inputs)
{
    const yt_error_case *c = &yt_error_cases[*index];
    yt_tensor *inputs[YT_CASE_MAX_INPUTS];
    make_inputs(inputs, c->inputs, c->n_inputs, c->domain, false);
    for (int i = 0; c->requires_grad && i < c->n_inputs; i++)
        if (c->inputs[i].no_grad)
            cr_assert_eq(yt_set_requires_grad(inputs[i], true), YT_OK, "%s", yt_errmsg());
    cr_assert(yt_grad_enabled(), "grad mode is on by default");
    yt_clear_error();
    yt_tensor *r = c->call(inputs, NULL);
    cr_assert_null(r, "%s (%s): bad input was accepted", c->op, c->what);
    if (c->expect != 0)
        cr_assert_eq(yt_errcode(), c->expect, "%s (%s): error %s, expected %s: %s", c->op, c->what,
                     yt_status_name(yt_errcode()), yt_status_name(c->expect), yt_errmsg());
    else
        cr_assert_neq(yt_errcode(), YT_OK, "%s (%s): no error code", c->op, c->what);
    cr_assert(strncmp(yt_errmsg(), c->expect_prefix, strlen(c->expect_prefix)) == 0,
              "%s (%s): message '%s' does not start with '%s'", c->op, c->what, yt_errmsg(),
              c->expect_prefix);
    yt_clear_error();
    if (c->requires_grad) { /* with grad mode off the same call is fine, as in PyTorch */
        bool prev = yt_set_grad_enabled(false);
        r = c->call(inputs, NULL);
        yt_set_grad_enabled(prev);
        cr_assert_not_null(r, "%s (%s) with grad mode off: %s", c->op, c->what, yt_errmsg());
        cr_assert(!yt_requires_grad(r), "%s (%s): the result requires grad with grad mode off",
                  c->op, c->what);
        yt_release(r);
    }
    release_all(inputs, c->n_inputs);
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- random bad inputs
 *
 * Every case again, its tensors changed at random the way callers get them wrong: another dtype,
 * a size made 0, 1 or larger, a dim dropped or added, 0-d, transposed or stepped views, and index
 * tensors holding values out of range. Whatever the op makes of them, it must either succeed, and
 * then backward through its result must work too, or fail with an error whose message starts
 * with the op's name; and nothing may leak. (Under the sanitizers, in test-asan, also no memory
 * error.) Seeded, so a failure names a case that can be run again. This sweep found a topk of a
 * 0-d tensor with k = 0 leaving its results unwritten, pooling over an empty plane, and backward
 * refusing the integer operands that pow and clamp's forward had accepted. */
enum { SWEEP_CALLS = 20000, SWEEP_MAX_NUMEL = 4096 };

static void
mutate_spec(yt_case_tensor *t, uint64_t *state)
{
    switch (sweep_pick(state, 9)) {
    case 0:
        t->dtype = (yt_dtype)sweep_pick(state, YT_DTYPE_COUNT);
        break;
    case 1:
    case 2:
    case 3:
        if (t->dim > 0) {
            const int64_t options[3] = {0, 1, t->sizes[0] + 1 + sweep_pick(state, 3)};
            t->sizes[sweep_pick(state, t->dim)] = options[sweep_pick(state, 3)];
        }
        break;
    case 4:
        if (t->dim > 0)
            t->dim--;
        break;
    case 5:
        if (t->dim < 5) {
            memmove(t->sizes + 1, t->sizes, sizeof(int64_t) * (size_t)t->dim);
            t->sizes[0] = 1 + sweep_pick(state, 3);
            t->dim++;
        }
        break;
    case 6:
        t->transpose = !t->transpose;
        break;
    case 7:
        t->step = 1 + sweep_pick(state, 3);
        break;
    default:
        t->dim = 0;
        break;
    }
}

/* The tensor `t` describes (NULL when too large for the sweep), values drawn as make_input's;
 * index tensors get a value out of range now and then when `bad_index`. */
static yt_tensor *
sweep_input(const yt_case_tensor *t, uint64_t *state, bool bad_index, bool grad)
{
    yt_tensor *x = spec_tensor(t, state, NULL, bad_index, SWEEP_MAX_NUMEL);
    if (x != NULL && grad && !t->no_grad && (t->dtype == YT_DTYPE_F64 || t->dtype == YT_DTYPE_F32))
        cr_assert_eq(yt_set_requires_grad(x, true), YT_OK);
    return x;
}

/* Asserts the last call failed with a message that starts with `op`'s name (up to its overload,
 * "clamp" of "clamp.Tensor"), as the function or its in-place or out= variant, and a colon. */
static void
assert_failed_naming(const char *op, const char *where)
{
    const size_t len = strcspn(op, ".");
    const char *msg = yt_errmsg();
    cr_assert_neq(yt_errcode(), YT_OK, "%s (%s): NULL with no error recorded", op, where);
    const char *rest = msg + len;
    cr_assert(strncmp(msg, op, len) == 0 &&
                  (rest[0] == ':' || strncmp(rest, "_:", 2) == 0 || strncmp(rest, "_out:", 5) == 0),
              "%s (%s): message '%s' does not name the op", op, where, msg);
}

/* What a sweep's call of case `c` must give: a result, and then, when it requires grad and has
 * at most backward_max elements, a backward through it that works; or NULL with an error naming
 * the op. */
static void
check_sweep_result(const yt_op_case *c, int call, yt_tensor *r, int64_t backward_max)
{
    if (r == NULL) {
        assert_failed_naming(c->op, c->where);
        return;
    }
    if (yt_requires_grad(r) && yt_tensor_numel(r) <= backward_max) {
        yt_tensor *sum = yt_sum(r);
        cr_assert_eq(yt_backward(sum, NULL, NULL), YT_OK, "%s (%s), call %d: backward: %s", c->op,
                     c->where, call, yt_errmsg());
        yt_release(sum);
    }
}

/* Releases a sweep call's result and inputs, and asserts that no tensor is left. */
static void
release_sweep_call(const yt_op_case *c, int call, yt_tensor *r, yt_tensor **in)
{
    yt_release(r);
    release_all(in, c->n_inputs);
    yt_clear_error();
    cr_assert_eq(yt_live_tensors(), 0, "%s (%s), call %d: %lld tensors leaked", c->op, c->where,
                 call, (long long)yt_live_tensors());
}

Test(ops, random_bad_inputs_fail_cleanly)
{
    uint64_t state = 2026;
    for (int call = 0; call < SWEEP_CALLS; call++) {
        const yt_op_case *c = &yt_op_cases[sweep_pick(&state, yt_op_case_count)];
        yt_case_tensor specs[YT_CASE_MAX_INPUTS];
        memcpy(specs, c->inputs, sizeof specs);
        for (int m = 1 + sweep_pick(&state, 2); m > 0 && c->n_inputs > 0; m--)
            mutate_spec(&specs[sweep_pick(&state, c->n_inputs)], &state);
        const bool grad = sweep_pick(&state, 2), bad_index = sweep_pick(&state, 2);
        yt_tensor *in[YT_CASE_MAX_INPUTS] = {NULL};
        bool made = true;
        for (int i = 0; i < c->n_inputs && made; i++) {
            in[i] = sweep_input(&specs[i], &state, bad_index, grad);
            made = in[i] != NULL;
        }
        yt_clear_error();
        yt_tensor *r = made ? c->call(in, NULL) : NULL;
        if (made)
            check_sweep_result(c, call, r, INT64_MAX);
        if (made && c->call_inplace != NULL) {
            yt_tensor *written = c->call_inplace(in, NULL);
            if (written == NULL)
                assert_failed_naming(c->op, c->where);
            yt_release(written);
        }
        if (r != NULL && c->call_out != NULL) {
            yt_tensor *out = c->call_out(in, r);
            if (out == NULL)
                assert_failed_naming(c->op, c->where);
            yt_release(out);
        }
        release_sweep_call(c, call, r, in);
    }
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- random bad arguments
 *
 * Every case whose sample gives int, int[], float or Scalar arguments (yt_op_case.args) again,
 * with its tensors as made for the gradcheck and one or two of those arguments changed: ints to
 * -1, 0, small values, +-2^40 or the int64 extremes (YT_NONE is INT64_MIN); int[] lengths to 0 or
 * one more, or an element changed the same way; floats and Scalars to NaN, +-inf, +-1e300 or 0.
 * As for bad tensors: success, with a backward that works, or an error naming the op, and no
 * leak. A sweep of this kind (one change per call) found an empty batch's conv2d weight gradient
 * sizing scratch from a 2^41 x 2^41 plane, and "same" padding with dilation 2^40 overflowing
 * conv_direct.c's scratch sizes. */
enum { ARG_SWEEP_CALLS = 6000, ARG_SWEEP_BACKWARD_MAX_NUMEL = 1 << 16 };

static int64_t
bad_int(uint64_t *state, int64_t was)
{
    const int64_t next = was < INT64_MAX ? was + 1 : 0, prev = was > INT64_MIN ? was - 1 : 0;
    const int64_t options[] = {
        -1,        0,        1, 2, 3, -2, next, prev, (int64_t)1 << 40, -((int64_t)1 << 40),
        INT64_MAX, INT64_MIN};
    return options[sweep_pick(state, (int)(sizeof options / sizeof options[0]))];
}

static double
bad_float(uint64_t *state, double was)
{
    const double options[] = {NAN, INFINITY, -INFINITY, -1.0, 0.0, 0.5, 2.0, 1e300, -1e300, -was};
    return options[sweep_pick(state, (int)(sizeof options / sizeof options[0]))];
}

static void
mutate_arg(yt_case_arg *a, uint64_t *state)
{
    switch (a->kind) {
    case YT_CASE_INT:
        a->i = bad_int(state, a->i);
        break;
    case YT_CASE_INTLIST:
        if (sweep_pick(state, 3) == 0) {
            const int lengths[3] = {0, a->len > 0 ? a->len - 1 : 0,
                                    a->len < YT_CASE_MAX_LIST ? a->len + 1 : a->len};
            const int len = lengths[sweep_pick(state, 3)];
            for (int k = a->len; k < len; k++)
                a->list[k] = 1 + sweep_pick(state, 3);
            a->len = len;
        } else if (a->len > 0) {
            const int k = sweep_pick(state, a->len);
            a->list[k] = bad_int(state, a->list[k]);
        }
        break;
    case YT_CASE_FLOAT:
        a->f = bad_float(state, a->f);
        break;
    case YT_CASE_SCALAR:
        if (a->is_int && sweep_pick(state, 2) == 0) {
            a->i = bad_int(state, a->i);
        } else {
            a->f = bad_float(state, a->is_int ? (double)a->i : a->f);
            a->is_int = false;
        }
        break;
    }
}

Test(ops, random_bad_arguments_fail_cleanly)
{
    int with_args[4096], n = 0;
    for (int i = 0; i < yt_op_case_count && n < 4096; i++)
        if (yt_op_cases[i].call_args != NULL)
            with_args[n++] = i;
    if (n == 0) /* the generator's own toy ops (tests/codegen) may have none */
        cr_skip_test("no case has int, int[], float or Scalar arguments to change");
    uint64_t state = 2611;
    for (int call = 0; call < ARG_SWEEP_CALLS; call++) {
        const yt_op_case *c = &yt_op_cases[with_args[sweep_pick(&state, n)]];
        yt_case_args args = c->args;
        for (int m = 1 + sweep_pick(&state, 2); m > 0; m--)
            mutate_arg(&args.arg[sweep_pick(&state, args.n)], &state);
        yt_tensor *in[YT_CASE_MAX_INPUTS] = {NULL};
        make_inputs(in, c->inputs, c->n_inputs, c->domain, sweep_pick(&state, 2));
        yt_clear_error();
        yt_tensor *r = c->call_args(in, &args);
        /* a view may be huge without memory (expand to 2^40): backward only through small ones */
        check_sweep_result(c, call, r, ARG_SWEEP_BACKWARD_MAX_NUMEL);
        release_sweep_call(c, call, r, in);
    }
    YT_ASSERT_NO_LEAKS();
}
