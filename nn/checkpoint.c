/* Checkpoints (include/yaten/io.h): the model, optimizer, scheduler, loader and RNG state dicts
 * of a training run in one safetensors file, each under its part's name prefix, so a resumed run
 * continues bit-identically. Also the RNG's state dict, the one piece of training state that
 * lives in no module or optimizer.
 *
 * File layout: tensors "<prefix><name>"; metadata "format" = "yaten-checkpoint", "version" = "1",
 * "parts" = the prefixes joined by ',' (so a part with no tensors is still known to be present),
 * plus the caller's keys. Nothing but the metadata distinguishes a checkpoint from any other
 * safetensors file: PyTorch reads it as a flat state dict. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define FORMAT_NAME    "yaten-checkpoint"
#define FORMAT_VERSION "1"

static bool
is_reserved(const char *key)
{
    return strcmp(key, "format") == 0 || strcmp(key, "version") == 0 || strcmp(key, "parts") == 0;
}

static bool
starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Prefixes must be non-empty, without ',' (the separator of "parts"), and none may start another
 * (a name would then belong to two parts). */
static yt_status
check_parts(const char *op, const char *path, const yt_checkpoint_part *parts, int n_parts)
{
    if (path == NULL || parts == NULL)
        return yt__fail_status(YT_ERR_VALUE, "%s: %s is NULL", op, path == NULL ? "path" : "parts");
    if (n_parts < 1)
        return yt__fail_status(YT_ERR_VALUE, "%s: %s: n_parts=%d must be at least 1", op, path,
                               n_parts);
    for (int i = 0; i < n_parts; i++) {
        const char *p = parts[i].prefix;
        if (p == NULL || p[0] == '\0' || strchr(p, ',') != NULL)
            return yt__fail_status(YT_ERR_VALUE,
                                   "%s: %s: parts[%d].prefix %s%s%s must be non-empty, without ','",
                                   op, path, i, p ? "'" : "", p ? p : "NULL", p ? "'" : "");
        if (parts[i].tensors == NULL)
            return yt__fail_status(YT_ERR_VALUE, "%s: %s: parts[%d].tensors ('%s') is NULL", op,
                                   path, i, p);
        for (int j = 0; j < i; j++)
            if (starts_with(p, parts[j].prefix) || starts_with(parts[j].prefix, p))
                return yt__fail_status(YT_ERR_VALUE,
                                       "%s: %s: prefixes '%s' and '%s' overlap (a name would "
                                       "belong to both parts)",
                                       op, path, parts[j].prefix, p);
    }
    return YT_OK;
}

yt_status
yt_checkpoint_save(const char *path, const yt_checkpoint_part *parts, int n_parts,
                   const yt_metadata *meta)
{
    static const char op[] = "checkpoint_save";
    if (check_parts(op, path, parts, n_parts) != YT_OK)
        return yt_errcode();
    for (int64_t i = 0; meta != NULL && i < meta->count; i++)
        if (meta->keys[i] != NULL && is_reserved(meta->keys[i]))
            return yt__fail_status(YT_ERR_VALUE,
                                   "%s: %s: metadata key '%s' is reserved for the checkpoint "
                                   "format",
                                   op, path, meta->keys[i]);

    yt_named_tensors all = YT_NAMED_TENSORS_INIT;
    yt_metadata m = YT_METADATA_INIT;
    size_t joined_len = 1;
    for (int i = 0; i < n_parts; i++)
        joined_len += strlen(parts[i].prefix) + 1;
    char *joined = calloc(1, joined_len);
    yt_status st = joined == NULL ? yt__fail_status(YT_ERR_NOMEM, "%s: out of memory", op) : YT_OK;
    for (int i = 0; st == YT_OK && i < n_parts; i++) {
        if (i > 0)
            strcat(joined, ",");
        strcat(joined, parts[i].prefix);
    }
    if (st == YT_OK)
        st = yt_metadata_set(&m, "format", FORMAT_NAME);
    if (st == YT_OK)
        st = yt_metadata_set(&m, "version", FORMAT_VERSION);
    if (st == YT_OK)
        st = yt_metadata_set(&m, "parts", joined);
    for (int64_t i = 0; st == YT_OK && meta != NULL && i < meta->count; i++) {
        if (meta->keys[i] == NULL || meta->values[i] == NULL)
            st = yt__fail_status(YT_ERR_VALUE, "%s: %s: metadata entry %lld is NULL", op, path,
                                 (long long)i);
        else
            st = yt_metadata_set(&m, meta->keys[i], meta->values[i]);
    }

    /* One flat list: the tensors are retained, not copied. */
    char *name = NULL;
    size_t name_cap = 0;
    for (int i = 0; st == YT_OK && i < n_parts; i++) {
        const yt_named_tensors *list = parts[i].tensors;
        size_t plen = strlen(parts[i].prefix);
        for (int64_t k = 0; st == YT_OK && k < list->count; k++) {
            if (list->names[k] == NULL || list->tensors[k] == NULL) {
                st = yt__fail_status(YT_ERR_VALUE, "%s: %s: part '%s' entry %lld is NULL", op, path,
                                     parts[i].prefix, (long long)k);
                break;
            }
            size_t need = plen + strlen(list->names[k]) + 1;
            if (need > name_cap) {
                char *grown = realloc(name, need);
                if (grown == NULL) {
                    st = yt__fail_status(YT_ERR_NOMEM, "%s: out of memory", op);
                    break;
                }
                name = grown;
                name_cap = need;
            }
            memcpy(name, parts[i].prefix, plen);
            strcpy(name + plen, list->names[k]);
            st = yt_named_tensors_add(&all, name, list->tensors[k]);
        }
    }
    if (st == YT_OK)
        st = yt_safetensors_save(path, &all, &m);
    free(name);
    free(joined);
    yt_named_tensors_clear(&all);
    yt_metadata_clear(&m);
    return st;
}

/* Splits the file's "parts" value into `prefixes` (pointers into `buf`, a copy). */
static yt_status
split_parts(const char *path, const char *value, char **buf, char ***prefixes, int *count)
{
    *buf = strdup(value);
    int n = 1;
    for (const char *c = value; *c; c++)
        n += *c == ',';
    *prefixes = malloc(sizeof(char *) * (size_t)n);
    if (*buf == NULL || *prefixes == NULL)
        return yt__fail_status(YT_ERR_NOMEM, "%s: out of memory", path);
    int k = 0;
    char *save = NULL;
    for (char *tok = strtok_r(*buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        (*prefixes)[k++] = tok;
    *count = k;
    for (int i = 0; i < k; i++)
        for (int j = 0; j < i; j++)
            if (starts_with((*prefixes)[i], (*prefixes)[j]) ||
                starts_with((*prefixes)[j], (*prefixes)[i]))
                return yt__fail_status(YT_ERR_IO,
                                       "%s: the checkpoint's parts '%s' and '%s' overlap", path,
                                       (*prefixes)[j], (*prefixes)[i]);
    return YT_OK;
}

static yt_status
check_format(const char *path, const yt_metadata *meta)
{
    const char *format = yt_metadata_get(meta, "format");
    const char *version = yt_metadata_get(meta, "version");
    if (format == NULL || strcmp(format, FORMAT_NAME) != 0)
        return yt__fail_status(YT_ERR_IO,
                               "%s: not a yaten checkpoint (metadata 'format' is %s%s%s, expected "
                               "'" FORMAT_NAME "')",
                               path, format ? "'" : "", format ? format : "missing",
                               format ? "'" : "");
    if (version == NULL || strcmp(version, FORMAT_VERSION) != 0)
        return yt__fail_status(YT_ERR_IO,
                               "%s: checkpoint version %s%s%s is not supported (this yaten reads "
                               "version " FORMAT_VERSION ")",
                               path, version ? "'" : "", version ? version : "missing",
                               version ? "'" : "");
    if (yt_metadata_get(meta, "parts") == NULL)
        return yt__fail_status(YT_ERR_IO, "%s: the checkpoint has no 'parts' metadata", path);
    return YT_OK;
}

yt_status
yt_checkpoint_load(const char *path, yt_checkpoint_part *parts, int n_parts, yt_metadata *meta_out)
{
    static const char op[] = "checkpoint_load";
    if (check_parts(op, path, parts, n_parts) != YT_OK)
        return yt_errcode();
    for (int i = 0; i < n_parts; i++)
        if (parts[i].tensors->count != 0)
            return yt__fail_status(
                YT_ERR_VALUE, "%s: %s: parts[%d].tensors ('%s') must be empty (it holds %lld)", op,
                path, i, parts[i].prefix, (long long)parts[i].tensors->count);

    yt_named_tensors all = YT_NAMED_TENSORS_INIT;
    yt_metadata meta = YT_METADATA_INIT;
    char *buf = NULL;
    char **file_parts = NULL;
    int n_file = 0;
    int *part_of = NULL; /* requested part of each tensor, or -1 (a part not requested) */
    yt_status st = yt_safetensors_load(path, &all, &meta);
    if (st == YT_OK)
        st = check_format(path, &meta);
    if (st == YT_OK)
        st = split_parts(path, yt_metadata_get(&meta, "parts"), &buf, &file_parts, &n_file);
    for (int i = 0; st == YT_OK && i < n_parts; i++) {
        int k = 0;
        while (k < n_file && strcmp(file_parts[k], parts[i].prefix) != 0)
            k++;
        if (k == n_file)
            st = yt__fail_status(YT_ERR_IO, "%s: the checkpoint has no part '%s' (it has %s)", path,
                                 parts[i].prefix, yt_metadata_get(&meta, "parts"));
    }
    if (st == YT_OK) {
        part_of = malloc(sizeof(int) * (size_t)(all.count ? all.count : 1));
        if (part_of == NULL)
            st = yt__fail_status(YT_ERR_NOMEM, "%s: out of memory", path);
    }
    for (int64_t t = 0; st == YT_OK && t < all.count; t++) {
        const char *name = all.names[t];
        int k = 0;
        while (k < n_file && !starts_with(name, file_parts[k]))
            k++;
        if (k == n_file) {
            st = yt__fail_status(YT_ERR_IO,
                                 "%s: tensor '%s' belongs to none of the checkpoint's parts (%s)",
                                 path, name, yt_metadata_get(&meta, "parts"));
            break;
        }
        if (name[strlen(file_parts[k])] == '\0') {
            st = yt__fail_status(YT_ERR_IO, "%s: tensor '%s' is only a prefix, with no name", path,
                                 name);
            break;
        }
        part_of[t] = -1;
        for (int i = 0; i < n_parts; i++)
            if (strcmp(parts[i].prefix, file_parts[k]) == 0)
                part_of[t] = i;
    }
    /* Everything is checked: fill the lists (only allocation can fail from here). */
    for (int64_t t = 0; st == YT_OK && t < all.count; t++)
        if (part_of[t] >= 0)
            st = yt_named_tensors_add(parts[part_of[t]].tensors,
                                      all.names[t] + strlen(parts[part_of[t]].prefix),
                                      all.tensors[t]);
    for (int64_t i = 0; st == YT_OK && meta_out != NULL && i < meta.count; i++)
        if (!is_reserved(meta.keys[i]))
            st = yt_metadata_set(meta_out, meta.keys[i], meta.values[i]);
    if (st != YT_OK)
        for (int i = 0; i < n_parts; i++)
            yt_named_tensors_clear(parts[i].tensors);
    free(part_of);
    free(file_parts);
    free(buf);
    yt_named_tensors_clear(&all);
    yt_metadata_clear(&meta);
    return st;
}

/* ---------------------------------------------------------------- RNG state */

yt_status
yt_generator_state_dict(yt_generator *gen, yt_named_tensors *out)
{
    static const char op[] = "generator_state_dict";
    if (out == NULL)
        return yt__fail_status(YT_ERR_VALUE, "%s: out is NULL", op);
    if (yt_named_tensors_find(out, "seed") >= 0 || yt_named_tensors_find(out, "offset") >= 0)
        return yt__fail_status(YT_ERR_VALUE, "%s: out already holds '%s'", op,
                               yt_named_tensors_find(out, "seed") >= 0 ? "seed" : "offset");
    yt_generator_state state;
    if (yt_generator_get_state(gen, &state) != YT_OK)
        return yt_errcode();
    /* The uint64 bits go into i64 unchanged (memcpy, not a conversion). */
    int64_t bits[2];
    memcpy(&bits[0], &state.seed, sizeof bits[0]);
    memcpy(&bits[1], &state.offset, sizeof bits[1]);
    const char *names[2] = {"seed", "offset"};
    int64_t count0 = out->count;
    yt_status st = YT_OK;
    for (int i = 0; i < 2 && st == YT_OK; i++) {
        yt__scope_suspend();
        yt_tensor *t = yt_tensor_from_data(&bits[i], NULL, 0, YT_DTYPE_I64);
        yt__scope_resume();
        st = t == NULL ? yt_errcode() : yt_named_tensors_add(out, names[i], t);
        yt_release(t);
    }
    if (st != YT_OK && out->count > count0) { /* drop "seed" if "offset" failed */
        out->count--;
        free(out->names[out->count]);
        yt_release(out->tensors[out->count]);
    }
    return st;
}

static yt_status
read_u64(const yt_named_tensors *sd, const char *name, uint64_t *value)
{
    static const char op[] = "generator_load_state_dict";
    int64_t i = yt_named_tensors_find(sd, name);
    if (i < 0)
        return yt__fail_status(YT_ERR_VALUE, "%s: '%s' is missing", op, name);
    yt_tensor *t = sd->tensors[i];
    if (t == NULL || yt_tensor_dtype(t) != YT_DTYPE_I64 || yt_tensor_numel(t) != 1 ||
        yt_tensor_device(t) != YT_DEVICE_CPU)
        return yt__fail_status(YT_ERR_VALUE,
                               "%s: '%s' must be a one-element i64 CPU tensor, got %s with %lld "
                               "elements",
                               op, name, t ? yt_dtype_name(yt_tensor_dtype(t)) : "NULL",
                               t ? (long long)yt_tensor_numel(t) : 0LL);
    memcpy(value, yt_tensor_data(t), sizeof *value);
    return YT_OK;
}

yt_status
yt_generator_load_state_dict(yt_generator *gen, const yt_named_tensors *sd)
{
    static const char op[] = "generator_load_state_dict";
    if (sd == NULL)
        return yt__fail_status(YT_ERR_VALUE, "%s: sd is NULL", op);
    for (int64_t i = 0; i < sd->count; i++)
        if (strcmp(sd->names[i], "seed") != 0 && strcmp(sd->names[i], "offset") != 0)
            return yt__fail_status(YT_ERR_VALUE,
                                   "%s: unexpected '%s' (a generator's state is 'seed' and "
                                   "'offset')",
                                   op, sd->names[i]);
    yt_generator_state state;
    if (read_u64(sd, "seed", &state.seed) != YT_OK ||
        read_u64(sd, "offset", &state.offset) != YT_OK)
        return yt_errcode();
    return yt_generator_set_state(gen, &state);
}
