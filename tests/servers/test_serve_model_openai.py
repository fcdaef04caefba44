"""`flowkit serve-model` driven by a client nobody here wrote: the official `openai` package.
Chat completion, streamed chat completion, the legacy text completions endpoint, `stop`,
`max_tokens` (and its newer name `max_completion_tokens`), and bad requests answered with 4xx
JSON errors. All but the serve-model-only errors run against llama.cpp's `llama-server` too
(`openai_server_url`): the same client, the same answers on either server."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import openai
import pytest

pytestmark = pytest.mark.real

MESSAGES = [{"role": "system", "content": "Answer in one short sentence."},
            {"role": "user", "content": "What is the capital of France?"}]


COUNT = "Count: 1, 2, 3, 4,"
#: greedy, as flowkit's own client asks: llama-cpp-python's server (serve-model) applies
#: repeat_penalty 1.1 unless told, llama-server 1.0
GREEDY: dict[str, Any] = {"temperature": 0, "seed": 42, "extra_body": {"repeat_penalty": 1.0}}


def _client(url: str, timeout: float = 120) -> openai.OpenAI:
    return openai.OpenAI(base_url=url, api_key="unused", max_retries=0, timeout=timeout)


def test_chat_completion(openai_server_url: str) -> None:
    client = _client(openai_server_url)
    models = [m.id for m in client.models.list()]
    assert models == ["SmolLM2-135M-Instruct.Q4_1.gguf"]
    out = client.chat.completions.create(model=models[0], messages=MESSAGES, max_tokens=16,
                                         temperature=0, seed=42)
    choice = out.choices[0]
    assert choice.message.role == "assistant" and choice.message.content
    assert choice.finish_reason in ("stop", "length")
    assert out.usage is not None and out.usage.prompt_tokens > 10
    assert 0 < out.usage.completion_tokens <= 16
    again = client.chat.completions.create(model=models[0], messages=MESSAGES, max_tokens=16,
                                           temperature=0, seed=42)
    assert again.choices[0].message.content == choice.message.content    # greedy, same machine


def test_streamed_chat_completion_is_the_same_answer_in_pieces(openai_server_url: str) -> None:
    client = _client(openai_server_url)
    whole = client.chat.completions.create(model="default", messages=MESSAGES, max_tokens=16,
                                           temperature=0, seed=42)
    stream = client.chat.completions.create(model="default", messages=MESSAGES, max_tokens=16,
                                            temperature=0, seed=42, stream=True)
    pieces, reasons = [], []
    for chunk in stream:
        assert chunk.object == "chat.completion.chunk"
        for c in chunk.choices:
            pieces.append(c.delta.content or "")
            reasons.append(c.finish_reason)
    assert len([p for p in pieces if p]) > 1                    # it arrived in several chunks
    assert "".join(pieces) == whole.choices[0].message.content
    assert reasons[-1] == whole.choices[0].finish_reason


def test_bad_requests_are_4xx_json_errors(llama_server_url: str) -> None:
    client = _client(llama_server_url)
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model="default", messages="not a list",  # type: ignore[arg-type]
                                       max_tokens=4)
    err = info.value
    assert err.status_code == 400 and err.response.headers["content-type"] == "application/json"
    assert isinstance(err.body, dict) and "messages" in err.body["message"]
    assert err.body["type"] == "invalid_request_error"
    with pytest.raises(openai.BadRequestError) as info:          # longer than the context
        client.chat.completions.create(model="default", max_tokens=8, messages=[
            {"role": "user", "content": "lighthouse " * 5000}])
    assert info.value.status_code == 400 and isinstance(info.value.body, dict)
    assert "context" in json.dumps(info.value.body)
    # a body that is not JSON at all (the openai package cannot send one)
    req = urllib.request.Request(f"{llama_server_url}/chat/completions", data=b"{not json",
                                 headers={"Content-Type": "application/json"}, method="POST")
    with pytest.raises(urllib.error.HTTPError) as raw:
        urllib.request.urlopen(req, timeout=30)
    assert raw.value.code == 400
    assert "not JSON" in json.loads(raw.value.read())["error"]["message"]


def test_text_completions_with_stop_and_max_tokens(openai_server_url: str) -> None:
    """The legacy endpoint (`client.completions`), streamed: the text in pieces, "length" where
    `max_tokens` cut it; unstreamed, a stop string ends the text before it and says "stop", and
    `max_tokens` bounds the tokens counted."""
    client = _client(openai_server_url)
    pieces, reasons = [], []
    for chunk in client.completions.create(model="default", prompt=COUNT, max_tokens=9,
                                           stream=True, **GREEDY):
        assert chunk.object == "text_completion"
        for c in chunk.choices:
            pieces.append(c.text)
            reasons.append(c.finish_reason)
    whole = "".join(pieces)
    assert len([p for p in pieces if p]) > 1 and reasons[-1] == "length"
    assert " 7" in whole, whole
    cut = client.completions.create(model="default", prompt=COUNT, max_tokens=9, stop=[" 7"],
                                    **GREEDY)
    assert cut.choices[0].text == whole[:whole.index(" 7")]        # not the stop string
    assert cut.choices[0].finish_reason == "stop"
    assert cut.usage and 0 < cut.usage.completion_tokens < 9
    short = client.completions.create(model="default", prompt=COUNT, max_tokens=3, **GREEDY)
    assert short.usage and 0 < short.usage.completion_tokens <= 3
    assert short.choices[0].finish_reason == "length"
    assert short.choices[0].text and whole.startswith(short.choices[0].text)


def test_chat_stop_and_max_completion_tokens(openai_server_url: str) -> None:
    """The same rules on the chat endpoint, the bound by its newer name `max_completion_tokens`
    (what LangChain sends; llama-cpp-python ignored it)."""
    client = _client(openai_server_url, timeout=60)            # a bound ignored would not hang
    whole = client.chat.completions.create(model="default", messages=MESSAGES, max_tokens=16,
                                           **GREEDY).choices[0].message.content or ""
    assert " Paris" in whole, whole
    cut = client.chat.completions.create(model="default", messages=MESSAGES, max_tokens=16,
                                         stop=[" Paris"], **GREEDY)
    assert cut.choices[0].message.content == whole[:whole.index(" Paris")]
    assert cut.choices[0].finish_reason == "stop"
    short = client.chat.completions.create(model="default", messages=MESSAGES,
                                           max_completion_tokens=3, **GREEDY)
    assert short.usage and 0 < short.usage.completion_tokens <= 3
    assert short.choices[0].finish_reason == "length"
    assert whole.startswith(short.choices[0].message.content or "-")


@pytest.mark.parametrize("bad, field", [({"max_tokens": -5}, "max_tokens"),
                                        ({"temperature": "hot"}, "temperature")])
def test_a_bad_parameter_is_a_400_json_error(openai_server_url: str, bad: dict[str, Any],
                                             field: str) -> None:
    """A bad number is openai.BadRequestError at once (the client waits 30 s at most), with the
    error object in JSON, on either endpoint."""
    client = _client(openai_server_url, timeout=30)
    calls = (lambda: client.completions.create(model="default", prompt="Hi", **{
                 "max_tokens": 4, **bad}),
             lambda: client.chat.completions.create(model="default", messages=MESSAGES, **{
                 "max_tokens": 4, **bad}))
    for call in calls:
        with pytest.raises(openai.BadRequestError) as info:
            call()
        err = info.value
        assert err.status_code == 400
        assert err.response.headers["content-type"].startswith("application/json")
        assert isinstance(err.body, dict) and err.body["type"] == "invalid_request_error"
        assert field in err.body["message"]


def test_a_bad_model_field_is_a_400_naming_it(llama_server_url: str) -> None:
    """serve-model names the field at fault (`param`): a model that is not a string, more than
    one choice, and two different bounds (llama-server takes a number for a model name)."""
    client = _client(llama_server_url, timeout=30)
    for call, param in (
            (lambda: client.completions.create(model=123, prompt="Hi", max_tokens=4),  # type: ignore[arg-type]
             "model"),
            (lambda: client.chat.completions.create(model="default", messages=MESSAGES, n=2,
                                                    max_tokens=4), "n"),
            (lambda: client.chat.completions.create(model="default", messages=MESSAGES,
                                                    max_tokens=4, max_completion_tokens=5),
             "max_completion_tokens")):
        with pytest.raises(openai.APIStatusError) as info:
            call()
        assert info.value.status_code == 400 and isinstance(info.value.body, dict)
        assert info.value.body["param"] == param, info.value.body
