"""The model worker enforces its limits (issue 28, item 4), driven through its HTTP surface.

Most tests serve the worker's own server and handler (`worker._Server`) around a scripted model
that generates one "token" per step and asks `should_stop` between steps as llama.cpp does, so
they are fast and exact. The `real` tests start `python -m flowkit.runtime.worker` on the default
model (Gemma 3 270M) once for the module and check the same limits there, and that a normal
request still answers exactly what the model in process answers.
"""
from __future__ import annotations

import http.client
import json
import os
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from flowkit.errors import GenerationStopped
from flowkit.runtime.llm import Completion, LlamaCppLLM, LLMSettings
from flowkit.runtime.worker import _Server
from flowkit.runtime.worker_requests import body_limit

TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
N_CTX = 1024
WAIT_S = 60.0            # a generous bound for anything that must happen "soon"; never asserted on
SLOW = "generate slowly"


@dataclass
class ScriptedModel:
    """What the worker needs of `LlamaCppLLM`: one lock, a context, and a generation that asks
    `should_stop` after every token (as the real one does through llama.cpp's stopping criteria)."""

    request_timeout_s: float = 600.0
    n_ctx: int = N_CTX
    model_id: str = "scripted"
    lock: threading.Lock = field(default_factory=threading.Lock)
    started: threading.Event = field(default_factory=threading.Event)
    calls: list[dict[str, Any]] = field(default_factory=list)

    @property
    def settings(self) -> LLMSettings:
        return LLMSettings(n_ctx=self.n_ctx, request_timeout_s=self.request_timeout_s)

    def tokenize(self, text: str) -> list[int]:
        with self.lock:
            return [1] + [2] * len(text.split())

    def token_logprobs(self, text: str) -> list[tuple[str, float]]:
        with self.lock:
            return [(text, 0.0)]

    def complete(self, prompt: str, *, max_tokens: int, stop: list[str],
                 temperature: float | None, logprobs: bool, system: str | None,
                 should_stop: Any = None) -> Completion:
        with self.lock:
            self.calls.append({"prompt": prompt, "max_tokens": max_tokens, "stop": stop,
                               "temperature": temperature, "logprobs": logprobs, "system": system})
            n = max_tokens if prompt == SLOW else 1
            self.started.set()
            for i in range(n):
                if should_stop is not None:
                    why = should_stop()
                    if why:
                        raise GenerationStopped(why, i)
                if prompt == SLOW:
                    time.sleep(0.01)
            return Completion(prompt=prompt, text="ok", prompt_tokens=1, completion_tokens=n, ms=1.0)


@dataclass
class Served:
    model: ScriptedModel
    server: _Server
    port: int


def _serve(model: ScriptedModel, **limits: Any) -> Iterator[Served]:
    server = _Server(model, TOKEN, **limits)    # type: ignore[arg-type]  # the scripted model
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield Served(model, server, server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture()
def served() -> Iterator[Served]:
    yield from _serve(ScriptedModel(), idle_timeout_s=30.0, max_connections=4)


# ---- helpers ---------------------------------------------------------------------------------
def request(port: int, method: str, path: str, body: Any = None, *, raw: bytes | None = None,
            headers: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    """One request on a fresh connection: the status and the JSON body."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT_S)
    try:
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        conn.request(method, path, body=data, headers={**AUTH, **(headers or {})})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read() or b"null")
    finally:
        conn.close()


def raw_exchange(port: int, data: bytes) -> bytes:
    """Send `data` as it is and read until the worker closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT_S) as sock:
        sock.sendall(data)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def status_and_error(answer: bytes) -> tuple[int, dict[str, Any]]:
    """The status line's code and the JSON error of a raw HTTP answer."""
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 "), answer[:200]
    error = json.loads(body)["error"]
    assert set(error) == {"message", "type", "code"} and error["message"], error
    return int(head.split()[1]), error


def chat(prompt: str = "hello", **extra: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": prompt}], **extra}


def assert_error(status: int, body: Any, expected: int) -> None:
    assert status == expected, body
    assert isinstance(body, dict) and set(body["error"]) == {"message", "type", "code"}, body
    assert body["error"]["code"] == expected and body["error"]["message"]


# ---- max_tokens and sampling parameters ------------------------------------------------------
@pytest.mark.parametrize("max_tokens", [-1, 0, N_CTX + 1, 10**12, 1.5, True, "12", [4]])
def test_max_tokens_outside_the_context_or_not_an_integer_is_refused(served: Served,
                                                                      max_tokens: Any) -> None:
    status, body = request(served.port, "POST", "/v1/chat/completions", chat(max_tokens=max_tokens))
    assert_error(status, body, 400)
    assert "max_tokens" in body["error"]["message"]
    assert served.model.calls == []                       # the model never saw it


def test_max_tokens_up_to_the_context_is_served(served: Served) -> None:
    for n in (1, N_CTX):
        status, body = request(served.port, "POST", "/v1/chat/completions", chat(max_tokens=n))
        assert status == 200, body
    status, _ = request(served.port, "POST", "/v1/chat/completions", chat())
    assert status == 200
    assert [c["max_tokens"] for c in served.model.calls] == [1, N_CTX, 256]


@pytest.mark.parametrize("raw", [b'{"temperature": NaN', b'{"temperature": -0.5',
                                 b'{"temperature": 1e999', b'{"temperature": 2.5',
                                 b'{"temperature": true', b'{"temperature": "hot"',
                                 b'{"top_p": 1.5', b'{"top_p": -Infinity',
                                 b'{"presence_penalty": 3', b'{"seed": 1.5'])
def test_sampling_parameters_must_be_finite_and_in_range(served: Served, raw: bytes) -> None:
    body = raw + b', "messages": [{"role": "user", "content": "hi"}]}'
    status, answer = request(served.port, "POST", "/v1/chat/completions", raw=body)
    assert_error(status, answer, 400)
    assert served.model.calls == []


def test_valid_sampling_parameters_reach_the_model_unchanged(served: Served) -> None:
    status, _ = request(served.port, "POST", "/v1/chat/completions",
                        chat(temperature=0.7, top_p=1.0, seed=42, repeat_penalty=1.0,
                             stop=["\n", "Q:"], logprobs=True,
                             messages=[{"role": "system", "content": "S"},
                                       {"role": "user", "content": "U"}]))
    assert status == 200
    assert served.model.calls == [{"prompt": "U", "max_tokens": 256, "stop": ["\n", "Q:"],
                                   "temperature": 0.7, "logprobs": True, "system": "S"}]


# ---- malformed requests get a JSON 4xx, never a closed connection ----------------------------
@pytest.mark.parametrize("body, where", [
    (b"{not json", "JSON"), (b"[1, 2]", "object"), (b'"text"', "object"),
    (b"[" * 100000 + b"]" * 100000, "JSON"), (b"\xff\xfe", "JSON"),
    (b'{"messages": ["x"]}', "messages[0]"), (b'{"messages": [{"role": "user", "content": 5}]}',
                                              "content"),
    (b'{"messages": [{"role": "tool", "content": "x"}]}', "role"), (b'{"messages": "hi"}', "messages"),
    (b'{"messages": [{"role": "user", "content": "a"}], "stop": 5}', "stop"),
    (b'{"messages": [{"role": "user", "content": "a"}], "logprobs": "yes"}', "logprobs"),
    (b'{"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]}', "user"),
])
def test_a_malformed_chat_request_gets_a_json_400(served: Served, body: bytes, where: str) -> None:
    status, answer = request(served.port, "POST", "/v1/chat/completions", raw=body)
    assert_error(status, answer, 400)
    assert where in answer["error"]["message"]


@pytest.mark.parametrize("path, body", [("/tokenize", {"content": 5}),
                                        ("/v1/completions", {"prompt": 5, "echo": True, "logprobs": 1}),
                                        ("/v1/completions", {"prompt": "a", "echo": "yes", "logprobs": 1}),
                                        ("/v1/completions", {"prompt": "a", "echo": True,
                                                             "logprobs": 1, "temperature": "x"})])
def test_wrong_types_on_the_other_routes_get_a_json_400(served: Served, path: str, body: Any) -> None:
    status, answer = request(served.port, "POST", path, body)
    assert_error(status, answer, 400)


@pytest.mark.parametrize("length, code", [("abc", 400), ("-5", 400), ("1e3", 400), ("0x10", 400)])
def test_a_bad_content_length_gets_a_json_error(served: Served, length: str, code: int) -> None:
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
            f"Content-Length: {length}\r\n\r\n{{}}")
    got, error = status_and_error(raw_exchange(served.port, head.encode()))
    assert got == code, error


def test_a_missing_or_chunked_body_length_gets_411(served: Served) -> None:
    for extra in ("", "Transfer-Encoding: chunked\r\n"):
        head = (f"POST /tokenize HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n{extra}"
                "\r\n")
        got, _ = status_and_error(raw_exchange(served.port, head.encode()))
        assert got == 411


@pytest.mark.parametrize("method, path, code", [
    ("GET", "/nowhere", 404), ("POST", "/nowhere", 404), ("GET", "/v1/chat/completions", 405),
    ("POST", "/health", 405), ("PUT", "/health", 405), ("DELETE", "/v1/models", 405),
    ("BREW", "/tokenize", 405)])
def test_unknown_paths_and_wrong_methods_get_json_errors(served: Served, method: str, path: str,
                                                         code: int) -> None:
    status, body = request(served.port, method, path, raw=b"{}")
    assert_error(status, body, code)


def test_an_unreadable_request_line_gets_a_json_400(served: Served) -> None:
    got, _ = status_and_error(raw_exchange(served.port, b"complete nonsense\r\n\r\n"))
    assert got == 400


def test_a_wrong_token_is_still_refused_before_anything_is_read(served: Served) -> None:
    head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 999999999999\r\n\r\n"
    got, error = status_and_error(raw_exchange(served.port, head))
    assert got == 401 and error["type"] == "authentication_error"


# ---- the body-size cap ------------------------------------------------------------------------
def test_a_body_over_the_cap_is_refused_413_before_it_is_read(served: Served) -> None:
    """The headers announce 64 GB and no byte of it is sent: the answer can only come from the
    headers (the old worker waited to read the whole body)."""
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
            f"Content-Length: {64 * 10**9}\r\n\r\n")
    got, error = status_and_error(raw_exchange(served.port, head.encode()))
    assert got == 413 and str(body_limit(N_CTX)) in error["message"]
    assert served.model.calls == []


def test_the_cap_follows_the_context_and_a_body_under_it_is_served(served: Served) -> None:
    assert body_limit(1024) == 1 << 20 and body_limit(131072) == 64 * 131072
    prompt = "word " * ((body_limit(N_CTX) - 200) // 5)
    status, body = request(served.port, "POST", "/tokenize", {"content": prompt})
    assert status == 200 and len(body["tokens"]) == len(prompt.split()) + 1


# ---- connections: idle timeout and a cap -------------------------------------------------------
def test_an_idle_connection_is_closed_after_the_idle_timeout() -> None:
    for s in _serve(ScriptedModel(), idle_timeout_s=0.5, max_connections=4):
        with socket.create_connection(("127.0.0.1", s.port), timeout=WAIT_S) as sock:
            assert sock.recv(1) == b""                    # the worker closed it, no answer
        with socket.create_connection(("127.0.0.1", s.port), timeout=WAIT_S) as sock:
            sock.sendall(b"GET /health HTTP/1.1\r\n")    # half a request, then nothing
            assert sock.recv(1) == b""


def _holding(port: int) -> socket.socket:
    """A connection that holds a slot: authenticated headers of a body that never comes."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT_S)
    sock.sendall(f"POST /tokenize HTTP/1.1\r\nAuthorization: Bearer {TOKEN}\r\n"
                 "Content-Length: 100\r\n\r\n".encode())
    return sock


def _wait_admitted(port: int, n: int) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        status, body = request(port, "GET", "/health")
        if status == 200 and body["connections"]["admitted"] >= n + 1:     # + this request
            return
        time.sleep(0.02)


def test_connections_beyond_the_cap_are_refused_503_and_served_again_after(served: Served) -> None:
    """The cap counts authenticated requests (issue 39: idle connections without the token took
    every slot; they no longer count, tests/security/test_worker_drip.py)."""
    idle = [_holding(served.port) for _ in range(4)]
    deadline = time.monotonic() + WAIT_S
    while served.server.admission.counts()[1] < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        got, error = status_and_error(raw_exchange(
            served.port, f"GET /health HTTP/1.1\r\nAuthorization: Bearer {TOKEN}\r\n\r\n".encode()))
        assert got == 503 and error["type"] == "server_busy"
    finally:
        for sock in idle:
            sock.close()
    deadline = time.monotonic() + WAIT_S                   # the four threads end as their peers go
    while True:
        status, body = request(served.port, "GET", "/health")
        if status == 200 or time.monotonic() > deadline:
            break
    assert status == 200 and body["generations"]["refused_connections"] >= 1


# ---- generation stops when the client goes or the deadline passes ---------------------------
def _send_and_vanish(port: int, body: dict[str, Any], started: threading.Event) -> None:
    data = json.dumps(body).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT_S) as sock:
        sock.sendall(f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                     f"{TOKEN}\r\nContent-Length: {len(data)}\r\n\r\n".encode() + data)
        assert started.wait(WAIT_S)                       # generating now; the client leaves


def test_a_client_that_disconnects_mid_generation_releases_the_model(served: Served) -> None:
    """A generation of the whole context (about 10 s here) whose client leaves at once stops,
    and the next request (which needs the model's lock) is served."""
    _send_and_vanish(served.port, chat(SLOW, max_tokens=N_CTX), served.model.started)
    status, _ = request(served.port, "POST", "/tokenize", {"content": "next"})
    assert status == 200
    status, health = request(served.port, "GET", "/health")
    stats = health["generations"]
    assert stats["stopped_client_gone"] == 1 and stats["last_stopped_tokens"] < N_CTX, stats
    assert stats["served"] == 0


def test_a_generation_past_its_deadline_is_stopped_with_504() -> None:
    for s in _serve(ScriptedModel(request_timeout_s=0.2), idle_timeout_s=30.0, max_connections=4):
        status, body = request(s.port, "POST", "/v1/chat/completions", chat(SLOW, max_tokens=N_CTX))
        assert_error(status, body, 504)
        assert body["error"]["type"] == "timeout_error" and "deadline" in body["error"]["message"]
        _, health = request(s.port, "GET", "/health")
        assert health["generations"]["stopped_deadline"] == 1
        assert health["generations"]["last_stopped_tokens"] < N_CTX


# ---- the real worker on the default model ----------------------------------------------------
REAL_CTX = 2048
COUNTING = "1, 2, 3, 4, 5, 6, 7, 8,"       # a base model goes on counting with no new line


@dataclass
class RealWorker:
    proc: subprocess.Popen[bytes]
    port: int
    settings: LLMSettings


@pytest.fixture(scope="module")
def real_worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealWorker]:
    settings = LLMSettings(n_ctx=REAL_CTX, n_threads=1)
    log = open(tmp_path_factory.mktemp("worker") / "worker.log", "wb")
    env = {**os.environ, "FLOWKIT_WORKER_TOKEN": TOKEN, "FLOWKIT_WORKER_IDLE_TIMEOUT_S": "5",
           "FLOWKIT_WORKER_MAX_CONNECTIONS": "3"}
    proc = subprocess.Popen([sys.executable, "-m", "flowkit.runtime.worker"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=log, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write((json.dumps(settings.to_dict()) + "\n").encode())
    proc.stdin.close()
    ready = json.loads(proc.stdout.readline())
    assert ready.get("ready"), ready
    try:
        yield RealWorker(proc, ready["port"], settings)
    finally:
        proc.kill()
        proc.wait()
        log.close()


@pytest.mark.real
def test_real_worker_answers_a_normal_request_exactly_as_the_model_in_process(
        real_worker: RealWorker) -> None:
    here = LlamaCppLLM(real_worker.settings)
    for prompt, extra in (("Question: What is the capital of France?\nAnswer:", {"max_tokens": 16}),
                          (COUNTING, {"max_tokens": 24, "logprobs": True})):
        status, body = request(real_worker.port, "POST", "/v1/chat/completions",
                               chat(prompt, **extra))
        assert status == 200, body
        local = here.complete(prompt, max_tokens=extra["max_tokens"],
                              logprobs=bool(extra.get("logprobs")))
        choice = body["choices"][0]
        assert (choice["message"]["content"], body["usage"]["completion_tokens"],
                choice["finish_reason"], body["flowkit"]["prompt"]) == \
            (local.text, local.completion_tokens, local.finish_reason, local.prompt)


@pytest.mark.real
def test_real_worker_refuses_huge_negative_and_bad_max_tokens(real_worker: RealWorker) -> None:
    for bad in (-1, 0, 10**12, REAL_CTX + 1, "64", True):
        status, body = request(real_worker.port, "POST", "/v1/chat/completions",
                               chat(COUNTING, max_tokens=bad))
        assert_error(status, body, 400)
    for raw in (b'{"temperature": NaN, "messages": [{"role": "user", "content": "a"}]}',
                b'{"temperature": -1, "messages": [{"role": "user", "content": "a"}]}',
                b'{"messages": ["a"]}', b"{oops"):
        status, body = request(real_worker.port, "POST", "/v1/chat/completions", raw=raw)
        assert_error(status, body, 400)


@pytest.mark.real
def test_real_worker_refuses_a_body_over_its_cap_without_reading_it(real_worker: RealWorker) -> None:
    head = (f"POST /tokenize HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
            f"Content-Length: {64 * 2**20}\r\n\r\n")
    got, _ = status_and_error(raw_exchange(real_worker.port, head.encode()))
    assert got == 413


@pytest.mark.real
def test_real_worker_stops_generating_when_its_client_disconnects(real_worker: RealWorker) -> None:
    """A counting prompt asked for the whole context; its client leaves right after sending. The
    next request that needs the model is served, and the stopped generation produced fewer tokens
    than it asked for."""
    asked = REAL_CTX - 64
    before = _generations(real_worker.port)
    data = json.dumps(chat(COUNTING, max_tokens=asked)).encode()
    with socket.create_connection(("127.0.0.1", real_worker.port), timeout=WAIT_S) as sock:
        sock.sendall(f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                     f"{TOKEN}\r\nContent-Length: {len(data)}\r\n\r\n".encode() + data)
    ended = ("stopped_client_gone", "served")
    deadline = time.monotonic() + 300                      # unstopped, it would end by itself
    stats = before
    while all(stats[k] == before[k] for k in ended) and time.monotonic() < deadline:
        time.sleep(0.2)
        stats = _generations(real_worker.port)
    assert stats["stopped_client_gone"] == before["stopped_client_gone"] + 1, stats
    assert stats["served"] == before["served"] and stats["last_stopped_tokens"] < asked, stats
    status, _ = request(real_worker.port, "POST", "/tokenize", {"content": "next"})
    assert status == 200                                   # the model's lock was released


def _generations(port: int) -> dict[str, int]:
    status, health = request(port, "GET", "/health")
    assert status == 200, health
    return health["generations"]


def _answered(sock: socket.socket) -> bool:
    """Whether the worker has already written something on `sock` (a 503, a 408)."""
    return bool(select.select([sock], [], [], 0)[0])


def _three_holding(port: int) -> list[socket.socket]:
    """Three connections holding the worker's three slots, and a /health answered 503 to show it.

    The third can be refused: the /health that saw the first two admitted has sent its answer but
    its thread may not have left its slot yet (slow on a busy machine), so the third finds three
    taken and gets a 503. Such a third is opened again; when the first two have met their idle
    timeout (they have an answer waiting) the whole attempt starts over."""
    deadline = time.monotonic() + WAIT_S
    seen: list[bytes] = []
    while time.monotonic() < deadline:
        idle = [_holding(port) for _ in range(2)]
        _wait_admitted(port, 2)
        idle.append(_holding(port))
        while not any(_answered(sock) for sock in idle[:2]) and time.monotonic() < deadline:
            answer = raw_exchange(
                port, f"GET /health HTTP/1.1\r\nAuthorization: Bearer {TOKEN}\r\n\r\n".encode())
            if int(answer.split(b" ", 2)[1]) == 503:
                return idle
            seen.append(answer[-200:])
            if _answered(idle[2]):                    # the third was refused: open it again
                idle[2].close()
                idle[2] = _holding(port)
            time.sleep(0.05)
        for sock in idle:
            sock.close()
    raise AssertionError(f"three connections never held the three slots: {seen[-3:]}")


@pytest.mark.real
def test_real_worker_closes_idle_connections_and_caps_them(real_worker: RealWorker) -> None:
    idle = _three_holding(real_worker.port)
    try:
        answer = raw_exchange(
            real_worker.port,
            f"GET /health HTTP/1.1\r\nAuthorization: Bearer {TOKEN}\r\n\r\n".encode())
        got, _ = status_and_error(answer)             # the refusal is a JSON error
        assert got == 503, answer[:300]
        chunks = []                                       # the body never came: 408 after 5 s
        while chunk := idle[0].recv(65536):
            chunks.append(chunk)
        assert status_and_error(b"".join(chunks))[0] == 408
        with socket.create_connection(("127.0.0.1", real_worker.port), timeout=WAIT_S) as silent:
            assert silent.recv(1) == b""                  # no headers: closed, no answer
    finally:
        for sock in idle:
            sock.close()
