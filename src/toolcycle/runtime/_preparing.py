"""A tool made ready to register: its `Entry`, with everything its calls need worked out.

`ToolPreparer` takes a tool (or a plain callable, wrapped), asks it once for its
descriptor, compiles its input and output schemas, and resolves what applies to
it of its own settings, those given at registration, its source's and the
runtime's: the time limit, the retry limit and policy, the result cache, the
guardrails and deferred loading. It keeps nothing and registers nothing: the
registry decides where the entry goes.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from toolcycle._construct import detached
from toolcycle.callables import wrap
from toolcycle.errors import ToolRegistrationError, error_text
from toolcycle.models import ToolDescriptor
from toolcycle.protocols import ToolInstance
from toolcycle.runtime._caching import bind
from toolcycle.runtime._guardset import Guards, chain, guards_of
from toolcycle.runtime._limits import check_seconds
from toolcycle.runtime._retries import resolve
from toolcycle.runtime._shared import Entry

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from toolcycle.guardrails import Guardrail
    from toolcycle.result_cache import CachePolicy, ResultCache
    from toolcycle.retries import RetryPolicy
    from toolcycle.runtime._settings import Settings
    from toolcycle.validation import SchemaCompiler

__all__ = ["ToolPreparer"]


class ToolPreparer:
    """Makes the entries of tools about to be registered.

    Args:
        compiler: compiles each tool's schemas.
        settings: the runtime's shared settings.
        results: where cached tools' results are kept.
    """

    __slots__ = ("_compiler", "_results", "_settings")

    def __init__(self, compiler: SchemaCompiler, settings: Settings, results: ResultCache) -> None:
        self._compiler = compiler
        self._settings = settings
        self._results = results

    def prepare(
        self,
        instance: ToolInstance | Callable[..., Any],
        *,
        timeout: float | None = None,
        max_retries: int | None = None,
        retry: RetryPolicy | None = None,
        cache: CachePolicy | None = None,
        source_cache: CachePolicy | None = None,
        input_guardrails: Iterable[Guardrail] | None = None,
        output_guardrails: Iterable[Guardrail] | None = None,
        source_guards: Guards | None = None,
        defer_loading: bool | None = None,
        source_max_retries: int | None = None,
        source_retry: RetryPolicy | None = None,
    ) -> Entry:
        """Discover the tool and compile both of its schemas: its entry, not yet registered.

        ``source_cache`` is its source's policy: it applies only if the tool does not
        write and has no policy of its own. ``source_max_retries`` and ``source_retry``
        take the runtime's place for the tools of a source (a policy, for idempotent
        tools only).
        """
        self._settings.check_open()
        given_input = guards_of(input_guardrails, "input_guardrails")
        given_output = guards_of(output_guardrails, "output_guardrails")
        check_seconds("timeout", timeout)
        if isinstance(instance, type) and isinstance(instance, ToolInstance):
            # The class has the four methods, so it looks like a tool until discover()
            # fails for want of ``self``; say what was meant instead.
            raise TypeError(
                f"{instance.__name__} is a tool class, not a tool: register an instance "
                f"of it, as in runtime.register({instance.__name__}())"
            )
        if not isinstance(instance, ToolInstance) and callable(instance):
            instance = wrap(instance)
        if not isinstance(instance, ToolInstance):
            raise TypeError(
                f"{instance!r} is not a tool: it needs discover, activate, execute and "
                "deactivate methods (see toolcycle.ToolInstance)"
            )
        descriptor = _discovered(instance)
        name = descriptor.name
        loop = getattr(instance, "event_loop", None)
        if loop is not None and not isinstance(loop, asyncio.AbstractEventLoop):
            raise ToolRegistrationError(
                f"the event_loop attribute of tool {name!r} is a {type(loop).__name__}, "
                "not an asyncio event loop",
                tool_name=name,
            )
        compile_ = self._compiler.compile
        compiled_input = compile_(descriptor.input_schema, kind="input", tool_name=name)
        output = descriptor.output_schema
        compiled_output = (
            None if output is None else compile_(output, kind="output", tool_name=name)
        )
        settings = self._settings
        limit, retry_policy = resolve(
            instance,
            descriptor,
            max_retries,
            retry,
            settings.max_retries if source_max_retries is None else source_max_retries,
            settings.retry if source_retry is None else source_retry,
        )
        guards = chain(
            self._settings.guardrails, source_guards, instance, name, given_input, given_output
        )
        descriptor = detached(descriptor)  # later edits by the tool change nothing
        # register(cache=...) wins over the tool's own policy (@tool(cache=...)).
        policy = cache if cache is not None else getattr(instance, "cache_policy", None)
        if policy is None and not descriptor.capability.writes:
            policy = source_cache
        binding = bind(descriptor, policy, self._results)
        if defer_loading is not None and defer_loading != descriptor.defer_loading:
            descriptor = descriptor.model_copy(update={"defer_loading": defer_loading})
        return Entry(
            descriptor,
            instance,
            compiled_input,
            compiled_output,
            loop,
            timeout,
            binding,
            guards,
            max_retries=limit,
            retry=retry_policy,
        )


def _discovered(instance: ToolInstance) -> ToolDescriptor:
    """The tool's ``discover()``, or a `ToolRegistrationError` saying what went wrong."""
    try:
        descriptor = instance.discover()
    except Exception as exc:
        raise ToolRegistrationError(
            f"discover() of {type(instance).__name__} raised {type(exc).__name__}: "
            f"{error_text(exc)}"
        ) from exc
    if not isinstance(descriptor, ToolDescriptor):
        raise ToolRegistrationError(
            f"discover() of {type(instance).__name__} returned {type(descriptor).__name__}; "
            "it must return a toolcycle.ToolDescriptor"
        )
    return descriptor
