/* How long the data loader takes over one epoch of Fashion-MNIST (60000 images, batch 64,
 * shuffled, normalized), with 0 workers (loading in the caller's thread) and with worker threads.
 *
 *   make build/bench/loader && build/bench/loader [--workers 0,2] [--reps 5] [--work-us 0]
 *
 * --work-us N burns N microseconds of CPU in the consuming thread per batch, standing in for a
 * training step: with workers the loading overlaps it, and "exposed" is the epoch time beyond
 * the work itself. Wall and CPU times are printed: on a shared machine the CPU time (all threads
 * of the process) is the steadier figure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <yaten.h>

#define FASHION "/usr/share/datasets/fashion-mnist/"

static double
seconds(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void
burn(double us)
{
    double end = seconds(CLOCK_MONOTONIC) + us * 1e-6;
    while (seconds(CLOCK_MONOTONIC) < end)
        ;
}

static int
compare(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One epoch; returns 0 and the wall and CPU seconds, or 1 on an error. */
static int
epoch(yt_loader *l, double work_us, double *wall, double *cpu, int64_t *samples)
{
    double w0 = seconds(CLOCK_MONOTONIC), c0 = seconds(CLOCK_PROCESS_CPUTIME_ID);
    *samples = 0;
    for (;;) {
        yt_tensor *x, *y;
        if (yt_loader_next(l, &x, &y) != YT_OK)
            return 1;
        if (x == NULL)
            break;
        *samples += yt_tensor_size(x, 0);
        if (work_us > 0)
            burn(work_us);
        yt_release(x);
        yt_release(y);
    }
    *wall = seconds(CLOCK_MONOTONIC) - w0;
    *cpu = seconds(CLOCK_PROCESS_CPUTIME_ID) - c0;
    return 0;
}

int
main(int argc, char **argv)
{
    const char *workers_list = "0,2";
    int reps = 5;
    double work_us = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--workers") == 0)
            workers_list = argv[i + 1];
        else if (strcmp(argv[i], "--reps") == 0)
            reps = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--work-us") == 0)
            work_us = atof(argv[i + 1]);
    }
    if (reps < 1 || reps > 100)
        reps = 5;

    double t0 = seconds(CLOCK_MONOTONIC);
    yt_dataset *d = yt_idx_dataset_open(FASHION "train-images-idx3-ubyte.gz",
                                        FASHION "train-labels-idx1-ubyte.gz");
    if (d == NULL) {
        fprintf(stderr, "bench/loader: %s (install dataset-fashion-mnist)\n", yt_errmsg());
        return 1;
    }
    printf("open (gunzip + validate) %lld images: %.3f s\n", (long long)yt_dataset_length(d),
           seconds(CLOCK_MONOTONIC) - t0);

    /* Fashion-MNIST's training-set mean and std */
    const double mean = 0.2860, std = 0.3530;
    const yt_transform normalize = yt_transform_normalize(&mean, &std, 1);
    printf("batch 64, shuffle, normalize; %d epochs each, median (min); work per batch %.0f us\n",
           reps, work_us);
    printf("%8s %14s %14s %12s %10s\n", "workers", "wall s", "cpu s", "samples/s", "exposed s");
    char *list = strdup(workers_list);
    for (char *tok = strtok(list, ","); tok != NULL; tok = strtok(NULL, ",")) {
        yt_loader_options o = {.batch_size = 64,
                               .shuffle = true,
                               .seed = 1,
                               .workers = atoi(tok),
                               .transforms = &normalize,
                               .n_transforms = 1};
        yt_loader *l = yt_loader_new(d, &o);
        if (l == NULL) {
            fprintf(stderr, "bench/loader: %s\n", yt_errmsg());
            return 1;
        }
        double wall[100], cpu[100];
        int64_t samples = 0;
        for (int r = 0; r < reps; r++)
            if (epoch(l, work_us, &wall[r], &cpu[r], &samples) != 0) {
                fprintf(stderr, "bench/loader: %s\n", yt_errmsg());
                return 1;
            }
        int64_t batches = yt_loader_batches_per_epoch(l);
        yt_loader_release(l);
        qsort(wall, (size_t)reps, sizeof(double), compare);
        qsort(cpu, (size_t)reps, sizeof(double), compare);
        double med = wall[reps / 2];
        printf("%8d %7.3f (%.3f) %7.3f (%.3f) %12.0f %10.3f\n", o.workers, med, wall[0],
               cpu[reps / 2], cpu[0], (double)samples / med,
               med - (double)batches * work_us * 1e-6);
    }
    free(list);
    yt_dataset_release(d);
    return 0;
}
