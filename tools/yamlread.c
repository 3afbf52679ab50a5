/* Typed reading of a libyaml document, with `FILE:LINE:COL: message` diagnostics. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yamlread.h"

static void
add_diag(yr_doc *d, yr_pos pos, const char *fmt, va_list ap)
{
    int k = d->n_diags++;
    if (k >= YR_MAX_DIAGS)
        return;
    char msg[768];
    vsnprintf(msg, sizeof msg, fmt, ap);
    char head[512];
    if (pos.line > 0)
        snprintf(head, sizeof head, "%s:%d:%d: ", d->file, pos.line, pos.col);
    else
        snprintf(head, sizeof head, "%s: ", d->file);
    size_t len = strlen(head) + strlen(msg) + 1;
    d->diag_pos[k] = pos;
    d->diags[k] = malloc(len);
    if (d->diags[k] != NULL)
        snprintf(d->diags[k], len, "%s%s", head, msg);
}

void
yr_error_at(yr_doc *d, yr_pos pos, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add_diag(d, pos, fmt, ap);
    va_end(ap);
}

void
yr_error(yr_doc *d, const yaml_node_t *node, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add_diag(d, yr_pos_of(node), fmt, ap);
    va_end(ap);
}

void
yr_sort_diags(yr_doc *d)
{
    int n = d->n_diags < YR_MAX_DIAGS ? d->n_diags : YR_MAX_DIAGS;
    for (int i = 1; i < n; i++) { /* insertion sort: few items, and stable */
        yr_pos p = d->diag_pos[i];
        char *msg = d->diags[i];
        int j = i - 1;
        while (j >= 0 && (d->diag_pos[j].line > p.line ||
                          (d->diag_pos[j].line == p.line && d->diag_pos[j].col > p.col))) {
            d->diag_pos[j + 1] = d->diag_pos[j];
            d->diags[j + 1] = d->diags[j];
            j--;
        }
        d->diag_pos[j + 1] = p;
        d->diags[j + 1] = msg;
    }
}

void
yr_print_diags(const yr_doc *d, void *f)
{
    for (int i = 0; i < d->n_diags && i < YR_MAX_DIAGS; i++)
        if (d->diags[i] != NULL)
            fprintf(f, "%s\n", d->diags[i]);
    if (d->n_diags > YR_MAX_DIAGS)
        fprintf(f, "%s: ... and %d more problems\n", d->file, d->n_diags - YR_MAX_DIAGS);
}

bool
yr_load(yr_doc *d, const char *file, const char *text, size_t len)
{
    memset(d, 0, sizeof *d);
    d->file = file;
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        yr_error_at(d, (yr_pos){0, 0}, "cannot initialise the YAML parser (out of memory)");
        return false;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &d->doc)) {
        /* libyaml's marks are 0-based; its problem_mark is where it noticed the problem. */
        yr_pos pos = {(int)parser.problem_mark.line + 1, (int)parser.problem_mark.column + 1};
        const char *problem = parser.problem ? parser.problem : "malformed YAML";
        if (parser.context != NULL)
            yr_error_at(d, pos, "YAML syntax error: %s %s (line %d, column %d)", problem,
                        parser.context, (int)parser.context_mark.line + 1,
                        (int)parser.context_mark.column + 1);
        else
            yr_error_at(d, pos, "YAML syntax error: %s", problem);
        yaml_parser_delete(&parser);
        return false;
    }
    d->loaded = true;
    yaml_parser_delete(&parser);
    return true;
}

void
yr_free(yr_doc *d)
{
    if (d->loaded)
        yaml_document_delete(&d->doc);
    d->loaded = false;
    for (int i = 0; i < d->n_diags && i < YR_MAX_DIAGS; i++)
        free(d->diags[i]);
    d->n_diags = 0;
}

yaml_node_t *
yr_root(yr_doc *d)
{
    return d->loaded ? yaml_document_get_root_node(&d->doc) : NULL;
}

yr_pos
yr_pos_of(const yaml_node_t *node)
{
    if (node == NULL)
        return (yr_pos){0, 0};
    return (yr_pos){(int)node->start_mark.line + 1, (int)node->start_mark.column + 1};
}

bool
yr_is_scalar(const yaml_node_t *node)
{
    return node != NULL && node->type == YAML_SCALAR_NODE;
}

bool
yr_is_map(const yaml_node_t *node)
{
    return node != NULL && node->type == YAML_MAPPING_NODE;
}

bool
yr_is_seq(const yaml_node_t *node)
{
    return node != NULL && node->type == YAML_SEQUENCE_NODE;
}

const char *
yr_scalar(const yaml_node_t *node)
{
    return yr_is_scalar(node) ? (const char *)node->data.scalar.value : NULL;
}

static bool
is_plain(const yaml_node_t *node)
{
    return yr_is_scalar(node) && node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

bool
yr_is_null(const yaml_node_t *node)
{
    if (node == NULL)
        return true;
    if (!is_plain(node))
        return false;
    const char *s = yr_scalar(node);
    return s[0] == '\0' || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 ||
           strcmp(s, "Null") == 0 || strcmp(s, "NULL") == 0;
}

const char *
yr_describe(const yaml_node_t *node, char *buf, size_t cap)
{
    if (yr_is_null(node))
        snprintf(buf, cap, "nothing");
    else if (yr_is_map(node))
        snprintf(buf, cap, "a mapping");
    else if (yr_is_seq(node))
        snprintf(buf, cap, "a list");
    else if (!is_plain(node))
        snprintf(buf, cap, "the string '%.60s'", yr_scalar(node));
    else
        snprintf(buf, cap, "'%.60s'", yr_scalar(node));
    return buf;
}

int
yr_seq_len(const yaml_node_t *seq)
{
    if (!yr_is_seq(seq))
        return 0;
    return (int)(seq->data.sequence.items.top - seq->data.sequence.items.start);
}

yaml_node_t *
yr_seq_item(yr_doc *d, const yaml_node_t *seq, int i)
{
    if (i < 0 || i >= yr_seq_len(seq))
        return NULL;
    return yaml_document_get_node(&d->doc, seq->data.sequence.items.start[i]);
}

int
yr_map_len(const yaml_node_t *map)
{
    if (!yr_is_map(map))
        return 0;
    return (int)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
}

yaml_node_t *
yr_map_key(yr_doc *d, const yaml_node_t *map, int i)
{
    if (i < 0 || i >= yr_map_len(map))
        return NULL;
    return yaml_document_get_node(&d->doc, map->data.mapping.pairs.start[i].key);
}

yaml_node_t *
yr_map_value(yr_doc *d, const yaml_node_t *map, int i)
{
    if (i < 0 || i >= yr_map_len(map))
        return NULL;
    return yaml_document_get_node(&d->doc, map->data.mapping.pairs.start[i].value);
}

yaml_node_t *
yr_get(yr_doc *d, const yaml_node_t *map, const char *key)
{
    int n = yr_map_len(map);
    for (int i = 0; i < n; i++) {
        const char *k = yr_scalar(yr_map_key(d, map, i));
        if (k != NULL && strcmp(k, key) == 0)
            return yr_map_value(d, map, i);
    }
    return NULL;
}

yaml_node_t *
yr_get_key(yr_doc *d, const yaml_node_t *map, const char *key)
{
    int n = yr_map_len(map);
    for (int i = 0; i < n; i++) {
        yaml_node_t *k = yr_map_key(d, map, i);
        if (yr_scalar(k) != NULL && strcmp(yr_scalar(k), key) == 0)
            return k;
    }
    return NULL;
}

bool
yr_has_typo_of(yr_doc *d, const yaml_node_t *map, const char *key)
{
    int n = yr_map_len(map);
    for (int i = 0; i < n; i++) {
        const char *k = yr_scalar(yr_map_key(d, map, i));
        if (k != NULL && strcmp(k, key) != 0 && yr_suggest(k, &key, 1) != NULL)
            return true;
    }
    return false;
}

bool
yr_require(yr_doc *d, const yaml_node_t *map, const char *where, const char *key)
{
    if (yr_get(d, map, key) != NULL)
        return true;
    if (yr_has_typo_of(d, map, key)) /* already reported as "unknown key (did you mean)" */
        return false;
    if (where[0] != '\0')
        yr_error(d, map, "%s: missing required key '%s'", where, key);
    else
        yr_error(d, map, "missing required key '%s'", key);
    return false;
}

/* ---- did you mean: optimal-string-alignment distance, case-insensitive */

static int
edit_distance(const char *a, const char *b)
{
    enum { MAXLEN = 64 };
    size_t la = strlen(a), lb = strlen(b);
    if (la >= MAXLEN || lb >= MAXLEN)
        return MAXLEN;
    int dist[MAXLEN + 1][MAXLEN + 1];
    for (size_t i = 0; i <= la; i++)
        dist[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++)
        dist[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        for (size_t j = 1; j <= lb; j++) {
            int cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
            int best = dist[i - 1][j] + 1;
            if (dist[i][j - 1] + 1 < best)
                best = dist[i][j - 1] + 1;
            if (dist[i - 1][j - 1] + cost < best)
                best = dist[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 &&
                tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == tolower((unsigned char)b[j - 1]) &&
                dist[i - 2][j - 2] + 1 < best)
                best = dist[i - 2][j - 2] + 1;
            dist[i][j] = best;
        }
    }
    return dist[la][lb];
}

const char *
yr_suggest(const char *word, const char *const *candidates, int n)
{
    size_t len = strlen(word);
    int limit = len <= 3 ? 1 : len <= 6 ? 2 : 3;
    const char *best = NULL;
    int best_dist = limit + 1;
    for (int i = 0; i < n; i++) {
        int dist = edit_distance(word, candidates[i]);
        if (dist < best_dist) {
            best_dist = dist;
            best = candidates[i];
        }
    }
    return best;
}

static void
join(char *buf, size_t cap, const char *const *items, int n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", items[i]);
}

bool
yr_check_keys(yr_doc *d, const yaml_node_t *map, const char *where, const char *const *keys,
              int n_keys)
{
    bool ok = true;
    char prefix[160];
    snprintf(prefix, sizeof prefix, "%s%s", where, where[0] ? ": " : "");
    int n = yr_map_len(map);
    for (int i = 0; i < n; i++) {
        yaml_node_t *key = yr_map_key(d, map, i);
        const char *k = yr_scalar(key);
        if (k == NULL || yr_is_null(key)) {
            char what[96];
            yr_error(d, key, "%skeys must be names, got %s", prefix,
                     yr_describe(key, what, sizeof what));
            ok = false;
            continue;
        }
        bool known = false;
        for (int j = 0; j < n_keys && !known; j++)
            known = strcmp(k, keys[j]) == 0;
        if (!known) {
            const char *hint = yr_suggest(k, keys, n_keys);
            if (hint != NULL) {
                yr_error(d, key, "%sunknown key '%s' (did you mean '%s'?)", prefix, k, hint);
            } else {
                char list[512];
                join(list, sizeof list, keys, n_keys);
                yr_error(d, key, "%sunknown key '%s'; expected one of: %s", prefix, k, list);
            }
            ok = false;
            continue;
        }
        for (int j = 0; j < i; j++) {
            yaml_node_t *prev = yr_map_key(d, map, j);
            if (yr_scalar(prev) != NULL && strcmp(yr_scalar(prev), k) == 0) {
                yr_error(d, key, "%sduplicate key '%s' (first given at line %d)", prefix, k,
                         yr_pos_of(prev).line);
                ok = false;
                break;
            }
        }
    }
    return ok;
}

/* ---- typed scalars */

static bool
parse_int(const char *s, int64_t *out)
{
    if (s[0] == '\0' || isspace((unsigned char)s[0]))
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return false;
    *out = v;
    return true;
}

static bool
parse_float(const char *s, double *out)
{
    if (s[0] == '\0' || isspace((unsigned char)s[0]))
        return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno == ERANGE && fabs(v) > 1) /* overflow; underflow to 0 is fine */
        return false;
    if (*end != '\0' || !isfinite(v))
        return false;
    /* strtod also reads hex floats and "infinity"; YAML numbers are decimal. */
    for (const char *p = s; *p; p++)
        if (!(isdigit((unsigned char)*p) || strchr("+-.eE", *p)))
            return false;
    *out = v;
    return true;
}

bool
yr_int(yr_doc *d, const yaml_node_t *node, const char *what, int64_t lo, int64_t hi, int64_t *out)
{
    char got[96];
    int64_t v;
    if (!is_plain(node) || yr_is_null(node) || !parse_int(yr_scalar(node), &v)) {
        yr_error(d, node, "%s: expected an integer, got %s", what,
                 yr_describe(node, got, sizeof got));
        return false;
    }
    if (v < lo || v > hi) {
        if (hi == INT64_MAX)
            yr_error(d, node, "%s: must be at least %lld, got %lld", what, (long long)lo,
                     (long long)v);
        else
            yr_error(d, node, "%s: must be between %lld and %lld, got %lld", what, (long long)lo,
                     (long long)hi, (long long)v);
        return false;
    }
    *out = v;
    return true;
}

static bool
read_float(yr_doc *d, const yaml_node_t *node, const char *what, double lo, double hi, bool open_lo,
           double *out)
{
    char got[96];
    double v;
    if (!is_plain(node) || yr_is_null(node) || !parse_float(yr_scalar(node), &v)) {
        yr_error(d, node, "%s: expected a number, got %s", what,
                 yr_describe(node, got, sizeof got));
        return false;
    }
    bool below = open_lo ? !(v > lo) : !(v >= lo);
    if (below || v > hi) {
        if (hi == INFINITY)
            yr_error(d, node, "%s: must be %s %g, got %s", what,
                     open_lo ? "greater than" : "at least", lo, yr_scalar(node));
        else
            yr_error(d, node, "%s: must be between %g and %g, got %s", what, lo, hi,
                     yr_scalar(node));
        return false;
    }
    *out = v;
    return true;
}

bool
yr_float(yr_doc *d, const yaml_node_t *node, const char *what, double lo, double hi, double *out)
{
    return read_float(d, node, what, lo, hi, false, out);
}

bool
yr_float_gt(yr_doc *d, const yaml_node_t *node, const char *what, double lo, double hi, double *out)
{
    return read_float(d, node, what, lo, hi, true, out);
}

bool
yr_bool(yr_doc *d, const yaml_node_t *node, const char *what, bool *out)
{
    static const char *const yes[] = {"true", "True", "TRUE"};
    static const char *const no[] = {"false", "False", "FALSE"};
    if (is_plain(node)) {
        for (int i = 0; i < 3; i++) {
            if (strcmp(yr_scalar(node), yes[i]) == 0) {
                *out = true;
                return true;
            }
            if (strcmp(yr_scalar(node), no[i]) == 0) {
                *out = false;
                return true;
            }
        }
    }
    char got[96];
    yr_error(d, node, "%s: expected true or false, got %s", what,
             yr_describe(node, got, sizeof got));
    return false;
}

bool
yr_string(yr_doc *d, const yaml_node_t *node, const char *what, char **out)
{
    if (!yr_is_scalar(node) || yr_is_null(node) || yr_scalar(node)[0] == '\0') {
        char got[96];
        yr_error(d, node, "%s: expected a string, got %s", what,
                 yr_describe(node, got, sizeof got));
        return false;
    }
    char *s = strdup(yr_scalar(node));
    if (s == NULL) {
        yr_error(d, node, "%s: out of memory", what);
        return false;
    }
    free(*out);
    *out = s;
    return true;
}

bool
yr_enum(yr_doc *d, const yaml_node_t *node, const char *what, const char *const *choices,
        int n_choices, int *out)
{
    if (!yr_is_scalar(node) || yr_is_null(node)) {
        char got[96], list[512];
        join(list, sizeof list, choices, n_choices);
        yr_error(d, node, "%s: expected one of %s, got %s", what, list,
                 yr_describe(node, got, sizeof got));
        return false;
    }
    const char *s = yr_scalar(node);
    for (int i = 0; i < n_choices; i++) {
        if (strcmp(s, choices[i]) == 0) {
            *out = i;
            return true;
        }
    }
    const char *hint = yr_suggest(s, choices, n_choices);
    if (hint != NULL) {
        yr_error(d, node, "%s: unknown value '%s' (did you mean '%s'?)", what, s, hint);
    } else {
        char list[512];
        join(list, sizeof list, choices, n_choices);
        yr_error(d, node, "%s: unknown value '%s'; expected one of: %s", what, s, list);
    }
    return false;
}

bool
yr_ints(yr_doc *d, const yaml_node_t *node, const char *what, int64_t lo, int64_t hi, int max,
        int64_t *out, int *n)
{
    if (!yr_is_seq(node)) {
        *n = 1;
        return yr_int(d, node, what, lo, hi, &out[0]);
    }
    int len = yr_seq_len(node);
    if (len < 1 || len > max) {
        if (max == 1)
            yr_error(d, node, "%s: expected one integer, got a list of %d", what, len);
        else
            yr_error(d, node, "%s: expected a list of 1 to %d integers, got %d", what, max, len);
        return false;
    }
    bool ok = true;
    for (int i = 0; i < len; i++)
        ok = yr_int(d, yr_seq_item(d, node, i), what, lo, hi, &out[i]) && ok;
    *n = len;
    return ok;
}

bool
yr_floats(yr_doc *d, const yaml_node_t *node, const char *what, double lo, double hi, int max,
          double *out, int *n)
{
    if (!yr_is_seq(node)) {
        *n = 1;
        return yr_float(d, node, what, lo, hi, &out[0]);
    }
    int len = yr_seq_len(node);
    if (len < 1 || len > max) {
        yr_error(d, node, "%s: expected a list of 1 to %d numbers, got %d", what, max, len);
        return false;
    }
    bool ok = true;
    for (int i = 0; i < len; i++)
        ok = yr_float(d, yr_seq_item(d, node, i), what, lo, hi, &out[i]) && ok;
    *n = len;
    return ok;
}
