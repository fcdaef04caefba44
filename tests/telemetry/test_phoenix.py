"""Against a real collector: Arize Phoenix (started once per session, tests/telemetry/conftest.py).
A real run (SmolLM2, real Chroma) of iter_retgen (a judged loop of three rounds, the judge's
branch out) exported live, then read back through Phoenix's own REST API: the tree, the LLM spans'
prompts and token counts, the retrieved documents. The CLI's `trace --otlp` and `evals send`."""
from __future__ import annotations

from typing import Any

import pytest
from telkit import Q, fake_workspace, free_port, run_sent_live

from flowkit.run_request import RunRequest
from flowkit.templates import load_template
from service.cli import main


def _trace(phoenix: Any, run_id: str, count: int) -> list[dict[str, Any]]:
    roots = phoenix.wait_for(1, attribute=f"flowkit.run_id:{run_id}", parent_id="null")
    assert len(roots) == 1, f"run {run_id} not in Phoenix; log: {phoenix.log.read_text()[-1500:]}"
    return phoenix.wait_for(count, trace_id=roots[0]["context"]["trace_id"])


def _doc_ids(span: dict[str, Any]) -> list[str]:
    attrs = span["attributes"]
    docs = attrs.get("retrieval.documents")
    if isinstance(docs, list):                    # Phoenix may give them nested
        return [d["document"]["id"] for d in docs]
    return [attrs[k] for k in sorted((k for k in attrs if k.startswith("retrieval.documents.")
                                      and k.endswith(".document.id")),
                                     key=lambda k: int(k.split(".")[2]))]


@pytest.mark.real
def test_a_real_run_read_back_from_phoenix(phoenix, real_resources):
    result, sink = run_sent_live(phoenix.url, real_resources, Q)
    assert result.status == "ok"
    steps = sink.steps
    count = 1 + len(steps) + sum(len(s.llm_calls) + len(s.retrievals) for s in steps)
    spans = _trace(phoenix, result.run_id, count)
    assert len(spans) == count
    root = next(s for s in spans if s["parent_id"] is None)
    assert root["span_kind"] == "CHAIN" and root["name"] == "iter_retgen"
    assert root["attributes"]["input.value"] == Q
    assert root["attributes"]["output.value"] == result.answer
    nodes = sorted((s for s in spans if s["parent_id"] == root["context"]["span_id"]),
                   key=lambda s: s["attributes"]["flowkit.step_index"])
    seq = [(s["name"], s["attributes"]["flowkit.visit"]) for s in nodes]
    assert seq == sink.sequence() and ("retrieve", 3) in seq       # three rounds of the loop
    for node, step in zip(nodes, steps, strict=True):
        kids = [s for s in spans if s["parent_id"] == node["context"]["span_id"]]
        llms = sorted((k for k in kids if k["span_kind"] == "LLM"), key=lambda k: k["start_time"])
        assert [k["attributes"]["input.value"] for k in llms] == [c.prompt for c in step.llm_calls]
        assert [k["attributes"]["llm.token_count.prompt"] for k in llms] == \
            [c.prompt_tokens for c in step.llm_calls]
        assert [k["attributes"]["llm.token_count.completion"] for k in llms] == \
            [c.completion_tokens for c in step.llm_calls]
        rets = [k for k in kids if k["span_kind"] == "RETRIEVER"]
        assert [_doc_ids(k) for k in rets] == [[d["id"] for d in r.docs] for r in step.retrievals]
    assert sum(1 for s in spans if s["span_kind"] == "RETRIEVER") == 3
    assert all(s["attributes"]["llm.model_name"] == real_resources.llm.model_id
               for s in spans if s["span_kind"] == "LLM")


def test_live_export_from_a_workspace_into_phoenix(phoenix, tmp_path):
    ws = fake_workspace(tmp_path, phoenix.url)
    result = ws.run(load_template("self_rag"), RunRequest(Q, kb="test"))
    live = ws.telemetry.live(ws.resources.settings.telemetry)
    assert live is not None and live.flush(30)
    steps = ws.store.steps(result.run_id)
    count = 1 + len(steps) + sum(len(s.llm_calls) + len(s.retrievals) for s in steps)
    spans = _trace(phoenix, result.run_id, count)
    assert len(spans) == count
    assert sum(1 for s in spans if s["span_kind"] == "LLM") == sum(len(s.llm_calls) for s in steps)


def _eval_with_runs(ws: Any, eval_id: str, n: int) -> list[str]:
    from service.evaluations import eval_repo
    eval_repo(ws).ensure_eval(eval_id, "otlp-test", "none", "test", [], [])
    return [ws.run(load_template("self_rag"),
                   RunRequest(Q, kb="test", eval_id=eval_id)).run_id for _ in range(n)]


def test_the_cli_sends_stored_runs_and_evaluations(phoenix, tmp_path, capsys):
    ws = fake_workspace(tmp_path, None)
    run_id = ws.run(load_template("self_rag"), RunRequest(Q, kb="test")).run_id
    eval_runs = _eval_with_runs(ws, "ev-otlp-1", 2)
    steps = ws.store.steps(run_id)
    count = 1 + len(steps) + sum(len(s.llm_calls) + len(s.retrievals) for s in steps)

    assert main(["--data-dir", str(tmp_path), "trace", run_id, "--otlp", phoenix.url]) == 0
    assert f"{count} spans to {phoenix.url}/v1/traces" in capsys.readouterr().out
    assert len(_trace(phoenix, run_id, count)) == count
    # sent again: the same trace and span ids (derived from the run id), so still one copy
    assert main(["--data-dir", str(tmp_path), "trace", run_id[:8], "--otlp", phoenix.url]) == 0
    capsys.readouterr()
    assert len(_trace(phoenix, run_id, count)) == count

    assert main(["--data-dir", str(tmp_path), "evals", "send", "ev-otlp-1", "--otlp", phoenix.url]) == 0
    assert "2 runs" in capsys.readouterr().out
    roots = phoenix.wait_for(2, attribute="flowkit.eval_id:ev-otlp-1", parent_id="null")
    assert sorted(r["attributes"]["flowkit.run_id"] for r in roots) == sorted(eval_runs)
    assert {r["attributes"]["session.id"] for r in roots} == {"ev-otlp-1"}


def test_the_cli_says_in_one_line_what_went_wrong(tmp_path, capsys):
    ws = fake_workspace(tmp_path, None)
    run_id = ws.run(load_template("self_rag"), RunRequest(Q, kb="test")).run_id
    cases = [(["trace", run_id, "--otlp", "localhost:6006"], "http(s) URL"),
             (["trace", run_id, "--otlp", f"http://127.0.0.1:{free_port()}"], "did not take the spans"),
             (["trace", "nope", "--otlp", "http://127.0.0.1:1"], "no run"),
             (["evals", "send", "no-such-eval"], "no evaluation"),
             (["evals", "send"], "name the evaluation")]
    for argv, words in cases:
        assert main(["--data-dir", str(tmp_path), *argv]) == 2, argv
        err = capsys.readouterr().err.strip()
        assert words in err and len(err.splitlines()) == 1, (argv, err)
