"""The Compare page's "Questions in flight" (AppTest): shown only where settings name a model
server, and the comparison it starts keeps that many runs in flight against it (recorded with the
evaluation, as `flowkit eval --concurrency` records it). The server is the scripted fake."""
from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from _runkit import page, until, workspace

from flowkit.runtime.llm_contract import LLMSettings
from flowkit.testing.openai_fake import fake_openai_server
from service.workspace import Workspace
from storage.evals import EvalRepo
from studio.common.jobs import get_jobs
from studio.common.workspace import use_workspace


def _answer(user: str) -> str:
    return "1884 [1]" if "Corren" in user else "no idea"


def _start(at, limit: int):
    at.run()
    at.multiselect(key="compare_flows").set_value([("template", "naive_rag"),
                                                   ("template", "advanced_linear")])
    at.selectbox(key="compare_dataset").set_value("sample_questions")
    at.run()
    at.number_input(key="compare_limit").set_value(limit)
    return at


def test_in_flight_is_offered_only_with_a_model_server(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "embedded")
    use_workspace(ws)
    try:
        at = _start(page("pages/compare.py"), 2)
        at.run()
        assert not at.exception
        assert not [n for n in at.number_input if n.key == "compare_concurrency"]
    finally:
        get_jobs().wait_idle(60)
        use_workspace(None)


def test_a_comparison_keeps_that_many_runs_in_flight(tmp_path: Path) -> None:
    with fake_openai_server(_answer, parallel=3, hold_until=3) as server:
        base = workspace(tmp_path / "home")
        llm = LLMSettings(backend="openai", base_url=server.url, model_name="fake")
        ws = Workspace(base.data_dir, replace(base.resources.settings, llm=llm,
                                              completion_cache=False))
        ws.resources.set_embedder(base.resources.embedder)
        base.close()
        use_workspace(ws)
        try:
            at = _start(page("pages/compare.py"), 3)
            at.number_input(key="compare_concurrency").set_value(3)
            at.button(key="compare_start").click()
            at.run()
            assert not at.exception, [e.message for e in at.exception]
            q = at.query_params["eval"]
            eval_id = q[0] if isinstance(q, list) else q
            assert re.fullmatch(r"[0-9a-f]{12}", eval_id)
            until(at, lambda a: "6/6 answers · done" in str([p.proto.text
                                                              for p in a.get("progress")]))
            assert server.max_in_flight == 3         # the latch opened: 3 were in flight at once
            info = EvalRepo(ws.store).find_eval(eval_id)
            assert info is not None
            assert info.execution and info.execution[-1]["concurrency"] == 3
        finally:
            get_jobs().wait_idle(60)
            use_workspace(None)
