/* In-place and out= writes into memory that an input of the same call reads: the result is the
 * one the op gives out of place (the generated functions go through a temporary), whatever order
 * the kernel writes in. */
#include "test_util.h"

/* [[1, 2], [3, 4]] += its transpose: element (0, 1) is written before (1, 0) reads it. */
Test(overlap, inplace_add_of_own_transpose)
{
    const double v[] = {1, 2, 3, 4}, want[] = {2, 5, 5, 8};
    const int64_t s22[] = {2, 2};
    yt_tensor *m = test_from(v, s22, 2, YT_DTYPE_F32);
    yt_tensor *mt = yt_t(m);
    cr_assert_eq(yt_add_(m, mt), YT_OK, "%s", yt_errmsg());
    test_expect_values(m, want, 4, s22, 2);
    yt_tensor *m3 = test_iota((const int64_t[]){3, 3}, 2);
    yt_tensor *m3t = yt_t(m3);
    cr_assert_eq(yt_mul_(m3, m3t), YT_OK, "%s", yt_errmsg());
    const double sq[] = {0, 3, 12, 3, 16, 35, 12, 35, 64};
    test_expect_values(m3, sq, 9, (const int64_t[]){3, 3}, 2);
    yt_release(m3t);
    yt_release(m3);
    yt_release(mt);
    yt_release(m);
    YT_ASSERT_NO_LEAKS();
}

/* Shifted views of one buffer: b[1:] += b[:3] and add(c[:3], 0, out=c[1:]), where a forward
 * loop would carry each write into the next element's read. */
Test(overlap, shifted_views_of_one_buffer)
{
    const double v[] = {1, 2, 3, 4};
    const int64_t n4 = 4;
    yt_tensor *b = test_from(v, &n4, 1, YT_DTYPE_F64);
    yt_tensor *tail = yt_narrow(b, 0, 1, 3), *head = yt_narrow(b, 0, 0, 3);
    cr_assert_eq(yt_add_(tail, head), YT_OK, "%s", yt_errmsg());
    test_expect_values(b, (const double[]){1, 3, 5, 7}, 4, &n4, 1);

    yt_tensor *c = test_from(v, &n4, 1, YT_DTYPE_I64);
    yt_tensor *c_tail = yt_narrow(c, 0, 1, 3), *c_head = yt_narrow(c, 0, 0, 3);
    cr_assert_eq(yt_add_scalar_out(c_tail, c_head, yt_int(0)), YT_OK, "%s", yt_errmsg());
    test_expect_values(c, (const double[]){1, 1, 2, 3}, 4, &n4, 1);

    yt_release(c_head);
    yt_release(c_tail);
    yt_release(c);
    yt_release(head);
    yt_release(tail);
    yt_release(b);
    YT_ASSERT_NO_LEAKS();
}

/* A row broadcast over the tensor it lives in: x += x[0] reads row 0 after writing it, unless the
 * write goes through a temporary. The same input in place (x += x) reads each element just before
 * writing it, as every pointwise kernel does. */
Test(overlap, broadcast_row_of_self_and_self_itself)
{
    const double v[] = {1, 2, 3, 4};
    const int64_t s22[] = {2, 2};
    yt_tensor *x = test_from(v, s22, 2, YT_DTYPE_F32);
    yt_tensor *row = yt_narrow(x, 0, 0, 1);
    cr_assert_eq(yt_add_(x, row), YT_OK, "%s", yt_errmsg());
    test_expect_values(x, (const double[]){2, 4, 4, 6}, 4, s22, 2);
    cr_assert_eq(yt_add_(x, x), YT_OK, "%s", yt_errmsg());
    test_expect_values(x, (const double[]){4, 8, 8, 12}, 4, s22, 2);
    /* a disjoint part of the same storage is read in place */
    yt_tensor *r0 = yt_select(x, 0, 0), *r1 = yt_select(x, 0, 1);
    cr_assert_eq(yt_sub_(r1, r0), YT_OK, "%s", yt_errmsg());
    test_expect_values(x, (const double[]){4, 8, 4, 4}, 4, s22, 2);
    yt_release(r1);
    yt_release(r0);
    yt_release(row);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

/* Kernels that are not elementwise read an input long after writing the output's first element:
 * any overlap goes through a temporary, the same tensor as input and out included. */
Test(overlap, out_of_non_elementwise_ops_aliasing_an_input)
{
    const int64_t s22[] = {2, 2}, n4 = 4, n2 = 2;
    yt_tensor *a = test_from((const double[]){1, 2, 3, 4}, s22, 2, YT_DTYPE_F64);
    yt_tensor *b = test_from((const double[]){5, 6, 7, 8}, s22, 2, YT_DTYPE_F64);
    cr_assert_eq(yt_mm_out(a, a, b), YT_OK, "%s", yt_errmsg());
    test_expect_values(a, (const double[]){19, 22, 43, 50}, 4, s22, 2);
    cr_assert_eq(yt_mm_out(b, a, b), YT_OK, "%s", yt_errmsg());
    test_expect_values(b, (const double[]){249, 290, 565, 658}, 4, s22, 2);

    yt_tensor *x = test_from((const double[]){1, 2, 3, 4}, &n4, 1, YT_DTYPE_F64);
    cr_assert_eq(yt_cumsum_out(x, x, 0), YT_OK, "%s", yt_errmsg());
    test_expect_values(x, (const double[]){1, 3, 6, 10}, 4, &n4, 1);

    /* sum of each row into the first column of the same matrix */
    yt_tensor *m = test_from((const double[]){1, 2, 3, 4}, s22, 2, YT_DTYPE_F64);
    yt_tensor *col = yt_select(m, 1, 0);
    const int64_t dim1 = 1;
    cr_assert_eq(yt_sum_dim_out(col, m, &dim1, 1), YT_OK, "%s", yt_errmsg());
    test_expect_values(m, (const double[]){3, 2, 7, 4}, 4, s22, 2);

    /* cat of a buffer's two halves, written back into it swapped */
    yt_tensor *y = test_from((const double[]){1, 2, 3, 4}, &n4, 1, YT_DTYPE_F64);
    yt_tensor *halves[2] = {yt_narrow(y, 0, 2, 2), yt_narrow(y, 0, 0, 2)};
    cr_assert_eq(yt_cat_out(y, halves, 2), YT_OK, "%s", yt_errmsg());
    test_expect_values(y, (const double[]){3, 4, 1, 2}, 4, &n4, 1);

    /* max along dim 1 with the values written over the input's first column */
    yt_tensor *p = test_from((const double[]){1, 5, 7, 2}, s22, 2, YT_DTYPE_F64);
    yt_tensor *p_col = yt_select(p, 1, 0);
    yt_tensor *idx = yt_zeros_ex(&n2, 1, YT_DTYPE_I64, YT_DEVICE_NONE);
    cr_assert_eq(yt_max_dim_out(p_col, idx, p, 1), YT_OK, "%s", yt_errmsg());
    test_expect_values(p, (const double[]){5, 5, 7, 2}, 4, s22, 2);
    test_expect_values(idx, (const double[]){1, 0}, 2, &n2, 1);

    yt_release(idx);
    yt_release(p_col);
    yt_release(p);
    yt_release(halves[1]);
    yt_release(halves[0]);
    yt_release(y);
    yt_release(col);
    yt_release(m);
    yt_release(x);
    yt_release(b);
    yt_release(a);
    YT_ASSERT_NO_LEAKS();
}
