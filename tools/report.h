/* The run's outputs beside the checkpoints: metrics.csv (one row per epoch) and metrics.png (a
 * loss and accuracy plot drawn by gnuplot, when it is installed). */
#ifndef YT_TOOLS_REPORT_H
#define YT_TOOLS_REPORT_H

#include <stdbool.h>
#include <stdint.h>

/* Writes `rows` x 6 values (epoch, train_loss, test_loss, test_acc, lr, seconds; NAN as an empty
 * field) to DIR/metrics.csv through a temporary file. Prints the problem and returns false when
 * it cannot. */
bool report_write_csv(const char *dir, const double *history, int64_t rows);

/* Draws DIR/metrics.csv (`epochs` rows) into DIR/metrics.png with gnuplot: the losses (the
 * test loss when `has_test`) and the test accuracy (when `has_acc`). Returns true when the plot
 * was written; otherwise prints why not (gnuplot missing or failing) and returns false. */
bool report_plot(const char *dir, int64_t epochs, bool has_test, bool has_acc);

/* mkdir -p */
bool report_make_dir(const char *dir);

#endif
