/* Typed reading of a YAML document (libyaml's document API) with diagnostics in the form
 * `CONFIG:LINE:COL: message`, the way a compiler reports them: every problem found is collected,
 * not only the first, and each names the key path, what was expected and what was found. */
#ifndef YT_TOOLS_YAMLREAD_H
#define YT_TOOLS_YAMLREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <yaml.h>

enum { YR_MAX_DIAGS = 32 };

/* A source position, 1-based (libyaml's marks are 0-based). line 0 = no position. */
typedef struct yr_pos {
    int line, col;
} yr_pos;

typedef struct yr_doc {
    const char *file;    /* name used in messages (borrowed) */
    yaml_document_t doc; /* valid when loaded */
    bool loaded;
    int n_diags;               /* problems found so far (all of them are counted) */
    char *diags[YR_MAX_DIAGS]; /* the first YR_MAX_DIAGS messages, each "FILE:L:C: msg" */
    yr_pos diag_pos[YR_MAX_DIAGS];
} yr_doc;

/* Parses `text` (len bytes) as one YAML document. Syntax errors become diagnostics carrying
 * libyaml's line and column. Returns true when a document was loaded (it may still be empty). */
bool yr_load(yr_doc *d, const char *file, const char *text, size_t len);

/* Frees the document and the diagnostics. */
void yr_free(yr_doc *d);

/* Records a diagnostic at `pos` (printf-style). A position with line 0 prints as FILE: msg. */
void yr_error_at(yr_doc *d, yr_pos pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Records a diagnostic at the start of `node`. */
void yr_error(yr_doc *d, const yaml_node_t *node, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Sorts the diagnostics by position (a stable sort: problems at one place keep their order). */
void yr_sort_diags(yr_doc *d);

/* Writes every diagnostic, one a line, to `f` (and says how many were not shown). */
void yr_print_diags(const yr_doc *d, void *f);

yaml_node_t *yr_root(yr_doc *d);
yr_pos yr_pos_of(const yaml_node_t *node);

/* What a node is, for messages: "a mapping", "a list", "'abc'". */
const char *yr_describe(const yaml_node_t *node, char *buf, size_t cap);

bool yr_is_null(const yaml_node_t *node);
bool yr_is_scalar(const yaml_node_t *node);
bool yr_is_map(const yaml_node_t *node);
bool yr_is_seq(const yaml_node_t *node);
const char *yr_scalar(const yaml_node_t *node); /* scalar text, or NULL */

/* Sequence access: length and item i. */
int yr_seq_len(const yaml_node_t *seq);
yaml_node_t *yr_seq_item(yr_doc *d, const yaml_node_t *seq, int i);

/* Mapping access. yr_check_keys reports keys of `map` not in `keys` (with "did you mean" when one
 * is close), keys that are not plain strings, and duplicates; `where` prefixes the messages
 * ("data"). Returns false when it reported anything. */
bool yr_check_keys(yr_doc *d, const yaml_node_t *map, const char *where, const char *const *keys,
                   int n_keys);
yaml_node_t *yr_get(yr_doc *d, const yaml_node_t *map, const char *key);     /* value, or NULL */
yaml_node_t *yr_get_key(yr_doc *d, const yaml_node_t *map, const char *key); /* key node */
int yr_map_len(const yaml_node_t *map);
yaml_node_t *yr_map_key(yr_doc *d, const yaml_node_t *map, int i);
yaml_node_t *yr_map_value(yr_doc *d, const yaml_node_t *map, int i);
/* Whether `map` has a key that is likely a misspelling of `key` (and not `key` itself). */
bool yr_has_typo_of(yr_doc *d, const yaml_node_t *map, const char *key);
/* Reports "WHERE: missing required key 'KEY'" at the mapping and returns false when absent;
 * silent when a misspelling of KEY is there (its "unknown key" message says enough). */
bool yr_require(yr_doc *d, const yaml_node_t *map, const char *where, const char *key);

/* Typed scalars. Each reports "WHAT: expected ..., got ..." or a range error at the node and
 * returns false; on success writes *out. Range bounds are inclusive. */
bool yr_int(yr_doc *d, const yaml_node_t *node, const char *what, int64_t lo, int64_t hi,
            int64_t *out);
bool yr_float(yr_doc *d, const yaml_node_t *node, const char *what, double lo, double hi,
              double *out);
/* Like yr_float, but the value must be strictly greater than lo (learning rates, eps). */
bool yr_float_gt(yr_doc *d, const yaml_node_t *node, const char *what, double lo, double hi,
                 double *out);
bool yr_bool(yr_doc *d, const yaml_node_t *node, const char *what, bool *out);
/* A non-empty string scalar (strdup'd into *out, which the caller frees). */
bool yr_string(yr_doc *d, const yaml_node_t *node, const char *what, char **out);
/* One of `choices`: writes its index. Reports the choices and a "did you mean". */
bool yr_enum(yr_doc *d, const yaml_node_t *node, const char *what, const char *const *choices,
             int n_choices, int *out);
/* An integer or a list of 1..max integers, each in [lo, hi]; *n receives the count. */
bool yr_ints(yr_doc *d, const yaml_node_t *node, const char *what, int64_t lo, int64_t hi, int max,
             int64_t *out, int *n);
/* A number or a list of 1..max numbers. */
bool yr_floats(yr_doc *d, const yaml_node_t *node, const char *what, double lo, double hi, int max,
               double *out, int *n);

/* The closest of `candidates` to `word` by edit distance (transpositions count once), or NULL
 * when none is close enough to be a likely typo. */
const char *yr_suggest(const char *word, const char *const *candidates, int n);

#endif
