/* Errors: the first error of a chain survives NULL propagation; status names; clearing; and the
 * messages name the op, the argument and the values for each class of failure (broadcast, dim
 * out of range, dtype not accepted, out= shape, negative and overflowing sizes, in-place writes
 * into expanded views, unsafe in-place casts). Every test ends by proving that nothing leaked. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "internal.h" /* yt__fail_status and yt__error_context */
#include "test_util.h"

Test(errors, first_error_survives_a_chain)
{
    const int64_t sa[2] = {2, 3}, sb[2] = {4, 5};
    yt_tensor *a = yt_ones(sa, 2);
    yt_tensor *b = yt_ones(sb, 2);
    yt_tensor *mm = yt_mm(a, b);
    cr_assert_null(mm);
    const char *first = "mm: self.size(1)=3 does not match mat2.size(0)=4";
    YT_ASSERT_ERROR(YT_ERR_SHAPE, first);

    /* every later call gets a NULL and returns NULL without overwriting the record */
    yt_tensor *r = yt_relu(mm);
    yt_tensor *s = yt_add(r, a);
    yt_tensor *t = yt_sum(s);
    yt_tensor *u = yt_transpose(t, 0, 1);
    yt_tensor *v = yt_mm(a, u);
    cr_assert(r == NULL && s == NULL && t == NULL && u == NULL && v == NULL);
    cr_assert_eq(yt_add_(a, v), YT_ERR_SHAPE,
                 "an in-place op given NULL returns the recorded code");
    cr_assert_eq(yt_add_out(a, v, a), YT_ERR_SHAPE);
    cr_assert(isnan(yt_item(v)));
    cr_assert_eq(yt_tensor_copy_to(v, NULL, 0, YT_DTYPE_F32), YT_ERR_SHAPE);
    YT_ASSERT_ERROR(YT_ERR_SHAPE, first);
    cr_assert_str_eq(yt_errmsg(), first);

    /* with no error recorded, a NULL argument is itself the error */
    yt_clear_error();
    cr_assert_null(yt_relu(NULL));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "relu: self is NULL");
    yt_release(b);
    yt_release(a);
    YT_ASSERT_NO_LEAKS();
}

Test(errors, status_names_and_clear)
{
    static const char *const names[] = {
        "YT_OK",        "YT_ERR_SHAPE", "YT_ERR_DTYPE", "YT_ERR_DEVICE", "YT_ERR_VALUE",
        "YT_ERR_NOMEM", "YT_ERR_STATE", "YT_ERR_IO",    "YT_ERR_CUDA",   "YT_ERR_INTERNAL",
    };
    for (int s = YT_OK; s <= YT_ERR_INTERNAL; s++)
        cr_assert_str_eq(yt_status_name((yt_status)s), names[s]);
    cr_assert_str_eq(yt_status_name((yt_status)(YT_ERR_INTERNAL + 1)), "YT_ERR_UNKNOWN");
    cr_assert_str_eq(yt_status_name((yt_status)-1), "YT_ERR_UNKNOWN");
    cr_assert_str_eq(yt_version(), YT_VERSION);

    cr_assert_eq(yt_errcode(), YT_OK);
    cr_assert_str_eq(yt_errmsg(), "");
    const int64_t neg = -2;
    cr_assert_null(yt_zeros(&neg, 1));
    cr_assert_eq(yt_errcode(), YT_ERR_VALUE);
    yt_clear_error();
    cr_assert_eq(yt_errcode(), YT_OK, "after clear: %s", yt_status_name(yt_errcode()));
    cr_assert_str_eq(yt_errmsg(), "");
    /* a successful call does not clear an old error: it must be cleared explicitly */
    cr_assert_null(yt_zeros(&neg, 1));
    yt_tensor *ok = yt_zeros(NULL, 0);
    cr_assert_not_null(ok);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "zeros: size[0]=-2 is negative");
    yt_release(ok);
    YT_ASSERT_NO_LEAKS();
}

Test(errors, broadcast_failure_names_both_sizes)
{
    const int64_t sa[2] = {2, 4}, sb = 3;
    yt_tensor *a = yt_zeros(sa, 2);
    yt_tensor *b = yt_zeros(&sb, 1);
    cr_assert_null(yt_add(a, b));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "add: self.size(1)=4 cannot broadcast with other.size(0)=3");
    cr_assert_null(yt_mul(b, a));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "mul: self.size(0)=3 cannot broadcast with other.size(1)=4");
    cr_assert_eq(yt_add_(a, b), YT_ERR_SHAPE);
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "add_: self.size(1)=4 cannot broadcast with other.size(0)=3");
    yt_release(b);
    yt_release(a);
    YT_ASSERT_NO_LEAKS();
}

Test(errors, dim_out_of_range)
{
    const int64_t sa[2] = {2, 4}, d3 = 3, dm3 = -3;
    yt_tensor *a = yt_zeros(sa, 2);
    cr_assert_null(yt_sum_dim(a, &d3, 1));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "sum: dim=3 is out of range for a 2-D self (expected -2..1)");
    cr_assert_null(yt_mean_dim(a, &dm3, 1));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "mean: dim=-3 is out of range for a 2-D self (expected -2..1)");
    cr_assert_null(yt_transpose(a, 0, 5));
    YT_ASSERT_ERROR(YT_ERR_VALUE,
                    "transpose: dim1=5 is out of range for a 2-D self (expected -2..1)");
    cr_assert_null(yt_unsqueeze(a, 4));
    YT_ASSERT_ERROR(YT_ERR_VALUE,
                    "unsqueeze: dim=4 is out of range for a 3-D self (expected -3..2)");
    cr_assert_null(yt_select(a, 0, 2));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "select: index 2 is out of range for dimension 0 of size 2");
    yt_release(a);
    YT_ASSERT_NO_LEAKS();
}

Test(errors, dtype_not_accepted)
{
    const int64_t n = 3;
    yt_tensor *b = yt_zeros_ex(&n, 1, YT_DTYPE_BOOL, YT_DEVICE_CPU);
    yt_tensor *i = yt_zeros_ex(&n, 1, YT_DTYPE_I64, YT_DEVICE_CPU);
    cr_assert_null(yt_relu(b));
    YT_ASSERT_ERROR(
        YT_ERR_DTYPE,
        "relu: self has dtype bool, expected u8, i8, i16, i32, i64, f16, bf16, f32, f64");
    cr_assert_null(yt_neg(b));
    YT_ASSERT_ERROR(YT_ERR_DTYPE, "neg: self has dtype bool, expected u8, i8");
    cr_assert_null(yt_mean(i));
    YT_ASSERT_ERROR(YT_ERR_DTYPE,
                    "mean: the result dtype i64 is not floating; pass a floating dtype");
    cr_assert_null(yt_leaky_relu(i));
    YT_ASSERT_ERROR(YT_ERR_DTYPE, "leaky_relu: self has dtype i64, expected f16, bf16, f32, f64");

    const int64_t sq[2] = {2, 2};
    yt_tensor *m32 = yt_zeros(sq, 2);
    yt_tensor *m64 = yt_zeros_ex(sq, 2, YT_DTYPE_F64, YT_DEVICE_CPU);
    yt_tensor *mi = yt_zeros_ex(sq, 2, YT_DTYPE_BOOL, YT_DEVICE_CPU);
    cr_assert_null(yt_mm(mi, mi));
    YT_ASSERT_ERROR(YT_ERR_DTYPE, "mm: self has dtype bool, expected u8, i8, i16, i32, i64, f16");
    cr_assert_null(yt_mm(m32, m64));
    YT_ASSERT_ERROR(YT_ERR_DTYPE, "mm: mat2 has dtype f64 but self has dtype f32");
    /* rand of an integral dtype is refused, naming the dtype */
    cr_assert_null(yt_rand_ex(&n, 1, NULL, YT_DTYPE_I64, YT_DEVICE_CPU));
    YT_ASSERT_ERROR(YT_ERR_DTYPE,
                    "rand: the result dtype i64 is not floating; pass a floating dtype");
    yt_release(mi);
    yt_release(m64);
    yt_release(m32);
    yt_release(i);
    yt_release(b);
    YT_ASSERT_NO_LEAKS();
}

Test(errors, out_and_inplace_targets)
{
    const int64_t n2 = 2, n3 = 3, s13[2] = {1, 3}, s43[2] = {4, 3};
    yt_tensor *out = yt_zeros(&n2, 1);
    yt_tensor *x = yt_ones(&n3, 1);
    cr_assert_eq(yt_add_out(out, x, x), YT_ERR_SHAPE);
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "add_out: out has shape [2] but the result has shape [3]");
    cr_assert_eq(yt_tensor_version(out), 0, "a refused out= must not count as a write");

    /* an in-place write into an expanded view would race on the shared element */
    yt_tensor *row = yt_zeros(s13, 2);
    yt_tensor *e = yt_expand(row, s43, 2);
    yt_tensor *ones = yt_ones(s43, 2);
    cr_assert_eq(yt_add_(e, ones), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "add_: self has several elements sharing one memory location "
                                  "(an expanded view); write into a contiguous copy instead");
    cr_assert_eq(yt_add_out(e, ones, ones), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "add_out: out has several elements sharing one memory location");
    double got[3];
    cr_assert_eq(yt_tensor_copy_to(row, got, sizeof got, YT_DTYPE_F64), YT_OK);
    cr_assert(got[0] == 0 && got[1] == 0 && got[2] == 0, "row changed: %g %g %g", got[0], got[1],
              got[2]);

    yt_release(ones);
    yt_release(e);
    yt_release(row);
    yt_release(x);
    yt_release(out);
    YT_ASSERT_NO_LEAKS();
}

Test(errors, negative_and_overflowing_sizes)
{
    const int64_t neg[2] = {2, -1};
    cr_assert_null(yt_zeros(neg, 2));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "zeros: size[1]=-1 is negative");

    /* 2^80 elements: the element count overflows */
    const int64_t huge[2] = {1LL << 40, 1LL << 40};
    cr_assert_null(yt_zeros(huge, 2));
    YT_ASSERT_ERROR(YT_ERR_NOMEM, "zeros: size [1099511627776, 1099511627776] has too many "
                                  "elements (overflows int64)");
    cr_assert_null(yt_randn(huge, 2));
    YT_ASSERT_ERROR(YT_ERR_NOMEM, "randn: size [1099511627776, 1099511627776] has too many");
    /* 2^62 elements fit an int64, but their 2^64 bytes do not */
    const int64_t big[2] = {1LL << 31, 1LL << 31};
    cr_assert_null(yt_zeros(big, 2));
    cr_assert_eq(yt_errcode(), YT_ERR_NOMEM, "got %s: %s", yt_status_name(yt_errcode()),
                 yt_errmsg());
    cr_assert(strstr(yt_errmsg(),
                     "a f32 tensor of shape [2147483648, 2147483648] needs more than 2^63 bytes"),
              "message: %s", yt_errmsg());
    /* views whose element count overflows are refused too */
    const int64_t one = 1;
    yt_tensor *t = yt_zeros(&one, 1);
    const int64_t wide[3] = {1LL << 40, 1LL << 40, 1};
    cr_assert_null(yt_expand(t, wide, 3));
    YT_ASSERT_ERROR(YT_ERR_NOMEM, "expand: target sizes");
    /* and yt_tensor_from_data checks the same */
    float dummy = 0;
    cr_assert_null(yt_tensor_from_data(&dummy, huge, 2, YT_DTYPE_F32));
    cr_assert_eq(yt_errcode(), YT_ERR_NOMEM, "got %s: %s", yt_status_name(yt_errcode()),
                 yt_errmsg());
    cr_assert_null(yt_tensor_from_data(&dummy, neg, 2, YT_DTYPE_F32));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "yt_tensor_from_data: sizes[1]=-1 is negative");
    cr_assert_null(yt_tensor_from_data(NULL, &one, 1, YT_DTYPE_F32));
    YT_ASSERT_ERROR(YT_ERR_VALUE,
                    "yt_tensor_from_data: data is NULL but the tensor has 1 elements");
    cr_assert_null(yt_tensor_from_data(&dummy, &one, YT_MAX_DIM + 1, YT_DTYPE_F32));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "yt_tensor_from_data: ndim=9 is out of range 0..8");
    yt_release(t);
    YT_ASSERT_NO_LEAKS();
}

Test(errors, inplace_cannot_demote_the_category)
{
    const int64_t n = 3;
    yt_tensor *i = yt_zeros_ex(&n, 1, YT_DTYPE_I64, YT_DEVICE_CPU);
    yt_tensor *f = yt_ones(&n, 1);
    cr_assert_eq(yt_add_(i, f), YT_ERR_DTYPE);
    YT_ASSERT_ERROR(YT_ERR_DTYPE, "add_: result type f32 can't be cast to self's dtype i64");
    cr_assert_eq(yt_tensor_version(i), 0, "a refused in-place op must not bump the version");
    cr_assert_eq(yt_add_scalar_(i, yt_float(0.5)), YT_ERR_DTYPE);
    YT_ASSERT_ERROR(YT_ERR_DTYPE, "add_: result type f32 can't be cast to self's dtype i64");
    /* the other way is fine: f32 += i64 */
    cr_assert_eq(yt_add_(f, i), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(yt_tensor_version(f), 1);
    yt_release(f);
    yt_release(i);
    YT_ASSERT_NO_LEAKS();
}

/* An op built on other public ops (a composite, or a kernel that calls one) reports their
 * failures under its own name first: the caller of conv1d or broadcast_to must not be left
 * guessing where "conv2d: ..." or "expand: ..." came from. Messages that already name the op
 * stay as they are. */
Test(errors, failures_inside_an_op_name_the_op_called)
{
    yt_tensor *x = yt_zeros((const int64_t[]){2, 3, 8}, 3);
    yt_tensor *w = yt_zeros((const int64_t[]){4, 3, 3}, 3);
    yt_tensor *b7 = yt_zeros((const int64_t[]){7}, 1);
    cr_assert_null(yt_conv1d_ex(x, w, b7, NULL, 0, NULL, 0, NULL, 0, 1));
    YT_ASSERT_ERROR(YT_ERR_SHAPE,
                    "conv1d: conv2d: bias must be 1-D of size out_channels=4, got shape [7]");
    yt_tensor *a = yt_zeros((const int64_t[]){3, 4}, 2);
    cr_assert_null(yt_broadcast_to(a, (const int64_t[]){3, 5}, 2));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "broadcast_to: expand: the expanded size 5 must match the "
                                  "existing size 4 at non-singleton dimension 1");
    yt_tensor *q = yt_zeros((const int64_t[]){2, 3, 4}, 3);
    yt_tensor *k = yt_zeros((const int64_t[]){3, 3, 4}, 3);
    cr_assert_null(yt_scaled_dot_product_attention(q, k, k));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "scaled_dot_product_attention: matmul: batch dims cannot "
                                  "broadcast: self.size(0)=2 vs other.size(0)=3");
    /* huber_loss and smooth_l1_loss said "sub: self.size(1)=4 cannot broadcast ..." */
    yt_tensor *t = yt_zeros((const int64_t[]){3, 5}, 2);
    cr_assert_null(yt_huber_loss(a, t));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "huber_loss: target of shape [3, 5] does not broadcast with "
                                  "self (the input) of shape [3, 4]");
    cr_assert_null(yt_smooth_l1_loss(a, t));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "smooth_l1_loss: target of shape [3, 5] does not broadcast");
    /* the op's own message is left alone */
    yt_tensor *x4 = yt_zeros((const int64_t[]){1, 2, 3, 4}, 4);
    cr_assert_null(yt_conv1d_ex(x4, w, NULL, NULL, 0, NULL, 0, NULL, 0, 1));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "conv1d: expected input.dim == 2 or input.dim == 3, got "
                                  "input.dim=4");
    /* an op handing its own arguments on renames the message instead */
    cr_assert_null(yt_max_pool2d(x4, (const int64_t[]){5}, 1));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "max_pool2d: kernel 5x5");
    yt_release(x), yt_release(w), yt_release(b7), yt_release(a), yt_release(q), yt_release(k);
    yt_release(t), yt_release(x4);
    YT_ASSERT_NO_LEAKS();
}

/* What the generated out= and in-place variants do with a message from an op they called: the
 * variant's full name goes in front, unless the message already names it or the base op. */
Test(errors, failures_inside_a_variant_name_the_variant)
{
    yt__fail_status(YT_ERR_SHAPE, "sub: self.size(0)=6 cannot broadcast with other.size(0)=3");
    yt__error_context("huber_loss", "_out");
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "huber_loss_out: sub: self.size(0)=6 cannot broadcast");
    yt__fail_status(YT_ERR_VALUE, "add_: self is a leaf that requires grad");
    yt__error_context("add", "_");
    YT_ASSERT_ERROR(YT_ERR_VALUE, "add_: self is a leaf that requires grad");
    yt__fail_status(YT_ERR_VALUE, "add: alpha must be finite");
    yt__error_context("add", "_out");
    YT_ASSERT_ERROR(YT_ERR_VALUE, "add: alpha must be finite");
    yt__fail_status(YT_ERR_VALUE, "addmm: beta must be finite");
    yt__error_context("add", "_out"); /* a longer name that begins with the base is another op */
    YT_ASSERT_ERROR(YT_ERR_VALUE, "add_out: addmm: beta must be finite");
    yt_clear_error();
}
