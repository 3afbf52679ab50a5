/* Sequential: children "0", "1", ... run in order, each on the previous one's output. */
#include <stdio.h>

#include "module_internal.h"

static yt_tensor *
sequential_forward(yt_module *m, yt_tensor *const *in, int n)
{
    if (n != 1)
        return yt__module_arity_error(m, 1, n);
    yt_tensor *x = yt_retain(in[0]);
    for (int i = 0; i < m->n_children && x != NULL; i++) {
        yt_tensor *y = yt__module_call1(m->children[i], x);
        yt_release(x); /* intermediate activations live on only in the autograd graph */
        x = y;
    }
    return x;
}

const yt_module_kind yt__sequential_kind = {.name = "Sequential", .forward = sequential_forward};

yt_module *
yt_sequential_new(void)
{
    return yt_module_new(&yt__sequential_kind, NULL);
}

yt_status
yt_sequential_append(yt_module *seq, yt_module *child)
{
    if (seq == NULL)
        return yt__null_status("sequential_append", "seq");
    if (child == NULL)
        return yt__null_status("sequential_append", "child");
    if (seq->kind != &yt__sequential_kind)
        return yt__fail_status(YT_ERR_VALUE, "sequential_append: seq is a %s, not a Sequential",
                               seq->kind->name);
    char name[16];
    snprintf(name, sizeof name, "%d", seq->n_children);
    return yt_module_add_child(seq, name, child);
}
