"""A local process without the worker's token cannot stop runs (issue 39, item 1).

The attack: connections that send the start of a request one byte at a time. Before, each read
had its own idle timeout and a connection took one of the 16 slots before its token was checked,
so 16 dripping connections held every slot as long as they liked; the supervisor's own request was
answered 503 and the run in flight failed. Now the request line and headers have one deadline,
the token is checked before a connection takes a slot, silent connections beyond a pending cap
push the oldest out, and the supervisor asks a busy worker again after a short pause.

The attack runs in a process of its own (`drip_attack.py`). The completions go through
`WorkerLLM`, the supervisor the studio uses: most against the worker's own server around a
scripted model (`flowkit.testing.scripted_worker`), one against the real worker and the default
model.
"""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from flowkit.runtime.llm_contract import LLMSettings
from flowkit.runtime.supervisor import WorkerLLM

ATTACK = Path(__file__).with_name("drip_attack.py")
PROMPT = "the harbour light at Corren"
WAIT_S = 60.0


class ScriptedWorkerLLM(WorkerLLM):
    """The supervisor, starting the worker's server around a scripted model."""

    worker_module = "flowkit.testing.scripted_worker"


@contextmanager
def drip(port: int, connections: int, every_s: float, seconds: float) -> Iterator[dict[str, Any]]:
    """The drip attack from another process while the block runs; yields its summary (filled in
    once it has stopped: opened, closed_by_worker, longest_s)."""
    proc = subprocess.Popen([sys.executable, str(ATTACK), str(port), str(connections), str(every_s),
                             str(seconds)], stdout=subprocess.PIPE, text=True)
    summary: dict[str, Any] = {}
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        yield summary
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=WAIT_S)
    summary.update(json.loads(out.strip().splitlines()[-1]))


@pytest.fixture()
def scripted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedWorkerLLM]:
    monkeypatch.setenv("FLOWKIT_WORKER_HEAD_TIMEOUT_S", "2")
    w = ScriptedWorkerLLM(LLMSettings(n_ctx=1024), log_dir=tmp_path)
    w.start()
    try:
        yield w
    finally:
        w.close()


def _port(w: WorkerLLM) -> int:
    return int(w.info["port"])


def _health(w: WorkerLLM) -> dict[str, Any]:
    """The worker's /health, asked with its token."""
    token = w._client._token if w._client else ""
    req = urllib.request.Request(f"http://127.0.0.1:{_port(w)}/health",
                                 headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=WAIT_S) as resp:
        return dict(json.loads(resp.read()))


def test_sixteen_dripping_connections_do_not_stop_a_completion(
        scripted: ScriptedWorkerLLM) -> None:
    """20 connections (the worker has 16 slots) drip a byte every 0.5 s, well inside any per-read
    timeout; completions through the supervisor still answer, the worker is not restarted, and
    the worker closes every dripping connection at its 2 s head deadline."""
    expected = scripted.complete(PROMPT, max_tokens=8).text
    pid = scripted.pid
    with drip(_port(scripted), 20, 0.5, 30) as summary:
        time.sleep(1.0)                                   # every connection has sent something
        for _ in range(3):
            assert scripted.complete(PROMPT, max_tokens=8).text == expected
        time.sleep(3.0)                                   # past the head deadline
    assert scripted.pid == pid and scripted.restarts == 0
    assert summary["closed_by_worker"] >= 20, summary
    assert summary["longest_s"] < 4.0, summary            # 2 s deadline, checked every 0.5 s


def test_a_flood_of_silent_connections_pushes_out_the_oldest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """More silent connections than may wait at once (8 here): the oldest are pushed out, so the
    supervisor's request, which sends its headers at once, is still read and answered."""
    monkeypatch.setenv("FLOWKIT_WORKER_MAX_PENDING", "8")
    w = ScriptedWorkerLLM(LLMSettings(n_ctx=1024), log_dir=tmp_path)
    try:
        w.start()
        with drip(_port(w), 30, 0.2, 30):
            time.sleep(0.5)
            assert w.complete(PROMPT, max_tokens=4).text == "echo: the harbour light"
            assert w.count_tokens(PROMPT) == 6
            assert _health(w)["connections"]["pushed_out"] > 0
        assert w.restarts == 0
    finally:
        w.close()


def _hold_slot(port: int, token: str) -> socket.socket:
    """A connection with the token whose body never comes: it holds one slot."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT_S)
    sock.sendall(f"POST /tokenize HTTP/1.1\r\nAuthorization: Bearer {token}\r\n"
                 "Content-Length: 50\r\n\r\n".encode())
    return sock


def test_a_busy_worker_is_asked_again_not_killed(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Every slot held by clients with the token (2 here) for 0.6 s: the supervisor's call is
    answered 503, waits and asks again, and is served by the same worker once a slot frees."""
    monkeypatch.setenv("FLOWKIT_WORKER_MAX_CONNECTIONS", "2")
    w = ScriptedWorkerLLM(LLMSettings(n_ctx=1024), log_dir=tmp_path)
    try:
        w.start()
        pid, token = w.pid, w._client._token if w._client else ""
        held = [_hold_slot(_port(w), token) for _ in range(2)]
        time.sleep(0.3)                                   # both admitted
        def release() -> None:
            for sock in held:
                sock.close()

        timer = threading.Timer(0.6, release)
        timer.start()
        started = time.monotonic()
        out = w.complete(PROMPT, max_tokens=3)
        took = time.monotonic() - started
        timer.join()
        assert out.text == "echo: the harbour"
        assert took >= 0.25, took                        # it waited for a slot
        assert w.pid == pid and w.restarts == 0           # the same worker
    finally:
        w.close()


def test_the_head_has_one_deadline_not_one_per_read(scripted: ScriptedWorkerLLM) -> None:
    """A connection that sends a byte every 0.3 s (each read quick) is closed at the 2 s
    deadline for its whole request line and headers, without an answer."""
    with socket.create_connection(("127.0.0.1", _port(scripted)), timeout=WAIT_S) as sock:
        started = time.monotonic()
        sock.setblocking(False)
        closed_at = None
        for byte in b"GET /health HTTP/1.1\r\nX-Slow: " + b"a" * 100:
            try:
                if sock.recv(1) == b"":
                    closed_at = time.monotonic() - started
                    break
            except BlockingIOError:
                pass
            try:
                sock.send(bytes([byte]))
            except OSError:
                closed_at = time.monotonic() - started
                break
            time.sleep(0.3)
    assert closed_at is not None and 1.5 <= closed_at < 4.0, closed_at


def test_a_wrong_token_never_holds_a_slot(scripted: ScriptedWorkerLLM) -> None:
    """40 requests with a wrong token kept open after their 401: the worker's slots stay free and
    the supervisor is served."""
    port = _port(scripted)
    socks = []
    try:
        for _ in range(40):
            sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT_S)
            sock.sendall(b"POST /tokenize HTTP/1.1\r\nAuthorization: Bearer nope\r\n"
                         b"Content-Length: 5\r\n\r\n")
            assert sock.recv(12) == b"HTTP/1.1 401"
            socks.append(sock)
        assert scripted.count_tokens(PROMPT) == 6
    finally:
        for sock in socks:
            sock.close()


# ---- the real worker and the default model ----------------------------------------------------
@pytest.mark.real
def test_real_worker_completes_a_run_under_the_drip_attack(tmp_path: Path) -> None:
    """The default model in its worker (default limits: 16 slots, 5 s head deadline), 20
    dripping connections from another process: a completion answers exactly what it answers
    without the attack, by the same worker. The wall times are printed (pytest -s)."""
    w = WorkerLLM(LLMSettings(n_ctx=2048, n_threads=1), log_dir=tmp_path)
    try:
        w.start()
        prompt = "Question: What is the capital of France?\nAnswer:"
        w.complete("warm up", max_tokens=4)
        started = time.monotonic()
        calm = w.complete(prompt, max_tokens=16)
        calm_s = time.monotonic() - started
        pid = w.pid
        with drip(_port(w), 20, 1.0, 60):
            time.sleep(1.5)
            started = time.monotonic()
            attacked = w.complete(prompt, max_tokens=16)
            attacked_s = time.monotonic() - started
        assert (attacked.text, attacked.completion_tokens) == (calm.text, calm.completion_tokens)
        assert w.pid == pid and w.restarts == 0
        print(f"completion: {calm_s:.2f} s without the attack, {attacked_s:.2f} s under it")
    finally:
        w.close()
