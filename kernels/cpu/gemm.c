/* yt__gemm_*: argument normalisation, the small-path / BLIS choice, threads, batches. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* blis.h uses pthread barriers */
#endif

#include <stdatomic.h>
#include <stdlib.h>

#include "gemm.h"
#include "gemm_small.h"
#include "gemm_threads.h"
#include "blis_setup.h"
#include "parallel.h"

/* blis.h defines hundreds of unused static inline helpers. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wtype-limits"
#include <blis.h>
#pragma GCC diagnostic pop

/* With AVX2 only, the own path takes products up to this many multiply-adds and BLIS (haswell
 * kernels) the larger ones. With AVX-512 the own path takes every size: on the Zen 5 cores this
 * was tuned on it runs 215-230 GFLOP/s from 128^3 to 1024^3 at one thread, where BLIS 0.9's
 * skx kernels reach about 40. */
#define AVX2_MAX_MACS (200.0 * 200.0 * 200.0)
/* Below this many multiply-adds one thread is faster than waking a second one: BLIS products
 * and batch entries this small are not split (the small path decides through gemm_threads.h). */
#define PARALLEL_MACS (96.0 * 96.0 * 96.0)

/* Strides of a rows x cols matrix as BLIS wants them, or false when BLIS would refuse them (a
 * zero or negative stride, or general strides whose rows and columns interleave): BLIS aborts
 * on those. The stride of a size-1 dimension is never used and is made consistent. */
static bool
blis_strides(int64_t rows, int64_t cols, int64_t *rs_io, int64_t *cs_io)
{
    int64_t rs = *rs_io, cs = *cs_io;
    if (rows == 1 && cols == 1) {
        rs = 1;
        cs = 1;
    } else if (rows == 1) {
        if (cs <= 0 || !yt__mul_ok(&rs, cols, cs))
            return false;
    } else if (cols == 1) {
        if (rs <= 0 || !yt__mul_ok(&cs, rows, rs))
            return false;
    }
    if (rs <= 0 || cs <= 0)
        return false;
    bool ok;
    if (rs == 1 && cs == 1)
        ok = rows == 1 || cols == 1;
    else if (rs == 1)
        ok = cs >= rows; /* column-major */
    else if (cs == 1)
        ok = rs >= cols; /* row-major */
    else if (rs < cs)
        ok = cs / rs >= rows; /* general, column tilt: cs >= rows * rs */
    else if (cs < rs)
        ok = rs / cs >= cols;
    else
        ok = false;
    *rs_io = rs;
    *cs_io = cs;
    return ok;
}

/* Whether no two elements of a rows x cols matrix with these strides share an address: one
 * stride (by magnitude) must step over the whole extent of the other dimension. */
static bool
distinct_elements(int64_t rows, int64_t cols, int64_t rs, int64_t cs)
{
    if (rows == 0 || cols == 0 || (rows == 1 && cols == 1))
        return true;
    if (rows == 1)
        return cs != 0;
    if (cols == 1)
        return rs != 0;
    uint64_t r = rs < 0 ? -(uint64_t)rs : (uint64_t)rs, c = cs < 0 ? -(uint64_t)cs : (uint64_t)cs;
    if (r == 0 || c == 0)
        return false;
    if (r <= c)
        return c / r >= (uint64_t)rows; /* c >= rows * r */
    return r / c >= (uint64_t)cols;
}

typedef struct {
    bool f64;
    int64_t m, n, k;
    double alpha, beta;
    const void *a;
    int64_t rsa, csa;
    const void *b;
    int64_t rsb, csb;
    void *c;
    int64_t rsc, csc;
    const void *bias; /* a row added to every row of C (beta 0), or NULL */
} problem;

/* C's rows filled with the bias row, which then becomes C for beta 1 (for the paths whose
 * kernels take no bias). */
static void
bias_into_c(problem *p)
{
    if (p->bias == NULL)
        return;
    for (int64_t i = 0; i < p->m; i++)
        for (int64_t j = 0; j < p->n; j++) {
            int64_t off = i * p->rsc + j * p->csc;
            if (p->f64)
                ((double *)p->c)[off] = ((const double *)p->bias)[j];
            else
                ((float *)p->c)[off] = ((const float *)p->bias)[j];
        }
    p->bias = NULL;
    p->beta = 1;
}

/* C = beta * C (beta == 0 writes zeros): the k == 0 product. */
static void
scale_c(const problem *p)
{
    for (int64_t i = 0; i < p->m; i++)
        for (int64_t j = 0; j < p->n; j++) {
            int64_t off = i * p->rsc + j * p->csc;
            if (p->f64) {
                double *x = (double *)p->c + off;
                *x = p->beta == 0 ? 0.0 : p->beta * *x;
            } else {
                float *x = (float *)p->c + off;
                *x = p->beta == 0 ? 0.0f : (float)p->beta * *x;
            }
        }
}

/* The last resort when neither the small path (no AVX2) nor BLIS (strides) can take it. */
static void
naive(const problem *p)
{
    for (int64_t i = 0; i < p->m; i++)
        for (int64_t j = 0; j < p->n; j++) {
            double acc = 0;
            for (int64_t q = 0; q < p->k; q++) {
                int64_t ia = i * p->rsa + q * p->csa, ib = q * p->rsb + j * p->csb;
                acc += p->f64 ? ((const double *)p->a)[ia] * ((const double *)p->b)[ib]
                              : (double)((const float *)p->a)[ia] * ((const float *)p->b)[ib];
            }
            int64_t off = i * p->rsc + j * p->csc;
            if (p->f64) {
                double *x = (double *)p->c + off;
                *x = p->alpha * acc + (p->beta == 0 ? 0.0 : p->beta * *x);
            } else {
                float *x = (float *)p->c + off;
                *x = (float)(p->alpha * acc + (p->beta == 0 ? 0.0 : p->beta * *x));
            }
        }
}

/* The BLIS path: the library links a BLIS built without threads of its own, so a product worth
 * splitting is cut into `parts` blocks of rows of C (of columns when C is wider than tall), each
 * one BLIS call, run on the kernel pool. Block edges fall on multiples of BLIS_STEP. Each call
 * packs the whole other operand again, so there is one block per thread. */
#define BLIS_STEP 16

typedef struct {
    const problem *p;
    int64_t rsa, csa, rsb, csb, rsc, csc; /* as blis_strides made them */
    bool by_rows;
    int64_t parts;
} blis_job;

static void
blis_part(void *ctx, int64_t part)
{
    const blis_job *j = ctx;
    const problem *p = j->p;
    int64_t len = j->by_rows ? p->m : p->n, steps = (len + BLIS_STEP - 1) / BLIS_STEP;
    int64_t lo = steps * part / j->parts * BLIS_STEP,
            hi = steps * (part + 1) / j->parts * BLIS_STEP;
    if (hi > len)
        hi = len;
    if (lo >= hi)
        return;
    size_t es = p->f64 ? sizeof(double) : sizeof(float);
    /* rows lo..hi of A and C, or columns lo..hi of B and C */
    const char *a =
        (const char *)p->a + (j->by_rows ? (ptrdiff_t)(lo * j->rsa) * (ptrdiff_t)es : 0);
    const char *b =
        (const char *)p->b + (j->by_rows ? 0 : (ptrdiff_t)(lo * j->csb) * (ptrdiff_t)es);
    char *c = (char *)p->c + (ptrdiff_t)(lo * (j->by_rows ? j->rsc : j->csc)) * (ptrdiff_t)es;
    int64_t m = j->by_rows ? hi - lo : p->m, n = j->by_rows ? p->n : hi - lo;
    rntm_t rntm = BLIS_RNTM_INITIALIZER;
    bli_rntm_set_num_threads(1, &rntm);
    if (p->f64) {
        double alpha = p->alpha, beta = p->beta;
        bli_dgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, m, n, p->k, &alpha, (double *)a, j->rsa,
                     j->csa, (double *)b, j->rsb, j->csb, &beta, (double *)c, j->rsc, j->csc, NULL,
                     &rntm);
    } else {
        float alpha = (float)p->alpha, beta = (float)p->beta;
        bli_sgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, m, n, p->k, &alpha, (float *)a, j->rsa,
                     j->csa, (float *)b, j->rsb, j->csb, &beta, (float *)c, j->rsc, j->csc, NULL,
                     &rntm);
    }
}

/* Runs one checked, no-transpose problem with at most `threads` threads. */
static yt_status
run(const problem *pp, int threads)
{
    problem local = *pp, *p = &local;
    if (p->m == 0 || p->n == 0)
        return YT_OK;
    if (p->k == 0) {
        bias_into_c(p);
        scale_c(p);
        return YT_OK;
    }
    double macs = (double)p->m * (double)p->n * (double)p->k;
    int64_t rsa = p->rsa, csa = p->csa, rsb = p->rsb, csb = p->csb, rsc = p->rsc, csc = p->csc;
    bool blis_ok = blis_strides(p->m, p->k, &rsa, &csa) && blis_strides(p->k, p->n, &rsb, &csb) &&
                   blis_strides(p->m, p->n, &rsc, &csc);
    const yt__isa isa = yt__cpu_isa();
    if (isa == YT__ISA_AVX512 || (isa == YT__ISA_AVX2 && (macs <= AVX2_MAX_MACS || !blis_ok))) {
        threads = yt__gemm_threads(macs, threads, p->f64);
        if (p->f64)
            return yt__gemm_small_d(p->m, p->n, p->k, p->alpha, p->a, p->rsa, p->csa, p->b, p->rsb,
                                    p->csb, p->beta, p->c, p->rsc, p->csc, p->bias, threads);
        return yt__gemm_small_s(p->m, p->n, p->k, (float)p->alpha, p->a, p->rsa, p->csa, p->b,
                                p->rsb, p->csb, (float)p->beta, p->c, p->rsc, p->csc, p->bias,
                                threads);
    }
    bias_into_c(p);
    if (!blis_ok) {
        naive(p);
        return YT_OK;
    }
    yt__blis_setup();
    blis_job j = {p, rsa, csa, rsb, csb, rsc, csc, p->m >= p->n, 1};
    /* the blocks follow the size and the thread setting only; how many threads run them
     * follows the recent waits, as for the small path */
    int64_t len = j.by_rows ? p->m : p->n;
    if (macs >= PARALLEL_MACS && threads > 1)
        j.parts = (len + BLIS_STEP - 1) / BLIS_STEP < threads ? (len + BLIS_STEP - 1) / BLIS_STEP
                                                              : threads;
    if (j.parts == 1) {
        blis_part(&j, 0);
        return YT_OK;
    }
    int run_threads = yt__gemm_threads(macs, (int)j.parts, p->f64);
    int64_t wait = yt__parallel_run(j.parts, run_threads, blis_part, &j);
    if (run_threads > 1)
        yt__gemm_threads_observe(wait);
    return YT_OK;
}

/* Validates sizes and C's layout, and folds the transposes into A's and B's strides. */
static yt_status
prepare(problem *p, bool trans_a, bool trans_b)
{
    if (p->m < 0 || p->n < 0 || p->k < 0)
        return yt__fail_status(YT_ERR_VALUE, "gemm: negative size m=%lld n=%lld k=%lld",
                               (long long)p->m, (long long)p->n, (long long)p->k);
    if (!distinct_elements(p->m, p->n, p->rsc, p->csc))
        return yt__fail_status(YT_ERR_VALUE,
                               "gemm: C strides (%lld, %lld) make elements of a %lld x %lld "
                               "result share memory",
                               (long long)p->rsc, (long long)p->csc, (long long)p->m,
                               (long long)p->n);
    if (trans_a) {
        int64_t t = p->rsa;
        p->rsa = p->csa;
        p->csa = t;
    }
    if (trans_b) {
        int64_t t = p->rsb;
        p->rsb = p->csb;
        p->csb = t;
    }
    return YT_OK;
}

static yt_status
gemm(problem *p, bool trans_a, bool trans_b)
{
    yt_status s = prepare(p, trans_a, trans_b);
    return s != YT_OK ? s : run(p, yt__max_threads());
}

yt_status
yt__gemm_f32(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
             const float *a, int64_t rsa, int64_t csa, const float *b, int64_t rsb, int64_t csb,
             float beta, float *c, int64_t rsc, int64_t csc)
{
    problem p = {false, m, n, k, alpha, beta, a, rsa, csa, b, rsb, csb, c, rsc, csc, NULL};
    return gemm(&p, trans_a, trans_b);
}

yt_status
yt__gemm_f64(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
             const double *a, int64_t rsa, int64_t csa, const double *b, int64_t rsb, int64_t csb,
             double beta, double *c, int64_t rsc, int64_t csc)
{
    problem p = {true, m, n, k, alpha, beta, a, rsa, csa, b, rsb, csb, c, rsc, csc, NULL};
    return gemm(&p, trans_a, trans_b);
}

/* Entry i of a batch: the base problem with its pointers moved by i batch strides. */
static problem
entry(const problem *base, int64_t i, int64_t bsa, int64_t bsb, int64_t bsc)
{
    problem e = *base;
    size_t size = base->f64 ? sizeof(double) : sizeof(float);
    e.a = (const char *)base->a + (ptrdiff_t)(i * bsa) * (ptrdiff_t)size;
    e.b = (const char *)base->b + (ptrdiff_t)(i * bsb) * (ptrdiff_t)size;
    e.c = (char *)base->c + (ptrdiff_t)(i * bsc) * (ptrdiff_t)size;
    return e;
}

typedef struct {
    const problem *p;
    int64_t batch, bsa, bsb, bsc, chunks;
    _Atomic int status;
} batch_job;

static void
batch_chunk(void *ctx, int64_t chunk)
{
    batch_job *j = ctx;
    for (int64_t i = j->batch * chunk / j->chunks; i < j->batch * (chunk + 1) / j->chunks; i++) {
        problem e = entry(j->p, i, j->bsa, j->bsb, j->bsc);
        if (run(&e, 1) != YT_OK)
            atomic_store_explicit(&j->status, YT_ERR_NOMEM, memory_order_relaxed);
    }
}

static yt_status
gemm_batched(problem *p, bool trans_a, bool trans_b, int64_t batch, int64_t bsa, int64_t bsb,
             int64_t bsc)
{
    if (batch < 0)
        return yt__fail_status(YT_ERR_VALUE, "gemm: negative batch %lld", (long long)batch);
    yt_status s = prepare(p, trans_a, trans_b);
    if (s != YT_OK || batch == 0 || p->m == 0 || p->n == 0)
        return s;
    if (batch > 1 && bsc == 0)
        return yt__fail_status(YT_ERR_VALUE,
                               "gemm: batch stride 0 for C makes %lld results share memory",
                               (long long)batch);
    double macs = (double)p->m * (double)p->n * (double)p->k;
    int threads = yt__max_threads();
    /* Small entries: one thread per entry, the batch spread over the pool (two runs of entries
     * per thread, claimed as the threads come), when the whole batch is worth splitting
     * (gemm_threads.h). */
    if (threads > 1 && batch >= threads && macs < PARALLEL_MACS &&
        yt__gemm_threads(macs * (double)batch, threads, p->f64) > 1) {
        batch_job job = {p, batch, bsa, bsb, bsc, batch < 2 * threads ? batch : 2 * threads, YT_OK};
        yt__gemm_threads_observe(yt__parallel_run(job.chunks, threads, batch_chunk, &job));
        if (atomic_load(&job.status) != YT_OK)
            return yt__fail_status(YT_ERR_NOMEM, "gemm: a worker thread failed (out of memory)");
        return YT_OK;
    }
    for (int64_t i = 0; i < batch; i++) {
        problem e = entry(p, i, bsa, bsb, bsc);
        s = run(&e, threads);
        if (s != YT_OK)
            return s;
    }
    return YT_OK;
}

yt_status
yt__gemm_batched_f32(bool trans_a, bool trans_b, int64_t batch, int64_t m, int64_t n, int64_t k,
                     float alpha, const float *a, int64_t bsa, int64_t rsa, int64_t csa,
                     const float *b, int64_t bsb, int64_t rsb, int64_t csb, float beta, float *c,
                     int64_t bsc, int64_t rsc, int64_t csc)
{
    problem p = {false, m, n, k, alpha, beta, a, rsa, csa, b, rsb, csb, c, rsc, csc, NULL};
    return gemm_batched(&p, trans_a, trans_b, batch, bsa, bsb, bsc);
}

yt_status
yt__gemm_batched_f64(bool trans_a, bool trans_b, int64_t batch, int64_t m, int64_t n, int64_t k,
                     double alpha, const double *a, int64_t bsa, int64_t rsa, int64_t csa,
                     const double *b, int64_t bsb, int64_t rsb, int64_t csb, double beta, double *c,
                     int64_t bsc, int64_t rsc, int64_t csc)
{
    problem p = {true, m, n, k, alpha, beta, a, rsa, csa, b, rsb, csb, c, rsc, csc, NULL};
    return gemm_batched(&p, trans_a, trans_b, batch, bsa, bsb, bsc);
}

yt_status
yt__gemm_bias_f32(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                  const float *a, int64_t rsa, int64_t csa, const float *b, int64_t rsb,
                  int64_t csb, const float *bias, float *c, int64_t rsc, int64_t csc)
{
    problem p = {false, m, n, k, alpha, 0.0, a, rsa, csa, b, rsb, csb, c, rsc, csc, bias};
    return gemm(&p, trans_a, trans_b);
}

yt_status
yt__gemm_bias_f64(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                  const double *a, int64_t rsa, int64_t csa, const double *b, int64_t rsb,
                  int64_t csb, const double *bias, double *c, int64_t rsc, int64_t csc)
{
    problem p = {true, m, n, k, alpha, 0.0, a, rsa, csa, b, rsb, csb, c, rsc, csc, bias};
    return gemm(&p, trans_a, trans_b);
}
