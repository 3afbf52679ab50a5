/* scaled_dot_product_attention's composite, declared here until its ops.yaml entry (which needs
 * the generator's `Tensor?` arguments) declares it in generated/kernels.h. */
#ifndef YT_KERNELS_COMPOSITE_ATTENTION_H
#define YT_KERNELS_COMPOSITE_ATTENTION_H

#include "../../runtime/internal.h"

YT_INTERNAL yt_tensor *yt__composite_scaled_dot_product_attention(yt_tensor *query, yt_tensor *key,
                                                                  yt_tensor *value,
                                                                  yt_tensor *attn_mask,
                                                                  double dropout_p, bool is_causal);

#endif
