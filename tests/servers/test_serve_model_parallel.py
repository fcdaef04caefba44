"""`flowkit serve-model --parallel 4` with the packaged default model: four answer prompts sent at
once through flowkit's own OpenAI-compatible client come back as the serial server (`--parallel 1`)
answers them, token counts included, also when a prompt longer than the batch (read in chunks
over several steps while the others generate) arrives with short ones; the server reports its
slots; a stream is the same answer;
a prompt longer than one slot's context is a 400 that names the context."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from flowkit.errors import ContextOverflowError
from flowkit.runtime.llm_contract import Completion, LLMSettings
from flowkit.runtime.openai_client import OpenAICompatibleLLM
from flowkit.testing.answer_prompts import answer_prompts

pytestmark = pytest.mark.real


@pytest.fixture(scope="module")
def parallel_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from flowkit.runtime.models import packaged_path
    from flowkit.testing.servers import llama_server
    with llama_server(packaged_path("smollm2-135m"), n_ctx=4096, extra_args=("--parallel", "4"),
                      log_dir=tmp_path_factory.mktemp("llama-server-parallel")) as url:
        yield url


def _answers(url: str, prompts: list[str], at_once: int) -> list[Completion]:
    llm = OpenAICompatibleLLM(LLMSettings(backend="openai", base_url=url, n_ctx=4096))
    with ThreadPoolExecutor(at_once) as pool:
        return list(pool.map(lambda p: llm.complete(p, max_tokens=24), prompts))


def _post(url: str, body: dict[str, object]) -> tuple[dict[str, str], bytes]:
    req = urllib.request.Request(f"{url}/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=300) as resp:
        return {k.lower(): v for k, v in resp.headers.items()}, resp.read()


def test_four_at_once_answer_as_the_serial_server(llama_server_url: str,
                                                  parallel_url: str) -> None:
    prompts = answer_prompts(16)[12:16]          # each with its article and two others
    batched = _answers(parallel_url, prompts, 4)
    serial = _answers(llama_server_url, prompts, 1)
    got = [(c.text, c.prompt_tokens, c.completion_tokens, c.finish_reason) for c in batched]
    assert got == [(c.text, c.prompt_tokens, c.completion_tokens, c.finish_reason)
                   for c in serial]
    assert all(c.prompt_tokens > 100 and c.text for c in batched)


def test_a_long_prompt_read_beside_short_ones_answers_as_the_serial_server(
        llama_server_url: str, parallel_url: str) -> None:
    # two articles' passages (over 512 tokens: read in two chunks) beside two short prompts;
    # kept small: each server reads every token of it on 2 CPU cores
    prompts = answer_prompts(24)
    long = "\n\n".join(p.rsplit("Question: ", 1)[0] for p in prompts[16:18]) + \
        "Question: " + prompts[19].rsplit("Question: ", 1)[1]
    mixed = [long, *prompts[20:22]]
    batched = _answers(parallel_url, mixed, 4)
    serial = _answers(llama_server_url, mixed, 1)
    got = [(c.text, c.prompt_tokens, c.completion_tokens, c.finish_reason) for c in batched]
    assert got == [(c.text, c.prompt_tokens, c.completion_tokens, c.finish_reason)
                   for c in serial]
    assert batched[0].prompt_tokens > max(512, *(c.prompt_tokens for c in batched[1:]))
    assert all(c.text for c in batched)


@pytest.mark.loads_model      # the batching engine's load, once more under the AMX fault
def test_the_server_reports_its_slots_and_which_path_served(parallel_url: str,
                                                            llama_server_url: str) -> None:
    with urllib.request.urlopen(f"{parallel_url}/models", timeout=30) as resp:
        assert resp.headers["x-flowkit-parallel"] == "4"
    with urllib.request.urlopen(f"{llama_server_url}/models", timeout=30) as resp:
        assert resp.headers["x-flowkit-parallel"] == "1"
    body = {"messages": [{"role": "user", "content": answer_prompts(1)[0]}], "max_tokens": 8,
            "temperature": 0}
    headers, _ = _post(parallel_url, {**body, "repeat_penalty": 1.0})
    assert headers["x-flowkit-batched"] == "1"
    headers, _ = _post(parallel_url, body)             # llama-cpp-python's repeat_penalty 1.1
    assert headers["x-flowkit-batched"] == "0"


def test_a_stream_is_the_same_answer_in_pieces(parallel_url: str) -> None:
    llm = OpenAICompatibleLLM(LLMSettings(backend="openai", base_url=parallel_url, n_ctx=4096))
    prompt = answer_prompts(2)[1]
    pieces: list[str] = []
    streamed = llm.complete(prompt, max_tokens=24, on_token=pieces.append)
    whole = llm.complete(prompt, max_tokens=24)
    assert pieces and streamed.text == whole.text
    assert (streamed.prompt_tokens, streamed.completion_tokens) == \
        (whole.prompt_tokens, whole.completion_tokens)


def test_a_prompt_longer_than_a_slot_is_a_400_about_the_context(parallel_url: str) -> None:
    llm = OpenAICompatibleLLM(LLMSettings(backend="openai", base_url=parallel_url, n_ctx=4096))
    with pytest.raises(ContextOverflowError, match="maximum context length is 4096"):
        llm.complete("lighthouse " * 5000, max_tokens=8)
    with pytest.raises(urllib.error.HTTPError) as info:
        _post(parallel_url, {"messages": [{"role": "user", "content": "lighthouse " * 5000}],
                             "max_tokens": 8, "repeat_penalty": 1.0})
    assert info.value.code == 400
    error = json.loads(info.value.read())["error"]
    assert error["code"] == "context_length_exceeded" and error["param"] == "messages"
