/* Elementwise throughput of yaten's pointwise ops with out= (the result buffer is reused), f32,
 * one thread. Prints "yaten CASE N GB/s" lines; bench/pointwise_torch.py prints the same for
 * PyTorch and bench/pointwise.sh runs both interleaved and tabulates them.
 *
 * GB/s counts every operand once per output element (out + inputs, broadcast inputs as if
 * materialised), the STREAM convention of /work/shared/reference-bench/torch_bw.py, applied
 * identically on both sides so the ratio is what matters.
 *
 * Most cases are [N / 1000, 1000] (add_step2 reads every other column of [N / 1000, 2000]);
 * the *_short_rows ones are [N / 4, 4] (the same elements), from a narrowed [N / 4, 8] input (4
 * of every 8 elements) or with a [N / 4, 1] column, where a traversal that pays per row shows.
 * logical_not and where read bools, and the to_* casts allocate their result (no out=, on either
 * side; the allocator hands the same block back). Every operand counts 4 bytes, as on the torch
 * side, so for bool and half types GB/s is nominal and only the ratio means something.
 *
 * Usage: pointwise [CASE...]   (default: every case) */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <yaten.h>

#include "clock.h"

enum { COLS = 1000 };

typedef struct bench_case {
    const char *name;
    int n_in; /* operands read per output element */
} bench_case;

static const bench_case CASES[] = {
    {"add", 2},
    {"mul", 2},
    {"div", 2},
    {"add_scalar", 1},
    {"neg", 1},
    {"exp", 1},
    {"sigmoid", 1},
    {"tanh", 1},
    {"relu", 1},
    {"sqrt", 1},
    {"gelu", 1},
    {"add_bcast_row", 2},
    {"add_bcast_col", 2},
    {"add_transposed", 2},
    {"exp_transposed", 1},
    {"add_step2", 2},
    {"add_scalar_short_rows", 1},
    {"add_bcast_col_short_rows", 2},
    {"pow2", 1},
    {"clamp", 1},
    {"remainder", 2},
    {"floor_divide", 2},
    {"logical_not", 1},
    {"where", 3},
    {"to_f16", 1},
    {"to_bf16", 1},
    {"to_i32", 1},
};
static const int64_t SIZES[] = {1 << 16, 1 << 20, 10000000};

enum { SHORT = 4 }; /* row length of the *_short_rows cases */

typedef struct operands {
    yt_tensor *out, *a, *b, *row, *col, *at; /* [N / 1000, 1000] and its row, column, a.t() */
    yt_tensor *mask, *out_bool;              /* a > 0, and a bool result */
    yt_tensor *out4, *a4, *col4, *narrowed4; /* [N / 4, 4], its column, 4 of [N / 4, 8] */
    yt_tensor *stepped;                      /* every other column of [N / 1000, 2000] */
    yt_tensor *owned[3];                     /* bases of views, released with the rest */
} operands;

/* One call of the case. */
static yt_status
run(const char *c, const operands *o)
{
    if (!strcmp(c, "add"))
        return yt_add_out(o->out, o->a, o->b);
    if (!strcmp(c, "mul"))
        return yt_mul_out(o->out, o->a, o->b);
    if (!strcmp(c, "div"))
        return yt_div_out(o->out, o->a, o->b);
    if (!strcmp(c, "add_scalar"))
        return yt_add_scalar_out(o->out, o->a, yt_float(2.0));
    if (!strcmp(c, "neg"))
        return yt_neg_out(o->out, o->a);
    if (!strcmp(c, "exp"))
        return yt_exp_out(o->out, o->a);
    if (!strcmp(c, "sigmoid"))
        return yt_sigmoid_out(o->out, o->a);
    if (!strcmp(c, "tanh"))
        return yt_tanh_out(o->out, o->a);
    if (!strcmp(c, "relu"))
        return yt_relu_out(o->out, o->a);
    if (!strcmp(c, "sqrt"))
        return yt_sqrt_out(o->out, o->b);
    if (!strcmp(c, "gelu"))
        return yt_gelu_out(o->out, o->a);
    if (!strcmp(c, "add_bcast_row"))
        return yt_add_out(o->out, o->a, o->row);
    if (!strcmp(c, "add_bcast_col"))
        return yt_add_out(o->out, o->a, o->col);
    if (!strcmp(c, "add_transposed"))
        return yt_add_out(o->out, o->at, o->b);
    if (!strcmp(c, "exp_transposed"))
        return yt_exp_out(o->out, o->at);
    if (!strcmp(c, "add_step2"))
        return yt_add_out(o->out, o->stepped, o->b);
    if (!strcmp(c, "add_scalar_short_rows"))
        return yt_add_scalar_out(o->out4, o->narrowed4, yt_float(2.0));
    if (!strcmp(c, "add_bcast_col_short_rows"))
        return yt_add_out(o->out4, o->a4, o->col4);
    if (!strcmp(c, "pow2"))
        return yt_pow_out(o->out, o->a, yt_float(2.0));
    if (!strcmp(c, "clamp")) {
        const yt_scalar lo = yt_float(-0.25), hi = yt_float(0.25);
        return yt_clamp_ex_out(o->out, o->a, &lo, &hi);
    }
    if (!strcmp(c, "remainder"))
        return yt_remainder_out(o->out, o->a, o->b);
    if (!strcmp(c, "floor_divide"))
        return yt_floor_divide_out(o->out, o->a, o->b);
    if (!strcmp(c, "logical_not"))
        return yt_logical_not_out(o->out_bool, o->mask);
    if (!strcmp(c, "where"))
        return yt_where_out(o->out, o->mask, o->a, o->b);
    const yt_dtype to = !strcmp(c, "to_f16")    ? YT_DTYPE_F16
                        : !strcmp(c, "to_bf16") ? YT_DTYPE_BF16
                        : !strcmp(c, "to_i32")  ? YT_DTYPE_I32
                                                : YT_DTYPE_NONE;
    if (to != YT_DTYPE_NONE) {
        yt_tensor *r = yt_to(o->a, to);
        yt_release(r);
        return r != NULL ? YT_OK : yt_errcode();
    }
    return YT_ERR_VALUE;
}

static void
bench(const bench_case *c, int64_t n)
{
    int64_t rows = n / COLS, rows4 = rows * COLS / SHORT; /* same elements as the others */
    int64_t shape[2] = {rows, COLS}, tshape[2] = {COLS, rows}, rshape[1] = {COLS},
            cshape[2] = {rows, 1}, shape4[2] = {rows4, SHORT}, wide4[2] = {rows4, 2 * SHORT},
            cshape4[2] = {rows4, 1}, wide[2] = {rows, 2 * COLS};
    operands o = {0};
    yt_tensor *u = yt_rand(shape, 2);
    o.a = yt_sub_scalar(u, yt_float(0.5));
    yt_release(u);
    o.b = yt_rand(shape, 2);
    o.row = yt_rand(rshape, 1);
    o.col = yt_rand(cshape, 2);
    o.owned[0] = yt_rand(tshape, 2);
    o.at = yt_transpose(o.owned[0], 0, 1);
    o.out = yt_zeros(shape, 2);
    o.out4 = yt_zeros(shape4, 2);
    o.a4 = yt_rand(shape4, 2);
    o.col4 = yt_rand(cshape4, 2);
    o.owned[1] = yt_rand(wide4, 2);
    o.narrowed4 = yt_narrow(o.owned[1], 1, 0, SHORT);
    o.owned[2] = yt_rand(wide, 2);
    o.stepped = yt_slice_ex(o.owned[2], 1, 0, 2 * COLS, 2);
    o.mask = yt_gt_scalar(o.a, yt_float(0.0));
    o.out_bool = yt_zeros_like(o.mask);
    if (o.out == NULL || o.at == NULL || o.a == NULL || o.narrowed4 == NULL || o.stepped == NULL) {
        fprintf(stderr, "pointwise bench: %s\n", yt_errmsg());
        exit(1);
    }
    if (run(c->name, &o) != YT_OK) {
        fprintf(stderr, "pointwise bench %s: %s\n", c->name, yt_errmsg());
        exit(1);
    }
    /* Batches of >= 20 ms within a 0.4 s budget; the best batch's time per call. */
    double best = 1e30, start = bench_now_s();
    int per_batch = 1;
    while (bench_now_s() - start < 0.4) {
        double t0 = bench_now_s();
        for (int i = 0; i < per_batch; i++)
            run(c->name, &o);
        double dt = bench_now_s() - t0;
        if (dt < 0.02) {
            per_batch *= 2;
            continue;
        }
        if (dt / per_batch < best)
            best = dt / per_batch;
    }
    int64_t numel = rows * COLS;
    double bytes = 4.0 * (double)numel * (c->n_in + 1);
    printf("yaten %s %lld %.2f\n", c->name, (long long)numel, bytes / best / 1e9);
    fflush(stdout);
    yt_tensor *all[] = {o.out,      o.a,        o.b,    o.row,       o.col,     o.at,
                        o.out4,     o.a4,       o.col4, o.narrowed4, o.stepped, o.owned[0],
                        o.owned[1], o.owned[2], o.mask, o.out_bool};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        yt_release(all[i]);
}

int
main(int argc, char **argv)
{
    for (size_t k = 0; k < sizeof CASES / sizeof CASES[0]; k++) {
        bool wanted = argc == 1;
        for (int i = 1; i < argc; i++)
            wanted |= !strcmp(argv[i], CASES[k].name);
        if (!wanted)
            continue;
        for (size_t s = 0; s < sizeof SIZES / sizeof SIZES[0]; s++)
            bench(&CASES[k], SIZES[s]);
    }
    return 0;
}
