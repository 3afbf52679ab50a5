/* yaten: a tensor library with reverse-mode autograd, PyTorch's core re-done in C.
 * This umbrella header is the whole public API: what it does not declare is not API. */
#ifndef YATEN_H
#define YATEN_H

#include "yaten/types.h"
#include "yaten/error.h"
#include "yaten/tensor.h"
#include "yaten/autograd.h"
#include "yaten/random.h"
#include "yaten/named.h"
#include "yaten/nn.h"
#include "yaten/io.h"
#include "yaten/data.h"
#include "yaten/optim.h"
#include "yaten/ops.h" /* generated from ops.yaml */

#endif
