/* `yaten train`, `eval` and `inspect` end to end, in process (the subcommands are the same
 * functions the binary calls): a small synthetic classification set written as .npy, one run
 * straight through, one stopped mid-epoch and resumed from its checkpoint, which must end with a
 * byte-identical model and the same metrics; then evaluation of the result, inspection of the
 * checkpoint, and configs that must be refused before anything runs. Every test ends with no
 * live tensors: the driver releases everything it made. */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cli.h"
#include "test_util.h"

static char dir[64];

/* A temporary folder as the working directory, with stdout going to out.txt in it. */
static void
enter_tmpdir(void)
{
    strcpy(dir, "/tmp/yaten-cli-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    cr_assert_eq(chdir(dir), 0);
    cr_assert_not_null(freopen("out.txt", "w", stdout));
}

static int
remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* Removes the temporary folder (kept when a test fails, for a look). */
static void
leave_tmpdir(void)
{
    cr_assert_eq(chdir("/"), 0);
    cr_assert_eq(nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
}

static void
write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

static char *
read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    if (len)
        *len = (size_t)n;
    return buf;
}

/* 4 classes from a random linear teacher over 8 features: 256 training and 64 test samples. */
static void
write_dataset(void)
{
    yt_manual_seed(7);
    yt_scope_begin();
    const int64_t xs[2] = {320, 8}, ws[2] = {8, 4};
    yt_tensor *x = yt_randn(xs, 2), *w = yt_randn(ws, 2);
    yt_tensor *y = yt_argmax_ex(yt_matmul(x, w), 1, false);
    cr_assert_not_null(y, "%s", yt_errmsg());
    cr_assert_eq(yt_npy_save("x.npy", yt_narrow(x, 0, 0, 256)), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(yt_npy_save("y.npy", yt_narrow(y, 0, 0, 256)), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(yt_npy_save("xt.npy", yt_narrow(x, 0, 256, 64)), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(yt_npy_save("yt.npy", yt_narrow(y, 0, 256, 64)), YT_OK, "%s", yt_errmsg());
    yt_scope_end();
}

/* Dropout, batch norm, a per-step schedule and worker threads: every kind of state a resumed run
 * must restore (weights, running statistics, Adam's moments, the learning rate, the random
 * generator, the loader's position). */
static const char *const config = "data:\n"
                                  "  dataset: npy\n"
                                  "  train: {inputs: x.npy, targets: y.npy}\n"
                                  "  test: {inputs: xt.npy, targets: yt.npy}\n"
                                  "  batch_size: 16\n"
                                  "  workers: 2\n"
                                  "model:\n"
                                  "  layers:\n"
                                  "    - linear: {out: 32}\n"
                                  "    - batch_norm1d\n"
                                  "    - relu\n"
                                  "    - dropout: 0.2\n"
                                  "    - linear: {out: 4}\n"
                                  "optimizer: {name: adamw, lr: 0.01}\n"
                                  "schedule: {name: onecycle, max_lr: 0.02}\n"
                                  "epochs: 3\n"
                                  "seed: 3\n"
                                  "output: run\n";

static int
run(int (*cmd)(int, char **), const char *a0, const char *a1, const char *a2, const char *a3,
    const char *a4, const char *a5)
{
    char *argv[8] = {(char *)a0, (char *)a1, (char *)a2, (char *)a3, (char *)a4, (char *)a5, NULL};
    int argc = 0;
    while (argv[argc] != NULL)
        argc++;
    int rc = cmd(argc, argv);
    fflush(stdout);
    return rc;
}

/* The first five columns of metrics.csv (the last is wall time). */
static char *
metrics_without_time(const char *path)
{
    char *csv = read_file(path, NULL);
    char *out = malloc(strlen(csv) + 1), *o = out;
    for (char *line = strtok(csv, "\n"); line; line = strtok(NULL, "\n")) {
        char *last = strrchr(line, ',');
        *last = '\0';
        o += sprintf(o, "%s\n", line);
    }
    free(csv);
    return out;
}

static bool
exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

Test(cli_train, train_resume_eval_inspect)
{
    enter_tmpdir();
    write_dataset();
    write_file("t.yaml", config);

    cr_assert_eq(run(cmd_train, "t.yaml", "--out", "a", "--no-plot", NULL, NULL), CLI_OK);
    static const char *const files[] = {"a/metrics.csv", "a/model.safetensors",
                                        "a/last.safetensors", "a/checkpoint_epoch_1.safetensors",
                                        "a/checkpoint_epoch_3.safetensors"};
    for (int i = 0; i < 5; i++)
        cr_assert(exists(files[i]), "%s was not written", files[i]);
    char *csv = read_file("a/metrics.csv", NULL);
    cr_assert(strncmp(csv, "epoch,train_loss,test_loss,test_acc,lr,seconds\n1,", 49) == 0, "%s",
              csv);
    double e, train[3], test_loss, acc;
    char *line = strchr(csv, '\n') + 1;
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(sscanf(line, "%lf,%lf,%lf,%lf", &e, &train[i], &test_loss, &acc), 4, "%s",
                     line);
        cr_assert_eq(e, i + 1);
        line = strchr(line, '\n') + 1;
    }
    cr_assert(train[2] < train[0], "the training loss falls: %g -> %g", train[0], train[2]);
    cr_assert(acc > 0.6, "a linear teacher is learnt: test accuracy %g", acc);
    free(csv);

    /* Stopped after 21 steps (mid-epoch 2 of 16 batches each), then resumed from the checkpoint
     * with the config it holds: the same model, bit for bit, and the same metrics. */
    cr_assert_eq(run(cmd_train, "t.yaml", "--out", "b", "--max-steps", "21", NULL), CLI_OK);
    cr_assert(exists("b/last.safetensors") && !exists("b/model.safetensors"));
    cr_assert_eq(run(cmd_train, "--resume", "b/last.safetensors", "--out", "b", "--no-plot", NULL),
                 CLI_OK);
    size_t na, nb;
    char *ma = read_file("a/model.safetensors", &na), *mb = read_file("b/model.safetensors", &nb);
    cr_assert(na == nb && memcmp(ma, mb, na) == 0, "the resumed run's weights differ");
    free(ma);
    free(mb);
    char *ca = metrics_without_time("a/metrics.csv"), *cb = metrics_without_time("b/metrics.csv");
    cr_assert_str_eq(ca, cb);
    free(ca);
    free(cb);

    /* A checkpoint taken at the very end of an epoch resumes into its evaluation. */
    cr_assert_eq(run(cmd_train, "t.yaml", "--out", "c", "--max-steps", "32", NULL), CLI_OK);
    cr_assert_eq(run(cmd_train, "t.yaml", "--resume", "c/last.safetensors", "--out", "c", NULL),
                 CLI_OK);
    ma = read_file("a/model.safetensors", &na), mb = read_file("c/model.safetensors", &nb);
    cr_assert(na == nb && memcmp(ma, mb, na) == 0, "the run resumed at an epoch's end differs");
    free(ma);
    free(mb);

    /* eval of the weights (a plain state dict) and of the checkpoint (its model part). */
    cr_assert_eq(run(cmd_eval, "t.yaml", "--checkpoint", "a/model.safetensors", NULL, NULL, NULL),
                 CLI_OK);
    cr_assert_eq(run(cmd_eval, "--checkpoint", "a/last.safetensors", NULL, NULL, NULL, NULL),
                 CLI_OK);
    cr_assert_eq(run(cmd_inspect, "a/last.safetensors", NULL, NULL, NULL, NULL, NULL), CLI_OK);
    char *out = read_file("out.txt", NULL);
    char want[96];
    snprintf(want, sizeof want, "a/model.safetensors: 64 samples  loss %.4f  accuracy %.2f%%",
             test_loss, 100 * acc);
    cr_assert_not_null(strstr(out, want), "eval prints '%s'", want);
    snprintf(want, sizeof want, "a/last.safetensors: 64 samples  loss %.4f  accuracy %.2f%%",
             test_loss, 100 * acc);
    cr_assert_not_null(strstr(out, want), "eval prints '%s'", want);
    cr_assert_not_null(strstr(out, "model.1.running_mean"), "inspect lists the tensors");
    cr_assert_not_null(strstr(out, "format: yaten-checkpoint"), "inspect shows the metadata");
    free(out);
    leave_tmpdir();
    YT_ASSERT_NO_LEAKS();
}

Test(cli_train, problems_stop_before_training)
{
    enter_tmpdir();
    write_dataset();
    /* A config problem and a data problem: exit status 2, no output folder. */
    write_file("bad.yaml", "data: {dataset: npy, train: {inputs: x.npy, targets: y.npy}}\n"
                           "model: {layers: [{linear: {in: 9, out: 4}}]}\n"
                           "optimizer: {name: sgd, lr: 0.1}\nepochs: 1\noutput: run\n");
    cr_assert_eq(run(cmd_train, "bad.yaml", NULL, NULL, NULL, NULL, NULL), CLI_USAGE);
    write_file("missing.yaml", "data: {dataset: npy, train: {inputs: nope.npy, targets: y.npy}}\n"
                               "model: {layers: [{linear: {out: 4}}]}\n"
                               "optimizer: {name: sgd, lr: 0.1}\nepochs: 1\noutput: run\n");
    cr_assert_eq(run(cmd_train, "missing.yaml", NULL, NULL, NULL, NULL, NULL), CLI_USAGE);
    write_file("mse.yaml", "data: {dataset: npy, train: {inputs: x.npy, targets: y.npy}}\n"
                           "model: {layers: [{linear: {out: 4}}]}\nloss: mse\n"
                           "optimizer: {name: sgd, lr: 0.1}\nepochs: 1\noutput: run\n");
    cr_assert_eq(run(cmd_train, "mse.yaml", NULL, NULL, NULL, NULL, NULL), CLI_USAGE);
    cr_assert(!exists("run"), "nothing is written before the config is accepted");
    /* Usage errors. */
    cr_assert_eq(run(cmd_train, "--epoch", "3", NULL, NULL, NULL, NULL), CLI_USAGE);
    cr_assert_eq(run(cmd_train, "a.yaml", "b.yaml", NULL, NULL, NULL, NULL), CLI_USAGE);
    cr_assert_eq(run(cmd_train, "--epochs", "zero", NULL, NULL, NULL, NULL), CLI_USAGE);
    cr_assert_eq(run(cmd_eval, "bad.yaml", NULL, NULL, NULL, NULL, NULL), CLI_USAGE);
    cr_assert_eq(run(cmd_inspect, "x.npy", NULL, NULL, NULL, NULL, NULL), CLI_FAILED);
    leave_tmpdir();
    YT_ASSERT_NO_LEAKS();
}
