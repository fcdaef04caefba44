"""Streaming with the real model (issue 29 item 7): a streamed call is the same call, token for
token, in process and through the supervised worker; `run_flow(on_token=...)` hands out the
answer while the run goes on and records the same trace. Times to the first piece are written to
the test's output (`-s`), never asserted."""
from __future__ import annotations

import time
from typing import Any

import pytest

from flowkit import ListSink, compile_flow, run_flow
from flowkit.run_request import RunHooks, RunRequest
from flowkit.runtime.llm import LlamaCppLLM, LLMSettings
from flowkit.runtime.supervisor import WorkerLLM
from flowkit.templates import load_template

pytestmark = [pytest.mark.real]   # the same load path as the worker tests the AMX simulation reruns

PROMPTS = [
    ("Where was Mara Velt born? Answer in one sentence.", {}),
    ("List three colours, one per line.", {"max_tokens": 40}),
    ("Write a haiku about a lighthouse.", {"max_tokens": 60, "stop": ["\n\n"]}),
    ("What is 2 + 2? Answer with a number.", {"max_tokens": 8, "logprobs": True}),
]
SETTINGS = LLMSettings(model_path="smollm2-135m", n_ctx=2048)


def _same(llm: Any) -> None:
    for prompt, kw in PROMPTS:
        pieces: list[str] = []
        streamed = llm.complete(prompt, on_token=pieces.append, **kw)
        whole = llm.complete(prompt, **kw)
        assert "".join(pieces) == streamed.text == whole.text, prompt
        assert streamed.text.strip() and len(pieces) >= 1
        assert (streamed.prompt, streamed.prompt_tokens, streamed.completion_tokens,
                streamed.finish_reason) == (whole.prompt, whole.prompt_tokens,
                                            whole.completion_tokens, whole.finish_reason), prompt
        if kw.get("logprobs"):
            assert streamed.logprobs == whole.logprobs


def test_streamed_equals_not_streamed_in_process():
    llm = LlamaCppLLM(SETTINGS)
    _same(llm)
    base = LlamaCppLLM(LLMSettings(n_ctx=2048))     # the default model
    pieces: list[str] = []
    out = base.complete("Question: Who wrote Hamlet?\nAnswer:", on_token=pieces.append, max_tokens=16)
    assert "".join(pieces) == out.text == base.complete("Question: Who wrote Hamlet?\nAnswer:",
                                                        max_tokens=16).text


def test_streamed_equals_not_streamed_through_the_worker(tmp_path: Any):
    llm = WorkerLLM(SETTINGS, log_dir=tmp_path)
    try:
        _same(llm)
        pieces: list[str] = []
        out = llm.complete("Tell me a long story about a lighthouse keeper.", max_tokens=120,
                           on_token=pieces.append)
        assert len(pieces) > 10 and "".join(pieces) == out.text     # many pieces, not one
    finally:
        llm.close()


def test_a_warm_naive_run_streams_its_answer(real_resources: Any):
    flow = compile_flow(load_template("naive_rag"))
    question = "On which island was the designer of the Corren Lighthouse born?"
    run_flow(flow, real_resources,
             RunRequest("Who designed the Corren Lighthouse?", kb="sample"))   # warm
    got: list[tuple[float, str, int, str]] = []
    t0 = time.perf_counter()
    sink = ListSink()
    result = run_flow(flow, real_resources, RunRequest(question, kb="sample"),
                      RunHooks(sink=sink, on_token=lambda n, v,
                               p: got.append((time.perf_counter(), n, v, p))))
    total = time.perf_counter() - t0
    plain = ListSink()
    again = run_flow(flow, real_resources, RunRequest(question, kb="sample"), RunHooks(sink=plain))
    assert result.status == again.status == "ok" and result.answer == again.answer
    calls = [c for s in sink.steps for c in s.llm_calls]
    assert [(c.prompt, c.completion, c.prompt_tokens, c.completion_tokens) for c in calls] == \
        [(c.prompt, c.completion, c.prompt_tokens, c.completion_tokens)
         for s in plain.steps for c in s.llm_calls]
    assert got and "".join(p for *_, p in got) == calls[-1].completion
    assert {n for _, n, _, _ in got} == {"generate"}
    print(f"\nwarm naive_rag: first piece after {got[0][0] - t0:.2f} s, last after "
          f"{got[-1][0] - t0:.2f} s, run {total:.2f} s, {len(got)} pieces")
