"""A hand-written MCP server over stdio that answers requests it was told to cancel.

SDK servers never answer a cancelled request, but other servers do: a
response can cross the ``notifications/cancelled`` on the wire. This one makes
that happen on purpose, to test that a late response is dropped without
disturbing the connection:

- ``late`` (argument ``release``, a path) answers only once that file exists,
  whether or not the request was cancelled meanwhile;
- ``quick`` answers at once with its own argument.

With ``--stubborn`` it ignores SIGTERM and keeps running after its stdin
closes, so only SIGKILL ends it; with ``--blank-lines`` it writes an empty
line before every message, which a client must skip. With ``--crash-leaving-helper``,
``quick`` starts a helper process that inherits stdout and outlives the server,
then exits with code 3 instead of answering: stdout stays open after the crash.
With ``--odd-tools`` it also lists tools no client can use as they are: names a
descriptor cannot hold, and a name listed twice (once as two identical copies,
once as two different tools); with ``--scalar-tool``, a tool whose input schema
is not an object schema, which MCP's schema forbids; with ``--broken-result``, ``quick``
answers with a result that breaks MCP's schema (content that is not a list of blocks,
holding a secret-looking text).

It needs nothing but the standard library, so it starts in a few milliseconds.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

_write_lock = threading.Lock()
_BLANK_LINES = "--blank-lines" in sys.argv

_TOOLS = [
    {
        "name": "late",
        "inputSchema": {
            "type": "object",
            "properties": {"release": {"type": "string"}},
            "required": ["release"],
        },
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "quick",
        "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}},
        "annotations": {"readOnlyHint": True},
    },
]


_ODD_TOOLS = [
    {"name": "", "inputSchema": {"type": "object"}},
    {"name": "trailing space ", "inputSchema": {"type": "object"}},
    {"name": "x" * 300, "inputSchema": {"type": "object"}},
    {"name": "copied", "inputSchema": {"type": "object"}},
    {"name": "copied", "inputSchema": {"type": "object"}},
    {"name": "differs", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
    {"name": "differs", "inputSchema": {"type": "object"}},
]


def _send(message: dict[str, Any]) -> None:
    with _write_lock:
        sys.stdout.write(("\n" if _BLANK_LINES else "") + json.dumps(message) + "\n")
        sys.stdout.flush()


def _result(request_id: Any, n: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "result": {
            "content": [{"type": "text", "text": str(n)}],
            "structuredContent": {"n": n},
            "isError": False,
        },
    }


def _answer_late(request_id: Any, release: Path) -> None:
    deadline = time.monotonic() + 30
    while not release.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    _send(_result(request_id, "late"))


def _handle(message: dict[str, Any]) -> None:
    method = message.get("method")
    request_id = message.get("id")
    if method == "initialize":
        _send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "result": {
                    "protocolVersion": message["params"]["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "raw", "version": "1"},
                },
            }
        )
    elif method == "tools/list":
        tools = _TOOLS + (_ODD_TOOLS if "--odd-tools" in sys.argv else [])
        if "--scalar-tool" in sys.argv:
            tools = [*tools, {"name": "scalar", "inputSchema": {"type": "string"}}]
        _send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": tools}})
    elif method == "tools/call":
        params = message["params"]
        arguments = params.get("arguments") or {}
        if params["name"] == "late":
            release = Path(arguments["release"])
            threading.Thread(target=_answer_late, args=(request_id, release), daemon=True).start()
        elif "--crash-leaving-helper" in sys.argv:
            subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
            print("raw: crashing, a helper keeps stdout", file=sys.stderr, flush=True)
            os._exit(3)
        elif "--broken-result" in sys.argv:
            broken = {"content": [{"type": "text", "text": 7, "token": "sk-live-secret"}]}
            broken["isError"] = "sk-live-secret"
            _send({"jsonrpc": "2.0", "id": request_id, "result": broken})
        else:
            _send(_result(request_id, arguments.get("n")))
    elif method == "notifications/cancelled":
        print(f"raw: told to cancel {message['params']}", file=sys.stderr, flush=True)
    elif request_id is not None:
        _send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "error": {"code": -32601, "message": f"no method {method}"},
            }
        )


def main() -> None:
    stubborn = "--stubborn" in sys.argv
    if stubborn:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for line in sys.stdin:
        if line.strip():
            _handle(json.loads(line))
    if stubborn:
        print("raw: stdin closed, staying anyway", file=sys.stderr, flush=True)
        time.sleep(60)


if __name__ == "__main__":
    main()
