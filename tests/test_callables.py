"""Wrapped callables: schema derivation, coercion, injection, hooks and bad definitions."""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import inspect
import threading
import typing
from collections.abc import Callable
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from toolcycle import (
    AsyncFunctionTool,
    CancellationToken,
    FunctionTool,
    NullTracer,
    ToolDefinitionError,
    ToolExecutionContext,
    ToolResult,
    ToolRuntime,
    tool,
    wrap,
)
from toolcycle._passthrough import argument_fields
from toolcycle.testing import FakeTool
from toolcycle.validation import SchemaCompiler


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(BaseModel):
    x: int
    y: int = 0


@dataclasses.dataclass
class Box:
    width: float
    label: str = ""


class Options(TypedDict):
    verbose: bool


def _props(fn_tool: FunctionTool) -> dict[str, Any]:
    return fn_tool.discover().input_schema["properties"]


def test_bare_decorator_keeps_the_function_callable() -> None:
    """@tool returns a tool that still calls the function directly."""

    @tool
    def add(a: int, b: int = 2) -> int:
        """Add two integers."""
        return a + b

    assert isinstance(add, FunctionTool)
    assert add(1) == 3
    descriptor = add.discover()
    assert descriptor.name == "add" and descriptor.description == "Add two integers."
    assert descriptor.source == "wrapped"
    assert descriptor.input_schema["required"] == ["a"]
    assert _props(add)["b"]["default"] == 2
    assert descriptor.output_schema == {"type": "integer"}


def test_decorator_options_set_name_description_capability_and_tags() -> None:
    """@tool(...) options reach the descriptor."""

    @tool(name="sum_up", description="Sums.", writes=False, checkpointable=True, tags=["math"])
    def add(a: int) -> int:
        return a

    descriptor = add.discover()
    assert (descriptor.name, descriptor.description) == ("sum_up", "Sums.")
    assert not descriptor.capability.writes and descriptor.capability.checkpointable
    assert descriptor.tags == frozenset({"math"})


def test_wrapped_functions_default_to_the_safe_capability() -> None:
    """Without options a wrapped function is assumed to write and not to roll back."""
    capability = (
        wrap(len).discover().capability if False else wrap(lambda_free).discover().capability
    )
    assert capability.writes and not capability.checkpointable


def lambda_free(value: str) -> int:
    """Count characters."""
    return len(value)


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        (str, {"type": "string"}),
        (int, {"type": "integer"}),
        (float, {"type": "number"}),
        (bool, {"type": "boolean"}),
        (None, {"type": "null"}),
        (Literal["a", "b"], {"enum": ["a", "b"], "type": "string"}),
        (list[int], {"items": {"type": "integer"}, "type": "array"}),
        (dict[str, int], {"additionalProperties": {"type": "integer"}, "type": "object"}),
        (int | None, {"anyOf": [{"type": "integer"}, {"type": "null"}]}),
        (Annotated[int, Field(ge=1, le=9)], {"maximum": 9, "minimum": 1, "type": "integer"}),
    ],
)
def test_annotations_map_to_json_schema(annotation: Any, expected: dict[str, Any]) -> None:
    """Each supported annotation yields the expected property schema."""

    def fn(value):  # type: ignore[no-untyped-def]  # annotated below
        """The fn tool of this test."""

    fn.__annotations__ = {"value": annotation}
    schema = _props(wrap(fn))["value"]
    assert schema == expected  # with no title made up from the parameter's name


def test_models_dataclasses_enums_and_typeddicts_use_local_defs() -> None:
    """Structured parameters become local $defs that compile offline."""

    def place(point: Point, box: Box, colour: Colour, options: Options) -> None:
        """The place tool of this test."""

    schema = wrap(place).discover().input_schema
    assert set(schema["$defs"]) == {"Point", "Box", "Colour", "Options"}
    assert _props(wrap(place))["point"] == {"$ref": "#/$defs/Point"}
    SchemaCompiler().compile(schema)


def test_tuple_parameters_use_prefix_items() -> None:
    """A fixed tuple becomes prefixItems with an exact length."""

    def pair(value: tuple[int, str]) -> None:
        """The pair tool of this test."""

    schema = _props(wrap(pair))["value"]
    assert schema["prefixItems"] == [{"type": "integer"}, {"type": "string"}]
    assert schema["minItems"] == schema["maxItems"] == 2


@pytest.mark.parametrize(
    "doc",
    [
        """Move a point.

        Args:
            point: where it starts.
            steps (int): how far
                to move it.
        """,
        """Move a point.

        Parameters
        ----------
        point : Point
            where it starts.
        steps : int
            how far
            to move it.

        Returns
        -------
        Point
        """,
        """Move a point.

        :param point: where it starts.
        :param int steps: how far
            to move it.
        :returns: the point.
        """,
    ],
    ids=["google", "numpy", "sphinx"],
)
def test_docstring_styles_give_summary_and_parameter_descriptions(doc: str) -> None:
    """Google, NumPy and Sphinx docstrings all fill the descriptions."""

    def move(point: Point, steps: int = 1) -> Point:
        return point

    move.__doc__ = doc
    descriptor = wrap(move).discover()
    assert descriptor.description == "Move a point."
    props = descriptor.input_schema["properties"]
    assert props["point"]["description"] == "where it starts."
    assert props["steps"]["description"] == "how far to move it."


def test_the_description_is_the_whole_first_paragraph_of_the_docstring() -> None:
    """A summary that runs over two lines is kept whole, its lines joined."""

    def add(a: int, b: int) -> int:
        return a + b

    add.__doc__ = """Add two numbers
        and return the sum.

        More about it, not part of the description.

        Args:
            a: the first.
            b: the second.
        """
    descriptor = wrap(add).discover()
    assert descriptor.description == "Add two numbers and return the sum."
    assert descriptor.input_schema["properties"]["b"]["description"] == "the second."


def test_a_first_line_ending_in_a_colon_is_the_description_not_a_section() -> None:
    """Only a known section heading ends the description; "these currencies:" is prose."""

    def convert(amount: float, currency: str) -> str: ...
    def pick(options: list[str]) -> str: ...

    convert.__doc__ = """Convert an amount into one of these currencies:

        EUR, USD or GBP, at today's rate.

        Args:
            amount: how much.
            currency: the target currency.
        """
    pick.__doc__ = """Pick one of the options, given as
        Name:
        a list of names.
        """
    descriptor = wrap(convert).discover()
    assert descriptor.description == "Convert an amount into one of these currencies:"
    assert descriptor.input_schema["properties"]["currency"]["description"] == (
        "the target currency."
    )
    assert wrap(pick).discover().description == (
        "Pick one of the options, given as Name: a list of names."
    )


@pytest.mark.parametrize(
    "doc",
    [
        "Do it.\nArgs:\n    a: the first.",
        "Do it.\nReturns:\n    the result.",
        "Do it.\nSee Also:\n    another tool.",
        "Do it.\nParameters\n----------\na : int\n    the first.",
        "Do it.\n:param a: the first.",
        "Do it.\n:returns: the result.",
    ],
    ids=["google-args", "google-returns", "google-see-also", "numpy", "sphinx", "sphinx-returns"],
)
def test_a_section_heading_right_under_the_summary_ends_the_description(doc: str) -> None:
    """A Google, NumPy or Sphinx section with no blank line before it is not description."""

    def fn(a: int) -> None: ...

    fn.__doc__ = doc
    assert wrap(fn).discover().description == "Do it."


def test_keyword_args_and_other_parameters_sections_describe_parameters() -> None:
    """Google ``Keyword Args:`` and NumPy ``Other Parameters`` describe parameters too."""

    def google(a: int, *, b: int = 0) -> None:
        """Do.

        Args:
            a: the first.

        Keyword Args:
            b: the second.
        """

    def numpy(a: int, b: int = 0) -> None:
        """Do.

        Parameters
        ----------
        a : int
            the first.

        Other Parameters
        ----------------
        b : int
            the second.
        """

    for fn in (google, numpy):
        assert {name: prop["description"] for name, prop in _props(wrap(fn)).items()} == {
            "a": "the first.",
            "b": "the second.",
        }


def test_an_attributes_section_describes_no_parameter() -> None:
    """Only parameter sections give descriptions; ``Attributes:`` is about something else."""

    def fn(count: int) -> None:
        """Do.

        Attributes:
            count: an attribute of something else.
        """

    assert "description" not in _props(wrap(fn))["count"]


def test_a_docstring_with_stray_markup_still_gives_a_tool() -> None:
    """Text the docstring reader does not recognise is ignored, never an error."""

    def fn(a: int) -> None:
        """Do it.

        Args:
            a: the first.

        : :
        """

    descriptor = wrap(fn).discover()
    assert descriptor.description == "Do it."
    assert descriptor.input_schema["properties"]["a"]["description"] == "the first."


def test_field_description_wins_over_the_docstring() -> None:
    """An explicit Field description is kept."""

    def fn(a: Annotated[int, Field(description="from the field")]) -> None:
        """Do.

        Args:
            a: from the docstring.
        """

    assert _props(wrap(fn))["a"]["description"] == "from the field"


def test_arguments_are_coerced_into_annotated_types() -> None:
    """A model parameter receives a model, an enum its member, a tuple a tuple."""
    seen: dict[str, Any] = {}

    @tool(writes=False)
    def inspect_args(point: Point, colour: Colour, pair: tuple[int, int], box: Box) -> None:
        """The inspect args tool of this test."""
        seen.update(point=point, colour=colour, pair=pair, box=box)

    with ToolRuntime() as runtime:
        runtime.register(inspect_args)
        with runtime.plan() as ctx:
            params = {"point": {"x": 1}, "colour": "blue", "pair": [1, 2], "box": {"width": 2}}
            assert runtime.execute("inspect_args", params, ctx).success
    assert seen == {
        "point": Point(x=1),
        "colour": Colour.BLUE,
        "pair": (1, 2),
        "box": Box(width=2.0),
    }


def test_outputs_are_serialised_through_the_return_annotation() -> None:
    """Model, dataclass and enum results become JSON data matching the output schema."""

    @tool(writes=False)
    def make(x: int) -> Point:
        """The make tool of this test."""
        return Point(x=x)

    @tool(writes=False)
    def boxed(width: float) -> Box:
        """The boxed tool of this test."""
        return Box(width=width)

    @tool(writes=False)
    def colour() -> Colour:
        """The colour tool of this test."""
        return Colour.RED

    with ToolRuntime() as runtime:
        for fn_tool in (make, boxed, colour):
            runtime.register(fn_tool)
        with runtime.plan() as ctx:
            made = runtime.execute("make", {"x": 3}, ctx)
            box = runtime.execute("boxed", {"width": 1.5}, ctx)
            red = runtime.execute("colour", {}, ctx)
    assert made.output == {"x": 3, "y": 0}
    assert made.trace is not None and made.trace.output_valid is True
    assert box.output == {"width": 1.5, "label": ""}
    assert red.output == "red"


class Account(BaseModel):
    """A model whose JSON names differ from its fields."""

    user_id: int = Field(alias="userId")
    full_name: str = Field(serialization_alias="fullName")


def test_a_model_output_uses_the_aliases_its_output_schema_names() -> None:
    """The schema (serialisation mode) names userId and fullName: so does the output."""

    @tool(writes=False)
    def account(uid: int) -> Account:
        """The account tool of this test."""
        return Account(userId=uid, full_name="Ada")

    class Raw(FakeTool):
        def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
            return {"account": Account(userId=2, full_name="Bo")}

    with ToolRuntime(strict_output=True) as runtime:
        runtime.register(account)
        runtime.register(Raw(name="raw"))
        schema = runtime.descriptor("account").output_schema
        with runtime.plan() as ctx:
            result = runtime.execute("account", {"uid": 7}, ctx)
            raw = runtime.execute("raw", {}, ctx)
    assert schema is not None and schema["required"] == ["userId", "fullName"]
    assert result.success and result.output == {"userId": 7, "fullName": "Ada"}
    assert result.trace is not None and result.trace.output_valid is True
    assert raw.output == {"account": {"userId": 2, "fullName": "Bo"}}


def test_no_output_schema_without_annotation_or_for_none() -> None:
    """-> None and a missing return annotation give no output schema."""

    def nothing() -> None:
        """The nothing tool of this test."""

    def unannotated():  # type: ignore[no-untyped-def]
        """The unannotated tool of this test."""
        return 1

    assert wrap(nothing).discover().output_schema is None
    assert wrap(unannotated).discover().output_schema is None


def test_context_and_token_are_injected_and_hidden_from_the_schema() -> None:
    """Parameters annotated with the context or token get the context and the call's token."""
    seen: list[Any] = []

    @tool(writes=False)
    def probe(x: int, context: ToolExecutionContext, stop: CancellationToken) -> int:
        """The probe tool of this test."""
        seen.extend([context, stop, context.call_token])
        return x

    assert set(_props(probe)) == {"x"}
    with ToolRuntime() as runtime:
        runtime.register(probe)
        with runtime.plan() as ctx:
            runtime.execute("probe", {"x": 1}, ctx)
    context, stop, call_token = seen
    assert context is ctx
    assert stop is call_token  # the call's own token, not the plan's
    assert stop is not ctx.cancellation_token


def test_register_wraps_a_plain_callable() -> None:
    """runtime.register(fn) wraps an undecorated function."""

    def shout(text: str) -> str:
        """Shout the text."""
        return text.upper()

    with ToolRuntime() as runtime:
        descriptor = runtime.register(shout)
        with runtime.plan() as ctx:
            assert runtime.execute("shout", {"text": "hi"}, ctx).output == "HI"
    assert descriptor.source == "wrapped"


async def test_async_functions_run_natively_under_aexecute() -> None:
    """An async def tool is awaited on the caller's loop."""
    loops: list[asyncio.AbstractEventLoop] = []

    @tool(writes=False)
    async def fetch(key: str) -> str:
        """The fetch tool of this test."""
        loops.append(asyncio.get_running_loop())
        return key * 2

    assert isinstance(fetch, AsyncFunctionTool)
    with ToolRuntime() as runtime:
        runtime.register(fetch)
        async with runtime.aplan() as ctx:
            result = await runtime.aexecute("fetch", {"key": "ab"}, ctx)
    assert result.output == "abab"
    assert loops == [asyncio.get_running_loop()]


def test_async_function_under_sync_execute_runs_on_the_runtime_loop() -> None:
    """Sync execute runs an async tool to completion on the runtime's own loop thread."""
    threads: list[str] = []

    @tool(writes=False)
    async def where() -> str:
        """The where tool of this test."""
        threads.append(threading.current_thread().name)
        return "ok"

    with ToolRuntime() as runtime:
        runtime.register(where)
        with runtime.plan() as ctx:
            assert runtime.execute("where", {}, ctx).output == "ok"
    assert threads == ["toolcycle-portal"]


def test_hooks_run_once_per_plan() -> None:
    """on_activate and on_deactivate open and close a resource once per plan."""
    events: list[str] = []

    @tool(writes=False)
    def query(sql: str) -> str:
        """The query tool of this test."""
        return sql

    @query.on_activate
    def _open(ctx: ToolExecutionContext) -> None:
        events.append(f"open {ctx.plan_id}")

    @query.on_deactivate
    async def _close(ctx: ToolExecutionContext) -> None:
        events.append(f"close {ctx.plan_id}")

    with ToolRuntime() as runtime:
        runtime.register(query)
        with runtime.plan("p") as ctx:
            runtime.execute("query", {"sql": "a"}, ctx)
            runtime.execute("query", {"sql": "b"}, ctx)
    assert events == ["open p", "close p"]


def test_a_second_hook_of_the_same_kind_is_refused() -> None:
    """Each tool has at most one hook of each kind."""

    @tool
    def fn() -> None:
        """The fn tool of this test."""

    fn.on_activate(lambda ctx: None)
    with pytest.raises(ToolDefinitionError, match="already has"):
        fn.on_activate(lambda ctx: None)
    with pytest.raises(ToolDefinitionError, match="needs a callable"):
        fn.on_deactivate(3)  # type: ignore[arg-type]


def _star_args(*values: int) -> None: ...
def _star_kwargs(**values: int) -> None: ...
def _positional_only(a: int, /) -> None: ...
def _callable_param(callback: Any) -> None: ...
def _alias_clash(a: int, b: Annotated[int, Field(alias="a")]) -> None: ...


class _Opaque:
    pass


def _opaque(thing: _Opaque) -> None: ...
def _opaque_return() -> _Opaque:
    return _Opaque()


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (_star_args, r"\*values"),
        (_star_kwargs, r"\*\*values"),
        (_positional_only, "positional-only"),
        (_alias_clash, "both map"),
        (_opaque, "not JSON-compatible"),
        (_opaque_return, "return annotation"),
    ],
)
def test_bad_definitions_fail_at_decoration(fn: Any, message: str) -> None:
    """Unsupported signatures raise ToolDefinitionError naming the problem."""
    with pytest.raises(ToolDefinitionError, match=message):
        tool(fn)


def test_lambdas_need_a_name_and_non_callables_are_refused() -> None:
    """A lambda must be given a name; a non-callable cannot be wrapped."""
    with pytest.raises(ToolDefinitionError, match=r"wrap\(fn, name=\.\.\.\) or @tool\(name="):
        wrap(lambda x: x)
    named = wrap(lambda x: x, name="identity", description="Return the argument.")
    assert named.discover().name == "identity"
    with pytest.raises(ToolDefinitionError, match="not callable"):
        FunctionTool(3)  # type: ignore[arg-type]


def test_unresolvable_annotations_fail_at_decoration() -> None:
    """A string annotation naming nothing is reported clearly."""

    def fn(a: "Missing") -> None:  # type: ignore[name-defined]  # noqa: F821, UP037
        return None

    with pytest.raises(ToolDefinitionError, match="cannot be resolved"):
        """The fn tool of this test."""
        wrap(fn)


def test_repr_names_the_tool() -> None:
    """The repr says which function the tool wraps."""
    assert "'lambda_free'" in repr(wrap(lambda_free))


def test_a_signature_schema_or_name_that_cannot_be_used_fails_at_decoration() -> None:
    """An unreadable signature, a parameter with no JSON Schema and a bad name each raise."""

    def takes_callback(callback: Callable[[], int]) -> None:
        """Take a callback, which no JSON Schema describes."""

    def unreadable(x: int) -> int:
        """Claim a signature that is not one."""
        return x

    unreadable.__signature__ = "not a signature"  # type: ignore[attr-defined]
    with pytest.raises(ToolDefinitionError, match="cannot be described as JSON Schema"):
        wrap(takes_callback)
    with pytest.raises(ToolDefinitionError, match="cannot read the signature"):
        wrap(unreadable)
    with pytest.raises(ToolDefinitionError, match="no surrounding whitespace"):
        wrap(lambda_free, name=" spaced ")


def test_an_optional_return_annotation_gives_its_output_schema() -> None:
    """``-> int | None`` has neither a title nor a name, and is described all the same."""

    @tool(writes=False)
    def maybe(n: int) -> int | None:
        """Return a positive number, or nothing."""
        return n if n > 0 else None

    assert maybe.discover().output_schema == {"anyOf": [{"type": "integer"}, {"type": "null"}]}


def test_a_function_annotated_to_return_a_tool_result_reports_its_own_failure() -> None:
    """``-> ToolResult`` (alone or in a union) passes the result on; it is not made JSON."""

    @tool(writes=False)
    def refuse() -> ToolResult:
        """Refuse on purpose."""
        return ToolResult(success=False, error="not today")

    @tool(writes=False)
    def maybe(n: int) -> int | ToolResult:
        """Double a number, or refuse a negative one."""
        return ToolResult(success=False, error="negative") if n < 0 else n * 2

    assert refuse.discover().output_schema is None
    assert maybe.discover().output_schema == {"type": "integer"}
    with ToolRuntime() as runtime:
        runtime.register(refuse)
        runtime.register(maybe)
        with runtime.plan() as ctx:
            refused = runtime.execute("refuse", {}, ctx)
            doubled = runtime.execute("maybe", {"n": 2}, ctx)
            negative = runtime.execute("maybe", {"n": -1}, ctx)
    assert not refused.success and refused.error == "not today"
    assert doubled.success and doubled.output == 4
    assert not negative.success and negative.error == "negative"


def test_plain_arguments_arrive_as_pydantic_would_make_them(runtime: ToolRuntime) -> None:
    """A float parameter given an int gets a float; an int parameter given 1.0 gets 1."""
    seen: dict[str, Any] = {}

    @tool(writes=False)
    def plain(count: int, ratio: float, name: str = "n", flag: bool | None = None) -> str:
        """Record what arrived."""
        seen.update(count=count, ratio=ratio, name=name, flag=flag)
        return name

    runtime.register(plain)
    ctx = runtime.new_context("p")
    assert runtime.execute("plain", {"count": 2, "ratio": 3}, ctx).output == "n"
    assert [(type(v), v) for v in seen.values()] == [
        (int, 2),
        (float, 3.0),
        (str, "n"),
        (type(None), None),
    ]
    assert runtime.execute("plain", {"count": 1.0, "ratio": 0.5, "flag": True}, ctx).success
    assert (type(seen["count"]), seen["count"], seen["flag"]) == (int, 1, True)


def test_a_plain_dict_result_with_a_non_json_leaf_still_goes_through_pydantic(
    runtime: ToolRuntime,
) -> None:
    """A dict result holding a set or a nested model is serialised by pydantic as before."""

    @tool(writes=False)
    def report(nested: bool) -> dict[str, Any]:
        """Return a flat dict, or one whose values pydantic must serialise."""
        if nested:
            return {"point": Point(x=1), "tags": {"a"}}
        return {"n": 1, "label": "x", "ok": True, "none": None, "ratio": 0.5}

    runtime.register(report)
    ctx = runtime.new_context("p")
    assert runtime.execute("report", {"nested": False}, ctx).output == {
        "n": 1,
        "label": "x",
        "ok": True,
        "none": None,
        "ratio": 0.5,
    }
    assert runtime.execute("report", {"nested": True}, ctx).output == {
        "point": {"x": 1, "y": 0},
        "tags": ["a"],
    }


_REPEATERS = '''
def plain({name}: str, times: int = 1) -> str:
    """Repeat a text.

    Args:
        {name}: the text.
    """
    return {name} * times


def checked({name}: Annotated[str, Field(min_length=1)], times: int = 1) -> str:
    """Repeat a text that is not empty."""
    return {name} * times
'''


@pytest.mark.parametrize(
    "reserved", ["model_config", "model_dump", "model_validate", "model_fields", "json", "_text"]
)
def test_a_parameter_named_like_a_pydantic_attribute_keeps_its_name(
    runtime: ToolRuntime, reserved: str
) -> None:
    """Names pydantic keeps for itself are in the schema and arrive, read directly or not."""
    namespace: dict[str, Any] = {"Annotated": Annotated, "Field": Field}
    exec(_REPEATERS.format(name=reserved), namespace)  # noqa: S102 - the name is the case
    for name in ("plain", "checked"):
        wrapped = tool(namespace[name], writes=False)
        schema = wrapped.discover().input_schema
        assert list(schema["properties"]) == [reserved, "times"]
        assert schema["required"] == [reserved]
        runtime.register(wrapped)
    described = tool(namespace["plain"]).discover().input_schema["properties"][reserved]
    assert described == {"description": "the text.", "type": "string"}
    ctx = runtime.new_context("p")
    for name in ("plain", "checked"):
        for times in (2, 2.0):  # plain reads 2 directly; pydantic makes 2.0 an int
            result = runtime.execute(name, {reserved: "ab", "times": times}, ctx)
            assert (result.success, result.output) == (True, "abab")


def test_a_reserved_parameter_name_clashes_with_an_alias_like_any_other() -> None:
    """An alias taking a reserved parameter's name is refused as two parameters in one."""

    def fn(model_config: str, other: Annotated[str, Field(alias="model_config")]) -> None: ...

    with pytest.raises(ToolDefinitionError, match="both map"):
        tool(fn)


class _Refused:
    """A type whose pydantic schema fails with a plain ValueError."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        raise ValueError("no schema for this")


def test_a_parameter_pydantic_cannot_take_is_named_in_the_definition_error() -> None:
    """Any error building the arguments model is a ToolDefinitionError naming the parameter."""

    def opaque(count: int, thing: _Opaque) -> None: ...
    def refused(count: int, thing: _Refused) -> None: ...

    with pytest.raises(ToolDefinitionError, match="parameter 'thing' of tool 'opaque' has an"):
        tool(opaque)
    with pytest.raises(ToolDefinitionError, match="parameter 'thing' .*no schema for this"):
        tool(refused)


def _constrained(x: Annotated[int, Field(ge=1)]) -> int: ...
def _container(x: list[int]) -> int: ...
def _injected(x: int, ctx: ToolExecutionContext) -> int: ...
def _mutable_default(x: list[int] = []) -> int: ...  # noqa: B006 - the point of the case
def _union(x: int | str) -> int: ...
def _unannotated(x) -> int: ...  # type: ignore[no-untyped-def]


@pytest.mark.parametrize(
    "fn", [_constrained, _container, _injected, _mutable_default, _union, _unannotated]
)
def test_only_plain_signatures_skip_pydantic_for_their_arguments(fn: Callable[..., Any]) -> None:
    """Constraints, containers, injection, mutable defaults and unions keep pydantic's reading."""
    hints = typing.get_type_hints(fn, include_extras=True)
    assert argument_fields(inspect.signature(fn), hints) is None


def test_a_return_value_off_its_annotation_is_judged_by_output_validation_without_warnings(
    recwarn: pytest.WarningsRecorder,
) -> None:
    """Pydantic's serializer warnings stay silent: the output schema decides, as for any tool."""

    def count() -> list[str]:
        """Count."""
        return ["a", 3]  # type: ignore[list-item]

    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(wrap(count, writes=False))
        with runtime.plan() as ctx:
            result = runtime.execute("count", {}, ctx)
        assert result.success and result.output == ["a", 3]
        assert result.trace is not None and result.trace.output_valid is False
    with ToolRuntime(tracer=NullTracer(), strict_output=True) as runtime:
        runtime.register(wrap(count, writes=False))
        with runtime.plan() as ctx:
            strict = runtime.execute("count", {}, ctx)
        assert not strict.success and strict.error_type == "ToolSchemaValidationError"
    assert [str(w.message) for w in recwarn] == []


def test_numpy_entries_naming_several_parameters_describe_each() -> None:
    """``b, c : int`` gives both their text, and the entries after it are still read."""

    def fn(a: int, b: int, c: int, d: int) -> None:
        """Do.

        Parameters
        ----------
        a : int
            the first.
        b, c : int
            the middle two.
        d : int
            the last.
        """

    assert {name: prop.get("description") for name, prop in _props(wrap(fn)).items()} == {
        "a": "the first.",
        "b": "the middle two.",
        "c": "the middle two.",
        "d": "the last.",
    }


@pytest.mark.parametrize(
    "doc",
    [
        """Args:
            a: the first.
            b: the second,
                on two lines.
        """,
        """Args:
            a: the first.
            b: the second,
                on two lines.""",
        """Arguments:
        a: the first.
        b: the second,
            on two lines.
        """,
    ],
    ids=["closing-line", "closing-on-last-entry", "shallow"],
)
def test_a_docstring_that_opens_with_args_still_describes_each_parameter(doc: str) -> None:
    """An ``Args:`` heading on the docstring's first line, with no summary, is still read."""

    def add(a: int, b: int) -> int:
        return a + b

    add.__doc__ = doc
    descriptor = wrap(add, description="Add two numbers.").discover()
    props = descriptor.input_schema["properties"]
    assert props["a"]["description"] == "the first."
    assert props["b"]["description"] == "the second, on two lines."
