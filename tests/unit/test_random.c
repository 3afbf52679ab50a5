/* Random ops and generators: distribution properties with a fixed seed (mean, variance, range,
 * permutation, Bernoulli rate), reproducibility (seed, saved state, thread count) and the
 * creation ops' PyTorch corner cases (full's dtype, arange with an integral dtype, linspace). */
#include <math.h>
#include <stdlib.h>

#include <criterion/criterion.h>

#include "test_util.h"

static double *
values_of(yt_tensor *t)
{
    cr_assert_not_null(t, "%s", yt_errmsg());
    int64_t n = yt_tensor_numel(t);
    double *v = malloc(sizeof(double) * (size_t)(n + 1));
    cr_assert_eq(yt_tensor_copy_to(t, v, sizeof(double) * (size_t)n, YT_DTYPE_F64), YT_OK, "%s",
                 yt_errmsg());
    return v;
}

/* values_of for a fresh result, which it releases */
static double *
take_values(yt_tensor *t)
{
    double *v = values_of(t);
    yt_release(t);
    return v;
}

static void
moments(const double *v, int64_t n, double *mean, double *var)
{
    double s = 0, s2 = 0;
    for (int64_t i = 0; i < n; i++)
        s += v[i];
    *mean = s / (double)n;
    for (int64_t i = 0; i < n; i++)
        s2 += (v[i] - *mean) * (v[i] - *mean);
    *var = s2 / (double)(n - 1);
}

Test(random, uniform_and_normal_moments)
{
    const int64_t n = 200001;
    const yt_dtype dtypes[3] = {YT_DTYPE_F32, YT_DTYPE_F64, YT_DTYPE_BF16};
    yt_manual_seed(2024);
    for (int k = 0; k < 3; k++) {
        double m, var;
        double *u = take_values(yt_rand_ex(&n, 1, NULL, dtypes[k], YT_DEVICE_NONE));
        for (int64_t i = 0; i < n; i++)
            cr_assert(u[i] >= 0.0 && u[i] < 1.0, "rand %g out of [0, 1)", u[i]);
        moments(u, n, &m, &var);
        cr_assert(fabs(m - 0.5) < 0.005 && fabs(var - 1.0 / 12) < 0.003, "%s rand: mean %g var %g",
                  yt_dtype_name(dtypes[k]), m, var);
        free(u);
        double *z = take_values(yt_randn_ex(&n, 1, NULL, dtypes[k], YT_DEVICE_NONE));
        moments(z, n, &m, &var);
        cr_assert(fabs(m) < 0.01 && fabs(var - 1.0) < 0.02, "%s randn: mean %g var %g",
                  yt_dtype_name(dtypes[k]), m, var);
        free(z);
    }
    /* normal(mean, std) and uniform(from, to) on a tensor, in place */
    yt_tensor *t = yt_zeros_ex(&n, 1, YT_DTYPE_F64, YT_DEVICE_NONE);
    cr_assert_eq(yt_normal_ex_(t, 3.0, 2.0, NULL), YT_OK, "%s", yt_errmsg());
    double m, var, *v = values_of(t);
    moments(v, n, &m, &var);
    cr_assert(fabs(m - 3.0) < 0.02 && fabs(var - 4.0) < 0.08, "normal_: mean %g var %g", m, var);
    free(v);
    cr_assert_eq(yt_uniform_ex_(t, -2.0, 6.0, NULL), YT_OK, "%s", yt_errmsg());
    v = values_of(t);
    moments(v, n, &m, &var);
    for (int64_t i = 0; i < n; i++)
        cr_assert(v[i] >= -2.0 && v[i] < 6.0, "uniform_ %g out of [-2, 6)", v[i]);
    cr_assert(fabs(m - 2.0) < 0.04 && fabs(var - 64.0 / 12) < 0.1, "uniform_: mean %g var %g", m,
              var);
    free(v);
    cr_assert_eq(yt_normal_ex_(t, 0.0, -1.0, NULL), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "normal: expected std >= 0");
    cr_assert_eq(yt_uniform_ex_(t, 1.0, 0.0, NULL), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "uniform: expected a finite range");
    yt_release(t);
    YT_ASSERT_NO_LEAKS();
}

Test(random, randint_randperm_bernoulli)
{
    const int64_t n = 100000;
    yt_manual_seed(7);
    yt_tensor *r = yt_randint_low(-3, 5, &n, 1);
    cr_assert_eq(yt_tensor_dtype(r), YT_DTYPE_I64);
    double *v = values_of(r);
    int64_t counts[8] = {0};
    for (int64_t i = 0; i < n; i++) {
        cr_assert(v[i] >= -3 && v[i] < 5 && v[i] == floor(v[i]), "randint value %g", v[i]);
        counts[(int)v[i] + 3]++;
    }
    for (int k = 0; k < 8; k++)
        cr_assert(fabs((double)counts[k] / (double)n - 0.125) < 0.006, "value %d: %lld", k - 3,
                  (long long)counts[k]);
    free(v);
    yt_release(r);
    cr_assert_null(yt_randint_low(5, 5, &n, 1));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "randint: expected low < high");
    cr_assert_null(yt_randint_ex(300, &n, 1, NULL, YT_DTYPE_U8, YT_DEVICE_NONE));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "randint: the range [0, 300) does not fit");

    const int64_t m = 1000;
    yt_tensor *p = yt_randperm(m);
    v = values_of(p);
    bool *seen = calloc((size_t)m, 1);
    int64_t fixed = 0;
    for (int64_t i = 0; i < m; i++) {
        cr_assert(v[i] >= 0 && v[i] < m && !seen[(int64_t)v[i]], "randperm repeats %g", v[i]);
        seen[(int64_t)v[i]] = true;
        fixed += v[i] == (double)i;
    }
    cr_assert(fixed < 10, "randperm left %lld of %lld in place", (long long)fixed, (long long)m);
    free(seen);
    free(v);
    yt_release(p);

    yt_tensor *probs = yt_full_ex(&n, 1, yt_float(0.3), YT_DTYPE_F32, YT_DEVICE_NONE);
    yt_tensor *b = yt_bernoulli(probs);
    v = values_of(b);
    double ones = 0;
    for (int64_t i = 0; i < n; i++) {
        cr_assert(v[i] == 0 || v[i] == 1);
        ones += v[i];
    }
    cr_assert(fabs(ones / (double)n - 0.3) < 0.006, "bernoulli rate %g", ones / (double)n);
    free(v);
    yt_release(b);
    b = yt_bernoulli_p_ex(probs, 0.8, NULL);
    v = values_of(b);
    ones = 0;
    for (int64_t i = 0; i < n; i++)
        ones += v[i];
    cr_assert(fabs(ones / (double)n - 0.8) < 0.006, "bernoulli.p rate %g", ones / (double)n);
    free(v);
    yt_release(b);
    yt_tensor *bad = yt_full_ex(&n, 1, yt_float(1.5), YT_DTYPE_F32, YT_DEVICE_NONE);
    cr_assert_null(yt_bernoulli(bad));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "bernoulli: expected all probabilities in [0, 1]");
    yt_release(bad);
    yt_release(probs);
    YT_ASSERT_NO_LEAKS();
}

Test(random, generators_are_reproducible)
{
    const int64_t n = 70001; /* above the parallel grain */
    yt_generator *g = yt_generator_create(99);
    cr_assert_not_null(g);
    cr_assert_eq(yt_generator_initial_seed(g), 99u);
    yt_generator_state st;
    cr_assert_eq(yt_generator_get_state(g, &st), YT_OK);
    cr_assert(st.seed == 99 && st.offset == 0);
    /* the default generator reseeded to the same seed draws the same numbers */
    yt_manual_seed(99);
    double *a = take_values(yt_randn_ex(&n, 1, NULL, YT_DTYPE_F32, YT_DEVICE_NONE));
    yt_generator_state saved;
    yt_generator_get_state(NULL, &saved);
    cr_assert(saved.offset > 0);
    double *b = take_values(yt_randn_ex(&n, 1, NULL, YT_DTYPE_F32, YT_DEVICE_NONE));
    /* restoring a saved state replays */
    yt_generator_set_state(NULL, &saved);
    double *c = take_values(yt_randn_ex(&n, 1, NULL, YT_DTYPE_F32, YT_DEVICE_NONE));
    /* one thread gives the same numbers as many */
    int threads = yt_get_num_threads();
    yt_set_num_threads(1);
    yt_manual_seed(99);
    double *d = take_values(yt_randn_ex(&n, 1, NULL, YT_DTYPE_F32, YT_DEVICE_NONE));
    yt_set_num_threads(threads);
    int64_t same_next = 0;
    for (int64_t i = 0; i < n; i++) {
        cr_assert(b[i] == c[i], "restored state differs at %lld", (long long)i);
        cr_assert(a[i] == d[i], "thread count changed element %lld", (long long)i);
        same_next += a[i] == b[i];
    }
    cr_assert(same_next < 10, "consecutive draws repeat");
    free(a);
    free(b);
    free(c);
    free(d);
    yt_generator_manual_seed(g, 5);
    cr_assert_eq(yt_generator_initial_seed(g), 5u);
    cr_assert_eq(yt_generator_get_state(g, NULL), YT_ERR_VALUE);
    yt_generator_release(g);
    yt_generator_release(NULL);
    yt_generator_release(yt_default_generator()); /* ignored */
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- explicit generators */

enum { N_RANDOM_OPS = 15 };

/* Random op `op` drawing from `g` (NULL: the default generator); `n` elements where the op takes
 * a size. The in-place forms fill a fresh tensor. */
static yt_tensor *
draw_with(int op, yt_generator *g, int64_t n)
{
    yt_tensor *base = yt_full_ex(&n, 1, yt_float(0.4), YT_DTYPE_F64, YT_DEVICE_NONE);
    cr_assert_not_null(base, "%s", yt_errmsg());
    yt_tensor *r = NULL;
    yt_status st = YT_OK;
    switch (op) {
    case 0:
        r = yt_rand_ex(&n, 1, g, YT_DTYPE_F32, YT_DEVICE_NONE);
        break;
    case 1:
        r = yt_randn_ex(&n, 1, g, YT_DTYPE_F64, YT_DEVICE_NONE);
        break;
    case 2:
        r = yt_randint_ex(1000, &n, 1, g, YT_DTYPE_NONE, YT_DEVICE_NONE);
        break;
    case 3:
        r = yt_randint_low_ex(-50, 50, &n, 1, g, YT_DTYPE_I32, YT_DEVICE_NONE);
        break;
    case 4:
        r = yt_randperm_ex(n, g, YT_DTYPE_NONE, YT_DEVICE_NONE);
        break;
    case 5:
        r = yt_bernoulli_ex(base, g);
        break;
    case 6:
        r = yt_bernoulli_p_ex(base, 0.7, g);
        break;
    case 7:
        r = yt_normal_ex(base, 1.0, 3.0, g);
        break;
    case 8:
        r = yt_uniform_ex(base, -1.0, 1.0, g);
        break;
    case 9:
        r = yt_rand_like_ex(base, g, YT_DTYPE_NONE);
        break;
    case 10:
        r = yt_randn_like_ex(base, g, YT_DTYPE_F32);
        break;
    case 11:
        r = yt_dropout_ex(base, 0.5, true, g);
        break;
    case 12:
        r = yt_clone(base);
        st = yt_bernoulli_p_ex_(r, 0.25, g);
        break;
    case 13:
        r = yt_clone(base);
        st = yt_normal_ex_(r, -2.0, 0.5, g);
        break;
    default:
        r = yt_clone(base);
        st = yt_uniform_ex_(r, 2.0, 5.0, g);
        break;
    }
    cr_assert_not_null(r, "random op %d: %s", op, yt_errmsg());
    cr_assert_eq(st, YT_OK, "random op %d: %s", op, yt_errmsg());
    yt_release(base);
    return r;
}

/* How many of n elements are equal (so that different streams can be told apart: a Bernoulli or
 * dropout mask still agrees in about half its elements by chance). */
static int64_t
count_equal(const double *a, const double *b, int64_t n)
{
    int64_t same = 0;
    for (int64_t i = 0; i < n; i++)
        same += a[i] == b[i];
    return same;
}

Test(random, explicit_generators_are_independent_and_reproducible)
{
    const int64_t n = 70001; /* above the parallel grain */
    int threads = yt_get_num_threads();
    for (int op = 0; op < N_RANDOM_OPS; op++) {
        yt_generator *g1 = yt_generator_create(1234), *g2 = yt_generator_create(1234),
                     *other = yt_generator_create(1235);
        yt_generator_state before, after, mid;
        yt_generator_get_state(NULL, &before);
        double *a = take_values(draw_with(op, g1, n));
        /* the default generator was not touched */
        yt_generator_get_state(NULL, &after);
        cr_assert(before.seed == after.seed && before.offset == after.offset,
                  "op %d advanced the default generator", op);
        cr_assert_eq(yt_generator_get_state(g1, &mid), YT_OK);
        cr_assert(mid.seed == 1234 && mid.offset > 0, "op %d: g1 offset %llu", op,
                  (unsigned long long)mid.offset);
        double *next = take_values(draw_with(op, g1, n));
        /* the same seed on one thread gives the same values */
        yt_set_num_threads(1);
        double *b = take_values(draw_with(op, g2, n));
        yt_set_num_threads(threads);
        /* restoring g1's state replays its second draw */
        cr_assert_eq(yt_generator_set_state(g1, &mid), YT_OK);
        double *replay = take_values(draw_with(op, g1, n));
        double *c = take_values(draw_with(op, other, n));
        cr_assert_eq(count_equal(a, b, n), n, "op %d: same seed, different values", op);
        cr_assert_eq(count_equal(next, replay, n), n, "op %d: set_state did not replay", op);
        cr_assert(count_equal(a, next, n) < n * 9 / 10, "op %d: consecutive draws repeat", op);
        cr_assert(count_equal(a, c, n) < n * 9 / 10, "op %d: seeds 1234 and 1235 agree", op);
        free(a);
        free(next);
        free(b);
        free(replay);
        free(c);
        yt_generator_release(g1);
        yt_generator_release(g2);
        yt_generator_release(other);
    }
    YT_ASSERT_NO_LEAKS();
}

Test(random, default_generator_is_null_generator)
{
    /* passing yt_default_generator() is the same as passing NULL */
    const int64_t n = 1000;
    for (int op = 0; op < N_RANDOM_OPS; op++) {
        yt_manual_seed(77);
        double *a = take_values(draw_with(op, NULL, n));
        yt_manual_seed(77);
        double *b = take_values(draw_with(op, yt_default_generator(), n));
        cr_assert_eq(count_equal(a, b, n), n, "op %d", op);
        free(a);
        free(b);
    }
    YT_ASSERT_NO_LEAKS();
}

Test(creation, pytorch_corner_cases)
{
    const int64_t two = 2;
    yt_tensor *f = yt_full(&two, 1, yt_int(3));
    cr_assert_eq(yt_tensor_dtype(f), YT_DTYPE_I64);
    yt_release(f);
    f = yt_full(&two, 1, yt_bool(true));
    cr_assert_eq(yt_tensor_dtype(f), YT_DTYPE_BOOL);
    yt_release(f);
    f = yt_full(&two, 1, yt_float(0.5));
    cr_assert_eq(yt_tensor_dtype(f), YT_DTYPE_F32);
    yt_release(f);

    /* arange(0, 5.5, 1.5, dtype=i64) counts in truncated integers: [0, 1, 2, 3, 4] */
    yt_tensor *a =
        yt_arange_ex(yt_int(0), yt_float(5.5), yt_float(1.5), YT_DTYPE_I64, YT_DEVICE_NONE);
    cr_assert_not_null(a, "%s", yt_errmsg());
    cr_assert_eq(yt_tensor_numel(a), 5);
    double *v = values_of(a);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(v[i], i);
    free(v);
    yt_release(a);
    cr_assert_null(yt_arange_ex(yt_int(0), yt_int(3), yt_float(0.5), YT_DTYPE_I64, YT_DEVICE_NONE));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "arange: step must be nonzero");

    /* linspace: both ends exact; integral dtypes truncate */
    yt_tensor *l = yt_linspace_ex(yt_float(-1.0), yt_float(1.0), 5, YT_DTYPE_F64, YT_DEVICE_NONE);
    v = values_of(l);
    const double expect[5] = {-1, -0.5, 0, 0.5, 1};
    for (int i = 0; i < 5; i++)
        cr_assert_eq(v[i], expect[i], "linspace[%d] = %.17g", i, v[i]);
    free(v);
    yt_release(l);
    l = yt_linspace_ex(yt_int(0), yt_int(1), 5, YT_DTYPE_I64, YT_DEVICE_NONE);
    v = values_of(l);
    cr_assert(v[0] == 0 && v[3] == 0 && v[4] == 1);
    free(v);
    yt_release(l);

    yt_tensor *e = yt_eye_m(2, 3);
    v = values_of(e);
    const double eye[6] = {1, 0, 0, 0, 1, 0};
    for (int i = 0; i < 6; i++)
        cr_assert_eq(v[i], eye[i]);
    free(v);
    yt_release(e);
    cr_assert_null(yt_eye(-1));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "eye: n=-1");

    yt_tensor *x = yt_zeros_ex(&two, 1, YT_DTYPE_I32, YT_DEVICE_NONE);
    yt_tensor *o = yt_ones_like(x), *fl = yt_full_like_ex(x, yt_float(2.5), YT_DTYPE_F64);
    cr_assert_eq(yt_tensor_dtype(o), YT_DTYPE_I32);
    cr_assert_eq(yt_tensor_dtype(fl), YT_DTYPE_F64);
    yt_release(o);
    yt_release(fl);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}
