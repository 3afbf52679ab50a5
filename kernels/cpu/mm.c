/* mm, bmm, addmm and baddbmm on the CPU: each is one call of the internal GEMM (gemm.h) on the
 * tensors' own strides, so transposed, sliced and expanded views are read in place. Integer
 * dtypes go to mm_integer.c.
 *
 * f16 and bf16 are multiplied in f32: the operands are converted to f32 copies, the product is
 * accumulated in f32, and the result rounded once to the storage dtype (PyTorch's CPU reduced-
 * precision GEMM also accumulates in f32). */
#include <string.h>

#include "kernels.h"
#include "gemm.h"
#include "mm_integer.h"
#include "pointwise_math.h"

/* The dtype the GEMM runs in for a result of dtype `d`. */
static yt_dtype
compute_dtype(yt_dtype d)
{
    return d == YT_DTYPE_F64 ? YT_DTYPE_F64 : YT_DTYPE_F32;
}

/* `t` itself (retained) when it already has `dtype`, else an f32 / f64 contiguous copy. */
static yt_tensor *
operand(yt_tensor *t, yt_dtype dtype)
{
    return t->dtype == dtype ? yt_retain(t) : yt__cast_copy(t, dtype);
}

/* Strides of the last two dims, and the batch stride (0 for 2-D tensors). */
static void
matrix_strides(const yt_tensor *t, int64_t *bs, int64_t *rs, int64_t *cs)
{
    int d = t->dim;
    *bs = d == 3 ? t->strides[0] : 0;
    *rs = t->strides[d - 2];
    *cs = t->strides[d - 1];
}

/* The data of `bias` when it is one row of n contiguous values of `dtype` broadcast to a 2-D
 * [m, n] result (a [n] vector, or [1, n] / [m, n] with row stride 0): the GEMM adds it itself.
 * NULL otherwise. */
static const void *
bias_row(const yt_tensor *bias, int d, int64_t n, yt_dtype dtype)
{
    if (bias == NULL || d != 2 || bias->dtype != dtype || bias->dim < 1 || bias->dim > 2)
        return NULL;
    if (bias->sizes[bias->dim - 1] != n || (n > 1 && bias->strides[bias->dim - 1] != 1))
        return NULL;
    if (bias->dim == 2 && bias->sizes[0] != 1 && bias->strides[0] != 0)
        return NULL;
    return yt__data_ptr((yt_tensor *)bias);
}

/* result = beta * bias + alpha * a @ b for 2-D or 3-D (batched) a and b, where bias (may be
 * NULL: beta is then 0) broadcasts to result's shape. beta == 0 never reads bias. */
static yt_status
product(yt_tensor *result, yt_tensor *bias, yt_tensor *a, yt_tensor *b, double beta, double alpha)
{
    int d = result->dim;
    int64_t batch = d == 3 ? result->sizes[0] : 1;
    int64_t m = result->sizes[d - 2], n = result->sizes[d - 1], k = a->sizes[d - 1];
    if (batch == 0 || m == 0 || n == 0)
        return YT_OK;
    if (bias == NULL)
        beta = 0;
    yt_dtype dtype = compute_dtype(result->dtype);
    yt_tensor *ca = operand(a, dtype);
    yt_tensor *cb = ca == NULL ? NULL : operand(b, dtype);
    if (cb == NULL) {
        yt_release(ca);
        return yt__last_status();
    }
    /* An out= tensor may share storage with an input: the GEMM must not write what it reads. */
    bool aliased = result->storage == ca->storage || result->storage == cb->storage;
    yt_tensor *c = result->dtype != dtype || aliased ? yt__empty_like(result, dtype) : result;
    yt_status status = c == NULL ? yt__last_status() : YT_OK;
    const void *row = beta == 1 ? bias_row(bias, d, n, dtype) : NULL;
    if (status == YT_OK && row != NULL) {
        /* addmm's bias vector: added by the GEMM as it stores C */
        int64_t bsa, rsa, csa, bsb, rsb, csb, bsc, rsc, csc;
        matrix_strides(ca, &bsa, &rsa, &csa);
        matrix_strides(cb, &bsb, &rsb, &csb);
        matrix_strides(c, &bsc, &rsc, &csc);
        if (dtype == YT_DTYPE_F64)
            status =
                yt__gemm_bias_f64(false, false, m, n, k, alpha, (const double *)yt__data_ptr(ca),
                                  rsa, csa, (const double *)yt__data_ptr(cb), rsb, csb, row,
                                  (double *)yt__data_ptr(c), rsc, csc);
        else
            status = yt__gemm_bias_f32(
                false, false, m, n, k, (float)alpha, (const float *)yt__data_ptr(ca), rsa, csa,
                (const float *)yt__data_ptr(cb), rsb, csb, row, (float *)yt__data_ptr(c), rsc, csc);
    } else if (status == YT_OK && beta != 0) {
        status = yt__copy_into(c, bias); /* broadcast and convert bias into C, then scale */
    }
    if (status == YT_OK && row == NULL) {
        int64_t bsa, rsa, csa, bsb, rsb, csb, bsc, rsc, csc;
        matrix_strides(ca, &bsa, &rsa, &csa);
        matrix_strides(cb, &bsb, &rsb, &csb);
        matrix_strides(c, &bsc, &rsc, &csc);
        if (dtype == YT_DTYPE_F64)
            status = yt__gemm_batched_f64(false, false, batch, m, n, k, alpha,
                                          (const double *)yt__data_ptr(ca), bsa, rsa, csa,
                                          (const double *)yt__data_ptr(cb), bsb, rsb, csb, beta,
                                          (double *)yt__data_ptr(c), bsc, rsc, csc);
        else
            status = yt__gemm_batched_f32(false, false, batch, m, n, k, (float)alpha,
                                          (const float *)yt__data_ptr(ca), bsa, rsa, csa,
                                          (const float *)yt__data_ptr(cb), bsb, rsb, csb,
                                          (float)beta, (float *)yt__data_ptr(c), bsc, rsc, csc);
    }
    if (status == YT_OK && c != result)
        status = yt__copy_into(result, c);
    if (c != result)
        yt_release(c);
    yt_release(cb);
    yt_release(ca);
    return status;
}

/* result = beta * bias + alpha * a @ b in result's dtype: BLIS or our GEMM for floating dtypes,
 * mm_integer.c for the others, where beta and alpha must fit the dtype and a float one is
 * truncated (PyTorch's Scalar::to<int>). */
static yt_status
product_of(const char *op, yt_tensor *result, yt_tensor *bias, yt_tensor *a, yt_tensor *b,
           yt_scalar beta, yt_scalar alpha)
{
    if (yt_dtype_is_floating(result->dtype))
        return product(result, bias, a, b, yt__scalar_to_double(beta), yt__scalar_to_double(alpha));
    if (yt__pw_check_scalar(op, "beta", beta, result->dtype) != YT_OK ||
        yt__pw_check_scalar(op, "alpha", alpha, result->dtype) != YT_OK)
        return yt_errcode();
    return yt__mm_integer(result, bias, a, b, yt__scalar_to_i64(beta), yt__scalar_to_i64(alpha));
}

yt_status
yt__cpu_mm(yt_tensor *result, yt_tensor *self, yt_tensor *mat2)
{
    return product_of("mm", result, NULL, self, mat2, yt_int(0), yt_int(1));
}

yt_status
yt__cpu_bmm(yt_tensor *result, yt_tensor *self, yt_tensor *mat2)
{
    return product_of("bmm", result, NULL, self, mat2, yt_int(0), yt_int(1));
}

yt_status
yt__cpu_addmm(yt_tensor *result, yt_tensor *self, yt_tensor *mat1, yt_tensor *mat2, yt_scalar beta,
              yt_scalar alpha)
{
    return product_of("addmm", result, self, mat1, mat2, beta, alpha);
}

yt_status
yt__cpu_baddbmm(yt_tensor *result, yt_tensor *self, yt_tensor *batch1, yt_tensor *batch2,
                yt_scalar beta, yt_scalar alpha)
{
    return product_of("baddbmm", result, self, batch1, batch2, beta, alpha);
}
