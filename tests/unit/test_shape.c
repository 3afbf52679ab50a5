/* Shape ops beyond the generated cases: which results are views (sharing storage), exact values
 * of repeat/flip/roll/tril/triu (incl. transposed and zero-size inputs), PyTorch's corner cases
 * (0-D flatten, negative narrow start, roll over the flattened tensor), and the error messages.
 * Every test ends by proving that nothing leaked. */
#include <math.h>
#include <stdlib.h>

#include <criterion/criterion.h>

#include "test_util.h"

static bool
shares_storage(yt_tensor *a, yt_tensor *b)
{
    /* writing through one is visible through the other */
    uint64_t before = yt_tensor_version(b);
    yt_status st = yt_mul_scalar_(a, yt_int(1));
    cr_assert_eq(st, YT_OK, "%s", yt_errmsg());
    return yt_tensor_version(b) != before;
}

Test(shape, flatten_views_and_copies)
{
    const int64_t s[3] = {2, 3, 4};
    yt_tensor *x = test_iota(s, 3);
    yt_tensor *f = yt_flatten_ex(x, 1, 2);
    const int64_t want[2] = {2, 12};
    cr_assert_eq(yt_tensor_dim(f), 2);
    cr_assert_eq(yt_tensor_size(f, 1), want[1]);
    cr_assert(shares_storage(f, x), "flatten of a contiguous tensor must be a view");
    yt_tensor *t = yt_transpose(x, 0, 2);
    yt_tensor *ft = yt_flatten(t); /* not viewable: a copy */
    cr_assert_eq(yt_tensor_dim(ft), 1);
    cr_assert(!shares_storage(ft, x));
    yt_tensor *scalar = yt_full(NULL, 0, yt_float(2.5));
    yt_tensor *fs = yt_flatten(scalar);
    const double two_half = 2.5;
    const int64_t one = 1;
    test_expect_values(fs, &two_half, 1, &one, 1);
    yt_tensor *bad = yt_flatten_ex(x, 2, 1);
    cr_assert_null(bad);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "flatten: ");
    yt_release(fs);
    yt_release(scalar);
    yt_release(ft);
    yt_release(t);
    yt_release(f);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

Test(shape, unflatten_narrow_broadcast_to_are_views)
{
    const int64_t s[2] = {3, 6};
    yt_tensor *x = test_iota(s, 2);
    const int64_t parts[2] = {-1, 3};
    yt_tensor *u = yt_unflatten(x, 1, parts, 2);
    const int64_t us[3] = {3, 2, 3};
    cr_assert_eq(yt_tensor_dim(u), 3);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(yt_tensor_size(u, i), us[i]);
    cr_assert(shares_storage(u, x));
    const int64_t bad_parts[2] = {4, 2};
    cr_assert_null(yt_unflatten(x, 1, bad_parts, 2));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "unflatten: sizes [4, 2] don't multiply up to the size of dim 1");

    yt_tensor *n = yt_narrow(x, 1, -4, 2); /* columns 2 and 3 */
    const double nwant[6] = {2, 3, 8, 9, 14, 15};
    const int64_t ns[2] = {3, 2};
    test_expect_values(n, nwant, 6, ns, 2);
    cr_assert(shares_storage(n, x));
    cr_assert_null(yt_narrow(x, 1, 5, 2));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "narrow: start=5 + length=2 exceeds dimension 1 of size 6");
    cr_assert_null(yt_narrow(x, 0, -4, 1));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "narrow: start=-4 is out of range");

    yt_tensor *col = yt_narrow(x, 1, 0, 1);
    const int64_t bs[3] = {2, 3, 5};
    yt_tensor *b = yt_broadcast_to(col, bs, 3);
    cr_assert_not_null(b, "%s", yt_errmsg());
    cr_assert_eq(yt_tensor_stride(b, 0), 0);
    cr_assert_eq(yt_tensor_stride(b, 2), 0);
    yt_release(b);
    yt_release(col);
    yt_release(n);
    yt_release(u);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

Test(shape, repeat_values_and_gradient)
{
    const double v[2] = {1, 2};
    const int64_t s[1] = {2};
    yt_tensor *x = test_from(v, s, 1, YT_DTYPE_F64);
    yt_set_requires_grad(x, true);
    const int64_t reps[2] = {2, 3};
    yt_tensor *r = yt_repeat(x, reps, 2);
    const double want[12] = {1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2};
    const int64_t rs[2] = {2, 6};
    test_expect_values(r, want, 12, rs, 2);
    yt_tensor *total = yt_sum(r);
    cr_assert_eq(yt_backward(total, NULL, NULL), YT_OK, "%s", yt_errmsg());
    yt_tensor *g = yt_grad(x);
    const double gwant[2] = {6, 6};
    test_expect_values(g, gwant, 2, s, 1);
    const int64_t too_few[1] = {2};
    yt_tensor *x2 = yt_unsqueeze(x, 0);
    cr_assert_null(yt_repeat(x2, too_few, 1));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "repeat: ");
    yt_release(x2);
    yt_release(g);
    yt_release(total);
    yt_release(r);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

Test(shape, flip_and_roll_values)
{
    const int64_t s[2] = {2, 3};
    yt_tensor *x = test_iota(s, 2); /* [[0 1 2] [3 4 5]] */
    const int64_t d1[1] = {1}, d01[2] = {0, 1};
    yt_tensor *f = yt_flip(x, d1, 1);
    const double fwant[6] = {2, 1, 0, 5, 4, 3};
    test_expect_values(f, fwant, 6, s, 2);
    yt_tensor *f2 = yt_flip(x, d01, 2);
    const double f2want[6] = {5, 4, 3, 2, 1, 0};
    test_expect_values(f2, f2want, 6, s, 2);
    yt_tensor *xt = yt_t(x); /* [[0 3] [1 4] [2 5]] */
    const int64_t d0[1] = {0};
    yt_tensor *ft = yt_flip(xt, d0, 1);
    const double ftwant[6] = {2, 5, 1, 4, 0, 3};
    const int64_t ts[2] = {3, 2};
    test_expect_values(ft, ftwant, 6, ts, 2);

    const int64_t sh1[1] = {1};
    yt_tensor *r = yt_roll_ex(x, sh1, 1, d1, 1);
    const double rwant[6] = {2, 0, 1, 5, 3, 4};
    test_expect_values(r, rwant, 6, s, 2);
    const int64_t shm[1] = {-2}; /* flattened: 2 3 4 5 0 1 */
    yt_tensor *rf = yt_roll(x, shm, 1);
    const double rfwant[6] = {2, 3, 4, 5, 0, 1};
    test_expect_values(rf, rfwant, 6, s, 2);
    const int64_t sh2[2] = {1, 4};
    yt_tensor *r2 = yt_roll_ex(x, sh2, 2, d01, 2); /* rows swap, columns by 1 */
    const double r2want[6] = {5, 3, 4, 2, 0, 1};
    test_expect_values(r2, r2want, 6, s, 2);
    cr_assert_null(yt_roll_ex(x, sh2, 2, d1, 1));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "roll: shifts has 2 entries but dims has 1");
    const int64_t z[2] = {0, 3};
    yt_tensor *empty = yt_zeros(z, 2);
    yt_tensor *re = yt_roll_ex(empty, sh1, 1, d1, 1);
    cr_assert_not_null(re, "%s", yt_errmsg());
    cr_assert_eq(yt_tensor_numel(re), 0);
    yt_release(re);
    yt_release(empty);
    yt_release(r2);
    yt_release(rf);
    yt_release(r);
    yt_release(ft);
    yt_release(xt);
    yt_release(f2);
    yt_release(f);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

Test(shape, tril_triu_values)
{
    const int64_t s[2] = {3, 4};
    yt_tensor *x = test_iota(s, 2);
    yt_tensor *lo = yt_tril(x);
    const double lwant[12] = {0, 0, 0, 0, 4, 5, 0, 0, 8, 9, 10, 0};
    test_expect_values(lo, lwant, 12, s, 2);
    yt_tensor *up = yt_triu_ex(x, 1);
    const double uwant[12] = {0, 1, 2, 3, 0, 0, 6, 7, 0, 0, 0, 11};
    test_expect_values(up, uwant, 12, s, 2);
    yt_tensor *lom = yt_tril_ex(x, -1);
    const double lmwant[12] = {0, 0, 0, 0, 4, 0, 0, 0, 8, 9, 0, 0};
    test_expect_values(lom, lmwant, 12, s, 2);
    yt_tensor *b = yt_to(x, YT_DTYPE_BOOL);
    yt_tensor *bu = yt_triu_ex(b, -100); /* keeps everything */
    const double bwant[12] = {0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    test_expect_values(bu, bwant, 12, s, 2);
    const int64_t v1[1] = {3};
    yt_tensor *vec = yt_zeros(v1, 1);
    cr_assert_null(yt_tril(vec));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "tril: self must be at least 2-D");
    yt_release(vec);
    yt_release(bu);
    yt_release(b);
    yt_release(lom);
    yt_release(up);
    yt_release(lo);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

Test(shape, pad_modes)
{
    const double v[3] = {1, 2, 3};
    const int64_t s[1] = {3};
    yt_tensor *x = test_from(v, s, 1, YT_DTYPE_F64);
    const int64_t p21[2] = {2, 1};
    const int64_t six[1] = {6};
    yt_tensor *r = yt_pad_ex(x, p21, 2, "reflect", NULL);
    const double rwant[6] = {3, 2, 1, 2, 3, 2};
    test_expect_values(r, rwant, 6, six, 1);
    yt_tensor *e = yt_pad_ex(x, p21, 2, "replicate", NULL);
    const double ewant[6] = {1, 1, 1, 2, 3, 3};
    test_expect_values(e, ewant, 6, six, 1);
    const double value = -1.5;
    const int64_t crop[2] = {-1, 2};
    const int64_t four[1] = {4};
    yt_tensor *c = yt_pad_ex(x, crop, 2, "constant", &value);
    const double cwant[4] = {2, 3, -1.5, -1.5};
    test_expect_values(c, cwant, 4, four, 1);
    const int64_t p30[2] = {3, 0};
    cr_assert_null(yt_pad_ex(x, p30, 2, "reflect", NULL));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "pad: reflect padding (3, 0) must be less than the size 3");
    cr_assert_null(yt_pad_ex(x, p30, 2, "circular", NULL));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "pad: mode must be one of");
    /* a side cropping more than the dim holds, made up for by the other side's growth: the
     * crop of 2^63 overflowed (found by the sweep of bad arguments) */
    const int64_t extreme[2] = {INT64_MIN, INT64_MAX}, over[2] = {-4, 5};
    for (int m = 0; m < 3; m++) {
        const char *mode = m == 0 ? "constant" : m == 1 ? "replicate" : "reflect";
        cr_assert_null(yt_pad_ex(x, extreme, 2, mode, NULL), "%s", mode);
        cr_assert_null(yt_pad_ex(x, over, 2, mode, NULL), "%s", mode);
        YT_ASSERT_ERROR(YT_ERR_VALUE, "pad: padding (-4, 5) of dim 0 crops more than its size 3");
    }
    yt_release(c);
    yt_release(e);
    yt_release(r);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

Test(shape, cat_stack_split)
{
    const int64_t a_s[2] = {2, 3}, b_s[2] = {3, 2};
    yt_tensor *a = test_iota(a_s, 2);
    yt_tensor *b0 = test_iota(b_s, 2);
    yt_tensor *b = yt_t(b0); /* [[0 2 4] [1 3 5]], not contiguous */
    yt_tensor *bi = yt_to(b, YT_DTYPE_I32);
    yt_tensor *list[2] = {a, bi};
    yt_tensor *c = yt_cat(list, 2); /* promotes to f64 */
    const double cwant[12] = {0, 1, 2, 3, 4, 5, 0, 2, 4, 1, 3, 5};
    const int64_t cs[2] = {4, 3};
    test_expect_values(c, cwant, 12, cs, 2);
    cr_assert_eq(yt_tensor_dtype(c), YT_DTYPE_F64);
    yt_tensor *c1 = yt_cat_ex(list, 2, -1);
    const double c1want[12] = {0, 1, 2, 0, 2, 4, 3, 4, 5, 1, 3, 5};
    const int64_t c1s[2] = {2, 6};
    test_expect_values(c1, c1want, 12, c1s, 2);
    const int64_t bad_s[2] = {2, 4};
    yt_tensor *bad = yt_zeros_ex(bad_s, 2, YT_DTYPE_F64, YT_DEVICE_CPU);
    yt_tensor *mismatch[2] = {a, bad};
    cr_assert_null(yt_cat(mismatch, 2));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "cat: sizes of tensors must match except in dimension 0: "
                                  "expected size 3 but got size 4 for tensor number 1");
    yt_tensor *with_null[3] = {a, NULL, a};
    yt_clear_error(); /* a NULL entry keeps an earlier error: it may be that error's result */
    cr_assert_null(yt_cat(with_null, 3));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "cat: tensors[1] is NULL");
    yt_clear_error();
    cr_assert_null(yt_stack_ex(with_null, 3, 0));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "stack: tensors[1] is NULL");
    yt_tensor *st = yt_stack_ex(list, 2, 1);
    const double stwant[12] = {0, 1, 2, 0, 2, 4, 3, 4, 5, 1, 3, 5};
    const int64_t sts[3] = {2, 2, 3};
    test_expect_values(st, stwant, 12, sts, 3);

    yt_tensor *pieces[4];
    int64_t n = yt_split_ex(a, 2, 1, pieces, 4);
    cr_assert_eq(n, 2, "%s", yt_errmsg());
    cr_assert_eq(yt_tensor_size(pieces[1], 1), 1);
    cr_assert(shares_storage(pieces[0], a), "split pieces are views");
    yt_release(pieces[0]);
    yt_release(pieces[1]);
    cr_assert_eq(yt_chunk_ex(a, 3, 1, NULL, 0), 3);
    cr_assert_eq(yt_unbind_ex(a, 1, pieces, 2), -1);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "unbind: out_capacity=2 is too small for the 3 results");
    yt_release(st);
    yt_release(bad);
    yt_release(c1);
    yt_release(c);
    yt_release(bi);
    yt_release(b);
    yt_release(b0);
    yt_release(a);
    YT_ASSERT_NO_LEAKS();
}

Test(shape, split_with_sizes_views_and_errors)
{
    const int64_t a_s[2] = {2, 5};
    yt_tensor *a = test_iota(a_s, 2);
    yt_tensor *pieces[3];
    const int64_t sizes[3] = {2, 0, 3};
    cr_assert_eq(yt_split_with_sizes_ex(a, sizes, 3, 1, pieces, 3), 3, "%s", yt_errmsg());
    const double last[6] = {2, 3, 4, 7, 8, 9};
    const int64_t last_s[2] = {2, 3};
    test_expect_values(pieces[2], last, 6, last_s, 2);
    cr_assert_eq(yt_tensor_size(pieces[1], 1), 0);
    cr_assert(shares_storage(pieces[0], a), "pieces are views");
    for (int i = 0; i < 3; i++)
        yt_release(pieces[i]);

    const int64_t short_sizes[2] = {1, 3}, negative[2] = {1, -1};
    const int64_t huge[3] = {INT64_MAX, INT64_MAX, 1};
    cr_assert_eq(yt_split_with_sizes_ex(a, short_sizes, 2, 1, pieces, 3), -1);
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "split_with_sizes: split_sizes add up to 4 but self.size(1)=5");
    cr_assert_eq(yt_split_with_sizes_ex(a, huge, 3, 1, pieces, 3), -1);
    YT_ASSERT_ERROR(YT_ERR_SHAPE,
                    "split_with_sizes: split_sizes add up to more than 5 but self.size(1)=5");
    cr_assert_eq(yt_split_with_sizes_ex(a, negative, 2, 1, pieces, 3), -1);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "split_with_sizes: split_sizes[1]=-1 must not be negative");
    yt_release(a);
    YT_ASSERT_NO_LEAKS();
}

/* A split_size or a chunk count near INT64_MAX is one piece of everything, as in PyTorch; the
 * piece counts used to overflow (size + split_size - 1). A negative entry of split_sizes is
 * named even when the entries before it already add up to more than the size. */
Test(shape, split_and_chunk_with_huge_counts_and_negative_sizes)
{
    const int64_t s5[1] = {5};
    yt_tensor *x = test_iota(s5, 1), *out[8] = {0};
    const double all[5] = {0, 1, 2, 3, 4};
    cr_assert_eq(yt_split(x, INT64_MAX, out, 8), 1, "%s", yt_errmsg());
    test_expect_values(out[0], all, 5, s5, 1);
    yt_release(out[0]);
    cr_assert_eq(yt_split(x, INT64_MAX - 1, out, 8), 1, "%s", yt_errmsg());
    yt_release(out[0]);
    cr_assert_eq(yt_chunk(x, INT64_MAX, out, 8), 5, "%s", yt_errmsg());
    for (int i = 0; i < 5; i++) {
        const double v = (double)i;
        test_expect_values(out[i], &v, 1, (const int64_t[]){1}, 1);
        yt_release(out[i]);
    }
    cr_assert_eq(yt_split_with_sizes(x, (const int64_t[]){6, -1}, 2, out, 8), -1);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "split_with_sizes: split_sizes[1]=-1 must not be negative");
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

/* Errors of composites that used to come from the ops inside them: stack of 8-D tensors
 * ("unsqueeze: self is already 8-D"), and pad with a value that does not fit the dtype
 * ("full: fill_value=..."). A pad that only crops needs no value, as in PyTorch. */
Test(shape, stack_and_pad_errors_name_the_public_op)
{
    const int64_t s8[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    yt_tensor *e = yt_zeros(s8, 8);
    cr_assert_null(yt_stack((yt_tensor *[]){e, e}, 2));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "stack: tensors are 8-D; stacking them would need 9 dims (at "
                                  "most 8)");

    const int64_t s3[1] = {3};
    yt_tensor *b = yt_ones_ex(s3, 1, YT_DTYPE_I8, YT_DEVICE_CPU);
    const double big = 1e10, ok = 2.7;
    cr_assert_null(yt_pad_ex(b, (const int64_t[]){1, 1}, 2, "constant", &big));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "pad: value=1e+10 cannot be converted to i8 without overflow");
    yt_tensor *p = yt_pad_ex(b, (const int64_t[]){1, 1}, 2, "constant", &ok);
    const double pw[5] = {2, 1, 1, 1, 2}; /* torch: 2.7 truncates to 2 in i8 */
    test_expect_values(p, pw, 5, (const int64_t[]){5}, 1);
    yt_tensor *c = yt_pad_ex(b, (const int64_t[]){-1, 0}, 2, "constant", &big);
    const double cw[2] = {1, 1};
    test_expect_values(c, cw, 2, (const int64_t[]){2}, 1);
    yt_release(c), yt_release(p), yt_release(b), yt_release(e);
    YT_ASSERT_NO_LEAKS();
}

/* A repeat of 0 empties the result, whatever the other repeats: tiled after a huge one, that one
 * stayed a view, but the gradient of the view did not ([3] repeated [2^40, 0, 2] asked backward
 * for 13 TB; found by the sweep of bad arguments). The zeros come back at self's size. */
Test(shape, repeat_by_zero_beside_a_huge_repeat_has_a_small_gradient)
{
    const double v[3] = {1, 2, 3};
    const int64_t s[1] = {3};
    yt_tensor *x = test_from(v, s, 1, YT_DTYPE_F64);
    cr_assert_eq(yt_set_requires_grad(x, true), YT_OK);
    const int64_t repeats[3] = {(int64_t)1 << 40, 0, 2};
    yt_tensor *r = yt_repeat(x, repeats, 3);
    cr_assert_not_null(r, "%s", yt_errmsg());
    const int64_t rs[3] = {(int64_t)1 << 40, 0, 6};
    test_expect_sizes(r, rs, 3);
    yt_tensor *sum = yt_sum(r);
    cr_assert_eq(yt_backward(sum, NULL, NULL), YT_OK, "%s", yt_errmsg());
    yt_tensor *g = yt_grad(x);
    const double zeros[3] = {0, 0, 0};
    test_expect_values(g, zeros, 3, s, 1);
    yt_release(g);
    yt_release(sum);
    yt_release(r);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}
