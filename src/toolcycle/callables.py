"""Python callables as tools: the ``@tool`` decorator and ``wrap``.

A `FunctionTool` derives everything from the function at decoration time, so
a bad definition fails where it is written, not when a model first calls it:

- the input schema comes from the signature through pydantic (every annotation
  pydantic can express as JSON Schema, with defaults and ``Field`` constraints)
  and the parameter descriptions from the docstring, without the titles pydantic
  makes up from names (see `toolcycle._signatures`);
- the description is the docstring's first paragraph or ``description=``; a tool
  with neither is accepted with a `ToolDefinitionWarning`;
- the output schema comes from the return annotation (none for ``-> None`` or
  no annotation), and outputs are serialised to JSON data through it;
- a parameter annotated `ToolExecutionContext` or `CancellationToken` receives
  the call's context or the call's own token (``ctx.call_token``, cancelled with
  the plan and at the call's timeout) and is left out of the schema.

At call time the runtime has already validated the arguments against the JSON
Schema; the tool then coerces them into the annotated Python types (a pydantic
model parameter receives a model instance, an ``Enum`` its member).
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar, overload

import pydantic

from toolcycle._passthrough import read_arguments
from toolcycle._warnings import warn_at_caller
from toolcycle.cancellation import CancellationToken
from toolcycle.context import ToolExecutionContext
from toolcycle.errors import (
    ToolDefinitionError,
    ToolDefinitionWarning,
    ToolOutputError,
    error_text,
)
from toolcycle.models import ToolCapability, ToolDescriptor, ToolResult

if TYPE_CHECKING:
    from toolcycle.guardrails import Guardrail
    from toolcycle.result_cache import CachePolicy
    from toolcycle.retries import RetryPolicy

__all__ = ["AsyncFunctionTool", "FunctionTool", "tool", "wrap"]

F = TypeVar("F", bound=Callable[..., Any])
Hook = Callable[[ToolExecutionContext], Any]


class FunctionTool:
    """A sync Python function as a `ToolInstance`. Calling it calls the function."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        writes: bool = True,
        checkpointable: bool = False,
        sequential: bool = False,
        requires_approval: bool | None = None,
        tags: Iterable[str] = (),
        idempotent: bool = False,
        max_retries: int | None = None,
        retry: RetryPolicy | None = None,
        cache: CachePolicy | None = None,
        input_guardrails: Iterable[Guardrail] = (),
        output_guardrails: Iterable[Guardrail] = (),
        defer_loading: bool = False,
    ) -> None:
        if not callable(fn):
            raise ToolDefinitionError(f"{fn!r} is not callable")
        # Read when a function becomes a tool, so that `import toolcycle` does not load
        # these modules (nor pydantic's TypeAdapter) for a process that makes none.
        from toolcycle._docstrings import parse_docstring
        from toolcycle._signatures import (
            arguments_model,
            arguments_schema,
            check_not_generator,
            return_adapter,
            unwrapped,
        )
        from toolcycle._tool_options import check_cache, check_guardrails, check_retries

        self.fn = fn
        self.__wrapped__ = fn
        self.__doc__ = getattr(unwrapped(fn), "__doc__", None)
        tool_name = name or getattr(fn, "__name__", None)
        if not tool_name or tool_name == "<lambda>":
            raise ToolDefinitionError(
                f"{fn!r} has no usable name; name the tool with wrap(fn, name=...) "
                "or @tool(name=...)"
            )
        check_not_generator(fn, tool_name)
        doc = parse_docstring(inspect.getdoc(unwrapped(fn)))
        self._parameters, self._arguments, self._fields = arguments_model(fn, tool_name, doc.params)
        self._plain = all(p.inject is None and p.field == p.name for p in self._parameters)
        self._returns, output_schema, self._passes = return_adapter(fn, tool_name)
        self._on_activate: Hook | None = None
        self._on_deactivate: Hook | None = None
        try:
            descriptor = ToolDescriptor(
                name=tool_name,
                description=description if description is not None else doc.summary,
                input_schema=arguments_schema(self._arguments, tool_name),
                output_schema=output_schema,
                capability=ToolCapability(
                    writes=writes,
                    checkpointable=checkpointable,
                    sequential=sequential,
                    requires_approval=requires_approval,
                    idempotent=idempotent,
                ),
                source="wrapped",
                tags=frozenset(tags),
                defer_loading=defer_loading,
            )
        except pydantic.ValidationError as exc:
            raise ToolDefinitionError(f"tool {tool_name!r}: {exc}", tool_name=tool_name) from exc
        self._descriptor = descriptor
        # Read by the runtime at registration (see ToolRuntime.register).
        self.max_retries: int | None
        self.retry_policy: RetryPolicy | None
        self.max_retries, self.retry_policy = check_retries(
            tool_name, idempotent, max_retries, retry
        )
        self.cache_policy = check_cache(tool_name, writes, cache)
        """How the runtime caches the tool's results (``cache=``); None: it does not."""
        # Read by the runtime at registration (any tool may carry these two attributes).
        self.input_guardrails = check_guardrails(input_guardrails, "input_guardrails", tool_name)
        self.output_guardrails = check_guardrails(output_guardrails, "output_guardrails", tool_name)
        if not descriptor.description.strip():
            warn_at_caller(
                ToolDefinitionWarning(
                    f"tool {tool_name!r} has no description, so a model is shown none; "
                    "give the function a docstring, or pass description=..."
                )
            )

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._descriptor.name!r} wrapping {self.fn!r}>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the wrapped function directly, bypassing the runtime."""
        return self.fn(*args, **kwargs)

    @property
    def name(self) -> str:
        """The tool's name."""
        return self._descriptor.name

    def on_activate(self, hook: F) -> F:
        """Register ``hook(ctx)`` (sync or async) to run when the tool activates for a plan."""
        self._on_activate = _check_hook(hook, "on_activate", self._on_activate, self.name)
        return hook

    def on_deactivate(self, hook: F) -> F:
        """Register ``hook(ctx)`` (sync or async) to run when the plan ends."""
        self._on_deactivate = _check_hook(hook, "on_deactivate", self._on_deactivate, self.name)
        return hook

    def discover(self) -> ToolDescriptor:
        """Return the descriptor derived at decoration time."""
        return self._descriptor

    def activate(self, ctx: ToolExecutionContext) -> Any:
        """Run the ``on_activate`` hook, if any (its awaitable is returned to the runtime)."""
        return self._on_activate(ctx) if self._on_activate is not None else None

    def deactivate(self, ctx: ToolExecutionContext) -> Any:
        """Run the ``on_deactivate`` hook, if any."""
        return self._on_deactivate(ctx) if self._on_deactivate is not None else None

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        """Coerce the validated arguments, call the function, serialise its result."""
        return self._serialise(self.fn(**self._kwargs(params, ctx)), ctx)

    def _kwargs(self, params: dict[str, Any], ctx: ToolExecutionContext) -> dict[str, Any]:
        if self._fields is not None:  # plain parameters: pydantic would change nothing
            direct = read_arguments(self._fields, params)
            if direct is not None:
                return direct
        # The validator itself rather than model_validate: the same check, 0.3 us less.
        arguments = self._arguments.__pydantic_validator__.validate_python(params)
        if self._plain:  # every parameter is an argument of the same name
            return dict(arguments.__dict__)
        kwargs: dict[str, Any] = {}
        for parameter in self._parameters:
            if parameter.inject is ToolExecutionContext:
                kwargs[parameter.name] = ctx
            elif parameter.inject is CancellationToken:
                kwargs[parameter.name] = ctx.call_token
            else:
                kwargs[parameter.name] = getattr(arguments, parameter.field)
        return kwargs

    def _serialise(self, result: Any, ctx: ToolExecutionContext) -> Any:
        if self._returns is None or type(result) is ToolResult:  # a result of its own: as is
            return result
        if self._passes is not None and self._passes(result):  # it would serialise to itself
            return result
        # By alias: the output schema (serialisation mode) names the fields so.
        # No serializer warnings: a value off its annotation is output validation's to
        # judge, and a library must not write warnings to its host's stderr.
        try:
            return self._returns.dump_python(result, mode="json", by_alias=True, warnings=False)
        except Exception as exc:  # bytes that are not UTF-8, an int too big for a float...
            # The output is at fault, not the function: the same failure as any
            # other output that is not JSON.
            raise ToolOutputError(
                f"tool {self.name!r} returned output that is not JSON: "
                f"{type(exc).__name__}: {error_text(exc):.300}",
                tool_name=self.name,
                plan_id=ctx.plan_id,
            ) from exc


class AsyncFunctionTool(FunctionTool):
    """An ``async def`` function as a `ToolInstance`; awaited natively by ``aexecute``."""

    async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        """Coerce the validated arguments, await the function, serialise its result."""
        return self._serialise(await self.fn(**self._kwargs(params, ctx)), ctx)


def wrap(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    writes: bool = True,
    checkpointable: bool = False,
    sequential: bool = False,
    requires_approval: bool | None = None,
    tags: Iterable[str] = (),
    idempotent: bool = False,
    max_retries: int | None = None,
    retry: RetryPolicy | None = None,
    cache: CachePolicy | None = None,
    input_guardrails: Iterable[Guardrail] = (),
    output_guardrails: Iterable[Guardrail] = (),
    defer_loading: bool = False,
) -> FunctionTool:
    """Make a tool of a function you do not own (or do not want to decorate).

    The capability defaults are the core's safe ones: a tool writes and cannot
    be rolled back unless you say otherwise. ``sequential=True`` makes it run
    alone in a batch of calls (see ``runtime.call_many``); ``requires_approval``
    sets `ToolCapability.requires_approval`. ``max_retries`` bounds the model's
    retries after failures it can fix (None: the runtime's default);
    ``retry`` (a `RetryPolicy`) retries transient faults within a call and
    needs ``idempotent=True``. ``cache`` caches the tool's results (see
    `toolcycle.CachePolicy`); only a tool with ``writes=False`` may.
    ``input_guardrails`` and ``output_guardrails`` are the tool's own guardrails
    (see `toolcycle.guardrails`). ``defer_loading=True`` keeps the tool out of a
    model's definitions until a tool search finds it.

    Raises:
        ToolDefinitionError: the function cannot be described as a tool.
    """
    from toolcycle._signatures import is_async  # loaded with the first tool, as in FunctionTool

    cls = AsyncFunctionTool if is_async(fn) else FunctionTool
    return cls(
        fn,
        name=name,
        description=description,
        writes=writes,
        checkpointable=checkpointable,
        sequential=sequential,
        requires_approval=requires_approval,
        tags=tags,
        idempotent=idempotent,
        max_retries=max_retries,
        retry=retry,
        cache=cache,
        input_guardrails=input_guardrails,
        output_guardrails=output_guardrails,
        defer_loading=defer_loading,
    )


@overload
def tool(
    fn: Callable[..., Any],
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    writes: bool = True,
    checkpointable: bool = False,
    sequential: bool = False,
    requires_approval: bool | None = None,
    tags: Iterable[str] = (),
    idempotent: bool = False,
    max_retries: int | None = None,
    retry: RetryPolicy | None = None,
    cache: CachePolicy | None = None,
    input_guardrails: Iterable[Guardrail] = (),
    output_guardrails: Iterable[Guardrail] = (),
    defer_loading: bool = False,
) -> FunctionTool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    writes: bool = True,
    checkpointable: bool = False,
    sequential: bool = False,
    requires_approval: bool | None = None,
    tags: Iterable[str] = (),
    idempotent: bool = False,
    max_retries: int | None = None,
    retry: RetryPolicy | None = None,
    cache: CachePolicy | None = None,
    input_guardrails: Iterable[Guardrail] = (),
    output_guardrails: Iterable[Guardrail] = (),
    defer_loading: bool = False,
) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    writes: bool = True,
    checkpointable: bool = False,
    sequential: bool = False,
    requires_approval: bool | None = None,
    tags: Iterable[str] = (),
    idempotent: bool = False,
    max_retries: int | None = None,
    retry: RetryPolicy | None = None,
    cache: CachePolicy | None = None,
    input_guardrails: Iterable[Guardrail] = (),
    output_guardrails: Iterable[Guardrail] = (),
    defer_loading: bool = False,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Decorate a function to make it a tool: ``@tool`` or ``@tool(name=..., writes=False)``.

    ``tool(fn, writes=False)`` is the same as ``@tool(writes=False)`` on ``fn``.

    Raises:
        ToolDefinitionError: the function cannot be described as a tool.
    """

    def decorate(function: Callable[..., Any]) -> FunctionTool:
        return wrap(
            function,
            name=name,
            description=description,
            writes=writes,
            checkpointable=checkpointable,
            sequential=sequential,
            requires_approval=requires_approval,
            tags=tags,
            idempotent=idempotent,
            max_retries=max_retries,
            retry=retry,
            cache=cache,
            input_guardrails=input_guardrails,
            output_guardrails=output_guardrails,
            defer_loading=defer_loading,
        )

    return decorate(fn) if fn is not None else decorate


def _check_hook(hook: Any, kind: str, current: Hook | None, name: str) -> Hook:
    if not callable(hook):
        raise ToolDefinitionError(f"{kind} of tool {name!r} needs a callable, got {hook!r}")
    if current is not None:
        raise ToolDefinitionError(f"tool {name!r} already has an {kind} hook", tool_name=name)
    return typing.cast("Hook", hook)
