/* metrics.csv and the gnuplot plot. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "report.h"
#include "run.h"

bool
report_make_dir(const char *dir)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {
        fprintf(stderr, "yaten: output folder name too long: %s\n", dir);
        return false;
    }
    for (char *p = path + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(path, 0777) != 0 && errno != EEXIST) {
                fprintf(stderr, "yaten: cannot create %s: %s\n", path, strerror(errno));
                return false;
            }
            *p = c;
            if (c == '\0')
                break;
        }
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "yaten: %s is not a folder\n", dir);
        return false;
    }
    return true;
}

static void
field(FILE *f, double v, const char *fmt)
{
    if (!isnan(v))
        fprintf(f, fmt, v);
}

bool
report_write_csv(const char *dir, const double *h, int64_t rows)
{
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/metrics.csv", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (f == NULL) {
        fprintf(stderr, "yaten: cannot write %s: %s\n", tmp, strerror(errno));
        return false;
    }
    fprintf(f, "epoch,train_loss,test_loss,test_acc,lr,seconds\n");
    for (int64_t i = 0; i < rows; i++) {
        const double *r = h + i * HISTORY_COLS;
        fprintf(f, "%lld,", (long long)r[0]);
        field(f, r[1], "%.6f");
        fputc(',', f);
        field(f, r[2], "%.6f");
        fputc(',', f);
        field(f, r[3], "%.6f");
        fputc(',', f);
        field(f, r[4], "%.6g");
        fputc(',', f);
        field(f, r[5], "%.3f");
        fputc('\n', f);
    }
    bool ok = fflush(f) == 0 && !ferror(f);
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        fprintf(stderr, "yaten: cannot write %s: %s\n", path, strerror(errno));
        remove(tmp);
        return false;
    }
    return true;
}

static bool
on_path(const char *prog)
{
    const char *path = getenv("PATH");
    if (path == NULL)
        return false;
    char buf[4096];
    while (*path) {
        size_t len = strcspn(path, ":");
        snprintf(buf, sizeof buf, "%.*s/%s", (int)len, path, prog);
        if (len > 0 && access(buf, X_OK) == 0)
            return true;
        path += len + (path[len] == ':');
    }
    return false;
}

/* A gnuplot string literal: single quotes, a quote doubled. */
static void
quoted(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'')
            fputc('\'', f);
        fputc(*s, f);
    }
    fputc('\'', f);
}

bool
report_plot(const char *dir, int64_t epochs, bool has_test, bool has_acc)
{
    if (!on_path("gnuplot")) {
        printf(
            "gnuplot not found: no plot (apt-get install gnuplot-nox; the numbers are in %s/metrics.csv)\n",
            dir);
        return false;
    }
    char csv[4096], png[4096];
    snprintf(csv, sizeof csv, "%s/metrics.csv", dir);
    snprintf(png, sizeof png, "%s/metrics.png", dir);
    fflush(stdout);
    FILE *g = popen("gnuplot 2>&1", "w");
    if (g == NULL) {
        printf("cannot run gnuplot (%s): no plot\n", strerror(errno));
        return false;
    }
    fprintf(g, "set terminal pngcairo size %d,420 font ',10'\nset output ", has_acc ? 1000 : 560);
    quoted(g, png);
    fprintf(g, "\nset datafile separator ','\nset datafile missing ''\n"
               "set grid\nset xlabel 'epoch'\n");
    if (epochs <= 20)
        fprintf(g, "set xtics 1\n");
    if (has_acc)
        fprintf(g, "set multiplot layout 1,2\n");
    fprintf(g, "set title 'loss'\nplot ");
    quoted(g, csv);
    fprintf(g, " every ::1 using 1:2 with linespoints lw 2 title 'train'");
    if (has_test)
        fprintf(g, ", '' every ::1 using 1:3 with linespoints lw 2 title 'test'");
    fprintf(g, "\n");
    if (has_acc) {
        fprintf(g, "set title 'test accuracy'\nset format y '%%.1f%%%%'\nplot ");
        quoted(g, csv);
        fprintf(g, " every ::1 using 1:($4*100) with linespoints lw 2 notitle\nunset multiplot\n");
    }
    int status = pclose(g);
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        printf("gnuplot failed: no plot\n");
        return false;
    }
    return true;
}
