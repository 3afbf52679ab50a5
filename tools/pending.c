/* Subcommands that wait for the library's nn, optim, data and serialization parts. */
#include <stdio.h>

#include "cli.h"
#include "run.h"

static int
pending(const char *what)
{
    fprintf(stderr, "yaten %s: not available in this build yet\n", what);
    return CLI_FAILED;
}

int
run_check_with_data(cfg_config *cfg)
{
    (void)cfg;
    return pending("check (datasets)");
}

int
cmd_train(int argc, char **argv)
{
    (void)argc, (void)argv;
    return pending("train");
}

int
cmd_eval(int argc, char **argv)
{
    (void)argc, (void)argv;
    return pending("eval");
}

int
cmd_inspect(int argc, char **argv)
{
    (void)argc, (void)argv;
    return pending("inspect");
}

void
help_train(void)
{
}

void
help_eval(void)
{
}

void
help_inspect(void)
{
}
