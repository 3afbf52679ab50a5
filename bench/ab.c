/* Two builds of libyaten.so loaded side by side (dlopen, RTLD_LOCAL) and one op timed in both,
 * call for call alternately, best of ROUNDS each. This machine's speed drifts by 20-40 % from one
 * minute (or process) to the next, so two builds timed in separate runs can differ by more than
 * the change being measured; alternating calls in one process puts both under the same drift.
 * Each build gets its own operands, so the working set is twice the op's: cases meant to stay in
 * the last-level cache should stay under a quarter of it.
 *
 * Usage: ab OLD_LIB NEW_LIB CASE ROWS COLS [f32|f64]   (bench/ab.sh builds OLD_LIB from a
 * revision); CASE is one of the names in CASES below. Prints the case, both best times and
 * new / old. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <yaten.h>

#include "clock.h"

enum { ROUNDS = 400 };

/* The entry points the cases use, looked up in one build. */
typedef struct build {
    __typeof__(&yt_randn) randn;
    __typeof__(&yt_to) to;
    __typeof__(&yt_transpose) transpose;
    __typeof__(&yt_release) release;
    __typeof__(&yt_errmsg) errmsg;
    __typeof__(&yt_sum_dim) sum_dim;
    __typeof__(&yt_prod_dim_int) prod_dim_int;
    __typeof__(&yt_amax_ex) amax_ex;
    __typeof__(&yt_cumsum) cumsum;
    __typeof__(&yt_neg_out) neg_out;
    __typeof__(&yt_add_out) add_out;
    __typeof__(&yt_add) add;
    __typeof__(&yt_add_scalar_out) add_scalar_out;
    __typeof__(&yt_narrow) narrow;
    __typeof__(&yt_slice_ex) slice_ex;
    __typeof__(&yt_set_requires_grad) set_requires_grad;
    __typeof__(&yt_softmax) softmax;
    __typeof__(&yt_log_softmax) log_softmax;
    __typeof__(&yt_softmax_backward_data) softmax_backward_data;
    __typeof__(&yt_log_softmax_backward_data) log_softmax_backward_data;
    yt_tensor *x, *y, *out; /* [ROWS, COLS]; out for out= cases */
    yt_tensor *xt;          /* [ROWS, COLS], the transpose of a [COLS, ROWS] tensor */
    yt_tensor *left, *half; /* x[:, :COLS / 2] (a view), and a tensor of its shape for out= */
    yt_tensor *even;        /* x[:, ::2] (a view, of half's shape) */
} build;

typedef const char *(*case_fn)(build *b); /* NULL, or the failing call's message */

static const char *
released(build *b, yt_tensor *t)
{
    if (t == NULL)
        return b->errmsg();
    b->release(t);
    return NULL;
}

static const char *
checked(build *b, yt_status st)
{
    return st == YT_OK ? NULL : b->errmsg();
}

static const char *
sum_rows(build *b)
{
    const int64_t dim = 1;
    return released(b, b->sum_dim(b->x, &dim, 1));
}

static const char *
prod_rows(build *b)
{
    return released(b, b->prod_dim_int(b->x, 1));
}

static const char *
amax_rows(build *b)
{
    const int64_t dim = 1;
    return released(b, b->amax_ex(b->x, &dim, 1, false));
}

static const char *
cumsum_rows(build *b)
{
    return released(b, b->cumsum(b->x, 1));
}

static const char *
to_bf16(build *b)
{
    return released(b, b->to(b->x, YT_DTYPE_BF16));
}

static const char *
to_f16(build *b)
{
    return released(b, b->to(b->x, YT_DTYPE_F16));
}

static const char *
neg_transposed(build *b)
{
    return checked(b, b->neg_out(b->out, b->xt));
}

static const char *
add_transposed(build *b)
{
    return checked(b, b->add_out(b->out, b->xt, b->y));
}

/* the per-call cost on small tensors: 1-element ones with ROWS = COLS = 1 */
static const char *
add(build *b)
{
    return released(b, b->add(b->x, b->y));
}

/* the same with a backward node recorded */
static const char *
add_recorded(build *b)
{
    if (b->set_requires_grad(b->x, true) != YT_OK || b->set_requires_grad(b->y, true) != YT_OK)
        return b->errmsg();
    return released(b, b->add(b->x, b->y));
}

/* rows read in part: COLS = 8 times bench/pointwise's add_scalar_short_rows */
static const char *
add_scalar_left_half(build *b)
{
    return checked(b, b->add_scalar_out(b->half, b->left, yt_float(2.0)));
}

/* every other element of each row, as bench/strided's neg_step2 (COLS = 2000) */
static const char *
neg_every_other(build *b)
{
    return checked(b, b->neg_out(b->half, b->even));
}

static const char *
softmax_rows(build *b)
{
    return released(b, b->softmax(b->x, 1));
}

static const char *
log_softmax_rows(build *b)
{
    return released(b, b->log_softmax(b->x, 1));
}

/* x as the upstream gradient, y as (log_)softmax's output (its values do not change the work) */
static const char *
softmax_bwd_rows(build *b)
{
    return released(b, b->softmax_backward_data(b->x, b->y, 1));
}

static const char *
log_softmax_bwd_rows(build *b)
{
    return released(b, b->log_softmax_backward_data(b->x, b->y, 1));
}

static const struct {
    const char *name;
    case_fn fn;
} CASES[] = {
    {"sum_dim1", sum_rows},
    {"prod_dim1", prod_rows},
    {"amax_dim1", amax_rows},
    {"cumsum_dim1", cumsum_rows},
    {"to_bf16", to_bf16},
    {"to_f16", to_f16},
    {"softmax_dim1", softmax_rows},
    {"log_softmax_dim1", log_softmax_rows},
    {"softmax_bwd_dim1", softmax_bwd_rows},
    {"log_softmax_bwd_dim1", log_softmax_bwd_rows},
    {"neg_transposed", neg_transposed},
    {"add_transposed", add_transposed},
    {"add", add},
    {"add_recorded", add_recorded},
    {"add_scalar_left_half", add_scalar_left_half},
    {"neg_every_other", neg_every_other},
};

static void
fail(const char *what, const char *detail)
{
    fprintf(stderr, "ab: %s: %s\n", what, detail);
    exit(1);
}

/* Looks up b's entry points in `path` and makes its operands. */
static void
load(build *b, const char *path, const int64_t *sizes, yt_dtype dtype)
{
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL)
        fail(path, dlerror());
#define LOOK_UP(field, symbol)                                                                     \
    do {                                                                                           \
        *(void **)&b->field = dlsym(lib, symbol);                                                  \
        if (b->field == NULL)                                                                      \
            fail(path, "no " symbol);                                                              \
    } while (0)
    LOOK_UP(randn, "yt_randn");
    LOOK_UP(to, "yt_to");
    LOOK_UP(transpose, "yt_transpose");
    LOOK_UP(release, "yt_release");
    LOOK_UP(errmsg, "yt_errmsg");
    LOOK_UP(sum_dim, "yt_sum_dim");
    LOOK_UP(prod_dim_int, "yt_prod_dim_int");
    LOOK_UP(amax_ex, "yt_amax_ex");
    LOOK_UP(cumsum, "yt_cumsum");
    LOOK_UP(neg_out, "yt_neg_out");
    LOOK_UP(add_out, "yt_add_out");
    LOOK_UP(add, "yt_add");
    LOOK_UP(add_scalar_out, "yt_add_scalar_out");
    LOOK_UP(narrow, "yt_narrow");
    LOOK_UP(slice_ex, "yt_slice_ex");
    LOOK_UP(set_requires_grad, "yt_set_requires_grad");
    LOOK_UP(softmax, "yt_softmax");
    LOOK_UP(log_softmax, "yt_log_softmax");
    LOOK_UP(softmax_backward_data, "yt_softmax_backward_data");
    LOOK_UP(log_softmax_backward_data, "yt_log_softmax_backward_data");
#undef LOOK_UP
    const int64_t flipped[2] = {sizes[1], sizes[0]};
    yt_tensor *to_transpose = NULL;
    yt_tensor **made[] = {&b->x, &b->y, &b->out, &to_transpose};
    for (size_t k = 0; k < sizeof made / sizeof made[0]; k++) {
        yt_tensor *drawn = b->randn(made[k] == &to_transpose ? flipped : sizes, 2);
        *made[k] = drawn != NULL ? b->to(drawn, dtype) : NULL;
        if (drawn != NULL)
            b->release(drawn);
        if (*made[k] == NULL)
            fail(path, b->errmsg());
    }
    b->xt = b->transpose(to_transpose, 0, 1);
    b->release(to_transpose); /* xt holds its storage */
    b->left = b->narrow(b->x, 1, 0, sizes[1] / 2 > 0 ? sizes[1] / 2 : 1);
    const int64_t half_sizes[2] = {sizes[0], sizes[1] / 2 > 0 ? sizes[1] / 2 : 1};
    yt_tensor *drawn = b->randn(half_sizes, 2);
    b->half = drawn != NULL ? b->to(drawn, dtype) : NULL;
    if (drawn != NULL)
        b->release(drawn);
    b->even = b->slice_ex(b->x, 1, 0, sizes[1], 2);
    if (b->xt == NULL || b->left == NULL || b->half == NULL || b->even == NULL)
        fail(path, b->errmsg());
}

int
main(int argc, char **argv)
{
    if (argc < 6 || argc > 7) {
        fprintf(stderr, "usage: ab OLD_LIB NEW_LIB CASE ROWS COLS [f32|f64]\n");
        return 2;
    }
    size_t c = 0;
    while (c < sizeof CASES / sizeof CASES[0] && strcmp(CASES[c].name, argv[3]) != 0)
        c++;
    if (c == sizeof CASES / sizeof CASES[0])
        fail("unknown case", argv[3]);
    const int64_t sizes[2] = {atoll(argv[4]), atoll(argv[5])};
    if (sizes[0] <= 0 || sizes[1] <= 0)
        fail(argv[3], "needs ROWS, COLS > 0");
    const bool f64 = argc == 7 && strcmp(argv[6], "f64") == 0;
    if (argc == 7 && !f64 && strcmp(argv[6], "f32") != 0)
        fail("unknown dtype", argv[6]);
    build builds[2];
    load(&builds[0], argv[1], sizes, f64 ? YT_DTYPE_F64 : YT_DTYPE_F32);
    load(&builds[1], argv[2], sizes, f64 ? YT_DTYPE_F64 : YT_DTYPE_F32);
    double best[2] = {1e30, 1e30};
    for (int round = 0; round < ROUNDS; round++)
        for (int k = 0; k < 2; k++) {
            double start = bench_now_s();
            const char *error = CASES[c].fn(&builds[k]);
            double took = bench_now_s() - start;
            if (error != NULL)
                fail(argv[k + 1], error);
            best[k] = took < best[k] ? took : best[k];
        }
    printf("%s %s [%s, %s]: old %.3f us, new %.3f us, new / old %.2f\n", argv[3],
           f64 ? "f64" : "f32", argv[4], argv[5], best[0] * 1e6, best[1] * 1e6, best[1] / best[0]);
    return 0;
}
