"""The tool registry: register tools and sources, refresh stale sources, look tools up."""

from __future__ import annotations

import asyncio
import inspect
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from toolcycle._warnings import warn_at_caller
from toolcycle.errors import (
    ToolNotFoundError,
    ToolRegistrationError,
    ToolSchemaValidationError,
    ToolSkippedWarning,
    cut_error_text,
)
from toolcycle.runtime._guardset import Guards, guards_of
from toolcycle.runtime._limits import check_seconds
from toolcycle.runtime._preparing import ToolPreparer
from toolcycle.runtime._retries import check_max_retries, default_policy
from toolcycle.tracing import get_logger

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from toolcycle.guardrails import Guardrail
    from toolcycle.models import ToolDescriptor
    from toolcycle.protocols import ToolInstance, ToolSource
    from toolcycle.result_cache import CachePolicy, ResultCache
    from toolcycle.retries import RetryPolicy
    from toolcycle.runtime._settings import Settings
    from toolcycle.runtime._shared import Entry
    from toolcycle.validation import SchemaCompiler

__all__ = ["ToolRegistry"]

_log = get_logger("toolcycle.runtime")


@dataclass(slots=True, eq=False)
class _SourceEntry:
    """A registered source, how to register its tools, and what it registered."""

    source: ToolSource
    skip: bool
    timeout: float | None
    cache: CachePolicy | None
    guards: Guards  # the source's guardrails, for every tool it yields
    defer: bool | None
    max_retries: int | None  # for its tools that give none of their own
    retry: RetryPolicy | None  # for its idempotent tools that give none of their own
    entries: dict[str, Entry] = field(default_factory=dict)  # what it registered, by name
    due: bool = False  # its last refresh failed: the next plan refreshes it again
    listing: bool = False  # a thread is listing it for a refresh now
    version: int = 0  # changes with its registration; a refresh begun before is dropped


class ToolRegistry:
    """Every registered tool, compiled once, and the sources they came from.

    Lookups by name read a plain dict without a lock (a dict read is atomic);
    changes take the registry's lock, but never while a source is listed.

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
        self._settings = settings
        self._preparer = ToolPreparer(compiler, settings, results)
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
        self, instance: ToolInstance | Callable[..., Any], **options: Any
    ) -> ToolDescriptor:
        """Discover the tool once, compile its schemas and keep it (see the façade).

        ``options`` are those of `ToolPreparer.prepare` that the façade's ``register`` takes.
        """
        entry = self._preparer.prepare(instance, **options)
        name = entry.descriptor.name
        with self._lock:
            if name in self._tools:
                raise _taken(name)
            self._tools[name] = entry
            self._generation += 1
        return entry.descriptor

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
        """Register every tool of a source, all or nothing, and keep the source.

        A source registered again replaces its earlier registration (whose tools
        must have been unregistered, or their names would clash).
        """
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
            source, skip, timeout, cache, guards, defer_loading, max_retries, retry
        )
        listed = self._prepared(entry, source.tools(), _warn_skipped)
        with self._lock:
            self._settings.check_open()
            name = self._clash(listed, entry.entries)
            if name is not None:
                raise _taken(name)
            self._apply(entry, listed)
            kept = []
            for earlier in self._sources:
                if earlier.source is source:
                    earlier.version += 1  # a refresh of it under way is dropped
                else:
                    kept.append(earlier)
            self._sources = [*kept, entry]
        return [tool.descriptor for tool in listed]

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
        """Register afresh the tools of every source that says its list changed.

        Each source is listed without the lock, so a slow listing holds up no other
        source, plan or call; a source another thread is listing already is left to
        it. Only applying a listing takes the lock, and only if the source's
        registration did not change meanwhile.
        """
        if not self._sources:
            return
        with self._lock:
            due = [(entry, entry.version) for entry in self._sources if _due(entry)]
            for entry, _ in due:
                entry.listing = True
        try:
            for entry, version in due:
                self._refresh(entry, version)
        finally:
            with self._lock:
                for entry, _ in due:
                    entry.listing = False

    def refresh_due(self) -> bool:
        """Whether a source waits for a refresh (read without the lock: a hint)."""
        return any(_due(entry) for entry in self._sources)  # replaced, never changed in place

    def close_sources(self) -> None:
        """Call ``close()`` on every source that has one, once; an error is logged."""
        for source in self._take_sources():
            close = getattr(source, "close", None)
            if callable(close):
                _close(source, close)

    async def aclose_sources(self) -> None:
        """Async twin of `close_sources`: a source's ``async def aclose()`` is awaited.

        A source without one has its ``close()`` called in a worker thread, so that
        a slow close does not hold up the event loop.
        """
        for source in self._take_sources():
            aclose = getattr(source, "aclose", None)
            close = getattr(source, "close", None)
            if inspect.iscoroutinefunction(aclose):
                try:
                    await aclose()
                except Exception as exc:
                    _close_failed(source, exc)
            elif callable(close):
                await asyncio.to_thread(_close, source, close)

    def _take_sources(self) -> list[ToolSource]:
        """Forget every source, for closing; a refresh under way is dropped."""
        with self._lock:
            sources, self._sources = self._sources, []
            for entry in sources:
                entry.version += 1
        return [entry.source for entry in sources]

    def _refresh(self, entry: _SourceEntry, version: int) -> None:
        """List one source (without the lock) and apply its new list if still current."""
        listed: list[Entry] | None = None
        failure: str | None = None
        unlisted = False
        try:
            instances = list(entry.source.tools())
        except Exception as exc:
            unlisted, failure = True, str(exc)
        else:
            try:
                listed = self._prepared(entry, instances, _log_skipped)
            except Exception as exc:
                failure = str(exc)
        retired: list[str] = []
        with self._lock:
            if entry.version != version:
                return  # closed or registered afresh meanwhile: not this refresh's to apply
            if listed is not None:
                name = self._clash(listed, entry.entries)
                if name is None:
                    retired = self._apply(entry, listed)
                else:
                    failure = (
                        f"its new list has a tool named {name!r}, which another source "
                        "or register() holds already"
                    )
            elif unlisted:
                # Not listed: its old tools go rather than stay out of date.
                retired = self._apply(entry, [])
            # A list that cannot be applied leaves the old tools; either way it is
            # refreshed again before the next plan.
            entry.due = failure is not None
        if failure is not None:
            _log.warning(
                "source.refresh_failed", source=repr(entry.source), error=cut_error_text(failure)
            )
        for name in retired:
            self._retired(name)

    def _prepared(
        self,
        entry: _SourceEntry,
        instances: Iterable[ToolInstance],
        on_skip: Callable[[str], None],
    ) -> list[Entry]:
        """The entries of a source's tools, none registered yet; skips bad schemas if told."""
        prepared: list[Entry] = []
        for instance in instances:
            try:
                prepared.append(
                    self._preparer.prepare(
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
        return prepared

    def _clash(self, listed: list[Entry], owned: Mapping[str, Entry]) -> str | None:
        """The first listed name registered already, other than as ``owned``, or repeated."""
        seen: set[str] = set()
        for tool in listed:
            name = tool.descriptor.name
            held = self._tools.get(name)
            if name in seen or (held is not None and owned.get(name) is not held):
                return name
            seen.add(name)
        return None

    def _apply(self, entry: _SourceEntry, listed: list[Entry]) -> list[str]:
        """Make ``listed`` the source's tools (under the lock); the names to retire.

        A name the source no longer owns (unregistered, maybe registered again by
        someone else) is left alone. A tool it gives again as the same object stays
        active in open plans; a new object is activated there before it runs.
        """
        owned = {n: was for n, was in entry.entries.items() if self._tools.get(n) is was}
        fresh = {tool.descriptor.name: tool for tool in listed}
        for name in owned.keys() - fresh.keys():
            del self._tools[name]
        self._tools.update(fresh)  # in place: a lookup meanwhile finds the old or the new
        self._generation += 1
        entry.entries = fresh
        entry.version += 1
        return [
            name
            for name, was in owned.items()
            if name not in fresh or fresh[name].instance is not was.instance
        ]


def _close(source: ToolSource, close: Callable[[], object]) -> None:
    try:
        close()
    except Exception as exc:
        _close_failed(source, exc)


def _close_failed(source: ToolSource, exc: Exception) -> None:
    _log.warning("source.close_failed", source=repr(source), error=str(exc))


def _due(entry: _SourceEntry) -> bool:
    return not entry.listing and (entry.due or bool(getattr(entry.source, "stale", False)))


def _taken(name: str) -> ToolRegistrationError:
    return ToolRegistrationError(
        f"a tool named {name!r} is already registered; unregister it first or "
        "give the new one another name",
        tool_name=name,
    )


def _warn_skipped(message: str) -> None:
    warn_at_caller(ToolSkippedWarning(message))


def _log_skipped(message: str) -> None:
    _log.warning("source.tool_skipped", detail=message)
