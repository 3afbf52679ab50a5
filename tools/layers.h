/* The layers a config's `model.layers` list may name: their arguments (names, types, defaults,
 * ranges), the shape each produces from its input's, and (model.c) the module each builds.
 * One table drives parsing, shape checking, help text and construction. */
#ifndef YT_TOOLS_LAYERS_H
#define YT_TOOLS_LAYERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "yamlread.h"

enum { LAYER_MAX_ARGS = 10, SHAPE_MAX_DIM = 8 };

/* One sample's shape (no batch dimension), and whether its values are integers (indices for
 * an embedding) or floating point. */
typedef struct cli_shape {
    int ndim;
    int64_t d[SHAPE_MAX_DIM];
    bool integer;
} cli_shape;

/* "[1, 28, 28]" */
const char *cli_shape_str(const cli_shape *s, char *buf, size_t cap);

typedef enum layer_arg_type {
    ARG_INT,   /* integer in [lo, hi] */
    ARG_FLOAT, /* number in [lo, hi] */
    ARG_BOOL,
    ARG_PAIR,    /* integer or [height, width] (kernel, stride, padding of 2-D layers) */
    ARG_INTS,    /* integer or a list of up to SHAPE_MAX_DIM integers (normalized_shape, shape) */
    ARG_ENUM,    /* one of `choices` */
    ARG_PADDING, /* like ARG_PAIR, or "same" (n = -1) or "valid" (0) */
} layer_arg_type;

typedef struct layer_arg_def {
    const char *name;
    layer_arg_type type;
    bool required;
    double def;    /* default (numbers, bools, pairs, enum index); unused when required */
    double lo, hi; /* inclusive range */
    const char *const *choices; /* ARG_ENUM, NULL-terminated */
    const char *alias;          /* PyTorch's name for it, also accepted ("kernel_size"), or NULL */
    const char *doc;
} layer_arg_def;

/* The value of one argument in a config: given by the user, inferred from the input shape, or
 * the default. */
typedef struct layer_value {
    bool given;
    yr_pos pos;
    int n;                    /* count for ARG_PAIR (2 after parsing) and ARG_INTS */
    int64_t i[SHAPE_MAX_DIM]; /* ARG_INT, ARG_PAIR, ARG_INTS, ARG_ENUM (index), ARG_BOOL (0/1) */
    double f;                 /* ARG_FLOAT */
} layer_value;

struct cfg_layer;
typedef struct layer_def {
    const char *name; /* "conv2d" */
    const char *doc;
    int n_args;
    layer_arg_def args[LAYER_MAX_ARGS];
    /* Output shape from `in`; fills inferred arguments (in features, channels). On a
     * mismatch writes a message (without the layer's name) to err and returns false. `src`
     * names where the input comes from in messages: "the previous layer", "the input". */
    bool (*infer)(struct cfg_layer *l, const cli_shape *in, const char *src, cli_shape *out,
                  char *err, size_t cap);
    int primary; /* argument a bare value sets (`dropout: 0.2`), or -1 */
} layer_def;

typedef struct cfg_layer {
    const layer_def *def;
    int index; /* position in the list = the child's name in the Sequential ("0", "1", ...) */
    yr_pos pos;
    layer_value v[LAYER_MAX_ARGS];
    cli_shape in_shape, out_shape; /* filled by layers_infer */
} cfg_layer;

extern const layer_def cli_layer_defs[];
extern const int cli_layer_def_count;

const layer_def *layers_find(const char *name);

/* Parses one item of `model.layers`: `relu` or `conv2d: {out: 32, kernel: 3}` (a null value
 * means all defaults). Reports problems to `d` and returns false on any. */
bool layers_parse(yr_doc *d, const yaml_node_t *item, int index, cfg_layer *out);

/* Propagates `input` through `layers[0..n)`, filling each layer's shapes and inferred
 * arguments. Reports the first impossible layer at its position and returns false. */
bool layers_infer(yr_doc *d, cfg_layer *layers, int n, const cli_shape *input, cli_shape *output);

/* Argument access by name (the name must exist in the layer's table). */
layer_value *layer_value_of(cfg_layer *l, const char *name); /* NULL for an unknown name */
int64_t layer_int(const cfg_layer *l, const char *name);
double layer_float(const cfg_layer *l, const char *name);
bool layer_bool(const cfg_layer *l, const char *name);
const int64_t *layer_ints(const cfg_layer *l, const char *name, int *n);
bool layer_given(const cfg_layer *l, const char *name);

/* "out=32 kernel=3 padding=1": the arguments given or inferred (defaults left out). */
const char *layer_describe(const cfg_layer *l, char *buf, size_t cap);

/* Prints every layer with its arguments (for `yaten help layers`). */
void layers_print_help(void *f);

#endif
