"""Test support for the run, replay and knowledge pages: a Workspace on a temp dir with a scripted
FakeLLM and a hashing embedder (no model loads), the sample KB ingested, and AppTest helpers."""
from __future__ import annotations

import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

from flowkit.ingest import SAMPLE_DIR, SAMPLE_KB, ingest
from flowkit.testing import FakeLLM, HashEmbedder
from service.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]


def fake_llm() -> FakeLLM:
    """Answers the lighthouse question citing passage 1; anything else 'unknown'."""
    return FakeLLM([(r"Corren Lighthouse", "It was first lit in 1884 [1]")], default="unknown [1]")


def workspace(data_dir: Path, sample: bool = True) -> Workspace:
    ws = Workspace(data_dir)
    ws.resources.set_llm(fake_llm())
    ws.resources.set_embedder(HashEmbedder())
    if sample:
        ingest(ws.resources, SAMPLE_KB, [SAMPLE_DIR / "articles.jsonl"])
    return ws


def page(path: str, **query: str) -> AppTest:
    """AppTest of one page file (e.g. 'pages/run.py') with the given query params, not yet run.

    Pages are tested on their own: in this streamlit's AppTest a multipage run (app.py with
    st.navigation + switch_page) loses button clicks, because every run counts as a page change.
    """
    at = AppTest.from_file(str(ROOT / path), default_timeout=60)
    for k, v in query.items():
        at.query_params[k] = v
    return at


def until(at: AppTest, cond, timeout: float = 30.0) -> AppTest:
    """Re-run the app until cond(at) holds (the browser's polling, done by hand)."""
    deadline = time.monotonic() + timeout
    while True:
        at.run()
        assert not at.exception, [e.message for e in at.exception]
        if cond(at):
            return at
        if time.monotonic() > deadline:
            raise AssertionError("condition not met; page shows: "
                                 + " | ".join(m.value for m in at.markdown)[:2000])
        time.sleep(0.2)


def texts(at: AppTest) -> str:
    """Everything written on the page (markdown, captions, alerts, metrics), for assertions."""
    parts = []
    for kind in ("markdown", "caption", "info", "warning", "error", "success", "subheader",
                 "title", "code"):
        parts += [str(e.value) for e in getattr(at, kind)]
    parts += [f"{m.label}: {m.value}" for m in at.metric]
    parts += [str(t.value) for t in at.text]   # untrusted text is shown with st.text
    return "\n".join(parts)


def submit_run(question: str, flow: str = "naive_rag") -> AppTest:
    """Open the run page on `flow`, ask `question`, press Run; the page has queued the run."""
    at = page("pages/run.py", flow=flow).run()
    at.text_area(key="run_question").input(question).run()
    at.button(key="run_go").click().run()
    assert not at.exception and "run" in at.query_params, texts(at)
    return at


def run_ended(ws: Workspace, at: AppTest) -> bool:
    """The run the page shows (?run=) is stored with a final status (not queued or running)."""
    from flowkit.errors import NotFoundError
    run_id = at.query_params.get("run")
    run_id = run_id[0] if isinstance(run_id, list) else run_id
    if not run_id:
        return False
    try:
        return ws.store.get_run(run_id).record.status not in ("running", "queued")
    except NotFoundError:
        return False
