/* Pointwise semantics the generated cases do not pin down: PyTorch's rounding, NaN
 * propagation, Python division and modulus, integer division by zero, f16/bf16 round trips,
 * and the vectorised / broadcast / strided loop paths agreeing with each other. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cpu_isa.h" /* capped to run the narrower kernels */
#include "test_util.h"

void yt__set_cache_bytes(int64_t bytes); /* runtime/internal.h */
int64_t yt__cache_bytes(void);           /* runtime/internal.h */

static yt_tensor *
vec(const double *v, int64_t n, yt_dtype dtype)
{
    yt_tensor *f64 = yt_tensor_from_data(v, &n, 1, YT_DTYPE_F64);
    yt_tensor *t = dtype == YT_DTYPE_F64 ? yt_retain(f64) : yt_to(f64, dtype);
    yt_release(f64);
    return t;
}

/* Releases `t` after checking its values (NaN matches NaN; signs of zero are compared). */
static void
expect(yt_tensor *t, const double *want, int64_t n, const char *what)
{
    cr_assert_not_null(t, "%s: %s", what, yt_errmsg());
    cr_assert_eq(yt_tensor_numel(t), n, "%s: numel", what);
    double got[64];
    cr_assert_eq(yt_tensor_copy_to(t, got, sizeof got, YT_DTYPE_F64), YT_OK, "%s", yt_errmsg());
    for (int64_t i = 0; i < n; i++) {
        bool same = (isnan(got[i]) && isnan(want[i])) ||
                    (got[i] == want[i] && signbit(got[i]) == signbit(want[i]));
        cr_assert(same, "%s[%lld]: got %.17g, want %.17g", what, (long long)i, got[i], want[i]);
    }
    yt_release(t);
}

Test(pointwise, round_is_half_to_even_and_sign_of_nan_is_zero)
{
    const double x[] = {0.5, 1.5, 2.5, -0.5, -1.5, 2.4999, NAN};
    yt_tensor *t = vec(x, 7, YT_DTYPE_F32);
    expect(yt_round(t), (double[]){0, 2, 2, -0.0, -2, 2, NAN}, 7, "round");
    expect(yt_sign(t), (double[]){1, 1, 1, -1, -1, 1, 0}, 7, "sign");
    expect(yt_trunc(t), (double[]){0, 1, 2, -0.0, -1, 2, NAN}, 7, "trunc");
    expect(yt_floor(t), (double[]){0, 1, 2, -1, -2, 2, NAN}, 7, "floor");
    yt_release(t);
    YT_ASSERT_NO_LEAKS();
}

/* pow with the exponents that get loops of their own (ops.yaml `specialize:`) gives PyTorch's
 * values, which come from products, sqrt and reciprocals rather than powf: sqrt of -0 is -0 and
 * of -inf NaN (powf gives +0 and +inf). The expected values are PyTorch 1.13's, in f32. */
Test(pointwise, pow_special_exponents_match_pytorch)
{
    const double x[] = {-2, -0.0, 0, 3, INFINITY, -INFINITY, NAN, 1e30};
    const double third = (float)(1.0 / 3.0), ninth = (float)(1.0 / 9.0);
    const double r3 = (float)sqrt(3.0), ir3 = (float)(1.0 / (float)sqrt(3.0));
    const double big = (float)1e30, ibig = (float)(1.0 / (float)1e30);
    const struct {
        double k, want[8];
    } cases[] = {
        {2, {4, 0, 0, 9, INFINITY, INFINITY, NAN, INFINITY}},
        {3, {-8, -0.0, 0, 27, INFINITY, -INFINITY, NAN, INFINITY}},
        {-1, {-0.5, -INFINITY, INFINITY, third, 0, -0.0, NAN, ibig}},
        {-2, {0.25, INFINITY, INFINITY, ninth, 0, 0, NAN, 0}},
        {0.5, {NAN, -0.0, 0, r3, INFINITY, NAN, NAN, (float)sqrt((float)1e30)}},
        {-0.5,
         {NAN, -INFINITY, INFINITY, ir3, 0, NAN, NAN, (float)(1.0 / (float)sqrt((float)1e30))}},
        {1, {-2, -0.0, 0, 3, INFINITY, -INFINITY, NAN, big}},
    };
    yt_tensor *t = vec(x, 8, YT_DTYPE_F32);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char what[32];
        snprintf(what, sizeof what, "pow(x, %g)", cases[c].k);
        expect(yt_pow(t, yt_float(cases[c].k)), cases[c].want, 8, what);
    }
    /* an integral exponent that is special as a number too */
    expect(yt_pow(t, yt_int(2)), cases[0].want, 8, "pow(x, int 2)");
    yt_release(t);
    YT_ASSERT_NO_LEAKS();
}

Test(pointwise, maximum_minimum_and_clamp_propagate_nan)
{
    yt_tensor *a = vec((double[]){NAN, 1, 0, 3}, 4, YT_DTYPE_F32);
    yt_tensor *b = vec((double[]){1, NAN, -0.0, 2}, 4, YT_DTYPE_F32);
    expect(yt_maximum(a, b), (double[]){NAN, NAN, 0, 3}, 4, "maximum");
    expect(yt_minimum(a, b), (double[]){NAN, NAN, 0, 2}, 4, "minimum");
    expect(yt_clamp_min(a, yt_float(2)), (double[]){NAN, 2, 2, 3}, 4, "clamp_min");
    expect(yt_clamp_max(a, yt_float(NAN)), (double[]){NAN, NAN, NAN, NAN}, 4, "clamp_max nan");
    expect(yt_relu(a), (double[]){NAN, 1, 0, 3}, 4, "relu");
    yt_release(a);
    yt_release(b);
    YT_ASSERT_NO_LEAKS();
}

Test(pointwise, remainder_and_floor_divide_follow_python)
{
    yt_tensor *a = vec((double[]){-7, 7, -7, 7}, 4, YT_DTYPE_I64);
    yt_tensor *b = vec((double[]){3, -3, -3, 3}, 4, YT_DTYPE_I64);
    expect(yt_remainder(a, b), (double[]){2, -2, -1, 1}, 4, "remainder i64");
    expect(yt_floor_divide(a, b), (double[]){-3, -3, 2, 2}, 4, "floor_divide i64");
    yt_tensor *fa = vec((double[]){-7.5, 7, -0.0, 1}, 4, YT_DTYPE_F64);
    yt_tensor *fb = vec((double[]){3, -3, 3, 0}, 4, YT_DTYPE_F64);
    expect(yt_remainder(fa, fb), (double[]){1.5, -2, -0.0, NAN}, 4, "remainder f64");
    expect(yt_floor_divide(fa, fb), (double[]){-3, -3, -0.0, INFINITY}, 4, "floor_divide f64");
    yt_release(fa);
    yt_release(fb);
    /* Integer division by zero is an error, as PyTorch's ZeroDivisionError. */
    yt_tensor *z = vec((double[]){1, 0, 2, 3}, 4, YT_DTYPE_I32);
    yt_tensor *ai = vec((double[]){1, 2, 3, 4}, 4, YT_DTYPE_I32);
    cr_assert_null(yt_remainder(ai, z));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "remainder: integer division by zero");
    cr_assert_null(yt_floor_divide(ai, z));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "floor_divide: integer division by zero");
    cr_assert_null(yt_remainder_scalar(ai, yt_int(0)));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "remainder: integer division by zero");
    yt_release(z);
    yt_release(ai);
    yt_release(a);
    yt_release(b);
    YT_ASSERT_NO_LEAKS();
}

/* Python's modulus and floor division through libm's fmod, as yaten computed them before fmod.c:
 * the references for the vector fmod. */
#define DEFINE_PYTHON_DIVISION(T, S, FMOD, FLOOR)                                                  \
    static T python_remainder_##S(T a, T b)                                                        \
    {                                                                                              \
        T r = FMOD(a, b);                                                                          \
        return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;                                       \
    }                                                                                              \
    static T python_floor_divide_##S(T a, T b)                                                     \
    {                                                                                              \
        if (b == 0)                                                                                \
            return a / b;                                                                          \
        T mod = FMOD(a, b), div = (a - mod) / b;                                                   \
        if (mod != 0 && ((b < 0) != (mod < 0)))                                                    \
            div -= 1;                                                                              \
        if (div == 0)                                                                              \
            return (T)copysign(0, a / b);                                                          \
        T fl = FLOOR(div);                                                                         \
        return div - fl > (T)0.5 ? fl + 1 : fl;                                                    \
    }
DEFINE_PYTHON_DIVISION(float, f, fmodf, floorf)
DEFINE_PYTHON_DIVISION(double, d, fmod, floor)

static uint64_t
splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* Operand pairs for the fmod tests: every pair of edge values (zeros, subnormals, the limits,
 * infinities, NaN, small integers), then, alternately, near multiples of b and random bit
 * patterns, whose exponents are spread uniformly, so most of those need several reduction steps. */
typedef struct division_case {
    int64_t n;
    double *a, *b, *want_remainder, *want_floor_divide; /* n each */
    void *a_pairs, *b_pairs; /* [n, 2] of the dtype, the operands in column 0 */
} division_case;

static division_case
division_case_new(yt_dtype dtype, int64_t n_random)
{
    const bool f32 = dtype == YT_DTYPE_F32;
    const double edges[] = {0.0,
                            -0.0,
                            1.0,
                            -1.0,
                            3.0,
                            -3.0,
                            0.1,
                            -7.5,
                            INFINITY,
                            -INFINITY,
                            NAN,
                            -NAN,
                            f32 ? 0x1p-149 : 0x1p-1074,
                            f32 ? -0x1p-126 : -0x1p-1022,
                            f32 ? 0x1.fffffcp-127 : 0x1.ffffffffffffep-1023,
                            f32 ? 3.4028234663852886e38 : 1.7976931348623157e308,
                            f32 ? -0x1.fffffep126 : -0x1.fffffffffffffp1022,
                            f32 ? 0x1p-100 : 0x1p-950,
                            16777217.0,
                            0x1.8p60};
    const int64_t n_edges = sizeof edges / sizeof edges[0];
    division_case c = {.n = n_edges * n_edges + n_random};
    const size_t esize = f32 ? sizeof(float) : sizeof(double);
    c.a = malloc(sizeof(double) * (size_t)c.n * 4);
    c.b = c.a + c.n;
    c.want_remainder = c.b + c.n;
    c.want_floor_divide = c.want_remainder + c.n;
    c.a_pairs = calloc((size_t)c.n * 2, esize);
    c.b_pairs = calloc((size_t)c.n * 2, esize);
    uint64_t state = 3;
    for (int64_t i = 0; i < c.n; i++) {
        double a, b;
        if (i < n_edges * n_edges) {
            a = edges[i / n_edges];
            b = edges[i % n_edges];
        } else if (i % 2 == 0) {
            /* near a multiple: a = k * b rounded, or one ulp either side (quotients at the edge of
             * an integer, where an estimated quotient can be one off) */
            uint64_t bits = splitmix64(&state);
            b = ldexp(1.0 + (double)(bits & 0xffff) / 65536.0, (int)((bits >> 16) & 31) - 16);
            a = (double)((bits >> 21) & 0xffffff) * ((bits >> 45) & 1 ? -b : b);
            a = f32 ? (double)(float)a : a;
            int step = (int)((bits >> 46) % 3) - 1;
            if (step != 0)
                a = f32 ? (double)nextafterf((float)a, step * INFINITY)
                        : nextafter(a, step * INFINITY);
        } else if (f32) {
            uint64_t bits = splitmix64(&state);
            float fa, fb;
            uint32_t lo = (uint32_t)bits, hi = (uint32_t)(bits >> 32);
            memcpy(&fa, &lo, sizeof fa);
            memcpy(&fb, &hi, sizeof fb);
            a = fa;
            b = fb;
        } else {
            uint64_t ba = splitmix64(&state), bb = splitmix64(&state);
            memcpy(&a, &ba, sizeof a);
            memcpy(&b, &bb, sizeof b);
        }
        c.a[i] = a;
        c.b[i] = b;
        if (f32) {
            ((float *)c.a_pairs)[2 * i] = (float)a;
            ((float *)c.b_pairs)[2 * i] = (float)b;
            c.want_remainder[i] = python_remainder_f((float)a, (float)b);
            c.want_floor_divide[i] = python_floor_divide_f((float)a, (float)b);
        } else {
            ((double *)c.a_pairs)[2 * i] = a;
            ((double *)c.b_pairs)[2 * i] = b;
            c.want_remainder[i] = python_remainder_d(a, b);
            c.want_floor_divide[i] = python_floor_divide_d(a, b);
        }
    }
    return c;
}

/* remainder and floor_divide through the contiguous loop (the vector fmod) on dense operands and
 * through the strided loop on column 0 of the [n, 2] pairs. */
static void
expect_python_division(const division_case *c, yt_dtype dtype)
{
    const int64_t sizes[2] = {c->n, 2};
    yt_tensor *a2 = yt_tensor_from_data(c->a_pairs, sizes, 2, dtype);
    yt_tensor *b2 = yt_tensor_from_data(c->b_pairs, sizes, 2, dtype);
    yt_tensor *a_strided = yt_select(a2, 1, 0), *b_strided = yt_select(b2, 1, 0);
    yt_tensor *a = yt_contiguous(a_strided), *b = yt_contiguous(b_strided);
    cr_assert_not_null(a, "%s", yt_errmsg());
    cr_assert_not_null(b, "%s", yt_errmsg());
    const double *want[2] = {c->want_remainder, c->want_floor_divide};
    for (int path = 0; path < 2; path++) {
        for (int op = 0; op < 2; op++) {
            yt_tensor *x = path ? a_strided : a, *y = path ? b_strided : b;
            yt_tensor *r = op ? yt_floor_divide(x, y) : yt_remainder(x, y);
            yt_tensor *got = yt_to(r, YT_DTYPE_F64);
            yt_release(r);
            cr_assert_not_null(got, "%s", yt_errmsg());
            const double *v = yt_tensor_data(got);
            for (int64_t i = 0; i < c->n; i++) {
                bool same = (isnan(v[i]) && isnan(want[op][i])) ||
                            (v[i] == want[op][i] && signbit(v[i]) == signbit(want[op][i]));
                cr_assert(same, "%s %s, %s loop: (%a, %a) gave %a, want %a",
                          op ? "floor_divide" : "remainder", yt_dtype_name(dtype),
                          path ? "strided" : "contiguous", c->a[i], c->b[i], v[i], want[op][i]);
            }
            yt_release(got);
        }
    }
    yt_tensor *all[] = {a2, b2, a_strided, b_strided, a, b};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        yt_release(all[i]);
}

/* fmod.c's vector fmod is exact: remainder and floor_divide agree with libm's fmod through the old
 * formulas, bit for bit (NaN as NaN), on both loop paths. */
Test(pointwise, remainder_and_floor_divide_match_libm_fmod)
{
    const yt_dtype dtypes[2] = {YT_DTYPE_F32, YT_DTYPE_F64};
    for (int k = 0; k < 2; k++) {
        division_case c = division_case_new(dtypes[k], 100003);
        expect_python_division(&c, dtypes[k]);
        free(c.a);
        free(c.a_pairs);
        free(c.b_pairs);
    }
    YT_ASSERT_NO_LEAKS();
}

Test(pointwise, half_types_round_to_nearest_even_and_keep_nan_inf)
{
    /* f16: 1 + 2^-11 is a tie between 1 and 1 + 2^-10 (even: 1); 1 + 3 * 2^-11 rounds up to
     * 1 + 2^-9; 65520 ties to inf; the smallest subnormal is 2^-24. */
    const double x[] = {1 + 0x1p-11, 1 + 3 * 0x1p-11, 65504, 65520,
                        0x1p-24,     0x1p-25,         NAN,   -INFINITY};
    yt_tensor *t = vec(x, 8, YT_DTYPE_F16);
    expect(yt_to(t, YT_DTYPE_F64),
           (double[]){1, 1 + 0x1p-9, 65504, INFINITY, 0x1p-24, 0, NAN, -INFINITY}, 8, "f16");
    yt_release(t);
    /* bf16 keeps 8 bits of mantissa: 1 + 2^-8 ties to 1, 1 + 3 * 2^-8 rounds up. */
    const double y[] = {1 + 0x1p-8, 1 + 3 * 0x1p-8, 3.4e38, NAN, INFINITY};
    t = vec(y, 5, YT_DTYPE_BF16);
    expect(yt_to(t, YT_DTYPE_F64), (double[]){1, 1 + 0x1p-6, INFINITY, NAN, INFINITY}, 5, "bf16");
    /* Arithmetic on half types computes in float and rounds once. */
    yt_tensor *s = yt_add(t, t);
    expect(yt_to(s, YT_DTYPE_F64), (double[]){2, 2 + 0x1p-5, INFINITY, NAN, INFINITY}, 5,
           "bf16 add");
    yt_release(s);
    yt_release(t);
    YT_ASSERT_NO_LEAKS();
}

Test(pointwise, softplus_is_stable_at_large_magnitudes)
{
    yt_tensor *t = vec((double[]){1e4, -1e4, 0}, 3, YT_DTYPE_F64);
    expect(yt_softplus(t), (double[]){1e4, 0, log(2.0)}, 3, "softplus");
    expect(yt_sigmoid(t), (double[]){1, 0, 0.5}, 3, "sigmoid");
    expect(yt_isfinite(t), (double[]){1, 1, 1}, 3, "isfinite");
    yt_release(t);
    t = vec((double[]){NAN, INFINITY, 1}, 3, YT_DTYPE_F32);
    expect(yt_isnan(t), (double[]){1, 0, 0}, 3, "isnan");
    expect(yt_isfinite(t), (double[]){0, 0, 1}, 3, "isfinite");
    yt_release(t);
    YT_ASSERT_NO_LEAKS();
}

Test(pointwise, logical_ops_and_masked_fill)
{
    yt_tensor *a = vec((double[]){0, 2, 0, -1}, 4, YT_DTYPE_F32);
    yt_tensor *b = vec((double[]){0, 0, 3, 1}, 4, YT_DTYPE_I64);
    expect(yt_logical_and(a, b), (double[]){0, 0, 0, 1}, 4, "and");
    expect(yt_logical_or(a, b), (double[]){0, 1, 1, 1}, 4, "or");
    expect(yt_logical_xor(a, b), (double[]){0, 1, 1, 0}, 4, "xor");
    expect(yt_logical_not(a), (double[]){1, 0, 1, 0}, 4, "not");
    yt_tensor *mask = yt_ne_scalar(b, yt_int(0));
    expect(yt_masked_fill(a, mask, yt_float(9)), (double[]){0, 2, 9, 9}, 4, "masked_fill");
    yt_release(mask);
    yt_release(a);
    yt_release(b);
    YT_ASSERT_NO_LEAKS();
}

/* Every loop path (contiguous simd, one input broadcast along the row, strided, threaded)
 * gives the same values as a plain double loop. */
Test(pointwise, loop_paths_agree)
{
    enum { R = 200, C = 301 }; /* odd row length: simd remainders; 60200 > the parallel grain */
    int64_t shape[2] = {R, C}, tshape[2] = {C, R}, col[2] = {R, 1}, row[1] = {C};
    yt_tensor *a = yt_rand(shape, 2), *at_base = yt_rand(tshape, 2);
    yt_tensor *at = yt_transpose(at_base, 0, 1);
    yt_tensor *c = yt_rand(col, 2), *r = yt_rand(row, 1);
    yt_tensor *cases[3][2] = {{a, at}, {a, c}, {r, a}};
    for (int k = 0; k < 3; k++) {
        yt_tensor *x = cases[k][0], *y = cases[k][1];
        yt_tensor *sum = yt_add(x, y);
        yt_tensor *xe = yt_expand(x, shape, 2), *ye = yt_expand(y, shape, 2);
        yt_tensor *xc = yt_contiguous(xe), *yc = yt_contiguous(ye);
        yt_release(xe);
        yt_release(ye);
        cr_assert_not_null(xc, "%s", yt_errmsg());
        const float *px = yt_tensor_data(xc), *py = yt_tensor_data(yc), *ps = yt_tensor_data(sum);
        for (int64_t i = 0; i < R * C; i++)
            cr_assert_eq(ps[i], px[i] + py[i], "case %d at %lld", k, (long long)i);
        /* in place: out aliases self exactly */
        yt_tensor *copy = yt_clone(xc);
        cr_assert_eq(yt_add_(copy, y), YT_OK, "%s", yt_errmsg());
        const float *pc = yt_tensor_data(copy);
        for (int64_t i = 0; i < R * C; i++)
            cr_assert_eq(pc[i], ps[i], "in-place case %d at %lld", k, (long long)i);
        yt_release(copy);
        yt_release(xc);
        yt_release(yc);
        yt_release(sum);
    }
    yt_release(a);
    yt_release(at_base);
    yt_release(at);
    yt_release(c);
    yt_release(r);
    YT_ASSERT_NO_LEAKS();
}

/* Scalars that do not fit the dtype are refused, as PyTorch's Scalar::to<T>(); into u8,
 * integers down to -255 wrap (two's complement), and bool takes anything. */
Test(pointwise, scalars_must_fit_the_dtype)
{
    yt_tensor *mask = vec((double[]){1, 0, 1}, 3, YT_DTYPE_BOOL);
    yt_tensor *u8 = vec((double[]){1, 2, 3}, 3, YT_DTYPE_U8);
    cr_assert_null(yt_masked_fill(u8, mask, yt_float(-2.0)));
    YT_ASSERT_ERROR(YT_ERR_VALUE,
                    "masked_fill: value=-2 cannot be converted to u8 without overflow");
    cr_assert_null(yt_masked_fill(u8, mask, yt_int(256)));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "masked_fill: value=256 cannot be converted to u8");
    expect(yt_masked_fill(u8, mask, yt_int(-1)), (double[]){255, 2, 255}, 3, "u8 -1");
    yt_tensor *i8 = vec((double[]){1, 2, 3}, 3, YT_DTYPE_I8);
    cr_assert_null(yt_masked_fill(i8, mask, yt_int(128)));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "masked_fill: value=128 cannot be converted to i8");
    cr_assert_null(yt_masked_fill(i8, mask, yt_float(NAN)));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "masked_fill: value=nan cannot be converted to i8");
    cr_assert_null(yt_clamp_max(i8, yt_int(600)));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "clamp_max: max=600 cannot be converted to i8");
    cr_assert_null(yt_add_ex(i8, i8, yt_int(300)));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "add: alpha=300 cannot be converted to i8");
    expect(yt_masked_fill(i8, mask, yt_float(-1.5)), (double[]){-1, 2, -1}, 3, "i8 -1.5");
    cr_assert_null(yt_pow(i8, yt_int(200)));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "pow: exponent=200 cannot be converted to i8");
    /* PyTorch's alpha_check: no float alpha for integers, no bool alpha but for bools */
    cr_assert_null(yt_add_ex(i8, i8, yt_float(1.5)));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "add: alpha=1.5 must not be a float for integral inputs");
    cr_assert_null(yt_sub_ex(i8, i8, yt_bool(true)));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "sub: a bool alpha is only supported for bool results");
    cr_assert_null(yt_rsub_ex(i8, yt_int(2), yt_int(300)));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "rsub: alpha=300 cannot be converted to i8");
    expect(yt_rsub_ex(i8, yt_int(2), yt_int(3)), (double[]){-1, -4, -7}, 3, "rsub alpha");
    expect(yt_add_ex(mask, mask, yt_bool(true)), (double[]){1, 0, 1}, 3, "bool alpha for bools");
    yt_tensor *f16 = vec((double[]){1, 2, 3}, 3, YT_DTYPE_F16);
    cr_assert_null(yt_masked_fill(f16, mask, yt_float(65519)));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "masked_fill: value=65519 cannot be converted to f16");
    expect(yt_masked_fill(f16, mask, yt_float(INFINITY)), (double[]){INFINITY, 2, INFINITY}, 3,
           "f16 inf");
    expect(yt_masked_fill(mask, mask, yt_float(-2.5)), (double[]){1, 0, 1}, 3, "bool");
    /* a 0-d tensor value of another dtype is read as a Scalar, with the same checks */
    yt_tensor *big = yt_scalar_tensor(yt_int(300), YT_DTYPE_I64);
    cr_assert_null(yt_masked_fill_tensor(u8, mask, big));
    YT_ASSERT_ERROR(YT_ERR_VALUE,
                    "masked_fill: value=300 cannot be converted to u8 without overflow");
    yt_tensor *half = yt_scalar_tensor(yt_float(-1.5), YT_DTYPE_F64);
    expect(yt_masked_fill_tensor(i8, mask, half), (double[]){-1, 2, -1}, 3, "i8 from f64 -1.5");
    yt_release(half);
    yt_release(big);
    /* u8 scalars wrap before comparing, as PyTorch converts -1 to 255 */
    expect(yt_lt_scalar(u8, yt_int(-1)), (double[]){1, 1, 1}, 3, "u8 < -1");
    expect(yt_clamp_max(u8, yt_int(-1)), (double[]){1, 2, 3}, 3, "u8 clamp_max -1");
    yt_release(f16);
    yt_release(i8);
    yt_release(u8);
    yt_release(mask);
    YT_ASSERT_NO_LEAKS();
}

Test(pointwise, clamp_bounds_nan_and_order)
{
    yt_tensor *x = vec((double[]){NAN, -2, 0.5, 3}, 4, YT_DTYPE_F32);
    yt_scalar lo = yt_float(0), hi = yt_float(1), nan = yt_float(NAN), two = yt_float(2);
    expect(yt_clamp_ex(x, &lo, &hi), (double[]){NAN, 0, 0.5, 1}, 4, "clamp");
    expect(yt_clamp_ex(x, &lo, NULL), (double[]){NAN, 0, 0.5, 3}, 4, "clamp min only");
    expect(yt_clamp_ex(x, NULL, &hi), (double[]){NAN, -2, 0.5, 1}, 4, "clamp max only");
    expect(yt_clamp_ex(x, &two, &hi), (double[]){NAN, 1, 1, 1}, 4, "max wins over min");
    expect(yt_clamp_ex(x, &nan, &hi), (double[]){NAN, NAN, NAN, NAN}, 4, "NaN bound");
    cr_assert_null(yt_clamp_ex(x, NULL, NULL));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "clamp: expected min is not None or max is not None");
    yt_tensor *tlo = vec((double[]){NAN, 0, 0, 0}, 4, YT_DTYPE_F32);
    yt_tensor *thi = vec((double[]){1}, 1, YT_DTYPE_F64);
    yt_tensor *c = yt_clamp_tensor_ex(x, tlo, thi);
    cr_assert_eq(yt_tensor_dtype(c), YT_DTYPE_F64);
    expect(c, (double[]){NAN, 0, 0.5, 1}, 4, "clamp.Tensor");
    expect(yt_clamp_tensor_ex(x, NULL, thi), (double[]){NAN, -2, 0.5, 1}, 4, "clamp.Tensor max");
    cr_assert_null(yt_clamp_tensor_ex(x, NULL, NULL));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "clamp: expected min is not None or max is not None");
    /* integer tensors with integer bounds stay integral; a float bound promotes */
    yt_tensor *i = vec((double[]){1, 5, 9}, 3, YT_DTYPE_I64);
    yt_scalar two_i = yt_int(2), six = yt_int(6), half = yt_float(2.5);
    c = yt_clamp_ex(i, &two_i, &six);
    cr_assert_eq(yt_tensor_dtype(c), YT_DTYPE_I64);
    expect(c, (double[]){2, 5, 6}, 3, "clamp i64");
    c = yt_clamp_ex(i, &half, NULL);
    cr_assert_eq(yt_tensor_dtype(c), YT_DTYPE_F32);
    expect(c, (double[]){2.5, 5, 9}, 3, "clamp i64 by 2.5");
    yt_release(i);
    yt_release(tlo);
    yt_release(thi);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

/* Scalar bounds take maximum/minimum's uniform form (yt__pw_maximum_uniform_f): vmaxps and an
 * add of the bound's NaN or -0. On 48 elements, so the vector loops run: NaN, signed zeros and
 * infinities in self and in either bound give what min(max(self, min), max) with NaN winning
 * gives, in every floating dtype. */
Test(pointwise, clamp_by_scalars_keeps_nan_zeros_and_infinities_in_vector_loops)
{
    enum { N = 48 };
    const double pattern[] = {NAN, -0.0, 0.0, -INFINITY, INFINITY, -2, 0.5, 3};
    const double bounds[][2] = {{-1, 1},    {0.0, 0.5},     {-0.0, 0.0},           {NAN, 1},
                                {-1, NAN},  {-INFINITY, 2}, {1, INFINITY},         {2, -1},
                                {NAN, NAN}, {0.0, -0.0},    {-INFINITY, -INFINITY}};
    const yt_dtype dtypes[] = {YT_DTYPE_F32, YT_DTYPE_F64, YT_DTYPE_BF16, YT_DTYPE_F16};
    double x[N];
    for (int i = 0; i < N; i++)
        x[i] = pattern[i % 8];
    for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++) {
        yt_tensor *t = vec(x, N, dtypes[d]);
        for (size_t b = 0; b < sizeof bounds / sizeof bounds[0]; b++) {
            const double lo = bounds[b][0], hi = bounds[b][1];
            for (int which = 0; which < 3; which++) { /* both bounds, min only, max only */
                const bool has_lo = which != 2, has_hi = which != 1;
                double want[N];
                for (int i = 0; i < N; i++) {
                    double r = x[i];
                    if (has_lo)
                        r = isnan(lo) ? lo : (lo > r ? lo : r);
                    if (has_hi)
                        r = isnan(hi) ? hi : (hi < r ? hi : r);
                    want[i] = isnan(x[i]) ? NAN : r;
                }
                yt_scalar slo = yt_float(lo), shi = yt_float(hi);
                char what[80];
                snprintf(what, sizeof what, "%s clamp(x, %s%g, %s%g)", yt_dtype_name(dtypes[d]),
                         has_lo ? "" : "None ", lo, has_hi ? "" : "None ", hi);
                expect(yt_clamp_ex(t, has_lo ? &slo : NULL, has_hi ? &shi : NULL), want, N, what);
                if (which == 1)
                    expect(yt_clamp_min(t, slo), want, N, what);
                if (which == 2)
                    expect(yt_clamp_max(t, shi), want, N, what);
            }
        }
        yt_release(t);
    }
    YT_ASSERT_NO_LEAKS();
}

Test(pointwise, nan_to_num_defaults_are_the_dtype_limits)
{
    const double x[] = {NAN, INFINITY, -INFINITY, 1.5};
    yt_tensor *f32 = vec(x, 4, YT_DTYPE_F32), *f16 = vec(x, 4, YT_DTYPE_F16);
    yt_tensor *bf16 = vec(x, 4, YT_DTYPE_BF16);
    expect(yt_nan_to_num(f32), (double[]){0, 3.4028234663852886e38, -3.4028234663852886e38, 1.5}, 4,
           "f32");
    expect(yt_nan_to_num(f16), (double[]){0, 65504, -65504, 1.5}, 4, "f16");
    expect(yt_nan_to_num(bf16), (double[]){0, 3.3895313892515355e38, -3.3895313892515355e38, 1.5},
           4, "bf16");
    const double nan = 7, posinf = 1e10, neginf = -2;
    expect(yt_nan_to_num_ex(f16, &nan, &posinf, &neginf), (double[]){7, INFINITY, -2, 1.5}, 4,
           "f16 given (1e10 overflows f16, as in PyTorch)");
    expect(yt_nan_to_num_ex(f32, NULL, NULL, &neginf),
           (double[]){0, 3.4028234663852886e38, -2, 1.5}, 4, "f32 neginf only");
    yt_tensor *i = vec((double[]){-3, 4}, 2, YT_DTYPE_I32);
    expect(yt_nan_to_num_ex(i, &nan, &posinf, &neginf), (double[]){-3, 4}, 2, "integers unchanged");
    yt_release(i);
    yt_release(bf16);
    yt_release(f16);
    yt_release(f32);
    YT_ASSERT_NO_LEAKS();
}

Test(pointwise, gelu_erf_and_tanh_forms)
{
    /* libm's erf and libmvec's may differ in the last bit: compare within 1e-15 */
    yt_tensor *x = vec((double[]){1, -1, 0, 10}, 4, YT_DTYPE_F64);
    const double want_erf[4] = {0.8413447460685429, -0.15865525393145707, 0, 10};
    const double want_tanh[4] = {0.8411919906082768, -0.15880800939172324, 0, 10};
    const char *forms[2] = {"none", "tanh"};
    for (int f = 0; f < 2; f++) {
        yt_tensor *t = yt_gelu_ex(x, forms[f]);
        cr_assert_not_null(t, "%s", yt_errmsg());
        double got[4];
        yt_tensor_copy_to(t, got, sizeof got, YT_DTYPE_F64);
        for (int i = 0; i < 4; i++)
            cr_assert_float_eq(got[i], (f ? want_tanh : want_erf)[i], 1e-15, "%s[%d]: %.17g",
                               forms[f], i, got[i]);
        yt_release(t);
    }
    cr_assert_null(yt_gelu_ex(x, "sigmoid"));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "gelu: approximate must be one of 'none', 'tanh', got 'sigmoid'");
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

Test(pointwise, gelu_f32_is_accurate_in_the_tail)
{
    /* 0.5 * x * (1 + erf(x / sqrt 2)) cancels in float below x = -5 (a few percent, then 100%);
     * normal_cdf computes the tail directly. Reference: libm's double erfc. */
    enum { N = 2601 };
    float xs[N];
    for (int i = 0; i < N; i++)
        xs[i] = -13.0f + 0.01f * (float)i;
    int64_t n = N;
    yt_tensor *x = yt_empty_ex(&n, 1, YT_DTYPE_F32, YT_DEVICE_CPU);
    memcpy(yt_tensor_data(x), xs, sizeof xs);
    yt_tensor *y = yt_gelu(x);
    cr_assert_not_null(y, "%s", yt_errmsg());
    const float *got = yt_tensor_data(y);
    for (int i = 0; i < N; i++) {
        double want = (double)xs[i] * 0.5 * erfc(-(double)xs[i] / sqrt(2.0));
        if (fabs(want) < 1e-30)
            continue; /* near float's denormals */
        cr_assert_leq(fabs(got[i] / want - 1.0), 2e-6, "gelu(%.9g) = %.9g, want %.9g", xs[i],
                      got[i], want);
    }
    float special[3] = {INFINITY, -INFINITY, NAN};
    int64_t three = 3;
    yt_tensor *s = yt_empty_ex(&three, 1, YT_DTYPE_F32, YT_DEVICE_CPU);
    memcpy(yt_tensor_data(s), special, sizeof special);
    yt_tensor *g = yt_gelu(s);
    const float *gs = yt_tensor_data(g);
    cr_assert(isinf(gs[0]) && gs[0] > 0, "gelu(inf) = %g", gs[0]);
    cr_assert(isnan(gs[1]), "gelu(-inf) = %g (PyTorch: nan)", gs[1]);
    cr_assert(isnan(gs[2]), "gelu(nan) = %g", gs[2]);
    yt_release(g);
    yt_release(s);
    yt_release(y);
    yt_release(x);
    YT_ASSERT_NO_LEAKS();
}

/* A number beside an f16 or bf16 tensor takes the tensor's dtype first, as PyTorch's wrapped
 * scalar does: 0.1 is then the half-precision 0.1, so a half x == 0.1 holds for x = 0.1, and
 * x % 0.1 and x ** 1.1 use the rounded operand. Expected values are PyTorch 1.13's on the same
 * inputs. */
Test(pointwise, scalar_operand_takes_half_dtype)
{
    const double x[] = {0.1, 5.5, 34.75};
    yt_tensor *h = vec(x, 3, YT_DTYPE_F16), *b = vec(x, 3, YT_DTYPE_BF16);
    expect(yt_eq_scalar(h, yt_float(0.1)), (double[]){1, 0, 0}, 3, "f16 == 0.1");
    expect(yt_gt_scalar(h, yt_float(0.1)), (double[]){0, 1, 1}, 3, "f16 > 0.1");
    expect(yt_eq_scalar(b, yt_float(0.1)), (double[]){1, 0, 0}, 3, "bf16 == 0.1");
    expect(yt_remainder_scalar(h, yt_float(0.1)), (double[]){0, 0.0013427734375, 0.0584716796875},
           3, "f16 % 0.1");
    expect(yt_remainder_scalar(b, yt_float(0.1)), (double[]){0, 0.0947265625, 0.01611328125}, 3,
           "bf16 % 0.1");
    expect(yt_pow(h, yt_float(1.1)), (double[]){0.0794677734375, 6.51953125, 49.46875}, 3,
           "f16 ** 1.1");
    expect(yt_pow_scalar(yt_float(1.01), b), (double[]){1.0, 1.046875, 1.3125}, 3, "1.01 ** bf16");
    expect(yt_mul_scalar(h, yt_float(0.1)),
           (double[]){0.0099945068359375, 0.5498046875, 3.474609375}, 3, "f16 * 0.1");
    /* f32 and f64 hold these numbers as the f32 and f64 nearest them, as before */
    yt_tensor *f = vec(x, 3, YT_DTYPE_F32);
    expect(yt_eq_scalar(f, yt_float(0.1)), (double[]){1, 0, 0}, 3, "f32 == 0.1");
    yt_release(f);
    yt_release(b);
    yt_release(h);
    YT_ASSERT_NO_LEAKS();
}

Test(pointwise, div_rounding_modes)
{
    yt_tensor *a = vec((double[]){-7, 7, -7, 7}, 4, YT_DTYPE_I64);
    yt_tensor *b = vec((double[]){2, -2, -2, 2}, 4, YT_DTYPE_I64);
    yt_tensor *q = yt_div_tensor_mode(a, b, "trunc");
    cr_assert_eq(yt_tensor_dtype(q), YT_DTYPE_I64);
    expect(q, (double[]){-3, -3, 3, 3}, 4, "trunc i64");
    expect(yt_div_tensor_mode(a, b, "floor"), (double[]){-4, -4, 3, 3}, 4, "floor i64");
    q = yt_div_tensor_mode(a, b, NULL);
    cr_assert_eq(yt_tensor_dtype(q), YT_DTYPE_F32);
    expect(q, (double[]){-3.5, -3.5, 3.5, 3.5}, 4, "true division");
    expect(yt_div_scalar_mode(a, yt_int(2), "floor"), (double[]){-4, 3, -4, 3}, 4, "floor scalar");
    cr_assert_null(yt_div_scalar_mode(a, yt_int(0), "trunc"));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "div: integer division by zero");
    yt_tensor *u8 = vec((double[]){5, 7}, 2, YT_DTYPE_U8);
    cr_assert_null(yt_remainder_scalar(u8, yt_int(256))); /* 256 is 0 in u8, as in PyTorch */
    YT_ASSERT_ERROR(YT_ERR_VALUE, "remainder: integer division by zero");
    expect(yt_remainder_scalar(u8, yt_int(-3)), (double[]){5, 7}, 2, "u8 % -3 (253)");
    yt_release(u8);
    yt_tensor *z = vec((double[]){1, 0, 1, 1}, 4, YT_DTYPE_I64);
    cr_assert_null(yt_div_tensor_mode(a, z, "floor"));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "div: integer division by zero");
    cr_assert_null(yt_div_tensor_mode(a, b, "round"));
    YT_ASSERT_ERROR(YT_ERR_VALUE,
                    "div: rounding_mode must be one of 'trunc', 'floor', got 'round'");
    /* the most negative i8 over -1 wraps, as in PyTorch, instead of trapping */
    yt_tensor *m = vec((double[]){-128}, 1, YT_DTYPE_I8), *m1 = vec((double[]){-1}, 1, YT_DTYPE_I8);
    expect(yt_div_tensor_mode(m, m1, "trunc"), (double[]){-128}, 1, "i8 min / -1");
    expect(yt_div_tensor_mode(m, m1, "floor"), (double[]){-128}, 1, "i8 min // -1");
    /* floats: trunc(a / b) and Python's floor division, signed zeros and infinities kept */
    yt_tensor *fa = vec((double[]){-7.5, 7, -0.5, 1}, 4, YT_DTYPE_F32);
    yt_tensor *fb = vec((double[]){2, -0.0, 4, 0}, 4, YT_DTYPE_F32);
    expect(yt_div_tensor_mode(fa, fb, "trunc"), (double[]){-3, -INFINITY, -0.0, INFINITY}, 4,
           "trunc f32");
    expect(yt_div_tensor_mode(fa, fb, "floor"), (double[]){-4, -INFINITY, -1, INFINITY}, 4,
           "floor f32");
    yt_release(fa);
    yt_release(fb);
    yt_release(m);
    yt_release(m1);
    yt_release(z);
    yt_release(a);
    yt_release(b);
    YT_ASSERT_NO_LEAKS();
}

Test(pointwise, integer_pow_and_bool_square)
{
    yt_tensor *b = vec((double[]){-3, 2, -1, 1}, 4, YT_DTYPE_I64);
    yt_tensor *e = vec((double[]){3, -2, -3, -5}, 4, YT_DTYPE_I64);
    expect(yt_pow_tensor_tensor(b, e), (double[]){-27, 0, -1, 1}, 4, "i64 ** i64");
    expect(yt_pow(b, yt_int(2)), (double[]){9, 4, 1, 1}, 4, "i64 ** 2");
    cr_assert_null(yt_pow(b, yt_int(-1)));
    YT_ASSERT_ERROR(YT_ERR_VALUE, "pow: integers to negative integer powers are not allowed");
    yt_tensor *p = yt_pow(b, yt_float(0.5));
    cr_assert_eq(yt_tensor_dtype(p), YT_DTYPE_F32);
    yt_release(p);
    expect(yt_pow_scalar(yt_int(2), e), (double[]){8, 0, 0, 0}, 4, "2 ** i64");
    yt_tensor *u = vec((double[]){3, 2}, 2, YT_DTYPE_U8),
              *u6 = vec((double[]){6, 9}, 2, YT_DTYPE_U8);
    expect(yt_pow_tensor_tensor(u, u6), (double[]){217, 0}, 2, "u8 wraps");
    yt_tensor *t = vec((double[]){1, 0}, 2, YT_DTYPE_BOOL);
    p = yt_pow(t, yt_int(2));
    cr_assert_eq(yt_tensor_dtype(p), YT_DTYPE_I64);
    expect(p, (double[]){1, 0}, 2, "bool ** 2");
    cr_assert_null(yt_pow(t, yt_bool(true)));
    YT_ASSERT_ERROR(YT_ERR_DTYPE, "pow: no CPU loop for dtype bool");
    p = yt_square(t);
    cr_assert_eq(yt_tensor_dtype(p), YT_DTYPE_I64);
    expect(p, (double[]){1, 0}, 2, "square(bool)");
    cr_assert_null(yt_abs(t));
    YT_ASSERT_ERROR(YT_ERR_DTYPE, "abs: self has dtype bool");
    yt_release(t);
    yt_release(u);
    yt_release(u6);
    yt_release(b);
    yt_release(e);
    YT_ASSERT_NO_LEAKS();
}

/* A clone of the transposed view of a [C, R] tensor (with an outer dim of B when `outer`) of
 * `dtype`, checked element by element against the transpose. */
static void
check_transposed_clone(yt_dtype dtype, bool outer, int64_t cache)
{
    enum { B = 3, C = 1211, R = 37 };
    static double values[B * C * R], got[B * C * R], want[B * C * R];
    for (int64_t i = 0; i < B * C * R; i++)
        values[i] = (double)(i % 97) - 40;
    int64_t sizes[3] = {B, C, R};
    int dim = outer ? 3 : 2;
    yt_tensor *f64 = yt_tensor_from_data(values, outer ? sizes : sizes + 1, dim, YT_DTYPE_F64);
    yt_tensor *base = yt_to(f64, dtype);
    yt_tensor *view = yt_transpose(base, -2, -1); /* (..., R, C), contiguous along R */
    yt_tensor *copy = yt_clone(view);
    cr_assert_not_null(copy, "%s", yt_errmsg());
    cr_assert_eq(yt_tensor_copy_to(copy, got, sizeof got, YT_DTYPE_F64), YT_OK);
    cr_assert_eq(yt_tensor_copy_to(base, want, sizeof want, YT_DTYPE_F64), YT_OK);
    for (int64_t b = 0; b < (outer ? B : 1); b++)
        for (int64_t r = 0; r < R; r++)
            for (int64_t c = 0; c < C; c++) {
                double g = got[(b * R + r) * C + c], w = want[(b * C + c) * R + r];
                cr_assert_eq(g, w, "cache %lld, %s %d-D: [%lld, %lld, %lld] got %g want %g",
                             (long long)cache, yt_dtype_name(dtype), dim, (long long)b,
                             (long long)r, (long long)c, g, w);
            }
    yt_release(copy);
    yt_release(view);
    yt_release(base);
    yt_release(f64);
}

/* Transposed inputs go through the blocked traversal (runtime/pointwise.c: strips of a cache
 * line's rows, square blocks): a clone of a transposed view must equal the element-by-element
 * transpose for every element size, with rows and columns that are not a multiple of the block
 * (37 rows: the last 5 join the strip before them and are an edge; 1211 columns: 11 or 3 past
 * the last block), outer dims, and the threaded split. The traversal's choices follow the
 * last-level cache's size, forced here to 2 MiB and 64 KiB besides the machine's, so that these
 * operands (90 KB to 2.2 MB in all) are taken with and without the prefetches. */
Test(pointwise, transposed_inputs_through_blocks)
{
    const yt_dtype dtypes[] = {YT_DTYPE_BOOL, YT_DTYPE_U8,  YT_DTYPE_I16, YT_DTYPE_F16,
                               YT_DTYPE_I32,  YT_DTYPE_F32, YT_DTYPE_I64, YT_DTYPE_F64};
    const int64_t caches[] = {0, 2 << 20, 64 << 10}; /* 0: the machine's */
    for (size_t cs = 0; cs < sizeof caches / sizeof caches[0]; cs++) {
        yt__set_cache_bytes(caches[cs]);
        for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++)
            for (int outer = 0; outer < 2; outer++)
                check_transposed_clone(dtypes[d], outer, caches[cs]);
    }
    yt__set_cache_bytes(0);
    /* a permutation whose input runs along an outer dim of the output: [9, 5, 300] -> (2, 1, 0) */
    static double values[9 * 5 * 300];
    for (int64_t i = 0; i < 9 * 5 * 300; i++)
        values[i] = (double)(i % 97) - 40;
    int64_t psizes[3] = {9, 5, 300}, perm[3] = {2, 1, 0};
    yt_tensor *p64 = yt_tensor_from_data(values, psizes, 3, YT_DTYPE_F64);
    yt_tensor *pf = yt_to(p64, YT_DTYPE_F32);
    yt_tensor *pv = yt_permute(pf, perm, 3);
    yt_tensor *pc = yt_clone(pv);
    static double got[9 * 5 * 300];
    cr_assert_eq(yt_tensor_copy_to(pc, got, sizeof got, YT_DTYPE_F64), YT_OK, "%s", yt_errmsg());
    for (int64_t c = 0; c < 300; c++)
        for (int64_t b = 0; b < 5; b++)
            for (int64_t a = 0; a < 9; a++)
                cr_assert_eq(got[(c * 5 + b) * 9 + a], (double)(float)values[(a * 5 + b) * 300 + c],
                             "permuted [%lld, %lld, %lld]", (long long)c, (long long)b,
                             (long long)a);
    yt_release(pc);
    yt_release(pv);
    yt_release(pf);
    yt_release(p64);
    YT_ASSERT_NO_LEAKS();
}

/* `t` (released here) against want[r * C + c] over [R, C], element by element. */
static void
expect_grid(yt_tensor *t, const double *want, int64_t rows, int64_t cols, const char *what,
            yt_dtype dtype, int64_t cache)
{
    static double got[2045 * 1211]; /* the largest grid here: check_block_panels on u8 */
    cr_assert_not_null(t, "%s %s: %s", what, yt_dtype_name(dtype), yt_errmsg());
    cr_assert_eq(yt_tensor_copy_to(t, got, sizeof got, YT_DTYPE_F64), YT_OK, "%s", yt_errmsg());
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++)
            cr_assert_eq(got[r * cols + c], want[r * cols + c],
                         "cache %lld, %s %s: [%lld, %lld] got %g want %g", (long long)cache, what,
                         yt_dtype_name(dtype), (long long)r, (long long)c, got[r * cols + c],
                         want[r * cols + c]);
    yt_release(t);
}

/* A tensor of `dtype` holding `values` (f64) in `sizes`. */
static yt_tensor *
tensor_of(const double *values, const int64_t *sizes, int dim, yt_dtype dtype)
{
    yt_tensor *f64 = yt_tensor_from_data(values, sizes, dim, YT_DTYPE_F64);
    yt_tensor *t = yt_to(f64, dtype);
    yt_release(f64);
    cr_assert_not_null(t, "%s", yt_errmsg());
    return t;
}

/* Short rows (runtime/pointwise.c, run_staged): [R, n] for n = 1..17, R = 1203 (chunks of whole
 * rows, a last one partial, and rows past the last whole vector of a broadcast column), each input
 * laid out another way: a broadcast column, 4 of every 8 of a wider input, every other element of
 * one, a 0-d tensor, a broadcast row, a column added in place, and a column compared (a bool
 * result, its rows up to 8 times shorter than the inputs'). */
static void
check_short_rows(yt_dtype dtype, int64_t n)
{
    enum { R = 1203, MAX_N = 17 };
    static double av[R * MAX_N], wide[R * 2 * MAX_N], colv[R], rowv[MAX_N], want[R * MAX_N];
    for (int64_t i = 0; i < R * n; i++)
        av[i] = (double)(i % 61);
    for (int64_t i = 0; i < R * 2 * n; i++)
        wide[i] = (double)(i % 53);
    for (int64_t r = 0; r < R; r++)
        colv[r] = (double)(r % 37);
    for (int64_t j = 0; j < n; j++)
        rowv[j] = (double)(j + 3);
    const double scalar = 5;
    int64_t as[2] = {R, n}, ws[2] = {R, 2 * n}, cs[2] = {R, 1}, rs[1] = {n};
    yt_tensor *a = tensor_of(av, as, 2, dtype), *w = tensor_of(wide, ws, 2, dtype);
    yt_tensor *col = tensor_of(colv, cs, 2, dtype), *row = tensor_of(rowv, rs, 1, dtype);
    yt_tensor *s0d = tensor_of(&scalar, NULL, 0, dtype);
    yt_tensor *front = yt_narrow(w, 1, 0, n), *every_other = yt_slice_ex(w, 1, 0, 2 * n, 2);
    cr_assert_not_null(every_other, "%s", yt_errmsg());
    char what[64];

    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < n; j++)
            want[r * n + j] = av[r * n + j] + colv[r];
    snprintf(what, sizeof what, "a + col, n %lld", (long long)n);
    expect_grid(yt_add(a, col), want, R, n, what, dtype, 0);
    yt_tensor *acc = yt_clone(a);
    cr_assert_eq(yt_add_(acc, col), YT_OK, "%s", yt_errmsg());
    snprintf(what, sizeof what, "a.add_(col), n %lld", (long long)n);
    expect_grid(acc, want, R, n, what, dtype, 0);

    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < n; j++)
            want[r * n + j] = wide[r * 2 * n + j] + 2;
    snprintf(what, sizeof what, "w[:, :n] + 2, n %lld", (long long)n);
    expect_grid(yt_add_scalar(front, yt_int(2)), want, R, n, what, dtype, 0);

    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < n; j++)
            want[r * n + j] = av[r * n + j] + wide[r * 2 * n + 2 * j];
    snprintf(what, sizeof what, "a + w[:, ::2], n %lld", (long long)n);
    expect_grid(yt_add(a, every_other), want, R, n, what, dtype, 0);

    for (int64_t i = 0; i < R * n; i++)
        want[i] = av[i] + scalar;
    snprintf(what, sizeof what, "a + 0-d, n %lld", (long long)n);
    expect_grid(yt_add(a, s0d), want, R, n, what, dtype, 0);

    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < n; j++)
            want[r * n + j] = av[r * n + j] + rowv[j];
    snprintf(what, sizeof what, "a + row, n %lld", (long long)n);
    expect_grid(yt_add(a, row), want, R, n, what, dtype, 0);

    /* a bool result, narrower than the inputs it compares */
    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < n; j++)
            want[r * n + j] = av[r * n + j] < colv[r] ? 1 : 0;
    snprintf(what, sizeof what, "a < col, n %lld", (long long)n);
    expect_grid(yt_lt(a, col), want, R, n, what, dtype, 0);

    yt_release(every_other);
    yt_release(front);
    yt_release(s0d);
    yt_release(row);
    yt_release(col);
    yt_release(w);
    yt_release(a);
}

void yt__parallel_set_always(bool on); /* runtime/parallel.h */

/* Runs `checks` at 1 thread and at 2 (forced to split, so that a share starts partway along a
 * row), then puts the thread count back. */
static void
at_1_and_2_threads(void (*checks)(void))
{
    int threads_before = yt_get_num_threads();
    for (int threads = 1; threads <= 2; threads++) {
        cr_assert_eq(yt_set_num_threads(threads), YT_OK);
        yt__parallel_set_always(threads > 1);
        checks();
    }
    yt__parallel_set_always(false);
    cr_assert_eq(yt_set_num_threads(threads_before), YT_OK);
}

/* check_short_rows for 1- to 8-byte elements (run at 1 and 2 threads below). */
static void
all_short_rows(void)
{
    const yt_dtype dtypes[] = {YT_DTYPE_U8,  YT_DTYPE_F16, YT_DTYPE_I32,
                               YT_DTYPE_F32, YT_DTYPE_I64, YT_DTYPE_F64};
    for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++)
        for (int64_t n = 1; n <= 17; n++)
            check_short_rows(dtypes[d], n);
}

Test(pointwise, short_rows_through_a_flat_buffer)
{
    at_1_and_2_threads(all_short_rows);
    YT_ASSERT_NO_LEAKS();
}

/* Operands that step over elements (runtime/pointwise.c, run_pieces and, for f32 and f64 steps
 * of 2 and 3 on AVX-512, the loops' stepped forms; runtime/stepped_copy.c):
 * [R, n] against every step-th element of a [R, step * n] tensor from its (step - 1)-th on, so
 * that the last row's last element is the storage's last (a vector loop reading past it trips
 * ASan), n from 1 to past the pieces the rows are run in (4 KiB of the widest operand). As
 * inputs (gathered), as out= (scattered: the elements between must keep their values), and in
 * place. */
static void
check_stepped(yt_dtype dtype, int64_t step, int64_t n)
{
    enum { R = 3, MAX_STEP = 9, MAX_N = 5000 };
    static double av[R * MAX_N], wide[R * MAX_STEP * MAX_N], want[R * MAX_STEP * MAX_N];
    for (int64_t i = 0; i < R * n; i++)
        av[i] = (double)(i % 61);
    for (int64_t i = 0; i < R * step * n; i++)
        wide[i] = (double)(i % 53);
    const int64_t cols = step * n;
    int64_t as[2] = {R, n}, ws[2] = {R, cols};
    yt_tensor *a = tensor_of(av, as, 2, dtype), *w = tensor_of(wide, ws, 2, dtype);
    yt_tensor *stepped = yt_slice_ex(w, 1, step - 1, cols, step);
    yt_tensor *from_0 = yt_slice_ex(w, 1, 0, cols, step);
    cr_assert_not_null(stepped, "%s", yt_errmsg());
    cr_assert_not_null(from_0, "%s", yt_errmsg());
    char what[80];

    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < n; j++)
            want[r * n + j] = av[r * n + j] + wide[r * cols + j * step + step - 1];
    snprintf(what, sizeof what, "a + w[:, %lld::%lld], n %lld", (long long)(step - 1),
             (long long)step, (long long)n);
    expect_grid(yt_add(a, stepped), want, R, n, what, dtype, 0);

    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < n; j++)
            want[r * n + j] = wide[r * cols + j * step] + wide[r * cols + j * step + step - 1];
    snprintf(what, sizeof what, "w[:, ::%lld] + w[:, %lld::%lld], n %lld", (long long)step,
             (long long)(step - 1), (long long)step, (long long)n);
    expect_grid(yt_add(from_0, stepped), want, R, n, what, dtype, 0);

    /* out= a stepped view of a copy of w: a + a in its elements, the others as they were */
    yt_tensor *target = yt_clone(w);
    yt_tensor *target_view = yt_slice_ex(target, 1, step - 1, cols, step);
    cr_assert_not_null(target_view, "%s", yt_errmsg());
    cr_assert_eq(yt_add_out(target_view, a, a), YT_OK, "%s", yt_errmsg());
    memcpy(want, wide, sizeof(double) * (size_t)(R * cols));
    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < n; j++)
            want[r * cols + j * step + step - 1] = 2 * av[r * n + j];
    snprintf(what, sizeof what, "out=w[:, %lld::%lld] of a + a, n %lld", (long long)(step - 1),
             (long long)step, (long long)n);
    expect_grid(target, want, R, cols, what, dtype, 0);

    /* in place on a stepped view */
    yt_tensor *twice = yt_clone(w);
    yt_tensor *twice_view = yt_slice_ex(twice, 1, step - 1, cols, step);
    cr_assert_not_null(twice_view, "%s", yt_errmsg());
    cr_assert_eq(yt_mul_scalar_(twice_view, yt_int(2)), YT_OK, "%s", yt_errmsg());
    memcpy(want, wide, sizeof(double) * (size_t)(R * cols));
    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < n; j++)
            want[r * cols + j * step + step - 1] *= 2;
    snprintf(what, sizeof what, "w[:, %lld::%lld] *= 2, n %lld", (long long)(step - 1),
             (long long)step, (long long)n);
    expect_grid(twice, want, R, cols, what, dtype, 0);

    yt_release(twice_view);
    yt_release(target_view);
    yt_release(from_0);
    yt_release(stepped);
    yt_release(w);
    yt_release(a);
}

/* check_stepped for 1- to 8-byte elements and every step the vector loops treat apart (2: a
 * shuffle; 3, 5, 7: blends; 4, 8: element loads; up to 8: masked stores; 9: none); run at 1 and 2
 * threads below. */
static void
all_stepped(void)
{
    const yt_dtype dtypes[] = {YT_DTYPE_U8,  YT_DTYPE_I16, YT_DTYPE_F16, YT_DTYPE_I32,
                               YT_DTYPE_F32, YT_DTYPE_I64, YT_DTYPE_F64};
    const int64_t steps[] = {2, 3, 4, 5, 7, 8, 9},
                  lengths[] = {1,  2,  3,   4,   5,   7,    8,    9,    15,   16,
                               17, 33, 511, 512, 513, 1023, 1024, 1025, 4097, 5000};
    for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++)
        for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++)
            for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; l++)
                check_stepped(dtypes[d], steps[s], lengths[l]);
}

Test(pointwise, stepped_operands_through_a_buffer)
{
    at_1_and_2_threads(all_stepped);
    YT_ASSERT_NO_LEAKS();
}

/* Every step-th element of a [R, step * n] tensor of `values` from its (step - 1)-th on, so that
 * the last row's last element is the storage's last (step 0: a [R, 1] column, broadcast along the
 * rows by the op). *base is the tensor the view is of. */
static yt_tensor *
stepped_view(const double *values, int64_t step, int64_t rows, int64_t n, yt_dtype dtype,
             yt_tensor **base)
{
    const int64_t cols = step == 0 ? 1 : step * n, sizes[2] = {rows, cols};
    *base = tensor_of(values, sizes, 2, dtype);
    yt_tensor *view = step == 0 ? yt_retain(*base) : yt_slice_ex(*base, 1, step - 1, cols, step);
    cr_assert_not_null(view, "%s", yt_errmsg());
    return view;
}

/* The stepped form that runs, by yt__cpu_isa: none (buffers), AVX2 or AVX-512 */
static const char *const FORM_NAMES[] = {"none", "AVX2", "AVX-512"};

/* The stepped forms of f32 and f64 loops (runtime/stepped_lanes.h: operands 1 to 3 elements apart,
 * inputs 0 as well, a vector at a time in registers) against the same op on contiguous copies:
 * lerp, three inputs, with every combination of their steps and the output's, out= a stepped view
 * whose elements between must keep their values; exp, a loop with an AVX-512 clone, with its input
 * and output stepped. Rows of n from the shortest that leaves the buffers (128) across a vector's
 * worth, so that the rows' last 1 to 16 elements, which the loop's row form takes, vary. */
static void
check_stepped_forms(yt_dtype dtype, int64_t n)
{
    enum { R = 3, MAX_STEP = 3, MAX_N = 300 };
    static double in[3][R * MAX_STEP * MAX_N], outv[R * MAX_STEP * MAX_N],
        got[R * MAX_STEP * MAX_N];
    static double want[R * MAX_N];
    const double tolerance = dtype == YT_DTYPE_F32 ? 1e-6 : 1e-14; /* vector and scalar libm */
    for (int k = 0; k < 3; k++)
        for (int64_t i = 0; i < R * MAX_STEP * n; i++)
            in[k][i] = (double)((i * (k + 3)) % 97) / 16 - 2;
    for (int64_t i = 0; i < R * MAX_STEP * n; i++)
        outv[i] = -1000 - (double)i;
    for (int steps = 0; steps < 4 * 4 * 4 * MAX_STEP; steps++) {
        const int64_t step[3] = {steps % 4, steps / 4 % 4, steps / 16 % 4},
                      out_step = steps / 64 + 1;
        if (step[0] == 0 && step[1] == 0 && step[2] == 0)
            continue; /* a [R, 1] result */
        /* exp of input 0, once per step of it */
        const bool unary = step[0] != 0 && step[1] == 1 && step[2] == 1;
        yt_tensor *base[3], *view[3], *copy[3];
        for (int k = 0; k < 3; k++) {
            view[k] = stepped_view(in[k], step[k], R, n, dtype, &base[k]);
            copy[k] = yt_contiguous(view[k]);
            cr_assert_not_null(copy[k], "%s", yt_errmsg());
        }
        for (int op = 0; op < (unary ? 2 : 1); op++) {
            yt_tensor *out_base, *out = stepped_view(outv, out_step, R, n, dtype, &out_base);
            yt_tensor *expected =
                op == 0 ? yt_lerp_tensor(copy[0], copy[1], copy[2]) : yt_exp(copy[0]);
            cr_assert_not_null(expected, "%s", yt_errmsg());
            cr_assert_eq(yt_tensor_copy_to(expected, want, sizeof want, YT_DTYPE_F64), YT_OK);
            const yt_status status = op == 0 ? yt_lerp_tensor_out(out, view[0], view[1], view[2])
                                             : yt_exp_out(out, view[0]);
            cr_assert_eq(status, YT_OK, "%s", yt_errmsg());
            const int64_t cols = out_step * n;
            cr_assert_eq(yt_tensor_copy_to(out_base, got, sizeof got, YT_DTYPE_F64), YT_OK);
            for (int64_t r = 0; r < R; r++)
                for (int64_t c = 0; c < cols; c++) {
                    const bool stepped_on = c % out_step == out_step - 1;
                    const double w = stepped_on ? want[r * n + c / out_step] : outv[r * cols + c];
                    const double g = got[r * cols + c];
                    cr_assert(fabs(g - w) <= tolerance * fmax(1, fabs(w)),
                              "%s %s (stepped form: %s), n %lld, steps out %lld in %lld %lld "
                              "%lld: [%lld, %lld] got %.17g want %.17g",
                              op == 0 ? "lerp" : "exp", yt_dtype_name(dtype),
                              FORM_NAMES[yt__cpu_isa()], (long long)n, (long long)out_step,
                              (long long)step[0], (long long)step[1], (long long)step[2],
                              (long long)r, (long long)c, g, w);
                }
            yt_release(expected);
            yt_release(out);
            yt_release(out_base);
        }
        for (int k = 0; k < 3; k++) {
            yt_release(copy[k]);
            yt_release(view[k]);
            yt_release(base[k]);
        }
    }
}

/* check_stepped_forms with every form this CPU runs, then with none (through buffers) */
static void
all_stepped_forms(void)
{
    const int64_t lengths[] = {128, 129, 135, 136, 137, 300};
    for (yt__isa widest = YT__ISA_NONE; widest <= YT__ISA_AVX512; widest++) {
        if (yt__cap_cpu_isa(widest) != widest)
            continue; /* not on this CPU */
        for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; l++) {
            check_stepped_forms(YT_DTYPE_F32, lengths[l]);
            check_stepped_forms(YT_DTYPE_F64, lengths[l]);
        }
    }
    yt__cap_cpu_isa(YT__ISA_AVX512);
}

Test(pointwise, stepped_forms_agree_with_contiguous_operands)
{
    at_1_and_2_threads(all_stepped_forms);
    YT_ASSERT_NO_LEAKS();
}

/* Rows up to 1 KiB with an input that steps over elements run many at a time through the staging
 * buffer (runtime/pointwise.c, stages_rows), where the other inputs are laid out row after row
 * too: a narrowed input (rows contiguous but apart), a broadcast column, a broadcast row and a
 * 0-d tensor, each beside every other element of a wider input, [R, n] for n across the
 * short-row and vector sizes up to past the staging limit. */
static void
check_staged_beside_stepped(yt_dtype dtype, int64_t n)
{
    enum { R = 37, MAX_N = 300, PAD = 5 };
    static double wide[R * 2 * MAX_N], padded[R * (MAX_N + PAD)], colv[R], rowv[MAX_N];
    static double want[R * MAX_N];
    for (int64_t i = 0; i < R * 2 * n; i++)
        wide[i] = (double)(i % 53);
    for (int64_t i = 0; i < R * (n + PAD); i++)
        padded[i] = (double)(i % 41);
    for (int64_t r = 0; r < R; r++)
        colv[r] = (double)(r % 11);
    for (int64_t j = 0; j < n; j++)
        rowv[j] = (double)(j % 13);
    const double scalar = 3;
    int64_t ws[2] = {R, 2 * n}, ps[2] = {R, n + PAD}, cs[2] = {R, 1}, rs[1] = {n};
    yt_tensor *w = tensor_of(wide, ws, 2, dtype), *p = tensor_of(padded, ps, 2, dtype);
    yt_tensor *col = tensor_of(colv, cs, 2, dtype), *row = tensor_of(rowv, rs, 1, dtype);
    yt_tensor *s0d = tensor_of(&scalar, NULL, 0, dtype);
    yt_tensor *every_other = yt_slice_ex(w, 1, 0, 2 * n, 2), *front = yt_narrow(p, 1, 0, n);
    cr_assert_not_null(every_other, "%s", yt_errmsg());
    cr_assert_not_null(front, "%s", yt_errmsg());
    char what[64];
#define EXPECT(call, label, value)                                                                 \
    do {                                                                                           \
        for (int64_t r = 0; r < R; r++)                                                            \
            for (int64_t j = 0; j < n; j++)                                                        \
                want[r * n + j] = wide[r * 2 * n + 2 * j] + (value);                               \
        snprintf(what, sizeof what, "%s, n %lld", label, (long long)n);                            \
        expect_grid(call, want, R, n, what, dtype, 0);                                             \
    } while (0)
    EXPECT(yt_add(every_other, front), "w[:, ::2] + p[:, :n]", padded[r * (n + PAD) + j]);
    EXPECT(yt_add(front, every_other), "p[:, :n] + w[:, ::2]", padded[r * (n + PAD) + j]);
    EXPECT(yt_add(every_other, col), "w[:, ::2] + col", colv[r]);
    EXPECT(yt_add(col, every_other), "col + w[:, ::2]", colv[r]);
    EXPECT(yt_add(every_other, row), "w[:, ::2] + row", rowv[j]);
    EXPECT(yt_add(every_other, s0d), "w[:, ::2] + 0-d", scalar);
#undef EXPECT

    yt_release(front);
    yt_release(every_other);
    yt_release(s0d);
    yt_release(row);
    yt_release(col);
    yt_release(p);
    yt_release(w);
}

static void
all_staged_beside_stepped(void)
{
    const yt_dtype dtypes[] = {YT_DTYPE_U8, YT_DTYPE_I16, YT_DTYPE_F32, YT_DTYPE_I64, YT_DTYPE_F64};
    const int64_t lengths[] = {3,   9,   15,  16,  17,  31,  33,  64,
                               100, 127, 128, 129, 200, 255, 256, 300};
    for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++)
        for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; l++)
            check_staged_beside_stepped(dtypes[d], lengths[l]);
}

Test(pointwise, rows_beside_a_stepped_input_staged)
{
    at_1_and_2_threads(all_staged_beside_stepped);
    YT_ASSERT_NO_LEAKS();
}

/* Integer floor_divide and remainder first scan the divisor for zeros (yt__pointwise_scan). A
 * divisor that steps over elements is read through a buffer there, and must not be stored back
 * to: the scan writes nothing, so a stored-back buffer would be garbage. */
Test(pointwise, zero_scan_of_a_stepped_divisor_leaves_it_alone)
{
    enum { R = 4, N = 600 };
    static double num[R * N], den[R * 2 * N], want[R * 2 * N];
    for (int64_t i = 0; i < R * N; i++)
        num[i] = (double)(i % 97);
    for (int64_t i = 0; i < R * 2 * N; i++)
        den[i] = (double)(i % 2 == 0 ? 1 + i % 7 : 0); /* zeros only between the stepped ones */
    int64_t ns[2] = {R, N}, ds[2] = {R, 2 * N};
    yt_tensor *a = tensor_of(num, ns, 2, YT_DTYPE_I32), *d = tensor_of(den, ds, 2, YT_DTYPE_I32);
    yt_tensor *every_other = yt_slice_ex(d, 1, 0, 2 * N, 2);
    cr_assert_not_null(every_other, "%s", yt_errmsg());

    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < N; j++)
            want[r * N + j] = floor(num[r * N + j] / den[r * 2 * N + 2 * j]);
    expect_grid(yt_floor_divide(a, every_other), want, R, N, "a // d[:, ::2]", YT_DTYPE_I32, 0);
    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < N; j++)
            want[r * N + j] = fmod(num[r * N + j], den[r * 2 * N + 2 * j]);
    expect_grid(yt_remainder(a, every_other), want, R, N, "a % d[:, ::2]", YT_DTYPE_I32, 0);
    yt_tensor *odd = yt_slice_ex(d, 1, 1, 2 * N, 2);
    cr_assert_null(yt_floor_divide(a, odd), "a // d[:, 1::2] divides by zero");
    cr_assert_eq(yt_errcode(), YT_ERR_VALUE, "%s", yt_errmsg());
    yt_retain(d);
    expect_grid(d, den, R, 2 * N, "the divisor afterwards", YT_DTYPE_I32, 0);

    yt_release(odd);
    yt_release(every_other);
    yt_release(d);
    yt_release(a);
    YT_ASSERT_NO_LEAKS();
}

/* A generated loop in its block form (runtime/pointwise_blocks.h, inlined per op and dtype) on
 * [37, 1211]: add with a transposed input, in place into the other operand (whose edges must be
 * added once), where() with a transposed bool condition beside a transposed value, and a
 * transposed input beside ones that are neither transposed nor read in place (a broadcast
 * column, a column stride of 2), which go through the block buffers element by element. */
static void
check_blocked_ops(yt_dtype dtype, int64_t cache)
{
    enum { R = 37, C = 1211 };
    static double xv[C * R], yv[R * C], wide[R * 2 * C], colv[R], want[R * C];
    static bool cond[C * R];
    for (int64_t i = 0; i < C * R; i++) {
        xv[i] = (double)(i % 97);
        yv[i] = (double)((i * 7) % 89);
        cond[i] = i % 3 == 0;
    }
    for (int64_t i = 0; i < R * 2 * C; i++)
        wide[i] = (double)(i % 83);
    for (int64_t r = 0; r < R; r++)
        colv[r] = (double)(r % 11);
    int64_t xs[2] = {C, R}, ys[2] = {R, C}, ws[2] = {R, 2 * C}, cs[2] = {R, 1};
    yt_tensor *x64 = yt_tensor_from_data(xv, xs, 2, YT_DTYPE_F64);
    yt_tensor *y64 = yt_tensor_from_data(yv, ys, 2, YT_DTYPE_F64);
    yt_tensor *w64 = yt_tensor_from_data(wide, ws, 2, YT_DTYPE_F64);
    yt_tensor *c64 = yt_tensor_from_data(colv, cs, 2, YT_DTYPE_F64);
    yt_tensor *cb = yt_tensor_from_data(cond, xs, 2, YT_DTYPE_BOOL);
    yt_tensor *x = yt_to(x64, dtype), *y = yt_to(y64, dtype), *w = yt_to(w64, dtype);
    yt_tensor *col = yt_to(c64, dtype);
    yt_tensor *xt = yt_transpose(x, 0, 1), *condt = yt_transpose(cb, 0, 1);
    yt_tensor *every_other = yt_slice_ex(w, 1, 0, 2 * C, 2);
    cr_assert_not_null(every_other, "%s", yt_errmsg());

    for (int64_t r = 0; r < R; r++)
        for (int64_t c = 0; c < C; c++)
            want[r * C + c] = xv[c * R + r] + yv[r * C + c];
    expect_grid(yt_add(xt, y), want, R, C, "x.t() + y", dtype, cache);
    yt_tensor *acc = yt_clone(y);
    cr_assert_eq(yt_add_(acc, xt), YT_OK, "%s", yt_errmsg());
    expect_grid(acc, want, R, C, "y.add_(x.t())", dtype, cache);

    for (int64_t r = 0; r < R; r++)
        for (int64_t c = 0; c < C; c++)
            want[r * C + c] = cond[c * R + r] ? xv[c * R + r] : yv[r * C + c];
    expect_grid(yt_where(condt, xt, y), want, R, C, "where(cond.t(), x.t(), y)", dtype, cache);

    for (int64_t r = 0; r < R; r++)
        for (int64_t c = 0; c < C; c++)
            want[r * C + c] = xv[c * R + r] + colv[r];
    expect_grid(yt_add(xt, col), want, R, C, "x.t() + col", dtype, cache);
    for (int64_t r = 0; r < R; r++)
        for (int64_t c = 0; c < C; c++)
            want[r * C + c] = xv[c * R + r] + wide[r * 2 * C + 2 * c];
    expect_grid(yt_add(xt, every_other), want, R, C, "x.t() + w[:, ::2]", dtype, cache);

    yt_release(every_other);
    yt_release(condt);
    yt_release(xt);
    yt_release(col);
    yt_release(w);
    yt_release(y);
    yt_release(x);
    yt_release(cb);
    yt_release(c64);
    yt_release(w64);
    yt_release(y64);
    yt_release(x64);
}

/* Runs check(dtype, cache) for each of the dtypes with the last-level cache size forced to each
 * of caches (0: the machine's), then gives yt__cache_bytes the machine's size back. */
static void
check_each(void (*check)(yt_dtype, int64_t), const yt_dtype *dtypes, size_t n_dtypes,
           const int64_t *caches, size_t n_caches)
{
    for (size_t cs = 0; cs < n_caches; cs++) {
        yt__set_cache_bytes(caches[cs]);
        for (size_t d = 0; d < n_dtypes; d++)
            check(dtypes[d], caches[cs]);
    }
    yt__set_cache_bytes(0);
}

/* check_blocked_ops for every element size the blocks copy in registers or element by element,
 * with and without the prefetches (the cache size forced to 64 KiB besides the machine's), and
 * with a 1.5 MiB cache, which half holds the 4-byte sums (537 KB): those go in tiles of strips
 * (runtime/pointwise.c, tile_strips). */
Test(pointwise, generated_loops_in_block_form)
{
    const yt_dtype dtypes[] = {YT_DTYPE_U8,  YT_DTYPE_F16, YT_DTYPE_BF16, YT_DTYPE_I32,
                               YT_DTYPE_F32, YT_DTYPE_I64, YT_DTYPE_F64};
    const int64_t caches[] = {0, 64 << 10, 3 << 19};
    check_each(check_blocked_ops, dtypes, sizeof dtypes / sizeof dtypes[0], caches,
               sizeof caches / sizeof caches[0]);
    YT_ASSERT_NO_LEAKS();
}

/* The packed traversal (runtime/pointwise.c, run_packed), which operands whose rows are a
 * multiple of 2 KiB apart take from the last-level cache: [133, W] with W elements 2 KiB, so
 * two strips of 64 rows (f32) and a last one of 69, the 5 past 64 an edge; an input transposed
 * against the output, in place into a narrower view (3 columns short of W: a column edge, and a
 * last panel narrower than the others), where() with two copied inputs of different sizes, and
 * a broadcast column. */
static void
check_packed_ops(yt_dtype dtype, int64_t cache)
{
    enum { R = 133, MAX_W = 2048 };
    const int64_t W = 2048 / (int64_t)yt_dtype_size(dtype), narrow = W - 3;
    static double xv[MAX_W * R], yv[R * MAX_W], colv[R], want[R * MAX_W];
    static bool cond[MAX_W * R];
    for (int64_t i = 0; i < W * R; i++) {
        xv[i] = (double)(i % 97);
        yv[i] = (double)((i * 7) % 89);
        cond[i] = i % 3 == 0;
    }
    for (int64_t r = 0; r < R; r++)
        colv[r] = (double)(r % 11);
    int64_t xs[2] = {W, R}, ys[2] = {R, W}, cs[2] = {R, 1};
    yt_tensor *x64 = yt_tensor_from_data(xv, xs, 2, YT_DTYPE_F64);
    yt_tensor *y64 = yt_tensor_from_data(yv, ys, 2, YT_DTYPE_F64);
    yt_tensor *c64 = yt_tensor_from_data(colv, cs, 2, YT_DTYPE_F64);
    yt_tensor *cb = yt_tensor_from_data(cond, xs, 2, YT_DTYPE_BOOL);
    yt_tensor *x = yt_to(x64, dtype), *y = yt_to(y64, dtype), *col = yt_to(c64, dtype);
    yt_tensor *xt = yt_transpose(x, 0, 1), *condt = yt_transpose(cb, 0, 1);
    cr_assert_not_null(xt, "%s", yt_errmsg());

    for (int64_t r = 0; r < R; r++)
        for (int64_t c = 0; c < W; c++)
            want[r * W + c] = xv[c * R + r] + yv[r * W + c];
    expect_grid(yt_add(xt, y), want, R, W, "x.t() + y, rows 2 KiB", dtype, cache);
    yt_tensor *acc = yt_clone(y), *acc_view = yt_narrow(acc, 1, 0, narrow);
    yt_tensor *xt_view = yt_narrow(xt, 1, 0, narrow);
    cr_assert_not_null(xt_view, "%s", yt_errmsg());
    cr_assert_eq(yt_add_(acc_view, xt_view), YT_OK, "%s", yt_errmsg());
    for (int64_t r = 0; r < R; r++)
        for (int64_t c = narrow; c < W; c++)
            want[r * W + c] = yv[r * W + c]; /* past the view: untouched */
    expect_grid(acc, want, R, W, "y[:, :W-3].add_(x.t()[:, :W-3])", dtype, cache);

    for (int64_t r = 0; r < R; r++)
        for (int64_t c = 0; c < W; c++)
            want[r * W + c] = cond[c * R + r] ? xv[c * R + r] : yv[r * W + c];
    expect_grid(yt_where(condt, xt, y), want, R, W, "where(cond.t(), x.t(), y)", dtype, cache);
    for (int64_t r = 0; r < R; r++)
        for (int64_t c = 0; c < W; c++)
            want[r * W + c] = xv[c * R + r] + colv[r];
    expect_grid(yt_add(xt, col), want, R, W, "x.t() + col", dtype, cache);

    yt_release(xt_view);
    yt_release(acc_view);
    yt_release(condt);
    yt_release(xt);
    yt_release(col);
    yt_release(y);
    yt_release(x);
    yt_release(cb);
    yt_release(c64);
    yt_release(y64);
    yt_release(x64);
}

/* check_packed_ops for 1- to 8-byte elements, with the last-level cache forced to 4 MiB, whose
 * window for the packed traversal (runtime/pointwise.c, packed_panel: 256 KiB to 1.5 MiB of
 * operands) these operands (272 KiB each) fall in; to 3 MiB, where the three of an add (816 KiB)
 * are past a quarter of it, so that the packed copy fetches columns ahead; and to the machine's,
 * where they take the blocks. */
Test(pointwise, rows_a_power_of_two_apart_through_packed_panels)
{
    const yt_dtype dtypes[] = {YT_DTYPE_U8, YT_DTYPE_F16, YT_DTYPE_I32, YT_DTYPE_F32, YT_DTYPE_F64};
    const int64_t caches[] = {4 << 20, 3 << 20, 0};
    check_each(check_packed_ops, dtypes, sizeof dtypes / sizeof dtypes[0], caches,
               sizeof caches / sizeof caches[0]);
    YT_ASSERT_NO_LEAKS();
}

/* The blocked traversal a panel of columns at a time (runtime/pointwise.c, block_panel), which
 * it takes from memory when a transposed input's columns are a multiple of 2 KiB apart: x.t()
 * on [H - 3, 1211] where x has rows of H elements, 2 KiB, so the 1211 columns are panels of 512
 * (128 in tiles) and one narrower, and then an edge; added into a fresh output and in place, and
 * alone (copied, negated). */
static void
check_block_panels(yt_dtype dtype, int64_t cache)
{
    enum { C = 1211, MAX_H = 2048 };
    const int64_t H = 2048 / (int64_t)yt_dtype_size(dtype), R = H - 3;
    static double xv[C * MAX_H], yv[MAX_H * C], want[MAX_H * C];
    for (int64_t i = 0; i < C * H; i++)
        xv[i] = (double)(i % 97);
    for (int64_t i = 0; i < R * C; i++)
        yv[i] = (double)((i * 7) % 89);
    int64_t xs[2] = {C, H}, ys[2] = {R, C};
    yt_tensor *x64 = yt_tensor_from_data(xv, xs, 2, YT_DTYPE_F64);
    yt_tensor *y64 = yt_tensor_from_data(yv, ys, 2, YT_DTYPE_F64);
    yt_tensor *x = yt_to(x64, dtype), *y = yt_to(y64, dtype);
    yt_tensor *x_rows = yt_narrow(x, 1, 0, R), *xt = yt_transpose(x_rows, 0, 1);
    cr_assert_not_null(xt, "%s", yt_errmsg());
    for (int64_t r = 0; r < R; r++)
        for (int64_t c = 0; c < C; c++)
            want[r * C + c] = xv[c * H + r] + yv[r * C + c];
    expect_grid(yt_add(xt, y), want, R, C, "x.t() + y, columns 2 KiB apart", dtype, cache);
    yt_tensor *acc = yt_clone(y);
    cr_assert_eq(yt_add_(acc, xt), YT_OK, "%s", yt_errmsg());
    expect_grid(acc, want, R, C, "y.add_(x.t()), columns 2 KiB apart", dtype, cache);

    /* x.t() alone; from memory, 4-byte elements go in tiles of strips (tile_strips), as the sums
     * above: 32 strips of 16 rows, the last of 13, in groups of 16, split between threads at 2 */
    const int threads_before = yt_get_num_threads();
    for (int threads = 1; threads <= 2; threads++) {
        cr_assert_eq(yt_set_num_threads(threads), YT_OK, "%s", yt_errmsg());
        for (int64_t r = 0; r < R; r++)
            for (int64_t c = 0; c < C; c++)
                want[r * C + c] = xv[c * H + r];
        expect_grid(yt_contiguous(xt), want, R, C, "x.t().contiguous(), columns 2 KiB apart", dtype,
                    cache);
        if (dtype == YT_DTYPE_U8)
            continue;
        for (int64_t i = 0; i < R * C; i++)
            want[i] = -want[i];
        expect_grid(yt_neg(xt), want, R, C, "-x.t(), columns 2 KiB apart", dtype, cache);
    }
    cr_assert_eq(yt_set_num_threads(threads_before), YT_OK, "%s", yt_errmsg());
    yt_release(xt);
    yt_release(x_rows);
    yt_release(y);
    yt_release(x);
    yt_release(y64);
    yt_release(x64);
}

/* check_block_panels with the last-level cache forced to 4 MiB, from which these operands (2.5
 * MB or more each) count as coming from memory, and at the machine's size, where they do not. */
Test(pointwise, transposed_columns_a_power_of_two_apart_in_panels)
{
    const yt_dtype dtypes[] = {YT_DTYPE_U8, YT_DTYPE_F16, YT_DTYPE_F32, YT_DTYPE_F64};
    const int64_t caches[] = {4 << 20, 0};
    check_each(check_block_panels, dtypes, sizeof dtypes / sizeof dtypes[0], caches,
               sizeof caches / sizeof caches[0]);
    YT_ASSERT_NO_LEAKS();
}

/* Rows that share a broadcast row, past 16 MiB, run in chunks that prefetch the streamed
 * operands (runtime/pointwise.c, run_row_prefetching): every element of x + row must still be
 * its own sum, with rows that end in a partial chunk (1000 f32: 512 + 488), more operands, and
 * at 2 threads, whose shares start mid-row. */
Test(pointwise, broadcast_rows_past_the_cache)
{
    enum { ROWS = 1500, COLS = 1000 };
    int64_t shape[2] = {ROWS, COLS}, row_shape[1] = {COLS};
    static float x_values[ROWS * COLS], got[ROWS * COLS];
    float row_values[COLS];
    bool pick_values[COLS];
    for (int64_t i = 0; i < ROWS * COLS; i++)
        x_values[i] = (float)(i % 1009) * 0.25f;
    for (int64_t j = 0; j < COLS; j++) {
        row_values[j] = (float)j * 0.5f - 100.0f;
        pick_values[j] = j % 3 == 0;
    }
    yt_tensor *x = yt_tensor_from_data(x_values, shape, 2, YT_DTYPE_F32);
    yt_tensor *row = yt_tensor_from_data(row_values, row_shape, 1, YT_DTYPE_F32);
    yt_tensor *pick = yt_tensor_from_data(pick_values, row_shape, 1, YT_DTYPE_BOOL);
    int threads_before = yt_get_num_threads();
    for (int threads = 1; threads <= 2; threads++) {
        cr_assert_eq(yt_set_num_threads(threads), YT_OK);
        yt_tensor *sum = yt_add(x, row);
        yt_tensor *picked = yt_where(pick, x, row); /* two shared rows, one stream */
        cr_assert_not_null(picked, "%s", yt_errmsg());
        cr_assert_eq(yt_tensor_copy_to(sum, got, sizeof got, YT_DTYPE_F32), YT_OK);
        for (int64_t i = 0; i < ROWS * COLS; i++)
            cr_assert_eq(got[i], x_values[i] + row_values[i % COLS],
                         "%d threads: sum [%lld, %lld] got %g want %g", threads,
                         (long long)(i / COLS), (long long)(i % COLS), got[i],
                         x_values[i] + row_values[i % COLS]);
        cr_assert_eq(yt_tensor_copy_to(picked, got, sizeof got, YT_DTYPE_F32), YT_OK);
        for (int64_t i = 0; i < ROWS * COLS; i++) {
            float want = pick_values[i % COLS] ? x_values[i] : row_values[i % COLS];
            cr_assert_eq(got[i], want, "%d threads: where [%lld, %lld] got %g want %g", threads,
                         (long long)(i / COLS), (long long)(i % COLS), got[i], want);
        }
        yt_release(sum);
        yt_release(picked);
    }
    cr_assert_eq(yt_set_num_threads(threads_before), YT_OK);
    yt_release(x);
    yt_release(row);
    yt_release(pick);
    YT_ASSERT_NO_LEAKS();
}

/* Loops run blocks of rows along dim 1 (runtime/pointwise.c, run_range): a block must stop at
 * the end of dim 1 and carry into dim 2, and at 2 threads the shares start partway along a row
 * and partway down dim 1. Short rows (5 of 11 elements) of a view that also leaves out the last
 * row of each batch, so a block that ran past dim 1 would read that row; through the strided
 * path, the broadcast path (a column), and the copy loops (same dtype and converting). The
 * values change with each pass, so results left from an earlier pass do not match. */
Test(pointwise, blocks_of_rows_carry_across_dims)
{
    enum { B = 7, R = 1300, W = 11, N = 5 }; /* 7 * 1300 * 5 = 45500 elements > the grain */
    int64_t full[3] = {B, R + 1, W}, shape[3] = {B, R, N}, col_shape[3] = {B, R, 1};
    static float x_values[B * (R + 1) * W], col_values[B * R], got[B * R * N];
    static double got64[B * R * N];
    int threads_before = yt_get_num_threads();
    for (int threads = 1; threads <= 2; threads++) {
        for (int64_t i = 0; i < B * (R + 1) * W; i++)
            x_values[i] = (float)(i % 1013) - 500.0f + 2000.0f * (float)threads;
        for (int64_t i = 0; i < B * R; i++)
            col_values[i] = (float)(i % 17) * 0.5f;
        yt_tensor *x = yt_tensor_from_data(x_values, full, 3, YT_DTYPE_F32);
        yt_tensor *rows = yt_narrow(x, 1, 0, R);
        yt_tensor *xn = yt_narrow(rows, 2, 3, N); /* [7, 1300, 5] of [7, 1301, 11] */
        yt_tensor *col = yt_tensor_from_data(col_values, col_shape, 3, YT_DTYPE_F32);
        yt_tensor *sum = yt_full(shape, 3, yt_float(NAN)), *plus = yt_full(shape, 3, yt_float(NAN));
        cr_assert_not_null(xn, "%s", yt_errmsg());
        cr_assert_eq(yt_set_num_threads(threads), YT_OK);
        cr_assert_eq(yt_add_out(sum, xn, col), YT_OK, "%s", yt_errmsg());
        cr_assert_eq(yt_add_scalar_out(plus, xn, yt_float(0.5)), YT_OK, "%s", yt_errmsg());
        yt_tensor *copy = yt_contiguous(xn);
        yt_tensor *wide = yt_to(xn, YT_DTYPE_F64);
        cr_assert(copy != NULL && wide != NULL, "%s", yt_errmsg());
        yt_tensor *results[3] = {sum, plus, copy};
        for (int k = 0; k < 3; k++) {
            cr_assert_eq(yt_tensor_copy_to(results[k], got, sizeof got, YT_DTYPE_F32), YT_OK);
            for (int64_t i = 0; i < B * R * N; i++) {
                int64_t b = i / (R * N), r = i / N % R, j = i % N;
                float xv = x_values[(b * (R + 1) + r) * W + 3 + j];
                float want = k == 0 ? xv + col_values[b * R + r] : k == 1 ? xv + 0.5f : xv;
                cr_assert_eq(got[i], want,
                             "%d threads, result %d [%lld, %lld, %lld]: got %g want %g", threads, k,
                             (long long)b, (long long)r, (long long)j, got[i], want);
            }
        }
        cr_assert_eq(yt_tensor_copy_to(wide, got64, sizeof got64, YT_DTYPE_F64), YT_OK);
        for (int64_t i = 0; i < B * R * N; i++) {
            int64_t b = i / (R * N), r = i / N % R, j = i % N;
            cr_assert_eq(got64[i], (double)x_values[(b * (R + 1) + r) * W + 3 + j],
                         "%d threads, to f64 at %lld", threads, (long long)i);
        }
        yt_release(sum);
        yt_release(plus);
        yt_release(copy);
        yt_release(wide);
        yt_release(col);
        yt_release(xn);
        yt_release(rows);
        yt_release(x);
    }
    cr_assert_eq(yt_set_num_threads(threads_before), YT_OK);
    YT_ASSERT_NO_LEAKS();
}

/* Reads the i64 values of `t` (any integer dtype) and releases it. */
static void
expect_i64(yt_tensor *t, const int64_t *want, int64_t n, const char *what)
{
    cr_assert_not_null(t, "%s: %s", what, yt_errmsg());
    int64_t got[8];
    cr_assert_eq(yt_tensor_copy_to(t, got, sizeof got, YT_DTYPE_I64), YT_OK, "%s", yt_errmsg());
    for (int64_t i = 0; i < n; i++)
        cr_assert_eq(got[i], want[i], "%s[%lld]: got %lld, want %lld", what, (long long)i,
                     (long long)got[i], (long long)want[i]);
    yt_release(t);
}

static yt_tensor *
full1(int64_t v, yt_dtype dtype)
{
    const int64_t one = 1;
    return yt_full_ex(&one, 1, yt_int(v), dtype, YT_DEVICE_CPU);
}

/* Signed integer + - * and negation wrap (two's complement) as in PyTorch; the generated loops
 * compute them unsigned, so UBSan (make test-asan) finds no overflow in them. */
Test(pointwise, signed_integer_arithmetic_wraps)
{
    yt_tensor *mn = full1(INT64_MIN, YT_DTYPE_I64), *mx = full1(INT64_MAX, YT_DTYPE_I64);
    expect_i64(yt_neg(mn), (int64_t[]){INT64_MIN}, 1, "neg i64 min");
    expect_i64(yt_add(mx, mx), (int64_t[]){-2}, 1, "i64 max + max");
    expect_i64(yt_sub(mn, mx), (int64_t[]){1}, 1, "i64 min - max");
    expect_i64(yt_mul(mx, mx), (int64_t[]){1}, 1, "i64 max * max");
    expect_i64(yt_square(mx), (int64_t[]){1}, 1, "square i64 max");
    expect_i64(yt_add_scalar(mx, yt_int(1)), (int64_t[]){INT64_MIN}, 1, "i64 max + 1");
    expect_i64(yt_rsub(mn, yt_int(0)), (int64_t[]){INT64_MIN}, 1, "0 - i64 min");
    yt_release(mn);
    yt_release(mx);
    yt_tensor *m32 = full1(INT32_MAX, YT_DTYPE_I32), *n32 = full1(INT32_MIN, YT_DTYPE_I32);
    expect_i64(yt_mul(m32, m32), (int64_t[]){1}, 1, "i32 max * max");
    expect_i64(yt_add(m32, m32), (int64_t[]){-2}, 1, "i32 max + max");
    expect_i64(yt_neg(n32), (int64_t[]){INT32_MIN}, 1, "neg i32 min");
    expect_i64(yt_add_ex(n32, m32, yt_int(-1)), (int64_t[]){1}, 1, "i32 min - max via alpha");
    yt_release(m32);
    yt_release(n32);
    yt_tensor *m16 = full1(INT16_MAX, YT_DTYPE_I16), *m8 = full1(INT8_MIN, YT_DTYPE_I8);
    expect_i64(yt_mul(m16, m16), (int64_t[]){1}, 1, "i16 max * max");
    expect_i64(yt_neg(m8), (int64_t[]){INT8_MIN}, 1, "neg i8 min");
    yt_release(m16);
    yt_release(m8);
    YT_ASSERT_NO_LEAKS();
}

/* d(sum(loss(x)))/dx for a leaf made of `x`, compared with `want` (exact). */
static void
expect_loss_grad(const double *x, const double *t, int64_t n, const char *which, double beta,
                 const double *want)
{
    yt_tensor *leaf = vec(x, n, YT_DTYPE_F64), *target = vec(t, n, YT_DTYPE_F64);
    yt_set_requires_grad(leaf, true);
    yt_tensor *loss = strcmp(which, "bce") == 0
                          ? yt_binary_cross_entropy_ex(leaf, target, NULL, "sum")
                          : yt_smooth_l1_loss_ex(leaf, target, "sum", beta);
    cr_assert_not_null(loss, "%s: %s", which, yt_errmsg());
    cr_assert_eq(yt_backward(loss, NULL, NULL), YT_OK, "%s", yt_errmsg());
    expect(yt_grad(leaf), want, n, which);
    yt_release(loss);
    yt_release(target);
    yt_release(leaf);
}

/* PyTorch's binary_cross_entropy_backward: grad (x - t) / max(x (1 - x), 1e-12), finite at the
 * ends of [0, 1]; smooth_l1 with beta 0 has PyTorch's kernel's -1 at x == t. */
Test(pointwise, loss_gradients_at_the_edges_match_pytorch)
{
    const double x[] = {0, 0.5, 1, 0, 1, 0.75}, t[] = {0, 1, 1, 1, 0, 0.25};
    expect_loss_grad(x, t, 6, "bce", 0, (double[]){0, -2, 0, -1e12, 1e12, 0.5 / 0.1875});
    const double s[] = {0, 0.5, 1, 0.3}, st[] = {0, 1, 1, 0};
    expect_loss_grad(s, st, 4, "smooth_l1", 0.0, (double[]){-1, -1, -1, 1});
    expect_loss_grad(s, st, 4, "smooth_l1", 1.0, (double[]){0, -0.5, 0, 0.3});
    YT_ASSERT_NO_LEAKS();
}

/* `make(operands)` with the last-level cache taken as 64 KiB, where these outputs (from 20 KB)
 * are stored around the caches (runtime/pointwise.c, nontemporal_output), must give the same
 * bits as with the machine's, where they are stored plainly; and `buffer`, of which the output
 * may be a part, must agree everywhere. */
typedef struct streamed_case {
    const char *what;
    yt_tensor *(*make)(yt_tensor *const *operands, yt_tensor *buffer);
} streamed_case;

static void
expect_same_streamed(const streamed_case *c, yt_tensor *const *operands, const int64_t *shape,
                     int dim, yt_dtype dtype)
{
    yt_tensor *results[2], *buffers[2];
    for (int streamed = 0; streamed < 2; streamed++) {
        yt__set_cache_bytes(streamed ? 64 << 10 : 0);
        buffers[streamed] = yt_full_ex(shape, dim, yt_int(7), dtype, YT_DEVICE_CPU);
        results[streamed] = c->make(operands, buffers[streamed]);
        cr_assert_not_null(results[streamed], "%s %s: %s", c->what, yt_dtype_name(dtype),
                           yt_errmsg());
    }
    yt__set_cache_bytes(0);
    for (int k = 0; k < 2; k++) {
        yt_tensor *plain = k ? buffers[0] : results[0], *streamed = k ? buffers[1] : results[1];
        yt_tensor *differs = yt_ne(plain, streamed), *any = differs ? yt_any(differs) : NULL;
        bool bad = true;
        cr_assert_eq(yt_tensor_copy_to(any, &bad, sizeof bad, YT_DTYPE_BOOL), YT_OK, "%s",
                     yt_errmsg());
        cr_assert(!bad, "%s %s: the streamed %s differs from the plain one", c->what,
                  yt_dtype_name(dtype), k ? "buffer" : "result");
        yt_release(any);
        yt_release(differs);
    }
    for (int k = 0; k < 2; k++) {
        yt_release(results[k]);
        yt_release(buffers[k]);
    }
}

/* out= the buffer's elements from `offset` on (a start anywhere in a cache line). */
static yt_tensor *
add_into_offset(yt_tensor *const *o, yt_tensor *buffer, int64_t offset)
{
    yt_tensor *flat = yt_reshape(buffer, (const int64_t[]){-1}, 1);
    yt_tensor *out = yt_narrow(flat, 0, offset, yt_tensor_numel(o[0]) - 15);
    yt_tensor *a = yt_narrow(o[0], 0, 0, yt_tensor_numel(o[0]) - 15);
    yt_tensor *b = yt_narrow(o[1], 0, 0, yt_tensor_numel(o[0]) - 15);
    yt_status s = yt_add_out(out, a, b);
    yt_release(a);
    yt_release(b);
    yt_release(flat);
    if (s != YT_OK) {
        yt_release(out);
        return NULL;
    }
    return out;
}

static yt_tensor *
flat_at_0(yt_tensor *const *o, yt_tensor *buffer)
{
    return add_into_offset(o, buffer, 0);
}

static yt_tensor *
flat_at_1(yt_tensor *const *o, yt_tensor *buffer)
{
    return add_into_offset(o, buffer, 1);
}

static yt_tensor *
flat_at_15(yt_tensor *const *o, yt_tensor *buffer)
{
    return add_into_offset(o, buffer, 15);
}

static yt_tensor *
in_place(yt_tensor *const *o, yt_tensor *buffer)
{
    (void)buffer;
    yt_tensor *x = yt_clone(o[0]);
    if (x != NULL && yt_mul_scalar_(x, yt_int(3)) != YT_OK) {
        yt_release(x);
        return NULL;
    }
    return x;
}

static yt_tensor *
beside_a_row(yt_tensor *const *o, yt_tensor *buffer)
{
    (void)buffer;
    return yt_sub(o[2], o[3]); /* [R, C] - [C] */
}

static yt_tensor *
short_rows(yt_tensor *const *o, yt_tensor *buffer)
{
    (void)buffer;
    yt_tensor *a = yt_narrow(o[0], 0, 0, 40000), *b = yt_narrow(o[1], 0, 0, 8000);
    yt_tensor *rows = yt_reshape(a, (const int64_t[]){8000, 5}, 2);
    yt_tensor *col = yt_reshape(b, (const int64_t[]){8000, 1}, 2);
    yt_tensor *sum = yt_add(rows, col); /* [8000, 5] + [8000, 1]: staged */
    yt_release(col);
    yt_release(rows);
    yt_release(b);
    yt_release(a);
    return sum;
}

/* max(x, x) over every other column of x: its loop's stepped form for f32 and f64 */
static yt_tensor *
max_of_every_other(yt_tensor *x)
{
    yt_tensor *every_other = yt_slice_ex(x, 1, 0, yt_tensor_sizes(x)[1], 2);
    yt_tensor *max = yt_maximum(every_other, every_other);
    yt_release(every_other);
    return max;
}

static yt_tensor *
stepped_input(yt_tensor *const *o, yt_tensor *buffer)
{
    (void)buffer;
    return max_of_every_other(o[2]);
}

/* rows of 1101 f32 or f64: rows that start at and between 32-byte boundaries, streamed by the
 * stepped form from its vectors where they start one */
static yt_tensor *
long_stepped_rows(yt_tensor *const *o, yt_tensor *buffer)
{
    (void)buffer;
    return max_of_every_other(o[0]);
}

static yt_tensor *
transposed(yt_tensor *const *o, yt_tensor *buffer)
{
    (void)buffer;
    yt_tensor *t = yt_t(o[4]);
    yt_tensor *sum = yt_add(t, o[5]); /* blocks; their rows stream where they are whole lines */
    yt_release(t);
    return sum;
}

static yt_tensor *
compared(yt_tensor *const *o, yt_tensor *buffer)
{
    (void)buffer;
    return yt_lt(o[2], o[3]); /* a bool output, its rows a quarter or an eighth of the inputs' */
}

/* Each traversal that can store its output around the caches, for 1- to 8-byte elements: flat
 * (the output starting at, or 1 or 15 elements past, a line's start, a length that ends mid-line),
 * beside a broadcast row, in short staged rows, beside a stepped input (gathered for 1- and
 * 2-byte elements; f32 and f64 take the loops' stepped form, which streams its vectors), in
 * blocks with a transposed input (rows of 1024 bytes for f32,
 * whole lines a row; of 520 for [130, 130] f32, not); and beside them, in place and a comparison
 * (a bool output), which do not stream. */
static void
all_streamed(void)
{
    const streamed_case cases[] = {
        {"flat at 0", flat_at_0},         {"flat at 1", flat_at_1},
        {"flat at 15", flat_at_15},       {"in place", in_place},
        {"beside a row", beside_a_row},   {"short rows", short_rows},
        {"stepped input", stepped_input}, {"compared", compared},
    };
    const yt_dtype dtypes[] = {YT_DTYPE_U8, YT_DTYPE_I16, YT_DTYPE_F32, YT_DTYPE_F64};
    const int64_t flat_n = 40013, grid[2] = {301, 333}, squares[] = {256, 130};
    for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++) {
        const yt_dtype dt = dtypes[d];
        int64_t sq = squares[0], sq2[2] = {sq, sq};
        for (int s = 0; s < 2; s++) {
            sq = squares[s];
            sq2[0] = sq2[1] = sq;
            yt_tensor *o[6] = {
                yt_randint_ex(100, &flat_n, 1, NULL, dt, YT_DEVICE_CPU),
                yt_randint_ex(100, &flat_n, 1, NULL, dt, YT_DEVICE_CPU),
                yt_randint_ex(100, grid, 2, NULL, dt, YT_DEVICE_CPU),
                yt_randint_ex(100, grid + 1, 1, NULL, dt, YT_DEVICE_CPU),
                yt_randint_ex(100, sq2, 2, NULL, dt, YT_DEVICE_CPU),
                yt_randint_ex(100, sq2, 2, NULL, dt, YT_DEVICE_CPU),
            };
            for (int k = 0; k < 6; k++)
                cr_assert_not_null(o[k], "%s", yt_errmsg());
            if (s == 0)
                for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
                    expect_same_streamed(&cases[c], o, c < 4 ? &flat_n : grid, c < 4 ? 1 : 2, dt);
            const streamed_case blocks = {"transposed", transposed};
            expect_same_streamed(&blocks, o, sq2, 2, dt);
            if (s == 0) {
                const int64_t wide[2] = {7, 2 * 1101}, half[2] = {7, 1101};
                yt_tensor *w = yt_randint_ex(100, wide, 2, NULL, dt, YT_DEVICE_CPU);
                cr_assert_not_null(w, "%s", yt_errmsg());
                const streamed_case long_rows = {"long stepped rows", long_stepped_rows};
                expect_same_streamed(&long_rows, &w, half, 2, dt);
                yt_release(w);
            }
            for (int k = 0; k < 6; k++)
                yt_release(o[k]);
        }
    }
}

Test(pointwise, outputs_past_the_cache_stored_around_it)
{
    at_1_and_2_threads(all_streamed);
    YT_ASSERT_NO_LEAKS();
}

/* The last-level cache that decides streaming is at most 16 MiB a CPU, whatever a guest's sysfs
 * reports (runtime/cache_size.c), and some cache. */
Test(pointwise, last_level_cache_taken_as_at_most_16_mib_a_cpu)
{
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    const int64_t bytes = yt__cache_bytes();
    cr_assert_gt(cpus, 0);
    cr_assert_gt(bytes, 0);
    cr_assert_leq(bytes, (int64_t)cpus * (16 << 20), "%lld bytes for %ld CPUs", (long long)bytes,
                  cpus);
}
