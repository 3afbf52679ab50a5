/* The thread setting (yt_set_num_threads / yt_get_num_threads: one count for the process, its
 * default from OMP_NUM_THREADS or the CPUs, refusals), and the kernels that moved from OpenMP
 * loops to the kernel pool giving the same bits at 1, 2 and 3 threads on sizes above their
 * thread thresholds: conv2d's strided (im2col) path and both of its backward ops, the random
 * draws, cumsum, cat, argmax / argmin and max / min along a dim. The pool is told to split every
 * job it would not refuse for its size (yt__parallel_set_always), so each run takes the
 * multi-threaded path whatever the machine's load. */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "test_util.h"

void yt__parallel_set_always(bool on); /* runtime/parallel.h */

/* ---------------------------------------------------------------- the setting */

/* In a child process, with OMP_NUM_THREADS = `env` (NULL: unset), the first yt_get_num_threads
 * (mod 256, an exit status). */
static int
child_default(const char *env)
{
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        if (env != NULL)
            setenv("OMP_NUM_THREADS", env, 1);
        else
            unsetenv("OMP_NUM_THREADS");
        _exit(yt_get_num_threads() & 255);
    }
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status));
    return WEXITSTATUS(status);
}

Test(threads, default_is_omp_num_threads_else_the_cpus)
{
    /* Criterion runs each test in a process of its own, and nothing here has read the setting
     * yet: each child starts with none */
    cpu_set_t set;
    cr_assert_eq(sched_getaffinity(0, sizeof set, &set), 0);
    int cpus = CPU_COUNT(&set) & 255;
    cr_assert_eq(child_default("3"), 3);
    cr_assert_eq(child_default(" 5"), 5);
    cr_assert_eq(child_default("2,1"), 2); /* OpenMP's per-level list: the first level */
    cr_assert_eq(child_default(NULL), cpus);
    cr_assert_eq(child_default("0"), cpus);
    cr_assert_eq(child_default("-2"), cpus);
    cr_assert_eq(child_default("four"), cpus);
    cr_assert_eq(child_default("4x"), cpus);
    cr_assert_eq(child_default(""), cpus);
    YT_ASSERT_NO_LEAKS();
}

static void *
read_and_set(void *arg)
{
    int *seen = arg;
    *seen = yt_get_num_threads();
    yt_set_num_threads(5);
    return NULL;
}

/* The sum of 2 + 3 over n elements, through the pool (forced to split). */
static double
pooled_sum(int64_t n)
{
    yt__parallel_set_always(true);
    const int64_t sizes[1] = {n};
    yt_tensor *x = yt_full(sizes, 1, yt_float(2)), *y = yt_full(sizes, 1, yt_float(3));
    yt_tensor *z = yt_add(x, y), *total = yt_sum(z);
    const double sum = total != NULL ? yt_item(total) : -1;
    yt_release(total);
    yt_release(z);
    yt_release(y);
    yt_release(x);
    yt__parallel_set_always(false);
    return sum;
}

/* A child forked after the pool has started has none of its workers: it must still compute
 * through the pool and exit, where the library now joins its workers (runtime/parallel.c,
 * stop_workers), without waiting on the parent's. (forget_workers also lets the child start
 * workers of its own rather than count the parent's and run its jobs alone; that this test does
 * not see: with glibc, joining the parent's threads in the child returned at once.) */
Test(threads, a_forked_child_runs_its_own_workers_and_exits)
{
    cr_assert_eq(yt_set_num_threads(2), YT_OK);
    cr_assert_eq(pooled_sum(100000), 500000.0);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        alarm(20); /* a hang ends as SIGALRM, not a stuck test */
        exit(pooled_sum(100000) == 500000.0 ? 0 : 1);
    }
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status), "the child did not exit (signal %d)",
              WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    cr_assert_eq(WEXITSTATUS(status), 0, "the child's sum was wrong");
    cr_assert_eq(pooled_sum(100000), 500000.0);
    YT_ASSERT_NO_LEAKS();
}

Test(threads, set_get_round_trip_refusals_and_one_setting_for_the_process)
{
    int saved = yt_get_num_threads();
    cr_assert_geq(saved, 1);
    static const int counts[] = {1, 2, 3, 7, 64, 1};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        cr_assert_eq(yt_set_num_threads(counts[i]), YT_OK);
        cr_assert_eq(yt_get_num_threads(), counts[i]);
    }
    cr_assert_eq(yt_set_num_threads(3), YT_OK);
    cr_assert_eq(yt_set_num_threads(0), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "set_num_threads: threads=0 must be at least 1");
    cr_assert_eq(yt_set_num_threads(-4), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "set_num_threads: threads=-4 must be at least 1");
    cr_assert_eq(yt_get_num_threads(), 3, "a refused count changed the setting");
    /* another thread sees this thread's setting, and its own reaches this thread */
    pthread_t t;
    int seen = 0;
    cr_assert_eq(pthread_create(&t, NULL, read_and_set, &seen), 0);
    pthread_join(t, NULL);
    cr_assert_eq(seen, 3);
    cr_assert_eq(yt_get_num_threads(), 5);
    yt_set_num_threads(saved);
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- same bits at 1, 2, 3 threads */

/* The raw bytes of `t` (released) in its own dtype; *bytes gets their count. */
static unsigned char *
raw_bytes(yt_tensor *t, size_t *bytes)
{
    cr_assert_not_null(t, "%s", yt_errmsg());
    yt_dtype dtype = yt_tensor_dtype(t);
    *bytes = (size_t)yt_tensor_numel(t) * yt_dtype_size(dtype);
    unsigned char *v = malloc(*bytes + 1);
    cr_assert_eq(yt_tensor_copy_to(t, v, *bytes, dtype), YT_OK, "%s", yt_errmsg());
    yt_release(t);
    return v;
}

typedef yt_tensor *(*compute_fn)(int variant);

/* Runs compute(variant) at 1 thread, then 2 and 3, and asserts the same bytes each time. */
static void
assert_same_bits(compute_fn compute, int variant, const char *what)
{
    int saved = yt_get_num_threads();
    yt__parallel_set_always(true);
    yt_set_num_threads(1);
    size_t n1;
    unsigned char *one = raw_bytes(compute(variant), &n1);
    for (int threads = 2; threads <= 3; threads++) {
        yt_set_num_threads(threads);
        size_t n;
        unsigned char *many = raw_bytes(compute(variant), &n);
        cr_assert_eq(n, n1, "%s (variant %d): %zu bytes at %d threads, %zu at 1", what, variant, n,
                     threads, n1);
        size_t at = 0;
        while (at < n && many[at] == one[at])
            at++;
        cr_assert_eq(at, n, "%s (variant %d): %d threads differ from 1 at byte %zu of %zu", what,
                     variant, threads, at, n);
        free(many);
    }
    free(one);
    yt__parallel_set_always(false);
    yt_set_num_threads(saved);
}

/* Normal values of `sizes` in `dtype` from seed `seed`. */
static yt_tensor *
randn_of(uint64_t seed, const int64_t *sizes, int dim, yt_dtype dtype)
{
    yt_manual_seed(seed);
    yt_tensor *t = yt_randn_ex(sizes, dim, NULL, dtype, YT_DEVICE_NONE);
    cr_assert_not_null(t, "%s", yt_errmsg());
    return t;
}

/* conv2d with stride 2 (the im2col path): 16 images of 16 x 32 x 32 into 32 channels (3 x 3,
 * padding 1) is 18.9M multiply-adds, above the 2M from which images are spread over threads;
 * the grouped one doubles the output channels. variant = 3 * case + pass
 * (forward, backward_input, backward_weight); cases: f32, f64, f32 with groups = 2. */
static yt_tensor *
conv_pass(int variant)
{
    int which = variant / 3, pass = variant % 3;
    yt_dtype dtype = which == 1 ? YT_DTYPE_F64 : YT_DTYPE_F32;
    int64_t groups = which == 2 ? 2 : 1, o = 32 * groups;
    const int64_t xs[4] = {16, 16, 32, 32}, ws[4] = {o, 16 / groups, 3, 3};
    const int64_t gs[4] = {16, o, 16, 16}, bs[1] = {o};
    const int64_t stride[2] = {2, 2}, padding[2] = {1, 1}, dilation[2] = {1, 1};
    yt_tensor *x = randn_of(1, xs, 4, dtype), *w = randn_of(2, ws, 4, dtype);
    yt_tensor *b = randn_of(3, bs, 1, dtype), *gy = randn_of(4, gs, 4, dtype), *r;
    if (pass == 0)
        r = yt_conv2d_ex(x, w, b, stride, 2, padding, 2, dilation, 2, groups);
    else if (pass == 1)
        r = yt_conv2d_backward_input(gy, w, xs, 4, stride, 2, padding, 2, dilation, 2, groups);
    else
        r = yt_conv2d_backward_weight(gy, x, ws, 4, stride, 2, padding, 2, dilation, 2, groups);
    yt_release(x), yt_release(w), yt_release(b), yt_release(gy);
    return r;
}

Test(threads, conv2d_strided_and_its_backward_ops)
{
    for (int v = 0; v < 9; v++)
        assert_same_bits(conv_pass, v, "conv2d");
    YT_ASSERT_NO_LEAKS();
}

/* Each random op, 70001 elements (above the 32768 from which draws are split). */
static yt_tensor *
random_draw(int variant)
{
    const int64_t n = 70001;
    yt_dtype dtype = variant % 2 ? YT_DTYPE_F64 : YT_DTYPE_F32;
    yt_manual_seed(11);
    yt_tensor *like = yt_zeros_ex(&n, 1, dtype, YT_DEVICE_NONE), *p, *r = NULL;
    switch (variant / 2) {
    case 0:
        r = yt_rand_ex(&n, 1, NULL, dtype, YT_DEVICE_NONE);
        break;
    case 1:
        r = yt_randn_ex(&n, 1, NULL, dtype, YT_DEVICE_NONE);
        break;
    case 2:
        r = yt_uniform_ex(like, -3.0, 5.0, NULL);
        break;
    case 3:
        r = yt_normal_ex(like, 1.5, 0.5, NULL);
        break;
    case 4:
        r = yt_bernoulli_p_ex(like, 0.25, NULL);
        break;
    case 5:
        p = yt_rand_ex(&n, 1, NULL, dtype, YT_DEVICE_NONE); /* per-element probabilities */
        r = yt_bernoulli_ex(p, NULL);
        yt_release(p);
        break;
    case 6:
        r = yt_randint_low_ex(-7, 1000003, &n, 1, NULL, YT_DTYPE_I64, YT_DEVICE_NONE);
        break;
    default:
        r = yt_randperm_ex(n, NULL, YT_DTYPE_I64, YT_DEVICE_NONE);
        break;
    }
    yt_release(like);
    return r;
}

Test(threads, random_draws)
{
    for (int v = 0; v < 16; v++)
        assert_same_bits(random_draw, v, "random");
    YT_ASSERT_NO_LEAKS();
}

/* cumsum of 131072 elements (above the 32768 from which it splits) along each dim, in f32,
 * f64, i64 and f16 (converted through f64): [16, 2048, 4] takes column blocks along dim 0 and
 * runs along dims 1 and 2, where a thread's first run may start inside a group of 4 columns. */
static yt_tensor *
cumsum_of(int variant)
{
    static const yt_dtype dtypes[] = {YT_DTYPE_F32, YT_DTYPE_F64, YT_DTYPE_I64, YT_DTYPE_F16};
    const int64_t sizes[3] = {16, 2048, 4};
    yt_tensor *f = randn_of(5, sizes, 3, YT_DTYPE_F64);
    yt_tensor *scaled = yt_mul_scalar(f, yt_float(100.0)); /* integers of a useful range */
    yt_tensor *x = yt_to(scaled, dtypes[variant / 3]);
    yt_tensor *r = yt_cumsum(x, variant % 3);
    yt_release(f), yt_release(scaled), yt_release(x);
    return r;
}

Test(threads, cumsum)
{
    for (int v = 0; v < 12; v++)
        assert_same_bits(cumsum_of, v, "cumsum");
    YT_ASSERT_NO_LEAKS();
}

/* cat along dim 1 of [64, 40000] and [64, 1000] f32: the first input is 10 MB, above the 8 MiB
 * from which the copy of its 64 rows is split (variant 1: three inputs, the big one second). */
static yt_tensor *
cat_of(int variant)
{
    const int64_t big[2] = {64, 40000}, small[2] = {64, 1000};
    yt_tensor *a = randn_of(6, big, 2, YT_DTYPE_F32), *b = randn_of(7, small, 2, YT_DTYPE_F32);
    yt_tensor *r;
    if (variant == 0) {
        yt_tensor *list[2] = {a, b};
        r = yt_cat_ex(list, 2, 1);
    } else {
        yt_tensor *list[3] = {b, a, b};
        r = yt_cat_ex(list, 3, 1);
    }
    yt_release(a), yt_release(b);
    return r;
}

Test(threads, cat)
{
    for (int v = 0; v < 2; v++)
        assert_same_bits(cat_of, v, "cat");
    YT_ASSERT_NO_LEAKS();
}

/* argmax, argmin, max.dim (values, indices) and min.dim over dim 1 of [64, 512, 64] (2M
 * elements, 64 output blocks), in f32, f64 and i64 (whose many ties take the first index). */
static yt_tensor *
index_reduce_of(int variant)
{
    static const yt_dtype dtypes[] = {YT_DTYPE_F32, YT_DTYPE_F64, YT_DTYPE_I64};
    const int64_t sizes[3] = {64, 512, 64};
    yt_tensor *f = randn_of(8, sizes, 3, YT_DTYPE_F64);
    yt_tensor *scaled = yt_mul_scalar(f, yt_float(10.0));
    yt_tensor *x = yt_to(scaled, dtypes[variant / 6]);
    yt_tensor *r = NULL, *values = NULL, *indices = NULL;
    switch (variant % 6) {
    case 0:
        r = yt_argmax_ex(x, 1, false);
        break;
    case 1:
        r = yt_argmin_ex(x, 1, true);
        break;
    case 2:
    case 3:
        cr_assert_eq(yt_max_dim(x, 1, &values, &indices), YT_OK, "%s", yt_errmsg());
        break;
    default:
        cr_assert_eq(yt_min_dim(x, 1, &values, &indices), YT_OK, "%s", yt_errmsg());
        break;
    }
    if (values != NULL) {
        r = variant % 2 ? indices : values;
        yt_release(variant % 2 ? values : indices);
    }
    yt_release(f), yt_release(scaled), yt_release(x);
    return r;
}

Test(threads, argmax_argmin_max_min_along_a_dim)
{
    for (int v = 0; v < 18; v++)
        assert_same_bits(index_reduce_of, v, "index reduce");
    YT_ASSERT_NO_LEAKS();
}
