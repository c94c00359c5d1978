"""The runtime: `ToolRuntime`, a small façade over the parts that do the work.

``execute`` runs these steps, in this order (the design's seven, with the
capability check moved ahead of activation so that a denied call starts
nothing): check cancellation; enforce the capability flags; activate the tool
for the plan if it is not yet (single flight); normalise and validate the input;
run the tool, timed and traced; normalise, measure and validate the output;
record the changes the tool made into the plan's context. Every call that reaches
``execute`` yields exactly one trace, delivered before it returns or raises. The parts:
``_registry`` (tools and sources, each tool made ready by ``_preparing``), ``_plans``
(open and end plans), ``_pipeline`` with ``_steps`` and ``_running`` (the seven steps,
sync and async; ``_running`` holds the two that wait, activation and the run itself,
and ``_screening`` the path of a tool with guardrails, a cache or an approval),
``_approvals`` (the approval step), ``_resume`` (``resume``) and ``_dispatcher`` (a
model's tool calls, with ``_search`` for deferred tools and ``search_tools``);
``_shared`` holds the records they share, ``_settings`` the options a host may change,
and ``_interfaces`` the protocols through which they see one another; ``_retries``
counts the model's retries per plan and runs the attempts of a ``RetryPolicy``;
``_caching`` holds a cached tool's keys and hits (a cached tool validates and looks its
call up before activating, so a hit activates nothing); ``_guards`` runs a call's
guardrails, each stage through ``_guardrun``; ``_stream`` turns one call into an
async stream of its progress and result (`CallStream`); ``_durable`` hands a
durable plan's call whole to its engine, to record or replay. They never import
one another: ``_facade`` builds them and hands each the others it needs.
"""

from typing import TYPE_CHECKING, Any

from toolcycle.runtime._facade import ToolRuntime

if TYPE_CHECKING:
    from toolcycle.runtime._stream import CallStream

__all__ = ["CallStream", "ToolRuntime"]


def __getattr__(name: str) -> Any:
    if name == "CallStream":  # its module loads with the first stream, or here
        from toolcycle.runtime._stream import CallStream

        return CallStream
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
