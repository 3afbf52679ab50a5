"""Pointwise scalar expressions (ops.yaml `pointwise:`) -> C inner loops per dtype."""

from __future__ import annotations

import ast

from model import Op, SpecError

# dtype -> (storage C type, compute C type, load format, store format)
DTYPE_C = {
    "bool": ("bool", "bool", "{}", "(bool)({})"),
    "u8": ("uint8_t", "int32_t", "{}", "(uint8_t)({})"),  # signed compute: `x < 0` stays meaningful
    "i8": ("int8_t", "int8_t", "{}", "(int8_t)({})"),
    "i16": ("int16_t", "int16_t", "{}", "(int16_t)({})"),
    "i32": ("int32_t", "int32_t", "{}", "(int32_t)({})"),
    "i64": ("int64_t", "int64_t", "{}", "(int64_t)({})"),
    "f16": ("uint16_t", "float", "yt__f16_to_f32({})", "yt__f32_to_f16({})"),
    "bf16": ("uint16_t", "float", "yt__bf16_to_f32({})", "yt__f32_to_bf16({})"),
    "f32": ("float", "float", "{}", "{}"),
    "f64": ("double", "double", "{}", "{}"),
}
# libm functions of floating loops (`expf` in float loops); ROUNDING ones are the identity on
# integers, and CLASSIFY ones are constants there.
FLOAT_FUNCS = {
    "exp": 1, "expm1": 1, "log": 1, "log1p": 1, "log2": 1, "sqrt": 1, "sin": 1, "cos": 1, "tanh": 1,
    "erf": 1, "fabs": 1, "pow": 2, "fmod": 2, "copysign": 2,
}
ROUNDING = ("floor", "ceil", "trunc", "nearbyint")  # nearbyint: half to even (default rounding mode)
CLASSIFY = {"isnan": "0", "isfinite": "1", "isinf": "0"}
# kernels/cpu/pointwise_math.h helpers, one per compute type: yt__pw_NAME_SUFFIX
HELPERS = {"abs": 1, "sign": 1, "maximum": 2, "minimum": 2, "remainder": 2, "floor_divide": 2,
           "trunc_divide": 2, "ipow": 2}
HELPER_SUFFIX = {"float": "f", "double": "d", "int8_t": "i8", "int16_t": "i16", "int32_t": "i32",
                 "int64_t": "i64", "bool": "b"}
INT_DIVISION = ("remainder", "floor_divide", "trunc_divide")
ARITY = {**FLOAT_FUNCS, **{f: 1 for f in ROUNDING}, **{f: 1 for f in CLASSIFY}, **HELPERS}
_BIN = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_CMP = {ast.Gt: ">", ast.Lt: "<", ast.Eq: "==", ast.GtE: ">=", ast.LtE: "<=", ast.NotEq: "!="}


class PointwiseExpr:
    """A parsed pointwise expression of an op; renders C for one compute type."""

    def __init__(self, op: Op):
        self.op = op
        self.loc = op.pointwise_loc or op.loc
        try:
            self.tree = ast.parse(op.pointwise, mode="eval").body
        except SyntaxError as e:
            raise SpecError(self.loc, f"{op.schema.full_name}: pointwise expression: syntax error: {e.msg}") from None
        self.names = set()
        self._validate(self.tree)

    def _fail(self, msg):
        raise SpecError(self.loc, f"{self.op.schema.full_name}: pointwise expression '{self.op.pointwise}': {msg}")

    def _validate(self, n):
        if isinstance(n, ast.Name):
            a = self.op.schema.arg(n.id)
            if a is None or a.kind not in ("tensor", "scalar"):
                self._fail(f"'{n.id}' is not a Tensor or Scalar argument")
            self.names.add(n.id)
        elif isinstance(n, ast.Constant):
            if not isinstance(n.value, (int, float)) or isinstance(n.value, bool):
                self._fail(f"unsupported constant {n.value!r}")
        elif isinstance(n, ast.BinOp):
            if type(n.op) not in _BIN:
                self._fail(f"unsupported operator {type(n.op).__name__}")
            self._validate(n.left)
            self._validate(n.right)
        elif isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.Not)):
            self._validate(n.operand)
        elif isinstance(n, ast.Compare):
            if len(n.ops) != 1 or type(n.ops[0]) not in _CMP:
                self._fail("only single comparisons are supported")
            self._validate(n.left)
            self._validate(n.comparators[0])
        elif isinstance(n, ast.IfExp):
            for x in (n.test, n.body, n.orelse):
                self._validate(x)
        elif isinstance(n, ast.BoolOp):
            for x in n.values:
                self._validate(x)
        elif isinstance(n, ast.Call):
            if not isinstance(n.func, ast.Name) or n.func.id not in ARITY:
                self._fail(f"unknown function '{ast.unparse(n.func)}'; known: {', '.join(ARITY)}")
            if len(n.args) != ARITY[n.func.id] or n.keywords:
                self._fail(f"{n.func.id} takes {ARITY[n.func.id]} argument(s)")
            for x in n.args:
                self._validate(x)
        else:
            self._fail(f"unsupported syntax '{ast.unparse(n)}'")

    def int_divisors(self) -> list:
        """Arguments that divide integers (second argument of the division helpers): integral
        loops check them for zeros first, as PyTorch raises ZeroDivisionError."""
        out = []
        for n in ast.walk(self.tree):
            if (isinstance(n, ast.Call) and n.func.id in INT_DIVISION and isinstance(n.args[1], ast.Name)
                    and n.args[1].id not in out):
                out.append(n.args[1].id)
        return out

    def uses_functions(self) -> bool:
        return any(isinstance(n, ast.Call) for n in ast.walk(self.tree))

    def render(self, dtype: str) -> str:
        ctype = DTYPE_C[dtype][1]
        is_float = ctype in ("float", "double")

        def r(n) -> str:
            if isinstance(n, ast.Name):
                return n.id
            if isinstance(n, ast.Constant):
                if isinstance(n.value, float) and not is_float:
                    self._fail(f"float constant in an integer loop ({dtype})")
                return f"({ctype}){n.value!r}"
            if isinstance(n, ast.BinOp):
                op = _BIN[type(n.op)]
                if ctype == "bool":  # bool arithmetic is logic, as in PyTorch (True + True is True)
                    op = {"*": "&&", "+": "||"}.get(op, op)
                return f"({r(n.left)} {op} {r(n.right)})"
            if isinstance(n, ast.UnaryOp):
                return f"(-{r(n.operand)})" if isinstance(n.op, ast.USub) else f"(!{r(n.operand)})"
            if isinstance(n, ast.Compare):
                return f"({r(n.left)} {_CMP[type(n.ops[0])]} {r(n.comparators[0])})"
            if isinstance(n, ast.IfExp):
                return f"({r(n.test)} ? {r(n.body)} : {r(n.orelse)})"
            if isinstance(n, ast.BoolOp):
                j = " && " if isinstance(n.op, ast.And) else " || "
                return "(" + j.join(r(v) for v in n.values) + ")"
            if isinstance(n, ast.Call) and n.func.id in HELPERS:
                args = ", ".join(_unwrap(r(a)) for a in n.args)
                return f"yt__pw_{n.func.id}_{HELPER_SUFFIX[ctype]}({args})"
            if isinstance(n, ast.Call) and not is_float and n.func.id in ROUNDING:
                return r(n.args[0])
            if isinstance(n, ast.Call) and not is_float and n.func.id in CLASSIFY:
                return f"({ctype})({CLASSIFY[n.func.id]} + 0 * {r(n.args[0])})"
            if isinstance(n, ast.Call) and n.func.id in CLASSIFY:
                return f"({n.func.id}({_unwrap(r(n.args[0]))}) != 0)"
            if isinstance(n, ast.Call):
                if not is_float:
                    self._fail(f"{n.func.id}() has no {dtype} form (declare result_dtype: floating)")
                fn = n.func.id + ("f" if ctype == "float" else "")
                return f"{fn}({', '.join(_unwrap(r(a)) for a in n.args)})"
            raise AssertionError(n)

        return _unwrap(r(self.tree))


def _unwrap(text: str) -> str:
    """`text` without one pair of parentheses around all of it: `(a + b)` -> `a + b`."""
    if text.startswith("(") and text.endswith(")") and _balanced(text[1:-1]):
        return text[1:-1]
    return text


def _balanced(s: str) -> bool:
    depth = 0
    for ch in s:
        depth += ch == "("
        depth -= ch == ")"
        if depth < 0:
            return False
    return depth == 0
