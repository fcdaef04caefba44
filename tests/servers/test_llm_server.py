"""The same flow on an external OpenAI-compatible server (`flowkit serve-model`: llama-cpp-python's
server with the model loaded through the AMX decision, on SmolLM2, started once per test run) as on
the embedded worker: answers, token counts, stop strings, logprobs and context errors behave alike."""
from __future__ import annotations

import pytest

from flowkit import compile_flow, run_flow
from flowkit.errors import ContextOverflowError
from flowkit.run_request import RunRequest
from flowkit.runtime.llm import LLMSettings
from flowkit.runtime.openai_client import OpenAICompatibleLLM
from flowkit.runtime.resources import Resources, Settings
from flowkit.templates import load_template

pytestmark = pytest.mark.real

QUESTION = "What is the capital of France?"


def _server(url: str) -> OpenAICompatibleLLM:
    return OpenAICompatibleLLM(LLMSettings(backend="openai", base_url=url, model_name="default",
                                           n_ctx=4096))


@pytest.mark.loads_model      # serve-model's load, once more under the AMX fault (make test)
def test_completions_match_the_embedded_model(llama_server_url, real_resources) -> None:
    server, local = _server(llama_server_url), real_resources.llm
    for kwargs in ({"max_tokens": 24}, {"max_tokens": 10, "logprobs": True},
                   {"max_tokens": 24, "stop": [","]}):
        a, b = server.complete(QUESTION, **kwargs), local.complete(QUESTION, **kwargs)
        assert (a.text, a.prompt_tokens, a.completion_tokens) == \
            (b.text, b.prompt_tokens, b.completion_tokens), kwargs
        if kwargs.get("logprobs"):
            assert [t for t, _ in a.logprobs] == [t for t, _ in b.logprobs]
            assert max(abs(x - y) for (_, x), (_, y) in zip(a.logprobs, b.logprobs)) < 1e-4
        if kwargs.get("stop"):
            assert "," not in a.text
    text = "The Corren Lighthouse stands on Corren Point."
    assert server.count_tokens(text) == local.count_tokens(text)      # exact, not estimated
    assert server._tokenize_route == "/extras/tokenize"


def test_context_overflow_is_reported_as_such(openai_server_url) -> None:
    with pytest.raises(ContextOverflowError):          # serve-model and llama.cpp's llama-server
        _server(openai_server_url).complete("lighthouse " * 5000, max_tokens=8)


def test_a_flow_file_unchanged_runs_on_the_server(llama_server_url, real_resources) -> None:
    settings = Settings(llm=LLMSettings(backend="openai", base_url=llama_server_url,
                                        model_name="default", n_ctx=4096))
    res = Resources(real_resources.data_dir, settings)
    res.set_embedder(real_resources.embedder)
    flow = compile_flow(load_template("naive_rag"))
    q = "Who designed the Corren Lighthouse?"
    on_server = run_flow(flow, res, RunRequest(q, kb="sample"))
    embedded = run_flow(flow, real_resources, RunRequest(q, kb="sample"))
    assert on_server.status == embedded.status == "ok"
    assert on_server.answer == embedded.answer and on_server.cost.tokens == embedded.cost.tokens
