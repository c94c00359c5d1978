"""The ``tools``, ``schema`` and ``call`` commands of the ``toolcycle`` command line.

Each command builds a runtime from the sources named on the command line
(``--mcp``, ``--mcp-url``, ``--skills``, ``--module``), does one thing and
closes the runtime, which stops every server it started. The optional extras
are imported only when their option is used.

Exit codes: 0 success; 1 the call ran and failed (or was refused or timed
out); 2 a usage error (bad ``--args`` or ``--timeout``, an ``--mcp`` command
line with an unclosed quote, an unknown tool, no source); 3 a source
could not be loaded (a server that does not start, a missing folder, a module
that does not import).
"""

from __future__ import annotations

import argparse
import importlib
import itertools
import json
import math
import shlex
import threading
import warnings
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from toolcycle import ToolCancelledError, ToolInstance, ToolRuntime, ToolRuntimeError

if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import TextIO

__all__ = ["EXIT_FAILED", "EXIT_SOURCE", "EXIT_USAGE", "add_commands", "run_command"]

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_SOURCE = 3


class _SourceError(Exception):
    """A source named on the command line could not be loaded."""


def add_commands(commands: Any) -> None:
    """Add ``tools``, ``schema`` and ``call`` to the subcommand parsers ``commands``."""
    sources = argparse.ArgumentParser(add_help=False)
    group = sources.add_argument_group("sources (any number, in any mix)")
    group.add_argument(
        "--mcp", action="append", default=[], metavar="'COMMAND ARGS'",
        help="an MCP server to start over stdio, as one shell-quoted command line",
    )  # fmt: skip
    group.add_argument(
        "--mcp-url", action="append", default=[], metavar="URL",
        help="an MCP server to reach over streamable HTTP",
    )  # fmt: skip
    group.add_argument(
        "--skills", action="append", default=[], metavar="DIR",
        help="a folder of Agent Skills (or one skill folder)",
    )  # fmt: skip
    group.add_argument(
        "--module", action="append", default=[], metavar="PACKAGE.MODULE",
        help="a module whose top-level tools (@tool functions, tool instances) to register",
    )  # fmt: skip
    listing = commands.add_parser("tools", parents=[sources], help="list the tools of sources")
    listing.add_argument("--json", action="store_true", help="print JSON instead of a table")
    schema = commands.add_parser("schema", parents=[sources], help="print a tool's schemas")
    schema.add_argument("name", help="the tool's name")
    call = commands.add_parser("call", parents=[sources], help="run one call in a plan")
    call.add_argument("name", help="the tool's name")
    call.add_argument("--args", default="{}", metavar="JSON", help="the arguments, a JSON object")
    call.add_argument("--read-only", action="store_true", help="run in a read-only plan")
    call.add_argument("--timeout", type=_seconds, default=None, metavar="S", help="seconds")


def _seconds(text: str) -> float:
    """Parse ``--timeout``: a finite number of seconds greater than zero."""
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not (math.isfinite(seconds) and seconds > 0):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a positive number of seconds; give one such as 30 or 0.5"
        )
    return seconds


def run_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run the ``tools``, ``schema`` or ``call`` command that ``args`` describes."""
    if not (args.mcp or args.mcp_url or args.skills or args.module):
        print(
            "toolcycle: name at least one source: --mcp, --mcp-url, --skills or --module",
            file=err,
        )
        return EXIT_USAGE
    commands: list[list[str]] = []
    for command_line in args.mcp:
        try:
            commands.append(shlex.split(command_line))
        except ValueError as exc:  # an unclosed quote or a trailing backslash
            print(f"toolcycle: --mcp {command_line!r} is not a shell command line: {exc}", file=err)
            return EXIT_USAGE
    with ToolRuntime() as runtime:
        try:
            with (
                _spinner(err, "starting the sources"),
                warnings.catch_warnings(record=True) as seen,
            ):
                warnings.simplefilter("always")
                _register_sources(runtime, args, commands)
        except _SourceError as exc:
            print(f"toolcycle: {exc}", file=err)
            return EXIT_SOURCE
        for warning in seen:  # skipped tools and skills: said once, without a traceback
            print(f"toolcycle: warning: {warning.message}", file=err)
        if args.command == "tools":
            return _list(runtime, out, as_json=args.json)
        if args.name not in {d.name for d in runtime.descriptors()}:
            print(f"toolcycle: no tool named {args.name!r}; `toolcycle tools` lists them", file=err)
            return EXIT_USAGE
        if args.command == "schema":
            descriptor = runtime.descriptor(args.name)
            schemas = {
                "input_schema": descriptor.input_schema,
                "output_schema": descriptor.output_schema,
            }
            print(json.dumps(schemas, indent=2), file=out)
            return 0
        return _call(runtime, args, out, err)


def _register_sources(
    runtime: ToolRuntime, args: argparse.Namespace, commands: list[list[str]]
) -> None:
    """Register every source named in ``args``, in the order of the options.

    ``commands`` holds the ``--mcp`` command lines of ``args``, already split.
    """
    for command_line, words in zip(args.mcp, commands, strict=True):
        mcp = _import("toolcycle.sources.mcp")
        if not words:
            raise _SourceError("--mcp needs a command")
        _register(runtime, mcp.McpServer.stdio(words[0], words[1:]), f"MCP server {command_line!r}")
    for url in args.mcp_url:
        mcp = _import("toolcycle.sources.mcp")
        _register(runtime, mcp.McpServer.http(url), f"MCP server {url!r}")
    for folder in args.skills:
        skills = _import("toolcycle.sources.skills")
        try:
            directory = skills.SkillDirectory(folder)
        except NotADirectoryError as exc:
            raise _SourceError(str(exc)) from None
        _register(runtime, directory, f"skills folder {folder!r}")
    for name in args.module:
        try:
            module = importlib.import_module(name)
        except Exception as exc:
            raise _SourceError(f"module {name!r} does not import: {exc}") from None
        found = [
            value
            for value in vars(module).values()
            if isinstance(value, ToolInstance) and not isinstance(value, type)
        ]  # a tool class passes the protocol check too; only its instances are tools
        if not found:
            raise _SourceError(f"module {name!r} has no tools at its top level")
        for instance in found:
            _register(runtime, instance, f"tool {instance!r} of module {name!r}")


def _import(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise _SourceError(str(exc)) from None


def _register(runtime: ToolRuntime, source: Any, what: str) -> None:
    try:
        if isinstance(source, ToolInstance):
            runtime.register(source)
        else:
            runtime.register_source(source)
    except (ToolRuntimeError, OSError) as exc:
        raise _SourceError(f"{what} could not be loaded: {exc}") from None


def _list(runtime: ToolRuntime, out: TextIO, *, as_json: bool) -> int:
    descriptors = runtime.descriptors()
    if as_json:
        data = [d.model_dump(mode="json") for d in descriptors]
        print(json.dumps(data, indent=2), file=out)
        return 0
    rows = [
        (
            d.name,
            d.source if d.source_name is None else f"{d.source}:{d.source_name}",
            "yes" if d.capability.writes else "no",
            "yes" if d.capability.checkpointable else "no",
            _one_line(d.description, 60),
        )
        for d in descriptors
    ]
    header = ("NAME", "SOURCE", "WRITES", "CHECKPOINTABLE", "DESCRIPTION")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(4)]
    for row in [header, *rows]:
        cells = [cell.ljust(width) for cell, width in zip(row[:4], widths, strict=True)]
        print("  ".join([*cells, row[4]]).rstrip(), file=out)
    return 0


def _call(runtime: ToolRuntime, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    try:
        arguments = json.loads(args.args)
    except json.JSONDecodeError as exc:
        print(f"toolcycle: --args is not valid JSON: {exc}", file=err)
        return EXIT_USAGE
    if not isinstance(arguments, dict):
        print('toolcycle: --args must be a JSON object, such as \'{"city": "Oslo"}\'', file=err)
        return EXIT_USAGE
    with runtime.plan(read_only=args.read_only) as ctx:
        try:
            result = runtime.execute(args.name, arguments, ctx, timeout=args.timeout)
        except (ToolRuntimeError, ToolCancelledError) as exc:
            print(f"toolcycle: {exc}", file=err)
            return EXIT_FAILED
    report = {
        "success": result.success,
        "output": result.output,
        "error": result.error,
        "trace": None if result.trace is None else result.trace.model_dump(mode="json"),
    }
    print(json.dumps(report, indent=2, default=str), file=out)
    return 0 if result.success else EXIT_FAILED


def _one_line(text: str, width: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


@contextmanager
def _spinner(stream: TextIO, label: str) -> Iterator[None]:
    """Turn a spinner on ``stream`` while the block runs, if ``stream`` is a terminal."""
    if not stream.isatty():
        yield
        return
    done = threading.Event()

    def spin() -> None:
        for frame in itertools.cycle("|/-\\"):
            stream.write(f"\r{frame} {label}")
            stream.flush()
            if done.wait(0.1):
                break
        stream.write("\r" + " " * (len(label) + 2) + "\r")
        stream.flush()

    thread = threading.Thread(target=spin, name="toolcycle-spinner", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(1.0)
