/* The optimizer core (include/yaten/optim.h): parameter groups, zero_grad, the step driver and
 * option access. What differs between SGD, Adam, ... lives in a yt__optim_kind (optim_*.c);
 * the state dict is in optimizer_state.c.
 *
 * A step validates every gradient first, then runs the kind's fused loop over each parameter's
 * contiguous data, split into chunks across threads for large parameters (the loop is
 * elementwise, so the result does not depend on the thread count). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "optim_internal.h"
#include "parallel.h"

/* Elements per chunk when a parameter's update is spread across threads. */
enum { UPDATE_CHUNK = 16384 };

/* ---------------------------------------------------------------- option helpers */

yt_status
yt__optim_bad_option(const char *fn, const char *name, double value, const char *what)
{
    return yt__fail_status(YT_ERR_VALUE, "%s: %s=%g must be %s", fn, name, value, what);
}

yt_status
yt__optim_check_finite(const yt__optim_kind *kind, const void *options, const char *fn)
{
    for (int i = 0; i < kind->n_fields; i++) {
        const yt__optim_field *f = &kind->fields[i];
        if (!f->is_flag && !isfinite(yt__optim_real(options, f->offset)))
            return yt__optim_bad_option(fn, f->name, yt__optim_real(options, f->offset), "finite");
    }
    return YT_OK;
}

/* ---------------------------------------------------------------- construction */

static void
free_param(yt__optim_param *p)
{
    free(p->name);
    yt_release(p->tensor);
    for (int s = 0; s < YT__OPTIM_MAX_SLOTS; s++)
        yt_release(p->slot[s]);
}

/* Checks one parameter of a new group: the tensor itself, and that neither its name nor the
 * tensor is already in the optimizer (or earlier in the same new group). */
static yt_status
check_param(const yt_optimizer *opt, const yt_named_tensors *params, int64_t i, const char *fn)
{
    const char *name = params->names[i];
    yt_tensor *t = params->tensors[i];
    if (t->dtype != YT_DTYPE_F32 && t->dtype != YT_DTYPE_F64)
        return yt__fail_status(YT_ERR_DTYPE,
                               "%s: parameter '%s' is %s; optimizers update f32 and f64", fn, name,
                               yt_dtype_name(t->dtype));
    if (t->device != YT_DEVICE_CPU)
        return yt__fail_status(YT_ERR_DEVICE, "%s: parameter '%s' is on %s; optimizers run on cpu",
                               fn, name, yt_device_name(t->device));
    if (t->grad_fn != NULL)
        return yt__fail_status(YT_ERR_STATE, "%s: parameter '%s' is not a leaf (it has grad_fn %s)",
                               fn, name, t->grad_fn->kind->name);
    if (!t->is_contiguous)
        return yt__fail_status(YT_ERR_SHAPE, "%s: parameter '%s' is not contiguous", fn, name);
    for (int64_t j = 0; j < opt->n_params; j++) {
        if (strcmp(opt->params[j].name, name) == 0)
            return yt__fail_status(YT_ERR_VALUE,
                                   "%s: a parameter named '%s' is already in param group %d", fn,
                                   name, opt->params[j].group);
        if (opt->params[j].tensor == t)
            return yt__fail_status(YT_ERR_VALUE,
                                   "%s: parameter '%s' is the same tensor as '%s' (param group %d)",
                                   fn, name, opt->params[j].name, opt->params[j].group);
    }
    for (int64_t j = 0; j < i; j++)
        if (params->tensors[j] == t)
            return yt__fail_status(YT_ERR_VALUE, "%s: parameter '%s' is the same tensor as '%s'",
                                   fn, name, params->names[j]);
    return YT_OK;
}

/* Appends a group; on error the optimizer is unchanged. */
static yt_status
add_group(yt_optimizer *opt, const yt_named_tensors *params, const void *options, const char *fn)
{
    if (params == NULL)
        return yt__fail_status(YT_ERR_VALUE, "%s: params is NULL", fn);
    if (params->count == 0)
        return yt__fail_status(YT_ERR_VALUE, "%s: the parameter list is empty", fn);
    if (opt->n_groups == INT32_MAX)
        return yt__fail_status(YT_ERR_VALUE, "%s: too many param groups", fn);
    yt_status st = yt__optim_check_finite(opt->kind, options, fn);
    if (st == YT_OK)
        st = opt->kind->validate(options, fn);
    for (int64_t i = 0; st == YT_OK && i < params->count; i++)
        st = check_param(opt, params, i, fn);
    if (st != YT_OK)
        return st;

    void *copy = malloc(opt->kind->options_size);
    yt__optim_group *groups = realloc(opt->groups, (size_t)(opt->n_groups + 1) * sizeof *groups);
    if (groups != NULL)
        opt->groups = groups;
    yt__optim_param *ps =
        realloc(opt->params, (size_t)(opt->n_params + params->count) * sizeof *ps);
    if (ps != NULL)
        opt->params = ps;
    if (copy == NULL || groups == NULL || ps == NULL) {
        free(copy);
        return yt__fail_status(YT_ERR_NOMEM, "%s: out of memory", fn);
    }
    for (int64_t i = 0; i < params->count; i++) {
        char *name = strdup(params->names[i]);
        if (name == NULL) {
            for (int64_t j = 0; j < i; j++)
                free_param(&opt->params[opt->n_params + j]);
            free(copy);
            return yt__fail_status(YT_ERR_NOMEM, "%s: out of memory", fn);
        }
        opt->params[opt->n_params + i] = (yt__optim_param){
            .name = name, .tensor = yt_retain(params->tensors[i]), .group = opt->n_groups};
    }
    memcpy(copy, options, opt->kind->options_size);
    opt->groups[opt->n_groups++] = (yt__optim_group){.options = copy, .initial_lr = NAN};
    opt->n_params += params->count;
    return YT_OK;
}

yt_optimizer *
yt__optimizer_new(const yt__optim_kind *kind, const yt_named_tensors *params, const void *options,
                  const void *defaults)
{
    if (options == NULL)
        options = defaults;
    if (options == NULL) {
        yt__fail_status(YT_ERR_VALUE, "%s: options is NULL (%s has no default learning rate)",
                        kind->ctor, kind->name);
        return NULL;
    }
    yt_optimizer *opt = calloc(1, sizeof *opt);
    void *defs = malloc(kind->options_size);
    if (opt == NULL || defs == NULL) {
        free(opt);
        free(defs);
        yt__fail_status(YT_ERR_NOMEM, "%s: out of memory", kind->ctor);
        return NULL;
    }
    memcpy(defs, options, kind->options_size);
    atomic_init(&opt->refcount, 1);
    opt->kind = kind;
    opt->defaults = defs;
    if (add_group(opt, params, options, kind->ctor) != YT_OK) {
        yt_optimizer_release(opt);
        return NULL;
    }
    return opt;
}

yt_status
yt_optimizer_add_param_group(yt_optimizer *opt, const yt_named_tensors *params, const void *options)
{
    static const char fn[] = "optimizer_add_param_group";
    if (opt == NULL)
        return yt__fail_status(YT_ERR_VALUE, "%s: opt is NULL", fn);
    return add_group(opt, params, options != NULL ? options : opt->defaults, fn);
}

yt_optimizer *
yt_optimizer_retain(yt_optimizer *opt)
{
    if (opt != NULL)
        atomic_fetch_add(&opt->refcount, 1);
    return opt;
}

void
yt_optimizer_release(yt_optimizer *opt)
{
    if (opt == NULL || atomic_fetch_sub(&opt->refcount, 1) != 1)
        return;
    for (int64_t i = 0; i < opt->n_params; i++)
        free_param(&opt->params[i]);
    for (int g = 0; g < opt->n_groups; g++)
        free(opt->groups[g].options);
    free(opt->params);
    free(opt->groups);
    free(opt->defaults);
    free(opt);
}

/* ---------------------------------------------------------------- the step */

/* Allocates the slots the group's options use and the parameter does not have yet, filled with
 * their initial value (or left for the update to write, when that value is NAN). */
static yt_status
ensure_slots(const yt__optim_kind *kind, yt__optim_param *p, const void *options, bool *fresh)
{
    for (int s = 0; s < kind->n_slots; s++) {
        fresh[s] = false;
        if (!kind->slot_used(options, s) || p->slot[s] != NULL)
            continue;
        yt_tensor *t = yt__empty_like(p->tensor, p->tensor->dtype);
        if (t == NULL)
            return yt__last_status();
        double init = kind->slot_init(options, s);
        if (isnan(init)) { /* the update writes it; zeros keep its reads defined */
            fresh[s] = true;
            init = 0.0;
        }
        if (t->dtype == YT_DTYPE_F32) {
            float *d = (float *)t->storage->data;
            for (int64_t i = 0; i < t->numel; i++)
                d[i] = (float)init;
        } else {
            double *d = (double *)t->storage->data;
            for (int64_t i = 0; i < t->numel; i++)
                d[i] = init;
        }
        p->slot[s] = t;
    }
    return YT_OK;
}

static bool
same_shape(const yt_tensor *a, const yt_tensor *b)
{
    if (a->dim != b->dim)
        return false;
    for (int d = 0; d < a->dim; d++)
        if (a->sizes[d] != b->sizes[d])
            return false;
    return true;
}

/* One chunk of UPDATE_CHUNK elements of an update (chunks are independent). */
typedef struct update_job {
    const yt__optim_kind *kind;
    const void *options;
    const yt__optim_update *u;
} update_job;

static void
update_chunk(void *arg, int64_t c)
{
    const update_job *j = arg;
    const yt__optim_update *u = j->u;
    const size_t es = yt_dtype_size(u->dtype);
    const int64_t lo = c * UPDATE_CHUNK, len = u->n - lo < UPDATE_CHUNK ? u->n - lo : UPDATE_CHUNK;
    yt__optim_update part = *u;
    part.n = len;
    part.param = (char *)u->param + (size_t)lo * es;
    part.grad = (const char *)u->grad + (size_t)lo * es;
    for (int s = 0; s < YT__OPTIM_MAX_SLOTS; s++)
        if (u->slot[s] != NULL)
            part.slot[s] = (char *)u->slot[s] + (size_t)lo * es;
    j->kind->update(j->options, &part);
}

/* Runs the kind's update over `u`, in chunks across the kernel pool's threads (parallel.h) when
 * the parameter is large. */
static void
run_update(const yt__optim_kind *kind, const void *options, const yt__optim_update *u)
{
    const int64_t n = u->n;
    /* about half a nanosecond per element of a fused update */
    int nth = n < YT_PARALLEL_GRAIN ? 1 : yt__parallel_threads(0.5 * (double)n, yt__max_threads());
    if (nth <= 1) {
        kind->update(options, u);
        return;
    }
    update_job j = {kind, options, u};
    yt__parallel_run((n + UPDATE_CHUNK - 1) / UPDATE_CHUNK, nth, update_chunk, &j);
}

yt_status
yt_optimizer_step(yt_optimizer *opt)
{
    static const char fn[] = "optimizer_step";
    if (opt == NULL)
        return yt__fail_status(YT_ERR_VALUE, "%s: opt is NULL", fn);
    const yt__optim_kind *kind = opt->kind;
    /* Validate every gradient before anything changes. */
    for (int64_t i = 0; i < opt->n_params; i++) {
        const yt__optim_param *p = &opt->params[i];
        const yt_tensor *g = p->tensor->grad;
        if (g == NULL)
            continue;
        if (!same_shape(g, p->tensor)) {
            char gs[YT__SIZES_BUF], ps[YT__SIZES_BUF];
            return yt__fail_status(
                YT_ERR_SHAPE, "%s: %s: the gradient of '%s' has shape %s but the parameter has %s",
                fn, kind->name, p->name, yt__format_sizes(gs, sizeof gs, g->sizes, g->dim),
                yt__format_sizes(ps, sizeof ps, p->tensor->sizes, p->tensor->dim));
        }
        if (g->device != YT_DEVICE_CPU)
            return yt__fail_status(YT_ERR_DEVICE, "%s: %s: the gradient of '%s' is on %s", fn,
                                   kind->name, p->name, yt_device_name(g->device));
    }
    for (int64_t i = 0; i < opt->n_params; i++) {
        yt__optim_param *p = &opt->params[i];
        yt_tensor *param = p->tensor, *grad = param->grad;
        if (grad == NULL)
            continue;
        const void *options = opt->groups[p->group].options;
        yt__optim_update u = {
            .dtype = param->dtype, .n = param->numel, .param = yt__data_ptr(param)};
        if (ensure_slots(kind, p, options, u.fresh) != YT_OK)
            return yt__last_status();
        /* The loop reads the gradient as contiguous data of the parameter's dtype. */
        yt_tensor *g = grad;
        if (!grad->is_contiguous || grad->dtype != param->dtype) {
            g = yt__cast_copy(grad, param->dtype);
            if (g == NULL)
                return yt__last_status();
        }
        u.grad = yt__data_ptr(g);
        for (int s = 0; s < kind->n_slots; s++)
            if (p->slot[s] != NULL && kind->slot_used(options, s))
                u.slot[s] = yt__data_ptr(p->slot[s]);
        if (kind->has_step)
            p->step++;
        p->has_state = true;
        u.step = p->step;
        run_update(kind, options, &u);
        yt__release_cast(g, grad);
        yt__bump_version(param); /* like an in-place op: saved copies of the old value are stale */
    }
    return YT_OK;
}

void
yt_optimizer_zero_grad(yt_optimizer *opt)
{
    if (opt == NULL)
        return;
    for (int64_t i = 0; i < opt->n_params; i++)
        yt_zero_grad(opt->params[i].tensor);
}

/* ---------------------------------------------------------------- groups and options */

int
yt_optimizer_group_count(const yt_optimizer *opt)
{
    return opt != NULL ? opt->n_groups : 0;
}

const char *
yt_optimizer_name(const yt_optimizer *opt)
{
    return opt != NULL ? opt->kind->name : "";
}

static yt_status
check_group(const yt_optimizer *opt, int group, const char *fn)
{
    if (opt == NULL)
        return yt__fail_status(YT_ERR_VALUE, "%s: opt is NULL", fn);
    if (group < 0 || group >= opt->n_groups)
        return yt__fail_status(YT_ERR_VALUE, "%s: group=%d is out of range (the optimizer has %d)",
                               fn, group, opt->n_groups);
    return YT_OK;
}

double
yt_optimizer_get_lr(const yt_optimizer *opt, int group)
{
    if (check_group(opt, group, "optimizer_get_lr") != YT_OK)
        return NAN;
    return yt__optim_real(opt->groups[group].options, 0);
}

yt_status
yt_optimizer_set_lr(yt_optimizer *opt, int group, double lr)
{
    static const char fn[] = "optimizer_set_lr";
    if (check_group(opt, group, fn) != YT_OK)
        return yt__last_status();
    if (!(lr >= 0) || !isfinite(lr))
        return yt__optim_bad_option(fn, "lr", lr, "finite and >= 0");
    yt__optimizer_put_lr(opt, group, lr);
    return YT_OK;
}

void
yt__optimizer_put_lr(yt_optimizer *opt, int group, double lr)
{
    *(double *)opt->groups[group].options = lr;
}

static yt_status
check_size(const yt_optimizer *opt, const void *options, size_t size, const char *fn)
{
    if (options == NULL)
        return yt__fail_status(YT_ERR_VALUE, "%s: options is NULL", fn);
    if (size != opt->kind->options_size)
        return yt__fail_status(YT_ERR_VALUE,
                               "%s: size=%zu is not the size of %s's options struct (%zu)", fn,
                               size, opt->kind->name, opt->kind->options_size);
    return YT_OK;
}

yt_status
yt_optimizer_get_options(const yt_optimizer *opt, int group, void *options_out, size_t size)
{
    static const char fn[] = "optimizer_get_options";
    if (check_group(opt, group, fn) != YT_OK || check_size(opt, options_out, size, fn) != YT_OK)
        return yt__last_status();
    memcpy(options_out, opt->groups[group].options, size);
    return YT_OK;
}

yt_status
yt_optimizer_set_options(yt_optimizer *opt, int group, const void *options, size_t size)
{
    static const char fn[] = "optimizer_set_options";
    if (check_group(opt, group, fn) != YT_OK || check_size(opt, options, size, fn) != YT_OK)
        return yt__last_status();
    if (yt__optim_check_finite(opt->kind, options, fn) != YT_OK ||
        opt->kind->validate(options, fn) != YT_OK)
        return yt__last_status();
    memcpy(opt->groups[group].options, options, size);
    return YT_OK;
}

yt_status
yt_optimizer_parameters(const yt_optimizer *opt, yt_named_tensors *out)
{
    if (opt == NULL || out == NULL)
        return yt__fail_status(YT_ERR_VALUE, "optimizer_parameters: %s is NULL",
                               opt == NULL ? "opt" : "out");
    for (int64_t i = 0; i < opt->n_params; i++) {
        yt_status st = yt_named_tensors_add(out, opt->params[i].name, opt->params[i].tensor);
        if (st != YT_OK)
            return st;
    }
    return YT_OK;
}

/* ---------------------------------------------------------------- scheduler support */

double
yt__optimizer_initial_lr(const yt_optimizer *opt, int group)
{
    return opt->groups[group].initial_lr;
}

void
yt__optimizer_set_initial_lr(yt_optimizer *opt, int group, double lr)
{
    opt->groups[group].initial_lr = lr;
}

bool
yt__optimizer_has_momentum(const yt_optimizer *opt)
{
    return opt->kind->momentum_offset >= 0;
}

double
yt__optimizer_momentum(const yt_optimizer *opt, int group)
{
    return yt__optim_real(opt->groups[group].options, (size_t)opt->kind->momentum_offset);
}

void
yt__optimizer_set_momentum(yt_optimizer *opt, int group, double m)
{
    *(double *)((char *)opt->groups[group].options + opt->kind->momentum_offset) = m;
}
