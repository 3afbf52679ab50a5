/* Random kernels on the CPU: rand, randn, randint, randperm, bernoulli, normal, uniform.
 *
 * Each op reserves the Philox blocks it needs from its generator (runtime/random.c), and element
 * i always takes the same words of that range, so a (seed, offset) gives the same tensor whatever
 * the thread count. Results are contiguous (the generated code guarantees it). Large draws split
 * their Philox blocks into chunks on the kernel pool. */
#include <math.h>
#include <stdlib.h>

#include "factory.h"
#include "kernels.h"
#include "parallel.h"

#define TWO_PI 6.283185307179586476925286766559

/* Uniform [0, 1) values keep only as many bits of a word as the dtype's significand holds, so
 * rounding can never produce 1.0. */
static inline float
uniform_f32(uint32_t w)
{
    return (float)(w >> 8) * 0x1p-24f;
}

static inline double
uniform_f64(uint32_t hi, uint32_t lo)
{
    return (double)(((uint64_t)hi << 21) | (lo >> 11)) * 0x1p-53;
}

/* Words per element: two for f64 (53 bits), one otherwise. */
static int
words_per_elem(yt_dtype dtype)
{
    return dtype == YT_DTYPE_F64 ? 2 : 1;
}

/* A uniform [0, 1) value for element `i` of a dtype that is `dtype`'s precision or better. */
static inline double
uniform_at(yt_dtype dtype, const uint32_t *w)
{
    switch (dtype) {
    case YT_DTYPE_F64:
        return uniform_f64(w[0], w[1]);
    case YT_DTYPE_F16: /* 11 significant bits: exact in f16 */
        return (double)(w[0] >> 21) * 0x1p-11;
    case YT_DTYPE_BF16: /* 8 significant bits */
        return (double)(w[0] >> 24) * 0x1p-8;
    default:
        return uniform_f32(w[0]);
    }
}

static yt_status
check_floating(const char *op, yt_dtype dtype)
{
    if (yt_dtype_is_floating(dtype))
        return YT_OK;
    return yt__fail_status(YT_ERR_DTYPE, "%s: dtype %s is not a floating dtype", op,
                           yt_dtype_name(dtype));
}

/* One draw: its Philox blocks [0, n_blocks) are split into `chunks` ranges for the pool, and
 * `body` fills the elements of blocks [b0, b1). Each element depends only on its block, so the
 * split never changes a value. */
typedef struct rand_job {
    void (*body)(const struct rand_job *j, int64_t b0, int64_t b1);
    yt__philox_stream s;
    char *data;
    yt_dtype out;
    int64_t n, n_blocks, chunks;
    double a, b;     /* from, span (uniform); mean, std (normal) */
    bool unit;       /* uniform over [0, 1) */
    int64_t low;     /* randint */
    uint64_t range;  /* randint */
    const double *p; /* bernoulli: per-element probabilities, or NULL for `a` */
    void *keys;      /* randperm */
} rand_job;

static void
rand_chunk(void *ctx, int64_t c)
{
    const rand_job *j = ctx;
    j->body(j, j->n_blocks * c / j->chunks, j->n_blocks * (c + 1) / j->chunks);
}

/* Runs a draw of `n` elements at about `ns_per_elem` nanoseconds each. */
static void
run_draw(rand_job *j, double ns_per_elem)
{
    int threads = j->n >= YT_PARALLEL_GRAIN
                      ? yt__parallel_threads(ns_per_elem * (double)j->n, yt__max_threads())
                      : 1;
    j->chunks = yt__parallel_chunks(j->n_blocks, threads);
    yt__parallel_run(j->chunks, threads, rand_chunk, j);
}

static void
uniform_blocks(const rand_job *j, int64_t b0, int64_t b1)
{
    const int per_elem = words_per_elem(j->out);
    const int per_block = 4 / per_elem;
    for (int64_t b = b0; b < b1; b++) {
        uint32_t w[4];
        yt__philox(j->s.seed, j->s.counter + (uint64_t)b, w);
        for (int k = 0; k < per_block && b * per_block + k < j->n; k++) {
            double u = uniform_at(j->out, w + k * per_elem);
            yt__store_double(j->data, j->out, b * per_block + k, j->unit ? u : j->a + j->b * u);
        }
    }
}

/* result = from + (to - from) * U[0, 1), clamped below `to` where rounding to a narrow dtype
 * would reach it. */
static yt_status
fill_uniform(yt_tensor *result, double from, double to, yt_generator *gen, const char *op)
{
    yt_dtype out = result->dtype;
    if (check_floating(op, out) != YT_OK)
        return yt__last_status();
    int64_t n = result->numel;
    if (n == 0)
        return YT_OK;
    const int per_elem = words_per_elem(out);
    const int per_block = 4 / per_elem;
    int64_t n_blocks = (n + per_block - 1) / per_block;
    rand_job j = {.body = uniform_blocks,
                  .s = yt__generator_stream(gen, (uint64_t)n_blocks),
                  .data = yt__data_ptr(result),
                  .out = out,
                  .n = n,
                  .n_blocks = n_blocks,
                  .a = from,
                  .b = to - from,
                  .unit = from == 0.0 && to == 1.0};
    run_draw(&j, 2.0);
    return YT_OK;
}

static void
normal_blocks(const rand_job *j, int64_t b0, int64_t b1)
{
    const yt_dtype out = j->out;
    const int per_pair = 2 * words_per_elem(out);
    const int per_block = 4 / per_pair; /* pairs */
    const int64_t n = j->n, n_pairs = (n + 1) / 2;
    const double mean = j->a, std = j->b;
    for (int64_t b = b0; b < b1; b++) {
        uint32_t w[4];
        yt__philox(j->s.seed, j->s.counter + (uint64_t)b, w);
        for (int k = 0; k < per_block; k++) {
            int64_t pair = b * per_block + k;
            if (pair >= n_pairs)
                break;
            const uint32_t *pw = w + k * per_pair;
            double z0, z1;
            if (out == YT_DTYPE_F64) {
                double r = sqrt(-2.0 * log(1.0 - uniform_f64(pw[0], pw[1])));
                double theta = TWO_PI * uniform_f64(pw[2], pw[3]);
                z0 = r * cos(theta);
                z1 = r * sin(theta);
            } else {
                /* float math: the uniforms carry 24 bits, and narrower results need no more */
                float r = sqrtf(-2.0f * logf(1.0f - uniform_f32(pw[0])));
                float theta = (float)TWO_PI * uniform_f32(pw[1]);
                z0 = r * cosf(theta);
                z1 = r * sinf(theta);
            }
            yt__store_double(j->data, out, 2 * pair, mean + std * z0);
            if (2 * pair + 1 < n)
                yt__store_double(j->data, out, 2 * pair + 1, mean + std * z1);
        }
    }
}

/* Box-Muller: each pair of uniforms (u1, u2) gives two independent normals,
 * sqrt(-2 ln u1) * (cos 2 pi u2, sin 2 pi u2). u1 is taken from (0, 1] so the log is finite. */
static yt_status
fill_normal(yt_tensor *result, double mean, double std, yt_generator *gen, const char *op)
{
    yt_dtype out = result->dtype;
    if (check_floating(op, out) != YT_OK)
        return yt__last_status();
    int64_t n = result->numel;
    if (n == 0)
        return YT_OK;
    const int per_pair = 2 * words_per_elem(out);
    const int per_block = 4 / per_pair; /* pairs */
    int64_t n_pairs = (n + 1) / 2;
    int64_t n_blocks = (n_pairs + per_block - 1) / per_block;
    rand_job j = {.body = normal_blocks,
                  .s = yt__generator_stream(gen, (uint64_t)n_blocks),
                  .data = yt__data_ptr(result),
                  .out = out,
                  .n = n,
                  .n_blocks = n_blocks,
                  .a = mean,
                  .b = std};
    run_draw(&j, 8.0);
    return YT_OK;
}

/* Largest integer every value up to which a dtype holds exactly. */
static int64_t
exact_int_max(yt_dtype dtype)
{
    switch (dtype) {
    case YT_DTYPE_BOOL:
        return 1;
    case YT_DTYPE_U8:
        return UINT8_MAX;
    case YT_DTYPE_I8:
        return INT8_MAX;
    case YT_DTYPE_I16:
        return INT16_MAX;
    case YT_DTYPE_I32:
        return INT32_MAX;
    case YT_DTYPE_F16:
        return 2048;
    case YT_DTYPE_BF16:
        return 256;
    case YT_DTYPE_F32:
        return INT64_C(1) << 24;
    case YT_DTYPE_F64:
        return INT64_C(1) << 53;
    default:
        return INT64_MAX;
    }
}

static int64_t
exact_int_min(yt_dtype dtype)
{
    switch (dtype) {
    case YT_DTYPE_BOOL:
    case YT_DTYPE_U8:
        return 0;
    case YT_DTYPE_I64:
        return INT64_MIN;
    default:
        return -exact_int_max(dtype) - (yt_dtype_is_floating(dtype) ? 0 : 1);
    }
}

static void
randint_blocks(const rand_job *j, int64_t b0, int64_t b1)
{
    for (int64_t b = b0; b < b1; b++) {
        uint32_t w[4];
        yt__philox(j->s.seed, j->s.counter + (uint64_t)b, w);
        for (int k = 0; k < 2 && 2 * b + k < j->n; k++) {
            uint64_t r = ((uint64_t)w[2 * k] << 32) | w[2 * k + 1];
            yt__store_int(j->data, j->out, 2 * b + k, (int64_t)((uint64_t)j->low + r % j->range));
        }
    }
}

/* Uniform integers in [low, high): a 64-bit word per element, reduced modulo the range (the bias,
 * range / 2^64, is far below anything a test can see; PyTorch does the same). */
static yt_status
fill_randint(yt_tensor *result, int64_t low, int64_t high, yt_generator *gen, const char *op)
{
    yt_dtype out = result->dtype;
    if (low >= high)
        return yt__fail_status(YT_ERR_VALUE,
                               "%s: expected low < high, but got low=%lld and high=%lld", op,
                               (long long)low, (long long)high);
    if (low < exact_int_min(out) || high - 1 > exact_int_max(out))
        return yt__fail_status(YT_ERR_VALUE, "%s: the range [%lld, %lld) does not fit in dtype %s",
                               op, (long long)low, (long long)high, yt_dtype_name(out));
    int64_t n = result->numel;
    if (n == 0)
        return YT_OK;
    uint64_t range = (uint64_t)high - (uint64_t)low;
    int64_t n_blocks = (n + 1) / 2;
    rand_job j = {.body = randint_blocks,
                  .s = yt__generator_stream(gen, (uint64_t)n_blocks),
                  .data = yt__data_ptr(result),
                  .out = out,
                  .n = n,
                  .n_blocks = n_blocks,
                  .low = low,
                  .range = range};
    run_draw(&j, 3.0);
    return YT_OK;
}

yt_status
yt__cpu_rand(yt_tensor *result, const int64_t *size, int size_len, yt_generator *generator,
             yt_dtype dtype, yt_device device)
{
    (void)size, (void)size_len, (void)dtype, (void)device; /* result has them */
    return fill_uniform(result, 0.0, 1.0, generator, "rand");
}

yt_status
yt__cpu_randn(yt_tensor *result, const int64_t *size, int size_len, yt_generator *generator,
              yt_dtype dtype, yt_device device)
{
    (void)size, (void)size_len, (void)dtype, (void)device;
    return fill_normal(result, 0.0, 1.0, generator, "randn");
}

yt_status
yt__cpu_randint(yt_tensor *result, int64_t high, const int64_t *size, int size_len,
                yt_generator *generator, yt_dtype dtype, yt_device device)
{
    (void)size, (void)size_len, (void)dtype, (void)device;
    return fill_randint(result, 0, high, generator, "randint");
}

yt_status
yt__cpu_randint_low(yt_tensor *result, int64_t low, int64_t high, const int64_t *size, int size_len,
                    yt_generator *generator, yt_dtype dtype, yt_device device)
{
    (void)size, (void)size_len, (void)dtype, (void)device;
    return fill_randint(result, low, high, generator, "randint");
}

yt_status
yt__cpu_uniform(yt_tensor *result, yt_tensor *self, double from, double to, yt_generator *generator)
{
    (void)self; /* only its shape and dtype, which result has */
    if (!(from <= to) || !isfinite(to - from))
        return yt__fail_status(YT_ERR_VALUE,
                               "uniform: expected a finite range from <= to, but got from=%g to=%g",
                               from, to);
    return fill_uniform(result, from, to, generator, "uniform");
}

yt_status
yt__cpu_normal(yt_tensor *result, yt_tensor *self, double mean, double std, yt_generator *generator)
{
    (void)self;
    if (!(std >= 0.0))
        return yt__fail_status(YT_ERR_VALUE, "normal: expected std >= 0, but got std=%g", std);
    return fill_normal(result, mean, std, generator, "normal");
}

/* ---------------------------------------------------------------- bernoulli */

static void
bernoulli_blocks(const rand_job *j, int64_t b0, int64_t b1)
{
    for (int64_t b = b0; b < b1; b++) {
        uint32_t w[4];
        yt__philox(j->s.seed, j->s.counter + (uint64_t)b, w);
        for (int k = 0; k < 4 && 4 * b + k < j->n; k++) {
            int64_t i = 4 * b + k;
            double u = (double)w[k] * 0x1p-32; /* [0, 1): exact in double */
            yt__store_double(j->data, j->out, i, u < (j->p != NULL ? j->p[i] : j->a) ? 1.0 : 0.0);
        }
    }
}

/* result_i = U_i < p_i, with one word per element (24-bit uniforms, as for rand). */
static yt_status
fill_bernoulli(yt_tensor *result, const double *p, double p_all, yt_generator *gen)
{
    int64_t n = result->numel;
    if (n == 0)
        return YT_OK;
    int64_t n_blocks = (n + 3) / 4;
    rand_job j = {.body = bernoulli_blocks,
                  .s = yt__generator_stream(gen, (uint64_t)n_blocks),
                  .data = yt__data_ptr(result),
                  .out = result->dtype,
                  .n = n,
                  .n_blocks = n_blocks,
                  .a = p_all,
                  .p = p};
    run_draw(&j, 2.0);
    return YT_OK;
}

yt_status
yt__cpu_bernoulli(yt_tensor *result, yt_tensor *self, yt_generator *generator)
{
    yt_tensor *p = yt__cast_copy(self, YT_DTYPE_F64); /* contiguous f64 probabilities */
    if (p == NULL)
        return yt__last_status();
    const double *pv = self->numel > 0 ? (const double *)yt__data_ptr(p) : NULL;
    for (int64_t i = 0; i < self->numel; i++) {
        if (!(pv[i] >= 0.0 && pv[i] <= 1.0)) {
            double bad = pv[i];
            yt_release(p);
            return yt__fail_status(YT_ERR_VALUE,
                                   "bernoulli: expected all probabilities in [0, 1], but element "
                                   "%lld of self is %g",
                                   (long long)i, bad);
        }
    }
    yt_status st = fill_bernoulli(result, pv, 0.0, generator);
    yt_release(p);
    return st;
}

yt_status
yt__cpu_bernoulli_p(yt_tensor *result, yt_tensor *self, double p, yt_generator *generator)
{
    (void)self;
    if (!(p >= 0.0 && p <= 1.0))
        return yt__fail_status(YT_ERR_VALUE, "bernoulli: expected 0 <= p <= 1, but got p=%g", p);
    return fill_bernoulli(result, NULL, p, generator);
}

/* ---------------------------------------------------------------- randperm */

typedef struct keyed {
    uint64_t key;
    int64_t index;
} keyed;

static int
compare_keyed(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

static void
key_blocks(const rand_job *j, int64_t b0, int64_t b1)
{
    keyed *k = j->keys;
    for (int64_t b = b0; b < b1; b++) {
        uint32_t w[4];
        yt__philox(j->s.seed, j->s.counter + (uint64_t)b, w);
        for (int q = 0; q < 2 && 2 * b + q < j->n; q++) {
            k[2 * b + q].key = ((uint64_t)w[2 * q] << 32) | w[2 * q + 1];
            k[2 * b + q].index = 2 * b + q;
        }
    }
}

/* Sorting indices by random 64-bit keys gives a uniform permutation (ties, at odds of n^2 / 2^65,
 * fall back to index order) whose values depend only on (seed, offset, i): no sequential
 * Fisher-Yates state. */
yt_status
yt__cpu_randperm(yt_tensor *result, int64_t n, yt_generator *generator, yt_dtype dtype,
                 yt_device device)
{
    (void)dtype, (void)device;
    yt_dtype out = result->dtype;
    if (n > 0 && n - 1 > exact_int_max(out))
        return yt__fail_status(YT_ERR_VALUE, "randperm: n=%lld is too large for dtype %s",
                               (long long)n, yt_dtype_name(out));
    if (n == 0)
        return YT_OK;
    size_t bytes;
    if (__builtin_mul_overflow((size_t)n, sizeof(keyed), &bytes))
        return yt__fail_status(YT_ERR_NOMEM, "randperm: n=%lld is too large", (long long)n);
    keyed *k = malloc(bytes);
    if (k == NULL)
        return yt__fail_status(YT_ERR_NOMEM, "randperm: out of memory for n=%lld", (long long)n);
    int64_t n_blocks = (n + 1) / 2;
    rand_job j = {.body = key_blocks,
                  .s = yt__generator_stream(generator, (uint64_t)n_blocks),
                  .n = n,
                  .n_blocks = n_blocks,
                  .keys = k};
    run_draw(&j, 3.0);
    qsort(k, (size_t)n, sizeof *k, compare_keyed);
    char *data = yt__data_ptr(result);
    for (int64_t i = 0; i < n; i++)
        yt__store_int(data, out, i, k[i].index);
    free(k);
    return YT_OK;
}
