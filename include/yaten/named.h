/* Ordered lists of named tensors: a module's parameters, a state dict, an optimizer's state, the
 * contents of a safetensors file. Included by <yaten.h>; not meant to be included on its own.
 *
 * Ownership: the list holds one reference to each tensor and its own copy of each name; it
 * borrows nothing. yt_named_tensors_clear() drops them all. */
#ifndef YATEN_NAMED_H
#define YATEN_NAMED_H

#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct yt_named_tensors {
    int64_t count;
    char **names;        /* names[i]: NUL-terminated, owned by the list */
    yt_tensor **tensors; /* tensors[i]: one reference owned by the list */
    int64_t capacity;    /* internal */
} yt_named_tensors;

/* An empty list: `yt_named_tensors list = YT_NAMED_TENSORS_INIT;` */
#define YT_NAMED_TENSORS_INIT                                                                      \
    {                                                                                              \
        0, NULL, NULL, 0                                                                           \
    }

/* Appends `t` under `name` (both copied/retained). Errors: YT_ERR_VALUE (NULL list, name or
 * tensor; empty name; a name already in the list), YT_ERR_NOMEM. On error the list is unchanged. */
YT_API yt_status yt_named_tensors_add(yt_named_tensors *list, const char *name, yt_tensor *t);

/* Index of `name` in the list, or -1 (no error recorded) when absent or when list/name is NULL. */
YT_API int64_t yt_named_tensors_find(const yt_named_tensors *list, const char *name);

/* The tensor named `name`: a new reference (owned by the open scope, if any, like every other
 * returned tensor), or NULL (no error recorded) when absent. */
YT_API yt_tensor *yt_named_tensors_get(const yt_named_tensors *list, const char *name);

/* Releases every tensor and name and leaves an empty list. NULL is a no-op. */
YT_API void yt_named_tensors_clear(yt_named_tensors *list);

#ifdef __cplusplus
}
#endif

#endif
