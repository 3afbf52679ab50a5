"""Shared by the generator tests: the import path of codegen/, YAML snippets, error capture."""

from __future__ import annotations

import os
import sys
import textwrap

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CODEGEN = os.path.join(REPO, "codegen")
if CODEGEN not in sys.path:
    sys.path.insert(0, CODEGEN)

from model import SpecError  # noqa: E402
from parse import parse_derivatives, parse_ops  # noqa: E402


def yaml_text(text: str) -> str:
    """An inline YAML snippet: dedented, without the leading newline after the opening quotes."""
    return textwrap.dedent(text).lstrip("\n")


def spec_error(fn, *args) -> str:
    """`FILE:LINE: message` of the SpecError that fn(*args) raises."""
    with pytest.raises(SpecError) as info:
        fn(*args)
    return str(info.value)


def load(ops: str, derivatives: str = "") -> list:
    """Ops parsed from inline ops.yaml and derivatives.yaml snippets."""
    parsed = parse_ops(yaml_text(ops), "ops.yaml")
    parse_derivatives(yaml_text(derivatives), parsed, "derivatives.yaml")
    return parsed


def registry(ops: list) -> dict:
    return {op.schema.full_name: op for op in ops}


def cases_of(ops: list):
    """The generated test cases of `ops` (a CaseBuilder that has taken each op in turn)."""
    from cases import CaseBuilder
    from lower import OpLowering

    cb = CaseBuilder(None)
    for op in ops:
        cb.add_op(OpLowering(op, registry(ops)))
    return cb
