/* Small-GEMM path: packing, blocking and MR x NR microkernels for f32 and f64.
 *
 * A microkernel keeps an MR x NR tile of C in registers (NR = two vectors) and, for each of kc
 * steps, loads two vectors of packed B and broadcasts MR packed A values into 2 * MR FMAs:
 *   AVX-512  f32 12 x 32, f64 12 x 16  (24 accumulators of 32 zmm registers)
 *   AVX2     f32  6 x 16, f64  6 x  8  (12 accumulators of 16 ymm registers)
 * The AVX-512 kernels carry per-function target attributes, so the library (built for
 * x86-64-v3) still runs on AVX2-only CPUs; the set is chosen once from cpuid. */
#include <immintrin.h>
#include <omp.h>
#include <string.h>

#include "gemm_small.h"

/* Blocking: a kc x NR micro-panel of B stays in L1 (32 KiB for f32 AVX-512) while MC rows of
 * packed A stream from L2; NC bounds the packed B block. */
#define SMALL_KC 256
#define SMALL_MC 144
#define SMALL_NC 1536
/* Rows of B up to this long are read in place instead of packed. */
#define SMALL_DIRECT_ROW_BYTES 2048

typedef void (*ukr_s_fn)(int64_t kc, const float *pa, const float *pb, int64_t ldb, float *c,
                         int64_t rsc, int64_t csc, float alpha, float beta, int mh, int nw);
typedef void (*ukr_d_fn)(int64_t kc, const double *pa, const double *pb, int64_t ldb, double *c,
                         int64_t rsc, int64_t csc, double alpha, double beta, int mh, int nw);
typedef struct {
    int mr, nr;
    ukr_s_fn fn;
} ukr_info_s;
typedef struct {
    int mr, nr;
    ukr_d_fn fn;
} ukr_info_d;

/* One microkernel: acc[MR][2] += pa[p][0..MR) (x) pb[p * ldb][0..2*LANES) (B packed, ldb = NR,
 * or read in place from a row-major B), then
 * C = alpha * acc + beta * C over the valid mh x nw corner (beta == 0: C is not read). Full
 * tiles with unit column stride are updated with vector loads and stores; the rest through a
 * tile on the stack. */
#define DEFINE_UKR(NAME, T, TARGET, VT, LANES, MR, ZERO, LOADU, STOREU, SET1, FMADD, MUL)          \
    __attribute__((target(TARGET))) static void NAME(                                              \
        int64_t kc, const T *restrict pa, const T *restrict pb, int64_t ldb, T *restrict c,        \
        int64_t rsc, int64_t csc, T alpha, T beta, int mh, int nw)                                 \
    {                                                                                              \
        VT acc0[MR], acc1[MR];                                                                     \
        _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++)                                      \
        {                                                                                          \
            acc0[i] = ZERO();                                                                      \
            acc1[i] = ZERO();                                                                      \
        }                                                                                          \
        for (int64_t p = 0; p < kc; p++) {                                                         \
            VT b0 = LOADU(pb), b1 = LOADU(pb + LANES);                                             \
            _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++)                                  \
            {                                                                                      \
                VT ai = SET1(pa[i]);                                                               \
                acc0[i] = FMADD(ai, b0, acc0[i]);                                                  \
                acc1[i] = FMADD(ai, b1, acc1[i]);                                                  \
            }                                                                                      \
            pa += MR;                                                                              \
            pb += ldb;                                                                             \
        }                                                                                          \
        VT va = SET1(alpha);                                                                       \
        if (mh == MR && nw == 2 * LANES && csc == 1) {                                             \
            _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++)                                  \
            {                                                                                      \
                T *ci = c + i * rsc;                                                               \
                VT r0 = MUL(acc0[i], va), r1 = MUL(acc1[i], va);                                   \
                if (beta != 0) {                                                                   \
                    VT vb = SET1(beta);                                                            \
                    r0 = FMADD(vb, LOADU(ci), r0);                                                 \
                    r1 = FMADD(vb, LOADU(ci + LANES), r1);                                         \
                }                                                                                  \
                STOREU(ci, r0);                                                                    \
                STOREU(ci + LANES, r1);                                                            \
            }                                                                                      \
            return;                                                                                \
        }                                                                                          \
        T tile[MR][2 * LANES];                                                                     \
        _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++)                                      \
        {                                                                                          \
            STOREU(tile[i], MUL(acc0[i], va));                                                     \
            STOREU(tile[i] + LANES, MUL(acc1[i], va));                                             \
        }                                                                                          \
        for (int i = 0; i < mh; i++) {                                                             \
            T *ci = c + i * rsc;                                                                   \
            if (beta == 0)                                                                         \
                for (int j = 0; j < nw; j++)                                                       \
                    ci[j * csc] = tile[i][j];                                                      \
            else                                                                                   \
                for (int j = 0; j < nw; j++)                                                       \
                    ci[j * csc] = tile[i][j] + beta * ci[j * csc];                                 \
        }                                                                                          \
    }

DEFINE_UKR(ukr_s_avx512, float, "avx512f,avx512vl,fma", __m512, 16, 12, _mm512_setzero_ps,
           _mm512_loadu_ps, _mm512_storeu_ps, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_mul_ps)
DEFINE_UKR(ukr_d_avx512, double, "avx512f,avx512vl,fma", __m512d, 8, 12, _mm512_setzero_pd,
           _mm512_loadu_pd, _mm512_storeu_pd, _mm512_set1_pd, _mm512_fmadd_pd, _mm512_mul_pd)
DEFINE_UKR(ukr_s_avx2, float, "avx2,fma", __m256, 8, 6, _mm256_setzero_ps, _mm256_loadu_ps,
           _mm256_storeu_ps, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_mul_ps)
DEFINE_UKR(ukr_d_avx2, double, "avx2,fma", __m256d, 4, 6, _mm256_setzero_pd, _mm256_loadu_pd,
           _mm256_storeu_pd, _mm256_set1_pd, _mm256_fmadd_pd, _mm256_mul_pd)

/* ---------------------------------------------------------------- choosing the kernel set */

static int isa = -1; /* 0 none, 1 avx2, 2 avx512; written once, idempotently */

static int
detect(void)
{
    int v = isa;
    if (v >= 0)
        return v;
    __builtin_cpu_init();
    v = 0;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        v = 1;
    if (v == 1 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl"))
        v = 2;
    __atomic_store_n(&isa, v, __ATOMIC_RELAXED);
    return v;
}

int
yt__gemm_small_level(void)
{
    return detect();
}

const char *
yt__gemm_small_isa(void)
{
    static const char *const names[] = {"none", "avx2", "avx512"};
    return names[detect()];
}

static ukr_info_s
info_s(void)
{
    return detect() == 2 ? (ukr_info_s){12, 32, ukr_s_avx512} : (ukr_info_s){6, 16, ukr_s_avx2};
}

static ukr_info_d
info_d(void)
{
    return detect() == 2 ? (ukr_info_d){12, 16, ukr_d_avx512} : (ukr_info_d){6, 8, ukr_d_avx2};
}

/* ---------------------------------------------------------------- the per-type bodies */

#define T   float
#define SFX s
#include "gemm_small_impl.h"
#undef T
#undef SFX

#define T   double
#define SFX d
#include "gemm_small_impl.h"
#undef T
#undef SFX

/* ---------------------------------------------------------------- orientation and threads */

static int64_t
round_up(int64_t x, int64_t to)
{
    return (x + to - 1) / to * to;
}

/* Whether computing C^T = B^T A^T wastes less: the padded tile work of each orientation, plus
 * the cost of element-wise stores when C's vector direction is not contiguous. */
static bool
better_transposed(int64_t m, int64_t n, int64_t k, int mr, int nr, int64_t rsc, int64_t csc)
{
    double direct = (double)round_up(m, mr) * (double)round_up(n, nr) * (double)k;
    double swapped = (double)round_up(n, mr) * (double)round_up(m, nr) * (double)k;
    double scatter = (double)m * (double)n * 24.0;
    if (csc != 1)
        direct += scatter;
    if (rsc != 1)
        swapped += scatter;
    return swapped < direct;
}

/* Splits C into `threads` column (or row) strips in whole micro-tiles and runs one body per
 * thread. */
#define DEFINE_DRIVER(NAME, T, INFO, BODY)                                                         \
    yt_status NAME(int64_t m, int64_t n, int64_t k, T alpha, const T *a, int64_t rsa, int64_t csa, \
                   const T *b, int64_t rsb, int64_t csb, T beta, T *c, int64_t rsc, int64_t csc,   \
                   int threads)                                                                    \
    {                                                                                              \
        INFO u = CAT2(info_, SFX2)();                                                              \
        if (better_transposed(m, n, k, u.mr, u.nr, rsc, csc)) {                                    \
            const T *t = a;                                                                        \
            a = b;                                                                                 \
            b = t;                                                                                 \
            int64_t tm = m, trs = rsa, tcs = csa;                                                  \
            m = n;                                                                                 \
            n = tm;                                                                                \
            rsa = csb;                                                                             \
            csa = rsb;                                                                             \
            rsb = tcs;                                                                             \
            csb = trs;                                                                             \
            tcs = rsc;                                                                             \
            rsc = csc;                                                                             \
            csc = tcs;                                                                             \
        }                                                                                          \
        int64_t n_tiles = (n + u.nr - 1) / u.nr, m_tiles = (m + u.mr - 1) / u.mr;                  \
        bool split_n = n_tiles >= m_tiles;                                                         \
        int64_t tiles = split_n ? n_tiles : m_tiles;                                               \
        if (threads > tiles)                                                                       \
            threads = (int)tiles;                                                                  \
        if (threads <= 1)                                                                          \
            return BODY(&u, m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc);          \
        yt_status status = YT_OK;                                                                  \
        _Pragma("omp parallel num_threads(threads)")                                               \
        {                                                                                          \
            int nt = omp_get_num_threads(), id = omp_get_thread_num();                             \
            int64_t lo = tiles * id / nt, hi = tiles * (id + 1) / nt;                              \
            yt_status s = YT_OK;                                                                   \
            if (split_n) {                                                                         \
                int64_t j0 = lo * u.nr, j1 = hi * u.nr < n ? hi * u.nr : n;                        \
                if (j1 > j0)                                                                       \
                    s = BODY(&u, m, j1 - j0, k, alpha, a, rsa, csa, b + j0 * csb, rsb, csb, beta,  \
                             c + j0 * csc, rsc, csc);                                              \
            } else {                                                                               \
                int64_t i0 = lo * u.mr, i1 = hi * u.mr < m ? hi * u.mr : m;                        \
                if (i1 > i0)                                                                       \
                    s = BODY(&u, i1 - i0, n, k, alpha, a + i0 * rsa, rsa, csa, b, rsb, csb, beta,  \
                             c + i0 * rsc, rsc, csc);                                              \
            }                                                                                      \
            if (s != YT_OK) {                                                                      \
                _Pragma("omp atomic write") status = s;                                            \
            }                                                                                      \
        }                                                                                          \
        if (status != YT_OK)                                                                       \
            return yt__fail_status(status, "gemm: a worker thread failed (out of memory)");        \
        return YT_OK;                                                                              \
    }

#define CAT2_(a, b) a##b
#define CAT2(a, b)  CAT2_(a, b)

#define SFX2 s
DEFINE_DRIVER(yt__gemm_small_s, float, ukr_info_s, small_gemm_s)
#undef SFX2
#define SFX2 d
DEFINE_DRIVER(yt__gemm_small_d, double, ukr_info_d, small_gemm_d)
#undef SFX2
