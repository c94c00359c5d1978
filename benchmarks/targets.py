"""The restated performance targets: each measured value beside its target, with a verdict.

The earlier targets put a call against the bare function (``execute`` within 10x
of it, ``aexecute`` within 20x) and every peer against ``execute`` (at least 25x
slower). The restated ones compare toolcycle with the work a user would
otherwise run in its place, each measured side by side in the same run:

1. ``execute`` with jsonschema-rs adds at most `EXECUTE_ADDED_US` to the call
   between two cached jsonschema-rs validations written by hand (difference of
   the medians).
2. ``aexecute`` of an ``async def`` tool is faster than pydantic-ai's
   ``FunctionToolset.call_tool`` after ``args_validator.validate_json`` of the
   JSON text, the OpenAI Agents SDK's ``FunctionTool.on_invoke_tool`` and
   LangChain's ``StructuredTool.ainvoke`` of the same async function.
3. ``acall`` of an OpenAI-format tool call of an ``@tool`` async function is
   faster than pydantic-ai's ``ToolManager.handle_call`` of a ``ToolCallPart``
   with the same JSON arguments.
4. ``import toolcycle`` takes at most `IMPORT_ABOVE_FLOOR_MS` more than the floor
   of its dependencies (pydantic, asyncio, logging and one model class).
5. 8 threads on one plan reach at least `THREADS_MIN` of one thread's throughput
   (CPython with the GIL). Beside it, the same ratio for a plain Python function
   of the same cost, taken in the same rounds: the GIL's own floor, which no
   library code under the GIL can beat.
6. Discovering 1,000 Agent Skills of 100 KB, from ``register_source`` on a fresh
   runtime to the tools listed, is at least `SKILLS_SPEEDUP` times faster than
   skills-ref's ``read_properties`` of each folder (best of two warm runs).
7. Over stdio, an MCP ``execute`` and ``aexecute`` cost at most `MCP_CALL` and an
   activation `MCP_ACTIVATION` of the SDK alone.

Each side of a comparison comes from benchmarks that the runner took in turns
(one repeat of each, then the next round), so a ratio is the median of the
ratios of repeats taken side by side, which a slow spell of a shared machine
moves far less than a ratio of two separate medians. `restated` builds the rows
from the runner's repeats and `print_restated` prints them.
"""

from __future__ import annotations

import statistics
from typing import Any

EXECUTE_ADDED_US = 4.0
"""What sync ``execute`` may add to the hand-written validated call, in microseconds."""

IMPORT_ABOVE_FLOOR_MS = 25.0
"""What ``import toolcycle`` may take beyond the floor of its dependencies, in milliseconds."""

THREADS_MIN = 0.9
"""8 threads' throughput on one plan against one thread's: at least this."""

SKILLS_SPEEDUP = 5.0
"""skills-ref's time over toolcycle's on the user's path: at least this."""

MCP_CALL = 1.10
"""An MCP call over stdio through toolcycle against the SDK alone: at most this."""

MCP_ACTIVATION = 1.05
"""An MCP activation over stdio against opening a session with the SDK: at most this."""

MCP_INPROCESS = 1.25
"""An in-process MCP aexecute against the SDK's own ``Client(server).call_tool``: at most this."""

EXECUTE = "time_peer_toolcycle_execute_jsonschema_rs"
BY_HAND = "time_peer_jsonschema_rs_by_hand"
AEXECUTE = "time_peer_toolcycle_aexecute_jsonschema_rs"
ACALL = "time_peer_toolcycle_acall"

ASYNC_RIVALS = (
    (
        "pydantic-ai FunctionToolset.call_tool (validate_json)",
        "time_peer_pydantic_ai_call_tool_json",
    ),
    ("OpenAI Agents FunctionTool.on_invoke_tool", "time_peer_openai_agents_on_invoke_tool"),
    ("LangChain StructuredTool.ainvoke (async tool)", "time_peer_langchain_ainvoke"),
)
"""The peers of target 2, by label and benchmark name."""

REPLACES = {
    "1": "toolcycle execute (jsonschema-rs) / bare call <= 10x",
    "2": "toolcycle aexecute (jsonschema-rs) / bare call <= 20x; each peer / execute >= 25x",
    "3": "pydantic-ai ToolManager.handle_call / execute >= 25x",
    "4": "import toolcycle < 150 ms",
    "5": "8 threads / 1 thread >= 1.0",
    "6": "(new: the user's path; the register_source figure is kept)",
    "7": "(unchanged; now the median of paired ratios)",
}
"""The earlier target each restated one takes the place of."""


def _median(runs: dict[str, list[float]], name: str) -> float:
    return statistics.median(runs[name])


def paired_ratio(runs: dict[str, list[float]], ours: str, theirs: str) -> tuple[float, int]:
    """The median over rounds of ``ours / theirs``, and the number of rounds paired."""
    pairs = list(zip(runs[ours], runs[theirs], strict=False))
    return statistics.median(a / b for a, b in pairs), len(pairs)


def paired_difference(runs: dict[str, list[float]], ours: str, theirs: str) -> tuple[float, int]:
    """The median over rounds of ``ours - theirs``, and the number of rounds paired."""
    pairs = list(zip(runs[ours], runs[theirs], strict=False))
    return statistics.median(a - b for a, b in pairs), len(pairs)


def _row(number: str, measure: str, result: str, target: str, met: bool | None) -> dict[str, Any]:
    return {
        "number": number,
        "measure": measure,
        "result": result,
        "target": target,
        "met": met,
        "replaces": REPLACES[number[0]],
    }


def _missing(number: str, measure: str, target: str, why: str) -> dict[str, Any]:
    return _row(number, measure, f"not measured: {why}", target, None)


def _faster(ratio: float) -> str:
    return f"{1 / ratio:.2f}x faster" if ratio <= 1 else f"{ratio:.2f}x slower"


def restated(runs: dict[str, list[float]], modules: set[str]) -> list[dict[str, Any]]:
    """The rows of the restated targets from the runner's repeats (seconds per call).

    Args:
        runs: seconds per call of every repeat, by benchmark name, in round order.
        modules: the names of the benchmark modules that ran (``--only``).

    Returns:
        One row per target or comparison: ``{"number", "measure", "result",
        "target", "met", "replaces"}``; ``met`` is None for one not measured.
    """
    rows: list[dict[str, Any]] = []
    rows += _per_call(runs, "peers" in modules)
    rows += _scale(runs, "scale" in modules)
    rows += _skills(runs, "skills" in modules)
    rows += _mcp(runs, "mcp" in modules)
    return rows


def _per_call(runs: dict[str, list[float]], ran: bool) -> list[dict[str, Any]]:
    why = "run the peers module" if not ran else "jsonschema-rs is not installed"
    measure = (
        "sync execute (jsonschema-rs): added to the call between cached jsonschema-rs "
        "input and output validations written by hand"
    )
    rows = []
    if EXECUTE in runs and BY_HAND in runs:
        ours, theirs = _median(runs, EXECUTE) * 1e6, _median(runs, BY_HAND) * 1e6
        added = ours - theirs
        rows.append(
            _row(
                "1",
                measure,
                f"{added:.1f} us (execute {ours:.1f} us, by hand {theirs:.1f} us; medians "
                f"of {len(runs[EXECUTE])} rounds)",
                f"<= {EXECUTE_ADDED_US:.0f} us",
                added <= EXECUTE_ADDED_US,
            )
        )
    else:
        rows.append(_missing("1", measure, f"<= {EXECUTE_ADDED_US:.0f} us", why))
    for index, (label, name) in enumerate(ASYNC_RIVALS):
        number = f"2{'abc'[index]}"
        measure = f"aexecute (async def tool, jsonschema-rs) / {label}"
        if AEXECUTE in runs and name in runs:
            ratio, rounds = paired_ratio(runs, AEXECUTE, name)
            rows.append(
                _row(
                    number,
                    measure,
                    f"{ratio:.2f}x, {_faster(ratio)} ({_median(runs, AEXECUTE) * 1e6:.1f} us "
                    f"against {_median(runs, name) * 1e6:.1f} us; {rounds} rounds)",
                    "< 1x",
                    ratio < 1,
                )
            )
        else:
            rows.append(_missing(number, measure, "< 1x", why if not ran else "not installed"))
    rival = "time_peer_pydantic_ai_handle_call_json"
    measure = (
        "acall of an OpenAI-format tool call (@tool async function) / "
        "pydantic-ai ToolManager.handle_call of a ToolCallPart (JSON arguments)"
    )
    if ACALL in runs and rival in runs:
        ratio, rounds = paired_ratio(runs, ACALL, rival)
        rows.append(
            _row(
                "3",
                measure,
                f"{ratio:.2f}x, {_faster(ratio)} ({_median(runs, ACALL) * 1e6:.1f} us "
                f"against {_median(runs, rival) * 1e6:.1f} us; {rounds} rounds)",
                "< 1x",
                ratio < 1,
            )
        )
    else:
        rows.append(_missing("3", measure, "< 1x", why if not ran else "not installed"))
    return rows


def _scale(runs: dict[str, list[float]], ran: bool) -> list[dict[str, Any]]:
    rows = []
    measure = (
        "import toolcycle, beyond the floor of its dependencies "
        "(pydantic, asyncio, logging, one model class)"
    )
    target = f"<= {IMPORT_ABOVE_FLOOR_MS:.0f} ms"
    ours, floor, bare = (
        "time_scale_import_toolcycle",
        "time_scale_import_dependencies",
        "time_scale_import_baseline",
    )
    if ran:
        above, rounds = paired_difference(runs, ours, floor)
        above_ms = above * 1e3
        rows.append(
            _row(
                "4",
                measure,
                f"+{above_ms:.0f} ms (import {(_median(runs, ours) - _median(runs, bare)) * 1e3:.0f}"
                f" ms, floor {(_median(runs, floor) - _median(runs, bare)) * 1e3:.0f} ms beyond "
                f"starting Python; medians of {rounds} rounds)",
                target,
                above_ms <= IMPORT_ABOVE_FLOOR_MS,
            )
        )
        ratio, rounds = paired_ratio(runs, "time_scale_threads_1", "time_scale_threads_8")
        rows.append(
            _row(
                "5",
                "8 threads running warm executes on one plan / 1 thread, aggregate "
                "throughput (CPython with the GIL)",
                f"{ratio:.2f}x ({_gil_floor(runs)}median of {rounds} rounds; "
                "no free-threaded CPython measured)",
                f">= {THREADS_MIN:.1f}x",
                ratio >= THREADS_MIN,
            )
        )
    else:
        rows.append(_missing("4", measure, target, "run the scale module"))
        rows.append(
            _missing("5", "8 threads / 1 thread", f">= {THREADS_MIN:.1f}x", "run the scale module")
        )
    return rows


def _gil_floor(runs: dict[str, list[float]]) -> str:
    """Target 5's baseline, 8 threads / 1 thread of a plain function of the same cost."""
    single, threaded = "time_scale_threads_plain_1", "time_scale_threads_plain_8"
    if single not in runs or threaded not in runs:
        return ""
    floor, _ = paired_ratio(runs, single, threaded)
    return f"a plain Python function of the same cost, the GIL's floor: {floor:.2f}x; "


def _skills(runs: dict[str, list[float]], ran: bool) -> list[dict[str, Any]]:
    measure = (
        "Agent Skills discovery, 1,000 x 100 KB: skills-ref read_properties of each folder "
        "/ toolcycle from register_source on a fresh runtime to descriptors()"
    )
    target = f">= {SKILLS_SPEEDUP:.0f}x faster"
    if not ran:
        return [_missing("6", measure, target, "run the skills module")]
    ours = min(runs["time_skills_user_register_100kb"])
    theirs = min(runs["time_skills_user_read_properties_100kb"])
    speedup = theirs / ours
    return [
        _row(
            "6",
            measure,
            f"{speedup:.1f}x faster (toolcycle {ours * 1e3:.0f} ms, skills-ref "
            f"{theirs * 1e3:.0f} ms; best of {len(runs['time_skills_user_register_100kb'])} "
            "warm runs)",
            target,
            speedup >= SKILLS_SPEEDUP,
        )
    ]


MCP_ROWS = (
    (
        "7a",
        "MCP over stdio: execute / the SDK driven from sync code (its loop on a thread)",
        "time_mcp_execute_stdio",
        "time_mcp_sync_direct_stdio",
        MCP_CALL,
    ),
    (
        "7b",
        "MCP over stdio: aexecute / the SDK's send_request awaited",
        "time_mcp_aexecute_stdio",
        "time_mcp_direct_stdio",
        MCP_CALL,
    ),
    (
        "7c",
        "MCP over stdio: activation / opening a session (start, initialize, stop)",
        "time_mcp_activation_stdio",
        "time_mcp_direct_session_open_stdio",
        MCP_ACTIVATION,
    ),
    (
        "7d",
        "MCP in process: aexecute on the plan's loop / the SDK's Client(server).call_tool",
        "time_mcp_aexecute_inprocess",
        "time_mcp_sdk_client_inprocess",
        MCP_INPROCESS,
    ),
)
"""Target 7's comparisons: number, measure, toolcycle's benchmark, the SDK's, the limit."""


def _mcp(runs: dict[str, list[float]], ran: bool) -> list[dict[str, Any]]:
    rows = []
    for number, measure, ours, theirs, limit in MCP_ROWS:
        target = f"<= {limit:.2f}x"
        if not ran:
            rows.append(_missing(number, measure, target, "run the mcp module"))
            continue
        ratio, rounds = paired_ratio(runs, ours, theirs)
        rows.append(
            _row(
                number,
                measure,
                f"{ratio:.2f}x ({_median(runs, ours) * 1e6:,.0f} us against "
                f"{_median(runs, theirs) * 1e6:,.0f} us; median of {rounds} rounds)",
                target,
                ratio <= limit,
            )
        )
    return rows


def verdict(met: bool | None) -> str:
    """``met``, ``not met`` or ``not measured``."""
    return "not measured" if met is None else "met" if met else "not met"


def print_restated(rows: list[dict[str, Any]]) -> None:
    """Print every restated target's row: the measure, the value, the target, the verdict."""
    print("restated targets (each measured side by side in this run):")
    for row in rows:
        print(f"  [{row['number']}] {row['measure']}")
        print(f"       = {row['result']}")
        print(f"       target {row['target']}: {verdict(row['met'])}; replaces: {row['replaces']}")
