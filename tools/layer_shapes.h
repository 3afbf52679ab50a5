/* The shape rules of the layer table (layer_shapes.c), one function per layer kind, with the
 * signature of layer_def.infer. Internal to tools/. */
#ifndef YT_TOOLS_LAYER_SHAPES_H
#define YT_TOOLS_LAYER_SHAPES_H

#include "layers.h"

/* "5" for [5, 5] (or n = 1), "5x3" for [5, 3]. */
const char *layer_pair_str(const int64_t *v, int n, char *buf, size_t cap);

bool infer_identity(cfg_layer *l, const cli_shape *in, const char *src, cli_shape *out, char *err,
                    size_t cap);
bool infer_linear(cfg_layer *l, const cli_shape *in, const char *src, cli_shape *out, char *err,
                  size_t cap);
bool infer_conv1d(cfg_layer *l, const cli_shape *in, const char *src, cli_shape *out, char *err,
                  size_t cap);
bool infer_conv2d(cfg_layer *l, const cli_shape *in, const char *src, cli_shape *out, char *err,
                  size_t cap);
bool infer_conv_transpose2d(cfg_layer *l, const cli_shape *in, const char *src, cli_shape *out,
                            char *err, size_t cap);
bool infer_pool2d(cfg_layer *l, const cli_shape *in, const char *src, cli_shape *out, char *err,
                  size_t cap);
bool infer_adaptive_pool2d(cfg_layer *l, const cli_shape *in, const char *src, cli_shape *out,
                           char *err, size_t cap);
bool infer_batch_norm1d(cfg_layer *l, const cli_shape *in, const char *src, cli_shape *out,
                        char *err, size_t cap);
bool infer_batch_norm2d(cfg_layer *l, const cli_shape *in, const char *src, cli_shape *out,
                        char *err, size_t cap);
bool infer_trailing_norm(cfg_layer *l, const cli_shape *in, const char *src, cli_shape *out,
                         char *err, size_t cap);
bool infer_group_norm(cfg_layer *l, const cli_shape *in, const char *src, cli_shape *out, char *err,
                      size_t cap);
bool infer_flatten(cfg_layer *l, const cli_shape *in, const char *src, cli_shape *out, char *err,
                   size_t cap);
bool infer_softmax(cfg_layer *l, const cli_shape *in, const char *src, cli_shape *out, char *err,
                   size_t cap);
bool infer_embedding(cfg_layer *l, const cli_shape *in, const char *src, cli_shape *out, char *err,
                     size_t cap);
bool infer_reshape(cfg_layer *l, const cli_shape *in, const char *src, cli_shape *out, char *err,
                   size_t cap);
bool infer_transformer(cfg_layer *l, const cli_shape *in, const char *src, cli_shape *out,
                       char *err, size_t cap);

#endif
