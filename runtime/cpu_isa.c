/* Which vector instruction set the run-time-chosen kernels use (cpu_isa.h). */
#include "cpu_isa.h"

_Atomic int yt__isa_in_use = -1;
static _Atomic int cap = YT__ISA_AVX512;

yt__isa
yt__cpu_widest_isa(void)
{
    /* asked once per run and per cap, so not cached: __builtin_cpu_supports reads a table */
    __builtin_cpu_init(); /* answers right even before libgcc's constructor has run */
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
        return YT__ISA_NONE;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq"))
        return YT__ISA_AVX512;
    return YT__ISA_AVX2;
}

yt__isa
yt__cpu_isa_first(void)
{
    const yt__isa has = yt__cpu_widest_isa();
    const int widest = atomic_load_explicit(&cap, memory_order_relaxed);
    const yt__isa in_use = (int)has < widest ? has : (yt__isa)widest;
    atomic_store_explicit(&yt__isa_in_use, (int)in_use, memory_order_relaxed);
    return in_use;
}

yt__isa
yt__cap_cpu_isa(yt__isa widest)
{
    atomic_store_explicit(&cap, (int)widest, memory_order_relaxed);
    return yt__cpu_isa_first();
}
