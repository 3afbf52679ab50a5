"""ops.yaml / derivatives.yaml -> model, with every error reported as FILE:LINE: message."""

from __future__ import annotations

import math
import re

import yaml

from model import (ARG_KINDS, DTYPE_SETS, DTYPES, FAMILIES, OPTIONAL_KINDS, POINTER_OPTIONAL, VARIANTS, Arg,
                   Check, Derivative, Formula, Loc, Op, Schema, SpecError)

try:  # the libyaml-backed loader: fast, and the one the build requires
    _LOADER = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - PyYAML built without libyaml
    _LOADER = yaml.SafeLoader


class Node:
    """A YAML value with the line it starts on."""

    def __init__(self, value, loc: Loc):
        self.value = value
        self.loc = loc


def _convert(node, file: str, constructor):
    loc = Loc(file, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        out = {}
        for key_node, value_node in node.value:
            key = _convert(key_node, file, constructor)
            if not isinstance(key.value, str):
                raise SpecError(key.loc, "mapping keys must be strings")
            if key.value in out:
                raise SpecError(key.loc, f"duplicate key '{key.value}'")
            out[key.value] = _convert(value_node, file, constructor)
            out[key.value].key_loc = key.loc
        return Node(out, loc)
    if isinstance(node, yaml.SequenceNode):
        return Node([_convert(n, file, constructor) for n in node.value], loc)
    return Node(_scalar(node, loc, constructor), loc)


def _scalar(node, loc: Loc, constructor):
    """The Python value of a scalar node (int, float, bool, None or str), as YAML resolves it."""
    try:
        return constructor.construct_object(node)
    except (yaml.YAMLError, ValueError) as e:
        problem = getattr(e, "problem", None) or str(e)
        raise SpecError(loc, f"invalid YAML value '{node.value}': {problem}") from None


def load_yaml(text: str, file: str) -> Node:
    try:
        root = yaml.compose(text, Loader=_LOADER)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        line = mark.line + 1 if mark else 1
        message = f"invalid YAML: {getattr(e, 'problem', None) or e}"
        context, context_mark = getattr(e, "context", None), getattr(e, "context_mark", None)
        if context and context_mark and context_mark.line + 1 != line:  # where the broken construct began
            message += f" ({context} at line {context_mark.line + 1})"
        raise SpecError(Loc(file, line), message) from None
    if root is None:
        return Node([], Loc(file, 1))
    return _convert(root, file, yaml.constructor.SafeConstructor())


def plain(node: Node):
    """The Python value of a node, recursively."""
    v = node.value
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [plain(x) for x in v]
    return v


# ---------------------------------------------------------------- schema strings

_SCHEMA_RE = re.compile(r"^([a-z_][a-z0-9_]*)(?:\.([A-Za-z_][A-Za-z0-9_]*))?\((.*)\)\s*->\s*(.+)$")
_ARG_RE = re.compile(r"^([A-Za-z]+(?:\[\d*\])?)(\?(?:\[\])?)?\s+([a-z_][a-z0-9_]*)(?:\s*=\s*(.+))?$")
RESERVED_NAMES = {"result", "result_shape", "result_dtype", "compute_dtype", "recording", "kernel",
                  "status", "node", "out", "grads", "node_", "tmp"}


def _parse_default(text: str, kind: str, loc: Loc, where: str):
    """Python value of a schema default; `where` ("add: argument 'alpha'") starts each error."""
    t = text.strip()
    if t == "None":
        return None
    if kind == "str":
        if len(t) >= 2 and t[0] == t[-1] and t[0] in "\"'" and t[0] not in t[1:-1]:
            return t[1:-1]
        raise SpecError(loc, f"{where}: a str default must be a quoted string or None, got {t}")
    if kind in ("dtype", "device", "generator"):
        raise SpecError(loc, f"{where} may only default to None")
    if t in ("True", "False"):
        if kind not in ("bool", "scalar"):
            raise SpecError(loc, f"{where}: default {t} does not fit its type")
        return t == "True"
    if t.startswith("[") and t.endswith("]"):
        if kind != "intlist":
            raise SpecError(loc, f"{where}: a list default needs an int[] argument")
        if t[1:-1].strip():
            raise SpecError(loc, f"{where}: only the empty list [] is supported as a default")
        return []
    value = _number(t)
    if value is None:
        raise SpecError(loc, f"{where}: bad default '{t}'")
    if kind == "scalar" or (kind == "int" and isinstance(value, int)):
        return value
    if kind == "float":
        return float(value)
    raise SpecError(loc, f"{where}: default {t} does not fit its type")


def _number(text: str):
    """The int or finite float that `text` spells, or None."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def parse_schema(text: str, loc: Loc) -> Schema:
    m = _SCHEMA_RE.match(text.strip())
    if not m:
        raise SpecError(loc, f"cannot parse schema '{text}': expected name[.overload](args) -> Tensor")
    name, overload, args_text, returns = m.group(1), m.group(2) or "", m.group(3), m.group(4).strip()
    results = ("result",)
    if returns.startswith("(") and returns.endswith(")"):
        results = []
        for piece in returns[1:-1].split(","):
            rm = re.match(r"^Tensor\s+([a-z_][a-z0-9_]*)$", piece.strip())
            if not rm:
                raise SpecError(loc, f"{name}: cannot parse result '{piece.strip()}' (expected 'Tensor NAME')")
            if rm.group(1) in results:
                raise SpecError(loc, f"{name}: duplicate result name '{rm.group(1)}'")
            if rm.group(1) in RESERVED_NAMES or rm.group(1) == "grad" or rm.group(1).startswith("grad_"):
                raise SpecError(loc, f"{name}: result name '{rm.group(1)}' is reserved")
            results.append(rm.group(1))
        if len(results) < 2:
            raise SpecError(loc, f"{name}: a single result is written '-> Tensor'")
        results = tuple(results)
    elif returns not in ("Tensor", "Tensor[]"):
        raise SpecError(loc, f"{name}: returns must be 'Tensor', 'Tensor[]' or '(Tensor a, Tensor b, ...)', "
                        f"got '{returns}'")
    args = []
    kwarg_only = False
    seen_default = False
    for piece in [p.strip() for p in args_text.split(",")] if args_text.strip() else []:
        if piece == "*":
            if kwarg_only:
                raise SpecError(loc, f"{name}: '*' appears twice")
            kwarg_only = True
            continue
        am = _ARG_RE.match(piece)
        if not am:
            raise SpecError(loc, f"{name}: cannot parse argument '{piece}'")
        type_text, qmark, arg_name, default_text = am.groups()
        elem_optional = False
        if type_text == "Tensor" and qmark and piece.startswith("Tensor?[]"):
            type_text, qmark, elem_optional = "Tensor[]", None, True
        base = re.sub(r"\[\d+\]$", "[]", type_text)
        if base not in ARG_KINDS:
            raise SpecError(loc, f"{name}: unknown type '{type_text}' of argument '{arg_name}'")
        kind = ARG_KINDS[base]
        if arg_name in RESERVED_NAMES:
            raise SpecError(loc, f"{name}: argument name '{arg_name}' is reserved for generated locals")
        if any(a.name == arg_name for a in args):
            raise SpecError(loc, f"{name}: duplicate argument '{arg_name}'")
        optional = bool(qmark)
        if optional and kind not in OPTIONAL_KINDS:
            raise SpecError(loc, f"{name}: optional '{type_text}?' is not supported (argument '{arg_name}')")
        has_default = default_text is not None
        default = _parse_default(default_text, kind, loc, f"{name}: argument '{arg_name}'") if has_default else None
        if kind == "generator" and not (optional and has_default and default is None):
            raise SpecError(loc, f"{name}: a Generator argument must be written 'Generator? {arg_name}=None'")
        if optional and kind in POINTER_OPTIONAL and has_default and default is not None:
            raise SpecError(loc, f"{name}: argument '{arg_name}' ({type_text}?) may only default to None "
                            "(its C form is a pointer, NULL meaning None)")
        if optional and kind == "tensor" and has_default and default is not None:
            raise SpecError(loc, f"{name}: argument '{arg_name}' (Tensor?) may only default to None")
        if has_default and default is None and not optional:
            raise SpecError(loc, f"{name}: argument '{arg_name}' defaults to None but its type is not optional")
        if not kwarg_only and seen_default and not has_default:
            raise SpecError(loc, f"{name}: argument '{arg_name}' without default follows one with a default")
        seen_default = seen_default or has_default
        if kind == "tensorlist" and (optional or has_default):
            raise SpecError(loc, f"{name}: a Tensor[] argument cannot be optional or have a default ('{arg_name}')")
        args.append(Arg(arg_name, kind, "Tensor?[]" if elem_optional else type_text + (qmark or ""), optional,
                        has_default, default, kwarg_only, elem_optional))
    for r in results:
        if any(a.name == r for a in args):
            raise SpecError(loc, f"{name}: result '{r}' has the name of an argument")
    return Schema(name, overload, tuple(args), returns, text.strip(), results, returns == "Tensor[]")


# ---------------------------------------------------------------- ops.yaml

OP_KEYS = ["func", "family", "variants", "dtypes", "broadcast", "promote", "same_dtype", "converts", "result_dtype",
           "dims", "choices", "checks", "shape", "pointwise", "specialize", "dispatch", "view", "composite", "domain",
           "samples", "deterministic_samples", "torch", "doc"]
DOMAINS = ["positive", "nonzero", "unit"]


def _closest(word: str, options) -> str:
    import difflib

    m = difflib.get_close_matches(word, list(options), n=1)
    return f" (did you mean '{m[0]}'?)" if m else ""


def _names_list(entry: dict, key: str, schema: Schema, kinds=("tensor",)) -> list[str]:
    if key not in entry:
        return []
    node = entry[key]
    if not isinstance(node.value, list) or not all(isinstance(x.value, str) for x in node.value):
        raise SpecError(node.loc, f"{schema.full_name}: '{key}' must be a list of argument names")
    names = []
    for x in node.value:
        a = schema.arg(x.value)
        if a is None:
            raise SpecError(x.loc, f"{schema.full_name}: '{key}' names unknown argument '{x.value}'"
                            + _closest(x.value, [b.name for b in schema.args]))
        if a.kind not in kinds:
            shown = [{"tensorlist": "Tensor[]"}.get(k, k) for k in kinds]
            what = shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]
            raise SpecError(x.loc, f"{schema.full_name}: '{key}' entry '{x.value}' must be a {what} argument")
        names.append(x.value)
    return names


def _parse_dtypes(entry: dict, schema: Schema) -> dict:
    tensors = [a.name for a in schema.args if a.kind in ("tensor", "tensorlist")]
    if "dtypes" not in entry:
        if tensors:
            raise SpecError(entry["func"].loc, f"{schema.full_name}: missing 'dtypes' (the dtype set its tensors accept)")
        return {}
    node = entry["dtypes"]

    def one(n: Node) -> list[str]:
        if not isinstance(n.value, str) or n.value not in DTYPE_SETS:
            raise SpecError(n.loc, f"{schema.full_name}: unknown dtype set '{n.value}'"
                            + _closest(str(n.value), DTYPE_SETS) + f"; known: {', '.join(DTYPE_SETS)}")
        return DTYPE_SETS[n.value]

    if isinstance(node.value, dict):
        out = {}
        for k, v in node.value.items():
            if k not in tensors:
                raise SpecError(v.key_loc, f"{schema.full_name}: dtypes names '{k}', which is not a tensor argument")
            out[k] = one(v)
        for t in tensors:
            if t not in out:
                raise SpecError(node.loc, f"{schema.full_name}: dtypes gives no set for tensor argument '{t}'")
        return out
    s = one(node)
    return {t: s for t in tensors}


def parse_op(node: Node) -> Op:
    if not isinstance(node.value, dict):
        raise SpecError(node.loc, "each entry must be a mapping starting with 'func:'")
    e = node.value
    if "func" not in e:
        raise SpecError(node.loc, "entry has no 'func' key")
    for k, v in e.items():
        if k not in OP_KEYS:
            raise SpecError(v.key_loc, f"unknown key '{k}'" + _closest(k, OP_KEYS))
    if not isinstance(e["func"].value, str):
        raise SpecError(e["func"].loc, "'func' must be a schema string")
    schema = parse_schema(e["func"].value, e["func"].loc)
    fn = schema.full_name
    loc = e["func"].loc

    def get_str(key, default=None, choices=None):
        if key not in e:
            return default
        v = e[key]
        if not isinstance(v.value, str):
            raise SpecError(v.loc, f"{fn}: '{key}' must be a string")
        if choices is not None and v.value not in choices:
            raise SpecError(v.loc, f"{fn}: '{key}' must be one of {', '.join(choices)}, got '{v.value}'"
                            + _closest(v.value, choices))
        return v.value

    family = get_str("family", choices=FAMILIES)
    if family is None:
        raise SpecError(loc, f"{fn}: missing 'family' ({', '.join(FAMILIES)})")
    doc = get_str("doc")
    torch_ref = get_str("torch")
    deterministic = "deterministic_samples" in e
    if deterministic and e["deterministic_samples"].value is not True:
        raise SpecError(e["deterministic_samples"].loc, f"{fn}: 'deterministic_samples' must be true when given")
    if not doc:
        raise SpecError(loc, f"{fn}: missing 'doc'")
    variants = ["function"]
    if "variants" in e:
        vn = e["variants"]
        if not isinstance(vn.value, list):
            raise SpecError(vn.loc, f"{fn}: 'variants' must be a list")
        variants = []
        for x in vn.value:
            if x.value not in VARIANTS:
                raise SpecError(x.loc, f"{fn}: unknown variant '{x.value}'" + _closest(str(x.value), VARIANTS))
            variants.append(x.value)
        if "function" not in variants:
            raise SpecError(vn.loc, f"{fn}: 'variants' must include 'function'")

    impls = [k for k in ("pointwise", "dispatch", "view", "composite") if k in e]
    if len(impls) != 1:
        raise SpecError(loc, f"{fn}: exactly one of pointwise, dispatch, view, composite is required"
                        + (f" (got {', '.join(impls)})" if impls else ""))
    impl_key = impls[0]
    impl = {"pointwise": "pointwise", "dispatch": "kernel", "view": "view", "composite": "composite"}[impl_key]
    dispatch = {}
    impl_fn = None
    pointwise = None
    pointwise_loc = None
    if impl_key == "dispatch":
        dn = e["dispatch"]
        if not isinstance(dn.value, dict) or not dn.value:
            raise SpecError(dn.loc, f"{fn}: 'dispatch' must map devices (cpu, cuda) to kernel names")
        for dev, kn in dn.value.items():
            if dev not in ("cpu", "cuda"):
                raise SpecError(kn.key_loc, f"{fn}: unknown device '{dev}' in dispatch" + _closest(dev, ["cpu", "cuda"]))
            if not isinstance(kn.value, str) or not re.match(r"^yt__[a-z0-9_]+$", kn.value):
                raise SpecError(kn.loc, f"{fn}: kernel name must look like yt__{dev}_<op>, got '{kn.value}'")
            dispatch[dev] = kn.value
    elif impl_key in ("view", "composite"):
        impl_fn = get_str(impl_key)
        if not re.match(r"^yt__[a-z0-9_]+$", impl_fn):
            raise SpecError(e[impl_key].loc, f"{fn}: '{impl_key}' must name a yt__ function, got '{impl_fn}'")
        if impl_key == "view" and (not schema.args or schema.args[0].kind != "tensor"):
            raise SpecError(loc, f"{fn}: a view op's first argument must be the tensor it views")
        if impl_key == "view" and variants != ["function"]:
            raise SpecError(e["variants"].loc, f"{fn}: view ops have only the function variant")
        if impl_key == "composite" and variants != ["function"]:
            raise SpecError(e["variants"].loc, f"{fn}: composite ops have only the function variant")
    else:
        pointwise = get_str("pointwise")
        pointwise_loc = e["pointwise"].loc
        if not schema.tensor_args:
            raise SpecError(loc, f"{fn}: a pointwise op needs a tensor argument")
    specialize = _parse_specialize(e, schema, pointwise is not None)

    if schema.multi and "inplace" in variants:
        raise SpecError(e["variants"].loc, f"{fn}: an op with several results has no in-place variant")
    if "inplace" in variants and (not schema.args or schema.args[0].kind != "tensor" or schema.args[0].name != "self"):
        raise SpecError(e["variants"].loc, f"{fn}: an in-place variant needs 'Tensor self' as first argument")

    dtypes = _parse_dtypes(e, schema)
    broadcast = _names_list(e, "broadcast", schema)
    promote = _names_list(e, "promote", schema, kinds=("tensor", "tensorlist", "scalar"))
    same_dtype = _names_list(e, "same_dtype", schema, kinds=("tensor", "tensorlist"))
    converts = _names_list(e, "converts", schema)
    for n in converts:
        if n in promote or n in same_dtype:
            raise SpecError(e["converts"].loc, f"{fn}: '{n}' is converted to the compute dtype, so it cannot also "
                            "be in promote or same_dtype")
        if impl != "pointwise":
            raise SpecError(e["converts"].loc, f"{fn}: converts is for pointwise ops")
    if any(schema.arg(n).kind == "tensorlist" for n in promote) and \
            len([n for n in promote if schema.arg(n).kind != "scalar"]) > 1:
        raise SpecError(e["promote"].loc, f"{fn}: a Tensor[] in 'promote' must be its only tensor entry")
    if schema.returns_list and impl != "composite":
        raise SpecError(loc, f"{fn}: '-> Tensor[]' ops must be composite")
    if impl == "pointwise" and len(schema.tensor_args) > 1 and not broadcast:
        raise SpecError(loc, f"{fn}: a pointwise op with several tensors must declare 'broadcast'")

    result_dtype = None
    if "result_dtype" in e:
        rn = e["result_dtype"]
        if isinstance(rn.value, dict):
            result_dtype = {r: _result_dtype_rule(v.value, v.loc, schema) for r, v in
                            _per_result(rn, schema, "result_dtype").items()}
        else:
            result_dtype = _result_dtype_rule(rn.value, rn.loc, schema)

    dims = {}
    if "dims" in e:
        dn = e["dims"]
        items = []
        if isinstance(dn.value, list):
            items = [(x.value, x.loc, "self.dim") for x in dn.value]
        elif isinstance(dn.value, dict):
            items = [(k, v.key_loc, v.value) for k, v in dn.value.items()]
        else:
            raise SpecError(dn.loc, f"{fn}: 'dims' must be a list of dim arguments or a mapping to their rank")
        for name, nloc, rank in items:
            a = schema.arg(name) if isinstance(name, str) else None
            if a is None or a.kind not in ("int", "intlist"):
                raise SpecError(nloc, f"{fn}: 'dims' entry '{name}' must be an int or int[] argument")
            if not isinstance(rank, str) or not re.match(r"^[a-z_][a-z0-9_]*(\[0\])?\.dim( \+ 1)?$", rank):
                raise SpecError(nloc, f"{fn}: rank of '{name}' must be 'TENSOR.dim' or 'TENSOR.dim + 1' "
                                "(TENSORS[0].dim for a Tensor[])")
            tname = rank.split(".")[0]
            want = "tensorlist" if tname.endswith("[0]") else "tensor"
            tname = tname.replace("[0]", "")
            if schema.arg(tname) is None or schema.arg(tname).kind != want:
                raise SpecError(nloc, f"{fn}: rank of '{name}' names '{tname}', which is not a tensor argument")
            dims[name] = rank

    choices = _parse_choices(e, schema)

    checks = []
    if "checks" in e:
        cn = e["checks"]
        if not isinstance(cn.value, list):
            raise SpecError(cn.loc, f"{fn}: 'checks' must be a list")
        for c in cn.value:
            if not isinstance(c.value, dict) or set(c.value) != {"check", "bad"}:
                raise SpecError(c.loc, f"{fn}: each check needs exactly 'check' (an expression) and 'bad' "
                                "(arguments that violate it, for the generated error test)")
            if not isinstance(c.value["check"].value, str):
                raise SpecError(c.loc, f"{fn}: 'check' must be an expression string")
            bad = _parse_sample(c.value["bad"], schema, choices)
            checks.append(Check(c.value["check"].value, bad, c.value["check"].loc))

    shape = None
    if "shape" in e and isinstance(e["shape"].value, dict):
        shape = {r: _shape_rule(v, schema) for r, v in _per_result(e["shape"], schema, "shape").items()}
    elif "shape" in e:
        shape = _shape_rule(e["shape"], schema)
    if impl in ("kernel",) and shape is None and not broadcast and not schema.tensor_args and not schema.list_args:
        raise SpecError(loc, f"{fn}: a kernel op without tensor arguments must declare 'shape'")

    domain = get_str("domain", choices=DOMAINS)
    samples = []
    samples_loc = e["samples"].loc if "samples" in e else loc
    if "samples" in e:
        if not isinstance(e["samples"].value, list):
            raise SpecError(e["samples"].loc, f"{fn}: 'samples' must be a list")
        samples = [_parse_sample(s, schema, choices) for s in e["samples"].value]

    return Op(schema=schema, loc=loc, family=family, variants=variants, dtypes=dtypes, broadcast=broadcast,
              promote=promote, same_dtype=same_dtype, result_dtype=result_dtype, dims=dims, checks=checks,
              shape=shape, impl=impl, pointwise=pointwise, pointwise_loc=pointwise_loc, dispatch=dispatch,
              impl_fn=impl_fn, domain=domain, samples=samples, samples_loc=samples_loc, doc=doc,
              torch_ref=torch_ref, choices=choices, deterministic_samples=deterministic, converts=converts,
              specialize=specialize)


def _parse_specialize(entry: dict, schema: Schema, pointwise: bool) -> dict:
    """`specialize: {exponent: [2, 0.5]}`: Scalar arguments of a pointwise op whose listed values
    get floating loops of their own, the value written into the expression as a constant."""
    fn = schema.full_name
    if "specialize" not in entry:
        return {}
    node = entry["specialize"]
    if not pointwise:
        raise SpecError(node.loc, f"{fn}: 'specialize' is for pointwise ops")
    if not isinstance(node.value, dict) or not node.value:
        raise SpecError(node.loc, f"{fn}: 'specialize' must map Scalar arguments to lists of numbers")
    out = {}
    for k, v in node.value.items():
        a = schema.arg(k)
        if a is None or a.kind != "scalar" or a.optional:
            raise SpecError(v.key_loc, f"{fn}: specialize names '{k}', which is not a Scalar argument"
                            + _closest(k, [b.name for b in schema.args if b.kind == "scalar"]))
        values = v.value if isinstance(v.value, list) else None
        if not values or not all(isinstance(x.value, (int, float)) and not isinstance(x.value, bool)
                                 for x in values):
            raise SpecError(v.loc, f"{fn}: specialize values of '{k}' must be a non-empty list of numbers")
        nums = [float(x.value) for x in values]
        if len(set(nums)) != len(nums):
            raise SpecError(v.loc, f"{fn}: specialize values of '{k}' repeat a value")
        out[k] = nums
    return out


def _parse_choices(entry: dict, schema: Schema) -> dict:
    """`choices: {arg: [a, b]}`: the values each str argument accepts (required for every str argument)."""
    fn = schema.full_name
    strs = [a for a in schema.args if a.kind == "str"]
    out = {}
    if "choices" in entry:
        node = entry["choices"]
        if not isinstance(node.value, dict):
            raise SpecError(node.loc, f"{fn}: 'choices' must map str arguments to lists of values")
        for k, v in node.value.items():
            a = schema.arg(k)
            if a is None or a.kind != "str":
                raise SpecError(v.key_loc, f"{fn}: choices names '{k}', which is not a str argument"
                                + _closest(k, [b.name for b in strs]))
            values = v.value if isinstance(v.value, list) else None
            if not values or not all(isinstance(x.value, str) and re.match(r"^[A-Za-z0-9_.+-]+$", x.value)
                                     for x in values):
                raise SpecError(v.loc, f"{fn}: choices of '{k}' must be a non-empty list of plain words")
            words = [x.value for x in values]
            if len(set(words)) != len(words):
                raise SpecError(v.loc, f"{fn}: choices of '{k}' repeat a value")
            if a.has_default and a.default is not None and a.default not in words:
                raise SpecError(v.loc, f"{fn}: default '{a.default}' of '{k}' is not one of its choices "
                                f"({', '.join(words)})")
            out[k] = words
    for a in strs:
        if a.name not in out:
            raise SpecError(entry["func"].loc, f"{fn}: str argument '{a.name}' needs its allowed values in "
                            f"'choices: {{{a.name}: [...]}}'")
    return out


def _per_result(node: Node, schema: Schema, key: str) -> dict:
    """A `key: {result: rule}` map of a multi-result op (results left out take the default rule)."""
    fn = schema.full_name
    if not schema.multi:
        raise SpecError(node.loc, f"{fn}: a per-result '{key}' map needs several results")
    for r, v in node.value.items():
        if r not in schema.results:
            raise SpecError(v.key_loc, f"{fn}: '{key}' names unknown result '{r}'" + _closest(r, schema.results))
    return node.value


def _result_dtype_rule(rule, loc: Loc, schema: Schema) -> str:
    fn = schema.full_name
    if not isinstance(rule, str) or not (
            rule in DTYPES or rule == "floating" or
            (schema.arg(rule) is not None and schema.arg(rule).kind == "dtype") or
            re.match(r"^yt__[a-z0-9_]+\((.*)\)$", rule)):
        raise SpecError(loc, f"{fn}: result_dtype must be a dtype name, 'floating', a ScalarType "
                        f"argument or a yt__ function call, got '{rule}'")
    _check_call_args(rule, schema, loc)
    return rule


def _shape_rule(sn: Node, schema: Schema):
    fn = schema.full_name
    if isinstance(sn.value, list):
        shape = [x.value for x in sn.value]
        if not all(isinstance(x, str) for x in shape):
            raise SpecError(sn.loc, f"{fn}: shape list entries must be expressions (strings)")
        return shape
    if isinstance(sn.value, str):
        shape = sn.value
        a = schema.arg(shape)
        if a is not None:
            if a.kind != "intlist":
                raise SpecError(sn.loc, f"{fn}: shape names '{shape}', which is not an int[] argument")
        elif not re.match(r"^yt__[a-z0-9_]+\((.*)\)$", shape):
            raise SpecError(sn.loc, f"{fn}: shape must be a list, an int[] argument or a yt__ function call")
        else:
            _check_call_args(shape, schema, sn.loc)
        return shape
    raise SpecError(sn.loc, f"{fn}: bad 'shape'")


def _check_call_args(call: str, schema: Schema, loc: Loc) -> None:
    m = re.match(r"^yt__[a-z0-9_]+\((.*)\)$", call)
    if not m:
        return
    for name in [x.strip() for x in m.group(1).split(",") if x.strip()]:
        if schema.arg(name) is None:
            raise SpecError(loc, f"{schema.full_name}: '{call}' names unknown argument '{name}'"
                            + _closest(name, [a.name for a in schema.args]))


def _tensor_sample(val, loc: Loc, fn: str, k: str) -> dict:
    spec = {"shape": val} if isinstance(val, list) else val
    if not isinstance(spec, dict) or not isinstance(spec.get("shape"), list) or \
            not all(isinstance(x, int) and x >= 0 for x in spec["shape"]) or \
            set(spec) - {"shape", "dtype", "transpose", "step", "high", "no_grad"}:
        raise SpecError(loc, f"{fn}: tensor sample '{k}' must be a size list or "
                        "{shape: [...], dtype: NAME, transpose: BOOL, step: N, high: N, no_grad: BOOL}")
    if "no_grad" in spec and not isinstance(spec["no_grad"], bool):
        raise SpecError(loc, f"{fn}: 'no_grad' of tensor sample '{k}' must be true or false")
    if "high" in spec and (not isinstance(spec["high"], int) or spec["high"] < 1
                           or spec.get("dtype", "f64") not in ("i64", "i32", "u8", "i8", "i16")):
        raise SpecError(loc, f"{fn}: 'high' (values drawn from [0, high)) needs an integer "
                        "dtype and an int >= 1")
    if spec.get("dtype", "f64") not in DTYPES:
        raise SpecError(loc, f"{fn}: unknown dtype '{spec.get('dtype')}' in sample")
    if spec.get("transpose") and len(spec["shape"]) < 2:
        raise SpecError(loc, f"{fn}: 'transpose' needs at least 2 dims")
    if "step" in spec and (not isinstance(spec["step"], int) or isinstance(spec["step"], bool)
                           or spec["step"] < 2 or not spec["shape"] or spec.get("transpose")):
        raise SpecError(loc, f"{fn}: 'step' of tensor sample '{k}' (every Nth element along the last "
                        "dim) must be an int >= 2, on a tensor of at least 1 dim that is not transposed")
    return spec


def _parse_sample(node: Node, schema: Schema, choices: dict) -> dict:
    """A test sample: argument name -> value. Tensors are a size list or {shape, dtype, transpose,
    step, high, no_grad}."""
    fn = schema.full_name
    if not isinstance(node.value, dict):
        raise SpecError(node.loc, f"{fn}: a sample must map argument names to values")
    out = {}
    for k, v in node.value.items():
        a = schema.arg(k)
        if a is None:
            raise SpecError(v.key_loc, f"{fn}: sample names unknown argument '{k}'"
                            + _closest(k, [b.name for b in schema.args]))
        val = plain(v)
        if val is None and a.optional:
            out[k] = None  # None (NULL in C)
            continue
        if a.kind == "str":
            if val not in choices.get(k, []):
                raise SpecError(v.loc, f"{fn}: sample value of '{k}' must be one of {', '.join(choices.get(k, []))}"
                                + (" or null" if a.optional else "") + f", got {val!r}")
            out[k] = val
            continue
        if a.kind == "tensorlist":
            if not isinstance(val, list):
                raise SpecError(v.loc, f"{fn}: sample of '{k}' must be a list of tensors (size lists or mappings)")
            out[k] = [None if x is None and a.elem_optional else _tensor_sample(x, v.loc, fn, k) for x in val]
            if any(x is not None and x.get("no_grad") for x in out[k]):
                raise SpecError(v.loc, f"{fn}: 'no_grad' applies to Tensor arguments, not to elements of '{k}'")
            continue
        if a.kind == "tensor":
            out[k] = _tensor_sample(val, v.loc, fn, k)
            continue
        if a.kind == "intlist":
            if not isinstance(val, list) or not all(isinstance(x, int) for x in val):
                raise SpecError(v.loc, f"{fn}: sample value of '{k}' must be a list of ints")
            out[k] = val
        elif a.kind == "int":
            if not (isinstance(val, int) and not isinstance(val, bool)) and not (a.optional and val in (None, "None")):
                raise SpecError(v.loc, f"{fn}: sample value of '{k}' must be an int")
            out[k] = None if val == "None" else val
        elif a.kind == "bool":
            if not isinstance(val, bool):
                raise SpecError(v.loc, f"{fn}: sample value of '{k}' must be true or false")
            out[k] = val
        elif a.kind in ("scalar", "float"):
            if not isinstance(val, (int, float)):
                raise SpecError(v.loc, f"{fn}: sample value of '{k}' must be a number")
            out[k] = val
        elif a.kind == "dtype":
            if val not in DTYPES:
                raise SpecError(v.loc, f"{fn}: sample value of '{k}' must be a dtype name")
            out[k] = val
        else:
            raise SpecError(v.loc, f"{fn}: samples cannot set '{k}'")
    for a in schema.args:
        if a.name not in out and not a.has_default:
            raise SpecError(node.loc, f"{fn}: sample gives no value for argument '{a.name}', which has no default")
    return out


def parse_ops(text: str, file: str = "ops.yaml") -> list[Op]:
    root = load_yaml(text, file)
    if not isinstance(root.value, list):
        raise SpecError(root.loc, "the file must be a list of operator entries")
    ops = []
    seen = {}  # full name -> Loc
    c_names = {}  # C name -> Loc
    functions = {}  # public C function -> the op that generates it
    for node in root.value:
        op = parse_op(node)
        fn = op.schema.full_name
        if fn in seen:
            raise SpecError(op.loc, f"duplicate operator '{fn}' (first defined at line {seen[fn].line})")
        op.c_name = _c_name(op.schema, c_names)
        if op.c_name in c_names:
            raise SpecError(op.loc, f"'{fn}' maps to C name yt_{op.c_name}, already used at line {c_names[op.c_name].line}")
        for name in op.c_functions():
            if name in functions:
                other = functions[name]
                raise SpecError(op.loc, f"'{fn}' generates {name}(), which '{other.schema.full_name}' at line "
                                f"{other.loc.line} also generates")
            functions[name] = op
        seen[fn] = op.loc
        c_names[op.c_name] = op.loc
        ops.append(op)
    return ops


def _c_name(schema: Schema, taken: dict) -> str:
    """The YAML name, plus the overload only where an earlier entry took the bare name."""
    if schema.name in taken and schema.overload:
        return f"{schema.name}_{schema.overload.lower()}"
    return schema.name


# ---------------------------------------------------------------- derivatives.yaml

def parse_derivatives(text: str, ops: list[Op], file: str = "derivatives.yaml") -> None:
    """Attaches a Derivative to each op; checks coverage and formula argument names."""
    root = load_yaml(text, file)
    if not isinstance(root.value, list):
        raise SpecError(root.loc, "the file must be a list of derivative entries")
    by_name = {op.schema.full_name: op for op in ops}
    for node in root.value:
        if not isinstance(node.value, dict) or "name" not in node.value:
            raise SpecError(node.loc, "each entry must be a mapping starting with 'name:'")
        e = node.value
        name_node = e["name"]
        schema = parse_schema(str(name_node.value), name_node.loc)
        op = by_name.get(schema.full_name)
        if op is None:
            raise SpecError(name_node.loc, f"derivative for unknown op '{schema.full_name}'"
                            + _closest(schema.full_name, by_name))
        if op.derivative is not None:
            raise SpecError(name_node.loc, f"duplicate derivative for '{schema.full_name}' "
                            f"(first at line {op.derivative.loc.line})")
        if schema.text != op.schema.text:
            raise SpecError(name_node.loc, f"schema does not match ops.yaml:{op.loc.line}: "
                            f"'{schema.text}' vs '{op.schema.text}'")
        d = Derivative(schema.text, name_node.loc)
        for k, v in e.items():
            if k == "name":
                continue
            if k == "output_differentiability":
                flags = v.value if isinstance(v.value, list) else None
                if flags is None or len(flags) != len(op.schema.results) or \
                        not all(isinstance(x.value, bool) for x in flags):
                    raise SpecError(v.loc, f"{schema.full_name}: output_differentiability must list true or false "
                                    f"for each of the {len(op.schema.results)} results "
                                    f"({', '.join(op.schema.results)})")
                d.output_differentiability = [x.value for x in flags]
                continue
            if k == "fused":
                if not isinstance(v.value, str) or not v.value.strip():
                    raise SpecError(v.loc, f"{schema.full_name}: fused must be an expression string")
                d.fused = Formula("fused", v.value.strip(), v.loc)
                continue
            if k == "not_differentiable":
                if v.value is not True:
                    raise SpecError(v.loc, "not_differentiable must be true when given")
                d.not_differentiable = True
                continue
            if k == "inplace_grad":
                if v.value != "zero":
                    raise SpecError(v.loc, f"{schema.full_name}: inplace_grad must be 'zero' (the in-place form "
                                    "writes values that do not depend on self's old ones)")
                if "inplace" not in op.variants:
                    raise SpecError(v.loc, f"{schema.full_name}: inplace_grad is for ops with an in-place variant")
                d.inplace_grad = v.value
                continue
            a = op.schema.arg(k)
            if a is None:
                raise SpecError(v.key_loc, f"{schema.full_name}: formula for unknown argument '{k}'"
                                + _closest(k, [b.name for b in op.schema.args]))
            if a.kind not in ("tensor", "tensorlist"):
                raise SpecError(v.key_loc, f"{schema.full_name}: '{k}' is not a tensor argument; only tensors get gradients")
            if isinstance(v.value, str) and v.value.strip() == "non_differentiable":
                _non_differentiable(op, a, v)
                d.non_differentiable.append(k)
                continue
            if not isinstance(v.value, str) or not v.value.strip():
                raise SpecError(v.loc, f"{schema.full_name}: formula for '{k}' must be an expression string")
            d.formulas.append(Formula(k, v.value.strip(), v.loc))
        if d.not_differentiable and (d.formulas or d.fused or d.non_differentiable):
            raise SpecError(name_node.loc, f"{schema.full_name}: not_differentiable entries take no formulas")
        if d.inplace_grad and not d.not_differentiable:
            raise SpecError(name_node.loc, f"{schema.full_name}: inplace_grad goes with not_differentiable: true "
                            "(a differentiable op's in-place form takes its formulas)")
        if d.fused and not d.formulas:
            raise SpecError(d.fused.loc, f"{schema.full_name}: fused needs the per-input formulas too "
                            "(they run when the backward records a graph)")
        if op.impl == "composite" and (d.formulas or d.fused):
            first = d.formulas[0] if d.formulas else d.fused
            raise SpecError(first.loc, f"{schema.full_name}: a composite op is differentiated through the ops it "
                            "calls; its entry may only mark arguments non_differentiable")
        if not d.not_differentiable and not d.formulas and not d.non_differentiable:
            raise SpecError(name_node.loc, f"{schema.full_name}: no formulas (mark it not_differentiable: true if intended)")
        given = [f.input for f in d.formulas] + d.non_differentiable
        for t in _grad_tensors(op):
            if op.impl != "composite" and (d.formulas or d.non_differentiable) and t not in given:
                raise SpecError(name_node.loc, f"{schema.full_name}: no formula for tensor argument '{t}' "
                                "(its gradient would be silently dropped)")
        op.derivative = d
    for op in ops:
        if op.derivative is None and op.impl != "composite" and _grad_tensors(op):
            raise SpecError(op.loc, f"{op.schema.full_name}: differentiable op has no entry in {file} "
                            "(add formulas, or an entry with not_differentiable: true)")


def _non_differentiable(op: Op, a: Arg, v: Node) -> None:
    """Validates `ARG: non_differentiable`: a plain Tensor argument that can require grad."""
    fn = op.schema.full_name
    if a.kind != "tensor":
        raise SpecError(v.loc, f"{fn}: non_differentiable applies to Tensor arguments, and '{a.name}' is a "
                        f"{a.type_text}")
    if a.name not in _grad_tensors(op):
        raise SpecError(v.loc, f"{fn}: '{a.name}' cannot require grad (dtypes: {', '.join(op.dtypes[a.name])}), so "
                        "marking it non_differentiable says nothing")


def _grad_tensors(op: Op) -> list[str]:
    """Tensor arguments that can require grad: those whose dtype set holds a floating dtype."""
    floating = DTYPE_SETS["floating"]
    return [a.name for a in op.schema.args if a.kind in ("tensor", "tensorlist") and not a.elem_optional
            and any(d in floating for d in op.dtypes[a.name])]
