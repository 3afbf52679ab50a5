/* roll on the CPU. Rolling one dimension of size n by s moves two blocks: [0, n-s) to [s, n) and
 * [n-s, n) to [0, s). Rolling k dimensions at once moves the 2^k combinations of those blocks,
 * each a strided copy from a view of self into a view of the result, so every element moves
 * once. With no dims the tensor is rolled as if flattened: a contiguous copy of self is viewed
 * as one dimension. */
#include "kernels.h"

static int64_t
positive_mod(int64_t s, int64_t n)
{
    int64_t r = s % n;
    return r < 0 ? r + n : r;
}

/* Copies the block of `src` with per-dim (start, length) into `dst` at per-dim start `at`. */
static yt_status
copy_block(yt_tensor *dst, yt_tensor *src, const int64_t *src_start, const int64_t *dst_start,
           const int64_t *len)
{
    int nd = src->dim;
    int64_t so = src->offset, doff = dst->offset;
    for (int d = 0; d < nd; d++) {
        if (len[d] == 0)
            return YT_OK;
        so += src_start[d] * src->strides[d];
        doff += dst_start[d] * dst->strides[d];
    }
    yt_tensor *a = yt__view_of(src, nd, len, src->strides, so);
    yt_tensor *b = yt__view_of(dst, nd, len, dst->strides, doff);
    yt_status status = a == NULL || b == NULL ? yt__last_status() : yt__copy_into(b, a);
    yt_release(a);
    yt_release(b);
    return status;
}

static yt_status
roll_dims(yt_tensor *result, yt_tensor *self, const int64_t *shifts, const int64_t *dims, int k)
{
    int nd = self->dim;
    int64_t shift[YT_MAX_DIM] = {0};
    bool rolled[YT_MAX_DIM] = {false};
    for (int i = 0; i < k; i++) {
        int64_t d = dims[i];
        if (self->sizes[d] == 0)
            return YT_OK;
        /* a dim named twice rolls by the sum of its shifts, as applying them in turn would */
        int64_t s = positive_mod(shifts[i], self->sizes[d]);
        shift[d] = positive_mod(shift[d] + s, self->sizes[d]);
        rolled[d] = true;
    }
    int which[YT_MAX_DIM]; /* the rolled dims, in order */
    int m = 0;
    for (int d = 0; d < nd; d++)
        if (rolled[d] && shift[d] != 0)
            which[m++] = d;
    for (unsigned mask = 0; mask < (1u << m); mask++) {
        int64_t src_start[YT_MAX_DIM], dst_start[YT_MAX_DIM], len[YT_MAX_DIM];
        for (int d = 0; d < nd; d++) {
            src_start[d] = dst_start[d] = 0;
            len[d] = self->sizes[d];
        }
        for (int j = 0; j < m; j++) {
            int d = which[j];
            int64_t n = self->sizes[d], s = shift[d];
            if (mask & (1u << j)) { /* the tail wraps to the front */
                src_start[d] = n - s;
                len[d] = s;
            } else {
                dst_start[d] = s;
                len[d] = n - s;
            }
        }
        yt_status status = copy_block(result, self, src_start, dst_start, len);
        if (status != YT_OK)
            return status;
    }
    return YT_OK;
}

yt_status
yt__cpu_roll(yt_tensor *result, yt_tensor *self, const int64_t *shifts, int shifts_len,
             const int64_t *dims, int dims_len)
{
    if (dims_len == 0) {
        if (shifts_len != 1)
            return yt__fail_status(YT_ERR_SHAPE,
                                   "roll: shifts has %d entries; without dims it must have 1",
                                   shifts_len);
        if (self->numel == 0)
            return YT_OK;
        yt_tensor *flat_src =
            self->is_contiguous ? yt_retain(self) : yt__cast_copy(self, self->dtype);
        if (flat_src == NULL)
            return yt__last_status();
        int64_t n = self->numel, one = 1;
        yt_tensor *src = yt__view_of(flat_src, 1, &n, &one, flat_src->offset);
        yt_tensor *dst = yt__view_of(result, 1, &n, &one, result->offset);
        static const int64_t dim0[1] = {0};
        yt_status status =
            src == NULL || dst == NULL ? yt__last_status() : roll_dims(dst, src, shifts, dim0, 1);
        yt_release(src);
        yt_release(dst);
        yt_release(flat_src);
        return status;
    }
    if (shifts_len != dims_len)
        return yt__fail_status(YT_ERR_SHAPE, "roll: shifts has %d entries but dims has %d",
                               shifts_len, dims_len);
    if (self->dim == 0)
        return yt__copy_into(result, self);
    return roll_dims(result, self, shifts, dims, dims_len);
}
