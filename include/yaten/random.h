/* Random number generators. Every random op takes a `yt_generator *` (NULL = the default
 * generator, seeded with yt_manual_seed). A generator is Philox4x32-10, a counter-based
 * generator: its whole state is (seed, offset), element i of an op's output depends only on
 * (seed, offset, i), and the numbers are the same whatever the thread count.
 * Included by <yaten.h>; not meant to be included on its own. */
#ifndef YATEN_RANDOM_H
#define YATEN_RANDOM_H

#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A generator's full state: save it with yt_generator_get_state, restore it (for example from a
 * checkpoint) with yt_generator_set_state to replay the same numbers. */
typedef struct yt_generator_state {
    uint64_t seed;
    uint64_t offset; /* 128-bit Philox blocks consumed since seeding */
} yt_generator_state;

/* A new generator seeded with `seed` (offset 0). Returns: a generator owned by the caller (free
 * it with yt_generator_release), or NULL with YT_ERR_NOMEM. */
YT_API yt_generator *yt_generator_create(uint64_t seed);

/* Frees a generator made by yt_generator_create. NULL and the default generator are ignored. */
YT_API void yt_generator_release(yt_generator *gen);

/* The default generator (never NULL; owned by the library). Passing it or NULL to an op is the
 * same. */
YT_API yt_generator *yt_default_generator(void);

/* Reseeds `gen` (NULL: the default generator) and rewinds it to offset 0. */
YT_API void yt_generator_manual_seed(yt_generator *gen, uint64_t seed);

/* The seed `gen` (NULL: the default generator) was last seeded with. */
YT_API uint64_t yt_generator_initial_seed(const yt_generator *gen);

/* Writes the state of `gen` (NULL: the default generator) to *state. Errors: YT_ERR_VALUE when
 * state is NULL. */
YT_API yt_status yt_generator_get_state(const yt_generator *gen, yt_generator_state *state);

/* Restores a state saved by yt_generator_get_state into `gen` (NULL: the default generator).
 * Errors: YT_ERR_VALUE when state is NULL. */
YT_API yt_status yt_generator_set_state(yt_generator *gen, const yt_generator_state *state);

#ifdef __cplusplus
}
#endif

#endif
