"""Run the benchmarks and print per-call times and the ratios that matter.

Usage: ``python -m benchmarks`` from the repository root (``nox -s bench`` does this).
``--only peers,scale`` runs some of the modules (by the names in `MODULES`) and
``--write-docs`` rewrites the results part of ``docs/performance.md`` and its two
charts (it needs ``peers`` and ``scale`` in the run); a plain run writes no file.

Each benchmark is timed with several timeit repeats in one process, the repeats of
a module's benchmarks taken in turns so that a slow spell of the machine falls on
all of them alike (a benchmark that sets asv's ``number`` and ``repeat``
attributes, such as the MCP activations that start a process each time, runs
exactly that often instead); asv-style ``track_*`` functions, which return a
measured value rather than being timed, are called once. A module may set
``ROUNDS`` (repeats) and ``ROUND_SECONDS`` (how long one repeat of a calibrated
benchmark lasts at least) for its benchmarks. The table shows the best and the
median repeat; the earlier ratios use the best, which is the least disturbed by
other work on the machine. The restated targets (`benchmarks.targets`), printed
last, use the median of the ratios taken round by round instead. Ratios taken in
one run are meaningful on any machine; absolute times are not. Nothing here fails
on a number: this is a measurement, not a test. The absolute time of each core
operation, commit by commit, is the asv suite's to follow (``benchmarks/asv/``,
``asv.conf.json``).
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import time
import timeit
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from types import ModuleType

MODULES = {
    "mcp": "benchmarks.bench_mcp",
    "skills": "benchmarks.bench_skills",
    "peers": "benchmarks.bench_peers",
    "scale": "benchmarks.bench_scale",
    "memory": "benchmarks.bench_memory",
    "patterns": "benchmarks.bench_patterns",
    "adapters": "benchmarks.bench_adapters",
    "features": "benchmarks.bench_features",
    "search": "benchmarks.bench_search",
}
"""Every benchmark module by the name ``--only`` takes, in the order they run."""

REPEATS = 7
MCP_CALL_TARGET = 1.10
MCP_ACTIVATION_TARGET = 1.05
SKILLS_SPEEDUP_TARGET = 5.0
EXECUTE_TARGET = 10.0
"""toolcycle execute with the fast backend against the bare call: at most this many times."""
AEXECUTE_TARGET = 20.0
"""toolcycle aexecute with the fast backend against the bare call: at most this many times."""
PEER_SPEEDUP_TARGET = 25.0
"""Each peer library against toolcycle execute with the fast backend: at least this much slower."""
THREADS_TARGET = 1.0
"""Throughput of 8 threads on one plan against one thread: at least this."""
CONCURRENT_TARGET_S = 0.5
"""Wall time of 1,000 concurrent aexecute calls that sleep 50 ms each: at most this."""
IMPORT_TARGET_MS = 150.0
"""``import toolcycle`` in a fresh interpreter, beyond starting Python: under this."""
RSS_GROWTH_TARGET_MIB = 5.0
"""Resident set growth over 1,000,000 calls: under this."""
PLAN_BYTES_TARGET = 2048
"""Memory of one idle plan with one active tool: under this."""
REDOS_TARGET_MS = 10.0
"""100 ReDoS patterns, each validated against a 1 KB attack string, on one backend: under this."""


def calibrate(timer: timeit.Timer, seconds: float) -> int:
    """The smallest of 1, 2, 5, 10, 20, 50, ... calls that take at least ``seconds``."""
    scale = 1
    while True:
        for step in (1, 2, 5):
            number = scale * step
            if timer.timeit(number) >= seconds:
                return number
        scale *= 10


def measure(
    fns: dict[str, Callable[[], None]], rounds: int = REPEATS, round_seconds: float = 0.2
) -> dict[str, list[float]]:
    """Seconds per call of each of ``fns`` in every repeat, the repeats taken in turns.

    Each function is calibrated once (``round_seconds`` a repeat at least), then
    the repeats go round: one repeat of each function, then the next round. A slow
    spell on a shared machine so lands on every benchmark of the module alike,
    instead of on whichever happened to be running, which keeps the ratios between
    them honest, and the repeats of two benchmarks with the same index were taken
    side by side, so their ratio can be taken round by round.

    A benchmark that makes several calls per run says how many in its ``calls``
    attribute; one that sets ``number`` is run that many times per repeat, for
    ``repeat`` repeats (default ``rounds``), without calibration.
    """
    plans: dict[str, tuple[timeit.Timer, int, int]] = {}
    for name, fn in fns.items():
        timer = timeit.Timer(fn)
        number = getattr(fn, "number", None)
        if number is None:
            number = calibrate(timer, round_seconds)
        plans[name] = (timer, number, getattr(fn, "repeat", rounds))
    runs: dict[str, list[float]] = {name: [] for name in fns}
    for turn in range(max((repeat for _, _, repeat in plans.values()), default=0)):
        for name, (timer, number, repeat) in plans.items():
            if turn < repeat:
                runs[name].append(timer.timeit(number))
    return {
        name: [run / (number * getattr(fns[name], "calls", 1)) for run in runs[name]]
        for name, (_, number, _) in plans.items()
    }


def best_and_median(runs: dict[str, list[float]]) -> dict[str, tuple[float, float]]:
    """The best and the median of each benchmark's repeats."""
    return {name: (min(each), statistics.median(each)) for name, each in runs.items()}


def run_module(
    module: ModuleType,
) -> tuple[dict[str, list[float]], dict[str, float]]:
    """Time the module's ``time_*`` functions and call its ``track_*`` functions once.

    Returns:
        Seconds per call of every repeat by ``time_*`` name, in the order of the
        rounds, and the value each ``track_*`` function returned by its name.
    """
    module.setup()
    try:
        names = sorted(dir(module))
        runs = measure(
            {name: getattr(module, name) for name in names if name.startswith("time_")},
            rounds=getattr(module, "ROUNDS", REPEATS),
            round_seconds=getattr(module, "ROUND_SECONDS", 0.2),
        )
        tracks = {
            name: float(getattr(module, name)()) for name in names if name.startswith("track_")
        }
        return runs, tracks
    finally:
        module.teardown()


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line: ``--only`` and ``--write-docs``."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--only",
        metavar="NAME[,NAME]",
        help=f"run only these modules, comma-separated, from: {', '.join(MODULES)}",
    )
    parser.add_argument(
        "--write-docs",
        action="store_true",
        help="rewrite the results part of docs/performance.md and its charts in docs/img/",
    )
    args = parser.parse_args(argv)
    selected = list(MODULES)
    if args.only:
        asked = [name.strip() for name in args.only.split(",") if name.strip()]
        unknown = [name for name in asked if name not in MODULES]
        if unknown or not asked:
            parser.error(f"--only takes names from {', '.join(MODULES)}; got {args.only!r}")
        selected = [name for name in MODULES if name in asked]
    if args.write_docs and not {"peers", "scale"} <= set(selected):
        parser.error("--write-docs needs the peers and scale modules in the run")
    args.selected = selected
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Time the selected benchmarks, print the table and the ratios; always returns 0."""
    args = parse_args(argv)
    runs: dict[str, list[float]] = {}
    tracks: dict[str, float] = {}
    modules: dict[str, ModuleType] = {}
    started = time.perf_counter()
    for name in args.selected:
        print(f"running {name} benchmarks ...", file=sys.stderr, flush=True)
        began = time.perf_counter()
        modules[name] = importlib.import_module(MODULES[name])
        found, tracked = run_module(modules[name])
        runs |= found
        tracks |= tracked
        print(f"  {name}: {time.perf_counter() - began:.0f} s", file=sys.stderr, flush=True)
    timings = best_and_median(runs)
    results = {name: best * 1e6 for name, (best, _) in timings.items()}
    if timings:
        width = max(len(name) for name in results)
        print(f"{'benchmark':<{width}}  {'best us':>12}  {'median us':>12}  {'rounds':>6}")
        for name, (best, median) in timings.items():
            print(f"{name:<{width}}  {best * 1e6:12.2f}  {median * 1e6:12.2f}  {len(runs[name]):6}")
    targets: list[dict[str, Any]] = []
    found_by: dict[str, Any] = {}
    sections: dict[str, Callable[[], Any]] = {
        "mcp": lambda: print_mcp_ratios(results, runs),
        "skills": lambda: print_skills_ratios(results),
        "peers": lambda: print_peers(modules["peers"], timings, targets),
        "scale": lambda: print_scale(modules["scale"], timings, targets),
        "memory": lambda: print_memory(modules["memory"], tracks, targets),
        "patterns": lambda: print_patterns(results, targets),
        "adapters": lambda: print_adapters(modules["adapters"], targets),
        "features": lambda: print(
            "\n".join(modules["features"].report(modules["features"].measure()))
        ),
        "search": lambda: print_search(modules["search"], timings, tracks, targets),
    }
    for index, name in enumerate(modules):
        if timings or index:
            print()
        found_by[name] = sections[name]()
    from benchmarks import targets as restated_targets

    restated = restated_targets.restated(runs, set(modules))
    print()
    restated_targets.print_restated(restated)
    print(
        f"\nthe whole run took {time.perf_counter() - started:.0f} s",
        file=sys.stderr,
        flush=True,
    )
    peers, scale = found_by.get("peers"), found_by.get("scale")
    if args.write_docs and peers is not None and scale is not None:
        from benchmarks import report

        doc = report.update_results(report.results_markdown(peers, scale, targets, restated))
        print()
        print(f"wrote {doc} and the charts in {report.IMG_DIR}")
    return 0


MCP_INPROCESS_TARGET = 1.25
"""In-process aexecute against the SDK's own Client(server).call_tool of the same tool."""


def print_mcp_ratios(results: dict[str, float], runs: dict[str, list[float]]) -> None:
    """Each MCP benchmark against the SDK alone on the same kind of server, beside its target."""
    from benchmarks.targets import paired_ratio

    rows = (
        [
            (f"mcp {call} ({where}) / direct send_request", f"{call}_{key}", f"direct_{key}")
            for where, key in (("in process", "inprocess"), ("stdio", "stdio"))
            for call in ("execute", "aexecute")
        ]
        + [
            (
                "mcp aexecute (stdio, plan on the MCP loop: a hop) / direct",
                "aexecute_stdio_hop",
                "direct_stdio",
            )
        ]
        + [
            (
                f"mcp execute ({where}) / sync direct send_request",
                f"execute_{key}",
                f"sync_direct_{key}",
            )
            for where, key in (("in process", "inprocess"), ("stdio", "stdio"))
        ]
    )
    width = 56
    for label, ours, theirs in rows:
        ratio = results[f"time_mcp_{ours}"] / results[f"time_mcp_{theirs}"]
        print(f"{label:<{width}} = {ratio:.2f}x (target <= {MCP_CALL_TARGET:.2f})")
    # The runtime always asks for progress (its trace counts the reports); so does this twin.
    ratio = results["time_mcp_aexecute_inprocess"] / results["time_mcp_direct_inprocess_progress"]
    label = "mcp aexecute (in process) / direct with progress"
    print(f"{label:<{width}} = {ratio:.2f}x (target <= {MCP_CALL_TARGET:.2f})")
    # The honest in-process baseline: what an SDK user gets from Client(server), as
    # the median of the ratios taken round by round (the rounds ran side by side).
    for where, ours in (
        ("in process, on its plan's loop", "aexecute_inprocess"),
        ("in process, same_loop=False: a hop", "aexecute_inprocess_hop"),
    ):
        ratio, rounds = paired_ratio(runs, f"time_mcp_{ours}", "time_mcp_sdk_client_inprocess")
        label = f"mcp aexecute ({where}) / SDK Client(server).call_tool"
        print(
            f"{label} = {ratio:.2f}x (target <= {MCP_INPROCESS_TARGET:.2f}; "
            f"median of {rounds} per-round ratios)"
        )
    ratio = results["time_mcp_direct_inprocess_progress"] / results["time_mcp_direct_inprocess"]
    label = "direct with progress / direct send_request"
    print(f"{label:<{width}} = {ratio:.2f}x (what asking for progress costs the SDK)")
    ratio = results["time_mcp_activation_stdio"] / results["time_mcp_direct_session_open_stdio"]
    label = "mcp activation (stdio) / direct session open"
    print(f"{label:<{width}} = {ratio:.2f}x (target <= {MCP_ACTIVATION_TARGET:.2f})")
    ratio = results["time_stdio_lines_16mib"] / results["time_stdio_lines_16mib_joined"]
    label = "stdio: 16 MiB message from 64 KiB reads / one join and split"
    print(f"{label:<{width}} = {ratio:.2f}x (re-joining the message on every read: ~40x)")
    # What code run between two SDK calls costs there, against what it costs alone.
    work = results["time_mcp_caller_work"]
    between = results["time_mcp_direct_inprocess_with_work"] - results["time_mcp_direct_inprocess"]
    added = results["time_mcp_aexecute_inprocess"] - results["time_mcp_sdk_client_inprocess"]
    print(
        f"caller work between SDK calls: {between:.1f} us, alone: {work:.1f} us; "
        f"an in-process aexecute on its loop adds {added:.1f} us to Client(server).call_tool"
    )
    ratio = (
        results["time_mcp_aexecute_inprocess_with_work"]
        / results["time_mcp_direct_inprocess_with_work"]
    )
    label = "mcp aexecute (in process) + work / direct + work"
    print(f"{label:<{width}} = {ratio:.2f}x (target <= {MCP_CALL_TARGET:.2f})")


def print_skills_ratios(results: dict[str, float]) -> None:
    """Skills discovery as a speed-up over skills-ref's read_properties, beside its target."""
    from benchmarks import bench_skills

    rows = [
        (f"skills read_properties / register_source ({bench_skills.SKILL_COUNT:,} x {size})", key)
        for size, key in (("100 KB", "100kb"), ("1 KB", "1kb"))
    ]
    width = max(len(label) for label, _ in rows) + 1
    for label, key in rows:
        ours = results[f"time_skills_register_{key}"]
        theirs = results[f"time_skills_read_properties_{key}"]
        print(
            f"{label:<{width}} = {theirs / ours:.1f}x faster "
            f"(target >= {SKILLS_SPEEDUP_TARGET:.0f}x): "
            f"toolcycle {ours / 1e3:.0f} ms, skills-ref {theirs / 1e3:.0f} ms"
        )
    ours = results["time_skills_user_register_100kb"]
    theirs = results["time_skills_user_read_properties_100kb"]
    print(
        f"user's path, fresh runtime to descriptors() (1,000 x 100 KB) = {theirs / ours:.1f}x "
        f"faster: toolcycle {ours / 1e3:.0f} ms, skills-ref {theirs / 1e3:.0f} ms "
        "(restated target 6, below)"
    )


def print_adapters(module: ModuleType, targets: list[dict[str, Any]]) -> None:
    """Each framework adapter against the framework's own tool call, beside the target."""
    print("framework adapters, median of interleaved rounds (us per call):")
    for framework, row in module.measure_adapters().items():
        if isinstance(row, str):
            print(f"{framework} adapter: {row}")
            continue
        _target(
            targets,
            f"{framework} adapter / native tool ({row['adapter_us']:.1f} / "
            f"{row['native_us']:.1f} us)",
            f"{row['ratio']:.2f}x",
            f"<= {module.TARGET:.2f}x",
            row["ratio"] <= module.TARGET,
        )


def _verdict(met: bool) -> str:
    return "met" if met else "not met"


def _target(
    targets: list[dict[str, Any]],
    measure: str,
    result: str,
    target: str,
    met: bool,
    replaced_by: str = "",
) -> None:
    """Print one measure beside its target and keep it for the docs' target table.

    ``replaced_by`` names the restated target (`benchmarks.targets`) that took the
    place of this earlier one, if any; the earlier one is still measured and shown.
    """
    note = f"; replaced by restated target {replaced_by}" if replaced_by else ""
    print(f"{measure} = {result} (target {target}: {_verdict(met)}{note})")
    targets.append(
        {
            "measure": measure,
            "result": result,
            "target": target,
            "met": met,
            "replaced_by": replaced_by,
        }
    )


def print_peers(
    module: ModuleType, timings: dict[str, tuple[float, float]], targets: list[dict[str, Any]]
) -> dict[str, Any]:
    """The contestants' table, then toolcycle against the bare call and against each peer."""
    summary: dict[str, Any] = module.summary(timings)
    rows, reference = summary["rows"], summary["reference"]
    base = rows[reference]["best_us"]
    width = max(len(label) for label in [*rows, *summary["skipped"]])
    print(
        f"{'one small tool call':<{width}}  {'best us':>9}  {'median us':>9}  {'/ ref':>7}  version"
    )
    for label, row in rows.items():
        print(
            f"{label:<{width}}  {row['best_us']:9.2f}  {row['median_us']:9.2f}  "
            f"{row['best_us'] / base:6.2f}x  {row['version'] or 'n/a'}"
        )
    for label, why in summary["skipped"].items():
        print(f"{label:<{width}}  skipped: {why}")
    print(f"(ref = {reference})")
    bare = rows["bare call"]["best_us"]
    fast = module.FAST_BACKEND
    for call, limit, restated in (
        ("execute", EXECUTE_TARGET, "1"),
        ("aexecute", AEXECUTE_TARGET, "2"),
    ):
        for backend in module.BACKENDS:
            label = f"toolcycle {call} ({backend})"
            ratio = rows[label]["best_us"] / bare
            if backend == fast:
                _target(
                    targets,
                    f"{label} / bare call",
                    f"{ratio:.1f}x",
                    f"<= {limit:.0f}x",
                    ratio <= limit,
                    replaced_by=restated,
                )
            else:
                print(f"{label} / bare call = {ratio:.1f}x")
    for backend in module.BACKENDS:
        by_hand = rows.get(f"{backend} by hand (in + out)")
        if by_hand is not None:
            ours = rows[f"toolcycle execute ({backend})"]["best_us"]
            print(
                f"toolcycle execute ({backend}) / {backend} by hand = "
                f"{ours / by_hand['best_us']:.2f}x, {ours - by_hand['best_us']:.1f} us added"
            )
    peer_labels = [label for label in module.EARLIER_PEERS if label in rows]
    for label in peer_labels:
        ratio = rows[label]["best_us"] / base
        how = (
            f"toolcycle {ratio:.1f}x faster" if ratio >= 1 else f"toolcycle {1 / ratio:.1f}x slower"
        )
        _target(
            targets,
            f"{label} / {reference}",
            f"{ratio:.2f}x, {how}",
            f">= {PEER_SPEEDUP_TARGET:.0f}x",
            ratio >= PEER_SPEEDUP_TARGET,
            replaced_by="2 and 3",
        )
    if peer_labels:
        fastest = min(peer_labels, key=lambda label: rows[label]["best_us"])
        ratio = rows[fastest]["best_us"] / base
        print(f"fastest peer: {fastest}, {rows[fastest]['best_us']:.2f} us ({ratio:.2f}x the ref)")
        aexecute = rows.get(f"toolcycle aexecute ({fast})")
        for label in module.ASYNC_PEERS:
            if label in rows and aexecute is not None:
                print(
                    f"{label} / toolcycle aexecute ({fast}) = "
                    f"{rows[label]['best_us'] / aexecute['best_us']:.2f}x (async against async)"
                )
    return summary


def print_scale(
    module: ModuleType, timings: dict[str, tuple[float, float]], targets: list[dict[str, Any]]
) -> dict[str, Any]:
    """Cost per object by input size, then threads, concurrency and import time."""
    summary: dict[str, Any] = module.summary(timings)
    backends = summary["backends"]
    print(f"{'objects':>9}" + "".join(f"  {backend + ' us/object':>24}" for backend in backends))
    for size in summary["sizes"]:
        cells = [
            f"{by_size[size]['best_us_per_object']:9.3f} ({by_size[size]['best_ms_per_call']:8.1f} ms)"
            if size in by_size
            else "not run"
            for by_size in backends.values()
        ]
        print(f"{size:>9,}" + "".join(f"  {cell:>24}" for cell in cells))
    first, last = summary["sizes"][1], summary["sizes"][-1]
    for backend, by_size in backends.items():
        if first in by_size and last in by_size:
            spread = by_size[last]["best_us_per_object"] / by_size[first]["best_us_per_object"]
            print(
                f"linearity ({backend}): us/object at {last:,} / at {first:,} = {spread:.2f}x "
                "(1.00 is linear)"
            )
    single = timings["time_scale_threads_1"][0]
    threaded = timings["time_scale_threads_8"][0]
    ratio = single / threaded
    _target(
        targets,
        f"throughput of {module.THREADS} threads on one plan / 1 thread",
        f"{ratio:.2f}x",
        f">= {THREADS_TARGET:.1f}",
        ratio >= THREADS_TARGET,
        replaced_by="5",
    )
    cpu = module.cpu_ratios()
    if cpu:
        print(
            f"CPU time of 1 thread / {module.THREADS} threads, same calls (median of rounds): "
            + ", ".join(
                f"{label} {cpu[kind]:.2f}x"
                for kind, label in (("execute", "execute"), ("plain", "plain function"))
                if kind in cpu
            )
        )
    failed = module.failures()
    print(f"failed calls: {failed['threads']} threaded, {failed['concurrent']} concurrent")
    best, median = timings["time_scale_concurrent_aexecute"]
    _target(
        targets,
        f"{module.CONCURRENT_CALLS:,} concurrent aexecute, each sleeping "
        f"{module.NAP_SECONDS * 1e3:.0f} ms",
        f"{best:.3f} s (median {median:.3f} s)",
        f"<= {CONCURRENT_TARGET_S} s",
        best <= CONCURRENT_TARGET_S,
    )
    imported, baseline = (
        timings["time_scale_import_toolcycle"],
        timings["time_scale_import_baseline"],
    )
    best_ms = (imported[0] - baseline[0]) * 1e3
    median_ms = (imported[1] - baseline[1]) * 1e3
    _target(
        targets,
        "import toolcycle, beyond starting Python",
        f"{best_ms:.0f} ms (median {median_ms:.0f} ms)",
        f"< {IMPORT_TARGET_MS:.0f} ms",
        best_ms < IMPORT_TARGET_MS,
        replaced_by="4",
    )
    floor = timings.get("time_scale_import_dependencies")
    if floor is not None:
        floor_ms = (floor[0] - baseline[0]) * 1e3
        print(
            f"  of which what it cannot do without (asyncio, logging, one pydantic model) "
            f"= {floor_ms:.0f} ms, toolcycle's own share = {best_ms - floor_ms:.0f} ms"
        )
    cpu_ms = module.import_cpu_ms()
    if cpu_ms is not None:
        print(
            f"  import toolcycle beyond that floor in the processes' CPU time (user + system, "
            f"median of paired rounds) = {cpu_ms:+.1f} ms"
        )
    first = timings.get("time_scale_import_first_call")
    if first is not None:
        print(
            f"  import, a runtime and a first validated call, beyond starting Python = "
            f"{(first[0] - baseline[0]) * 1e3:.0f} ms (median {(first[1] - baseline[1]) * 1e3:.0f} ms)"
        )
    extras = module.loaded_extras()
    _target(
        targets,
        "optional extras loaded by import toolcycle",
        ", ".join(extras) if extras else "none",
        "none",
        not extras,
    )
    return summary


def print_patterns(results: dict[str, float], targets: list[dict[str, Any]]) -> None:
    """The 100 ReDoS patterns on each backend, beside the target, and how the cost grows."""
    for backend, key in (("jsonschema", "jsonschema"), ("jsonschema-rs", "jsonschema_rs")):
        total_ms = results[f"time_redos_{key}"] / 1e3
        _target(
            targets,
            f"100 ReDoS patterns x 1 KB ({backend})",
            f"{total_ms:.2f} ms",
            f"< {REDOS_TARGET_MS:.0f} ms",
            total_ms < REDOS_TARGET_MS,
        )
        growth = results[f"time_redos_{key}_10kb"] / results[f"time_redos_{key}"]
        print(
            f"  10 KB / 1 KB attacks ({backend}) = {growth:.1f}x "
            "(at most 10x when linear; fixed costs per value bring it down)"
        )


def print_search(
    module: ModuleType,
    timings: dict[str, tuple[float, float]],
    tracks: dict[str, float],
    targets: list[dict[str, Any]],
) -> None:
    """One search of 10,000 deferred tools (median) beside its target, and the index build."""
    median_ms = timings["time_search_call_10k"][1] * 1e3
    _target(
        targets,
        f"search_tools over {module.TOOL_COUNT:,} deferred tools (median)",
        f"{median_ms:.2f} ms",
        f"< {module.TARGET_MS:.0f} ms",
        median_ms < module.TARGET_MS,
    )
    ranking_ms = timings["time_search_index_10k"][1] * 1e3
    print(f"  of which BM25 ranking: {ranking_ms:.2f} ms")
    build_ms = tracks["track_search_index_build_ms"]
    print(
        f"  building the index of {module.TOOL_COUNT:,} tools (once per registry change): "
        f"{build_ms:.0f} ms"
    )
    before_ms = timings["time_unknown_name_uncached_10k"][1] * 1e3
    after_ms = timings["time_unknown_name_call_10k"][1] * 1e3
    print(
        f"  a call of an unknown tool name: {after_ms:.3f} ms through runtime.call "
        f"(mapping names back afresh, as before the kept map: {before_ms:.2f} ms)"
    )


def print_memory(
    module: ModuleType, tracks: dict[str, float], targets: list[dict[str, Any]]
) -> None:
    """Memory growth over many calls, per idle plan, and what an ended plan leaves."""
    details = module.DETAILS
    growth = tracks["track_memory_rss_growth"]
    calls = details["track_memory_rss_growth"]
    _target(
        targets,
        f"RSS growth over {calls['calls']:,} execute calls",
        f"{growth:.2f} MiB",
        f"< {RSS_GROWTH_TARGET_MIB:.0f} MiB",
        growth < RSS_GROWTH_TARGET_MIB,
    )
    print(
        f"  ({calls['rss_before_mib']:.1f} -> {calls['rss_after_mib']:.1f} MiB, "
        f"{calls['seconds']:.1f} s, {calls['seconds'] / calls['calls'] * 1e6:.1f} us a call, "
        f"{calls['failed']} failed)"
    )
    growth = tracks["track_memory_plans_rss_growth"]
    soak = details["track_memory_plans_rss_growth"]
    _target(
        targets,
        f"RSS growth over {soak['plans']:,} plans of {soak['calls'] // soak['plans']} calls",
        f"{growth:.2f} MiB",
        f"< {RSS_GROWTH_TARGET_MIB:.0f} MiB",
        growth < RSS_GROWTH_TARGET_MIB and not soak["leftovers"],
    )
    print(
        f"  ({soak['rss_before_mib']:.1f} -> {soak['rss_after_mib']:.1f} MiB, "
        f"{soak['seconds']:.1f} s, {soak['failed']} failed, "
        f"{soak['leftovers']} plans left in the runtime)"
    )
    plans = details["track_memory_idle_plan_rss"]["plans"]
    for key, how in (
        ("track_memory_idle_plan_rss", "RSS"),
        ("track_memory_idle_plan_traced", "tracemalloc"),
    ):
        per_plan = tracks[key]
        _target(
            targets,
            f"memory per idle plan, {plans:,} open ({how})",
            f"{per_plan:,.0f} bytes",
            f"< {PLAN_BYTES_TARGET:,} bytes",
            per_plan < PLAN_BYTES_TARGET,
        )
    checks = details["track_memory_ended_plan_leftovers"]["checks"]
    failed = int(tracks["track_memory_ended_plan_leftovers"])
    _target(
        targets,
        "an ended plan leaves nothing behind",
        "pass" if not failed else f"fail ({failed} of {len(checks)} checks)",
        "pass",
        not failed,
    )
    for check, passed in checks.items():
        print(f"  {check}: {'pass' if passed else 'FAIL'}")


if __name__ == "__main__":
    sys.exit(main())
