"""Steps for Agent Skills folders as a tool source."""

from __future__ import annotations

import shutil
import tempfile
import textwrap
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import psutil
from behave import given, step, then, when

import toolcycle

WAIT = 5.0
"""Upper bound, in seconds, of every wait in these steps."""

HANG = """\
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(f"{os.getpid()} {child.pid}")
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(60)
"""


def _skills(context: Any) -> Any:
    from toolcycle.sources import skills

    return skills


def _root(context: Any) -> Path:
    if not hasattr(context, "skills_root"):
        context.skills_root = Path(tempfile.mkdtemp(prefix="toolcycle-skills-"))
        context.add_cleanup(shutil.rmtree, context.skills_root, True)
    return context.skills_root / "skills"


def _write(folder: Path, front: str, body: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(f"---\n{front}\n---\n{body}\n", encoding="utf-8")


def _register(context: Any, **options: Any) -> None:
    skills = _skills(context)
    context.skills_dir = skills.SkillDirectory(_root(context), **options)
    context.error = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            context.runtime.register_source(context.skills_dir)
        except toolcycle.ToolRegistrationError as exc:
            context.error = exc
    context.warnings = [str(w.message) for w in caught]


def _wait_for(path: Path) -> str:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if path.exists():
            return path.read_text()
        time.sleep(0.01)
    raise AssertionError(f"{path} never appeared")


# -- folders --------------------------------------------------------------------------------


@given('a skills folder with the skills "{first:Name}" and "{second:Name}"')
def skills_folder(context: Any, first: str, second: str) -> None:
    for name in (first, second):
        _write(
            _root(context) / name,
            f"name: {name}\ndescription: Helps with {name}.",
            f"Steps for {name}.",
        )


@given('a skill folder "{folder:Name}" whose front matter is:')
def skill_with_front_matter(context: Any, folder: str) -> None:
    _write(_root(context) / folder, textwrap.dedent(context.text).strip(), "Body.")


@given('the skill "{name:Name}" bundles "{relative}" with the text "{text}"')
def bundled_file(context: Any, name: str, relative: str, text: str) -> None:
    target = _root(context) / name / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


@given('a file outside the skills folder, linked from "{name:Name}" as "{link}"')
def outside_file(context: Any, name: str, link: str) -> None:
    outside = _root(context).parent / "outside.md"
    outside.write_text("TOP SECRET", encoding="utf-8")
    (_root(context) / name / link).symlink_to(outside)


@given('the skill "{name:Name}" has a script "{relative}" that prints "{text}"')
def printing_script(context: Any, name: str, relative: str, text: str) -> None:
    bundled_file(context, name, relative, f"print({text!r})\n")


@given('the skill "{name:Name}" has a script "{relative}" that hangs after starting a child')
def hanging_script(context: Any, name: str, relative: str) -> None:
    bundled_file(context, name, relative, HANG)


@when('the instructions of "{name:Name}" are changed to "{text}"')
def change_instructions(context: Any, name: str, text: str) -> None:
    _write(_root(context) / name, f"name: {name}\ndescription: Helps with {name}.", text)


# -- registration ----------------------------------------------------------------------------


@step("I register the skills folder")
def register(context: Any) -> None:
    _register(context)


@step("I register the skills folder strictly")
def register_strictly(context: Any) -> None:
    _register(context, strict=True)


@step("I register the skills folder with scripts enabled")
def register_with_scripts(context: Any) -> None:
    _register(context, scripts=True)


@when("I register the skills folder with scripts enabled in a new runtime")
def register_with_scripts_anew(context: Any) -> None:
    context.make_runtime()
    _register(context, scripts=True)


@then('the registered tools are "{names}"')
def registered_tools(context: Any, names: str) -> None:
    listed = sorted(d.name for d in context.runtime.descriptors())
    assert listed == [n.strip() for n in names.split(",")], listed


@then('the tool "{name:Name}" comes from skill "{skill:Name}" and does not write')
def from_skill(context: Any, name: str, skill: str) -> None:
    descriptor = context.runtime.descriptor(name)
    assert (descriptor.source, descriptor.source_name) == ("skill", skill), descriptor
    assert descriptor.capability.writes is False


@then('the description of "{name:Name}" is the one in its front matter')
def description_from_front_matter(context: Any, name: str) -> None:
    assert context.runtime.descriptor(name).description == f"Helps with {name}."


@then('the skill "{folder:Name}" was reported for breaking "{rule}"')
def reported(context: Any, folder: str, rule: str) -> None:
    found = [(r.path.name, r.rule) for r in context.skills_dir.reports]
    assert (folder, rule) in found, found


@then('the registration warned about "{folder:Name}" with the hint "{hint}"')
def warned(context: Any, folder: str, hint: str) -> None:
    assert any(repr(folder) in w and hint in w for w in context.warnings), context.warnings


@then('registering fails with SkillValidationError naming "{rule}"')
def registration_refused(context: Any, rule: str) -> None:
    assert isinstance(context.error, _skills(context).SkillValidationError), repr(context.error)
    assert rule in str(context.error)


@then("no tool is registered")
def nothing_registered(context: Any) -> None:
    assert not context.runtime.descriptors()


# -- calls ------------------------------------------------------------------------------------


@when('I call "{name:Name}" again')
def call_again(context: Any, name: str) -> None:
    context.result = context.runtime.execute(name, {}, context.plan)
    context.results.append(context.result)


@when('a new plan "{plan_id:Name}" calls "{name:Name}"')
def new_plan_calls(context: Any, plan_id: str, name: str) -> None:
    with context.runtime.plan(plan_id) as ctx:
        context.result = context.runtime.execute(name, {}, ctx)


@then('both calls returned the instructions "{text}"')
def both_returned(context: Any, text: str) -> None:
    assert [r.output["text"] for r in context.results] == [text, text], context.results


@then('the call returned the instructions "{text}"')
def returned(context: Any, text: str) -> None:
    assert context.result.success, context.result
    assert context.result.output["text"] == text, context.result.output


@then('the instructions list the files "{names}"')
def lists_files(context: Any, names: str) -> None:
    assert context.result.output["files"] == [n.strip() for n in names.split(",")]


@then("the outside file's text is not in the result")
def not_leaked(context: Any) -> None:
    assert "TOP SECRET" not in str(context.result.output)
    assert "TOP SECRET" not in str(context.result.error)


@then('the script printed "{text}" and exited with {code:d}')
def script_printed(context: Any, text: str, code: int) -> None:
    assert context.error is None, repr(context.error)
    output = context.result.output
    assert (output["stdout"], output["exit_code"]) == (text + "\n", code), output


def _run_hanging(context: Any, script: str, skill: str, **options: Any) -> None:
    context.pid_file = _root(context).parent / "pids.txt"
    params = {"script": script, "args": [str(context.pid_file)]}
    context.error = None
    context.result = None
    try:
        context.result = context.runtime.execute(
            f"{skill}.run_script", params, context.plan, **options
        )
    except toolcycle.ToolCancelledError as exc:
        context.error = exc


@when('I run "{script}" of "{skill:Name}" and cancel the plan once it has started')
def run_and_cancel(context: Any, script: str, skill: str) -> None:
    plan = context.plan

    def cancel() -> None:
        _wait_for(_root(context).parent / "pids.txt")
        context.cancelled_at = time.monotonic()
        plan.cancellation_token.cancel("stop")

    canceller = threading.Thread(target=cancel)
    canceller.start()
    _run_hanging(context, script, skill)
    context.returned_at = time.monotonic()
    canceller.join(WAIT)
    assert not canceller.is_alive()
    assert context.returned_at - context.cancelled_at < 1.0


@when('I run "{script}" of "{skill:Name}" with a timeout of {seconds:g} seconds')
def run_with_timeout(context: Any, script: str, skill: str, seconds: float) -> None:
    _run_hanging(context, script, skill, timeout=seconds)


@then("the call timed out")
def timed_out(context: Any) -> None:
    assert context.error is None, repr(context.error)
    assert context.result.trace.status == "timed_out", context.result


@then("no process the script started is running")
def no_process_left(context: Any) -> None:
    pids = [int(pid) for pid in _wait_for(context.pid_file).split()]
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        alive = [
            pid
            for pid in pids
            if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        ]
        if not alive:
            return
        time.sleep(0.01)
    raise AssertionError(f"still running: {alive}")


# -- prompt ----------------------------------------------------------------------------------


@when("I render the prompt block of the skills folder")
def render_prompt(context: Any) -> None:
    context.skills_dir = _skills(context).SkillDirectory(_root(context))
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        context.prompt = context.skills_dir.prompt()


@then('the prompt block lists the skills "{names}" with their SKILL.md locations')
def prompt_lists(context: Any, names: str) -> None:
    expected = ["<available_skills>"]
    for name in (n.strip() for n in names.split(",")):
        location = (_root(context) / name / "SKILL.md").resolve()
        expected += ["<skill>", "<name>", name, "</name>", "<description>"]
        expected += [f"Helps with {name}.", "</description>", "<location>", str(location)]
        expected += ["</location>", "</skill>"]
    expected.append("</available_skills>")
    assert context.prompt == "\n".join(expected), context.prompt
