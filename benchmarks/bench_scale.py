"""How the runtime's cost grows with input size, threads, concurrent calls, and its import.

- Input size: a tool whose input is ``{"items": [...]}``, an array of objects with
  four typed fields each (``additionalProperties: false``), called through
  ``runtime.execute`` with `SIZES` objects (100 to 100,000), once per validator
  backend. The runtime is built with ``ValidationLimits(max_instance_nodes=...)``
  raised to `MAX_NODES`, since 100,000 objects are about 500,000 values, over the
  default cap. The runner divides each time by the number of objects. At 10,000
  objects and more each benchmark runs once per repeat (``number = 1``); the
  jsonschema backend at 100,000, which takes seconds a call, runs 3 times, or once
  if ``setup()``'s warm-up call took more than `SLOW_CALL_SECONDS`.
- Threads: `THREAD_CALLS` calls of the small tool of `benchmarks.asv.common`
  through ``runtime.execute`` on one shared plan (one context, the tool activated
  once in ``setup()``), split between `THREADS` threads, against the same number
  made by one thread. Each run starts its threads, lets them go together from a
  barrier and joins them; ``calls`` says how many calls a run makes. Beside them,
  the same runs of a plain Python function (`busy`) that ``setup()`` sizes to cost
  what one warm ``execute`` costs: what the GIL's switching alone costs 8 threads,
  the floor that toolcycle's ratio is read against. `cpu_ratios` gives the same
  ratios in the process's CPU time, which a busy machine moves far less.
- Concurrency: `CONCURRENT_CALLS` ``runtime.aexecute`` calls of an async tool that
  sleeps `NAP_SECONDS`, gathered on one event loop; the time is per run, that is
  for all of them together.
- Import: ``python -c "import toolcycle"`` in a fresh process, against
  ``python -c "pass"``; the difference is the import. The processes write and read
  compiled bytecode (in a temporary cache, warmed by one run of each), as an
  installed package does, even where ``PYTHONDONTWRITEBYTECODE`` is set. Beside it,
  the time to a first call (import, a runtime, one registered tool, one validated
  ``execute``), since toolcycle imports jsonschema and builds its models on first
  use, not at import. `loaded_extras` says which optional dependencies the import
  loads (it should load none). The import benchmarks run in turns, one process
  of each per round, so the restated target (`benchmarks.targets`) compares
  ``import toolcycle`` with the floor of its dependencies round by round.
  `import_cpu_ms` gives the same difference in the processes' own CPU time
  (user and system), which a busy machine's scheduling does not add to.

Threads, concurrency and input size use the jsonschema-rs backend when it is
installed (`FAST_BACKEND`); input size also runs with jsonschema.
"""

from __future__ import annotations

import asyncio
import atexit
import importlib.util
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import TYPE_CHECKING, Any

from benchmarks.asv.common import PARAMS, AddTool, Backend, CountTool, add, items_input
from toolcycle import (
    NullTracer,
    ToolDescriptor,
    ToolExecutionContext,
    ToolRuntime,
    ValidationLimits,
)

if TYPE_CHECKING:
    from collections.abc import Callable

BACKENDS: tuple[Backend, ...] = (
    ("jsonschema", "jsonschema-rs")
    if importlib.util.find_spec("jsonschema_rs") is not None
    else ("jsonschema",)
)
"""The validator backends measured, by their ``ToolRuntime(validator=...)`` name."""

FAST_BACKEND = BACKENDS[-1]
"""The backend of the thread and concurrency benchmarks."""

SIZES = (100, 1_000, 10_000, 100_000)
"""How many objects the ``items`` array holds, one benchmark per size and backend."""

MAX_NODES = 1_000_000
"""``max_instance_nodes`` for the input-size runtimes (the default 100,000 is too few)."""

SLOW_CALL_SECONDS = 3.0
"""A warm-up call slower than this is measured once only (``repeat = 1``)."""

THREADS = 8
"""Threads sharing one plan in the threaded benchmark."""

THREAD_CALLS = 16_000
"""Calls made per run of each thread benchmark, in total."""

THREAD_REPEATS = 15
"""Runs of each thread benchmark, in turns (the restated target takes the median ratio)."""

SIZING_CALLS = 2_000
"""Calls timed (best of `SIZING_REPEATS`) to size the plain function to one warm ``execute``."""

SIZING_REPEATS = 5
"""Timings taken in turns of ``execute`` and of `busy` when sizing it."""

BUSY_STEPS = 1_000
"""The loop length `busy` is timed at before it is sized."""

CONCURRENT_CALLS = 1_000
"""``aexecute`` calls gathered at once in the concurrency benchmark."""

NAP_SECONDS = 0.05
"""How long each call of the concurrency benchmark's tool sleeps."""

IMPORT_REPEATS = 11
"""Fresh processes started by each import benchmark, in turns with the others."""

OPTIONAL_EXTRAS = ("mcp", "yaml", "opentelemetry", "jsonschema_rs")
"""Top-level packages of the optional extras, which ``import toolcycle`` must not load."""


class NapTool(AddTool):
    """``add`` after an ``asyncio.sleep`` of `NAP_SECONDS`: a call that mostly waits."""

    def discover(self) -> ToolDescriptor:
        return super().discover().model_copy(update={"name": "nap"})

    async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        await asyncio.sleep(NAP_SECONDS)
        return add(params)


def busy(steps: int) -> int:
    """Pure Python work under the GIL, about ``steps`` loop turns long: no lock, no I/O."""
    total = 0
    for step in range(steps):
        total += step
    return total


def _key(backend: str) -> str:
    return backend.replace("-", "_")


SCALE_CASES: dict[str, tuple[str, int]] = {
    f"time_scale_execute_{_key(backend)}_{size}": (backend, size)
    for backend in BACKENDS
    for size in SIZES
}
"""Every input-size benchmark's name, with its backend and object count."""

_state: dict[str, Any] = {}

_failed: dict[str, list[int]] = {"threads": [], "concurrent": []}
"""Counts of calls that did not succeed in the timed runs, kept after ``teardown()``."""

_cpu: dict[str, list[float]] = {}
"""The process's CPU time of each timed thread run, by ``"<work>_<threads>"``, kept too."""

_import_cpu: dict[str, list[float]] = {}
"""The CPU time (user and system) of each timed import process, by its program."""


def setup() -> None:
    """Build the runtimes and inputs, warm every benchmark once and check its result."""
    if _state:
        return
    inputs = {size: items_input(size) for size in SIZES}
    _state["inputs"] = inputs
    limits = ValidationLimits(max_instance_nodes=MAX_NODES)
    for backend in BACKENDS:
        runtime = ToolRuntime(tracer=NullTracer(), validator=backend, limits=limits)
        runtime.register(CountTool())
        ctx = runtime.new_context(f"bench-scale-{backend}")
        _state[f"scale_{_key(backend)}"] = (runtime, ctx)
        for size in SIZES:
            started = time.perf_counter()
            result = runtime.execute("count", inputs[size], ctx)
            took = time.perf_counter() - started
            if not result.success or result.output != {"count": size}:
                raise RuntimeError(f"count of {size} with {backend} failed: {result.error}")
            if size >= 10_000:
                bench = globals()[f"time_scale_execute_{_key(backend)}_{size}"]
                bench.number = 1
                if size == max(SIZES) and backend == "jsonschema":
                    bench.repeat = 1 if took > SLOW_CALL_SECONDS else 3
    runtime = ToolRuntime(tracer=NullTracer(), validator=FAST_BACKEND)
    runtime.register(AddTool())
    runtime.register(NapTool())
    ctx = runtime.new_context("bench-scale-shared")
    runtime.activate("add", ctx)
    _state["shared"] = (runtime, ctx)
    _state["loop"] = asyncio.new_event_loop()
    for failed in _failed.values():
        failed.clear()
    _run_threads(THREADS, THREADS * 10)
    _state["busy_steps"] = _size_busy()
    _cpu.clear()
    _state["loop"].run_until_complete(_gather(CONCURRENT_CALLS))
    if any(_failed.values()):
        raise RuntimeError("a warm-up call on the shared plan failed")
    for code in ("pass", "import toolcycle", FLOOR, FIRST_CALL):
        _python(code)  # caches the bytecode, so that no timed run compiles
    _import_cpu.clear()


def teardown() -> None:
    """Close every runtime (and so its plans) and the event loop."""
    if not _state:
        return
    for backend in BACKENDS:
        _state[f"scale_{_key(backend)}"][0].close()
    _state["shared"][0].close()
    _state["loop"].close()
    _state.clear()


def _scale_benchmark(backend: str, size: int) -> Callable[[], None]:
    key = f"scale_{_key(backend)}"

    def bench() -> None:
        runtime, ctx = _state[key]
        runtime.execute("count", _state["inputs"][size], ctx)

    bench.__name__ = f"time_scale_execute_{_key(backend)}_{size}"
    bench.__qualname__ = bench.__name__
    bench.__doc__ = f"runtime.execute of {size:,} objects with the {backend} backend."
    return bench


for _name, (_backend, _size) in SCALE_CASES.items():
    globals()[_name] = _scale_benchmark(_backend, _size)


def _run_threads(count: int, calls: int) -> None:
    """Make ``calls`` calls on the shared plan, split evenly between ``count`` threads."""
    runtime, ctx = _state["shared"]

    def work(share: int) -> None:
        failed = 0
        for _ in range(share):
            failed += not runtime.execute("add", PARAMS, ctx).success
        if failed:
            _failed["threads"].append(failed)

    _together(count, calls, work, "execute")


def _run_busy(count: int, calls: int) -> None:
    """Make ``calls`` calls of `busy`, sized to one warm ``execute``, split between threads."""
    steps = _state["busy_steps"]

    def work(share: int) -> None:
        for _ in range(share):
            busy(steps)

    _together(count, calls, work, "plain")


def _together(count: int, calls: int, work: Callable[[int], None], kind: str) -> None:
    """Run ``work`` with an even share of ``calls`` on ``count`` threads, started together.

    The process's CPU time for the run is kept under ``kind`` and ``count`` (`cpu_ratios`).
    """
    share = calls // count
    start = threading.Barrier(count)

    def run() -> None:
        start.wait()
        work(share)

    threads = [threading.Thread(target=run) for _ in range(count)]
    used = time.process_time()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    _cpu.setdefault(f"{kind}_{count}", []).append(time.process_time() - used)


def _size_busy() -> int:
    """The loop length at which `busy` costs what one warm ``execute`` costs, on one thread.

    Timed in CPU time, which other work on the machine moves less than the wall clock.
    """
    runtime, ctx = _state["shared"]
    execute, loop = [], []
    for _ in range(SIZING_REPEATS):  # in turns, so that a slow spell falls on both
        started = time.process_time()
        for _ in range(SIZING_CALLS):
            runtime.execute("add", PARAMS, ctx)
        execute.append(time.process_time() - started)
        started = time.process_time()
        for _ in range(SIZING_CALLS):
            busy(BUSY_STEPS)
        loop.append(time.process_time() - started)
    return max(1, round(BUSY_STEPS * min(execute) / min(loop)))


def time_scale_threads_1() -> None:
    """THREAD_CALLS calls of the small tool on the shared plan from one thread."""
    _run_threads(1, THREAD_CALLS)


def time_scale_threads_8() -> None:
    """The same calls split between 8 threads on the same plan."""
    _run_threads(THREADS, THREAD_CALLS)


def time_scale_threads_plain_1() -> None:
    """THREAD_CALLS calls of a plain function of the same cost, from one thread."""
    _run_busy(1, THREAD_CALLS)


def time_scale_threads_plain_8() -> None:
    """The same plain calls split between 8 threads: the GIL's own cost."""
    _run_busy(THREADS, THREAD_CALLS)


for _bench in (
    time_scale_threads_1,
    time_scale_threads_8,
    time_scale_threads_plain_1,
    time_scale_threads_plain_8,
):
    _bench.number = 1  # type: ignore[attr-defined]
    _bench.repeat = THREAD_REPEATS  # type: ignore[attr-defined]
    _bench.calls = THREAD_CALLS  # type: ignore[attr-defined]


async def _gather(count: int) -> None:
    runtime, ctx = _state["shared"]
    results = await asyncio.gather(*(runtime.aexecute("nap", PARAMS, ctx) for _ in range(count)))
    failed = sum(not result.success for result in results)
    if failed:
        _failed["concurrent"].append(failed)


def time_scale_concurrent_aexecute() -> None:
    """CONCURRENT_CALLS aexecute calls of a tool that sleeps, gathered; time for all."""
    _state["loop"].run_until_complete(_gather(CONCURRENT_CALLS))


time_scale_concurrent_aexecute.number = 1  # type: ignore[attr-defined]
time_scale_concurrent_aexecute.repeat = 5  # type: ignore[attr-defined]


_bytecode: dict[str, str] = {}
"""The environment of the import benchmarks' processes, once built."""

_warmed: set[str] = set()
"""The programs already run once, so that their bytecode is cached."""


def _bytecode_env() -> dict[str, str]:
    if not _bytecode:
        cache = tempfile.mkdtemp(prefix="toolcycle-bench-pycache-")
        atexit.register(shutil.rmtree, cache, ignore_errors=True)
        _bytecode.update(os.environ)
        _bytecode.pop("PYTHONDONTWRITEBYTECODE", None)
        _bytecode["PYTHONPYCACHEPREFIX"] = cache
    return _bytecode


def _python(code: str) -> None:
    env = _bytecode_env()
    if code not in _warmed:
        subprocess.run([sys.executable, "-c", code], check=True, env=env)
        _warmed.add(code)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    _import_cpu.setdefault(code, []).append(used)


def time_scale_import_toolcycle() -> None:
    """A fresh interpreter that imports toolcycle."""
    _python("import toolcycle")


FIRST_CALL = (
    "from toolcycle import NullTracer, ToolRuntime, tool\n"
    "@tool\n"
    "def add(a: int, b: int) -> int:\n"
    "    'Add two integers.'\n"
    "    return a + b\n"
    "runtime = ToolRuntime(tracer=NullTracer())\n"
    "runtime.register(add)\n"
    "with runtime.plan('first') as ctx:\n"
    "    assert runtime.execute('add', {'a': 1, 'b': 2}, ctx).output == 3\n"
)
"""A program that imports toolcycle and makes its first validated call."""


def time_scale_import_first_call() -> None:
    """A fresh interpreter that imports toolcycle and makes one validated call."""
    _python(FIRST_CALL)


def time_scale_import_baseline() -> None:
    """A fresh interpreter that does nothing: the part of the import time that is not ours."""
    _python("pass")


FLOOR = (
    "import asyncio, logging\n"
    "from pydantic import BaseModel, ConfigDict\n"
    "class Record(BaseModel):\n"
    "    model_config = ConfigDict(frozen=True, defer_build=True)\n"
    "    name: str\n"
)
"""What ``import toolcycle`` cannot do without: asyncio, logging and one model class."""


def time_scale_import_dependencies() -> None:
    """A fresh interpreter that imports what ``import toolcycle`` cannot do without.

    The floor while its records are pydantic models: asyncio, standard logging and
    one frozen pydantic model class, whose creation imports the parts of pydantic
    (``pydantic.fields``, ``pydantic.types``, ``annotated_types``) that importing
    ``BaseModel`` alone does not. jsonschema, referencing and structlog wait for
    their first use, and the models' validators for their first validation.
    """
    _python(FLOOR)


for _bench in (
    time_scale_import_toolcycle,
    time_scale_import_first_call,
    time_scale_import_baseline,
    time_scale_import_dependencies,
):
    _bench.number = 1  # type: ignore[attr-defined]
    _bench.repeat = IMPORT_REPEATS  # type: ignore[attr-defined]


def loaded_extras() -> list[str]:
    """The optional extras' packages that are in ``sys.modules`` after ``import toolcycle``."""
    code = (
        "import sys, toolcycle\n"
        f"extras = {OPTIONAL_EXTRAS!r}\n"
        "print(' '.join(e for e in extras if any("
        "m == e or m.startswith(e + '.') for m in sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return done.stdout.split()


def failures() -> dict[str, int]:
    """Calls of the shared plan that did not succeed, by benchmark (all should)."""
    return {name: sum(counts) for name, counts in _failed.items()}


def import_cpu_ms() -> float | None:
    """``import toolcycle`` beyond the floor in CPU time, ms: the median of paired rounds.

    None before both have run. Rounds pair as the wall-clock target's do (setup's
    warming runs are not counted).
    """
    ours, floor = _import_cpu.get("import toolcycle", []), _import_cpu.get(FLOOR, [])
    pairs = [(a - b) * 1e3 for a, b in zip(ours, floor, strict=False)]
    return statistics.median(pairs) if pairs else None


def cpu_ratios() -> dict[str, float]:
    """CPU time of 1 thread's runs over 8 threads', median of the rounds, by the work run.

    The wall-clock ratio of target 5 also counts how much of a core a busy machine
    gives the process, which differs between one thread and eight; the process's own
    CPU time counts only the work it did, GIL hand-offs included. Empty before a run.
    """
    ratios = {}
    for kind in ("execute", "plain"):
        single, threaded = _cpu.get(f"{kind}_1", []), _cpu.get(f"{kind}_{THREADS}", [])
        pairs = [a / b for a, b in zip(single, threaded, strict=False) if b > 0]
        if pairs:
            ratios[kind] = statistics.median(pairs)
    return ratios


def summary(timings: dict[str, tuple[float, float]]) -> dict[str, Any]:
    """The input-size results as plain data, for the runner and `benchmarks.report`.

    Returns:
        ``{"sizes": [...], "backends": {backend: {size: {"best_us_per_object",
        "median_us_per_object", "best_ms_per_call"}}}}``, for the sizes measured.
    """
    backends: dict[str, dict[int, dict[str, float]]] = {}
    for name, (backend, size) in SCALE_CASES.items():
        if name not in timings:
            continue
        best, median = timings[name]
        backends.setdefault(backend, {})[size] = {
            "best_us_per_object": best * 1e6 / size,
            "median_us_per_object": median * 1e6 / size,
            "best_ms_per_call": best * 1e3,
        }
    return {"sizes": list(SIZES), "backends": backends}
