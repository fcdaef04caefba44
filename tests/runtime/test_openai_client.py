"""The OpenAI-compatible client against a small scripted HTTP server on loopback: error mapping,
the tokenize extension and its fallback, the exact-prompt extension, timeouts."""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from flowkit.errors import ContextOverflowError, LLMServerError, LLMTimeout, LLMUnreachable
from flowkit.runtime.llm import LLMSettings
from flowkit.runtime.openai_client import OpenAICompatibleLLM


class _Script(BaseHTTPRequestHandler):
    replies: dict[str, tuple[int, dict[str, Any], float]] = {}
    seen: list[dict[str, Any]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
        code, reply, delay = self.replies.get(self.path, (404, {"error": "no route"}, 0.0))
        time.sleep(delay)
        raw = json.dumps(reply).encode()
        self.send_response(code)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


@pytest.fixture
def server() -> Iterator[tuple[str, type[_Script]]]:
    handler = type("Handler", (_Script,), {"replies": {}, "seen": []})
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1", handler
    srv.shutdown()


CHAT = {"choices": [{"message": {"content": " Paris. "}, "finish_reason": "stop",
                     "logprobs": {"content": [{"token": " Paris", "logprob": -0.5}]}}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 2}}


def test_chat_answer_usage_logprobs_and_auth(server) -> None:
    url, h = server
    h.replies["/v1/chat/completions"] = (200, CHAT, 0.0)
    llm = OpenAICompatibleLLM(LLMSettings(backend="openai", base_url=url, api_key="k",
                                          model_name="m", seed=7))
    out = llm.complete("Capital of France?", system="Be brief.", max_tokens=5, stop=["\n"],
                       logprobs=True)
    assert (out.text, out.prompt_tokens, out.completion_tokens) == ("Paris.", 12, 2)
    assert out.logprobs == [(" Paris", -0.5)]
    sent = h.seen[-1]
    assert sent["auth"] == "Bearer k"
    assert sent["body"]["messages"][0] == {"role": "system", "content": "Be brief."}
    assert sent["body"]["seed"] == 7 and sent["body"]["stop"] == ["\n"]
    assert json.loads(out.prompt)[1]["content"] == "Capital of France?"   # no exact-prompt extension


def test_the_exact_prompt_extension_is_recorded(server) -> None:
    url, h = server
    h.replies["/v1/chat/completions"] = (200, {**CHAT, "flowkit": {"prompt": "<s>user: hi"}}, 0.0)
    out = OpenAICompatibleLLM(LLMSettings(backend="openai", base_url=url)).complete("hi")
    assert out.prompt == "<s>user: hi"


def test_context_overflow_is_its_own_error(server) -> None:
    url, h = server
    h.replies["/v1/chat/completions"] = (400, {"error": {
        "message": "This model's maximum context length is 512 tokens", "type": "invalid_request_error"}}, 0.0)
    with pytest.raises(ContextOverflowError, match="maximum context length"):
        OpenAICompatibleLLM(LLMSettings(backend="openai", base_url=url)).complete("x")
    h.replies["/v1/chat/completions"] = (500, {"error": {"message": "boom"}}, 0.0)
    with pytest.raises(LLMServerError, match="HTTP 500: boom"):
        OpenAICompatibleLLM(LLMSettings(backend="openai", base_url=url)).complete("x")


def test_tokenize_extension_and_estimate_fallback(server) -> None:
    url, h = server
    llm = OpenAICompatibleLLM(LLMSettings(backend="openai", base_url=url))
    assert llm.count_tokens("a" * 40) == 10           # no /tokenize: 4 characters a token
    h.replies["/tokenize"] = (200, {"tokens": [1, 2, 3]}, 0.0)
    llm = OpenAICompatibleLLM(LLMSettings(backend="openai", base_url=url))
    assert llm.count_tokens("a" * 40) == 3
    assert h.seen[-1]["path"] == "/tokenize"          # the root, not /v1


def test_timeout_and_unreachable(server) -> None:
    url, h = server
    h.replies["/v1/chat/completions"] = (200, CHAT, 2.0)
    llm = OpenAICompatibleLLM(LLMSettings(backend="openai", base_url=url))
    with pytest.raises(LLMTimeout, match="within 0.5 s"):
        llm.complete("x", timeout_s=0.5)
    dead = OpenAICompatibleLLM(LLMSettings(backend="openai", base_url="http://127.0.0.1:9/v1"))
    with pytest.raises(LLMUnreachable, match="unreachable"):
        dead.complete("x")


class _NoUsageStream(_Script):
    """A server like llama-cpp-python's: a stream without `usage`, a whole answer with it, and
    /tokenize that puts a BOS before the words of the text."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen.append({"path": self.path, "body": body})
        if self.path == "/tokenize":
            reply: Any = {"tokens": [1] + [7] * len(body["content"].split())}
        elif body.get("stream"):
            events = [{"choices": [{"delta": {"content": p}, "finish_reason": None}]}
                      for p in ("Paris", " is", " the", " capital")]
            events.append({"choices": [{"delta": {}, "finish_reason": "length"}]})
            raw = "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode() + \
                b"data: [DONE]\n\n"
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)
            return
        else:   # the same prompt asked again for one token: the server's own count of it
            reply = {"choices": [{"message": {"content": "Paris"}, "finish_reason": "length"}],
                     "usage": {"prompt_tokens": 31, "completion_tokens": body["max_tokens"]}}
        raw = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


def test_a_stream_without_usage_is_counted_by_the_client() -> None:
    """llama-cpp-python's server (serve-model without --parallel) ignores
    stream_options.include_usage: the prompt's tokens are the server's count for the same
    request unstreamed for one token, the answer's its text tokenized less the BOS."""
    handler = type("Handler", (_NoUsageStream,), {"replies": {}, "seen": []})
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        llm = OpenAICompatibleLLM(LLMSettings(backend="openai", model_name="m",
                                              base_url=f"http://127.0.0.1:{srv.server_address[1]}/v1"))
        pieces: list[str] = []
        out = llm.complete("Capital of France?", max_tokens=4, on_token=pieces.append)
    finally:
        srv.shutdown()
    assert out.text == "Paris is the capital" and "".join(pieces) == out.text
    assert (out.prompt_tokens, out.completion_tokens, out.finish_reason) == (31, 4, "length")
    streamed, probe = [s["body"] for s in handler.seen if s["path"] == "/v1/chat/completions"]
    assert streamed["stream"] is True and "stream" not in probe and "stream_options" not in probe
    assert probe["max_tokens"] == 1 and probe["messages"] == streamed["messages"]
