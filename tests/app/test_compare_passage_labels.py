"""The Compare page's passage labels (AppTest, issue 37): under each answer in the side-by-side
view, a radio per passage its answering node read; marking every passage of one answer turns the
context-relevance score of that flow into PPI with one label, the other flow stays uncorrected
unless it read the same passages, and a new session shows the stored marks. The flows' model and
the judge are FakeLLMs (the judge finds every passage relevant)."""
from __future__ import annotations

from _runkit import page, texts
from test_compare_judges import evaluated, judged, ws  # noqa: F401 (ws: the fixture)

from flowkit.testing import FakeLLM
from service import grading
from service.passage_labels import passage_labels, question_passages


def passage_radio(at, plan, flow_index: int, qid: str, i: int):
    return at.radio(key=f"compare_label_{plan.eval_id}_{flow_index}_{qid}_passage_{i}")


def test_marking_passages_corrects_context_relevance(ws):  # noqa: F811
    plan = evaluated(ws, limit=2)
    ws.resources.set_llm(FakeLLM([], default="yes"))
    grading.grade(ws, plan.eval_id, ["context_relevance"])
    read = question_passages(ws, plan.eval_id, "q01")["naive_rag"]
    assert read
    at = page("pages/compare.py", eval=plan.eval_id, q="q01")
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    rows = judged(at)
    assert rows[("context_relevance", "naive_rag")]["score (%)"].endswith("uncorrected")
    assert f"0 of {len(read)} passages labelled" in texts(at)
    assert "judge: helps" in texts(at)
    first = passage_radio(at, plan, 0, "q01", 0)
    assert first.options == ["unlabelled", "relevant", "not relevant"]
    assert first.value == "unlabelled"
    for i in range(len(read)):
        passage_radio(at, plan, 0, "q01", i).set_value("relevant" if i else "not relevant")
        at.run()
        assert not at.exception, [e.message for e in at.exception]
    assert passage_labels(ws, plan.eval_id, "q01") == {
        p["id"]: (1.0 if i else 0.0) for i, p in enumerate(read)}
    row = judged(at)[("context_relevance", "naive_rag")]
    assert row["labels"] == 1 and row["score (%)"].startswith("PPI ")
    assert f"{len(read)} of {len(read)} passages labelled (the answer counts as labelled)" \
        in texts(at)
    # a new session reads the marks back from the database
    again = page("pages/compare.py", eval=plan.eval_id, q="q01")
    again.run()
    assert passage_radio(again, plan, 0, "q01", 0).value == "not relevant"
    assert judged(again)[("context_relevance", "naive_rag")]["labels"] == 1
