"""The Compare page's evaluation picker maps what Streamlit hands back to an evaluation id."""
from __future__ import annotations

from studio.compare.compare_panel import picked_eval_id

IDS = ["697ab59e7c5e", "0c1d2e3f4a5b"]


def test_an_id_is_itself():
    assert picked_eval_id("697ab59e7c5e", IDS) == "697ab59e7c5e"


def test_an_old_label_is_its_id():
    """After "Add and run" the label's status went from done to running; the selectbox then
    handed back the old label, and the page tried to open an evaluation named like the label."""
    old = "2026-11-25 14:42 · naive_rag, iter_retgen · 3 q of hotpot · done · 697ab59e7c5e"
    assert picked_eval_id(old, IDS) == "697ab59e7c5e"


def test_nothing_or_a_stranger_is_none():
    assert picked_eval_id(None, IDS) is None
    assert picked_eval_id("· ffffffffffff", IDS) is None
    assert picked_eval_id(3, IDS) is None


def test_the_metrics_table_rounds_what_people_read():
    from flowkit.eval.metrics import QuestionResult
    from flowkit.eval.report import build_report
    from studio.compare.compare_data import metrics_table
    rs = [QuestionResult(flow="naive", question_id=str(i), question="q", answers=["a"],
                         prediction="a", status="ok", tokens=t, llm_calls=c, seconds=s)
          for i, (t, c, s) in enumerate([(626, 1, 7.061), (627, 2, 7.055), (627, 2, 7.07)])]
    row = metrics_table(build_report({"naive": rs}))[0]
    assert row["tokens/q"] == 627 and isinstance(row["tokens/q"], int)
    assert row["LLM calls/q"] == 1.7 and row["s/q"] == 7.1
