/* Random numbers: Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
 * SC'11), the counter-based generator PyTorch and cuRAND use. Block `counter` of the stream
 * for `seed` is a pure function of the two, so any thread (or GPU) can compute any part of a
 * stream, and a generator's whole state is (seed, offset). */
#include <stdlib.h>

#include "internal.h"

/* PyTorch's default seed, so an unseeded program is still reproducible. */
#define DEFAULT_SEED UINT64_C(67280421310721)

#define PHILOX_M0 UINT32_C(0xD2511F53)
#define PHILOX_M1 UINT32_C(0xCD9E8D57)
#define PHILOX_W0 UINT32_C(0x9E3779B9) /* golden ratio */
#define PHILOX_W1 UINT32_C(0xBB67AE85) /* sqrt(3) - 1 */

static yt_generator default_generator = {.seed = DEFAULT_SEED, .offset = 0};

/* The counter is (lo32(counter), hi32(counter), 0, 0) and the key (lo32(seed), hi32(seed)), as
 * in Random123's philox4x32_10; its known-answer vectors hold for counter 0 and seed 0. */
void
yt__philox(uint64_t seed, uint64_t counter, uint32_t out[4])
{
    uint32_t c0 = (uint32_t)counter, c1 = (uint32_t)(counter >> 32), c2 = 0, c3 = 0;
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0;
        uint64_t p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t n1 = (uint32_t)p1;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        uint32_t n3 = (uint32_t)p0;
        c0 = n0;
        c1 = n1;
        c2 = n2;
        c3 = n3;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

yt_generator *
yt__default_generator(void)
{
    return &default_generator;
}

uint64_t
yt__generator_reserve(yt_generator *gen, uint64_t n_blocks)
{
    if (gen == NULL)
        gen = &default_generator;
    /* Atomic so ops drawing on several threads still get disjoint blocks. */
    return __atomic_fetch_add(&gen->offset, n_blocks, __ATOMIC_RELAXED);
}

void
yt_manual_seed(uint64_t seed)
{
    yt_generator_manual_seed(NULL, seed);
}

/* ---------------------------------------------------------------- public generator objects */

static yt_generator *
resolve(yt_generator *gen)
{
    return gen != NULL ? gen : &default_generator;
}

yt_generator *
yt_generator_create(uint64_t seed)
{
    yt_generator *gen = malloc(sizeof *gen);
    if (gen == NULL) {
        yt__fail(YT_ERR_NOMEM, "generator_create: out of memory");
        return NULL;
    }
    gen->seed = seed;
    gen->offset = 0;
    return gen;
}

void
yt_generator_release(yt_generator *gen)
{
    if (gen != NULL && gen != &default_generator)
        free(gen);
}

yt_generator *
yt_default_generator(void)
{
    return &default_generator;
}

void
yt_generator_manual_seed(yt_generator *gen, uint64_t seed)
{
    gen = resolve(gen);
    __atomic_store_n(&gen->seed, seed, __ATOMIC_RELAXED);
    __atomic_store_n(&gen->offset, 0, __ATOMIC_RELAXED);
}

uint64_t
yt_generator_initial_seed(const yt_generator *gen)
{
    return __atomic_load_n(&resolve((yt_generator *)gen)->seed, __ATOMIC_RELAXED);
}

yt_status
yt_generator_get_state(const yt_generator *gen, yt_generator_state *state)
{
    if (state == NULL)
        return yt__fail_status(YT_ERR_VALUE, "generator_get_state: state is NULL");
    yt_generator *g = resolve((yt_generator *)gen);
    state->seed = __atomic_load_n(&g->seed, __ATOMIC_RELAXED);
    state->offset = __atomic_load_n(&g->offset, __ATOMIC_RELAXED);
    return YT_OK;
}

yt_status
yt_generator_set_state(yt_generator *gen, const yt_generator_state *state)
{
    if (state == NULL)
        return yt__fail_status(YT_ERR_VALUE, "generator_set_state: state is NULL");
    gen = resolve(gen);
    __atomic_store_n(&gen->seed, state->seed, __ATOMIC_RELAXED);
    __atomic_store_n(&gen->offset, state->offset, __ATOMIC_RELAXED);
    return YT_OK;
}

yt__philox_stream
yt__generator_stream(yt_generator *gen, uint64_t n_blocks)
{
    gen = resolve(gen);
    yt__philox_stream s;
    s.seed = __atomic_load_n(&gen->seed, __ATOMIC_RELAXED);
    s.counter = yt__generator_reserve(gen, n_blocks);
    return s;
}
