/* Small-GEMM path: packing, blocking and register-blocked microkernels for f32 and f64.
 *
 * A microkernel keeps an MR x NR tile of C in registers and, for each of kc steps, loads NR
 * values of B (one or two vectors) and broadcasts MR values of A into MR * NR / LANES FMAs:
 *   AVX-512  f32 12 x 32 and 12 x 16, f64 12 x 16 and 12 x 8   (of 32 zmm registers)
 *   AVX2     f32  6 x 16 and  6 x  8, f64  6 x  8 and  6 x 4   (of 16 ymm registers)
 * plus 8- and 4-row (AVX2: 4- and 2-row) versions for the last rows. The narrow (one vector)
 * tiles serve n <= LANES and the last columns. Operands are read in place where their layout
 * allows: a row-major or column-major A (the kernels read rows or columns of it directly), a
 * row-major B with short rows (masked loads at its right edge); the rest is packed, with
 * in-register transposes for a transposed B (x @ W^T) or a row-major A that must be packed.
 * The AVX-512 code carries per-function target attributes, so the library (built for x86-64-v3)
 * still runs on AVX2-only CPUs; the set is chosen once from cpuid. */
#include <stdatomic.h>
#include <string.h>

#include "gemm_small.h"
#include "gemm_threads.h"
#include "gemm_ukr.h"
#include "parallel.h"

/* Blocking: MC rows of A stream past a kc x NR micro-panel of B; NC bounds the packed B block.
 * k up to 1024 is one block (its micro-panel comes from L2, which keeps up): every k block
 * re-reads and re-stores C, which cost most where C is stored transposed, as in nn.Linear's
 * x @ W^T for a small batch, where the transposed orientation packs the small x instead of W
 * (64x784x256 with W^T: 207 -> 232 GFLOP/s; the bench MLP step 0.338 -> 0.320 ms). */
#define SMALL_KC 1024
#define SMALL_MC 144
#define SMALL_NC 1536
/* Rows of B up to this long (and not 4 KiB multiples) are read in place instead of packed:
 * packing 3 KiB rows cost 64x256x784 (nn.Linear's dX) 15%. */
#define SMALL_DIRECT_ROW_BYTES 8192

/* ---------------------------------------------------------------- kernel sets */

typedef void (*ukr_s_fn)(int64_t kc, const float *a, int64_t lda, const float *b, int64_t ldb,
                         float *c, int64_t rsc, int64_t csc, float alpha, float beta, int mh,
                         int nw, const float *bias);
typedef void (*ukr_d_fn)(int64_t kc, const double *a, int64_t lda, const double *b, int64_t ldb,
                         double *c, int64_t rsc, int64_t csc, double alpha, double beta, int mh,
                         int nw, const double *bias);
typedef void (*tr_s_fn)(const float *src, int64_t ss, int rows, int cols, float *dst, int64_t lds,
                        int width);
typedef void (*tr_d_fn)(const double *src, int64_t ss, int rows, int cols, double *dst, int64_t lds,
                        int width);

/* One instruction set's kernels for one type: tile heights mrs[0] = mr > mrs[1] > mrs[2];
 * fn[h][wide][rows]: height mrs[h], two vectors wide or one, A read as rows (in place) or as a
 * panel (packed, or a column-major A in place). tr: the vector transpose. */
#define DEFINE_KSET_TYPE(KSET, UKR, TR)                                                            \
    typedef struct {                                                                               \
        int mr, lanes, mrs[3];                                                                     \
        UKR fn[3][2][2];                                                                           \
        TR tr;                                                                                     \
    } KSET;
DEFINE_KSET_TYPE(kset_s, ukr_s_fn, tr_s_fn)
DEFINE_KSET_TYPE(kset_d, ukr_d_fn, tr_d_fn)

/* The 12 kernels of one set: heights H0 > H1 > H2, widths 2 and 1 vectors, A panel / rows. */
#define DEFINE_UKRS(P, T, TARGET, ISA, H0, H1, H2)                                                 \
    DEFINE_UKR(P##_##H0##_2_0, T, TARGET, ISA, H0, 2, 0)                                           \
    DEFINE_UKR(P##_##H0##_2_1, T, TARGET, ISA, H0, 2, 1)                                           \
    DEFINE_UKR(P##_##H0##_1_0, T, TARGET, ISA, H0, 1, 0)                                           \
    DEFINE_UKR(P##_##H0##_1_1, T, TARGET, ISA, H0, 1, 1)                                           \
    DEFINE_UKR(P##_##H1##_2_0, T, TARGET, ISA, H1, 2, 0)                                           \
    DEFINE_UKR(P##_##H1##_2_1, T, TARGET, ISA, H1, 2, 1)                                           \
    DEFINE_UKR(P##_##H1##_1_0, T, TARGET, ISA, H1, 1, 0)                                           \
    DEFINE_UKR(P##_##H1##_1_1, T, TARGET, ISA, H1, 1, 1)                                           \
    DEFINE_UKR(P##_##H2##_2_0, T, TARGET, ISA, H2, 2, 0)                                           \
    DEFINE_UKR(P##_##H2##_2_1, T, TARGET, ISA, H2, 2, 1)                                           \
    DEFINE_UKR(P##_##H2##_1_0, T, TARGET, ISA, H2, 1, 0)                                           \
    DEFINE_UKR(P##_##H2##_1_1, T, TARGET, ISA, H2, 1, 1)
#define KSET_INIT(P, ISA, H0, H1, H2, TR)                                                          \
    {                                                                                              \
        H0, V(ISA, LANES), {H0, H1, H2},                                                           \
            {{{P##_##H0##_1_0, P##_##H0##_1_1}, {P##_##H0##_2_0, P##_##H0##_2_1}},                 \
             {{P##_##H1##_1_0, P##_##H1##_1_1}, {P##_##H1##_2_0, P##_##H1##_2_1}},                 \
             {{P##_##H2##_1_0, P##_##H2##_1_1}, {P##_##H2##_2_0, P##_##H2##_2_1}}},                \
            TR                                                                                     \
    }

#define AVX512 "avx512f,avx512vl,fma"
#define AVX2   "avx2,fma"
DEFINE_UKRS(ukr_s512, float, AVX512, S512, 12, 8, 4)
DEFINE_UKRS(ukr_d512, double, AVX512, D512, 12, 8, 4)
DEFINE_UKRS(ukr_s256, float, AVX2, S256, 6, 4, 2)
DEFINE_UKRS(ukr_d256, double, AVX2, D256, 6, 4, 2)

static const kset_s kset_s512 = KSET_INIT(ukr_s512, S512, 12, 8, 4, transpose_s512);
static const kset_d kset_d512 = KSET_INIT(ukr_d512, D512, 12, 8, 4, transpose_d512);
static const kset_s kset_s256 = KSET_INIT(ukr_s256, S256, 6, 4, 2, transpose_s256);
static const kset_d kset_d256 = KSET_INIT(ukr_d256, D256, 6, 4, 2, transpose_d256);

/* ---------------------------------------------------------------- choosing the kernel set */

static const kset_s *
kset_s_get(void)
{
    return yt__cpu_isa() == YT__ISA_AVX512 ? &kset_s512 : &kset_s256;
}

static const kset_d *
kset_d_get(void)
{
    return yt__cpu_isa() == YT__ISA_AVX512 ? &kset_d512 : &kset_d256;
}

/* ---------------------------------------------------------------- operand access plans */

static int64_t
round_up(int64_t x, int64_t to)
{
    return (x + to - 1) / to * to;
}

static int64_t
iabs64(int64_t x)
{
    return x < 0 ? -x : x;
}

/* Whether a matrix whose rows (or columns) lie `stride` elements apart can be read in place:
 * 4 KiB multiples put all of them in one L1 set. */
static bool
in_place_stride(int64_t stride, size_t esz)
{
    int64_t bytes = iabs64(stride) * (int64_t)esz;
    return bytes < 4096 || bytes % 4096 != 0;
}

/* How the kernels read A (m x k): 2 its rows in place (unit column stride), 1 its columns in
 * place (unit row stride), 0 packed. */
static int
a_access(int64_t rsa, int64_t csa, size_t esz)
{
    if (csa == 1 && in_place_stride(rsa, esz))
        return 2;
    if (rsa == 1 && in_place_stride(csa, esz))
        return 1;
    return 0;
}

/* Whether B (k x n) is read in place: row-major with rows short enough for the hardware
 * prefetcher to stream a micro-panel's kc rows. */
static bool
b_in_place(int64_t rsb, int64_t csb, size_t esz)
{
    return csb == 1 && iabs64(rsb) * (int64_t)esz <= SMALL_DIRECT_ROW_BYTES &&
           in_place_stride(rsb, esz);
}

/* What plan_cost needs of a kernel set: its tile heights (largest and smallest), its vector
 * length and the element size. */
typedef struct {
    int mr, mr_min, lanes;
    size_t esz;
} plan_kernels;

/* How one product runs: its cost for the busiest thread, and the strips C is cut into (1: run
 * on the calling thread alone), of columns (split_n) or of rows, out of `tiles` micro-tiles
 * along that side. */
typedef struct {
    double cost;
    int64_t chunks, tiles;
    bool split_n;
} plan;

/* The cheapest way to run one orientation on up to `threads` threads. Costs are rough cycles of
 * FMA issue: the padded tile work plus packing (per element: copy 0.1, vector transpose 0.3,
 * scalar gather 1.5) plus C's element-wise stores when its rows are not contiguous (2-3 per
 * element, once per k block: 64x784x256 with B transposed ran 8% slower as C^T = B^T A^T).
 * Strips divide the tiles, C's stores and the packing of the operand they cut, but each strip
 * packs all of the other operand it reads: row strips each pack the whole of a packed B, column
 * strips the whole of a packed A. Cutting x @ W^T (64x256x128, W gathered on AVX2) into 4 row
 * strips packed W 4 times and ran 2 threads slower than 1. So the plan weighs row strips, column
 * strips (two a thread, so that a thread that starts late leaves less undone) and one thread. */
static plan
plan_cost(const plan_kernels *pk, int threads, int64_t m, int64_t n, int64_t k, int64_t rsa,
          int64_t csa, int64_t rsb, int64_t csb, int64_t rsc, int64_t csc)
{
    int64_t nr = 2 * pk->lanes, rem = n % nr;
    int64_t n_pad = n - rem + (rem == 0 ? 0 : rem <= pk->lanes ? pk->lanes : nr);
    double tiles = (double)round_up(m, pk->mr_min) * (double)n_pad * (double)k / (2.0 * pk->lanes);
    /* one pass over a packed A (made once for every SMALL_NC columns of C) and over a packed B */
    double pack_a = 0, pack_b = 0, store_c = 0;
    if (a_access(rsa, csa, pk->esz) == 0)
        pack_a = (rsa == 1 ? 0.1 : csa == 1 ? 0.3 : 1.5) * (double)m * (double)k;
    if (!b_in_place(rsb, csb, pk->esz))
        pack_b = (csb == 1 ? 0.1 : rsb == 1 ? 0.3 : 1.5) * (double)k * (double)n;
    if (csc != 1)
        store_c = (rsc == 1 ? 2.0 : 3.0) * (double)m * (double)n *
                  (double)((k + SMALL_KC - 1) / SMALL_KC);
    double pack_a_all = pack_a * (double)((n + SMALL_NC - 1) / SMALL_NC);
    plan best = {tiles + pack_a_all + pack_b + store_c, 1, 1, false};
    for (int split_n = 0; threads > 1 && split_n <= 1; split_n++) {
        int64_t strip_tiles = split_n ? (n + nr - 1) / nr : (m + pk->mr - 1) / pk->mr;
        int64_t chunks = 2 * threads < strip_tiles ? 2 * threads : strip_tiles;
        if (chunks <= 1)
            continue;
        /* the busiest thread: its strips, and their share of the tiles */
        int64_t own = (chunks + threads - 1) / threads;
        int64_t chunk_tiles = (strip_tiles + chunks - 1) / chunks, own_tiles = own * chunk_tiles;
        double share = own_tiles < strip_tiles ? (double)own_tiles / (double)strip_tiles : 1.0;
        double cost;
        if (split_n) {
            cost = share * (tiles + pack_b + store_c) +
                   (double)own * pack_a * (double)((chunk_tiles * nr + SMALL_NC - 1) / SMALL_NC);
        } else {
            cost = share * (tiles + pack_a_all + store_c) + (double)own * pack_b;
        }
        if (cost < best.cost)
            best = (plan){cost, chunks, strip_tiles, split_n};
    }
    return best;
}

/* ---------------------------------------------------------------- the per-type bodies */

#define T    float
#define SFX  s
#define KSET kset_s
#include "gemm_small_impl.h"
#undef T
#undef SFX
#undef KSET

#define T    double
#define SFX  d
#define KSET kset_d
#include "gemm_small_impl.h"
#undef T
#undef SFX
#undef KSET

/* ---------------------------------------------------------------- orientation and threads */

/* One parallel product: C's column (or row) strips of whole micro-tiles, one per chunk. */
#define DEFINE_SPLIT(NAME, T, KSET, BODY)                                                          \
    typedef struct {                                                                               \
        const KSET *u;                                                                             \
        int64_t m, n, k, rsa, csa, rsb, csb, rsc, csc, tiles, chunks;                              \
        T alpha, beta;                                                                             \
        const T *a, *b, *bias;                                                                     \
        T *c;                                                                                      \
        bool split_n;                                                                              \
        _Atomic int status;                                                                        \
    } NAME##_job;                                                                                  \
    static void NAME(void *ctx, int64_t chunk)                                                     \
    {                                                                                              \
        NAME##_job *j = ctx;                                                                       \
        const KSET *u = j->u;                                                                      \
        int64_t lo = j->tiles * chunk / j->chunks, hi = j->tiles * (chunk + 1) / j->chunks;        \
        yt_status s = YT_OK;                                                                       \
        if (j->split_n) {                                                                          \
            int64_t nr = 2 * u->lanes, j0 = lo * nr, j1 = hi * nr < j->n ? hi * nr : j->n;         \
            if (j1 > j0)                                                                           \
                s = BODY(u, j->m, j1 - j0, j->k, j->alpha, j->a, j->rsa, j->csa,                   \
                         j->b + j0 * j->csb, j->rsb, j->csb, j->beta, j->c + j0 * j->csc, j->rsc,  \
                         j->csc, j->bias ? j->bias + j0 : NULL);                                   \
        } else {                                                                                   \
            int64_t i0 = lo * u->mr, i1 = hi * u->mr < j->m ? hi * u->mr : j->m;                   \
            if (i1 > i0)                                                                           \
                s = BODY(u, i1 - i0, j->n, j->k, j->alpha, j->a + i0 * j->rsa, j->rsa, j->csa,     \
                         j->b, j->rsb, j->csb, j->beta, j->c + i0 * j->rsc, j->rsc, j->csc,        \
                         j->bias);                                                                 \
        }                                                                                          \
        if (s != YT_OK)                                                                            \
            atomic_store_explicit(&j->status, (int)s, memory_order_relaxed);                       \
    }
DEFINE_SPLIT(split_s, float, kset_s, small_gemm_s)
DEFINE_SPLIT(split_d, double, kset_d, small_gemm_d)

/* Picks C = A B or C^T = B^T A^T and, with several threads, how to split C: into column or
 * row strips of whole micro-tiles, two per thread, or not at all (whichever plan_cost prefers);
 * the threads of the pool (parallel.h) claim the strips as they come. A bias row (bias[j] added
 * to every row of C, beta 0) goes into the kernels' stores; in the transposed orientation it is
 * a column of C^T, so C is filled with it first and accumulated into (beta 1). */
#define DEFINE_DRIVER(NAME, T, KSET, GET, BODY, SPLIT)                                             \
    yt_status NAME(int64_t m, int64_t n, int64_t k, T alpha, const T *a, int64_t rsa, int64_t csa, \
                   const T *b, int64_t rsb, int64_t csb, T beta, T *c, int64_t rsc, int64_t csc,   \
                   const T *bias, int threads)                                                     \
    {                                                                                              \
        const KSET *u = GET();                                                                     \
        const plan_kernels pk = {u->mr, u->mrs[2], u->lanes, sizeof(T)};                           \
        plan direct = plan_cost(&pk, threads, m, n, k, rsa, csa, rsb, csb, rsc, csc);              \
        plan swapped = plan_cost(&pk, threads, n, m, k, csb, rsb, csa, rsa, csc, rsc);             \
        bool swap = swapped.cost < direct.cost;                                                    \
        plan p = swap ? swapped : direct;                                                          \
        if (swap) {                                                                                \
            if (bias != NULL) {                                                                    \
                for (int64_t i = 0; i < m; i++)                                                    \
                    if (csc == 1)                                                                  \
                        memcpy(c + i * rsc, bias, (size_t)n * sizeof(T));                          \
                    else                                                                           \
                        for (int64_t j = 0; j < n; j++)                                            \
                            c[i * rsc + j * csc] = bias[j];                                        \
                bias = NULL;                                                                       \
                beta = 1;                                                                          \
            }                                                                                      \
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
        if (p.chunks <= 1)                                                                         \
            return BODY(u, m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc, bias);     \
        SPLIT##_job job = {u,       m,        n,     k,    rsa, csa, rsb,  csb, rsc,       csc,    \
                           p.tiles, p.chunks, alpha, beta, a,   b,   bias, c,   p.split_n, YT_OK}; \
        int64_t wait = yt__parallel_run(p.chunks, threads, SPLIT, &job);                           \
        yt__gemm_threads_observe(wait);                                                            \
        int status = atomic_load(&job.status);                                                     \
        if (status != YT_OK)                                                                       \
            return yt__fail_status((yt_status)status,                                              \
                                   "gemm: a worker thread failed (out of memory)");                \
        return YT_OK;                                                                              \
    }

DEFINE_DRIVER(yt__gemm_small_s, float, kset_s, kset_s_get, small_gemm_s, split_s)
DEFINE_DRIVER(yt__gemm_small_d, double, kset_d, kset_d_get, small_gemm_d, split_d)
