"""ops.yaml `pointwise:` expressions -> the C value of one element, per dtype; and the loops
generated around it."""

import pytest
from helpers import registry, spec_error

from lower import OpLowering
from parse import parse_ops
from pointwise import ARITY, PointwiseExpr


def pointwise_op(expr: str, schema: str = "f(Tensor self) -> Tensor", extra: str = ""):
    """An op whose `pointwise:` expression is on ops.yaml line 4."""
    text = (f"- func: {schema}\n  family: pointwise\n  dtypes: all\n  pointwise: \"{expr}\"\n  doc: x.\n"
            + extra)
    return parse_ops(text, "ops.yaml")[0]


ADD = "add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
BROADCAST = "  broadcast: [self, other]\n"


def render(expr: str, dtype: str, schema: str = "f(Tensor self) -> Tensor", extra: str = "") -> str:
    return PointwiseExpr(pointwise_op(expr, schema, extra)).render(dtype)


@pytest.mark.parametrize("dtype, c", [
    ("f32", "self + (alpha * other)"),
    ("f64", "self + (alpha * other)"),
    ("i64", "yt__pw_add_i64(self, yt__pw_mul_i64(alpha, other))"),
    ("bool", "self || (alpha && other)"),  # bool arithmetic is logic, as in PyTorch
])
def test_arithmetic(dtype, c):
    assert render("self + alpha * other", dtype, ADD, BROADCAST) == c


@pytest.mark.parametrize("dtype, c", [
    # signed integer + - * and negation wrap through pointwise_math.h (computed unsigned: no UB)
    ("i32", "yt__pw_sub_i32(yt__pw_neg_i32(self), yt__pw_mul_i32(other, (int32_t)2))"),
    ("i8", "yt__pw_sub_i8(yt__pw_neg_i8(self), yt__pw_mul_i8(other, (int8_t)2))"),
    ("u8", "yt__pw_sub_i32(yt__pw_neg_i32(self), yt__pw_mul_i32(other, (int32_t)2))"),  # computes in int32_t
    ("f32", "(-self) - (other * (float)2)"),  # floating loops are unchanged
])
def test_signed_integer_arithmetic_wraps(dtype, c):
    assert render("-self - other * 2", dtype, ADD, BROADCAST) == c


@pytest.mark.parametrize("dtype, c", [
    ("f32", "(float)1 / ((float)1 + expf(-self))"),  # float functions for float (and f16/bf16) loops
    ("f16", "(float)1 / ((float)1 + expf(-self))"),
    ("f64", "(double)1 / ((double)1 + exp(-self))"),
])
def test_constants_take_the_compute_type_and_functions_its_precision(dtype, c):
    assert render("1 / (1 + exp(-self))", dtype) == c


@pytest.mark.parametrize("expr, dtype, c", [
    ("0 if self < 0 else self", "i32", "(self < (int32_t)0) ? (int32_t)0 : self"),
    ("0 if self < 0 else self", "u8", "(self < (int32_t)0) ? (int32_t)0 : self"),  # u8 computes signed
    ("self if condition else other", "f32", "condition ? self : other"),
    ("self == other", "f64", "self == other"),
    ("not self", "bool", "!self"),
    ("pow(self, 2.5)", "f32", "powf(self, (float)2.5)"),
    ("fabs(self)", "f64", "fabs(self)"),
    ("(self)", "i8", "self"),
])
def test_selection_comparison_and_calls(expr, dtype, c):
    schema = "f(Tensor condition, Tensor self, Tensor other) -> Tensor"
    assert render(expr, dtype, schema, "  broadcast: [condition, self, other]\n") == c


@pytest.mark.parametrize("expr, message", [
    ("self +", "pointwise expression: syntax error: invalid syntax"),
    ("self * x", "pointwise expression 'self * x': 'x' is not a Tensor, Scalar or float argument"),
    ("self ** 2", "pointwise expression 'self ** 2': unsupported operator Pow"),
    ("self // 2", "pointwise expression 'self // 2': unsupported operator FloorDiv"),
    ("0 < self < 1", "pointwise expression '0 < self < 1': only single comparisons are supported"),
    ("lgamma(self)", f"pointwise expression 'lgamma(self)': unknown function 'lgamma'; known: {', '.join(ARITY)}"),
    ("exp(self, 2)", "pointwise expression 'exp(self, 2)': exp takes 1 argument(s)"),
    ("self.real", "pointwise expression 'self.real': unsupported syntax 'self.real'"),
    ("~self", "pointwise expression '~self': unsupported syntax '~self'"),
    ("self is self", "pointwise expression 'self is self': 'is' only compares an optional argument with None"),
    ("self is None", "pointwise expression 'self is None': 'is' only compares an optional argument with None"),
    ("self == 'x'", "pointwise expression 'self == 'x'': a string is only compared (== or !=) with a str argument"),
    ("checked(self)", "pointwise expression 'checked(self)': checked() takes a Scalar argument"),
    ("self * True", "pointwise expression 'self * True': unsupported constant True"),
    ("self[0]", "pointwise expression 'self[0]': unsupported syntax 'self[0]'"),
])
def test_rejected_syntax_is_reported_at_the_pointwise_line(expr, message):
    assert spec_error(PointwiseExpr, pointwise_op(expr)) == f"ops.yaml:4: f: {message}"


def test_an_int_argument_is_not_an_operand():
    op = pointwise_op("self * n", "f(Tensor self, int n) -> Tensor")
    assert spec_error(PointwiseExpr, op) == \
        "ops.yaml:4: f: pointwise expression 'self * n': 'n' is not a Tensor, Scalar or float argument"


@pytest.mark.parametrize("expr, dtype, message", [
    ("exp(self)", "i64", "exp() has no i64 form (declare result_dtype: floating)"),
    ("normal_cdf(self)", "i32", "normal_cdf() has no i32 form (declare result_dtype: floating)"),
    ("self * 0.5", "i32", "float constant in an integer loop (i32)"),
    ("self * 0.5", "bool", "float constant in an integer loop (bool)"),
])
def test_expressions_without_an_integer_form(expr, dtype, message):
    e = PointwiseExpr(pointwise_op(expr))
    assert spec_error(e.render, dtype) == f"ops.yaml:4: f: pointwise expression '{expr}': {message}"


# ---------------------------------------------------------------- the loops around the expression

def kernel(expr: str, extra: str = "", schema: str = "f(Tensor self) -> Tensor"):
    op = pointwise_op(expr, schema, extra)
    return OpLowering(op, registry([op])).pointwise_kernel()


def test_one_loop_per_dtype_of_the_set():
    k = kernel("self")
    assert [loop["dtype"] for loop in k["loops"]] == ["bool", "u8", "i8", "i16", "i32", "i64", "f16", "bf16",
                                                      "f32", "f64"]
    assert k["loops"][-1]["fn"] == "f_loop_f64"


def test_a_floating_result_has_floating_loops_only_with_half_types_computed_in_float():
    k = kernel("exp(self)", "  result_dtype: floating\n")
    assert [loop["dtype"] for loop in k["loops"]] == ["f16", "bf16", "f32", "f64"]
    f16 = k["loops"][0]
    assert (f16["compute"], f16["out_storage"], f16["store"]) == ("float", "uint16_t", "yt__f32_to_f16(out_value)")
    assert f16["operands"][0]["load"] == "yt__f16_to_f32({})"
    assert f16["value"] == "expf(self)"


def test_a_bool_result_stores_bools():
    k = kernel("self < other", "  broadcast: [self, other]\n  promote: [self, other]\n  result_dtype: bool\n",
               "lt(Tensor self, Tensor other) -> Tensor")
    f32 = [loop for loop in k["loops"] if loop["dtype"] == "f32"][0]
    # stored as the byte a bool is (see DTYPE_C: logic on loaded `bool`s does not vectorise)
    assert (f32["out_storage"], f32["store"], f32["value"]) == ("uint8_t", "(bool)(out_value)", "self < other")
    assert f32["contig_cond"] == "strides[0] == sizeof(uint8_t) && strides[1] == sizeof(float) && " \
                                 "strides[2] == sizeof(float)"


def test_f32_and_f64_loops_of_their_own_dtype_get_a_stepped_form():
    k = kernel("self + alpha * other", BROADCAST + "  promote: [self, other, alpha]\n", ADD)
    stepped = {loop["dtype"]: [f["fn"] for f in loop["stepped_forms"]] for loop in k["loops"]}
    # one form for AVX-512 and one for AVX2, each calling its own lanes functions
    assert stepped["f32"] == ["add_stepped_f32", "add_stepped_avx2_f32"]
    assert stepped["f64"] == ["add_stepped_f64", "add_stepped_avx2_f64"]
    f32 = next(loop for loop in k["loops"] if loop["dtype"] == "f32")
    assert [(f["target"], f["lanes_suffix"]) for f in f32["stepped_forms"]] == [
        ("YT__STEPPED_TARGET", "_f32"), ("YT__STEPPED_AVX2_TARGET", "_f32_avx2")]
    # other dtypes move elements of other sizes (or compute in float from f16/bf16 storage)
    assert all(stepped[d] == [] for d in stepped if d not in ("f32", "f64"))
    assert {loop["lanes"] for loop in k["loops"] if loop["stepped_forms"]} == {"YT__STEPPED_LANES_F32",
                                                                             "YT__STEPPED_LANES_F64"}
    # the kernel hands yt__pointwise the form it chooses at run time beside the row and block
    # forms; NULL where there is none
    cases = {c["enum"]: c["variants"][0]["stepped"] for c in k["cases"]}
    assert cases["YT_DTYPE_F32"] == "yt__stepped_form(add_stepped_f32, add_stepped_avx2_f32)"
    assert cases["YT_DTYPE_I32"] == "NULL"
    # an operand or a result of another dtype than the loop's: no stepped form
    lt = kernel("self < other", "  broadcast: [self, other]\n  promote: [self, other]\n  result_dtype: bool\n",
                "lt(Tensor self, Tensor other) -> Tensor")
    assert all(loop["stepped_forms"] == [] for loop in lt["loops"])
    text = ("- func: masked_fill(Tensor self, Tensor mask, Scalar value) -> Tensor\n  family: pointwise\n"
            "  dtypes: {self: all, mask: bool}\n  broadcast: [self, mask]\n"
            "  pointwise: \"value if mask else self\"\n  doc: x.\n")
    fill = parse_ops(text, "ops.yaml")[0]
    assert all(loop["stepped_forms"] == [] for loop in OpLowering(fill, registry([fill])).pointwise_kernel()["loops"])


def test_scalars_are_converted_once_per_loop():
    k = kernel("self + alpha * other", BROADCAST + "  promote: [self, other, alpha]\n", ADD)
    i64 = [loop for loop in k["loops"] if loop["dtype"] == "i64"][0]
    f32 = [loop for loop in k["loops"] if loop["dtype"] == "f32"][0]
    assert i64["scalar_lines"] == ["const int64_t alpha = (int64_t)scalars[0].i;"]
    assert f32["scalar_lines"] == ["const float alpha = (float)scalars[0].f;"]


# ---------------------------------------------------------------- optional and str arguments

CLAMP = "clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor"


def test_an_optional_argument_is_tested_with_a_loop_flag():
    e = PointwiseExpr(pointwise_op("self if min is None else maximum(self, checked(min))", CLAMP,
                                   "  promote: [self, min, max]\n"))
    assert e.render("f32") == "(!min_given) ? self : yt__pw_maximum_uniform_f(self, min)"
    assert e.used == {"self", "min", "min_given"}
    assert e.given_flags() == ["min"] and e.checked == [("min", False)]


def test_maximum_and_minimum_by_a_scalar_take_the_uniform_form():
    # a Scalar or float bound is the same for every element: its NaN test leaves the loop
    e = PointwiseExpr(pointwise_op("minimum(maximum(self, checked(min)), max)", CLAMP,
                                   "  promote: [self, min, max]\n"))
    assert e.render("f64") == "yt__pw_minimum_uniform_d(yt__pw_maximum_uniform_d(self, min), max)"
    # integers have no NaN to test: their helpers stay
    assert e.render("i32") == "yt__pw_minimum_i32(yt__pw_maximum_i32(self, min), max)"
    # a tensor, or a scalar as the first argument, varies per element
    t = PointwiseExpr(pointwise_op("maximum(self, other)", "maximum(Tensor self, Tensor other) -> Tensor",
                                   BROADCAST + "  promote: [self, other]\n"))
    assert t.render("f32") == "yt__pw_maximum_f(self, other)"
    assert PointwiseExpr(pointwise_op("maximum(min, self)", CLAMP, "  promote: [self, min, max]\n")
                         ).render("f32") == "yt__pw_maximum_f(min, self)"


def test_each_str_choice_gets_its_own_loop_variant():
    schema = "gelu(Tensor self, *, str approximate='none') -> Tensor"
    e = PointwiseExpr(pointwise_op("tanh(self) if approximate == 'tanh' else erf(self)", schema,
                                   "  choices: {approximate: [none, tanh]}\n"))
    assert e.variants() == [{"approximate": "none"}, {"approximate": "tanh"}]
    assert e.render("f32", {"approximate": "none"}) == "erff(self)"
    assert e.render("f64", {"approximate": "tanh"}) == "tanh(self)"


def test_an_optional_str_has_a_none_variant():
    schema = "div(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor"
    expr = ("self / other if rounding_mode is None else "
            "(trunc_divide(self, other) if rounding_mode == 'trunc' else floor_divide(self, other))")
    op = pointwise_op(expr, schema, BROADCAST + "  choices: {rounding_mode: [trunc, floor]}\n")
    e = PointwiseExpr(op)
    assert e.variants() == [{"rounding_mode": None}, {"rounding_mode": "trunc"}, {"rounding_mode": "floor"}]
    assert e.render("f32", {"rounding_mode": None}) == "self / other"
    assert e.render("i32", {"rounding_mode": "floor"}) == "yt__pw_floor_divide_i32(self, other)"
    k = OpLowering(op, registry([op])).pointwise_kernel()
    conds = {c["enum"]: [v["cond"] for v in c["variants"]] for c in k["cases"]}
    trunc = '(rounding_mode != NULL && strcmp(rounding_mode, "trunc") == 0)'
    floor = '(rounding_mode != NULL && strcmp(rounding_mode, "floor") == 0)'
    assert conds["YT_DTYPE_F32"] == ["rounding_mode == NULL", trunc, floor]
    assert conds["YT_DTYPE_I32"] == [trunc, floor]  # integers have no true division


def test_variants_with_the_same_loop_share_it():
    schema = "f(Tensor self, *, str? mode) -> Tensor"
    k = kernel("self if mode is None else 0", "  choices: {mode: [a, b]}\n", schema)
    f64 = [c for c in k["cases"] if c["enum"] == "YT_DTYPE_F64"][0]
    assert [v["cond"] for v in f64["variants"]] == [
        "mode == NULL", '(mode != NULL && strcmp(mode, "a") == 0) || (mode != NULL && strcmp(mode, "b") == 0)']


def test_integer_pow_and_dtype_limits():
    e = PointwiseExpr(pointwise_op("pow(self, self)"))
    assert e.render("i16") == "yt__pw_ipow_i16(self, self)"
    assert e.render("u8") == "yt__pw_ipow_i32(self, self)"
    assert e.render("f32") == "powf(self, self)"
    assert PointwiseExpr(pointwise_op("dtype_max()")).render("f16") == "(float)65504.0f"


def test_normal_cdf_is_a_helper_of_floating_loops():
    e = PointwiseExpr(pointwise_op("self * normal_cdf(self)"))
    assert e.render("f32") == "self * yt__pw_normal_cdf_f(self)"
    assert e.render("f64") == "self * yt__pw_normal_cdf_d(self)"


def test_only_loops_calling_libm_class_functions_get_the_avx512_clone():
    clones = {loop["dtype"]: loop["clones"] for loop in kernel("exp(self)", "  result_dtype: floating\n")["loops"]}
    assert clones == {"f16": True, "bf16": True, "f32": True, "f64": True}
    assert not any(loop["clones"] for loop in kernel("self * 2 + abs(self)")["loops"])
    # the helper's integer form is integer arithmetic, not a libm call
    assert [loop["clones"] for loop in kernel("pow(self, self)")["loops"]][-3:] == [True, True, True]
    assert not kernel("pow(self, self)")["loops"][1]["clones"]


def test_sqrt_makes_a_loop_compute_bound_without_a_clone():
    def bounds(expr):
        return {v["bound"] for c in kernel(expr, "  result_dtype: floating\n")["cases"] for v in c["variants"]}
    assert bounds("sqrt(self)") == {"YT__PW_COMPUTE_BOUND"}
    assert bounds("exp(self)") == {"YT__PW_COMPUTE_BOUND"}
    assert bounds("self * 2 + abs(self)") == {"YT__PW_MEMORY_BOUND"}
    assert not any(loop["clones"] for loop in kernel("sqrt(self)", "  result_dtype: floating\n")["loops"])
    # pow's specialised exponents 0.5 and -0.5 are sqrt forms; 2 is a product
    k = kernel("pow(self, checked(exponent))", "  specialize: {exponent: [2, 0.5, -0.5]}\n", POW)
    f32 = {v["cond"]: v["bound"] for c in k["cases"] if c["enum"] == "YT_DTYPE_F32" for v in c["variants"]}
    assert sorted(f32.values()) == ["YT__PW_COMPUTE_BOUND"] * 3 + ["YT__PW_MEMORY_BOUND"]


def test_a_dtype_without_a_form_has_no_loop():
    k = kernel("pow(self, self)")
    assert "bool" not in [loop["dtype"] for loop in k["loops"]]
    assert [c["enum"] for c in k["cases"]][0] == "YT_DTYPE_U8"


def test_an_absent_optional_tensor_is_read_from_a_stand_in():
    schema = "clamp(Tensor self, Tensor? min=None) -> Tensor"
    k = kernel("self if min is None else maximum(self, min)", "  broadcast: [self, min]\n  promote: [self, min]\n",
               schema)
    assert k["inputs"] == ["self", "min != NULL ? min : self"]
    assert k["scalars"] == ["{0, 0, min != NULL}"]


def test_scalars_of_u8_loops_wrap_through_uint8():
    k = kernel("self + alpha * other", BROADCAST + "  promote: [self, other, alpha]\n", ADD)
    u8 = [loop for loop in k["loops"] if loop["dtype"] == "u8"][0]
    assert u8["scalar_lines"] == ["const int32_t alpha = (int32_t)(uint8_t)scalars[0].i;"]


POW = "pow(Tensor self, Scalar exponent) -> Tensor"


def test_specialized_scalar_values_get_floating_loops_of_their_own():
    k = kernel("pow(self, checked(exponent))", "  specialize: {exponent: [2, -0.5]}\n", POW)
    f32 = {v["cond"]: v["value"] for c in k["cases"] if c["enum"] == "YT_DTYPE_F32" for v in c["variants"]}
    # the special values first, as the forms of pow PyTorch uses; powf for any other value, last
    assert list(f32.items()) == [("yt__scalar_to_double(exponent) == 2.0", "self * self"),
                                 ("yt__scalar_to_double(exponent) == -0.5", "(float)1 / sqrtf(self)"),
                                 (None, "powf(self, exponent)")]
    f64 = [v["value"] for c in k["cases"] if c["enum"] == "YT_DTYPE_F64" for v in c["variants"]]
    assert f64 == ["self * self", "(double)1 / sqrt(self)", "pow(self, exponent)"]
    # integer loops keep one loop (exact integer power)
    i32 = [v["value"] for c in k["cases"] if c["enum"] == "YT_DTYPE_I32" for v in c["variants"]]
    assert i32 == ["yt__pw_ipow_i32(self, exponent)"]
    assert "pow_rows_f32_exponent_m0_5" in [loop["rows"] for loop in k["loops"]]


@pytest.mark.parametrize("value, c", [
    (3, "(self * self) * self"), (-1, "(float)1 / self"), (-2, "(float)1 / (self * self)"), (0.5, "sqrtf(self)"),
    (1, "self"),
    (2.5, "powf(self, (float)2.5)"),  # no special form: the constant goes to powf
])
def test_pow_forms_of_constant_exponents(value, c):
    e = PointwiseExpr(pointwise_op("pow(self, exponent)", POW, f"  specialize: {{exponent: [{value}]}}\n"))
    assert e.render("f32", {}, {"exponent": float(value)}) == c


@pytest.mark.parametrize("extra, message", [
    ("  specialize: {self: [2]}\n", "ops.yaml:6: f: specialize names 'self', which is not a Scalar argument"),
    ("  specialize: {exponent: []}\n", "ops.yaml:6: f: specialize values of 'exponent' must be a non-empty list of numbers"),
    ("  specialize: {exponent: [two]}\n", "ops.yaml:6: f: specialize values of 'exponent' must be a non-empty list of numbers"),
    ("  specialize: {exponent: [2, 2.0]}\n", "ops.yaml:6: f: specialize values of 'exponent' repeat a value"),
    ("  specialize: [2]\n", "ops.yaml:6: f: 'specialize' must map Scalar arguments to lists of numbers"),
])
def test_bad_specialize_is_reported_at_its_line(extra, message):
    assert spec_error(pointwise_op, "pow(self, exponent)", "f(Tensor self, Scalar exponent) -> Tensor",
                      extra) == message


def test_specialize_is_for_pointwise_ops():
    text = ("- func: f(Tensor self, Scalar k) -> Tensor\n  family: pointwise\n  dtypes: all\n"
            "  dispatch: {cpu: yt__cpu_f}\n  specialize: {k: [2]}\n  doc: x.\n")
    assert spec_error(parse_ops, text, "ops.yaml") == "ops.yaml:5: f: 'specialize' is for pointwise ops"


def test_bools_are_loaded_from_bytes():
    b = {loop["dtype"]: loop for loop in kernel("not self")["loops"]}["bool"]
    assert (b["operands"][0]["storage"], b["operands"][0]["load"], b["value"]) == ("uint8_t", "({} != 0)", "!self")


def test_an_operand_alone_moves_its_bits():
    # clone's `self`: f16 / bf16 are copied as stored, not through float (which quiets NaNs)
    loops = {loop["dtype"]: loop for loop in kernel("self")["loops"]}
    f16 = loops["f16"]
    assert (f16["compute"], f16["store"], f16["operands"][0]["load"]) == ("uint16_t", "out_value", "{}")
    # anything else computes as before
    assert kernel("-self")["loops"][-4]["compute"] == "float"


def test_the_presence_of_up_to_two_optional_arguments_gets_loops_of_its_own():
    schema = "clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor"
    k = kernel("minimum(maximum(self, min) if min is not None else self, max) if max is not None "
               "else maximum(self, min)", "  promote: [self, min, max]\n", schema)
    f32 = {v["cond"]: v["value"] for c in k["cases"] if c["enum"] == "YT_DTYPE_F32" for v in c["variants"]}
    # no loop tests min_given / max_given per element
    # (the two variants without max are one loop)
    assert f32 == {"(max == NULL && min == NULL) || (max == NULL && min != NULL)":
                   "yt__pw_maximum_uniform_f(self, min)",
                   "max != NULL && min == NULL": "yt__pw_minimum_uniform_f(self, max)",
                   "max != NULL && min != NULL": "yt__pw_minimum_uniform_f(yt__pw_maximum_uniform_f(self, min), max)"}
    # named by the bounds each loop reads: the one loop without max reads min
    assert [loop["rows"] for loop in k["loops"] if loop["dtype"] == "f32"] == \
        ["clamp_rows_f32_no_max", "clamp_rows_f32_max_no_min", "clamp_rows_f32_max_min"]
    # three optional arguments stay loop flags
    schema3 = "f(Tensor self, float? a=None, float? b=None, float? c=None) -> Tensor"
    k3 = kernel("(0 if a is None else a) + (0 if b is None else b) + (0 if c is None else c) + self",
                "", schema3)
    assert [len(c["variants"]) for c in k3["cases"]] == [1] * len(k3["cases"])
