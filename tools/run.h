/* What `yaten train` and `yaten eval` share: loading a config, opening its datasets and building
 * its model, loss, optimizer and schedule. */
#ifndef YT_TOOLS_RUN_H
#define YT_TOOLS_RUN_H

#include <stdio.h>

#include "config.h"

/* Loads `path` (NULL: the embedded default) into *cfg. On problems prints them and a summary to
 * stderr, frees cfg and returns CLI_USAGE. */
int cli_load_config(const char *cmd, const char *path, cfg_config *cfg);

/* The layer table with each layer's arguments and output shape. */
void cli_print_model(const cfg_config *cfg, FILE *f);

/* Opens the config's datasets to learn the sample and target shapes and checks the model
 * against them (configs whose shapes are not known from the config alone). Prints problems;
 * returns CLI_OK or CLI_USAGE. */
int run_check_with_data(cfg_config *cfg);

#endif
