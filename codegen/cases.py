"""Per-op test cases emitted from ops.yaml: gradcheck samples, variant consistency, and one
error-input case per declared check (plus the generic dtype, broadcast and dim checks)."""

from __future__ import annotations

from formula import c_default, c_default_none
from model import DTYPE_SETS, DTYPES, Op, SpecError
from torch_cases import torch_case

C_DTYPE = {d: f"YT_DTYPE_{d.upper()}" for d in DTYPES}
MAX_INPUTS = 8  # YT_CASE_MAX_INPUTS in tests/unit/op_cases.h
MAX_ARGS = 8  # YT_CASE_MAX_ARGS
MAX_LIST = 6  # YT_CASE_MAX_LIST


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
    # Non-contiguous inputs: a transpose, and every 2nd or 3rd element along the last dim (read
    # through runtime/stepped_copy.c's vector loops: long enough for a few vectors and a tail).
    if op.impl == "pointwise" and len(tensors) == 1:
        t = tensors[0].name
        return [dict(base, **{t: {"shape": s}}) for s in ([3, 4], [0, 3], [])] + \
               [dict(base, **{t: {"shape": [4, 3], "transpose": True}}),
                dict(base, **{t: {"shape": [2, 21], "step": 2}}),
                dict(base, **{t: {"shape": [5, 7], "step": 3}})]
    if op.impl == "pointwise" and len(tensors) == 2:
        a, b = tensors[0].name, tensors[1].name
        pairs = [([3, 4], [3, 4]), ([3, 1], [4]), ([0, 4], [4]), ([], [2, 3])]
        out = [dict(base, **{a: {"shape": x}, b: {"shape": y}}) for x, y in pairs]
        out.append(dict(base, **{a: {"shape": [4, 3], "transpose": True}, b: {"shape": [4]}}))
        out.append(dict(base, **{a: {"shape": [2, 21], "step": 2}, b: {"shape": [21]}}))
        out.append(dict(base, **{a: {"shape": [3, 20]}, b: {"shape": [3, 20], "step": 3}}))
        # Mixed dtypes, where the op promotes an integer operand beside a floating one: the
        # backward then gets tensors of two dtypes (pow's and clamp's refused the integer one).
        if {a, b} <= set(op.promote) and all("i64" in op.dtypes.get(t, []) for t in (a, b)):
            out.append(dict(base, **{a: {"shape": [3, 4]}, b: {"shape": [4], "dtype": "i64"}}))
            out.append(dict(base, **{a: {"shape": [3, 1], "dtype": "i64"}, b: {"shape": [3, 4]}}))
        return out
    if op.family == "factory" and not tensors:
        return [base]
    return []


def _tensor_spec(name, spec, optional=False, no_grad=False):
    shape = spec["shape"]
    return {"name": name, "dim": len(shape), "sizes": shape or [0], "dtype": C_DTYPE[spec.get("dtype", "f64")],
            "transpose": bool(spec.get("transpose")), "step": int(spec.get("step", 1)),
            "high": int(spec.get("high", 0)),
            "optional": optional, "no_grad": no_grad or bool(spec.get("no_grad"))}


def _any_floating(specs) -> bool:
    """Whether some tensor of a case can require grad: a sample made only of integral or bool
    tensors (mean(i32, dtype=f64)) runs forward only."""
    return any(spec["dtype"] in (C_DTYPE[d] for d in DTYPE_SETS["floating"]) for spec in specs)


def non_differentiable(op: Op) -> list:
    """Arguments derivatives.yaml marks `ARG: non_differentiable`."""
    return list(op.derivative.non_differentiable) if op.derivative is not None else []


def refusal_message(op: Op, arg: str) -> str:
    """How an op refuses a non-differentiable argument that requires grad (lower.py's refusals;
    composites that refuse one by hand write the same)."""
    return f"{op.schema.name}: {arg} requires grad, but {op.schema.name} is not differentiable with respect to {arg}"


class CaseBuilder:
    def __init__(self, lowered):
        self.lowered = lowered
        self.functions = []  # C function definitions (lists of lines)
        self.cases = []
        self.errors = []
        self.counter = 0
        self.pieces_helper = False

    def call_expr(self, op: Op, sample: dict, fn_name: str, out_first=False, mutable=None):
        """Lines declaring constants, and the call expression, for one sample. With `mutable` (a
        list), the int, int[], float and Scalar values the sample gives are read from a
        yt_case_args `args` instead, and their descriptions appended to `mutable`."""
        decls, args = [], []
        if out_first:
            args.append("out")
        ti = 0
        for a in op.schema.args:
            if a.kind == "tensorlist":
                elems = []
                for x in sample.get(a.name) or []:
                    elems.append("NULL" if x is None else f"inputs[{ti}]")
                    ti += x is not None
                if elems:
                    decls.append(f"yt_tensor *const {a.name}[{len(elems)}] = {{{', '.join(elems)}}};")
                    args += [a.name, str(len(elems))]
                else:
                    args += ["NULL", "0"]
                continue
            if a.kind == "tensor":
                if sample.get(a.name) is None:  # an optional tensor left out: None
                    args.append("NULL")
                    continue
                args.append(f"inputs[{ti}]")
                ti += 1
                continue
            if a.name not in sample and not (mutable is not None and _mutable_default(a)):
                args.append(c_default(a))
                continue
            v = sample[a.name] if a.name in sample else a.default
            arg = _mutable_arg(a, v) if mutable is not None and len(mutable) < MAX_ARGS else None
            if arg is not None:
                k = len(mutable)
                mutable.append(arg)
                at = f"args->arg[{k}]"
                if a.kind == "intlist":
                    args += [f"{at}.list", f"{at}.len"]
                elif a.kind == "int":
                    args.append(f"{at}.i")
                elif a.by_pointer:
                    ctype = "yt_scalar" if a.kind == "scalar" else "double"
                    value = f"yt_case_scalar(&{at})" if a.kind == "scalar" else f"{at}.f"
                    decls.append(f"const {ctype} {a.name}_value = {value};")
                    args.append(f"&{a.name}_value")
                else:
                    args.append(f"yt_case_scalar(&{at})" if a.kind == "scalar" else f"{at}.f")
            elif v is None:
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
            specs = _specs(op, sample)
            if len(specs) > MAX_INPUTS:
                raise SpecError(op.samples_loc, f"{op.schema.full_name}: sample {si} has {len(specs)} tensors; "
                                f"the generated tests hold at most {MAX_INPUTS}")
            if op.schema.returns_list:
                self.add_list_case(lo, sample, si, specs, fn_full)
                continue
            if op.schema.multi:  # one case per result: gradcheck each in turn (the others get zero grads)
                for k, r in enumerate(op.schema.results):
                    self.add_multi_case(lo, sample, si, specs, k, fn_full)
                continue
            call = self.new_fn(f"call_{op.c_name}")
            decls, expr = self.call_expr(op, sample, fn_full("function"))
            self.define(_case_fn(call, decls, [f"return {expr};"]))
            mutable = []
            d_args, e_args = self.call_expr(op, sample, fn_full("function"), mutable=mutable)
            call_args = "NULL"
            if mutable:
                call_args = "args_" + call[len("call_"):]  # named after its call: no renumbering
                self.define(_case_fn(call_args, d_args, [f"return {e_args};"], args=True))
            inplace = out = "NULL"
            shapes = [sample[t]["shape"] if not sample[t].get("transpose") else sample[t]["shape"][::-1]
                      for t in present]
            bshape = _broadcast(shapes) if op.broadcast else (shapes[0] if shapes else None)
            # in place, an integer self cannot take a result promoted to floating
            dts = [sample[t].get("dtype", "f64") in DTYPE_SETS["floating"] for t in present]
            promoted_away = bool(dts) and not dts[0] and any(dts[1:])
            if ("inplace" in op.variants and bshape is not None and shapes and list(bshape) == list(shapes[0])
                    and not promoted_away):
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
                "differentiable": "true" if lo.differentiable and _any_floating(specs) else "false",
                "domain": f'"{op.domain}"' if op.domain else "NULL",
                "call_args": call_args, "args": mutable,
                "torch": torch_case(len(self.cases), op, sample, f"{op.samples_loc} sample {si}"),
            })
        self.add_errors(lo, fn_full("function"))

    def multi_call(self, op, sample, fn, k):
        """Lines calling a multi-result function and returning result k (the others released)."""
        decls, expr = self.call_expr(op, sample, fn)
        n = len(op.schema.results)
        expr = expr[:-1] + (", " if expr[-2] != "(" else "") + ", ".join(f"&r[{i}]" for i in range(n)) + ")"
        body = [f"yt_tensor *r[{n}];", f"if ({expr} != YT_OK)", "    return NULL;"]
        body += [f"yt_release(r[{i}]);" for i in range(n) if i != k] + [f"return r[{k}];"]
        return decls, body

    def list_call(self, op, sample, fn):
        """Lines calling a -> Tensor[] function and returning sum_i (i + 1) * sum(piece_i)."""
        if not self.pieces_helper:
            self.pieces_helper = True
            self.define([
                "/* -> Tensor[] cases: one tensor from the pieces, sum_i (i + 1) * sum(piece_i), so that every",
                " * piece's gradient is checked (and told apart); NULL when the call failed. */",
                "static yt_tensor *",
                "weighted_pieces(int64_t n, yt_tensor **pieces, yt_tensor *first)",
                "{",
                "    if (n < 0)",
                "        return NULL;",
                "    yt_tensor *total = yt_sum(first);",
                "    yt_tensor *acc = yt_mul_scalar(total, yt_int(0));",
                "    yt_release(total);",
                "    for (int64_t i = 0; i < n; i++) {",
                "        yt_tensor *sum = yt_sum(pieces[i]);",
                "        yt_tensor *term = yt_mul_scalar(sum, yt_int(i + 1));",
                "        yt_tensor *next = yt_add(acc, term);",
                "        yt_release(sum);",
                "        yt_release(term);",
                "        yt_release(acc);",
                "        yt_release(pieces[i]);",
                "        acc = next;",
                "    }",
                "    return acc;",
                "}"])
        decls, expr = self.call_expr(op, sample, fn)
        counting = expr[:-1] + ", NULL, 0)"
        expr = expr[:-1] + ", pieces, 64)"
        body = ["yt_tensor *pieces[64];",
                f"if ({counting} > 64)",
                "    return NULL; /* more pieces than the test holds */",
                f"return weighted_pieces({expr}, pieces, inputs[0]);"]
        return decls, body

    def add_list_case(self, lo, sample, si, specs, fn_full):
        op = lo.op
        call = self.new_fn(f"call_{op.c_name}")
        decls, body = self.list_call(op, sample, fn_full("function"))
        self.define(_case_fn(call, decls, body))
        where = f"{op.samples_loc} sample {si}"
        torch = torch_case(len(self.cases), op, sample, where)
        torch["expr"] = f"sum((i + 1) * p.sum() for i, p in enumerate({torch['expr']}))"
        self.cases.append({
            "torch": torch, "op": op.schema.full_name, "where": where, "inputs": specs,
            "call": call, "inplace": "NULL", "out": "NULL", "differentiable": "true",
            "domain": f'"{op.domain}"' if op.domain else "NULL",
        })
        # a too-small out_capacity (0 with a non-NULL out) is refused
        err = self.new_fn(f"error_{op.c_name}")
        d2, e2 = self.call_expr(op, sample, fn_full("function"))
        self.define(_case_fn(err, d2, [
            "yt_tensor *pieces[1];",
            f"int64_t n = {e2[:-1]}, pieces, 0);",
            "return n < 0 ? NULL : yt_retain(inputs[0]); /* counted without refusing: accepted */"]))
        self.errors.append({"op": op.schema.full_name, "what": f"{op.loc}: out_capacity below the count",
                            "inputs": specs, "call": err, "code": "YT_ERR_VALUE", "prefix": f"{op.schema.name}: ",
                            "requires_grad": False})

    def add_multi_case(self, lo, sample, si, specs, k, fn_full):
        op = lo.op
        r = op.schema.results[k]
        call = self.new_fn(f"call_{op.c_name}_{r}")
        decls, body = self.multi_call(op, sample, fn_full("function"), k)
        self.define(_case_fn(call, decls, body))
        out = "NULL"
        if "out" in op.variants:  # the out= variant into zeros like every function result
            out = self.new_fn(f"out_{op.c_name}_{r}")
            n = len(op.schema.results)
            d1, e1 = self.call_expr(op, sample, fn_full("function"))
            d3, e3 = self.call_expr(op, sample, fn_full("out"))
            e1 = e1[:-1] + ", " + ", ".join(f"&ref[{i}]" for i in range(n)) + ")"
            e3 = e3.replace("(", "(" + ", ".join(f"o[{i}]" for i in range(n)) + ", ", 1)
            self.define(_case_fn(out, sorted(set(d1 + d3)), [
                f"yt_tensor *ref[{n}], *o[{n}] = {{NULL}};",
                f"if ({e1} != YT_OK)",
                "    return NULL;",
                f"for (int i = 0; i < {n}; i++) {{",
                "    o[i] = yt_zeros_like(ref[i]);",
                "    yt_release(ref[i]);",
                "}",
                f"yt_status st = {' || '.join(f'o[{i}] == NULL' for i in range(n))} ? yt_errcode() : {e3};",
                f"for (int i = 0; i < {n}; i++)",
                f"    if (i != {k} || st != YT_OK)",
                "        yt_release(o[i]);",
                f"return st == YT_OK ? o[{k}] : NULL;"]))
        where = f"{op.samples_loc} sample {si} result {r}"
        torch = torch_case(len(self.cases), op, sample, where)
        torch["expr"] = f"({torch['expr']})[{k}]"  # PyTorch returns the results as a tuple
        self.cases.append({
            "torch": torch,
            "op": op.schema.full_name, "where": where, "inputs": specs,
            "call": call, "inplace": "NULL", "out": out,
            "differentiable": "true" if lo.differentiable and r in lo.diff_results else "false",
            "domain": f'"{op.domain}"' if op.domain else "NULL",
        })

    def add_refusals(self, op, samples, fn):
        """One error case per non-differentiable argument (derivatives.yaml's, or a sample's
        `no_grad` tensor): the first sample that gives it, with it requiring grad, is refused."""
        refused = non_differentiable(op)
        names = list(refused)
        for sample in samples:
            names += [t for t, v in sample.items() if isinstance(v, dict) and v.get("no_grad") and t not in names]
        for t in names:
            sample = next((x for x in samples if isinstance(x.get(t), dict) and (t in refused or x[t].get("no_grad"))
                           and x[t].get("dtype", "f64") in DTYPE_SETS["floating"]), None)
            if sample is None:
                raise SpecError(op.samples_loc, f"{op.schema.full_name}: no sample gives '{t}' a floating tensor, "
                                "and the test of its refusal when it requires grad needs one")
            # only `t` requires grad: the refusal must not depend on the other inputs
            sample = {k: (dict(v, no_grad=False) if isinstance(v, dict) and k != t else v) for k, v in sample.items()}
            sample[t] = dict(sample[t], no_grad=True)
            self.add_error(op, sample, f"{op.loc}: {t} requires grad", "YT_ERR_VALUE", fn,
                           prefix=refusal_message(op, t), requires_grad=True)

    def add_inplace_refusal(self, lo, samples):
        """A not-differentiable op's in-place form, without `inplace_grad: zero`, refuses a self
        that requires grad (lower.py's overwrite_line): one error case writing into a clone of a
        floating self that requires grad (grad mode off must accept it)."""
        op = lo.op
        if op.inplace_write_rule() != "refuse":
            return
        sample = next((x for x in samples if isinstance(x.get("self"), dict)
                       and x["self"].get("dtype", "f64") in DTYPE_SETS["floating"]
                       and not x["self"].get("transpose")), None)
        if sample is None:
            raise SpecError(op.samples_loc, f"{op.schema.full_name}: no sample gives 'self' a floating tensor, "
                            "and the test of the in-place form's refusal when self requires grad needs one")
        sample = {k: (dict(v, no_grad=(k == "self")) if isinstance(v, dict) else v) for k, v in sample.items()}
        specs = [dict(x, no_grad=x["name"] == "self") for x in _specs(op, sample)]
        call = self.new_fn(f"error_inplace_{op.c_name}")
        decls, expr = self.call_expr(op, sample, lo.fn_name("inplace", lo.has_defaults))
        self.define(_case_fn(call, decls, [
            "yt_tensor *copy = yt_clone(inputs[0]); /* requires grad when inputs[0] does */",
            f"if (copy != NULL && {expr.replace('inputs[0]', 'copy', 1)} != YT_OK) {{",
            "    yt_release(copy);",
            "    return NULL;",
            "}",
            "return copy;"]))
        name = lo.msg_name("inplace")
        self.errors.append({"op": op.schema.full_name, "what": f"{op.derivative.loc}: in-place with self requiring grad",
                            "inputs": specs, "call": call, "code": "YT_ERR_STATE",
                            "prefix": f"{name}: self requires grad, and {op.schema.name} is not differentiable",
                            "requires_grad": True, "domain": f'"{op.domain}"' if op.domain else "NULL"})

    def add_error(self, op, sample, what, code, fn, prefix=None, requires_grad=False):
        tensors = [a.name for a in op.schema.tensor_args]
        sample = {k: ({"shape": v} if op.schema.arg(k).kind == "tensor" and isinstance(v, list) else v)
                  for k, v in sample.items()}
        if any(t not in sample and not op.schema.arg(t).optional for t in tensors):
            return
        specs = _specs(op, sample)
        call = self.new_fn(f"error_{op.c_name}")
        if op.schema.multi:
            decls, body = self.multi_call(op, sample, fn, 0)
            self.define(_case_fn(call, decls, body))
        elif op.schema.returns_list:
            decls, body = self.list_call(op, sample, fn)
            self.define(_case_fn(call, decls, body))
        else:
            decls, expr = self.call_expr(op, sample, fn)
            self.define(_case_fn(call, decls, [f"return {expr};"]))
        if requires_grad:  # only the refused argument is marked; the test makes it require grad
            specs = [dict(x, no_grad=x["name"] in sample and isinstance(sample[x["name"]], dict)
                          and bool(sample[x["name"]].get("no_grad"))) for x in specs]
        self.errors.append({"op": op.schema.full_name, "what": what, "inputs": specs, "call": call,
                            "code": code, "prefix": prefix or f"{op.schema.name}: ", "requires_grad": requires_grad,
                            "domain": f'"{op.domain}"' if op.domain else "NULL"})

    def add_errors(self, lo, fn):
        op = lo.op
        for c in op.checks:
            self.add_error(op, c.bad, f"{c.loc}: {c.expr}".replace('"', "'"), "0", fn)
        samples = default_samples(op)
        if not samples:
            return
        self.add_refusals(op, samples, fn)
        self.add_inplace_refusal(lo, samples)
        base = samples[0]
        for a in op.schema.args:
            if a.kind == "str":  # a value outside its choices
                self.add_error(op, dict(base, **{a.name: "no_such_choice"}), f"{op.loc}: {a.name} not a choice",
                               "YT_ERR_VALUE", fn)
        for t, dset in op.dtypes.items():
            if dset != DTYPE_SETS["all"] and base.get(t) is not None:
                bad = next(d for d in ["bool", "i64", "f64"] if d not in dset)
                if isinstance(base[t], list):  # a Tensor[]: its last element
                    if not base[t] or base[t][-1] is None:
                        continue
                    spec = list(base[t])
                    spec[-1] = dict(spec[-1], dtype=bad)
                    self.add_error(op, dict(base, **{t: spec}), f"{op.loc}: dtype of {t}", "YT_ERR_DTYPE", fn)
                    break
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


def _mutable_arg(a, v):
    """The yt_case_arg (as a dict for the template) of an argument the args call reads, or None
    for one it leaves at the sample's value: bools, strings, dtypes, None, a bool Scalar, an
    int[] longer than YT_CASE_MAX_LIST."""
    if v is None or isinstance(v, bool):
        return None
    if a.kind == "int":
        return {"name": a.name, "kind": "YT_CASE_INT", "i": v}
    if a.kind == "intlist" and isinstance(v, list) and len(v) <= MAX_LIST:
        return {"name": a.name, "kind": "YT_CASE_INTLIST", "list": v or [0], "len": len(v)}
    if a.kind == "float":
        return {"name": a.name, "kind": "YT_CASE_FLOAT", "f": repr(float(v))}
    if a.kind == "scalar":
        if isinstance(v, int):
            return {"name": a.name, "kind": "YT_CASE_SCALAR", "i": v, "is_int": True}
        return {"name": a.name, "kind": "YT_CASE_SCALAR", "f": repr(float(v))}
    return None


def _mutable_default(a) -> bool:
    """Whether the args call reads an argument the sample leaves out: an int, float or Scalar
    with a number for its default (an int[]'s default is NULL, 0, which a table cannot hold)."""
    return a.kind in ("int", "float", "scalar") and a.has_default and \
        isinstance(a.default, (int, float)) and not isinstance(a.default, bool)


def _scalar_c(v) -> str:
    return f"yt_float({float(v)!r})" if isinstance(v, float) else f"yt_int({v})"


def _present(op: Op, sample: dict) -> list:
    """Tensor arguments the sample gives (an optional one may be None)."""
    return [a.name for a in op.schema.tensor_args if sample.get(a.name) is not None]


def _specs(op: Op, sample: dict) -> list:
    """The case's input tensors in C order: tensors the sample gives, Tensor[] elements in turn."""
    out = []
    refused = non_differentiable(op)
    for a in op.schema.args:
        if a.kind == "tensor" and sample.get(a.name) is not None:
            out.append(_tensor_spec(a.name, sample[a.name], a.optional, a.name in refused))
        elif a.kind == "tensorlist":
            out += [_tensor_spec(a.name, x, a.elem_optional) for x in sample.get(a.name) or [] if x is not None]
    return out


def _case_fn(name, decls, body, uses_ctx=False, args=False):
    last = "const yt_case_args *args" if args else "void *ctx"
    lines = ["static yt_tensor *", f"{name}(yt_tensor *const *inputs, {last})", "{"]
    if not any("inputs[" in x for x in decls + body):
        lines.append("    (void)inputs; /* a factory: no tensor inputs */")
    if not uses_ctx and not args:
        lines.append("    (void)ctx;")
    lines += ["    " + d for d in decls] + ["    " + b for b in body] + ["}"]
    return lines
