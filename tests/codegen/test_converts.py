"""`converts:` (ops.yaml): a pointwise op's 0-d tensor argument read as a Scalar, converted to the
compute dtype with the Scalar's overflow check before the loop (masked_fill's value)."""

import re

from helpers import load, registry, spec_error, yaml_text

from lower import OpLowering

OPS = yaml_text("""
    - func: fill_where(Tensor self, Tensor mask, Tensor value) -> Tensor
      family: pointwise
      variants: [function, inplace]
      dtypes: {self: all, mask: bool, value: all}
      broadcast: [self, mask, value]
      converts: [value]
      pointwise: "value if mask else self"
      doc: Fills.
    """)


DERIVATIVES = yaml_text("""
    - name: fill_where(Tensor self, Tensor mask, Tensor value) -> Tensor
      self: grad
      value: grad
    """)


def body(name: str) -> str:
    ops = load(OPS, DERIVATIVES)
    lo = OpLowering(ops[0], registry(ops))
    return re.sub(r"\s+", " ", "\n".join(next(f for f in lo.functions() if f.name == name).body))


def test_the_value_is_converted_with_a_check_in_each_variant():
    for fn, name in (("yt_fill_where", "fill_where"), ("yt_fill_where_", "fill_where_")):
        text = body(fn)
        assert (f'yt_tensor *value_k = value->dtype == compute_dtype ? value : yt__convert_0d(value, '
                f'compute_dtype, "{name}", "value");') in text
        assert "yt__release_cast(value_k, value);" in text
        assert "value has dtype %s but" not in text  # no same_dtype refusal


def test_errors():
    bad = OPS.replace("converts: [value]", "converts: [value]\n  same_dtype: [self, value]")
    assert spec_error(load, bad) == \
        "ops.yaml:6: fill_where: 'value' is converted to the compute dtype, so it cannot also be in promote or " \
        "same_dtype"
    typo = OPS.replace("converts: [value]", "converts: [valeu]")
    assert "valeu" in spec_error(load, typo)
