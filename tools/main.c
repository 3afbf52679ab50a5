/* yaten: train models from YAML configs, evaluate checkpoints, inspect safetensors files, list
 * operators. This file only dispatches to the subcommands (cmd_*.c, train.c, eval.c). */
#include <stdio.h>
#include <string.h>

#include <yaten.h>

#include "cli.h"
#include "layers.h"
#include "yamlread.h"

static void
usage(FILE *f)
{
    fprintf(
        f,
        "usage: yaten <command> [arguments]\n"
        "\n"
        "commands:\n"
        "  train [CONFIG.yaml]        train a model (no config: the embedded Fashion-MNIST CNN)\n"
        "  eval CONFIG --checkpoint F test loss and accuracy of a checkpoint\n"
        "  check [CONFIG.yaml]        check a config and print the model's shapes, without training\n"
        "  inspect FILE.safetensors   names, dtypes, shapes and sizes of the tensors in a file\n"
        "  ops [PATTERN]              every operator with its schema\n"
        "  config                     print the embedded default config (a starting point)\n"
        "  help [TOPIC]               help on a command, or on `layers` and `config` keys\n"
        "\n"
        "`yaten COMMAND --help` describes a command's options. Errors in a config are reported\n"
        "as CONFIG:LINE:COL: message before anything runs. Exit status: 0 success, 1 failure,\n"
        "2 usage or config error, 130 interrupted (a checkpoint was saved).\n");
}

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    void (*help)(void);
} command;

static const command commands[] = {
    {"train", cmd_train, help_train}, {"eval", cmd_eval, help_eval},
    {"check", cmd_check, help_check}, {"inspect", cmd_inspect, help_inspect},
    {"ops", cmd_ops, help_ops},       {"config", cmd_config, NULL},
};
enum { N_COMMANDS = sizeof commands / sizeof commands[0] };

static const command *
find(const char *name)
{
    for (int i = 0; i < N_COMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

static int
unknown(const char *what, const char *name)
{
    const char *names[N_COMMANDS + 1];
    for (int i = 0; i < N_COMMANDS; i++)
        names[i] = commands[i].name;
    names[N_COMMANDS] = "help";
    const char *hint = yr_suggest(name, names, N_COMMANDS + 1);
    if (hint != NULL)
        fprintf(stderr, "yaten: unknown %s '%s' (did you mean '%s'?)\n", what, name, hint);
    else
        fprintf(stderr, "yaten: unknown %s '%s'; run `yaten --help`\n", what, name);
    return CLI_USAGE;
}

static int
help(int argc, char **argv)
{
    if (argc == 0) {
        usage(stdout);
        return CLI_OK;
    }
    if (strcmp(argv[0], "layers") == 0) {
        printf("Layers of model.layers (arguments: name, type, default, meaning):\n\n");
        layers_print_help(stdout);
        return CLI_OK;
    }
    if (strcmp(argv[0], "config") == 0) {
        help_config_keys();
        return CLI_OK;
    }
    const command *c = find(argv[0]);
    if (c == NULL)
        return unknown("help topic", argv[0]);
    if (c->help != NULL)
        c->help();
    else
        usage(stdout);
    return CLI_OK;
}

int
main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0)
        return help(argc - 2, argv + 2);
    if (strcmp(name, "--version") == 0 || strcmp(name, "version") == 0) {
        printf("yaten %s (BLAS: %s)\n", yt_version(), yt_blas_info());
        return CLI_OK;
    }
    if (name[0] == '-') {
        fprintf(stderr, "yaten: unknown option '%s'; run `yaten --help`\n", name);
        return CLI_USAGE;
    }
    const command *c = find(name);
    if (c == NULL)
        return unknown("command", name);
    return c->run(argc - 2, argv + 2);
}
