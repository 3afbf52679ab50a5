"""The in-place form of a not-differentiable op: `inplace_grad: zero` (the write is recorded with a
zero gradient for self's old history, as uniform_), or else a refusal of a self that requires
grad, with the generated error case that checks it; parsing and its errors."""

import re

import pytest
from helpers import cases_of, load, registry, spec_error, yaml_text

from lower import OpLowering

OPS = yaml_text("""
    - func: fill_random(Tensor self, float low=0) -> Tensor
      family: factory
      variants: [function, inplace]
      dtypes: floating
      dispatch: {cpu: yt__cpu_fill_random}
      samples:
        - {self: [3]}
      doc: Random values like self.
    - func: floor_it(Tensor self) -> Tensor
      family: nn
      variants: [function, inplace]
      dtypes: all
      shape: [self.size(0)]
      dispatch: {cpu: yt__cpu_floor_it}
      samples:
        - {self: {shape: [3], dtype: i64}}
        - {self: [3]}
      doc: Rounds down.
    - func: count(Tensor self) -> Tensor
      family: nn
      dtypes: floating
      shape: [self.size(0)]
      dispatch: {cpu: yt__cpu_count}
      doc: Counts.
    """)

DERIVATIVES = yaml_text("""
    - name: fill_random(Tensor self, float low=0) -> Tensor
      not_differentiable: true
      inplace_grad: zero
    - name: floor_it(Tensor self) -> Tensor
      not_differentiable: true
    - name: count(Tensor self) -> Tensor
      not_differentiable: true
    """)


def inplace_body(op_index: int, name: str) -> str:
    ops = load(OPS, DERIVATIVES)
    lo = OpLowering(ops[op_index], registry(ops))
    return re.sub(r"\s+", " ", "\n".join(next(f for f in lo.functions() if f.name == name).body))


def test_zero_records_the_write_after_checking_self():
    body = inplace_body(0, "yt_fill_random_ex_")
    assert "bool recording = yt__any_requires_grad(1, &self);" in body
    check = body.index('if (recording && yt__check_inplace(self, "fill_random_") != YT_OK)')
    assert check < body.index("kernel(") < body.index("yt__bump_version(self);") < \
        body.index('status = yt__record_overwrite(self, "fill_random_");')
    assert "not differentiable" not in body


def test_otherwise_a_self_that_requires_grad_is_refused_before_the_write():
    body = inplace_body(1, "yt_floor_it_")
    refusal = ('if (yt__any_requires_grad(1, &self)) return yt__fail_status(YT_ERR_STATE, "floor_it_: self '
               'requires grad, and floor_it is not differentiable; write a yt_detach() of it, or turn grad mode '
               'off");')
    assert refusal in body
    assert body.index(refusal) < body.index("kernel(")
    assert "yt__record_overwrite" not in body and "yt__check_inplace" not in body


def test_the_refusal_gets_an_error_case_on_a_floating_sample():
    cb = cases_of(load(OPS, DERIVATIVES))
    cases = [e for e in cb.errors if e["code"] == "YT_ERR_STATE"]
    assert [e["op"] for e in cases] == ["floor_it"]
    case = cases[0]
    assert case["prefix"] == "floor_it_: self requires grad, and floor_it is not differentiable"
    assert case["requires_grad"] and [x["no_grad"] for x in case["inputs"]] == [True]
    assert case["inputs"][0]["dtype"] == "YT_DTYPE_F64"  # the i64 sample cannot require grad
    body = "\n".join("\n".join(f) for f in cb.functions)
    assert "yt_tensor *copy = yt_clone(inputs[0]);" in body and "yt_floor_it_(copy) != YT_OK" in body


@pytest.mark.parametrize("entry, message", [
    ("- name: fill_random(Tensor self, float low=0) -> Tensor\n  not_differentiable: true\n  inplace_grad: one\n",
     "derivatives.yaml:3: fill_random: inplace_grad must be 'zero' (the in-place form writes values that do not "
     "depend on self's old ones)"),
    ("- name: count(Tensor self) -> Tensor\n  not_differentiable: true\n  inplace_grad: zero\n",
     "derivatives.yaml:3: count: inplace_grad is for ops with an in-place variant"),
    ("- name: fill_random(Tensor self, float low=0) -> Tensor\n  self: grad\n  inplace_grad: zero\n",
     "derivatives.yaml:1: fill_random: inplace_grad goes with not_differentiable: true (a differentiable op's "
     "in-place form takes its formulas)"),
])
def test_errors(entry, message):
    assert spec_error(load, OPS, entry) == message
