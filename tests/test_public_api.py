"""The public API is pinned: exported names, module __all__s, and import direction."""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import inspect
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import toolcycle

SRC = Path(toolcycle.__file__).parent
ARCHITECTURE = Path(__file__).resolve().parent.parent / "docs" / "architecture.md"

EXPECTED = {
    "PlanHost",
    "PlanResumeError",
    "ApprovalDecision",
    "Audio",
    "ContentPart",
    "File",
    "Image",
    "ResourceLink",
    "Text",
    "ToolReturn",
    "ApprovalRecord",
    "ApprovalRequest",
    "Resumption",
    "AsyncFunctionTool",
    "BoundResource",
    "CachePolicy",
    "CallStream",
    "CancellationToken",
    "Change",
    "Checkpoint",
    "ConcurrentCallError",
    "FunctionTool",
    "Guardrail",
    "GuardrailCall",
    "GuardrailDecision",
    "GuardrailRecord",
    "GuardrailTripped",
    "Instrumentation",
    "ModelRetry",
    "NullTracer",
    "PendingApproval",
    "ProgressEvent",
    "ProviderFormat",
    "RedactionPolicy",
    "RetryAttempt",
    "RetryPolicy",
    "ResultCache",
    "RollbackConflictError",
    "RollbackReport",
    "RollbackUnsupportedError",
    "SourceKind",
    "StructlogTracer",
    "Tool",
    "ToolCall",
    "ToolAccessDeniedError",
    "ToolActivationError",
    "ToolApprovalError",
    "ToolCancelledError",
    "ToolCapability",
    "ToolCheckpointRequiredError",
    "ToolDeactivationError",
    "ToolDefinitionError",
    "ToolDefinitionWarning",
    "ToolDescriptor",
    "ToolExecutionContext",
    "ToolExecutionError",
    "ToolExecutionTrace",
    "ToolFailed",
    "ToolInterruptedError",
    "ToolInstance",
    "ToolLifecycleCache",
    "ToolNotActivatedError",
    "ToolNotFoundError",
    "ToolOutputError",
    "ToolRegistrationError",
    "ToolResult",
    "ToolRuntime",
    "ToolRuntimeError",
    "ToolSchemaValidationError",
    "ToolSearchMode",
    "ToolSkippedWarning",
    "ToolSource",
    "TraceListener",
    "TraceStatus",
    "Tracer",
    "UndoOutcome",
    "Validation",
    "ValidationIssue",
    "ValidationLimits",
    "__version__",
    "current_resumption",
    "tool",
    "wrap",
}

# Which toolcycle modules each module may import (the layers of the house style).
ALLOWED = {
    "_version": set(),
    "_types": set(),
    "_lazy_trace": set(),
    "_span_payloads": set(),
    "_value": set(),
    "_bounds": {"errors"},
    "_plain": set(),
    "_construct": {"_lazy_trace", "models"},  # models for annotations only
    "runtime._recorder": {
        "_bounds",
        "_lazy_trace",
        "_types",
        "errors",
        "models",
        "tracing",
        "_construct",
        "runtime._record",
    },
    "runtime._record": {"models"},  # for annotations only, under TYPE_CHECKING
    "validation._json": set(),
    "_docstrings": set(),
    "_warnings": set(),
    # _value is the base of its frozen dataclasses; the rest for annotations only.
    "guardrails": {"_value", "content", "context", "models"},
    # guardrails for annotations only; _tool_options imported where a helper is checked
    "runtime._guardset": {"_tool_options", "guardrails"},
    "runtime._guards": {
        "content",
        "errors",
        "execution._invoke",  # for annotations only, under TYPE_CHECKING
        "models",
        "runtime._caching",  # for annotations only, under TYPE_CHECKING
        "runtime._guardrun",
        "runtime._rich",
        "runtime._interfaces",
        "runtime._settings",
        "runtime._shared",
        "runtime._steps",
    },
    "runtime._guardrun": {
        "_construct",
        "content",  # for annotations only, under TYPE_CHECKING
        "errors",
        "execution._invoke",
        "guardrails",
        "models",
        "runtime._guardset",  # for annotations only, under TYPE_CHECKING
        "runtime._shared",
        "runtime._steps",
    },
    "_passthrough": set(),
    "_signatures": {"_passthrough", "cancellation", "content", "context", "errors", "models"},
    "callables": {
        "_docstrings",
        "_passthrough",
        "guardrails",
        "_signatures",
        "_tool_options",
        "_warnings",
        "cancellation",
        "context",
        "errors",
        "models",
        "retries",  # for annotations only, under TYPE_CHECKING
        "result_cache",  # for annotations only, under TYPE_CHECKING
    },
    # guardrails and result_cache for annotations only, under TYPE_CHECKING
    "_tool_options": {"_bounds", "errors", "guardrails", "result_cache", "retries"},
    "result_cache": {
        "_bounds",
        "_types",
        "_value",
    },  # _types for annotations only, under TYPE_CHECKING
    "runtime._caching": {
        "_construct",
        "content",  # for annotations only, under TYPE_CHECKING
        "context",
        "errors",
        "models",
        "result_cache",
        "runtime._recorder",
        "runtime._record",
        "runtime._results",
        "tracing",
    },
    "retries": {"_bounds"},
    "_validation_records": set(),
    "_trace_records": set(),
    "errors": {"_trace_records", "_validation_records"},  # annotations only, under TYPE_CHECKING
    "models": {
        "_trace_records",
        "_validation_records",
        "agent._messages",
        "agent._parts",
        "content",
        "errors",
        "_lazy_trace",
    },
    "agent._messages": {"agent._names"},
    "agent._parts": {"agent._messages", "content"},
    "content": {"_value"},
    "redaction": {"_secret_text", "_value", "validation._applicators"},
    "_secret_text": set(),
    "validation._resources": set(),
    "validation._applicators": {"validation._resources"},
    "agent._names": set(),
    "agent._schemas": set(),
    "agent._calls": {"validation._json", "models", "_construct"},
    "agent._definitions": {"_plain", "agent._names", "agent._schemas", "models"},
    "agent._dispatch": {"agent._names", "errors", "models"},
    "agent._search": {"models"},  # for annotations only, under TYPE_CHECKING
    "agent._deferred": {"agent._definitions", "agent._search", "models"},
    "agent._batch": {"cancellation", "errors", "models"},
    "cancellation": {"errors"},
    "_nofollow": set(),
    "_confined": {"_nofollow"},
    "_undo_handler": {"models"},
    "_file_undo": {"_confined", "_nofollow", "_undo_handler", "models"},
    "rollback": {"_file_undo", "_history", "_nofollow", "_undo_handler", "models"},
    "_history": {"models"},
    "_scope": {"cancellation", "models"},  # models for annotations only, under TYPE_CHECKING
    "context": {
        "_bounds",
        "_history",
        "_scope",
        "_value",
        "approvals",
        "cancellation",
        "durable",
        "models",
        "rollback",
    },
    "durable": {"models"},  # for annotations only, under TYPE_CHECKING
    "_approval_rule": {"models"},  # for annotations only, under TYPE_CHECKING
    # models for annotations only, under TYPE_CHECKING
    "approvals": {"_approval_rule", "_value", "models"},
    "agent._approve": {"approvals", "context", "errors", "models", "redaction"},
    "protocols": {"context", "models"},
    "validation._ecma": set(),
    "validation._patterns": {"validation._ecma"},
    "validation._wording": set(),
    "validation._issues": {"validation._json", "models"},
    "validation._readers": {"validation._issues", "validation._patterns", "validation._wording"},
    "validation._backends": {
        "validation._issues",
        "validation._json",
        "validation._readers",
        "_types",
        "models",
    },
    "validation._re2_keywords": {"validation._ecma", "validation._patterns"},
    "validation._aligned": set(),
    "validation._survey": {"validation._backends", "validation._json", "validation._patterns"},
    "validation._compiled": {
        "validation._backends",
        "validation._json",
        "validation._limits",  # for annotations only, under TYPE_CHECKING
        "errors",
        "models",
    },
    "validation._compiler": {
        "validation._backends",
        "validation._compiled",
        "validation._aligned",
        "validation._json",
        "validation._limits",
        "validation._re2_keywords",
        "validation._survey",
        "_types",
        "errors",
        "models",
    },
    # Subpackages: an __init__ holds a docstring (validation's re-exports its public API).
    "agent": set(),
    "execution": set(),
    "validation": {"validation._compiled", "validation._compiler", "validation._limits"},
    "validation._limits": {"_value"},
    "tracing": {"_types", "errors", "models"},
    "capabilities": {"context", "errors", "models"},
    "execution._portal": {"errors"},
    "execution._threads": {"execution._portal"},
    "execution._pool": set(),
    "execution._invoke": {
        "execution._pool",
        "execution._portal",
        "execution._threads",
        "cancellation",
        "errors",
    },
    # _scope and _threads for annotations only
    "execution._inflight": {"_scope", "cancellation", "execution._threads"},
    "execution._single_flight": {"protocols"},  # for annotations only, under TYPE_CHECKING
    "cache": {
        "execution._inflight",
        "execution._single_flight",
        "context",
        "errors",
        "protocols",
    },
    "execution._lifecycle": {
        "execution._invoke",
        "execution._portal",
        "execution._single_flight",  # for annotations only, under TYPE_CHECKING
        "execution._threads",
        "context",  # for annotations only, under TYPE_CHECKING
        "errors",
        "instrumentation",  # for annotations only, under TYPE_CHECKING
        "protocols",  # for annotations only, under TYPE_CHECKING
        "tracing",
    },
    "execution._activation": {
        "execution._invoke",
        "execution._lifecycle",  # for annotations only, under TYPE_CHECKING
        "execution._portal",
        "execution._single_flight",
        "execution._threads",
        "cache",  # for annotations only, under TYPE_CHECKING
        "context",
        "errors",
        "protocols",
        "tracing",
    },
    "runtime._rich": {"content", "errors"},
    # models for the refusals it builds; the rest for annotations only, under TYPE_CHECKING
    "runtime._arguments": {
        "models",
        "redaction",
        "runtime._record",
        "runtime._recorder",
        "validation",
    },
    "runtime._results": {
        "agent._messages",
        "runtime._rich",
        "validation._json",
        "context",
        "errors",
        "models",
        "redaction",
        "tracing",
        "validation",
        "runtime._recorder",
        "runtime._record",
        "_construct",
    },
    "runtime._retries": {
        "_bounds",
        "errors",
        "execution._invoke",  # for annotations only, under TYPE_CHECKING
        "execution._portal",
        "execution._threads",
        "models",
        "retries",
        "runtime._results",
        "cancellation",  # for annotations only
        "context",  # for annotations only
        "runtime._recorder",  # for annotations only
        "runtime._record",  # for annotations only
        "runtime._shared",  # for annotations only
    },
    # The runtime's parts share `_shared`, `_settings` and `_interfaces`; `_steps` serves
    # the pipeline, approvals and dispatcher; the parts never import one another, and only
    # the façade sees them all.
    "runtime._durable": {
        "agent._dispatch",  # a refused call of a model answered as a failed result
        "approvals",  # the call's fingerprint, recorded with its result
        "durable",
        "errors",
        "models",
        "runtime._results",
        "runtime._shared",
        "runtime._steps",
    },
    "hosts": {"hosts._dbos", "hosts._process", "hosts._ray", "hosts._tools"},
    "hosts._dbos": {"context", "errors", "hosts._dbos_record", "models"},
    "hosts._dbos_record": {"context", "errors", "models"},
    "runtime._limits": {"_bounds"},
    "runtime._given": {"_bounds", "result_cache"},
    # Entry and Call; the rest for annotations only, under TYPE_CHECKING
    "runtime._shared": {
        "_scope",
        "tracing",
        "context",
        "execution._inflight",
        "execution._portal",
        "instrumentation",
        "models",
        "protocols",
        "retries",
        "runtime._caching",
        "runtime._guardset",
        "runtime._record",
        "validation",
    },
    # errors and tracing for Settings; the rest for annotations only, under TYPE_CHECKING
    "runtime._settings": {
        "approvals",
        "cancellation",
        "durable",
        "errors",
        "execution._portal",
        "models",
        "protocols",
        "redaction",
        "retries",
        "runtime._guardset",
        "tracing",
    },
    # The parts' protocols: for annotations only, under TYPE_CHECKING
    "runtime._interfaces": {"context", "models", "runtime._shared"},
    # Makes a tool's Entry for the registry: discovered, compiled, its policies resolved.
    "runtime._preparing": {
        "_construct",
        "callables",
        "errors",
        "guardrails",  # for annotations only, under TYPE_CHECKING
        "models",
        "protocols",
        "result_cache",  # for annotations only, under TYPE_CHECKING
        "retries",  # for annotations only, under TYPE_CHECKING
        "runtime._caching",
        "runtime._guardset",
        "runtime._limits",
        "runtime._retries",
        "runtime._settings",  # for annotations only, under TYPE_CHECKING
        "runtime._shared",
        "validation",  # for annotations only, under TYPE_CHECKING
    },
    "runtime._registry": {
        "_warnings",
        "errors",
        "guardrails",  # for annotations only, under TYPE_CHECKING
        "models",  # for annotations only, under TYPE_CHECKING
        "protocols",  # for annotations only, under TYPE_CHECKING
        "result_cache",  # for annotations only, under TYPE_CHECKING
        "retries",  # for annotations only, under TYPE_CHECKING
        "runtime._guardset",
        "runtime._limits",
        "runtime._preparing",
        "runtime._retries",
        "runtime._settings",  # for annotations only, under TYPE_CHECKING
        "runtime._shared",  # for annotations only, under TYPE_CHECKING
        "tracing",
        "validation",  # for annotations only, under TYPE_CHECKING
    },
    "runtime._plans": {
        "_scope",
        "runtime._limits",
        "protocols",
        "execution._inflight",
        "execution._lifecycle",  # for annotations only, under TYPE_CHECKING
        "execution._portal",
        "cache",
        "cancellation",
        "context",
        "errors",
        "runtime._settings",
        "runtime._shared",
        "tracing",
    },
    # A call's observer and a resumed call's logged decision, for the steps; errors,
    # _results and tracing at run time, the rest for annotations only, under TYPE_CHECKING
    "runtime._observing": {
        "errors",
        "instrumentation",
        "models",
        "runtime._interfaces",
        "runtime._results",
        "runtime._settings",
        "runtime._shared",
        "tracing",
    },
    "runtime._steps": {
        "runtime._arguments",
        "runtime._caching",
        "execution._inflight",
        "execution._threads",  # for annotations only, under TYPE_CHECKING
        "runtime._observing",
        "runtime._results",
        "runtime._retries",
        "cache",
        "capabilities",
        "context",
        "errors",
        "instrumentation",
        "models",
        "runtime._interfaces",
        "runtime._settings",
        "runtime._shared",
        "tracing",
        "runtime._recorder",
    },
    "runtime._approvals": {
        "_approval_rule",
        "agent._approve",
        "execution._invoke",
        "approvals",
        "errors",
        "models",
        "runtime._settings",  # for annotations only, under TYPE_CHECKING
        "runtime._shared",  # for annotations only, under TYPE_CHECKING
        "runtime._steps",  # for annotations only, under TYPE_CHECKING
        "tracing",
    },
    "runtime._resume": {
        "runtime._limits",
        "agent._approve",
        "approvals",
        "context",
        "errors",
        "models",  # for annotations only, under TYPE_CHECKING
        "runtime._interfaces",
        "runtime._settings",
        "runtime._shared",
        "runtime._steps",  # for annotations only, under TYPE_CHECKING
        "tracing",
    },
    "runtime._hosting": {"protocols", "runtime._shared"},  # for annotations only
    "runtime._pipeline": {
        "_scope",
        "runtime._limits",
        "runtime._durable",
        "runtime._guards",
        "runtime._hosting",
        "runtime._running",
        "runtime._screening",
        "execution._activation",
        "agent._dispatch",
        "execution._invoke",
        "context",
        "models",
        "runtime._interfaces",
        "runtime._settings",
        "runtime._shared",
        "runtime._steps",
    },
    # The call of a tool that is not plain; the pipeline builds it.
    "runtime._screening": {
        "_scope",
        "execution._inflight",  # for annotations only, under TYPE_CHECKING
        "models",
        "runtime._guards",  # for annotations only, under TYPE_CHECKING
        "runtime._interfaces",  # for annotations only, under TYPE_CHECKING
        "runtime._running",  # for annotations only, under TYPE_CHECKING
        "runtime._shared",
        "runtime._steps",  # for annotations only, under TYPE_CHECKING
    },
    # Steps 3 and 5, the two a call waits in; the pipeline builds it.
    "runtime._running": {
        "runtime._guards",
        "execution._activation",
        "execution._invoke",
        "execution._portal",
        "execution._threads",
        "runtime._results",
        "runtime._retries",
        "errors",
        "models",
        "runtime._settings",
        "runtime._shared",
        "runtime._steps",
    },
    "runtime._search": {
        "_bounds",
        "_plain",
        "agent._deferred",
        "agent._dispatch",
        "agent._names",
        "agent._search",
        "capabilities",
        "context",
        "errors",
        "execution._threads",  # builds an index off the caller's event loop
        "models",
        "runtime._interfaces",
        "runtime._shared",
        "runtime._steps",
    },
    "runtime._dispatcher": {
        "_bounds",
        "agent._batch",
        "agent._calls",
        "agent._dispatch",
        "execution._invoke",
        "agent._names",
        "agent._schemas",
        "context",
        "errors",
        "models",
        "runtime._search",
        "runtime._interfaces",
        "runtime._settings",
        "runtime._shared",
        "runtime._steps",
        "validation",
        "_lazy_trace",
        "_construct",
    },
    # Closing, sync or async: the parts it drives for annotations only, under TYPE_CHECKING
    "runtime._closing": {
        "_scope",
        "cache",
        "errors",
        "execution._invoke",
        "runtime._plans",
        "runtime._registry",
        "runtime._settings",
        "runtime._shared",
    },
    "runtime._facade": {
        "runtime._closing",
        "runtime._given",
        "runtime._limits",
        "guardrails",
        "runtime._guardset",
        "execution._activation",
        "execution._invoke",
        "execution._lifecycle",
        "_types",
        "approvals",
        "cache",
        "cancellation",
        "context",
        "errors",
        "instrumentation",
        "models",
        "protocols",
        "redaction",
        "result_cache",
        "runtime._approvals",
        "runtime._dispatcher",
        "runtime._pipeline",
        "runtime._plans",
        "runtime._registry",
        "runtime._resume",
        "runtime._retries",
        "runtime._settings",
        "runtime._steps",
        "retries",
        "runtime._stream",
        "tracing",
        "validation",
        "validation._compiler",
        "runtime._recorder",
        "runtime._record",
    },
    "runtime": {"runtime._facade", "runtime._stream"},
    "runtime._stream": {"_bounds", "models"},  # for annotations only, under TYPE_CHECKING
    "instrumentation": {"context", "models"},  # for annotations only, under TYPE_CHECKING
    "testing": {""},
    # Plan hosts: the public API ("") and one another.
    "hosts._base": {"", "hosts._child", "hosts._proxy", "hosts._tools"},  # _child for annotations
    "hosts._child": {"hosts._tools", "hosts._worker"},
    # errors: its public shown_value, for a refused setting's message.
    "hosts._process": {"", "errors", "hosts._base", "hosts._child", "hosts._tools"},
    "hosts._proxy": {"", "hosts._child", "hosts._tools"},  # _child for annotations only
    "hosts._ray": {
        "",
        "errors",
        "hosts._base",
        "hosts._child",
        "hosts._process",
        "hosts._ray_actor",
        "hosts._tools",
    },
    "hosts._ray_actor": {"", "hosts._remote_stage", "hosts._stages"},
    "hosts._remote_stage": {"", "hosts._tools"},  # _tools for annotations only
    "hosts._tools": {""},
    "hosts._stages": set(),
    # _tools for annotations only
    "hosts._worker": {"", "hosts._remote_stage", "hosts._stages", "hosts._tools"},
    "cli": {""},
    "_cli_tools": {""},
    "_cli_sources": {""},
    "__main__": {"cli"},
    # An integration layer: the package's public names ("" is toolcycle itself) and the
    # public instrumentation protocols and the cut of an error's text, never a private module
    # but its own span observers and their payload text.
    "_otel_spans": {"", "errors", "instrumentation", "_span_payloads"},  # "" for annotations
    "otel": {"", "errors", "instrumentation", "_otel_spans"},
    "__init__": {
        "content",
        "_version",
        "approvals",
        "instrumentation",
        "cache",
        "redaction",
        "retries",
        "result_cache",
        "callables",
        "rollback",
        "cancellation",
        "context",
        "errors",
        "guardrails",
        "models",
        "protocols",
        "runtime",
        "tracing",
        "validation",
    },
}


def test_all_matches_the_expected_names() -> None:
    """toolcycle.__all__ is exactly the documented public names, sorted."""
    assert set(toolcycle.__all__) == EXPECTED
    assert list(toolcycle.__all__) == sorted(toolcycle.__all__)
    for name in toolcycle.__all__:
        assert hasattr(toolcycle, name)


def test_the_runtime_closes_alike_from_sync_and_async_code() -> None:
    """close() and ``with``, aclose() and ``async with``: the pinned signatures of each pair."""
    pinned = {
        "close": "(self) -> 'None'",
        "__enter__": "(self) -> 'Self'",
        "__exit__": "(self, *exc_info: 'object') -> 'None'",
        "aclose": "(self) -> 'None'",
        "__aenter__": "(self) -> 'Self'",
        "__aexit__": "(self, *exc_info: 'object') -> 'None'",
    }
    for name, signature in pinned.items():
        method = getattr(toolcycle.ToolRuntime, name)
        assert str(inspect.signature(method)) == signature, name
        assert inspect.iscoroutinefunction(method) == name.startswith(("a", "__a")), name


def test_version_is_the_installed_distributions() -> None:
    """__version__ comes from one file that the build also reads, so the two agree."""
    assert toolcycle.__version__ == importlib.metadata.version("toolcycle")


def _modules() -> list[str]:
    return [
        info.name
        for info in pkgutil.walk_packages([str(SRC)], prefix="toolcycle.")
        if not info.name.startswith(("toolcycle.sources.", "toolcycle.adapters."))
    ]


@pytest.mark.parametrize("name", _modules())
def test_every_module_has_a_correct_all(name: str) -> None:
    """Each module's __all__ lists exactly its public, locally defined names."""
    module = importlib.import_module(name)
    exported = set(getattr(module, "__all__", ()))
    if name == "toolcycle.sources":
        assert exported == set()
        return
    for item in exported:
        assert hasattr(module, item), f"{name}.__all__ names missing {item}"
    defined = {
        key
        for key, value in vars(module).items()
        if not key.startswith("_")
        and getattr(value, "__module__", None) == name
        and (isinstance(value, type) or callable(value))
    }
    assert defined <= exported, f"{name} defines public names missing from __all__"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("toolcycle"):
            found.add(node.module.removeprefix("toolcycle").lstrip("."))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("toolcycle"):
                    found.add(alias.name.removeprefix("toolcycle").lstrip("."))
    return found


@pytest.mark.parametrize("module", sorted(ALLOWED))
def test_imports_point_down_the_layers(module: str) -> None:
    """A core module imports only the toolcycle modules below it."""
    path = SRC / f"{module.replace('.', '/')}.py"
    imported = _imports(path if path.exists() else path.with_suffix("") / "__init__.py")
    allowed = ALLOWED[module]
    if allowed == {""}:
        assert all(not name.startswith("sources") for name in imported)
        return
    assert imported <= allowed, f"{module} imports {imported - allowed}"


def test_every_core_module_has_an_entry_in_the_layer_map() -> None:
    """A new module cannot slip past the layer check: each one outside the edges is listed."""
    core = {
        str(path.relative_to(SRC).with_suffix("")).replace("/", ".").removesuffix(".__init__")
        for path in SRC.rglob("*.py")
        if not {"sources", "builtins", "adapters"} & set(path.relative_to(SRC).parts)
    }
    core = {"__init__" if name == "__init__" else name for name in core}
    assert core == set(ALLOWED), (
        f"unlisted: {sorted(core - set(ALLOWED))}; gone: {sorted(set(ALLOWED) - core)}"
    )


def _layers_list() -> tuple[set[str], dict[str, int]]:
    """The names of the "## Layers" code block of docs/architecture.md.

    Each line is a comma-separated list of module paths, then two spaces or more, then
    a description. A name without a folder shares the folder of the name before it:
    ``runtime/_shared, _settings`` is ``runtime._shared`` and ``runtime._settings``.
    Returns the names of the first line (the edges) and each other name's line number.
    """
    block = ARCHITECTURE.read_text(encoding="utf-8").split("## Layers", 1)[1].split("```")[1]
    lines: list[list[str]] = []
    for text in block.strip().splitlines():
        folder, names = "", []
        for name in text.strip().split("  ")[0].split(", "):
            if "/" in name:
                folder, _, name = name.partition("/")
            names.append(f"{folder}.{name}" if folder else name)
        lines.append(names)
    edges, *core = lines
    line: dict[str, int] = {}
    for number, names in enumerate(core, 1):
        for name in names:
            assert name not in line, f"{name} is on two lines of the Layers list: keep one"
            line[name] = number
    return set(edges), line


def test_the_architecture_page_lists_every_core_module_above_what_it_imports() -> None:
    """The Layers list of docs/architecture.md holds every core module, each above its imports."""
    edges, line = _layers_list()
    # The edges, and every module of their packages, count as line 0.
    position = {module: 0 for module in ALLOWED if module.split(".")[0] in edges} | line
    unknown = [
        f"{name} is in the list but not in ALLOWED: correct or remove it"
        for name in line
        if name not in ALLOWED
    ]
    missing = [
        f"{module} is missing: add it on a line above the modules it imports"
        for module in sorted(ALLOWED.keys() - position.keys())
    ]
    upward = [
        f"{module} imports {target}, listed on its line or above it: move {target} below it"
        for module in sorted(line.keys() & ALLOWED.keys())
        for target in sorted(name or "__init__" for name in ALLOWED[module])
        if target in position and position[target] <= line[module]
    ]
    problems = unknown + missing + upward
    assert not problems, "docs/architecture.md, ## Layers:\n" + "\n".join(problems)


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph(root: Path = SRC) -> dict[str, set[str]]:
    """Each module of the package at ``root`` and the modules of it that it imports.

    Every import statement counts, those under ``TYPE_CHECKING`` and inside functions
    too. ``from toolcycle.a import b`` points at ``toolcycle.a.b`` when that is a
    module, else at ``toolcycle.a``; relative imports are resolved. A module outside a
    package that imports one of its modules also depends on the package's ``__init__``,
    which Python runs first; a module inside the package does not (it is already running).
    """
    paths = {_module_name(path, root): path for path in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    kept = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*kept, *([node.module] if node.module else [])])
                for alias in node.names:
                    submodule = f"{base}.{alias.name}"
                    targets.add(submodule if submodule in paths else base)
        # Importing a.b.c from outside the package a.b first runs a.b's __init__.
        for target in list(targets):
            parent = target.rpartition(".")[0]
            while parent and not f"{name}.".startswith(f"{parent}."):
                targets.add(parent)
                parent = parent.rpartition(".")[0]
        graph[name] = {target for target in targets if target in paths and target != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles a depth-first walk meets, each as ``[a, b, ..., a]``."""
    found: list[list[str]] = []
    done: set[str] = set()
    for root in sorted(graph):
        if root in done:
            continue
        path: list[str] = [root]
        branches = [iter(sorted(graph[root]))]
        while branches:
            target = next(branches[-1], None)
            if target is None:
                done.add(path.pop())
                branches.pop()
            elif target in path:
                found.append([*path[path.index(target) :], target])
            elif target not in done:
                path.append(target)
                branches.append(iter(sorted(graph[target])))
    return found


def test_the_cycle_check_sees_type_checking_submodule_and_relative_imports(
    tmp_path: Path,
) -> None:
    """Cycles through TYPE_CHECKING, submodule, relative or package-__init__ imports are found."""
    files = {
        "__init__.py": "",
        "low.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.high import H\n",
        "high.py": "from pkg.low import L\n",
        "sub/__init__.py": "from pkg.sub import b\n",
        "sub/a.py": "from . import b\n",
        "sub/b.py": "from pkg.sub import a\n",
        "sub/c.py": "from ..low import L\nfrom pkg.sub import b\n",
        "deep/__init__.py": "from pkg.deep.x import X\n",
        "deep/x.py": "from pkg.top import T\n",
        "deep/y.py": "",
        "top.py": "from pkg.deep.y import Y\n",
    }
    for name, text in files.items():
        (tmp_path / "pkg" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "pkg" / name).write_text(text)
    graph = _import_graph(tmp_path / "pkg")
    assert graph["pkg.sub.c"] == {"pkg.low", "pkg.sub.b"}
    assert graph["pkg.top"] == {"pkg.deep", "pkg.deep.y"}  # deep's __init__ runs first
    assert _cycles(graph) == [
        ["pkg.deep", "pkg.deep.x", "pkg.top", "pkg.deep"],
        ["pkg.high", "pkg.low", "pkg.high"],
        ["pkg.sub.b", "pkg.sub.a", "pkg.sub.b"],
    ]


def test_the_import_graph_covers_every_package_of_toolcycle() -> None:
    """The real graph holds sources/, builtins/ and edges only TYPE_CHECKING makes."""
    graph = _import_graph()
    assert "toolcycle.models" in graph["toolcycle.approvals"]  # under TYPE_CHECKING only
    assert "toolcycle.sources.mcp._loop" in graph["toolcycle.sources.mcp._server"]
    assert "toolcycle.sources.skills._tools" in graph["toolcycle.sources.skills"]
    assert any(name.startswith("toolcycle.builtins.") for name in graph)


def test_no_module_takes_part_in_an_import_cycle() -> None:
    """No toolcycle module imports itself through others, in sources/ and builtins/ too."""
    cycles = _cycles(_import_graph())
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(cycle) for cycle in cycles)


def test_core_never_imports_sources_or_testing() -> None:
    """No core module imports toolcycle.sources, toolcycle.adapters or toolcycle.testing."""
    for path in SRC.rglob("*.py"):
        if path.stem in {"testing", "cli"}:
            continue
        if {"sources", "builtins", "adapters"} & set(path.relative_to(SRC).parts):
            continue
        for name in _imports(path):
            assert not name.startswith(("sources", "adapters", "testing")), (
                f"{path.name} imports {name}"
            )


def test_importing_sources_is_cheap() -> None:
    """toolcycle.sources holds a docstring only."""
    tree = ast.parse((SRC / "sources" / "__init__.py").read_text())
    assert len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr)


_DEFERRED = (
    "jsonschema",
    "referencing",
    "jsonschema_specifications",
    "structlog",
    # Read when a function first becomes a tool.
    "pydantic.type_adapter",
    "toolcycle._docstrings",
    "toolcycle._signatures",
    "toolcycle._tool_options",
    # Loaded with the first approval, guardrail or rollback (their names are lazy in toolcycle).
    "toolcycle.approvals",
    "toolcycle.agent._approve",
    "toolcycle.guardrails",
    "toolcycle.rollback",
    # Loaded with the first stream, instrumentation, durable plan's call or runtime.
    "toolcycle.runtime._stream",
    "toolcycle.instrumentation",
    "toolcycle.runtime._durable",
    "toolcycle.validation._limits",
)


def _loaded_after(code: str) -> list[str]:
    """The deferred packages, and the models with a built validator, after ``code``."""
    probe = (
        f"{code}\n"
        "import sys, pydantic, toolcycle\n"
        f"deferred = [p for p in {_DEFERRED!r} if p in sys.modules]\n"
        "models = [n for n in toolcycle.__all__ if isinstance(getattr(toolcycle, n), type)\n"
        "          and issubclass(getattr(toolcycle, n), pydantic.BaseModel)\n"
        "          and getattr(toolcycle, n).__pydantic_complete__]\n"
        "print(' '.join(deferred + models))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout.split()


def test_import_defers_jsonschema_structlog_and_the_models_validators() -> None:
    """``import toolcycle`` loads no validation engine, structlog or signature reader; builds no model."""
    assert _loaded_after("import toolcycle") == []


def test_lazy_public_names_resolve_on_first_use_and_stay() -> None:
    """A lazily loaded name is the class its module defines, listed by dir(), then cached."""
    import toolcycle
    import toolcycle.approvals
    import toolcycle.guardrails
    import toolcycle.rollback

    for name in ("ApprovalDecision", "ApprovalRequest", "Resumption", "current_resumption"):
        assert getattr(toolcycle, name) is getattr(toolcycle.approvals, name)
    rollback_names = ("Checkpoint", "RollbackConflictError", "RollbackReport", "UndoOutcome")
    for name in (*rollback_names, "RollbackUnsupportedError"):
        assert getattr(toolcycle, name) is getattr(toolcycle.rollback, name)
    for name in ("Guardrail", "GuardrailCall", "GuardrailDecision"):
        assert getattr(toolcycle, name) is getattr(toolcycle.guardrails, name)
        assert name in vars(toolcycle)  # the next lookup skips __getattr__
    from toolcycle.instrumentation import Instrumentation
    from toolcycle.runtime._stream import CallStream
    from toolcycle.validation._limits import DRAFT_2020_12, ValidationLimits

    assert toolcycle.CallStream is CallStream and toolcycle.runtime.CallStream is CallStream
    assert toolcycle.Instrumentation is Instrumentation
    assert toolcycle.ValidationLimits is ValidationLimits
    assert toolcycle.validation.ValidationLimits is ValidationLimits
    assert toolcycle.validation.DRAFT_2020_12 == DRAFT_2020_12
    assert set(toolcycle.validation.__all__) <= set(dir(toolcycle.validation))
    assert set(toolcycle.runtime.__all__) <= set(dir(toolcycle.runtime))
    with pytest.raises(AttributeError, match="no attribute 'CallStraem'"):
        _ = toolcycle.runtime.CallStraem  # type: ignore[attr-defined]
    assert set(toolcycle.__all__) <= set(dir(toolcycle))
    with pytest.raises(AttributeError, match="no attribute 'Checkpiont'"):
        _ = toolcycle.Checkpiont  # type: ignore[attr-defined]


def test_the_lazily_loaded_modules_are_attributes_of_the_package_as_before() -> None:
    """``toolcycle.approvals`` and its siblings work after a bare ``import toolcycle``."""
    probe = (
        "import sys, toolcycle\n"
        "assert 'toolcycle.rollback' not in sys.modules\n"
        "assert toolcycle.rollback.Checkpoint is toolcycle.Checkpoint\n"
        "assert toolcycle.approvals.FileApprovalLedger.__name__ == 'FileApprovalLedger'\n"
        "assert callable(toolcycle.guardrails.allow)\n"
        "assert {'approvals', 'guardrails', 'rollback'} <= set(dir(toolcycle))\n"
    )
    subprocess.run([sys.executable, "-c", probe], check=True, timeout=60)


def test_a_first_call_loads_jsonschema_but_not_structlog_while_logging_is_off() -> None:
    """Validation needs jsonschema; an unconfigured host's logging never loads structlog."""
    first_call = (
        "from toolcycle import ToolRuntime, tool\n"
        "@tool\n"
        "def add(a: int, b: int) -> int:\n"
        "    return a + b\n"
        "runtime = ToolRuntime()\n"
        "runtime.register(add)\n"
        "with runtime.plan('p') as ctx:\n"
        "    assert runtime.execute('add', {'a': 1, 'b': 2}, ctx).output == 3\n"
    )
    loaded = _loaded_after(first_call)
    assert {"jsonschema", "referencing"} <= set(loaded)
    assert "structlog" not in loaded
    # A call that needs no approval, guardrail or checkpoint loads none of their modules.
    assert not {"toolcycle.approvals", "toolcycle.guardrails", "toolcycle.rollback"} & set(loaded)


def test_a_call_that_needs_approval_loads_the_approvals_module() -> None:
    """The approval step imports what it needs when a call first asks."""
    asked = (
        "from toolcycle import ToolRuntime, tool\n"
        "@tool(writes=True)\n"
        "def save(text: str) -> str:\n"
        "    return text\n"
        "runtime = ToolRuntime()\n"
        "runtime.register(save)\n"
        "with runtime.plan('p', approver=lambda request: True) as ctx:\n"
        "    assert runtime.execute('save', {'text': 'x'}, ctx).success\n"
    )
    loaded = _loaded_after(asked)
    assert {"toolcycle.approvals", "toolcycle.agent._approve"} <= set(loaded)
