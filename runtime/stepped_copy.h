/* Copies between a row of elements a fixed step apart (x[:, ::2], x[..., ::3], a column) and a
 * buffer of the same elements back to back: how yt__pointwise runs its loops' vector path over
 * an operand that steps over elements (runtime/pointwise.c, run_pieces). */
#ifndef YT_RUNTIME_STEPPED_COPY_H
#define YT_RUNTIME_STEPPED_COPY_H

#include <stdint.h>

#include "internal.h"

/* Copies n elements of es bytes, `step` bytes apart from src on, into dst one after the other.
 * Reads nothing outside the n elements. */
YT_INTERNAL void yt__gather_elements(char *dst, const char *src, int64_t step, int64_t es,
                                     int64_t n);

/* Stores n elements of es bytes from src, one after the other, `step` bytes apart from dst on.
 * The bytes between them are neither read nor written (another thread may own them). */
YT_INTERNAL void yt__scatter_elements(char *dst, int64_t step, const char *src, int64_t es,
                                      int64_t n);

#endif
