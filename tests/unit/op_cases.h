/* Per-op test cases emitted by the generator into generated/tests/op_cases.c. */
#ifndef YT_TEST_OP_CASES_H
#define YT_TEST_OP_CASES_H

#include <yaten.h>

/* Most tensor inputs of one case (Tensor[] elements count one each). */
#define YT_CASE_MAX_INPUTS 8

/* One tensor input of a case: values are made by the runner (f64 by default). */
typedef struct yt_case_tensor {
    const char *name;
    int dim;
    int64_t sizes[YT_MAX_DIM];
    yt_dtype dtype;
    bool transpose; /* the transpose of a contiguous tensor of `sizes`: non-contiguous */
    int64_t step;   /* > 1: every step-th element along the last dim of a contiguous tensor step
                       times wider: non-contiguous (0 or 1: contiguous) */
    int64_t high;   /* > 0: integer values drawn from [0, high) (index tensors) */
    bool optional;  /* a Tensor? argument: NULL is None, not an error */
    bool no_grad;   /* never made to require grad: the op is not differentiable with respect to it
                       (derivatives.yaml's `ARG: non_differentiable`, or the sample's `no_grad`) */
} yt_case_tensor;

/* Calls the op on the case's inputs; ctx is the function variant's result for out= calls. */
typedef yt_tensor *(*yt_case_fn)(yt_tensor *const *inputs, void *ctx);

/* Most int, int[], float and Scalar arguments of one case that its args call takes from a
 * yt_case_args (the others stay the sample's), and most elements of one int[] argument. */
#define YT_CASE_MAX_ARGS 8
#define YT_CASE_MAX_LIST 6

typedef enum yt_case_arg_kind {
    YT_CASE_INT,     /* int64_t (YT_NONE where the schema's int is optional) */
    YT_CASE_INTLIST, /* const int64_t *, int64_t length */
    YT_CASE_FLOAT,   /* double, or const double * when optional */
    YT_CASE_SCALAR,  /* yt_scalar, or const yt_scalar * when optional */
} yt_case_arg_kind;

/* One argument's value: the sample's in the case table, changed by tests/unit/test_ops.c's sweep
 * of bad arguments. */
typedef struct yt_case_arg {
    const char *name;
    yt_case_arg_kind kind;
    int64_t i;                      /* INT; SCALAR when is_int */
    int64_t list[YT_CASE_MAX_LIST]; /* INTLIST: its first len elements */
    int len;                        /* INTLIST */
    double f;                       /* FLOAT; SCALAR unless is_int */
    bool is_int;                    /* SCALAR: yt_int(i), not yt_float(f) */
} yt_case_arg;

typedef struct yt_case_args {
    int n;
    yt_case_arg arg[YT_CASE_MAX_ARGS];
} yt_case_args;

/* The function variant with the case's tensors and `args` in place of its sample's values. */
typedef yt_tensor *(*yt_case_args_fn)(yt_tensor *const *inputs, const yt_case_args *args);

static inline yt_scalar
yt_case_scalar(const yt_case_arg *a)
{
    return a->is_int ? yt_int(a->i) : yt_float(a->f);
}

typedef struct yt_op_case {
    const char *op;    /* "mm" */
    const char *where; /* "ops.yaml:412 sample 1" */
    int n_inputs;
    yt_case_tensor inputs[YT_CASE_MAX_INPUTS];
    yt_case_fn call;           /* the function variant, all arguments */
    yt_case_fn call_inplace;   /* on a clone of input 0; NULL when the op has none */
    yt_case_fn call_out;       /* into zeros like ctx; NULL when the op has none */
    bool differentiable;       /* gradcheck and gradgradcheck it */
    const char *domain;        /* NULL, "positive" or "nonzero": where inputs are drawn from */
    yt_case_args_fn call_args; /* NULL when the sample gives none of those arguments */
    yt_case_args args;         /* the sample's values of them */
} yt_op_case;

typedef struct yt_error_case {
    const char *op;
    const char *what; /* "ops.yaml:41: self.dim == 2" */
    int n_inputs;
    yt_case_tensor inputs[YT_CASE_MAX_INPUTS];
    yt_case_fn call;
    yt_status expect;          /* 0: any error code */
    const char *expect_prefix; /* the message starts with it: "mm: " */
    bool requires_grad; /* the no_grad inputs are made to require grad (grad mode on): the op must
                           refuse them, and accept them with grad mode off */
    const char *domain; /* NULL, or where the inputs are drawn from (as yt_op_case's) */
} yt_error_case;

extern const yt_op_case yt_op_cases[];
extern const int yt_op_case_count;
extern const yt_error_case yt_error_cases[];
extern const int yt_error_case_count;

#endif
