"""Plain arguments and results read without pydantic come out as pydantic makes them."""

from __future__ import annotations

import inspect
import math
from typing import Any

import pydantic
from hypothesis import example, given
from hypothesis import strategies as st

from toolcycle._passthrough import argument_fields, read_arguments, result_check

_ANNOTATIONS: list[Any] = [str, int, float, bool, str | None, int | None, float | None, bool | None]
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**60), max_value=2**60)
    | st.floats()
    | st.text(max_size=5)
)
_MISSING = object()
_JSON = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=3) | st.integers(), inner, max_size=3)
    ),
    max_leaves=8,
)


def _same(left: Any, right: Any) -> bool:
    """Equal values of the same types all the way down (a NaN equals a NaN)."""
    if type(left) is not type(right):
        return False
    if isinstance(left, float) and math.isnan(left):
        return math.isnan(right)
    if isinstance(left, dict):
        return left.keys() == right.keys() and all(_same(left[k], right[k]) for k in left)
    if isinstance(left, list):
        return len(left) == len(right) and all(map(_same, left, right))
    return bool(left == right)


@st.composite
def _signatures(draw: st.DrawFn) -> tuple[inspect.Signature, dict[str, Any], dict[str, Any]]:
    """A signature of plain parameters, its hints, and arguments (some missing) for it."""
    count = draw(st.integers(min_value=1, max_value=4))
    parameters, hints, params = [], {}, {}
    for index in range(count):
        name = f"p{index}"
        annotation = draw(st.sampled_from(_ANNOTATIONS))
        default = draw(st.sampled_from([inspect.Parameter.empty, None, 0, 1.5, "d", True]))
        parameters.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default))
        hints[name] = annotation
        value = draw(_SCALARS | st.just(_MISSING))
        if value is not _MISSING:
            params[name] = value
    if draw(st.booleans()):
        params["unknown"] = 1
    return inspect.Signature(parameters), hints, params


def _pydantic_arguments(
    signature: inspect.Signature, hints: dict[str, Any], params: dict[str, Any]
) -> dict[str, Any] | None:
    fields = {
        name: (
            hints[name],
            ... if parameter.default is inspect.Parameter.empty else parameter.default,
        )
        for name, parameter in signature.parameters.items()
    }
    model = pydantic.create_model("Arguments", **fields)  # type: ignore[call-overload]
    try:
        return dict(model.model_validate(params).__dict__)
    except pydantic.ValidationError:
        return None


@given(_signatures())
@example((inspect.Signature([inspect.Parameter("x", 3)]), {"x": float}, {"x": 2**60}))
def test_read_arguments_agrees_with_pydantic(
    case: tuple[inspect.Signature, dict[str, Any], dict[str, Any]],
) -> None:
    """Whatever the fast reader answers (not None), pydantic answers the same, types too."""
    signature, hints, params = case
    fields = argument_fields(signature, hints)
    assert fields is not None
    read = read_arguments(fields, params)
    if read is not None:
        expected = _pydantic_arguments(signature, hints, params)
        assert expected is not None and _same(read, expected)


@given(
    annotation=st.sampled_from([str, int, float, bool, dict, dict[str, Any]]),
    value=_JSON,
)
@example(annotation=dict[str, Any], value={"x": math.nan})
@example(annotation=float, value=math.inf)
@example(annotation=int, value=True)
def test_result_check_passes_only_what_pydantic_gives_back_unchanged(
    annotation: Any, value: Any
) -> None:
    """A result the check passes serialises (in JSON mode) to an equal value of the same types."""
    check = result_check(annotation)
    assert check is not None
    if check(value):
        dumped = pydantic.TypeAdapter(annotation).dump_python(value, mode="json")
        assert _same(dumped, value)
