/* Shared helpers for the Criterion unit tests. */
#ifndef YT_TEST_UTIL_H
#define YT_TEST_UTIL_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <yaten.h>

/* Every test ends by proving that nothing leaked: no live tensor handles and no live storage
 * bytes (libuv's MAKE_VALGRIND_HAPPY). Clears the thread's error first so a message from an
 * expected failure does not linger into the next test. */
#define YT_ASSERT_NO_LEAKS()                                                                       \
    do {                                                                                           \
        yt_clear_error();                                                                          \
        cr_assert_eq(yt_live_tensors(), 0, "leak: %lld tensors still alive",                       \
                     (long long)yt_live_tensors());                                                \
        cr_assert_eq(yt_live_bytes(), 0, "leak: %lld bytes of storage still alive",                \
                     (long long)yt_live_bytes());                                                  \
    } while (0)

/* Asserts that the last call failed with `code` and that its message starts with `prefix`. */
#define YT_ASSERT_ERROR(code, prefix)                                                              \
    do {                                                                                           \
        cr_assert_eq(yt_errcode(), (code), "expected %s, got %s (%s)", yt_status_name(code),       \
                     yt_status_name(yt_errcode()), yt_errmsg());                                   \
        cr_assert(strncmp(yt_errmsg(), (prefix), strlen(prefix)) == 0,                             \
                  "message '%s' does not start with '%s'", yt_errmsg(), (prefix));                 \
    } while (0)

/* Tensors from literal values (made in f64, then converted to `dtype`), and exact value checks. */
static inline yt_tensor *
test_from(const double *v, const int64_t *sizes, int nd, yt_dtype dtype)
{
    yt_tensor *f = yt_tensor_from_data(v, sizes, nd, YT_DTYPE_F64);
    cr_assert_not_null(f, "%s", yt_errmsg());
    yt_tensor *t = dtype == YT_DTYPE_F64 ? yt_retain(f) : yt_to(f, dtype);
    yt_release(f);
    return t;
}

/* 0, 1, 2, ... in a tensor of `sizes`. */
static inline yt_tensor *
test_iota(const int64_t *sizes, int nd)
{
    int64_t n = 1;
    for (int i = 0; i < nd; i++)
        n *= sizes[i];
    double *v = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; i < n; i++)
        v[i] = (double)i;
    yt_tensor *t = test_from(v, sizes, nd, YT_DTYPE_F64);
    free(v);
    return t;
}

/* Asserts that `t` is not NULL and has exactly `sizes`. */
static inline void
test_expect_sizes(yt_tensor *t, const int64_t *sizes, int nd)
{
    cr_assert_not_null(t, "%s", yt_errmsg());
    cr_assert_eq(yt_tensor_dim(t), nd, "rank %d, expected %d", yt_tensor_dim(t), nd);
    for (int i = 0; i < nd; i++)
        cr_assert_eq(yt_tensor_size(t, i), sizes[i], "size(%d)=%lld, expected %lld", i,
                     (long long)yt_tensor_size(t, i), (long long)sizes[i]);
}

/* The elements of `t` as a malloc'ed f64 array (free it), their count in *n. */
static inline double *
test_values(yt_tensor *t, int64_t *n)
{
    cr_assert_not_null(t, "%s", yt_errmsg());
    *n = yt_tensor_numel(t);
    double *v = malloc(sizeof(double) * (size_t)(*n > 0 ? *n : 1));
    cr_assert_eq(yt_tensor_copy_to(t, v, sizeof(double) * (size_t)*n, YT_DTYPE_F64), YT_OK, "%s",
                 yt_errmsg());
    return v;
}

/* Largest |a - b| over the elements of two tensors of the same size. */
static inline double
test_max_abs_diff(yt_tensor *a, yt_tensor *b)
{
    int64_t n, m;
    double *x = test_values(a, &n), *y = test_values(b, &m), d = 0;
    cr_assert_eq(n, m, "%lld elements against %lld", (long long)n, (long long)m);
    for (int64_t i = 0; i < n; i++)
        d = fmax(d, fabs(x[i] - y[i]));
    free(x);
    free(y);
    return d;
}

static inline void
test_expect_values(yt_tensor *t, const double *want, int64_t n, const int64_t *sizes, int nd)
{
    test_expect_sizes(t, sizes, nd);
    cr_assert_eq(yt_tensor_numel(t), n);
    double *got = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    cr_assert_eq(yt_tensor_copy_to(t, got, sizeof(double) * (size_t)n, YT_DTYPE_F64), YT_OK);
    for (int64_t i = 0; i < n; i++)
        cr_assert(got[i] == want[i] || (isnan(got[i]) && isnan(want[i])),
                  "element %lld is %g, expected %g", (long long)i, got[i], want[i]);
    free(got);
}

#endif
