"""Token streaming below the UI (issue 29 item 7): pieces, the worker's server-sent events, the
HTTP client, and `run_flow(on_token=...)`, with scripted models (the real model: test_streaming_real).
"""
from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from flowkit import ListSink, compile_flow, run_flow
from flowkit.errors import ContextOverflowError, LLMServerError
from flowkit.run_request import RunHooks, RunRequest
from flowkit.runtime.completion_cache import MemoryCompletionCache
from flowkit.runtime.llm import Completion, LLMSettings
from flowkit.runtime.openai_client import OpenAICompatibleLLM
from flowkit.runtime.streaming import PieceStream, read_events, sse
from flowkit.runtime.worker import _Server
from flowkit.templates import load_template
from flowkit.testing import FakeLLM, fake_resources

TOKEN = "t0ken"


# ---- pieces ---------------------------------------------------------------------------------
def _pieces(steps: list[str], stops: list[str], final: str) -> list[str]:
    out: list[str] = []
    stream = PieceStream(out.append, stops)
    for text in steps:
        stream.feed(text)
    stream.finish(final)
    return out


def test_pieces_join_to_the_stripped_text_and_never_show_a_stop_string():
    steps = [" ", " Mara", " Mara Velt", " Mara Velt\n", " Mara Velt\nQuestion"]
    out = _pieces(steps, ["\n"], "Mara Velt")
    assert "".join(out) == "Mara Velt" and out[0] == "Mara"
    held = _pieces(["The answer is 4 <", "The answer is 4 <|e", "The answer is 4 <|end|>"],
                   ["<|end|>"], "The answer is 4")
    assert held == ["The answer is 4"]             # '<' and '<|e' held back, then cut


def test_a_tail_that_does_not_become_a_stop_string_is_handed_out_later():
    out = _pieces(["a <", "a <b"], ["<|end|>"], "a <b")
    assert out == ["a", " <b"]


def test_without_a_callback_nothing_happens():
    stream = PieceStream(None, ["\n"])
    stream.feed("text")
    stream.finish("text")
    assert stream.sent == ""


def test_server_sent_events_are_read_up_to_done():
    raw = (b": keep-alive\n\n" + sse({"a": 1}) + b"event: x\ndata: {\"b\":\ndata: 2}\n\n"
           + sse("[DONE]") + sse({"never": True}))
    assert list(read_events(io.BytesIO(raw))) == [{"a": 1}, {"b": 2}]


# ---- the worker's stream and the client -----------------------------------------------------
class StreamingModel:
    """What the worker needs of LlamaCppLLM, generating a fixed text word by word and asking
    `should_stop` and calling `on_token` as the real one does."""

    model_id = "scripted"
    words = ["Mara", " Velt", " was", " born", " on", " Tiree."]

    def __init__(self, fail_after: int | None = None, overflow: bool = False) -> None:
        self.settings = LLMSettings(n_ctx=1024)
        self.n_ctx = 1024
        self.fail_after, self.overflow = fail_after, overflow

    def tokenize(self, text: str) -> list[int]:
        return [1] * len(text.split())

    def complete(self, prompt: str, *, max_tokens: int, stop: list[str],
                 temperature: float | None, logprobs: bool, system: str | None,
                 should_stop: Any = None, on_token: Any = None) -> Completion:
        if self.overflow:
            raise ContextOverflowError("prompt is 2000 tokens; the model's context is 1024")
        pieces = PieceStream(on_token, stop)
        for i in range(len(self.words)):
            if should_stop is not None and should_stop():
                break
            if self.fail_after is not None and i == self.fail_after:
                raise RuntimeError("native trouble")
            pieces.feed("".join(self.words[: i + 1]))
        text = "".join(self.words)
        pieces.finish(text)
        return Completion(prompt=f"<user>{prompt}", text=text, prompt_tokens=7,
                          completion_tokens=len(self.words), ms=3.0,
                          logprobs=[(w, -0.5) for w in self.words] if logprobs else None)


@pytest.fixture()
def serve() -> Iterator[Any]:
    servers: list[_Server] = []

    def start(model: StreamingModel) -> OpenAICompatibleLLM:
        server = _Server(model, TOKEN)  # type: ignore[arg-type]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return OpenAICompatibleLLM(LLMSettings(), base_url=f"http://127.0.0.1:{server.server_address[1]}/v1",
                                   token=TOKEN, model_id="scripted")
    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def test_the_worker_streams_openai_chunks(serve: Any):
    import urllib.request
    client = serve(StreamingModel())
    body = {"messages": [{"role": "user", "content": "where?"}], "stream": True}
    req = urllib.request.Request(client.base_url + "/chat/completions", json.dumps(body).encode(),
                                 {"Authorization": f"Bearer {TOKEN}",
                                  "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        assert resp.headers["Content-Type"] == "text/event-stream"
        raw = resp.read().decode()
    assert raw.rstrip().endswith("data: [DONE]")
    events = list(read_events(io.BytesIO(raw.encode())))
    assert all(e["object"] == "chat.completion.chunk" for e in events)
    assert events[0]["choices"][0]["delta"] == {"role": "assistant"}
    text = "".join(e["choices"][0]["delta"].get("content", "") for e in events)
    assert text == "Mara Velt was born on Tiree."
    assert len([e for e in events if e["choices"][0]["delta"].get("content")]) == 6
    last = events[-1]
    assert last["choices"][0]["finish_reason"] == "stop"
    assert last["usage"] == {"prompt_tokens": 7, "completion_tokens": 6, "total_tokens": 13}
    assert last["flowkit"]["prompt"] == "<user>where?"


def test_a_streamed_completion_equals_the_whole_one(serve: Any):
    client = serve(StreamingModel())
    pieces: list[str] = []
    streamed = client.complete("where?", on_token=pieces.append, logprobs=True)
    whole = client.complete("where?", logprobs=True)
    assert len(pieces) == 6 and "".join(pieces) == streamed.text == whole.text
    assert (streamed.prompt, streamed.prompt_tokens, streamed.completion_tokens,
            streamed.finish_reason, streamed.logprobs) == \
        (whole.prompt, whole.prompt_tokens, whole.completion_tokens, whole.finish_reason,
         whole.logprobs)


def test_a_refusal_before_the_first_piece_is_the_same_typed_error(serve: Any):
    client = serve(StreamingModel(overflow=True))
    with pytest.raises(ContextOverflowError):
        client.complete("x", on_token=lambda p: None)
    with pytest.raises(ContextOverflowError):
        client.complete("x")


def test_a_failure_after_the_first_piece_is_an_error_event(serve: Any):
    client = serve(StreamingModel(fail_after=2))
    pieces: list[str] = []
    with pytest.raises(LLMServerError, match="native trouble"):
        client.complete("x", on_token=pieces.append)
    assert pieces == ["Mara", " Velt"]


def test_bad_stream_flags_are_refused():
    from flowkit.runtime.worker_requests import BadRequest, chat_request
    msgs = [{"role": "user", "content": "x"}]
    assert chat_request({"messages": msgs, "stream": True}, 64).stream
    assert not chat_request({"messages": msgs}, 64).stream
    for bad in ({"stream": "yes"}, {"stream": 1}, {"stream_options": []}):
        with pytest.raises(BadRequest):
            chat_request({"messages": msgs, **bad}, 64)


# ---- run_flow(on_token=...) -----------------------------------------------------------------
class StreamingFake(FakeLLM):
    """FakeLLM that streams its answer word by word."""

    def complete(self, prompt: str, *, on_token: Any = None, **kw: Any) -> Completion:  # type: ignore[override]
        out = super().complete(prompt, **kw)
        words = out.text.split(" ")
        if on_token is not None:
            for i, w in enumerate(words):
                on_token(w if i == 0 else " " + w)
        return out


def _run(llm: Any, on_token: Any = None, cache: Any = None) -> tuple[Any, ListSink]:
    sink = ListSink()
    res = fake_resources(llm, kb="test")
    result = run_flow(compile_flow(load_template("naive_rag")), res,
                      RunRequest("Where was Mara Velt born?", kb="test"),
                      RunHooks(sink=sink, on_token=on_token, cache=cache))
    return result, sink


def _trace(sink: ListSink) -> list[Any]:
    return [(s.node_id, s.visit, [(c.prompt, c.completion, c.prompt_tokens, c.completion_tokens,
                                   c.finish_reason) for c in s.llm_calls], s.memory_after)
            for s in sink.steps]


def test_run_flow_streams_each_node_visit_and_records_the_same_trace():
    got: list[tuple[str, int, str]] = []
    answer = "Mara Velt was born on the island of Tiree [1]"
    streamed, s_sink = _run(StreamingFake(default=answer), lambda n, v, p: got.append((n, v, p)))
    plain, p_sink = _run(StreamingFake(default=answer))
    assert streamed.answer == plain.answer and _trace(s_sink) == _trace(p_sink)
    assert len(got) == len(answer.split(" ")) and {(n, v) for n, v, _ in got} == {("generate", 1)}
    completions = [c.completion for s in s_sink.steps for c in s.llm_calls]
    assert "".join(p for _, _, p in got) == completions[-1] == answer


def test_a_backend_that_does_not_stream_hands_out_its_text_whole():
    got: list[tuple[str, int, str]] = []
    result, _ = _run(FakeLLM(default="Tiree [1]"), lambda n, v, p: got.append((n, v, p)))
    assert got == [("generate", 1, "Tiree [1]")] and result.status == "ok"


def test_a_cached_completion_is_one_piece_and_recorded_as_a_hit():
    cache = MemoryCompletionCache()
    llm = StreamingFake(default="Mara Velt was born on Tiree [1]")
    llm.cache_identity = lambda: {"backend": "fake"}  # type: ignore[attr-defined]
    first: list[str] = []
    _run(llm, lambda n, v, p: first.append(p), cache=cache)
    again: list[str] = []
    result, sink = _run(llm, lambda n, v, p: again.append(p), cache=cache)
    assert len(first) > 1 and again == ["Mara Velt was born on Tiree [1]"]
    assert result.cost.cached == 1
    assert [c.cached_from for s in sink.steps for c in s.llm_calls] == [
        {"run_id": c.cached_from["run_id"], "node_id": "generate", "visit": 1}
        for s in sink.steps for c in s.llm_calls]


def test_a_connection_on_a_descriptor_above_1023_is_not_taken_for_gone():
    """A long-lived process (the whole suite, a studio open for days) holds many files; select()
    refuses descriptors above 1023, and reading that refusal as "the client left" cut every
    stream to one piece. The check must see the peer, whatever the descriptor's number."""
    import os
    import resource
    import socket

    from flowkit.runtime.worker import client_gone
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    high = 1500
    if soft <= high:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    a, b = socket.socketpair()
    os_fd = os.dup2(a.fileno(), high)
    a.close()
    near = socket.socket(fileno=os_fd)
    try:
        assert near.fileno() > 1023
        assert client_gone(near) is False                 # open, nothing sent
        b.sendall(b"GET")
        assert client_gone(near) is False                 # a next request waiting is not gone
        b.close()
        near.recv(3)
        assert client_gone(near) is True                  # the peer closed
    finally:
        near.close()
        b.close()
