"""The objects handed to `ToolRuntime` (and to `OpenTelemetry`) are refused when they cannot work."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from toolcycle import NullTracer, ResultCache, ToolRuntime
from toolcycle.approvals import MemoryApprovalLedger
from toolcycle.otel import OpenTelemetry


def test_a_folder_given_as_approval_ledger_is_refused_with_the_file_ledger_to_use() -> None:
    """A path is not a ledger: the message names FileApprovalLedger with that path."""
    with pytest.raises(TypeError, match=r"FileApprovalLedger\('/tmp/claims'\)"):
        ToolRuntime(approval_ledger="/tmp/claims")  # type: ignore[arg-type]


def test_a_function_given_as_tracer_is_refused_with_the_listener_to_use() -> None:
    """``tracer=print`` would fail at the first call; it points to add_trace_listener."""
    with pytest.raises(TypeError, match=r"tracer must be .*record.*add_trace_listener"):
        ToolRuntime(tracer=print)  # type: ignore[arg-type]


def test_the_instrumentation_class_is_refused_in_place_of_an_instance() -> None:
    """Its hooks would fail on every call, only logged: no span would ever be made."""
    with pytest.raises(TypeError, match=r"instance, got the class OpenTelemetry"):
        ToolRuntime(instrumentation=OpenTelemetry)  # type: ignore[arg-type]


def test_an_instrumentation_without_hooks_is_refused() -> None:
    """An object with neither hook is named with the methods it lacks."""
    with pytest.raises(TypeError, match=r"no call_started or stage_started method"):
        ToolRuntime(instrumentation=object())  # type: ignore[arg-type]


def test_an_exporter_given_as_tracer_provider_is_refused_with_how_to_wire_it() -> None:
    """The exporter goes into a provider's span processor, which the message shows."""
    with pytest.raises(TypeError, match=r"got InMemorySpanExporter; .*add_span_processor"):
        OpenTelemetry(tracer_provider=InMemorySpanExporter())  # type: ignore[arg-type]


def test_a_result_cache_that_is_no_store_is_refused_with_how_to_bound_one() -> None:
    """A dict of bounds is not a store; the message shows the ResultCache call."""
    with pytest.raises(TypeError, match=r"ResultCache\(max_entries=\.\.\., max_bytes=\.\.\.\)"):
        ToolRuntime(result_cache={"max_entries": 3})  # type: ignore[arg-type]


@pytest.mark.parametrize("workers", ["4", 0, True, 2.5])
def test_max_workers_must_be_a_whole_number_of_threads(workers: object) -> None:
    """A pool size that is text or below 1 is refused before the pool is needed."""
    with pytest.raises(ValueError, match=r"max_workers must be a whole number of threads"):
        ToolRuntime(max_workers=workers)  # type: ignore[arg-type]


def test_fitting_objects_are_kept_even_an_empty_store() -> None:
    """An empty ResultCache is falsy (it has a length) and is still the one used."""
    store = ResultCache(max_entries=2)
    with ToolRuntime(
        tracer=NullTracer(), approval_ledger=MemoryApprovalLedger(), result_cache=store
    ) as runtime:
        assert runtime.result_cache is store
