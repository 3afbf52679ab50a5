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

/* Orders this thread's earlier yt__store_streaming stores before its later stores. */
YT_INTERNAL void yt__streaming_fence(void);

#endif
