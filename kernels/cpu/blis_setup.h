/* Choosing BLIS's kernel set and starting BLIS, once per process.
 *
 * Debian's BLIS 0.9 picks its sub-configuration from cpuid and does not know recent AMD parts
 * (Zen 5 is family 0x1A): there it silently runs its generic kernels, about 5x slower than the
 * `skx` (AVX-512) ones the CPU can run. yt__blis_setup() selects a better set through
 * BLIS_ARCH_TYPE before BLIS initialises, unless the user set that variable. */
#ifndef YT_KERNELS_CPU_BLIS_SETUP_H
#define YT_KERNELS_CPU_BLIS_SETUP_H

#include "internal.h"

/* Selects the kernel set (first call only) and initialises BLIS. Call before any BLIS routine:
 * BLIS 0.9 aborts if bli_arch_query_id() runs before bli_init() while BLIS_ARCH_TYPE is set.
 * Thread-safe. */
YT_INTERNAL void yt__blis_setup(void);

/* Name of the BLIS sub-configuration whose kernels run ("skx", "zen3", "haswell", "generic",
 * ...). Static string; initialises BLIS if needed. */
YT_INTERNAL const char *yt__blis_arch_name(void);

#endif
