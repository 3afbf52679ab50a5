/* The CLI's layer table against the library's modules: for every layer kind (and the arguments
 * that change shapes: stride, padding, "same", dilation, groups, output padding, flatten's dims,
 * reshape's -1), the shape the config check infers must be the shape the built module really
 * produces on a batch, and the module must be the PyTorch class with PyTorch's parameter names. */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "config.h"
#include "model.h"
#include "test_util.h"

typedef struct layer_case {
    const char *layer; /* one item of model.layers, in flow style */
    int ndim;
    int64_t input[4];
    bool integer;
    const char *kind;  /* the module's class */
    const char *param; /* a parameter it must have ("" for none) */
} layer_case;

static const layer_case cases[] = {
    {"{linear: {out: 5}}", 1, {7}, false, "Linear", "0.weight"},
    {"{linear: {in_features: 7, out_features: 5, bias: false}}", 2, {3, 7}, false, "Linear", ""},
    {"{conv2d: {out: 4, kernel: [3, 2], stride: 2, padding: 1, dilation: [1, 2]}}",
     3,
     {3, 9, 8},
     false,
     "Conv2d",
     "0.bias"},
    {"{conv2d: {out: 4, kernel: 3, padding: same}}", 3, {2, 6, 5}, false, "Conv2d", "0.weight"},
    {"{conv2d: {out: 4, kernel: 3, groups: 2, bias: false}}", 3, {2, 6, 6}, false, "Conv2d", ""},
    {"{conv1d: {out: 3, kernel: 3, stride: 2, padding: 1}}",
     2,
     {2, 10},
     false,
     "Conv1d",
     "0.weight"},
    {"{conv1d: {out: 3, kernel: 4, padding: same}}", 2, {2, 9}, false, "Conv1d", "0.weight"},
    {"{conv_transpose2d: {out: 2, kernel: 3, stride: 2, padding: 1, output_padding: 1}}",
     3,
     {3, 5, 5},
     false,
     "ConvTranspose2d",
     "0.weight"},
    /* output_padding at or above the stride, below the dilation (PyTorch allows it) */
    {"{conv_transpose2d: {out: 2, kernel: 3, stride: [1, 2], padding: 1, output_padding: [1, 2], "
     "dilation: [2, 3]}}",
     3,
     {3, 5, 4},
     false,
     "ConvTranspose2d",
     "0.bias"},
    {"{max_pool2d: {kernel: 3, stride: 2, padding: 1}}", 3, {2, 7, 7}, false, "MaxPool2d", ""},
    {"{max_pool2d: 2}", 3, {2, 7, 9}, false, "MaxPool2d", ""},
    {"{avg_pool2d: {kernel: [2, 3]}}", 3, {2, 6, 7}, false, "AvgPool2d", ""},
    {"{adaptive_avg_pool2d: {output: [2, 3]}}", 3, {2, 7, 9}, false, "AdaptiveAvgPool2d", ""},
    {"batch_norm1d", 1, {5}, false, "BatchNorm1d", "0.running_mean"},
    {"batch_norm1d", 2, {5, 4}, false, "BatchNorm1d", "0.num_batches_tracked"},
    {"{batch_norm2d: {affine: false}}", 3, {3, 4, 4}, false, "BatchNorm2d", "0.running_var"},
    {"layer_norm", 2, {3, 6}, false, "LayerNorm", "0.weight"},
    {"{layer_norm: {shape: [3, 6]}}", 2, {3, 6}, false, "LayerNorm", "0.bias"},
    {"rms_norm", 1, {4}, false, "RMSNorm", "0.weight"},
    {"{group_norm: 2}", 3, {4, 3, 3}, false, "GroupNorm", "0.weight"},
    {"dropout", 1, {6}, false, "Dropout", ""},
    {"relu", 1, {6}, false, "ReLU", ""},
    {"{gelu: {approximate: tanh}}", 1, {6}, false, "GELU", ""},
    {"tanh", 1, {6}, false, "Tanh", ""},
    {"sigmoid", 1, {6}, false, "Sigmoid", ""},
    {"silu", 1, {6}, false, "SiLU", ""},
    {"{leaky_relu: 0.2}", 1, {6}, false, "LeakyReLU", ""},
    {"elu", 1, {6}, false, "ELU", ""},
    {"softmax", 2, {3, 6}, false, "Softmax", ""},
    {"{log_softmax: {dim: 1}}", 2, {3, 6}, false, "LogSoftmax", ""},
    {"flatten", 3, {2, 3, 4}, false, "Flatten", ""},
    {"{flatten: {start: 2}}", 3, {2, 3, 4}, false, "Flatten", ""},
    {"{flatten: {start_dim: 1, end_dim: 2}}", 3, {2, 3, 4}, false, "Flatten", ""},
    {"{reshape: {shape: [-1, 4]}}", 1, {12}, false, "Reshape", ""},
    {"{embedding: {num: 10, dim: 3, padding_idx: 0}}", 1, {5}, true, "Embedding", "0.weight"},
    {"{transformer_encoder_layer: {nhead: 2, dim_ff: 16}}",
     2,
     {5, 8},
     false,
     "TransformerEncoderLayer",
     "0.self_attn.in_proj_weight"},
};

Test(cli_model, every_layer_builds_the_shape_the_check_infers)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const layer_case *c = &cases[i];
        char text[512];
        snprintf(text, sizeof text,
                 "data: {dataset: npy, train: {inputs: x.npy, targets: y.npy}}\n"
                 "model: {layers: [%s]}\noptimizer: {name: sgd, lr: 0.1}\nepochs: 1\n",
                 c->layer);
        cfg_config cfg;
        cr_assert(cfg_parse(&cfg, "t.yaml", text, strlen(text)), "%s: %s", c->layer,
                  cfg.doc.diags[0]);
        cli_shape in = {.ndim = c->ndim, .integer = c->integer}, out;
        memcpy(in.d, c->input, sizeof c->input);
        cr_assert(layers_infer(&cfg.doc, cfg.model.layers, 1, &in, &out), "%s: %s", c->layer,
                  cfg.doc.diags[0]);

        char err[512];
        yt_module *m = model_build(&cfg, err, sizeof err);
        cr_assert_not_null(m, "%s: %s", c->layer, err);
        cr_assert_str_eq(yt_module_kind_name(yt_module_child(m, 0)), c->kind, "%s", c->layer);
        if (c->param[0]) {
            yt_named_tensors sd = YT_NAMED_TENSORS_INIT;
            cr_assert_eq(yt_module_state_dict(m, &sd), YT_OK);
            cr_assert_geq(yt_named_tensors_find(&sd, c->param), 0, "%s has no %s", c->layer,
                          c->param);
            yt_named_tensors_clear(&sd);
        }

        /* A batch of 2 through the module, in eval mode (dropout, batch statistics). */
        yt_module_train(m, false);
        yt_scope_begin();
        int64_t shape[5] = {2};
        memcpy(shape + 1, c->input, sizeof(int64_t) * (size_t)c->ndim);
        yt_tensor *x = yt_ones(shape, c->ndim + 1);
        if (c->integer)
            x = yt_to(x, YT_DTYPE_I64);
        yt_tensor *y = yt_module_forward(m, x);
        cr_assert_not_null(y, "%s: %s", c->layer, yt_errmsg());
        cr_assert_eq(yt_tensor_dim(y), out.ndim + 1, "%s: %d-D, inferred %d-D", c->layer,
                     yt_tensor_dim(y), out.ndim + 1);
        for (int d = 0; d < out.ndim; d++)
            cr_assert_eq(yt_tensor_size(y, d + 1), out.d[d],
                         "%s: size(%d) is %lld, the check inferred %lld", c->layer, d + 1,
                         (long long)yt_tensor_size(y, d + 1), (long long)out.d[d]);
        yt_scope_end();
        yt_module_release(m);
        cfg_free(&cfg);
    }
    YT_ASSERT_NO_LEAKS();
}
