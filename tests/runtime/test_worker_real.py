"""The real default model in its supervised worker process: same answers as in process, AMX decision
both ways, and a worker that dies or hangs mid-generation fails only the step in flight."""
from __future__ import annotations

import os
import signal
import time

import pytest

from flowkit import templates
from flowkit.errors import ContextOverflowError, ModelProcessError
from flowkit.run_request import RunRequest
from flowkit.runtime.llm import LlamaCppLLM, LLMSettings
from flowkit.runtime.supervisor import WorkerLLM
from flowkit.testing.faults import KillWorkerDuringCall
from service.workspace import Workspace

pytestmark = pytest.mark.real

QUESTION = "What is the capital of France?"
LONG = "Write a long story about a lighthouse keeper and the sea, with many details."


@pytest.fixture(scope="module")
def worker(tmp_path_factory) -> WorkerLLM:
    w = WorkerLLM(LLMSettings(model_path="smollm2-135m", n_ctx=2048),
                  log_dir=tmp_path_factory.mktemp("logs"))
    yield w
    w.close()


@pytest.mark.loads_model
def test_the_worker_answers_exactly_as_the_model_in_process(worker: WorkerLLM) -> None:
    here = LlamaCppLLM(LLMSettings(model_path="smollm2-135m", n_ctx=2048))
    for kwargs in ({"max_tokens": 24}, {"max_tokens": 12, "logprobs": True},
                   {"max_tokens": 16, "system": "Answer in one word.", "stop": ["\n"]}):
        a, b = worker.complete(QUESTION, **kwargs), here.complete(QUESTION, **kwargs)
        assert (a.text, a.prompt, a.prompt_tokens, a.completion_tokens, a.finish_reason) == \
            (b.text, b.prompt, b.prompt_tokens, b.completion_tokens, b.finish_reason)
        assert a.prompt.startswith("<|im_start|>")          # the chat template, rendered exactly
        if kwargs.get("logprobs"):
            assert a.logprobs and [t for t, _ in a.logprobs] == [t for t, _ in b.logprobs]
            assert max(abs(x - y) for (_, x), (_, y) in zip(a.logprobs, b.logprobs)) < 1e-6
    assert worker.count_tokens("The Corren Lighthouse") == here.count_tokens("The Corren Lighthouse")
    assert worker.pid and worker.pid != os.getpid()


def test_a_base_model_through_the_worker_is_plain_completion(tmp_path) -> None:
    """Gemma 3 270M (no chat template): the worker sends the same plain-completion text as the
    model in process (reading examples before "Answer:", newline stop) and returns it exactly."""
    from flowkit.runtime.llm import BASE_EXAMPLES
    settings = LLMSettings(model_path="gemma3-270m", n_ctx=2048, n_threads=1)
    w = WorkerLLM(settings, log_dir=tmp_path)
    try:
        prompt = f"Question: {QUESTION}\nAnswer:"
        a = w.complete(prompt, max_tokens=16, system="Answer in one word.")
        b = LlamaCppLLM(settings).complete(prompt, max_tokens=16, system="Answer in one word.")
        assert (a.text, a.prompt, a.completion_tokens) == (b.text, b.prompt, b.completion_tokens)
        assert a.prompt == f"Answer in one word.\n\n{BASE_EXAMPLES}\n\n{prompt}"
        assert a.text and "\n" not in a.text and a.completion_tokens <= 16
    finally:
        w.close()


def test_context_overflow_crosses_the_process_boundary(worker: WorkerLLM) -> None:
    with pytest.raises(ContextOverflowError, match="context is 2048"):
        worker.complete("lighthouse " * 3000, max_tokens=8)
    assert worker.loaded                                    # an error answer, not a crash


@pytest.mark.parametrize("sig, name", [(signal.SIGSEGV, "signal 11 (SIGSEGV)"),
                                       (signal.SIGKILL, "signal 9 (SIGKILL)")])
def test_a_worker_killed_mid_generation_fails_the_call_and_restarts(worker: WorkerLLM, sig: int,
                                                                    name: str) -> None:
    restarts = worker.restarts
    killer = KillWorkerDuringCall(worker, sig, after_s=0.2)
    t0 = time.perf_counter()
    with pytest.raises(ModelProcessError, match=rf"the model process died: {name.replace('(', '[(]').replace(')', '[)]')}"):
        killer.complete(LONG, max_tokens=400)
    assert time.perf_counter() - t0 < 30
    assert killer.killed and not worker.loaded
    out = worker.complete(QUESTION, max_tokens=8)           # the next call starts a fresh worker
    assert out.text and worker.restarts == restarts + 1 and worker.pid not in killer.killed


def test_a_hung_worker_is_ended_after_the_timeout(worker: WorkerLLM) -> None:
    worker.count_tokens("up")
    pid = worker.pid
    os.kill(pid, signal.SIGSTOP)
    try:
        with pytest.raises(ModelProcessError, match="did not answer within 2 s"):
            worker.complete(QUESTION, max_tokens=8, timeout_s=2)
    finally:
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)                                     # it was ended
    assert worker.complete(QUESTION, max_tokens=8).text


@pytest.mark.loads_model
def test_the_default_model_loads_with_the_amx_decision_both_ways(tmp_path, monkeypatch) -> None:
    """Every setting loads the model, except where this CPU faults on AMX (a real one, or the
    simulated one of FLOWKIT_SIMULATE_AMX_FAULT=1): there `on` is refused with the setting and the
    probe's result, and a probe answer forced to "usable" (a lie) crashes the worker, not the caller."""
    from flowkit.runtime import amx
    from flowkit.runtime.llm import default_model_path

    monkeypatch.setenv("FLOWKIT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("FLOWKIT_AMX_PROBE", raising=False)
    faults = "amx_tile" in amx.cpu_flags() and \
        not amx.probe_result(str(default_model_path())).use
    if amx.simulating_fault():
        assert faults                                       # the simulated probe child died
    answers = {}
    for setting, forced in (("on", ""), ("off", ""), ("auto", "unusable"), ("auto", "usable")):
        monkeypatch.setenv("FLOWKIT_AMX_PROBE", forced)
        w = WorkerLLM(LLMSettings(n_ctx=1024, extra_bufts=setting), log_dir=tmp_path)
        try:
            expected = setting == "on" or forced == "usable"
            if faults and setting == "on":
                with pytest.raises(ModelProcessError,
                                   match=r"llm\.extra_bufts = on, but this CPU cannot use AMX: "
                                         r"the AMX probe died with signal 11 \(SIGSEGV\)"):
                    w.complete(QUESTION, max_tokens=12)
                continue
            if faults and expected:
                with pytest.raises(ModelProcessError, match=r"signal 11 \(SIGSEGV\)"):
                    w.complete(QUESTION, max_tokens=12)
                continue
            answers[(setting, forced)] = w.complete(QUESTION, max_tokens=12).text
            assert w.info["extra_bufts"] is expected, w.info
        finally:
            w.close()
    assert ("auto", "unusable") in answers and ("off", "") in answers
    assert len(answers) == (2 if faults else 4)
    assert len(set(answers.values())) == 1, answers         # same greedy answer either way


def test_a_run_whose_worker_dies_is_failed_with_the_reason_and_the_next_run_answers(
        real_resources) -> None:
    ws = Workspace(real_resources.data_dir, real_resources.settings)
    ws.resources = real_resources
    killer = KillWorkerDuringCall(real_resources.llm, signal.SIGSEGV, after_s=0.05)
    real_resources.set_llm(killer)
    try:
        spec = templates.load_template("naive_rag")
        end = ws.run(spec, RunRequest("Who designed the Corren Lighthouse?", kb="sample"))
    finally:
        real_resources.set_llm(killer._inner)
    run = ws.store.get_run(end.run_id)
    assert run.record.status == "error", run
    assert "the model process died: signal 11 (SIGSEGV)" in (run.record.error or "")
    steps = ws.store.steps(run.id)
    assert [s.index for s in steps] == list(range(len(steps)))          # contiguous prefix
    assert steps[-1].node_id == "generate" and "signal 11" in (steps[-1].error or "")
    again = ws.run(spec, RunRequest("Who designed the Corren Lighthouse?", kb="sample"))
    assert again.status == "ok" and again.answer


def test_prompt_logprobs_cross_the_worker_and_drive_selective_context(worker, real_resources) -> None:
    """Selective context's LLM estimator runs with the real model: token log-probabilities of a
    passage, scored in one pass by the worker, equal the in-process ones, and the operator uses them."""
    from types import MappingProxyType

    from flowkit import registry
    from flowkit.context import RunContext

    text = "The Corren Lighthouse was designed by Mara Velt. It was first lit in 1884. Café!"
    here = LlamaCppLLM(LLMSettings(model_path="smollm2-135m", n_ctx=2048)).token_logprobs(text)
    there = worker.token_logprobs(text)
    assert "".join(t for t, _ in there) == text
    assert [t for t, _ in there] == [t for t, _ in here]
    assert max(abs(a - b) for (_, a), (_, b) in zip(there, here)) < 1e-4
    assert dict(there)[" Lighthouse"] < -5          # a surprising word carries information

    cls = registry.get("post_retrieval.selective_context")
    op = cls("sc", cls.Params.model_validate({"keep_ratio": 0.5}))
    ctx = RunContext(real_resources, "", "sc", 1)
    out = op.run(MappingProxyType({"documents": [{"id": "d", "text": text}]}), ctx)
    assert out["scratch"]["compression"]["estimator"] == "llm"
    assert [c.finish_reason for c in ctx.llm_calls] == ["scored"]
    assert len(out["documents"][0]["text"]) < len(text)
