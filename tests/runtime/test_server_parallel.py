"""`server_parallel`: a server's parallel slots read from the x-flowkit-parallel header, the
/v1/models body or llama.cpp's /props; None where the server says nothing or is not there."""
from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from flowkit.runtime.server_parallel import server_parallel
from flowkit.testing.openai_fake import fake_openai_server
from flowkit.testing.servers import free_port


@contextmanager
def routes(replies: dict[str, Any]) -> Iterator[str]:
    """A server answering GET `path` with the JSON `replies[path]` (404 for any other path)."""
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            found = self.path in replies
            raw = json.dumps(replies.get(self.path, {"error": "no route"})).encode()
            self.send_response(200 if found else 404)
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_header_of_the_models_route() -> None:
    with fake_openai_server(lambda p: "x", parallel=3) as server:
        assert server_parallel(server.url) == 3
    with fake_openai_server(lambda p: "x") as server:
        assert server_parallel(server.url) is None


@pytest.mark.parametrize("body", [{"data": [{"id": "m", "meta": {"parallel": 5}}]},
                                  {"data": [{"id": "m", "parallel": 5}]},
                                  {"flowkit": {"parallel": 5}, "data": []}])
def test_models_body(body: dict[str, Any]) -> None:
    with routes({"/v1/models": body}) as url:
        assert server_parallel(url) == 5


def test_llama_cpp_props_and_nothing_usable() -> None:
    with routes({"/v1/models": {"data": [{"id": "m"}]}, "/props": {"total_slots": 4}}) as url:
        assert server_parallel(url) == 4
    with routes({"/v1/models": {"data": [{"id": "m", "parallel": "many"}]},
                 "/props": {"total_slots": 0}}) as url:
        assert server_parallel(url) is None
    assert server_parallel(f"http://127.0.0.1:{free_port()}/v1", timeout_s=2) is None


def test_cache_key_holds_the_slots_of_a_batching_server_only() -> None:
    from flowkit.runtime.completion_cache import call_key, model_identity
    from flowkit.runtime.llm import LLMSettings
    from flowkit.runtime.openai_client import OpenAICompatibleLLM
    keys = {}
    for slots in (None, 1, 4):
        with fake_openai_server(lambda p: "x", parallel=slots) as server:
            llm = OpenAICompatibleLLM(LLMSettings(backend="openai", base_url="http://h:1/v1",
                                                  model_name="m"))
            llm.base_url = server.url.rstrip("/")         # asked at the fake, keyed as one URL
            ident = model_identity(llm)
            assert ident is not None
            ident["base_url"] = "http://h:1/v1"
            keys[slots] = call_key(ident, "complete", prompt="p")
            assert ident.get("parallel") == (4 if slots == 4 else None)
    assert keys[None] == keys[1] != keys[4]     # a serial server keeps the keys it always had
