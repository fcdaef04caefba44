"""A scripted OpenAI-compatible server on loopback that counts the requests in flight at once.

`fake_openai_server(answer, parallel=P, hold_until=N)` serves `POST /v1/chat/completions` with
`answer(last user message)` and `GET /v1/models` (with the header `x-flowkit-parallel: P` when P
is given); `/tokenize` is absent, so clients estimate token counts. With `hold_until` N > 1 the
first chat requests wait until N of them are in flight together (a latch, opened once; or
`hold_s` passes, so a client that never sends N at once is slow, not stuck): a concurrent client
then reaches N in flight whatever the machine's speed, which `max_in_flight` records.
"""
from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class FakeServerState:
    """What the fake server saw: its URL, the chat requests and the most in flight at once."""

    url: str = ""
    requests: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    prompts: list[str] = field(default_factory=list)
    lock: threading.Condition = field(default_factory=threading.Condition)
    released: bool = False


@contextmanager
def fake_openai_server(answer: Callable[[str], str], *, parallel: int | None = None,
                       hold_until: int = 1, hold_s: float = 20.0) -> Iterator[FakeServerState]:
    """Serve on a free loopback port for the block; yields the state (`url` ends in /v1)."""
    state = FakeServerState(released=hold_until <= 1)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, code: int, body: dict[str, Any]) -> None:
            raw = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            if parallel is not None:
                self.send_header("x-flowkit-parallel", str(parallel))
            self.end_headers()
            self.wfile.write(raw)

        def do_GET(self) -> None:
            if self.path.rstrip("/") == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            if self.path != "/v1/chat/completions":
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            prompt = str([m for m in body.get("messages", []) if m.get("role") == "user"][-1]
                         ["content"])
            with state.lock:
                state.requests += 1
                state.prompts.append(prompt)
                state.in_flight += 1
                state.max_in_flight = max(state.max_in_flight, state.in_flight)
                if state.in_flight >= hold_until:
                    state.released = True
                    state.lock.notify_all()
                state.lock.wait_for(lambda: state.released, timeout=hold_s)
            try:
                text = answer(prompt)
                self._send(200, {"id": "fake", "object": "chat.completion", "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": text},
                     "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": max(1, len(prompt) // 4),
                              "completion_tokens": max(1, len(text) // 4)}})
            finally:
                with state.lock:
                    state.in_flight -= 1

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, name="fake-openai-server", daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
