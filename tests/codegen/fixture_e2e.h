/* Declarations of the end-to-end fixture's shape rule (force-included by test_e2e.py). */
#include "internal.h"

yt_status yt__shape_ezcat(yt_shape *out, const char *op, yt_tensor *const *tensors,
                          int tensors_len);
