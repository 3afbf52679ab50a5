/* matmul with PyTorch's rank rules, written in public ops (mm, bmm, views, reshape) so autograd
 * and double backward come from them:
 *   1-D x 1-D   dot: mm of [1, k] and [k, 1], viewed as 0-d
 *   2-D x 1-D   mm with other as a column, squeezed
 *   1-D x 2-D   mm with self as a row, squeezed
 *   2-D x 2-D   mm
 *   N-D x 1/2-D fold self's batch dims into its rows: one mm (reshape copies only when they do
 *               not fold, as in PyTorch)
 *   1/2-D x N-D the same on the transposed problem: (other^T self^T)^T
 *   N-D x N-D   batch dims broadcast; when one side's batch is all ones it folds as above,
 *               otherwise both sides are expanded to the common batch and flattened to
 *               [B, n, k] and [B, k, m] for one bmm. A single broadcast batch dim stays a view
 *               (batch stride 0, read in place by the GEMM); several fold when their strides
 *               allow, else reshape copies, as PyTorch's matmul does before its bmm. */
#include "internal.h"
#include "kernels.h"

static yt_tensor *
dot(yt_tensor *self, yt_tensor *other)
{
    yt_tensor *row = yt_unsqueeze(self, 0);
    yt_tensor *col = yt_unsqueeze(other, 1);
    yt_tensor *prod = yt_mm(row, col); /* [1, 1] */
    yt_tensor *result = yt_view(prod, NULL, 0);
    yt_release(prod);
    yt_release(col);
    yt_release(row);
    return result;
}

static yt_tensor *
matrix_vector(yt_tensor *self, yt_tensor *other)
{
    yt_tensor *col = yt_unsqueeze(other, 1);
    yt_tensor *prod = yt_mm(self, col); /* [n, 1] */
    yt_tensor *result = yt_squeeze_dim(prod, 1);
    yt_release(prod);
    yt_release(col);
    return result;
}

static yt_tensor *
vector_matrix(yt_tensor *self, yt_tensor *other)
{
    yt_tensor *row = yt_unsqueeze(self, 0);
    yt_tensor *prod = yt_mm(row, other); /* [1, m] */
    yt_tensor *result = yt_squeeze_dim(prod, 0);
    yt_release(prod);
    yt_release(row);
    return result;
}

/* self is N-D (N >= 2), other 1-D or 2-D: the rows of every batch entry of self go through one
 * mm. Result: self's shape without its last dim, plus other's last dim when other is 2-D. */
static yt_tensor *
fold_left(yt_tensor *self, yt_tensor *other)
{
    int d1 = yt_tensor_dim(self), d2 = yt_tensor_dim(other);
    const int64_t *s1 = yt_tensor_sizes(self);
    int64_t k = s1[d1 - 1];
    int64_t rows;
    if (!yt__checked_numel(&rows, s1, d1 - 1)) {
        char buf[YT__SIZES_BUF];
        return yt__fail(YT_ERR_NOMEM, "matmul: self of shape %s has too many rows to fold",
                        yt__format_sizes(buf, sizeof buf, s1, d1));
    }
    int64_t out_sizes[YT_MAX_DIM];
    int out_dim = 0;
    for (int i = 0; i < d1 - 1; i++)
        out_sizes[out_dim++] = s1[i];
    if (d2 == 2)
        out_sizes[out_dim++] = yt_tensor_size(other, 1);
    int64_t flat_sizes[2] = {rows, k};
    yt_tensor *flat = yt_reshape(self, flat_sizes, 2);
    yt_tensor *mat = d2 == 1 ? yt_unsqueeze(other, 1) : yt_retain(other);
    yt_tensor *prod = yt_mm(flat, mat); /* contiguous [rows, m], so the view cannot fail */
    yt_tensor *result = yt_view(prod, out_sizes, out_dim);
    yt_release(prod);
    yt_release(mat);
    yt_release(flat);
    return result;
}

/* self 1-D or 2-D, other N-D (N >= 3): self @ other = (other^T @ self^T)^T, folded as above. */
static yt_tensor *
fold_right(yt_tensor *self, yt_tensor *other)
{
    yt_tensor *other_t = yt_transpose(other, -1, -2); /* [..., m, k] */
    if (yt_tensor_dim(self) == 1) {
        yt_tensor *result = fold_left(other_t, self); /* [..., m] */
        yt_release(other_t);
        return result;
    }
    yt_tensor *self_t = yt_t(self);               /* [k, n] */
    yt_tensor *prod = fold_left(other_t, self_t); /* [..., m, n] */
    yt_tensor *result = yt_transpose(prod, -1, -2);
    yt_release(prod);
    yt_release(self_t);
    yt_release(other_t);
    return result;
}

/* a: batch + [n, k], b: batch + [k, m], both expanded to the common batch shape: one bmm over
 * the flattened batch, viewed back to batch + [n, m]. */
static yt_tensor *
batched(yt_tensor *a, yt_tensor *b, const int64_t *batch, int n_batch, int64_t n_entries, int64_t n,
        int64_t k, int64_t m)
{
    int64_t a_sizes[3] = {n_entries, n, k}, b_sizes[3] = {n_entries, k, m};
    yt_tensor *a3 = yt_reshape(a, a_sizes, 3);
    yt_tensor *b3 = yt_reshape(b, b_sizes, 3);
    yt_tensor *prod = yt_bmm(a3, b3);
    int64_t out_sizes[YT_MAX_DIM];
    for (int i = 0; i < n_batch; i++)
        out_sizes[i] = batch[i];
    out_sizes[n_batch] = n;
    out_sizes[n_batch + 1] = m;
    yt_tensor *result = yt_view(prod, out_sizes, n_batch + 2); /* contiguous [B, n, m] */
    yt_release(prod);
    yt_release(b3);
    yt_release(a3);
    return result;
}

static yt_tensor *
broadcast_batched(yt_tensor *self, yt_tensor *other)
{
    int d1 = yt_tensor_dim(self), d2 = yt_tensor_dim(other);
    const int64_t *s1 = yt_tensor_sizes(self), *s2 = yt_tensor_sizes(other);
    int nb1 = d1 - 2, nb2 = d2 - 2;
    int nb = nb1 > nb2 ? nb1 : nb2;
    int64_t batch[YT_MAX_DIM];
    bool ones1 = true, ones2 = true;
    for (int i = 0; i < nb; i++) {
        int i1 = i - (nb - nb1), i2 = i - (nb - nb2); /* aligned from the right */
        int64_t b1 = i1 >= 0 ? s1[i1] : 1, b2 = i2 >= 0 ? s2[i2] : 1;
        if (b1 != b2 && b1 != 1 && b2 != 1)
            return yt__fail(YT_ERR_SHAPE,
                            "matmul: batch dims cannot broadcast: self.size(%d)=%lld vs "
                            "other.size(%d)=%lld",
                            i1, (long long)b1, i2, (long long)b2);
        batch[i] = b1 == 1 ? b2 : b1;
        ones1 = ones1 && b1 == 1;
        ones2 = ones2 && b2 == 1;
    }
    int64_t n = s1[d1 - 2], k = s1[d1 - 1], m = s2[d2 - 1];
    int64_t out_sizes[YT_MAX_DIM];
    for (int i = 0; i < nb; i++)
        out_sizes[i] = batch[i];
    out_sizes[nb] = n;
    out_sizes[nb + 1] = m;
    if (ones1 || ones2) {
        /* One side is a single matrix broadcast over the other's batch: one folded mm. */
        int64_t mat_sizes[2] = {ones2 ? k : n, ones2 ? m : k};
        yt_tensor *mat = yt_reshape(ones2 ? other : self, mat_sizes, 2);
        yt_tensor *prod = ones2 ? fold_left(self, mat) : fold_right(mat, other);
        /* Adds the leading ones that the matrix side's extra batch dims contribute. */
        yt_tensor *result = yt_reshape(prod, out_sizes, nb + 2);
        yt_release(prod);
        yt_release(mat);
        return result;
    }
    int64_t n_entries;
    if (!yt__checked_numel(&n_entries, batch, nb)) {
        char buf[YT__SIZES_BUF];
        return yt__fail(YT_ERR_NOMEM, "matmul: batch shape %s has too many entries",
                        yt__format_sizes(buf, sizeof buf, batch, nb));
    }
    int64_t a_sizes[YT_MAX_DIM], b_sizes[YT_MAX_DIM];
    for (int i = 0; i < nb; i++)
        a_sizes[i] = b_sizes[i] = batch[i];
    a_sizes[nb] = n;
    a_sizes[nb + 1] = k;
    b_sizes[nb] = k;
    b_sizes[nb + 1] = m;
    yt_tensor *a = yt_expand(self, a_sizes, nb + 2);
    yt_tensor *b = yt_expand(other, b_sizes, nb + 2);
    yt_tensor *result =
        a == NULL || b == NULL ? NULL : batched(a, b, batch, nb, n_entries, n, k, m);
    yt_release(b);
    yt_release(a);
    return result;
}

yt_tensor *
yt__composite_matmul(yt_tensor *self, yt_tensor *other)
{
    int d1 = yt_tensor_dim(self), d2 = yt_tensor_dim(other);
    if (d1 < 1 || d2 < 1)
        return yt__fail(YT_ERR_SHAPE,
                        "matmul: both arguments must be at least 1-D, got %d-D and "
                        "%d-D",
                        d1, d2);
    /* The contracted sizes, checked here so the message names matmul and its arguments. */
    int64_t k1 = yt_tensor_size(self, -1);
    int k2_dim = d2 == 1 ? 0 : d2 - 2;
    int64_t k2 = yt_tensor_size(other, k2_dim);
    if (k1 != k2)
        return yt__fail(YT_ERR_SHAPE,
                        "matmul: self.size(%d)=%lld does not match other.size(%d)=%lld", d1 - 1,
                        (long long)k1, k2_dim, (long long)k2);
    if (d1 == 1 && d2 == 1)
        return dot(self, other);
    if (d1 == 2 && d2 == 1)
        return matrix_vector(self, other);
    if (d1 == 1 && d2 == 2)
        return vector_matrix(self, other);
    if (d1 == 2 && d2 == 2)
        return yt_mm(self, other);
    if (d2 <= 2)
        return fold_left(self, other);
    if (d1 <= 2)
        return fold_right(self, other);
    return broadcast_batched(self, other);
}
