"""The ``tools``, ``schema`` and ``call`` commands of the ``toolcycle`` command line.

Each command builds a runtime from the sources named on the command line
(``--mcp``, ``--mcp-url``, ``--skills``, ``--module``, ``--workspace``; see
`_cli_sources`), does one thing and closes the runtime, which stops every
server it started.

Exit codes: 0 success; 1 the call ran and failed (or was refused or timed
out); 2 a usage error (bad ``--args`` or ``--timeout``, a blank source
option, an ``--mcp`` command line with an unclosed quote or no program, an
unknown tool, no source, ``--writable`` without ``--workspace``); 3 a source
could not be loaded (a server that does not start or whose program is not
found, a missing folder, a module that does not import).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import re
import shlex
import threading
import warnings
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from toolcycle import ToolCancelledError, ToolRuntime, ToolRuntimeError
from toolcycle._cli_sources import (
    SourceError,
    has_sources,
    import_path,
    register_sources,
    source_options,
    workspaces,
)

if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import TextIO

__all__ = ["EXIT_FAILED", "EXIT_SOURCE", "EXIT_USAGE", "add_commands", "run_command"]

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_SOURCE = 3

# C0 and C1 controls and DEL, but not tab or line feed: what a terminal would act on.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


_EXIT_CODES = """\
exit codes: 0 success, 1 the call failed or was refused, 2 usage error,
3 a source could not be loaded, 141 the output was closed early"""


def add_commands(commands: Any) -> None:
    """Add ``tools``, ``schema`` and ``call`` to the subcommand parsers ``commands``."""
    sources = source_options()
    formatter = argparse.RawDescriptionHelpFormatter
    listing = commands.add_parser(
        "tools", parents=[sources], formatter_class=formatter,
        help="list the tools of the sources",
        description="List the tools of the sources, one row each: its name, its source,\n"
        "whether it writes, whether its changes can be rolled back, and its description.",
        epilog="examples:\n"
        "  toolcycle tools --module mytools/basic.py --workspace .\n"
        "  toolcycle tools --json --mcp .venv/bin/mcp-server-time\n\n" + _EXIT_CODES,
    )  # fmt: skip
    listing.add_argument("--json", action="store_true", help="print the full descriptors as JSON")
    schema = commands.add_parser(
        "schema", parents=[sources], formatter_class=formatter,
        help="print a tool's input and output schemas",
        description="Print the input and output JSON Schemas of one tool of the sources,\n"
        'as {"input_schema": ..., "output_schema": ...}.',
        epilog="example:\n  toolcycle schema read_file --workspace .\n\n" + _EXIT_CODES,
    )  # fmt: skip
    schema.add_argument("name", help="the tool's name, as `toolcycle tools` lists it")
    call = commands.add_parser(
        "call", parents=[sources], formatter_class=formatter,
        help="run one call of a tool and print its result",
        description="Run one call of a tool in a plan of its own and print the result as JSON:\n"
        "success, output, error and the call's trace. The plan ends before the command\n"
        "exits, which deactivates the tool and stops every server started.",
        epilog="examples:\n"
        "  toolcycle call read_file --args '{\"path\": \"README.md\"}' --workspace .\n"
        "  toolcycle call write_file --args '{\"path\": \"a.txt\", \"content\": \"hi\"}' "
        "--workspace . --writable\n\n" + _EXIT_CODES,
    )  # fmt: skip
    call.add_argument("name", help="the tool's name, as `toolcycle tools` lists it")
    call.add_argument(
        "--args", default="{}", metavar="JSON", help="the arguments, a JSON object (default {})"
    )
    call.add_argument(
        "--read-only", action="store_true", help="run in a read-only plan: no tool that writes"
    )
    call.add_argument(
        "--timeout", type=_seconds, default=None, metavar="S",
        help="seconds the call may take before it is cancelled",
    )  # fmt: skip


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
    if not has_sources(args):
        _say(
            err,
            "toolcycle: name at least one source: "
            "--mcp, --mcp-url, --skills, --module or --workspace",
        )
        return EXIT_USAGE
    if args.writable and not args.workspace:
        _say(err, "toolcycle: --writable applies to --workspace folders; name one")
        return EXIT_USAGE
    commands: list[list[str]] = []
    for command_line in args.mcp:
        try:
            commands.append(shlex.split(command_line))
        except ValueError as exc:  # an unclosed quote or a trailing backslash
            _say(err, f"toolcycle: --mcp {command_line!r} is not a shell command line: {exc}")
            return EXIT_USAGE
        if not commands[-1][0].strip():  # '""': quotes around nothing
            _say(err, f"toolcycle: --mcp {command_line!r} names no program to start")
            return EXIT_USAGE
    with import_path(), ToolRuntime() as runtime:
        seen: list[warnings.WarningMessage] = []
        try:
            with (
                _spinner(err, "starting the sources"),
                warnings.catch_warnings(record=True) as seen,
            ):
                warnings.simplefilter("always")
                register_sources(runtime, args, commands)
        except SourceError as exc:
            _say_warnings(err, seen)  # they may say why a source gave nothing
            _say(err, f"toolcycle: {exc}")
            return EXIT_SOURCE
        _say_warnings(err, seen)
        if args.command == "tools":
            return _list(runtime, out, as_json=args.json)
        if args.name not in {d.name for d in runtime.descriptors()}:
            hint = "`toolcycle tools` lists them"
            if args.skills and args.name.endswith(".run_script"):
                hint = (
                    "--skills registers skills without their scripts; run them from Python "
                    "with SkillDirectory(folder, scripts=True)"
                )
            _say(err, f"toolcycle: no tool named {args.name!r}; {hint}")
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


def _say_warnings(err: TextIO, seen: list[warnings.WarningMessage]) -> None:
    """Skipped tools and skills: each said once, without a traceback."""
    for warning in seen:
        _say(err, f"toolcycle: warning: {warning.message}")


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
            _one_line(d.description, 60, ellipsis="…" if _encodes(out, "…") else "..."),
        )
        for d in descriptors
    ]
    header = ("NAME", "SOURCE", "WRITES", "CHECKPOINTABLE", "DESCRIPTION")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(4)]
    for row in [header, *rows]:
        cells = [cell.ljust(width) for cell, width in zip(row[:4], widths, strict=True)]
        _say(out, "  ".join([*cells, row[4]]).rstrip())
    return 0


def _call(runtime: ToolRuntime, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    try:
        arguments = json.loads(args.args)
    except json.JSONDecodeError as exc:
        _say(err, f"toolcycle: --args is not valid JSON: {exc}")
        return EXIT_USAGE
    except RecursionError:  # the decoder recurses once per nested list or object
        _say(err, "toolcycle: --args nests lists or objects too deeply to read")
        return EXIT_USAGE
    if not isinstance(arguments, dict):
        _say(err, 'toolcycle: --args must be a JSON object, such as \'{"city": "Oslo"}\'')
        return EXIT_USAGE
    with runtime.plan(read_only=args.read_only, resources=workspaces(args)) as ctx:
        try:
            result = runtime.execute(args.name, arguments, ctx, timeout=args.timeout)
        except (ToolRuntimeError, ToolCancelledError) as exc:
            _say(err, f"toolcycle: {exc}")
            return EXIT_FAILED
    report = {
        "success": result.success,
        "output": result.output,
        "error": result.error,
        "trace": None if result.trace is None else result.trace.model_dump(mode="json"),
    }
    print(json.dumps(report, indent=2, default=str), file=out)
    if result.trace is not None and result.trace.error_type == "WorkspaceReadOnlyError":
        _say(
            err,
            f"toolcycle: {args.name} would change a --workspace folder, which is read-only "
            "unless --writable is given",
        )
    return 0 if result.success else EXIT_FAILED


def _one_line(text: str, width: int, *, ellipsis: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - len(ellipsis)] + ellipsis


def _say(stream: TextIO, text: str) -> None:
    r"""Print ``text``, which may come from a source, so that no terminal obeys it.

    Control characters other than tab and line feed are shown as escapes
    (``\x1b``), and so are characters the stream cannot encode (``\xe9`` on
    an ASCII locale), where printing them would end the command with a traceback.
    """
    text = _CONTROL.sub(lambda found: found.group().encode("unicode_escape").decode(), text)
    if not _encodes(stream, text):
        encoding = stream.encoding
        text = text.encode(encoding, "backslashreplace").decode(encoding)
    print(text, file=stream)


def _encodes(stream: TextIO, text: str) -> bool:
    """Whether ``stream`` can write ``text`` (a stream without an encoding writes anything)."""
    encoding = getattr(stream, "encoding", None)
    if not encoding:
        return True
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        return False
    return True


@contextmanager
def _spinner(stream: TextIO, label: str) -> Iterator[None]:
    """Turn a spinner on ``stream`` while the block runs, if ``stream`` is a terminal."""
    if not stream.isatty():
        yield
        return
    done = threading.Event()

    def spin() -> None:
        frames = itertools.cycle("|/-\\")
        while True:
            stream.write(f"\r{next(frames)} {label}")
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
