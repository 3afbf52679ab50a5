/* Pointwise ops, reductions and element moves (cat, flip, roll, index_select, gather, tril) on
 * random layouts against an element-by-element reference. The pointwise runtime picks among many
 * traversals by the operands' strides, sizes, the cache size and the instruction set (blocks and
 * tiles for transposed inputs, packed panels, stepped forms, staged rows, streamed outputs), as
 * the reductions pick among their plans and the moves between memcpy and the pointwise copy, and
 * the targeted tests (test_pointwise.c, test_reduce.c, test_shape.c) pin each one at its chosen
 * shapes. These sweeps cross
 * them at random, from a fixed seed so that a failure reproduces: each case draws a shape of 1 to
 * 4 dims, lays every operand out its own way (dims permuted, every 2nd or 3rd element along a
 * dim, a start past the first, broadcast dims), and runs one op (functional, out= into a laid-out
 * view, or in place) under a drawn cache size, thread count and instruction set. Values are small
 * integers, so every dtype holds each result exactly and the reference (computed in double from
 * the operands' own strides) must match bit for bit; exp, the one inexact op, is checked to a few
 * units in the last place. Elements of an output's storage outside its view must keep their
 * value. A failure names the case, its setting and every operand's strides. */
#include <stdint.h>
#include <stdio.h>

#include <criterion/criterion.h>

#include "cpu_isa.h"
#include "test_util.h"

void yt__set_cache_bytes(int64_t bytes); /* runtime/internal.h */
void yt__parallel_set_always(bool on);   /* runtime/parallel.h */

enum {
    CASES = 1000,
    MAX_DIMS = 4,
    MAX_NUMEL = 1 << 17, /* elements of an op's shape */
    /* elements of an operand's storage: a layout whose steps take it past this is drawn again
     * with steps of 1 */
    MAX_BASE = 1 << 19,
    POISON = 99, /* what an output's storage holds outside its view */
};

/* splitmix64: a fixed, portable stream, so a case number names the same case everywhere. */
typedef struct draw {
    uint64_t state;
} draw;

static uint64_t
next_bits(draw *d)
{
    uint64_t z = (d->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A number in [0, n). */
static int64_t
pick(draw *d, int64_t n)
{
    return (int64_t)(next_bits(d) % (uint64_t)n);
}

/* Sizes around the traversals' thresholds: vector widths (8, 16), blocks (8, 16), a line of
 * elements, staged and gathered rows (under and over 128), power-of-two rows (rows 2 KiB or
 * more apart share cache sets). */
static const int64_t SIZES[] = {0,   1,   2,   3,   5,   7,    8,    9,   15,  16,
                                17,  31,  32,  33,  63,  64,   65,   100, 127, 128,
                                129, 255, 256, 257, 512, 1000, 1024, 2048};

/* The dtypes the sweeps draw from: every storage width, floating and integral (u8 and i16 as
 * their kin; bool only as where's condition). */
static const yt_dtype DTYPES[] = {YT_DTYPE_F32, YT_DTYPE_F64, YT_DTYPE_F16, YT_DTYPE_BF16,
                                  YT_DTYPE_I8,  YT_DTYPE_I32, YT_DTYPE_I64};
enum { DTYPE_COUNT = sizeof DTYPES / sizeof DTYPES[0] };

/* An operand of a case: its storage, contiguous, with its values as doubles, and its view of the
 * case's shape (broadcast dims of stride 0 among them). */
typedef struct operand {
    yt_tensor *base;
    double *values;
    int64_t base_numel;
    yt_tensor *view;
    char layout[96]; /* how the view was cut, for messages */
} operand;

/* Cuts `op` of `sizes` (nd dims) out of new storage of `dtype`: the dims in a drawn order, each
 * drawn to step 1, 2 or 3 elements and to start 0 or 1 in; with `broadcast`, some dims of size
 * 1 expanded. Values are drawn in [lo, hi] (booleans for YT_DTYPE_BOOL). */
static void
lay_out(operand *op, draw *d, const int64_t *sizes, int nd, yt_dtype dtype, bool broadcast, int lo,
        int hi)
{
    int64_t perm[MAX_DIMS], step[MAX_DIMS], start[MAX_DIMS], own[MAX_DIMS], phys[MAX_DIMS];
    for (int i = 0; i < nd; i++)
        perm[i] = i;
    for (int i = nd - 1; i > 0; i--) { /* Fisher-Yates */
        const int j = (int)pick(d, i + 1);
        const int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    const bool in_order = pick(d, 3) == 0; /* a third keep the dims in order */
    int64_t base_numel = 1;
    for (int attempt = 0; attempt < 2; attempt++) {
        base_numel = 1;
        for (int p = 0; p < nd; p++) {
            const int dim = in_order ? p : (int)perm[p];
            own[dim] = broadcast && pick(d, 4) == 0 ? 1 : sizes[dim];
            const int64_t kind = pick(d, 9); /* steps 1, 2, 3 six, two and one times in 9 */
            step[dim] = attempt == 0 ? 1 + (kind >= 6) + (kind == 8) : 1;
            start[dim] = attempt == 0 ? pick(d, 6) == 0 : 0;
            phys[p] = start[dim] + own[dim] * step[dim];
            base_numel *= phys[p];
        }
        if (base_numel <= MAX_BASE)
            break;
    }
    op->base_numel = base_numel;
    op->values = malloc((size_t)(base_numel > 0 ? base_numel : 1) * sizeof(double));
    cr_assert_not_null(op->values);
    for (int64_t i = 0; i < base_numel; i++)
        op->values[i] =
            dtype == YT_DTYPE_BOOL ? (double)pick(d, 2) : (double)(lo + pick(d, hi - lo + 1));
    yt_tensor *f64 = yt_tensor_from_data(op->values, phys, nd, YT_DTYPE_F64);
    cr_assert_not_null(f64, "%s", yt_errmsg());
    op->base = yt_to(f64, dtype);
    yt_release(f64);
    cr_assert_not_null(op->base, "%s", yt_errmsg());

    /* physical dim p holds dim perm[p]: slice each, then permute the dims into order */
    yt_tensor *v = yt_retain(op->base);
    int64_t order[MAX_DIMS];
    for (int p = 0; p < nd; p++) {
        const int dim = in_order ? p : (int)perm[p];
        order[dim] = p;
        yt_tensor *s = yt_slice_ex(v, p, start[dim], start[dim] + own[dim] * step[dim], step[dim]);
        cr_assert_not_null(s, "%s", yt_errmsg());
        yt_release(v);
        v = s;
    }
    yt_tensor *permuted = yt_permute(v, order, nd);
    cr_assert_not_null(permuted, "%s", yt_errmsg());
    yt_release(v);
    op->view = yt_expand(permuted, sizes, nd);
    cr_assert_not_null(op->view, "%s", yt_errmsg());
    yt_release(permuted);

    int at = snprintf(op->layout, sizeof op->layout, "%s strides [", yt_dtype_name(dtype));
    for (int i = 0; i < nd && at < (int)sizeof op->layout; i++)
        at += snprintf(op->layout + at, sizeof op->layout - (size_t)at, "%s%lld", i ? ", " : "",
                       (long long)yt_tensor_stride(op->view, i));
    if (at < (int)sizeof op->layout)
        snprintf(op->layout + at, sizeof op->layout - (size_t)at, "] offset %lld",
                 (long long)yt_tensor_offset(op->view));
}

static void
release_operand(operand *op)
{
    yt_release(op->view);
    yt_release(op->base);
    free(op->values);
}

/* The storage index of `view`'s element at the flat row-major index `flat`. */
static int64_t
storage_index(const yt_tensor *view, int64_t flat)
{
    const int nd = yt_tensor_dim(view);
    int64_t at = yt_tensor_offset(view);
    for (int i = nd - 1; i >= 0; i--) {
        const int64_t size = yt_tensor_size(view, i);
        at += flat % size * yt_tensor_stride(view, i);
        flat /= size;
    }
    return at;
}

/* The ops of the sweep. */
typedef enum op_kind {
    OP_ADD,         /* yt_add(x, y) */
    OP_ADD_OUT,     /* yt_add_out(out, x, y) into a laid-out view */
    OP_NEG_OUT,     /* yt_neg_out(out, x) into a laid-out view */
    OP_ADD_INPLACE, /* x.add_(y), x laid out (not broadcast) */
    OP_MUL_INPLACE, /* x.mul_(3) */
    OP_WHERE,       /* yt_where(cond, x, y) */
    OP_EXP_OUT,     /* yt_exp_out(out, x), floating dtypes */
    OP_CLONE,       /* yt_clone(x) */
    OP_POINTWISE_KINDS,
    OP_SUM = OP_POINTWISE_KINDS, /* yt_sum_dim_ex(x, dims) */
    OP_AMAX,                     /* yt_amax_ex(x, dims) */
    OP_CAT,                      /* yt_cat_ex({x, ...}, dim), the others laid out their own way */
    OP_FLIP,                     /* yt_flip(x, dims) */
    OP_ROLL,                     /* yt_roll_ex(x, shifts, dims), or over the flattened x */
    OP_INDEX_SELECT,             /* yt_index_select(x, dim, index) */
    OP_GATHER,                   /* yt_gather(x, dim, index) */
    OP_TRIL,                     /* yt_tril_ex / yt_triu_ex(x, diagonal) */
    OP_MATMUL,                   /* yt_matmul(x, y) */
    OP_SOFTMAX,                  /* yt_softmax(x, dim); the kinds from here compare to 1e-4 */
    OP_LOG_SOFTMAX,              /* yt_log_softmax(x, dim) */
    OP_LOGSUMEXP,                /* yt_logsumexp_ex(x, dims) */
    OP_VAR,                      /* yt_var_ex(x, dims, correction) */
    OP_LAYER_NORM,               /* yt_layer_norm_ex(x, trailing sizes, weight, bias) */
    OP_CUMSUM,                   /* yt_cumsum(x, dim) */
    OP_CONV2D,                   /* yt_conv2d_ex(x, weight, bias, ...) */
    OP_MAX_POOL2D,               /* yt_max_pool2d_ex(x, ...) */
    OP_AVG_POOL2D,               /* yt_avg_pool2d_ex(x, ...) */
    OP_KINDS,
} op_kind;

static const char *const OP_NAMES[OP_KINDS] = {
    "add",        "add_out", "neg_out", "add_",       "mul_(3)",     "where",     "exp_out",
    "clone",      "sum",     "amax",    "cat",        "flip",        "roll",      "index_select",
    "gather",     "tril",    "matmul",  "softmax",    "log_softmax", "logsumexp", "var",
    "layer_norm", "cumsum",  "conv2d",  "max_pool2d", "avg_pool2d",
};

/* One case's setting, for messages. */
typedef struct setting {
    int number;
    op_kind op;
    yt_dtype dtype;
    int nd;
    int64_t sizes[MAX_DIMS];
    int64_t cache;
    int threads;
    yt__isa isa;
    char operands[512]; /* their layouts */
} setting;

/* Appends " [a, b, ...]" for `sizes` (nd dims) to buf (n bytes, at `at`); returns the new end. */
static int
append_sizes(char *buf, size_t n, int at, const int64_t *sizes, int nd)
{
    at += snprintf(buf + at, n - (size_t)at, " [");
    for (int i = 0; i < nd && at < (int)n; i++)
        at += snprintf(buf + at, n - (size_t)at, "%s%lld", i ? ", " : "", (long long)sizes[i]);
    return at < (int)n ? at + snprintf(buf + at, n - (size_t)at, "]") : at;
}

static void
describe(const setting *s, char *buf, size_t n)
{
    int at =
        snprintf(buf, n, "case %d: %s %s", s->number, OP_NAMES[s->op], yt_dtype_name(s->dtype));
    if (s->nd > 0) { /* matmul's shapes are its operands' */
        at += snprintf(buf + at, n - (size_t)at, ", shape");
        at = append_sizes(buf, n, at, s->sizes, s->nd);
    }
    static const char *const ISA_NAMES[] = {"plain", "AVX2", "AVX-512"};
    snprintf(buf + at, n - (size_t)at, ", cache %lld, %d threads, %s; %s", (long long)s->cache,
             s->threads, ISA_NAMES[s->isa], s->operands);
}

/* Whether got equals want: exactly, or for exp within a few units in the last place of dtype. */
static bool
agrees(double got, double want, op_kind op, yt_dtype dtype)
{
    if (isnan(got) || isnan(want))
        return isnan(got) && isnan(want);
    if (got == want)
        return true;
    const double ulp = dtype == YT_DTYPE_F64 ? 0x1p-52 : 0x1p-23;
    if (op == OP_EXP_OUT)
        return fabs(got - want) <= 4 * ulp * fabs(want);
    if (op >= OP_SOFTMAX)
        return fabs(got - want) <= (dtype == YT_DTYPE_F64 ? 1e-10 : 1e-4) * (1 + fabs(want));
    return false;
}

/* Checks `storage`, as f64: `view`'s elements (flat index i at storage_index) against want[i],
 * the rest against `outside`. A functional op's result is its own storage and view, read in
 * its elements' order (outside NULL). */
static void
expect_storage(const setting *s, yt_tensor *storage, const yt_tensor *view, const double *want,
               const double *outside)
{
    const int64_t n = yt_tensor_numel(storage), numel = yt_tensor_numel(view);
    double *got = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    bool *in_view = calloc((size_t)(n > 0 ? n : 1), sizeof(bool));
    cr_assert(got != NULL && in_view != NULL);
    cr_assert_eq(yt_tensor_copy_to(storage, got, (size_t)n * sizeof(double), YT_DTYPE_F64), YT_OK,
                 "%s", yt_errmsg());
    char what[1024];
    for (int64_t i = 0; i < numel; i++) {
        const int64_t at = view == storage ? i : storage_index(view, i);
        in_view[at] = true;
        if (!agrees(got[at], want[i], s->op, s->dtype)) {
            describe(s, what, sizeof what);
            cr_assert_fail("%s: element %lld (storage %lld) got %.17g, want %.17g", what,
                           (long long)i, (long long)at, got[at], want[i]);
        }
    }
    for (int64_t at = 0; outside != NULL && at < n; at++) {
        if (!in_view[at] && got[at] != outside[at]) {
            describe(s, what, sizeof what);
            cr_assert_fail("%s: storage %lld outside the output's view got %.17g, want %.17g", what,
                           (long long)at, got[at], outside[at]);
        }
    }
    free(in_view);
    free(got);
}

/* The coordinates of the flat row-major index `flat` in `sizes` (nd dims). */
static void
coordinates(int64_t flat, const int64_t *sizes, int nd, int64_t *coords)
{
    for (int i = nd - 1; i >= 0; i--) {
        coords[i] = flat % sizes[i];
        flat /= sizes[i];
    }
}

/* The index of flat index i's element (of `sizes`, nd dims) among the groups that the dims of
 * `mask` (bit k: dim k) are reduced over: its row-major index with those dims taken to size 1. */
static int64_t
group_index(int64_t i, const int64_t *sizes, int nd, int64_t mask)
{
    int64_t c[MAX_DIMS], g = 0;
    coordinates(i, sizes, nd, c);
    for (int k = 0; k < nd; k++)
        g = g * ((mask >> k) & 1 ? 1 : sizes[k]) + ((mask >> k) & 1 ? 0 : c[k]);
    return g;
}

/* The dims of `mask` (bit i: dim i) into dims, each drawn as i or as i - nd (counting from the
 * end, as PyTorch allows); returns how many. */
static int
dims_of(draw *d, int64_t mask, int nd, int64_t *dims)
{
    int n = 0;
    for (int i = 0; i < nd; i++)
        if ((mask >> i) & 1)
            dims[n++] = pick(d, 2) ? i : i - nd;
    return n;
}

/* The operand's value at `coords` of its view. */
static double
value_at_coords(const operand *op, const int64_t *coords)
{
    int64_t at = yt_tensor_offset(op->view);
    for (int i = 0; i < yt_tensor_dim(op->view); i++)
        at += coords[i] * yt_tensor_stride(op->view, i);
    return op->values[at];
}

/* The operand's value at the op's flat index i. */
static double
value_at(const operand *op, int64_t i)
{
    return op->values[storage_index(op->view, i)];
}

/* Draws the cache size, threads and instruction set of a case and puts them in force. */
static void
draw_machine(setting *s, draw *d)
{
    static const int64_t CACHES[] = {0, 64 << 10, 3 << 19, 4 << 20};
    s->cache = CACHES[pick(d, sizeof CACHES / sizeof CACHES[0])];
    s->threads = 1 + (int)pick(d, 2);
    s->isa = (yt__isa)pick(d, YT__ISA_AVX512 + 1); /* the plain loops, AVX2's, AVX-512's */
    yt__set_cache_bytes(s->cache);
    cr_assert_eq(yt_set_num_threads(s->threads), YT_OK);
    yt__parallel_set_always(s->threads > 1); /* split even small work, partway along rows */
    yt__cap_cpu_isa(s->isa);
}

/* Draws case `number`'s shape (1 to 4 dims; a quarter of them [16 to 256, 256 to 2048], rows a
 * power of two long, whose lines share cache sets: the packed traversal's and the tiles' shapes)
 * and its machine (draw_machine). */
static void
draw_setting(setting *s, draw *d)
{
    static const int DIMS[] = {1, 2, 2, 2, 2, 3, 3, 4}; /* mostly 2: the traversals' main case */
    s->nd = DIMS[pick(d, sizeof DIMS / sizeof DIMS[0])];
    int64_t numel = 1;
    for (int i = 0; i < s->nd; i++) {
        s->sizes[i] = SIZES[1 + pick(d, sizeof SIZES / sizeof SIZES[0] - 1)];
        numel *= s->sizes[i];
    }
    if (pick(d, 4) == 0) {
        s->nd = 2;
        s->sizes[0] = SIZES[9 + pick(d, 14)];
        s->sizes[1] = (int64_t)256 << pick(d, 4);
        numel = s->sizes[0] * s->sizes[1];
    }
    while (numel > MAX_NUMEL) { /* halve the largest dim until the shape fits */
        int largest = 0;
        for (int i = 1; i < s->nd; i++)
            largest = s->sizes[i] > s->sizes[largest] ? i : largest;
        numel = numel / s->sizes[largest] * (s->sizes[largest] / 2);
        s->sizes[largest] /= 2;
    }
    if (pick(d, 40) == 0)
        s->sizes[pick(d, s->nd)] = 0; /* now and then an empty op */
    draw_machine(s, d);
}

/* Runs `run` on every case number, then puts the machine's setting back. */
static void
sweep(void (*run)(int number))
{
    const int threads_before = yt_get_num_threads();
    for (int number = 0; number < CASES; number++)
        run(number);
    yt__cap_cpu_isa(YT__ISA_AVX512);
    yt__parallel_set_always(false);
    yt__set_cache_bytes(0);
    cr_assert_eq(yt_set_num_threads(threads_before), YT_OK);
    YT_ASSERT_NO_LEAKS();
}

static void
run_case(int number)
{
    draw d = {(uint64_t)number * 0x2545F4914F6CDD1Dull + 1};
    setting s = {.number = number};
    s.dtype = DTYPES[pick(&d, DTYPE_COUNT)];
    const bool floating = s.dtype == YT_DTYPE_F32 || s.dtype == YT_DTYPE_F64;
    do
        s.op = (op_kind)pick(&d, OP_POINTWISE_KINDS);
    while (s.op == OP_EXP_OUT && !floating);
    draw_setting(&s, &d);

    const bool in_place = s.op == OP_ADD_INPLACE || s.op == OP_MUL_INPLACE;
    const bool binary = s.op == OP_ADD || s.op == OP_ADD_OUT || s.op == OP_ADD_INPLACE;
    const bool into_out = s.op == OP_ADD_OUT || s.op == OP_NEG_OUT || s.op == OP_EXP_OUT;
    operand x = {0}, y = {0}, cond = {0}, out = {0};
    lay_out(&x, &d, s.sizes, s.nd, s.dtype, !in_place, -15, 15);
    if (binary || s.op == OP_WHERE)
        lay_out(&y, &d, s.sizes, s.nd, s.dtype, true, -15, 15);
    if (s.op == OP_WHERE)
        lay_out(&cond, &d, s.sizes, s.nd, YT_DTYPE_BOOL, true, 0, 1);
    if (into_out)
        lay_out(&out, &d, s.sizes, s.nd, s.dtype, false, POISON, POISON);
    snprintf(s.operands, sizeof s.operands, "x %s, y %s, cond %s, out %s", x.layout,
             y.view != NULL ? y.layout : "-", cond.view != NULL ? cond.layout : "-",
             out.view != NULL ? out.layout : "-");
    const int64_t numel = yt_tensor_numel(x.view);
    double *want = malloc((size_t)(numel > 0 ? numel : 1) * sizeof(double));
    cr_assert_not_null(want);
    for (int64_t i = 0; i < numel; i++) {
        const double a = value_at(&x, i), b = y.view != NULL ? value_at(&y, i) : 0;
        switch (s.op) {
        case OP_ADD:
        case OP_ADD_OUT:
        case OP_ADD_INPLACE:
            want[i] = a + b;
            break;
        case OP_NEG_OUT:
            want[i] = -a;
            break;
        case OP_MUL_INPLACE:
            want[i] = a * 3;
            break;
        case OP_WHERE:
            want[i] = value_at(&cond, i) != 0 ? a : b;
            break;
        case OP_EXP_OUT:
            want[i] = s.dtype == YT_DTYPE_F32 ? (double)expf((float)a) : exp(a);
            break;
        default:
            want[i] = a;
            break;
        }
    }

    char what[1024];
    describe(&s, what, sizeof what);
    yt_status status = YT_OK;
    yt_tensor *result = NULL;
    switch (s.op) {
    case OP_ADD:
        result = yt_add(x.view, y.view);
        break;
    case OP_WHERE:
        result = yt_where(cond.view, x.view, y.view);
        break;
    case OP_CLONE:
        result = yt_clone(x.view);
        break;
    case OP_ADD_OUT:
        status = yt_add_out(out.view, x.view, y.view);
        break;
    case OP_NEG_OUT:
        status = yt_neg_out(out.view, x.view);
        break;
    case OP_EXP_OUT:
        status = yt_exp_out(out.view, x.view);
        break;
    case OP_ADD_INPLACE:
        status = yt_add_(x.view, y.view);
        break;
    default:
        status = yt_mul_scalar_(x.view, yt_int(3));
        break;
    }
    cr_assert(status == YT_OK && (result != NULL || into_out || in_place), "%s: %s", what,
              yt_errmsg());
    if (result != NULL) {
        expect_storage(&s, result, result, want, NULL);
        yt_release(result);
    } else if (into_out) {
        expect_storage(&s, out.base, out.view, want, out.values);
    } else if (in_place) {
        expect_storage(&s, x.base, x.view, want, x.values);
    }
    free(want);
    release_operand(&out);
    release_operand(&cond);
    release_operand(&y);
    release_operand(&x);
}

Test(layouts, pointwise_ops_on_random_layouts_match_the_reference)
{
    sweep(run_case);
}

/* A reduction on a random layout: sum or amax over a drawn, non-empty set of dims, keepdim drawn.
 * Sums of at most 2^17 integers of magnitude 15 are exact in every summed dtype whatever the
 * order of the additions (f16 and bf16, which would round partial sums, are left out of sum). */
static void
run_reduction_case(int number)
{
    draw d = {(uint64_t)number * 0x9E3779B97F4A7C15ull + 7};
    setting s = {.number = number};
    s.dtype = DTYPES[pick(&d, DTYPE_COUNT)];
    draw_setting(&s, &d);
    int64_t dims[MAX_DIMS];
    const int64_t mask = 1 + pick(&d, (1 << s.nd) - 1); /* which dims: never none */
    const int n_dims = dims_of(&d, mask, s.nd, dims);
    bool empty_reduced = false;
    for (int i = 0; i < s.nd; i++)
        empty_reduced = empty_reduced || ((mask >> i) & 1 && s.sizes[i] == 0);
    const bool keepdim = pick(&d, 2);
    /* amax over an empty dim is an error: those are summed, in f32 for the half types */
    if ((s.dtype == YT_DTYPE_F16 || s.dtype == YT_DTYPE_BF16) && empty_reduced)
        s.dtype = YT_DTYPE_F32;
    const bool half = s.dtype == YT_DTYPE_F16 || s.dtype == YT_DTYPE_BF16;
    s.op = !empty_reduced && (half || pick(&d, 2)) ? OP_AMAX : OP_SUM;
    const bool amax = s.op == OP_AMAX;

    operand x = {0};
    lay_out(&x, &d, s.sizes, s.nd, s.dtype, true, -15, 15);
    snprintf(s.operands, sizeof s.operands, "dims mask %lld%s, x %s", (long long)mask,
             keepdim ? " keepdim" : "", x.layout);

    /* the result's elements: the shape with the reduced dims taken to size 1 */
    int64_t out_numel = 1, out_sizes[MAX_DIMS];
    for (int i = 0; i < s.nd; i++) {
        out_sizes[i] = (mask >> i) & 1 ? 1 : s.sizes[i];
        out_numel *= out_sizes[i];
    }
    double *want = malloc((size_t)(out_numel > 0 ? out_numel : 1) * sizeof(double));
    cr_assert_not_null(want);
    for (int64_t o = 0; o < out_numel; o++)
        want[o] = amax ? -INFINITY : 0;
    const int64_t numel = yt_tensor_numel(x.view);
    for (int64_t i = 0; i < numel; i++) {
        const int64_t o = group_index(i, s.sizes, s.nd, mask);
        const double v = value_at(&x, i);
        want[o] = amax ? (v > want[o] ? v : want[o]) : want[o] + v;
    }

    char what[1024];
    describe(&s, what, sizeof what);
    yt_tensor *result = amax ? yt_amax_ex(x.view, dims, n_dims, keepdim)
                             : yt_sum_dim_ex(x.view, dims, n_dims, keepdim, YT_DTYPE_NONE);
    cr_assert_not_null(result, "%s: %s", what, yt_errmsg());
    cr_assert_eq(yt_tensor_numel(result), out_numel, "%s: numel", what);
    cr_assert_eq(yt_tensor_dim(result), keepdim ? s.nd : s.nd - n_dims, "%s: dims", what);
    expect_storage(&s, result, result, want, NULL);
    yt_release(result);
    free(want);
    release_operand(&x);
}

Test(layouts, reductions_on_random_layouts_match_the_reference)
{
    sweep(run_reduction_case);
}

/* An op that moves elements (no arithmetic) on random layouts: cat of 2 or 3 operands along a
 * drawn dim (the others as long as 0 to 17 there, each laid out its own way), flip over a drawn
 * set of dims, roll by drawn shifts (or over the flattened tensor), index_select and gather with
 * drawn indices (the index laid out like any operand), tril or triu with a drawn diagonal. */
static void
run_move_case(int number)
{
    static const int64_t PART_SIZES[] = {0, 1, 2, 3, 7, 16, 17};
    static const int64_t INDEX_SIZES[] = {0, 1, 2, 5, 17, 64};
    draw d = {(uint64_t)number * 0xD1B54A32D192ED03ull + 3};
    setting s = {.number = number};
    s.dtype = DTYPES[pick(&d, DTYPE_COUNT)];
    s.op = (op_kind)(OP_CAT + pick(&d, OP_MATMUL - OP_CAT));
    draw_setting(&s, &d);
    int64_t numel = 1;
    for (int i = 0; i < s.nd; i++)
        numel *= s.sizes[i];
    const int dim = (int)pick(&d, s.nd);
    if ((s.op == OP_INDEX_SELECT || s.op == OP_GATHER) && s.sizes[dim] == 0)
        s.op = OP_FLIP; /* no index fits an empty dim */
    if (s.op == OP_TRIL && s.nd < 2)
        s.op = OP_FLIP;

    operand x = {0}, parts[2] = {{0}}, index = {0};
    lay_out(&x, &d, s.sizes, s.nd, s.dtype, true, -15, 15);
    int64_t out_sizes[MAX_DIMS], part_sizes[2][MAX_DIMS], n_parts = 0;
    memcpy(out_sizes, s.sizes, sizeof out_sizes);
    int64_t dims_mask = 0, shifts[MAX_DIMS], dims[MAX_DIMS], n_dims = 0, diagonal = 0;
    bool flat_roll = false, upper = false;
    switch (s.op) {
    case OP_CAT:
        n_parts = 1 + pick(&d, 2);
        for (int k = 0; k < n_parts; k++) {
            memcpy(part_sizes[k], s.sizes, sizeof part_sizes[k]);
            part_sizes[k][dim] = PART_SIZES[pick(&d, sizeof PART_SIZES / sizeof PART_SIZES[0])];
            out_sizes[dim] += part_sizes[k][dim];
            lay_out(&parts[k], &d, part_sizes[k], s.nd, s.dtype, true, -15, 15);
        }
        break;
    case OP_FLIP:
    case OP_ROLL:
        dims_mask = 1 + pick(&d, (1 << s.nd) - 1); /* never none */
        flat_roll = s.op == OP_ROLL && pick(&d, 4) == 0;
        n_dims = dims_of(&d, dims_mask, s.nd, dims);
        for (int k = 0; k < n_dims; k++) {
            const int64_t size = s.sizes[dims[k] < 0 ? dims[k] + s.nd : dims[k]];
            shifts[k] = pick(&d, 4 * size + 1) - 2 * size;
        }
        if (flat_roll)
            shifts[0] = pick(&d, 4 * numel + 1) - 2 * numel;
        break;
    case OP_INDEX_SELECT:
    case OP_GATHER: {
        int64_t index_sizes[MAX_DIMS];
        memcpy(index_sizes, s.sizes, sizeof index_sizes);
        index_sizes[dim] = INDEX_SIZES[pick(&d, sizeof INDEX_SIZES / sizeof INDEX_SIZES[0])];
        const int index_dims = s.op == OP_GATHER ? s.nd : 1;
        lay_out(&index, &d, s.op == OP_GATHER ? index_sizes : &index_sizes[dim], index_dims,
                YT_DTYPE_I64, true, 0, (int)s.sizes[dim] - 1);
        out_sizes[dim] = index_sizes[dim];
        break;
    }
    default:
        upper = pick(&d, 2);
        diagonal = pick(&d, 2 * s.sizes[s.nd - 1] + 3) - s.sizes[s.nd - 1] - 1;
        break;
    }
    snprintf(s.operands, sizeof s.operands, "dim %d, dims mask %lld, diagonal %lld%s; x %s; %s %s",
             dim, (long long)dims_mask, (long long)diagonal, upper ? " upper" : "", x.layout,
             n_parts > 0 ? parts[0].layout : index.layout, n_parts > 1 ? parts[1].layout : "");

    int64_t out_numel = 1;
    for (int i = 0; i < s.nd; i++)
        out_numel *= out_sizes[i];
    double *want = malloc((size_t)(out_numel > 0 ? out_numel : 1) * sizeof(double));
    cr_assert_not_null(want);
    for (int64_t o = 0; o < out_numel; o++) {
        int64_t c[MAX_DIMS];
        coordinates(o, out_sizes, s.nd, c);
        const operand *from = &x;
        switch (s.op) {
        case OP_CAT: { /* the part that holds c[dim], and c's place in it */
            const int64_t *lengths[3] = {s.sizes, part_sizes[0], part_sizes[1]};
            const operand *from_parts[3] = {&x, &parts[0], &parts[1]};
            int k = 0;
            while (c[dim] >= lengths[k][dim])
                c[dim] -= lengths[k++][dim];
            from = from_parts[k];
            break;
        }
        case OP_FLIP:
            for (int i = 0; i < s.nd; i++)
                c[i] = (dims_mask >> i) & 1 ? s.sizes[i] - 1 - c[i] : c[i];
            break;
        case OP_ROLL:
            if (flat_roll) {
                const int64_t back = ((o - shifts[0]) % numel + numel) % numel;
                coordinates(back, s.sizes, s.nd, c);
                break;
            }
            for (int k = 0; k < n_dims; k++) {
                const int64_t i = dims[k] < 0 ? dims[k] + s.nd : dims[k], n = s.sizes[i];
                c[i] = ((c[i] - shifts[k]) % n + n) % n;
            }
            break;
        case OP_INDEX_SELECT: {
            const int64_t at = c[dim];
            c[dim] = (int64_t)value_at_coords(&index, &at);
            break;
        }
        case OP_GATHER:
            c[dim] = (int64_t)value_at_coords(&index, c);
            break;
        default:
            break;
        }
        const int64_t above = c[s.nd - 1] - c[s.nd - 2 >= 0 ? s.nd - 2 : 0];
        const bool zeroed = s.op == OP_TRIL && (upper ? above < diagonal : above > diagonal);
        want[o] = zeroed ? 0 : value_at_coords(from, c);
    }

    char what[1024];
    describe(&s, what, sizeof what);
    yt_tensor *result = NULL;
    yt_tensor *const all[3] = {x.view, parts[0].view, parts[1].view};
    switch (s.op) {
    case OP_CAT:
        result = yt_cat_ex(all, 1 + (int)n_parts, pick(&d, 2) ? dim : dim - s.nd);
        break;
    case OP_FLIP:
        result = yt_flip(x.view, dims, (int)n_dims);
        break;
    case OP_ROLL:
        result = yt_roll_ex(x.view, shifts, flat_roll ? 1 : (int)n_dims, dims,
                            flat_roll ? 0 : (int)n_dims);
        break;
    case OP_INDEX_SELECT:
        result = yt_index_select(x.view, dim, index.view);
        break;
    case OP_GATHER:
        result = yt_gather(x.view, dim, index.view);
        break;
    default:
        result = upper ? yt_triu_ex(x.view, diagonal) : yt_tril_ex(x.view, diagonal);
        break;
    }
    cr_assert_not_null(result, "%s: %s", what, yt_errmsg());
    cr_assert_eq(yt_tensor_numel(result), out_numel, "%s: numel", what);
    expect_storage(&s, result, result, want, NULL);
    yt_release(result);
    free(want);
    release_operand(&index);
    release_operand(&parts[1]);
    release_operand(&parts[0]);
    release_operand(&x);
}

Test(layouts, element_moves_on_random_layouts_match_the_reference)
{
    sweep(run_move_case);
}

/* Sets the batch dims of a matmul operand of `rank` dims (its first rank - 2; none for 1 or 2
 * dims), the last of the result's nb: to its sizes `own` (coords NULL), or to the coordinates
 * of the result's batch coords it reads (0 along a dim it broadcasts). */
static void
put_batch(int64_t *at, int rank, int nb, const int64_t *own, const int64_t *coords)
{
    for (int i = 0; i < rank - 2; i++) {
        const int b = nb - (rank - 2) + i;
        at[i] = coords == NULL ? own[b] : own[b] == 1 ? 0 : coords[b];
    }
}

/* Sets the matrix dims of a matmul operand of `rank` dims (sizes or coordinates): its last two
 * to row and col, or its only one to `vector` when it is 1-D (x as a row, y as a column). */
static void
put_matrix(int64_t *at, int rank, int64_t row, int64_t col, int64_t vector)
{
    if (rank == 1) {
        at[0] = vector;
        return;
    }
    at[rank - 2] = row;
    at[rank - 1] = col;
}

/* matmul on random layouts: x and y of 1 to 4 dims (1-D ones as PyTorch takes them: a row of x,
 * a column of y), batch dims that broadcast, each operand laid out its own way (transposed
 * matrices, every 2nd or 3rd element, broadcast rows or columns of stride 0). Products of
 * integers in [-15, 15] summed over K are exact in f32 and wider (in [-2, 2] for f16 and [-1, 1]
 * for bf16, K at most 256 there, the sums stay within the integers those hold exactly), so the
 * reference matches bit for bit. */
static void
run_matmul_case(int number)
{
    static const yt_dtype MATMUL_DTYPES[] = {YT_DTYPE_F32, YT_DTYPE_F32,  YT_DTYPE_F64,
                                             YT_DTYPE_F16, YT_DTYPE_BF16, YT_DTYPE_I32,
                                             YT_DTYPE_I64};
    static const int64_t MNK[] = {0,  1,  2,  3,  4,  7,   8,   15,  16,  17,
                                  31, 32, 33, 64, 65, 100, 128, 129, 256, 257};
    static const int RANKS[] = {1, 2, 2, 2, 3, 3, 4};
    static const int64_t BATCH[] = {1, 2, 3, 5};
    enum { MAX_WORK = 1 << 20 }; /* multiply-adds of the reference */
    draw d = {(uint64_t)number * 0xA0761D6478BD642Full + 5};
    setting s = {.number = number, .op = OP_MATMUL};
    s.dtype = MATMUL_DTYPES[pick(&d, sizeof MATMUL_DTYPES / sizeof MATMUL_DTYPES[0])];
    const bool half = s.dtype == YT_DTYPE_F16 || s.dtype == YT_DTYPE_BF16;
    const int magnitude = s.dtype == YT_DTYPE_F16 ? 2 : s.dtype == YT_DTYPE_BF16 ? 1 : 15;
    const int rx = RANKS[pick(&d, sizeof RANKS / sizeof RANKS[0])];
    const int ry = RANKS[pick(&d, sizeof RANKS / sizeof RANKS[0])];
    const int widest = rx > ry ? rx : ry, nb = widest > 2 ? widest - 2 : 0;
    int64_t m = rx > 1 ? MNK[pick(&d, sizeof MNK / sizeof MNK[0])] : 1;
    int64_t k = MNK[pick(&d, sizeof MNK / sizeof MNK[0])];
    int64_t n = ry > 1 ? MNK[pick(&d, sizeof MNK / sizeof MNK[0])] : 1;
    if (half && k > 256)
        k = 256;
    /* batch dims, aligned at the right: each operand's either the result's size or 1 */
    int64_t batch[MAX_DIMS], bx[MAX_DIMS], by[MAX_DIMS], batch_numel = 1;
    for (int i = 0; i < nb; i++) {
        batch[i] = BATCH[pick(&d, sizeof BATCH / sizeof BATCH[0])];
        const bool x_has = i >= nb - (rx - 2), y_has = i >= nb - (ry - 2);
        bx[i] = !x_has || pick(&d, 4) == 0 ? 1 : batch[i];
        by[i] = !y_has || pick(&d, 4) == 0 ? 1 : batch[i];
        batch[i] = bx[i] > by[i] ? bx[i] : by[i];
        batch_numel *= batch[i];
    }
    while (batch_numel * m * n * k > MAX_WORK) { /* halve the largest of m, n, k */
        int64_t *largest = m >= n && m >= k ? &m : n >= k ? &n : &k;
        *largest /= 2;
    }
    draw_machine(&s, &d);

    /* x: [bx..., m, k] or [k]; y: [by..., k, n] or [k]; their batch dims the last of batch's */
    int64_t xs[MAX_DIMS], ys[MAX_DIMS];
    put_batch(xs, rx, nb, bx, NULL);
    put_batch(ys, ry, nb, by, NULL);
    put_matrix(xs, rx, m, k, k);
    put_matrix(ys, ry, k, n, k);
    operand x = {0}, y = {0};
    lay_out(&x, &d, xs, rx, s.dtype, true, -magnitude, magnitude);
    lay_out(&y, &d, ys, ry, s.dtype, true, -magnitude, magnitude);
    int at = snprintf(s.operands, sizeof s.operands, "x");
    at = append_sizes(s.operands, sizeof s.operands, at, xs, rx);
    at += snprintf(s.operands + at, sizeof s.operands - (size_t)at, " %s, y", x.layout);
    at = append_sizes(s.operands, sizeof s.operands, at, ys, ry);
    snprintf(s.operands + at, sizeof s.operands - (size_t)at, " %s", y.layout);

    /* the result as [batch..., m, n] (a 1-D operand's m or n is 1, dropped from the shape) */
    const int64_t out_numel = batch_numel * m * n;
    double *want = malloc((size_t)(out_numel > 0 ? out_numel : 1) * sizeof(double));
    cr_assert_not_null(want);
    for (int64_t o = 0; o < out_numel; o++) {
        int64_t cb[MAX_DIMS], cx[MAX_DIMS], cy[MAX_DIMS];
        coordinates(o / (m * n), batch, nb, cb);
        put_batch(cx, rx, nb, bx, cb);
        put_batch(cy, ry, nb, by, cb);
        const int64_t row = o / n % m, col = o % n;
        double sum = 0;
        for (int64_t j = 0; j < k; j++) {
            put_matrix(cx, rx, row, j, j);
            put_matrix(cy, ry, j, col, j);
            sum += value_at_coords(&x, cx) * value_at_coords(&y, cy);
        }
        want[o] = sum;
    }

    char what[1024];
    describe(&s, what, sizeof what);
    yt_tensor *result = yt_matmul(x.view, y.view);
    cr_assert_not_null(result, "%s: %s", what, yt_errmsg());
    cr_assert_eq(yt_tensor_numel(result), out_numel, "%s: numel", what);
    const int want_dims = nb + (rx > 1) + (ry > 1);
    cr_assert_eq(yt_tensor_dim(result), want_dims, "%s: dims", what);
    expect_storage(&s, result, result, want, NULL);
    yt_release(result);
    free(want);
    release_operand(&y);
    release_operand(&x);
}

Test(layouts, matmul_on_random_layouts_matches_the_reference)
{
    sweep(run_matmul_case);
}

/* Softmax and its kin on random layouts, against a reference in double: softmax and log_softmax
 * along a drawn dim, logsumexp and var (correction 0 or 1) over a drawn set of dims, layer_norm
 * over the trailing 1 to 4 dims (weight and bias each given or not, laid out their own way),
 * cumsum along a drawn dim; f32 and f64, checked to 1e-4 and 1e-10 relative (sums of up to 2^17
 * terms in their own order), which any fault of layout or indexing exceeds by far. */
static void
run_norm_case(int number)
{
    draw d = {(uint64_t)number * 0xE7037ED1A0B428DBull + 9};
    setting s = {.number = number};
    s.dtype = pick(&d, 2) ? YT_DTYPE_F32 : YT_DTYPE_F64;
    s.op = (op_kind)(OP_SOFTMAX + pick(&d, OP_CONV2D - OP_SOFTMAX));
    draw_setting(&s, &d);
    const int dim = (int)pick(&d, s.nd);
    int64_t mask = (int64_t)1 << dim, dims[MAX_DIMS];
    if (s.op == OP_LOGSUMEXP || s.op == OP_VAR)
        mask = 1 + pick(&d, (1 << s.nd) - 1); /* never none */
    const int trailing = 1 + (int)pick(&d, s.nd);
    if (s.op == OP_LAYER_NORM)
        mask = ((1 << trailing) - 1) << (s.nd - trailing);
    const int n_dims = dims_of(&d, mask, s.nd, dims);
    const bool keepdim = pick(&d, 2);
    const int64_t correction = pick(&d, 2);
    const double eps = 1e-5;

    operand x = {0}, weight = {0}, bias = {0};
    lay_out(&x, &d, s.sizes, s.nd, s.dtype, true, -15, 15);
    if (s.op == OP_LAYER_NORM && pick(&d, 2))
        lay_out(&weight, &d, s.sizes + s.nd - trailing, trailing, s.dtype, true, -3, 3);
    if (s.op == OP_LAYER_NORM && pick(&d, 2))
        lay_out(&bias, &d, s.sizes + s.nd - trailing, trailing, s.dtype, true, -3, 3);
    snprintf(s.operands, sizeof s.operands, "dims mask %lld%s, correction %lld; x %s; w %s; b %s",
             (long long)mask, keepdim ? " keepdim" : "", (long long)correction, x.layout,
             weight.view != NULL ? weight.layout : "-", bias.view != NULL ? bias.layout : "-");

    /* per group (the elements that differ only in the masked dims): max, count, sum, then the sum
     * of exp(v - max) and of squared deviations from the mean */
    int64_t group_sizes[MAX_DIMS], groups = 1;
    for (int i = 0; i < s.nd; i++) {
        group_sizes[i] = (mask >> i) & 1 ? 1 : s.sizes[i];
        groups *= group_sizes[i];
    }
    const int64_t numel = yt_tensor_numel(x.view);
    double *stats = calloc((size_t)(5 * (groups > 0 ? groups : 1)), sizeof(double));
    const int64_t wants = numel > groups ? numel : groups; /* groups > numel: an empty dim masked */
    double *want = malloc((size_t)(wants > 0 ? wants : 1) * sizeof(double));
    int64_t *group_of = malloc((size_t)(numel > 0 ? numel : 1) * sizeof(int64_t));
    cr_assert(stats != NULL && want != NULL && group_of != NULL);
    double *max = stats, *count = stats + groups, *sum = stats + 2 * groups;
    double *sum_exp = stats + 3 * groups, *squares = stats + 4 * groups;
    for (int64_t g = 0; g < groups; g++)
        max[g] = -INFINITY;
    for (int64_t i = 0; i < numel; i++) {
        const int64_t g = group_index(i, s.sizes, s.nd, mask);
        group_of[i] = g;
        const double v = value_at(&x, i);
        max[g] = v > max[g] ? v : max[g];
        count[g] += 1;
        sum[g] += v;
        if (s.op == OP_CUMSUM)
            want[i] = sum[g]; /* row-major order meets each line's elements in order */
    }
    for (int64_t i = 0; i < numel; i++) {
        const int64_t g = group_of[i];
        const double v = value_at(&x, i), mean = sum[g] / count[g];
        sum_exp[g] += exp(v - max[g]);
        squares[g] += (v - mean) * (v - mean);
    }
    int64_t out_numel = numel;
    if (s.op == OP_LOGSUMEXP || s.op == OP_VAR) {
        out_numel = groups;
        for (int64_t g = 0; g < groups; g++)
            want[g] = s.op == OP_VAR ? squares[g] / (count[g] - (double)correction)
                                     : max[g] + log(sum_exp[g]);
    } else if (s.op != OP_CUMSUM) {
        for (int64_t i = 0; i < numel; i++) {
            const int64_t g = group_of[i];
            const double v = value_at(&x, i);
            if (s.op == OP_SOFTMAX) {
                want[i] = exp(v - max[g]) / sum_exp[g];
            } else if (s.op == OP_LOG_SOFTMAX) {
                want[i] = v - max[g] - log(sum_exp[g]);
            } else {
                const int64_t inner = i % (int64_t)(numel / (groups > 0 ? groups : 1));
                const double norm = (v - sum[g] / count[g]) / sqrt(squares[g] / count[g] + eps);
                want[i] = norm * (weight.view != NULL ? value_at(&weight, inner) : 1) +
                          (bias.view != NULL ? value_at(&bias, inner) : 0);
            }
        }
    }

    char what[1024];
    describe(&s, what, sizeof what);
    yt_tensor *result = NULL;
    const int64_t signed_dim = pick(&d, 2) ? dim : dim - s.nd;
    switch (s.op) {
    case OP_SOFTMAX:
        result = yt_softmax(x.view, signed_dim);
        break;
    case OP_LOG_SOFTMAX:
        result = yt_log_softmax(x.view, signed_dim);
        break;
    case OP_LOGSUMEXP:
        result = yt_logsumexp_ex(x.view, dims, n_dims, keepdim);
        break;
    case OP_VAR:
        result = yt_var_ex(x.view, dims, n_dims, correction, keepdim);
        break;
    case OP_LAYER_NORM:
        result = yt_layer_norm_ex(x.view, s.sizes + s.nd - trailing, trailing, weight.view,
                                  bias.view, eps, true);
        break;
    default:
        result = yt_cumsum(x.view, signed_dim);
        break;
    }
    cr_assert_not_null(result, "%s: %s", what, yt_errmsg());
    cr_assert_eq(yt_tensor_numel(result), out_numel, "%s: numel", what);
    expect_storage(&s, result, result, want, NULL);
    yt_release(result);
    free(group_of);
    free(want);
    free(stats);
    release_operand(&bias);
    release_operand(&weight);
    release_operand(&x);
}

Test(layouts, softmax_norms_and_scans_on_random_layouts_match_the_reference)
{
    sweep(run_norm_case);
}

/* One output size of a 2-D window op along a dim of `size`, as PyTorch counts it (below 1: an
 * error): with ceil_mode the last window may run past the end (even a kernel longer than the
 * padded input gives one), but must start inside the input or its left padding. */
static int64_t
window_count(int64_t size, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation,
             bool ceil_mode)
{
    const int64_t span =
        size + 2 * pad - dilation * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0);
    int64_t count = (span >= 0 ? span / stride : -((-span + stride - 1) / stride)) + 1;
    if (ceil_mode && (count - 1) * stride >= size + pad)
        count--;
    return count;
}

/* conv2d and the 2-D pools on random layouts: input [N, C, H, W] laid out its own way (channels
 * last, transposed, stepped, broadcast), conv2d with drawn stride, padding, dilation and groups
 * (1, 2 or depthwise) and a bias or none, the weight laid out too; max_pool2d (padding, dilation,
 * ceil_mode drawn) and avg_pool2d (ceil_mode and count_include_pad drawn). f32 and f64; integer
 * values keep conv's sums and max exact, and avg to 1e-4 / 1e-10 relative. */
static void
run_window_case(int number)
{
    static const int64_t CHANNELS[] = {1, 2, 3, 4, 8, 16};
    static const int64_t SIDES[] = {1, 2, 3, 5, 7, 8, 9, 16, 17, 28, 33};
    static const int64_t KERNELS[] = {1, 2, 3, 5};
    draw d = {(uint64_t)number * 0x8EBC6AF09C88C6E3ull + 11};
    setting s = {.number = number};
    s.dtype = pick(&d, 2) ? YT_DTYPE_F32 : YT_DTYPE_F64;
    s.op = (op_kind)(OP_CONV2D + pick(&d, 3));
    s.nd = 4;
    s.sizes[0] = 1 + pick(&d, 3);
    s.sizes[1] = CHANNELS[pick(&d, sizeof CHANNELS / sizeof CHANNELS[0])];
    s.sizes[2] = SIDES[pick(&d, sizeof SIDES / sizeof SIDES[0])];
    s.sizes[3] = SIDES[pick(&d, sizeof SIDES / sizeof SIDES[0])];
    int64_t kernel[2], stride[2], pad[2], dilation[2] = {1, 1};
    for (int i = 0; i < 2; i++) {
        kernel[i] = KERNELS[pick(&d, sizeof KERNELS / sizeof KERNELS[0])];
        stride[i] = 1 + pick(&d, 3);
        pad[i] = pick(&d, kernel[i] / 2 + 1); /* pools take at most half the kernel */
        if (s.op != OP_AVG_POOL2D && pick(&d, 3) == 0)
            dilation[i] = 2;
    }
    const bool ceil_mode = s.op != OP_CONV2D && pick(&d, 2);
    const bool include_pad = pick(&d, 2);
    const int64_t groups_choice = pick(&d, 3);
    const int64_t groups = groups_choice == 0                          ? 1
                           : groups_choice == 1 && s.sizes[1] % 2 == 0 ? 2
                                                                       : s.sizes[1];
    const int64_t c_in = s.sizes[1];
    const int64_t c_out = s.op == OP_CONV2D ? groups * (1 + pick(&d, 3)) : c_in;
    draw_machine(&s, &d);

    const int64_t oh =
        window_count(s.sizes[2], kernel[0], stride[0], pad[0], dilation[0], ceil_mode);
    const int64_t ow =
        window_count(s.sizes[3], kernel[1], stride[1], pad[1], dilation[1], ceil_mode);
    operand x = {0}, weight = {0}, bias = {0};
    lay_out(&x, &d, s.sizes, 4, s.dtype, true, -15, 15);
    const int64_t weight_sizes[4] = {c_out, c_in / groups, kernel[0], kernel[1]};
    if (s.op == OP_CONV2D) {
        lay_out(&weight, &d, weight_sizes, 4, s.dtype, true, -3, 3);
        if (pick(&d, 2))
            lay_out(&bias, &d, &c_out, 1, s.dtype, true, -15, 15);
    }
    snprintf(
        s.operands, sizeof s.operands,
        "kernel %lldx%lld stride %lldx%lld pad %lldx%lld dilation %lldx%lld groups %lld, c_out "
        "%lld%s%s; x %s; w %s; b %s",
        (long long)kernel[0], (long long)kernel[1], (long long)stride[0], (long long)stride[1],
        (long long)pad[0], (long long)pad[1], (long long)dilation[0], (long long)dilation[1],
        (long long)groups, (long long)c_out, ceil_mode ? " ceil" : "",
        include_pad ? " include_pad" : "", x.layout, weight.view ? weight.layout : "-",
        bias.view ? bias.layout : "-");

    const int64_t n = s.sizes[0], h = s.sizes[2], w = s.sizes[3];
    const int64_t out_numel = oh > 0 && ow > 0 ? n * c_out * oh * ow : 0;
    double *want = malloc((size_t)(out_numel > 0 ? out_numel : 1) * sizeof(double));
    cr_assert_not_null(want);
    bool empty_window = false; /* one whose dilated taps all miss the input */
    for (int64_t o = 0; o < out_numel; o++) {
        const int64_t out_sizes[4] = {n, c_out, oh, ow};
        int64_t c[4];
        coordinates(o, out_sizes, 4, c);
        const int64_t h0 = c[2] * stride[0] - pad[0], w0 = c[3] * stride[1] - pad[1];
        if (s.op == OP_CONV2D) {
            const int64_t per_group = c_in / groups, first = c[1] / (c_out / groups) * per_group;
            double sum = 0;
            for (int64_t ci = 0; ci < per_group; ci++)
                for (int64_t i = 0; i < kernel[0]; i++)
                    for (int64_t j = 0; j < kernel[1]; j++) {
                        const int64_t hi = h0 + i * dilation[0], wj = w0 + j * dilation[1];
                        if (hi < 0 || hi >= h || wj < 0 || wj >= w)
                            continue;
                        const int64_t xc[4] = {c[0], first + ci, hi, wj}, wc[4] = {c[1], ci, i, j};
                        sum += value_at_coords(&x, xc) * value_at_coords(&weight, wc);
                    }
            want[o] = sum + (bias.view != NULL ? value_at_coords(&bias, &c[1]) : 0);
        } else if (s.op == OP_MAX_POOL2D) {
            double best = -INFINITY;
            int64_t taps = 0;
            for (int64_t i = 0; i < kernel[0]; i++)
                for (int64_t j = 0; j < kernel[1]; j++) {
                    const int64_t hi = h0 + i * dilation[0], wj = w0 + j * dilation[1];
                    if (hi < 0 || hi >= h || wj < 0 || wj >= w)
                        continue;
                    const int64_t xc[4] = {c[0], c[1], hi, wj};
                    const double v = value_at_coords(&x, xc);
                    best = v > best ? v : best;
                    taps++;
                }
            empty_window = empty_window || taps == 0;
            want[o] = best;
        } else {
            /* the window clipped to the padded input counts with count_include_pad, else only
             * its part inside the input */
            const int64_t h1 = h0 + kernel[0] < h + pad[0] ? h0 + kernel[0] : h + pad[0];
            const int64_t w1 = w0 + kernel[1] < w + pad[1] ? w0 + kernel[1] : w + pad[1];
            const int64_t padded = (h1 - h0) * (w1 - w0);
            const int64_t hs = h0 > 0 ? h0 : 0, ws = w0 > 0 ? w0 : 0;
            const int64_t he = h1 < h ? h1 : h, we = w1 < w ? w1 : w;
            double sum = 0;
            for (int64_t hi = hs; hi < he; hi++)
                for (int64_t wj = ws; wj < we; wj++) {
                    const int64_t xc[4] = {c[0], c[1], hi, wj};
                    sum += value_at_coords(&x, xc);
                }
            want[o] = sum / (double)(include_pad ? padded : (he - hs) * (we - ws));
        }
    }

    char what[1024];
    describe(&s, what, sizeof what);
    yt_tensor *result = NULL;
    if (s.op == OP_CONV2D)
        result =
            yt_conv2d_ex(x.view, weight.view, bias.view, stride, 2, pad, 2, dilation, 2, groups);
    else if (s.op == OP_MAX_POOL2D)
        result = yt_max_pool2d_ex(x.view, kernel, 2, stride, 2, pad, 2, dilation, 2, ceil_mode);
    else
        result =
            yt_avg_pool2d_ex(x.view, kernel, 2, stride, 2, pad, 2, ceil_mode, include_pad, YT_NONE);
    if (oh <= 0 || ow <= 0 || empty_window) {
        /* no window fits, or one takes no element of the input: an error (PyTorch gives -inf
         * for the latter; yaten refuses such a geometry, kernels/cpu/conv_geom.c) */
        cr_assert_null(result, "%s: a result where no window fits or one is empty", what);
        yt_clear_error();
    } else {
        cr_assert_not_null(result, "%s: %s", what, yt_errmsg());
        cr_assert_eq(yt_tensor_numel(result), out_numel, "%s: numel", what);
        expect_storage(&s, result, result, want, NULL);
        yt_release(result);
    }
    free(want);
    release_operand(&bias);
    release_operand(&weight);
    release_operand(&x);
}

Test(layouts, conv2d_and_pools_on_random_layouts_match_the_reference)
{
    sweep(run_window_case);
}
