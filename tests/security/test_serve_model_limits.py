"""`flowkit serve-model` checks the key first and bounds what it reads (issue 39, item 2).

Before: without the key, a 300 MB body was read whole (546 MB -> 1,441 MB resident) before the
library's 401; deep JSON was a 500 with a traceback; a schema error (400) came before the 401;
with the key, NaN temperature and `max_tokens` -1 or 1e12 reached the model. The unit tests drive
the middleware (`serve_model.ValidatedRequests`) with a recording app behind it and count what it
reads; the real test starts `flowkit serve-model --api-key` on the default model and measures its
memory under a 300 MB body without the key.
"""
from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from flowkit.runtime.serve_model import ValidatedRequests
from flowkit.runtime.worker_requests import body_limit

KEY = "k3y-for-tests"
N_CTX = 2048
LIMIT = body_limit(N_CTX)
CHAT = "/v1/chat/completions"


class Schema:
    """A stand-in for the library's pydantic request model: `messages` must be a list."""

    @staticmethod
    def model_validate(data: dict[str, Any]) -> None:
        from pydantic import BaseModel

        class Chat(BaseModel):
            messages: list[dict[str, Any]]

        Chat.model_validate(data)


@dataclass
class Exchange:
    """One request through the middleware: what it answered and what it read."""

    status: int = 0
    body: dict[str, Any] = field(default_factory=dict)
    headers: dict[bytes, bytes] = field(default_factory=dict)
    receives: int = 0
    bytes_read: int = 0
    reached_app: bytes | None = None


def call(path: str, chunks: list[bytes] | None = None, *, key: str | None = KEY,
         method: str = "POST", length: int | str | None = -1, scheme: str = "Bearer") -> Exchange:
    """Send a request (its body in `chunks`; Content-Length their total unless `length` says
    otherwise, None for none) through ValidatedRequests with key KEY and context N_CTX."""
    chunks = chunks or []
    out = Exchange()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        parts = []
        while True:
            message = await receive()
            parts.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        out.reached_app = b"".join(parts)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b'{"ok": true}'})

    queue = list(chunks)

    async def receive() -> dict[str, Any]:
        out.receives += 1
        chunk = queue.pop(0) if queue else b""
        out.bytes_read += len(chunk)
        return {"type": "http.request", "body": chunk, "more_body": bool(queue)}

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            out.status = message["status"]
            out.headers = dict(message.get("headers") or [])
        else:
            out.body = json.loads(message["body"])

    headers = []
    if key is not None:
        headers.append((b"authorization", f"{scheme} {key}".encode()))
    total = sum(len(c) for c in chunks) if length == -1 else length
    if total is not None:
        headers.append((b"content-length", str(total).encode()))
    middleware = ValidatedRequests(app, {CHAT: Schema, "/v1/embeddings": Schema}, api_key=KEY,
                                   n_ctx=N_CTX)
    asyncio.run(middleware({"type": "http", "method": method, "path": path, "headers": headers},
                           receive, send))
    return out


def chat(**extra: Any) -> bytes:
    return json.dumps({"messages": [{"role": "user", "content": "hi"}], **extra}).encode()


def assert_refused(out: Exchange, status: int, *words: str) -> None:
    assert out.status == status, out
    error = out.body["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["message"], error
    assert all(w in error["message"] for w in words), error
    assert out.reached_app is None                         # the library never saw it


# ---- the key comes first ----------------------------------------------------------------------
def test_without_the_key_a_huge_body_is_refused_401_before_any_of_it_is_read() -> None:
    out = call(CHAT, [b"x" * 65536] * 8, key=None, length=300 * 2**20)
    assert_refused(out, 401, "API key")
    assert out.receives == 0 and out.bytes_read == 0
    assert out.headers[b"www-authenticate"] == b"Bearer"


@pytest.mark.parametrize("key, scheme", [(None, "Bearer"), ("wrong", "Bearer"), (KEY, "Basic"),
                                         (KEY + "x", "Bearer"), ("", "Bearer")])
def test_a_schema_error_or_deep_json_without_the_key_is_401_not_400(key: str | None,
                                                                    scheme: str) -> None:
    for body in (b'{"messages": 5}', b"[" * 100000, chat(temperature=7)):
        out = call(CHAT, [body], key=key, scheme=scheme)
        assert_refused(out, 401)
        assert out.bytes_read == 0


def test_the_key_guards_every_route_and_method() -> None:
    for method, path in (("GET", "/v1/models"), ("POST", "/extras/tokenize"),
                         ("GET", "/docs")):
        assert_refused(call(path, method=method, key=None), 401)
        assert call(path, method=method).status == 200    # with the key it goes on


def test_the_scheme_is_read_in_any_case() -> None:
    assert call(CHAT, [chat()], scheme="bearer").status == 200


# ---- what is read is bounded ------------------------------------------------------------------
def test_a_content_length_over_the_cap_is_413_before_reading() -> None:
    out = call(CHAT, [b"x" * 65536], length=LIMIT + 1)
    assert_refused(out, 413, str(LIMIT))
    assert out.body["error"]["code"] == "request_too_large" and out.bytes_read == 0


def test_a_body_without_a_length_is_cut_off_at_the_cap() -> None:
    chunk = b" " * 65536
    out = call(CHAT, [chunk] * (LIMIT // len(chunk) + 8), length=None)
    assert_refused(out, 413)
    assert out.bytes_read <= LIMIT + len(chunk)             # one chunk past the cap, no more


def test_a_bad_content_length_is_400_before_reading() -> None:
    for length in ("-1", "1e3", "abc", "0x10"):
        out = call(CHAT, [chat()], length=length)
        assert_refused(out, 400, "Content-Length")
        assert out.receives == 0, length


# ---- with the key: the worker's checks --------------------------------------------------------
@pytest.mark.parametrize("raw, field_name", [
    (b'{"temperature": NaN, ', "NaN"), (b'{"temperature": Infinity, ', "Infinity"),
    (b'{"temperature": 1e999, ', "1e999"), (b'{"temperature": 2.5, ', "temperature"),
    (b'{"max_tokens": -1, ', "max_tokens"), (b'{"max_tokens": 0, ', "max_tokens"),
    (b'{"max_tokens": 1e12, ', "max_tokens"), (b'{"max_tokens": 1000000000000, ', "max_tokens"),
    (b'{"max_tokens": %d, ' % (N_CTX + 1), "max_tokens"), (b'{"top_p": -0.1, ', "top_p"),
    (b'{"seed": 1.5, ', "seed"), (b'{"max_tokens": 1' + b"0" * 5000 + b", ", "JSON")])
def test_generation_numbers_the_worker_refuses_are_400(raw: bytes, field_name: str) -> None:
    out = call(CHAT, [raw + b'"messages": [{"role": "user", "content": "hi"}]}'])
    assert_refused(out, 400, field_name)


@pytest.mark.parametrize("body", [b"[" * 100000 + b"]" * 100000, b'{"a": ' * 50000 + b"1" +
                                  b"}" * 50000, b"{oops", b"\xff\xfe", b"[1, 2]"])
def test_malformed_or_deeply_nested_json_is_a_400_not_a_traceback(body: bytes) -> None:
    out = call(CHAT, [body])
    assert_refused(out, 400)
    assert "Traceback" not in out.body["error"]["message"]


def test_a_schema_error_with_the_key_names_the_field() -> None:
    out = call(CHAT, [b'{"messages": 5}'])
    assert_refused(out, 400, "messages")
    assert out.body["error"]["param"] == "messages"


def test_a_valid_request_reaches_the_library_with_its_body() -> None:
    body = chat(max_tokens=N_CTX, temperature=0.7, top_p=1.0, seed=42)
    chunks = [body[:10], body[10:]]
    out = call(CHAT, chunks)
    assert out.status == 200 and out.reached_app == body
    assert call("/v1/embeddings", [b'{"messages": [], "max_tokens": -1}']).status == 200  # not generation


# ---- the real server ---------------------------------------------------------------------------
def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def send_unauthenticated_body(port: int, pid: int, size: int) -> tuple[bytes, float, float]:
    """POST `size` bytes to the chat route without the key, as fast as the server takes them;
    returns (the status line, the server's resident MB before, its highest resident MB while
    the body was sent), sampled every 10 ms."""
    before = _rss_mb(pid)
    peak = [before]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _rss_mb(pid))
            time.sleep(0.01)

    sampler = threading.Thread(target=sample)
    sampler.start()
    answer = b""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
            sock.sendall(f"POST {CHAT} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         f"Content-Length: {size}\r\n\r\n".encode())
            block = b"[" * (1 << 20)
            try:
                for _ in range(size // len(block)):
                    sock.sendall(block)
            except OSError:
                pass                    # the server answered and closed: the rest is not read
            try:
                answer = sock.recv(65536)
            except OSError:
                pass
        time.sleep(0.5)                 # what the server may still buffer after we stopped
    finally:
        done.set()
        sampler.join()
    return answer.split(b"\r\n", 1)[0], before, peak[0]


@dataclass
class Served:
    port: int
    pid: int


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    from flowkit.testing.servers import free_port
    port = free_port()
    log = tmp_path_factory.mktemp("serve") / "serve-model.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "service.cli", "serve-model", "--port",
                                 str(port), "--n-ctx", str(N_CTX), "--n-threads", "1",
                                 "--api-key", KEY], stdout=out, stderr=subprocess.STDOUT,
                                env={**os.environ, "HF_HUB_OFFLINE": "1"})
    try:
        deadline = time.monotonic() + 180
        while True:
            assert proc.poll() is None, log.read_text()[-2000:]
            assert time.monotonic() < deadline, log.read_text()[-2000:]
            try:
                status, _ = http(port, "GET", "/v1/models", None)
                if status == 200:
                    break
            except OSError:
                time.sleep(0.3)
        yield Served(port, proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        assert "Traceback" not in log.read_text(), log.read_text()[-3000:]


def http(port: int, method: str, path: str, body: bytes | None,
         key: str | None = KEY) -> tuple[int, dict[str, Any]]:
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method=method,
                                 headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


@pytest.mark.real
def test_real_serve_model_refuses_300_mb_without_the_key_without_growing(served: Served) -> None:
    status, before, peak = send_unauthenticated_body(served.port, served.pid, 300 * 2**20)
    print(f"serve-model resident memory: {before:.0f} MB before, {peak:.0f} MB at most while a "
          "300 MB body without the key was sent")
    assert status == b"HTTP/1.1 401 Unauthorized", status
    assert peak - before < 64, (before, peak)


@pytest.mark.real
def test_real_serve_model_checks_the_key_then_the_worker_rules(served: Served) -> None:
    for body in (b'{"messages": 5}', b"[" * 100000):
        status, answer = http(served.port, "POST", CHAT, body, key=None)
        assert status == 401 and answer["error"]["code"] == "invalid_api_key", answer
    messages = b'"messages": [{"role": "user", "content": "hi"}]}'
    for raw in (b'{"temperature": NaN, ', b'{"max_tokens": -1, ', b'{"max_tokens": 1e12, ',
                b'{"max_tokens": 1000000000000, '):
        status, answer = http(served.port, "POST", CHAT, raw + messages)
        assert status == 400 and answer["error"]["type"] == "invalid_request_error", answer
    status, answer = http(served.port, "POST", CHAT, b"[" * 100000 + b"]" * 100000)
    assert status == 400 and "Traceback" not in json.dumps(answer), answer
    status, answer = http(served.port, "POST", CHAT, b"{" + messages[:-1] + b', "max_tokens": 4}')
    assert status == 200 and answer["usage"]["completion_tokens"] <= 4, answer


def test_max_completion_tokens_reaches_the_library_as_max_tokens() -> None:
    """OpenAI's newer name (LangChain's ChatOpenAI sends it): llama-cpp-python ignores it and ran
    to the end of the context; it reaches the library as `max_tokens`, checked as that is."""
    out = call(CHAT, [chat(max_completion_tokens=5, temperature=0)])
    assert out.status == 200 and out.reached_app is not None
    sent = json.loads(out.reached_app)
    assert sent["max_tokens"] == 5 and "max_completion_tokens" not in sent
    assert json.loads(call(CHAT, [chat(max_completion_tokens=5, max_tokens=5)]).reached_app or
                      b"{}")["max_tokens"] == 5
    assert_refused(call(CHAT, [chat(max_completion_tokens=5, max_tokens=6)]), 400,
                   "max_completion_tokens", "max_tokens")
    assert_refused(call(CHAT, [chat(max_completion_tokens=N_CTX + 1)]), 400, "max_tokens")
    body = chat(max_tokens=7)                                  # no new name: the body as it came
    assert call(CHAT, [body]).reached_app == body
