"""A Python function's signature as JSON Schemas, through pydantic.

The input schema is the schema of a pydantic model built from the parameters;
the output schema is the return annotation's. Neither carries the titles
pydantic makes up from names (``"title": "Path"`` for a parameter ``path``, the
class name for a model, a dataclass or an enum): a model pays tokens for them
and learns nothing the names do not say. A title the author wrote
(``Field(title=...)``, a model's ``title`` config) is kept, unless it only
repeats its class's name.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import operator
import types
import typing
import warnings
from typing import Any

import pydantic
from pydantic import BaseModel, ConfigDict, TypeAdapter
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode, JsonSchemaValue

from toolcycle._passthrough import argument_fields, result_check
from toolcycle.cancellation import CancellationToken
from toolcycle.content import PART_TYPES, ToolReturn
from toolcycle.context import ToolExecutionContext
from toolcycle.errors import ToolDefinitionError
from toolcycle.models import ToolResult

if typing.TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from toolcycle._passthrough import Field

__all__ = [
    "NoGeneratedTitles",
    "Parameter",
    "arguments_model",
    "arguments_schema",
    "check_not_generator",
    "is_async",
    "return_adapter",
    "unwrapped",
]


class NoGeneratedTitles(GenerateJsonSchema):
    """pydantic's JSON Schema without the titles that only repeat a name.

    A field gets no title from its name, and a definition under ``$defs`` loses
    a title equal to its key (pydantic names both after the class). A title
    that says something else, one the author wrote, is kept.
    """

    def field_title_should_be_set(self, schema: Any) -> bool:
        """Never: a title made from the field's name says nothing the name does not."""
        return False

    def generate(self, schema: Any, mode: JsonSchemaMode = "validation") -> JsonSchemaValue:
        """The schema, with each definition's title dropped where it repeats its key."""
        json_schema = super().generate(schema, mode)
        for key, definition in json_schema.get("$defs", {}).items():
            if definition.get("title") == key:
                del definition["title"]
        return json_schema


_PYDANTIC_ERRORS = (
    pydantic.PydanticSchemaGenerationError,
    pydantic.PydanticInvalidForJsonSchema,
    pydantic.PydanticUserError,
)


@dataclasses.dataclass(frozen=True, slots=True)
class Parameter:
    """One parameter of the function, and where its value comes from."""

    name: str
    """The Python parameter name."""
    field: str
    """The field of the arguments model (the parameter name, unless it is reserved)."""
    inject: type | None
    """ToolExecutionContext or CancellationToken for injected parameters."""


def unwrapped(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` without the `functools.partial` layers around it.

    A partial object has neither the annotations nor the docstring of the
    function it binds: its own class's docstring would become the description.
    """
    while isinstance(fn, functools.partial):
        fn = fn.func
    return fn


def _code_of(fn: Callable[..., Any]) -> Callable[..., Any]:
    """What runs when ``fn`` is called: the function, or an instance's ``__call__``."""
    fn = unwrapped(fn)
    if inspect.isfunction(fn) or inspect.ismethod(fn) or isinstance(fn, type):
        return fn
    # The class's __call__, not the instance's: that is the one a call runs.
    return type(fn).__call__


def is_async(fn: Callable[..., Any]) -> bool:
    """Whether calling ``fn`` gives a coroutine.

    So it does for an ``async def`` function, a partial of one, and an object
    whose ``__call__`` is ``async def``.
    """
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(_code_of(fn))


def check_not_generator(fn: Callable[..., Any], name: str) -> None:
    """Refuse a generator function: a tool returns one result, it does not yield."""
    code = _code_of(fn)
    if inspect.isasyncgenfunction(code) or inspect.isgeneratorfunction(code):
        kind = "an async generator" if inspect.isasyncgenfunction(code) else "a generator"
        raise ToolDefinitionError(
            f"tool {name!r} is {kind} function, but a tool returns one result rather "
            "than yielding values; collect them and return a list",
            tool_name=name,
        )


def _type_hints(fn: Callable[..., Any], name: str) -> dict[str, Any]:
    fn = unwrapped(fn)
    target = fn if inspect.isfunction(fn) or inspect.ismethod(fn) else type(fn).__call__
    try:
        return typing.get_type_hints(target, include_extras=True)
    except Exception as exc:
        raise ToolDefinitionError(
            f"the annotations of tool {name!r} cannot be resolved: {exc}", tool_name=name
        ) from exc


def arguments_model(
    fn: Callable[..., Any], name: str, descriptions: dict[str, str]
) -> tuple[tuple[Parameter, ...], type[BaseModel], tuple[Field, ...] | None]:
    """The function's parameters, the pydantic model of its arguments, and their direct reading.

    The last is None unless pydantic would pass every argument on unchanged
    (see `toolcycle._passthrough`).
    """
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise ToolDefinitionError(f"cannot read the signature of {fn!r}: {exc}") from exc
    _check_not_a_method(fn, signature, name)
    hints = _type_hints(fn, name)
    parameters: list[Parameter] = []
    fields: dict[str, Any] = {}
    aliases: dict[str, str] = {}
    for parameter in signature.parameters.values():
        where = f"parameter {parameter.name!r} of tool {name!r}"
        if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            raise ToolDefinitionError(
                f"{where}: *{parameter.name} cannot be described by a JSON Schema; "
                "take a list parameter instead",
                tool_name=name,
            )
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            raise ToolDefinitionError(
                f"{where}: **{parameter.name} cannot be described by a JSON Schema; "
                "take a dict parameter or name each argument",
                tool_name=name,
            )
        if parameter.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise ToolDefinitionError(
                f"{where} is positional-only, but tools are called with named arguments; "
                "remove the '/' from the signature",
                tool_name=name,
            )
        annotation = hints.get(parameter.name, Any)
        if annotation in (ToolExecutionContext, CancellationToken):
            parameters.append(Parameter(parameter.name, parameter.name, annotation))
            continue
        default = ... if parameter.default is inspect.Parameter.empty else parameter.default
        options: dict[str, Any] = {"default": default}
        text = descriptions.get(parameter.name)
        if text and not _annotation_sets(annotation, "description"):
            options["description"] = text
        field = parameter.name
        if _reserved(field):
            # The model keeps the name for itself; the argument keeps it as an alias.
            field = _internal_name(field, len(parameters), signature.parameters)
            if not _annotation_sets(annotation, "alias", "validation_alias"):
                options["alias"] = parameter.name
        fields[field] = (annotation, pydantic.Field(**options))
        parameters.append(Parameter(parameter.name, field, None))
    model = _create_model(name, fields, {p.field: p.name for p in parameters})
    for field, info in model.model_fields.items():
        public = info.alias or field
        if public in aliases:
            raise ToolDefinitionError(
                f"parameters {aliases[public]!r} and {field!r} of tool {name!r} both map to "
                f"the argument name {public!r}; give them distinct names or aliases",
                tool_name=name,
            )
        aliases[public] = field
    return tuple(parameters), model, argument_fields(signature, hints)


def _check_not_a_method(fn: Callable[..., Any], signature: inspect.Signature, name: str) -> None:
    """Refuse a function defined in a class body whose first parameter is ``self`` or ``cls``.

    Decorated in the class (or taken from it unbound), a method would ask the
    model for ``self`` as an argument of any type; its bound method has no ``self``.
    """
    first = next(iter(signature.parameters), None)
    owner = getattr(fn, "__qualname__", "").split(".")[:-1]
    if first in ("self", "cls") and owner and owner[-1] != "<locals>":
        method = getattr(fn, "__name__", name)
        raise ToolDefinitionError(
            f"parameter {first!r} of tool {name!r}: {fn.__qualname__} is a method, and a "
            f"model cannot pass its {first!r}; make the tool from the bound method of an "
            f"instance instead, as in wrap(instance.{method}, ...) or "
            f"runtime.register(instance.{method})",
            tool_name=name,
        )


def _reserved(name: str) -> bool:
    """Whether pydantic would not take ``name`` as a field of the arguments model.

    It drops a leading underscore (a private attribute) and ``model_config`` (the
    model's configuration) without a word, and refuses or warns about a name
    that shadows a `BaseModel` attribute (``model_dump``, ``json``, ...).
    """
    return name.startswith("_") or hasattr(BaseModel, name)


def _internal_name(name: str, index: int, taken: Mapping[str, object]) -> str:
    """A field name for a reserved parameter, free of every parameter's name."""
    field = f"p{index}_{name.strip('_')}"
    while field in taken or _reserved(field):
        field += "_"
    return field


def _create_model(name: str, fields: dict[str, Any], parameters: dict[str, str]) -> type[BaseModel]:
    """The arguments model; a field pydantic refuses is reported by its parameter's name."""
    try:
        return _model(name, fields)
    except Exception as exc:
        culprit = next((field for field in fields if _fails(name, field, fields)), None)
        where = (
            f"parameter {parameters[culprit]!r} of tool {name!r}" if culprit else f"tool {name!r}"
        )
        if isinstance(exc, _PYDANTIC_ERRORS):
            problem = f"{where} has an annotation that is not JSON-compatible: {exc}"
        else:
            problem = f"{where} cannot be made an argument: {exc}"
        raise ToolDefinitionError(problem, tool_name=name) from exc


def _fails(name: str, field: str, fields: dict[str, Any]) -> bool:
    try:
        _model(name, {field: fields[field]})
    except Exception:
        return True
    return False


def _model(name: str, fields: dict[str, Any]) -> type[BaseModel]:
    return pydantic.create_model(
        f"{_camel(name)}Arguments",
        # No protected namespaces: a name that would shadow pydantic is renamed (_reserved).
        __config__=ConfigDict(
            arbitrary_types_allowed=False, populate_by_name=True, protected_namespaces=()
        ),
        **fields,
    )


def arguments_schema(model: type[BaseModel], name: str) -> dict[str, Any]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pydantic.json_schema.PydanticJsonSchemaWarning)
            schema = model.model_json_schema(by_alias=True, schema_generator=NoGeneratedTitles)
    except (*_PYDANTIC_ERRORS, pydantic.json_schema.PydanticJsonSchemaWarning) as exc:
        raise ToolDefinitionError(
            f"the parameters of tool {name!r} cannot be described as JSON Schema: {exc}",
            tool_name=name,
        ) from exc
    schema.pop("title", None)
    schema.setdefault("properties", {})
    if not _strict(schema):
        culprit = next((key for key, sub in schema["properties"].items() if not _strict(sub)), None)
        where = f"parameter {culprit!r}" if culprit is not None else "a parameter"
        raise ToolDefinitionError(_NOT_A_NUMBER.format(where=where, name=name), tool_name=name)
    return schema


_NOT_A_NUMBER = (
    "{where} of tool {name!r} has a default (or another schema value) that is NaN or an "
    "infinity, which no JSON can carry; use a finite number or None"
)


def _strict(schema: Any) -> bool:
    """Whether ``schema`` holds no NaN or infinity, which JSON cannot carry."""
    try:
        json.dumps(schema, allow_nan=False)
    except ValueError:
        return False
    return True


def return_adapter(
    fn: Callable[..., Any], name: str
) -> tuple[TypeAdapter[Any] | None, dict[str, Any] | None, Callable[[Any], bool] | None]:
    """The adapter that serialises the function's result, the output schema, and a shortcut.

    The shortcut tells a result the adapter would give back unchanged (see
    `toolcycle._passthrough`); None when there is no adapter or no such test.
    """
    hints = _type_hints(fn, name)
    if "return" not in hints:
        return None, None, None
    annotation = hints["return"]
    if inspect.iscoroutinefunction(fn) and typing.get_origin(annotation) is typing.Coroutine:
        annotation = typing.get_args(annotation)[-1]  # pragma: no cover - unusual spelling
    annotation = _without_results(annotation)
    if annotation is None:
        return None, None, None  # the function reports its own ToolResult: passed on as it is
    if _rich(annotation):
        # Content parts are passed on as they are; a ToolReturn[T]'s value is checked as T.
        if typing.get_origin(annotation) is not ToolReturn or not typing.get_args(annotation):
            return None, None, None
        _, schema = _adapter_of(typing.get_args(annotation)[0], name)
        return None, schema, None
    adapter, schema = _adapter_of(annotation, name)
    return adapter, schema, None if adapter is None else result_check(annotation)


def _adapter_of(
    annotation: Any, name: str
) -> tuple[TypeAdapter[Any] | None, dict[str, Any] | None]:
    """The adapter and output schema of a return annotation that is not rich content."""
    if annotation in (None, type(None), Any):
        return None, None
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(annotation)
        with warnings.catch_warnings():
            warnings.simplefilter("error", pydantic.json_schema.PydanticJsonSchemaWarning)
            schema = adapter.json_schema(mode="serialization", schema_generator=NoGeneratedTitles)
    except (*_PYDANTIC_ERRORS, pydantic.json_schema.PydanticJsonSchemaWarning) as exc:
        raise ToolDefinitionError(
            f"the return annotation of tool {name!r} is not JSON-compatible: {exc}",
            tool_name=name,
        ) from exc
    if not _strict(schema):
        where = "the return annotation"
        raise ToolDefinitionError(_NOT_A_NUMBER.format(where=where, name=name), tool_name=name)
    title = schema.get("title")
    if title is not None and title == getattr(annotation, "__name__", None):
        del schema["title"]  # the class name, as pydantic titles a model it was not told to
    return adapter, schema


def _without_results(annotation: Any) -> Any:
    """The return annotation without `ToolResult`, which a tool returns to report itself.

    None when nothing is left (``-> ToolResult``); ``int | ToolResult`` gives ``int``.
    """
    if annotation is ToolResult:
        return None
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        rest = [arg for arg in typing.get_args(annotation) if arg is not ToolResult]
        if len(rest) < len(typing.get_args(annotation)):
            return None if not rest else functools.reduce(operator.or_, rest)
    return annotation


def _rich(annotation: Any) -> bool:
    """Whether a return annotation is content parts or a `ToolReturn` (in any spelling)."""
    if annotation in PART_TYPES or annotation is ToolReturn:
        return True
    origin = typing.get_origin(annotation)
    if origin is ToolReturn:
        return True
    if origin in (list, tuple, typing.Union, types.UnionType):
        args = [arg for arg in typing.get_args(annotation) if arg is not Ellipsis]
        return bool(args) and all(_rich(arg) for arg in args)
    return False


def _annotation_sets(annotation: Any, *attributes: str) -> bool:
    """Whether ``Annotated[..., Field(...)]`` already sets one of these field attributes."""
    if typing.get_origin(annotation) is not typing.Annotated:
        return False
    return any(
        isinstance(meta, pydantic.fields.FieldInfo) and getattr(meta, attribute)
        for meta in typing.get_args(annotation)[1:]
        for attribute in attributes
    )


def _camel(name: str) -> str:
    parts = [part for part in "".join(c if c.isalnum() else " " for c in name).split() if part]
    return "".join(part[:1].upper() + part[1:] for part in parts) or "Tool"
