/* The layer table of `model.layers`: arguments, defaults, parsing and help. The shape rules are in
 * layer_shapes.c, building the modules in model.c, so that configs are checked without
 * constructing anything. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_shapes.h"

#define NOLIMIT 1e18

static int
arg_index(const layer_def *def, const char *name)
{
    for (int i = 0; i < def->n_args; i++)
        if (strcmp(def->args[i].name, name) == 0)
            return i;
    return -1;
}

layer_value *
layer_value_of(cfg_layer *l, const char *name)
{
    int i = arg_index(l->def, name);
    return i < 0 ? NULL : &l->v[i];
}

int64_t
layer_int(const cfg_layer *l, const char *name)
{
    int i = arg_index(l->def, name);
    return i < 0 ? 0 : l->v[i].i[0];
}

double
layer_float(const cfg_layer *l, const char *name)
{
    int i = arg_index(l->def, name);
    return i < 0 ? 0 : l->v[i].f;
}

bool
layer_bool(const cfg_layer *l, const char *name)
{
    int i = arg_index(l->def, name);
    return i >= 0 && l->v[i].i[0] != 0;
}

const int64_t *
layer_ints(const cfg_layer *l, const char *name, int *n)
{
    int i = arg_index(l->def, name);
    *n = i < 0 ? 0 : l->v[i].n;
    return i < 0 ? NULL : l->v[i].i;
}

bool
layer_given(const cfg_layer *l, const char *name)
{
    int i = arg_index(l->def, name);
    return i >= 0 && l->v[i].given;
}

/* ---- the table */

static const char *const gelu_approx[] = {"none", "tanh", NULL};
static const char *const activations[] = {"relu", "gelu", NULL};

#define A_INFER(nm, al, what)                                                                      \
    {                                                                                              \
        nm, ARG_INT, false, -1, 1, NOLIMIT, NULL, al, what " (default: from the input)"            \
    }
#define A_OUT(al, what)                                                                            \
    {                                                                                              \
        "out", ARG_INT, true, 0, 1, NOLIMIT, NULL, al, what                                        \
    }
#define A_BIAS                                                                                     \
    {                                                                                              \
        "bias", ARG_BOOL, false, 1, 0, 1, NULL, NULL, "learn an additive bias"                     \
    }
#define A_EPS                                                                                      \
    {                                                                                              \
        "eps", ARG_FLOAT, false, 1e-5, 0, 1, NULL, NULL, "added to the variance"                   \
    }
#define A_AFFINE(al)                                                                               \
    {                                                                                              \
        "affine", ARG_BOOL, false, 1, 0, 1, NULL, al, "learn a scale and a shift"                  \
    }

const layer_def cli_layer_defs[] = {
    {"linear",
     "y = x W^T + b over the last dimension",
     3,
     {A_INFER("in", "in_features", "input features"), A_OUT("out_features", "output features"),
      A_BIAS},
     infer_linear,
     1},
    {"conv2d",
     "2-D convolution over [channels, height, width]",
     8,
     {A_INFER("in", "in_channels", "input channels"),
      A_OUT("out_channels", "output channels"),
      {"kernel", ARG_PAIR, true, 0, 1, NOLIMIT, NULL, "kernel_size", "kernel size: k or [kh, kw]"},
      {"stride", ARG_PAIR, false, 1, 1, NOLIMIT, NULL, NULL, "stride"},
      {"padding", ARG_PADDING, false, 0, 0, NOLIMIT, NULL, NULL,
       "zero padding: p, [ph, pw], same or valid"},
      {"dilation", ARG_PAIR, false, 1, 1, NOLIMIT, NULL, NULL, "spacing of kernel elements"},
      {"groups", ARG_INT, false, 1, 1, NOLIMIT, NULL, NULL, "channel groups"},
      A_BIAS},
     infer_conv2d,
     -1},
    {"conv1d",
     "1-D convolution over [channels, length]",
     8,
     {A_INFER("in", "in_channels", "input channels"),
      A_OUT("out_channels", "output channels"),
      {"kernel", ARG_INT, true, 0, 1, NOLIMIT, NULL, "kernel_size", "kernel size"},
      {"stride", ARG_INT, false, 1, 1, NOLIMIT, NULL, NULL, "stride"},
      {"padding", ARG_PADDING, false, 0, 0, NOLIMIT, NULL, NULL, "zero padding: p, same or valid"},
      {"dilation", ARG_INT, false, 1, 1, NOLIMIT, NULL, NULL, "spacing of kernel elements"},
      {"groups", ARG_INT, false, 1, 1, NOLIMIT, NULL, NULL, "channel groups"},
      A_BIAS},
     infer_conv1d,
     -1},
    {"conv_transpose2d",
     "transposed 2-D convolution (upsampling)",
     9,
     {A_INFER("in", "in_channels", "input channels"),
      A_OUT("out_channels", "output channels"),
      {"kernel", ARG_PAIR, true, 0, 1, NOLIMIT, NULL, "kernel_size", "kernel size"},
      {"stride", ARG_PAIR, false, 1, 1, NOLIMIT, NULL, NULL, "stride"},
      {"padding", ARG_PAIR, false, 0, 0, NOLIMIT, NULL, NULL, "padding removed from the output"},
      {"output_padding", ARG_PAIR, false, 0, 0, NOLIMIT, NULL, NULL, "extra size on one side"},
      {"dilation", ARG_PAIR, false, 1, 1, NOLIMIT, NULL, NULL, "spacing of kernel elements"},
      {"groups", ARG_INT, false, 1, 1, NOLIMIT, NULL, NULL, "channel groups"},
      A_BIAS},
     infer_conv_transpose2d,
     -1},
    {"max_pool2d",
     "maximum over k x k windows",
     3,
     {{"kernel", ARG_PAIR, true, 0, 1, NOLIMIT, NULL, "kernel_size", "window size"},
      {"stride", ARG_PAIR, false, -1, 1, NOLIMIT, NULL, NULL, "stride (default: the kernel)"},
      {"padding", ARG_PAIR, false, 0, 0, NOLIMIT, NULL, NULL, "implicit -inf padding"}},
     infer_pool2d,
     0},
    {"avg_pool2d",
     "mean over k x k windows",
     3,
     {{"kernel", ARG_PAIR, true, 0, 1, NOLIMIT, NULL, "kernel_size", "window size"},
      {"stride", ARG_PAIR, false, -1, 1, NOLIMIT, NULL, NULL, "stride (default: the kernel)"},
      {"padding", ARG_PAIR, false, 0, 0, NOLIMIT, NULL, NULL, "implicit zero padding"}},
     infer_pool2d,
     0},
    {"adaptive_avg_pool2d",
     "mean pooling to a fixed output size",
     1,
     {{"output", ARG_PAIR, true, 0, 1, NOLIMIT, NULL, "output_size", "output size: s or [h, w]"}},
     infer_adaptive_pool2d,
     0},
    {"batch_norm1d",
     "batch normalization of [features] or [channels, length]",
     5,
     {A_INFER("num_features", NULL, "channels"),
      A_EPS,
      {"momentum", ARG_FLOAT, false, 0.1, 0, 1, NULL, NULL, "running statistics' update rate"},
      A_AFFINE(NULL),
      {"track_running_stats", ARG_BOOL, false, 1, 0, 1, NULL, NULL,
       "keep running mean/var for eval"}},
     infer_batch_norm1d,
     -1},
    {"batch_norm2d",
     "batch normalization of [channels, height, width]",
     5,
     {A_INFER("num_features", NULL, "channels"),
      A_EPS,
      {"momentum", ARG_FLOAT, false, 0.1, 0, 1, NULL, NULL, "running statistics' update rate"},
      A_AFFINE(NULL),
      {"track_running_stats", ARG_BOOL, false, 1, 0, 1, NULL, NULL,
       "keep running mean/var for eval"}},
     infer_batch_norm2d,
     -1},
    {"layer_norm",
     "normalization over the last dimension(s)",
     3,
     {{"shape", ARG_INTS, false, -1, 1, NOLIMIT, NULL, "normalized_shape",
       "normalized trailing shape (default: the last dimension)"},
      A_EPS,
      A_AFFINE("elementwise_affine")},
     infer_trailing_norm,
     -1},
    {"rms_norm",
     "root-mean-square normalization over the last dimension(s)",
     3,
     {{"shape", ARG_INTS, false, -1, 1, NOLIMIT, NULL, "normalized_shape",
       "normalized trailing shape (default: the last dimension)"},
      {"eps", ARG_FLOAT, false, 1e-6, 0, 1, NULL, NULL, "added to the mean square"},
      A_AFFINE("elementwise_affine")},
     infer_trailing_norm,
     -1},
    {"group_norm",
     "group normalization of [channels, ...]",
     4,
     {{"groups", ARG_INT, true, 0, 1, NOLIMIT, NULL, "num_groups", "channel groups"},
      A_INFER("channels", "num_channels", "channels"),
      A_EPS,
      A_AFFINE(NULL)},
     infer_group_norm,
     0},
    {"dropout",
     "zeroes elements with probability p while training",
     1,
     {{"p", ARG_FLOAT, false, 0.5, 0, 1, NULL, NULL, "drop probability"}},
     infer_identity,
     0},
    {"flatten",
     "merges dimensions start..end (counted with the batch, as in PyTorch)",
     2,
     {{"start", ARG_INT, false, 1, -SHAPE_MAX_DIM - 1, SHAPE_MAX_DIM, NULL, "start_dim",
       "first dimension"},
      {"end", ARG_INT, false, -1, -SHAPE_MAX_DIM - 1, SHAPE_MAX_DIM, NULL, "end_dim",
       "last dimension"}},
     infer_flatten,
     -1},
    {"reshape",
     "reshapes each sample (one entry may be -1)",
     1,
     {{"shape", ARG_INTS, true, 0, -1, NOLIMIT, NULL, NULL, "new shape without the batch"}},
     infer_reshape,
     0},
    {"relu", "max(x, 0)", 0, {{0}}, infer_identity, -1},
    {"gelu",
     "x * Phi(x)",
     1,
     {{"approximate", ARG_ENUM, false, 0, 0, 1, gelu_approx, NULL, "none or tanh"}},
     infer_identity,
     0},
    {"tanh", "hyperbolic tangent", 0, {{0}}, infer_identity, -1},
    {"sigmoid", "1 / (1 + exp(-x))", 0, {{0}}, infer_identity, -1},
    {"silu", "x * sigmoid(x)", 0, {{0}}, infer_identity, -1},
    {"leaky_relu",
     "x if x > 0 else slope * x",
     1,
     {{"slope", ARG_FLOAT, false, 0.01, -NOLIMIT, NOLIMIT, NULL, "negative_slope",
       "slope for x < 0"}},
     infer_identity,
     0},
    {"elu",
     "x if x > 0 else alpha * (exp(x) - 1)",
     1,
     {{"alpha", ARG_FLOAT, false, 1.0, -NOLIMIT, NOLIMIT, NULL, NULL, "scale for x < 0"}},
     infer_identity,
     0},
    {"softmax",
     "exp(x) / sum(exp(x)) along dim",
     1,
     {{"dim", ARG_INT, false, -1, -SHAPE_MAX_DIM - 1, SHAPE_MAX_DIM, NULL, NULL,
       "dimension (counted with the batch)"}},
     infer_softmax,
     0},
    {"log_softmax",
     "log(softmax(x)) along dim (before an nll loss)",
     1,
     {{"dim", ARG_INT, false, -1, -SHAPE_MAX_DIM - 1, SHAPE_MAX_DIM, NULL, NULL,
       "dimension (counted with the batch)"}},
     infer_softmax,
     0},
    {"embedding",
     "looks up integer indices in a table of vectors",
     3,
     {{"num", ARG_INT, true, 0, 1, NOLIMIT, NULL, "num_embeddings", "table size"},
      {"dim", ARG_INT, true, 0, 1, NOLIMIT, NULL, "embedding_dim", "vector size"},
      {"padding_idx", ARG_INT, false, -1, 0, NOLIMIT, NULL, NULL,
       "index whose vector stays zero (default: none)"}},
     infer_embedding,
     -1},
    {"transformer_encoder_layer",
     "self-attention + feed-forward block on [sequence, features]",
     6,
     {A_INFER("d_model", NULL, "features"),
      {"nhead", ARG_INT, true, 0, 1, NOLIMIT, NULL, NULL, "attention heads"},
      {"dim_ff", ARG_INT, false, 2048, 1, NOLIMIT, NULL, "dim_feedforward", "feed-forward width"},
      {"dropout", ARG_FLOAT, false, 0.1, 0, 1, NULL, NULL, "dropout probability"},
      {"activation", ARG_ENUM, false, 0, 0, 1, activations, NULL, "relu or gelu"},
      {"norm_first", ARG_BOOL, false, 0, 0, 1, NULL, NULL, "pre-norm instead of post-norm"}},
     infer_transformer,
     -1},
};
const int cli_layer_def_count = (int)(sizeof cli_layer_defs / sizeof cli_layer_defs[0]);

const layer_def *
layers_find(const char *name)
{
    for (int i = 0; i < cli_layer_def_count; i++)
        if (strcmp(cli_layer_defs[i].name, name) == 0)
            return &cli_layer_defs[i];
    return NULL;
}

/* ---- parsing */

static void
set_default(const layer_arg_def *a, layer_value *v)
{
    memset(v, 0, sizeof *v);
    switch (a->type) {
    case ARG_FLOAT:
        v->f = a->def;
        v->n = 1;
        break;
    case ARG_PAIR:
    case ARG_PADDING:
        v->i[0] = v->i[1] = (int64_t)a->def;
        v->n = 2;
        break;
    default:
        v->i[0] = (int64_t)a->def;
        v->n = 1;
        break;
    }
}

static bool
parse_arg(yr_doc *d, const char *layer, const layer_arg_def *a, const yaml_node_t *node,
          layer_value *v)
{
    char what[96];
    snprintf(what, sizeof what, "%s.%s", layer, a->name);
    v->given = true;
    v->pos = yr_pos_of(node);
    bool b;
    switch (a->type) {
    case ARG_INT:
        v->n = 1;
        return yr_int(d, node, what, (int64_t)a->lo, a->hi >= NOLIMIT ? INT64_MAX : (int64_t)a->hi,
                      &v->i[0]);
    case ARG_FLOAT:
        v->n = 1;
        return yr_float(d, node, what, a->lo, a->hi >= NOLIMIT ? 1.0 / 0.0 : a->hi, &v->f);
    case ARG_BOOL:
        v->n = 1;
        if (!yr_bool(d, node, what, &b))
            return false;
        v->i[0] = b;
        return true;
    case ARG_ENUM: {
        int n = 0, k;
        while (a->choices[n] != NULL)
            n++;
        if (!yr_enum(d, node, what, a->choices, n, &k))
            return false;
        v->n = 1;
        v->i[0] = k;
        return true;
    }
    case ARG_PADDING:
        if (yr_is_scalar(node) && strcmp(yr_scalar(node), "same") == 0) {
            v->n = -1;
            v->i[0] = v->i[1] = 0;
            return true;
        }
        if (yr_is_scalar(node) && strcmp(yr_scalar(node), "valid") == 0) {
            v->n = 2;
            v->i[0] = v->i[1] = 0;
            return true;
        }
        /* a number or a pair: */
        /* fall through */
    case ARG_PAIR: {
        bool pair = strcmp(layer, "conv1d") != 0;
        int max = pair ? 2 : 1;
        if (!yr_ints(d, node, what, (int64_t)a->lo, INT64_MAX, max, v->i, &v->n))
            return false;
        if (v->n == 1)
            v->i[1] = v->i[0];
        v->n = 2;
        return true;
    }
    case ARG_INTS:
        return yr_ints(d, node, what, (int64_t)a->lo, INT64_MAX, SHAPE_MAX_DIM, v->i, &v->n);
    }
    return false;
}

bool
layers_parse(yr_doc *d, const yaml_node_t *item, int index, cfg_layer *out)
{
    memset(out, 0, sizeof *out);
    out->index = index;
    out->pos = yr_pos_of(item);
    char where[64], got[96];
    snprintf(where, sizeof where, "model.layers[%d]", index);

    const yaml_node_t *name_node = item, *args = NULL;
    if (yr_is_map(item)) {
        if (yr_map_len(item) != 1) {
            yaml_node_t *second = yr_map_key(d, item, 1);
            if (yr_map_len(item) == 0) {
                yr_error(d, item, "%s: expected a layer, got an empty mapping", where);
            } else {
                yr_error(
                    d, second,
                    "%s: one layer per list item, but '%s' follows '%s' in the same item (is a '-' missing?)",
                    where, yr_scalar(second) ? yr_scalar(second) : "?",
                    yr_scalar(yr_map_key(d, item, 0)) ? yr_scalar(yr_map_key(d, item, 0)) : "?");
            }
            return false;
        }
        name_node = yr_map_key(d, item, 0);
        args = yr_map_value(d, item, 0);
    }
    if (!yr_is_scalar(name_node) || yr_is_null(name_node)) {
        yr_error(d, item, "%s: expected a layer name or `name: {arguments}`, got %s", where,
                 yr_describe(item, got, sizeof got));
        return false;
    }
    const char *name = yr_scalar(name_node);
    const layer_def *def = layers_find(name);
    if (def == NULL) {
        const char *names[64];
        int n = 0;
        for (int i = 0; i < cli_layer_def_count && n < 64; i++)
            names[n++] = cli_layer_defs[i].name;
        const char *hint = yr_suggest(name, names, n);
        if (hint != NULL)
            yr_error(d, name_node, "%s: unknown layer '%s' (did you mean '%s'?)", where, name,
                     hint);
        else
            yr_error(d, name_node, "%s: unknown layer '%s' (`yaten help layers` lists them)", where,
                     name);
        return false;
    }
    out->def = def;
    for (int i = 0; i < def->n_args; i++)
        set_default(&def->args[i], &out->v[i]);

    bool ok = true;
    if (args != NULL && !yr_is_null(args) && !yr_is_map(args)) {
        /* `dropout: 0.2` sets the layer's main argument. */
        if (def->primary < 0) {
            if (def->n_args == 0)
                yr_error(d, args, "%s: takes no arguments, got %s", name,
                         yr_describe(args, got, sizeof got));
            else
                yr_error(d, args, "%s: expected a mapping of arguments, got %s", name,
                         yr_describe(args, got, sizeof got));
            return false;
        }
        return parse_arg(d, name, &def->args[def->primary], args, &out->v[def->primary]);
    }
    if (yr_is_map(args)) {
        const char *keys[2 * LAYER_MAX_ARGS];
        int n_keys = 0;
        for (int i = 0; i < def->n_args; i++) {
            keys[n_keys++] = def->args[i].name;
            if (def->args[i].alias != NULL)
                keys[n_keys++] = def->args[i].alias;
        }
        if (def->n_args == 0 && yr_map_len(args) > 0) {
            yr_error(d, yr_map_key(d, args, 0), "%s: takes no arguments", name);
            return false;
        }
        ok = yr_check_keys(d, args, name, keys, n_keys);
        for (int i = 0; i < def->n_args; i++) {
            const layer_arg_def *a = &def->args[i];
            yaml_node_t *v = yr_get(d, args, a->name);
            yaml_node_t *alias = a->alias ? yr_get(d, args, a->alias) : NULL;
            if (v != NULL && alias != NULL) {
                yaml_node_t *k1 = yr_get_key(d, args, a->name), *k2 = yr_get_key(d, args, a->alias);
                bool alias_first = k2->start_mark.index < k1->start_mark.index;
                yr_error(d, alias_first ? k1 : k2,
                         "%s: '%s' and '%s' are the same argument; give one", name,
                         alias_first ? a->alias : a->name, alias_first ? a->name : a->alias);
                ok = false;
                continue;
            }
            if (v == NULL)
                v = alias;
            if (v != NULL)
                ok = parse_arg(d, name, a, v, &out->v[i]) && ok;
        }
    }
    for (int i = 0; i < def->n_args; i++) {
        if (def->args[i].required && !out->v[i].given) {
            if (yr_is_map(args) && yr_has_typo_of(d, args, def->args[i].name)) {
                ok = false;
                continue;
            }
            yr_error(d, args && yr_is_map(args) ? args : item,
                     "%s: missing required argument '%s' (%s)", name, def->args[i].name,
                     def->args[i].doc);
            ok = false;
        }
    }
    return ok;
}

const char *
layer_describe(const cfg_layer *l, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < l->def->n_args && used < cap; i++) {
        const layer_arg_def *a = &l->def->args[i];
        const layer_value *v = &l->v[i];
        bool inferred = !a->required && a->def == -1 && v->i[0] != -1 && a->type == ARG_INT;
        if (!v->given && !inferred)
            continue;
        char val[128];
        switch (a->type) {
        case ARG_FLOAT:
            snprintf(val, sizeof val, "%g", v->f);
            break;
        case ARG_BOOL:
            snprintf(val, sizeof val, "%s", v->i[0] ? "true" : "false");
            break;
        case ARG_ENUM:
            snprintf(val, sizeof val, "%s", a->choices[v->i[0]]);
            break;
        case ARG_PADDING:
            if (v->n < 0) {
                snprintf(val, sizeof val, "same");
                break;
            }
            /* fall through */
        case ARG_PAIR:
            layer_pair_str(v->i, 2, val, sizeof val);
            break;
        case ARG_INTS: {
            cli_shape s = {.ndim = v->n};
            memcpy(s.d, v->i, sizeof(int64_t) * (size_t)v->n);
            cli_shape_str(&s, val, sizeof val);
            break;
        }
        default:
            snprintf(val, sizeof val, "%lld", (long long)v->i[0]);
            break;
        }
        used += (size_t)snprintf(buf + used, cap - used, "%s%s=%s", used ? " " : "", a->name, val);
    }
    return buf;
}

static const char *
type_name(const layer_arg_def *a)
{
    switch (a->type) {
    case ARG_INT:
        return "int";
    case ARG_FLOAT:
        return "float";
    case ARG_BOOL:
        return "bool";
    case ARG_PAIR:
        return "int or [h, w]";
    case ARG_PADDING:
        return "int, [h, w], same or valid";
    case ARG_INTS:
        return "int or list";
    case ARG_ENUM:
        return "choice";
    }
    return "?";
}

void
layers_print_help(void *f)
{
    for (int i = 0; i < cli_layer_def_count; i++) {
        const layer_def *def = &cli_layer_defs[i];
        fprintf(f, "%s: %s\n", def->name, def->doc);
        for (int j = 0; j < def->n_args; j++) {
            const layer_arg_def *a = &def->args[j];
            char dflt[64] = "";
            if (a->required)
                snprintf(dflt, sizeof dflt, "required");
            else if (a->def == -1 && a->lo >= 0)
                snprintf(dflt, sizeof dflt, "inferred");
            else if (a->type == ARG_BOOL)
                snprintf(dflt, sizeof dflt, "default %s", a->def ? "true" : "false");
            else if (a->type == ARG_ENUM)
                snprintf(dflt, sizeof dflt, "default %s", a->choices[(int)a->def]);
            else
                snprintf(dflt, sizeof dflt, "default %g", a->def);
            fprintf(f, "    %-20s %-26s %-14s %s%s%s\n", a->name, type_name(a), dflt, a->doc,
                    a->alias ? "; also " : "", a->alias ? a->alias : "");
        }
    }
}
