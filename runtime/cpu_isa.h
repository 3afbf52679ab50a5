/* The vector instruction set of the kernels picked at run time (the library is built for
 * x86-64-v3; wider kernels carry their own target attributes): the widest this CPU runs, read once,
 * or narrower where a test capped it, so that the narrower kernels run on a wide CPU too.
 *
 * One answer for every kernel that asks (the small GEMM, the pointwise loops' stepped forms, the
 * stepped copies, the direct convolution, softmax and logsumexp), so a capped test runs the narrow
 * forms everywhere. */
#ifndef YT_RUNTIME_CPU_ISA_H
#define YT_RUNTIME_CPU_ISA_H

#include <stdatomic.h>

#include "internal.h"

typedef enum yt__isa {
    YT__ISA_NONE,   /* none of the hand-written vector kernels: their plain or BLIS fallbacks */
    YT__ISA_AVX2,   /* AVX2 and FMA */
    YT__ISA_AVX512, /* AVX-512 F, VL, BW and DQ (every AVX-512 server CPU since Skylake) */
} yt__isa;

/* The widest set this CPU runs, whatever the cap (for what is decided once, as BLIS's kernels). */
YT_INTERNAL yt__isa yt__cpu_widest_isa(void);

/* For tests: uses no instruction set wider than `widest` from now on, in every thread
 * (YT__ISA_AVX512 lifts the cap). Returns the set now in use, which is narrower than `widest`
 * where the CPU lacks it. Not for use while other threads run kernels. */
YT_INTERNAL yt__isa yt__cap_cpu_isa(yt__isa widest);

/* yt__cpu_isa's answer, or -1 before the first call (cpu_isa.c) */
YT_INTERNAL extern _Atomic int yt__isa_in_use;
YT_INTERNAL yt__isa yt__cpu_isa_first(void);

/* The instruction set in use: one relaxed load (kernels ask per call, some per row). */
static inline yt__isa
yt__cpu_isa(void)
{
    const int in_use = atomic_load_explicit(&yt__isa_in_use, memory_order_relaxed);
    return in_use >= 0 ? (yt__isa)in_use : yt__cpu_isa_first();
}

#endif
