"""The two tools a skill becomes: reading it, and (when enabled) running its scripts."""

from __future__ import annotations

import errno
import threading
from typing import TYPE_CHECKING, Any, Protocol

from toolcycle import ToolCapability, ToolDescriptor, ToolResult
from toolcycle.sources.skills._files import (
    SkillFileError,
    bundled_files,
    inside,
    read_text,
    real_inside,
    same_file,
)
from toolcycle.sources.skills._frontmatter import read_body
from toolcycle.sources.skills._prompt import plain_text
from toolcycle.sources.skills._scripts import command_for, minimal_environment, run_script

if TYPE_CHECKING:
    from pathlib import Path

    from toolcycle import ToolExecutionContext
    from toolcycle.sources.skills._limits import SkillLimits

__all__ = ["ScriptTool", "SkillFolder", "SkillTool"]

_READ_INPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "minLength": 1,
            "description": "A file the skill bundles, relative to its folder, such as "
            "'references/guide.md'. Leave out to get the skill's instructions.",
        }
    },
    "additionalProperties": False,
}
_READ_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "text": {"type": "string"},
        "files": {"type": "array", "items": {"type": "string"}},
        "files_truncated": {"type": "boolean"},
    },
    "required": ["path", "text"],
    "additionalProperties": False,
}
_SCRIPT_INPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "script": {
            "type": "string",
            "minLength": 1,
            "description": "The script to run, relative to the skill's folder, such as "
            "'scripts/convert.py'.",
        },
        "args": {"type": "array", "items": {"type": "string"}, "maxItems": 256},
        "stdin": {"type": "string", "description": "Text to give the script on its input."},
    },
    "required": ["script"],
    "additionalProperties": False,
}
_SCRIPT_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "exit_code": {"type": "integer"},
        "stdout": {"type": "string"},
        "stderr": {"type": "string"},
        "stdout_truncated": {"type": "boolean"},
        "stderr_truncated": {"type": "boolean"},
    },
    "required": ["exit_code", "stdout", "stderr", "stdout_truncated", "stderr_truncated"],
    "additionalProperties": False,
}


# What to change when a script cannot be started, by the system's error number.
_SHEBANG_HINT = "; give it a '#!' line naming an installed interpreter"
_START_HINTS = {
    errno.ENOEXEC: _SHEBANG_HINT,  # no "#!" line
    errno.ENOENT: _SHEBANG_HINT,  # the interpreter it names is missing
    errno.E2BIG: "; its arguments are longer than the system allows, so give large "
    "data on stdin instead",
}


class SkillFolder(Protocol):
    """What the tools read of a skill (a `Skill` is one); they never build or scan one."""

    @property
    def name(self) -> str:
        """The skill's name, which names its tools."""
        ...

    @property
    def description(self) -> str:
        """The skill's description, which its reading tool offers."""
        ...

    @property
    def path(self) -> Path:
        """The skill's folder, resolved."""
        ...

    @property
    def location(self) -> Path:
        """Its ``SKILL.md``."""
        ...

    @property
    def limits(self) -> SkillLimits:
        """The caps the tools read and run within."""
        ...

    def annotations(self) -> dict[str, Any]:
        """The descriptor annotations of its reading tool."""
        ...


class _PerPlan:
    """What a tool loaded at activation, by plan id, dropped at deactivation."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loaded: dict[str, Any] = {}

    def __reduce__(self) -> tuple[Any, ...]:
        """What a tool loaded stays where it was loaded: a copy (in a plan host) starts empty."""
        return (_PerPlan, ())

    def put(self, ctx: ToolExecutionContext, value: Any) -> None:
        with self._lock:
            self._loaded[ctx.plan_id] = value

    def get(self, ctx: ToolExecutionContext) -> Any:
        with self._lock:
            return self._loaded[ctx.plan_id]

    def drop(self, ctx: ToolExecutionContext) -> None:
        with self._lock:
            self._loaded.pop(ctx.plan_id, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._loaded)


class SkillTool:
    """A skill as a read-only tool: its instructions, or one of its bundled files.

    Activation reads the instructions (the Markdown after the front matter) and
    lists the bundled files, once per plan. A call without arguments returns
    ``{"path": "SKILL.md", "text": <instructions>, "files": [...]}``; a call
    with ``{"path": "references/x.md"}`` returns ``{"path": ..., "text": ...}``.
    """

    def __init__(self, skill: SkillFolder) -> None:
        self.skill = skill
        self._descriptor = ToolDescriptor(
            name=skill.name,
            # What a model reads, as in the prompt block: no terminal or XML controls.
            description=plain_text(skill.description),
            input_schema=_READ_INPUT,
            output_schema=_READ_OUTPUT,
            # Reading changes nothing, so there is nothing a checkpoint must undo.
            capability=ToolCapability(writes=False, checkpointable=True),
            source="skill",
            source_name=skill.name,
            annotations=skill.annotations(),
        )
        self._plans = _PerPlan()

    def __repr__(self) -> str:
        return f"SkillTool({self.skill.name!r})"

    def discover(self) -> ToolDescriptor:
        """The descriptor built from the front matter at discovery."""
        return self._descriptor

    def activate(self, ctx: ToolExecutionContext) -> None:
        """Read the instructions and list the bundled files for the plan of ``ctx``."""
        skill = self.skill
        # The SKILL.md as it is now: a link swapped in since discovery that leads
        # out of the folder is refused like any other path.
        location = real_inside(skill.path, skill.location)
        if location is None:
            raise SkillFileError(
                f"{skill.location.name} now leads outside the skill's folder (through a "
                "symlink); put the file itself in the folder"
            )
        instructions = read_body(location, max_bytes=skill.limits.max_file_bytes)
        files, cut = bundled_files(
            skill.path, limit=skill.limits.max_files, skill_file=skill.location.name
        )
        self._plans.put(ctx, (instructions, files, cut))

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> dict[str, Any]:
        """The instructions, or the text of the bundled file ``params["path"]``.

        Raises:
            SkillFileError: the path is refused (outside the folder, not a
                regular file, too large, not UTF-8 text).
        """
        requested = params.get("path")
        if requested is None:
            instructions, files, cut = self._plans.get(ctx)
            output: dict[str, Any] = {
                "path": self.skill.location.name,
                "text": instructions,
                "files": files,
            }
            if cut:
                output["files_truncated"] = True
            return output
        skill = self.skill
        path = inside(skill.path, requested)
        if same_file(path, skill.location):
            # Unlisted like any other file: its front matter is not for the model.
            raise SkillFileError(
                f"the path {requested!r} is the skill's {skill.location.name}, whose "
                "instructions a call without a path returns; "
                "the files it bundles are listed with them"
            )
        text = read_text(path, requested, max_bytes=skill.limits.max_file_bytes)
        return {"path": requested, "text": text}

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        """Forget what activation loaded for the plan of ``ctx``."""
        self._plans.drop(ctx)


class ScriptTool:
    """Runs a script from a skill's ``scripts/`` folder: ``<skill>.run_script``.

    Scripts are arbitrary code, so the tool writes and cannot be rolled back,
    and it exists only when the source was created with ``scripts=True``.
    """

    def __init__(self, skill: SkillFolder, env: dict[str, str] | None) -> None:
        self.skill = skill
        self._env = env
        self._descriptor = ToolDescriptor(
            name=f"{skill.name}.run_script",
            description=(
                f"Run a script bundled with the skill {skill.name!r} (from its scripts/ "
                "folder), with arguments and optional input; returns its exit code and output."
            ),
            input_schema=_SCRIPT_INPUT,
            output_schema=_SCRIPT_OUTPUT,
            capability=ToolCapability(writes=True, checkpointable=False),
            source="skill",
            source_name=skill.name,
            timeout=skill.limits.script_timeout,
        )

    def __repr__(self) -> str:
        return f"ScriptTool({self.skill.name!r})"

    def discover(self) -> ToolDescriptor:
        """The descriptor; its ``timeout`` is the source's ``script_timeout``."""
        return self._descriptor

    def activate(self, ctx: ToolExecutionContext) -> None:
        """Nothing to prepare: each call starts its own process."""

    async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        """Run ``params["script"]`` and return its exit code and output.

        A script that exits with a code other than 0 gives a failed result that
        still carries the output.

        Raises:
            SkillFileError: the script is outside ``scripts/``, or cannot be run
                or started.
        """
        skill = self.skill
        requested = params["script"]
        path = inside(skill.path, requested, what="script")
        scripts = skill.path / "scripts"
        if scripts not in path.parents:
            raise SkillFileError(
                f"the script {requested!r} is not in the skill's scripts/ folder; "
                "give it as 'scripts/<name>'"
            )
        args = params.get("args", [])
        for index, arg in enumerate(args):
            if "\x00" in arg:
                raise SkillFileError(
                    f"argument {index} of the script {requested!r} holds a NUL character, "
                    "which no program's arguments can carry; give such data on stdin"
                )
        command = [*command_for(path, requested), *args]
        ctx.cancellation_token.check()
        try:
            output = await run_script(
                command,
                cwd=skill.path,
                stdin=params.get("stdin"),
                env=minimal_environment(self._env),
                max_output_bytes=skill.limits.max_output_bytes,
            )
        except OSError as exc:
            raise SkillFileError(
                f"the script {requested!r} could not be started: {exc.strerror or exc}"
                + _START_HINTS.get(exc.errno or 0, "")
            ) from None
        if output["exit_code"] == 0:
            return output
        tail = output["stderr"].strip()[-500:]
        return ToolResult(
            success=False,
            output=output,
            error=f"the script {requested!r} exited with code {output['exit_code']}"
            + (f": {tail}" if tail else ""),
            error_type="SkillScriptError",
        )

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        """Nothing to release: every call's process is gone when the call returns."""
