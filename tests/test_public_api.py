"""The public API is pinned: exported names, module __all__s, and import direction."""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import toolcycle

SRC = Path(toolcycle.__file__).parent

EXPECTED = {
    "ApprovalDecision",
    "ApprovalRecord",
    "ApprovalRequest",
    "AsyncFunctionTool",
    "BoundResource",
    "CancellationToken",
    "Change",
    "Checkpoint",
    "FunctionTool",
    "Instrumentation",
    "NullTracer",
    "PendingApproval",
    "ProgressEvent",
    "ProviderFormat",
    "RedactionPolicy",
    "RollbackConflictError",
    "RollbackReport",
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
    "ToolDescriptor",
    "ToolExecutionContext",
    "ToolExecutionError",
    "ToolExecutionTrace",
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
    "tool",
    "wrap",
}

# Which toolcycle modules each module may import (the layers of the house style).
ALLOWED = {
    "_version": set(),
    "_types": set(),
    "_json": set(),
    "_docstrings": set(),
    "callables": {"_docstrings", "cancellation", "context", "errors", "models"},
    "errors": {"models"},  # for annotations only, under TYPE_CHECKING
    "models": {"_messages", "errors"},
    "_messages": set(),
    "redaction": {"_applicators"},
    "_applicators": set(),
    "_names": set(),
    "_schemas": set(),
    "_calls": {"_json", "models"},
    "_definitions": {"_names", "_schemas", "models"},
    "_dispatch": {"_names", "errors", "models"},
    "_batch": {"cancellation", "errors", "models"},
    "cancellation": {"errors"},
    "_confined": set(),
    "rollback": {"_confined", "models"},
    "context": {"approvals", "cancellation", "models", "rollback"},
    "approvals": {"models"},  # for annotations only, under TYPE_CHECKING
    "_approve": {"approvals", "context", "errors", "models", "redaction"},
    "protocols": {"context", "models"},
    "_ecma": set(),
    "_patterns": {"_ecma"},
    "_wording": set(),
    "_issues": {"_json", "models"},
    "_readers": {"_issues", "_patterns", "_wording"},
    "_backends": {"_issues", "_json", "_readers", "_types", "models"},
    "_re2_keywords": {"_ecma", "_patterns"},
    "_survey": {"_backends", "_json", "_patterns"},
    "validation": {
        "_backends",
        "_json",
        "_re2_keywords",
        "_survey",
        "_types",
        "errors",
        "models",
    },
    "tracing": {"_types", "errors", "models"},
    "capabilities": {"context", "errors", "models"},
    "_portal": {"errors"},
    "_invoke": {"_portal", "cancellation", "errors"},
    "_inflight": {"cancellation", "context"},  # context for annotations only
    "cache": {"_inflight", "context", "errors", "protocols"},
    "_activation": {
        "_invoke",
        "_portal",
        "cache",
        "context",
        "errors",
        "instrumentation",
        "protocols",
        "tracing",
    },
    "_results": {"_json", "context", "errors", "models", "redaction", "tracing", "validation"},
    "runtime": {
        "_activation",
        "_inflight",
        "_approve",
        "approvals",
        "instrumentation",
        "_batch",
        "_portal",
        "redaction",
        "_calls",
        "_definitions",
        "_dispatch",
        "_names",
        "_schemas",
        "_invoke",
        "_results",
        "_types",
        "cache",
        "callables",
        "cancellation",
        "capabilities",
        "context",
        "errors",
        "models",
        "protocols",
        "tracing",
        "validation",
    },
    "instrumentation": {"context", "models"},  # for annotations only, under TYPE_CHECKING
    "testing": {""},
    "cli": {""},
    # An integration layer: the package's public names ("" is toolcycle itself) and the
    # public instrumentation protocols, never a private module.
    "otel": {"", "instrumentation"},
    "__init__": {
        "_version",
        "approvals",
        "instrumentation",
        "cache",
        "redaction",
        "callables",
        "rollback",
        "cancellation",
        "context",
        "errors",
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


def test_version_is_the_installed_distributions() -> None:
    """__version__ comes from one file that the build also reads, so the two agree."""
    assert toolcycle.__version__ == importlib.metadata.version("toolcycle")


def _modules() -> list[str]:
    return [
        info.name
        for info in pkgutil.walk_packages([str(SRC)], prefix="toolcycle.")
        if not info.name.startswith("toolcycle.sources.")
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
    imported = _imports(SRC / f"{module}.py")
    allowed = ALLOWED[module]
    if allowed == {""}:
        assert all(not name.startswith("sources") for name in imported)
        return
    assert imported <= allowed, f"{module} imports {imported - allowed}"


def test_core_never_imports_sources_or_testing() -> None:
    """No core module imports toolcycle.sources or toolcycle.testing."""
    for path in SRC.glob("*.py"):
        if path.stem in {"testing", "cli"}:
            continue
        for name in _imports(path):
            assert not name.startswith(("sources", "testing")), f"{path.name} imports {name}"


def test_importing_sources_is_cheap() -> None:
    """toolcycle.sources holds a docstring only."""
    tree = ast.parse((SRC / "sources" / "__init__.py").read_text())
    assert len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr)


_DEFERRED = ("jsonschema", "referencing", "jsonschema_specifications", "structlog")


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
    """``import toolcycle`` loads neither the validation engine nor structlog, nor builds a model."""
    assert _loaded_after("import toolcycle") == []


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
