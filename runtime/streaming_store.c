/* Streaming stores (runtime/streaming_store.h).
 *
 * A plain store to a line that is not in cache first reads the line from memory (to own it), then
 * writes it back when evicted: two transfers for one line of output. A non-temporal store
 * collects the line in a write-combining buffer and sends it once. */
#include <string.h>

#ifdef __AVX2__
#include <immintrin.h>
#endif

#include "streaming_store.h"

enum { LINE = 64 };

void
yt__store_streaming(char *dst, const char *src, int64_t bytes)
{
#ifdef __AVX2__
    const int64_t head = (int64_t)(-(uintptr_t)dst % LINE);
    if (bytes >= head + LINE) {
        memcpy(dst, src, (size_t)head);
        int64_t b = head;
        /* two stores a line, back to back, so that its write-combining buffer goes out full */
        for (; b + LINE <= bytes; b += LINE) {
            _mm256_stream_si256((__m256i *)(dst + b),
                                _mm256_loadu_si256((const __m256i *)(src + b)));
            _mm256_stream_si256((__m256i *)(dst + b + 32),
                                _mm256_loadu_si256((const __m256i *)(src + b + 32)));
        }
        memcpy(dst + b, src + b, (size_t)(bytes - b));
        return;
    }
#endif
    memcpy(dst, src, (size_t)bytes);
}

void
yt__streaming_fence(void)
{
#ifdef __AVX2__
    _mm_sfence();
#endif
}
