"""A call of a plan with a host: the entry it runs holds the host's stand-in for the tool.

The pipeline asks for it only when the plan's context names a host, so a plan
without one pays a single attribute check per call.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from toolcycle.protocols import PlanHost
    from toolcycle.runtime._shared import Call, Entry

__all__ = ["hosted"]


def hosted(entry: Entry, call: Call, *, asynchronous: bool) -> Entry:
    """``entry`` with the host's stand-in as its tool, and the call's trace marked.

    The stand-in's stages are plain methods for a sync caller and coroutines for
    an async one, so each driver waits for the host its own way.
    """
    ctx = call.ctx
    host: PlanHost = ctx.host
    stand_in = copy.copy(entry)
    stand_in.instance = host.tool(call.name, entry.instance, ctx, asynchronous=asynchronous)
    stand_in.coroutine = asynchronous
    stand_in.loop = stand_in.loop_for = None
    call.record.host = lambda: (host.name, host.placement(ctx))
    return stand_in
