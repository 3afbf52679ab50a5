/* CSV files of numbers: one sample per line, the features as f32 and one column of integer class
 * labels. The file is parsed once, at open, into two arrays; every error names the file, the line
 * and the column. Numbers are read in the C locale whatever the program's locale is. */
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader_internal.h"

typedef struct csv_ctx {
    float *features; /* count x n_features */
    int64_t *labels; /* count */
    int64_t count, n_features;
} csv_ctx;

static int64_t
csv_length(void *ctx)
{
    return ((csv_ctx *)ctx)->count;
}

static yt_status
csv_get_batch(void *ctx_, const int64_t *indices, int64_t n, void *input, void *target)
{
    const csv_ctx *ctx = ctx_;
    float *out = input;
    int64_t *labels = target;
    for (int64_t i = 0; i < n; i++) {
        memcpy(out + i * ctx->n_features, ctx->features + indices[i] * ctx->n_features,
               sizeof(float) * (size_t)ctx->n_features);
        labels[i] = ctx->labels[indices[i]];
    }
    return YT_OK;
}

static void
csv_release(void *ctx_)
{
    csv_ctx *ctx = ctx_;
    if (ctx == NULL)
        return;
    free(ctx->features);
    free(ctx->labels);
    free(ctx);
}

static const yt_dataset_kind csv_kind = {
    .name = "CSV",
    .length = csv_length,
    .get_batch = csv_get_batch,
    .release_ctx = csv_release,
};

/* ---------------------------------------------------------------- parsing */

typedef struct parser {
    const char *path;
    locale_t c_locale;
    int64_t line;      /* 1-based number of the line being parsed */
    int64_t n_columns; /* from the first data row (or the header) */
    int64_t columns_line;
    int label_column; /* wrapped, once n_columns is known */
    csv_ctx *ctx;
    int64_t cap; /* rows allocated */
} parser;

static bool
is_blank(const char *s)
{
    for (; *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\r' && *s != '\n')
            return false;
    return true;
}

static int64_t
count_columns(const char *s)
{
    int64_t n = 1;
    for (; *s; s++)
        n += *s == ',';
    return n;
}

/* Trims spaces (and the line's \r\n) around the field [start, end) in place; returns start. */
static char *
trim(char *start, char *end)
{
    while (start < end && (*start == ' ' || *start == '\t'))
        start++;
    while (end > start && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r' || end[-1] == '\n'))
        end--;
    *end = '\0';
    return start;
}

static yt_status
set_columns(parser *p, int64_t n, int label_column)
{
    if (n < 2)
        return yt__fail_status(YT_ERR_IO,
                               "%s:%lld: %lld column; a CSV dataset needs a label column and at "
                               "least one feature",
                               p->path, (long long)p->line, (long long)n);
    int64_t lc = label_column < 0 ? label_column + n : label_column;
    if (lc < 0 || lc >= n)
        return yt__fail_status(YT_ERR_VALUE,
                               "%s:%lld: label_column=%d is out of range for %lld columns "
                               "(expected %lld..%lld)",
                               p->path, (long long)p->line, label_column, (long long)n,
                               (long long)-n, (long long)n - 1);
    p->n_columns = n;
    p->columns_line = p->line;
    p->label_column = (int)lc;
    p->ctx->n_features = n - 1;
    return YT_OK;
}

static yt_status
grow(parser *p)
{
    int64_t cap = p->cap ? 2 * p->cap : 1024;
    float *f = realloc(p->ctx->features, sizeof(float) * (size_t)(cap * p->ctx->n_features));
    if (f == NULL)
        return yt__fail_status(YT_ERR_NOMEM, "%s: out of memory", p->path);
    p->ctx->features = f;
    int64_t *l = realloc(p->ctx->labels, sizeof(int64_t) * (size_t)cap);
    if (l == NULL)
        return yt__fail_status(YT_ERR_NOMEM, "%s: out of memory", p->path);
    p->ctx->labels = l;
    p->cap = cap;
    return YT_OK;
}

static yt_status
parse_row(parser *p, char *line)
{
    int64_t n = count_columns(line);
    if (n != p->n_columns)
        return yt__fail_status(YT_ERR_IO, "%s:%lld: %lld columns, but line %lld has %lld", p->path,
                               (long long)p->line, (long long)n, (long long)p->columns_line,
                               (long long)p->n_columns);
    if (p->ctx->count == p->cap && grow(p) != YT_OK)
        return yt__last_status();
    float *features = p->ctx->features + p->ctx->count * p->ctx->n_features;
    char *s = line;
    for (int64_t col = 0, f = 0; col < n; col++) {
        char *comma = strchr(s, ',');
        char *end = comma != NULL ? comma : s + strlen(s);
        char *field = trim(s, end);
        s = end + 1;
        if (*field == '\0')
            return yt__fail_status(YT_ERR_IO, "%s:%lld: column %lld is empty", p->path,
                                   (long long)p->line, (long long)col + 1);
        char *stop;
        errno = 0;
        double v = strtod_l(field, &stop, p->c_locale);
        if (stop == field || *stop != '\0')
            return yt__fail_status(YT_ERR_IO, "%s:%lld: column %lld: '%s' is not a number", p->path,
                                   (long long)p->line, (long long)col + 1, field);
        if (col != p->label_column) {
            /* "inf" is a number; 1e300 (not an f32) and 1e999 (not even a double) are not */
            if (isinf((float)v) && !(isinf(v) && errno != ERANGE))
                return yt__fail_status(YT_ERR_IO, "%s:%lld: column %lld: %s is out of f32 range",
                                       p->path, (long long)p->line, (long long)col + 1, field);
            features[f++] = (float)v;
            continue;
        }
        if (!(v == floor(v) && fabs(v) < 0x1p53))
            return yt__fail_status(YT_ERR_IO,
                                   "%s:%lld: column %lld: the label '%s' is not an integer class "
                                   "index",
                                   p->path, (long long)p->line, (long long)col + 1, field);
        p->ctx->labels[p->ctx->count] = (int64_t)v;
    }
    p->ctx->count++;
    return YT_OK;
}

static yt_status
parse_file(parser *p, FILE *f, int label_column, bool header)
{
    char *line = NULL;
    size_t line_cap = 0;
    yt_status st = YT_OK;
    bool header_pending = header;
    for (p->line = 1;; p->line++) {
        errno = 0;
        ssize_t len = getline(&line, &line_cap, f);
        if (len < 0) {
            if (ferror(f))
                st = yt__fail_status(YT_ERR_IO, "%s:%lld: cannot read: %s", p->path,
                                     (long long)p->line, strerror(errno));
            break;
        }
        if ((size_t)len != strlen(line)) {
            st = yt__fail_status(YT_ERR_IO, "%s:%lld: a NUL byte: not a text file", p->path,
                                 (long long)p->line);
            break;
        }
        if (is_blank(line))
            continue;
        if (header_pending) {
            header_pending = false;
            if ((st = set_columns(p, count_columns(line), label_column)) != YT_OK)
                break;
            continue;
        }
        if (p->n_columns == 0 && (st = set_columns(p, count_columns(line), label_column)) != YT_OK)
            break;
        if ((st = parse_row(p, line)) != YT_OK)
            break;
    }
    free(line);
    if (st == YT_OK && p->ctx->count == 0)
        st = yt__fail_status(YT_ERR_IO, "%s: no data rows", p->path);
    return st;
}

yt_dataset *
yt_csv_dataset_open(const char *path, int label_column, bool header)
{
    if (path == NULL)
        return YT__FAIL_NULL(YT_ERR_VALUE, "csv_dataset_open: path is NULL");
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return YT__FAIL_NULL(YT_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    parser p = {.path = path};
    p.ctx = calloc(1, sizeof *p.ctx);
    p.c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    yt_status st = YT_OK;
    if (p.ctx == NULL || p.c_locale == (locale_t)0)
        st = yt__fail_status(YT_ERR_NOMEM, "csv_dataset_open: out of memory");
    else
        st = parse_file(&p, f, label_column, header);
    fclose(f);
    if (p.c_locale != (locale_t)0)
        freelocale(p.c_locale);
    if (st != YT_OK) {
        csv_release(p.ctx);
        return NULL;
    }
    const int64_t shape[1] = {p.ctx->n_features};
    return yt_dataset_new(&csv_kind, p.ctx, shape, 1, YT_DTYPE_F32, NULL, 0, YT_DTYPE_I64);
}
