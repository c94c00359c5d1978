"""Small pieces for ASGI middleware that reads an MCP request before the server does."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["read_body", "replay", "send_json_error"]


async def read_body(receive: Any) -> bytes:
    """The whole body of the HTTP request ``receive`` delivers."""
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


def replay(body: bytes, receive: Any) -> Any:
    """A ``receive`` that hands the app ``body`` (already read) first, then what ``receive`` gets."""
    replayed = False

    async def again() -> Any:
        nonlocal replayed
        if replayed:
            return await receive()
        replayed = True
        return {"type": "http.request", "body": body, "more_body": False}

    return again


async def send_json_error(send: Any, request_id: Any, code: int, message: str) -> None:
    """Answer with a JSON-RPC error, over HTTP 200 as a streamable HTTP server does."""
    error = {"code": code, "message": message}
    payload = json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode()
    start = {"type": "http.response.start", "status": 200}
    await send({**start, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": payload})
