/* Advanced indexing: index (self[i0, i1, ...] with integer and bool index tensors, None entries
 * meaning "the whole dimension") and index_put (with accumulate), written in public ops.
 *
 * Both reduce to one dimension. Bool masks become the integer coordinates of their true elements
 * (nonzero). The integer indices broadcast together to a shape B and are folded, with negative
 * values wrapped and every value range-checked, into one flat position over the indexed dims.
 * self, with its indexed dims permuted to the front and merged into one of size P, is then read
 * with index_select (or written with index_add / index_copy) along dim 0. As in PyTorch the B
 * dims replace the indexed dims in place when those are adjacent, and lead the result otherwise.
 * Autograd comes from permute, reshape, index_select, index_add and index_copy. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kernels.h"

/* The indexing problem after masks are expanded: per dim of self, an i64 index (or NULL). */
typedef struct plan {
    int nd;                     /* self's rank */
    yt_tensor *idx[YT_MAX_DIM]; /* owned; NULL: dim not indexed */
    int n_indexed;              /* how many dims are indexed */
    int first;                  /* the first indexed dim */
    bool adjacent;              /* indexed dims form one run */
    yt_shape b;                 /* broadcast shape of the indices */
    int64_t order[YT_MAX_DIM];  /* indexed dims, then the others */
    yt_tensor *flat;            /* owned: i64 [numel(B)], positions over the indexed dims */
    int64_t p;                  /* product of the indexed sizes */
} plan;

static void
plan_release(plan *pl)
{
    for (int i = 0; i < YT_MAX_DIM; i++)
        yt_release(pl->idx[i]);
    yt_release(pl->flat);
}

/* Fills pl->idx from the user's list, expanding bool/u8 masks into one index per mask dim. */
static yt_status
expand_masks(plan *pl, const char *op, yt_tensor *self, yt_tensor *const *indices, int n)
{
    int d = 0;
    for (int i = 0; i < n; i++) {
        yt_tensor *t = indices[i];
        if (t == NULL) {
            d++;
            continue;
        }
        bool mask = t->dtype == YT_DTYPE_BOOL || t->dtype == YT_DTYPE_U8;
        if (!mask && !yt_dtype_is_floating(t->dtype) && t->dtype != YT_DTYPE_BOOL) {
            if (d >= pl->nd)
                return yt__fail_status(
                    YT_ERR_SHAPE, "%s: too many indices for a %d-D self (got %d)", op, pl->nd, n);
            pl->idx[d++] = yt__cast_copy(t, YT_DTYPE_I64);
            if (pl->idx[d - 1] == NULL)
                return yt__last_status();
            continue;
        }
        if (!mask)
            return yt__fail_status(YT_ERR_DTYPE,
                                   "%s: indices[%d] has dtype %s; tensors used as indices must "
                                   "be integral or bool",
                                   op, i, yt_dtype_name(t->dtype));
        if (d + t->dim > pl->nd)
            return yt__fail_status(YT_ERR_SHAPE, "%s: too many indices for a %d-D self (got %d)",
                                   op, pl->nd, d + t->dim);
        for (int k = 0; k < t->dim; k++) {
            if (t->sizes[k] != self->sizes[d + k]) {
                char a[YT__SIZES_BUF], b[YT__SIZES_BUF];
                return yt__fail_status(YT_ERR_SHAPE,
                                       "%s: the shape of the mask %s at indices[%d] does not "
                                       "match the shape of self %s at dim %d",
                                       op, yt__format_sizes(a, sizeof a, t->sizes, t->dim), i,
                                       yt__format_sizes(b, sizeof b, self->sizes, self->dim), d);
            }
        }
        yt_tensor *nz = yt_nonzero(t); /* [count, t->dim] */
        if (nz == NULL)
            return yt__last_status();
        if (t->dim == 0) {
            /* a 0-D mask adds a dim of size 1 (true) or 0 (false): not supported here */
            yt_release(nz);
            return yt__fail_status(YT_ERR_SHAPE, "%s: indices[%d] is a 0-D bool mask", op, i);
        }
        for (int k = 0; k < t->dim; k++) {
            yt_tensor *col = yt_select(nz, 1, k);
            pl->idx[d + k] = col == NULL ? NULL : yt__cast_copy(col, YT_DTYPE_I64);
            yt_release(col);
            if (pl->idx[d + k] == NULL) {
                yt_release(nz);
                return yt__last_status();
            }
        }
        yt_release(nz);
        d += t->dim;
    }
    return YT_OK;
}

static yt_status
make_plan(plan *pl, const char *op, yt_tensor *self, yt_tensor *const *indices, int n)
{
    memset(pl, 0, sizeof *pl);
    pl->nd = self->dim;
    if (n > YT_MAX_DIM || (n > 0 && indices == NULL))
        return yt__fail_status(YT_ERR_VALUE, "%s: indices has %d entries (at most %d)", op, n,
                               YT_MAX_DIM);
    if (expand_masks(pl, op, self, indices, n) != YT_OK)
        return yt__last_status();
    yt_tensor *defined[YT_MAX_DIM];
    const char *names[YT_MAX_DIM];
    int last = -1;
    pl->first = -1;
    pl->adjacent = true;
    for (int d = 0; d < pl->nd; d++) {
        if (pl->idx[d] == NULL)
            continue;
        if (pl->first < 0)
            pl->first = d;
        else if (last != d - 1)
            pl->adjacent = false;
        last = d;
        names[pl->n_indexed] = "indices";
        defined[pl->n_indexed++] = pl->idx[d];
    }
    if (pl->n_indexed == 0)
        return YT_OK;
    if (yt__broadcast_shapes(&pl->b, op, pl->n_indexed, defined, names) != YT_OK)
        return yt__last_status();
    int k = 0;
    for (int d = 0; d < pl->nd; d++)
        if (pl->idx[d] != NULL)
            pl->order[k++] = d;
    for (int d = 0; d < pl->nd; d++)
        if (pl->idx[d] == NULL)
            pl->order[k++] = d;
    /* flat = sum over indexed dims of wrapped index * (product of the later indexed sizes) */
    int64_t count;
    if (!yt__checked_numel(&count, pl->b.sizes, pl->b.dim))
        return yt__fail_status(YT_ERR_VALUE, "%s: the broadcast indices are too large", op);
    yt_shape fs = {.dim = 1, .sizes = {count}};
    pl->flat = yt__empty(&fs, YT_DTYPE_I64, self->device);
    if (pl->flat == NULL)
        return yt__last_status();
    int64_t *flat = count > 0 ? (int64_t *)yt__data_ptr(pl->flat) : NULL;
    for (int64_t i = 0; i < count; i++)
        flat[i] = 0;
    pl->p = 1;
    for (int d = 0; d < pl->nd; d++) {
        if (pl->idx[d] == NULL)
            continue;
        int64_t size = self->sizes[d];
        if (!yt__mul_ok(&pl->p, pl->p, size))
            return yt__fail_status(YT_ERR_VALUE, "%s: the indexed dims are too large", op);
        yt_tensor *e = yt_expand(pl->idx[d], pl->b.sizes, pl->b.dim);
        yt_tensor *v = e == NULL ? NULL : yt__cast_copy(e, YT_DTYPE_I64);
        yt_release(e);
        if (v == NULL)
            return yt__last_status();
        const int64_t *iv = count > 0 ? (const int64_t *)yt__data_ptr(v) : NULL;
        for (int64_t i = 0; i < count; i++) {
            int64_t x = iv[i];
            if (x < -size || x >= size) {
                yt_release(v);
                return yt__fail_status(YT_ERR_VALUE,
                                       "%s: index %lld is out of bounds for dimension %d with "
                                       "size %lld",
                                       op, (long long)x, d, (long long)size);
            }
            flat[i] = flat[i] * size + (x < 0 ? x + size : x);
        }
        yt_release(v);
    }
    return YT_OK;
}

/* self with the indexed dims first, merged: [P, others...]. */
static yt_tensor *
merged_self(const plan *pl, yt_tensor *self)
{
    yt_tensor *perm = yt_permute(self, pl->order, pl->nd);
    int64_t shape[YT_MAX_DIM];
    int n = 0;
    shape[n++] = pl->p;
    for (int k = pl->n_indexed; k < pl->nd; k++)
        shape[n++] = self->sizes[pl->order[k]];
    yt_tensor *m = yt_reshape(perm, shape, n);
    yt_release(perm);
    return m;
}

/* Result layout: [B, others] ("front"), and PyTorch's order (B in place of adjacent indexed
 * dims). Writes PyTorch's shape and the permutation from front to it. */
static int
result_layout(const plan *pl, const yt_tensor *self, int64_t *shape, int64_t *to_torch)
{
    int nb = pl->b.dim, others = pl->nd - pl->n_indexed, n = nb + others;
    int lead = pl->adjacent ? pl->first : 0; /* other dims that stay before B */
    int k = 0;
    for (int j = 0; j < lead; j++) {
        to_torch[k] = nb + j;
        shape[k++] = self->sizes[pl->order[pl->n_indexed + j]];
    }
    for (int j = 0; j < nb; j++) {
        to_torch[k] = j;
        shape[k++] = pl->b.sizes[j];
    }
    for (int j = lead; j < others; j++) {
        to_torch[k] = nb + j;
        shape[k++] = self->sizes[pl->order[pl->n_indexed + j]];
    }
    return n;
}

yt_tensor *
yt__composite_index(yt_tensor *self, yt_tensor *const *indices, int indices_len)
{
    plan pl;
    if (make_plan(&pl, "index", self, indices, indices_len) != YT_OK) {
        plan_release(&pl);
        return NULL;
    }
    if (pl.n_indexed == 0) {
        plan_release(&pl);
        return yt_view(self, self->sizes, self->dim);
    }
    int64_t shape[YT_MAX_DIM], to_torch[YT_MAX_DIM], front[YT_MAX_DIM];
    int n = result_layout(&pl, self, shape, to_torch);
    if (n > YT_MAX_DIM) {
        plan_release(&pl);
        return yt__fail(YT_ERR_SHAPE, "index: the result would have %d dims (at most %d)", n,
                        YT_MAX_DIM);
    }
    yt_tensor *m = merged_self(&pl, self);
    yt_tensor *picked = m == NULL ? NULL : yt_index_select(m, 0, pl.flat);
    int k = 0;
    for (int j = 0; j < pl.b.dim; j++)
        front[k++] = pl.b.sizes[j];
    for (int j = pl.n_indexed; j < pl.nd; j++)
        front[k++] = self->sizes[pl.order[j]];
    yt_tensor *shaped = picked == NULL ? NULL : yt_view(picked, front, n);
    yt_tensor *result = shaped == NULL ? NULL : yt_permute(shaped, to_torch, n);
    yt_release(shaped);
    yt_release(picked);
    yt_release(m);
    plan_release(&pl);
    (void)shape;
    return result;
}

/* values must broadcast to the indexed shape; checked here so that the error names index_put's
 * values (PyTorch: "shape mismatch: value tensor ... cannot be broadcast"), not expand. */
static bool
values_fit(yt_tensor *values, const int64_t *shape, int n)
{
    bool ok = values->dim <= n;
    for (int i = 1; ok && i <= values->dim; i++) {
        int64_t v = values->sizes[values->dim - i];
        ok = v == 1 || v == shape[n - i];
    }
    if (!ok) {
        char a[YT__SIZES_BUF], b[YT__SIZES_BUF];
        yt__fail(YT_ERR_SHAPE,
                 "index_put: values of shape %s cannot broadcast to the indexed shape %s",
                 yt__format_sizes(a, sizeof a, values->sizes, values->dim),
                 yt__format_sizes(b, sizeof b, shape, n));
    }
    return ok;
}

yt_tensor *
yt__composite_index_put(yt_tensor *self, yt_tensor *const *indices, int indices_len,
                        yt_tensor *values, bool accumulate)
{
    if (values->dtype != self->dtype)
        return yt__fail(YT_ERR_DTYPE, "index_put: values has dtype %s but self has dtype %s",
                        yt_dtype_name(values->dtype), yt_dtype_name(self->dtype));
    plan pl;
    if (make_plan(&pl, "index_put", self, indices, indices_len) != YT_OK) {
        plan_release(&pl);
        return NULL;
    }
    if (pl.n_indexed == 0) { /* self[...] = values over everything */
        plan_release(&pl);
        if (!values_fit(values, self->sizes, self->dim))
            return NULL;
        yt_tensor *e = yt_expand(values, self->sizes, self->dim);
        yt_tensor *r = e == NULL    ? NULL
                       : accumulate ? yt_add(self, e)
                                    : yt_add_ex(e, self, yt_int(0));
        yt_release(e);
        return r;
    }
    int64_t shape[YT_MAX_DIM], to_torch[YT_MAX_DIM], from_torch[YT_MAX_DIM];
    int n = result_layout(&pl, self, shape, to_torch);
    if (n > YT_MAX_DIM) {
        plan_release(&pl);
        return yt__fail(YT_ERR_SHAPE, "index_put: the indexed shape would have %d dims", n);
    }
    if (!values_fit(values, shape, n)) {
        plan_release(&pl);
        return NULL;
    }
    for (int j = 0; j < n; j++)
        from_torch[to_torch[j]] = j;
    /* values broadcast to the indexed shape (PyTorch's order), then laid out as [B, others] */
    yt_tensor *ve = yt_expand(values, shape, n);
    yt_tensor *vf = ve == NULL ? NULL : yt_permute(ve, from_torch, n);
    int64_t rows[YT_MAX_DIM];
    int r = 0;
    rows[r++] = yt_tensor_numel(pl.flat);
    for (int j = pl.n_indexed; j < pl.nd; j++)
        rows[r++] = self->sizes[pl.order[j]];
    yt_tensor *v2 = vf == NULL ? NULL : yt_reshape(vf, rows, r);
    yt_tensor *m = v2 == NULL ? NULL : merged_self(&pl, self);
    yt_tensor *put = m == NULL    ? NULL
                     : accumulate ? yt_index_add(m, 0, pl.flat, v2)
                                  : yt_index_copy(m, 0, pl.flat, v2);
    /* back to self's layout: unmerge, then undo the permutation */
    int64_t perm_shape[YT_MAX_DIM], inverse[YT_MAX_DIM];
    for (int j = 0; j < pl.nd; j++) {
        perm_shape[j] = self->sizes[pl.order[j]];
        inverse[pl.order[j]] = j;
    }
    yt_tensor *unmerged = put == NULL ? NULL : yt_view(put, perm_shape, pl.nd);
    yt_tensor *back = unmerged == NULL ? NULL : yt_permute(unmerged, inverse, pl.nd);
    yt_tensor *result = back == NULL ? NULL : yt_contiguous(back);
    yt_release(back);
    yt_release(unmerged);
    yt_release(put);
    yt_release(m);
    yt_release(v2);
    yt_release(vf);
    yt_release(ve);
    plan_release(&pl);
    return result;
}
