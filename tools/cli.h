/* The `yaten` command's subcommands and their shared helpers. Exit codes: 0 success, 1 a failure
 * while running, 2 a usage or config error (nothing was run), 130 interrupted by Ctrl-C. */
#ifndef YT_TOOLS_CLI_H
#define YT_TOOLS_CLI_H

#include <stdbool.h>
#include <stdint.h>

enum { CLI_OK = 0, CLI_FAILED = 1, CLI_USAGE = 2, CLI_INTERRUPTED = 130 };

/* One option of a subcommand: `--name VALUE` / `--name=VALUE` (value != NULL) or a flag. */
typedef struct cli_opt {
    const char *name; /* "--epochs" */
    const char **value;
    bool *flag;
} cli_opt;

/* Parses argv[0..argc) (the arguments after the subcommand's name) into `opts` and up to
 * `max_pos` positional arguments. Prints the problem to stderr and returns CLI_USAGE on unknown
 * options (with a "did you mean"), missing values or too many positionals; returns -1 when
 * --help/-h was given, CLI_OK otherwise. */
int cli_parse_args(const char *cmd, int argc, char **argv, const cli_opt *opts, int n_opts,
                   const char **pos, int max_pos, int *n_pos);

/* Reads an integer option in [lo, hi]; prints "yaten CMD: OPT: ..." and returns false when not. */
bool cli_int_arg(const char *cmd, const char *opt, const char *s, int64_t lo, int64_t hi,
                 int64_t *out);

int cmd_train(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_ops(int argc, char **argv);
int cmd_config(int argc, char **argv);

void help_train(void);
void help_eval(void);
void help_check(void);
void help_inspect(void);
void help_ops(void);
void help_config_keys(void);

#endif
