"""The ASGI types and the JSON replies that `flowkit serve-model` and its batching routes share:
OpenAI's error shape and a whole JSON response (one module both import, so neither imports the
other)."""
from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def error_body(message: str, param: str | None, kind: str = "invalid_request_error",
               code: str | None = None) -> dict[str, Any]:
    """OpenAI's error shape: {"error": {"message", "type", "param", "code"}}."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


async def send_json(send: Send, status: int, payload: dict[str, Any],
                    headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    """A whole JSON response (the server's and the batching routes' replies and errors)."""
    raw = json.dumps(payload).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode()),
        *headers]})
    await send({"type": "http.response.body", "body": raw})
