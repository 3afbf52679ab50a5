#!/usr/bin/env python3
"""yaten's code generator: ops.yaml + derivatives.yaml -> generated/ (and docs/ops.md).

Usage: python3 codegen/gen.py [--root DIR] [--out DIR] [--docs FILE]
Errors in the YAML are reported as `ops.yaml:LINE: message` with exit status 1."""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cases import CaseBuilder  # noqa: E402
from emit import FormatFailure, TemplateFailure, environment, format_c_files, render, write_if_changed  # noqa: E402
from lower import OpLowering, dtype_mask_name  # noqa: E402
from model import DTYPE_SETS, DTYPES, FAMILIES, Loc, SpecError  # noqa: E402
from parse import parse_derivatives, parse_ops  # noqa: E402


class Lowered:
    """Everything the templates need for one op."""

    def __init__(self, op, registry):
        self.op = op
        self.lowering = OpLowering(op, registry)
        self.functions = self.lowering.functions()
        for f in self.functions:
            f.ret_decl = f.ret if f.ret.endswith("*") else f.ret + " "
        self.kernel = self.lowering.kernel_decl()
        self.impl_proto = self.lowering.impl_proto()
        self.node = self.lowering.node_desc()
        self.pointwise = self.lowering.pointwise_kernel()
        d = op.derivative
        parts = [f"`{f.input}: {f.source}`" for f in d.formulas] if d else []
        parts += [f"`{t}`: not differentiable (refused when it requires grad)"
                  for t in (d.non_differentiable if d else [])]
        self.md_derivative = "; ".join(parts) if parts else ("not differentiable" if d and d.not_differentiable else "")
        self.md_derivative_loc = f"derivatives.yaml:{d.loc.line}" if d else ""


def load(root: str):
    def read(name):
        with open(os.path.join(root, name), "rb") as f:
            data = f.read()
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise SpecError(Loc(name, data[:e.start].count(b"\n") + 1), "not valid UTF-8") from None

    ops = parse_ops(read("ops.yaml"), "ops.yaml")
    parse_derivatives(read("derivatives.yaml"), ops, "derivatives.yaml")
    return ops


def generate(root: str) -> dict:
    """Returns {relative path: content} for every generated file."""
    ops = load(root)
    registry = {op.schema.full_name: op for op in ops}
    lowered = [Lowered(op, registry) for op in ops]
    env = environment()
    files = {}
    files["generated/include/yaten/ops.h"] = render(env, "ops.h.j2", ops=lowered)
    for fam in FAMILIES:
        members = [lo for lo in lowered if lo.op.family == fam]
        if members:
            files[f"generated/ops_{fam}.c"] = render(env, "ops.c.j2", ops=members, family=fam)
    dtype_sets = [{"name": dtype_mask_name(m), "mask": hex(sum(1 << DTYPES.index(d) for d in m)),
                   "members": ", ".join(m)} for m in DTYPE_SETS.values()]
    kernels = [lo.kernel for lo in lowered if lo.kernel]
    files["generated/kernels.h"] = render(env, "kernels.h.j2", kernels=kernels, dtype_sets=dtype_sets,
                                          impl_protos=[lo.impl_proto for lo in lowered if lo.impl_proto])
    files["generated/dispatch.c"] = render(env, "dispatch.c.j2", kernels=kernels)
    files["generated/kernels_pointwise.c"] = render(env, "kernels_pointwise.c.j2",
                                                    kernels=[lo.pointwise for lo in lowered if lo.pointwise])
    nodes = [lo.node for lo in lowered if lo.node]
    files["generated/autograd_record.h"] = render(env, "autograd_record.h.j2", nodes=nodes)
    files["generated/autograd.c"] = render(env, "autograd.c.j2", nodes=nodes)
    files["generated/registry.c"] = render(env, "registry.c.j2", ops=lowered)
    cb = CaseBuilder(lowered)
    for lo in lowered:
        cb.add_op(lo.lowering)
    files["generated/tests/op_cases.c"] = render(env, "op_cases.c.j2", functions=cb.functions, cases=cb.cases,
                                                 errors=cb.errors)
    files["generated/tests/torch_cases.py"] = render(env, "torch_cases.py.j2", cases=[c["torch"] for c in cb.cases])
    families = [{"name": f, "ops": [f"`{lo.op.schema.full_name}`" for lo in lowered if lo.op.family == f]}
                for f in FAMILIES]
    files["docs/ops.md"] = render(env, "ops.md.j2", ops=lowered, families=[f for f in families if f["ops"]])
    return files


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                   help="folder holding ops.yaml and derivatives.yaml (default: the repository)")
    p.add_argument("--out", default=None,
                   help="folder to write into (default: the root); generated/ and docs/ go below it")
    args = p.parse_args(argv)
    try:
        files = format_c_files(generate(args.root))
    except SpecError as e:
        print(f"{e.loc}: error: {e.message}", file=sys.stderr)
        return 1
    except (TemplateFailure, FormatFailure) as e:
        print(f"{e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"gen.py: {e.filename}: {e.strerror}", file=sys.stderr)
        return 1
    out = args.out or args.root
    changed = 0
    for rel, text in sorted(files.items()):  # --out DIR mirrors the layout under DIR
        changed += write_if_changed(os.path.join(out, rel), text)
    print(f"gen.py: {len(files)} files, {changed} changed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
