/* The yaten side of the interoperability tests (tests/io/test_*.py): loads and writes safetensors
 * and .npy files on the command line so that PyTorch and NumPy can check what yaten writes and
 * give it what they write.
 *
 *   roundtrip st-copy IN OUT    load a safetensors file and save it again (metadata too)
 *   roundtrip st-sums IN        print "name<TAB>dtype<TAB>[sizes]<TAB>sum" per tensor, then
 *                               "__metadata__<TAB>key<TAB>value" per metadata pair
 *   roundtrip st-make OUT       write the tensors of make_tensors() below
 *   roundtrip npy-copy IN OUT   load a .npy file and save it again
 *   roundtrip npy-make DIR      write DIR/<name>.npy for each tensor of make_tensors() (no bf16)
 *
 * Errors go to stderr as yaten's message, with exit status 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaten.h>

static int
fail(void)
{
    fprintf(stderr, "%s\n", yt_errmsg());
    return 1;
}

/* Element i of every made tensor is v(i) = ((7 i) mod 23 - 11) / 4 in its dtype, in row-major
 * order of the tensor as made (before any transpose); unsigned: (7 i) mod 23; bool: i mod 3 == 0.
 * The Python side computes the same formula. */
static yt_tensor *
make_values(yt_dtype dtype, const int64_t *sizes, int nd)
{
    int64_t n = 1;
    for (int d = 0; d < nd; d++)
        n *= sizes[d];
    double *v = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; i < n; i++) {
        if (dtype == YT_DTYPE_BOOL)
            v[i] = i % 3 == 0;
        else if (dtype == YT_DTYPE_U8)
            v[i] = (double)((7 * i) % 23);
        else if (yt_dtype_is_floating(dtype))
            v[i] = (double)((7 * i) % 23 - 11) / 4;
        else
            v[i] = (double)((7 * i) % 23 - 11);
    }
    yt_tensor *f = yt_tensor_from_data(v, sizes, nd, YT_DTYPE_F64);
    free(v);
    yt_tensor *t = yt_to(f, dtype);
    yt_release(f);
    return t;
}

/* Per dtype: "<dtype>.matrix" [3, 4], "<dtype>.scalar" [], "<dtype>.empty" [0, 5],
 * "<dtype>.transposed" (the [3, 4] values seen as [4, 3], a non-contiguous view),
 * "<dtype>.cube" [2, 3, 4]. */
static yt_status
make_tensors(yt_named_tensors *out, bool with_bf16)
{
    const yt_dtype dtypes[] = {YT_DTYPE_F64, YT_DTYPE_F32, YT_DTYPE_F16, YT_DTYPE_BF16,
                               YT_DTYPE_I64, YT_DTYPE_I32, YT_DTYPE_I16, YT_DTYPE_I8,
                               YT_DTYPE_U8,  YT_DTYPE_BOOL};
    const int64_t s34[] = {3, 4}, s05[] = {0, 5}, s234[] = {2, 3, 4};
    char name[64];
    for (size_t k = 0; k < sizeof dtypes / sizeof dtypes[0]; k++) {
        yt_dtype dt = dtypes[k];
        if (dt == YT_DTYPE_BF16 && !with_bf16)
            continue;
        const char *dn = yt_dtype_name(dt);
        yt_tensor *m = make_values(dt, s34, 2);
        yt_tensor *made[5] = {yt_retain(m), make_values(dt, NULL, 0), make_values(dt, s05, 2),
                              yt_t(m), make_values(dt, s234, 3)};
        const char *kinds[5] = {"matrix", "scalar", "empty", "transposed", "cube"};
        yt_release(m);
        yt_status st = YT_OK;
        for (int i = 0; i < 5; i++) {
            snprintf(name, sizeof name, "%s.%s", dn, kinds[i]);
            if (st == YT_OK)
                st = made[i] == NULL ? yt_errcode() : yt_named_tensors_add(out, name, made[i]);
            yt_release(made[i]);
        }
        if (st != YT_OK)
            return st;
    }
    return YT_OK;
}

static int
st_sums(const char *path)
{
    yt_named_tensors list = YT_NAMED_TENSORS_INIT;
    yt_metadata meta = YT_METADATA_INIT;
    if (yt_safetensors_load(path, &list, &meta) != YT_OK)
        return fail();
    for (int64_t i = 0; i < list.count; i++) {
        yt_tensor *t = list.tensors[i];
        int64_t n = yt_tensor_numel(t);
        double *v = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
        if (yt_tensor_copy_to(t, v, sizeof(double) * (size_t)n, YT_DTYPE_F64) != YT_OK)
            return fail();
        long double sum = 0;
        for (int64_t j = 0; j < n; j++)
            sum += v[j];
        free(v);
        printf("%s\t%s\t[", list.names[i], yt_dtype_name(yt_tensor_dtype(t)));
        for (int d = 0; d < yt_tensor_dim(t); d++)
            printf(d ? ", %lld" : "%lld", (long long)yt_tensor_size(t, d));
        printf("]\t%.17g\n", (double)sum);
    }
    for (int64_t i = 0; i < meta.count; i++)
        printf("__metadata__\t%s\t%s\n", meta.keys[i], meta.values[i]);
    yt_named_tensors_clear(&list);
    yt_metadata_clear(&meta);
    return 0;
}

int
main(int argc, char **argv)
{
    const char *cmd = argc > 1 ? argv[1] : "";
    if (strcmp(cmd, "st-copy") == 0 && argc == 4) {
        yt_named_tensors list = YT_NAMED_TENSORS_INIT;
        yt_metadata meta = YT_METADATA_INIT;
        if (yt_safetensors_load(argv[2], &list, &meta) != YT_OK ||
            yt_safetensors_save(argv[3], &list, &meta) != YT_OK)
            return fail();
        yt_named_tensors_clear(&list);
        yt_metadata_clear(&meta);
        return 0;
    }
    if (strcmp(cmd, "st-sums") == 0 && argc == 3)
        return st_sums(argv[2]);
    if (strcmp(cmd, "st-make") == 0 && argc == 3) {
        yt_named_tensors list = YT_NAMED_TENSORS_INIT;
        yt_metadata meta = YT_METADATA_INIT;
        if (make_tensors(&list, true) != YT_OK ||
            yt_metadata_set(&meta, "made_by", "yaten") != YT_OK ||
            yt_safetensors_save(argv[2], &list, &meta) != YT_OK)
            return fail();
        yt_named_tensors_clear(&list);
        yt_metadata_clear(&meta);
        return 0;
    }
    if (strcmp(cmd, "npy-copy") == 0 && argc == 4) {
        yt_tensor *t = yt_npy_load(argv[2]);
        if (t == NULL || yt_npy_save(argv[3], t) != YT_OK)
            return fail();
        yt_release(t);
        return 0;
    }
    if (strcmp(cmd, "npy-make") == 0 && argc == 3) {
        yt_named_tensors list = YT_NAMED_TENSORS_INIT;
        if (make_tensors(&list, false) != YT_OK)
            return fail();
        for (int64_t i = 0; i < list.count; i++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s.npy", argv[2], list.names[i]);
            if (yt_npy_save(path, list.tensors[i]) != YT_OK)
                return fail();
        }
        yt_named_tensors_clear(&list);
        return 0;
    }
    fprintf(stderr, "usage: roundtrip st-copy IN OUT | st-sums IN | st-make OUT | npy-copy IN OUT "
                    "| npy-make DIR\n");
    return 2;
}
