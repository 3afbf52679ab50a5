/* The 8-lane f32 helpers of kernels/cpu/vec_math.h (softmax, log_softmax, logsumexp and
 * cross_entropy compute through them), against libm in double: yt__exp8 and yt__log8 over a
 * sweep of bit patterns, their special values, and the masked tail loads; and yt__exp16
 * (vec_math512.h) against yt__exp8, bit for bit. Header-only, so the test includes them. */
#pragma GCC target("avx2,fma")

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

#include "vec_math.h"
#include "vec_math512.h"

static float
lane0(__m256 v)
{
    return _mm256_cvtss_f32(v);
}

/* |got - want| in units of the last place of want rounded to f32. */
static double
ulps(float got, double want)
{
    float w = (float)want;
    double ulp = (double)nextafterf(fabsf(w), INFINITY) - (double)fabsf(w);
    return fabs((double)got - want) / ulp;
}

static float
float_of(uint64_t bits)
{
    uint32_t b = (uint32_t)bits;
    float x;
    memcpy(&x, &b, sizeof x);
    return x;
}

/* The sweeps take every 65537th bit pattern, positive and negative: about 65000 values spread
 * over every exponent, subnormals included. */
enum { SWEEP_STEP = 65537 };

Test(vec_math, log8_within_one_ulp)
{
    double worst = 0;
    float at = 0;
    for (uint64_t b = 0; b <= 0xffffffffu; b += SWEEP_STEP) {
        float x = float_of(b);
        if (!(x > 0) || isinf(x))
            continue;
        double e = ulps(lane0(yt__log8(_mm256_set1_ps(x))), log((double)x));
        if (e > worst) {
            worst = e;
            at = x;
        }
    }
    cr_assert(worst <= 1.0, "yt__log8: %.3f ulp at %.9g", worst, (double)at);
}

Test(vec_math, log8_special_values)
{
    cr_assert(isinf(lane0(yt__log8(_mm256_set1_ps(0.0f)))) &&
              lane0(yt__log8(_mm256_set1_ps(0.0f))) < 0);
    cr_assert(isinf(lane0(yt__log8(_mm256_set1_ps(-0.0f)))) &&
              lane0(yt__log8(_mm256_set1_ps(-0.0f))) < 0);
    cr_assert(isnan(lane0(yt__log8(_mm256_set1_ps(-1.0f)))));
    cr_assert(isnan(lane0(yt__log8(_mm256_set1_ps(-INFINITY)))));
    cr_assert(isnan(lane0(yt__log8(_mm256_set1_ps(NAN)))));
    cr_assert_eq(lane0(yt__log8(_mm256_set1_ps(INFINITY))), INFINITY);
    cr_assert_eq(lane0(yt__log8(_mm256_set1_ps(1.0f))), 0.0f);
    /* the smallest subnormal: log(2^-149) */
    cr_assert(ulps(lane0(yt__log8(_mm256_set1_ps(1e-45f))), -149 * log(2.0)) <= 1.0);
}

Test(vec_math, exp8_within_two_ulps_over_its_normal_range)
{
    double worst = 0;
    float at = 0;
    for (uint64_t b = 0; b <= 0xffffffffu; b += SWEEP_STEP) {
        float x = float_of(b);
        if (isnan(x))
            continue;
        double want = exp((double)x);
        if (want < 0x1p-126 || want > 0x1.fffffep127)
            continue; /* 0, subnormal or inf results: checked below */
        double e = ulps(lane0(yt__exp8(_mm256_set1_ps(x))), want);
        if (e > worst) {
            worst = e;
            at = x;
        }
    }
    cr_assert(worst <= 2.0, "yt__exp8: %.3f ulp at %.9g", worst, (double)at);
}

Test(vec_math, exp8_special_values)
{
    cr_assert_eq(lane0(yt__exp8(_mm256_set1_ps(-INFINITY))), 0.0f);
    cr_assert_eq(lane0(yt__exp8(_mm256_set1_ps(-200.0f))), 0.0f);
    cr_assert_eq(lane0(yt__exp8(_mm256_set1_ps(100.0f))), INFINITY);
    cr_assert_eq(lane0(yt__exp8(_mm256_set1_ps(INFINITY))), INFINITY);
    cr_assert(isnan(lane0(yt__exp8(_mm256_set1_ps(NAN)))));
    cr_assert_eq(lane0(yt__exp8(_mm256_set1_ps(0.0f))), 1.0f);
}

/* yt__exp16 of 16 values, at out. */
YT_AVX512 static void
exp16_of(float *out, const float *x)
{
    _mm512_storeu_ps(out, yt__exp16(_mm512_loadu_ps(x)));
}

/* Kernels pick yt__exp16 or yt__exp8 by the CPU (and for whole groups of rows, not per row): the
 * two must give the same bits, or a result would depend on the machine and on where a row falls. */
Test(vec_math, exp16_gives_exp8s_bits)
{
    if (!__builtin_cpu_supports("avx512f"))
        cr_skip_test("no AVX-512F on this CPU");
    float x[16], got[16];
    const float specials[] = {-INFINITY, INFINITY, NAN,  -200.0f, 100.0f, 88.72283935546875f,
                              -104.0f,   -87.5f,   0.0f, -0.0f,   1e-30f, -1e-30f};
    int64_t count = 0;
    for (uint64_t bits = 0; bits < ((uint64_t)1 << 32); bits += 65537 * 16) {
        for (int k = 0; k < 16; k++)
            x[k] = k < 12 && bits == 0 ? specials[k] : float_of(bits + (uint64_t)k * 65537);
        exp16_of(got, x);
        for (int k0 = 0; k0 < 16; k0 += 8) {
            float want[8];
            _mm256_storeu_ps(want, yt__exp8(_mm256_loadu_ps(x + k0)));
            for (int k = 0; k < 8; k++, count++)
                cr_assert(memcmp(&got[k0 + k], &want[k], sizeof(float)) == 0,
                          "exp(%.9g): exp16 %.9g, exp8 %.9g", (double)x[k0 + k],
                          (double)got[k0 + k], (double)want[k]);
        }
    }
    cr_assert_gt(count, 60000);
}

Test(vec_math, tail_loads_read_k_lanes_and_fill_the_rest)
{
    const float src[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    for (int64_t k = 0; k < 8; k++) {
        float got[8], mask[8];
        _mm256_storeu_ps(got, yt__load_tail8(src, k, -5.0f));
        _mm256_storeu_ps(mask, yt__tail_mask8(k));
        for (int64_t i = 0; i < 8; i++) {
            cr_assert_eq(got[i], i < k ? src[i] : -5.0f, "k=%lld lane %lld: %g", (long long)k,
                         (long long)i, (double)got[i]);
            uint32_t bits;
            memcpy(&bits, &mask[i], 4);
            cr_assert_eq(bits, i < k ? 0xffffffffu : 0u, "k=%lld mask lane %lld", (long long)k,
                         (long long)i);
        }
    }
}

/* yt__exp4d against expl (long double) over every 2^-7 step of [-745, 710), plus random points:
 * within one ulp. */
Test(vec_math, exp4d_within_one_ulp)
{
    double worst = 0, at = 0;
    uint64_t state = 5;
    for (int64_t i = 0; i < 2 * 1455 * 128; i++) {
        double x;
        if (i % 2 == 0) {
            x = -745.0 + (double)(i / 2) / 128.0;
        } else {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            x = -700.0 + 1400.0 * (double)(state >> 11) / 9007199254740992.0;
        }
        long double want = expl((long double)x);
        double w = (double)want;
        if (w == 0 || isinf(w) || w < 0x1p-1022)
            continue; /* subnormal results: checked below */
        double ulp = nextafter(w, INFINITY) - w;
        double e = (double)fabsl((long double)yt__exp1d(x) - want) / ulp;
        if (e > worst) {
            worst = e;
            at = x;
        }
    }
    cr_assert(worst <= 1.0, "yt__exp4d: %.3f ulp at %.17g", worst, at);
}

Test(vec_math, exp4d_special_values)
{
    cr_assert_eq(yt__exp1d(0.0), 1.0);
    cr_assert_eq(yt__exp1d(-INFINITY), 0.0);
    cr_assert_eq(yt__exp1d(-746.0), 0.0);
    cr_assert(isinf(yt__exp1d(INFINITY)) && yt__exp1d(INFINITY) > 0);
    cr_assert(isinf(yt__exp1d(709.79)));
    cr_assert(isfinite(yt__exp1d(709.78)));
    cr_assert(isnan(yt__exp1d(NAN)));
    /* subnormal results, to within one subnormal step */
    for (double x = -744.0; x < -708.5; x += 0.37) {
        double want = exp(x);
        cr_assert(fabs(yt__exp1d(x) - want) <= fmax(0x1p-1074, 2e-16 * want), "exp(%.17g)", x);
    }
}
