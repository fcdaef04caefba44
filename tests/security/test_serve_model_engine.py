"""One request must not stop `flowkit serve-model --parallel` (issue 47, finding 2).

Before: `"seed": -1` (llama.cpp's "random") raised on the batching thread (numpy refuses a negative
seed), the thread died, and every later batched request waited for ever while `/v1/models` still
answered. Now -1 is a random seed as llama.cpp reads it, a job that fails fails alone (its client
gets a JSON error) and the scheduler goes on, and an engine whose thread did stop says so: `/health`
is 503 with the reason, queued and new requests are answered 503 at once instead of waiting.

Driven in process: the scheduler on a scripted model, and the batching routes on an engine made of
that scheduler and a scripted chat template (the real server's test is test_serve_model_hostile).
"""
from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import MutableMapping, Sequence
from typing import Any, cast

import numpy as np
import pytest

from flowkit.runtime.batch_engine import BatchEngine
from flowkit.runtime.batch_routes import BatchedChat
from flowkit.runtime.batch_sampling import Sampling
from flowkit.runtime.batch_slots import Done, Entry, Event, Failed, Job, Scheduler

END, POISON = 0, 9
PIECES = {END: b"", 1: b"ok", 2: b" then", POISON: b"?"}
WAIT_S = 10.0


class ScriptedSlots:
    """A slot model: a prompt that starts with token p generates SCRIPTS[p] (its last token
    repeated); `piece` of POISON raises, as a model error tied to one request would;
    `broken_forget` makes freeing a slot raise (an error outside any one request)."""

    SCRIPTS = {100: [1, 2, END], 101: [POISON, 1, END], 102: [1, 1, 1, 1, 1, 1, 1, 1, END]}

    def __init__(self, n_slots: int = 2, n_ctx: int = 64) -> None:
        self.n_slots, self.n_ctx, self.n_batch = n_slots, n_ctx, 64
        self.seqs: dict[int, list[int]] = {}
        self.read: dict[int, int] = {}
        self.broken_forget = False

    def evaluate(self, entries: Sequence[Entry]) -> list[np.ndarray]:
        rows = []
        for seq, token, _pos, logits in entries:
            self.seqs.setdefault(seq, []).append(token)
            if logits:
                self.read.setdefault(seq, len(self.seqs[seq]))
                script = self.SCRIPTS[self.seqs[seq][0]]
                k = len(self.seqs[seq]) - self.read[seq]
                row = np.full(16, -1.0, dtype=np.float32)
                row[script[min(k, len(script) - 1)]] = 5.0
                rows.append(row)
        return rows

    def forget(self, seq: int) -> None:
        if self.broken_forget:
            raise RuntimeError("llama_memory_seq_rm failed")
        self.seqs.pop(seq, None)
        self.read.pop(seq, None)

    def piece(self, token: int) -> bytes:
        if token == POISON:
            raise ValueError("this token cannot be detokenized")
        return PIECES[token]

    def is_end(self, token: int) -> bool:
        return token == END


class Waiter:
    """A job's events, and a wait for its last one (Done or Failed)."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.done = threading.Event()

    def emit(self, event: Event) -> None:
        self.events.append(event)
        if isinstance(event, Done | Failed):
            self.done.set()

    def last(self) -> Event:
        assert self.done.wait(WAIT_S), "the job was never answered (the scheduler stopped?)"
        return self.events[-1]


def _job(first: int, waiter: Waiter, **sampling: Any) -> Job:
    return Job(tokens=[first, 7, 7], emit=waiter.emit, max_tokens=8,
               sampling=Sampling(**sampling))


@pytest.fixture()
def running() -> Any:
    """A scheduler on ScriptedSlots, run on its own thread as BatchEngine runs it."""
    model = ScriptedSlots()
    sched = Scheduler(model)
    thread = threading.Thread(target=sched.run, daemon=True)
    thread.start()
    yield sched, model, thread
    sched.stop()
    thread.join(timeout=5)


# ---- the scheduler --------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [-1, -2, -(2**63), 2**64 - 1, 2**32 - 1])
def test_seed_minus_one_and_other_seeds_llama_cpp_takes_are_served(running: Any,
                                                                   seed: int) -> None:
    sched, _, thread = running
    hostile, after = Waiter(), Waiter()
    sched.submit(_job(100, hostile, temperature=0.8, seed=seed))
    sched.submit(_job(100, after))
    assert isinstance(hostile.last(), Done) and isinstance(after.last(), Done)
    assert thread.is_alive()


def test_a_failing_job_fails_alone_and_the_scheduler_keeps_serving(running: Any) -> None:
    sched, _, thread = running
    beside, poisoned = Waiter(), Waiter()
    sched.submit(_job(102, beside))                 # generating while the other one fails
    sched.submit(_job(101, poisoned))
    failed = poisoned.last()
    assert isinstance(failed, Failed) and "cannot be detokenized" in failed.message
    done = beside.last()
    assert isinstance(done, Done) and done.text == "ok" * 8
    later = [Waiter() for _ in range(20)]
    for waiter in later:
        sched.submit(_job(100, waiter))
    texts = [e.text if isinstance(e := w.last(), Done) else e for w in later]
    assert texts == ["ok then"] * 20
    assert thread.is_alive() and sched.failure is None


def test_a_dead_scheduler_answers_its_waiting_jobs_and_refuses_new_ones(running: Any) -> None:
    from flowkit.runtime.batch_slots import EngineStopped
    sched, model, thread = running
    model.broken_forget = True
    waiters = [Waiter() for _ in range(4)]          # two in slots, two queued
    for waiter in waiters:
        sched.submit(_job(100, waiter))
    for waiter in waiters:
        event = waiter.last()
        assert isinstance(event, Failed) and "llama_memory_seq_rm failed" in event.message
    thread.join(timeout=WAIT_S)
    assert not thread.is_alive()
    assert sched.failure is not None and "llama_memory_seq_rm failed" in sched.failure
    with pytest.raises(EngineStopped, match="llama_memory_seq_rm failed"):
        sched.submit(_job(100, Waiter()))


def test_sampling_at_a_tiny_temperature_or_any_min_p_picks_a_token() -> None:
    from flowkit.runtime.batch_sampling import choose
    logits = np.array([3.0, 2.0, 1.0, -4.0], dtype=np.float32)
    rng = np.random.default_rng(1)
    assert choose(logits, Sampling(temperature=1e-300), rng) == 0
    assert choose(logits, Sampling(temperature=0.5, min_p=5.0), rng) == 0
    assert choose(logits, Sampling(temperature=0.5, min_p=-1.0), rng) in range(4)


# ---- the routes -----------------------------------------------------------------------------
class ScriptedLlama:
    """What the routes use of a `Llama`: a chat handler (it hands a prompt to create_completion:
    the first message's content picks the script) and a model path."""

    model_path = "scripted.gguf"

    def __init__(self) -> None:
        self.chat_handler = self._handler

    @staticmethod
    def _handler(*, llama: Any, messages: list[dict[str, Any]], stop: Any) -> Any:
        content = messages[0].get("content")
        if not isinstance(content, str):
            raise TypeError("can only concatenate str (not \"list\") to str")
        return llama.create_completion(prompt=[int(content), 7, 7], stop=stop)


def _engine(model: ScriptedSlots) -> BatchEngine:
    return BatchEngine(ScriptedLlama(), model)


async def _serial(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 404, "headers": []})
    await send({"type": "http.response.body", "body": b'{"detail": "Not Found"}'})


def request(app: BatchedChat, method: str, path: str,
            body: dict[str, Any] | None = None) -> tuple[int, dict[bytes, bytes], Any]:
    """One request through `app`; fails when no answer comes within WAIT_S."""
    raw = json.dumps(body).encode() if body is not None else b""
    sent: list[MutableMapping[str, Any]] = []
    answered = asyncio.Event()
    receives = [0]

    async def receive() -> dict[str, Any]:
        receives[0] += 1
        if receives[0] == 1:
            return {"type": "http.request", "body": raw, "more_body": False}
        await answered.wait()
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body"):
            answered.set()

    async def run() -> None:
        await asyncio.wait_for(app({"type": "http", "method": method, "path": path,
                                    "headers": []}, receive, send), WAIT_S)

    asyncio.run(run())
    start = sent[0]
    payload = b"".join(m.get("body", b"") for m in sent[1:])
    headers = dict(start["headers"])
    if headers.get(b"content-type", b"").startswith(b"text/event-stream"):
        return start["status"], headers, payload.decode()
    return start["status"], headers, json.loads(payload)


def _app(model: ScriptedSlots) -> tuple[BatchedChat, BatchEngine]:
    from llama_cpp.server.types import CreateChatCompletionRequest
    engine = _engine(model)
    return BatchedChat(_serial, engine, CreateChatCompletionRequest), engine


def chat(first: int = 100, **extra: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": str(first)}], "max_tokens": 8,
            "repeat_penalty": 1.0, **extra}


def test_a_chat_with_seed_minus_one_is_answered_and_so_is_every_chat_after_it() -> None:
    app, engine = _app(ScriptedSlots())
    try:
        for hostile in (chat(seed=-1, temperature=0.7), chat(seed=-(2**63), temperature=1),
                        chat(101), chat(seed=2**64 - 1, temperature=0.2, stream=True)):
            status, headers, _ = request(app, "POST", "/v1/chat/completions", hostile)
            assert headers[b"x-flowkit-batched"] == b"1"
            assert status in (200, 500)
        answers = [request(app, "POST", "/v1/chat/completions", chat()) for _ in range(20)]
        assert [a[0] for a in answers] == [200] * 20
        assert all(a[2]["choices"][0]["message"]["content"] == "ok then" for a in answers)
        assert request(app, "GET", "/health")[:1] == (200,)
    finally:
        engine.close()


def test_a_job_that_fails_is_a_json_500_naming_the_model_error() -> None:
    app, engine = _app(ScriptedSlots())
    try:
        status, _, body = request(app, "POST", "/v1/chat/completions", chat(101))
        assert status == 500 and "cannot be detokenized" in body["error"]["message"]
        assert body["error"]["type"] == "model_error"
    finally:
        engine.close()


def test_messages_the_template_cannot_render_are_a_400_naming_messages() -> None:
    app, engine = _app(ScriptedSlots())
    try:
        status, _, body = request(app, "POST", "/v1/chat/completions", {
            **chat(), "messages": [{"role": "user", "content": [{"type": "text", "text": "1"}]}]})
        assert status == 400 and body["error"]["param"] == "messages", body
    finally:
        engine.close()


def test_a_dead_engine_shows_in_health_and_answers_chats_503_at_once() -> None:
    model = ScriptedSlots()
    app, engine = _app(model)
    try:
        assert request(app, "GET", "/health")[::2] == (200, {"status": "ok"})
        model.broken_forget = True
        status, _, body = request(app, "POST", "/v1/chat/completions", chat())
        assert status == 500 and "llama_memory_seq_rm failed" in body["error"]["message"]
        status, headers, body = request(app, "GET", "/health")
        assert status == 503 and "llama_memory_seq_rm failed" in body["error"]["message"], body
        assert body["error"]["type"] == "unavailable_error"
        status, headers, body = request(app, "POST", "/v1/chat/completions", chat())
        assert status == 503 and "llama_memory_seq_rm failed" in body["error"]["message"]
        assert b"retry-after" not in headers          # it will not come back by waiting
    finally:
        engine.close()


def test_without_an_engine_health_is_ok() -> None:
    from llama_cpp.server.types import CreateChatCompletionRequest
    app = BatchedChat(_serial, None, CreateChatCompletionRequest)
    status, headers, body = request(app, "GET", "/health")
    assert (status, body) == (200, {"status": "ok"}) and headers[b"x-flowkit-parallel"] == b"1"


def test_the_engine_is_typed_as_the_routes_expect() -> None:
    engine = _engine(ScriptedSlots())
    try:
        assert engine.parallel == 2 and engine.failure is None
        assert cast(Any, engine).llama.model_path == "scripted.gguf"
    finally:
        engine.close()
