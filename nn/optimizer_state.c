/* Optimizer state dicts (include/yaten/optim.h): group options and per-parameter buffers as
 * named tensors, keyed by parameter name. Loading validates the whole dict against the
 * optimizer before it changes anything, and copies what it keeps. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "optim_internal.h"

static const char LOAD[] = "optimizer_load_state_dict";

/* ---------------------------------------------------------------- scalar helpers */

static yt_tensor *
scalar_of(yt_dtype dtype, const void *value)
{
    const yt_shape shape = {.dim = 0};
    yt_tensor *t = yt__empty(&shape, dtype, YT_DEVICE_CPU);
    if (t != NULL)
        memcpy(t->storage->data, value, 8);
    return t;
}

yt_tensor *
yt__optim_scalar_f64(double v)
{
    return scalar_of(YT_DTYPE_F64, &v);
}

yt_tensor *
yt__optim_scalar_i64(int64_t v)
{
    return scalar_of(YT_DTYPE_I64, &v);
}

/* Adds `t` (consumed) under the printf-formatted name. */
static yt_status
add_formatted(yt_named_tensors *out, yt_tensor *t, const char *fmt, va_list ap)
{
    char *name = NULL;
    if (t == NULL || vasprintf(&name, fmt, ap) < 0) {
        yt_release(t);
        return yt__fail_status(YT_ERR_NOMEM, "state_dict: out of memory");
    }
    yt_status st = yt_named_tensors_add(out, name, t);
    yt_release(t);
    free(name);
    return st;
}

yt_status
yt__optim_add_f64(yt_named_tensors *out, double v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    yt_status st = add_formatted(out, yt__optim_scalar_f64(v), fmt, ap);
    va_end(ap);
    return st;
}

yt_status
yt__optim_add_i64(yt_named_tensors *out, int64_t v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    yt_status st = add_formatted(out, yt__optim_scalar_i64(v), fmt, ap);
    va_end(ap);
    return st;
}

/* The 0-d tensor `key` of `sd`, checked for rank; NULL with the error set. Borrowed. */
static yt_tensor *
scalar_entry(const yt_named_tensors *sd, const char *key, const char *fn)
{
    int64_t i = yt_named_tensors_find(sd, key);
    if (i < 0)
        return yt__fail(YT_ERR_VALUE, "%s: the state dict has no '%s'", fn, key);
    yt_tensor *t = sd->tensors[i];
    if (t->dim != 0) {
        char sizes[YT__SIZES_BUF];
        return yt__fail(YT_ERR_SHAPE, "%s: '%s' must be a 0-d tensor, got shape %s", fn, key,
                        yt__format_sizes(sizes, sizeof sizes, t->sizes, t->dim));
    }
    return t;
}

yt_status
yt__optim_read_f64(const yt_named_tensors *sd, const char *key, const char *fn, double *out)
{
    yt_tensor *t = scalar_entry(sd, key, fn);
    if (t == NULL)
        return yt__last_status();
    if (!yt_dtype_is_floating(t->dtype))
        return yt__fail_status(YT_ERR_DTYPE, "%s: '%s' must be a floating tensor, got %s", fn, key,
                               yt_dtype_name(t->dtype));
    return yt_tensor_copy_to(t, out, sizeof *out, YT_DTYPE_F64);
}

yt_status
yt__optim_read_i64(const yt_named_tensors *sd, const char *key, const char *fn, int64_t *out)
{
    yt_tensor *t = scalar_entry(sd, key, fn);
    if (t == NULL)
        return yt__last_status();
    if (yt_dtype_is_floating(t->dtype))
        return yt__fail_status(YT_ERR_DTYPE, "%s: '%s' must be an integer tensor, got %s", fn, key,
                               yt_dtype_name(t->dtype));
    return yt_tensor_copy_to(t, out, sizeof *out, YT_DTYPE_I64);
}

/* ---------------------------------------------------------------- saving */

/* A contiguous copy of a buffer, outside any scope. */
static yt_tensor *
copy_buffer(yt_tensor *src, yt_dtype dtype)
{
    return yt__cast_copy(src, dtype);
}

yt_status
yt_optimizer_state_dict(yt_optimizer *opt, yt_named_tensors *out)
{
    if (opt == NULL || out == NULL)
        return yt__fail_status(YT_ERR_VALUE, "optimizer_state_dict: %s is NULL",
                               opt == NULL ? "opt" : "out");
    const yt__optim_kind *kind = opt->kind;
    yt_status st = YT_OK;
    for (int g = 0; st == YT_OK && g < opt->n_groups; g++) {
        const char *options = opt->groups[g].options;
        for (int f = 0; st == YT_OK && f < kind->n_fields; f++) {
            const yt__optim_field *field = &kind->fields[f];
            if (field->is_flag)
                st = yt__optim_add_i64(out, *(const bool *)(options + field->offset), "group.%d.%s",
                                       g, field->name);
            else
                st = yt__optim_add_f64(out, yt__optim_real(options, field->offset), "group.%d.%s",
                                       g, field->name);
        }
        if (st == YT_OK && !isnan(opt->groups[g].initial_lr))
            st = yt__optim_add_f64(out, opt->groups[g].initial_lr, "group.%d.initial_lr", g);
    }
    for (int64_t i = 0; st == YT_OK && i < opt->n_params; i++) {
        const yt__optim_param *p = &opt->params[i];
        if (!p->has_state)
            continue;
        if (kind->has_step)
            st = yt__optim_add_i64(out, p->step, "state.%s.step", p->name);
        for (int s = 0; st == YT_OK && s < kind->n_slots; s++) {
            if (p->slot[s] == NULL)
                continue;
            yt_tensor *copy = copy_buffer(p->slot[s], p->slot[s]->dtype);
            if (copy == NULL)
                return yt__last_status();
            char *name = NULL;
            if (asprintf(&name, "state.%s.%s", p->name, kind->slots[s]) < 0) {
                yt_release(copy);
                return yt__fail_status(YT_ERR_NOMEM, "optimizer_state_dict: out of memory");
            }
            st = yt_named_tensors_add(out, name, copy);
            free(name);
            yt_release(copy);
        }
    }
    return st;
}

/* ---------------------------------------------------------------- loading */

/* What one parameter's state will be after the load. */
typedef struct pending_state {
    bool present;
    int64_t step;
    yt_tensor *slot[YT__OPTIM_MAX_SLOTS]; /* borrowed from sd, then replaced by copies */
} pending_state;

typedef struct load_plan {
    char *options;        /* n_groups * options_size */
    double *initial_lr;   /* n_groups */
    pending_state *state; /* n_params */
    bool *used;           /* sd->count: entries consumed by the plan */
} load_plan;

static void
free_plan(load_plan *plan, int64_t n_params, bool owns_copies)
{
    if (owns_copies && plan->state != NULL)
        for (int64_t i = 0; i < n_params; i++)
            for (int s = 0; s < YT__OPTIM_MAX_SLOTS; s++)
                yt_release(plan->state[i].slot[s]);
    free(plan->options);
    free(plan->initial_lr);
    free(plan->state);
    free(plan->used);
}

/* Index of printf(fmt, a, b) in sd, marking it used; -1 when absent. */
static int64_t
find_key(const yt_named_tensors *sd, load_plan *plan, char *key, size_t cap, const char *fmt,
         const char *a, const char *b)
{
    snprintf(key, cap, fmt, a, b);
    int64_t i = yt_named_tensors_find(sd, key);
    if (i >= 0)
        plan->used[i] = true;
    return i;
}

static yt_status
plan_groups(const yt_optimizer *opt, const yt_named_tensors *sd, load_plan *plan)
{
    const yt__optim_kind *kind = opt->kind;
    char key[96];
    for (int g = 0; g < opt->n_groups; g++) {
        char *options = plan->options + (size_t)g * kind->options_size;
        memcpy(options, opt->groups[g].options, kind->options_size);
        char group[24];
        snprintf(group, sizeof group, "%d", g);
        for (int f = 0; f < kind->n_fields; f++) {
            const yt__optim_field *field = &kind->fields[f];
            int64_t i = find_key(sd, plan, key, sizeof key, "group.%s.%s", group, field->name);
            if (i < 0)
                return yt__fail_status(YT_ERR_VALUE, "%s: %s: the state dict has no '%s'", LOAD,
                                       kind->name, key);
            if (field->is_flag) {
                int64_t v;
                if (yt__optim_read_i64(sd, key, LOAD, &v) != YT_OK)
                    return yt__last_status();
                if (v != 0 && v != 1)
                    return yt__fail_status(YT_ERR_VALUE, "%s: '%s'=%lld must be 0 or 1", LOAD, key,
                                           (long long)v);
                *(bool *)(options + field->offset) = v != 0;
            } else if (yt__optim_read_f64(sd, key, LOAD, (double *)(options + field->offset)) !=
                       YT_OK) {
                return yt__last_status();
            }
        }
        char fn[160];
        snprintf(fn, sizeof fn, "%s: group %d", LOAD, g);
        if (yt__optim_check_finite(kind, options, fn) != YT_OK ||
            kind->validate(options, fn) != YT_OK)
            return yt__last_status();
        plan->initial_lr[g] = NAN;
        if (find_key(sd, plan, key, sizeof key, "group.%s.%s", group, "initial_lr") >= 0 &&
            yt__optim_read_f64(sd, key, LOAD, &plan->initial_lr[g]) != YT_OK)
            return yt__last_status();
    }
    return YT_OK;
}

static yt_status
check_buffer(const yt__optim_param *p, const yt_tensor *t, const char *key)
{
    if (t->dtype != p->tensor->dtype)
        return yt__fail_status(YT_ERR_DTYPE, "%s: '%s' is %s but parameter '%s' is %s", LOAD, key,
                               yt_dtype_name(t->dtype), p->name, yt_dtype_name(p->tensor->dtype));
    bool same = t->dim == p->tensor->dim;
    for (int d = 0; same && d < t->dim; d++)
        same = t->sizes[d] == p->tensor->sizes[d];
    if (!same) {
        char have[YT__SIZES_BUF], want[YT__SIZES_BUF];
        return yt__fail_status(
            YT_ERR_SHAPE, "%s: '%s' has shape %s but parameter '%s' has %s", LOAD, key,
            yt__format_sizes(have, sizeof have, t->sizes, t->dim), p->name,
            yt__format_sizes(want, sizeof want, p->tensor->sizes, p->tensor->dim));
    }
    if (t->device != YT_DEVICE_CPU)
        return yt__fail_status(YT_ERR_DEVICE, "%s: '%s' is on %s", LOAD, key,
                               yt_device_name(t->device));
    return YT_OK;
}

static yt_status
plan_params(const yt_optimizer *opt, const yt_named_tensors *sd, load_plan *plan)
{
    const yt__optim_kind *kind = opt->kind;
    for (int64_t i = 0; i < opt->n_params; i++) {
        const yt__optim_param *p = &opt->params[i];
        pending_state *ps = &plan->state[i];
        const void *options = plan->options + (size_t)p->group * kind->options_size;
        size_t cap = strlen(p->name) + 64;
        char *key = malloc(cap);
        if (key == NULL)
            return yt__fail_status(YT_ERR_NOMEM, "%s: out of memory", LOAD);
        yt_status st = YT_OK;
        bool has_step = false;
        if (kind->has_step && find_key(sd, plan, key, cap, "state.%s.%s", p->name, "step") >= 0) {
            has_step = true;
            st = yt__optim_read_i64(sd, key, LOAD, &ps->step);
            if (st == YT_OK && ps->step < 0)
                st = yt__fail_status(YT_ERR_VALUE, "%s: '%s'=%lld must be >= 0", LOAD, key,
                                     (long long)ps->step);
        }
        for (int s = 0; st == YT_OK && s < kind->n_slots; s++) {
            int64_t j = find_key(sd, plan, key, cap, "state.%s.%s", p->name, kind->slots[s]);
            if (j >= 0) {
                st = check_buffer(p, sd->tensors[j], key);
                ps->slot[s] = sd->tensors[j];
            }
        }
        ps->present = has_step;
        for (int s = 0; s < kind->n_slots; s++)
            ps->present |= ps->slot[s] != NULL;
        if (st == YT_OK && ps->present && kind->has_step && !has_step)
            st = yt__fail_status(YT_ERR_VALUE, "%s: %s: the state dict has no 'state.%s.step'",
                                 LOAD, kind->name, p->name);
        for (int s = 0; st == YT_OK && ps->present && s < kind->n_slots; s++)
            if (ps->slot[s] == NULL && kind->slot_required(options, s))
                st = yt__fail_status(YT_ERR_VALUE, "%s: %s: the state dict has no 'state.%s.%s'",
                                     LOAD, kind->name, p->name, kind->slots[s]);
        free(key);
        if (st != YT_OK)
            return st;
    }
    return YT_OK;
}

/* Explains an entry no part of the plan used. */
static yt_status
reject_entry(const yt_optimizer *opt, const char *key)
{
    int g;
    int used = 0;
    if (sscanf(key, "group.%d.%n", &g, &used) == 1 && used > 0 && (g < 0 || g >= opt->n_groups))
        return yt__fail_status(YT_ERR_VALUE,
                               "%s: '%s' is for param group %d but the optimizer has %d group%s",
                               LOAD, key, g, opt->n_groups, opt->n_groups == 1 ? "" : "s");
    if (strncmp(key, "state.", 6) == 0) {
        const char *dot = strrchr(key + 6, '.');
        int len = dot != NULL ? (int)(dot - (key + 6)) : (int)strlen(key + 6);
        bool known = false;
        for (int64_t i = 0; !known && i < opt->n_params; i++)
            known = (int)strlen(opt->params[i].name) == len &&
                    strncmp(opt->params[i].name, key + 6, (size_t)len) == 0;
        if (!known)
            return yt__fail_status(
                YT_ERR_VALUE,
                "%s: '%s' is state for a parameter '%.*s' the optimizer does not have", LOAD, key,
                len, key + 6);
    }
    return yt__fail_status(YT_ERR_VALUE, "%s: %s: unknown entry '%s'", LOAD, opt->kind->name, key);
}

yt_status
yt_optimizer_load_state_dict(yt_optimizer *opt, const yt_named_tensors *sd)
{
    if (opt == NULL || sd == NULL)
        return yt__fail_status(YT_ERR_VALUE, "%s: %s is NULL", LOAD, opt == NULL ? "opt" : "sd");
    const yt__optim_kind *kind = opt->kind;
    load_plan plan = {
        .options = malloc((size_t)opt->n_groups * kind->options_size),
        .initial_lr = malloc((size_t)opt->n_groups * sizeof(double)),
        .state = calloc((size_t)opt->n_params, sizeof(pending_state)),
        .used = calloc((size_t)sd->count + 1, sizeof(bool)),
    };
    if (plan.options == NULL || plan.initial_lr == NULL || plan.state == NULL ||
        plan.used == NULL) {
        free_plan(&plan, opt->n_params, false);
        return yt__fail_status(YT_ERR_NOMEM, "%s: out of memory", LOAD);
    }
    yt_status st = plan_groups(opt, sd, &plan);
    if (st == YT_OK)
        st = plan_params(opt, sd, &plan);
    for (int64_t i = 0; st == YT_OK && i < sd->count; i++)
        if (!plan.used[i])
            st = reject_entry(opt, sd->names[i]);
    if (st != YT_OK) {
        free_plan(&plan, opt->n_params, false);
        return st;
    }
    /* Copy every loaded buffer before touching the optimizer, so running out of memory here
     * leaves it as it was. */
    for (int64_t i = 0; i < opt->n_params; i++) {
        for (int s = 0; s < kind->n_slots; s++) {
            yt_tensor *src = plan.state[i].slot[s];
            plan.state[i].slot[s] = NULL;
            if (src == NULL || st != YT_OK)
                continue;
            plan.state[i].slot[s] = copy_buffer(src, src->dtype);
            if (plan.state[i].slot[s] == NULL)
                st = yt__last_status();
        }
    }
    if (st != YT_OK) {
        free_plan(&plan, opt->n_params, true);
        return st;
    }
    for (int g = 0; g < opt->n_groups; g++) {
        memcpy(opt->groups[g].options, plan.options + (size_t)g * kind->options_size,
               kind->options_size);
        opt->groups[g].initial_lr = plan.initial_lr[g];
    }
    for (int64_t i = 0; i < opt->n_params; i++) {
        yt__optim_param *p = &opt->params[i];
        pending_state *ps = &plan.state[i];
        p->has_state = ps->present;
        p->step = ps->present ? ps->step : 0;
        for (int s = 0; s < YT__OPTIM_MAX_SLOTS; s++) {
            yt_release(p->slot[s]);
            p->slot[s] = ps->slot[s];
            ps->slot[s] = NULL;
        }
    }
    free_plan(&plan, opt->n_params, true);
    return YT_OK;
}
