/* dtypes: names and sizes, PyTorch's promotion table for every pair, result_type as the public
 * ops apply it (dimensioned tensors, then 0-d tensors, then scalars), round trips of every dtype
 * through yt_tensor_from_data / yt_tensor_copy_to, and f16 / bf16 rounding through yt_to. The
 * expected values were checked against PyTorch (torch.promote_types and tensor arithmetic).
 * Every test ends by proving that nothing leaked. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "test_util.h"

#define BL  YT_DTYPE_BOOL
#define U8  YT_DTYPE_U8
#define I8  YT_DTYPE_I8
#define I16 YT_DTYPE_I16
#define I32 YT_DTYPE_I32
#define I64 YT_DTYPE_I64
#define F16 YT_DTYPE_F16
#define BF  YT_DTYPE_BF16
#define F32 YT_DTYPE_F32
#define F64 YT_DTYPE_F64

/* torch.promote_types(row, column), printed by PyTorch 1.13 and copied here row by row. */
/* clang-format off */
static const yt_dtype torch_promote[YT_DTYPE_COUNT][YT_DTYPE_COUNT] = {
    /*         BL   U8   I8   I16  I32  I64  F16  BF   F32  F64 */
    /* BL  */ {BL,  U8,  I8,  I16, I32, I64, F16, BF,  F32, F64},
    /* U8  */ {U8,  U8,  I16, I16, I32, I64, F16, BF,  F32, F64},
    /* I8  */ {I8,  I16, I8,  I16, I32, I64, F16, BF,  F32, F64},
    /* I16 */ {I16, I16, I16, I16, I32, I64, F16, BF,  F32, F64},
    /* I32 */ {I32, I32, I32, I32, I32, I64, F16, BF,  F32, F64},
    /* I64 */ {I64, I64, I64, I64, I64, I64, F16, BF,  F32, F64},
    /* F16 */ {F16, F16, F16, F16, F16, F16, F16, F32, F32, F64},
    /* BF  */ {BF,  BF,  BF,  BF,  BF,  BF,  F32, BF,  F32, F64},
    /* F32 */ {F32, F32, F32, F32, F32, F32, F32, F32, F32, F64},
    /* F64 */ {F64, F64, F64, F64, F64, F64, F64, F64, F64, F64},
};
/* clang-format on */

Test(dtype, promote_types_matches_pytorch_for_every_pair)
{
    for (int a = 0; a < YT_DTYPE_COUNT; a++) {
        for (int b = 0; b < YT_DTYPE_COUNT; b++) {
            yt_dtype got = yt_promote_types((yt_dtype)a, (yt_dtype)b);
            cr_assert_eq(got, torch_promote[a][b], "promote(%s, %s) = %s, expected %s",
                         yt_dtype_name((yt_dtype)a), yt_dtype_name((yt_dtype)b), yt_dtype_name(got),
                         yt_dtype_name(torch_promote[a][b]));
            cr_assert_eq(yt_promote_types((yt_dtype)b, (yt_dtype)a), got,
                         "promotion of %s and %s is not symmetric", yt_dtype_name((yt_dtype)a),
                         yt_dtype_name((yt_dtype)b));
        }
    }
    cr_assert_eq(yt_errcode(), YT_OK, "valid dtypes recorded an error: %s", yt_errmsg());

    cr_assert_eq(yt_promote_types(YT_DTYPE_NONE, F32), YT_DTYPE_NONE);
    YT_ASSERT_ERROR(YT_ERR_DTYPE, "yt_promote_types: invalid dtype (a=-1, b=8)");
    cr_assert_eq(yt_promote_types(F32, YT_DTYPE_COUNT), YT_DTYPE_NONE);
    YT_ASSERT_ERROR(YT_ERR_DTYPE, "yt_promote_types: invalid dtype (a=8, b=10)");
    YT_ASSERT_NO_LEAKS();
}

Test(dtype, names_sizes_and_categories)
{
    static const char *const names[YT_DTYPE_COUNT] = {"bool", "u8",  "i8",   "i16", "i32",
                                                      "i64",  "f16", "bf16", "f32", "f64"};
    static const size_t sizes[YT_DTYPE_COUNT] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8};
    for (int d = 0; d < YT_DTYPE_COUNT; d++) {
        cr_assert_str_eq(yt_dtype_name((yt_dtype)d), names[d]);
        cr_assert_eq(yt_dtype_size((yt_dtype)d), sizes[d], "size of %s is %zu, expected %zu",
                     names[d], yt_dtype_size((yt_dtype)d), sizes[d]);
        bool floating = d >= YT_DTYPE_F16;
        cr_assert_eq(yt_dtype_is_floating((yt_dtype)d), floating, "is_floating(%s) is %d", names[d],
                     (int)yt_dtype_is_floating((yt_dtype)d));
    }
    cr_assert_str_eq(yt_dtype_name(YT_DTYPE_NONE), "none");
    cr_assert_str_eq(yt_dtype_name(YT_DTYPE_COUNT), "?");
    cr_assert_str_eq(yt_dtype_name((yt_dtype)-7), "?");
    cr_assert_eq(yt_dtype_size(YT_DTYPE_NONE), 0);
    cr_assert_eq(yt_dtype_size(YT_DTYPE_COUNT), 0);
    cr_assert(!yt_dtype_is_floating(YT_DTYPE_NONE));
    cr_assert_str_eq(yt_device_name(YT_DEVICE_CPU), "cpu");
    cr_assert_str_eq(yt_device_name(YT_DEVICE_CUDA), "cuda");
    cr_assert_str_eq(yt_device_name(YT_DEVICE_NONE), "none");
    cr_assert_str_eq(yt_device_name((yt_device)9), "?");
    YT_ASSERT_NO_LEAKS();
}

/* A tensor of `n` values (given as doubles) converted to `dtype`: 1-D, or 0-d when n == 0. */
static yt_tensor *
make(yt_dtype dtype, const double *values, int64_t n)
{
    yt_tensor *f = n == 0 ? yt_tensor_from_data(values, NULL, 0, YT_DTYPE_F64)
                          : yt_tensor_from_data(values, &n, 1, YT_DTYPE_F64);
    cr_assert_not_null(f, "%s", yt_errmsg());
    yt_tensor *t = yt_to(f, dtype);
    cr_assert_not_null(t, "to(%s): %s", yt_dtype_name(dtype), yt_errmsg());
    yt_release(f);
    cr_assert_eq(yt_tensor_dtype(t), dtype);
    return t;
}

/* Asserts that `t` (a new reference, released here) has `dtype` and holds `expect`. */
static void
expect_result(yt_tensor *t, yt_dtype dtype, const double *expect, int64_t n, const char *what)
{
    cr_assert_not_null(t, "%s: %s", what, yt_errmsg());
    cr_assert_eq(yt_tensor_dtype(t), dtype, "%s has dtype %s, expected %s", what,
                 yt_dtype_name(yt_tensor_dtype(t)), yt_dtype_name(dtype));
    cr_assert_eq(yt_tensor_numel(t), n, "%s has %lld elements, expected %lld", what,
                 (long long)yt_tensor_numel(t), (long long)n);
    double got[8];
    cr_assert_eq(yt_tensor_copy_to(t, got, sizeof got, YT_DTYPE_F64), YT_OK, "%s", yt_errmsg());
    for (int64_t i = 0; i < n; i++)
        cr_assert(got[i] == expect[i], "%s element %lld is %.17g, expected %.17g", what,
                  (long long)i, got[i], expect[i]);
    yt_release(t);
}

Test(dtype, result_type_of_tensor_and_python_scalar)
{
    const double iv[2] = {1, 2};
    yt_tensor *i64 = make(I64, iv, 2);
    yt_tensor *i32 = make(I32, iv, 2);
    yt_tensor *u8 = make(U8, iv, 2);
    yt_tensor *f16 = make(F16, iv, 2);
    const double bv[2] = {1, 0};
    yt_tensor *b = make(BL, bv, 2);

    /* a float scalar raises an integral tensor to the default float dtype, f32, not f64 */
    expect_result(yt_add_scalar(i64, yt_float(0.5)), F32, (const double[]){1.5, 2.5}, 2,
                  "i64 + 0.5");
    /* an int scalar never widens an integral tensor */
    expect_result(yt_add_scalar(i32, yt_int(2)), I32, (const double[]){3, 4}, 2, "i32 + 2");
    expect_result(yt_mul_scalar(u8, yt_int(100)), U8, (const double[]){100, 200}, 2, "u8 * 100");
    expect_result(yt_add_scalar(u8, yt_bool(true)), U8, (const double[]){2, 3}, 2, "u8 + True");
    /* bool tensor + int scalar is i64; + float scalar is f32 */
    expect_result(yt_add_scalar(b, yt_int(2)), I64, (const double[]){3, 2}, 2, "bool + 2");
    expect_result(yt_add_scalar(b, yt_float(2.5)), F32, (const double[]){3.5, 2.5}, 2,
                  "bool + 2.5");
    /* a float scalar does not widen a floating tensor */
    expect_result(yt_add_scalar(f16, yt_float(2.5)), F16, (const double[]){3.5, 4.5}, 2,
                  "f16 + 2.5");

    yt_release(b);
    yt_release(f16);
    yt_release(u8);
    yt_release(i32);
    yt_release(i64);
    YT_ASSERT_NO_LEAKS();
}

Test(dtype, result_type_of_dimensioned_and_zero_dim_tensors)
{
    const double iv[2] = {1, 2}, half[1] = {1.5}, big[1] = {1000};
    yt_tensor *i64 = make(I64, iv, 2);
    yt_tensor *i32 = make(I32, iv, 2);
    yt_tensor *i8 = make(I8, iv, 2);
    yt_tensor *f32 = make(F32, iv, 2);
    yt_tensor *f16 = make(F16, iv, 2);
    yt_tensor *f64_0d = make(F64, half, 0);
    yt_tensor *f16_0d = make(F16, half, 0);
    yt_tensor *i64_0d = make(I64, big, 0);
    yt_tensor *f64_1 = make(F64, half, 1);

    /* a 0-d tensor of the same category does not widen: f32 + f64 scalar tensor stays f32 */
    expect_result(yt_add(f32, f64_0d), F32, (const double[]){2.5, 3.5}, 2, "f32 + 0-d f64");
    expect_result(yt_add(f16, f64_0d), F16, (const double[]){2.5, 3.5}, 2, "f16 + 0-d f64");
    /* ...but one of a higher category promotes with it (PyTorch: int64 + 0-d float64 is
     * float64, not the default float32) */
    expect_result(yt_add(i64, f64_0d), F64, (const double[]){2.5, 3.5}, 2, "i64 + 0-d f64");
    expect_result(yt_add(i32, f16_0d), F16, (const double[]){2.5, 3.5}, 2, "i32 + 0-d f16");
    /* integral 0-d tensor into an integral tensor: the dimensioned one decides (1000 wraps in
     * i8 arithmetic exactly as in PyTorch: (1 + 1000) mod 256 = -23) */
    expect_result(yt_add(i8, i64_0d), I8, (const double[]){-23, -22}, 2, "i8 + 0-d i64");
    /* dimensioned tensors promote fully */
    expect_result(yt_add(i64, f64_1), F64, (const double[]){2.5, 3.5}, 2, "i64 + [1] f64");
    /* two 0-d tensors promote fully */
    expect_result(yt_add(i64_0d, f16_0d), F16, (const double[]){1001.5}, 1, "0-d i64 + 0-d f16");
    /* a 0-d tensor with a float scalar: the scalar raises it to f32 */
    expect_result(yt_add_scalar(i64_0d, yt_float(0.5)), F32, (const double[]){1000.5}, 1,
                  "0-d i64 + 0.5");

    yt_release(f64_1);
    yt_release(i64_0d);
    yt_release(f16_0d);
    yt_release(f64_0d);
    yt_release(f16);
    yt_release(f32);
    yt_release(i8);
    yt_release(i32);
    yt_release(i64);
    YT_ASSERT_NO_LEAKS();
}

Test(dtype, result_type_of_division_comparison_and_sum)
{
    const double av[3] = {1, 2, 3}, bv[3] = {2, 2, 2}, flags[3] = {1, 0, 1};
    yt_tensor *a = make(I64, av, 3);
    yt_tensor *b = make(I64, bv, 3);
    yt_tensor *f = make(BL, flags, 3);

    /* true division of integers gives the default float dtype */
    expect_result(yt_div(a, b), F32, (const double[]){0.5, 1, 1.5}, 3, "i64 / i64");
    expect_result(yt_eq(a, b), BL, (const double[]){0, 1, 0}, 3, "i64 == i64");
    expect_result(yt_sum(a), I64, (const double[]){6}, 1, "sum(i64)");
    expect_result(yt_sum(f), I64, (const double[]){2}, 1, "sum(bool)");

    yt_release(f);
    yt_release(b);
    yt_release(a);
    YT_ASSERT_NO_LEAKS();
}

Test(dtype, bool_plus_bool_stays_bool)
{
    const bool av[4] = {true, true, false, false}, bv[4] = {true, false, true, false};
    const int64_t n = 4;
    yt_tensor *a = yt_tensor_from_data(av, &n, 1, BL);
    yt_tensor *b = yt_tensor_from_data(bv, &n, 1, BL);
    /* PyTorch: True + True is True (logical or), and the dtype stays bool */
    expect_result(yt_add(a, b), BL, (const double[]){1, 1, 1, 0}, 4, "bool + bool");
    expect_result(yt_mul(a, b), BL, (const double[]){1, 0, 0, 0}, 4, "bool * bool");
    yt_release(b);
    yt_release(a);
    YT_ASSERT_NO_LEAKS();
}

Test(dtype, from_data_round_trips_every_dtype)
{
    /* six valid elements of each dtype, as raw bytes */
    const bool b[6] = {true, false, false, true, true, false};
    const uint8_t u8[6] = {0, 1, 127, 128, 200, 255};
    const int8_t i8[6] = {-128, -1, 0, 1, 100, 127};
    const int16_t i16[6] = {-32768, -300, 0, 7, 1000, 32767};
    const int32_t i32[6] = {INT32_MIN, -70000, 0, 1, 123456789, INT32_MAX};
    const int64_t i64[6] = {INT64_MIN, -5000000000LL, 0, 1, 1LL << 53, INT64_MAX};
    const uint16_t f16[6] = {0x0000, 0x8000, 0x3c00,
                             0xc000, 0x7bff, 0x0001}; /* 0 -0 1 -2 max sub */
    const uint16_t bf16[6] = {0x0000, 0x3f80, 0xbf80, 0x4049, 0x7f7f, 0x0001};
    const float f32[6] = {0.0f, -0.0f, 1.5f, -3.25e10f, 1e-40f, 3.4028235e38f};
    const double f64[6] = {0.0, -1.0, 0.1, 1e300, -4.9e-324, 2.5};
    const void *data[YT_DTYPE_COUNT] = {b, u8, i8, i16, i32, i64, f16, bf16, f32, f64};
    const int64_t sizes[2] = {2, 3};

    for (int d = 0; d < YT_DTYPE_COUNT; d++) {
        yt_dtype dtype = (yt_dtype)d;
        yt_tensor *t = yt_tensor_from_data(data[d], sizes, 2, dtype);
        cr_assert_not_null(t, "%s: %s", yt_dtype_name(dtype), yt_errmsg());
        cr_assert_eq(yt_tensor_dtype(t), dtype);
        cr_assert_eq(yt_tensor_dim(t), 2);
        cr_assert_eq(yt_tensor_numel(t), 6);
        cr_assert(yt_tensor_is_contiguous(t));
        cr_assert_eq(yt_tensor_stride(t, 0), 3, "stride(0) is %lld",
                     (long long)yt_tensor_stride(t, 0));
        unsigned char out[56];
        memset(out, 0xAB, sizeof out);
        size_t nbytes = 6 * yt_dtype_size(dtype);
        cr_assert_eq(yt_tensor_copy_to(t, out, nbytes, dtype), YT_OK, "%s: %s",
                     yt_dtype_name(dtype), yt_errmsg());
        cr_assert(memcmp(out, data[d], nbytes) == 0, "%s did not round-trip bit for bit",
                  yt_dtype_name(dtype));
        cr_assert_eq(out[nbytes], 0xAB, "%s: copy_to wrote past the elements",
                     yt_dtype_name(dtype));
        /* one byte too small is refused, and nothing is written */
        cr_assert_eq(yt_tensor_copy_to(t, out, nbytes - 1, dtype), YT_ERR_VALUE);
        YT_ASSERT_ERROR(YT_ERR_VALUE, "yt_tensor_copy_to: 6 elements of ");
        yt_release(t);
    }
    YT_ASSERT_NO_LEAKS();
}

Test(dtype, from_data_normalises_bool_bytes)
{
    const unsigned char raw[3] = {0, 2, 255};
    const int64_t n = 3;
    yt_tensor *t = yt_tensor_from_data(raw, &n, 1, BL);
    unsigned char out[3];
    cr_assert_eq(yt_tensor_copy_to(t, out, sizeof out, BL), YT_OK, "%s", yt_errmsg());
    cr_assert(out[0] == 0 && out[1] == 1 && out[2] == 1, "bool bytes %u %u %u, expected 0 1 1",
              out[0], out[1], out[2]);
    yt_release(t);
    YT_ASSERT_NO_LEAKS();
}

Test(dtype, copy_to_converts_every_dtype_to_f64)
{
    const double values[4] = {0, 1, 5, 100};
    const double flags[4] = {0, 1, 1, 1};
    for (int d = 0; d < YT_DTYPE_COUNT; d++) {
        const double *expect = d == YT_DTYPE_BOOL ? flags : values;
        yt_tensor *t = make((yt_dtype)d, values, 4);
        double got[4];
        cr_assert_eq(yt_tensor_copy_to(t, got, sizeof got, F64), YT_OK, "%s", yt_errmsg());
        for (int i = 0; i < 4; i++)
            cr_assert(got[i] == expect[i], "%s element %d reads %.17g, expected %.17g",
                      yt_dtype_name((yt_dtype)d), i, got[i], expect[i]);
        yt_release(t);
    }
    YT_ASSERT_NO_LEAKS();
}

/* f32 values through yt_to(f16 or bf16) and back. */
static void
round_trip(yt_dtype half, const float *in, const float *expect, int64_t n)
{
    yt_tensor *t = yt_tensor_from_data(in, &n, 1, F32);
    yt_tensor *h = yt_to(t, half);
    yt_tensor *back = yt_to(h, F32);
    cr_assert_not_null(back, "%s", yt_errmsg());
    float got[16];
    cr_assert_eq(yt_tensor_copy_to(back, got, sizeof got, F32), YT_OK, "%s", yt_errmsg());
    for (int64_t i = 0; i < n; i++) {
        bool same = isnan(expect[i]) ? isnan(got[i])
                                     : got[i] == expect[i] && signbit(got[i]) == signbit(expect[i]);
        cr_assert(same, "%s(%.9g) came back as %.9g, expected %.9g", yt_dtype_name(half),
                  (double)in[i], (double)got[i], (double)expect[i]);
    }
    yt_release(back);
    yt_release(h);
    yt_release(t);
}

Test(dtype, f16_round_trips_through_to)
{
    /* exactly representable: unchanged */
    const float exact[8] = {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 0x1p-14f, 0x1p-24f, 1000.5f};
    round_trip(F16, exact, exact, 8);
    /* rounding to nearest even; 65520 (halfway to 2^16) and beyond overflow to inf */
    const float in[8] = {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 65520.0f, 1e6f, -1e6f,
                         0x1p-25f,        0x1.8p-25f,          NAN};
    const float out[8] = {1.0f, 1.0f + 0x1p-9f, INFINITY, INFINITY, -INFINITY, 0.0f, 0x1p-24f, NAN};
    round_trip(F16, in, out, 8);
    YT_ASSERT_NO_LEAKS();
}

Test(dtype, bf16_round_trips_through_to)
{
    const float exact[5] = {0.0f, -1.0f, 3.140625f, 0x1p-126f, 3.3895314e38f};
    round_trip(BF, exact, exact, 5);
    /* 8 significant bits: 1 + 2^-8 is a tie and goes to even (1); 1 + 3 * 2^-8 to 1 + 2^-6 */
    const float in[4] = {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 3.4e38f, NAN};
    const float out[4] = {1.0f, 1.0f + 0x1p-6f, INFINITY, NAN};
    round_trip(BF, in, out, 4);
    YT_ASSERT_NO_LEAKS();
}

/* Casts a contiguous run takes 8 lanes at a time (f32 <-> f16, f32 <-> bf16, f32 -> i32) give
 * the bits the element loop gives a strided run of the same values: column 0 of an [N, 2] tensor,
 * cast as a view (element by element) and as a contiguous copy (vector runs, then a tail).
 * f32 sources: every 4099th bit pattern and edge values (NaNs with payloads, subnormals, half's
 * and bf16's rounding ties and overflow, i32's range ends); f16 and bf16 sources: all 65536, whose
 * contiguous copies keep every bit. */
static void
expect_cast_paths_agree(yt_tensor *pairs, yt_dtype to, const char *what)
{
    yt_tensor *view = yt_select(pairs, 1, 0);
    yt_tensor *dense = yt_contiguous(view);
    yt_tensor *a = yt_to(view, to), *b = yt_to(dense, to);
    cr_assert(a != NULL && b != NULL, "%s: %s", what, yt_errmsg());
    size_t bytes = (size_t)yt_tensor_numel(a) * yt_dtype_size(to);
    const unsigned char *pa = yt_tensor_data(a), *pb = yt_tensor_data(b);
    for (size_t i = 0; i < bytes; i++)
        cr_assert(pa[i] == pb[i], "%s: element %zu: the element loop and the vector run differ",
                  what, i / yt_dtype_size(to));
    yt_release(a);
    yt_release(b);
    yt_release(dense);
    yt_release(view);
}

Test(dtype, vector_casts_match_the_element_loop)
{
    enum { N = (1 << 20) + 13 };
    uint32_t *bits = malloc(sizeof(uint32_t) * 2 * N);
    const uint32_t edges[] = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u,
                              0x7f800001u, 0xffbfffffu, 0x7fa5a5a5u, 0x00000001u, 0x807fffffu,
                              0x477fe000u, 0x477ff000u, 0x477fefffu, 0x33000000u, 0x33000001u,
                              0x3f808000u, 0x3f818000u, 0x7f7fffffu, 0x4f000000u, 0xcf000000u,
                              0x4effffffu, 0xcf000001u};
    const int n_edges = sizeof edges / sizeof edges[0];
    for (uint32_t i = 0; i < N; i++) {
        bits[2 * i] = i < (uint32_t)n_edges ? edges[i] : i * 4099u;
        bits[2 * i + 1] = 0;
    }
    const int64_t sizes[2] = {N, 2};
    yt_tensor *f32 = yt_tensor_from_data(bits, sizes, 2, YT_DTYPE_F32);
    cr_assert_not_null(f32, "%s", yt_errmsg());
    expect_cast_paths_agree(f32, YT_DTYPE_F16, "f32 -> f16");
    expect_cast_paths_agree(f32, YT_DTYPE_BF16, "f32 -> bf16");
    expect_cast_paths_agree(f32, YT_DTYPE_I32, "f32 -> i32");
    yt_release(f32);
    uint16_t *halves = malloc(sizeof(uint16_t) * 2 * 65536);
    for (uint32_t i = 0; i < 65536; i++) {
        halves[2 * i] = (uint16_t)i;
        halves[2 * i + 1] = 0;
    }
    const int64_t hsizes[2] = {65536, 2};
    const yt_dtype half_types[2] = {YT_DTYPE_F16, YT_DTYPE_BF16};
    for (int k = 0; k < 2; k++) {
        yt_tensor *h = yt_tensor_from_data(halves, hsizes, 2, half_types[k]);
        cr_assert_not_null(h, "%s", yt_errmsg());
        expect_cast_paths_agree(h, YT_DTYPE_F32, k == 0 ? "f16 -> f32" : "bf16 -> f32");
        /* and a same-dtype copy moves bits: signalling NaNs stay as they are */
        yt_tensor *view = yt_select(h, 1, 0), *dense = yt_contiguous(view);
        cr_assert_not_null(dense, "%s", yt_errmsg());
        const uint16_t *got = yt_tensor_data(dense);
        for (uint32_t i = 0; i < 65536; i++)
            cr_assert_eq(got[i], halves[2 * i], "contiguous %s: %04x became %04x",
                         k == 0 ? "f16" : "bf16", halves[2 * i], got[i]);
        yt_release(dense);
        yt_release(view);
        yt_release(h);
    }
    free(halves);
    free(bits);
    YT_ASSERT_NO_LEAKS();
}
