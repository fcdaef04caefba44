"""Issue 38 item 3 in a real Chromium: the Compare page of an evaluation with 1 answer of 6 in
gives no zero-score verdict ("every flow scored 0 (no answer matched a gold answer)" was shown
after one wrong answer) and says how many answers are in.

The evaluation is recorded first, in this process, with a scripted FakeLLM that never answers
right and a hashing embedder on the studio's FLOWKIT_HOME; the page only reads it.
"""
from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2ekit import CHROMIUM, ROOT, StudioServer, chromium

from flowkit.eval.strategy import EvalRun
from flowkit.testing import FakeLLM, HashEmbedder

pytestmark = pytest.mark.e2e
ART = ROOT / "test-artifacts"


def _record(data_dir: Path) -> str:
    """An evaluation of naive_rag and rewrite_retrieve_read on 3 questions, stopped after the
    first answer (a wrong one)."""
    from flowkit.eval.datasets import resolve
    from flowkit.eval.runner import make_plan, resolve_flows, run_evaluation
    from flowkit.ingest import SAMPLE_DIR, SAMPLE_KB, ingest
    from service.workspace import Workspace
    from storage.evals import EvalRepo

    ws = Workspace(data_dir)
    ws.resources.set_llm(FakeLLM([], default="no idea"))
    ws.resources.set_embedder(HashEmbedder())
    ingest(ws.resources, SAMPLE_KB, [SAMPLE_DIR / "articles.jsonl"])
    repo = EvalRepo(ws.store)
    ds = resolve(repo, "sample_questions")
    plan = make_plan(resolve_flows(ws, ["naive_rag", "rewrite_retrieve_read"]), ds.name,
                     ds.questions, "sample", limit=3)
    stop = threading.Event()
    run_evaluation(ws, repo, plan, EvalRun(stop=stop, progress=lambda p: stop.set()))
    return plan.eval_id


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make browser` installs Debian's chromium")
    data_dir = tmp_path_factory.mktemp("readouts")
    eval_id = _record(data_dir)
    ART.mkdir(exist_ok=True)
    with StudioServer(data_dir, log=ART / "e2e-readouts-streamlit.log", timeout_s=120) as url:
        yield url, eval_id


def test_an_unfinished_evaluation_shows_no_zero_verdict(studio: Any) -> None:
    url, eval_id = studio
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1366, "height": 900})
        page.set_default_timeout(120_000)
        page.goto(f"{url}/compare?eval={eval_id}")
        page.get_by_text("1 of 6 answers in so far", exact=False).first.wait_for()
        page.get_by_text("nothing to chart yet (1 of 6 answers in)", exact=False).first.wait_for()
        page.screenshot(path=str(ART / "readouts_compare_unfinished.png"), full_page=True)
        body = page.inner_text("body")
        assert "every flow scored 0" not in body and "matched a gold answer" not in body
