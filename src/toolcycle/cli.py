"""The ``toolcycle`` command line. With `_cli_tools`, the only code of the package that prints.

Commands: ``demo`` (a small plan showing each stage), and ``tools``, ``schema``
and ``call`` on the sources named on the command line (see `_cli_tools` and
`_cli_sources`). ``python -m toolcycle`` runs the same `main`.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolcycle import (
    BoundResource,
    Change,
    NullTracer,
    ToolCancelledError,
    ToolCapability,
    ToolDescriptor,
    ToolExecutionContext,
    ToolExecutionTrace,
    ToolRuntime,
    ToolRuntimeError,
    tool,
)
from toolcycle._cli_tools import add_commands, run_command
from toolcycle._version import __version__
from toolcycle.builtins import workspace_tools

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import TextIO

__all__ = ["EXIT_BROKEN_PIPE", "main", "run_demo"]

EXIT_BROKEN_PIPE = 141
"""The exit code when the reader of standard output closed it early (128 + SIGPIPE)."""


class _Notes:
    """An in-memory note store shared by the demo's two tools."""

    def __init__(self) -> None:
        self.notes: dict[str, str] = {}
        self.open = False


class _WriteNote:
    """Demo tool that writes: stores a note under a key."""

    def __init__(self, store: _Notes, out: TextIO) -> None:
        self._store = store
        self._out = out

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(
            name="write_note",
            description="Store a note under a key.",
            input_schema={
                "type": "object",
                "properties": {
                    "key": {"type": "string", "minLength": 1},
                    "text": {"type": "string"},
                },
                "required": ["key", "text"],
                "additionalProperties": False,
            },
            output_schema={"type": "object", "properties": {"stored": {"type": "string"}}},
            capability=ToolCapability(writes=True, checkpointable=True),
            tags=frozenset({"demo"}),
        )

    def activate(self, ctx: ToolExecutionContext) -> None:
        self._store.open = True
        print(f"  activate   write_note for {ctx.plan_id}", file=self._out)

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> dict[str, str]:
        key = params["key"]
        ctx.record_change(
            Change(
                kind="write",
                target=key,
                tool_name="write_note",
                data={"previous": self._store.notes.get(key)},
            )
        )
        self._store.notes[key] = params["text"]
        return {"stored": key}

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        self._store.open = False
        print(f"  deactivate write_note for {ctx.plan_id}", file=self._out)


class _SlowRead:
    """Demo tool that reads: returns a note, waiting until the plan is cancelled if asked."""

    def __init__(self, store: _Notes, out: TextIO, started: threading.Event) -> None:
        self._store = store
        self._out = out
        self._started = started

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(
            name="read_note",
            description="Return the note stored under a key.",
            input_schema={
                "type": "object",
                "properties": {"key": {"type": "string"}, "wait": {"type": "boolean"}},
                "required": ["key"],
            },
            capability=ToolCapability(writes=False, checkpointable=True),
            tags=frozenset({"demo"}),
        )

    def activate(self, ctx: ToolExecutionContext) -> None:
        print(f"  activate   read_note for {ctx.plan_id}", file=self._out)

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> str | None:
        token = ctx.cancellation_token
        if params.get("wait"):
            self._started.set()
            while not token.is_cancelled:
                threading.Event().wait(0.01)
            token.check()
        return self._store.notes.get(params["key"])

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        print(f"  deactivate read_note for {ctx.plan_id}", file=self._out)


@tool(writes=False, checkpointable=True)
def count_words(text: str, ignore_case: bool = True) -> dict[str, int]:
    """Count how often each word occurs in a text.

    Args:
        text: the text to count.
        ignore_case: fold upper and lower case together.
    """
    counts: dict[str, int] = {}
    for word in text.split():
        key = word.strip(".,;:!?").lower() if ignore_case else word.strip(".,;:!?")
        counts[key] = counts.get(key, 0) + 1
    return counts


def _workspace_plan(runtime: ToolRuntime, out: TextIO) -> None:
    """Plan 3: a decorated function and the built-ins on a temporary workspace, rolled back."""
    with tempfile.TemporaryDirectory(prefix="toolcycle-demo-") as folder:
        root = Path(folder)
        (root / "README.txt").write_text("Tools run in plans. Plans end.\n")
        workspace = BoundResource(kind="workspace", name="demo", location=folder)
        print("plan 3: a checkpoint plan on a temporary workspace", file=out)
        with runtime.plan("plan-3", requires_checkpoint=True, resources=[workspace]) as ctx:
            marker = ctx.checkpoint()
            runtime.execute("write_file", {"path": "notes/todo.txt", "content": "write docs"}, ctx)
            runtime.execute(
                "edit_file",
                {"path": "README.txt", "old": "Plans end.", "new": "Plans roll back."},
                ctx,
            )
            text = runtime.execute("read_file", {"path": "README.txt"}, ctx).output["content"]
            runtime.execute("count_words", {"text": text}, ctx)
            runtime.execute("delete_file", {"path": "../outside.txt"}, ctx)
            report = ctx.rollback(marker)
            print(
                f"  rolled back {len(report.undone)} changes; complete: {report.complete}",
                file=out,
            )
            restored = (root / "README.txt").read_text().strip()
            print(f"  README.txt is again: {restored!r}", file=out)
            print(f"  notes/ exists after rollback: {(root / 'notes').exists()}", file=out)


def _trace_line(trace: ToolExecutionTrace) -> str:
    outcome = "ok" if trace.success else "error"
    return (
        f"{trace.tool_name:<11} {outcome:<5} {trace.status:<13} "
        f"{trace.duration_ms:8.3f} ms {trace.result_size_bytes:5d} bytes"
        + (f"  {' '.join(trace.error.split())}" if trace.error else "")
    )


def run_demo(out: TextIO) -> int:
    """Run the demo plan, printing one line per call; return the exit status."""
    store = _Notes()
    started = threading.Event()
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.add_trace_listener(lambda trace: print(_trace_line(trace), file=out))
        runtime.register(_WriteNote(store, out))
        runtime.register(_SlowRead(store, out, started))
        runtime.register(count_words)
        runtime.register_source(workspace_tools())

        print("plan 1: a writing plan", file=out)
        with runtime.plan("plan-1") as ctx:
            runtime.execute("write_note", {"key": "greeting", "text": "hello"}, ctx)
            runtime.execute("read_note", {"key": "greeting"}, ctx)
            runtime.execute("write_note", {"key": "", "text": 42}, ctx)
            print(f"  changes recorded: {len(ctx.changes)}", file=out)

        print("plan 2: a read-only plan", file=out)
        with runtime.plan("plan-2", read_only=True) as ctx:
            try:
                runtime.execute("write_note", {"key": "k", "text": "t"}, ctx)
            except ToolRuntimeError as denial:
                print(f"  denied: {type(denial).__name__}", file=out)
            token = ctx.cancellation_token
            cancel_when_started = threading.Thread(
                target=lambda: started.wait(5) and token.cancel("demo cancel"), daemon=True
            )
            cancel_when_started.start()
            try:
                runtime.execute("read_note", {"key": "greeting", "wait": True}, ctx)
            except ToolCancelledError as cancelled:
                print(f"  cancelled: {cancelled}", file=out)
            cancel_when_started.join(5)
        print(f"store open after the plans: {store.open}", file=out)
        _workspace_plan(runtime, out)
    return 0


_DESCRIPTION = """\
Look at and run agent tools from the command line: the tools of MCP servers,
Agent Skills folders, Python modules and workspace folders, each run through a
toolcycle runtime (capability checks, validation, a trace of every call)."""

_EPILOG = """\
examples:
  toolcycle demo
  toolcycle tools --module mytools/basic.py
  toolcycle call read_file --args '{"path": "README.md"}' --workspace .
  toolcycle tools --mcp .venv/bin/mcp-server-time

exit codes:
  0    success
  1    the call ran and failed, timed out or was refused
  2    a usage error
  3    a source could not be loaded
  141  the reader of the output closed it early (as in `toolcycle tools ... | head`)

`toolcycle COMMAND --help` describes each command."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="toolcycle",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"toolcycle {__version__}",
        help="print the version and exit",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser(
        "demo",
        help="run a small plan that shows each stage and outcome",
        description="Run small plans that show a successful call, an input that fails\n"
        "validation, a read-only denial, a cancelled call, deactivation at plan end, and\n"
        "the built-in workspace tools rolled back on a temporary folder.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_commands(commands)
    return parser


def _run(argv: Sequence[str] | None) -> int:
    try:
        args = _parser().parse_args(argv)
    except SystemExit as done:  # a usage error, --help, --version: argparse exits, main returns
        return done.code if isinstance(done.code, int) else 2
    if args.command == "demo":
        return run_demo(sys.stdout)
    return run_command(args, sys.stdout, sys.stderr)


def _quiet_stdout() -> None:
    """Point standard output at the null device, so that no later flush can fail."""
    try:
        descriptor = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a file: nothing will flush it at exit
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, descriptor)
    finally:
        os.close(null)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``toolcycle`` console script; returns the exit code.

    When the reader of standard output goes away (``toolcycle tools ... | head``),
    the command stops quietly with exit code 141, the code a shell reports for a
    program ended by SIGPIPE, instead of a ``BrokenPipeError`` traceback.
    """
    try:
        try:
            return _run(argv)
        finally:
            sys.stdout.flush()  # a closed pipe is found here, not at interpreter exit
    except Exception as exc:
        if not _from_broken_pipe(exc):
            raise
        _quiet_stdout()
        return EXIT_BROKEN_PIPE


def _from_broken_pipe(exc: BaseException | None) -> bool:
    """Whether ``exc`` is a `BrokenPipeError` or was caused by one.

    The demo's tools print, and the runtime wraps what a tool raises (a failed
    activation becomes `ToolActivationError`), so the closed pipe can be a cause.
    """
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, BrokenPipeError):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


if __name__ == "__main__":  # pragma: no cover - exercised through the console script
    sys.exit(main())
