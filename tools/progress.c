/* Progress bar and plain progress lines. */
#include <math.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "progress.h"

double
now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

const char *
format_duration(double s, char *buf, size_t cap)
{
    if (!isfinite(s) || s < 0)
        s = 0;
    long t = lround(s);
    if (t >= 3600)
        snprintf(buf, cap, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, cap, "%ld:%02ld", t / 60, t % 60);
    return buf;
}

void
bar_init(progress_bar *b, FILE *f, bool force_plain, int64_t log_every_steps)
{
    memset(b, 0, sizeof *b);
    b->f = f;
    b->tty = !force_plain && isatty(fileno(f));
    b->log_every_s = 30;
    b->log_every_steps = log_every_steps;
}

void
bar_start(progress_bar *b, int64_t epoch, int64_t epochs, int64_t total)
{
    b->epoch = epoch;
    b->epochs = epochs;
    b->total = total;
    b->last_draw = now_seconds();
    b->drawn = false;
}

static int
terminal_width(FILE *f)
{
    struct winsize ws;
    if (ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40)
        return ws.ws_col;
    return 80;
}

void
bar_update(progress_bar *b, int64_t done, int64_t samples, double loss, double elapsed)
{
    double t = now_seconds();
    bool last = done >= b->total;
    double rate = elapsed > 0 ? (double)samples / elapsed : 0;
    double eta = done > 0 ? elapsed / (double)done * (double)(b->total - done) : 0;
    char eta_s[32];
    if (b->tty) {
        if (t - b->last_draw < 0.1 && !last && b->drawn)
            return;
        char tail[160];
        int n = snprintf(tail, sizeof tail, " %lld/%lld  %.0f samples/s  loss %.4f  ETA %s",
                         (long long)done, (long long)b->total, rate, loss,
                         format_duration(eta, eta_s, sizeof eta_s));
        char head[48];
        int h = snprintf(head, sizeof head, "epoch %lld/%lld ", (long long)b->epoch,
                         (long long)b->epochs);
        int width = terminal_width(b->f) - 1 - n - h - 2;
        if (width > 30)
            width = 30; /* fixed while the numbers' widths change */
        char bar[64];
        int filled = b->total > 0 && width > 0 ? (int)(width * done / b->total) : 0;
        if (width < 0)
            width = 0;
        for (int i = 0; i < width; i++)
            bar[i] = i < filled ? '#' : '.';
        bar[width] = '\0';
        fprintf(b->f, "\r%s[%s]%s\033[K", head, bar, tail);
        fflush(b->f);
        b->drawn = true;
        b->last_draw = t;
        return;
    }
    bool due = b->log_every_steps > 0 ? done % b->log_every_steps == 0
                                      : b->log_every_s > 0 && t - b->last_draw >= b->log_every_s;
    if (!due || last)
        return;
    fprintf(b->f, "epoch %lld/%lld  batch %lld/%lld  %.0f samples/s  loss %.4f  ETA %s\n",
            (long long)b->epoch, (long long)b->epochs, (long long)done, (long long)b->total, rate,
            loss, format_duration(eta, eta_s, sizeof eta_s));
    fflush(b->f);
    b->last_draw = t;
}

void
bar_finish(progress_bar *b)
{
    if (b->tty && b->drawn) {
        fprintf(b->f, "\r\033[K");
        fflush(b->f);
    }
    b->drawn = false;
}
