"""The sources of the ``toolcycle`` command line: options, and loading them into a runtime.

``--mcp`` and ``--mcp-url`` start or reach MCP servers, ``--skills`` reads Agent
Skills folders, ``--module`` imports Python tools (a dotted name or a file path)
and ``--workspace`` registers the built-in workspace tools and binds the folder,
read-only unless ``--writable``. A source that cannot be loaded raises
`SourceError` with a message that says what was tried; the command turns it into
exit code 3. The optional extras are imported only when their option is used.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import shutil
import sys
import traceback
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolcycle import BoundResource, ToolInstance, ToolRuntime, ToolRuntimeError
from toolcycle.builtins import workspace_tools

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from types import ModuleType

    from toolcycle import ToolDescriptor

__all__ = [
    "SourceError",
    "has_sources",
    "import_path",
    "register_sources",
    "source_options",
    "workspaces",
]


class SourceError(Exception):
    """A source named on the command line could not be loaded."""


def source_options() -> argparse.ArgumentParser:
    """A parent parser holding the source options every tool command takes.

    A blank value (empty, or spaces only) is a usage error that argparse reports,
    rather than a source to try: an empty folder would otherwise mean the current one.
    """
    sources = argparse.ArgumentParser(add_help=False)
    group = sources.add_argument_group("sources (any number, in any mix)")
    group.add_argument(
        "--mcp", action="append", default=[], metavar="'COMMAND ARGS'",
        type=_given("the server's command line, such as '.venv/bin/mcp-server-time'"),
        help="an MCP server to start over stdio, as one shell-quoted command line",
    )  # fmt: skip
    group.add_argument(
        "--mcp-url", action="append", default=[], metavar="URL",
        type=_given("the server's URL, such as http://127.0.0.1:8000/mcp"),
        help="an MCP server to reach over streamable HTTP",
    )  # fmt: skip
    group.add_argument(
        "--skills", action="append", default=[], metavar="DIR",
        type=_given("a folder ('.' for the current one)"),
        help="a folder of Agent Skills (or one skill folder); its scripts are not offered",
    )  # fmt: skip
    group.add_argument(
        "--module", action="append", default=[], metavar="MODULE",
        type=_given("a dotted name or a file, such as mytools.basic or mytools/basic.py"),
        help="a module whose top-level tools (@tool functions, tool instances) to register: "
        "a dotted name found from the current folder (mytools.basic) or a file (mytools/basic.py)",
    )  # fmt: skip
    group.add_argument(
        "--workspace", action="append", default=[], metavar="DIR",
        type=_given("a folder ('.' for the current one)"),
        help="a folder for the built-in workspace tools (read, list, search, write, edit, "
        "delete, mkdir); read-only unless --writable",
    )  # fmt: skip
    group.add_argument(
        "--writable", action="store_true",
        help="let the workspace tools change the --workspace folders",
    )  # fmt: skip
    return sources


def _given(wanted: str) -> Callable[[str], str]:
    """An argparse ``type`` that refuses a blank value, saying what to give instead."""

    def check(text: str) -> str:
        if not text.strip():
            raise argparse.ArgumentTypeError(f"{text!r} is blank; give {wanted}")
        return text

    return check


def has_sources(args: argparse.Namespace) -> bool:
    """Whether ``args`` names at least one source."""
    return bool(args.mcp or args.mcp_url or args.skills or args.module or args.workspace)


def workspaces(args: argparse.Namespace) -> list[BoundResource]:
    """The ``--workspace`` folders as resources to bind, each named as it was given."""
    named = dict.fromkeys(args.workspace)  # the same folder twice is bound once
    return [
        BoundResource(
            kind="workspace",
            name=text,
            location=str(Path(text).resolve()),
            read_only=not args.writable,
        )
        for text in named
    ]


@contextmanager
def import_path() -> Iterator[None]:
    """Put the current folder first on the import path for the block, as ``python -m`` does.

    The folders of ``--module`` files join it while they load; the path is restored
    when the block ends.
    """
    saved = list(sys.path)
    sys.path.insert(0, os.getcwd())
    try:
        yield
    finally:
        sys.path[:] = saved


def register_sources(
    runtime: ToolRuntime, args: argparse.Namespace, commands: list[list[str]]
) -> None:
    """Register every source named in ``args``, in the order of the options.

    ``commands`` holds the ``--mcp`` command lines of ``args``, already split.
    """
    for command_line, words in zip(args.mcp, commands, strict=True):
        mcp = _import("toolcycle.sources.mcp")
        _check_program(words[0])  # never blank: the option refuses it (see source_options)
        _register(runtime, mcp.McpServer.stdio(words[0], words[1:]), f"MCP server {command_line!r}")
    for url in args.mcp_url:
        mcp = _import("toolcycle.sources.mcp")
        _register(runtime, mcp.McpServer.http(url), f"MCP server {url!r}")
    for folder in args.skills:
        skills = _import("toolcycle.sources.skills")
        try:
            directory = skills.SkillDirectory(folder)
        except NotADirectoryError as exc:
            raise SourceError(str(exc)) from None
        if not _register(runtime, directory, f"skills folder {folder!r}"):
            # As a module without tools: a folder whose every skill is invalid is a mistake.
            raise SourceError(
                f"skills folder {folder!r} holds no valid skill: neither it nor a folder in "
                "it has a SKILL.md that could be registered"
            )
    for name in args.module:
        module = _load_module(name)
        found = [
            value
            for value in vars(module).values()
            if isinstance(value, ToolInstance) and not isinstance(value, type)
        ]  # a tool class passes the protocol check too; only its instances are tools
        if not found:
            raise SourceError(f"module {name!r} has no tools at its top level")
        for instance in found:
            _register(runtime, instance, f"tool {instance!r} of module {name!r}")
    for folder in args.workspace:
        if not Path(folder).is_dir():
            raise SourceError(f"--workspace {folder!r} is not a directory")
    if args.workspace:
        _register(runtime, workspace_tools(), "the built-in workspace tools")


def _check_program(program: str) -> None:
    """Refuse an ``--mcp`` program that cannot be started, saying where it was looked for."""
    if os.sep in program or (os.altsep is not None and os.altsep in program):
        path = Path(program)
        if not path.is_file():
            raise SourceError(f"program {program!r} does not exist ({path.resolve()})")
        if not os.access(path, os.X_OK):
            raise SourceError(f"program {program!r} is not executable ({path.resolve()})")
        return
    if shutil.which(program) is not None:
        return
    message = f"program {program!r} was not found on PATH"
    beside = Path(sys.executable).parent / program
    if beside.is_file():
        message += f"; it is installed beside this Python: give its path, {beside}"
    else:
        message += (
            "; if it is installed in a virtual environment, give its path, "
            f"e.g. /path/to/.venv/bin/{program}"
        )
    raise SourceError(message)


def _is_file_path(name: str) -> bool:
    return name.endswith(".py") or "/" in name or os.sep in name


def _load_module(name: str) -> ModuleType:
    """Import ``--module NAME``: a dotted name from the import path, or a Python file."""
    if _is_file_path(name):
        return _load_file(name)
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (name == exc.name or name.startswith(exc.name + ".")):
            folders = [entry or os.getcwd() for entry in sys.path if Path(entry or ".").is_dir()]
            raise SourceError(
                f"module {name!r} does not import: no module named {exc.name!r} in the "
                f"current folder or on the import path (searched: {', '.join(folders)}); "
                f"run toolcycle from the folder that holds it, or give its file, "
                f"e.g. --module {name.replace('.', '/')}.py"
            ) from None
        raise SourceError(f"module {name!r} does not import: {_describe(exc)}") from None
    except Exception as exc:
        raise SourceError(f"module {name!r} does not import: {_describe(exc)}") from None


def _load_file(name: str) -> ModuleType:
    """Import a Python file as ``python FILE`` would: its own folder first on the path."""
    path = Path(name).resolve()
    if not path.is_file():
        raise SourceError(f"module file {name!r} does not exist (looked for {path})")
    module_name = path.stem
    loaded = sys.modules.get(module_name)
    if loaded is not None:
        if Path(getattr(loaded, "__file__", "") or "").resolve() == path:
            return loaded
        raise SourceError(
            f"module file {name!r} is named like the module {module_name!r} that is already "
            f"imported from elsewhere; rename the file"
        )
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise SourceError(f"module file {name!r} is not a Python module (looked at {path})")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))  # its neighbours import, as under `python FILE`
    sys.modules[module_name] = module  # so that pydantic and dataclasses can find it
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[module_name]
        raise SourceError(f"module file {name!r} does not import: {_describe(exc)}") from None
    return module


def _describe(exc: BaseException) -> str:
    """The exception as one line, with the file and line of user code where it was raised."""
    frames = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if "importlib" not in frame.filename and frame.filename != __file__
    ]
    where = f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"


def _import(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise SourceError(str(exc)) from None


def _register(runtime: ToolRuntime, source: Any, what: str) -> list[ToolDescriptor]:
    """Register ``source`` (a tool or a source) and return the tools it gave."""
    try:
        if isinstance(source, ToolInstance):
            return [runtime.register(source)]
        return list(runtime.register_source(source))
    except (ToolRuntimeError, OSError) as exc:
        raise SourceError(f"{what} could not be loaded: {exc}") from None
