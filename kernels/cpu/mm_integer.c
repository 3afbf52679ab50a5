/* mm, bmm, addmm and baddbmm on integer tensors (u8 .. i64), which BLIS does not do.
 *
 * As in PyTorch, products and sums wrap at the result's width (u8: 100 * 3 + 100 * 3 = 88). They
 * are computed in uint64_t, where wrapping is defined, and truncated once at the end: two's
 * complement arithmetic modulo 2^64 agrees with arithmetic modulo 2^width in the low bits, so
 * the result is the same as wrapping at every step. The operands are read from i64 copies laid
 * out row-major, and the loop runs i, p, j so that the innermost reads a row of B and updates a
 * row of C contiguously (GCC vectorises it). No blocking beyond that: integer products have no
 * speed target, and the copies keep the worst case (transposed, strided operands) linear in
 * memory. */
#include "kernels.h"
#include "mm_integer.h"

/* A row-major i64 copy of `t` (a new reference). */
static yt_tensor *
i64_rows(yt_tensor *t)
{
    yt_shape shape;
    yt__shape_of(&shape, t);
    yt_tensor *copy = yt__empty(&shape, YT_DTYPE_I64, YT_DEVICE_CPU);
    if (copy != NULL && yt__copy_into(copy, t) != YT_OK) {
        yt_release(copy);
        return NULL;
    }
    return copy;
}

yt_status
yt__mm_integer(yt_tensor *result, yt_tensor *bias, yt_tensor *a, yt_tensor *b, int64_t beta,
               int64_t alpha)
{
    const int d = result->dim;
    const int64_t batch = d == 3 ? result->sizes[0] : 1;
    const int64_t m = result->sizes[d - 2], n = result->sizes[d - 1], k = a->sizes[d - 1];
    if (batch == 0 || m == 0 || n == 0)
        return YT_OK;
    yt_tensor *ca = i64_rows(a), *cb = ca == NULL ? NULL : i64_rows(b);
    yt_tensor *c = cb == NULL ? NULL : yt__empty_like(result, YT_DTYPE_I64);
    yt_status st = c == NULL ? yt__last_status() : YT_OK;
    const bool keep = bias != NULL && beta != 0;
    if (st == YT_OK && keep)
        st = yt__copy_into(c, bias); /* broadcast and convert bias into C, then scale */
    if (st == YT_OK) {
        const uint64_t *av = (const uint64_t *)yt__data_ptr(ca);
        const uint64_t *bv = (const uint64_t *)yt__data_ptr(cb);
        uint64_t *cv = (uint64_t *)yt__data_ptr(c);
        for (int64_t t = 0; t < batch; t++) {
            const uint64_t *at = av + t * m * k, *bt = bv + t * k * n;
            uint64_t *ct = cv + t * m * n;
            for (int64_t i = 0; i < m; i++) {
                uint64_t *crow = ct + i * n;
                for (int64_t j = 0; j < n; j++)
                    crow[j] = keep ? crow[j] * (uint64_t)beta : 0;
                for (int64_t p = 0; p < k; p++) {
                    const uint64_t s = (uint64_t)alpha * at[i * k + p];
                    const uint64_t *brow = bt + p * n;
                    for (int64_t j = 0; j < n; j++)
                        crow[j] += s * brow[j];
                }
            }
        }
        st = yt__copy_into(result, c);
    }
    yt_release(c);
    yt_release(cb);
    yt_release(ca);
    return st;
}
