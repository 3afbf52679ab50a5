/* mm on the CPU: one BLIS gemm call with the tensors' own row and column strides, so transposed
 * views need no copy. f16 and bf16 are multiplied in f32. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* blis.h uses pthread barriers */
#endif

#include <omp.h>
#include <string.h>

#include "kernels.h"
#include "blis_setup.h"

/* blis.h defines hundreds of unused static inline helpers. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wtype-limits"
#include <blis.h>
#pragma GCC diagnostic pop

/* Below this many multiply-adds one thread is faster than waking the pool (measured on 2 cores:
 * 128^3 gains from a second thread, 64^3 loses). */
#define MM_PARALLEL_FLOPS (64.0 * 64.0 * 64.0 * 8.0)

/* Strides of a rows x cols matrix in the form BLIS accepts, or false when it would refuse them
 * (a zero stride from expand, or overlapping general strides): BLIS aborts on those, so the
 * caller copies the matrix instead. The stride of a size-1 dimension is never used and is made
 * consistent with the other one. */
static bool
blis_strides(const yt_tensor *t, int64_t *rs_out, int64_t *cs_out)
{
    int64_t rows = t->sizes[0], cols = t->sizes[1];
    int64_t rs = t->strides[0], cs = t->strides[1];
    if (rows == 1 && cols == 1) {
        rs = 1;
        cs = 1;
    } else if (rows == 1) {
        if (!yt__mul_ok(&rs, cols, cs))
            return false;
    } else if (cols == 1) {
        if (!yt__mul_ok(&cs, rows, rs))
            return false;
    }
    if (rs <= 0 || cs <= 0)
        return false;
    bool ok;
    if (rs == 1 && cs == 1)
        ok = rows == 1 || cols == 1;
    else if (rs == 1)
        ok = cs >= rows; /* column-major */
    else if (cs == 1)
        ok = rs >= cols; /* row-major */
    else if (rs < cs)
        ok = cs / rs >= rows; /* general, column tilt: cs >= rows * rs */
    else if (cs < rs)
        ok = rs / cs >= cols; /* general, row tilt: rs >= cols * cs */
    else
        ok = rows == 1 || cols == 1;
    *rs_out = rs;
    *cs_out = cs;
    return ok;
}

/* An operand BLIS can read: `t` itself (retained) when its strides suit BLIS and its dtype is
 * `dtype`, else a contiguous copy converted to `dtype`. */
static yt_tensor *
gemm_operand(yt_tensor *t, yt_dtype dtype, int64_t *rs, int64_t *cs)
{
    if (t->dtype == dtype && blis_strides(t, rs, cs))
        return yt_retain(t);
    yt_tensor *copy = yt__cast_copy(t, dtype);
    if (copy != NULL && !blis_strides(copy, rs, cs)) {
        yt_release(copy); /* cannot happen: a contiguous matrix always suits BLIS */
        return yt__fail(YT_ERR_INTERNAL, "mm: BLIS refuses the strides of a contiguous copy");
    }
    return copy;
}

/* c = a @ b with BLIS, where c is a contiguous f32 or f64 matrix of a's and b's dtype. */
static void
gemm(yt_tensor *c, yt_tensor *a, int64_t rsa, int64_t csa, yt_tensor *b, int64_t rsb, int64_t csb)
{
    int64_t m = a->sizes[0], k = a->sizes[1], n = b->sizes[1];
    int64_t rsc = 0, csc = 0;
    blis_strides(c, &rsc, &csc);

    rntm_t rntm = BLIS_RNTM_INITIALIZER;
    double flops = (double)m * (double)n * (double)k;
    bli_rntm_set_num_threads(flops >= MM_PARALLEL_FLOPS ? omp_get_max_threads() : 1, &rntm);

    if (c->dtype == YT_DTYPE_F64) {
        double one = 1.0, zero = 0.0;
        bli_dgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, m, n, k, &one, (double *)yt__data_ptr(a),
                     rsa, csa, (double *)yt__data_ptr(b), rsb, csb, &zero,
                     (double *)yt__data_ptr(c), rsc, csc, NULL, &rntm);
    } else {
        float one = 1.0f, zero = 0.0f;
        bli_sgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, m, n, k, &one, (float *)yt__data_ptr(a),
                     rsa, csa, (float *)yt__data_ptr(b), rsb, csb, &zero, (float *)yt__data_ptr(c),
                     rsc, csc, NULL, &rntm);
    }
}

yt_status
yt__cpu_mm(yt_tensor *result, yt_tensor *self, yt_tensor *mat2)
{
    int64_t m = self->sizes[0], k = self->sizes[1], n = mat2->sizes[1];
    if (m == 0 || n == 0)
        return YT_OK;
    if (k == 0) {
        memset(yt__data_ptr(result), 0, (size_t)result->numel * yt_dtype_size(result->dtype));
        return YT_OK;
    }
    yt__blis_setup();

    /* BLIS multiplies f32 and f64; f16 and bf16 go through f32. */
    yt_dtype dtype = result->dtype == YT_DTYPE_F64 ? YT_DTYPE_F64 : YT_DTYPE_F32;
    int64_t rsa = 0, csa = 0, rsb = 0, csb = 0;
    yt_tensor *a = gemm_operand(self, dtype, &rsa, &csa);
    yt_tensor *b = a == NULL ? NULL : gemm_operand(mat2, dtype, &rsb, &csb);
    if (b == NULL) {
        yt_release(a);
        return yt__last_status();
    }
    /* An out= tensor may share storage with an input: BLIS must not write what it reads. */
    bool aliased = result->storage == a->storage || result->storage == b->storage;
    yt_tensor *c = result;
    if (result->dtype != dtype || aliased)
        c = yt__empty_like(result, dtype);
    yt_status status = c == NULL ? yt__last_status() : YT_OK;
    if (status == YT_OK) {
        gemm(c, a, rsa, csa, b, rsb, csb);
        if (c != result)
            status = yt__copy_into(result, c);
    }
    if (c != result)
        yt_release(c);
    yt_release(b);
    yt_release(a);
    return status;
}
