/* Tensors: 0-d and zero-size tensors through factories, reductions and mm; accessors with
 * negative and out-of-range dims; yt_item; the exact text of yt_tensor_print; and views
 * (transpose, permute, slice, select, expand, unsqueeze, view) sharing storage and the version
 * counter with their base. Every test ends by proving that nothing leaked. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "test_util.h"

/* An f32 tensor of `values` with `sizes`. */
static yt_tensor *
tensor_f32(const float *values, const int64_t *sizes, int dim)
{
    yt_tensor *t = yt_tensor_from_data(values, sizes, dim, YT_DTYPE_F32);
    cr_assert_not_null(t, "tensor_from_data: %s", yt_errmsg());
    return t;
}

/* Asserts that `t` holds `expect` (n values, row-major) and has `dim` dims with `sizes`. */
static void
assert_values(yt_tensor *t, const int64_t *sizes, int dim, const double *expect, int64_t n)
{
    cr_assert_not_null(t, "%s", yt_errmsg());
    cr_assert_eq(yt_tensor_dim(t), dim, "dim is %d, expected %d", yt_tensor_dim(t), dim);
    for (int i = 0; i < dim; i++)
        cr_assert_eq(yt_tensor_size(t, i), sizes[i], "size(%d) is %lld, expected %lld", i,
                     (long long)yt_tensor_size(t, i), (long long)sizes[i]);
    cr_assert_eq(yt_tensor_numel(t), n, "numel is %lld, expected %lld",
                 (long long)yt_tensor_numel(t), (long long)n);
    double got[64];
    cr_assert(n <= 64);
    cr_assert_eq(yt_tensor_copy_to(t, got, sizeof got, YT_DTYPE_F64), YT_OK, "%s", yt_errmsg());
    for (int64_t i = 0; i < n; i++) {
        bool same = isnan(expect[i]) ? isnan(got[i]) : got[i] == expect[i];
        cr_assert(same, "element %lld is %.17g, expected %.17g", (long long)i, got[i], expect[i]);
    }
}

/* ---------------------------------------------------------------- 0-d and zero-size */

Test(tensor, zero_dim_tensors)
{
    const float v = 2.5f;
    yt_tensor *s = tensor_f32(&v, NULL, 0);
    cr_assert_eq(yt_tensor_dim(s), 0);
    cr_assert_eq(yt_tensor_numel(s), 1);
    cr_assert(yt_tensor_is_contiguous(s));
    cr_assert(yt_item(s) == 2.5, "item is %.17g", yt_item(s));

    yt_tensor *sq = yt_mul(s, s);
    assert_values(sq, NULL, 0, (const double[]){6.25}, 1);
    yt_tensor *sum = yt_sum(s);
    assert_values(sum, NULL, 0, (const double[]){2.5}, 1);
    /* dim 0 and -1 name the only "dim" of a 0-d tensor in reductions, as in PyTorch */
    const int64_t d = -1;
    yt_tensor *sum_d = yt_sum_dim(s, &d, 1);
    assert_values(sum_d, NULL, 0, (const double[]){2.5}, 1);
    yt_tensor *u = yt_unsqueeze(s, 0);
    const int64_t one = 1;
    assert_values(u, &one, 1, (const double[]){2.5}, 1);
    yt_tensor *st = yt_scalar_tensor(yt_int(7), YT_DTYPE_NONE);
    cr_assert_eq(yt_tensor_dtype(st), YT_DTYPE_I64, "scalar_tensor(int) has dtype %s",
                 yt_dtype_name(yt_tensor_dtype(st)));
    cr_assert(yt_item(st) == 7.0);

    yt_release(st);
    yt_release(u);
    yt_release(sum_d);
    yt_release(sum);
    yt_release(sq);
    yt_release(s);
    YT_ASSERT_NO_LEAKS();
}

Test(tensor, zero_size_dims_everywhere)
{
    const int64_t sizes[2] = {0, 3};
    yt_tensor *z = yt_zeros(sizes, 2);
    assert_values(z, sizes, 2, NULL, 0);
    cr_assert(yt_tensor_is_contiguous(z));
    yt_tensor *o = yt_ones(sizes, 2);
    yt_tensor *sum = yt_add(z, o);
    assert_values(sum, sizes, 2, NULL, 0);

    /* full reductions of nothing: sum is 0, mean is NaN (0 / 0), as in PyTorch */
    yt_tensor *total = yt_sum(z);
    assert_values(total, NULL, 0, (const double[]){0}, 1);
    yt_tensor *mean = yt_mean(z);
    assert_values(mean, NULL, 0, (const double[]){NAN}, 1);
    const int64_t d0 = 0, d1 = 1, three = 3, none = 0;
    yt_tensor *sum0 = yt_sum_dim(z, &d0, 1);
    assert_values(sum0, &three, 1, (const double[]){0, 0, 0}, 3);
    yt_tensor *mean0 = yt_mean_dim(z, &d0, 1);
    assert_values(mean0, &three, 1, (const double[]){NAN, NAN, NAN}, 3);
    yt_tensor *sum1 = yt_sum_dim(z, &d1, 1);
    assert_values(sum1, &none, 1, NULL, 0);

    /* mm with k = 0 gives zeros of shape [m, n] */
    const int64_t a_sizes[2] = {2, 0}, b_sizes[2] = {0, 3}, c_sizes[2] = {2, 3};
    yt_tensor *a = yt_zeros(a_sizes, 2);
    yt_tensor *b = yt_ones(b_sizes, 2);
    yt_tensor *c = yt_mm(a, b);
    assert_values(c, c_sizes, 2, (const double[]){0, 0, 0, 0, 0, 0}, 6);
    /* and with m = 0 an empty result */
    yt_tensor *t = yt_t(z); /* [3, 0] */
    yt_tensor *e = yt_mm(z, t);
    const int64_t e_sizes[2] = {0, 0};
    assert_values(e, e_sizes, 2, NULL, 0);

    /* views of empty tensors stay empty */
    yt_tensor *sl = yt_slice_ex(o, 1, 1, 3, 1);
    const int64_t sl_sizes[2] = {0, 2};
    assert_values(sl, sl_sizes, 2, NULL, 0);
    const int64_t flat = -1, nothing = 0;
    yt_tensor *v = yt_view(t, &flat, 1);
    assert_values(v, &nothing, 1, NULL, 0);
    const int64_t ambiguous[2] = {0, -1};
    cr_assert_null(yt_view(t, ambiguous, 2), "view(0, -1) of 0 elements is ambiguous");
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "view: cannot reshape tensor of 0 elements into shape [0, -1] "
                                  "because the unspecified dimension size -1 can be any value");

    yt_release(v);
    yt_release(sl);
    yt_release(e);
    yt_release(t);
    yt_release(c);
    yt_release(b);
    yt_release(a);
    yt_release(sum1);
    yt_release(mean0);
    yt_release(sum0);
    yt_release(mean);
    yt_release(total);
    yt_release(sum);
    yt_release(o);
    yt_release(z);
    YT_ASSERT_NO_LEAKS();
}

/* An empty tensor whose other sizes multiply past int64: its element count (0) fits, so it is
 * made, and its strides (never stepped along) do not overflow on the way (UBSan checks that). */
Test(tensor, empty_with_sizes_whose_product_overflows)
{
    const int64_t big = (int64_t)1 << 40, sizes[3] = {0, big, big};
    yt_tensor *e = yt_empty(sizes, 3);
    cr_assert_not_null(e, "%s", yt_errmsg());
    cr_assert_eq(yt_tensor_numel(e), 0);
    for (int i = 0; i < 3; i++)
        cr_assert_geq(yt_tensor_stride(e, i), 1, "stride(%d) = %lld", i,
                      (long long)yt_tensor_stride(e, i));
    yt_tensor *f =
        yt_full_ex((const int64_t[]){big, 0, big}, 3, yt_float(1), YT_DTYPE_F32, YT_DEVICE_NONE);
    cr_assert_not_null(f, "%s", yt_errmsg());
    const int64_t d0 = 0, kept[2] = {0, big};
    yt_tensor *s = yt_sum_dim(f, &d0, 1);
    test_expect_sizes(s, kept, 2);
    yt_release(s);
    yt_release(f);
    yt_release(e);
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- accessors and item */

Test(tensor, accessors_wrap_negative_dims_and_reject_out_of_range)
{
    const int64_t sizes[3] = {2, 3, 4};
    yt_tensor *t = yt_zeros(sizes, 3);
    cr_assert_eq(yt_tensor_size(t, -1), 4);
    cr_assert_eq(yt_tensor_size(t, -3), 2);
    cr_assert_eq(yt_tensor_stride(t, -1), 1);
    cr_assert_eq(yt_tensor_stride(t, 0), 12);
    cr_assert_eq(yt_tensor_offset(t), 0);
    cr_assert_eq(yt_tensor_device(t), YT_DEVICE_CPU);
    cr_assert_eq(yt_errcode(), YT_OK, "%s", yt_errmsg());

    cr_assert_eq(yt_tensor_size(t, 3), -1);
    YT_ASSERT_ERROR(YT_ERR_VALUE,
                    "yt_tensor_size: dim=3 is out of range for a 3-D tensor (expected -3..2)");
    cr_assert_eq(yt_tensor_stride(t, -4), -1);
    YT_ASSERT_ERROR(YT_ERR_VALUE,
                    "yt_tensor_stride: dim=-4 is out of range for a 3-D tensor (expected -3..2)");
    const float v = 1;
    yt_tensor *s = tensor_f32(&v, NULL, 0);
    cr_assert_eq(yt_tensor_size(s, 0), -1);
    YT_ASSERT_ERROR(YT_ERR_VALUE,
                    "yt_tensor_size: dim=0 is out of range for a 0-D tensor (it has no dims)");

    /* NULL is accepted by every accessor */
    yt_clear_error();
    cr_assert_eq(yt_tensor_dim(NULL), 0);
    cr_assert_eq(yt_tensor_size(NULL, 0), 0);
    cr_assert_eq(yt_tensor_numel(NULL), 0);
    cr_assert_null(yt_tensor_sizes(NULL));
    cr_assert_null(yt_tensor_data(NULL));
    cr_assert_eq(yt_tensor_dtype(NULL), YT_DTYPE_NONE);
    cr_assert_eq(yt_tensor_device(NULL), YT_DEVICE_NONE);
    cr_assert(!yt_tensor_is_contiguous(NULL));
    cr_assert_eq(yt_tensor_version(NULL), 0);
    cr_assert_eq(yt_errcode(), YT_OK, "accessors on NULL recorded: %s", yt_errmsg());
    yt_release(s);
    yt_release(t);
    YT_ASSERT_NO_LEAKS();
}

Test(tensor, item_needs_exactly_one_element)
{
    const float one[1] = {-4.5f}, two[2] = {1, 2};
    const int64_t n1 = 1, n2 = 2, n0 = 0;
    yt_tensor *a = tensor_f32(one, &n1, 1);
    cr_assert(yt_item(a) == -4.5, "item is %.17g", yt_item(a));
    yt_tensor *b = tensor_f32(two, &n2, 1);
    double x = yt_item(b);
    cr_assert(isnan(x), "item of 2 elements is %.17g, expected NaN", x);
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "yt_item: t has 2 elements, expected exactly 1");
    yt_tensor *c = yt_zeros(&n0, 1);
    cr_assert(isnan(yt_item(c)));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "yt_item: t has 0 elements, expected exactly 1");
    /* NULL gives NaN and leaves the earlier error in place */
    cr_assert(isnan(yt_item(NULL)));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "yt_item: t has 0 elements, expected exactly 1");
    yt_release(c);
    yt_release(b);
    yt_release(a);
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- printing */

/* What yt_tensor_print writes for `t`. */
static void
assert_prints(yt_tensor *t, const char *expect)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    cr_assert_eq(yt_tensor_print(t, f), YT_OK, "%s", yt_errmsg());
    fclose(f);
    cr_assert_str_eq(buf, expect, "printed\n%s\nexpected\n%s", buf, expect);
    free(buf);
}

Test(tensor, print_small_tensors)
{
    const float m[4] = {1, 2, 3, 4};
    const int64_t sizes[2] = {2, 2};
    yt_tensor *a = tensor_f32(m, sizes, 2);
    assert_prints(a, "tensor([[1., 2.],\n        [3., 4.]], dtype=f32)\n");
    yt_tensor *at = yt_t(a);
    assert_prints(at, "tensor([[1., 3.],\n        [2., 4.]], dtype=f32)\n");

    const float fr[3] = {0.5f, -1.25f, 10.0f};
    const int64_t n3 = 3;
    yt_tensor *b = tensor_f32(fr, &n3, 1);
    assert_prints(b, "tensor([ 0.5000, -1.2500, 10.0000], dtype=f32)\n");

    const float wide[2] = {1e-5f, 1.0f};
    const int64_t n2 = 2;
    yt_tensor *c = tensor_f32(wide, &n2, 1);
    assert_prints(c, "tensor([1.0000e-05, 1.0000e+00], dtype=f32)\n");

    const int64_t iv[3] = {1, -20, 300};
    yt_tensor *d = yt_tensor_from_data(iv, &n3, 1, YT_DTYPE_I64);
    assert_prints(d, "tensor([  1, -20, 300], dtype=i64)\n");

    const bool bv[2] = {true, false};
    yt_tensor *e = yt_tensor_from_data(bv, &n2, 1, YT_DTYPE_BOOL);
    assert_prints(e, "tensor([ True, False], dtype=bool)\n");

    const float sv = 3.5f;
    yt_tensor *f = tensor_f32(&sv, NULL, 0);
    assert_prints(f, "tensor(3.5000, dtype=f32)\n");

    const int64_t empty[2] = {0, 3};
    yt_tensor *g = yt_zeros(empty, 2);
    assert_prints(g, "tensor([], size=(0, 3), dtype=f32)\n");

    yt_release(g);
    yt_release(f);
    yt_release(e);
    yt_release(d);
    yt_release(c);
    yt_release(b);
    yt_release(at);
    yt_release(a);
    YT_ASSERT_NO_LEAKS();
}

Test(tensor, print_shows_grad_fn)
{
    const double v[2] = {1, 2};
    const int64_t n = 2;
    yt_tensor *x = yt_tensor_from_data(v, &n, 1, YT_DTYPE_F64);
    cr_assert_eq(yt_set_requires_grad(x, true), YT_OK, "%s", yt_errmsg());
    assert_prints(x, "tensor([1., 2.], dtype=f64, requires_grad=True)\n");
    yt_tensor *y = yt_mul(x, x);
    assert_prints(y, "tensor([1., 4.], dtype=f64, grad_fn=<MulBackward>)\n");
    yt_release(y);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

/* ---------------------------------------------------------------- views */

/* A [2, 3] f32 tensor 0..5. */
static yt_tensor *
base_2x3(void)
{
    const float v[6] = {0, 1, 2, 3, 4, 5};
    const int64_t sizes[2] = {2, 3};
    return tensor_f32(v, sizes, 2);
}

Test(tensor, views_share_storage_and_version)
{
    yt_tensor *base = base_2x3();
    const int64_t perm[2] = {1, 0}, exp_sizes[3] = {4, 2, 3}, flat = 6;
    yt_tensor *views[7] = {
        yt_transpose(base, 0, 1), yt_permute(base, perm, 2),     yt_slice_ex(base, 1, 1, 3, 1),
        yt_select(base, 0, 1),    yt_expand(base, exp_sizes, 3), yt_unsqueeze(base, 1),
        yt_view(base, &flat, 1),
    };
    for (int i = 0; i < 7; i++) {
        cr_assert_not_null(views[i], "view %d: %s", i, yt_errmsg());
        cr_assert_eq(yt_tensor_version(views[i]), 0);
    }
    cr_assert_eq(yt_tensor_data(views[0]), yt_tensor_data(base), "transpose moved the data");
    cr_assert_eq(yt_tensor_offset(views[3]), 3, "select(0, 1) offset is %lld",
                 (long long)yt_tensor_offset(views[3]));

    /* write through the base in place: every view sees the new values and the new version */
    yt_tensor *ten = yt_full(NULL, 0, yt_float(10));
    cr_assert_eq(yt_add_(base, ten), YT_OK, "%s", yt_errmsg());
    for (int i = 0; i < 7; i++)
        cr_assert_eq(yt_tensor_version(views[i]), 1, "view %d has version %llu after one write", i,
                     (unsigned long long)yt_tensor_version(views[i]));

    const int64_t t_sizes[2] = {3, 2}, s_sizes[2] = {2, 2}, three = 3, u_sizes[3] = {2, 1, 3};
    const double tr[6] = {10, 13, 11, 14, 12, 15};
    assert_values(views[0], t_sizes, 2, tr, 6);
    assert_values(views[1], t_sizes, 2, tr, 6);
    assert_values(views[2], s_sizes, 2, (const double[]){11, 12, 14, 15}, 4);
    assert_values(views[3], &three, 1, (const double[]){13, 14, 15}, 3);
    const double row_major[6] = {10, 11, 12, 13, 14, 15};
    double expanded[24];
    for (int i = 0; i < 24; i++)
        expanded[i] = row_major[i % 6];
    assert_values(views[4], exp_sizes, 3, expanded, 24);
    assert_values(views[5], u_sizes, 3, row_major, 6);
    assert_values(views[6], &flat, 1, row_major, 6);

    /* and a write through a view reaches the base */
    cr_assert_eq(yt_add_(views[3], ten), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(yt_tensor_version(base), 2);
    const int64_t b_sizes[2] = {2, 3};
    assert_values(base, b_sizes, 2, (const double[]){10, 11, 12, 23, 24, 25}, 6);

    for (int i = 0; i < 7; i++)
        yt_release(views[i]);
    yt_release(ten);
    yt_release(base);
    YT_ASSERT_NO_LEAKS();
}

Test(tensor, view_of_transpose_fails_and_reshape_copies)
{
    yt_tensor *base = base_2x3();
    yt_tensor *t = yt_t(base);
    cr_assert(!yt_tensor_is_contiguous(t));
    const int64_t flat = 6;
    cr_assert_null(yt_view(t, &flat, 1));
    YT_ASSERT_ERROR(YT_ERR_SHAPE,
                    "view: size is not compatible with input tensor's size and stride (at least "
                    "one dimension spans across two contiguous subspaces); use reshape instead");

    yt_tensor *r = yt_reshape(t, &flat, 1);
    assert_values(r, &flat, 1, (const double[]){0, 3, 1, 4, 2, 5}, 6);
    cr_assert(yt_tensor_is_contiguous(r));
    cr_assert_neq(yt_tensor_data(r), yt_tensor_data(base), "reshape of a transpose must copy");
    yt_tensor *one = yt_full(NULL, 0, yt_float(1));
    cr_assert_eq(yt_add_(base, one), YT_OK, "%s", yt_errmsg());
    assert_values(r, &flat, 1, (const double[]){0, 3, 1, 4, 2, 5}, 6); /* unchanged: a copy */

    /* reshape of a contiguous tensor is a view */
    yt_tensor *rv = yt_reshape(base, &flat, 1);
    cr_assert_eq(yt_tensor_data(rv), yt_tensor_data(base), "reshape of contiguous must not copy");

    yt_release(rv);
    yt_release(one);
    yt_release(r);
    yt_release(t);
    yt_release(base);
    YT_ASSERT_NO_LEAKS();
}

Test(tensor, expand_gives_zero_strides)
{
    const float v[3] = {1, 2, 3};
    const int64_t sizes[2] = {3, 1};
    yt_tensor *col = tensor_f32(v, sizes, 2);
    const int64_t target[3] = {2, 3, 4};
    yt_tensor *e = yt_expand(col, target, 3);
    cr_assert_not_null(e, "%s", yt_errmsg());
    cr_assert_eq(yt_tensor_stride(e, 0), 0, "new leading dim stride %lld",
                 (long long)yt_tensor_stride(e, 0));
    cr_assert_eq(yt_tensor_stride(e, 1), 1, "kept dim stride %lld",
                 (long long)yt_tensor_stride(e, 1));
    cr_assert_eq(yt_tensor_stride(e, 2), 0, "expanded size-1 dim stride %lld",
                 (long long)yt_tensor_stride(e, 2));
    cr_assert(!yt_tensor_is_contiguous(e));
    /* -1 keeps a size */
    const int64_t keep[2] = {-1, 5};
    yt_tensor *k = yt_expand(col, keep, 2);
    cr_assert_eq(yt_tensor_size(k, 0), 3);
    cr_assert_eq(yt_tensor_size(k, 1), 5);
    /* a non-singleton dim cannot change */
    const int64_t bad[2] = {4, 4};
    cr_assert_null(yt_expand(col, bad, 2));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "expand: the expanded size 4 must match the existing size 3 at "
                                  "non-singleton dimension 0 (target sizes [4, 4], self sizes "
                                  "[3, 1])");
    yt_release(k);
    yt_release(e);
    yt_release(col);
    YT_ASSERT_NO_LEAKS();
}

/* slice(dim 0) of arange(5) with (start, end, step) must hold `expect`. */
static void
assert_slice(yt_tensor *r, int64_t start, int64_t end, int64_t step, const double *expect,
             int64_t n)
{
    yt_tensor *s = yt_slice_ex(r, 0, start, end, step);
    cr_assert_not_null(s, "slice(%lld, %lld, %lld): %s", (long long)start, (long long)end,
                       (long long)step, yt_errmsg());
    cr_assert_eq(yt_tensor_numel(s), n, "slice(%lld, %lld, %lld) has %lld elements, expected %lld",
                 (long long)start, (long long)end, (long long)step, (long long)yt_tensor_numel(s),
                 (long long)n);
    assert_values(s, &n, 1, expect, n);
    yt_release(s);
}

Test(tensor, slice_clamps_like_python)
{
    yt_tensor *r = yt_arange(yt_int(0), yt_int(5)); /* [0, 1, 2, 3, 4] */
    assert_slice(r, YT_NONE, YT_NONE, 1, (const double[]){0, 1, 2, 3, 4}, 5);
    assert_slice(r, -3, YT_NONE, 1, (const double[]){2, 3, 4}, 3);    /* r[-3:] */
    assert_slice(r, YT_NONE, -1, 1, (const double[]){0, 1, 2, 3}, 4); /* r[:-1] */
    assert_slice(r, -100, 100, 2, (const double[]){0, 2, 4}, 3);      /* r[-100:100:2] */
    assert_slice(r, 1, YT_NONE, 3, (const double[]){1, 4}, 2);        /* r[1::3] */
    assert_slice(r, 4, 2, 1, NULL, 0);                                /* r[4:2] */
    assert_slice(r, 7, 9, 1, NULL, 0);                                /* r[7:9] */
    assert_slice(r, -2, -4, 1, NULL, 0);                              /* r[-2:-4] */
    assert_slice(r, 2, INT64_MAX, INT64_MAX, (const double[]){2}, 1); /* r[2::huge] */
    yt_tensor *all = yt_slice(r);
    cr_assert_eq(yt_tensor_numel(all), 5);
    cr_assert_eq(yt_tensor_data(all), yt_tensor_data(r));
    cr_assert_null(yt_slice_ex(r, 0, 0, 5, 0));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "slice: expected step > 0, got step=0");
    yt_release(all);
    yt_release(r);
    YT_ASSERT_NO_LEAKS();
}
