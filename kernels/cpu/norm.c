/* linalg_vector_norm on the CPU. ord 2, 1 and +-inf run in one pass through the reduction driver
 * (reduce_plan.h): sum(x*x) then sqrt, sum(|x|), max(|x|) / min(|x|) with NaN winning. f32 rows
 * compute in float within runs of F32_RUN elements (8 lanes) and add the runs in double; f64 in
 * double. Other orders (0, p), f16/bf16 sources and empty inputs use the public reduction ops
 * (grad mode off: the op records its own backward): 0 counts the nonzeros, p gives
 * sum(|x|^p)^(1/p). The input is converted to the result's dtype first (the `dtype` argument). */
#pragma GCC target("avx2,fma")

#include <math.h>

#include "reduce_plan.h"
#include "reduce_rows8.h"
#include "vec_math.h"

typedef yt__reduce_acc acc;

#define F32_RUN 1024

typedef enum norm_kind { L2, L1, LINF, LNINF } norm_kind;

/* ---------------------------------------------------------------- f32 / f64 element folds */

static inline double
fold(norm_kind k, double a, double v)
{
    v = fabs(v);
    switch (k) {
    case L2:
        return a + v * v;
    case L1:
        return a + v;
    case LINF:
        return v > a || isnan(v) ? v : a;
    default:
        return v < a || isnan(v) ? v : a;
    }
}

static inline __m256
abs8(__m256 v)
{
    return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v);
}

/* Contiguous f32: 8-lane runs; +-inf track NaNs in a separate mask (max/min_ps drop them). */
static double
run_f32(norm_kind k, double a, const float *p, int64_t n, int64_t *done)
{
    int64_t i = 0;
    if (k == L2 || k == L1) {
        for (; i + 32 <= n;) {
            int64_t end = n - i < F32_RUN ? i + (n - i) / 32 * 32 : i + F32_RUN;
            __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
            for (; i < end; i += 32) {
                __m256 v0 = _mm256_loadu_ps(p + i), v1 = _mm256_loadu_ps(p + i + 8);
                __m256 v2 = _mm256_loadu_ps(p + i + 16), v3 = _mm256_loadu_ps(p + i + 24);
                if (k == L2) {
                    a0 = _mm256_fmadd_ps(v0, v0, a0);
                    a1 = _mm256_fmadd_ps(v1, v1, a1);
                    a2 = _mm256_fmadd_ps(v2, v2, a2);
                    a3 = _mm256_fmadd_ps(v3, v3, a3);
                } else {
                    a0 = _mm256_add_ps(a0, abs8(v0));
                    a1 = _mm256_add_ps(a1, abs8(v1));
                    a2 = _mm256_add_ps(a2, abs8(v2));
                    a3 = _mm256_add_ps(a3, abs8(v3));
                }
            }
            a += yt__hsum8(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
        }
        if (n - i >= 8) {
            /* short rows, and the rest of long ones, a vector at a time (ord 2 over dim 1 of
             * [16384, 16], one thread: 244 us one element at a time in double) */
            __m256 a0 = _mm256_setzero_ps();
            for (; i + 8 <= n; i += 8) {
                __m256 v = _mm256_loadu_ps(p + i);
                a0 = k == L2 ? _mm256_fmadd_ps(v, v, a0) : _mm256_add_ps(a0, abs8(v));
            }
            a += yt__hsum8(a0);
        }
    } else if (n >= 16) {
        __m256 m0 = _mm256_set1_ps((float)a), m1 = m0, nan = _mm256_setzero_ps();
        for (; i + 16 <= n; i += 16) {
            __m256 v0 = abs8(_mm256_loadu_ps(p + i)), v1 = abs8(_mm256_loadu_ps(p + i + 8));
            nan = _mm256_or_ps(nan, _mm256_cmp_ps(v0, v1, _CMP_UNORD_Q));
            m0 = k == LINF ? _mm256_max_ps(m0, v0) : _mm256_min_ps(m0, v0);
            m1 = k == LINF ? _mm256_max_ps(m1, v1) : _mm256_min_ps(m1, v1);
        }
        if (isnan(a) || _mm256_movemask_ps(nan) != 0)
            a = NAN;
        else if (k == LINF)
            a = yt__hmax8(_mm256_max_ps(m0, m1));
        else
            a = yt__hmin8(_mm256_min_ps(m0, m1));
    }
    *done = i;
    return a;
}

#define LOOPS(K, T)                                                                                \
    static void row_##K##_##T(acc *a, const char *x, int64_t n, int64_t stride)                    \
    {                                                                                              \
        int64_t i = 0;                                                                             \
        double v = a->f;                                                                           \
        if (sizeof(T) == sizeof(float) && stride == sizeof(float))                                 \
            v = run_f32(K, v, (const float *)x, n, &i);                                            \
        for (; i < n; i++)                                                                         \
            v = fold(K, v, *(const T *)(x + i * stride));                                          \
        a->f = v;                                                                                  \
    }                                                                                              \
    static void rows_##K##_##T(acc *accs, const char *x, int64_t n, int64_t stride)                \
    {                                                                                              \
        for (int64_t j = 0; j < n; j++)                                                            \
            accs[j].f = fold(K, accs[j].f, *(const T *)(x + j * stride));                          \
    }

LOOPS(L2, float)
LOOPS(L1, float)
LOOPS(LINF, float)
LOOPS(LNINF, float)
LOOPS(L2, double)
LOOPS(L1, double)
LOOPS(LINF, double)
LOOPS(LNINF, double)

/* Rows of up to YT_ROWS8_MAX floats, 8 at a time (reduce_rows8.h). Ord 2 over dim 1 of
 * [16384, 16] f32, one thread: 94 -> 39.4 us (torch 86.7). */
static bool
row_batch_l2_f32(acc *accs, const char *x, int64_t count, int64_t row_stride, int64_t n,
                 int64_t stride)
{
    return yt__fold_rows8_f32(accs, x, count, row_stride, n, stride, YT_ROWS8_SQUARE);
}

static bool
row_batch_l1_f32(acc *accs, const char *x, int64_t count, int64_t row_stride, int64_t n,
                 int64_t stride)
{
    return yt__fold_rows8_f32(accs, x, count, row_stride, n, stride, YT_ROWS8_ABS);
}

/* Outer f32 sums (ord 1, 2): 64 columns held in float registers down runs of 16 rows. */
static void
rows_block_sum_f32(acc *accs, const char *x, int64_t n, int64_t stride, int64_t m,
                   int64_t row_stride, bool square)
{
    for (int64_t r0 = 0; r0 < m; r0 += 16) {
        int64_t rn = m - r0 < 16 ? m - r0 : 16;
        const char *xb = x + r0 * row_stride;
        int64_t j = 0;
        for (; stride == sizeof(float) && j + 64 <= n; j += 64) {
            __m256 a[8];
            for (int k = 0; k < 8; k++)
                a[k] = _mm256_setzero_ps();
            const char *p = xb + j * (int64_t)sizeof(float);
            for (int64_t r = 0; r < rn; r++, p += row_stride)
                for (int k = 0; k < 8; k++) {
                    __m256 v = _mm256_loadu_ps((const float *)p + 8 * k);
                    a[k] = square ? _mm256_fmadd_ps(v, v, a[k]) : _mm256_add_ps(a[k], abs8(v));
                }
            float part[64];
            for (int k = 0; k < 8; k++)
                _mm256_storeu_ps(part + 8 * k, a[k]);
            for (int k = 0; k < 64; k++)
                accs[j + k].f += part[k];
        }
        for (int64_t r = 0; r < rn && j < n; r++) {
            const char *xr = xb + r * row_stride;
            for (int64_t jj = j; jj < n; jj++)
                accs[jj].f = fold(square ? L2 : L1, accs[jj].f, *(const float *)(xr + jj * stride));
        }
    }
}

static void
rows_block_l2_f32(acc *accs, const char *x, int64_t n, int64_t stride, int64_t m,
                  int64_t row_stride)
{
    rows_block_sum_f32(accs, x, n, stride, m, row_stride, true);
}

static void
rows_block_l1_f32(acc *accs, const char *x, int64_t n, int64_t stride, int64_t m,
                  int64_t row_stride)
{
    rows_block_sum_f32(accs, x, n, stride, m, row_stride, false);
}

/* ---------------------------------------------------------------- driver glue */

static void
init_zero(acc *v, int64_t n, bool floating)
{
    (void)floating;
    for (int64_t j = 0; j < n; j++)
        v[j].f = 0.0;
}

static void
init_inf(acc *v, int64_t n, bool floating)
{
    (void)floating;
    for (int64_t j = 0; j < n; j++)
        v[j].f = INFINITY;
}

static void
combine_sum(acc *total, const acc *part, int64_t n, bool floating)
{
    (void)floating;
    for (int64_t j = 0; j < n; j++)
        total[j].f += part[j].f;
}

static void
combine_max(acc *total, const acc *part, int64_t n, bool floating)
{
    (void)floating;
    for (int64_t j = 0; j < n; j++)
        total[j].f = fold(LINF, total[j].f, part[j].f);
}

static void
combine_min(acc *total, const acc *part, int64_t n, bool floating)
{
    (void)floating;
    for (int64_t j = 0; j < n; j++)
        total[j].f = fold(LNINF, total[j].f, part[j].f);
}

static void
finish_sqrt(acc *v, int64_t n, const void *ctx)
{
    (void)ctx;
    int64_t j = 0;
    /* four at a time: sqrt() is a scalar call-or-instruction per element (errno) */
    for (; j + 4 <= n; j += 4)
        _mm256_storeu_pd(&v[j].f, _mm256_sqrt_pd(_mm256_loadu_pd(&v[j].f)));
    for (; j < n; j++)
        v[j].f = sqrt(v[j].f);
}

static yt__reduce_loops
loops_for(norm_kind k, bool f64)
{
    yt__reduce_loops l = {.init = init_zero,
                          .combine = combine_sum,
                          .floating = true,
                          .divisor = 1.0,
                          .short_rows_across = true};
    switch (k) {
    case L2:
        l.row = f64 ? row_L2_double : row_L2_float;
        l.rows = f64 ? rows_L2_double : rows_L2_float;
        l.rows_block = f64 ? NULL : rows_block_l2_f32;
        l.row_batch = f64 ? NULL : row_batch_l2_f32;
        l.finish = finish_sqrt;
        break;
    case L1:
        l.row = f64 ? row_L1_double : row_L1_float;
        l.rows = f64 ? rows_L1_double : rows_L1_float;
        l.rows_block = f64 ? NULL : rows_block_l1_f32;
        l.row_batch = f64 ? NULL : row_batch_l1_f32;
        break;
    case LINF:
        l.row = f64 ? row_LINF_double : row_LINF_float;
        l.rows = f64 ? rows_LINF_double : rows_LINF_float;
        l.combine = combine_max;
        break;
    default:
        l.row = f64 ? row_LNINF_double : row_LNINF_float;
        l.rows = f64 ? rows_LNINF_double : rows_LNINF_float;
        l.init = init_inf;
        l.combine = combine_min;
        break;
    }
    return l;
}

/* ---------------------------------------------------------------- other orders */

static yt_tensor *
norm_of(yt_tensor *x, double p, const int64_t *dim, int dim_len, bool keepdim)
{
    yt_tensor *neg = yt_lt_scalar(x, yt_int(0));
    yt_tensor *minus = yt_neg(x);
    yt_tensor *absx = yt_where(neg, minus, x);
    yt_release(minus);
    yt_release(neg);
    yt_tensor *result = NULL;
    if (isinf(p)) {
        result = p > 0 ? yt_amax_ex(absx, dim, dim_len, keepdim)
                       : yt_amin_ex(absx, dim, dim_len, keepdim);
    } else if (p == 0) {
        yt_tensor *nz_b = yt_gt_scalar(absx, yt_int(0));
        yt_tensor *nz = yt_to(nz_b, yt_tensor_dtype(x));
        result = yt_sum_dim_ex(nz, dim, dim_len, keepdim, YT_DTYPE_NONE);
        yt_release(nz);
        yt_release(nz_b);
    } else if (p == 1) {
        result = yt_sum_dim_ex(absx, dim, dim_len, keepdim, YT_DTYPE_NONE);
    } else {
        yt_tensor *powed = p == 2 ? yt_mul(absx, absx) : yt_pow(absx, yt_float(p));
        yt_tensor *s = yt_sum_dim_ex(powed, dim, dim_len, keepdim, YT_DTYPE_NONE);
        result = p == 2 ? yt_sqrt(s) : yt_pow(s, yt_float(1.0 / p));
        yt_release(s);
        yt_release(powed);
    }
    yt_release(absx);
    return result;
}

yt_status
yt__cpu_linalg_vector_norm(yt_tensor *result, yt_tensor *self, yt_scalar ord, const int64_t *dim,
                           int dim_len, bool keepdim, yt_dtype dtype)
{
    (void)dtype; /* the result's dtype has it */
    double p = yt__scalar_to_double(ord);
    if (isnan(p))
        return yt__fail_status(YT_ERR_VALUE, "linalg_vector_norm: ord=nan is not a valid order");
    bool fast = (p == 2 || p == 1 || isinf(p)) && self->numel > 0 &&
                (result->dtype == YT_DTYPE_F32 || result->dtype == YT_DTYPE_F64);
    if (fast && result->numel == 0)
        return YT_OK;
    if (fast) {
        yt_tensor *x = self->dtype == result->dtype ? self : yt__cast_copy(self, result->dtype);
        if (x == NULL)
            return yt__last_status();
        norm_kind k = p == 2 ? L2 : p == 1 ? L1 : p > 0 ? LINF : LNINF;
        yt__reduce_loops loops = loops_for(k, result->dtype == YT_DTYPE_F64);
        yt__reduce_run(result, x, dim, dim_len, &loops);
        yt__release_cast(x, self);
        return YT_OK;
    }
    bool prev = yt_set_grad_enabled(false);
    yt__scope_suspend();
    yt_tensor *x = self->dtype == result->dtype ? yt_retain(self) : yt_to(self, result->dtype);
    yt_tensor *n = x == NULL ? NULL : norm_of(x, p, dim, dim_len, keepdim);
    yt_status st = n == NULL ? yt__last_status() : yt__copy_into(result, n);
    yt_release(n);
    yt_release(x);
    yt__scope_resume();
    yt_set_grad_enabled(prev);
    return st;
}
