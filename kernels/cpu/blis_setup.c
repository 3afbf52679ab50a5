/* BLIS start-up: pick the kernel set before BLIS initialises, and report which one runs. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* setenv; pthread barriers in blis.h */
#endif

#include <cpuid.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blis_setup.h"
#include "cpu_isa.h"

/* blis.h defines hundreds of unused static inline helpers. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wtype-limits"
#include <blis.h>
#pragma GCC diagnostic pop

static pthread_once_t setup_once = PTHREAD_ONCE_INIT;
static const char *arch_name = "unknown";

/* Whether BLIS 0.9's own cpuid logic (frame/base/bli_cpuid.c) maps this CPU to a tuned
 * sub-configuration: every Intel part with AVX, and AMD families 0x15 (Bulldozer..Excavator),
 * 0x17 (Zen, Zen 2) and 0x19 (Zen 3, Zen 4). Anything else gets `generic`. */
static bool
blis_knows_cpu(void)
{
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx))
        return false;
    char vendor[13];
    memcpy(vendor, &ebx, 4);
    memcpy(vendor + 4, &edx, 4);
    memcpy(vendor + 8, &ecx, 4);
    vendor[12] = '\0';
    if (strcmp(vendor, "GenuineIntel") == 0)
        return true;
    if (strcmp(vendor, "AuthenticAMD") != 0)
        return false;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx))
        return false;
    unsigned int family = (eax >> 8) & 0xf;
    if (family == 0xf)
        family += (eax >> 20) & 0xff;
    return family == 0x15 || family == 0x17 || family == 0x19;
}

/* Sets BLIS_ARCH_TYPE when the user has not and BLIS would fall back to generic kernels. Only
 * sets that the CPU can execute are chosen: skx needs AVX-512 F/DQ/BW/VL, haswell AVX2 + FMA. */
static void
choose_arch(void)
{
    if (getenv("BLIS_ARCH_TYPE") != NULL || blis_knows_cpu())
        return;
    const yt__isa has = yt__cpu_widest_isa(); /* the CPU's, not a test's cap: BLIS picks once */
    if (has == YT__ISA_NONE)
        return;
    const int id = has == YT__ISA_AVX512 ? BLIS_ARCH_SKX : BLIS_ARCH_HASWELL;
    char value[16];
    snprintf(value, sizeof value, "%d", id);
    setenv("BLIS_ARCH_TYPE", value, 0);
}

static void
setup(void)
{
    choose_arch();
    bli_init(); /* reads BLIS_ARCH_TYPE; must precede bli_arch_query_id() */
    arch_name = bli_arch_string(bli_arch_query_id());
}

void
yt__blis_setup(void)
{
    pthread_once(&setup_once, setup);
}

const char *
yt__blis_arch_name(void)
{
    yt__blis_setup();
    return arch_name;
}
