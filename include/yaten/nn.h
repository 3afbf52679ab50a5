/* Neural-network modules (PyTorch's torch.nn): layers with named parameters and buffers, a
 * train/eval flag, children, state dicts, losses and weight initialisation.
 * Included by <yaten.h>; not meant to be included on its own.
 *
 * A module is a refcounted object: a kind (a small vtable: name, forward, describe, release_ctx),
 * a context the kind owns, ordered parameters, buffers and children. Forward passes are built from
 * the public ops, so autograd works through them with no extra code.
 *
 * Ownership: constructors return a module with one reference, which the caller drops with
 * yt_module_release(). Functions returning yt_tensor * return a new reference (tracked by the
 * innermost scope, like every op result); tensors passed in are borrowed. Functions returning a
 * yt_module * other than constructors return a borrowed pointer, valid while its parent lives.
 *
 * Errors: NULL (or a non-zero yt_status) with the thread-local error set; messages name the
 * function and the argument: "linear_new: in_features=0 must be positive". A NULL module or
 * tensor argument that came from a failed call gives NULL without overwriting the first error.
 *
 * Names follow PyTorch exactly (weight, bias, running_mean, running_var, num_batches_tracked,
 * in_proj_weight, self_attn.out_proj.weight, linear1.weight, norm1.weight; Sequential children
 * "0", "1", ...), so a state dict saved by yaten loads into the same PyTorch model and back.
 * Parameters are f32 and initialised as PyTorch does, drawing from the default generator
 * (yt_manual_seed) at construction. */
#ifndef YATEN_NN_H
#define YATEN_NN_H

#include "named.h"
#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ================================================================ the module interface */

typedef struct yt_module yt_module;

/* What a module does. Built-in layers have one static kind each; user-defined modules fill one in
 * (it must outlive every module made from it). */
typedef struct yt_module_kind {
    const char *name; /* "Linear": the PyTorch class name, printed by summaries and errors */
    /* Computes the output from n_inputs tensors (1 for layers, 2 for losses: input, target).
     * Returns a new reference, or NULL with the error set. Runs with scope tracking suspended:
     * it owns every tensor it creates and releases its temporaries itself, as code outside any
     * scope does; the result is handed to the caller's scope by yt_module_forward. Inputs are
     * never NULL. */
    yt_tensor *(*forward)(yt_module *m, yt_tensor *const *inputs, int n_inputs);
    /* Writes PyTorch's extra_repr ("in_features=784, out_features=256, bias=True") into buf
     * (NUL-terminated, truncated to cap). May be NULL. */
    yt_status (*describe)(const yt_module *m, char *buf, size_t cap);
    /* Frees the context when the module is freed. May be NULL. */
    void (*release_ctx)(void *ctx);
    /* How many inputs forward takes; yt_module_forward_n refuses other counts with an error
     * naming the module. 0: any count (forward checks). */
    int n_inputs;
} yt_module_kind;

/* A new module of `kind` owning `ctx` (released with kind->release_ctx when the module is freed,
 * and also when this call fails, so the caller never leaks it). Starts in training mode with no
 * parameters, buffers or children. Errors: YT_ERR_VALUE (NULL kind, name or forward),
 * YT_ERR_NOMEM. */
YT_API yt_module *yt_module_new(const yt_module_kind *kind, void *ctx);

/* The context given to yt_module_new (NULL for NULL). */
YT_API void *yt_module_ctx(yt_module *m);

/* The module's kind and its name ("Linear"); NULL for NULL. */
YT_API const yt_module_kind *yt_module_kind_of(const yt_module *m);
YT_API const char *yt_module_kind_name(const yt_module *m);

/* Adds a reference and returns m (NULL gives NULL). */
YT_API yt_module *yt_module_retain(yt_module *m);
/* Drops a reference; at zero releases the parameters, buffers, children and context. NULL is a
 * no-op. */
YT_API void yt_module_release(yt_module *m);

/* Runs the module on one input. Returns a new reference, or NULL with the error set (a loss
 * given one input fails: it needs two). NULL m or x gives NULL, keeping an earlier error. */
YT_API yt_tensor *yt_module_forward(yt_module *m, yt_tensor *x);
/* Runs the module on `n` inputs (losses: input, target). Errors as yt_module_forward; a wrong
 * count is YT_ERR_VALUE naming the module. */
YT_API yt_tensor *yt_module_forward_n(yt_module *m, yt_tensor *const *inputs, int n);
/* yt_module_forward_n with two inputs: loss = yt_module_forward2(criterion, logits, labels). */
YT_API yt_tensor *yt_module_forward2(yt_module *m, yt_tensor *input, yt_tensor *target);

/* Registers `t` as parameter `name` (retained; the module keeps this very tensor, so
 * optimizers update it in place) and sets its requires_grad. `name` must be non-empty, contain no
 * '.', and not be taken by another parameter, buffer or child. Errors: YT_ERR_VALUE (name),
 * YT_ERR_STATE (t is not a leaf), YT_ERR_DTYPE (t is not floating). */
YT_API yt_status yt_module_register_parameter(yt_module *m, const char *name, yt_tensor *t);
/* Registers `t` as buffer `name` (state that is saved but not trained: running statistics,
 * counters). Retained; requires_grad untouched. Errors as for parameters (any dtype). */
YT_API yt_status yt_module_register_buffer(yt_module *m, const char *name, yt_tensor *t);
/* Adds `child` under `name` (retained). Errors: YT_ERR_VALUE (name as above; child is m or one of
 * m's ancestors, which would make a cycle). */
YT_API yt_status yt_module_add_child(yt_module *m, const char *name, yt_module *child);

/* The parameter or buffer `name`, which may be a dotted path through children ("0.weight",
 * "self_attn.out_proj.bias"). Returns a new reference to the module's own tensor (not a copy), or
 * NULL with YT_ERR_VALUE when there is none. */
YT_API yt_tensor *yt_module_get(yt_module *m, const char *name);
/* The child `name` (dotted paths allowed), borrowed; NULL with YT_ERR_VALUE when absent. */
YT_API yt_module *yt_module_get_child(yt_module *m, const char *name);
/* Direct children in registration order: count, i-th child (borrowed) and its name; NULL / 0 out of
 * range. */
YT_API int yt_module_child_count(const yt_module *m);
YT_API yt_module *yt_module_child(yt_module *m, int i);
YT_API const char *yt_module_child_name(const yt_module *m, int i);

/* Appends every parameter of m and its descendants to `out` under its dotted name ("0.weight"),
 * in PyTorch's order (own parameters first, then each child's, depth first); a tensor shared by
 * two modules appears once, under its first name. The list holds the modules' own tensors.
 * Errors: YT_ERR_VALUE (NULL out), YT_ERR_NOMEM; on error `out` keeps what it had before. */
YT_API yt_status yt_module_parameters(yt_module *m, yt_named_tensors *out);
/* Appends the state dict: every parameter and buffer, in PyTorch's state_dict() order. Entries are
 * detached aliases of the module's tensors (they share storage and see later updates; copy them to
 * keep a snapshot). Errors as yt_module_parameters. */
YT_API yt_status yt_module_state_dict(yt_module *m, yt_named_tensors *out);
/* Copies the values of `sd` into the module's parameters and buffers, in place (tensors keep their
 * identity, so optimizers stay valid; values are converted to each tensor's dtype). Everything is
 * checked before anything is written: a size mismatch is always an error; with `strict`, so are
 * keys the module has but `sd` lacks (missing) and keys `sd` has but the module lacks
 * (unexpected). Errors: YT_ERR_VALUE naming the keys ("load_state_dict: missing key(s) 'fc.bias';
 * unexpected key(s) 'fc.b'"), YT_ERR_SHAPE ("size mismatch for '0.weight': the state dict has
 * [3, 4], the module [4, 3]"). */
YT_API yt_status yt_module_load_state_dict(yt_module *m, const yt_named_tensors *sd, bool strict);

/* Sets training (true) or evaluation (false) mode on m and all its descendants (BatchNorm uses
 * batch statistics and updates its running ones only in training; Dropout drops only in
 * training). NULL is a no-op. */
YT_API void yt_module_train(yt_module *m, bool training);
YT_API bool yt_module_is_training(const yt_module *m);

/* Total number of elements of the parameters (each shared tensor counted once); 0 for NULL. */
YT_API int64_t yt_module_num_parameters(yt_module *m);

/* Drops the gradient of every parameter (PyTorch's zero_grad(set_to_none=True)). */
YT_API void yt_module_zero_grad(yt_module *m);

/* Makes every dropout in m and its descendants draw from `gen` (borrowed: it must outlive the
 * modules, or be replaced); NULL means the default generator. */
YT_API void yt_module_set_generator(yt_module *m, yt_generator *gen);

/* Converts the floating parameters and buffers of m and its descendants to `dtype` (f32 or f64),
 * like PyTorch's module.to(dtype). Parameters are replaced by new leaf tensors (gradients are
 * dropped), so do this before handing parameters to an optimizer. Errors: YT_ERR_DTYPE. */
YT_API yt_status yt_module_to(yt_module *m, yt_dtype dtype);

/* Prints one line per module run by a forward pass on zeros of `input_shape` (ndim dims; f32, or
 * i64 when the first layer is an Embedding): its name, kind and arguments, output shape and own
 * parameter count; then the totals. The pass runs in eval mode under no-grad (the modes are
 * restored after), so running statistics are untouched. `file` is a FILE * (stdout if NULL).
 * Errors: those of the forward pass (e.g. a shape that does not fit the model), YT_ERR_VALUE. */
YT_API yt_status yt_module_summary(yt_module *m, const int64_t *input_shape, int ndim, void *file);
/* The shape of m's output for an input of `input_shape`, found the way yt_module_summary does
 * (a forward pass on zeros in eval mode under no-grad; modes restored). Writes out_shape[0..
 * *out_ndim) (room for YT_MAX_DIM). For checking a model against its data before training: run
 * it layer by layer to learn which layer a shape does not fit. Errors: those of the forward
 * pass ("Linear(in_features=400, out_features=10): input.size(-1)=256 does not match ..."),
 * YT_ERR_VALUE. */
YT_API yt_status yt_module_output_shape(yt_module *m, const int64_t *input_shape, int ndim,
                                        int64_t *out_shape, int *out_ndim);
/* Prints the module tree the way PyTorch's print(model) does. `file` as above. */
YT_API yt_status yt_module_print(yt_module *m, void *file);

/* ================================================================ layers */

/* Linear: y = x W^T + b, W [out, in] ~ U(-1/sqrt(in), 1/sqrt(in)) (kaiming_uniform with a=sqrt(5)),
 * b the same. Input [..., in]. Errors: YT_ERR_VALUE (in or out not positive). */
YT_API yt_module *yt_linear_new(int64_t in_features, int64_t out_features, bool bias);
/* Identity: returns its input. */
YT_API yt_module *yt_identity_new(void);

/* How convolutions pad: with zeros (PyTorch's padding_mode="zeros"), or by reflecting or
 * replicating the border. */
typedef enum yt_padding_mode {
    YT_PADDING_ZEROS = 0,
    YT_PADDING_REFLECT,
    YT_PADDING_REPLICATE,
} yt_padding_mode;

/* Conv2d arguments; (height, width) pairs. Get PyTorch's defaults from yt_conv2d_options_default
 * and change what differs. */
typedef struct yt_conv2d_options {
    int64_t in_channels, out_channels;
    int64_t kernel_size[2];
    int64_t stride[2];            /* {1, 1} */
    int64_t padding[2];           /* {0, 0}; ignored when padding_same */
    int64_t dilation[2];          /* {1, 1} */
    int64_t groups;               /* 1; must divide both channel counts */
    bool bias;                    /* true */
    bool padding_same;            /* padding="same": output size = input size (stride must be 1) */
    yt_padding_mode padding_mode; /* YT_PADDING_ZEROS */
} yt_conv2d_options;
/* {in, out, {kernel, kernel}} with PyTorch's defaults for the rest. */
YT_API yt_conv2d_options yt_conv2d_options_default(int64_t in_channels, int64_t out_channels,
                                                   int64_t kernel_size);
/* Conv2d: weight [out, in / groups, kH, kW], bias [out], both kaiming-uniform (a=sqrt(5)) as in
 * PyTorch. Input [N, C, H, W] or [C, H, W]. Errors: YT_ERR_VALUE naming the option. */
YT_API yt_module *yt_conv2d_new(const yt_conv2d_options *o);

typedef struct yt_conv1d_options {
    int64_t in_channels, out_channels, kernel_size;
    int64_t stride;   /* 1 */
    int64_t padding;  /* 0 */
    int64_t dilation; /* 1 */
    int64_t groups;   /* 1 */
    bool bias;        /* true */
    bool padding_same;
    yt_padding_mode padding_mode;
} yt_conv1d_options;
YT_API yt_conv1d_options yt_conv1d_options_default(int64_t in_channels, int64_t out_channels,
                                                   int64_t kernel_size);
/* Conv1d: weight [out, in / groups, k], bias [out]. Input [N, C, L] or [C, L]. */
YT_API yt_module *yt_conv1d_new(const yt_conv1d_options *o);

typedef struct yt_conv_transpose2d_options {
    int64_t in_channels, out_channels;
    int64_t kernel_size[2];
    int64_t stride[2];         /* {1, 1} */
    int64_t padding[2];        /* {0, 0} */
    int64_t output_padding[2]; /* {0, 0}; each < its stride or dilation */
    int64_t dilation[2];       /* {1, 1} */
    int64_t groups;            /* 1 */
    bool bias;                 /* true */
} yt_conv_transpose2d_options;
YT_API yt_conv_transpose2d_options yt_conv_transpose2d_options_default(int64_t in_channels,
                                                                       int64_t out_channels,
                                                                       int64_t kernel_size);
/* ConvTranspose2d: weight [in, out / groups, kH, kW] (PyTorch's layout), bias [out]. */
YT_API yt_module *yt_conv_transpose2d_new(const yt_conv_transpose2d_options *o);

/* BatchNorm over channel dim 1: 1d takes [N, C] or [N, C, L], 2d takes [N, C, H, W]. weight ones,
 * bias zeros (when affine); buffers running_mean (zeros), running_var (ones) and
 * num_batches_tracked (0-d i64) when track_running_stats. Training normalises with the batch
 * statistics and updates the running ones (momentum; NAN means PyTorch's momentum=None, a
 * cumulative average); eval uses the running ones. PyTorch's defaults: eps 1e-5, momentum 0.1,
 * affine and track_running_stats true. Errors: YT_ERR_VALUE (num_features, eps or momentum). */
YT_API yt_module *yt_batch_norm1d_new(int64_t num_features, double eps, double momentum,
                                      bool affine, bool track_running_stats);
YT_API yt_module *yt_batch_norm2d_new(int64_t num_features, double eps, double momentum,
                                      bool affine, bool track_running_stats);
/* LayerNorm over the trailing dims `normalized_shape[0..ndim)`; weight ones and bias zeros of that
 * shape when elementwise_affine. */
YT_API yt_module *yt_layer_norm_new(const int64_t *normalized_shape, int ndim, double eps,
                                    bool elementwise_affine);
/* GroupNorm: num_channels split in num_groups (which must divide it); weight ones and bias zeros
 * [num_channels] when affine. */
YT_API yt_module *yt_group_norm_new(int64_t num_groups, int64_t num_channels, double eps,
                                    bool affine);
/* RMSNorm (PyTorch 2.4's nn.RMSNorm): x / sqrt(mean(x^2) + eps) * weight over the trailing dims;
 * eps NAN means the dtype's machine epsilon (PyTorch's eps=None). */
YT_API yt_module *yt_rms_norm_new(const int64_t *normalized_shape, int ndim, double eps,
                                  bool elementwise_affine);

/* Embedding: weight [num_embeddings, embedding_dim] ~ N(0, 1), row padding_idx zeroed and given
 * no gradient. padding_idx YT_NONE for none; negative values count from the end, as in PyTorch.
 * Input: integer indices of any shape; output indices.shape + [embedding_dim]. */
YT_API yt_module *yt_embedding_new(int64_t num_embeddings, int64_t embedding_dim,
                                   int64_t padding_idx);

/* Dropout: in training zeroes each element with probability p (0 <= p <= 1) and scales the rest
 * by 1 / (1 - p); the identity in eval mode. Draws from the generator set with
 * yt_module_set_generator, else the default one. */
YT_API yt_module *yt_dropout_new(double p);

/* Activations (no parameters). gelu's approximate is "none" or "tanh"; leaky_relu's default slope
 * is 0.01; elu's alpha 1.0. softmax/log_softmax normalise along `dim` (negative counts from the
 * end). */
YT_API yt_module *yt_relu_new(void);
YT_API yt_module *yt_gelu_new(const char *approximate);
YT_API yt_module *yt_tanh_new(void);
YT_API yt_module *yt_sigmoid_new(void);
YT_API yt_module *yt_silu_new(void);
YT_API yt_module *yt_leaky_relu_new(double negative_slope);
YT_API yt_module *yt_elu_new(double alpha);
YT_API yt_module *yt_softmax_new(int64_t dim);
YT_API yt_module *yt_log_softmax_new(int64_t dim);

/* Flatten dims start_dim..end_dim into one (PyTorch's defaults: 1, -1). */
YT_API yt_module *yt_flatten_new(int64_t start_dim, int64_t end_dim);

/* Sequential: runs its children in order, each on the previous one's output; children are
 * named "0", "1", ... Empty, it returns its input. */
YT_API yt_module *yt_sequential_new(void);
/* Appends `child` (retained) under the next index. Errors: as yt_module_add_child, and
 * YT_ERR_VALUE when `seq` is not a Sequential. */
YT_API yt_status yt_sequential_append(yt_module *seq, yt_module *child);

/* Pooling arguments, (height, width) pairs. */
typedef struct yt_pool2d_options {
    int64_t kernel_size[2];
    int64_t stride[2];        /* = kernel_size */
    int64_t padding[2];       /* {0, 0}; at most half the kernel */
    int64_t dilation[2];      /* {1, 1}; max pooling only */
    bool ceil_mode;           /* false */
    bool count_include_pad;   /* true; average pooling only */
    int64_t divisor_override; /* 0: none; average pooling only */
} yt_pool2d_options;
YT_API yt_pool2d_options yt_pool2d_options_default(int64_t kernel_size);
/* MaxPool2d / AvgPool2d with square windows; stride 0 means the kernel size (PyTorch's None). */
YT_API yt_module *yt_max_pool2d_new(int64_t kernel_size, int64_t stride, int64_t padding);
YT_API yt_module *yt_avg_pool2d_new(int64_t kernel_size, int64_t stride, int64_t padding);
YT_API yt_module *yt_max_pool2d_new_ex(const yt_pool2d_options *o);
YT_API yt_module *yt_avg_pool2d_new_ex(const yt_pool2d_options *o);
/* AdaptiveAvgPool2d to [out_h, out_w]. */
YT_API yt_module *yt_adaptive_avg_pool2d_new(int64_t out_h, int64_t out_w);

/* ================================================================ attention */

/* MultiheadAttention: parameters in_proj_weight [3E, E] (xavier-uniform), in_proj_bias [3E]
 * (zeros), out_proj.weight [E, E] (Linear's init) and out_proj.bias (zeros), as PyTorch. dropout
 * applies to the attention weights in training. Inputs are [L, N, E] ([N, L, E] when batch_first)
 * or unbatched [L, E]. Errors: YT_ERR_VALUE (embed_dim not divisible by num_heads, ...). */
YT_API yt_module *yt_multihead_attention_new(int64_t embed_dim, int64_t num_heads, double dropout,
                                             bool bias, bool batch_first);

/* Attention of `query` over `key`/`value` (the same tensor for self-attention). attn_mask (may be
 * NULL) is [L, S] or [N * num_heads, L, S]: a bool mask where true hides the score (PyTorch's MHA
 * convention), or a float mask added to the scores. is_causal hides keys after each query; with an
 * attn_mask as well, the mask is used (PyTorch's "hint" semantics). When weights_out is not NULL
 * it receives the attention weights averaged over heads, [N, L, S] ([L, S] unbatched), as a new
 * reference (PyTorch's need_weights=True). Returns the output, shaped like query.
 * yt_module_forward(mha, x) is self-attention of x without masks. */
YT_API yt_tensor *yt_multihead_attention_forward(yt_module *m, yt_tensor *query, yt_tensor *key,
                                                 yt_tensor *value, yt_tensor *attn_mask,
                                                 bool is_causal, yt_tensor **weights_out);

typedef struct yt_mha_forward_options {
    yt_tensor *attn_mask;        /* as above, or NULL */
    yt_tensor *key_padding_mask; /* [N, S] ([S] unbatched): bool, true hides that key; or float */
    bool is_causal;
    bool average_attn_weights; /* weights_out averaged over heads ([N, L, S]) or per head
                                  ([N, num_heads, L, S]) */
} yt_mha_forward_options;
/* The same with every option; `o` may be NULL (no masks, averaged weights). */
YT_API yt_tensor *yt_multihead_attention_forward_ex(yt_module *m, yt_tensor *query, yt_tensor *key,
                                                    yt_tensor *value,
                                                    const yt_mha_forward_options *o,
                                                    yt_tensor **weights_out);

typedef struct yt_transformer_encoder_layer_options {
    int64_t d_model, nhead;
    int64_t dim_feedforward; /* 2048 */
    double dropout;          /* 0.1 */
    const char *activation;  /* "relu" (or "gelu") */
    double layer_norm_eps;   /* 1e-5 */
    bool batch_first;        /* false */
    bool norm_first;         /* false: post-norm, PyTorch's default */
} yt_transformer_encoder_layer_options;
YT_API yt_transformer_encoder_layer_options
yt_transformer_encoder_layer_options_default(int64_t d_model, int64_t nhead);
/* TransformerEncoderLayer, PyTorch's names and structure: children self_attn, linear1, dropout,
 * linear2, norm1, norm2, dropout1, dropout2. Post-norm: x = norm1(x + sa(x)); x = norm2(x +
 * ff(x)); with norm_first: x = x + sa(norm1(x)); x = x + ff(norm2(x)). */
YT_API yt_module *yt_transformer_encoder_layer_new(int64_t d_model, int64_t nhead,
                                                   int64_t dim_feedforward, double dropout,
                                                   const char *activation, bool norm_first,
                                                   bool batch_first);
YT_API yt_module *
yt_transformer_encoder_layer_new_ex(const yt_transformer_encoder_layer_options *o);
/* The layer with masks (see yt_multihead_attention_forward; either may be NULL).
 * yt_module_forward(layer, src) is this without masks. */
YT_API yt_tensor *yt_transformer_encoder_layer_forward(yt_module *m, yt_tensor *src,
                                                       yt_tensor *src_mask,
                                                       yt_tensor *src_key_padding_mask,
                                                       bool is_causal);

/* ================================================================ losses */

/* How a loss reduces its per-element values. */
typedef enum yt_reduction {
    YT_REDUCTION_MEAN = 0,
    YT_REDUCTION_SUM,
    YT_REDUCTION_NONE,
} yt_reduction;

/* CrossEntropyLoss and NLLLoss arguments. */
typedef struct yt_cross_entropy_options {
    yt_tensor *weight;      /* per-class weights [C] (borrowed; the module keeps a reference as
                               buffer "weight", as PyTorch does), or NULL */
    yt_reduction reduction; /* mean */
    int64_t ignore_index;   /* -100: targets equal to it contribute nothing */
    double label_smoothing; /* 0.0, in [0, 1]; cross-entropy only */
} yt_cross_entropy_options;
YT_API yt_cross_entropy_options yt_cross_entropy_options_default(void);

/* Losses are modules taking two inputs, (input, target): yt_module_forward2(loss, x, y).
 * `o` NULL means PyTorch's defaults. Cross-entropy takes logits [N, C] (or [N, C, d...]) and class
 * indices [N] or class probabilities [N, C]; NLL takes log-probabilities and class indices. */
YT_API yt_module *yt_cross_entropy_loss_new(const yt_cross_entropy_options *o);
YT_API yt_module *yt_nll_loss_new(const yt_cross_entropy_options *o);
YT_API yt_module *yt_mse_loss_new(yt_reduction reduction);
YT_API yt_module *yt_l1_loss_new(yt_reduction reduction);
/* SmoothL1Loss: 0.5 d^2 / beta where |d| < beta, |d| - beta / 2 elsewhere (beta >= 0, default 1). */
YT_API yt_module *yt_smooth_l1_loss_new(yt_reduction reduction, double beta);
/* HuberLoss: 0.5 d^2 where |d| < delta, delta (|d| - delta / 2) elsewhere (delta > 0, default 1). */
YT_API yt_module *yt_huber_loss_new(yt_reduction reduction, double delta);
/* BCELoss on probabilities; `weight` (may be NULL) rescales each element (broadcast) and is kept as
 * buffer "weight". */
YT_API yt_module *yt_bce_loss_new(yt_tensor *weight, yt_reduction reduction);
/* BCEWithLogitsLoss; `pos_weight` (may be NULL) weighs the positive term per class and is kept as
 * buffer "pos_weight". */
YT_API yt_module *yt_bce_with_logits_loss_new(yt_tensor *weight, yt_tensor *pos_weight,
                                              yt_reduction reduction);

/* ================================================================ init (torch.nn.init) */

/* Each fills `t` in place without recording autograd (PyTorch's functions run under no_grad),
 * drawing from `gen` (NULL: the default generator). Returns YT_OK, or an error naming the
 * function: YT_ERR_DTYPE (t not floating), YT_ERR_VALUE (bad bounds; fewer than 2 dims where fans
 * are needed). NULL t gives its error code, keeping an earlier error. */
YT_API yt_status yt_init_uniform_(yt_tensor *t, double a, double b, yt_generator *gen);
YT_API yt_status yt_init_normal_(yt_tensor *t, double mean, double std, yt_generator *gen);
YT_API yt_status yt_init_constant_(yt_tensor *t, double value);
YT_API yt_status yt_init_zeros_(yt_tensor *t);
YT_API yt_status yt_init_ones_(yt_tensor *t);
/* U(-a, a), a = gain sqrt(6 / (fan_in + fan_out)). */
YT_API yt_status yt_init_xavier_uniform_(yt_tensor *t, double gain, yt_generator *gen);
/* N(0, std^2), std = gain sqrt(2 / (fan_in + fan_out)). */
YT_API yt_status yt_init_xavier_normal_(yt_tensor *t, double gain, yt_generator *gen);
/* U(-bound, bound), bound = gain sqrt(3 / fan), gain = calculate_gain(nonlinearity, a); mode
 * "fan_in" (NULL) or "fan_out"; nonlinearity as calculate_gain's (NULL: "leaky_relu"). */
YT_API yt_status yt_init_kaiming_uniform_(yt_tensor *t, double a, const char *mode,
                                          const char *nonlinearity, yt_generator *gen);
/* N(0, std^2), std = gain / sqrt(fan). */
YT_API yt_status yt_init_kaiming_normal_(yt_tensor *t, double a, const char *mode,
                                         const char *nonlinearity, yt_generator *gen);
/* fan_in = size(1) * receptive field, fan_out = size(0) * receptive field (t has >= 2 dims). */
YT_API yt_status yt_init_calculate_fans(yt_tensor *t, int64_t *fan_in, int64_t *fan_out);
/* PyTorch's recommended gain for "linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
 * "conv_transpose2d", "conv_transpose3d", "sigmoid" (1), "tanh" (5/3), "relu" (sqrt 2),
 * "leaky_relu" (sqrt(2 / (1 + param^2)), param the negative slope) and "selu" (3/4). Returns NAN
 * with YT_ERR_VALUE for other names. */
YT_API double yt_init_calculate_gain(const char *nonlinearity, double param);

#ifdef __cplusplus
}
#endif

#endif
