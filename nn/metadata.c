/* String key/value metadata (include/yaten/io.h): the "__metadata__" of a safetensors file and of
 * checkpoints. Lookups are linear: a file holds a handful of keys. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int64_t
find_key(const yt_metadata *meta, const char *key)
{
    for (int64_t i = 0; i < meta->count; i++)
        if (strcmp(meta->keys[i], key) == 0)
            return i;
    return -1;
}

const char *
yt_metadata_get(const yt_metadata *meta, const char *key)
{
    if (meta == NULL || key == NULL)
        return NULL;
    int64_t i = find_key(meta, key);
    return i < 0 ? NULL : meta->values[i];
}

yt_status
yt_metadata_set(yt_metadata *meta, const char *key, const char *value)
{
    if (meta == NULL || key == NULL || value == NULL)
        return yt__fail_status(YT_ERR_VALUE, "metadata_set: %s is NULL",
                               meta == NULL  ? "meta"
                               : key == NULL ? "key"
                                             : "value");
    if (key[0] == '\0')
        return yt__fail_status(YT_ERR_VALUE, "metadata_set: the key is empty");
    char *value_copy = strdup(value);
    if (value_copy == NULL)
        return yt__fail_status(YT_ERR_NOMEM, "metadata_set: out of memory");
    int64_t i = find_key(meta, key);
    if (i >= 0) {
        free(meta->values[i]);
        meta->values[i] = value_copy;
        return YT_OK;
    }
    if (meta->count == meta->capacity) {
        int64_t cap = meta->capacity ? 2 * meta->capacity : 8;
        char **keys = realloc(meta->keys, sizeof(char *) * (size_t)cap);
        if (keys != NULL)
            meta->keys = keys;
        char **values = keys == NULL ? NULL : realloc(meta->values, sizeof(char *) * (size_t)cap);
        if (values == NULL) {
            free(value_copy);
            return yt__fail_status(YT_ERR_NOMEM, "metadata_set: out of memory");
        }
        meta->values = values;
        meta->capacity = cap;
    }
    char *key_copy = strdup(key);
    if (key_copy == NULL) {
        free(value_copy);
        return yt__fail_status(YT_ERR_NOMEM, "metadata_set: out of memory");
    }
    meta->keys[meta->count] = key_copy;
    meta->values[meta->count] = value_copy;
    meta->count++;
    return YT_OK;
}

void
yt_metadata_clear(yt_metadata *meta)
{
    if (meta == NULL)
        return;
    for (int64_t i = 0; i < meta->count; i++) {
        free(meta->keys[i]);
        free(meta->values[i]);
    }
    free(meta->keys);
    free(meta->values);
    *meta = (yt_metadata)YT_METADATA_INIT;
}
