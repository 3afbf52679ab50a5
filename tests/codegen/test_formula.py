"""derivatives.yaml formulas -> straight-line C: statements, temporaries and their releases, and
the values each backward node must save."""

import pytest
from helpers import registry, spec_error, yaml_text

from formula import compile_derivative
from lower import OpLowering
from parse import parse_derivatives, parse_ops

# The public ops the formulas below are written in.
OPS = yaml_text("""
    - func: mul.Tensor(Tensor self, Tensor other) -> Tensor
      family: pointwise
      dtypes: all
      broadcast: [self, other]
      pointwise: "self * other"
      doc: Product.
    - func: mul.Scalar(Tensor self, Scalar other) -> Tensor
      family: pointwise
      dtypes: all
      pointwise: "self * other"
      doc: Product with a number.
    - func: add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor
      family: pointwise
      dtypes: all
      pointwise: "self + alpha * other"
      doc: Sum with a number.
    - func: rsub.Scalar(Tensor self, Scalar other) -> Tensor
      family: pointwise
      dtypes: all
      pointwise: "other - self"
      doc: A number minus a tensor.
    - func: div.Scalar(Tensor self, Scalar other) -> Tensor
      family: pointwise
      dtypes: all
      result_dtype: floating
      pointwise: "self / other"
      doc: Division by a number.
    - func: neg(Tensor self) -> Tensor
      family: pointwise
      dtypes: all
      pointwise: "-self"
      doc: Negation.
    - func: exp(Tensor self) -> Tensor
      family: pointwise
      dtypes: floating
      pointwise: "exp(self)"
      doc: Exponential.
    - func: sigmoid(Tensor self) -> Tensor
      family: pointwise
      dtypes: floating
      pointwise: "1 / (1 + exp(-self))"
      doc: Logistic function.
    - func: mm(Tensor self, Tensor mat2) -> Tensor
      family: linalg
      dtypes: floating
      shape: [self.size(0), mat2.size(1)]
      dispatch: {cpu: yt__cpu_mm}
      doc: Matrix product.
    - func: t(Tensor self) -> Tensor
      family: shape
      dtypes: all
      view: yt__view_t
      doc: Transpose.
    - func: transpose(Tensor self, int dim0, int dim1) -> Tensor
      family: shape
      dtypes: all
      view: yt__view_transpose
      doc: Swaps two dims.
    - func: expand(Tensor self, int[] size) -> Tensor
      family: shape
      dtypes: all
      view: yt__view_expand
      doc: Broadcasts to size.
    - func: mean(Tensor self) -> Tensor
      family: reduce
      dtypes: floating
      shape: []
      dispatch: {cpu: yt__cpu_mean}
      doc: Mean.
    - func: sum.dim(Tensor self, int[] dim, bool keepdim=False) -> Tensor
      family: reduce
      dtypes: all
      shape: yt__shape_reduce(self, dim, keepdim)
      dispatch: {cpu: yt__cpu_sum_dim}
      doc: Sum over dims.
    - func: sum_to(Tensor self, int[] size) -> Tensor
      family: backward
      dtypes: all
      composite: yt__composite_sum_to
      doc: Sums broadcast dims away.
    - func: sum_backward(Tensor grad, int[] sizes, int[] dim, bool keepdim) -> Tensor
      family: backward
      dtypes: all
      composite: yt__composite_sum_backward
      doc: Gradient of sum.dim.
    """)


def compile_formulas(full_name: str, *formulas: str):
    """Compiles `formulas` ("self: grad * other", ...) as the derivatives.yaml entry of op
    `full_name`, written on line 1 (so formula i is on line i + 2), with `grad` as the formula of
    any tensor input they leave out; every other op is marked not_differentiable.
    Returns (op, compiled formulas, saved values)."""
    ops = parse_ops(OPS, "ops.yaml")
    reg = registry(ops)
    op = reg[full_name]
    given = [f.split(":")[0] for f in formulas]
    formulas += tuple(f"{t.name}: grad" for t in op.schema.tensor_args if t.name not in given)
    text = f"- name: {op.schema.text}\n" + "".join(f"  {f}\n" for f in formulas)
    for other in ops:
        if other is not op and other.impl != "composite":
            text += f"- name: {other.schema.text}\n  not_differentiable: true\n"
    parse_derivatives(text, ops, "derivatives.yaml")
    compiled, _, saved = compile_derivative(op, reg)
    return op, compiled, saved


def c_lines(full_name: str, formula: str) -> list:
    _, compiled, _ = compile_formulas(full_name, formula)
    return compiled[0].c_lines


def saved_fields(saved) -> list:
    return [(s.field, s.c_type, s.used_by) for s in saved]


# ---------------------------------------------------------------- straight-line C

def test_call_with_a_method_call_argument():
    assert c_lines("mm", "self: mm(grad, mat2.t())") == [
        'yt_tensor *mat2 = yt__saved_unpack(&node->mat2, &node->base, "mat2");',
        "yt_tensor *t0 = yt_t(mat2);",
        "out[0] = yt_mm(grads[0], t0);",
        "yt_release(t0);",
        "yt_release(mat2);",
        "if (out[0] == NULL)",
        "    return yt__last_status();",
    ]


def test_temporaries_are_named_in_order_and_released_in_reverse():
    assert c_lines("sigmoid", "self: grad * result * (1 - result)") == [
        'yt_tensor *result = yt__saved_unpack(&node->result, &node->base, "result");',
        "yt_tensor *t0 = yt_mul(grads[0], result);",
        "yt_tensor *t1 = yt_rsub(result, yt_int(1));",
        "out[0] = yt_mul(t0, t1);",
        "yt_release(t1);",
        "yt_release(t0);",
        "yt_release(result);",
        "if (out[0] == NULL)",
        "    return yt__last_status();",
    ]


def test_the_gradient_passed_through_is_retained():
    assert c_lines("mul.Scalar", "self: grad")[0] == "out[0] = yt_retain(grads[0]);"


def test_a_saved_input_returned_as_is_is_retained_then_released():
    assert c_lines("exp", "self: self")[:3] == [
        'yt_tensor *self = yt__saved_unpack(&node->self, &node->base, "self");',
        "out[0] = yt_retain(self);",
        "yt_release(self);",
    ]


@pytest.mark.parametrize("op, formula, line", [
    ("neg", "self: -grad", "out[0] = yt_neg(grads[0]);"),
    ("mul.Scalar", "self: grad * other", "out[0] = yt_mul_scalar(grads[0], node->other);"),
    ("mul.Scalar", "self: other * grad", "out[0] = yt_mul_scalar(grads[0], node->other);"),
    ("mul.Scalar", "self: grad * 2.5", "out[0] = yt_mul_scalar(grads[0], yt_float(2.5));"),
    ("mul.Scalar", "self: add(grad, 3)", "out[0] = yt_add_ex(grads[0], yt_int(3), yt_int(1));"),
    ("mul.Scalar", "self: add(grad, 3, alpha=other)", "out[0] = yt_add_ex(grads[0], yt_int(3), node->other);"),
    ("transpose", "self: transpose(grad, dim0, dim1)", "out[0] = yt_transpose(grads[0], node->dim0, node->dim1);"),
    ("sum.dim", "self: sum_backward(grad, self.shape, dim, keepdim)",
     "out[0] = yt_sum_backward(grads[0], node->self_shape.sizes, node->self_shape.dim, node->dim.v, node->dim.len, "
     "node->keepdim);"),
])
def test_arguments_in_c(op, formula, line):
    assert c_lines(op, formula)[0] == line


def test_overloads_are_chosen_by_operand_kinds():
    _, compiled, _ = compile_formulas("mul.Tensor", "self: grad * other", "other: grad * 2")
    assert compiled[0].c_lines[1] == "out[0] = yt_mul(grads[0], other);"  # mul.Tensor
    assert compiled[1].c_lines[0] == "out[1] = yt_mul_scalar(grads[0], yt_int(2));"  # mul.Scalar


# ---------------------------------------------------------------- saved values

def test_inputs_are_saved_for_the_other_gradient():
    op, compiled, saved = compile_formulas("mm", "self: mm(grad, mat2.t())", "mat2: mm(self.t(), grad)")
    assert [(f.input, f.index, str(f.loc)) for f in compiled] == [
        ("self", 0, "derivatives.yaml:2"), ("mat2", 1, "derivatives.yaml:3")]
    assert saved_fields(saved) == [("mat2", "yt_saved", ["self"]), ("self", "yt_saved", ["mat2"])]


def test_a_value_used_by_two_gradients_is_saved_once():
    _, _, saved = compile_formulas("mul.Tensor", "self: sum_to(grad * other, self.shape)",
                                   "other: sum_to(grad * other, other.shape)")
    assert saved_fields(saved) == [("other", "yt_saved", ["self", "other"]),
                                   ("self_shape", "yt_shape", ["self"]),
                                   ("other_shape", "yt_shape", ["other"])]


def test_shapes_are_saved_as_yt_shape_not_as_tensors():
    op, compiled, saved = compile_formulas("mul.Tensor", "self: sum_to(grad * other, self.shape)",
                                           "other: sum_to(grad * self, other.shape)")
    assert compiled[0].c_lines[:3] == [
        'yt_tensor *other = yt__saved_unpack(&node->other, &node->base, "other");',
        "yt_tensor *t0 = yt_mul(grads[0], other);",
        "out[0] = yt_sum_to(t0, node->self_shape.sizes, node->self_shape.dim);",
    ]
    assert ("self_shape", "yt_shape", ["self"]) in saved_fields(saved)
    record = OpLowering(op, registry([op] + parse_ops(OPS, "ops.yaml"))).node_desc()["record_lines"]
    assert "yt__shape_of(&node->self_shape, self);" in record


def test_result_is_saved_as_an_output():
    op, _, saved = compile_formulas("exp", "self: grad * result")
    assert saved_fields(saved) == [("result", "yt_saved", ["self"])]
    record = OpLowering(op, registry(parse_ops(OPS, "ops.yaml"))).node_desc()["record_lines"]
    assert record == [
        "yt__node_set_edge(&node->base, 0, self);",
        "if (status == YT_OK && (node->base.needs_grad[0]))",
        "    status = yt__saved_init(&node->result, result, true, 0);",
    ]


def test_saved_inputs_are_not_outputs():
    op, _, _ = compile_formulas("mm", "self: mm(grad, mat2.t())", "mat2: mm(self.t(), grad)")
    record = OpLowering(op, registry(parse_ops(OPS, "ops.yaml"))).node_desc()["record_lines"]
    assert "    status = yt__saved_init(&node->mat2, mat2, false, 0);" in record
    assert "if (status == YT_OK && (node->base.needs_grad[1]))" in record


def test_scalars_ints_lists_and_bools_are_saved_by_value():
    _, _, saved = compile_formulas("mul.Scalar", "self: grad * other")
    assert saved_fields(saved) == [("other", "yt_scalar", ["self"])]
    _, _, saved = compile_formulas("transpose", "self: transpose(grad, dim0, dim1)")
    assert saved_fields(saved) == [("dim0", "int64_t", ["self"]), ("dim1", "int64_t", ["self"])]
    op, _, saved = compile_formulas("sum.dim", "self: sum_backward(grad, self.shape, dim, keepdim)")
    assert saved_fields(saved) == [("self_shape", "yt_shape", ["self"]), ("dim", "yt_int_list", ["self"]),
                                   ("keepdim", "bool", ["self"])]
    record = OpLowering(op, registry(parse_ops(OPS, "ops.yaml"))).node_desc()["record_lines"]
    assert record[-4:] == ["node->dim.len = dim_len;", "for (int i = 0; i < dim_len; i++)",
                           "    node->dim.v[i] = dim[i];", "node->keepdim = keepdim;"]


def test_numel_is_saved_as_an_int():
    _, compiled, saved = compile_formulas("mean", "self: expand(grad, self.shape) / self.numel")
    assert saved_fields(saved) == [("self_shape", "yt_shape", ["self"]), ("self_numel", "int64_t", ["self"])]
    assert compiled[0].c_lines[:2] == [
        "yt_tensor *t0 = yt_expand(grads[0], node->self_shape.sizes, node->self_shape.dim);",
        "out[0] = yt_div(t0, yt_int(node->self_numel));",
    ]


def test_nothing_is_saved_when_the_formula_needs_only_grad():
    _, _, saved = compile_formulas("neg", "self: -grad")
    assert saved == []


# ---------------------------------------------------------------- errors, at the formula's line

@pytest.mark.parametrize("op, formula, message", [
    ("mul.Tensor", "self: grad * selff",
     "mul.Tensor: formula for 'self': unknown name 'selff' (arguments: self, other; also grad, result)"),
    ("mul.Tensor", "self: mull(grad, other)", "mul.Tensor: formula for 'self': unknown op 'mull'"),
    ("mul.Tensor", "self: sum_to(grad,, x)", "mul.Tensor: formula for 'self': syntax error at column 13: invalid syntax"),
    ("mul.Tensor", "self: grad *", "mul.Tensor: formula for 'self': syntax error at the end: invalid syntax"),
    ("mul.Tensor", "self: self.numel", "mul.Tensor: formula for 'self': must evaluate to a tensor, got a int"),
    ("mul.Tensor", "self: sum_to(grad, self.size)",
     "mul.Tensor: formula for 'self': unknown attribute '.size' (known: shape, numel, dim, dtype)"),
    ("mul.Tensor", "self: sum_to(grad, grad.shape)",
     "mul.Tensor: formula for 'self': 'grad.shape': 'grad' is not a tensor argument"),
    ("mul.Tensor", "self: grad @ other", "mul.Tensor: formula for 'self': unsupported operator MatMult"),
    ("mul.Tensor", "self: grad / other",
     "mul.Tensor: formula for 'self': operator Div needs op 'div.Tensor', which ops.yaml does not declare"),
    ("mul.Tensor", "self: self.shape * grad",
     "mul.Tensor: formula for 'self': operator Mult is not defined for a intlist and a tensor"),
    ("mul.Tensor", "self: -self.numel", "mul.Tensor: formula for 'self': unary minus applies to tensors only"),
    ("mul.Tensor", "self: grad[0]", "mul.Tensor: formula for 'self': unsupported expression 'grad[0]'"),
    ("mul.Tensor", "self: grad < other < grad",
     "mul.Tensor: formula for 'self': only single comparisons with <, > or == are supported"),
    ("mm", "self: mm(grad)",
     "mm: formula for 'self': no overload of 'mm' accepts these arguments (mm: missing argument 'mat2')"),
    ("mm", "self: mm(grad, mat2, grad)",
     "mm: formula for 'self': no overload of 'mm' accepts these arguments (mm: takes at most 2 positional arguments)"),
    ("mm", "self: mm(grad, mat3=mat2)",
     "mm: formula for 'self': no overload of 'mm' accepts these arguments (mm: no argument 'mat3')"),
    ("transpose", "self: transpose(grad, 0.5, dim1)",
     "transpose: formula for 'self': no overload of 'transpose' accepts these arguments "
     "(transpose: argument 'dim0' (int) cannot take a float_lit)"),
])
def test_formula_errors(op, formula, message):
    assert spec_error(compile_formulas, op, formula) == f"derivatives.yaml:2: {message}"


# ---------------------------------------------------------------- fused: every gradient from one call

FUSED_OPS = """\
    - func: norm(Tensor input, Tensor weight, float eps) -> Tensor
      family: nn
      dtypes: floating
      dispatch: {cpu: yt__cpu_norm}
      doc: A norm.
    - func: norm_input_backward(Tensor grad, Tensor input, Tensor weight, float eps) -> Tensor
      family: backward
      dtypes: floating
      dispatch: {cpu: yt__cpu_norm_input_backward}
      doc: d input.
    - func: norm_weight_backward(Tensor grad, Tensor input, float eps) -> Tensor
      family: backward
      dtypes: floating
      dispatch: {cpu: yt__cpu_norm_weight_backward}
      doc: d weight.
    - func: norm_backward(Tensor grad, Tensor input, Tensor weight, float eps, bool input_grad, bool weight_grad) -> (Tensor d_input, Tensor d_weight)
      family: backward
      dtypes: floating
      dispatch: {cpu: yt__cpu_norm_backward}
      doc: Both.
    """


def fused_entry(fused: str) -> str:
    return f"""\
        - name: norm(Tensor input, Tensor weight, float eps) -> Tensor
          input: norm_input_backward(grad, input, weight, eps)
          weight: norm_weight_backward(grad, input, eps)
          fused: {fused}
        - name: norm_input_backward(Tensor grad, Tensor input, Tensor weight, float eps) -> Tensor
          not_differentiable: true
        - name: norm_weight_backward(Tensor grad, Tensor input, float eps) -> Tensor
          not_differentiable: true
        - name: norm_backward(Tensor grad, Tensor input, Tensor weight, float eps, bool input_grad, bool weight_grad) -> (Tensor d_input, Tensor d_weight)
          not_differentiable: true
        """


def test_fused_formula_gives_every_gradient_from_one_call():
    from helpers import load
    ops = load(FUSED_OPS, fused_entry("norm_backward(grad, input, weight, eps, needs_grad(input), needs_grad(weight))"))
    compiled, fused, saved = compile_derivative(ops[0], registry(ops))
    assert not fused.partial
    assert fused.c_lines == [
        'yt_tensor *input = yt__saved_unpack(&node->input, &node->base, "input");',
        'yt_tensor *weight = yt__saved_unpack(&node->weight, &node->base, "weight");',
        "yt_tensor *fused[2] = {NULL, NULL};",
        "yt_status fused_status = yt_norm_backward(grads[0], input, weight, node->eps, "
        "node->base.needs_grad[0], node->base.needs_grad[1], &fused[0], &fused[1]);",
        "yt_release(weight);",
        "yt_release(input);",
        "if (fused_status != YT_OK)",
        "    return fused_status;",
        "if (node->base.needs_grad[0])",
        "    out[0] = fused[0];",
        "else",
        "    yt_release(fused[0]);",
        "if (node->base.needs_grad[1])",
        "    out[1] = fused[1];",
        "else",
        "    yt_release(fused[1]);",
        "return YT_OK;",
    ]
    assert len(compiled) == 2  # the per-input formulas stay, for backward with a graph
    # what the fused call reads is saved for either gradient
    assert [(s.field, s.used_by) for s in saved] == [("input", ["input", "weight"]),
                                                      ("weight", ["input", "weight"]),
                                                      ("eps", ["input", "weight"])]


@pytest.mark.parametrize("fused, message", [
    ("norm_backward(grad, input, weight, eps, True, True, grad)",
     "norm: formula for 'fused': no overload of 'norm_backward' accepts these arguments "
     "(norm_backward: takes at most 6 positional arguments)"),
    ("norm_backward(grad, input, weight, eps, needs_grad(eps), True)",
     "norm: formula for 'fused': needs_grad(eps): 'eps' is not a tensor argument of norm"),
    ("grad", "norm: formula for 'fused': fused must be one call of an op"),
])
def test_fused_formula_errors(fused, message):
    from helpers import load
    ops = load(FUSED_OPS, fused_entry(fused))
    assert spec_error(compile_derivative, ops[0], registry(ops)) == f"derivatives.yaml:4: {message}"


def test_a_fused_call_may_cover_the_first_inputs_only():
    from helpers import load
    ops = load(FUSED_OPS, fused_entry("norm_input_backward(grad, input, weight, eps)"))
    compiled, fused, _ = compile_derivative(ops[0], registry(ops))
    assert fused.partial
    assert fused.c_lines[2:4] == ["yt_tensor *fused[1] = {NULL};",
                                  "fused[0] = yt_norm_input_backward(grads[0], input, weight, node->eps);"]
    assert fused.c_lines[-1] == "fused_ran = true;"
    assert compiled[0].cond == "!fused_ran && node->base.needs_grad[0]"
    assert compiled[1].cond == "node->base.needs_grad[1]"  # the weight keeps its formula
