"""LangChain's `ChatOpenAI` (package `langchain-openai`), the client most RAG code calls a model
through, against flowkit's `serve-model` and llama.cpp's `llama-server` (`openai_server_url`):
invoked and streamed, it gives the greedy answer the `openai` package gets for the same request,
with its token counts, and its `max_tokens` (sent as `max_completion_tokens`) bounds the answer."""
from __future__ import annotations

import openai
import pytest
from langchain_core.messages import AIMessageChunk, HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI

pytestmark = pytest.mark.real

SYSTEM, QUESTION = "Answer in one short sentence.", "What is the capital of France?"


def _chat(url: str, **extra: object) -> ChatOpenAI:
    # timeout: a bound the server ignored would run to the end of the context, not hang the suite
    return ChatOpenAI(base_url=url, api_key="unused", model="default", temperature=0, seed=42,
                      max_retries=0, timeout=60, **extra)


def test_chat_openai_invoke_and_stream_give_the_openai_clients_answer(
        openai_server_url: str, request: pytest.FixtureRequest) -> None:
    client = openai.OpenAI(base_url=openai_server_url, api_key="unused", max_retries=0, timeout=60)
    direct = client.chat.completions.create(
        model="default", temperature=0, seed=42, max_tokens=16,
        messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}])
    expected = direct.choices[0].message.content
    assert expected and direct.usage is not None
    messages = [SystemMessage(SYSTEM), HumanMessage(QUESTION)]

    llm = _chat(openai_server_url, max_tokens=16, stream_usage=True)
    said = llm.invoke(messages)
    assert said.content == expected                               # greedy: the same answer
    assert said.response_metadata["finish_reason"] == direct.choices[0].finish_reason
    assert said.usage_metadata is not None
    assert said.usage_metadata["input_tokens"] == direct.usage.prompt_tokens
    assert said.usage_metadata["output_tokens"] == direct.usage.completion_tokens

    chunks = list(llm.stream(messages))
    assert len([c for c in chunks if c.content]) > 1              # it came in pieces
    whole = chunks[0]
    for c in chunks[1:]:
        whole = whole + c
    assert isinstance(whole, AIMessageChunk) and whole.content == expected
    assert whole.response_metadata["finish_reason"] == direct.choices[0].finish_reason
    # token counts: llama-server sends them in the stream (stream_options.include_usage);
    # serve-model's serial server (llama-cpp-python's app) sends none
    if request.node.callspec.params["openai_server_url"] == "llama-server":
        assert whole.usage_metadata is not None
        assert whole.usage_metadata["input_tokens"] == direct.usage.prompt_tokens

    cut = _chat(openai_server_url, max_tokens=3).invoke(messages)
    assert cut.response_metadata["finish_reason"] == "length"
    assert cut.usage_metadata is not None and 0 < cut.usage_metadata["output_tokens"] <= 3
    assert isinstance(cut.content, str) and expected.startswith(cut.content)
