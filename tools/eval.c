/* `yaten eval CONFIG --checkpoint FILE`: test loss and accuracy of trained weights. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "run.h"

void
help_eval(void)
{
    printf(
        "usage: yaten eval [CONFIG.yaml] --checkpoint FILE\n"
        "\n"
        "Builds the model of CONFIG, loads the weights of FILE (a checkpoint written by yaten\n"
        "train, or a state dict such as OUT/model.safetensors) and prints the loss and accuracy on\n"
        "the config's test split (the training split when it has none). Without CONFIG, the\n"
        "config stored in FILE is used.\n");
}

int
cmd_eval(int argc, char **argv)
{
    const char *config = NULL, *checkpoint = NULL;
    const cli_opt opts[] = {{"--checkpoint", &checkpoint, NULL}};
    int n_pos;
    int rc = cli_parse_args("eval", argc, argv, opts, 1, &config, 1, &n_pos);
    if (rc < 0) {
        help_eval();
        return CLI_OK;
    }
    if (rc != CLI_OK)
        return rc;
    if (checkpoint == NULL) {
        fprintf(stderr, "yaten eval: --checkpoint FILE is required (see yaten eval --help)\n");
        return CLI_USAGE;
    }
    cfg_config cfg;
    if (config == NULL) {
        char *text = run_checkpoint_config(checkpoint);
        if (text == NULL) {
            fprintf(stderr, "yaten eval: %s holds no config (or cannot be read); give CONFIG\n",
                    checkpoint);
            return CLI_USAGE;
        }
        char name[4200];
        snprintf(name, sizeof name, "%s[config]", checkpoint);
        bool ok = cfg_parse(&cfg, name, text, strlen(text));
        free(text);
        if (!ok) {
            cfg_print_errors(&cfg, stderr);
            cfg_free(&cfg);
            return CLI_USAGE;
        }
    } else if ((rc = cli_load_config("eval", config, &cfg)) != CLI_OK) {
        return rc;
    }
    if (cfg.threads > 0)
        yt_set_num_threads((int)cfg.threads);
    run_state r;
    rc = run_open(&r, &cfg, "eval", false);
    if (rc == CLI_OK)
        rc = run_build(&r, false);
    if (rc == CLI_OK)
        rc = run_load_weights(&r, checkpoint);
    double loss, acc;
    if (rc == CLI_OK)
        rc = run_evaluate(&r, NULL, &loss, &acc);
    if (rc == CLI_OK) {
        printf("%s: %lld samples  loss %.4f", checkpoint, (long long)yt_dataset_length(r.test_set),
               loss);
        if (!isnan(acc))
            printf("  accuracy %.2f%%", 100 * acc);
        printf("\n");
    }
    run_close(&r);
    cfg_free(&cfg);
    return rc;
}
