/* The yaten side of the differential tests against PyTorch (tests/diff/test_vs_torch.py).
 *
 * Usage: diff_runner PLAN OUTDIR
 * PLAN has one job per line, "CASE DTYPE FREE REFUSE": run yt_op_cases[CASE]
 * (generated/tests/op_cases.c) with the inputs in the bit mask FREE (those whose dtype the sample
 * leaves open) made in DTYPE. Floating inputs require grad, except those the op is not
 * differentiable with respect to (no_grad); REFUSE >= 0 makes that no_grad input require grad
 * too, so that the op's refusal can be compared with PyTorch's (a refusal job).
 * For each job the runner writes OUTDIR/CASE_DTYPE/ (CASE_DTYPE_refuseN/ for a refusal job): the
 * inputs it made (in0.npy, ...), the forward result (out.npy), and when the result requires grad,
 * the gradient fed to backward (gout.npy) and every input's gradient (grad0.npy, ...). meta.txt
 * lists each file with its yaten dtype (bf16 is stored as its raw 16 bits), or the error when the
 * op failed. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "op_cases.h"

/* Deterministic values; integral dtypes get small integers, bool a coin flip. */
static double
next_value(uint64_t *state, const char *domain, yt_dtype dtype)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    double u = (double)(*state >> 11) / 9007199254740992.0; /* [0, 1) */
    bool positive = domain != NULL && strcmp(domain, "positive") == 0;
    bool nonzero = domain != NULL && strcmp(domain, "nonzero") == 0;
    bool unit = domain != NULL && strcmp(domain, "unit") == 0;
    if (dtype == YT_DTYPE_BOOL)
        return u < 0.5 ? 0.0 : 1.0;
    if (!yt_dtype_is_floating(dtype)) {
        if (unit)
            return u < 0.5 ? 0.0 : 1.0;
        if (positive || dtype == YT_DTYPE_U8)
            return 1.0 + floor(u * 4.0); /* 1..4 */
        double v = floor(u * 7.0) - 3.0; /* -3..3 */
        return nonzero && v == 0.0 ? 1.0 : v;
    }
    if (positive)
        return 0.5 + 1.5 * u;
    if (unit)
        return 0.05 + 0.9 * u; /* probabilities, away from the ends where logs blow up */
    if (nonzero)
        return (u < 0.5 ? -1.0 : 1.0) * (0.2 + 1.6 * fabs(u - 0.5));
    return 4.0 * u - 2.0;
}

static yt_tensor *
make_tensor(const int64_t *sizes, int dim, yt_dtype dtype, uint64_t *state, const char *domain,
            int64_t high)
{
    int64_t numel = 1;
    for (int i = 0; i < dim; i++)
        numel *= sizes[i];
    double *values = malloc(sizeof(double) * (size_t)(numel > 0 ? numel : 1));
    if (values == NULL)
        return NULL;
    for (int64_t i = 0; i < numel; i++) {
        values[i] = next_value(state, domain, high > 0 ? YT_DTYPE_F64 : dtype);
        if (high > 0) /* an index tensor: values in [0, high) */
            values[i] = floor((values[i] + 2.0) / 4.0 * (double)high);
    }
    yt_tensor *f64 = yt_tensor_from_data(values, sizes, dim, YT_DTYPE_F64);
    free(values);
    yt_tensor *t = yt_to(f64, dtype);
    yt_release(f64);
    return t;
}

/* The input a case's spec describes. A stepped input is a view of a wider contiguous tensor,
 * returned in *wide (NULL otherwise; released by the caller): the runner writes that one, and
 * PyTorch takes the same step itself, so that its inputs do not come through yaten's stepped
 * copies (runtime/stepped_copy.c), which the op under test uses too. */
static yt_tensor *
make_input(const yt_case_tensor *spec, yt_dtype dtype, uint64_t *state, const char *domain,
           yt_tensor **wide)
{
    *wide = NULL;
    const int64_t step = spec->step > 1 ? spec->step : 1;
    int64_t sizes[YT_MAX_DIM];
    for (int i = 0; i < spec->dim; i++)
        sizes[i] = spec->sizes[i] * (i == spec->dim - 1 ? step : 1);
    yt_tensor *t =
        make_tensor(sizes, spec->dim, dtype, state, spec->high > 0 ? NULL : domain, spec->high);
    if (t != NULL && spec->transpose) {
        yt_tensor *view = yt_transpose(t, -2, -1);
        yt_release(t);
        t = view;
    }
    if (t != NULL && step > 1) {
        const int last = spec->dim - 1;
        *wide = t;
        t = yt_slice_ex(t, last, 0, sizes[last], step);
    }
    return t;
}

static const char *
npy_descr(yt_dtype dtype)
{
    switch (dtype) {
    case YT_DTYPE_BOOL:
        return "|b1";
    case YT_DTYPE_U8:
        return "|u1";
    case YT_DTYPE_I8:
        return "|i1";
    case YT_DTYPE_I16:
        return "<i2";
    case YT_DTYPE_I32:
        return "<i4";
    case YT_DTYPE_I64:
        return "<i8";
    case YT_DTYPE_F16:
        return "<f2";
    case YT_DTYPE_BF16:
        return "<u2"; /* raw bits; the reader reinterprets */
    case YT_DTYPE_F32:
        return "<f4";
    case YT_DTYPE_F64:
        return "<f8";
    default:
        return NULL;
    }
}

/* Writes `t` as a version 1.0 .npy file (C order) and records it in meta ("NAME DTYPE", and
 * "step N" after it when the input is every Nth element of t along its last dim). */
static int
write_npy(FILE *meta, const char *dir, const char *name, yt_tensor *t, int64_t step)
{
    yt_dtype dtype = yt_tensor_dtype(t);
    char header[512];
    int n = snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                     npy_descr(dtype));
    for (int i = 0; i < yt_tensor_dim(t); i++)
        n += snprintf(header + n, sizeof header - (size_t)n, "%lld,",
                      (long long)yt_tensor_size(t, i));
    n += snprintf(header + n, sizeof header - (size_t)n, "), }");
    int total = 10 + n + 1;
    int pad = (64 - total % 64) % 64;
    size_t bytes = (size_t)yt_tensor_numel(t) * yt_dtype_size(dtype);
    void *data = malloc(bytes ? bytes : 1);
    if (data == NULL || yt_tensor_copy_to(t, data, bytes, dtype) != YT_OK) {
        free(data);
        return -1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.npy", dir, name);
    FILE *f = fopen(path, "wb");
    if (f == NULL) {
        free(data);
        return -1;
    }
    unsigned header_len = (unsigned)(n + pad + 1);
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    fputc((int)(header_len & 0xff), f);
    fputc((int)(header_len >> 8), f);
    fwrite(header, 1, (size_t)n, f);
    for (int i = 0; i < pad; i++)
        fputc(' ', f);
    fputc('\n', f);
    fwrite(data, 1, bytes, f);
    free(data);
    fclose(f);
    if (step > 1)
        fprintf(meta, "%s %s step %lld\n", name, yt_dtype_name(dtype), (long long)step);
    else
        fprintf(meta, "%s %s\n", name, yt_dtype_name(dtype));
    return 0;
}

static yt_dtype
dtype_by_name(const char *name)
{
    for (int d = 0; d < YT_DTYPE_COUNT; d++)
        if (strcmp(yt_dtype_name((yt_dtype)d), name) == 0)
            return (yt_dtype)d;
    return YT_DTYPE_NONE;
}

/* Runs one job; every tensor it made is released before it returns (main checks none leak). */
static void
run_job(const yt_op_case *c, yt_dtype dtype, unsigned free_mask, int refuse, const char *dir,
        FILE *meta)
{
    uint64_t state = 0x9e3779b97f4a7c15ull;
    yt_tensor *inputs[YT_CASE_MAX_INPUTS] = {0};
    yt_tensor *out = NULL, *gout = NULL;
    for (int i = 0; i < c->n_inputs; i++) {
        const yt_case_tensor *spec = &c->inputs[i];
        yt_dtype d = (free_mask >> i) & 1u ? dtype : spec->dtype;
        yt_tensor *wide;
        inputs[i] = make_input(spec, d, &state, c->domain, &wide);
        if (inputs[i] == NULL) {
            fprintf(meta, "error input %d: %s\n", i, yt_errmsg());
            yt_release(wide);
            goto done;
        }
        if (yt_dtype_is_floating(d) && (!spec->no_grad || i == refuse))
            yt_set_requires_grad(inputs[i], true);
        char name[16];
        snprintf(name, sizeof name, "in%d", i);
        write_npy(meta, dir, name, wide != NULL ? wide : inputs[i], wide != NULL ? spec->step : 1);
        yt_release(wide);
    }
    out = c->call(inputs, NULL);
    if (out == NULL) {
        fprintf(meta, "error %s\n", yt_errmsg());
        goto done;
    }
    write_npy(meta, dir, "out", out, 1);
    if (!yt_requires_grad(out))
        goto done;
    gout = make_tensor(yt_tensor_sizes(out), yt_tensor_dim(out), yt_tensor_dtype(out), &state, NULL,
                       0);
    write_npy(meta, dir, "gout", gout, 1);
    if (yt_backward(out, gout, NULL) != YT_OK) {
        fprintf(meta, "error backward: %s\n", yt_errmsg());
        goto done;
    }
    for (int i = 0; i < c->n_inputs; i++) {
        yt_tensor *g = yt_requires_grad(inputs[i]) ? yt_grad(inputs[i]) : NULL;
        if (g == NULL)
            continue;
        char name[16];
        snprintf(name, sizeof name, "grad%d", i);
        write_npy(meta, dir, name, g, 1);
        yt_release(g);
    }
done:
    yt_clear_error();
    yt_release(gout);
    yt_release(out);
    for (int i = 0; i < c->n_inputs; i++)
        yt_release(inputs[i]);
}

int
main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s PLAN OUTDIR\n", argv[0]);
        return 2;
    }
    FILE *plan = fopen(argv[1], "r");
    if (plan == NULL) {
        fprintf(stderr, "%s: %s\n", argv[1], strerror(errno));
        return 2;
    }
    int index, refuse;
    unsigned free_mask;
    char dtype_name[16];
    int jobs = 0;
    while (fscanf(plan, "%d %15s %u %d", &index, dtype_name, &free_mask, &refuse) == 4) {
        yt_dtype dtype = dtype_by_name(dtype_name);
        if (index < 0 || index >= yt_op_case_count || dtype == YT_DTYPE_NONE || refuse < -1 ||
            refuse >= yt_op_cases[index].n_inputs) {
            fprintf(stderr, "%s: bad job '%d %s %u %d'\n", argv[1], index, dtype_name, free_mask,
                    refuse);
            fclose(plan);
            return 2;
        }
        char dir[4096];
        if (refuse >= 0)
            snprintf(dir, sizeof dir, "%s/%d_%s_refuse%d", argv[2], index, dtype_name, refuse);
        else
            snprintf(dir, sizeof dir, "%s/%d_%s", argv[2], index, dtype_name);
        if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
            fprintf(stderr, "%s: %s\n", dir, strerror(errno));
            fclose(plan);
            return 2;
        }
        char meta_path[4200];
        snprintf(meta_path, sizeof meta_path, "%s/meta.txt", dir);
        FILE *meta = fopen(meta_path, "w");
        if (meta == NULL) {
            fprintf(stderr, "%s: %s\n", meta_path, strerror(errno));
            fclose(plan);
            return 2;
        }
        run_job(&yt_op_cases[index], dtype, free_mask, refuse, dir, meta);
        fclose(meta);
        jobs++;
    }
    fclose(plan);
    if (yt_live_tensors() != 0) {
        fprintf(stderr, "diff_runner: %lld tensors leaked\n", (long long)yt_live_tensors());
        return 1;
    }
    printf("diff_runner: %d jobs\n", jobs);
    return 0;
}
