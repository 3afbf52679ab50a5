/* Runtime services: scopes (release at end, keep, nesting, misuse), the random generator
 * (reproducibility, ranges, moments), out= and in-place variants, the caching allocator, and the
 * per-thread live counters and grad mode. Nothing here depends on timing: threads meet at
 * barriers. Every test ends by proving that nothing leaked. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "test_util.h"

/* ---------------------------------------------------------------- scopes */

Test(scope, releases_everything_created_inside)
{
    const int64_t sizes[2] = {16, 16};
    cr_assert_eq(yt_scope_begin(), YT_OK, "%s", yt_errmsg());
    yt_tensor *a = yt_ones(sizes, 2);
    yt_tensor *b = yt_rand(sizes, 2);
    yt_tensor *c = yt_add(a, b);
    yt_tensor *d = yt_t(c);
    yt_tensor *e = yt_reshape(d, (const int64_t[]){256}, 1); /* a composite that copies */
    yt_tensor *f = yt_matmul(a, b);                          /* a composite over mm */
    yt_tensor *g = yt_sum(e);
    cr_assert_not_null(f, "%s", yt_errmsg());
    cr_assert_not_null(g, "%s", yt_errmsg());
    cr_assert_eq(yt_live_tensors(), 7, "7 results are alive, counted %lld",
                 (long long)yt_live_tensors());
    cr_assert_eq(yt_scope_end(), YT_OK, "%s", yt_errmsg());
    YT_ASSERT_NO_LEAKS();
}

Test(scope, keep_moves_a_tensor_to_the_caller)
{
    const int64_t n = 4;
    cr_assert_eq(yt_scope_begin(), YT_OK);
    yt_tensor *tmp = yt_ones(&n, 1);
    yt_tensor *kept = yt_scope_keep(yt_mul_scalar(tmp, yt_float(3)));
    cr_assert_eq(yt_scope_end(), YT_OK);
    cr_assert_eq(yt_live_tensors(), 1, "only the kept tensor survives, counted %lld",
                 (long long)yt_live_tensors());
    double got[4];
    cr_assert_eq(yt_tensor_copy_to(kept, got, sizeof got, YT_DTYPE_F64), YT_OK);
    for (int i = 0; i < 4; i++)
        cr_assert(got[i] == 3.0, "element %d is %g, expected 3", i, got[i]);
    yt_release(kept); /* the caller owns it now */
    YT_ASSERT_NO_LEAKS();
}

Test(scope, nested_scopes_and_keep_to_parent)
{
    const int64_t n = 8;
    cr_assert_eq(yt_scope_begin(), YT_OK);
    yt_tensor *outer = yt_zeros(&n, 1);
    cr_assert_eq(yt_scope_begin(), YT_OK);
    yt_tensor *inner = yt_ones(&n, 1);
    yt_tensor *up = yt_scope_keep(yt_add(outer, inner));
    cr_assert_eq(yt_live_tensors(), 3);
    cr_assert_eq(yt_scope_end(), YT_OK);
    /* the inner temporary is gone; the kept one now belongs to the outer scope */
    cr_assert_eq(yt_live_tensors(), 2, "after the inner scope: %lld alive",
                 (long long)yt_live_tensors());
    cr_assert(yt_item(yt_sum(up)) == 8.0, "kept tensor sums to %g", yt_item(yt_sum(up)));
    /* keeping a tensor the scope does not own is a no-op */
    yt_tensor *mine = yt_ones(&n, 1);
    cr_assert_eq(yt_scope_keep(mine), mine);
    cr_assert_null(yt_scope_keep(NULL));
    cr_assert_eq(yt_scope_end(), YT_OK);
    cr_assert_eq(yt_live_tensors(), 1, "only the twice-kept tensor is alive, counted %lld",
                 (long long)yt_live_tensors());
    cr_assert_eq(yt_scope_keep(mine), mine, "keep outside any scope returns its argument");
    yt_release(mine);
    YT_ASSERT_NO_LEAKS();
}

Test(scope, retained_tensor_outlives_its_scope)
{
    const int64_t n = 2;
    cr_assert_eq(yt_scope_begin(), YT_OK);
    yt_tensor *t = yt_retain(yt_ones(&n, 1));
    cr_assert_eq(yt_scope_end(), YT_OK);
    cr_assert_eq(yt_tensor_numel(t), 2);
    yt_release(t);
    YT_ASSERT_NO_LEAKS();
}

Test(scope, end_without_begin_is_a_state_error)
{
    cr_assert_eq(yt_scope_end(), YT_ERR_STATE);
    YT_ASSERT_ERROR(YT_ERR_STATE, "yt_scope_end: no scope is open");
    cr_assert_eq(yt_scope_begin(), YT_OK);
    cr_assert_eq(yt_scope_end(), YT_OK);
    cr_assert_eq(yt_scope_end(), YT_ERR_STATE);
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- random numbers */

/* n values of `t` as doubles (malloc'ed). */
static double *
values_of(yt_tensor *t)
{
    cr_assert_not_null(t, "%s", yt_errmsg());
    int64_t n = yt_tensor_numel(t);
    double *v = malloc((size_t)n * sizeof *v);
    cr_assert_not_null(v);
    cr_assert_eq(yt_tensor_copy_to(t, v, (size_t)n * sizeof *v, YT_DTYPE_F64), YT_OK, "%s",
                 yt_errmsg());
    return v;
}

Test(rng, manual_seed_makes_draws_reproducible)
{
    const yt_dtype dtypes[2] = {YT_DTYPE_F32, YT_DTYPE_F64};
    const int64_t n = 1001; /* odd: the last Box-Muller pair is cut */
    for (int k = 0; k < 2; k++) {
        for (int normal = 0; normal < 2; normal++) {
            yt_tensor *(*draw)(const int64_t *, int, yt_generator *, yt_dtype, yt_device) =
                normal ? yt_randn_ex : yt_rand_ex;
            yt_manual_seed(42);
            yt_tensor *a = draw(&n, 1, NULL, dtypes[k], YT_DEVICE_CPU);
            yt_tensor *a2 = draw(&n, 1, NULL, dtypes[k], YT_DEVICE_CPU);
            yt_manual_seed(42);
            yt_tensor *b = draw(&n, 1, NULL, dtypes[k], YT_DEVICE_CPU);
            yt_tensor *b2 = draw(&n, 1, NULL, dtypes[k], YT_DEVICE_CPU);
            yt_manual_seed(43);
            yt_tensor *c = draw(&n, 1, NULL, dtypes[k], YT_DEVICE_CPU);
            double *va = values_of(a), *va2 = values_of(a2), *vb = values_of(b),
                   *vb2 = values_of(b2), *vc = values_of(c);
            int64_t same_next = 0, same_seed = 0;
            for (int64_t i = 0; i < n; i++) {
                cr_assert(va[i] == vb[i] && va2[i] == vb2[i],
                          "%s %s: element %lld differs after reseeding: %.17g vs %.17g",
                          yt_dtype_name(dtypes[k]), normal ? "randn" : "rand", (long long)i, va[i],
                          vb[i]);
                same_next += va[i] == va2[i];
                same_seed += va[i] == vc[i];
            }
            cr_assert(same_next < 10, "two successive draws share %lld of %lld values",
                      (long long)same_next, (long long)n);
            cr_assert(same_seed < 10, "seeds 42 and 43 share %lld of %lld values",
                      (long long)same_seed, (long long)n);
            free(vc);
            free(vb2);
            free(vb);
            free(va2);
            free(va);
            yt_release(c);
            yt_release(b2);
            yt_release(b);
            yt_release(a2);
            yt_release(a);
        }
    }
    YT_ASSERT_NO_LEAKS();
}

Test(rng, rand_is_in_zero_one_for_every_floating_dtype)
{
    const yt_dtype dtypes[4] = {YT_DTYPE_F16, YT_DTYPE_BF16, YT_DTYPE_F32, YT_DTYPE_F64};
    const int64_t n = 100000;
    yt_manual_seed(7);
    for (int k = 0; k < 4; k++) {
        yt_tensor *t = yt_rand_ex(&n, 1, NULL, dtypes[k], YT_DEVICE_CPU);
        cr_assert_eq(yt_tensor_dtype(t), dtypes[k]);
        double *v = values_of(t);
        double lo = 1, hi = 0, sum = 0;
        for (int64_t i = 0; i < n; i++) {
            cr_assert(v[i] >= 0.0 && v[i] < 1.0, "%s rand element %lld is %.17g, outside [0, 1)",
                      yt_dtype_name(dtypes[k]), (long long)i, v[i]);
            lo = fmin(lo, v[i]);
            hi = fmax(hi, v[i]);
            sum += v[i];
        }
        double mean = sum / (double)n;
        cr_assert(fabs(mean - 0.5) < 0.01, "%s rand mean %.6f", yt_dtype_name(dtypes[k]), mean);
        cr_assert(lo < 0.01 && hi > 0.99, "%s rand spans only [%.6f, %.6f]",
                  yt_dtype_name(dtypes[k]), lo, hi);
        free(v);
        yt_release(t);
    }
    /* the default dtype is f32 */
    const int64_t two = 2;
    yt_tensor *d = yt_rand(&two, 1);
    cr_assert_eq(yt_tensor_dtype(d), YT_DTYPE_F32);
    yt_release(d);
    YT_ASSERT_NO_LEAKS();
}

Test(rng, randn_has_mean_zero_and_unit_std)
{
    const yt_dtype dtypes[2] = {YT_DTYPE_F32, YT_DTYPE_F64};
    const int64_t n = 100000;
    yt_manual_seed(1234);
    for (int k = 0; k < 2; k++) {
        yt_tensor *t = yt_randn_ex(&n, 1, NULL, dtypes[k], YT_DEVICE_CPU);
        double *v = values_of(t);
        double sum = 0, sq = 0;
        for (int64_t i = 0; i < n; i++) {
            cr_assert(isfinite(v[i]), "%s randn element %lld is %g", yt_dtype_name(dtypes[k]),
                      (long long)i, v[i]);
            sum += v[i];
        }
        double mean = sum / (double)n;
        for (int64_t i = 0; i < n; i++)
            sq += (v[i] - mean) * (v[i] - mean);
        double std = sqrt(sq / (double)(n - 1));
        cr_assert(fabs(mean) < 0.02, "%s randn mean %.6f, expected 0 +- 0.02",
                  yt_dtype_name(dtypes[k]), mean);
        cr_assert(fabs(std - 1.0) < 0.02, "%s randn std %.6f, expected 1 +- 0.02",
                  yt_dtype_name(dtypes[k]), std);
        free(v);
        yt_release(t);
    }
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- out= and in-place */

Test(variants, add_out_writes_into_the_given_tensor)
{
    const double av[3] = {1, 2, 3}, bv[3] = {10, 20, 30};
    const int64_t n = 3;
    yt_tensor *a = yt_tensor_from_data(av, &n, 1, YT_DTYPE_F64);
    yt_tensor *b = yt_tensor_from_data(bv, &n, 1, YT_DTYPE_F64);
    yt_tensor *out = yt_zeros_ex(&n, 1, YT_DTYPE_F64, YT_DEVICE_CPU);
    void *data = yt_tensor_data(out);
    uint64_t v0 = yt_tensor_version(out);
    cr_assert_eq(yt_add_out(out, a, b), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(yt_tensor_data(out), data, "out= must write in place");
    cr_assert_eq(yt_tensor_version(out), v0 + 1, "version %llu, expected %llu",
                 (unsigned long long)yt_tensor_version(out), (unsigned long long)(v0 + 1));
    cr_assert_eq(yt_tensor_version(a), 0, "inputs are not written");
    const double *o = data;
    cr_assert(o[0] == 11 && o[1] == 22 && o[2] == 33, "out holds %g %g %g", o[0], o[1], o[2]);

    /* an f32 result cast into an f64 out, and alpha */
    yt_tensor *a32 = yt_to(a, YT_DTYPE_F32);
    cr_assert_eq(yt_add_ex_out(out, a32, a32, yt_int(-3)), YT_OK, "%s", yt_errmsg());
    cr_assert(o[0] == -2 && o[1] == -4 && o[2] == -6, "out holds %g %g %g", o[0], o[1], o[2]);
    cr_assert_eq(yt_tensor_version(out), v0 + 2);

    /* out= into a strided view writes only the viewed elements */
    const int64_t six = 6;
    yt_tensor *big = yt_zeros_ex(&six, 1, YT_DTYPE_F64, YT_DEVICE_CPU);
    yt_tensor *every_other = yt_slice_ex(big, 0, 0, YT_NONE, 2);
    cr_assert_eq(yt_add_out(every_other, a, b), YT_OK, "%s", yt_errmsg());
    double got[6];
    cr_assert_eq(yt_tensor_copy_to(big, got, sizeof got, YT_DTYPE_F64), YT_OK);
    const double expect[6] = {11, 0, 22, 0, 33, 0};
    for (int i = 0; i < 6; i++)
        cr_assert(got[i] == expect[i], "element %d is %g, expected %g", i, got[i], expect[i]);

    yt_release(every_other);
    yt_release(big);
    yt_release(a32);
    yt_release(out);
    yt_release(b);
    yt_release(a);
    YT_ASSERT_NO_LEAKS();
}

Test(variants, inplace_add_broadcasts_and_bumps_version)
{
    const int64_t sizes[2] = {2, 3}, n = 3;
    const float rv[3] = {1, 2, 3};
    yt_tensor *m = yt_zeros(sizes, 2);
    yt_tensor *row = yt_tensor_from_data(rv, &n, 1, YT_DTYPE_F32);
    void *data = yt_tensor_data(m);
    cr_assert_eq(yt_add_(m, row), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(yt_add_scalar_(m, yt_int(1)), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(yt_tensor_data(m), data);
    cr_assert_eq(yt_tensor_version(m), 2);
    const float *p = data;
    const float expect[6] = {2, 3, 4, 2, 3, 4};
    for (int i = 0; i < 6; i++)
        cr_assert(p[i] == expect[i], "element %d is %g, expected %g", i, (double)p[i],
                  (double)expect[i]);
    /* self cannot be broadcast to a larger result */
    cr_assert_eq(yt_add_(row, m), YT_ERR_SHAPE);
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "add_: self has shape [3] but the result has shape [2, 3]");
    yt_release(row);
    yt_release(m);
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- allocator */

Test(allocator, reuses_blocks_and_trims)
{
    const int64_t sizes[2] = {37, 53};
    for (int i = 0; i < 1000; i++) {
        yt_tensor *t = yt_zeros(sizes, 2);
        cr_assert_not_null(t, "iteration %d: %s", i, yt_errmsg());
        cr_assert_eq(yt_live_bytes(), 37 * 53 * 4, "iteration %d: %lld live bytes", i,
                     (long long)yt_live_bytes());
        yt_release(t);
        cr_assert_eq(yt_live_bytes(), 0, "iteration %d: %lld live bytes after release", i,
                     (long long)yt_live_bytes());
    }
    /* many at once, then freed out of order */
    yt_tensor *many[64];
    for (int i = 0; i < 64; i++)
        many[i] = yt_full(sizes, 2, yt_int(i));
    for (int i = 0; i < 64; i += 2)
        yt_release(many[i]);
    yt_allocator_trim();
    for (int i = 1; i < 64; i += 2) {
        yt_tensor *last = yt_select(many[i], 0, -1);
        yt_tensor *elem = yt_select(last, 0, -1);
        cr_assert(yt_item(elem) == i, "tensor %d holds %g after trim", i, yt_item(elem));
        yt_release(elem);
        yt_release(last);
        yt_release(many[i]);
    }
    yt_allocator_trim();
    yt_allocator_trim(); /* twice, with nothing cached, is harmless */
    yt_tensor *again = yt_ones(sizes, 2);
    yt_tensor *total = yt_sum(again);
    cr_assert(yt_item(total) == 37 * 53, "sum after trim is %g", yt_item(total));
    yt_release(total);
    yt_release(again);
    YT_ASSERT_NO_LEAKS();
}

/* A freed block of 1 MiB or more is cached at its footprint, whole 2 MiB pages: a 2.5 MiB
 * tensor's block (class 2.5 MiB) holds 4 MiB, a 1 MiB one 2 MiB; a 700 KiB one (class 768 KiB)
 * holds its class size. */
Test(allocator, caches_large_blocks_at_their_huge_page_footprint)
{
    const int64_t n = (5 << 20) / 2 / 4; /* 2.5 MiB of f32 */
    yt_allocator_trim();
    int64_t before = yt_allocator_cached_bytes();
    yt_tensor *t = yt_zeros(&n, 1);
    cr_assert_not_null(t, "%s", yt_errmsg());
    yt_release(t);
#if defined(__SANITIZE_ADDRESS__)
    cr_assert(before == 0 && yt_allocator_cached_bytes() == 0, "sanitizer builds cache nothing");
#else
    cr_assert_eq(yt_allocator_cached_bytes() - before, 4 << 20, "cached %lld bytes, had %lld",
                 (long long)yt_allocator_cached_bytes(), (long long)before);
    t = yt_zeros(&n, 1); /* the cached block comes back */
    cr_assert_not_null(t, "%s", yt_errmsg());
    cr_assert_eq(yt_allocator_cached_bytes(), before, "cached %lld bytes after reuse",
                 (long long)yt_allocator_cached_bytes());
    yt_release(t);
    const int64_t sizes[2] = {(1 << 20) / 4, 700 * 1024 / 4}, held[2] = {2 << 20, 768 * 1024};
    for (int i = 0; i < 2; i++) {
        yt_allocator_trim();
        yt_tensor *u = yt_zeros(&sizes[i], 1);
        cr_assert_not_null(u, "%s", yt_errmsg());
        yt_release(u);
        cr_assert_eq(yt_allocator_cached_bytes(), held[i], "%lld bytes: cached %lld",
                     (long long)sizes[i] * 4, (long long)yt_allocator_cached_bytes());
    }
#endif
    yt_allocator_trim();
    cr_assert_eq(yt_allocator_cached_bytes(), 0, "cached %lld bytes after trim",
                 (long long)yt_allocator_cached_bytes());
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- threads */

typedef struct worker_arg {
    pthread_barrier_t *barrier;
    double sum;         /* the result, checked by the main thread */
    yt_tensor *handoff; /* a tensor left for the main thread to release */
    bool grad_enabled_after_barrier;
    bool recorded;
} worker_arg;

/* 10k adds on small tensors, each result released at once. */
static void *
add_worker(void *p)
{
    worker_arg *arg = p;
    const int64_t n = 8;
    yt_tensor *acc = yt_zeros(&n, 1);
    yt_tensor *one = yt_ones(&n, 1);
    pthread_barrier_wait(arg->barrier); /* both threads run at the same time */
    for (int i = 0; i < 10000; i++) {
        yt_tensor *next = yt_add(acc, one);
        yt_release(acc);
        acc = next;
    }
    yt_tensor *total = yt_sum(acc);
    arg->sum = yt_item(total);
    yt_release(total);
    yt_release(one);
    arg->handoff = acc; /* allocated here, freed by the main thread */
    return NULL;
}

Test(threads, live_counters_balance_across_threads)
{
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, 2);
    worker_arg args[2] = {{.barrier = &barrier}, {.barrier = &barrier}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        cr_assert_eq(pthread_create(&th[i], NULL, add_worker, &args[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&barrier);
    for (int i = 0; i < 2; i++)
        cr_assert(args[i].sum == 80000.0, "thread %d summed %g, expected 80000", i, args[i].sum);
    /* the exited threads' counts are still part of the totals */
    cr_assert_eq(yt_live_tensors(), 2, "2 handed-off tensors, counted %lld",
                 (long long)yt_live_tensors());
    cr_assert_eq(yt_live_bytes(), 2 * 8 * 4, "%lld live bytes", (long long)yt_live_bytes());
    yt_release(args[0].handoff);
    yt_release(args[1].handoff);
    YT_ASSERT_NO_LEAKS();
}

/* Turns grad mode off in this thread only, then records whether it stayed off. */
static void *
no_grad_worker(void *p)
{
    worker_arg *arg = p;
    yt_set_grad_enabled(false);
    pthread_barrier_wait(arg->barrier); /* 1: grad is off here */
    pthread_barrier_wait(arg->barrier); /* 2: the main thread has recorded an op */
    const double v = 2;
    yt_tensor *x = yt_tensor_from_data(&v, NULL, 0, YT_DTYPE_F64);
    yt_set_requires_grad(x, true);
    yt_tensor *y = yt_mul(x, x);
    arg->grad_enabled_after_barrier = yt_grad_enabled();
    arg->recorded = yt_requires_grad(y);
    yt_release(y);
    yt_release(x);
    return NULL;
}

Test(threads, grad_mode_is_per_thread)
{
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, 2);
    worker_arg arg = {.barrier = &barrier};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, no_grad_worker, &arg), 0);
    pthread_barrier_wait(&barrier); /* 1 */
    cr_assert(yt_grad_enabled(), "another thread's no-grad leaked into this one");
    const double v = 3;
    yt_tensor *x = yt_tensor_from_data(&v, NULL, 0, YT_DTYPE_F64);
    cr_assert_eq(yt_set_requires_grad(x, true), YT_OK);
    yt_tensor *y = yt_mul(x, x);
    cr_assert(yt_requires_grad(y), "ops here are still recorded");
    pthread_barrier_wait(&barrier); /* 2 */
    pthread_join(th, NULL);
    pthread_barrier_destroy(&barrier);
    cr_assert(!arg.grad_enabled_after_barrier, "the worker's no-grad was undone");
    cr_assert(!arg.recorded, "the worker recorded an op under no-grad");
    cr_assert(yt_grad_enabled());
    yt_release(y);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

Test(threads, errors_are_per_thread)
{
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, 2);
    worker_arg arg = {.barrier = &barrier};
    const int64_t neg = -1;
    cr_assert_null(yt_zeros(&neg, 1));
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, add_worker, &arg), 0);
    pthread_barrier_wait(&barrier);
    pthread_join(th, NULL);
    pthread_barrier_destroy(&barrier);
    /* the worker's successful calls did not touch this thread's record */
    YT_ASSERT_ERROR(YT_ERR_VALUE, "zeros: size[0]=-1 is negative");
    yt_release(arg.handoff);
    YT_ASSERT_NO_LEAKS();
}
