"""ops.yaml / derivatives.yaml -> model: schema parsing, and every error the parser reports, each
with its exact FILE:LINE location and message."""

import pytest
from helpers import load, spec_error, yaml_text

from lower import CheckCompiler
from model import Loc
from parse import load_yaml, parse_derivatives, parse_ops, parse_schema

LOC = Loc("ops.yaml", 7)


# ---------------------------------------------------------------- schema strings

def test_schema_with_overload_and_kwarg_only_scalar_default():
    s = parse_schema("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", LOC)
    assert (s.name, s.overload, s.full_name, s.returns) == ("add", "Tensor", "add.Tensor", "Tensor")
    assert [(a.name, a.kind, a.kwarg_only) for a in s.args] == [
        ("self", "tensor", False), ("other", "tensor", False), ("alpha", "scalar", True)]
    alpha = s.arg("alpha")
    assert (alpha.has_default, alpha.default) == (True, 1)
    assert [a.name for a in s.tensor_args] == ["self", "other"]


def test_schema_without_overload_or_arguments():
    s = parse_schema("zeros_like() -> Tensor", LOC)
    assert (s.name, s.overload, s.full_name, s.args) == ("zeros_like", "", "zeros_like", ())


@pytest.mark.parametrize("arg, kind, type_text, optional, default", [
    ("int dim=0", "int", "int", False, 0),
    ("int step=-2", "int", "int", False, -2),
    ("int? start=None", "int", "int?", True, None),
    ("int[] dim=[]", "intlist", "int[]", False, []),
    ("int[2] size", "intlist", "int[2]", False, None),
    ("SymInt[] size", "intlist", "SymInt[]", False, None),
    ("bool keepdim=False", "bool", "bool", False, False),
    ("float eps=1e-05", "float", "float", False, 1e-05),
    ("float p=1", "float", "float", False, 1.0),
    ("Scalar alpha=1.5", "scalar", "Scalar", False, 1.5),
    ("Scalar fill=True", "scalar", "Scalar", False, True),
    ("ScalarType? dtype=None", "dtype", "ScalarType?", True, None),
    ("Device? device=None", "device", "Device?", True, None),
    ('str reduction="mean"', "str", "str", False, "mean"),
    ("str approximate='none'", "str", "str", False, "none"),
    ("str? rounding_mode=None", "str", "str?", True, None),
    ("str mode", "str", "str", False, None),
    ("Scalar? min=None", "scalar", "Scalar?", True, None),
    ("Tensor? bias=None", "tensor", "Tensor?", True, None),
    ("Tensor? weight", "tensor", "Tensor?", True, None),
    ("bool? stable=None", "bool", "bool?", True, None),
    ("float? eps=None", "float", "float?", True, None),
    ("Generator? generator=None", "generator", "Generator?", True, None),
])
def test_schema_argument_types_and_defaults(arg, kind, type_text, optional, default):
    a = parse_schema(f"f(Tensor self, {arg}) -> Tensor", LOC).args[1]
    assert (a.kind, a.type_text, a.optional, a.default) == (kind, type_text, optional, default)
    assert a.has_default == ("=" in arg)
    assert type(a.default) is type(default)


def test_schema_kwarg_only_arguments_may_follow_defaults_without_one():
    s = parse_schema("f(Tensor self, int a=1, *, int b) -> Tensor", LOC)
    assert [(a.name, a.kwarg_only, a.has_default) for a in s.args] == [
        ("self", False, False), ("a", False, True), ("b", True, False)]


@pytest.mark.parametrize("schema, message", [
    ("add(Tensor self", "cannot parse schema 'add(Tensor self': expected name[.overload](args) -> Tensor"),
    ("Add(Tensor self) -> Tensor", "cannot parse schema 'Add(Tensor self) -> Tensor': expected name[.overload](args) -> Tensor"),
    ("f(Tensor self) -> int", "f: returns must be 'Tensor', 'Tensor[]' or '(Tensor a, Tensor b, ...)', got 'int'"),
    ("f(Tensor self, *, *, int a=1) -> Tensor", "f: '*' appears twice"),
    ("f(Tensor self, Tensor) -> Tensor", "f: cannot parse argument 'Tensor'"),
    ("f(Tensor self, string name) -> Tensor", "f: unknown type 'string' of argument 'name'"),
    ("f(Tensor self, str name=mean) -> Tensor", "f: argument 'name': a str default must be a quoted string or None, got mean"),
    ("f(Tensor self, Scalar? s=1) -> Tensor", "f: argument 's' (Scalar?) may only default to None (its C form is a pointer, NULL meaning None)"),
    ("f(Tensor self, bool? s=True) -> Tensor", "f: argument 's' (bool?) may only default to None (its C form is a pointer, NULL meaning None)"),
    ("f(Tensor self, Generator generator) -> Tensor", "f: a Generator argument must be written 'Generator? generator=None'"),
    ("f(Tensor self, Generator? generator) -> Tensor", "f: a Generator argument must be written 'Generator? generator=None'"),
    ("f(Tensor result) -> Tensor", "f: argument name 'result' is reserved for generated locals"),
    ("f(Tensor self, int self) -> Tensor", "f: duplicate argument 'self'"),
    ("f(Tensor self, int dim=None) -> Tensor", "f: argument 'dim' defaults to None but its type is not optional"),
    ("f(Tensor self, ScalarType dtype=1) -> Tensor", "f: argument 'dtype' may only default to None"),
    ("f(Tensor self, int a=1, int b) -> Tensor", "f: argument 'b' without default follows one with a default"),
    ("f(Tensor self, Device? device=0) -> Tensor", "f: argument 'device' may only default to None"),
    ("f(Tensor self, int a=True) -> Tensor", "f: argument 'a': default True does not fit its type"),
    ("f(Tensor self, int a=1.5) -> Tensor", "f: argument 'a': default 1.5 does not fit its type"),
    ("f(Tensor self, int a=[]) -> Tensor", "f: argument 'a': a list default needs an int[] argument"),
    ("f(Tensor self, int[] a=[1]) -> Tensor", "f: argument 'a': only the empty list [] is supported as a default"),
    ("f(Tensor self, int a=one) -> Tensor", "f: argument 'a': bad default 'one'"),
    ("f(Tensor self, float a=inf) -> Tensor", "f: argument 'a': bad default 'inf'"),
    ("f(Tensor self, bool a=1) -> Tensor", "f: argument 'a': default 1 does not fit its type"),
])
def test_schema_errors(schema, message):
    assert spec_error(parse_schema, schema, LOC) == f"ops.yaml:7: {message}"


# ---------------------------------------------------------------- ops.yaml entries

def test_entry_fields_and_c_names():
    ops = load("""
        - func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
          family: pointwise
          variants: [function, inplace, out]
          dtypes: {self: all, other: floating}
          broadcast: [self, other]
          promote: [self, other, alpha]
          pointwise: "self + alpha * other"
          doc: Adds.

        - func: add.Scalar(Tensor self, Scalar other) -> Tensor
          family: pointwise
          dtypes: all
          pointwise: "self + other"
          doc: Adds a number.

        - func: sum.dim(Tensor self, int[] dim, bool keepdim=False) -> Tensor
          family: reduce
          dtypes: floating
          dims: [dim]
          shape: yt__shape_reduce(self, dim, keepdim)
          dispatch: {cpu: yt__cpu_sum_dim}
          samples:
            - {self: [2, 3], dim: [1]}
            - {self: {shape: [3, 2], dtype: f32, transpose: true}, dim: [0], keepdim: true}
          doc: Sums.
        """, """
        - name: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
          self: grad
          other: grad * alpha
        - name: add.Scalar(Tensor self, Scalar other) -> Tensor
          self: grad
        - name: sum.dim(Tensor self, int[] dim, bool keepdim=False) -> Tensor
          not_differentiable: true
        """)
    add, add_scalar, sum_dim = ops
    assert [op.c_name for op in ops] == ["add", "add_scalar", "sum"]
    assert [str(op.loc) for op in ops] == ["ops.yaml:1", "ops.yaml:10", "ops.yaml:16"]
    assert add.variants == ["function", "inplace", "out"]
    assert add.dtypes["self"][0] == "bool" and add.dtypes["other"] == ["f16", "bf16", "f32", "f64"]
    assert (add.impl, add.pointwise, str(add.pointwise_loc)) == ("pointwise", "self + alpha * other", "ops.yaml:7")
    assert add.promote == ["self", "other", "alpha"]
    assert add_scalar.variants == ["function"] and add_scalar.broadcast == []
    assert (sum_dim.impl, sum_dim.dispatch, sum_dim.dims) == ("kernel", {"cpu": "yt__cpu_sum_dim"}, {"dim": "self.dim"})
    assert sum_dim.samples == [{"self": {"shape": [2, 3]}, "dim": [1]},
                               {"self": {"shape": [3, 2], "dtype": "f32", "transpose": True}, "dim": [0],
                                "keepdim": True}]
    assert [(f.input, f.source, str(f.loc)) for f in add.derivative.formulas] == [
        ("self", "grad", "derivatives.yaml:2"), ("other", "grad * alpha", "derivatives.yaml:3")]
    assert sum_dim.derivative.not_differentiable


def test_overload_gets_the_bare_name_when_first():
    ops = parse_ops(yaml_text("""
        - func: pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor
          family: pointwise
          dtypes: floating
          pointwise: "pow(self, exponent)"
          doc: Power.
        - func: pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor
          family: pointwise
          dtypes: floating
          broadcast: [self, exponent]
          pointwise: "pow(self, exponent)"
          doc: Power.
        """))
    assert [op.c_name for op in ops] == ["pow", "pow_tensor_tensor"]


def test_empty_file_has_no_ops():
    assert parse_ops("", "ops.yaml") == []
    assert parse_ops("# nothing yet\n", "ops.yaml") == []


# A valid entry, for the errors below to break one line of.
NEG = """\
- func: neg(Tensor self) -> Tensor
  family: pointwise
  dtypes: all
  pointwise: "-self"
  doc: Negates.
"""


def neg_with(*extra: str, drop: str = "") -> str:
    """NEG without the line starting with `drop`, plus `extra` lines (the first lands on line 6,
    or line 5 when a line was dropped)."""
    lines = [ln for ln in NEG.splitlines() if not (drop and ln.startswith(drop))]
    return "\n".join(lines + list(extra)) + "\n"


@pytest.mark.parametrize("text, error", [
    # the file and its entries
    ("foo: bar\n", "ops.yaml:1: the file must be a list of operator entries"),
    ("- just a string\n", "ops.yaml:1: each entry must be a mapping starting with 'func:'"),
    ("- family: pointwise\n  doc: x\n", "ops.yaml:1: entry has no 'func' key"),
    (neg_with("  famly: pointwise"), "ops.yaml:6: unknown key 'famly' (did you mean 'family'?)"),
    (neg_with("  tags: [pointwise]"), "ops.yaml:6: unknown key 'tags'"),
    (neg_with("  family: shape"), "ops.yaml:6: duplicate key 'family'"),
    ("- func: [neg]\n  family: pointwise\n", "ops.yaml:1: 'func' must be a schema string"),
    # family, doc, variants
    (neg_with(drop="  family"), "ops.yaml:1: neg: missing 'family' (pointwise, reduce, linalg, shape, index, nn, loss, factory, backward)"),
    (neg_with(drop="  family") + "  family: pointwize\n",
     "ops.yaml:5: neg: 'family' must be one of pointwise, reduce, linalg, shape, index, nn, loss, factory, backward, "
     "got 'pointwize' (did you mean 'pointwise'?)"),
    (neg_with(drop="  doc"), "ops.yaml:1: neg: missing 'doc'"),
    (neg_with(drop="  doc") + "  doc: [a, b]\n", "ops.yaml:5: neg: 'doc' must be a string"),
    (neg_with("  variants: function"), "ops.yaml:6: neg: 'variants' must be a list"),
    (neg_with("  variants: [function, inplce]"), "ops.yaml:6: neg: unknown variant 'inplce' (did you mean 'inplace'?)"),
    (neg_with("  variants: [out]"), "ops.yaml:6: neg: 'variants' must include 'function'"),
    # the implementation
    (neg_with(drop="  pointwise"),
     "ops.yaml:1: neg: exactly one of pointwise, dispatch, view, composite is required"),
    (neg_with("  dispatch: {cpu: yt__cpu_neg}"),
     "ops.yaml:1: neg: exactly one of pointwise, dispatch, view, composite is required (got pointwise, dispatch)"),
    (neg_with("  dispatch: yt__cpu_neg", drop="  pointwise"),
     "ops.yaml:5: neg: 'dispatch' must map devices (cpu, cuda) to kernel names"),
    (neg_with("  dispatch: {cpu: yt__cpu_neg, gpu: yt__gpu_neg}", drop="  pointwise"),
     "ops.yaml:5: neg: unknown device 'gpu' in dispatch (did you mean 'cpu'?)"),
    (neg_with("  dispatch: {cpu: cpu_neg}", drop="  pointwise"),
     "ops.yaml:5: neg: kernel name must look like yt__cpu_<op>, got 'cpu_neg'"),
    (neg_with("  composite: neg_impl", drop="  pointwise"),
     "ops.yaml:5: neg: 'composite' must name a yt__ function, got 'neg_impl'"),
    (neg_with("  composite: true", drop="  pointwise"), "ops.yaml:5: neg: 'composite' must be a string"),
    (neg_with("  variants: [function, out]", "  composite: yt__composite_neg", drop="  pointwise"),
     "ops.yaml:5: neg: composite ops have only the function variant"),
    (neg_with("  variants: [function, out]", "  view: yt__view_neg", drop="  pointwise"),
     "ops.yaml:5: neg: view ops have only the function variant"),
    ("- func: arange(int n) -> Tensor\n  family: factory\n  view: yt__view_arange\n  doc: x\n",
     "ops.yaml:1: arange: a view op's first argument must be the tensor it views"),
    ("- func: full(int n) -> Tensor\n  family: factory\n  pointwise: \"n\"\n  doc: x\n",
     "ops.yaml:1: full: a pointwise op needs a tensor argument"),
    ("- func: ones(int[] size) -> Tensor\n  family: factory\n  dispatch: {cpu: yt__cpu_ones}\n  doc: x\n",
     "ops.yaml:1: ones: a kernel op without tensor arguments must declare 'shape'"),
    ("- func: f(Tensor other, Tensor self) -> Tensor\n  family: pointwise\n  variants: [function, inplace]\n"
     "  dtypes: all\n  broadcast: [other, self]\n  pointwise: \"self\"\n  doc: x\n",
     "ops.yaml:3: f: an in-place variant needs 'Tensor self' as first argument"),
    # dtypes
    (neg_with(drop="  dtypes"), "ops.yaml:1: neg: missing 'dtypes' (the dtype set its tensors accept)"),
    (neg_with(drop="  dtypes") + "  dtypes: floats\n",
     "ops.yaml:5: neg: unknown dtype set 'floats' (did you mean 'floating'?); known: all, all_but_bool, floating, "
     "integral, bool"),
    (neg_with(drop="  dtypes") + "  dtypes: {self: all, other: all}\n",
     "ops.yaml:5: neg: dtypes names 'other', which is not a tensor argument"),
    ("- func: f(Tensor self, Tensor other) -> Tensor\n  family: pointwise\n  dtypes: {self: all}\n"
     "  broadcast: [self, other]\n  pointwise: \"self\"\n  doc: x\n",
     "ops.yaml:3: f: dtypes gives no set for tensor argument 'other'"),
    # argument lists
    (neg_with("  broadcast: self"), "ops.yaml:6: neg: 'broadcast' must be a list of argument names"),
    (neg_with("  broadcast: [slf]"), "ops.yaml:6: neg: 'broadcast' names unknown argument 'slf' (did you mean 'self'?)"),
    ("- func: f(Tensor self, int n) -> Tensor\n  family: pointwise\n  dtypes: all\n  promote: [self, n]\n"
     "  pointwise: \"self\"\n  doc: x\n",
     "ops.yaml:4: f: 'promote' entry 'n' must be a tensor, Tensor[] or scalar argument"),
    ("- func: f(Tensor self, Tensor other) -> Tensor\n  family: pointwise\n  dtypes: all\n"
     "  pointwise: \"self * other\"\n  doc: x\n",
     "ops.yaml:1: f: a pointwise op with several tensors must declare 'broadcast'"),
    # result_dtype, dims, checks, shape
    (neg_with("  result_dtype: float32"),
     "ops.yaml:6: neg: result_dtype must be a dtype name, 'floating', a ScalarType argument or a yt__ function "
     "call, got 'float32'"),
    (neg_with("  result_dtype: yt__dtype_of(self, dtype)"),
     "ops.yaml:6: neg: 'yt__dtype_of(self, dtype)' names unknown argument 'dtype'"),
    (neg_with("  dims: dim"), "ops.yaml:6: neg: 'dims' must be a list of dim arguments or a mapping to their rank"),
    (neg_with("  dims: [self]"), "ops.yaml:6: neg: 'dims' entry 'self' must be an int or int[] argument"),
    ("- func: f(Tensor self, int d) -> Tensor\n  family: shape\n  dtypes: all\n  dims: {d: self.rank}\n"
     "  view: yt__view_f\n  doc: x\n",
     "ops.yaml:4: f: rank of 'd' must be 'TENSOR.dim' or 'TENSOR.dim + 1' (TENSORS[0].dim for a Tensor[])"),
    ("- func: f(Tensor self, int d) -> Tensor\n  family: shape\n  dtypes: all\n  dims: {d: other.dim}\n"
     "  view: yt__view_f\n  doc: x\n",
     "ops.yaml:4: f: rank of 'd' names 'other', which is not a tensor argument"),
    (neg_with("  checks: self.dim == 2"), "ops.yaml:6: neg: 'checks' must be a list"),
    (neg_with("  checks:", "    - self.dim == 2"),
     "ops.yaml:7: neg: each check needs exactly 'check' (an expression) and 'bad' (arguments that violate it, "
     "for the generated error test)"),
    (neg_with("  checks:", "    - {check: [1], bad: {self: [3]}}"), "ops.yaml:7: neg: 'check' must be an expression string"),
    (neg_with("  shape: [2, self.size(0)]"), "ops.yaml:6: neg: shape list entries must be expressions (strings)"),
    (neg_with("  shape: 3"), "ops.yaml:6: neg: bad 'shape'"),
    (neg_with("  shape: self"), "ops.yaml:6: neg: shape names 'self', which is not an int[] argument"),
    (neg_with("  shape: self.shape"), "ops.yaml:6: neg: shape must be a list, an int[] argument or a yt__ function call"),
    (neg_with("  shape: yt__shape_of(self, size)"), "ops.yaml:6: neg: 'yt__shape_of(self, size)' names unknown argument 'size'"),
    (neg_with("  domain: negative"),
     "ops.yaml:6: neg: 'domain' must be one of positive, nonzero, unit, got 'negative'"),
    # samples (the same rules hold for a check's `bad:` arguments)
    (neg_with("  samples: {self: [2]}"), "ops.yaml:6: neg: 'samples' must be a list"),
    (neg_with("  samples:", "    - [2, 3]"), "ops.yaml:7: neg: a sample must map argument names to values"),
    (neg_with("  samples:", "    - {self: [2], other: [2]}"), "ops.yaml:7: neg: sample names unknown argument 'other'"),
    (neg_with("  samples:", "    - {self: [-1]}"),
     "ops.yaml:7: neg: tensor sample 'self' must be a size list or {shape: [...], dtype: NAME, transpose: BOOL, "
     "step: N, high: N, no_grad: BOOL}"),
    (neg_with("  samples:", "    - {self: {shape: [2], dtype: f99}}"), "ops.yaml:7: neg: unknown dtype 'f99' in sample"),
    (neg_with("  samples:", "    - {self: {shape: [2], transpose: true}}"), "ops.yaml:7: neg: 'transpose' needs at least 2 dims"),
    *[(neg_with("  samples:", f"    - {{self: {spec}}}"),
       "ops.yaml:7: neg: 'step' of tensor sample 'self' (every Nth element along the last dim) must be an int "
       ">= 2, on a tensor of at least 1 dim that is not transposed")
      for spec in ("{shape: [2], step: 1}", "{shape: [2], step: true}", "{shape: [2], step: 2.5}",
                   "{shape: [], step: 2}", "{shape: [2, 3], step: 2, transpose: true}")],
    (neg_with("  samples:", "    - {}"), "ops.yaml:7: neg: sample gives no value for argument 'self', which has no default"),
    (neg_with("  checks:", "    - check: self.dim == 2", "      bad: {self: [3], self2: [1]}"),
     "ops.yaml:8: neg: sample names unknown argument 'self2' (did you mean 'self'?)"),
    # the file as a whole
    (NEG + NEG.replace("- func: neg(Tensor self)", "- func: neg(Tensor self)"),
     "ops.yaml:6: duplicate operator 'neg' (first defined at line 1)"),
    (NEG + NEG.replace("neg(", "neg.Int(") + NEG.replace("neg(", "neg_int("),
     "ops.yaml:11: 'neg_int' maps to C name yt_neg_int, already used at line 6"),
    (neg_with("  variants: [function, inplace]") + NEG.replace("neg(", "neg_("),
     "ops.yaml:7: 'neg_' generates yt_neg_(), which 'neg' at line 1 also generates"),
])
def test_ops_yaml_errors(text, error):
    assert spec_error(parse_ops, text, "ops.yaml") == error


@pytest.mark.parametrize("kind, value, error", [
    ("int[] dim", "{self: [2], dim: 1}", "sample value of 'dim' must be a list of ints"),
    ("int n", "{self: [2], n: 1.5}", "sample value of 'n' must be an int"),
    ("int n", "{self: [2], n: true}", "sample value of 'n' must be an int"),
    ("bool b", "{self: [2], b: 1}", "sample value of 'b' must be true or false"),
    ("Scalar s", "{self: [2], s: one}", "sample value of 's' must be a number"),
    ("ScalarType t", "{self: [2], t: float}", "sample value of 't' must be a dtype name"),
    ("Device? d=None", "{self: [2], d: cpu}", "samples cannot set 'd'"),
])
def test_sample_value_errors(kind, value, error):
    text = yaml_text(f"""
        - func: f(Tensor self, {kind}) -> Tensor
          family: shape
          dtypes: all
          view: yt__view_f
          samples:
            - {value}
          doc: x
        """)
    assert spec_error(parse_ops, text, "ops.yaml") == f"ops.yaml:6: f: {error}"


# ---------------------------------------------------------------- YAML itself

@pytest.mark.parametrize("text, error", [
    ("- func: neg(Tensor self) -> Tensor\n  doc: [unclosed\n",
     "ops.yaml:3: invalid YAML: did not find expected ',' or ']' (while parsing a flow sequence at line 2)"),
    ("- func: neg(Tensor self) -> Tensor\n  family: pointwise\n doc: x\n",
     "ops.yaml:3: invalid YAML: did not find expected '-' indicator (while parsing a block collection at line 1)"),
    ("- func: neg(Tensor self) -> Tensor\n\tfamily: pointwise\n",
     "ops.yaml:2: invalid YAML: found a tab character that violates indentation "
     "(while scanning a plain scalar at line 1)"),
    ("- func: neg(Tensor self) -> Tensor\n  doc: \"unterminated\n",
     "ops.yaml:3: invalid YAML: found unexpected end of stream (while scanning a quoted scalar at line 2)"),
    ("- func: neg(Tensor self) -> Tensor\n  doc: a: b\n",
     "ops.yaml:2: invalid YAML: mapping values are not allowed in this context"),
    ("- func: neg\n  1: x\n", "ops.yaml:2: mapping keys must be strings"),
    ("- func: neg\n  doc: !custom x\n",
     "ops.yaml:2: invalid YAML value 'x': could not determine a constructor for the tag '!custom'"),
])
def test_malformed_yaml(text, error):
    assert spec_error(parse_ops, text, "ops.yaml") == error


def test_yaml_scalars_resolve_as_yaml_says():
    root = load_yaml("- {a: 0x10, b: 1_000, c: .inf, d: ~, e: no, f: '7', g: 1.5}\n", "ops.yaml")
    values = {k: v.value for k, v in root.value[0].value.items()}
    assert values == {"a": 16, "b": 1000, "c": float("inf"), "d": None, "e": False, "f": "7", "g": 1.5}


# ---------------------------------------------------------------- derivatives.yaml

MUL = """\
- func: mul(Tensor self, Tensor other) -> Tensor
  family: pointwise
  dtypes: all
  broadcast: [self, other]
  pointwise: "self * other"
  doc: Product.
- func: eq(Tensor self, Tensor other) -> Tensor
  family: pointwise
  dtypes: all
  broadcast: [self, other]
  result_dtype: bool
  pointwise: "self == other"
  doc: Equality.
- func: where(Tensor condition, Tensor self, Tensor other) -> Tensor
  family: pointwise
  dtypes: {condition: bool, self: all, other: all}
  broadcast: [condition, self, other]
  pointwise: "self if condition else other"
  doc: Selection.
- func: logical_not(Tensor self) -> Tensor
  family: pointwise
  dtypes: bool
  pointwise: "not self"
  doc: Negation of a bool tensor; it cannot require grad, so it needs no derivatives entry.
- func: sum_to(Tensor self, int[] size) -> Tensor
  family: backward
  dtypes: all
  composite: yt__composite_sum_to
  doc: Composite; differentiated through its parts, so it needs no derivatives entry.
"""

MUL_DERIVATIVES = """\
- name: mul(Tensor self, Tensor other) -> Tensor
  self: grad * other
  other: grad * self
- name: eq(Tensor self, Tensor other) -> Tensor
  not_differentiable: true
- name: where(Tensor condition, Tensor self, Tensor other) -> Tensor
  self: where(condition, grad, 0 * grad)
  other: where(condition, 0 * grad, grad)
"""


def derivatives_error(text: str) -> str:
    return spec_error(parse_derivatives, text, parse_ops(MUL, "ops.yaml"), "derivatives.yaml")


def test_valid_derivatives_attach_to_their_ops():
    ops = parse_ops(MUL, "ops.yaml")
    parse_derivatives(MUL_DERIVATIVES, ops, "derivatives.yaml")
    mul, eq, where, logical_not, sum_to = ops
    assert str(mul.derivative.loc) == "derivatives.yaml:1"
    assert [f.input for f in mul.derivative.formulas] == ["self", "other"]
    assert eq.derivative.not_differentiable and eq.derivative.formulas == []
    assert [f.input for f in where.derivative.formulas] == ["self", "other"]  # condition is bool-only
    assert logical_not.derivative is None and sum_to.derivative is None


@pytest.mark.parametrize("text, error", [
    ("name: x\n", "derivatives.yaml:1: the file must be a list of derivative entries"),
    ("- self: grad\n", "derivatives.yaml:1: each entry must be a mapping starting with 'name:'"),
    ("- name: mull(Tensor self, Tensor other) -> Tensor\n  self: grad\n",
     "derivatives.yaml:1: derivative for unknown op 'mull' (did you mean 'mul'?)"),
    ("- name: mul(Tensor self, Tensor other) -> Tensor\n  self: grad\n  other: grad\n"
     "- name: mul(Tensor self, Tensor other) -> Tensor\n  self: grad\n  other: grad\n",
     "derivatives.yaml:4: duplicate derivative for 'mul' (first at line 1)"),
    ("- name: mul(Tensor self, Tensor b) -> Tensor\n  self: grad\n",
     "derivatives.yaml:1: schema does not match ops.yaml:1: 'mul(Tensor self, Tensor b) -> Tensor' vs "
     "'mul(Tensor self, Tensor other) -> Tensor'"),
    ("- name: mul(Tensor self, Tensor other) -> Tensor\n  not_differentiable: false\n",
     "derivatives.yaml:2: not_differentiable must be true when given"),
    ("- name: mul(Tensor self, Tensor other) -> Tensor\n  self: grad\n  othr: grad\n",
     "derivatives.yaml:3: mul: formula for unknown argument 'othr' (did you mean 'other'?)"),
    ("- name: mul(Tensor self, Tensor other) -> Tensor\n  self: grad\n  other: [grad]\n",
     "derivatives.yaml:3: mul: formula for 'other' must be an expression string"),
    ("- name: mul(Tensor self, Tensor other) -> Tensor\n  self: grad\n  other: grad\n  not_differentiable: true\n",
     "derivatives.yaml:1: mul: not_differentiable entries take no formulas"),
    ("- name: mul(Tensor self, Tensor other) -> Tensor\n",
     "derivatives.yaml:1: mul: no formulas (mark it not_differentiable: true if intended)"),
    ("- name: mul(Tensor self, Tensor other) -> Tensor\n  self: grad * other\n",
     "derivatives.yaml:1: mul: no formula for tensor argument 'other' (its gradient would be silently dropped)"),
    ("- name: mul(Tensor self, Tensor other) -> Tensor\n  self: grad\n  other: grad\n",
     "ops.yaml:7: eq: differentiable op has no entry in derivatives.yaml "
     "(add formulas, or an entry with not_differentiable: true)"),
    ("- name: mul(Tensor self, Tensor other) -> Tensor\n  self: grad\n  other: grad\n  grad: grad\n",
     "derivatives.yaml:4: mul: formula for unknown argument 'grad'"),
    ("- name: mul(Tensor self, Tensor other\n",
     "derivatives.yaml:1: cannot parse schema 'mul(Tensor self, Tensor other': expected name[.overload](args) -> Tensor"),
    ("- name: mul(Tensor self, Tensor other) -> Tensor\n  self: grad\n other: grad\n",
     "derivatives.yaml:3: invalid YAML: did not find expected '-' indicator "
     "(while parsing a block collection at line 1)"),
])
def test_derivatives_yaml_errors(text, error):
    assert derivatives_error(text) == error


def test_derivative_formula_for_a_non_tensor_argument():
    ops = parse_ops(yaml_text("""
        - func: scale(Tensor self, Scalar s) -> Tensor
          family: pointwise
          dtypes: floating
          pointwise: "self * s"
          doc: Scales.
        """), "ops.yaml")
    text = "- name: scale(Tensor self, Scalar s) -> Tensor\n  self: grad * s\n  s: grad\n"
    assert spec_error(parse_derivatives, text, ops, "derivatives.yaml") == \
        "derivatives.yaml:3: scale: 's' is not a tensor argument; only tensors get gradients"


# ---------------------------------------------------------------- check expressions (compiled in lower.py)

def compile_check(expr: str):
    """Compiles `expr` as the one check of an op f(Tensor self, Tensor other, int n); the check is
    on ops.yaml line 5."""
    op = parse_ops(yaml_text(f"""
        - func: f(Tensor self, Tensor other, int n) -> Tensor
          family: linalg
          dtypes: floating
          checks:
            - check: "{expr}"
              bad: {{self: [2], other: [3], n: 0}}
          dispatch: {{cpu: yt__cpu_f}}
          doc: x
        """), "ops.yaml")[0]
    return CheckCompiler(op, op.checks[0]).compile()


def test_check_compiles_to_a_condition_and_a_message_naming_the_values():
    cond, (fmt, args) = compile_check("self.size(-1) == other.size(0)")
    assert cond == "self->sizes[self->dim - 1] == other->sizes[0]"
    assert fmt == "f: self.size(-1)=%lld does not match other.size(0)=%lld"
    assert args == ["(long long)self->sizes[self->dim - 1]", "(long long)other->sizes[0]"]


def test_rank_check_message():
    assert compile_check("self.dim >= 2")[1] == ("f: self must be at least 2-D, got %d-D", ["self->dim"])


@pytest.mark.parametrize("expr, message", [
    ("self.dim ==", "syntax error: invalid syntax"),
    ("self.dim in [1, 2]", "unsupported expression 'self.dim in [1, 2]'"),
    ("self.size(n) == 1", "size() takes a constant dim of a tensor argument"),
    ("self.size(1.5) == 1", "size() takes a constant dim of a tensor argument"),
    ("n.dim == 1", "'n' is not a tensor argument"),
    ("self.rank == 1", "unknown attribute 'rank'"),
    ("m > 0", "'m' is not an int or bool argument"),
    ("len(n) == 1", "len() takes an int[] or Tensor[] argument"),
    ("is_floating()", "is_floating() takes one argument"),
])
def test_check_errors(expr, message):
    assert spec_error(compile_check, expr) == f"ops.yaml:5: f: check '{expr}': {message}"
