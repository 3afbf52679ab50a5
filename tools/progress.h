/* Per-epoch progress: a bar redrawn in place on a terminal (at most ~10 times a second), plain
 * lines at a steady pace otherwise (logs, CI). */
#ifndef YT_TOOLS_PROGRESS_H
#define YT_TOOLS_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct progress_bar {
    FILE *f;
    bool tty;
    int64_t epoch, epochs, total; /* epoch is 1-based for display */
    double last_draw;
    double log_every_s;      /* plain lines: seconds between them (0: only at the end) */
    int64_t log_every_steps; /* plain lines: batches between them (0: by time) */
    bool drawn;
} progress_bar;

/* Monotonic seconds. */
double now_seconds(void);

/* A bar on `f` when it is a terminal (or `force_plain` is false and it is one), plain lines
 * otherwise. */
void bar_init(progress_bar *b, FILE *f, bool force_plain, int64_t log_every_steps);
void bar_start(progress_bar *b, int64_t epoch, int64_t epochs, int64_t total_batches);
/* Called after every batch; draws only when due. */
void bar_update(progress_bar *b, int64_t done, int64_t samples, double running_loss,
                double elapsed);
/* Erases the bar (terminal) so the epoch's summary line takes its place. */
void bar_finish(progress_bar *b);

/* "1:02:03" or "2:03" */
const char *format_duration(double seconds, char *buf, size_t cap);

#endif
