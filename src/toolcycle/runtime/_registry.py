"""The tool registry: register tools and sources, refresh stale sources, look tools up."""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING, Any

from toolcycle._construct import detached
from toolcycle._warnings import warn_at_caller
from toolcycle.callables import wrap
from toolcycle.errors import (
    ToolNotFoundError,
    ToolRegistrationError,
    ToolSchemaValidationError,
    ToolSkippedWarning,
    error_text,
)
from toolcycle.models import ToolDescriptor
from toolcycle.protocols import ToolInstance
from toolcycle.runtime._caching import bind
from toolcycle.runtime._guardset import Guards, chain, guards_of
from toolcycle.runtime._limits import check_seconds
from toolcycle.runtime._retries import check_max_retries, default_policy, resolve
from toolcycle.runtime._shared import Entry
from toolcycle.tracing import get_logger

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from toolcycle.guardrails import Guardrail
    from toolcycle.protocols import ToolSource
    from toolcycle.result_cache import CachePolicy, ResultCache
    from toolcycle.retries import RetryPolicy
    from toolcycle.runtime._shared import Settings
    from toolcycle.validation import SchemaCompiler

__all__ = ["ToolRegistry"]

_log = get_logger("toolcycle.runtime")


class _SourceEntry:
    """A registered source and the names its tools were registered under."""

    __slots__ = (
        "cache",
        "defer",
        "guards",
        "max_retries",
        "names",
        "retry",
        "skip",
        "source",
        "timeout",
    )

    def __init__(
        self,
        source: ToolSource,
        names: list[str],
        skip: bool,
        timeout: float | None,
        cache: CachePolicy | None = None,
        guards: Guards | None = None,
        defer: bool | None = None,
        max_retries: int | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.source = source
        self.names = names
        self.skip = skip
        self.timeout = timeout
        self.cache = cache
        self.guards = guards  # the source's guardrails, for every tool it yields
        self.defer = defer
        self.max_retries = max_retries  # for its tools that give none of their own
        self.retry = retry  # for its idempotent tools that give none of their own


class ToolRegistry:
    """Every registered tool, compiled once, and the sources they came from.

    Lookups by name read a plain dict without a lock (a dict read is atomic);
    changes, and listings, take the registry's lock.

    Args:
        compiler: compiles each tool's schemas.
        settings: the runtime's shared settings.
        results: where cached tools' results are kept.
        retired: called with a name whose tool was unregistered, or replaced by
            a source registered afresh, so that open plans activate the tool
            registered there now before running it (the activation cache's
            ``retire``).
    """

    def __init__(
        self,
        compiler: SchemaCompiler,
        settings: Settings,
        results: ResultCache,
        *,
        retired: Callable[[str], object] = lambda name: None,
    ) -> None:
        self._compiler = compiler
        self._settings = settings
        self._results = results
        self._retired = retired
        self._lock = threading.RLock()
        self._tools: dict[str, Entry] = {}
        self._sources: list[_SourceEntry] = []
        self._generation = 0

    @property
    def generation(self) -> int:
        """A number that changes whenever a tool is registered or unregistered."""
        return self._generation

    @property
    def entries(self) -> Mapping[str, Entry]:
        """Every registered tool by name (read it; register and unregister change it)."""
        return self._tools

    def names(self) -> list[str]:
        """The registered names, in order of registration."""
        with self._lock:
            return list(self._tools)

    def entry(self, name: str) -> Entry:
        """The tool's entry.

        Raises:
            ToolNotFoundError: no tool has that name.
        """
        entry = self._tools.get(name)
        if entry is None:
            raise ToolNotFoundError(f"no tool named {name!r} is registered", tool_name=name)
        return entry

    def descriptors(self) -> tuple[ToolDescriptor, ...]:
        """The descriptors of every registered tool, in order of registration."""
        with self._lock:
            return tuple(entry.descriptor for entry in self._tools.values())

    def register(
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
    ) -> ToolDescriptor:
        """Discover the tool once, compile both of its schemas and keep it (see the façade).

        ``source_cache`` is its source's policy: it applies only if the tool does not
        write and has no policy of its own. ``source_max_retries`` and ``source_retry``
        take the runtime's place for the tools of a source (a policy, for idempotent
        tools only).
        """
        self._settings.check_open()
        given_input = guards_of(input_guardrails, "input_guardrails")
        given_output = guards_of(output_guardrails, "output_guardrails")
        check_seconds("timeout", timeout)
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
        with self._lock:
            if name in self._tools:
                raise ToolRegistrationError(
                    f"a tool named {name!r} is already registered; unregister it first or "
                    "give the new one another name",
                    tool_name=name,
                )
            self._tools[name] = Entry(
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
            self._generation += 1
        return descriptor

    def register_source(
        self,
        source: ToolSource,
        *,
        skip_invalid_schemas: bool | None,
        timeout: float | None,
        cache: CachePolicy | None = None,
        input_guardrails: Iterable[Guardrail] | None = None,
        output_guardrails: Iterable[Guardrail] | None = None,
        defer_loading: bool | None = None,
        max_retries: int | None = None,
        retry: RetryPolicy | None = None,
    ) -> list[ToolDescriptor]:
        """Register every tool of a source, all or nothing, and keep the source."""
        self._settings.check_open()
        if max_retries is not None:
            check_max_retries(max_retries, "max_retries")
        retry = default_policy(retry)
        guards = Guards(
            guards_of(input_guardrails, "input_guardrails"),
            guards_of(output_guardrails, "output_guardrails"),
        )
        skip = (
            bool(getattr(source, "skip_invalid_schemas", False))
            if skip_invalid_schemas is None
            else skip_invalid_schemas
        )
        check_seconds("timeout", timeout)
        if defer_loading is None and getattr(source, "defer_loading", False) is True:
            defer_loading = True  # the source defers all its tools; else each tool decides
        entry = _SourceEntry(
            source, [], skip, timeout, cache, guards, defer_loading, max_retries, retry
        )
        registered = self._register_all(entry, _warn_skipped)
        with self._lock:
            entry.names = [d.name for d in registered]
            self._sources.append(entry)
        return registered

    def unregister(self, name: str) -> ToolDescriptor:
        """Remove a tool (see the façade)."""
        with self._lock:
            entry = self._tools.pop(name, None)
            self._generation += 1
        if entry is None:
            raise ToolNotFoundError(f"no tool named {name!r} is registered", tool_name=name)
        self._retired(name)
        return entry.descriptor

    def refresh_stale_sources(self) -> None:
        """Register afresh the tools of every source that says its list changed."""
        if not self._sources:
            return
        retired: list[str] = []
        with self._lock:
            stale = [entry for entry in self._sources if getattr(entry.source, "stale", False)]
            for entry in stale:
                old = {name: self._tools.pop(name, None) for name in entry.names}
                self._generation += 1
                try:
                    registered = self._register_all(entry, _log_skipped)
                except Exception as exc:
                    # The old tools stay unknown rather than wrong; the source is
                    # asked again before the next plan.
                    entry.names = []
                    _log.warning("source.refresh_failed", source=repr(entry.source), error=str(exc))
                    registered = []
                entry.names = [d.name for d in registered]
                # A tool the source gave again as the same object stays active in
                # open plans; a new object is activated there before it runs.
                for name, was in old.items():
                    now = self._tools.get(name)
                    if was is not None and (now is None or now.instance is not was.instance):
                        retired.append(name)
        for name in retired:
            self._retired(name)

    def close_sources(self) -> None:
        """Call ``close()`` on every source that has one, once; an error is logged."""
        with self._lock:
            sources, self._sources = self._sources, []
        for entry in sources:
            close = getattr(entry.source, "close", None)
            if callable(close):
                try:
                    close()
                except Exception as exc:
                    _log.warning("source.close_failed", source=repr(entry.source), error=str(exc))

    def _register_all(
        self, entry: _SourceEntry, on_skip: Callable[[str], None]
    ) -> list[ToolDescriptor]:
        registered: list[ToolDescriptor] = []
        try:
            for instance in entry.source.tools():
                try:
                    registered.append(
                        self.register(
                            instance,
                            timeout=entry.timeout,
                            source_cache=entry.cache,
                            source_guards=entry.guards,
                            defer_loading=entry.defer,
                            source_max_retries=entry.max_retries,
                            source_retry=entry.retry,
                        )
                    )
                except ToolSchemaValidationError as error:
                    if not entry.skip:
                        raise
                    on_skip(f"tool {error.tool_name!r} was skipped: {error}")
        except BaseException:
            for descriptor in registered:
                self.unregister(descriptor.name)
            raise
        return registered


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


def _warn_skipped(message: str) -> None:
    warn_at_caller(ToolSkippedWarning(message))


def _log_skipped(message: str) -> None:
    _log.warning("source.tool_skipped", detail=message)
