/* Outputs stored around the caches or plainly (runtime/pointwise.c, nontemporal_output), on
 * the case that decides the threshold: a chain of three f32 ops, y = a + b, z = y * c, w = -z,
 * each reading the last one's output, at outputs of 8 to 48 MiB. "plain" takes the last-level
 * cache as 1 GiB, where no output streams (for these contiguous operands it changes nothing
 * else); "streamed" takes the machine's. Batches of the two alternate so both see the same
 * machine; the fastest of each counts. Prints the output's MiB, the add alone and the chain, each
 * plain and streamed, and the chain's speed-up (plain / streamed).
 *
 * Usage: bench/streaming.sh BUILD_DIR */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <yaten.h>

#include "clock.h"

void yt__set_cache_bytes(int64_t bytes); /* runtime/internal.h: 0 for the machine's */

enum { ROUNDS = 15 };
static const int64_t OUTPUT_MIB[] = {8, 12, 16, 24, 32, 48};

static void
check(yt_status s)
{
    if (s != YT_OK) {
        fprintf(stderr, "streaming bench: %s\n", yt_errmsg());
        exit(1);
    }
}

int
main(void)
{
    yt_set_num_threads(1);
    printf("%-10s %12s %12s %14s %14s %8s\n", "out MiB", "add plain", "add streamed", "chain plain",
           "chain streamed", "chain x");
    for (size_t i = 0; i < sizeof OUTPUT_MIB / sizeof OUTPUT_MIB[0]; i++) {
        int64_t n = OUTPUT_MIB[i] << 18; /* f32 elements */
        yt_tensor *a = yt_rand(&n, 1), *b = yt_rand(&n, 1), *c = yt_rand(&n, 1);
        yt_tensor *y = yt_zeros(&n, 1), *z = yt_zeros(&n, 1), *w = yt_zeros(&n, 1);
        if (a == NULL || b == NULL || c == NULL || y == NULL || z == NULL || w == NULL)
            check(YT_ERR_NOMEM);
        double add[2] = {1e30, 1e30}, chain[2] = {1e30, 1e30};
        for (int r = 0; r < ROUNDS; r++)
            for (int streamed = 0; streamed < 2; streamed++) {
                yt__set_cache_bytes(streamed ? 0 : (int64_t)1 << 30);
                double t0 = bench_now_s();
                check(yt_add_out(y, a, b));
                double t1 = bench_now_s();
                check(yt_mul_out(z, y, c));
                check(yt_neg_out(w, z));
                double t2 = bench_now_s();
                add[streamed] = t1 - t0 < add[streamed] ? t1 - t0 : add[streamed];
                chain[streamed] = t2 - t0 < chain[streamed] ? t2 - t0 : chain[streamed];
            }
        yt__set_cache_bytes(0);
        printf("%-10lld %10.0f us %10.0f us %12.0f us %12.0f us %7.2fx\n", (long long)OUTPUT_MIB[i],
               add[0] * 1e6, add[1] * 1e6, chain[0] * 1e6, chain[1] * 1e6, chain[0] / chain[1]);
        fflush(stdout);
        yt_release(a);
        yt_release(b);
        yt_release(c);
        yt_release(y);
        yt_release(z);
        yt_release(w);
    }
    return 0;
}
