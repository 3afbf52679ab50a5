/* Command-line options of the subcommands: `--name VALUE`, `--name=VALUE` and flags. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "yamlread.h"

int
cli_parse_args(const char *cmd, int argc, char **argv, const cli_opt *opts, int n_opts,
               const char **pos, int max_pos, int *n_pos)
{
    *n_pos = 0;
    bool only_positional = false;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (only_positional || arg[0] != '-' || strcmp(arg, "-") == 0) {
            if (*n_pos >= max_pos) {
                fprintf(stderr, "yaten %s: unexpected argument '%s' (see yaten %s --help)\n", cmd,
                        arg, cmd);
                return CLI_USAGE;
            }
            pos[(*n_pos)++] = arg;
            continue;
        }
        if (strcmp(arg, "--") == 0) {
            only_positional = true;
            continue;
        }
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)
            return -1;
        const char *eq = strchr(arg, '=');
        size_t name_len = eq ? (size_t)(eq - arg) : strlen(arg);
        const cli_opt *opt = NULL;
        for (int j = 0; j < n_opts && opt == NULL; j++)
            if (strlen(opts[j].name) == name_len && strncmp(opts[j].name, arg, name_len) == 0)
                opt = &opts[j];
        if (opt == NULL) {
            const char *names[32];
            int n = 0;
            for (int j = 0; j < n_opts && n < 32; j++)
                names[n++] = opts[j].name;
            char given[64];
            snprintf(given, sizeof given, "%.*s", (int)(name_len < 63 ? name_len : 63), arg);
            const char *hint = yr_suggest(given, names, n);
            if (hint != NULL)
                fprintf(stderr, "yaten %s: unknown option '%s' (did you mean '%s'?)\n", cmd, given,
                        hint);
            else
                fprintf(stderr, "yaten %s: unknown option '%s' (see yaten %s --help)\n", cmd, given,
                        cmd);
            return CLI_USAGE;
        }
        if (opt->flag != NULL) {
            if (eq != NULL) {
                fprintf(stderr, "yaten %s: %s takes no value\n", cmd, opt->name);
                return CLI_USAGE;
            }
            *opt->flag = true;
            continue;
        }
        if (eq != NULL) {
            *opt->value = eq + 1;
        } else if (i + 1 < argc) {
            *opt->value = argv[++i];
        } else {
            fprintf(stderr, "yaten %s: %s needs a value\n", cmd, opt->name);
            return CLI_USAGE;
        }
    }
    return CLI_OK;
}

bool
cli_int_arg(const char *cmd, const char *opt, const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (s[0] == '\0' || *end != '\0' || errno != 0) {
        fprintf(stderr, "yaten %s: %s: expected an integer, got '%s'\n", cmd, opt, s);
        return false;
    }
    if (v < lo || v > hi) {
        fprintf(stderr, "yaten %s: %s: must be between %lld and %lld, got %lld\n", cmd, opt,
                (long long)lo, (long long)hi, v);
        return false;
    }
    *out = v;
    return true;
}
