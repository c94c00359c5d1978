"""Durable plans on DBOS (SQLite) with a serializer set in ``DBOSConfig``.

Each call's record is tried with the serializer DBOS will write it with, so a
result that serializer cannot write is refused by name, before DBOS fails on it.
"""

from __future__ import annotations

import base64
import pickle
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dbos")

from dbos import DBOS, DBOSConfig, Serializer, SetWorkflowID

from toolcycle import NullTracer, ToolReturn, ToolRuntime, ToolRuntimeError, tool
from toolcycle.hosts import DBOSPlan


class OwnPickle(Serializer):
    """Pickles as DBOS's default serializer does, under a name of its own."""

    def serialize(self, data: Any) -> str:
        return base64.b64encode(pickle.dumps(data)).decode("ascii")

    def deserialize(self, serialized_data: str) -> Any:
        return pickle.loads(base64.b64decode(serialized_data))

    def name(self) -> str:
        return "toolcycle-test-pickle"


@tool(writes=False, idempotent=True)
def plain(key: str) -> str:
    """Return plain data, which any serializer writes."""
    return key.upper()


@tool(writes=False, idempotent=True)
def locked() -> ToolReturn[int]:
    """Return metadata holding a lock, which pickle cannot write."""
    return ToolReturn(1, metadata={"lock": threading.Lock()})


RUNTIME = ToolRuntime(tracer=NullTracer())
RUNTIME.register(plain)
RUNTIME.register(locked)


@DBOS.workflow()
def plan(name: str) -> Any:
    """Call ``name``; the error it raised, if any, as data."""
    with RUNTIME.plan(durable=DBOSPlan()) as ctx:
        args = {"key": "k"} if name == "plain" else {}
        try:
            return RUNTIME.execute(name, args, ctx).output
        except ToolRuntimeError as exc:
            return ["raised", exc.tool_name, str(exc)]


@pytest.fixture(scope="module", autouse=True)
def dbos(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """DBOS on a SQLite file of the module's own, with `OwnPickle` as its serializer."""
    folder: Path = tmp_path_factory.mktemp("dbos-serializer")
    DBOS(
        config=DBOSConfig(
            name="toolcycle-serializer-tests",
            system_database_url=f"sqlite:///{folder}/system.sqlite",
            application_version="test-1",
            serializer=OwnPickle(),
        )
    )
    DBOS.launch()
    yield
    DBOS.destroy()


def test_a_call_is_recorded_with_the_serializer_set_in_the_config() -> None:
    """A result that serializer writes is recorded and replayed as with the default one."""
    with SetWorkflowID("wf-own"):
        assert plan("plain") == "K"
    step = DBOS.list_workflow_steps("wf-own")[-1]
    assert step["function_name"] == "toolcycle:plain" and step["output"]["result"].output == "K"
    assert DBOS.fork_workflow("wf-own", 2).get_result() == "K"


def test_a_result_the_configured_serializer_cannot_write_raises_naming_it() -> None:
    """The error names the serializer set in DBOSConfig, and nothing is recorded."""
    with SetWorkflowID("wf-own-lock"):
        raised = plan("locked")
    assert raised[:2] == ["raised", "locked"]
    assert "the serializer set in DBOSConfig (OwnPickle) failed" in raised[2]
    assert DBOS.list_workflow_steps("wf-own-lock") == []
