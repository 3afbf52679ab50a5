"""The PyTorch side of the differential tests: for every per-op case in generated/tests/op_cases.c
(same order, same index), a Python function that computes the op with PyTorch from the case's
tensors, with the sample's other arguments written out. Emitted as generated/tests/torch_cases.py
and run by tests/diff/test_vs_torch.py against what tests/diff/runner.c computed with yaten."""

from __future__ import annotations

import keyword

from model import DTYPE_SETS, DTYPES, Op

TORCH_DTYPE = {"bool": "torch.bool", "u8": "torch.uint8", "i8": "torch.int8", "i16": "torch.int16",
               "i32": "torch.int32", "i64": "torch.int64", "f16": "torch.float16", "bf16": "torch.bfloat16",
               "f32": "torch.float32", "f64": "torch.float64"}


def py_name(name: str) -> str:
    """An argument name as a Python identifier: keywords (uniform's `from`) get a trailing _."""
    return name + "_" if keyword.iskeyword(name) else name


def _py_value(arg, value) -> str:
    if value is None:
        return "None"
    if arg.kind == "dtype":
        return TORCH_DTYPE[value]
    if arg.kind == "device":
        return repr(value)
    if arg.kind == "intlist":
        return "[" + ", ".join(str(int(x)) for x in value) + "]"
    if arg.kind == "bool":
        return "True" if value else "False"
    if arg.kind == "float":
        return repr(float(value))
    return repr(value)


def _reference(op: Op, tensor_names: list[str]) -> str:
    if op.torch_ref:
        return op.torch_ref
    # The overload packet, not one overload: PyTorch picks the overload from the argument types,
    # and our overload names need not match aten's (transpose vs transpose.int).
    parts = []
    for a in op.schema.args:
        parts.append(f"{a.name}={py_name(a.name)}" if a.kwarg_only else py_name(a.name))
    return f"torch.ops.aten.{op.schema.name}({', '.join(parts)})"


def torch_case(index: int, op: Op, sample: dict, where: str) -> dict:
    """One entry of generated/tests/torch_cases.py."""
    # The tensors the case passes (an optional tensor the sample leaves out is None).
    tensors = [a for a in op.schema.args if a.kind == "tensor" and sample.get(a.name) is not None]
    names, specs = [], []  # the function's parameters: one per case input (Tensor[] elements: NAME_i)
    locals_ = []
    for a in op.schema.args:
        if a.kind == "tensor" and sample.get(a.name) is not None:
            names.append(a.name)
            specs.append(sample[a.name])
        elif a.kind == "tensorlist":
            elems = []
            for i, x in enumerate(sample.get(a.name) or []):
                if x is None:
                    elems.append("None")
                    continue
                names.append(f"{a.name}_{i}")
                specs.append(x)
                elems.append(f"{a.name}_{i}")
            locals_.append(f"{py_name(a.name)} = [{', '.join(elems)}]")
    for a in op.schema.args:
        if a.kind == "tensorlist":
            continue
        if a.kind == "tensor":
            if sample.get(a.name) is None:
                locals_.append(f"{py_name(a.name)} = None")
            continue
        value = sample[a.name] if a.name in sample else a.default
        locals_.append(f"{py_name(a.name)} = {_py_value(a, value)}")
    # tensors that never require grad: the op refuses them when they do (a refusal job checks it)
    refused = op.derivative.non_differentiable if op.derivative is not None else []
    no_grad = [n in refused or bool(spec.get("no_grad")) for n, spec in zip(names, specs)]
    is_free = ["dtype" not in spec for spec in specs]
    owners = [n.rsplit("_", 1)[0] if op.schema.arg(n) is None else n for n in names]
    free = [o for o, f in zip(owners, is_free) if f]
    dtypes = [d for d in DTYPES if all(d in op.dtypes.get(t, DTYPES) for t in free)] if free else []
    # An op that checks is_floating(result_dtype) takes integral inputs only with a floating
    # ScalarType argument (mean(i32) is an error, mean(i32, dtype=f64) is not, as in PyTorch):
    # free tensors of a sample without one are tried in the floating dtypes.
    if any(c.expr.replace(" ", "") == "is_floating(result_dtype)" for c in op.checks) and \
            not any(sample.get(a.name) for a in op.schema.args if a.kind == "dtype"):
        dtypes = [d for d in dtypes if d in DTYPE_SETS["floating"]]
    return {
        "index": index,
        "fn": f"case_{index}",
        "op": op.schema.full_name,
        "where": where,
        "tensors": [py_name(n) for n in names],
        "free": is_free,
        "no_grad": no_grad,
        "empty": any(0 in spec["shape"] for spec in specs),
        "dtypes": dtypes,
        "random": not op.deterministic_samples and any(a.kind == "generator" for a in op.schema.args),
        "locals": locals_,
        "expr": _reference(op, [t.name for t in tensors]),
    }
