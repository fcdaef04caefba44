"""The goal of issue 47, finding 2 and 3, on the real server: `flowkit serve-model --parallel 2` on
the packaged default model answers every valid request after any sequence of hostile ones.

The test sends the hostile list (the seeds llama.cpp reads as "random" or wraps, sampling numbers at
their edges, bodies the serial path answered 500 or 200 to, a stream whose client goes away, messages
a template cannot render), each answered, none with a traceback; then `/health` is 200 and 20 valid
chats, 4 at a time, are all answered by the batching engine. Before the fix the first request
(`"seed": -1`) killed the batching thread and the next batched chat never came back.
"""
from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

pytestmark = pytest.mark.real

N_CTX = 1024
TIMEOUT_S = 60
HI = [{"role": "user", "content": "Say hello."}]
BATCHED = {"messages": HI, "max_tokens": 4, "repeat_penalty": 1.0}

#: (what it is, body, the statuses it may get): each must be answered within TIMEOUT_S
HOSTILE: list[tuple[str, dict[str, Any], tuple[int, ...]]] = [
    ("seed -1, llama.cpp's random", {**BATCHED, "seed": -1, "temperature": 0.8}, (200,)),
    ("seed -1 again, streamed", {**BATCHED, "seed": -1, "temperature": 0.8, "stream": True},
     (200,)),
    ("the lowest seed", {**BATCHED, "seed": -(2**63), "temperature": 1.0}, (200,)),
    ("the highest seed", {**BATCHED, "seed": 2**64 - 1, "temperature": 1.0}, (200,)),
    ("a tiny temperature", {**BATCHED, "temperature": 1e-300, "seed": 3}, (200,)),
    ("min_p past 1", {**BATCHED, "min_p": 5.0, "temperature": 0.5}, (400,)),
    ("min_p below 0", {**BATCHED, "min_p": -1.0, "temperature": 0.5}, (400,)),
    ("top_k negative", {**BATCHED, "top_k": -5, "temperature": 1.0}, (400,)),
    ("top_k 0 and top_p 0", {**BATCHED, "top_k": 0, "top_p": 0.0, "temperature": 1.0}, (200,)),
    ("top_k huge", {**BATCHED, "top_k": 10**9, "temperature": 1.0}, (200,)),
    ("logprobs with 20 alternatives", {**BATCHED, "logprobs": True, "top_logprobs": 20}, (200,)),
    ("sixteen empty stops", {**BATCHED, "stop": [""] * 16}, (200,)),
    ("content as parts", {**BATCHED, "messages": [{"role": "user", "content": [
        {"type": "text", "text": "hi"}]}]}, (200, 400)),
    ("an empty message", {**BATCHED, "messages": [{"role": "user", "content": ""}]}, (200, 400)),
    ("logit_bias not a token id", {**BATCHED, "logit_bias": {"abc": 1}}, (400,)),
    ("logit_bias past the vocabulary", {**BATCHED, "logit_bias": {"99999999": 1}}, (400,)),
    ("n 0", {**BATCHED, "n": 0}, (400,)),
    ("n -1", {**BATCHED, "n": -1}, (400,)),
    ("n 1000", {**BATCHED, "n": 1000}, (400,)),
    ("no messages", {**BATCHED, "messages": []}, (400,)),
    ("seed -1 on the serial path", {"messages": HI, "max_tokens": 4, "seed": -1}, (200,)),
]


@pytest.fixture(scope="module")
def parallel_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from flowkit.runtime.models import DEFAULT_MODEL, packaged_path
    from flowkit.testing.servers import llama_server
    log_dir = tmp_path_factory.mktemp("serve-model-hostile")
    with llama_server(packaged_path(DEFAULT_MODEL), n_ctx=N_CTX, log_dir=log_dir,
                      extra_args=("--parallel", "2", "--n-threads", "1")) as url:
        yield url
    log = (log_dir / "llama-server.log").read_text(errors="replace")
    assert "Traceback" not in log, log[-3000:]


def post(url: str, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(f"{url}/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:
            return resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, {k.lower(): v for k, v in err.headers.items()}, err.read()


def leave_mid_stream(url: str) -> None:
    """Start a streamed chat and close the connection after the first bytes of the answer."""
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    body = json.dumps({**BATCHED, "max_tokens": 64, "stream": True}).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S) as sock:
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                     b"application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        assert sock.recv(64).startswith(b"HTTP/1.1 200")


def test_after_the_hostile_list_every_valid_chat_is_answered(parallel_url: str) -> None:
    for name, body, expected in HOSTILE:
        status, _, raw = post(parallel_url, body)
        assert status in expected, (name, status, raw[:300])
        assert b"Traceback" not in raw, name
        if status == 400:
            assert json.loads(raw)["error"]["param"], (name, raw)
    leave_mid_stream(parallel_url)
    with urllib.request.urlopen(parallel_url.removesuffix("/v1") + "/health",
                                timeout=TIMEOUT_S) as resp:
        assert resp.status == 200 and json.loads(resp.read()) == {"status": "ok"}
    valid = {**BATCHED, "temperature": 0.0}
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda _: post(parallel_url, valid), range(20)))
    assert [status for status, _, _ in answers] == [200] * 20, [a[2][:200] for a in answers]
    assert all(headers["x-flowkit-batched"] == "1" for _, headers, _ in answers)
    replies = [json.loads(raw) for _, _, raw in answers]
    assert all(r["choices"][0]["finish_reason"] in ("stop", "length") for r in replies), replies
    assert all(r["usage"]["completion_tokens"] <= 4 for r in replies), replies
