/* Indexing, selection and sorting beyond the generated cases: exact values, PyTorch's index rules
 * (no wrapping of negative indices in gather/scatter/index_select/embedding), the range-check
 * messages, embedding's padding_idx and scale_grad_by_freq gradients, stable sorting with NaN,
 * and non-contiguous inputs. Every test ends by proving that nothing leaked. */
#include <math.h>
#include <stdlib.h>

#include <criterion/criterion.h>

#include "test_util.h"

Test(index, gather_values_and_range_errors)
{
    const int64_t s[2] = {2, 5};
    yt_tensor *x = test_iota(s, 2); /* [[0..4] [5..9]] */
    const double iv[4] = {4, 0, 1, 1};
    const int64_t is[2] = {2, 2};
    yt_tensor *idx = test_from(iv, is, 2, YT_DTYPE_I64);
    yt_tensor *g = yt_gather(x, 1, idx);
    const double want[4] = {4, 0, 6, 6};
    test_expect_values(g, want, 4, is, 2);

    const double bad[4] = {7, 0, 1, 1};
    yt_tensor *bidx = test_from(bad, is, 2, YT_DTYPE_I64);
    cr_assert_null(yt_gather(x, 1, bidx));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "gather: index 7 is out of bounds for dimension 1 with size 5");
    const double neg[4] = {-1, 0, 1, 1};
    yt_tensor *nidx = test_from(neg, is, 2, YT_DTYPE_I64);
    cr_assert_null(yt_gather(x, 1, nidx));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "gather: index -1 is out of bounds for dimension 1 with size 5");

    /* transposed self: [[0 5] [1 6] ...] gathered along dim 0 */
    yt_tensor *xt = yt_t(x);
    const double tv[2] = {4, 2};
    const int64_t ts[2] = {1, 2};
    yt_tensor *tidx = test_from(tv, ts, 2, YT_DTYPE_I64);
    yt_tensor *gt = yt_gather(xt, 0, tidx);
    const double twant[2] = {4, 7};
    test_expect_values(gt, twant, 2, ts, 2);
    yt_release(gt);
    yt_release(tidx);
    yt_release(xt);
    yt_release(nidx);
    yt_release(bidx);
    yt_release(g);
    yt_release(idx);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

Test(index, scatter_family_values)
{
    const int64_t s[2] = {2, 4};
    yt_tensor *z = yt_zeros_ex(s, 2, YT_DTYPE_F64, YT_DEVICE_CPU);
    const double iv[4] = {3, 3, 0, 1};
    const int64_t is[2] = {2, 2};
    yt_tensor *idx = test_from(iv, is, 2, YT_DTYPE_I64);
    const double sv[6] = {1, 2, 9, 3, 4, 9};
    const int64_t ss[2] = {2, 3}; /* src larger than index: its last column is never read */
    yt_tensor *src = test_from(sv, ss, 2, YT_DTYPE_F64);
    yt_tensor *add = yt_scatter_add(z, 1, idx, src);
    const double awant[8] = {0, 0, 0, 3, 3, 4, 0, 0};
    test_expect_values(add, awant, 8, s, 2);
    yt_tensor *val = yt_scatter_value(z, 1, idx, yt_float(-1.5));
    const double vwant[8] = {0, 0, 0, -1.5, -1.5, -1.5, 0, 0};
    test_expect_values(val, vwant, 8, s, 2);
    const double one_v[4] = {0, 1, 0, 1};
    const int64_t os[2] = {2, 2};
    yt_tensor *oidx = test_from(one_v, os, 2, YT_DTYPE_I64);
    const double sv2[4] = {1, 2, 3, 4};
    yt_tensor *src2 = test_from(sv2, os, 2, YT_DTYPE_F64);
    yt_tensor *sc = yt_scatter(z, 1, oidx, src2);
    const double swant[8] = {1, 2, 0, 0, 3, 4, 0, 0};
    test_expect_values(sc, swant, 8, s, 2);
    const double bad[4] = {4, 0, 0, 0};
    yt_tensor *bidx = test_from(bad, os, 2, YT_DTYPE_I64);
    cr_assert_null(yt_scatter_add(z, 1, bidx, src2));
    YT_ASSERT_ERROR(YT_ERR_VALUE,
                    "scatter_add: index 4 is out of bounds for dimension 1 with size 4");

    /* gradient of scatter_add reaches src at the gathered positions, zero elsewhere */
    yt_set_requires_grad(src, true);
    yt_tensor *r = yt_scatter_add(z, 1, idx, src);
    yt_tensor *w = test_iota(s, 2);
    yt_tensor *rw = yt_mul(r, w);
    yt_tensor *total = yt_sum(rw);
    cr_assert_eq(yt_backward(total, NULL, NULL), YT_OK, "%s", yt_errmsg());
    yt_tensor *gs = yt_grad(src);
    const double gwant[6] = {3, 3, 0, 4, 5, 0};
    test_expect_values(gs, gwant, 6, ss, 2);
    yt_release(gs);
    yt_release(total);
    yt_release(rw);
    yt_release(w);
    yt_release(r);
    yt_release(bidx);
    yt_release(sc);
    yt_release(src2);
    yt_release(oidx);
    yt_release(val);
    yt_release(add);
    yt_release(src);
    yt_release(idx);
    yt_release(z);
    YT_ASSERT_NO_LEAKS();
}

Test(index, index_select_and_index_add)
{
    const int64_t s[2] = {3, 2};
    yt_tensor *x = test_iota(s, 2);
    const double iv[4] = {2, 0, 2, 1};
    const int64_t is[1] = {4};
    yt_tensor *idx = test_from(iv, is, 1, YT_DTYPE_I32);
    yt_tensor *sel = yt_index_select(x, 0, idx);
    const double want[8] = {4, 5, 0, 1, 4, 5, 2, 3};
    const int64_t rs[2] = {4, 2};
    test_expect_values(sel, want, 8, rs, 2);
    const double neg[1] = {-1};
    const int64_t ns[1] = {1};
    yt_tensor *nidx = test_from(neg, ns, 1, YT_DTYPE_I64);
    cr_assert_null(yt_index_select(x, 0, nidx));
    YT_ASSERT_ERROR(YT_ERR_VALUE,
                    "index_select: index -1 is out of bounds for dimension 0 with size 3");
    yt_tensor *ones = yt_ones_ex(rs, 2, YT_DTYPE_F64, YT_DEVICE_CPU);
    yt_tensor *acc = yt_index_add_ex(x, 0, idx, ones, yt_int(10));
    const double awant[6] = {10, 11, 12, 13, 24, 25};
    test_expect_values(acc, awant, 6, s, 2);
    yt_release(acc);
    yt_release(ones);
    yt_release(nidx);
    yt_release(sel);
    yt_release(idx);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

Test(index, embedding_padding_and_frequency_gradients)
{
    const int64_t ws[2] = {4, 2};
    yt_tensor *w = test_iota(ws, 2);
    yt_set_requires_grad(w, true);
    const double iv[5] = {1, 3, 1, 0, 3};
    const int64_t is[1] = {5};
    yt_tensor *idx = test_from(iv, is, 1, YT_DTYPE_I64);
    yt_tensor *e = yt_embedding_ex(w, idx, 3, false, false);
    const double want[10] = {2, 3, 6, 7, 2, 3, 0, 1, 6, 7};
    const int64_t es[2] = {5, 2};
    test_expect_values(e, want, 10, es, 2);
    yt_tensor *total = yt_sum(e);
    cr_assert_eq(yt_backward(total, NULL, NULL), YT_OK, "%s", yt_errmsg());
    yt_tensor *g = yt_grad(w);
    const double gwant[8] = {1, 1, 2, 2, 0, 0, 0, 0}; /* row 3 is padding: no gradient */
    test_expect_values(g, gwant, 8, ws, 2);
    yt_release(g);
    yt_release(total);

    yt_tensor *gout = yt_ones_ex(es, 2, YT_DTYPE_F64, YT_DEVICE_CPU);
    yt_tensor *scaled = yt_embedding_dense_backward(gout, idx, 4, -1, true);
    const double swant[8] = {1, 1, 1, 1, 0, 0, 1, 1}; /* each used row: count / count */
    test_expect_values(scaled, swant, 8, ws, 2);

    const double bad[1] = {4};
    const int64_t bs[1] = {1};
    yt_tensor *bidx = test_from(bad, bs, 1, YT_DTYPE_I64);
    cr_assert_null(yt_embedding(w, bidx));
    YT_ASSERT_ERROR(YT_ERR_VALUE,
                    "embedding: index 4 is out of bounds for dimension 0 with size 4");
    yt_release(bidx);
    yt_release(scaled);
    yt_release(gout);
    yt_release(e);
    yt_release(idx);
    yt_release(w);
    YT_ASSERT_NO_LEAKS();
}

Test(index, one_hot_nonzero_masked_select)
{
    const double cv[3] = {2, 0, 1};
    const int64_t cs[1] = {3};
    yt_tensor *c = test_from(cv, cs, 1, YT_DTYPE_I64);
    yt_tensor *oh = yt_one_hot(c);
    const double ohwant[9] = {0, 0, 1, 1, 0, 0, 0, 1, 0};
    const int64_t ohs[2] = {3, 3};
    test_expect_values(oh, ohwant, 9, ohs, 2);
    cr_assert_eq(yt_tensor_dtype(oh), YT_DTYPE_I64);
    cr_assert_null(yt_one_hot_ex(c, 2));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "one_hot: class value 2 is out of range for num_classes=2");

    const double mv[6] = {0, 1.5, 0, NAN, -2, 0};
    const int64_t ms[2] = {2, 3};
    yt_tensor *m = test_from(mv, ms, 2, YT_DTYPE_F64);
    yt_tensor *nz = yt_nonzero(m);
    const double nzwant[6] = {0, 1, 1, 0, 1, 1};
    const int64_t nzs[2] = {3, 2};
    test_expect_values(nz, nzwant, 6, nzs, 2);

    yt_tensor *x = test_iota(ms, 2);
    yt_set_requires_grad(x, true);
    const double maskv[3] = {1, 0, 1};
    const int64_t mks[1] = {3};
    yt_tensor *mask = test_from(maskv, mks, 1, YT_DTYPE_BOOL);
    yt_tensor *sel = yt_masked_select(x, mask); /* mask broadcast over rows */
    const double swant[4] = {0, 2, 3, 5};
    const int64_t ss[1] = {4};
    test_expect_values(sel, swant, 4, ss, 1);
    yt_tensor *total = yt_sum(sel);
    cr_assert_eq(yt_backward(total, NULL, NULL), YT_OK, "%s", yt_errmsg());
    yt_tensor *g = yt_grad(x);
    const double gwant[6] = {1, 0, 1, 1, 0, 1};
    test_expect_values(g, gwant, 6, ms, 2);
    yt_release(g);
    yt_release(total);
    yt_release(sel);
    yt_release(mask);
    yt_release(x);
    yt_release(nz);
    yt_release(m);
    yt_release(oh);
    yt_release(c);
    YT_ASSERT_NO_LEAKS();
}

Test(index, argsort_stable_with_nan)
{
    const double v[6] = {3, NAN, 1, 3, -INFINITY, 1};
    const int64_t s[1] = {6};
    yt_tensor *x = test_from(v, s, 1, YT_DTYPE_F32);
    yt_tensor *a = yt_argsort(x);
    const double awant[6] = {4, 2, 5, 0, 3, 1}; /* ties keep their order; NaN last */
    test_expect_values(a, awant, 6, s, 1);
    yt_tensor *d = yt_argsort_ex(x, 0, true);
    const double dwant[6] = {1, 0, 3, 2, 5, 4}; /* NaN first, ties still in order */
    test_expect_values(d, dwant, 6, s, 1);
    const int64_t bs[1] = {3};
    int64_t raw[3] = {9007199254740993LL, 9007199254740992LL, -1};
    yt_tensor *bi = yt_tensor_from_data(raw, bs, 1, YT_DTYPE_I64);
    yt_tensor *ba = yt_argsort(bi); /* i64 keys compare exactly, above 2^53 too */
    const double bwant[3] = {2, 1, 0};
    test_expect_values(ba, bwant, 3, bs, 1);
    yt_release(ba);
    yt_release(bi);
    yt_release(d);
    yt_release(a);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

Test(index, advanced_indexing_rules)
{
    const int64_t s[3] = {2, 3, 4};
    yt_tensor *x = test_iota(s, 3);
    const double iv[2] = {1, 0}, jv[2] = {2, -1};
    const int64_t is[1] = {2};
    yt_tensor *i = test_from(iv, is, 1, YT_DTYPE_I64), *j = test_from(jv, is, 1, YT_DTYPE_I64);
    /* adjacent indexed dims stay in place: x[:, [1, 0], [2, -1]] is [2, 2] */
    yt_tensor *adj[3] = {NULL, i, j};
    yt_tensor *a = yt_index(x, adj, 3);
    const double awant[4] = {6, 3, 18, 15};
    const int64_t as[2] = {2, 2};
    test_expect_values(a, awant, 4, as, 2);
    /* separated ones lead: x[[1, 0], :, [2, -1]] is [2, 3] */
    yt_tensor *sep[3] = {i, NULL, j};
    yt_tensor *b = yt_index(x, sep, 3);
    const double bwant[6] = {14, 18, 22, 3, 7, 11};
    const int64_t bs[2] = {2, 3};
    test_expect_values(b, bwant, 6, bs, 2);
    /* a bool mask over two dims */
    const double mv[6] = {1, 0, 0, 0, 1, 1};
    const int64_t ms[2] = {2, 3};
    yt_tensor *m = test_from(mv, ms, 2, YT_DTYPE_BOOL);
    yt_tensor *byMask[1] = {m};
    yt_tensor *c = yt_index(x, byMask, 1);
    const double cwant[12] = {0, 1, 2, 3, 16, 17, 18, 19, 20, 21, 22, 23};
    const int64_t cs[2] = {3, 4};
    test_expect_values(c, cwant, 12, cs, 2);
    /* out of range, and too many indices */
    const double bad[1] = {3};
    const int64_t one[1] = {1};
    yt_tensor *k = test_from(bad, one, 1, YT_DTYPE_I64);
    yt_tensor *oob[2] = {NULL, k};
    cr_assert_null(yt_index(x, oob, 2));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "index: index 3 is out of bounds for dimension 1 with size 3");
    yt_tensor *many[4] = {i, i, i, i};
    cr_assert_null(yt_index(x, many, 4));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "index: too many indices");
    /* index_put with accumulate adds at repeated positions */
    const double dup[3] = {1, 1, 0};
    const int64_t ds[1] = {3};
    yt_tensor *d = test_from(dup, ds, 1, YT_DTYPE_I64);
    const int64_t vs[1] = {3};
    yt_tensor *row = test_iota(vs, 1);
    const int64_t s2[2] = {2, 3};
    yt_tensor *z = yt_zeros_ex(s2, 2, YT_DTYPE_F64, YT_DEVICE_CPU);
    yt_tensor *put_idx[1] = {d};
    yt_tensor *acc = yt_index_put_ex(z, put_idx, 1, row, true); /* row broadcast per index */
    const double accwant[6] = {0, 1, 2, 0, 2, 4};
    test_expect_values(acc, accwant, 6, s2, 2);
    yt_release(acc);
    yt_release(z);
    yt_release(row);
    yt_release(d);
    yt_release(k);
    yt_release(c);
    yt_release(m);
    yt_release(b);
    yt_release(a);
    yt_release(j);
    yt_release(i);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

Test(index, sort_and_topk)
{
    const double v[6] = {2, 5, 2, NAN, -1, 5};
    const int64_t s[1] = {6};
    yt_tensor *x = test_from(v, s, 1, YT_DTYPE_F64);
    yt_tensor *values = NULL, *indices = NULL;
    cr_assert_eq(yt_sort_ex(x, 0, true, &values, &indices), YT_OK, "%s", yt_errmsg());
    const double vwant[6] = {NAN, 5, 5, 2, 2, -1}, iwant[6] = {3, 1, 5, 0, 2, 4};
    test_expect_values(values, vwant, 6, s, 1);
    test_expect_values(indices, iwant, 6, s, 1);
    yt_release(values);
    yt_release(indices);
    cr_assert_eq(yt_topk_ex(x, 2, 0, false, true, &values, &indices), YT_OK, "%s", yt_errmsg());
    const double twant[2] = {-1, 2}, tiwant[2] = {4, 0};
    const int64_t ts[1] = {2};
    test_expect_values(values, twant, 2, ts, 1);
    test_expect_values(indices, tiwant, 2, ts, 1);
    yt_release(values);
    yt_release(indices);
    values = indices = (yt_tensor *)1;
    cr_assert_neq(yt_topk_ex(x, 7, 0, true, true, &values, &indices), YT_OK);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "topk: k=7 is out of range for dimension 0 of size 6");
    cr_assert_null(values);
    cr_assert_null(indices);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

/* A class value of INT64_MAX would need INT64_MAX + 1 classes: an error naming the value, where
 * the inferred count used to overflow (top + 1). */
Test(index, one_hot_class_int64_max)
{
    const int64_t v[2] = {3, INT64_MAX}, s[1] = {2};
    yt_tensor *c = yt_tensor_from_data(v, s, 1, YT_DTYPE_I64);
    cr_assert_null(yt_one_hot(c));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "one_hot: class value 9223372036854775807 would need "
                                  "num_classes=9223372036854775807 + 1, which overflows int64");
    cr_assert_null(yt_one_hot_ex(c, INT64_MAX));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "one_hot: class value 9223372036854775807 is out of range for "
                                  "num_classes=9223372036854775807 (expected "
                                  "0..9223372036854775806)");
    yt_release(c);
    YT_ASSERT_NO_LEAKS();
}

/* values that do not broadcast to the indexed shape are index_put's error; they used to be
 * reported by the expand inside it ("expand: the expanded size 2 must match ..."). */
Test(index, index_put_values_of_the_wrong_shape_name_index_put)
{
    yt_tensor *x = yt_zeros((const int64_t[]){3, 4}, 2);
    const int64_t iv[2] = {0, -1}, is[1] = {2};
    yt_tensor *idx = yt_tensor_from_data(iv, is, 1, YT_DTYPE_I64);
    yt_tensor *v34 = yt_ones((const int64_t[]){3, 4}, 2),
              *v24 = yt_ones((const int64_t[]){2, 4}, 2);
    yt_tensor *v4 = yt_ones((const int64_t[]){4}, 1);
    cr_assert_null(yt_index_put(x, (yt_tensor *[]){idx}, 1, v34));
    YT_ASSERT_ERROR(
        YT_ERR_SHAPE,
        "index_put: values of shape [3, 4] cannot broadcast to the indexed shape [2, 4]");
    cr_assert_null(yt_index_put(x, NULL, 0, v24));
    YT_ASSERT_ERROR(
        YT_ERR_SHAPE,
        "index_put: values of shape [2, 4] cannot broadcast to the indexed shape [3, 4]");
    yt_tensor *ok = yt_index_put(x, (yt_tensor *[]){idx}, 1, v4);
    int64_t n;
    double *got = test_values(ok, &n);
    const double want[12] = {1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1};
    for (int i = 0; i < 12; i++)
        cr_assert_eq(got[i], want[i], "[%d]: %g, expected %g", i, got[i], want[i]);
    free(got);
    yt_release(ok), yt_release(x), yt_release(idx), yt_release(v34), yt_release(v24);
    yt_release(v4);
    YT_ASSERT_NO_LEAKS();
}

/* A 0-d index or src counts as 1-D of one element, in scatter's checks and in its backward: a
 * 0-d index beside a src of [2] scatters src[0] and gives src the gradient [g, 0] (its backward
 * refused the pair, reading sizes[0] of the 0-d index); an index of 2 elements against a 0-d src
 * (one element) is refused, where it was let through by reading the 0-d src's sizes[0]. */
Test(index, scatter_counts_0d_as_one_element)
{
    const double three = 3, idx0 = 0, src_v[2] = {5, 7}, grad_want[2] = {1, 0};
    const int64_t s2[1] = {2};
    yt_tensor *self = test_from(&three, NULL, 0, YT_DTYPE_F64);
    yt_tensor *index = test_from(&idx0, NULL, 0, YT_DTYPE_I64);
    yt_tensor *src = test_from(src_v, s2, 1, YT_DTYPE_F64);
    cr_assert_eq(yt_set_requires_grad(src, true), YT_OK);
    yt_tensor *r = yt_scatter_add(self, 0, index, src);
    cr_assert_not_null(r, "%s", yt_errmsg());
    cr_assert_float_eq(yt_item(r), 8.0, 0.0);
    cr_assert_eq(yt_backward(r, NULL, NULL), YT_OK, "%s", yt_errmsg());
    yt_tensor *grad = yt_grad(src);
    test_expect_values(grad, grad_want, 2, s2, 1);
    yt_tensor *two = test_from((const double[]){0, 0}, s2, 1, YT_DTYPE_I64);
    yt_tensor *one = test_from(&three, NULL, 0, YT_DTYPE_F64);
    yt_tensor *wide = yt_zeros_ex(s2, 1, YT_DTYPE_F64, YT_DEVICE_NONE);
    cr_assert_null(yt_scatter_add(wide, 0, two, one));
    YT_ASSERT_ERROR(YT_ERR_SHAPE, "scatter_add: index.size(0)=2 must not exceed src.size(0)=1");
    yt_release(wide), yt_release(one), yt_release(two), yt_release(grad), yt_release(r);
    yt_release(src), yt_release(index), yt_release(self);
    YT_ASSERT_NO_LEAKS();
}
