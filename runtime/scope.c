/* Scopes: a scope owns one reference to every tensor returned to the user while it is open, so a
 * training-loop body needs no yt_release() calls. Each scope is a growable array of tensor
 * pointers; scopes nest through a per-thread stack (yt__tls.scope). */
#include <stdlib.h>

#include "internal.h"

/* This thread's grad mode, anomaly mode and scope stack. */
_Thread_local yt__thread_state yt__tls;

struct yt__scope {
    yt__scope *parent;
    yt_tensor **items; /* one owned reference per entry; a tensor may appear more than once */
    size_t len;
    size_t cap;
};

enum { FIRST_CAP = 64 };

yt_status
yt_scope_begin(void)
{
    yt__scope *s = calloc(1, sizeof *s);
    if (s == NULL)
        return yt__fail_status(YT_ERR_NOMEM, "yt_scope_begin: out of memory");
    s->parent = yt__tls.scope;
    yt__tls.scope = s;
    return YT_OK;
}

yt_status
yt_scope_end(void)
{
    yt__scope *s = yt__tls.scope;
    if (s == NULL)
        return yt__fail_status(YT_ERR_STATE, "yt_scope_end: no scope is open");
    /* Pop first: nothing released below may land in the scope being torn down. */
    yt__tls.scope = s->parent;
    /* Newest first, the reverse of creation, like unwinding a stack. */
    for (size_t i = s->len; i > 0; i--)
        yt_release(s->items[i - 1]);
    free(s->items);
    free(s);
    return YT_OK;
}

static bool
push(yt__scope *s, yt_tensor *t)
{
    if (s->len == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : FIRST_CAP;
        yt_tensor **items = realloc(s->items, cap * sizeof *items);
        if (items == NULL)
            return false;
        s->items = items;
        s->cap = cap;
    }
    s->items[s->len++] = t;
    return true;
}

yt_tensor *
yt__scope_track(yt_tensor *t)
{
    yt__scope *s = yt__tls.scope;
    if (t == NULL || s == NULL || yt__tls.scope_suspended > 0)
        return t;
    if (!push(s, t)) {
        yt_release(t);
        return yt__fail(YT_ERR_NOMEM, "scope: out of memory tracking a result");
    }
    return t;
}

yt_tensor *
yt_scope_keep(yt_tensor *t)
{
    yt__scope *s = yt__tls.scope;
    if (t == NULL || s == NULL)
        return t;
    /* Search from the end: the tensor kept is nearly always one of the latest results. */
    size_t i = s->len;
    while (i > 0 && s->items[i - 1] != t)
        i--;
    if (i == 0)
        return t; /* not owned by this scope (created outside it, or already kept) */
    s->items[i - 1] = s->items[--s->len];
    if (s->parent != NULL && !push(s->parent, t)) {
        /* Cannot hand it on: leave it with this scope rather than leak or free it early. */
        s->items[s->len++] = t;
        return yt__fail(YT_ERR_NOMEM, "yt_scope_keep: out of memory");
    }
    return t;
}

yt_status
yt__scope_enter(yt__scope_outer *outer)
{
    outer->scope = yt__tls.scope;
    outer->suspended = yt__tls.scope_suspended;
    yt__tls.scope = NULL; /* no parent: yt_scope_keep hands results to the code, not to a scope */
    yt__tls.scope_suspended = 0;
    yt_status st = yt_scope_begin();
    if (st != YT_OK) {
        yt__tls.scope = outer->scope;
        yt__tls.scope_suspended = outer->suspended;
    }
    return st;
}

void
yt__scope_leave(const yt__scope_outer *outer)
{
    yt_scope_end(); /* the one yt__scope_enter opened: cannot fail */
    yt__tls.scope = outer->scope;
    yt__tls.scope_suspended = outer->suspended;
}
