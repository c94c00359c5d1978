"""What `ProcessHost` and `RayHost` share: a host's plans and each plan's bookkeeping.

`HostBase` keeps the host's name, the tools it builds by import path, and its
plans under a lock (by context: two plans may share an id). `HostedPlan` is one
of those plans, and the `Placement` its stand-ins (``_proxy``) drive: it makes
the stand-ins, and keeps the plan's active tools, the ones its current worker
holds, and the one replacement of a worker that died. Each host adds only how
its worker starts, takes a stage, cancels one and ends.
"""

from __future__ import annotations

import concurrent.futures
import threading
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from toolcycle.hosts._proxy import AsyncHostedTool, HostedTool
from toolcycle.hosts._tools import StageFailed, ToolHostError, ToolImport, pack, tool_key, tool_name

if TYPE_CHECKING:
    from collections.abc import Mapping

    from toolcycle import ToolExecutionContext, ToolInstance
    from toolcycle.hosts._child import Listener
    from toolcycle.hosts._tools import Call, Settled

__all__ = ["HostBase", "HostedPlan"]


class HostedPlan(ABC):
    """One plan in a host: its stand-ins, its active tools, and those its worker holds.

    The bookkeeping is the same for every host; a host's plan class adds how its
    worker starts (`start`), whether it is usable (`alive`), how a stage goes to
    it (`dispatch`), and `cancel` and `close`. A worker that dies is replaced
    once: the plan's next call starts a fresh one and activates its tools again
    there, one by one as they are next called.

    Attributes:
        worker: the word for the plan's worker in messages (``"worker"``, ``"actor"``).
    """

    worker = "worker"

    def __init__(self, host: HostBase[Any], ctx: ToolExecutionContext) -> None:
        self.host = host
        self.plan_id = ctx.plan_id
        self.ctx = ctx  # what each stage's context in the worker carries, read at its start
        self.starts = 0
        self.payloads: dict[str, tuple[Any, ...]] = {}  # the plan's active tools
        self.live: set[str] = set()  # those active in the current worker
        self.stand_ins: dict[tuple[str, bool], HostedTool] = {}
        self.keys: dict[str, list[ToolInstance]] = {}  # each name's tools, in order of arrival
        self.lock = threading.Lock()
        self.closed = False
        self.host_closed = False  # let go by ``host.close()`` while the plan was open

    # -- what a host's plan class says -------------------------------------------------------

    @abstractmethod
    def alive(self) -> bool:
        """Whether the plan has a worker that can take a stage now."""
        ...

    @abstractmethod
    def start(self) -> None:
        """Start the plan's worker (the first, or the one replacement); ``live`` is empty."""
        ...

    @abstractmethod
    def dispatch(
        self, kind: str, name: str, argument: Any, listener: Listener | None, call: Call | None
    ) -> tuple[int, concurrent.futures.Future[Settled]]:
        """Send one stage to the worker, which `alive` says is there; its number and future."""
        ...

    @abstractmethod
    def cancel(self, number: int, reason: str | None) -> None:
        """Cancel a stage the worker runs."""
        ...

    @abstractmethod
    def close(self) -> None:
        """The plan ended: let its worker go."""
        ...

    # -- the bookkeeping (a `Placement`) -----------------------------------------------------

    def stand_in(self, name: str, tool: ToolInstance, asynchronous: bool) -> HostedTool:
        """The plan's stand-in for ``tool``, made once (again if the tool was replaced).

        A tool registered anew under ``name`` gets a key of its own in the worker,
        where the tool it replaced stays until the plan deactivates it.
        """
        found = self.stand_ins.get((name, asynchronous))
        if found is None or found.tool is not tool:
            with self.lock:
                tools = self.keys.setdefault(name, [])
                number = next((n for n, held in enumerate(tools) if held is tool), None)
                if number is None:
                    number = len(tools)
                    tools.append(tool)
            kind = AsyncHostedTool if asynchronous else HostedTool
            found = kind(name, tool, self, tool_key(name, number))
            self.stand_ins[name, asynchronous] = found
        return found

    def ready(self, kind: str, name: str) -> bool:
        """See `Placement.ready`."""
        if kind == "deactivate":
            return True
        return self.alive() and (kind == "activate" or name in self.live)

    def prepare(self, kind: str, name: str) -> None:
        """See `Placement.prepare`.

        A re-activation is sent under the lock and waited for outside it: the
        plan's `close` takes the lock, and must be able to stop a worker whose
        re-activation never ends (stopping it fails the activation). Two calls
        re-activating one tool at once are one activation: the worker shares it.
        """
        with self.lock:
            if not self.alive():
                self._fresh()
            if kind != "execute" or name in self.live:
                return
            payload = self.payloads.get(name)
            if payload is None:  # the runtime activates first: never met in its use
                raise ToolHostError(
                    f"tool {tool_name(name)!r} was never activated in host "
                    f"{self.host.name!r} for plan {self.plan_id!r}",
                    tool_name=tool_name(name),
                    plan_id=self.plan_id,
                )
            # A re-activation serves no call of its own; what it revealed, the first
            # activation revealed already.
            future = self.dispatch("activate", name, payload, None, None)[1]
            starts = self.starts
        try:
            future.result()
        except ToolHostError:
            raise
        except Exception as exc:
            # What it recorded before failing has no call to land in.
            cause = exc.error if isinstance(exc, StageFailed) else exc
            raise ToolHostError(
                f"tool {tool_name(name)!r} could not be activated again in the fresh "
                f"{self.worker} of host {self.host.name!r}: {cause}",
                tool_name=tool_name(name),
                plan_id=self.plan_id,
            ) from cause
        with self.lock:
            if self.starts == starts:  # not a worker that died and was replaced meanwhile
                self.live.add(name)

    def _fresh(self) -> None:
        if self.host_closed:
            raise ToolHostError(
                f"host {self.host.name!r} was closed while plan {self.plan_id!r} was open, "
                f"and its {self.worker} stopped; end this plan and start a new one",
                plan_id=self.plan_id,
            )
        if self.closed:
            raise ToolHostError(
                f"plan {self.plan_id!r} has ended in host {self.host.name!r}",
                plan_id=self.plan_id,
            )
        if self.starts >= 2:
            raise ToolHostError(
                f"the {self.worker} of host {self.host.name!r} died twice in plan "
                f"{self.plan_id!r}; end this plan and start a new one",
                plan_id=self.plan_id,
            )
        self.live = set()
        self.start()

    def send(
        self, kind: str, name: str, argument: Any, listener: Listener | None, call: Call
    ) -> tuple[int, concurrent.futures.Future[Settled]]:
        """See `Placement.send`: an activation sends the tool, a deactivation forgets it."""
        if kind == "deactivate":
            self.payloads.pop(name, None)
            if not self.alive() or name not in self.live:
                return 0, _done((None, [], ()))  # its worker died: nothing left to release
        elif kind == "activate":
            # The stand-in's own tool: never looked up among the plan's stand-ins,
            # which other threads' calls may be adding to meanwhile.
            argument = pack(tool_name(name), argument, self.host._imports)
        number, future = self.dispatch(kind, name, argument, listener, call)
        if kind == "activate":
            self.payloads[name] = argument
        return number, future

    def settled(self, kind: str, name: str, ok: bool) -> None:
        """See `Placement.settled`."""
        if kind == "activate":
            if ok:
                self.live.add(name)
            else:
                self.payloads.pop(name, None)
        elif kind == "deactivate":
            self.live.discard(name)


PlanT = TypeVar("PlanT", bound=HostedPlan)


class HostBase(ABC, Generic[PlanT]):
    """What every host keeps: its name, the tools it builds by import path, its plans.

    A host class says how to make one of its plans (`new_plan`); the rest of the
    `toolcycle.PlanHost` protocol, but ``placement``, is here.

    Raises:
        ValueError: an empty name.
        TypeError: a ``tools`` value that is not a `ToolImport`.
    """

    def __init__(self, name: str, tools: Mapping[str, ToolImport] | None) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty string, got {name!r}")
        imports = dict(tools or {})
        for key, recipe in imports.items():
            if not isinstance(recipe, ToolImport):
                raise TypeError(
                    f"tools[{key!r}] must be a ToolImport('package.module:attribute'), "
                    f"got {recipe!r}"
                )
        self._name = name
        self._imports = imports
        # By the context itself, not its id: two runtimes sharing the host may give
        # plans one id, and each must keep a worker (and a context) of its own.
        self._plans: dict[int, PlanT] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self._name!r}, plans={len(self._plans)})"

    @property
    def name(self) -> str:
        """The host's name, as traces show it."""
        return self._name

    @abstractmethod
    def new_plan(self, ctx: ToolExecutionContext) -> PlanT:
        """A plan of this host, made at its first stand-in."""
        ...

    def plan_of(self, ctx: ToolExecutionContext) -> PlanT | None:
        """The host's plan for ``ctx``, if it has made one."""
        return self._plans.get(id(ctx))  # the plan holds ctx: its id stays its own

    def tool(
        self, name: str, tool: ToolInstance, ctx: ToolExecutionContext, *, asynchronous: bool
    ) -> ToolInstance:
        """The stand-in that runs ``tool``'s stages in the plan's worker."""
        with self._lock:
            plan = self._plans.get(id(ctx))
            if plan is None:
                plan = self._plans[id(ctx)] = self.new_plan(ctx)
        return plan.stand_in(name, tool, asynchronous)

    def end(self, ctx: ToolExecutionContext) -> None:
        """The plan ended (its tools deactivated): let its worker go."""
        with self._lock:
            plan = self._plans.pop(id(ctx), None)
        if plan is not None:
            plan.close()

    def close(self) -> None:
        """Let every plan's worker go now (the runtime's ``end_plan`` does it per plan).

        A plan still open keeps its place here until it ends, so that its later
        calls fail saying the host was closed, rather than start a fresh worker.
        """
        with self._lock:
            plans = list(self._plans.values())
            for plan in plans:
                plan.host_closed = True
        for plan in plans:
            plan.close()


def _done(value: Settled) -> concurrent.futures.Future[Settled]:
    future: concurrent.futures.Future[Settled] = concurrent.futures.Future()
    future.set_result(value)
    return future
