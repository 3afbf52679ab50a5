"""Per-op test cases emitted from ops.yaml: gradcheck samples, variant consistency, and one
error-input case per declared check (plus the generic dtype, broadcast and dim checks)."""

from __future__ import annotations

from formula import c_default, c_default_none
from model import DTYPE_SETS, DTYPES, Op
from torch_cases import torch_case

C_DTYPE = {d: f"YT_DTYPE_{d.upper()}" for d in DTYPES}


def _broadcast(shapes):
    out = []
    for dims in _zip_right(shapes):
        sizes = {d for d in dims if d is not None and d != 1}
        if len(sizes) > 1:
            return None
        out.append(sizes.pop() if sizes else 1)
    return out


def _zip_right(shapes):
    n = max((len(s) for s in shapes), default=0)
    padded = [[None] * (n - len(s)) + list(s) for s in shapes]
    return list(zip(*padded)) if padded else []


def default_samples(op: Op) -> list[dict]:
    tensors = [a for a in op.schema.args if a.kind == "tensor"]
    if op.samples:
        return op.samples
    base = {}
    for a in op.schema.args:
        if a.kind == "scalar" and not a.has_default:
            base[a.name] = 1.5
        if a.kind == "intlist" and not a.has_default:
            base[a.name] = [2, 3]
        if a.kind == "dtype" and not a.has_default and not a.optional:
            base[a.name] = "f32"
    if op.impl == "pointwise" and len(tensors) == 1:
        t = tensors[0].name
        return [dict(base, **{t: {"shape": s}}) for s in ([3, 4], [0, 3], [])] + \
               [dict(base, **{t: {"shape": [4, 3], "transpose": True}})]
    if op.impl == "pointwise" and len(tensors) == 2:
        a, b = tensors[0].name, tensors[1].name
        pairs = [([3, 4], [3, 4]), ([3, 1], [4]), ([0, 4], [4]), ([], [2, 3])]
        out = [dict(base, **{a: {"shape": x}, b: {"shape": y}}) for x, y in pairs]
        out.append(dict(base, **{a: {"shape": [4, 3], "transpose": True}, b: {"shape": [4]}}))
        return out
    if op.family == "factory" and not tensors:
        return [base]
    return []


def _tensor_spec(name, spec, optional=False):
    shape = spec["shape"]
    return {"name": name, "dim": len(shape), "sizes": shape or [0], "dtype": C_DTYPE[spec.get("dtype", "f64")],
            "transpose": bool(spec.get("transpose")), "optional": optional}


class CaseBuilder:
    def __init__(self, lowered):
        self.lowered = lowered
        self.functions = []  # C function definitions (lists of lines)
        self.cases = []
        self.errors = []
        self.counter = 0

    def call_expr(self, op: Op, sample: dict, fn_name: str, out_first=False):
        """Lines declaring constants, and the call expression, for one sample."""
        decls, args = [], []
        if out_first:
            args.append("out")
        ti = 0
        for a in op.schema.args:
            if a.kind == "tensor":
                if sample.get(a.name) is None:  # an optional tensor left out: None
                    args.append("NULL")
                    continue
                args.append(f"inputs[{ti}]")
                ti += 1
                continue
            if a.name not in sample:
                args.append(c_default(a))
                continue
            v = sample[a.name]
            if v is None:
                args.append(c_default_none(a))
            elif a.by_pointer:
                ctype = {"scalar": "yt_scalar", "bool": "bool", "float": "double"}[a.kind]
                one = _scalar_c(v) if a.kind == "scalar" else ("true" if v is True else "false") \
                    if a.kind == "bool" else repr(float(v))
                decls.append(f"const {ctype} {a.name}_value = {one};")
                args.append(f"&{a.name}_value")
            elif a.kind == "str":
                args.append(f'"{v}"')
            elif a.kind == "intlist":
                if v:
                    decls.append(f"static const int64_t {a.name}[] = {{{', '.join(str(x) for x in v)}}};")
                    args += [a.name, str(len(v))]
                else:
                    args += ["NULL", "0"]
            elif a.kind == "int":
                args.append("YT_NONE" if v is None else str(v))
            elif a.kind == "bool":
                args.append("true" if v else "false")
            elif a.kind == "scalar":
                args.append(_scalar_c(v))
            elif a.kind == "float":
                args.append(repr(float(v)))
            elif a.kind == "dtype":
                args.append(C_DTYPE[v])
        return decls, f"{fn_name}({', '.join(args)})"

    def define(self, lines):
        self.functions.append(lines)

    def new_fn(self, prefix):
        self.counter += 1
        return f"{prefix}_{self.counter}"

    def add_op(self, lo):
        op = lo.op
        tensors = [a.name for a in op.schema.tensor_args]
        ex = lo.has_defaults
        fn_full = lambda variant: lo.fn_name(variant, ex)  # noqa: E731
        for si, sample in enumerate(default_samples(op)):
            if any(t not in sample and not op.schema.arg(t).optional for t in tensors):
                continue
            present = _present(op, sample)
            specs = [_tensor_spec(t, sample[t], op.schema.arg(t).optional) for t in present]
            call = self.new_fn(f"call_{op.c_name}")
            decls, expr = self.call_expr(op, sample, fn_full("function"))
            self.define(_case_fn(call, decls, [f"return {expr};"]))
            inplace = out = "NULL"
            shapes = [sample[t]["shape"] if not sample[t].get("transpose") else sample[t]["shape"][::-1]
                      for t in present]
            bshape = _broadcast(shapes) if op.broadcast else (shapes[0] if shapes else None)
            if "inplace" in op.variants and bshape is not None and shapes and list(bshape) == list(shapes[0]):
                inplace = self.new_fn(f"inplace_{op.c_name}")
                d2, e2 = self.call_expr(op, sample, fn_full("inplace"))
                e2 = e2.replace("inputs[0]", "copy", 1)
                self.define(_case_fn(inplace, d2, [
                    "yt_tensor *copy = yt_clone(inputs[0]);",
                    f"if (copy != NULL && {e2} != YT_OK) {{",
                    "    yt_release(copy);",
                    "    return NULL;",
                    "}",
                    "return copy;"]))
            if "out" in op.variants:
                out = self.new_fn(f"out_{op.c_name}")
                d3, e3 = self.call_expr(op, sample, fn_full("out"), out_first=True)
                self.define(_case_fn(out, d3, [
                    "yt_tensor *out = yt_zeros_like((yt_tensor *)ctx);",
                    f"if (out != NULL && {e3} != YT_OK) {{",
                    "    yt_release(out);",
                    "    return NULL;",
                    "}",
                    "return out;"], uses_ctx=True))
            self.cases.append({
                "op": op.schema.full_name, "where": f"{op.samples_loc} sample {si}", "inputs": specs,
                "call": call, "inplace": inplace, "out": out,
                "differentiable": "true" if lo.differentiable or _composite_with_grads(op) else "false",
                "domain": f'"{op.domain}"' if op.domain else "NULL",
                "torch": torch_case(len(self.cases), op, sample, f"{op.samples_loc} sample {si}"),
            })
        self.add_errors(lo, fn_full("function"))

    def add_error(self, op, sample, what, code, fn):
        tensors = [a.name for a in op.schema.tensor_args]
        sample = {k: ({"shape": v} if op.schema.arg(k).kind == "tensor" and isinstance(v, list) else v)
                  for k, v in sample.items()}
        if any(t not in sample and not op.schema.arg(t).optional for t in tensors):
            return
        specs = [_tensor_spec(t, sample[t], op.schema.arg(t).optional) for t in _present(op, sample)]
        call = self.new_fn(f"error_{op.c_name}")
        decls, expr = self.call_expr(op, sample, fn)
        self.define(_case_fn(call, decls, [f"return {expr};"]))
        self.errors.append({"op": op.schema.full_name, "what": what, "inputs": specs, "call": call,
                            "code": code, "prefix": f"{op.schema.name}: "})

    def add_errors(self, lo, fn):
        op = lo.op
        for c in op.checks:
            self.add_error(op, c.bad, f"{c.loc}: {c.expr}".replace('"', "'"), "0", fn)
        samples = default_samples(op)
        if not samples:
            return
        base = samples[0]
        for a in op.schema.args:
            if a.kind == "str":  # a value outside its choices
                self.add_error(op, dict(base, **{a.name: "no_such_choice"}), f"{op.loc}: {a.name} not a choice",
                               "YT_ERR_VALUE", fn)
        for t, dset in op.dtypes.items():
            if dset != DTYPE_SETS["all"] and base.get(t) is not None:
                bad = next(d for d in ["bool", "i64", "f64"] if d not in dset)
                spec = dict(base[t])
                spec["dtype"] = bad
                self.add_error(op, dict(base, **{t: spec}), f"{op.loc}: dtype of {t}", "YT_ERR_DTYPE", fn)
                break
        if len(op.broadcast) >= 2:
            s = dict(base)
            for i, t in enumerate(op.broadcast):
                dt = (base.get(t) or {}).get("dtype", "f64")
                s[t] = {"shape": [[2, 3], [4, 3]][i] if i < 2 else [3], "dtype": dt}
            self.add_error(op, s, f"{op.loc}: broadcast", "YT_ERR_SHAPE", fn)
        for d in op.dims:
            if d in base:
                v = [7] if isinstance(base[d], list) else 7
                self.add_error(op, dict(base, **{d: v}), f"{op.loc}: {d} out of range", "YT_ERR_VALUE", fn)


def _scalar_c(v) -> str:
    return f"yt_float({float(v)!r})" if isinstance(v, float) else f"yt_int({v})"


def _present(op: Op, sample: dict) -> list:
    """Tensor arguments the sample gives (an optional one may be None)."""
    return [a.name for a in op.schema.tensor_args if sample.get(a.name) is not None]


def _case_fn(name, decls, body, uses_ctx=False):
    lines = ["static yt_tensor *", f"{name}(yt_tensor *const *inputs, void *ctx)", "{"]
    if not any("inputs[" in x for x in decls + body):
        lines.append("    (void)inputs; /* a factory: no tensor inputs */")
    if not uses_ctx:
        lines.append("    (void)ctx;")
    lines += ["    " + d for d in decls] + ["    " + b for b in body] + ["}"]
    return lines


def _composite_with_grads(op: Op) -> bool:
    """A composite differentiates through its parts: gradcheck it when a tensor can be floating."""
    return op.impl == "composite" and any(
        any(d in DTYPE_SETS["floating"] for d in op.dtypes[a.name]) for a in op.schema.tensor_args)
