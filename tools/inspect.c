/* `yaten inspect FILE.safetensors`: what a safetensors file holds, read from its header alone. */
#include <stdio.h>
#include <string.h>

#include <yaten.h>

#include "cli.h"

void
help_inspect(void)
{
    printf(
        "usage: yaten inspect FILE.safetensors [--metadata]\n"
        "\n"
        "Lists the tensors of a safetensors file (written by yaten or anyone else): name, dtype,\n"
        "shape, element count and bytes, then the totals and the metadata. Only the header is\n"
        "read, and it is validated as a load would. Long metadata values (a checkpoint's config)\n"
        "are cut short unless --metadata is given.\n");
}

static const char *
human(double bytes, char *buf, size_t cap)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024 && u < 4)
        bytes /= 1024, u++;
    snprintf(buf, cap, u ? "%.1f %s" : "%.0f %s", bytes, units[u]);
    return buf;
}

int
cmd_inspect(int argc, char **argv)
{
    bool full = false;
    const cli_opt opts[] = {{"--metadata", NULL, &full}};
    const char *path = NULL;
    int n_pos;
    int rc = cli_parse_args("inspect", argc, argv, opts, 1, &path, 1, &n_pos);
    if (rc < 0) {
        help_inspect();
        return CLI_OK;
    }
    if (rc != CLI_OK)
        return rc;
    if (path == NULL) {
        fprintf(stderr, "yaten inspect: which file? (yaten inspect FILE.safetensors)\n");
        return CLI_USAGE;
    }
    yt_safetensors_index index = YT_SAFETENSORS_INDEX_INIT;
    yt_metadata meta = YT_METADATA_INIT;
    if (yt_safetensors_read_index(path, &index, &meta) != YT_OK) {
        fprintf(stderr, "yaten inspect: %s\n", yt_errmsg());
        return CLI_FAILED;
    }
    int name_w = 4;
    for (int64_t i = 0; i < index.count; i++) {
        int len = (int)strlen(index.entries[i].name);
        if (len > name_w)
            name_w = len < 60 ? len : 60;
    }
    printf("%-*s  %-5s  %-20s  %12s  %12s\n", name_w, "name", "dtype", "shape", "elements",
           "bytes");
    int64_t total_elems = 0, total_bytes = 0;
    for (int64_t i = 0; i < index.count; i++) {
        const yt_safetensors_entry *e = &index.entries[i];
        char shape[160];
        size_t used = (size_t)snprintf(shape, sizeof shape, "[");
        int64_t n = 1;
        for (int d = 0; d < e->ndim; d++) {
            used += (size_t)snprintf(shape + used, sizeof shape - used, "%s%lld", d ? ", " : "",
                                     (long long)e->shape[d]);
            n *= e->shape[d];
        }
        snprintf(shape + used, sizeof shape - used, "]");
        printf("%-*s  %-5s  %-20s  %12lld  %12lld\n", name_w, e->name, yt_dtype_name(e->dtype),
               shape, (long long)n, (long long)(e->end - e->begin));
        total_elems += n;
        total_bytes += e->end - e->begin;
    }
    char hb[32], hf[32];
    printf("%lld tensor%s, %lld elements, %s of data (file %s)\n", (long long)index.count,
           index.count == 1 ? "" : "s", (long long)total_elems,
           human((double)total_bytes, hb, sizeof hb),
           human((double)index.file_size, hf, sizeof hf));
    if (meta.count > 0)
        printf("metadata:\n");
    for (int64_t i = 0; i < meta.count; i++) {
        const char *v = meta.values[i];
        size_t len = strcspn(v, "\n");
        if (full || (len == strlen(v) && len <= 100)) {
            printf("  %s: %s\n", meta.keys[i], v);
        } else {
            printf("  %s: %.*s... (%zu bytes; --metadata shows it all)\n", meta.keys[i],
                   (int)(len < 60 ? len : 60), v, strlen(v));
        }
    }
    yt_safetensors_index_clear(&index);
    yt_metadata_clear(&meta);
    return CLI_OK;
}
