"""`ARG: non_differentiable` in derivatives.yaml (and a sample's `no_grad` tensor): parsing and its
errors, the refusal the generated function makes, the edge it does not record, and the test cases
the generator derives from it (gradcheck without that gradient, one refusal case)."""

import re

import pytest
from helpers import cases_of, load, registry, spec_error, yaml_text

from cases import CaseBuilder
from lower import OpLowering
from torch_cases import torch_case

OPS = yaml_text("""
    - func: weigh(Tensor self, Tensor? weight=None, Tensor? shift=None) -> Tensor
      family: nn
      dtypes: floating
      shape: [self.size(0)]
      dispatch: {cpu: yt__cpu_weigh}
      samples:
        - {self: [3]}
        - {self: [3], weight: [3], shift: [3]}
      doc: A kernel op with a weight that takes no gradient.
    - func: weigh_all(Tensor self, Tensor target, Tensor? weight=None) -> Tensor
      family: loss
      dtypes: {self: floating, target: integral, weight: floating}
      composite: yt__composite_weigh_all
      samples:
        - {self: [3], target: {shape: [3], dtype: i64}, weight: [3]}
      doc: A composite whose weight takes no gradient.
    - func: pick(Tensor self, Tensor? weight=None) -> Tensor
      family: loss
      dtypes: floating
      composite: yt__composite_pick
      samples:
        - {self: [3]}
        - {self: [3], weight: {shape: [3], no_grad: true}}
      doc: A composite that refuses its weight itself in some samples.
    """)

DERIVATIVES = yaml_text("""
    - name: weigh(Tensor self, Tensor? weight=None, Tensor? shift=None) -> Tensor
      self: grad
      weight: non_differentiable
      shift: non_differentiable
    - name: weigh_all(Tensor self, Tensor target, Tensor? weight=None) -> Tensor
      weight: non_differentiable
    """)


def flat(lines) -> str:
    return re.sub(r"\s+", " ", "\n".join(lines))


def test_marked_arguments_are_listed_and_take_no_formula():
    weigh, weigh_all, pick = load(OPS, DERIVATIVES)
    assert weigh.derivative.non_differentiable == ["weight", "shift"]
    assert [f.input for f in weigh.derivative.formulas] == ["self"]
    assert weigh_all.derivative.non_differentiable == ["weight"] and weigh_all.derivative.formulas == []
    assert pick.derivative is None


def test_the_function_refuses_them_and_records_no_edge_for_them():
    ops = load(OPS, DERIVATIVES)
    lo = OpLowering(ops[0], registry(ops))
    body = flat(next(f for f in lo.functions() if f.name == "yt_weigh_ex").body)
    for arg in ("weight", "shift"):
        assert (f'if (yt__any_requires_grad(1, &{arg})) return yt__fail(YT_ERR_VALUE, "weigh: {arg} requires '
                f'grad, but weigh is not differentiable with respect to {arg}");') in body
    # refused before anything is computed; only self is a gradient input
    assert body.index("not differentiable") < body.index("yt__empty_named(")
    assert "bool recording = yt__any_requires_grad(1, &self);" in body
    assert lo.record_lines() == ["yt__node_set_edge(&node->base, 0, self);"]
    doc = " ".join(next(f for f in lo.functions() if f.name == "yt_weigh_ex").doc)
    assert "Not differentiable with respect to weight, shift: YT_ERR_VALUE when one of them requires grad" in doc
    short = " ".join(next(f for f in lo.functions() if f.name == "yt_weigh").doc)
    assert "Not differentiable" not in short  # yt_weigh() has no weight parameter


def test_a_composite_refuses_before_calling_its_implementation():
    ops = load(OPS, DERIVATIVES)
    body = flat(OpLowering(ops[1], registry(ops)).body_function())
    assert body.index("weigh_all: weight requires grad, but weigh_all is not differentiable") < \
        body.index("yt__composite_weigh_all(")


def test_cases_skip_the_gradient_and_check_the_refusal():
    cb = cases_of(load(OPS, DERIVATIVES))
    weigh = [c for c in cb.cases if c["op"] == "weigh"]
    assert [[t["no_grad"] for t in c["inputs"]] for c in weigh] == [[False], [False, True, True]]
    assert weigh[1]["differentiable"] == "true"
    assert weigh[1]["torch"]["no_grad"] == [False, True, True]
    refusals = [e for e in cb.errors if e["requires_grad"]]
    assert [(e["op"], e["prefix"], [t["name"] for t in e["inputs"] if t["no_grad"]]) for e in refusals] == [
        ("weigh", "weigh: weight requires grad, but weigh is not differentiable with respect to weight", ["weight"]),
        ("weigh", "weigh: shift requires grad, but weigh is not differentiable with respect to shift", ["shift"]),
        ("weigh_all", "weigh_all: weight requires grad, but weigh_all is not differentiable with respect to weight",
         ["weight"]),
        ("pick", "pick: weight requires grad, but pick is not differentiable with respect to weight", ["weight"]),
    ]
    assert all(e["code"] == "YT_ERR_VALUE" for e in refusals)
    pick = [c for c in cb.cases if c["op"] == "pick"]
    assert [c["torch"]["no_grad"] for c in pick] == [[False], [False, True]]


def test_a_marked_argument_needs_a_sample_that_gives_it():
    ops = load(OPS.replace("    - {self: [3], weight: [3], shift: [3]}\n", ""), DERIVATIVES)
    cb = CaseBuilder(None)
    assert spec_error(cb.add_op, OpLowering(ops[0], registry(ops))) == \
        "ops.yaml:7: weigh: no sample gives 'weight' a floating tensor, and the test of its refusal when it " \
        "requires grad needs one"


def test_torch_case_marks_no_grad_tensors():
    ops = load(OPS, DERIVATIVES)
    case = torch_case(0, ops[2], ops[2].samples[1], "here")
    assert case["tensors"] == ["self", "weight"] and case["no_grad"] == [False, True] and not case["empty"]


MUL = yaml_text("""
    - func: mul(Tensor self, Tensor other, Tensor? weight=None, Tensor? index=None, Scalar s=1) -> Tensor
      family: nn
      dtypes: {self: floating, other: floating, weight: floating, index: integral}
      shape: [self.size(0)]
      dispatch: {cpu: yt__cpu_mul}
      doc: Multiplies.
    - func: cat(Tensor[] tensors) -> Tensor
      family: shape
      dtypes: floating
      composite: yt__composite_cat
      doc: Concatenates.
    """)
MUL_SCHEMA = "mul(Tensor self, Tensor other, Tensor? weight=None, Tensor? index=None, Scalar s=1) -> Tensor"


@pytest.mark.parametrize("entry, message", [
    ("  self: grad\n  other: grad\n  weigth: non_differentiable\n",
     "derivatives.yaml:4: mul: formula for unknown argument 'weigth' (did you mean 'weight'?)"),
    ("  self: grad\n  other: grad\n  s: non_differentiable\n",
     "derivatives.yaml:4: mul: 's' is not a tensor argument; only tensors get gradients"),
    ("  self: grad\n  other: grad\n  index: non_differentiable\n",
     "derivatives.yaml:4: mul: 'index' cannot require grad (dtypes: u8, i8, i16, i32, i64), so marking it "
     "non_differentiable says nothing"),
    ("  self: grad\n  weight: non_differentiable\n",
     "derivatives.yaml:1: mul: no formula for tensor argument 'other' (its gradient would be silently dropped)"),
    ("  weight: non_differentiable\n  not_differentiable: true\n",
     "derivatives.yaml:1: mul: not_differentiable entries take no formulas"),
])
def test_errors(entry, message):
    ops = MUL
    text = f"- name: {MUL_SCHEMA}\n" + entry
    assert spec_error(load, ops, text) == message


def test_a_tensor_list_cannot_be_marked():
    text = "- name: cat(Tensor[] tensors) -> Tensor\n  tensors: non_differentiable\n"
    assert spec_error(load, MUL, f"- name: {MUL_SCHEMA}\n  not_differentiable: true\n" + text) == \
        "derivatives.yaml:4: cat: non_differentiable applies to Tensor arguments, and 'tensors' is a Tensor[]"


def test_a_composite_entry_takes_no_formulas():
    text = "- name: cat(Tensor[] tensors) -> Tensor\n  tensors: cat(tensors)\n"
    assert spec_error(load, MUL, f"- name: {MUL_SCHEMA}\n  not_differentiable: true\n" + text) == \
        "derivatives.yaml:4: cat: a composite op is differentiated through the ops it calls; its entry may only " \
        "mark arguments non_differentiable"


@pytest.mark.parametrize("sample, message", [
    ("{self: [3], weight: {shape: [3], no_grad: 1}}", "ops.yaml:7: pick: 'no_grad' of tensor sample 'weight' "
     "must be true or false"),
    ("{self: [3], weight: {shape: [3], no_gard: true}}", "ops.yaml:7: pick: tensor sample 'weight' must be a size "
     "list or {shape: [...], dtype: NAME, transpose: BOOL, step: N, high: N, no_grad: BOOL}"),
])
def test_sample_no_grad_errors(sample, message):
    ops = yaml_text("""
        - func: pick(Tensor self, Tensor? weight=None) -> Tensor
          family: loss
          dtypes: floating
          composite: yt__composite_pick
          samples:
            - {self: [3]}
        """) + f"    - {sample}\n  doc: Picks.\n"
    assert spec_error(load, ops, "") == message
