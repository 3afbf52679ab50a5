"""Derivative formulas -> straight-line C.

A formula is a Python expression (parsed with `ast`) over public ops. Each call becomes one C
statement assigning a named temporary; temporaries and unpacked saved tensors are released in
reverse order after the gradient is assigned, and one NULL check follows (every op propagates
NULL, so a failure anywhere falls through to it). The compiler also records what the node must
save (tensors, shapes, scalars, ...) and which gradients use each saved value."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from model import Formula, Op, SpecError

# Python operators -> (op base name, overloads by operand kinds). "T" tensor, "S" scalar-like.
_BINOPS = {
    ast.Add: ("add", {"TT": ("add.Tensor", False), "TS": ("add.Scalar", False), "ST": ("add.Scalar", True)}),
    ast.Sub: ("sub", {"TT": ("sub.Tensor", False), "TS": ("sub.Scalar", False), "ST": ("rsub.Scalar", True)}),
    ast.Mult: ("mul", {"TT": ("mul.Tensor", False), "TS": ("mul.Scalar", False), "ST": ("mul.Scalar", True)}),
    ast.Div: ("div", {"TT": ("div.Tensor", False), "TS": ("div.Scalar", False)}),
    ast.Pow: ("pow", {"TT": ("pow.Tensor_Tensor", False), "TS": ("pow.Tensor_Scalar", False)}),
}
_CMPOPS = {
    ast.Gt: {"TT": ("gt.Tensor", False), "TS": ("gt.Scalar", False), "ST": ("lt.Scalar", True)},
    ast.Lt: {"TT": ("lt.Tensor", False), "TS": ("lt.Scalar", False), "ST": ("gt.Scalar", True)},
    ast.Eq: {"TT": ("eq.Tensor", False), "TS": ("eq.Scalar", False), "ST": ("eq.Scalar", True)},
}
_ATTRS = {"shape": ("yt_shape", "intlist"), "numel": ("int64_t", "int"), "dim": ("int64_t", "int"),
          "dtype": ("yt_dtype", "dtype")}
_SCALARISH = ("scalar", "int", "float", "int_lit", "float_lit", "bool_lit")


@dataclass
class Saved:
    field: str  # member of the node struct
    c_type: str  # yt_saved, yt_shape, int64_t, yt_scalar, yt_int_list, bool, yt_dtype, double
    source: str  # what to save: "self" (tensor arg), "result", "self.shape", "alpha", ...
    used_by: list = field(default_factory=list)  # formula inputs (gradient names)


@dataclass
class Value:
    kind: str  # tensor | scalar | int | intlist | bool | dtype | float | int_lit | float_lit | bool_lit
    c: str  # C expression (for intlist: "ptr, len")


@dataclass
class CompiledFormula:
    input: str
    index: int  # edge index (position among tensor arguments; a Tensor[]'s first element)
    source: str
    loc: object
    c_lines: list
    cond: str = ""  # C condition: the node needs this gradient


@dataclass
class FusedFormula:
    c_lines: list
    partial: bool  # covers only the first inputs: the others keep their formulas (fused_ran)


class _Compiler:
    def __init__(self, op: Op, formula: Formula, registry: dict, saved: dict, out_index: int):
        self.op = op
        self.formula = formula
        self.registry = registry  # full name -> Op
        self.saved = saved  # source -> Saved (shared across formulas of one op)
        self.out_index = out_index
        self.lines: list[str] = []
        self.unpacked: list[str] = []
        self.temps: list[str] = []
        self.fused_for: list[str] = []  # the fused formula's gradients

    def fail(self, msg: str):
        raise SpecError(self.formula.loc, f"{self.op.schema.full_name}: formula for '{self.formula.input}': {msg}")

    def save(self, source: str, c_type: str, fld: str) -> Saved:
        s = self.saved.get(source)
        if s is None:
            s = Saved(fld, c_type, source)
            self.saved[source] = s
        # the fused formula runs for any gradient: what it reads is saved for all of them
        users = self.fused_for if self.formula.input == "fused" else [self.formula.input]
        for u in users:
            if u not in s.used_by:
                s.used_by.append(u)
        return s

    # -------------------------------------------------------------- expressions

    def compile(self) -> list[str]:
        try:
            tree = ast.parse(self.formula.source, mode="eval")
        except SyntaxError as e:
            where = f"column {e.offset}" if e.offset else "the end"  # Python gives 0 for an early end
            self.fail(f"syntax error at {where}: {e.msg}")
        if self.op.schema.arg(self.formula.input).kind == "tensorlist":
            return self.compile_list(tree.body)
        target = f"out[{self.out_index}]"
        value = self.expr(tree.body, final=True)
        if value.kind != "tensor":
            self.fail(f"must evaluate to a tensor, got a {value.kind}")
        if value.c.startswith("yt_") and value.c.endswith(")") and value.c not in self.unpacked:
            self.lines.append(f"{target} = {value.c};")
        else:
            self.lines.append(f"{target} = yt_retain({value.c});")
        for t in reversed(self.temps):
            self.lines.append(f"yt_release({t});")
        for u in reversed(self.unpacked):
            self.lines.append(self.release_of(u))
        self.lines.append(f"if ({target} == NULL)")
        self.lines.append("    return yt__last_status();")
        return self.lines

    def compile_list(self, body) -> list[str]:
        """The gradients of a Tensor[] argument: a call to an op returning Tensor[], one per element,
        written straight into the node's outputs."""
        name = self.formula.input
        if not (isinstance(body, ast.Call) and isinstance(body.func, ast.Name)):
            self.fail("the gradient of a Tensor[] is a call to an op returning Tensor[] (one per element)")
        candidates = [op for op in self.registry.values() if op.schema.name == body.func.id and op.schema.returns_list]
        if not candidates:
            self.fail(f"'{body.func.id}' is not an op returning Tensor[]")
        args = [self.expr(a) for a in body.args]
        kwargs = {k.arg: self.expr(k.value) for k in body.keywords}
        errors = []
        for op in candidates:
            try:
                c_args = self.bind(op, args, kwargs)
            except _NoMatch as e:
                errors.append(f"{op.schema.full_name}: {e}")
                continue
            fn = f"yt_{op.c_name}_ex" if any(a.has_default for a in op.schema.args) else f"yt_{op.c_name}"
            n = f"node->{name}_len"
            self.lines.append(f"int64_t n_grads = {fn}({', '.join(c_args)}, out + {self.out_index}, {n});")
            for t in reversed(self.temps):
                self.lines.append(f"yt_release({t});")
            for u in reversed(self.unpacked):
                self.lines.append(self.release_of(u))
            self.lines.append(f"if (n_grads != {n})")
            self.lines.append(f'    return n_grads < 0 ? yt__last_status() : yt__fail_status(YT_ERR_INTERNAL, '
                              f'"{self.op.schema.name}: the formula for {name} gave %lld gradients for %d tensors", '
                              f"(long long)n_grads, {n});")
            return self.lines
        self.fail(f"no overload of '{body.func.id}' accepts these arguments ({'; '.join(errors)})")

    def release_of(self, u: str) -> str:
        a = self.op.schema.arg(u)
        if a is not None and a.kind == "tensorlist":
            return f"yt__release_list({u}, node->{u}_len);"
        return f"yt_release({u});"

    def name(self, ident: str) -> Value:
        results = self.op.schema.results
        if ident == "grad":
            if self.op.schema.multi:
                self.fail(f"'grad' is ambiguous with several results; use {', '.join('grad_' + r for r in results)}")
            return Value("tensor", "grads[0]")
        if ident.startswith("grad_") and ident[5:] in results and self.op.schema.multi:
            diff = self.op.differentiable_results()
            if ident[5:] not in diff:
                self.fail(f"result '{ident[5:]}' is not differentiable (output_differentiability), so there is "
                          f"no {ident}")
            return Value("tensor", f"grads[{diff.index(ident[5:])}]")
        if ident in results:
            self.save(ident, "yt_saved", ident)
            return self.unpack(ident)
        if ident in ("True", "False"):
            return Value("bool_lit", "true" if ident == "True" else "false")
        a = self.op.schema.arg(ident)
        if a is None:
            also = ", ".join(f"grad_{r}, {r}" for r in results) if self.op.schema.multi else "grad, result"
            self.fail(f"unknown name '{ident}' (arguments: {', '.join(x.name for x in self.op.schema.args)}; "
                      f"also {also})")
        if a.kind == "tensor":
            self.save(ident, "yt_saved", ident)
            return self.unpack(ident, a.optional)
        if a.kind == "tensorlist":  # kept element by element; unpacked into an array
            self.save(ident, "yt_saved_list", ident)
            if ident not in self.unpacked:
                self.lines.append(f'yt_tensor **{ident} = yt__saved_list_unpack(node->{ident}, node->{ident}_len, '
                                  f'&node->base, "{ident}");')
                self.unpacked.append(ident)
            return Value("tensorlist", f"{ident}, node->{ident}_len")
        if a.kind == "generator":
            self.fail(f"'{ident}' is a Generator; formulas cannot use it")
        c_type = {"scalar": "yt_scalar", "int": "int64_t", "intlist": "yt_int_list", "bool": "bool",
                  "dtype": "yt_dtype", "float": "double", "device": "yt_device", "str": "const char *"}[a.kind]
        if a.by_pointer:  # kept as a value and a flag; passed on as a pointer or NULL
            self.save(ident, "optional " + c_type, ident)
            return Value(a.kind + "?", f"(node->{ident}_given ? &node->{ident} : NULL)")
        self.save(ident, c_type, ident)  # a str is kept as the static literal its check left it pointing at
        if a.kind == "intlist":
            return Value("intlist", f"node->{ident}.v, node->{ident}.len")
        return Value(a.kind, f"node->{ident}")

    def unpack(self, ident: str, optional: bool = False) -> Value:
        if ident not in self.unpacked:
            fn = "yt__saved_unpack_optional" if optional else "yt__saved_unpack"  # NULL: None
            self.lines.append(f'yt_tensor *{ident} = {fn}(&node->{ident}, &node->base, "{ident}");')
            self.unpacked.append(ident)
        return Value("tensor", ident)

    def attribute(self, node: ast.Attribute) -> Value:
        if not isinstance(node.value, ast.Name):
            self.fail("attributes can only be read from arguments (like self.shape)")
        base = node.value.id
        a = self.op.schema.arg(base)
        if base not in self.op.schema.results and (a is None or a.kind != "tensor"):
            self.fail(f"'{base}.{node.attr}': '{base}' is not a tensor argument")
        if node.attr not in _ATTRS:
            self.fail(f"unknown attribute '.{node.attr}' (known: {', '.join(_ATTRS)})")
        c_type, kind = _ATTRS[node.attr]
        fld = f"{base}_{node.attr}"
        self.save(f"{base}.{node.attr}", c_type, fld)
        if kind == "intlist":
            return Value("intlist", f"node->{fld}.sizes, node->{fld}.dim")
        return Value(kind, f"node->{fld}")

    def expr(self, node, final=False) -> Value:
        if isinstance(node, ast.Name):
            return self.name(node.id)
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool):
                return Value("bool_lit", "true" if node.value else "false")
            if isinstance(node.value, int):
                return Value("int_lit", str(node.value))
            if isinstance(node.value, float):
                return Value("float_lit", repr(node.value))
            if isinstance(node.value, str):
                return Value("str_lit", '"' + node.value + '"')
            if node.value is None:
                return Value("none", "NULL")
            self.fail(f"unsupported constant {node.value!r}")
        if isinstance(node, ast.Attribute):
            return self.attribute(node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            if isinstance(node.operand, ast.Constant) and isinstance(node.operand.value, (int, float)):
                return self.expr(ast.Constant(-node.operand.value))
            v = self.expr(node.operand)
            if v.kind != "tensor":
                self.fail("unary minus applies to tensors only")
            return self.call_op("neg", [v], {}, final)
        if isinstance(node, ast.BinOp):
            if type(node.op) not in _BINOPS:
                self.fail(f"unsupported operator {type(node.op).__name__}")
            lhs, rhs = self.expr(node.left), self.expr(node.right)
            return self.operator(_BINOPS[type(node.op)][1], lhs, rhs, final, type(node.op).__name__)
        if isinstance(node, ast.Compare):
            if len(node.ops) != 1 or type(node.ops[0]) not in _CMPOPS:
                self.fail("only single comparisons with <, > or == are supported")
            lhs, rhs = self.expr(node.left), self.expr(node.comparators[0])
            return self.operator(_CMPOPS[type(node.ops[0])], lhs, rhs, final, type(node.ops[0]).__name__)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "needs_grad":
            return self.needs_grad(node)
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name):
                name, args = node.func.id, [self.expr(a) for a in node.args]
            elif isinstance(node.func, ast.Attribute):  # x.t() -> t(x)
                name, args = node.func.attr, [self.expr(node.func.value)] + [self.expr(a) for a in node.args]
            else:
                self.fail("calls must name an op")
            kwargs = {k.arg: self.expr(k.value) for k in node.keywords}
            return self.call_op(name, args, kwargs, final)
        self.fail(f"unsupported expression '{ast.unparse(node)}'")

    def needs_grad(self, node: ast.Call) -> Value:
        """needs_grad(x): whether the node must produce x's gradient (a bool), for the flags of
        a fused formula's op."""
        if len(node.args) != 1 or node.keywords or not isinstance(node.args[0], ast.Name):
            self.fail("needs_grad takes one tensor argument's name")
        ident = node.args[0].id
        index = {a.name: i for i, a in enumerate(self.op.schema.tensor_args)}
        if ident not in index:
            self.fail(f"needs_grad({ident}): '{ident}' is not a tensor argument of {self.op.schema.name}")
        return Value("bool", f"node->base.needs_grad[{index[ident]}]")

    def compile_fused(self, targets: list) -> list[str]:
        """The fused formula: one call of an op whose results are the gradients of the first of
        `targets` ((input name, edge index) in formula order), as many as it has results. Its
        results go straight to the node's outputs; the ones not needed are released. Returns
        (C lines, how many targets it covers); when it covers them all, the lines return."""
        try:
            tree = ast.parse(self.formula.source, mode="eval")
        except SyntaxError as e:
            self.fail(f"syntax error: {e.msg}")
        body = tree.body
        if not (isinstance(body, ast.Call) and isinstance(body.func, ast.Name)):
            self.fail("fused must be one call of an op")
        candidates = [op for op in self.registry.values()
                      if op.schema.name == body.func.id and not op.schema.returns_list]
        if not candidates:
            self.fail(f"'{body.func.id}' is not an op returning tensors")
        args = [self.expr(a) for a in body.args]
        kwargs = {k.arg: self.expr(k.value) for k in body.keywords}
        errors = []
        for op in candidates:
            try:
                c_args = self.bind(op, args, kwargs)
            except _NoMatch as e:
                errors.append(f"{op.schema.full_name}: {e}")
                continue
            n = len(op.schema.results)
            if n > len(targets):
                self.fail(f"{op.schema.full_name} has {n} results for the "
                          f"{len(targets)} gradients ({', '.join(t for t, _ in targets)})")
            fn = f"yt_{op.c_name}_ex" if any(a.has_default for a in op.schema.args) else f"yt_{op.c_name}"
            self.lines.append(f"yt_tensor *fused[{n}] = {{{', '.join(['NULL'] * n)}}};")
            if op.schema.multi:
                outs = ", ".join(f"&fused[{k}]" for k in range(n))
                self.lines.append(f"yt_status fused_status = {fn}({', '.join(c_args)}, {outs});")
            else:
                self.lines.append(f"fused[0] = {fn}({', '.join(c_args)});")
                self.lines.append("yt_status fused_status = fused[0] != NULL ? YT_OK : yt__last_status();")
            for t in reversed(self.temps):
                self.lines.append(f"yt_release({t});")
            for u in reversed(self.unpacked):
                self.lines.append(self.release_of(u))
            self.lines.append("if (fused_status != YT_OK)")
            self.lines.append("    return fused_status;")
            for k, (_, idx) in enumerate(targets[:n]):
                self.lines.append(f"if (node->base.needs_grad[{idx}])")
                self.lines.append(f"    out[{idx}] = fused[{k}];")
                self.lines.append("else")
                self.lines.append(f"    yt_release(fused[{k}]);")
            if n == len(targets):
                self.lines.append("return YT_OK;")
            else:  # the remaining inputs keep their formulas
                self.lines.append("fused_ran = true;")
            return self.lines, n
        self.fail(f"no overload of '{body.func.id}' accepts these arguments ({'; '.join(errors)})")

    def operator(self, table, lhs: Value, rhs: Value, final, what) -> Value:
        key = ("T" if lhs.kind == "tensor" else "S" if lhs.kind in _SCALARISH else "?") + \
              ("T" if rhs.kind == "tensor" else "S" if rhs.kind in _SCALARISH else "?")
        if key not in table:
            self.fail(f"operator {what} is not defined for a {lhs.kind} and a {rhs.kind}")
        full, swap = table[key]
        args = [rhs, lhs] if swap else [lhs, rhs]
        op = self.registry.get(full)
        if op is None:
            self.fail(f"operator {what} needs op '{full}', which ops.yaml does not declare")
        return self.emit_call(op, args, {}, final)

    def call_op(self, name: str, args, kwargs, final) -> Value:
        candidates = [op for op in self.registry.values() if op.schema.name == name]
        if not candidates:
            self.fail(f"unknown op '{name}'")
        errors = []
        for op in candidates:
            try:
                self.bind(op, args, kwargs)
            except _NoMatch as e:
                errors.append(f"{op.schema.full_name}: {e}")
                continue
            return self.emit_call(op, args, kwargs, final)
        self.fail(f"no overload of '{name}' accepts these arguments ({'; '.join(errors)})")

    def bind(self, op: Op, args, kwargs) -> list[str]:
        params = list(op.schema.args)
        positional = [p for p in params if not p.kwarg_only]
        if len(args) > len(positional):
            raise _NoMatch(f"takes at most {len(positional)} positional arguments")
        bound = {}
        for p, v in zip(positional, args):
            bound[p.name] = v
        for k, v in kwargs.items():
            if op.schema.arg(k) is None:
                raise _NoMatch(f"no argument '{k}'")
            if k in bound:
                raise _NoMatch(f"'{k}' given twice")
            bound[k] = v
        c_args = []
        for p in params:
            if p.name not in bound:
                if not p.has_default:
                    raise _NoMatch(f"missing argument '{p.name}'")
                c_args.append(c_default(p))
                continue
            c_args.append(convert(bound[p.name], p))
        return c_args

    def emit_call(self, op: Op, args, kwargs, final) -> Value:
        if op.schema.multi or op.schema.returns_list:
            self.fail(f"{op.schema.full_name} returns several tensors; formulas call single-result ops "
                      "(a Tensor[] argument's formula may call an op returning Tensor[])")
        try:
            c_args = self.bind(op, args, kwargs)
        except _NoMatch as e:
            self.fail(f"{op.schema.full_name}: {e}")
        fn = f"yt_{op.c_name}_ex" if any(a.has_default for a in op.schema.args) else f"yt_{op.c_name}"
        call = f"{fn}({', '.join(c_args)})"
        if final:
            return Value("tensor", call)
        t = f"t{len(self.temps)}"
        self.temps.append(t)
        self.lines.append(f"yt_tensor *{t} = {call};")
        return Value("tensor", t)


class _NoMatch(Exception):
    pass


def convert(v: Value, p) -> str:
    """C expression passing value `v` as parameter `p`, or _NoMatch."""
    k = p.kind
    if v.kind == "none" and p.optional:
        return c_default_none(p)
    if k == "tensor" and v.kind == "tensor":
        return v.c
    if k == "tensorlist" and v.kind == "tensorlist":
        return v.c
    if p.by_pointer:
        if v.kind == k + "?":
            return v.c
        inner = convert(v, type(p)(p.name, p.kind, p.type_text, False, False, None, p.kwarg_only))
        return f"&{inner}" if inner.startswith("node->") else f"(const {_VALUE_C[k]}[]){{{inner}}}"
    if k == "str" and v.kind in ("str", "str_lit"):
        return v.c
    if k == "scalar":
        if v.kind == "scalar":
            return v.c
        if v.kind in ("int", "int_lit"):
            return f"yt_int({v.c})"
        if v.kind in ("float", "float_lit"):
            return f"yt_float({v.c})"
        if v.kind == "bool_lit":
            return f"yt_bool({v.c})"
    if k == "int" and v.kind in ("int", "int_lit"):
        return v.c
    if k == "float" and v.kind in ("float", "float_lit", "int_lit"):
        return v.c
    if k == "intlist" and v.kind == "intlist":
        return v.c
    if k == "bool" and v.kind in ("bool", "bool_lit"):
        return v.c
    if k == "dtype" and v.kind == "dtype":
        return v.c
    raise _NoMatch(f"argument '{p.name}' ({p.type_text}) cannot take a {v.kind}")


_VALUE_C = {"scalar": "yt_scalar", "bool": "bool", "float": "double"}


def c_default_none(p) -> str:
    return {"int": "YT_NONE", "dtype": "YT_DTYPE_NONE", "device": "YT_DEVICE_NONE"}.get(p.kind, "NULL")


def c_default(p) -> str:
    """C expression(s) for an argument's schema default."""
    d = p.default
    if p.kind == "intlist":
        return "NULL, 0"  # (a Tensor[] has no default)
    if d is None:
        return {"int": "YT_NONE", "dtype": "YT_DTYPE_NONE", "device": "YT_DEVICE_NONE"}.get(p.kind, "NULL")
    if p.kind == "str":
        return "NULL"  # the generated function fills in the default
    if p.kind == "scalar":
        if isinstance(d, bool):
            return f"yt_bool({'true' if d else 'false'})"
        return f"yt_int({d})" if isinstance(d, int) else f"yt_float({d!r})"
    if p.kind == "bool":
        return "true" if d else "false"
    if p.kind == "float":
        return repr(float(d))
    return str(d)


def compile_derivative(op: Op, registry: dict):
    """Returns (compiled formulas, the fused formula's C lines or None, saved values in first-use
    order)."""
    saved: dict = {}
    tensor_index = {a.name: i for i, a in enumerate(op.schema.tensor_args)}
    compiled = []
    for f in op.derivative.formulas:
        if f.input in tensor_index:
            idx = tensor_index[f.input]
            cond = f"node->base.needs_grad[{idx}]"
        else:  # a Tensor[]: its elements follow the plain tensors
            idx = len(tensor_index)
            cond = f"yt__needs_any_grad(&node->base, {idx}, node->{f.input}_len)"
        lines = _Compiler(op, f, registry, saved, idx).compile()
        compiled.append(CompiledFormula(f.input, idx, f.source, f.loc, lines, cond))
    fused = None
    if op.derivative.fused is not None:
        targets = []
        for f in op.derivative.formulas:
            if f.input not in tensor_index:
                raise SpecError(op.derivative.fused.loc, f"{op.schema.full_name}: fused cannot give the gradient "
                                f"of the Tensor[] '{f.input}'")
            targets.append((f.input, tensor_index[f.input]))
        c = _Compiler(op, op.derivative.fused, registry, saved, -1)
        c.fused_for = [t for t, _ in targets]
        lines, covered = c.compile_fused(targets)
        partial = covered < len(targets)
        if partial:  # when the fused call ran, the inputs it covers are done
            for f in compiled[:covered]:
                f.cond = f"!fused_ran && {f.cond}"
        fused = FusedFormula(lines, partial)
    return compiled, fused, list(saved.values())
