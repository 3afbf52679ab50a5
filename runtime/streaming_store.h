/* Stores that go around the caches, for outputs too large to be in them when the next op reads
 * them: how yt__pointwise writes such an output (runtime/pointwise.c, nontemporal_output). */
#ifndef YT_RUNTIME_STREAMING_STORE_H
#define YT_RUNTIME_STREAMING_STORE_H

#include <stdint.h>

#include "internal.h"

/* Copies `bytes` from src to dst, the cache lines that dst's bytes cover whole by non-temporal
 * stores (written to memory without first reading the line), the ends of a partly covered line
 * by plain ones. The stores are weakly ordered: the writer issues yt__streaming_fence before
 * another thread may read dst. */
YT_INTERNAL void yt__store_streaming(char *dst, const char *src, int64_t bytes);

/* Memory the caller reads next: up to YT__MAX_OPERANDS ranges of bytes, each of whose lines
 * holds some of what it reads. */
typedef struct yt__next_reads {
    int n;
    const char *at[YT__MAX_OPERANDS];
    int64_t bytes[YT__MAX_OPERANDS];
} yt__next_reads;

/* yt__store_streaming that fetches the lines of `next` into cache among its stores. A loop that
 * computes a piece into a buffer and then streams it out reads nothing while the stores go, and
 * memory reads are what bound it; with the next piece's inputs fetched meanwhile, it reads all
 * along. -x[:, ::2] of 10M f32 into a streamed output, in a /tmp harness: 4 KiB pieces 5.6-7.5
 * ms, 2 KiB pieces with their next inputs fetched so 4.5-5.8, the same loop streaming its own
 * stores 4.5-5.7. In the library (runtime/pointwise.c, run_pieces; bench/strided, one thread, 10M
 * f32, against contiguous, old and new builds in turn, twice): -a[:, ::2] 0.45-0.49x -> 0.55x,
 * a[:, ::2] + b 0.49-0.51x -> 0.55-0.58x, -a[:, ::3] 0.33-0.34x -> 0.36-0.37x. Contiguous
 * chunks (run_row_in_chunks), which the hardware prefetchers follow, ran 1.10-1.27x slower with
 * it, and short staged rows no faster, so those do not fetch. `next` may be NULL. */
YT_INTERNAL void yt__store_streaming_ahead(char *dst, const char *src, int64_t bytes,
                                           const yt__next_reads *next);

/* Orders this thread's earlier yt__store_streaming stores before its later stores. */
YT_INTERNAL void yt__streaming_fence(void);

#endif
