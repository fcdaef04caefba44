"""`flowkit serve-model` driven by a client nobody here wrote: the official `openai` package.
Chat completion, streamed chat completion, and bad requests answered with 4xx JSON errors. The
first two run against llama.cpp's `llama-server` too (`openai_server_url`): the same client, the
same answers on either server."""
from __future__ import annotations

import json
import urllib.error
import urllib.request

import openai
import pytest

pytestmark = pytest.mark.real

MESSAGES = [{"role": "system", "content": "Answer in one short sentence."},
            {"role": "user", "content": "What is the capital of France?"}]


def _client(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=url, api_key="unused", max_retries=0, timeout=120)


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
