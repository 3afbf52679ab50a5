/* Which stepped form of the pointwise loops runs (runtime/stepped_lanes.h): the widest this CPU
 * runs (its flags, read at start-up), capped by the tests. */
#include <stdatomic.h>

#include "stepped_lanes.h"

static _Atomic int widest_allowed = YT__STEPPED_AVX512;

yt__stepped_isa
yt__stepped_isa_in_use(void)
{
    yt__stepped_isa cpu = YT__STEPPED_NONE;
    if (yt__has_masked_stores())
        cpu = YT__STEPPED_AVX512;
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        cpu = YT__STEPPED_AVX2;
    const int widest = atomic_load_explicit(&widest_allowed, memory_order_relaxed);
    return (int)cpu < widest ? cpu : (yt__stepped_isa)widest;
}

void
yt__limit_stepped_isa(yt__stepped_isa widest)
{
    atomic_store_explicit(&widest_allowed, (int)widest, memory_order_relaxed);
}
