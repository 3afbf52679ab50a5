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
    return re.sub(r"\s+", " ", text)


def compile_syntax(out, *files):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    gen_dir = os.path.join(out, "generated")
    for f in files:
        r = subprocess.run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", "-D_GNU_SOURCE",
                            f"-I{REPO}/include", f"-I{gen_dir}/include", f"-I{REPO}/runtime", f"-I{gen_dir}",
                            f"-I{REPO}/tests/unit", os.path.join(gen_dir, f)], capture_output=True, text=True)
        assert r.returncode == 0, f"{f}:\n{r.stderr}"


def test_optional_and_str_kinds(tmp_path):
    out, files = generate(tmp_path, "kinds")
    h = flat(files["generated/include/yaten/ops.h"])
    assert ("yt_tensor *yt_fxkinds_ex(yt_tensor *self, yt_tensor *weight, const char *reduction, const char *mode, "
            "const yt_scalar *lo, const bool *flag, const double *eps);") in h
    c = files["generated/ops_nn.c"]
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
