/* The yaten side of the optimizer and scheduler differential tests against PyTorch
 * (tests/optim/test_optim_vs_torch.py).
 *
 * Usage: optim_runner SPEC
 * SPEC is a line-based job description written by the test:
 *   dtype f32|f64          threads N          steps N
 *   optimizer KIND k=v...  the defaults (sgd, adam, adamw, rmsprop, adagrad; torch's option names,
 *                          betas as beta1/beta2, flags as 0/1)
 *   group k=v...           starts a param group: the defaults overridden by k=v
 *   param NAME SIZES INIT B  a parameter of the current group: SIZES "37x5" ("-" for 0-d), INIT and B files of
 *                          raw values in the dtype (initial value; the constant b of the gradient)
 *   clip norm=P max=M      clip_grad_norm before every step (P: 1, 2, inf, ...)
 *   clip value=C           clip_grad_value before every step
 *   sched KIND k=v...      a scheduler (several lines after `sequential` are its schedulers)
 *   sequential milestones=a,b,...
 *   metrics v,v,...        the metric fed to ReduceLROnPlateau at each step
 * Optimizer jobs take `steps` steps of the gradient g(p) = p*p*p - p*0.5 + b (computed in the
 * dtype in that order, as the test does in torch, so both sides see the same bits), set through
 * autograd as the gradient of sum(p * g), then print "final NAME v..." (and "norm STEP v" when
 * clipping). Scheduler jobs print "lr STEP lr0 lr1 ..." and "momentum STEP m0 ..." after
 * construction (step 0) and after each step. Errors go to stderr with exit status 1. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaten.h>

enum { MAX_PARAMS = 16, MAX_GROUPS = 4, MAX_SCHEDS = 4, MAX_TOKENS = 32, LINE = 4096 };

typedef struct kv {
    int n;
    char key[MAX_TOKENS][64];
    char val[MAX_TOKENS][1024];
} kv;

typedef struct param_spec {
    char name[64];
    int64_t sizes[8];
    int ndim;
    char init[1024], b[1024];
    int group;
} param_spec;

typedef struct job {
    yt_dtype dtype;
    int threads, steps;
    char kind[32];
    kv defaults;
    kv groups[MAX_GROUPS];
    int n_groups;
    param_spec params[MAX_PARAMS];
    int n_params;
    double clip_norm, clip_max,
        clip_value; /* clip_norm 0: no norm clipping; clip_value < 0: none */
    char sched_kind[MAX_SCHEDS][32];
    kv sched[MAX_SCHEDS];
    int n_sched;
    bool sequential;
    int64_t milestones[MAX_SCHEDS];
    double *metrics;
    int n_metrics;
} job;

static void
die(const char *what)
{
    fprintf(stderr, "optim_runner: %s: %s (%s)\n", what, yt_errmsg(), yt_status_name(yt_errcode()));
    exit(1);
}

static void
die_spec(const char *what, const char *detail)
{
    fprintf(stderr, "optim_runner: %s: %s\n", what, detail);
    exit(1);
}

/* Splits "k=v k=v" tokens after the first `skip` words. */
static void
parse_kv(kv *out, char *rest)
{
    out->n = 0;
    for (char *tok = strtok(rest, " \t\n"); tok != NULL; tok = strtok(NULL, " \t\n")) {
        char *eq = strchr(tok, '=');
        if (eq == NULL || out->n == MAX_TOKENS)
            die_spec("bad option", tok);
        *eq = '\0';
        snprintf(out->key[out->n], sizeof out->key[0], "%s", tok);
        snprintf(out->val[out->n], sizeof out->val[0], "%s", eq + 1);
        out->n++;
    }
}

static const char *
kv_get(const kv *a, const kv *b, const char *key)
{
    for (int i = 0; b != NULL && i < b->n; i++)
        if (strcmp(b->key[i], key) == 0)
            return b->val[i];
    for (int i = 0; a != NULL && i < a->n; i++)
        if (strcmp(a->key[i], key) == 0)
            return a->val[i];
    return NULL;
}

static double
kv_f64(const kv *a, const kv *b, const char *key, double dflt)
{
    const char *v = kv_get(a, b, key);
    return v != NULL ? strtod(v, NULL) : dflt;
}

static void
read_job(const char *path, job *j)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        die_spec("cannot open", path);
    memset(j, 0, sizeof *j);
    j->dtype = YT_DTYPE_F32;
    j->threads = 1;
    j->clip_value = -1;
    char line[LINE];
    while (fgets(line, sizeof line, f) != NULL) {
        char word[32] = "";
        int used = 0;
        if (sscanf(line, "%31s %n", word, &used) < 1)
            continue;
        char *rest = line + used;
        if (strcmp(word, "dtype") == 0) {
            j->dtype = strncmp(rest, "f64", 3) == 0 ? YT_DTYPE_F64 : YT_DTYPE_F32;
        } else if (strcmp(word, "threads") == 0) {
            j->threads = atoi(rest);
        } else if (strcmp(word, "steps") == 0) {
            j->steps = atoi(rest);
        } else if (strcmp(word, "optimizer") == 0) {
            sscanf(rest, "%31s %n", j->kind, &used);
            parse_kv(&j->defaults, rest + used);
        } else if (strcmp(word, "group") == 0) {
            if (j->n_groups == MAX_GROUPS)
                die_spec("too many groups", line);
            parse_kv(&j->groups[j->n_groups++], rest);
        } else if (strcmp(word, "param") == 0) {
            if (j->n_params == MAX_PARAMS || j->n_groups == 0)
                die_spec("param before group or too many", line);
            param_spec *p = &j->params[j->n_params++];
            char sizes[128];
            if (sscanf(rest, "%63s %127s %1023s %1023s", p->name, sizes, p->init, p->b) != 4)
                die_spec("bad param line", line);
            for (char *s = strtok(sizes, "x"); s != NULL && strcmp(s, "-") != 0;
                 s = strtok(NULL, "x"))
                p->sizes[p->ndim++] = atoll(s);
            p->group = j->n_groups - 1;
        } else if (strcmp(word, "clip") == 0) {
            kv c;
            parse_kv(&c, rest);
            const char *norm = kv_get(&c, NULL, "norm");
            if (norm != NULL) {
                j->clip_norm = strcmp(norm, "inf") == 0 ? INFINITY : strtod(norm, NULL);
                j->clip_max = kv_f64(&c, NULL, "max", 1.0);
            }
            j->clip_value = kv_f64(&c, NULL, "value", -1);
        } else if (strcmp(word, "sched") == 0) {
            if (j->n_sched == MAX_SCHEDS)
                die_spec("too many schedulers", line);
            sscanf(rest, "%31s %n", j->sched_kind[j->n_sched], &used);
            parse_kv(&j->sched[j->n_sched++], rest + used);
        } else if (strcmp(word, "sequential") == 0) {
            j->sequential = true;
            const char *s = strstr(rest, "milestones=");
            s = s != NULL ? s + 11 : NULL;
            for (int k = 0; s != NULL && k < MAX_SCHEDS; k++) {
                char *end;
                j->milestones[k] = strtoll(s, &end, 10);
                s = *end == ',' ? end + 1 : NULL;
            }
        } else if (strcmp(word, "metrics") == 0) {
            j->metrics = malloc(sizeof(double) * 1024);
            for (char *s = strtok(rest, ", \n"); s != NULL && j->n_metrics < 1024;
                 s = strtok(NULL, ", \n"))
                j->metrics[j->n_metrics++] = strtod(s, NULL);
        } else {
            die_spec("unknown line", line);
        }
    }
    fclose(f);
}

/* ---------------------------------------------------------------- optimizers */

static bool
flag(const kv *d, const kv *g, const char *key)
{
    return kv_f64(d, g, key, 0) != 0;
}

/* Fills the options struct of j->kind for group `g` (NULL: the defaults). */
static const void *
options_for(const job *j, const kv *g, void *buf)
{
    const kv *d = &j->defaults;
    if (strcmp(j->kind, "sgd") == 0) {
        yt_sgd_options *o = buf;
        *o = (yt_sgd_options){
            .lr = kv_f64(d, g, "lr", 0.01),
            .momentum = kv_f64(d, g, "momentum", 0),
            .dampening = kv_f64(d, g, "dampening", 0),
            .weight_decay = kv_f64(d, g, "weight_decay", 0),
            .nesterov = flag(d, g, "nesterov"),
            .maximize = flag(d, g, "maximize"),
        };
    } else if (strcmp(j->kind, "adam") == 0 || strcmp(j->kind, "adamw") == 0) {
        yt_adam_options *o = buf;
        *o = (yt_adam_options){
            .lr = kv_f64(d, g, "lr", 1e-3),
            .beta1 = kv_f64(d, g, "beta1", 0.9),
            .beta2 = kv_f64(d, g, "beta2", 0.999),
            .eps = kv_f64(d, g, "eps", 1e-8),
            .weight_decay = kv_f64(d, g, "weight_decay", strcmp(j->kind, "adamw") == 0 ? 1e-2 : 0),
            .amsgrad = flag(d, g, "amsgrad"),
            .maximize = flag(d, g, "maximize"),
        };
    } else if (strcmp(j->kind, "rmsprop") == 0) {
        yt_rmsprop_options *o = buf;
        *o = (yt_rmsprop_options){
            .lr = kv_f64(d, g, "lr", 1e-2),
            .alpha = kv_f64(d, g, "alpha", 0.99),
            .eps = kv_f64(d, g, "eps", 1e-8),
            .weight_decay = kv_f64(d, g, "weight_decay", 0),
            .momentum = kv_f64(d, g, "momentum", 0),
            .centered = flag(d, g, "centered"),
            .maximize = flag(d, g, "maximize"),
        };
    } else if (strcmp(j->kind, "adagrad") == 0) {
        yt_adagrad_options *o = buf;
        *o = (yt_adagrad_options){
            .lr = kv_f64(d, g, "lr", 1e-2),
            .lr_decay = kv_f64(d, g, "lr_decay", 0),
            .weight_decay = kv_f64(d, g, "weight_decay", 0),
            .initial_accumulator_value = kv_f64(d, g, "initial_accumulator_value", 0),
            .eps = kv_f64(d, g, "eps", 1e-10),
            .maximize = flag(d, g, "maximize"),
        };
    } else {
        die_spec("unknown optimizer", j->kind);
    }
    return buf;
}

static yt_optimizer *
make_optimizer(const job *j, yt_named_tensors *groups)
{
    union {
        yt_sgd_options sgd;
        yt_adam_options adam;
        yt_rmsprop_options rmsprop;
        yt_adagrad_options adagrad;
    } buf;
    const void *o = options_for(j, &j->groups[0], &buf);
    yt_optimizer *opt = strcmp(j->kind, "sgd") == 0       ? yt_sgd_new(&groups[0], o)
                        : strcmp(j->kind, "adam") == 0    ? yt_adam_new(&groups[0], o)
                        : strcmp(j->kind, "adamw") == 0   ? yt_adamw_new(&groups[0], o)
                        : strcmp(j->kind, "rmsprop") == 0 ? yt_rmsprop_new(&groups[0], o)
                                                          : yt_adagrad_new(&groups[0], o);
    if (opt == NULL)
        die("optimizer");
    for (int g = 1; g < j->n_groups; g++)
        if (yt_optimizer_add_param_group(opt, &groups[g], options_for(j, &j->groups[g], &buf)) !=
            YT_OK)
            die("add_param_group");
    return opt;
}

static void *
read_raw(const char *path, size_t nbytes)
{
    FILE *f = fopen(path, "rb");
    void *buf = malloc(nbytes ? nbytes : 1);
    if (f == NULL || fread(buf, 1, nbytes, f) != nbytes)
        die_spec("cannot read", path);
    fclose(f);
    return buf;
}

/* g = p*p*p - p*0.5 + b, in the dtype, one rounding per operation as torch does it. */
static void
gradient(yt_dtype dtype, const void *p, const void *b, void *g, int64_t n)
{
    if (dtype == YT_DTYPE_F32) {
        const float *x = p, *c = b;
        float *y = g;
        for (int64_t i = 0; i < n; i++) {
            float cube = (x[i] * x[i]) * x[i];
            float half = x[i] * 0.5f;
            float diff = cube - half;
            y[i] = diff + c[i];
        }
    } else {
        const double *x = p, *c = b;
        double *y = g;
        for (int64_t i = 0; i < n; i++) {
            double cube = (x[i] * x[i]) * x[i];
            double half = x[i] * 0.5;
            double diff = cube - half;
            y[i] = diff + c[i];
        }
    }
}

static void
print_tensor(const char *label, yt_tensor *t)
{
    int64_t n = yt_tensor_numel(t);
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (yt_tensor_copy_to(t, v, sizeof(double) * (size_t)n, YT_DTYPE_F64) != YT_OK)
        die("copy_to");
    printf("%s", label);
    for (int64_t i = 0; i < n; i++)
        printf(" %.17g", v[i]);
    printf("\n");
    free(v);
}

static void
run_optimizer(const job *j)
{
    yt_named_tensors groups[MAX_GROUPS], all = YT_NAMED_TENSORS_INIT;
    for (int g = 0; g < MAX_GROUPS; g++)
        groups[g] = (yt_named_tensors)YT_NAMED_TENSORS_INIT;
    void *b[MAX_PARAMS];
    const size_t es = yt_dtype_size(j->dtype);
    for (int i = 0; i < j->n_params; i++) {
        const param_spec *ps = &j->params[i];
        int64_t n = 1;
        for (int d = 0; d < ps->ndim; d++)
            n *= ps->sizes[d];
        void *init = read_raw(ps->init, (size_t)n * es);
        b[i] = read_raw(ps->b, (size_t)n * es);
        yt_tensor *t = yt_tensor_from_data(init, ps->sizes, ps->ndim, j->dtype);
        free(init);
        if (t == NULL || yt_set_requires_grad(t, true) != YT_OK ||
            yt_named_tensors_add(&groups[ps->group], ps->name, t) != YT_OK ||
            yt_named_tensors_add(&all, ps->name, t) != YT_OK)
            die("param");
        yt_release(t);
    }
    yt_optimizer *opt = make_optimizer(j, groups);
    for (int step = 1; step <= j->steps; step++) {
        yt_scope_begin();
        for (int i = 0; i < j->n_params; i++) {
            yt_tensor *p = all.tensors[i];
            int64_t n = yt_tensor_numel(p);
            void *g = malloc((size_t)n * es);
            gradient(j->dtype, yt_tensor_data(p), b[i], g, n);
            yt_tensor *gt = yt_tensor_from_data(g, yt_tensor_sizes(p), yt_tensor_dim(p), j->dtype);
            free(g);
            yt_tensor *loss = yt_sum(yt_mul(p, gt));
            if (loss == NULL || yt_backward(loss, NULL, NULL) != YT_OK)
                die("backward");
        }
        if (j->clip_norm > 0) {
            double total;
            if (yt_clip_grad_norm(&all, j->clip_max, j->clip_norm, &total) != YT_OK)
                die("clip_grad_norm");
            printf("norm %d %.17g\n", step, total);
        }
        if (j->clip_value >= 0 && yt_clip_grad_value(&all, j->clip_value) != YT_OK)
            die("clip_grad_value");
        if (yt_optimizer_step(opt) != YT_OK)
            die("step");
        yt_optimizer_zero_grad(opt);
        yt_scope_end();
    }
    for (int i = 0; i < j->n_params; i++) {
        char label[96];
        snprintf(label, sizeof label, "final %s", all.names[i]);
        print_tensor(label, all.tensors[i]);
        free(b[i]);
    }
    yt_optimizer_release(opt);
    for (int g = 0; g < MAX_GROUPS; g++)
        yt_named_tensors_clear(&groups[g]);
    yt_named_tensors_clear(&all);
}

/* ---------------------------------------------------------------- schedulers */

static yt_scheduler *
make_scheduler(yt_optimizer *opt, const char *kind, const kv *o)
{
    if (strcmp(kind, "step") == 0)
        return yt_step_lr_new(opt, (int64_t)kv_f64(o, NULL, "step_size", 1),
                              kv_f64(o, NULL, "gamma", 0.1));
    if (strcmp(kind, "multistep") == 0) {
        int64_t ms[64];
        int n = 0;
        const char *s = kv_get(o, NULL, "milestones");
        while (s != NULL && *s && n < 64) {
            char *end;
            ms[n++] = strtoll(s, &end, 10);
            s = *end == ',' ? end + 1 : NULL;
        }
        return yt_multi_step_lr_new(opt, ms, n, kv_f64(o, NULL, "gamma", 0.1));
    }
    if (strcmp(kind, "exponential") == 0)
        return yt_exponential_lr_new(opt, kv_f64(o, NULL, "gamma", 0.1));
    if (strcmp(kind, "cosine") == 0)
        return yt_cosine_annealing_lr_new(opt, (int64_t)kv_f64(o, NULL, "T_max", 10),
                                          kv_f64(o, NULL, "eta_min", 0));
    if (strcmp(kind, "linear") == 0)
        return yt_linear_lr_new(opt, kv_f64(o, NULL, "start_factor", 1.0 / 3),
                                kv_f64(o, NULL, "end_factor", 1.0),
                                (int64_t)kv_f64(o, NULL, "total_iters", 5));
    if (strcmp(kind, "onecycle") == 0) {
        yt_one_cycle_options oc = YT_ONE_CYCLE_DEFAULTS;
        oc.max_lr = kv_f64(o, NULL, "max_lr", 0.1);
        oc.total_steps = (int64_t)kv_f64(o, NULL, "total_steps", 100);
        oc.pct_start = kv_f64(o, NULL, "pct_start", 0.3);
        const char *a = kv_get(o, NULL, "anneal_strategy");
        oc.anneal_strategy =
            a != NULL && strcmp(a, "linear") == 0 ? YT_ANNEAL_LINEAR : YT_ANNEAL_COS;
        oc.cycle_momentum = kv_f64(o, NULL, "cycle_momentum", 1) != 0;
        oc.base_momentum = kv_f64(o, NULL, "base_momentum", 0.85);
        oc.max_momentum = kv_f64(o, NULL, "max_momentum", 0.95);
        oc.div_factor = kv_f64(o, NULL, "div_factor", 25);
        oc.final_div_factor = kv_f64(o, NULL, "final_div_factor", 1e4);
        oc.three_phase = kv_f64(o, NULL, "three_phase", 0) != 0;
        return yt_one_cycle_lr_new(opt, &oc);
    }
    if (strcmp(kind, "plateau") == 0) {
        yt_plateau_options p = YT_PLATEAU_DEFAULTS;
        const char *m = kv_get(o, NULL, "mode"), *tm = kv_get(o, NULL, "threshold_mode");
        p.mode = m != NULL && strcmp(m, "max") == 0 ? YT_PLATEAU_MAX : YT_PLATEAU_MIN;
        p.threshold_mode =
            tm != NULL && strcmp(tm, "abs") == 0 ? YT_THRESHOLD_ABS : YT_THRESHOLD_REL;
        p.factor = kv_f64(o, NULL, "factor", 0.1);
        p.patience = (int64_t)kv_f64(o, NULL, "patience", 10);
        p.threshold = kv_f64(o, NULL, "threshold", 1e-4);
        p.cooldown = (int64_t)kv_f64(o, NULL, "cooldown", 0);
        p.min_lr = kv_f64(o, NULL, "min_lr", 0);
        p.eps = kv_f64(o, NULL, "eps", 1e-8);
        return yt_reduce_lr_on_plateau_new(opt, &p);
    }
    die_spec("unknown scheduler", kind);
    return NULL;
}

static void
print_lrs(yt_optimizer *opt, int step)
{
    printf("lr %d", step);
    for (int g = 0; g < yt_optimizer_group_count(opt); g++)
        printf(" %.17g", yt_optimizer_get_lr(opt, g));
    printf("\nmomentum %d", step);
    for (int g = 0; g < yt_optimizer_group_count(opt); g++) {
        yt_sgd_options so;
        yt_adam_options ao;
        if (strcmp(yt_optimizer_name(opt), "SGD") == 0 &&
            yt_optimizer_get_options(opt, g, &so, sizeof so) == YT_OK)
            printf(" %.17g", so.momentum);
        else if (yt_optimizer_get_options(opt, g, &ao, sizeof ao) == YT_OK)
            printf(" %.17g", ao.beta1);
    }
    printf("\n");
}

static void
run_scheduler(const job *j)
{
    /* The groups' parameters are never updated: one f64 scalar each. */
    yt_named_tensors groups[MAX_GROUPS];
    for (int g = 0; g < j->n_groups; g++) {
        groups[g] = (yt_named_tensors)YT_NAMED_TENSORS_INIT;
        char name[16];
        snprintf(name, sizeof name, "p%d", g);
        yt_tensor *t = yt_scalar_tensor(yt_float(0), YT_DTYPE_F64);
        if (yt_named_tensors_add(&groups[g], name, t) != YT_OK)
            die("param");
        yt_release(t);
    }
    yt_optimizer *opt = make_optimizer(j, groups);
    yt_scheduler *s;
    if (j->sequential) {
        yt_scheduler *subs[MAX_SCHEDS];
        for (int i = 0; i < j->n_sched; i++)
            subs[i] = make_scheduler(opt, j->sched_kind[i], &j->sched[i]);
        s = yt_sequential_lr_new(opt, subs, j->n_sched, j->milestones);
    } else {
        s = make_scheduler(opt, j->sched_kind[0], &j->sched[0]);
    }
    if (s == NULL)
        die("scheduler");
    print_lrs(opt, 0);
    for (int step = 1; step <= j->steps; step++) {
        yt_status st = j->n_metrics > 0
                           ? yt_scheduler_step_metric(s, j->metrics[(step - 1) % j->n_metrics])
                           : yt_scheduler_step(s);
        if (st != YT_OK)
            die("scheduler_step");
        print_lrs(opt, step);
    }
    yt_scheduler_release(s);
    yt_optimizer_release(opt);
    for (int g = 0; g < j->n_groups; g++)
        yt_named_tensors_clear(&groups[g]);
}

int
main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s SPEC\n", argv[0]);
        return 2;
    }
    static job j; /* large: kept off the stack */
    read_job(argv[1], &j);
    if (yt_set_num_threads(j.threads > 0 ? j.threads : 1) != YT_OK)
        die("threads");
    if (j.n_sched > 0)
        run_scheduler(&j);
    else
        run_optimizer(&j);
    free(j.metrics);
    if (yt_live_tensors() != 0)
        die_spec("leak", "tensors are still alive at exit");
    return 0;
}
