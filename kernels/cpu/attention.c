/* scaled_dot_product_attention_math and its backward on the CPU: for every (batch, head) pair
 * of query [..., L, E], key [..., S, E] and value [..., S, Ev],
 *   attn = softmax(scale * Q K^T)        [L, S], kept for the backward
 *   out  = attn V                        [L, Ev]
 * and backward, from the upstream gradient dO and the kept attn,
 *   dV = attn^T dO,  dP = dO V^T,  dS = attn * (dP - rowsum(dP * attn)),
 *   dQ = scale * dS K,  dK = scale * dS^T Q.
 * Each pair is a few small GEMMs (gemm.h, one thread) and a softmax over rows that stay in cache;
 * the pairs are spread over the pool (parallel.h). The inputs are read in place with their own
 * strides (the heads of a [B, T, H, D] projection seen as [B, H, T, D] need no copy); results are
 * contiguous. f16/bf16 compute in f32 copies. */
#include <stdatomic.h>
#include <string.h>

#include "kernels.h"
#include "gemm.h"
#include "parallel.h"
#include "softmax_rows.h"

/* One operand: its data, the strides of its leading (pair) dims and of its matrix. */
typedef struct operand {
    const char *data;
    int64_t lead[YT_MAX_DIM];
    int64_t rs, cs;
} operand;

typedef struct job {
    int n_lead;
    int64_t lead_sizes[YT_MAX_DIM];
    int64_t pairs, L, S, E, Ev, chunks;
    double scale;
    bool f64;
    operand q, k, v, go;
    char *out, *attn;    /* forward results [pairs, L, Ev] and [pairs, L, S], contiguous */
    char *dq, *dk, *dv;  /* backward results, contiguous; NULL when not wanted */
    const char *attn_in; /* the saved attn (backward), contiguous */
    _Atomic int status;
} job;

static operand
operand_of(const yt_tensor *t, int n_lead)
{
    operand o = {(const char *)yt__data_ptr((yt_tensor *)t),
                 {0},
                 t->strides[t->dim - 2],
                 t->strides[t->dim - 1]};
    for (int i = 0; i < n_lead; i++)
        o.lead[i] = t->strides[i];
    return o;
}

/* Element offset of pair `b` in an operand (the leading dims unravelled row-major). */
static int64_t
pair_offset(const job *j, const operand *o, int64_t b)
{
    int64_t off = 0;
    for (int i = j->n_lead - 1; i >= 0; i--) {
        int64_t idx = b % j->lead_sizes[i];
        b /= j->lead_sizes[i];
        off += idx * o->lead[i];
    }
    return off;
}

#define DEFINE_PAIRS(T, SFX, GEMM)                                                                 \
    static yt_status forward_pair_##SFX(const job *j, int64_t b)                                   \
    {                                                                                              \
        const T *q = (const T *)j->q.data + pair_offset(j, &j->q, b);                              \
        const T *k = (const T *)j->k.data + pair_offset(j, &j->k, b);                              \
        const T *v = (const T *)j->v.data + pair_offset(j, &j->v, b);                              \
        T *a = (T *)j->attn + b * j->L * j->S, *o = (T *)j->out + b * j->L * j->Ev;                \
        yt_status s = GEMM(false, true, j->L, j->S, j->E, (T)j->scale, q, j->q.rs, j->q.cs, k,     \
                           j->k.rs, j->k.cs, 0, a, j->S, 1);                                       \
        if (s != YT_OK)                                                                            \
            return s;                                                                              \
        yt__softmax_rows_##SFX(a, a, j->L, j->S);                                                  \
        return GEMM(false, false, j->L, j->Ev, j->S, 1, a, j->S, 1, v, j->v.rs, j->v.cs, 0, o,     \
                    j->Ev, 1);                                                                     \
    }                                                                                              \
    /* dp: scratch of L * S */                                                                     \
    static yt_status backward_pair_##SFX(const job *j, int64_t b, T *dp)                           \
    {                                                                                              \
        const T *q = (const T *)j->q.data + pair_offset(j, &j->q, b);                              \
        const T *k = (const T *)j->k.data + pair_offset(j, &j->k, b);                              \
        const T *v = (const T *)j->v.data + pair_offset(j, &j->v, b);                              \
        const T *go = (const T *)j->go.data + pair_offset(j, &j->go, b);                           \
        const T *a = (const T *)j->attn_in + b * j->L * j->S;                                      \
        const T sc = (T)j->scale;                                                                  \
        yt_status s = YT_OK;                                                                       \
        if (j->dv != NULL)                                                                         \
            s = GEMM(true, false, j->S, j->Ev, j->L, 1, a, j->S, 1, go, j->go.rs, j->go.cs, 0,     \
                     (T *)j->dv + b * j->S * j->Ev, j->Ev, 1);                                     \
        if (s != YT_OK || (j->dq == NULL && j->dk == NULL))                                        \
            return s;                                                                              \
        s = GEMM(false, true, j->L, j->S, j->Ev, 1, go, j->go.rs, j->go.cs, v, j->v.rs, j->v.cs,   \
                 0, dp, j->S, 1);                                                                  \
        if (s != YT_OK)                                                                            \
            return s;                                                                              \
        yt__softmax_backward_rows_##SFX(dp, dp, a, j->L, j->S);                                    \
        if (j->dq != NULL)                                                                         \
            s = GEMM(false, false, j->L, j->E, j->S, sc, dp, j->S, 1, k, j->k.rs, j->k.cs, 0,      \
                     (T *)j->dq + b * j->L * j->E, j->E, 1);                                       \
        if (s == YT_OK && j->dk != NULL)                                                           \
            s = GEMM(true, false, j->S, j->E, j->L, sc, dp, j->S, 1, q, j->q.rs, j->q.cs, 0,       \
                     (T *)j->dk + b * j->S * j->E, j->E, 1);                                       \
        return s;                                                                                  \
    }
DEFINE_PAIRS(float, f32, yt__gemm_f32)
DEFINE_PAIRS(double, f64, yt__gemm_f64)

static void
fail(job *j, yt_status s)
{
    if (s != YT_OK)
        atomic_store_explicit(&j->status, (int)s, memory_order_relaxed);
}

static void
forward_chunk(void *ctx, int64_t c)
{
    job *j = ctx;
    for (int64_t b = j->pairs * c / j->chunks; b < j->pairs * (c + 1) / j->chunks; b++)
        fail(j, j->f64 ? forward_pair_f64(j, b) : forward_pair_f32(j, b));
}

static void
backward_chunk(void *ctx, int64_t c)
{
    job *j = ctx;
    size_t bytes = (size_t)(j->L * j->S) * (j->f64 ? sizeof(double) : sizeof(float));
    void *dp = bytes > 0 && (j->dq != NULL || j->dk != NULL) ? yt__cpu_alloc(bytes) : NULL;
    if (bytes > 0 && (j->dq != NULL || j->dk != NULL) && dp == NULL) {
        fail(j, YT_ERR_NOMEM);
        return;
    }
    for (int64_t b = j->pairs * c / j->chunks; b < j->pairs * (c + 1) / j->chunks; b++)
        fail(j, j->f64 ? backward_pair_f64(j, b, dp) : backward_pair_f32(j, b, dp));
    if (dp != NULL)
        yt__cpu_free(dp, bytes);
}

/* Fills the geometry of `j` from query, key and value (checked by the generated op and the
 * shape rules: same leading dims, matching E and S). */
static void
geometry(job *j, const yt_tensor *query, const yt_tensor *key, const yt_tensor *value, double scale)
{
    int d = query->dim;
    j->n_lead = d - 2;
    j->pairs = 1;
    for (int i = 0; i < d - 2; i++) {
        j->lead_sizes[i] = query->sizes[i];
        j->pairs *= query->sizes[i];
    }
    j->L = query->sizes[d - 2];
    j->E = query->sizes[d - 1];
    j->S = key->sizes[d - 2];
    j->Ev = value->sizes[d - 1];
    j->scale = scale;
    j->f64 = query->dtype == YT_DTYPE_F64;
}

/* Runs `chunk` over the pairs with as many threads as the work pays for. */
static yt_status
run(job *j, yt__chunk_fn chunk, double passes)
{
    if (j->pairs == 0 || j->L == 0)
        return YT_OK;
    /* about 100 multiply-adds per ns on one thread for these small products */
    double macs = passes * (double)j->pairs * (double)j->L * (double)j->S *
                  (double)(j->E > j->Ev ? j->E : j->Ev);
    int threads = yt__parallel_threads(macs / 100.0, yt__max_threads());
    j->chunks = j->pairs < 2 * (int64_t)threads ? j->pairs : 2 * (int64_t)threads;
    if (threads <= 1)
        j->chunks = 1;
    yt__parallel_run(j->chunks, threads, chunk, j);
    int s = atomic_load(&j->status);
    return s == YT_OK ? YT_OK
                      : yt__fail_status((yt_status)s, "scaled_dot_product_attention_math: "
                                                      "out of memory in a worker thread");
}

/* The dtype the kernel computes in, and `t` in it (a new reference: t itself or a copy). */
static yt_tensor *
in_compute(yt_tensor *t, yt_dtype cd)
{
    return t == NULL ? NULL : t->dtype == cd ? yt_retain(t) : yt__cast_copy(t, cd);
}

/* `t` when it is contiguous in dtype cd, else a new buffer to copy into it afterwards. */
static yt_tensor *
out_buffer(yt_tensor *t, yt_dtype cd)
{
    return t->dtype == cd && t->is_contiguous ? yt_retain(t) : yt__empty_like(t, cd);
}

static yt_status
finish(yt_tensor *t, yt_tensor *buf, yt_status st)
{
    if (st == YT_OK && buf != t)
        st = yt__copy_into(t, buf);
    yt_release(buf);
    return st;
}

yt_status
yt__cpu_scaled_dot_product_attention_math(yt_tensor *output, yt_tensor *attn, yt_tensor *query,
                                          yt_tensor *key, yt_tensor *value, double scale)
{
    yt_dtype cd = query->dtype == YT_DTYPE_F64 ? YT_DTYPE_F64 : YT_DTYPE_F32;
    yt_tensor *q = in_compute(query, cd), *k = in_compute(key, cd), *v = in_compute(value, cd);
    yt_tensor *o = out_buffer(output, cd), *a = out_buffer(attn, cd);
    yt_status st = q && k && v && o && a ? YT_OK : yt__last_status();
    if (st == YT_OK) {
        job j = {0};
        geometry(&j, q, k, v, scale);
        j.q = operand_of(q, j.n_lead);
        j.k = operand_of(k, j.n_lead);
        j.v = operand_of(v, j.n_lead);
        j.out = yt__data_ptr(o);
        j.attn = yt__data_ptr(a);
        st = run(&j, forward_chunk, 2.0);
    }
    st = finish(output, o, st);
    st = finish(attn, a, st);
    yt_release(q);
    yt_release(k);
    yt_release(v);
    return st;
}

yt_status
yt__cpu_scaled_dot_product_attention_math_backward(yt_tensor *d_query, yt_tensor *d_key,
                                                   yt_tensor *d_value, yt_tensor *grad_output,
                                                   yt_tensor *query, yt_tensor *key,
                                                   yt_tensor *value, yt_tensor *attn, double scale,
                                                   bool query_grad, bool key_grad, bool value_grad)
{
    const char *op = "scaled_dot_product_attention_math_backward";
    int d = query->dim;
    bool ok = key->dim == d && value->dim == d && attn->dim == d && grad_output->dim == d &&
              key->sizes[d - 1] == query->sizes[d - 1] && value->sizes[d - 2] == key->sizes[d - 2];
    for (int i = 0; ok && i < d - 2; i++)
        ok = key->sizes[i] == query->sizes[i] && value->sizes[i] == query->sizes[i] &&
             attn->sizes[i] == query->sizes[i] && grad_output->sizes[i] == query->sizes[i];
    ok = ok && attn->sizes[d - 2] == query->sizes[d - 2] && attn->sizes[d - 1] == key->sizes[d - 2];
    ok = ok && grad_output->sizes[d - 2] == query->sizes[d - 2] &&
         grad_output->sizes[d - 1] == value->sizes[d - 1];
    if (!ok) {
        char a[YT__SIZES_BUF], b[YT__SIZES_BUF], c[YT__SIZES_BUF], e[YT__SIZES_BUF];
        return yt__fail_status(YT_ERR_SHAPE,
                               "%s: query %s, key %s, value %s and attn %s do not fit together", op,
                               yt__format_sizes(a, sizeof a, query->sizes, d),
                               yt__format_sizes(b, sizeof b, key->sizes, key->dim),
                               yt__format_sizes(c, sizeof c, value->sizes, value->dim),
                               yt__format_sizes(e, sizeof e, attn->sizes, attn->dim));
    }
    yt_dtype cd = query->dtype == YT_DTYPE_F64 ? YT_DTYPE_F64 : YT_DTYPE_F32;
    yt_tensor *q = in_compute(query, cd), *k = in_compute(key, cd), *v = in_compute(value, cd);
    yt_tensor *g = in_compute(grad_output, cd);
    yt_tensor *a =
        attn->dtype == cd && attn->is_contiguous ? yt_retain(attn) : yt__cast_copy(attn, cd);
    yt_tensor *dq = out_buffer(d_query, cd), *dk = out_buffer(d_key, cd);
    yt_tensor *dv = out_buffer(d_value, cd);
    yt_status st = q && k && v && g && a && dq && dk && dv ? YT_OK : yt__last_status();
    yt_tensor *const outs[3] = {dq, dk, dv};
    const bool want[3] = {query_grad, key_grad, value_grad};
    for (int i = 0; st == YT_OK && i < 3; i++) /* the ones not asked for are zeros */
        if (!want[i] && outs[i]->numel > 0)
            memset(yt__data_ptr(outs[i]), 0, (size_t)outs[i]->numel * yt_dtype_size(cd));
    if (st == YT_OK && (query_grad || key_grad || value_grad)) {
        job j = {0};
        geometry(&j, q, k, v, scale);
        j.q = operand_of(q, j.n_lead);
        j.k = operand_of(k, j.n_lead);
        j.v = operand_of(v, j.n_lead);
        j.go = operand_of(g, j.n_lead);
        j.attn_in = yt__data_ptr(a);
        j.dq = query_grad ? yt__data_ptr(dq) : NULL;
        j.dk = key_grad ? yt__data_ptr(dk) : NULL;
        j.dv = value_grad ? yt__data_ptr(dv) : NULL;
        if (j.L == 0 || j.S == 0) { /* no queries or no keys: every gradient is 0 */
            for (int i = 0; i < 3; i++)
                if (want[i] && outs[i]->numel > 0)
                    memset(yt__data_ptr(outs[i]), 0, (size_t)outs[i]->numel * yt_dtype_size(cd));
        } else {
            st = run(&j, backward_chunk, 4.0);
        }
    }
    st = finish(d_query, dq, st);
    st = finish(d_key, dk, st);
    st = finish(d_value, dv, st);
    yt_release(q);
    yt_release(k);
    yt_release(v);
    yt_release(g);
    yt_release(a);
    return st;
}

/* ---------------------------------------------------------------- shapes */

/* Shared checks of the two shape rules: query, key and value have the same leading dims. */
static yt_status
check_lead(const char *op, const yt_tensor *query, const yt_tensor *key, const yt_tensor *value)
{
    int d = query->dim;
    for (int i = 0; i < d - 2; i++)
        if (key->sizes[i] != query->sizes[i] || value->sizes[i] != query->sizes[i]) {
            char a[YT__SIZES_BUF], b[YT__SIZES_BUF], c[YT__SIZES_BUF];
            return yt__fail_status(
                YT_ERR_SHAPE, "%s: query %s, key %s and value %s must have the same leading dims",
                op, yt__format_sizes(a, sizeof a, query->sizes, d),
                yt__format_sizes(b, sizeof b, key->sizes, key->dim),
                yt__format_sizes(c, sizeof c, value->sizes, value->dim));
        }
    return YT_OK;
}

yt_status
yt__shape_attention_output(yt_shape *out, const char *op, yt_tensor *query, yt_tensor *key,
                           yt_tensor *value)
{
    if (check_lead(op, query, key, value) != YT_OK)
        return yt_errcode();
    yt__shape_of(out, query);
    out->sizes[out->dim - 1] = value->sizes[value->dim - 1];
    return YT_OK;
}

yt_status
yt__shape_attention_weights(yt_shape *out, const char *op, yt_tensor *query, yt_tensor *key,
                            yt_tensor *value)
{
    if (check_lead(op, query, key, value) != YT_OK)
        return yt_errcode();
    yt__shape_of(out, query);
    out->sizes[out->dim - 1] = key->sizes[key->dim - 2];
    return YT_OK;
}
