"""codegen/gen.py end to end, as `make` runs it: deterministic output, a new op from a YAML-only
change, and spec errors reported as FILE:LINE with exit status 1 and no traceback."""

import os
import shutil
import stat
import subprocess
import sys

import pytest
from helpers import REPO, yaml_text

from pointwise import ARITY

GEN = os.path.join(REPO, "codegen", "gen.py")

# softplus under another name (Julia's LogExpFunctions calls it log1pexp), so that the test does
# not depend on whether the repository's ops.yaml already has softplus.
NEW_OP = yaml_text("""
    - func: log1pexp(Tensor self) -> Tensor
      family: pointwise
      variants: [function, inplace, out]
      dtypes: floating
      pointwise: "log(1 + exp(self))"
      doc: log(1 + exp(self)) of each element.
    """)

NEW_DERIVATIVE = yaml_text("""
    - name: log1pexp(Tensor self) -> Tensor
      self: grad * sigmoid(self)
    """)


def spec_copy(tmp_path, ops_extra: str = "", derivatives_extra: str = ""):
    """A folder holding the repository's ops.yaml and derivatives.yaml with text appended, and
    the line the appended text starts on in each."""
    spec = tmp_path / "spec"
    spec.mkdir()
    lines = {}
    for name, extra in (("ops.yaml", ops_extra), ("derivatives.yaml", derivatives_extra)):
        with open(os.path.join(REPO, name), encoding="utf-8") as f:
            text = f.read().rstrip("\n") + "\n\n"
        lines[name] = text.count("\n") + 1
        (spec / name).write_text(text + extra, encoding="utf-8")
    return spec, lines


def gen(root, out, env=None):
    return subprocess.run([sys.executable, GEN, "--root", str(root), "--out", str(out)],
                          capture_output=True, text=True, env=env)


def read_tree(folder) -> dict:
    files = {}
    for dirpath, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                files[os.path.relpath(path, folder)] = f.read()
    return files


# ---------------------------------------------------------------- determinism

def test_two_runs_give_identical_bytes_and_the_second_rewrites_nothing(tmp_path):
    spec, _ = spec_copy(tmp_path)
    first, second = gen(spec, tmp_path / "a"), gen(spec, tmp_path / "b")
    assert (first.returncode, first.stderr, second.returncode) == (0, "", 0)
    a, b = read_tree(tmp_path / "a"), read_tree(tmp_path / "b")
    assert a == b
    assert "generated/include/yaten/ops.h" in a and "docs/ops.md" in a and "generated/tests/op_cases.c" in a
    assert first.stdout == f"gen.py: {len(a)} files, {len(a)} changed\n"

    mtimes = {p: os.stat(tmp_path / "a" / p).st_mtime_ns for p in a}
    again = gen(spec, tmp_path / "a")
    assert again.stdout == f"gen.py: {len(a)} files, 0 changed\n"
    assert {p: os.stat(tmp_path / "a" / p).st_mtime_ns for p in a} == mtimes


def test_generated_text_has_no_absolute_paths_and_ends_with_one_newline(tmp_path):
    spec, _ = spec_copy(tmp_path)
    assert gen(spec, tmp_path / "out").returncode == 0
    for path, data in read_tree(tmp_path / "out").items():
        text = data.decode("utf-8")
        assert str(tmp_path) not in text and REPO not in text, path
        assert text.endswith("\n") and not text.endswith("\n\n") and "\r" not in text, path


# ---------------------------------------------------------------- a new op from YAML alone

def test_a_new_pointwise_op_from_yaml_alone(tmp_path):
    spec, line = spec_copy(tmp_path, NEW_OP, NEW_DERIVATIVE)
    out = tmp_path / "out"
    run = gen(spec, out)
    assert run.returncode == 0, run.stderr
    files = {p: data.decode("utf-8") for p, data in read_tree(out).items()}
    op_line, deriv_line = line["ops.yaml"], line["derivatives.yaml"]

    ops_h = files["generated/include/yaten/ops.h"]
    assert "YT_API yt_tensor *yt_log1pexp(yt_tensor *self);" in ops_h
    assert "YT_API yt_status yt_log1pexp_(yt_tensor *self);" in ops_h
    assert "YT_API yt_status yt_log1pexp_out(yt_tensor *out, yt_tensor *self);" in ops_h

    ops_c = files["generated/ops_pointwise.c"]
    assert (f"/* log1pexp(Tensor self) -> Tensor\n"
            f" * from ops.yaml:{op_line}; backward from derivatives.yaml:{deriv_line} */\n"
            f"yt_tensor *\nyt_log1pexp(yt_tensor *self)\n{{") in ops_c
    assert "yt__record_log1pexp(result, self)" in ops_c

    kernels = files["generated/kernels_pointwise.c"]
    assert ("static void log1pexp_loop_f32(char **data, const int64_t *strides, int64_t n, "
            "const int64_t *row_strides, int64_t rows, const void *ctx)") in " ".join(kernels.split())
    assert "const float out_value = logf((float)1 + expf(self));" in kernels
    assert "const double out_value = log((double)1 + exp(self));" in kernels
    assert "log1pexp_loop_i32" not in kernels  # floating dtypes only
    assert "yt_status\nyt__cpu_log1pexp(yt_tensor *result, yt_tensor *self)" in kernels
    assert "[YT_DEVICE_CPU] = yt__cpu_log1pexp," in files["generated/dispatch.c"]

    autograd = files["generated/autograd.c"]
    assert (f"/* log1pexp(Tensor self) -> Tensor\n * backward, from derivatives.yaml:{deriv_line}:\n"
            f" *   self: grad * sigmoid(self)\n */") in autograd
    assert ("        yt_tensor *t0 = yt_sigmoid(self);\n"
            "        out[0] = yt_mul(grads[0], t0);\n"
            "        yt_release(t0);\n"
            "        yt_release(self);\n") in autograd
    assert '.name = "Log1pexpBackward",' in autograd
    assert "yt__record_log1pexp(yt_tensor *result, yt_tensor *self);" in files["generated/autograd_record.h"]
    assert '.schema = "log1pexp(Tensor self) -> Tensor",' in files["generated/registry.c"]
    assert "## `log1pexp`" in files["docs/ops.md"]
    assert '.op = "log1pexp",' in files["generated/tests/op_cases.c"]


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_the_new_op_compiles(tmp_path):
    spec, _ = spec_copy(tmp_path, NEW_OP, NEW_DERIVATIVE)
    out = tmp_path / "out"
    assert gen(spec, out).returncode == 0
    flags = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", "-DYT_BUILDING_LIBRARY",
             f"-I{REPO}/include", f"-I{out}/generated/include", f"-I{REPO}/runtime", f"-I{REPO}/kernels/cpu", "-fopenmp-simd",
             f"-I{out}/generated"]
    for name in ("ops_pointwise.c", "kernels_pointwise.c", "autograd.c"):
        cc = subprocess.run(["gcc"] + flags + [str(out / "generated" / name)], capture_output=True, text=True)
        assert cc.returncode == 0, cc.stderr


# ---------------------------------------------------------------- errors

def new_op_with(*replacements):
    text = NEW_OP
    for old, new in replacements:
        assert old in text
        text = text.replace(old, new)
    return text


@pytest.mark.parametrize("ops_extra, derivatives_extra, where, offset, message", [
    (new_op_with(("  family:", "  famly:")), NEW_DERIVATIVE, "ops.yaml", 1,
     "unknown key 'famly' (did you mean 'family'?)"),
    (new_op_with(("[function, inplace, out]", "[function, inplace, out")), NEW_DERIVATIVE, "ops.yaml", 3,
     "invalid YAML: did not find expected ',' or ']' (while parsing a flow sequence at line {variants})"),
    (new_op_with(("dtypes: floating", "dtypes: floats")), NEW_DERIVATIVE, "ops.yaml", 3,
     "log1pexp: unknown dtype set 'floats' (did you mean 'floating'?); known: all, all_but_bool, floating, "
     "integral, bool"),
    (new_op_with(("log(1 + exp(self))", "lgamma(exp(self))")), NEW_DERIVATIVE, "ops.yaml", 4,
     "log1pexp: pointwise expression 'lgamma(exp(self))': unknown function 'lgamma'; known: "
     + ", ".join(ARITY)),
    (NEW_OP, "", "ops.yaml", 0,
     "log1pexp: differentiable op has no entry in derivatives.yaml (add formulas, or an entry with "
     "not_differentiable: true)"),
    (NEW_OP, NEW_DERIVATIVE.replace("sigmoid(self)", "sigmoid(x)"), "derivatives.yaml", 1,
     "log1pexp: formula for 'self': unknown name 'x' (arguments: self; also grad, result)"),
    (NEW_OP, NEW_DERIVATIVE.replace("sigmoid(self)", "softsign(self)"), "derivatives.yaml", 1,
     "log1pexp: formula for 'self': unknown op 'softsign'"),
    (NEW_OP + "\n" + NEW_OP, NEW_DERIVATIVE, "ops.yaml", 7,
     "duplicate operator 'log1pexp' (first defined at line {first})"),
])
def test_spec_errors_exit_1_with_file_and_line(tmp_path, ops_extra, derivatives_extra, where, offset, message):
    spec, line = spec_copy(tmp_path, ops_extra, derivatives_extra)
    run = gen(spec, tmp_path / "out")
    message = message.format(first=line["ops.yaml"], variants=line["ops.yaml"] + 2)
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr == f"{where}:{line[where] + offset}: error: {message}\n"
    assert "Traceback" not in run.stderr
    assert not (tmp_path / "out").exists()  # nothing is written when the spec is wrong


def test_a_missing_spec_file_is_one_line(tmp_path):
    run = gen(tmp_path, tmp_path / "out")
    assert run.returncode == 1
    assert run.stderr == f"gen.py: {tmp_path / 'ops.yaml'}: No such file or directory\n"


def fake_clang_format(folder, version_line: str):
    folder.mkdir()
    tool = folder / "clang-format"
    tool.write_text(f"#!/bin/sh\necho '{version_line}'\n")
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)


@pytest.mark.parametrize("version_line", [None, "Debian clang-format version 15.0.6"])
def test_clang_format_14_is_required(tmp_path, version_line):
    bin_dir = tmp_path / "bin"
    if version_line:
        fake_clang_format(bin_dir, version_line)
    spec, _ = spec_copy(tmp_path)
    run = gen(spec, tmp_path / "out", env={"PATH": str(bin_dir)})
    assert run.returncode == 1
    assert run.stderr == "gen.py: clang-format 14 (Debian package clang-format-14) is required to format generated/\n"
