/* `yaten train [CONFIG] [--resume CKPT] ...`: the training driver. Each step runs in its own
 * scope (forward, loss, backward, optimizer step, zero_grad), so the loop does no other
 * allocation and no string work; per epoch it evaluates, writes metrics.csv and a checkpoint.
 * Ctrl-C sets a flag: the current step finishes, a checkpoint is saved, and yaten exits 130. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli.h"
#include "progress.h"
#include "report.h"
#include "run.h"

static volatile sig_atomic_t interrupted;
static const char *out_override; /* --out, repeated in the resume hint */

static void
on_sigint(int sig)
{
    if (interrupted) { /* a second Ctrl-C: stop at once, without a checkpoint */
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    interrupted = 1;
    static const char msg[] = "\ninterrupted: finishing this step and saving a checkpoint "
                              "(Ctrl-C again to quit without saving)\n";
    ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)ignored;
}

void
help_train(void)
{
    printf(
        "usage: yaten train [CONFIG.yaml] [options]\n"
        "\n"
        "Trains the model of CONFIG (default: the embedded Fashion-MNIST CNN, see `yaten config`).\n"
        "The config is checked first; its problems are reported as CONFIG:LINE:COL: message.\n"
        "Per epoch: train loss, test loss and accuracy, time and samples/s; a progress bar on a\n"
        "terminal, plain lines otherwise. In the output folder: metrics.csv, checkpoint_epoch_N\n"
        "and last.safetensors (checkpoints), model.safetensors (the weights, a state dict that\n"
        "loads into the same torch.nn.Sequential) and metrics.png (with gnuplot).\n"
        "\n"
        "options:\n"
        "  --resume CKPT     continue from a checkpoint, bit-identically (CONFIG may be left out:\n"
        "                    the checkpoint holds it)\n"
        "  --epochs N        train for N epochs in all (overrides the config)\n"
        "  --threads N       threads for the math (overrides the config; 0: the default)\n"
        "  --out DIR         output folder (overrides the config)\n"
        "  --seed N          seed of weights, shuffling and augmentation (overrides the config)\n"
        "  --max-steps N     stop after N optimizer steps in all, saving a checkpoint (smoke tests)\n"
        "  --log-every N     without a terminal: a progress line every N batches (default: every 30 s)\n"
        "  --no-plot         skip metrics.png\n"
        "\n"
        "Ctrl-C finishes the current step, saves OUT/last.safetensors and exits with status 130.\n");
}

typedef struct train_opts {
    const char *config, *resume, *epochs, *threads, *out, *seed, *max_steps, *log_every;
    bool no_plot;
    int64_t max_steps_n, log_every_n;
} train_opts;

static int
parse(int argc, char **argv, train_opts *o)
{
    memset(o, 0, sizeof *o);
    const cli_opt opts[] = {
        {"--resume", &o->resume, NULL},       {"--epochs", &o->epochs, NULL},
        {"--threads", &o->threads, NULL},     {"--out", &o->out, NULL},
        {"--seed", &o->seed, NULL},           {"--max-steps", &o->max_steps, NULL},
        {"--log-every", &o->log_every, NULL}, {"--no-plot", NULL, &o->no_plot},
    };
    int n_pos;
    int rc = cli_parse_args("train", argc, argv, opts, sizeof opts / sizeof opts[0], &o->config, 1,
                            &n_pos);
    if (rc < 0) {
        help_train();
        return -1;
    }
    if (rc != CLI_OK)
        return rc;
    if (o->max_steps &&
        !cli_int_arg("train", "--max-steps", o->max_steps, 1, INT64_MAX, &o->max_steps_n))
        return CLI_USAGE;
    if (o->log_every &&
        !cli_int_arg("train", "--log-every", o->log_every, 1, INT64_MAX, &o->log_every_n))
        return CLI_USAGE;
    return CLI_OK;
}

/* The config, with the command line's overrides. With --resume and no CONFIG, the checkpoint's. */
static int
load_config(const train_opts *o, cfg_config *cfg)
{
    int rc;
    if (o->config == NULL && o->resume != NULL) {
        char *text = run_checkpoint_config(o->resume);
        if (text == NULL) {
            fprintf(stderr,
                    "yaten train: %s holds no config (or cannot be read: %s); give CONFIG too\n",
                    o->resume, yt_errmsg());
            return CLI_USAGE;
        }
        char name[4200];
        snprintf(name, sizeof name, "%s[config]", o->resume);
        bool ok = cfg_parse(cfg, name, text, strlen(text));
        free(text);
        if (!ok) {
            cfg_print_errors(cfg, stderr);
            cfg_free(cfg);
            return CLI_USAGE;
        }
    } else if ((rc = cli_load_config("train", o->config, cfg)) != CLI_OK) {
        return rc;
    }
    int64_t v;
    if (o->epochs) {
        if (!cli_int_arg("train", "--epochs", o->epochs, 1, 1000000, &v))
            return cfg_free(cfg), CLI_USAGE;
        cfg->epochs = v;
    }
    if (o->threads) {
        if (!cli_int_arg("train", "--threads", o->threads, 0, 1024, &v))
            return cfg_free(cfg), CLI_USAGE;
        cfg->threads = v;
    }
    if (o->seed) {
        if (!cli_int_arg("train", "--seed", o->seed, 0, INT64_MAX, &v))
            return cfg_free(cfg), CLI_USAGE;
        cfg->seed = (uint64_t)v;
    }
    out_override = o->out;
    if (o->out) {
        char *out = strdup(o->out);
        if (out == NULL)
            return cfg_free(cfg), CLI_FAILED;
        free(cfg->output);
        cfg->output = out;
    }
    return CLI_OK;
}

static void
print_header(run_state *r)
{
    const cfg_config *cfg = r->cfg;
    printf("yaten %s: %s, %d thread%s, BLAS kernels %s\n", yt_version(), cfg->file,
           yt_get_num_threads(), yt_get_num_threads() == 1 ? "" : "s", yt_blas_info());
    int64_t shape[SHAPE_MAX_DIM + 1] = {1};
    const cli_shape *in = &cfg->model.layers[0].in_shape;
    memcpy(shape + 1, in->d, sizeof(int64_t) * (size_t)in->ndim);
    if (yt_module_summary(r->model, shape, in->ndim + 1, stdout) != YT_OK) {
        yt_clear_error();
        cli_print_model(cfg, stdout);
    }
    printf("data: %s, %lld training samples%s%lld, batch %lld (%lld batches per epoch)\n",
           cfg_dataset_names[cfg->data.dataset], (long long)yt_dataset_length(r->train_set),
           r->test_set ? ", test " : "",
           r->test_set ? (long long)yt_dataset_length(r->test_set) : 0LL,
           (long long)cfg->data.batch_size, (long long)yt_loader_batches_per_epoch(r->train));
    printf("loss %s, optimizer %s (lr %g), schedule %s, %lld epoch%s, output %s\n",
           cfg_loss_names[cfg->loss.kind], cfg_optim_names[cfg->optim.kind], cfg->optim.lr,
           cfg_sched_names[cfg->schedule.kind], (long long)cfg->epochs, cfg->epochs == 1 ? "" : "s",
           cfg->output);
    fflush(stdout);
}

/* One optimizer step on the next batch; *end instead when the loader reports the epoch's end. */
static int
step(run_state *r, double *loss_out, int64_t *batch_out, bool *end)
{
    const cfg_optim *o = &r->cfg->optim;
    int rc = CLI_OK;
    yt_scope_begin();
    yt_tensor *x = NULL, *y = NULL;
    *end = false;
    if (yt_loader_next(r->train, &x, &y) != YT_OK) {
        rc = CLI_FAILED;
        fprintf(stderr, "yaten train: training data: %s\n", yt_errmsg());
    } else if (x == NULL) {
        *end = true;
    } else {
        *batch_out = yt_tensor_size(x, 0);
        yt_tensor *out = yt_module_forward(r->model, run_prepare_input(r, x));
        yt_tensor *loss = yt_module_forward2(r->loss, out, run_prepare_target(r, y));
        yt_status st = loss ? yt_backward(loss, NULL, NULL) : yt_errcode();
        if (st == YT_OK && o->clip_grad_norm > 0)
            st = yt_clip_grad_norm(&r->params, o->clip_grad_norm, 2.0, NULL);
        if (st == YT_OK && o->clip_grad_value > 0)
            st = yt_clip_grad_value(&r->params, o->clip_grad_value);
        if (st == YT_OK)
            st = yt_optimizer_step(r->optim);
        yt_optimizer_zero_grad(r->optim);
        if (st == YT_OK && r->sched && r->cfg->schedule.per_step)
            st = yt_scheduler_step(r->sched);
        if (st != YT_OK) {
            fprintf(stderr, "yaten train: training step: %s\n", yt_errmsg());
            rc = CLI_FAILED;
        } else {
            *loss_out = yt_item(loss);
        }
    }
    yt_scope_end();
    return rc;
}

static int
save(run_state *r, const train_progress *p, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", r->cfg->output, name);
    return run_save_checkpoint(r, p, path);
}

static int
finish_epoch(run_state *r, train_progress *p, double lr, double train_loss, double test_loss,
             double test_acc)
{
    double *h = realloc(p->history, sizeof(double) * HISTORY_COLS * (size_t)(p->n_history + 1));
    if (h == NULL)
        return CLI_FAILED;
    p->history = h;
    double *row = h + HISTORY_COLS * p->n_history++;
    row[0] = (double)(p->epoch + 1), row[1] = train_loss, row[2] = test_loss, row[3] = test_acc;
    row[4] = lr, row[5] = p->seconds;
    return report_write_csv(r->cfg->output, p->history, p->n_history) ? CLI_OK : CLI_FAILED;
}

static int
schedule_epoch(run_state *r, double train_loss, double test_loss, double test_acc)
{
    const cfg_schedule *s = &r->cfg->schedule;
    if (r->sched == NULL || s->per_step)
        return CLI_OK;
    yt_status st;
    if (s->kind == SCHED_PLATEAU) {
        double metric = s->monitor == 1 ? train_loss : s->monitor == 2 ? test_acc : test_loss;
        if (isnan(metric))
            metric = train_loss; /* no test split */
        st = yt_scheduler_step_metric(r->sched, metric);
    } else {
        st = yt_scheduler_step(r->sched);
    }
    if (st != YT_OK) {
        fprintf(stderr, "yaten train: schedule: %s\n", yt_errmsg());
        return CLI_FAILED;
    }
    return CLI_OK;
}

static void
print_epoch(run_state *r, const train_progress *p, double train_loss, double test_loss,
            double test_acc, double lr, double eval_s)
{
    char acc[32] = "", tl[32] = "", ev[32] = "";
    if (!isnan(test_loss))
        snprintf(tl, sizeof tl, "  test loss %.4f", test_loss);
    if (!isnan(test_acc))
        snprintf(acc, sizeof acc, "  test acc %.2f%%", 100 * test_acc);
    if (r->test != NULL)
        snprintf(ev, sizeof ev, ", eval %.1f s", eval_s);
    /* peak resident memory so far: a run whose memory is flat shows the same figure every epoch */
    struct rusage usage;
    double peak_mib = getrusage(RUSAGE_SELF, &usage) == 0 ? (double)usage.ru_maxrss / 1024 : 0;
    printf("epoch %lld/%lld  train loss %.4f%s%s  lr %.3g  %.1f s (%.0f samples/s)%s, peak memory "
           "%.0f MiB\n",
           (long long)p->epoch + 1, (long long)r->cfg->epochs, train_loss, tl, acc, lr, p->seconds,
           p->seconds > 0 ? (double)p->samples / p->seconds : 0.0, ev, peak_mib);
    fflush(stdout);
}

static int
interrupted_exit(run_state *r, train_progress *p, const char *why, int code)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/last.safetensors", r->cfg->output);
    if (save(r, p, "last.safetensors") != CLI_OK)
        return CLI_FAILED;
    /* The command that continues: the config (unless it is the embedded one or the checkpoint's)
     * and the output folder when the command line chose it. */
    bool own_config = r->cfg->file[0] != '<' && strstr(r->cfg->file, "[config]") == NULL;
    printf(
        "%s: saved %s (epoch %lld, batch %lld); resume with:\n  yaten train %s%s--resume %s%s%s\n",
        why, path, (long long)p->epoch + 1, (long long)p->batches, own_config ? r->cfg->file : "",
        own_config ? " " : "", path, out_override ? " --out " : "",
        out_override ? out_override : "");
    fflush(stdout);
    return code;
}

static int
train_loop(run_state *r, train_progress *p, const train_opts *o)
{
    cfg_config *cfg = r->cfg;
    progress_bar bar;
    bool tty = isatty(STDERR_FILENO) && o->log_every_n == 0;
    bar_init(&bar, tty ? stderr : stdout, !tty, o->log_every_n);
    int64_t per_epoch = yt_loader_batches_per_epoch(r->train);
    int rc = CLI_OK;
    for (; p->epoch < cfg->epochs; p->epoch++) {
        if (p->batches == 0)
            p->lr = yt_optimizer_get_lr(r->optim, 0);
        double lr = p->lr;
        if (p->batches == 0 &&
            (yt_loader_epoch(r->train) != p->epoch || yt_loader_position(r->train) != 0) &&
            yt_loader_start_epoch(r->train, p->epoch) != YT_OK) {
            fprintf(stderr, "yaten train: training data: %s\n", yt_errmsg());
            return CLI_FAILED;
        }
        yt_module_train(r->model, true);
        bar_start(&bar, p->epoch + 1, cfg->epochs, per_epoch);
        double start = now_seconds() - p->seconds;
        /* A checkpoint taken after the last batch resumes straight into the evaluation. */
        while (p->batches < per_epoch) {
            double loss = 0;
            int64_t b = 0;
            bool end;
            if ((rc = step(r, &loss, &b, &end)) != CLI_OK) {
                bar_finish(&bar);
                return rc;
            }
            if (end)
                break;
            p->loss_sum += loss;
            p->batches++;
            p->samples += b;
            p->step++;
            p->seconds = now_seconds() - start;
            bar_update(&bar, p->batches, p->samples, p->loss_sum / (double)p->batches, p->seconds);
            if (interrupted || (o->max_steps_n > 0 && p->step >= o->max_steps_n)) {
                bar_finish(&bar);
                return interrupted ? interrupted_exit(r, p, "interrupted", CLI_INTERRUPTED)
                                   : interrupted_exit(r, p, "stopped after --max-steps", CLI_OK);
            }
        }
        /* The loader returns the end of the epoch as one more call: consume it, so that the
         * loader stands at the next epoch's first batch (what the checkpoint records). */
        if (p->batches == per_epoch && yt_loader_epoch(r->train) == p->epoch) {
            double loss;
            int64_t b;
            bool end;
            if ((rc = step(r, &loss, &b, &end)) != CLI_OK)
                return rc;
        }
        bar_finish(&bar);
        double train_loss = p->batches ? p->loss_sum / (double)p->batches : NAN;
        double eval_start = now_seconds(), test_loss, test_acc;
        if ((rc = run_evaluate(r, &interrupted, &test_loss, &test_acc)) != CLI_OK)
            return rc;
        if (interrupted)
            return interrupted_exit(r, p, "interrupted", CLI_INTERRUPTED);
        double eval_s = now_seconds() - eval_start;
        print_epoch(r, p, train_loss, test_loss, test_acc, lr, eval_s);
        if ((rc = finish_epoch(r, p, lr, train_loss, test_loss, test_acc)) != CLI_OK ||
            (rc = schedule_epoch(r, train_loss, test_loss, test_acc)) != CLI_OK)
            return rc;
        int64_t done = p->epoch + 1;
        p->batches = p->samples = 0;
        p->loss_sum = p->seconds = 0;
        bool last = done == cfg->epochs;
        if (cfg->checkpoint_every > 0 && done % cfg->checkpoint_every == 0) {
            train_progress next = *p;
            next.epoch = done;
            char name[64];
            snprintf(name, sizeof name, "checkpoint_epoch_%lld.safetensors", (long long)done);
            if ((rc = save(r, &next, name)) != CLI_OK)
                return rc;
        }
        if (last) {
            train_progress next = *p;
            next.epoch = done;
            if ((rc = save(r, &next, "last.safetensors")) != CLI_OK)
                return rc;
        }
    }
    return CLI_OK;
}

static int
save_model(run_state *r)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors", r->cfg->output);
    yt_named_tensors sd = YT_NAMED_TENSORS_INIT;
    yt_metadata meta = YT_METADATA_INIT;
    yt_status st = yt_module_state_dict(r->model, &sd);
    if (st == YT_OK)
        st = yt_metadata_set(&meta, "config", r->cfg->text);
    if (st == YT_OK)
        st = yt_safetensors_save(path, &sd, &meta);
    yt_named_tensors_clear(&sd);
    yt_metadata_clear(&meta);
    if (st != YT_OK) {
        fprintf(stderr, "yaten train: cannot save %s: %s\n", path, yt_errmsg());
        return CLI_FAILED;
    }
    return CLI_OK;
}

static void
print_summary(run_state *r, const train_progress *p, bool plotted)
{
    if (p->n_history == 0)
        return;
    const double *last = p->history + HISTORY_COLS * (p->n_history - 1);
    double total = 0;
    for (int64_t i = 0; i < p->n_history; i++)
        total += p->history[HISTORY_COLS * i + 5];
    if (!isnan(last[3]))
        printf("done: test accuracy %.2f%% after %lld epoch%s (%.1f s per epoch)\n", 100 * last[3],
               (long long)p->n_history, p->n_history == 1 ? "" : "s", total / (double)p->n_history);
    else
        printf("done: train loss %.4f after %lld epoch%s (%.1f s per epoch)\n", last[1],
               (long long)p->n_history, p->n_history == 1 ? "" : "s", total / (double)p->n_history);
    printf("wrote %s/metrics.csv, %s/model.safetensors, %s/last.safetensors%s%s%s\n",
           r->cfg->output, r->cfg->output, r->cfg->output, plotted ? ", " : "",
           plotted ? r->cfg->output : "", plotted ? "/metrics.png" : "");
}

int
cmd_train(int argc, char **argv)
{
    train_opts o;
    int rc = parse(argc, argv, &o);
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    cfg_config cfg;
    if ((rc = load_config(&o, &cfg)) != CLI_OK)
        return rc;
    if (cfg.threads > 0 && yt_set_num_threads((int)cfg.threads) != YT_OK) {
        fprintf(stderr, "yaten train: threads: %s\n", yt_errmsg());
        cfg_free(&cfg);
        return CLI_USAGE;
    }
    run_state r;
    train_progress p = {0};
    rc = run_open(&r, &cfg, "train", true);
    if (rc == CLI_OK)
        rc = run_build(&r, true);
    if (rc == CLI_OK && !report_make_dir(cfg.output))
        rc = CLI_FAILED;
    if (rc == CLI_OK && o.resume != NULL && o.config != NULL) {
        char *stored = run_checkpoint_config(o.resume);
        if (stored != NULL && strcmp(stored, cfg.text) != 0)
            fprintf(stderr,
                    "yaten train: note: %s differs from the config stored in %s; "
                    "continuing with %s\n",
                    o.config, o.resume, o.config);
        free(stored);
    }
    if (rc == CLI_OK && o.resume != NULL) {
        rc = run_load_checkpoint(&r, &p, o.resume);
        if (rc == CLI_OK && p.n_history > 0 &&
            !report_write_csv(cfg.output, p.history, p.n_history))
            rc = CLI_FAILED;
    }
    if (rc == CLI_OK) {
        print_header(&r);
        if (o.resume != NULL)
            printf("resuming from %s at epoch %lld, batch %lld\n", o.resume, (long long)p.epoch + 1,
                   (long long)p.batches);
        if (p.epoch >= cfg.epochs)
            printf("already trained for %lld epochs (use --epochs to train longer)\n",
                   (long long)p.epoch);
        interrupted = 0;
        struct sigaction sa = {.sa_handler = on_sigint}, old;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, &old);
        rc = train_loop(&r, &p, &o);
        sigaction(SIGINT, &old, NULL);
        bool finished = rc == CLI_OK && p.epoch >= cfg.epochs;
        if (finished)
            rc = save_model(&r);
        if (finished && rc == CLI_OK)
            print_summary(&r, &p,
                          !o.no_plot && report_plot(cfg.output, p.n_history, r.test != NULL,
                                                    r.classes && r.test != NULL));
    }
    progress_free(&p);
    run_close(&r);
    cfg_free(&cfg);
    yt_allocator_trim();
    return rc;
}
