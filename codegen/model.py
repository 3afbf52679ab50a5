"""Data model of the generator: what ops.yaml and derivatives.yaml declare, with source locations.

Everything here is plain data; parse.py builds it, formula.py and lower.py derive the C-level
decisions from it, and the templates only lay the results out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional


class SpecError(Exception):
    """An error in the spec, reported as `FILE:LINE: message` (never as a traceback)."""

    def __init__(self, loc: "Loc", message: str):
        super().__init__(f"{loc}: {message}")
        self.loc = loc
        self.message = message


@dataclass(frozen=True)
class Loc:
    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


# Schema argument types, as written in ops.yaml, mapped to a kind used everywhere else.
ARG_KINDS = {
    "Tensor": "tensor",
    "Scalar": "scalar",
    "int": "int",
    "SymInt": "int",
    "int[]": "intlist",
    "SymInt[]": "intlist",
    "bool": "bool",
    "float": "float",
    "ScalarType": "dtype",
    "Device": "device",
    "str": "str",
    "Generator": "generator",
    "Tensor[]": "tensorlist",  # also Tensor?[]: elements may be None (Arg.elem_optional)
}

LIST_KINDS = ("intlist", "tensorlist")  # C: a pointer and an int length (NAME, NAME_len)

# Kinds that may be written with `?` (None allowed), and their C form when None:
# int? YT_NONE, ScalarType? YT_DTYPE_NONE, Device? YT_DEVICE_NONE, everything else NULL.
OPTIONAL_KINDS = ("int", "dtype", "device", "intlist", "str", "scalar", "tensor", "bool", "float", "generator")
# Optional kinds passed by pointer (NULL = None): Scalar? -> const yt_scalar *, bool? -> const bool *,
# float? -> const double *.
POINTER_OPTIONAL = ("scalar", "bool", "float")

DTYPES = ["bool", "u8", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64"]

DTYPE_SETS = {
    "all": DTYPES,
    "all_but_bool": DTYPES[1:],
    "floating": ["f16", "bf16", "f32", "f64"],
    "integral": ["u8", "i8", "i16", "i32", "i64"],
    "bool": ["bool"],
}

FAMILIES = ["pointwise", "reduce", "linalg", "shape", "index", "nn", "loss", "factory", "backward"]
VARIANTS = ["function", "inplace", "out"]
VARIANT_SUFFIX = {"function": "", "inplace": "_", "out": "_out"}  # yt_mul, yt_mul_, yt_mul_out


@dataclass(frozen=True)
class Arg:
    name: str
    kind: str  # tensor | scalar | int | intlist | bool | float | dtype | device | str | generator
    type_text: str  # as written: "int[]", "int?", ...
    optional: bool  # `?` in the schema: None is a legal value
    has_default: bool
    default: Any  # Python value of the default (None for `=None`)
    kwarg_only: bool
    elem_optional: bool = False  # Tensor?[]: NULL elements are None

    @property
    def by_pointer(self) -> bool:
        """Scalar?, bool?, float?: passed as a pointer, NULL meaning None."""
        return self.optional and self.kind in POINTER_OPTIONAL


@dataclass(frozen=True)
class Schema:
    name: str  # "add"
    overload: str  # "Tensor" or ""
    args: tuple[Arg, ...]
    returns: str  # "Tensor", "(Tensor values, Tensor indices)" or "Tensor[]"
    text: str  # the schema as written
    results: tuple = ("result",)  # result names, in return order ("result" for a single Tensor)
    returns_list: bool = False  # -> Tensor[]: a composite filling a caller's array

    @property
    def multi(self) -> bool:
        """Several named results: the C function returns yt_status and takes output pointers."""
        return len(self.results) > 1

    @property
    def full_name(self) -> str:
        return f"{self.name}.{self.overload}" if self.overload else self.name

    def arg(self, name: str) -> Optional[Arg]:
        for a in self.args:
            if a.name == name:
                return a
        return None

    @property
    def tensor_args(self) -> list[Arg]:
        return [a for a in self.args if a.kind == "tensor"]

    @property
    def list_args(self) -> list[Arg]:
        """Tensor[] arguments."""
        return [a for a in self.args if a.kind == "tensorlist"]


@dataclass(frozen=True)
class Check:
    expr: str
    bad: dict  # an argument sample that violates the check
    loc: Loc


@dataclass
class Op:
    schema: Schema
    loc: Loc
    family: str
    variants: list[str]
    dtypes: dict  # tensor arg name -> list of dtype names
    broadcast: list[str]
    promote: list[str]
    same_dtype: list[str]
    result_dtype: Any  # None | dtype name | "floating" | arg name | "fn(args)"; or a map result name -> rule
    dims: dict  # arg name -> C expression of the rank it wraps against
    checks: list[Check]
    shape: Any  # None | list of expressions | "argname" | "fn(args)"; or a map result name -> rule
    impl: str  # pointwise | kernel | view | composite
    pointwise: Optional[str]
    pointwise_loc: Optional[Loc]  # line of the `pointwise:` expression, for its errors
    dispatch: dict  # device -> kernel function name
    impl_fn: Optional[str]  # view / composite function name
    domain: Optional[str]
    samples: list[dict]
    samples_loc: Loc
    doc: str
    derivative: Optional["Derivative"] = None
    # PyTorch reference for the differential tests: a Python expression over the argument names
    # (None: the overload packet torch.ops.aten.<name> called with the arguments in schema order).
    torch_ref: Optional[str] = None
    choices: dict = field(default_factory=dict)  # str argument -> its allowed values (ops.yaml `choices:`)
    # pointwise: Scalar argument -> values that get floating loops of their own (ops.yaml `specialize:`)
    specialize: dict = field(default_factory=dict)
    # An op taking a Generator whose samples draw no random numbers: compared with PyTorch anyway.
    deterministic_samples: bool = False
    # 0-d tensor arguments read as Scalars: converted to the compute dtype, checked for overflow
    # (ops.yaml `converts:`; masked_fill's value)
    converts: list = field(default_factory=list)
    # C name: the YAML name, plus the overload only where an earlier entry took the bare name
    # (add.Tensor -> add, add.Scalar -> add_scalar). Set by parse_ops.
    c_name: str = ""

    def inplace_write_rule(self) -> Optional[str]:
        """How the in-place form of a not-differentiable op treats a self that requires grad:
        "zero" (derivatives.yaml `inplace_grad: zero`: the write is recorded with a zero gradient
        for self's old history) or "refuse"; None when the op has no such form or self cannot
        require grad."""
        d = self.derivative
        if "inplace" not in self.variants or d is None or not d.not_differentiable:
            return None
        if not any(t in DTYPE_SETS["floating"] for t in self.dtypes.get("self", [])):
            return None
        return "zero" if d.inplace_grad == "zero" else "refuse"

    def differentiable_results(self) -> list:
        """Results that get gradients: derivatives.yaml's output_differentiability, or by default
        every result whose result_dtype is not fixed to a non-floating dtype (indices)."""
        d = self.derivative
        flags = d.output_differentiability if d is not None else None
        out = []
        for i, r in enumerate(self.schema.results):
            if flags is not None:
                ok = flags[i]
            else:
                rule = self.result_dtype.get(r) if isinstance(self.result_dtype, dict) else self.result_dtype
                ok = not (rule in DTYPES and rule not in DTYPE_SETS["floating"])
            if ok:
                out.append(r)
        return out

    def c_function(self, variant: str, ex: bool) -> str:
        """Name of one public C function of the op: yt_<c_name>[_ex][_|_out]."""
        return f"yt_{self.c_name}" + ("_ex" if ex else "") + VARIANT_SUFFIX[variant]

    def c_functions(self) -> list[str]:
        """Every public C function of the op: one per variant, and its _ex form when arguments have defaults."""
        has_defaults = any(a.has_default for a in self.schema.args)
        names = []
        for variant in self.variants:
            names.append(self.c_function(variant, False))
            if has_defaults:
                names.append(self.c_function(variant, True))
        return names


@dataclass(frozen=True)
class Formula:
    input: str  # the argument the gradient is for
    source: str  # formula text as written
    loc: Loc


@dataclass
class Derivative:
    schema_text: str
    loc: Loc
    formulas: list[Formula] = field(default_factory=list)
    # one call of a multi-result op giving every input's gradient at once (in formula order),
    # used when the backward does not record a graph (fused:)
    fused: Optional[Formula] = None
    not_differentiable: bool = False
    # not_differentiable ops with an in-place form: "zero" (inplace_grad: zero) when the write's
    # new values do not depend on the old ones, so self's old history gets a zero gradient
    # (uniform_); None: the in-place form refuses a self that requires grad
    inplace_grad: Optional[str] = None
    # tensor arguments written `ARG: non_differentiable`: the op refuses them when they require
    # grad with grad mode on (PyTorch's "not differentiable with respect to argument"), and records
    # no edge for them
    non_differentiable: list = field(default_factory=list)
    # per result: whether it gets a gradient (output_differentiability:; default: every result
    # except those whose result_dtype is fixed to a non-floating dtype)
    output_differentiability: Optional[list] = None
