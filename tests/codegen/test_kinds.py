"""Argument and result kinds end to end: test-only fixture ops (fixture_*.yaml) are appended to
the repository's YAML, generated, checked for the C conventions, and the generated C is compiled
(syntax only: the fixture kernels do not exist)."""

import os
import re
import shutil
import subprocess

import pytest
from helpers import REPO
from test_gen import gen, spec_copy

HERE = os.path.dirname(os.path.abspath(__file__))


def read(name):
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        return f.read()


def generate(tmp_path, fixture):
    spec, _ = spec_copy(tmp_path, read(f"fixture_{fixture}.yaml"), read(f"fixture_{fixture}_derivatives.yaml"))
    out = tmp_path / "out"
    r = gen(spec, out)
    assert r.returncode == 0, r.stderr
    files = {}
    for dirpath, _, names in os.walk(out):
        for n in names:
            p = os.path.join(dirpath, n)
            with open(p, encoding="utf-8") as f:
                files[os.path.relpath(p, out)] = f.read()
    return out, files


def flat(text):
    """Text with every run of whitespace as one space (clang-format's wrapping aside)."""
    return re.sub(r"\(\s+", "(", re.sub(r"\s+", " ", text))


# Declarations the fixtures' shape rules would have in runtime/internal.h.
FIXTURE_DECLS = """\
#include "internal.h"
yt_status yt__shape_fxcat(yt_shape *out, const char *op, yt_tensor *const *tensors, int tensors_len, int64_t dim);
"""


def compile_syntax(out, *files):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    gen_dir = os.path.join(out, "generated")
    decls = os.path.join(out, "fixture_decls.h")
    with open(decls, "w", encoding="utf-8") as f:
        f.write(FIXTURE_DECLS)
    for f in files:
        r = subprocess.run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", "-D_GNU_SOURCE",
                            f"-I{REPO}/include", f"-I{gen_dir}/include", f"-I{REPO}/runtime", f"-I{gen_dir}",
                            f"-I{REPO}/tests/unit"] + (["-include", decls] if not f.startswith("tests/") else []) +
                           [os.path.join(gen_dir, f)], capture_output=True, text=True)
        assert r.returncode == 0, f"{f}:\n{r.stderr}"


def test_optional_and_str_kinds(tmp_path):
    out, files = generate(tmp_path, "kinds")
    h = flat(files["generated/include/yaten/ops.h"])
    assert ("yt_tensor *yt_fxkinds_ex(yt_tensor *self, yt_tensor *weight, const char *reduction, const char *mode, "
            "const yt_scalar *lo, const bool *flag, const double *eps);") in h
    c = files["generated/ops_nn.c"]
    c = c[c.index("\nyt_fxkinds_ex("):]  # the fixture's function only: real nn ops take a required weight
    c = c[:c.index("\n}\n")]
    assert 'if (reduction == NULL)\n        reduction = "mean";' in c
    assert "fxkinds: reduction must be one of 'none', 'mean', 'sum', got '%s'" in c
    assert 'else if (mode != NULL && strcmp(mode, "floor") == 0)' in c
    assert "if (self == NULL)" in c and "if (weight == NULL)\n" not in c  # NULL weight is None
    assert "if (!(weight == NULL || (weight->dim == self->dim)))" in c
    assert "(strcmp(reduction, \"none\") != 0 || self->dim > 0)" in c
    k = flat(files["generated/kernels.h"])
    assert ("yt_status yt__cpu_fxkinds(yt_tensor *result, yt_tensor *self, yt_tensor *weight, const char *reduction, "
            "const char *mode, const yt_scalar *lo, const bool *flag, const double *eps);") in k
    a = flat(files["generated/autograd.c"])
    assert "bool lo_given; /* lo is not None */" in a
    assert "(node->lo_given ? &node->lo : NULL)" in a
    assert "yt__saved_unpack_optional(&node->weight" in a
    assert 'yt_fxkinds_backward(grads[0], weight, NULL, "sum", "trunc", (const yt_scalar[]){yt_int(2)})' in a
    t = files["generated/tests/op_cases.c"]
    assert "const yt_scalar lo_value = yt_float(1.5);" in t
    assert '.what = "ops.yaml' in t and "reduction not a choice" in t and '"no_such_choice"' in t
    assert ".optional = true" in t
    compile_syntax(out, "ops_nn.c", "ops_backward.c", "autograd.c", "tests/op_cases.c")


STR_OP = """\
- func: f(Tensor self, str reduction="mean") -> Tensor
  family: nn
  dtypes: floating
{extra}  dispatch: {{cpu: yt__cpu_f}}
  doc: F.
"""


@pytest.mark.parametrize("extra, message", [
    ("", "ops.yaml:1: f: str argument 'reduction' needs its allowed values in 'choices: {reduction: [...]}'"),
    ("  choices: {reduction: [none, sum]}\n",
     "ops.yaml:4: f: default 'mean' of 'reduction' is not one of its choices (none, sum)"),
    ("  choices: {reductoin: [mean]}\n",
     "ops.yaml:4: f: choices names 'reductoin', which is not a str argument (did you mean 'reduction'?)"),
    ("  choices: {reduction: []}\n", "ops.yaml:4: f: choices of 'reduction' must be a non-empty list of plain words"),
    ("  choices: {reduction: [mean, mean]}\n", "ops.yaml:4: f: choices of 'reduction' repeat a value"),
    ("  choices: [mean]\n", "ops.yaml:4: f: 'choices' must map str arguments to lists of values"),
    ("  choices: {reduction: [mean, sum]}\n  samples:\n    - {self: [2], reduction: max}\n",
     "ops.yaml:6: f: sample value of 'reduction' must be one of mean, sum, got 'max'"),
    ("  choices: {reduction: [mean, sum]}\n  checks:\n    - {check: 'reduction == \"max\"', bad: {self: [2]}}\n",
     "ops.yaml:6: f: check 'reduction == \"max\"': 'max' is not one of the choices of 'reduction'"),
])
def test_str_choices_errors(extra, message):
    from helpers import load, spec_error
    from lower import OpLowering

    def run():
        ops = load(STR_OP.format(extra=extra), "- name: f(Tensor self, str reduction=\"mean\") -> Tensor\n"
                   "  not_differentiable: true\n")
        OpLowering(ops[0], {}).functions()
    assert spec_error(run) == message


def test_generator_argument(tmp_path):
    out, files = generate(tmp_path, "kinds")
    h = flat(files["generated/include/yaten/ops.h"])
    assert "yt_tensor *yt_fxrand_ex(yt_tensor *self, double p, yt_generator *generator);" in h
    k = flat(files["generated/kernels.h"])
    assert "yt_status yt__cpu_fxrand(yt_tensor *result, yt_tensor *self, double p, yt_generator *generator);" in k
    assert "yt_fxrand_ex(inputs[0], 0.5, NULL)" in files["generated/tests/op_cases.c"]
    compile_syntax(out, "ops_nn.c", "autograd.c", "tests/op_cases.c")


def test_generator_cannot_be_used_by_formulas():
    from helpers import load, registry, spec_error
    from formula import compile_derivative

    ops = load("""\
        - func: g(Tensor self, *, Generator? generator=None) -> Tensor
          family: nn
          dtypes: floating
          dispatch: {cpu: yt__cpu_g}
          doc: G.
        """, """\
        - name: g(Tensor self, *, Generator? generator=None) -> Tensor
          self: generator
        """)
    assert spec_error(compile_derivative, ops[0], registry(ops)) == \
        "derivatives.yaml:2: g: formula for 'self': 'generator' is a Generator; formulas cannot use it"


def test_several_results(tmp_path):
    out, files = generate(tmp_path, "multi")
    h = flat(files["generated/include/yaten/ops.h"])
    assert ("yt_status yt_fxmax_ex(yt_tensor *self, const int64_t *dim, int dim_len, bool keepdim, "
            "yt_tensor **values, yt_tensor **indices);") in h
    assert "yt_status yt_fxmax(yt_tensor *self, const int64_t *dim, int dim_len, yt_tensor **values, " \
        "yt_tensor **indices);" in h
    assert ("yt_status yt_fxmax_ex_out(yt_tensor *values, yt_tensor *indices, yt_tensor *self, const int64_t *dim, "
            "int dim_len, bool keepdim);") in h
    k = flat(files["generated/kernels.h"])
    assert ("yt_status yt__cpu_fxmax_dim(yt_tensor *values, yt_tensor *indices, yt_tensor *self, const int64_t *dim, "
            "int dim_len, bool keepdim);") in k
    assert "yt_status yt__composite_fxpair(yt_tensor *self, yt_tensor *other, yt_tensor **hi, yt_tensor **lo);" in k
    c = flat(files["generated/ops_reduce.c"])
    assert "if (values == NULL || indices == NULL) return yt__fail_status(YT_ERR_VALUE, \"fxmax: values and " \
        "indices must be non-NULL pointers to receive the results\");" in c
    assert "*values = NULL; *indices = NULL; if (self == NULL) return yt__null_status(\"fxmax\", \"self\");" in c
    assert "yt_dtype indices_dtype = YT_DTYPE_I64;" in c and "yt_shape indices_shape = values_shape;" in c
    a = flat(files["generated/autograd.c"])
    assert "yt__node_new(&fxmax_node_kind, 1, 1)" in a
    assert "yt__node_set_output(&node->base, values, 0);" in a and "set_output(&node->base, indices" not in a
    assert "yt__saved_init(&node->values, values, true, 0)" in a
    assert "yt__saved_init(&node->indices, indices, false, 0)" in a
    assert "yt_expand(grads[0], " in a
    t = files["generated/tests/op_cases.c"]
    assert "sample 0 result values" in t and "sample 0 result indices" in t
    compile_syntax(out, "ops_reduce.c", "ops_pointwise.c", "autograd.c", "tests/op_cases.c")


MULTI_OP = """\
- func: f(Tensor self) -> (Tensor a, Tensor b)
  family: nn
  dtypes: floating
  dispatch: {cpu: yt__cpu_f}
  doc: F.
"""


@pytest.mark.parametrize("derivative, message", [
    ("  self: grad\n", "derivatives.yaml:2: f: formula for 'self': 'grad' is ambiguous with several results; "
     "use grad_a, grad_b"),
    ("  self: grad_b\n  output_differentiability: [true, false]\n",
     "derivatives.yaml:2: f: formula for 'self': result 'b' is not differentiable (output_differentiability), "
     "so there is no grad_b"),
    ("  self: grad_a\n  output_differentiability: [true]\n",
     "derivatives.yaml:3: f: output_differentiability must list true or false for each of the 2 results (a, b)"),
    ("  self: grad_a * c\n", "derivatives.yaml:2: f: formula for 'self': unknown name 'c' (arguments: self; "
     "also grad_a, a, grad_b, b)"),
])
def test_several_results_derivative_errors(derivative, message):
    from helpers import load, registry, spec_error
    from lower import OpLowering

    def run():
        ops = load(MULTI_OP, "- name: f(Tensor self) -> (Tensor a, Tensor b)\n" + derivative)
        OpLowering(ops[0], registry(ops))
    assert spec_error(run) == message


@pytest.mark.parametrize("schema, message", [
    ("f(Tensor self) -> (Tensor a)", "f: a single result is written '-> Tensor'"),
    ("f(Tensor self) -> (Tensor a, Tensor a)", "f: duplicate result name 'a'"),
    ("f(Tensor self) -> (Tensor a, int b)", "f: cannot parse result 'int b' (expected 'Tensor NAME')"),
    ("f(Tensor self) -> (Tensor self, Tensor b)", "f: result 'self' has the name of an argument"),
    ("f(Tensor self) -> (Tensor grad_x, Tensor b)", "f: result name 'grad_x' is reserved"),
    ("f(Tensor self) -> int", "f: returns must be 'Tensor', 'Tensor[]' or '(Tensor a, Tensor b, ...)', got 'int'"),
])
def test_several_results_schema_errors(schema, message):
    from helpers import spec_error
    from model import Loc
    from parse import parse_schema
    assert spec_error(parse_schema, schema, Loc("ops.yaml", 3)) == f"ops.yaml:3: {message}"


def test_per_result_map_errors():
    from helpers import spec_error
    from parse import parse_ops
    text = MULTI_OP + "  result_dtype: {c: i64}\n"
    assert spec_error(parse_ops, text) == "ops.yaml:6: f: 'result_dtype' names unknown result 'c'"
    text = MULTI_OP.replace("-> (Tensor a, Tensor b)", "-> Tensor") + "  shape: {a: [self.size(0)]}\n"
    assert spec_error(parse_ops, text) == "ops.yaml:6: f: a per-result 'shape' map needs several results"


def test_tensor_lists(tmp_path):
    out, files = generate(tmp_path, "lists")
    h = flat(files["generated/include/yaten/ops.h"])
    assert "yt_tensor *yt_fxcat_ex(yt_tensor *const *tensors, int tensors_len, int64_t dim);" in h
    assert "int64_t yt_fxsplit_ex(yt_tensor *self, int64_t split_size, int64_t dim, yt_tensor **out, " \
        "int64_t out_capacity);" in h
    assert "yt_tensor *yt_fxindex(yt_tensor *self, yt_tensor *const *indices, int indices_len);" in h
    k = flat(files["generated/kernels.h"])
    assert "int64_t yt__composite_fxsplit(yt_tensor *self, int64_t split_size, int64_t dim, yt_tensor **out, " \
        "int64_t out_capacity);" in k
    assert "yt_status yt__cpu_fxcat(yt_tensor *result, yt_tensor *const *tensors, int tensors_len, int64_t dim);" in k
    c = flat(files["generated/ops_shape.c"])
    assert 'if (tensors_len == 0) return yt__fail(YT_ERR_VALUE, "fxcat: expected a non-empty list of tensors in ' \
        'tensors");' in c
    assert 'if (tensors[i] == NULL) return yt__null_elem("fxcat", "tensors", i);' in c
    assert "yt_dtype compute_dtype = yt__result_type(tensors_len, tensors, 0, NULL);" in c
    assert 'yt__wrap_dim(&dim, tensors[0]->dim, "fxcat", "dim")' in c
    assert "bool recording = yt__any_requires_grad(tensors_len, tensors);" in c
    assert "return yt__count_error(yt__null_status(\"fxsplit\", \"self\"));" in c
    i = flat(files["generated/ops_index.c"])
    assert "if (indices[i] == NULL) continue;" in i
    assert 'fxindex: indices[%d] has dtype %s, expected u8, i8, i16, i32, i64' in i
    a = flat(files["generated/autograd.c"])
    assert "yt__node_new(&fxcat_node_kind, 0 + tensors_len, 1)" in a
    assert "yt__node_set_edge(&node->base, 0 + i, tensors[i]);" in a
    assert "int64_t n_grads = yt_fxcat_backward(grads[0], node->dim, tensors, node->tensors_len, out + 0, " \
        "node->tensors_len);" in a
    assert "status = yt__saved_list_init(&node->indices, indices, indices_len);" in a
    t = flat(files["generated/tests/op_cases.c"])
    assert "yt_tensor *const tensors[2] = {inputs[0], inputs[1]};" in t
    assert "yt_tensor *const indices[2] = {NULL, inputs[1]};" in t
    assert "return weighted_pieces(yt_fxsplit_ex(inputs[0], 2, 0, pieces, 64), pieces, inputs[0]);" in t
    assert "out_capacity below the count" in t
    py = files["generated/tests/torch_cases.py"]
    assert "def case_" in py and "tensors = [tensors_0, tensors_1]" in py and "indices = [None, indices_1]" in py
    compile_syntax(out, "ops_shape.c", "ops_index.c", "ops_backward.c", "autograd.c", "tests/op_cases.c")


@pytest.mark.parametrize("ops, derivative, message", [
    ("- func: f(Tensor[] ts=None) -> Tensor\n", "",
     "ops.yaml:1: f: argument 'ts' defaults to None but its type is not optional"),
    ("- func: f(Tensor[]? ts=None) -> Tensor\n", "", "ops.yaml:1: f: optional 'Tensor[]?' is not supported (argument 'ts')"),
    ("- func: f(Tensor self, *, Tensor[] ts=[]) -> Tensor\n", "",
     "ops.yaml:1: f: argument 'ts': a list default needs an int[] argument"),
    ("- func: f(Tensor self) -> Tensor[]\n  family: shape\n  dtypes: all\n  dispatch: {cpu: yt__cpu_f}\n  doc: F.\n",
     "", "ops.yaml:1: f: '-> Tensor[]' ops must be composite"),
    ("- func: f(Tensor[] ts) -> Tensor\n  family: shape\n  dtypes: floating\n  dispatch: {cpu: yt__cpu_f}\n"
     "  doc: F.\n", "- name: f(Tensor[] ts) -> Tensor\n  ts: grad\n",
     "derivatives.yaml:2: f: formula for 'ts': the gradient of a Tensor[] is a call to an op returning Tensor[] "
     "(one per element)"),
    ("- func: f(Tensor[] ts) -> Tensor\n  family: shape\n  dtypes: floating\n  dispatch: {cpu: yt__cpu_f}\n"
     "  doc: F.\n", "- name: f(Tensor[] ts) -> Tensor\n  ts: neg(grad)\n",
     "derivatives.yaml:2: f: formula for 'ts': 'neg' is not an op returning Tensor[]"),
])
def test_tensor_list_errors(ops, derivative, message):
    from helpers import load, registry, spec_error
    from lower import OpLowering

    def run():
        parsed = load(ops, derivative)
        OpLowering(parsed[0], registry(parsed))
    assert spec_error(run) == message
