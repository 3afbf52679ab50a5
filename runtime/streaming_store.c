/* Streaming stores (runtime/streaming_store.h).
 *
 * A plain store to a line that is not in cache first reads the line from memory (to own it), then
 * writes it back when evicted: two transfers for one line of output. A non-temporal store
 * collects the line in a write-combining buffer and sends it once. */
#include <stdbool.h>
#include <string.h>

#ifdef __AVX2__
#include <immintrin.h>
#endif

#include "streaming_store.h"

enum { LINE = 64 };

/* Where yt__store_streaming_ahead is along its fetches: range r, line at (a line-aligned
 * address), and the range's end. */
typedef struct fetch_cursor {
    const yt__next_reads *next;
    int r;
    const char *at, *end;
} fetch_cursor;

static void
cursor_start_range(fetch_cursor *c)
{
    for (; c->r < c->next->n; c->r++) {
        if (c->next->bytes[c->r] <= 0)
            continue;
        const char *from = c->next->at[c->r];
        c->at = from - (uintptr_t)from % LINE;
        c->end = from + c->next->bytes[c->r];
        return;
    }
}

/* Fetches up to `lines` more lines; false when none are left. */
static bool
fetch_lines(fetch_cursor *c, int64_t lines)
{
    for (; lines > 0 && c->r < c->next->n; lines--) {
        __builtin_prefetch(c->at, 0, 3);
        c->at += LINE;
        if (c->at >= c->end) {
            c->r++;
            cursor_start_range(c);
        }
    }
    return c->r < c->next->n;
}

void
yt__store_streaming_ahead(char *dst, const char *src, int64_t bytes, const yt__next_reads *next)
{
    fetch_cursor cursor = {next, 0, NULL, NULL};
    int64_t to_fetch = 0; /* lines, spread evenly over the lines stored */
    if (next != NULL) {
        cursor_start_range(&cursor);
        for (int r = 0; r < next->n; r++)
            to_fetch += next->bytes[r] > 0 ? next->bytes[r] / LINE + 2 : 0;
    }
    bool fetching = cursor.r < (next != NULL ? next->n : 0);
#ifdef __AVX2__
    const int64_t head = (int64_t)(-(uintptr_t)dst % LINE);
    if (bytes >= head + LINE) {
        const int64_t per_line = fetching ? to_fetch / (bytes / LINE) + 1 : 0;
        memcpy(dst, src, (size_t)head);
        int64_t b = head;
        /* two stores a line, back to back, so that its write-combining buffer goes out full */
        for (; b + LINE <= bytes; b += LINE) {
            if (fetching)
                fetching = fetch_lines(&cursor, per_line);
            _mm256_stream_si256((__m256i *)(dst + b),
                                _mm256_loadu_si256((const __m256i *)(src + b)));
            _mm256_stream_si256((__m256i *)(dst + b + 32),
                                _mm256_loadu_si256((const __m256i *)(src + b + 32)));
        }
        memcpy(dst + b, src + b, (size_t)(bytes - b));
        if (fetching)
            fetch_lines(&cursor, to_fetch);
        return;
    }
#endif
    memcpy(dst, src, (size_t)bytes);
    if (fetching)
        fetch_lines(&cursor, to_fetch);
}

void
yt__store_streaming(char *dst, const char *src, int64_t bytes)
{
    yt__store_streaming_ahead(dst, src, bytes, NULL);
}

void
yt__streaming_fence(void)
{
#ifdef __AVX2__
    _mm_sfence();
#endif
}
