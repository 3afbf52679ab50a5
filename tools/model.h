/* Modules from a checked config (tools/model.c). */
#ifndef YT_TOOLS_MODEL_H
#define YT_TOOLS_MODEL_H

#include <stddef.h>

#include <yaten.h>

#include "config.h"

/* model.layers as a Sequential whose children are named "0", "1", ... as in PyTorch. The config's
 * shapes must have been checked (inferred arguments are filled then). Returns a new module, or
 * NULL with a message in err ("CONFIG:LINE:COL: conv2d: ..."). Weights are drawn from the default
 * generator. */
yt_module *model_build(const cfg_config *cfg, char *err, size_t cap);

/* The loss module of the config (mean reduction). */
yt_module *loss_build(const cfg_config *cfg, char *err, size_t cap);

#endif
