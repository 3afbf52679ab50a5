/* `yaten ops [PATTERN]`: every operator of the generated registry, with its schema and doc. */
#include <stdio.h>
#include <string.h>

#include <yaten.h>

#include "cli.h"

void
help_ops(void)
{
    printf(
        "usage: yaten ops [PATTERN] [--brief]\n"
        "\n"
        "Lists every operator declared in ops.yaml, from the registry compiled into yaten: its\n"
        "schema and one line of documentation. PATTERN keeps the operators whose schema contains\n"
        "it; --brief prints the schemas only.\n");
}

int
cmd_ops(int argc, char **argv)
{
    bool brief = false;
    const cli_opt opts[] = {{"--brief", NULL, &brief}};
    const char *pattern = NULL;
    int n_pos;
    int rc = cli_parse_args("ops", argc, argv, opts, 1, &pattern, 1, &n_pos);
    if (rc < 0) {
        help_ops();
        return CLI_OK;
    }
    if (rc != CLI_OK)
        return rc;
    int shown = 0, n = yt_op_count();
    for (int i = 0; i < n; i++) {
        const char *schema = yt_op_schema(i), *doc = yt_op_doc(i);
        if (pattern != NULL && strstr(schema, pattern) == NULL)
            continue;
        shown++;
        if (brief)
            printf("%s\n", schema);
        else
            printf("%s\n    %s\n", schema, doc != NULL && doc[0] ? doc : "(undocumented)");
    }
    if (pattern != NULL && shown == 0) {
        fprintf(stderr, "yaten ops: no operator matches '%s'\n", pattern);
        return CLI_FAILED;
    }
    if (!brief)
        printf("\n%d of %d operators%s\n", shown, n, pattern ? " match" : "");
    return CLI_OK;
}
