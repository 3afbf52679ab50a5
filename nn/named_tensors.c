/* Ordered lists of named tensors (include/yaten/named.h). Lookups are linear: the lists are state
 * dicts of tens to hundreds of entries, read once per load, never on a training step's path. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int64_t
yt_named_tensors_find(const yt_named_tensors *list, const char *name)
{
    if (list == NULL || name == NULL)
        return -1;
    for (int64_t i = 0; i < list->count; i++)
        if (strcmp(list->names[i], name) == 0)
            return i;
    return -1;
}

yt_status
yt_named_tensors_add(yt_named_tensors *list, const char *name, yt_tensor *t)
{
    if (list == NULL || name == NULL || t == NULL)
        return yt__fail_status(YT_ERR_VALUE, "named_tensors_add: %s is NULL",
                               list == NULL   ? "list"
                               : name == NULL ? "name"
                                              : "tensor");
    if (name[0] == '\0')
        return yt__fail_status(YT_ERR_VALUE, "named_tensors_add: the name is empty");
    if (yt_named_tensors_find(list, name) >= 0)
        return yt__fail_status(YT_ERR_VALUE, "named_tensors_add: '%s' is already in the list",
                               name);
    if (list->count == list->capacity) {
        int64_t cap = list->capacity ? 2 * list->capacity : 16;
        char **names = realloc(list->names, sizeof(char *) * (size_t)cap);
        if (names == NULL)
            return yt__fail_status(YT_ERR_NOMEM, "named_tensors_add: out of memory");
        list->names = names;
        yt_tensor **tensors = realloc(list->tensors, sizeof(yt_tensor *) * (size_t)cap);
        if (tensors == NULL)
            return yt__fail_status(YT_ERR_NOMEM, "named_tensors_add: out of memory");
        list->tensors = tensors;
        list->capacity = cap;
    }
    char *copy = strdup(name);
    if (copy == NULL)
        return yt__fail_status(YT_ERR_NOMEM, "named_tensors_add: out of memory");
    list->names[list->count] = copy;
    list->tensors[list->count] = yt_retain(t);
    list->count++;
    return YT_OK;
}

yt_tensor *
yt_named_tensors_get(const yt_named_tensors *list, const char *name)
{
    int64_t i = yt_named_tensors_find(list, name);
    /* a new reference like any other: the open scope owns it */
    return i < 0 ? NULL : yt__scope_track(yt_retain(list->tensors[i]));
}

void
yt_named_tensors_clear(yt_named_tensors *list)
{
    if (list == NULL)
        return;
    for (int64_t i = 0; i < list->count; i++) {
        free(list->names[i]);
        yt_release(list->tensors[i]);
    }
    free(list->names);
    free(list->tensors);
    *list = (yt_named_tensors)YT_NAMED_TENSORS_INIT;
}
