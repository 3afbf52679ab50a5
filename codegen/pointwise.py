"""Pointwise scalar expressions (ops.yaml `pointwise:`) -> C inner loops per dtype."""

from __future__ import annotations

import ast
import itertools

from model import Op, SpecError

# dtype -> (storage C type, compute C type, load format, store format). bool is stored as the byte
# it is and loaded with `!= 0`: GCC 12 does not vectorise logic on values loaded as `bool`
# (one thread, [1000, 1000]: logical_not 275 -> 21 us, torch 27; where 3909 -> 151 us, torch 4036).
DTYPE_C = {
    "bool": ("uint8_t", "bool", "({} != 0)", "(bool)({})"),
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
# The dtypes whose loops get a stepped form (OP_stepped_DTYPE), and the lanes it takes at a time:
# rows whose operands step over elements, x[:, ::2] or x[..., ::3], a 512-bit vector at a time in
# registers (runtime/stepped_lanes.h). Elsewhere such rows go through buffers (stepped_copy.h).
STEPPED_LANES = {"f32": "YT__STEPPED_LANES_F32", "f64": "YT__STEPPED_LANES_F64"}
STEPPED_ELEMENT_BYTES = {"f32": 4, "f64": 8}
# The instruction sets each stepped form is built for, in yt__stepped_form's order of arguments:
# the suffix of its functions' names (and of the lanes functions they call), and its target.
STEPPED_ISAS = [("", "YT__STEPPED_TARGET"), ("_avx2", "YT__STEPPED_AVX2_TARGET")]
# dtype_max() / dtype_lowest(): the largest and lowest finite value of the loop's dtype (what
# nan_to_num puts for infinities); f16 and bf16 compute in float, so their own limits are spelled out.
DTYPE_LIMITS = {
    "bool": ("true", "false"),
    "u8": ("255", "0"),
    "i8": ("INT8_MAX", "INT8_MIN"),
    "i16": ("INT16_MAX", "INT16_MIN"),
    "i32": ("INT32_MAX", "INT32_MIN"),
    "i64": ("INT64_MAX", "INT64_MIN"),
    "f16": ("65504.0f", "-65504.0f"),
    "bf16": ("3.38953139e38f", "-3.38953139e38f"),
    "f32": ("FLT_MAX", "-FLT_MAX"),
    "f64": ("DBL_MAX", "-DBL_MAX"),
}
# libm functions of floating loops (`expf` in float loops); ROUNDING ones are the identity on
# integers, and CLASSIFY ones are constants there.
FLOAT_FUNCS = {
    "exp": 1, "expm1": 1, "log": 1, "log1p": 1, "log2": 1, "sqrt": 1, "sin": 1, "cos": 1, "tanh": 1,
    "erf": 1, "fabs": 1, "pow": 2, "fmod": 2, "copysign": 2,
}
# pointwise_math.h helpers of floating loops only (yt__pw_normal_cdf_f / _d)
FLOAT_HELPERS = {"normal_cdf": 1}
# calls whose cost makes a loop compute-bound: such loops get an AVX-512 clone (YT_PW_CLONES)
HEAVY_CALLS = {"exp", "expm1", "log", "log1p", "log2", "sin", "cos", "tanh", "erf", "pow", "normal_cdf"}
# integer helpers that cost a division or a loop an element: with HEAVY_CALLS and SLOW_FLOAT_CALLS,
# what makes a loop YT__PW_COMPUTE_BOUND (its output is then stored plainly, runtime/pointwise.c)
SLOW_INT_HELPERS = {"remainder", "floor_divide", "trunc_divide", "ipow"}
# float calls that are one instruction but slow enough to make a loop compute-bound (no clone): a
# sqrt loop streamed its output through a buffer at 32 GB/s, stored plainly at 43 (10M f32, Zen 4)
SLOW_FLOAT_CALLS = {"sqrt"}
ROUNDING = ("floor", "ceil", "trunc", "nearbyint")  # nearbyint: half to even (default rounding mode)
CLASSIFY = {"isnan": "0", "isfinite": "1", "isinf": "0"}
# kernels/cpu/pointwise_math.h helpers, one per compute type: yt__pw_NAME_SUFFIX
HELPERS = {"abs": 1, "sign": 1, "maximum": 2, "minimum": 2, "remainder": 2, "floor_divide": 2,
           "trunc_divide": 2, "ipow": 2}
BOOL_HELPERS = ("abs", "sign", "maximum", "minimum")  # the ones with a bool form
HELPER_SUFFIX = {"float": "f", "double": "d", "int8_t": "i8", "int16_t": "i16", "int32_t": "i32",
                 "int64_t": "i64", "bool": "b"}
INT_DIVISION = ("remainder", "floor_divide", "trunc_divide")
# + - * and unary - of signed integer loops call yt__pw_{add,sub,mul,neg}_SUFFIX (pointwise_math.h),
# which compute in the unsigned type of the same width and convert back: two's-complement
# wrap-around as in PyTorch, where `a + b` on int32_t would be undefined behaviour on overflow.
WRAPPING_OPS = {"+": "add", "-": "sub", "*": "mul"}
WRAPPING_TYPES = ("int8_t", "int16_t", "int32_t", "int64_t")
# checked(x): the Scalar x must convert to the loop's dtype without overflow (PyTorch's
# Scalar::to<T>(), as in masked_fill, clamp and alpha); the kernel checks it once per call.
# checked_alpha(x) adds PyTorch's alpha_check: no float alpha for integral dtypes, no bool alpha
# for non-bool ones.
SPECIAL = {"checked": 1, "checked_alpha": 1, "dtype_max": 0, "dtype_lowest": 0}
ARITY = {**FLOAT_FUNCS, **FLOAT_HELPERS, **{f: 1 for f in ROUNDING}, **{f: 1 for f in CLASSIFY}, **HELPERS, **SPECIAL}
_BIN = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_CMP = {ast.Gt: ">", ast.Lt: "<", ast.Eq: "==", ast.GtE: ">=", ast.LtE: "<=", ast.NotEq: "!="}
VALUE_KINDS = ("tensor", "scalar", "float")  # arguments an expression computes with


PRESENCE_VARIANTS = 2  # optional arguments whose presence gets loops of its own (variants())


class NoForm(SpecError):
    """The expression has no form for a dtype (pow of bools, true division of integers): the
    kernel has no such loop (variant) and reports the dtype at run time, as PyTorch's "not
    implemented for 'Bool'"."""


class PointwiseExpr:
    """A parsed pointwise expression of an op; renders C for one compute type.

    Optional arguments are tested with `x is None` / `x is not None`: a flag of the loop
    (`x_given`) for Tensor?, Scalar? and float?; for `str` arguments, compared with one of their
    choices (`approximate == 'tanh'`), every combination of values gets its own loop
    (`variants()`), so the comparison costs nothing per element."""

    def __init__(self, op: Op):
        self.op = op
        self.loc = op.pointwise_loc or op.loc
        try:
            self.tree = ast.parse(op.pointwise, mode="eval").body
        except SyntaxError as e:
            raise SpecError(self.loc, f"{op.schema.full_name}: pointwise expression: syntax error: {e.msg}") from None
        self.names = set()
        self.str_args = []  # str arguments the expression compares, in first-use order
        self.checked = []  # (scalar, is alpha) wrapped in checked() / checked_alpha()
        self._validate(self.tree)
        self.used = set()  # names (and NAME_given flags) read by the last render()
        self.heavy = False  # whether the last render() calls a HEAVY_CALLS function
        self.compute_bound = False  # ... or, besides, a SLOW_FLOAT_CALLS or SLOW_INT_HELPERS one

    def _fail(self, msg, cls=SpecError):
        raise cls(self.loc, f"{self.op.schema.full_name}: pointwise expression '{self.op.pointwise}': {msg}")

    def _validate(self, n):
        s = self.op.schema
        if isinstance(n, ast.Name):
            a = s.arg(n.id)
            if a is None or a.kind not in VALUE_KINDS:
                self._fail(f"'{n.id}' is not a Tensor, Scalar or float argument")
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
        elif isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], (ast.Is, ast.IsNot)):
            a = s.arg(n.left.id) if isinstance(n.left, ast.Name) else None
            right = n.comparators[0]
            if not (isinstance(right, ast.Constant) and right.value is None) or a is None or not a.optional:
                self._fail("'is' only compares an optional argument with None")
            if a.kind == "str":
                self._use_str(a)
            elif a.kind not in VALUE_KINDS:
                self._fail(f"'{a.name}' is not a Tensor?, Scalar?, float? or str? argument")
        elif isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.comparators[0], ast.Constant) \
                and isinstance(n.comparators[0].value, str):
            a = s.arg(n.left.id) if isinstance(n.left, ast.Name) else None
            word = n.comparators[0].value
            if a is None or a.kind != "str" or type(n.ops[0]) not in (ast.Eq, ast.NotEq):
                self._fail("a string is only compared (== or !=) with a str argument")
            if word not in self.op.choices.get(a.name, []):
                self._fail(f"'{word}' is not one of the choices of '{a.name}'")
            self._use_str(a)
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
            if n.func.id in ("checked", "checked_alpha"):
                a = s.arg(n.args[0].id) if isinstance(n.args[0], ast.Name) else None
                if a is None or a.kind != "scalar":
                    self._fail(f"{n.func.id}() takes a Scalar argument")
                if all(c[0] != a.name for c in self.checked):
                    self.checked.append((a.name, n.func.id == "checked_alpha"))
            for x in n.args:
                self._validate(x)
        else:
            self._fail(f"unsupported syntax '{ast.unparse(n)}'")

    def _use_str(self, a):
        if a.name not in self.str_args:
            self.str_args.append(a.name)

    def variants(self) -> list[dict]:
        """One {str argument: value} per loop variant (value None for an absent str?); [{}]
        when the expression compares no str argument. Up to PRESENCE_VARIANTS optional value
        arguments tested with `is None` vary too (None: absent, True: given), so that clamp's
        loops carry no per-element test of which bounds there are; with more (nan_to_num's
        three), presence stays a loop flag."""
        names, values = [], []
        for name in self.str_args:
            a = self.op.schema.arg(name)
            names.append(name)
            values.append(([None] if a.optional else []) + list(self.op.choices[name]))
        for name in self.presence_args():
            names.append(name)
            values.append([None, True])
        return [dict(zip(names, combo)) for combo in itertools.product(*values)]

    def presence_args(self) -> list:
        """The optional arguments whose presence varies the loop (see variants())."""
        flags = self.given_flags()
        return flags if len(flags) <= PRESENCE_VARIANTS else []

    def constant_cases(self) -> list[dict]:
        """One {Scalar argument: value} per specialised floating loop (ops.yaml `specialize:`), and
        last {} for the general loop."""
        spec = self.op.specialize
        combos = itertools.product(*[spec[name] + [None] for name in spec])
        return [{name: v for name, v in zip(spec, combo) if v is not None} for combo in combos]

    def int_divisors(self) -> list:
        """Arguments that divide integers (second argument of the division helpers): integral
        loops check them for zeros first, as PyTorch raises ZeroDivisionError."""
        return self._second_args(INT_DIVISION)

    def int_exponents(self) -> list:
        """Scalar exponents of pow(): integral loops refuse negative ones, as PyTorch does."""
        return [x for x in self._second_args(("pow",)) if self.op.schema.arg(x).kind == "scalar"]

    def _second_args(self, funcs) -> list:
        out = []
        for n in ast.walk(self.tree):
            if not (isinstance(n, ast.Call) and n.func.id in funcs):
                continue
            arg = n.args[1]
            if isinstance(arg, ast.Call) and arg.func.id in ("checked", "checked_alpha"):
                arg = arg.args[0]
            if isinstance(arg, ast.Name) and arg.id not in out:
                out.append(arg.id)
        return out

    def given_flags(self) -> list:
        """Optional value arguments whose presence the expression tests (`x is None`)."""
        out = []
        for n in ast.walk(self.tree):
            if isinstance(n, ast.Compare) and isinstance(n.ops[0], (ast.Is, ast.IsNot)):
                a = self.op.schema.arg(n.left.id)
                if a.kind != "str" and a.name not in out:
                    out.append(a.name)
        return out

    def uses_functions(self) -> bool:
        return any(isinstance(n, ast.Call) for n in ast.walk(self.tree))

    def _uniform(self, n) -> bool:
        """Whether `n` is one Scalar or float argument, the same for every element: maximum() and
        minimum() by such a value take a form whose NaN test the compiler hoists out of the loop
        (yt__pw_maximum_uniform_f in pointwise_math.h)."""
        if isinstance(n, ast.Call) and n.func.id in ("checked", "checked_alpha"):
            n = n.args[0]
        return isinstance(n, ast.Name) and self.op.schema.arg(n.id).kind in ("scalar", "float")

    def _known(self, n, variant: dict):
        """True/False when test `n` is decided by the loop variant's str values, else None."""
        if isinstance(n, ast.Compare) and isinstance(n.left, ast.Name) and n.left.id in variant:
            value = variant[n.left.id]
            op = n.ops[0]
            if isinstance(op, (ast.Is, ast.IsNot)):
                return (value is None) == isinstance(op, ast.Is)
            return (value == n.comparators[0].value) == isinstance(op, ast.Eq)
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not):
            k = self._known(n.operand, variant)
            return None if k is None else not k
        if isinstance(n, ast.BoolOp):
            ks = [self._known(v, variant) for v in n.values]
            stop = isinstance(n.op, ast.Or)  # the value that decides: True for `or`, False for `and`
            if stop in ks:
                return stop
            return (not stop) if all(k is not None for k in ks) else None
        return None

    def render(self, dtype: str, variant: dict = None, consts: dict = None) -> str:
        """C for one element in a `dtype` loop; `variant` fixes str arguments' values, `consts`
        Scalar arguments' (numbers written in as constants, see constant_cases())."""
        ctype = DTYPE_C[dtype][1]
        is_float = ctype in ("float", "double")
        variant = variant or {}
        consts = consts or {}
        self.used = set()
        self.heavy = False
        self.compute_bound = False

        def r(n) -> str:
            known = self._known(n, variant)
            if known is not None:
                return "1" if known else "0"
            if isinstance(n, ast.Name) and n.id in consts:
                return f"({ctype}){consts[n.id]!r}"
            if isinstance(n, ast.Name):
                self.used.add(n.id)
                return n.id
            if isinstance(n, ast.Constant):
                if isinstance(n.value, float) and not is_float:
                    self._fail(f"float constant in an integer loop ({dtype})")
                return f"({ctype}){n.value!r}"
            if isinstance(n, ast.BinOp):
                op = _BIN[type(n.op)]
                if op == "/" and not is_float:  # true division: integers divide in floating loops
                    self._fail(f"'/' has no {dtype} form (declare result_dtype: floating)", NoForm)
                if ctype == "bool":  # bool arithmetic is logic, as in PyTorch (True + True is True)
                    op = {"*": "&&", "+": "||"}.get(op, op)
                if ctype in WRAPPING_TYPES:
                    return f"yt__pw_{WRAPPING_OPS[op]}_{HELPER_SUFFIX[ctype]}({_unwrap(r(n.left))}, {_unwrap(r(n.right))})"
                return f"({r(n.left)} {op} {r(n.right)})"
            if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub) and ctype in WRAPPING_TYPES:
                return f"yt__pw_neg_{HELPER_SUFFIX[ctype]}({_unwrap(r(n.operand))})"
            if isinstance(n, ast.UnaryOp):
                return f"(-{r(n.operand)})" if isinstance(n.op, ast.USub) else f"(!{r(n.operand)})"
            if isinstance(n, ast.Compare) and isinstance(n.ops[0], (ast.Is, ast.IsNot)):
                flag = f"{n.left.id}_given"
                self.used.add(flag)
                return f"(!{flag})" if isinstance(n.ops[0], ast.Is) else flag
            if isinstance(n, ast.Compare):
                return f"({r(n.left)} {_CMP[type(n.ops[0])]} {r(n.comparators[0])})"
            if isinstance(n, ast.IfExp):
                known = self._known(n.test, variant)
                if known is not None:
                    return r(n.body if known else n.orelse)
                return f"({r(n.test)} ? {r(n.body)} : {r(n.orelse)})"
            if isinstance(n, ast.BoolOp):
                j = " && " if isinstance(n.op, ast.And) else " || "
                return "(" + j.join(r(v) for v in n.values) + ")"
            fn = n.func.id
            if fn in ("checked", "checked_alpha"):
                return r(n.args[0])
            if fn in ("dtype_max", "dtype_lowest"):
                return f"({ctype}){DTYPE_LIMITS[dtype][fn == 'dtype_lowest']}"
            if fn == "pow" and is_float:
                k = n.args[1]
                if isinstance(k, ast.Call) and k.func.id in ("checked", "checked_alpha"):
                    k = k.args[0]
                if isinstance(k, ast.Name) and consts.get(k.id) in POW_FORMS:
                    return r(_pow_form(consts[k.id], n.args[0]))
            if fn == "pow" and not is_float:  # integer power, as PyTorch (bools have none)
                fn = "ipow"
            if fn in HEAVY_CALLS and is_float:
                self.heavy = True
            slow = HEAVY_CALLS | SLOW_FLOAT_CALLS if is_float else SLOW_INT_HELPERS
            if fn in slow:
                self.compute_bound = True
            if fn in FLOAT_HELPERS:
                if not is_float:
                    self._fail(f"{fn}() has no {dtype} form (declare result_dtype: floating)",
                               NoForm if ctype == "bool" else SpecError)
                args = ", ".join(_unwrap(r(a)) for a in n.args)
                return f"yt__pw_{fn}_{HELPER_SUFFIX[ctype]}({args})"
            if fn in HELPERS:
                if ctype == "bool" and fn not in BOOL_HELPERS:
                    self._fail(f"{fn}() has no bool form", NoForm)
                args = ", ".join(_unwrap(r(a)) for a in n.args)
                if is_float and fn in ("maximum", "minimum") and self._uniform(n.args[1]):
                    fn += "_uniform"
                return f"yt__pw_{fn}_{HELPER_SUFFIX[ctype]}({args})"
            if not is_float and fn in ROUNDING:
                return r(n.args[0])
            if not is_float and fn in CLASSIFY:
                return f"({ctype})({CLASSIFY[fn]} + 0 * {r(n.args[0])})"
            if fn in CLASSIFY:
                return f"({fn}({_unwrap(r(n.args[0]))}) != 0)"
            if not is_float:
                self._fail(f"{fn}() has no {dtype} form (declare result_dtype: floating)",
                           NoForm if ctype == "bool" else SpecError)
            cfn = fn + ("f" if ctype == "float" else "")
            return f"{cfn}({', '.join(_unwrap(r(a)) for a in n.args)})"

        return _unwrap(r(self.tree))


# pow(base, k) in floating loops with a constant k (a `specialize:` value): the forms PyTorch's
# pow kernel uses for these exponents, which vectorise, where powf() is a call per element.
# Written in the specs' own expression language and rendered as the op's expression is, so a
# form's calls count as any other's (sqrt makes its loop compute-bound, SLOW_FLOAT_CALLS).
POW_FORMS = {2.0: "base * base", 3.0: "base * base * base", -1.0: "1 / base",
             -2.0: "1 / (base * base)", 0.5: "sqrt(base)", -0.5: "1 / sqrt(base)", 1.0: "base"}


def _pow_form(k: float, base: ast.expr) -> ast.expr:
    """POW_FORMS[k] as a tree, with `base` in place of its name."""

    class Substitute(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.expr:
            return base if node.id == "base" else node

    return Substitute().visit(ast.parse(POW_FORMS[k], mode="eval").body)


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
