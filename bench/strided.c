/* yaten's strided and broadcast pointwise cases against its own contiguous case, timed
 * interleaved in one process (contiguous, strided, contiguous, ...), best of ROUNDS rounds, one
 * thread. Issue 3's target is a ratio of the two (>= 0.5x of contiguous), and on this machine
 * both vary by up to 25% from one process to the next, so a ratio taken across processes
 * (bench/pointwise.sh's "vs contig") is noisier than this one.
 *
 * Cases, out= [rows, 1000] at 65K, 1M and 10M elements, f32 unless named:
 *   add_transposed      a.t() + b  against a + b
 *   add_transposed_f64  the same in f64
 *   exp_transposed      exp(a.t()) against exp(a)
 *   add_bcast_row       a + row    against a + 1 (the same bytes without the shared row)
 *   add_transposed_pow2, add_transposed_pow2_f64
 *                       a.t() + b on square [n, n], n = 256, 1024, 2048: columns a power of two
 *                       of bytes apart, which share cache sets (runtime/pointwise.c)
 *   neg_transposed_pow2 -a.t() against -a on the same squares: the transposed input and the
 *                       output alone
 *   add_step2, add_step2_f64, neg_step2, exp_step3, neg_step3
 *                       a[:, ::2] + b (of a [rows, 2000] a), -a[:, ::2], exp(a[:, ::3]),
 *                       -a[:, ::3]: an input read every 2nd or 3rd element
 *   neg_into_step2      out[:, ::2] = -a (yt_neg_out into every 2nd column of [rows, 2000])
 *   mul_step2_inplace   a[:, ::2] *= 1 against a *= 1
 *
 * The stepped cases are also timed as a hand-written loop specialised to each (bare_moves.h):
 * "bare_us", and "bound", contiguous time over it, the ratio a loop that only moves the case's
 * bytes reaches on this machine (a stepped output is stored masked to its lanes with AVX-512, an
 * element at a time with AVX2 only; a stepped input reads 2 or 3 times the lines). "-" for the
 * others.
 *
 * Usage: bench/strided.sh BUILD_DIR [CASE...] (default: every case), which rebuilds this first;
 * prints a table of case, size, both times, ratio, and the bare loop's time and ratio. */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <yaten.h>

#include "bare_moves.h"
#include "clock.h"

enum { COLS = 1000, ROUNDS = 40 };

static const char *const CASES[] = {
    "add_transposed",      "add_transposed_f64",  "exp_transposed",
    "add_bcast_row",       "add_transposed_pow2", "add_transposed_pow2_f64",
    "neg_transposed_pow2", "add_step2",           "add_step2_f64",
    "neg_step2",           "exp_step3",           "neg_step3",
    "neg_into_step2",      "mul_step2_inplace"};
static const int64_t SIZES[] = {1 << 16, 1 << 20, 10000000};

typedef struct operands {
    yt_tensor *out, *a, *b, *at, *row, *stepped;
    int step;     /* the stepped cases' step (1 for the others) */
    double scale; /* mul_step2_inplace's factor: 1 when timed, so values stay put; 3 when checked */
} operands;

/* `t` converted to `dtype` (t itself when it has it); takes t's reference. */
static yt_tensor *
in_dtype(yt_tensor *t, yt_dtype dtype)
{
    if (t == NULL || yt_tensor_dtype(t) == dtype)
        return t;
    yt_tensor *converted = yt_to(t, dtype);
    yt_release(t);
    return converted;
}

/* One call of the case's hand-written loop (bare_moves.h), with plain or streaming stores to a
 * contiguous output; false for a case that has none (the transposed ones, whose least work is
 * not one obvious loop, and exp, whose time is its arithmetic). */
static bool
run_bare(const char *c, bool stream, const operands *o)
{
    const int64_t rows = yt_tensor_size(o->out, 0), cols = yt_tensor_size(o->out, 1);
    const int64_t wide = yt_tensor_stride(o->stepped, 0);
    void *out = yt_tensor_data(o->out), *b = yt_tensor_data(o->b);
    void *stepped = yt_tensor_data(o->stepped), *a = yt_tensor_data(o->a);
    if (!strcmp(c, "add_step2_f64"))
        bare_step2_add_f64(out, stepped, b, rows, cols, wide, stream);
    else if (!strcmp(c, "add_step2"))
        bare_stepped_in_f32(out, stepped, b, rows, cols, wide, 2, stream);
    else if (!strcmp(c, "neg_step2") || !strcmp(c, "neg_step3"))
        bare_stepped_in_f32(out, stepped, NULL, rows, cols, wide, o->step, stream);
    else if (!strcmp(c, "neg_into_step2") && !stream)
        bare_step2_out_f32(stepped, a, 1.0f, rows, cols, wide);
    else if (!strcmp(c, "mul_step2_inplace") && !stream)
        bare_step2_out_f32(stepped, NULL, (float)o->scale, rows, cols, wide);
    else
        return false;
    return true;
}

/* One call: the contiguous form of the case, or its strided one. */
static yt_status
run(const char *c, bool strided, const operands *o)
{
    if (!strncmp(c, "add_transposed", strlen("add_transposed")))
        return yt_add_out(o->out, strided ? o->at : o->a, o->b);
    if (!strcmp(c, "exp_transposed"))
        return yt_exp_out(o->out, strided ? o->at : o->a);
    if (!strcmp(c, "neg_transposed_pow2"))
        return yt_neg_out(o->out, strided ? o->at : o->a);
    if (!strncmp(c, "add_step", strlen("add_step")))
        return yt_add_out(o->out, strided ? o->stepped : o->a, o->b);
    if (!strcmp(c, "neg_step2") || !strcmp(c, "neg_step3"))
        return yt_neg_out(o->out, strided ? o->stepped : o->a);
    if (!strcmp(c, "exp_step3"))
        return yt_exp_out(o->out, strided ? o->stepped : o->a);
    if (!strcmp(c, "neg_into_step2"))
        return yt_neg_out(strided ? o->stepped : o->out, o->a);
    if (!strcmp(c, "mul_step2_inplace"))
        return yt_mul_scalar_(strided ? o->stepped : o->a, yt_float(o->scale));
    if (strided)
        return yt_add_out(o->out, o->a, o->row);
    return yt_add_scalar_out(o->out, o->a, yt_float(1.0));
}

/* Whether the case's bare loop, where it has one, writes what yaten's strided call writes (into
 * out, or into `every`, the tensor a stepped output is a view of), with plain and with streaming
 * stores, so that its time is for the same work. Each run starts from the same operands: what it
 * writes poisoned first, except for an in-place case, whose input it is; that one is scaled by 3,
 * so that in each case an element the loop skipped would differ. */
static bool
bare_agrees(const char *c, operands *o, yt_tensor *every)
{
    const bool in_place = strstr(c, "_inplace") != NULL;
    yt_tensor *written = in_place || strstr(c, "_into_") ? every : o->out;
    const size_t bytes = (size_t)yt_tensor_numel(written) * yt_dtype_size(yt_tensor_dtype(written));
    void *before = malloc(bytes), *want = malloc(bytes);
    if (before == NULL || want == NULL)
        exit(1);
    if (!in_place)
        memset(yt_tensor_data(written), 0xff, bytes);
    memcpy(before, yt_tensor_data(written), bytes);
    o->scale = 3.0;
    if (run(c, true, o) != YT_OK)
        exit(1);
    memcpy(want, yt_tensor_data(written), bytes);
    bool same = true;
    for (int stream = 0; stream < 2 && same; stream++) {
        memcpy(yt_tensor_data(written), before, bytes);
        same = !run_bare(c, stream, o) || !memcmp(want, yt_tensor_data(written), bytes);
    }
    o->scale = 1.0;
    free(before);
    free(want);
    return same;
}

static void
bench(const char *c, int64_t n)
{
    int64_t cols = COLS, rows = n / COLS;
    if (strstr(c, "_pow2")) { /* square: the largest power of two whose square is at most n */
        cols = 1;
        while (4 * cols * cols <= n)
            cols *= 2;
        rows = cols;
    }
    /* _stepN: every Nth column of [rows, N * cols] */
    const char *step_at = strstr(c, "_step");
    int64_t step = step_at != NULL ? step_at[strlen("_step")] - '0' : 1;
    int64_t shape[2] = {rows, cols}, tshape[2] = {cols, rows}, rshape[1] = {cols};
    int64_t wide[2] = {rows, step * cols};
    yt_dtype dtype = strstr(c, "_f64") ? YT_DTYPE_F64 : YT_DTYPE_F32;
    yt_tensor *ta = in_dtype(yt_rand(tshape, 2), dtype);
    yt_tensor *every = in_dtype(yt_rand(wide, 2), dtype);
    operands o = {in_dtype(yt_zeros(shape, 2), dtype),
                  in_dtype(yt_rand(shape, 2), dtype),
                  in_dtype(yt_rand(shape, 2), dtype),
                  yt_transpose(ta, 0, 1),
                  in_dtype(yt_rand(rshape, 1), dtype),
                  yt_slice_ex(every, 1, 0, step * cols, step),
                  (int)step,
                  1.0};
    if (o.out == NULL || o.a == NULL || o.b == NULL || o.at == NULL || o.row == NULL ||
        o.stepped == NULL || run(c, false, &o) != YT_OK || run(c, true, &o) != YT_OK) {
        fprintf(stderr, "strided bench %s: %s\n", c, yt_errmsg());
        exit(1);
    }
    if (!bare_agrees(c, &o, every)) {
        fprintf(stderr, "strided bench %s: the bare loop's result differs from yaten's\n", c);
        exit(1);
    }
    int calls = rows * cols < 1000000 ? 400 : 5;
    /* contiguous, strided, then the hand-written loop with plain and with streaming stores */
    double best[4] = {1e30, 1e30, 1e30, 1e30};
    for (int r = 0; r < ROUNDS; r++)
        for (int form = 0; form < 4; form++) {
            if (form >= 2 && !run_bare(c, form == 3, &o))
                continue;
            double t0 = bench_now_s();
            for (int i = 0; i < calls; i++)
                if (form < 2)
                    run(c, form == 1, &o);
                else
                    run_bare(c, form == 3, &o);
            double dt = (bench_now_s() - t0) / calls;
            if (dt < best[form])
                best[form] = dt;
        }
    printf("%-24s %10lld %11.2f %11.2f %7.3f", c, (long long)(rows * cols), best[0] * 1e6,
           best[1] * 1e6, best[0] / best[1]);
    const double bare = best[2] < best[3] ? best[2] : best[3];
    if (bare < 1e30)
        printf(" %9.2f %7.3f\n", bare * 1e6, best[0] / bare);
    else
        printf(" %9s %7s\n", "-", "-");
    fflush(stdout);
    yt_release(ta);
    yt_release(every);
    yt_release(o.stepped);
    yt_release(o.out);
    yt_release(o.a);
    yt_release(o.b);
    yt_release(o.at);
    yt_release(o.row);
}

int
main(int argc, char **argv)
{
    if (yt_set_num_threads(1) != YT_OK) {
        fprintf(stderr, "strided bench: %s\n", yt_errmsg());
        return 1;
    }
    printf("%-24s %10s %11s %11s %7s %9s %7s\n", "case", "size", "contig_us", "strided_us", "ratio",
           "bare_us", "bound");
    for (size_t k = 0; k < sizeof CASES / sizeof CASES[0]; k++) {
        bool wanted = argc == 1;
        for (int i = 1; i < argc; i++)
            wanted |= !strcmp(argv[i], CASES[k]);
        if (!wanted)
            continue;
        for (size_t s = 0; s < sizeof SIZES / sizeof SIZES[0]; s++)
            bench(CASES[k], SIZES[s]);
    }
    return 0;
}
