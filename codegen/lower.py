"""Model -> C. Every decision about the generated code is made here; templates only lay it out.

For each op this module produces the public declarations (with doc comments), the bodies of
every variant (argument checks, result shape and dtype, dispatch, autograd recording), the
kernel typedefs and tables, the generated pointwise CPU kernels, the backward nodes and the
test-case tables."""

from __future__ import annotations

import ast
import itertools
import re
import textwrap
from dataclasses import dataclass, field

from formula import c_default, compile_derivative
from model import DTYPE_SETS, DTYPES, LIST_KINDS, VARIANT_SUFFIX, Op, SpecError
from pointwise import DTYPE_C, STEPPED_ELEMENT_BYTES, STEPPED_ISAS, STEPPED_LANES, NoForm, PointwiseExpr

C_DTYPE = {d: f"YT_DTYPE_{d.upper()}" for d in DTYPES}
DOC_WIDTH = 96  # doc comment text, after " * ", within clang-format's 100 columns


def c_params(op: Op, full: bool = True) -> list[str]:
    out = []
    for a in op.schema.args:
        if not full and a.has_default:
            continue
        out += c_params_of_arg(a)
    return out


def _params_with_args(op: Op) -> list:
    """(C parameter, schema argument) pairs; an int[] argument gives two parameters."""
    out = []
    for a in op.schema.args:
        out += [(p, a) for p in c_params_of_arg(a)]
    return out


def c_params_of_arg(a) -> list[str]:
    if a.by_pointer:  # Scalar?, bool?, float?: NULL is None
        return [f"const {C_VALUE_TYPE[a.kind]} *{a.name}"]
    return {
        "tensor": [f"yt_tensor *{a.name}"],
        "scalar": [f"yt_scalar {a.name}"],
        "int": [f"int64_t {a.name}"],
        "intlist": [f"const int64_t *{a.name}", f"int {a.name}_len"],
        "bool": [f"bool {a.name}"],
        "float": [f"double {a.name}"],
        "dtype": [f"yt_dtype {a.name}"],
        "device": [f"yt_device {a.name}"],
        "str": [f"const char *{a.name}"],
        "tensorlist": [f"yt_tensor *const *{a.name}", f"int {a.name}_len"],
        "generator": [f"yt_generator *{a.name}"],
    }[a.kind]


C_VALUE_TYPE = {"scalar": "yt_scalar", "bool": "bool", "float": "double"}


def c_args(op: Op) -> list[str]:
    """Argument names, in C parameter order (int[] expands to name, name_len)."""
    out = []
    for a in op.schema.args:
        out += [a.name, f"{a.name}_len"] if a.kind in LIST_KINDS else [a.name]
    return out


def c_args_short(op: Op) -> list[str]:
    """Arguments passed by a short form to the _ex form: defaults filled in."""
    out = []
    for a in op.schema.args:
        if a.has_default:
            out.append(c_default(a))
        else:
            out += [a.name, f"{a.name}_len"] if a.kind in LIST_KINDS else [a.name]
    return out


def dtype_mask_name(dset: list[str]) -> str:
    for name, members in DTYPE_SETS.items():
        if members == dset:
            return f"YT_DTYPESET_{name.upper()}"
    raise AssertionError(dset)


@dataclass
class Function:
    """One public C function (one variant of one op)."""
    name: str
    ret: str
    params: list
    doc: list  # comment lines
    body: list  # C lines, indented by 4
    banner: list


@dataclass
class LoweredOp:
    op: Op
    functions: list = field(default_factory=list)
    kernel_typedef: str = ""
    kernel_table: list = field(default_factory=list)  # (device enum, function)
    record_proto: str = ""
    node: dict = None  # autograd node description for the template
    pointwise_kernel: dict = None


class Body:
    def __init__(self):
        self.lines = []

    def __call__(self, line: str = "", indent: int = 1):
        self.lines.append(("    " * indent + line) if line else "")

    def ret_fail(self, fail: str, code: str, fmt: str, args=(), indent: int = 2):
        """`return fail(code, "fmt", args...);` on one line; clang-format wraps it."""
        parts = [code, f'"{fmt}"'] + list(args)
        close = ")" * fail.count("(")  # a wrapped call: yt__count_error(yt__fail_status(...))
        self.lines.append("    " * indent + f"return {fail}({', '.join(parts)}){close};")


# ---------------------------------------------------------------- checks (ops.yaml `checks:`)

_CHECK_CMP = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}


def _int_literal(n):
    """The value of an integer literal (`2`, `-1`), or None for any other expression."""
    if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
        v = _int_literal(n.operand)
        return None if v is None else -v
    if isinstance(n, ast.Constant) and isinstance(n.value, int) and not isinstance(n.value, bool):
        return n.value
    return None


class CheckCompiler:
    def __init__(self, op: Op, check):
        self.op = op
        self.check = check
        self.terms = []  # (text, c expr, printf format)
        self.tensors_read = set()

    def fail(self, msg):
        raise SpecError(self.check.loc, f"{self.op.schema.full_name}: check '{self.check.expr}': {msg}")

    def compile(self):
        try:
            tree = ast.parse(self.check.expr, mode="eval").body
        except SyntaxError as e:
            self.fail(f"syntax error: {e.msg}")
        cond = self.expr(tree)
        return cond, self.message(tree)

    def term(self, text, c, fmt, cast):
        if all(t[0] != text for t in self.terms):
            self.terms.append((text, c, fmt, cast))
        return c

    def expr(self, n) -> str:
        s = self.op.schema
        literal = _int_literal(n)
        if literal is not None:
            return str(literal)
        if isinstance(n, ast.Name):
            a = s.arg(n.id)
            if n.id == "result_dtype":
                return self.term("result_dtype", "result_dtype", "%s", "yt_dtype_name(result_dtype)")
            if a is None or a.kind not in ("int", "bool"):
                self.fail(f"'{n.id}' is not an int or bool argument")
            return self.term(n.id, n.id, "%lld", f"(long long){n.id}")
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name):
            a = s.arg(n.value.id)
            if a is None or a.kind != "tensor":
                self.fail(f"'{n.value.id}' is not a tensor argument")
            self.tensors_read.add(a.name)
            if n.attr == "dim":
                return self.term(f"{a.name}.dim", f"{a.name}->dim", "%d", f"{a.name}->dim")
            if n.attr == "numel":
                return self.term(f"{a.name}.numel", f"{a.name}->numel", "%lld", f"(long long){a.name}->numel")
            self.fail(f"unknown attribute '{n.attr}'")
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "size":
            a = s.arg(n.func.value.id) if isinstance(n.func.value, ast.Name) else None
            i = _int_literal(n.args[0]) if len(n.args) == 1 and not n.keywords else None
            if a is None or a.kind != "tensor" or i is None:
                self.fail("size() takes a constant dim of a tensor argument")
            self.tensors_read.add(a.name)
            c = f"{a.name}->sizes[{i}]" if i >= 0 else f"{a.name}->sizes[{a.name}->dim - {-i}]"
            return self.term(f"{a.name}.size({i})", c, "%lld", f"(long long){c}")
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "len":
            a = s.arg(n.args[0].id) if n.args and isinstance(n.args[0], ast.Name) else None
            if a is None or a.kind not in LIST_KINDS:
                self.fail("len() takes an int[] or Tensor[] argument")
            return self.term(f"len({a.name})", f"{a.name}_len", "%d", f"{a.name}_len")
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "is_floating":
            if len(n.args) != 1 or n.keywords:
                self.fail("is_floating() takes one argument")
            return f"yt_dtype_is_floating({self.expr(n.args[0])})"
        if isinstance(n, ast.Compare) and len(n.ops) == 1 and type(n.ops[0]) in (ast.Eq, ast.NotEq) and \
                isinstance(n.left, ast.Name) and isinstance(n.comparators[0], ast.Constant) and \
                isinstance(n.comparators[0].value, str):  # reduction == "mean"
            a = s.arg(n.left.id)
            word = n.comparators[0].value
            if a is None or a.kind != "str":
                self.fail(f"'{n.left.id}' is not a str argument")
            if word not in self.op.choices.get(a.name, []):
                self.fail(f"'{word}' is not one of the choices of '{a.name}'")
            self.term(a.name, a.name, "%s", a.name if not a.optional else f'{a.name} ? {a.name} : "None"')
            if isinstance(n.ops[0], ast.Eq):
                test = f'strcmp({a.name}, "{word}") == 0'
                return f"({a.name} != NULL && {test})" if a.optional else test
            test = f'strcmp({a.name}, "{word}") != 0'
            return f"({a.name} == NULL || {test})" if a.optional else test
        if isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], (ast.Is, ast.IsNot)) and \
                isinstance(n.left, ast.Name) and isinstance(n.comparators[0], ast.Constant) and \
                n.comparators[0].value is None:  # min is not None
            a = s.arg(n.left.id)
            if a is None or not a.optional:
                self.fail(f"'{n.left.id}' is not an optional argument")
            none = "YT_NONE" if a.kind == "int" else "YT_DTYPE_NONE" if a.kind == "dtype" else \
                "YT_DEVICE_NONE" if a.kind == "device" else "NULL"
            return f"{a.name} {'==' if isinstance(n.ops[0], ast.Is) else '!='} {none}"
        if isinstance(n, ast.Compare) and len(n.ops) == 1 and type(n.ops[0]) in _CHECK_CMP:
            return f"{self.expr(n.left)} {_CHECK_CMP[type(n.ops[0])]} {self.expr(n.comparators[0])}"
        if isinstance(n, ast.BoolOp):
            j = " && " if isinstance(n.op, ast.And) else " || "
            return "(" + j.join(self.expr(v) for v in n.values) + ")"
        if isinstance(n, ast.BinOp) and type(n.op) in (ast.Add, ast.Sub, ast.Mult):
            op = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*"}[type(n.op)]
            return f"({self.expr(n.left)} {op} {self.expr(n.right)})"
        self.fail(f"unsupported expression '{ast.unparse(n)}'")

    def message(self, tree):
        """printf format and arguments for a failed check."""
        name = self.op.schema.name
        # "self must be 2-D, got 1-D" for rank checks
        if isinstance(tree, ast.Compare) and isinstance(tree.left, ast.Attribute) and tree.left.attr == "dim" \
                and isinstance(tree.comparators[0], ast.Constant):
            t = tree.left.value.id
            want = {ast.Eq: "", ast.LtE: "at most ", ast.GtE: "at least ", ast.Lt: "below ", ast.Gt: "above ",
                    ast.NotEq: "not "}[type(tree.ops[0])]
            return (f"{name}: {t} must be {want}{tree.comparators[0].value}-D, got %d-D", [f"{t}->dim"])
        if isinstance(tree, ast.Compare) and isinstance(tree.ops[0], ast.Eq) and len(self.terms) == 2:
            (a, _, fa, ca), (b, _, fb, cb) = self.terms
            return (f"{name}: {a}={fa} does not match {b}={fb}", [ca, cb])
        if isinstance(tree, ast.Call) and getattr(tree.func, "id", "") == "is_floating":
            if self.terms[0][0] == "result_dtype":  # promoted from the inputs: say how to fix it
                return (f"{name}: the result dtype %s is not floating; pass a floating dtype",
                        [self.terms[0][3]])
            return (f"{name}: expected a floating dtype, got %s", [self.terms[0][3]])
        got = ", ".join(f"{t[0]}={t[2]}" for t in self.terms)
        return (f"{name}: expected {self.check.expr.replace(chr(34), chr(39))}" + (f", got {got}" if got else ""), [t[3] for t in self.terms])


# ---------------------------------------------------------------- the op functions

class OpLowering:
    def __init__(self, op: Op, registry: dict):
        self.op = op
        self.registry = registry
        self.s = op.schema
        self.tensors = [a.name for a in self.s.tensor_args]
        d = op.derivative
        self.differentiable = d is not None and not d.not_differentiable and bool(d.formulas)
        self.grad_inputs = [f.input for f in d.formulas] if self.differentiable else []
        self.grad_lists = [t for t in self.grad_inputs if self.s.arg(t).kind == "tensorlist"]
        if len(self.grad_lists) > 1:
            raise SpecError(d.loc, f"{self.s.full_name}: at most one Tensor[] argument may have a formula")
        self.results = list(self.s.results)
        self.diff_results = op.differentiable_results() if self.differentiable else []
        if self.differentiable and not self.diff_results:
            raise SpecError(d.loc, f"{self.s.full_name}: formulas given, but no result is differentiable")
        self.compiled = None
        self.fused = None
        self.saved = []
        if self.differentiable:
            self.compiled, self.fused, self.saved = compile_derivative(op, registry)

    # -- names
    def fn_name(self, variant: str, ex: bool) -> str:
        return self.op.c_function(variant, ex)

    def msg_name(self, variant: str) -> str:
        return self.s.name + VARIANT_SUFFIX[variant]

    def error_context(self, b: "Body", variant: str):
        """In a failure branch after the op's composite or kernel: a message from another op that
        it called gets this op's name in front (yt__error_context)."""
        b(f'    yt__error_context("{self.s.name}", "{VARIANT_SUFFIX[variant]}");')

    @property
    def has_defaults(self) -> bool:
        return any(a.has_default for a in self.s.args)

    @property
    def kernel_fn_type(self) -> str:
        return f"yt__{self.op.c_name}_kernel_fn"

    @property
    def kernel_table(self) -> str:
        return f"yt__{self.op.c_name}_kernels"

    def given(self, t: str) -> str:
        """`t != NULL && ` for an optional tensor (its checks apply only when it is given)."""
        a = self.s.arg(t)
        return f"{t} != NULL && " if a is not None and a.optional else ""

    @property
    def first_tensor(self):
        """The tensor argument whose device (and, by default, dtype and shape) the result takes."""
        plain = next((t for t in self.tensors if not self.s.arg(t).optional), None)
        if plain is None and self.s.list_args and not self.s.list_args[0].elem_optional:
            return f"{self.s.list_args[0].name}[0]"  # checked non-empty by the prologue
        return plain

    def choice_lines(self, b: Body, a, name: str, fail: str):
        """Validates a str argument against its choices; the argument then points at the static
        literal, so a backward node may keep it. NULL is the default (or None for str?)."""
        words = self.op.choices[a.name]
        listed = ", ".join(f"'{w}'" for w in words)
        guard = ""
        first = "if"
        if a.has_default and a.default is not None:
            b(f"if ({a.name} == NULL)")
            b(f'    {a.name} = "{a.default}";')
            first = "else if"
        elif a.optional:
            guard = f"{a.name} != NULL && "
        else:
            b(f"if ({a.name} == NULL)")
            b.ret_fail(fail, "YT_ERR_VALUE", f"{name}: {a.name} is NULL (expected one of {listed})")
        for i, w in enumerate(words):
            b(f'{first if i == 0 else "else if"} ({guard}strcmp({a.name}, "{w}") == 0)')
            b(f'    {a.name} = "{w}";')
        b(f"else if ({a.name} != NULL)" if guard else "else")
        b.ret_fail(fail, "YT_ERR_VALUE", f"{name}: {a.name} must be one of {listed}, got '%s'", [a.name])

    def refusals(self, b: Body, variant: str):
        """`ARG: non_differentiable` (derivatives.yaml): such an argument that requires grad while
        grad mode is on is refused, as PyTorch refuses it, instead of getting no gradient silently."""
        d = self.op.derivative
        for t in d.non_differentiable if d is not None else []:
            b(f"if (yt__any_requires_grad(1, &{t}))")
            b.ret_fail(self.fail, "YT_ERR_VALUE", f"{self.msg_name(variant)}: {t} requires grad, but {self.s.name} "
                       f"is not differentiable with respect to {t}")

    # -- the shared prologue: validation, shape, dtype
    def prologue(self, b: Body, variant: str, status: bool):
        op, s = self.op, self.s
        name = self.msg_name(variant)
        fail = "yt__fail_status" if status else "yt__fail"
        ret_null = "return yt__null_status" if status else "return yt__null_arg"
        bail = "return yt_errcode();" if status else "return NULL;"
        if status == "count":  # -> Tensor[]: -1 on error
            fail, ret_null, bail = "yt__count_error(yt__fail_status", "return yt__count_error(yt__null_status", \
                "return -1;"
        self.fail, self.bail = fail, bail
        outs = (self.results if s.multi else ["out"]) if variant == "out" else []
        tensor_names = outs + self.tensors
        for t in tensor_names:
            if s.arg(t) is not None and s.arg(t).optional:
                continue  # NULL is None
            b(f"if ({t} == NULL)")
            b(f'    {ret_null}("{name}", "{t}"){")" * ret_null.count("(")}; /* keeps an earlier error */')
        for a in s.list_args:
            b(f"if ({a.name}_len < 0 || ({a.name} == NULL && {a.name}_len > 0))")
            b.ret_fail(fail, "YT_ERR_VALUE", f"{name}: {a.name} has %d entries (expected >= 0, non-NULL when > 0)",
                       [f"{a.name}_len"])
            if self.first_tensor == f"{a.name}[0]":
                b(f"if ({a.name}_len == 0)")
                b.ret_fail(fail, "YT_ERR_VALUE", f"{name}: expected a non-empty list of tensors in {a.name}")
            if not a.elem_optional:
                b(f"for (int i = 0; i < {a.name}_len; i++)")
                b(f"    if ({a.name}[i] == NULL)")
                elem = ret_null.replace("yt__null_status", "yt__null_elem_status").replace("yt__null_arg", "yt__null_elem")
                b(f'        {elem}("{name}", "{a.name}", i){")" * ret_null.count("(")}; /* keeps an earlier error */')
        for a in s.args:
            if a.kind == "scalar" and a.optional:
                b(f"if ({a.name} != NULL && (unsigned){a.name}->kind > YT_SCALAR_FLOAT)")
                b.ret_fail(fail, "YT_ERR_VALUE", f"{name}: {a.name} has an invalid scalar kind %d", [f"(int){a.name}->kind"])
            elif a.kind == "scalar":
                b(f"if ((unsigned){a.name}.kind > YT_SCALAR_FLOAT)")
                b.ret_fail(fail, "YT_ERR_VALUE", f"{name}: {a.name} has an invalid scalar kind %d", [f"(int){a.name}.kind"])
            elif a.kind == "str":
                self.choice_lines(b, a, name, fail)
            elif a.kind == "intlist":
                b(f"if ({a.name}_len < 0 || {a.name}_len > YT_MAX_DIM || ({a.name} == NULL && {a.name}_len > 0))")
                b.ret_fail(fail, "YT_ERR_VALUE", f"{name}: {a.name} has %d entries (expected 0..%d, non-NULL when > 0)",
                           [f"{a.name}_len", "YT_MAX_DIM"])
            elif a.kind in ("dtype", "device"):
                enum = "YT_DTYPE" if a.kind == "dtype" else "YT_DEVICE"
                low = f"{enum}_NONE" if a.optional else "0"
                cmp = "<" if a.optional else "<"
                b(f"if ({a.name} {cmp} {low} || {a.name} >= {enum}_COUNT)")
                b.ret_fail(fail, "YT_ERR_VALUE", f"{name}: {a.name}=%d is not a valid {a.kind}", [f"(int){a.name}"])
        first = self.first_tensor
        for a in s.list_args:  # every element: dtype set, device, same_dtype
            x = f"{a.name}[i]"
            b(f"for (int i = 0; i < {a.name}_len; i++) {{")
            if a.elem_optional:
                b(f"    if ({x} == NULL)")
                b("        continue; /* None */")
            dset = op.dtypes[a.name]
            if dset != DTYPE_SETS["all"]:
                b(f"    if (!(YT_DTYPE_BIT({x}->dtype) & {dtype_mask_name(dset)}))")
                b.ret_fail(fail, "YT_ERR_DTYPE", f"{name}: {a.name}[%d] has dtype %s, expected {', '.join(dset)}",
                           ["i", f"yt_dtype_name({x}->dtype)"], indent=3)
            if first is not None and first != f"{a.name}[0]":
                b(f"    if ({x}->device != {first}->device)")
                b.ret_fail(fail, "YT_ERR_DEVICE", f"{name}: {a.name}[%d] is on %s but {first} is on %s",
                           ["i", f"yt_device_name({x}->device)", f"yt_device_name({first}->device)"], indent=3)
            elif first is not None:
                b(f"    if ({x}->device != {first}->device)")
                b.ret_fail(fail, "YT_ERR_DEVICE", f"{name}: {a.name}[%d] is on %s but {a.name}[0] is on %s",
                           ["i", f"yt_device_name({x}->device)", f"yt_device_name({first}->device)"], indent=3)
            if a.name in op.same_dtype:
                ref = next((t for t in op.same_dtype if s.arg(t).kind == "tensor" and not s.arg(t).optional),
                           f"{a.name}[0]")
                b(f"    if ({x}->dtype != {ref}->dtype)")
                b.ret_fail(fail, "YT_ERR_DTYPE", f"{name}: {a.name}[%d] has dtype %s but {ref} has dtype %s",
                           ["i", f"yt_dtype_name({x}->dtype)", f"yt_dtype_name({ref}->dtype)"], indent=3)
            b("}")
        for t, dset in op.dtypes.items():
            if dset == DTYPE_SETS["all"] or s.arg(t).kind == "tensorlist":
                continue
            b(f"if ({self.given(t)}!(YT_DTYPE_BIT({t}->dtype) & {dtype_mask_name(dset)}))")
            b.ret_fail(fail, "YT_ERR_DTYPE", f"{name}: {t} has dtype %s, expected {', '.join(dset)}",
                       [f"yt_dtype_name({t}->dtype)"])
        for t in tensor_names:
            if t != first:
                b(f"if ({self.given(t)}{t}->device != {first}->device)")
                b.ret_fail(fail, "YT_ERR_DEVICE", f"{name}: {t} is on %s but {first} is on %s",
                           [f"yt_device_name({t}->device)", f"yt_device_name({first}->device)"])
        f0 = next((t for t in op.same_dtype if s.arg(t).kind == "tensor" and not s.arg(t).optional), None)
        for t in op.same_dtype:
            if t == f0 or s.arg(t).kind == "tensorlist":
                continue
            b(f"if ({self.given(t)}{t}->dtype != {f0}->dtype)")
            b.ret_fail(fail, "YT_ERR_DTYPE", f"{name}: {t} has dtype %s but {f0} has dtype %s",
                       [f"yt_dtype_name({t}->dtype)", f"yt_dtype_name({f0}->dtype)"])
        for d, rank in op.dims.items():
            a = s.arg(d)
            rank_c = rank.replace(".dim", "->dim")
            if a.kind == "int":
                b(f'if (yt__wrap_dim(&{d}, {rank_c}, "{name}", "{d}") != YT_OK)')
                b(f"    {bail}")
            else:
                b(f"int64_t {d}_wrapped[YT_MAX_DIM];")
                b(f"for (int i = 0; i < {d}_len; i++)")
                b(f"    {d}_wrapped[i] = {d}[i];")
                b(f'if (yt__wrap_dims({d}_wrapped, {d}_len, {rank_c}, "{name}", "{d}") != YT_OK)')
                b(f"    {bail}")
                b(f"{d} = {d}_wrapped;")

    def dtype_lines(self, b: Body):
        """compute_dtype (pointwise loops) and result_dtype."""
        op = self.op
        tensors_p = [n for n in op.promote if self.s.arg(n).kind == "tensor"]
        scalars_p = [n for n in op.promote if self.s.arg(n).kind == "scalar"]
        lists_p = [n for n in op.promote if self.s.arg(n).kind == "tensorlist"]
        if lists_p:
            sc = ", ".join(scalars_p)
            if scalars_p:
                b(f"const yt_scalar promote_scalars[{len(scalars_p)}] = {{{sc}}};")
            b(f"yt_dtype compute_dtype = yt__result_type({lists_p[0]}_len, {lists_p[0]}, {len(scalars_p)}, "
              f"{'promote_scalars' if scalars_p else 'NULL'});")
        elif op.promote:
            if len(tensors_p) == 1 and not scalars_p:
                b(f"yt_dtype compute_dtype = {tensors_p[0]}->dtype;")
            else:
                b(f"yt_tensor *const promote_tensors[{len(tensors_p)}] = {{{', '.join(tensors_p)}}};")
                n_scalars = str(len(scalars_p))
                if any(self.s.arg(x).optional for x in scalars_p):  # absent optional scalars take no part
                    b(f"yt_scalar promote_scalars[{len(scalars_p)}] = {{0}};")
                    b("int n_promote_scalars = 0;")
                    for x in scalars_p:
                        if self.s.arg(x).optional:
                            b(f"if ({x} != NULL)")
                            b(f"    promote_scalars[n_promote_scalars++] = *{x};")
                        else:
                            b(f"promote_scalars[n_promote_scalars++] = {x};")
                    n_scalars = "n_promote_scalars"
                elif scalars_p:
                    b(f"const yt_scalar promote_scalars[{len(scalars_p)}] = {{{', '.join(scalars_p)}}};")
                b(f"yt_dtype compute_dtype = yt__result_type({len(tensors_p)}, promote_tensors, {n_scalars}, "
                  f"{'promote_scalars' if scalars_p else 'NULL'});")
        elif self.first_tensor and (op.result_dtype in (None, "floating") or op.impl == "pointwise" or self.s.multi):
            b(f"yt_dtype compute_dtype = {self.first_tensor}->dtype;")
        if self.s.multi:
            for r in self.s.results:
                rule = op.result_dtype.get(r) if isinstance(op.result_dtype, dict) else op.result_dtype
                b(f"yt_dtype {r}_dtype = {self.dtype_rule(rule)};")
            return
        rd = op.result_dtype
        if rd is None:
            if self.first_tensor or op.promote:
                b("yt_dtype result_dtype = compute_dtype;")
            else:
                raise SpecError(op.loc, f"{self.s.full_name}: needs result_dtype (no tensor arguments)")
        elif rd == "floating":
            b("compute_dtype = yt__to_floating(compute_dtype);")
            b("yt_dtype result_dtype = compute_dtype;")
        elif rd in DTYPES:
            b(f"yt_dtype result_dtype = {C_DTYPE[rd]};")
        elif self.s.arg(rd) is not None:
            b(f"yt_dtype result_dtype = {rd};")
        else:
            fn, args = _split_call(rd)
            b(f"yt_dtype result_dtype = {fn}({', '.join(self.expand_call_args(args))});")
            if op.impl == "pointwise":  # the loops compute in the dtype the rule gives
                b("compute_dtype = result_dtype;")

    def dtype_rule(self, rule) -> str:
        """C expression of one result's dtype (results of multi-result ops)."""
        if rule is None:
            if not self.first_tensor and not self.op.promote:
                raise SpecError(self.op.loc, f"{self.s.full_name}: needs result_dtype (no tensor arguments)")
            return "compute_dtype"
        if rule == "floating":
            return "yt__to_floating(compute_dtype)"
        if rule in DTYPES:
            return C_DTYPE[rule]
        if self.s.arg(rule) is not None:
            return rule
        fn, args = _split_call(rule)
        return f"{fn}({', '.join(self.expand_call_args(args))})"

    def expand_call_args(self, args):
        out = []
        for x in args:
            a = self.s.arg(x)
            out += [x, f"{x}_len"] if a.kind in LIST_KINDS else [x]
        return out

    def shape_lines(self, b: Body, variant: str):
        if not self.s.multi:
            self.one_shape(b, variant, "result_shape", self.op.shape)
            return
        default_var = None  # results without their own rule share one computed shape
        for r in self.s.results:
            rule = self.op.shape.get(r) if isinstance(self.op.shape, dict) else self.op.shape
            if (rule is None or not isinstance(self.op.shape, dict)) and default_var is not None:
                b(f"yt_shape {r}_shape = {default_var};")
                continue
            self.one_shape(b, variant, f"{r}_shape", rule)
            if rule is None or not isinstance(self.op.shape, dict):
                default_var = f"{r}_shape"

    def one_shape(self, b: Body, variant: str, var: str, rule):
        op, name = self.op, self.msg_name(variant)
        b(f"yt_shape {var};")
        if op.broadcast and (rule is None or not self.s.multi):
            n = len(op.broadcast)
            b(f"yt_tensor *const broadcast_tensors[{n}] = {{{', '.join(op.broadcast)}}};")
            b(f"static const char *const broadcast_names[{n}] = {{{', '.join(chr(34) + x + chr(34) for x in op.broadcast)}}};")
            b(f'if (yt__broadcast_shapes(&{var}, "{name}", {n}, broadcast_tensors, broadcast_names) != YT_OK)')
            b(f"    {self.bail}")
        elif isinstance(rule, list):
            b(f"{var}.dim = {len(rule)};")
            for i, e in enumerate(rule):
                b(f"{var}.sizes[{i}] = {self.shape_expr(e)};")
        elif isinstance(rule, str) and self.s.arg(rule) is not None:
            b(f'if (yt__shape_from_sizes(&{var}, "{name}", "{rule}", {rule}, {rule}_len) != YT_OK)')
            b(f"    {self.bail}")
        elif isinstance(rule, str):
            fn, args = _split_call(rule)
            b(f'if ({fn}(&{var}, "{name}", {", ".join(self.expand_call_args(args))}) != YT_OK)')
            b(f"    {self.bail}")
        else:
            b(f"yt__shape_of(&{var}, {self.first_tensor});")

    def shape_expr(self, e: str) -> str:
        m = re.match(r"^([a-z_][a-z0-9_]*)\.size\((-?\d+)\)$", e)
        if m and self.s.arg(m.group(1)) is not None:
            return f"{m.group(1)}->sizes[{m.group(2)}]"
        raise SpecError(self.op.loc, f"{self.s.full_name}: shape entry '{e}' must be TENSOR.size(N)")

    def checks(self, b: Body, variant: str):
        for c in self.op.checks:
            cc = CheckCompiler(self.op, c)
            cond, (fmt, args) = cc.compile()
            fmt = fmt.replace(f"{self.s.name}:", f"{self.msg_name(variant)}:", 1)
            absent = [t for t in self.tensors if self.s.arg(t).optional and t in cc.tensors_read]
            if absent:  # a check on an optional tensor holds when it is not given
                cond = " || ".join([f"{t} == NULL" for t in absent] + [f"({cond})"])
            b(f"if (!({cond}))")
            b.ret_fail(self.fail, _check_code(c.expr), fmt, args)

    def device_lines(self, b: Body):
        if self.first_tensor:
            b(f"yt_device result_device = {self.first_tensor}->device;")
        else:
            b("yt_device result_device = device == YT_DEVICE_NONE ? YT_DEVICE_CPU : device;")

    def kernel_lookup(self, b: Body, variant: str):
        b(f"{self.kernel_fn_type} kernel = {self.kernel_table}[result_device];")
        b("if (kernel == NULL)")
        b.ret_fail(self.fail, "YT_ERR_DEVICE", f"{self.msg_name(variant)}: not implemented for %s",
                   ["yt_device_name(result_device)"])

    def recording_line(self, b: Body, extra=()):
        if not self.grad_inputs:
            return False
        ins = [t for t in self.grad_inputs if self.s.arg(t).kind == "tensor"]
        terms = [f"yt__any_requires_grad({t}_len, {t})" for t in self.grad_inputs if self.s.arg(t).kind != "tensor"]
        if len(ins) == 1:
            terms.insert(0, f"yt__any_requires_grad(1, &{ins[0]})")
        elif ins:
            b(f"yt_tensor *const grad_inputs[{len(ins)}] = {{{', '.join(ins)}}};")
            terms.insert(0, f"yt__any_requires_grad({len(ins)}, grad_inputs)")
        b(f"bool recording = {' || '.join(terms)};")
        return True

    def overwrite_line(self, b: Body, name: str) -> bool:
        """The in-place form of a not-differentiable op whose self can require grad: with
        `inplace_grad: zero` the write is recorded with a zero gradient for self's old history
        (returns True); otherwise such a self is refused, since its grad_fn would go on describing
        the values the write replaced."""
        rule = self.op.inplace_write_rule()
        if rule is None:
            return False
        if rule == "zero":
            b("/* the new values do not depend on the old: self's history gets a zero gradient */")
            b("bool recording = yt__any_requires_grad(1, &self);")
            return True
        b("if (yt__any_requires_grad(1, &self))")
        b.ret_fail(self.fail, "YT_ERR_STATE", f"{name}: self requires grad, and {self.s.name} is not differentiable; "
                   "write a yt_detach() of it, or turn grad mode off")
        return False

    def casts(self, b: Body, variant: str):
        """Pointwise: promoted tensors are converted to compute_dtype before the loop; so is the
        lone tensor of an op whose integral inputs compute in floating point (sqrt of an i64), and
        `converts:` tensors, checked as Scalars."""
        casted = [n for n in self.op.promote if self.s.arg(n).kind == "tensor"]
        if not casted and self.op.impl == "pointwise" and self.op.result_dtype == "floating":
            casted = [self.tensors[0]]
        for t in casted:
            none = f"{t} == NULL || " if self.s.arg(t).optional else ""  # an absent Tensor? stays NULL
            b(f"yt_tensor *{t}_k = {none}{t}->dtype == compute_dtype ? {t} : yt__cast_copy({t}, compute_dtype);")
        for t in self.op.converts:  # read as a Scalar: checked like one
            none = f"{t} == NULL || " if self.s.arg(t).optional else ""
            b(f"yt_tensor *{t}_k = {none}{t}->dtype == compute_dtype ? {t} : "
              f'yt__convert_0d({t}, compute_dtype, "{self.msg_name(variant)}", "{t}");')
            casted.append(t)
        if casted:
            failed = [f"({t} != NULL && {t}_k == NULL)" if self.s.arg(t).optional else f"{t}_k == NULL"
                      for t in casted]
            b(f"if ({' || '.join(failed)}) {{")
            for t in casted:
                b(f"yt__release_cast({t}_k, {t});", 2)
            b(f"    {self.bail}")
            b("}")
        return casted

    def kernel_call_args(self, target, casted) -> str:
        out = list(target) if isinstance(target, (list, tuple)) else [target]
        for a in self.s.args:
            if a.kind == "tensor":
                out.append(f"{a.name}_k" if a.name in casted else a.name)
            elif a.kind in LIST_KINDS:
                out += [a.name, f"{a.name}_len"]
            else:
                out.append(a.name)
        return ", ".join(out)

    def record_args(self) -> list:
        """Schema arguments the record function reads (edges and saved values), in schema order."""
        text = "\n".join(self.record_lines())
        return [a for a in self.s.args if re.search(rf"(?<![\w.>]){a.name}\b", text)]

    def record_results(self) -> list:
        """Results the record function takes: the differentiable ones and those the formulas save."""
        saved = {sv.source for sv in self.saved}
        return [r for r in self.results if r in self.diff_results or r in saved]

    def record_call(self, result, self_value: str = "self") -> str:
        if isinstance(result, (list, tuple)):  # new_<result> locals of a multi-result function
            keep = self.record_results()
            result = [x for x, r in zip(result, self.results) if r in keep]
        args = list(result) if isinstance(result, (list, tuple)) else [result]
        for a in self.record_args():
            if a.kind in LIST_KINDS:
                args += [a.name, f"{a.name}_len"]
            elif a.name == "self":
                args.append(self_value)
            else:
                args.append(a.name)
        return f"yt__record_{self.op.c_name}({', '.join(args)})"

    # -- bodies
    def body_function(self) -> list:
        op = self.op
        b = Body()
        self.prologue(b, "function", False)
        self.refusals(b, "function")
        if op.impl in ("view", "composite"):
            self.checks(b, "function")
            if op.impl == "composite":
                b("yt__scope_suspend(); /* temporaries of the composite are released by it, not by a scope */")
                b(f"yt_tensor *result = {op.impl_fn}({', '.join(c_args(op))});")
                b("yt__scope_resume();")
                b("if (result == NULL)")
                self.error_context(b, "function")
                b("return yt__scope_track(result);")
                return b.lines
            rec = self.recording_line(b)
            b(f"yt_tensor *result = {op.impl_fn}({', '.join(c_args(op))});")
            b("if (result == NULL)")
            b("    return NULL;")
            if rec:
                b(f"if (recording && {self.record_call('result')} != YT_OK) {{")
                b("    yt_release(result);")
                b("    return NULL;")
                b("}")
            b("return yt__scope_track(result);")
            return b.lines
        self.dtype_lines(b)
        self.checks(b, "function")
        self.shape_lines(b, "function")
        self.device_lines(b)
        self.kernel_lookup(b, "function")
        rec = self.recording_line(b)
        casted = self.casts(b, "function") if op.impl == "pointwise" else []
        b(f'yt_tensor *result = yt__empty_named("{self.msg_name("function")}", &result_shape, result_dtype, result_device);')
        b(f"yt_status status = result == NULL ? yt_errcode() : kernel({self.kernel_call_args('result', casted)});")
        for t in casted:
            b(f"yt__release_cast({t}_k, {t});")
        b("if (status != YT_OK) {")
        if op.impl != "pointwise":
            self.error_context(b, "function")
        b("    yt_release(result);")
        b("    return NULL;")
        b("}")
        if rec:
            b(f"if (recording && {self.record_call('result')} != YT_OK) {{")
            b("    yt_release(result);")
            b("    return NULL;")
            b("}")
        b("return yt__scope_track(result);")
        return b.lines

    def body_multi(self) -> list:
        """Several results: outputs through pointers, yt_status returned; on error every output is NULL."""
        op = self.op
        b = Body()
        rs = self.results
        name = self.msg_name("function")
        b(f"if ({' || '.join(f'{r} == NULL' for r in rs)})")
        b.ret_fail("yt__fail_status", "YT_ERR_VALUE",
                   f"{name}: {' and '.join(rs)} must be non-NULL pointers to receive the results")
        for r in rs:
            b(f"*{r} = NULL;")
        self.prologue(b, "function", True)
        self.refusals(b, "function")
        if op.impl == "composite":
            self.checks(b, "function")
            b("yt__scope_suspend(); /* temporaries of the composite are released by it, not by a scope */")
            b(f"yt_status status = {op.impl_fn}({', '.join(c_args(op) + rs)});")
            b("yt__scope_resume();")
            b("if (status != YT_OK) {")
            self.error_context(b, "function")
            for r in rs:
                b(f"    yt_release(*{r});", 1)
                b(f"    *{r} = NULL;", 1)
            b("    return status;")
            b("}")
            for r in rs:
                b(f"yt__scope_track(*{r});")
            b("return YT_OK;")
            return b.lines
        if op.impl == "view":
            raise SpecError(op.loc, f"{self.s.full_name}: view ops have a single result")
        self.dtype_lines(b)
        self.checks(b, "function")
        self.shape_lines(b, "function")
        self.device_lines(b)
        self.kernel_lookup(b, "function")
        rec = self.recording_line(b)
        news = [f"new_{r}" for r in rs]
        for i, (r, n) in enumerate(zip(rs, news)):
            alloc = f'yt__empty_named("{self.msg_name("function")}", &{r}_shape, {r}_dtype, result_device)'
            b(f"yt_tensor *{n} = " + (alloc if i == 0 else f"{news[i - 1]} == NULL ? NULL : {alloc}") + ";")
        b(f"yt_status status = {news[-1]} == NULL ? yt_errcode() : kernel({self.kernel_call_args(news, [])});")
        if rec:
            b(f"if (status == YT_OK && recording)")
            b(f"    status = {self.record_call(news)};")
        b("if (status != YT_OK) {")
        self.error_context(b, "function")
        for n in news:
            b(f"    yt_release({n});")
        b("    return status;")
        b("}")
        for r, n in zip(rs, news):
            b(f"*{r} = yt__scope_track({n});")
        b("return YT_OK;")
        return b.lines

    def body_list(self) -> list:
        """-> Tensor[] (composite only): fills out[0 .. count) and returns the count, or -1."""
        op = self.op
        b = Body()
        name = self.msg_name("function")
        b("if (out_capacity < 0 || (out == NULL && out_capacity != 0))")
        b.ret_fail("yt__count_error(yt__fail_status", "YT_ERR_VALUE",
                   f"{name}: out_capacity=%lld must be >= 0, and out non-NULL when it is not 0",
                   ["(long long)out_capacity"])
        self.prologue(b, "function", "count")
        self.refusals(b, "function")
        self.checks(b, "function")
        b("yt__scope_suspend(); /* temporaries of the composite are released by it, not by a scope */")
        b(f"int64_t count = {op.impl_fn}({', '.join(c_args(op) + ['out', 'out_capacity'])});")
        b("yt__scope_resume();")
        b("if (count < 0)")
        self.error_context(b, "function")
        b("for (int64_t i = 0; out != NULL && i < count && i < out_capacity; i++)")
        b("    yt__scope_track(out[i]);")
        b("return count;")
        return b.lines

    def body_multi_out(self) -> list:
        b = Body()
        rs = self.results
        self.prologue(b, "out", True)
        self.dtype_lines(b)
        self.checks(b, "out")
        self.shape_lines(b, "out")
        self.device_lines(b)
        self.kernel_lookup(b, "out")
        name = self.msg_name("out")
        every = rs + self.tensors
        b(f"yt_tensor *const all_tensors[{len(every)}] = {{{', '.join(every)}}};")
        b(f"if (yt__any_requires_grad({len(every)}, all_tensors))")
        b.ret_fail("yt__fail_status", "YT_ERR_STATE",
                   f"{name}: out= variants do not support autograd, but an argument requires grad")
        for r in rs:
            b(f'if (yt__check_out({r}, &{r}_shape, {r}_dtype, result_device, "{name}", "{r}") != YT_OK)')
            b("    return yt_errcode();")
        targets = [f"{r}_target" for r in rs]
        overlap = self.overlap_terms(b, rs, "out", [])
        for r, t in zip(rs, targets):
            fits = f"{r}->dtype == {r}_dtype && {r}->is_contiguous"
            if overlap[r]:
                fits += f" && !({overlap[r]})" if " || " in overlap[r] else f" && !{overlap[r]}"
            b(f"yt_tensor *{t} = {fits} ? {r} : yt__empty(&{r}_shape, {r}_dtype, result_device);")
        b(f"yt_status status = {' || '.join(f'{t} == NULL' for t in targets)} ? yt_errcode() : "
          f"kernel({self.kernel_call_args(targets, [])});")
        b("if (status != YT_OK)")
        self.error_context(b, "out")
        for r, t in zip(rs, targets):
            b(f"if ({t} != {r}) {{")
            b("    if (status == YT_OK)")
            b(f"        status = yt__copy_into({r}, {t});")
            b(f"    yt_release({t});")
            b("}")
        b("if (status != YT_OK)")
        b("    return status;")
        for r in rs:
            b(f"yt__bump_version({r});")
        b("return YT_OK;")
        return b.lines

    def overlap_terms(self, b: Body, dests: list, variant: str, casted) -> dict:
        """Per destination, a C condition that holds when writing it could change an input before
        the kernel reads it (yt__writes_over_inputs); "" when no input can. In-place, self is the
        destination itself, which the kernels are written to update."""
        ins = [f"{a.name}_k" if a.name in casted else a.name for a in self.s.args
               if a.kind == "tensor" and not (variant == "inplace" and a.name == "self")]
        lists = [a.name for a in self.s.args if a.kind == "tensorlist"]
        if len(ins) > 1:
            b(f"yt_tensor *const read[{len(ins)}] = {{{', '.join(ins)}}};")
        elementwise = "true" if self.op.impl == "pointwise" else "false"
        terms = {}
        for d in dests:
            t = []
            if len(ins) == 1:
                t.append(f"yt__writes_over_inputs({d}, 1, &{ins[0]}, {elementwise})")
            elif ins:
                t.append(f"yt__writes_over_inputs({d}, {len(ins)}, read, {elementwise})")
            t += [f"yt__writes_over_inputs({d}, {n}_len, {n}, false)" for n in lists]
            terms[d] = " || ".join(t)
        return terms

    def write_target(self, b: Body, dest: str, variant: str, casted):
        """Runs the kernel into `dest` (out or self), through a temporary when dest's dtype or
        layout does not fit the kernel, or when writing it would change an input first."""
        op = self.op
        direct = f"{dest}->dtype == result_dtype" + ("" if op.impl == "pointwise" else f" && {dest}->is_contiguous")
        overlap = self.overlap_terms(b, [dest], variant, casted)[dest]
        if overlap:
            direct += f" && !({overlap})" if " || " in overlap else f" && !{overlap}"
        b(f"yt_tensor *target = {direct} ? {dest} : yt__empty(&result_shape, result_dtype, result_device);")
        b(f"yt_status status = target == NULL ? yt_errcode() : kernel({self.kernel_call_args('target', casted)});")
        for t in casted:
            b(f"yt__release_cast({t}_k, {t});")
        if op.impl != "pointwise":
            b("if (status != YT_OK)")
            self.error_context(b, variant)
        b(f"if (target != {dest}) {{")
        b("    if (status == YT_OK)")
        b(f"        status = yt__copy_into({dest}, target);")
        b("    yt_release(target);")
        b("}")

    def body_out(self) -> list:
        b = Body()
        self.prologue(b, "out", True)
        self.dtype_lines(b)
        self.checks(b, "out")
        self.shape_lines(b, "out")
        self.device_lines(b)
        self.kernel_lookup(b, "out")
        name = self.msg_name("out")
        n = len(self.tensors) + 1
        b(f"yt_tensor *const all_tensors[{n}] = {{out, {', '.join(self.tensors)}}};")
        b(f"if (yt__any_requires_grad({n}, all_tensors))")
        b.ret_fail("yt__fail_status", "YT_ERR_STATE",
                   f"{name}: out= variants do not support autograd, but an argument requires grad")
        b(f'if (yt__check_out(out, &result_shape, result_dtype, result_device, "{name}", "out") != YT_OK)')
        b("    return yt_errcode();")
        casted = self.casts(b, "out") if self.op.impl == "pointwise" else []
        self.write_target(b, "out", "out", casted)
        b("if (status == YT_OK)")
        b("    yt__bump_version(out);")
        b("return status;")
        return b.lines

    def body_inplace(self) -> list:
        b = Body()
        self.prologue(b, "inplace", True)
        self.refusals(b, "inplace")
        self.dtype_lines(b)
        self.checks(b, "inplace")
        self.shape_lines(b, "inplace")
        self.device_lines(b)
        self.kernel_lookup(b, "inplace")
        name = self.msg_name("inplace")
        b(f'if (yt__check_out(self, &result_shape, result_dtype, result_device, "{name}", "self") != YT_OK)')
        b("    return yt_errcode();")
        rec = self.recording_line(b)
        uses_self = any(s.source == "self" for s in self.saved)
        overwrite = self.overwrite_line(b, name)
        if rec or overwrite:
            b(f'if (recording && yt__check_inplace(self, "{name}") != YT_OK)')
            b("    return yt_errcode();")
        casted = self.casts(b, "inplace")
        if rec and uses_self:
            b("/* the backward formulas read self's value before this write: keep a copy */")
            b("yt_tensor *self_before = recording ? yt__snapshot(self) : self;")
            b("if (self_before == NULL) {")
            for t in casted:
                b(f"yt__release_cast({t}_k, {t});", 2)
            b("    return yt_errcode();")
            b("}")
        self.write_target(b, "self", "inplace", casted)
        b("if (status == YT_OK)")
        b("    yt__bump_version(self);")
        if rec:
            b("if (status == YT_OK && recording)")
            b(f"    status = {self.record_call('self', 'self_before' if uses_self else 'self')};")
            b("if (status == YT_OK && recording) /* a view: its base's history takes the write */")
            b(f'    status = yt__rebase_view(self, "{name}");')
            if uses_self:
                b("if (self_before != self)")
                b("    yt_release(self_before);")
        if overwrite:
            b("if (status == YT_OK && recording)")
            b(f'    status = yt__record_overwrite(self, "{name}");')
        b("return status;")
        return b.lines

    def body_short(self, variant: str) -> list:
        ret = "return " + self.fn_name(variant, True)
        args = self.out_params(variant, names=True) + c_args_short(self.op)
        if self.s.returns_list:
            args += ["out", "out_capacity"]
        elif self.s.multi and variant == "function":
            args += self.results
        return [f"    {ret}({', '.join(args)});"]

    # -- docs
    def doc(self, variant: str, ex: bool) -> list:
        op, s = self.op, self.s
        lines = [s.text] + textwrap.wrap(op.doc, DOC_WIDTH)  # the schema stays whole, for grep
        defaults = [f"{a.name}={_default_text(a)}" for a in s.args if a.has_default]
        if defaults and not ex:
            lines.append(f"Uses the defaults {', '.join(defaults)}; {self.fn_name(variant, True)}() takes every argument.")
        if variant == "inplace":
            lines.append("Writes the result into `self` (bumping its version).")
            lines.append("Returns: YT_OK, or an error code with yt_errmsg() set; `self` is unchanged on error.")
        elif variant == "out" and s.multi:
            lines.append(f"Writes the results into {', '.join(self.results)}, which must have the results' shapes and "
                         "dtypes they can be")
            lines.append("cast to. Not differentiable. Returns: YT_OK, or an error code with yt_errmsg() set.")
        elif variant == "out":
            lines.append("Writes the result into `out`, which must have the result's shape, and a dtype the result")
            lines.append("can be cast to. Not differentiable. Returns: YT_OK, or an error code with yt_errmsg() set.")
        elif s.returns_list:
            lines.append("Stores new references to the pieces in out[0 .. count) and returns the count; with out=NULL and")
            lines.append("out_capacity 0 it only counts. Returns -1 with yt_errcode() set on error (YT_ERR_VALUE")
            lines.append("when out_capacity is below the count, naming it).")
        elif s.multi:
            lines.append(f"Stores new references to the results in *{', *'.join(self.results)} (in return order).")
            lines.append("Returns: YT_OK, or an error code with yt_errmsg() set and every result NULL.")
        else:
            kind = {"view": "a view sharing self's storage", "composite": "a new reference"}.get(op.impl, "a new tensor")
            lines.append(f"Returns: {kind} (new reference), or NULL with yt_errcode() set.")
        d = op.derivative
        refused = [t for t in (d.non_differentiable if d is not None and variant != "out" else [])
                   if ex or not self.has_defaults or not s.arg(t).has_default]  # a parameter of this function
        if refused:
            lines += textwrap.wrap(f"Not differentiable with respect to {', '.join(refused)}: YT_ERR_VALUE when "
                                   f"{'it requires' if len(refused) == 1 else 'one of them requires'} grad and grad "
                                   "mode is on.", DOC_WIDTH)
        lines.append("Arguments are borrowed. A NULL tensor argument gives " +
                     ("NULL" if variant == "function" and not s.multi and not s.returns_list else
                      "-1" if s.returns_list else "its error code") +
                     ", keeping an earlier error.")
        return lines

    def functions(self) -> list:
        out = []
        banner = [f"{self.s.text}", f"from {self.op.loc}" +
                  (f"; backward from {self.op.derivative.loc}" if self.differentiable else "")]
        for variant in self.op.variants:
            ret = "yt_tensor *" if variant == "function" and not self.s.multi else "yt_status"
            if self.s.returns_list:
                ret = "int64_t"
            params = self.out_params(variant) + c_params(self.op, True) + self.result_params(variant)
            if self.s.returns_list:
                body = self.body_list()
            elif self.s.multi:
                body = {"function": self.body_multi, "out": self.body_multi_out}[variant]()
            else:
                body = {"function": self.body_function, "out": self.body_out, "inplace": self.body_inplace}[variant]()
            if self.has_defaults:
                short = self.out_params(variant) + c_params(self.op, False) + self.result_params(variant)
                out.append(Function(self.fn_name(variant, False), ret, short or ["void"], self.doc(variant, False),
                                    self.body_short(variant), banner))
            out.append(Function(self.fn_name(variant, self.has_defaults), ret, params, self.doc(variant, True),
                                body, banner))
        return out

    def out_params(self, variant: str, names: bool = False) -> list:
        """Leading parameters of an out= variant: `out`, or one tensor per result."""
        if variant != "out":
            return []
        rs = self.results if self.s.multi else ["out"]
        return rs if names else [f"yt_tensor *{r}" for r in rs]

    def result_params(self, variant: str) -> list:
        """Trailing output pointers of a multi-result function, or the array of a -> Tensor[] one."""
        if self.s.returns_list:
            return ["yt_tensor **out", "int64_t out_capacity"]
        return [f"yt_tensor **{r}" for r in self.results] if self.s.multi and variant == "function" else []

    # -- kernel declarations
    def kernel_decl(self):
        if self.op.impl not in ("pointwise", "kernel"):
            return None
        params = [f"yt_tensor *{r}" for r in self.results] + c_params(self.op, True)
        typedef = f"typedef yt_status (*{self.kernel_fn_type})({', '.join(params)});"
        table = []
        if self.op.impl == "pointwise":
            table.append(("YT_DEVICE_CPU", f"yt__cpu_{self.op.c_name}"))
        for dev, fn in self.op.dispatch.items():
            table.append((f"YT_DEVICE_{dev.upper()}", fn))
        protos = [f"yt_status {fn}({', '.join(params)});" for _, fn in table]
        return {"typedef": typedef, "table_name": self.kernel_table, "fn_type": self.kernel_fn_type,
                "entries": table, "protos": protos}

    def impl_proto(self):
        if (self.s.multi or self.s.returns_list) and self.op.impl == "composite":
            params = c_params(self.op, True) + self.result_params("function")
            ret = "int64_t" if self.s.returns_list else "yt_status"
            return f"{ret} {self.op.impl_fn}({', '.join(params)});"
        if self.op.impl == "view" or self.op.impl == "composite":
            return f"yt_tensor *{self.op.impl_fn}({', '.join(c_params(self.op, True))});"
        return None

    # -- autograd node
    def node_desc(self):
        if not self.differentiable:
            return None
        op = self.op
        name = "".join(p.capitalize() for p in op.c_name.split("_")) + "Backward"
        fields = [f"int {t}_len; /* elements of {t}: inputs {len(self.tensors)}.. of the node */"
                  for t in self.grad_lists]
        for sv in self.saved:
            if sv.c_type == "yt_saved_list":
                if sv.field not in self.grad_lists:
                    fields.append(f"int {sv.field}_len;")
                fields.append(f"yt_saved *{sv.field}; /* [{sv.field}_len]; used by: {', '.join(sv.used_by)} */")
                continue
            if sv.c_type.startswith("optional "):
                fields.append(f"bool {sv.field}_given; /* {sv.field} is not None */")
            fields.append(f"{sv.c_type.replace('optional ', '')} {sv.field}; /* used by: {', '.join(sv.used_by)} */")
        record = self.record_lines()
        n_in = len(self.tensors)
        used = {a.name for a in self.record_args()}
        record_params = [f"yt_tensor *{r}" for r in self.record_results()] + \
            [p for p, a in _params_with_args(op) if a.name in used]
        releases = [f"yt__saved_release(&node->{sv.field});" for sv in self.saved if sv.c_type == "yt_saved"]
        releases += [f"yt__saved_list_release(&node->{sv.field}, node->{sv.field}_len);" for sv in self.saved
                     if sv.c_type == "yt_saved_list"]
        return {
            "c_name": op.c_name,
            "kind_name": name,
            "op_name": self.s.name,
            "schema": self.s.text,
            "loc": str(op.derivative.loc),
            "formulas": [{"input": f.input, "source": f.source, "cond": f.cond, "c_lines": f.c_lines}
                         for f in self.compiled],
            "fused": self.fused.c_lines if self.fused else None,
            "fused_partial": self.fused.partial if self.fused else False,
            "fused_source": op.derivative.fused.source if op.derivative.fused else None,
            "non_differentiable": list(op.derivative.non_differentiable),
            "fields": fields,
            "uses_node_in_backward": True,
            "record_params": record_params,
            "record_lines": record,
            "n_inputs": " + ".join([str(n_in)] + [f"{t}_len" for t in self.grad_lists]) if self.grad_lists else n_in,
            "outputs": [(r, k) for k, r in enumerate(self.diff_results)],
            "releases": releases,
        }

    def record_lines(self) -> list:
        """Body of yt__record_<op>: edges, then saved values."""
        record = []
        tensor_index = {t: i for i, t in enumerate(self.tensors)}
        for i, t in enumerate(self.tensors):
            if t in self.grad_inputs:
                record.append(f"yt__node_set_edge(&node->base, {i}, {t});")
        for t in self.grad_lists:  # one edge per element, after the plain tensors
            record.append(f"node->{t}_len = {t}_len;")
            record.append(f"for (int i = 0; i < {t}_len; i++)")
            record.append(f"    yt__node_set_edge(&node->base, {len(self.tensors)} + i, {t}[i]);")
        for sv in self.saved:
            cond = " || ".join(f"node->base.needs_grad[{tensor_index[u]}]" if u in tensor_index else
                               f"yt__needs_any_grad(&node->base, {len(self.tensors)}, {u}_len)" for u in sv.used_by)
            src = sv.source
            if sv.c_type == "yt_saved_list":  # a Tensor[] argument, element by element
                if src not in self.grad_lists:
                    record.append(f"node->{src}_len = {src}_len;")
                record.append(f"if (status == YT_OK && ({cond}))")
                record.append(f"    status = yt__saved_list_init(&node->{sv.field}, {src}, {src}_len);")
            elif sv.c_type == "yt_saved":
                # a differentiable result is saved without a reference back to this node
                is_out = src in self.diff_results
                nr = self.diff_results.index(src) if is_out else 0
                record.append(f"if (status == YT_OK && ({cond}))")
                record.append(f"    status = yt__saved_init(&node->{sv.field}, {src}, {'true' if is_out else 'false'}, {nr});")
            elif "." in src:
                base, attr = src.split(".")
                if self.s.arg(base) is not None and self.s.arg(base).optional:
                    record.append(f"if ({base} != NULL) /* an absent Tensor? has no {attr} (its formula does not run) */")
                record.append({"shape": f"yt__shape_of(&node->{sv.field}, {base});",
                               "numel": f"node->{sv.field} = {base}->numel;",
                               "dim": f"node->{sv.field} = {base}->dim;",
                               "dtype": f"node->{sv.field} = {base}->dtype;"}[attr])
            elif sv.c_type.startswith("optional "):
                record.append(f"node->{sv.field}_given = {src} != NULL;")
                record.append(f"if ({src} != NULL)")
                record.append(f"    node->{sv.field} = *{src};")
            elif sv.c_type == "yt_int_list":
                record.append(f"node->{sv.field}.len = {src}_len;")
                record.append(f"for (int i = 0; i < {src}_len; i++)")
                record.append(f"    node->{sv.field}.v[i] = {src}[i];")
            else:
                record.append(f"node->{sv.field} = {src};")
        return record

    # -- generated pointwise CPU kernel
    def pointwise_kernel(self):
        op = self.op
        if op.impl != "pointwise":
            return None
        expr = PointwiseExpr(op)
        s = self.s
        tensors = self.tensors
        promoted = [t for t in op.promote if s.arg(t).kind == "tensor"] or [tensors[0]]
        switch_on = promoted[0]
        if s.arg(switch_on).optional:
            raise SpecError(op.loc, f"{s.full_name}: the first promoted tensor must not be optional")
        for t in tensors:
            if s.arg(t).optional and t not in promoted:
                raise SpecError(op.loc, f"{s.full_name}: optional tensor '{t}' of a pointwise op must be promoted")
        # Values the loops read besides the tensors, in schema order: scalars and floats, and the
        # presence of optional tensors. The kernel converts them once per call (pointwise_scalar).
        ctx_args = [a for a in s.args if a.kind in ("scalar", "float") or (a.kind == "tensor" and a.optional)]
        given = expr.given_flags()
        dset = op.dtypes[switch_on]
        if op.result_dtype == "floating":
            compute_set = [d for d in dset if d in DTYPE_SETS["floating"]]
        else:
            compute_set = list(dset)
        loops, cases = [], []
        presence = expr.presence_args()
        for d in compute_set:
            variants = []
            # specialised Scalar values (floating loops only) first, the general loop last
            constants = expr.constant_cases() if DTYPE_C[d][1] in ("float", "double") else [{}]
            for variant, consts in itertools.product(expr.variants(), constants):
                try:
                    value = expr.render(d, variant, consts)
                except NoForm:
                    continue
                parts = _variant_cond_parts(variant, consts)
                same = next((v for v in variants if v["value"] == value), None)
                if same is not None:  # the same loop serves both: either condition selects it
                    same["alternatives"].append(parts)
                    continue
                # a loop is named by what it reads: an argument taken as absent that the value
                # still reads (clamp's min where both bounds are None, which its checks refuse)
                # is left out of the name rather than called absent
                suffix = "".join(f"_{k}" if v is True else ("" if k in expr.used else f"_no_{k}") if k in presence
                                 else f"_{v or 'none'}" for k, v in variant.items())
                suffix += "".join(f"_{k}_{_number_word(v)}" for k, v in consts.items())
                loops.append(self._pointwise_loop(d, f"{d}{suffix}", value, expr.used, promoted, ctx_args))
                loops[-1]["clones"] = expr.heavy
                bound = "YT__PW_COMPUTE_BOUND" if expr.compute_bound else "YT__PW_MEMORY_BOUND"
                variants.append({"fn": loops[-1]["fn"], "blocks": loops[-1]["blocks"],
                                 "stepped": _stepped_choice(loops[-1]), "bound": bound,
                                 "alternatives": [parts], "value": value})
            for v in variants:
                v["cond"] = _any_of(v.pop("alternatives"))
            if variants:
                cases.append({"enum": C_DTYPE[d], "variants": variants})
        if not loops:
            raise SpecError(expr.loc, f"{s.full_name}: pointwise expression '{op.pointwise}' has no loop "
                            f"for any dtype of {switch_on}")
        inputs = [t if not s.arg(t).optional else f"{t} != NULL ? {t} : {switch_on}" for t in tensors]
        return {
            "c_name": op.c_name, "name": s.name, "expr": op.pointwise, "loc": str(op.loc),
            "params": ["yt_tensor *result"] + c_params(op, True), "inputs": inputs, "switch_on": switch_on,
            "scalars": [_ctx_init(a) for a in ctx_args], "loops": loops, "cases": cases, "n_in": len(tensors),
            "divisors": [{"name": d, "tensor": s.arg(d).kind == "tensor"} for d in expr.int_divisors()],
            "exponents": expr.int_exponents(),
            "checked": [{"name": c, "optional": s.arg(c).optional, "alpha": alpha} for c, alpha in expr.checked],
            "given": given,
        }

    def _pointwise_loop(self, d, suffix, value, used, promoted, ctx_args):
        """One loop, in its three functions (OP_rows_SUFFIX, the body; OP_loop_SUFFIX and
        OP_blocks_SUFFIX, its row and block forms), and for f32 and f64 loops whose operands all
        have the loop's dtype its stepped form (OP_stepped_SUFFIX, and OP_stepped_avx2_SUFFIX
        for CPUs without AVX-512): dtype `d`, the element expression `value` reading the names
        `used`."""
        op = self.op
        store_t = "bool" if op.result_dtype == "bool" else d
        operands = []
        for i, t in enumerate(self.tensors):
            td = d if t in promoted else op.dtypes[t][0] if len(op.dtypes[t]) == 1 else d
            st, ct, load, _ = DTYPE_C[td]
            operands.append({"name": t, "index": i + 1, "storage": st, "compute": ct, "load": load,
                             "used": t in used, "dtype": td})
        ost, _, _, ostore = DTYPE_C[store_t]
        ctype = DTYPE_C[d][1]
        # an expression that is one operand of the loop's own dtype (clone's `self`) moves its bits:
        # f16 / bf16 would otherwise round-trip through float, which quiets signalling NaNs
        moved = next((o for o in operands if o["name"] == value and o["storage"] == ost and o["dtype"] == d), None)
        if moved is not None:
            moved["compute"], moved["load"], ostore, ctype = ost, "{}", "{}", ost
        scal = []
        for i, a in enumerate(ctx_args):
            if a.name in used and a.kind != "tensor":
                if ctype in ("float", "double"):
                    conv = f"({ctype})scalars[{i}].f"
                    if a.name in op.promote and DTYPE_C[d][0] != ctype:
                        # a number beside a tensor takes the tensor's dtype, as in PyTorch (where
                        # it is a wrapped 0-d tensor cast to the common dtype): f16 / bf16 round it
                        conv = DTYPE_C[d][2].format(DTYPE_C[d][3].format(conv))
                elif d == "u8":  # through uint8_t first, so -1 is 255 as in PyTorch
                    conv = f"({ctype})(uint8_t)scalars[{i}].i"
                else:
                    conv = f"({ctype})scalars[{i}].i"
                scal.append(f"const {ctype} {a.name} = {conv};")
            if f"{a.name}_given" in used:
                scal.append(f"const bool {a.name}_given = scalars[{i}].given;")
        sizes = [f"sizeof({x})" for x in [ost] + [o["storage"] for o in operands]]
        # the stepped form moves whole vectors of one floating type (runtime/stepped_lanes.h)
        lanes = STEPPED_LANES.get(d)
        stepped = lanes is not None and all(t == DTYPE_C[d][0] for t in [ost] + [o["storage"] for o in operands])
        step_names = ["out"] + [o["name"] for o in operands if o["used"]]
        return {
            "dtype": d, "enum": C_DTYPE[d], "rows": f"{op.c_name}_rows_{suffix}",
            "fn": f"{op.c_name}_loop_{suffix}", "blocks": f"{op.c_name}_blocks_{suffix}",
            # the stepped form, once for each instruction set (runtime/stepped_lanes.h)
            "stepped_forms": [{"fn": f"{op.c_name}_stepped{isa}_{suffix}", "row": f"{op.c_name}_stepped_row{isa}_{suffix}",
                               "target": target, "lanes_suffix": f"_{d}{isa}"} for isa, target in STEPPED_ISAS]
            if stepped else [], "lanes": lanes, "step_names": step_names,
            "step_cases": _step_cases(step_names, STEPPED_ELEMENT_BYTES.get(d, 0)) if stepped else [],
            "n_ops": len(sizes), "esizes": ", ".join(sizes),
            "out_storage": ost, "store": ostore.format("out_value"), "compute": ctype,
            "operands": operands, "scalar_lines": scal, "value": value,
            "contig_cond": " && ".join(f"strides[{i}] == {x}" for i, x in enumerate(sizes)),
            # input b broadcast along the row, everything else contiguous
            "bcast_cond": [" && ".join(f"strides[{i}] == {'0' if i == b else x}" for i, x in enumerate(sizes))
                           for b in range(1, len(sizes))],
        }


def _stepped_choice(loop: dict) -> str:
    """The C expression a call passes yt__pointwise as its stepped form: the form of each
    instruction set in STEPPED_ISAS, chosen among at run time, or NULL for a loop without one."""
    if not loop["stepped_forms"]:
        return "NULL"
    return f"yt__stepped_form({', '.join(f['fn'] for f in loop['stepped_forms'])})"


def _step_cases(names: list, size: int) -> list:
    """The steps (bytes) that a stepped form's rows pass to its row function as constants, so
    that the step tests of runtime/stepped_lanes.h fold away in each: one input 2 or 3 elements
    apart, the output 2 apart, or the output and the first input 2 apart (in place), every other
    operand contiguous. Each: the C condition on the `NAME_step` locals, and the steps in order."""
    patterns = []
    for k in range(1, len(names)):
        patterns += [{k: 2}, {k: 3}]
    patterns.append({0: 2})
    if len(names) > 1:
        patterns.append({0: 2, 1: 2})
    cases = []
    for p in patterns:
        steps = [str(size * p.get(k, 1)) for k in range(len(names))]
        cond = " && ".join(f"{n}_step == {s}" for n, s in zip(names, steps))
        # a contiguous output may be stored around the caches (the form's `stream`): such a case's
        # rows are inlined once storing so and once plainly, each with `stream` a constant
        cases.append({"cond": cond, "steps": steps, "contiguous_out": steps[0] == str(size)})
    return cases


def _variant_cond_parts(variant: dict, consts: dict) -> list:
    """The C conditions that together select a loop variant: its str arguments' values, the
    presence of its optional arguments, and its specialised Scalar values (none: always)."""
    parts = []
    for name, value in variant.items():
        if value is None or value is True:  # absent, or given (an optional value argument)
            parts.append(f"{name} {'==' if value is None else '!='} NULL")
        else:
            parts.append(f'({name} != NULL && strcmp({name}, "{value}") == 0)')
    for name, value in consts.items():
        parts.append(f"yt__scalar_to_double({name}) == {value!r}")
    return parts


def _any_of(alternatives: list) -> str:
    """C condition that holds when all parts of one of `alternatives` do (None: always)."""
    if any(not parts for parts in alternatives):
        return None
    if len(alternatives) == 1:
        return " && ".join(alternatives[0])
    return " || ".join(f"({' && '.join(p)})" if len(p) > 1 else p[0] for p in alternatives)


def _number_word(v: float) -> str:
    """A specialised value as a C identifier part: 2.0 -> 2, -0.5 -> m0_5."""
    text = repr(int(v)) if v == int(v) else repr(v)
    return text.replace("-", "m").replace(".", "_")


def _ctx_init(a) -> str:
    """Initializer of one pointwise_scalar entry {f, i, given} for argument `a`."""
    if a.kind == "tensor":
        return f"{{0, 0, {a.name} != NULL}}"
    if a.kind == "scalar":
        f, i = "yt__scalar_to_double({})", "yt__scalar_to_i64({})"
    else:
        f, i = "{}", "yt__scalar_to_i64(yt_float({}))"
    if not a.optional:
        return f"{{{f.format(a.name)}, {i.format(a.name)}, true}}"
    v = f"*{a.name}"
    return f"{{{a.name} != NULL ? {f.format(v)} : 0, {a.name} != NULL ? {i.format(v)} : 0, {a.name} != NULL}}"


def _check_code(expr: str) -> str:
    """The status a failed check returns: a dtype, a shape, or otherwise a value problem."""
    if "is_floating(" in expr:
        return "YT_ERR_DTYPE"
    if any(k in expr for k in (".dim", ".size(", "len(")):
        return "YT_ERR_SHAPE"
    return "YT_ERR_VALUE"


def _split_call(text: str):
    m = re.match(r"^(yt__[a-z0-9_]+)\((.*)\)$", text)
    return m.group(1), [x.strip() for x in m.group(2).split(",") if x.strip()]


def _default_text(a) -> str:
    d = a.default
    if d is None:
        return "None"
    if isinstance(d, bool):
        return "True" if d else "False"
    return str(d)
