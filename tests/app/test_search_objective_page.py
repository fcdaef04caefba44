"""The Search page's objective (issue 37): a judge picked in the form reaches the search (its
request and state), the estimate names it and its judge calls, and the front and the table name
the judge's score where they said F1. A FakeLLM answers and judges; no model loads."""
from __future__ import annotations

import re

import pytest
from _runkit import page, texts, until, workspace
from test_search_page import GATE, answer, fill, space, start

from flowkit.testing import FakeLLM
from service import search
from studio.common.jobs import get_jobs
from studio.common.workspace import use_workspace
from studio.search import search_data


def judge(prompt: str) -> str:
    """Groundedness: yes unless the answer is the reader's 'no idea'."""
    said = re.findall(r"Answer: (.*?)\nStated:", prompt, flags=re.S)[-1].strip()
    return "no" if said == "no idea" else "yes"


@pytest.fixture()
def ws(tmp_path):
    GATE.set()                      # the reader answers at once (the cancel test holds it)
    w = workspace(tmp_path / "home")
    w.resources.set_llm(FakeLLM([(r"Stated:\s*$", judge), (r"Question: .*\nAnswer:", answer)],
                                default="no idea"))
    use_workspace(w)
    yield w
    get_jobs().wait_idle(60)
    use_workspace(None)


def test_a_judge_objective_picked_on_the_page_ranks_and_names_the_search(ws):
    at = page("pages/search.py").run()
    assert at.selectbox(key="search_objective").value == "f1"
    assert not [t for t in at.text_input if t.key == "search_judge_model"]   # for a judge only
    at.selectbox(key="search_objective").set_value("groundedness")
    at = fill(at.run(), space())
    assert [t for t in at.text_input if t.key == "search_judge_model"]
    assert re.search(r"objective groundedness \(judge: default:[^)]*\), about \d+ judge calls",
                     texts(at)), texts(at)
    sid = start(at)
    req = search_data.load_request(ws, sid)
    assert req is not None and (req.objective, req.judge_model) == ("groundedness", "")
    until(at, lambda a: "phase done" in texts(a), timeout=60)
    state = search.state_mod.load(search.state_mod.state_path(req.space, sid))
    assert state is not None and state.objective == "groundedness" and state.budget.judge.calls > 0
    front = next(m.value for m in at.markdown if m.value.startswith("- **c00**"))
    assert re.search(r"search groundedness \(judge: default:.*\) \*\*100\.0\*\* on 8", front), front
    rows = at.dataframe[0].value
    assert "search groundedness" in rows.columns and "search F1" not in rows.columns
    dropped = " ".join(m.value for m in at.markdown if m.value.startswith("- **c01**"))
    assert "after 3 questions: groundedness -100.0" in dropped
