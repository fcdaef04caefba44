"""The Compare page's judges (AppTest, issue 37): grade a stored evaluation's answers in the
background with a scripted fake judge and see uncorrected scores naming the judge model; label
answers in the side-by-side view and see the column switch to PPI++ with the label count and the
judge's weight; open the
page again in a new session on a new workspace over the same data dir and find the labels.
The flows' model and the judge are FakeLLMs; the sample KB uses a hashing embedder."""
from __future__ import annotations

import re
import threading

import pytest
from _runkit import page, texts, until, workspace

from flowkit import templates
from flowkit.eval.datasets import resolve
from flowkit.eval.runner import make_plan, resolve_flows, run_evaluation
from flowkit.eval.strategy import EvalRun
from flowkit.testing import FakeLLM
from service import grading
from service.workspace import Workspace
from storage.evals import EvalRepo
from studio.common.jobs import get_jobs
from studio.common.workspace import use_workspace
from studio.compare import tasks

ANSWERS = {"In what year was the Corren Lighthouse first lit?": "1884 [1]",
           "How many arches does the Sundby Viaduct have?": "11 [1]",
           "Who founded the Halvard Ferry Company?": "Jorun Abbe [1]"}


def answer(prompt: str) -> str:
    m = re.search(r"Question: (.*?)\nAnswer:", prompt, flags=re.S)
    return ANSWERS.get(m.group(1).strip(), "no idea") if m else "no idea"


def same(prompt: str) -> str:
    """The scripted judge: 'yes' when the proposed answer holds the reference, else 'no'."""
    ref = prompt.split("Reference: ")[-1].split("\n")[0]
    return "yes, the same" if ref in prompt.split("Proposed: ")[-1] else "no, it differs"


def judge_llm() -> FakeLLM:
    return FakeLLM([(r"Proposed: (.*)\nSame:$", same), (r"Stated:$", "yes")], default="no")


@pytest.fixture()
def ws(tmp_path):
    w = workspace(tmp_path / "home")
    w.resources.set_llm(FakeLLM([(r"Question: .*\nAnswer:", answer)], default="no idea"))
    vague = templates.load_template("naive_rag")
    nodes = [n.model_copy(update={"params": {**n.params, "prompt": "Reply.\n{passages}\nQ: "
                                              "{question}\nA:"}})
             if n.operator == "generation.answer" else n for n in vague.nodes]
    w.store.save_flow(vague.model_copy(update={"name": "vague", "nodes": nodes}), None)
    use_workspace(w)
    yield w
    get_jobs().wait_idle(60)
    use_workspace(None)


def evaluated(ws: Workspace, limit: int = 3):
    repo = EvalRepo(ws.store)
    ds = resolve(repo, "sample_questions")
    plan = make_plan(resolve_flows(ws, ["naive_rag", "vague"]), ds.name, ds.questions, "sample",
                     limit=limit)
    run_evaluation(ws, repo, plan, EvalRun(stop=threading.Event()))
    return plan


def judged(at) -> dict[tuple[str, str], dict]:
    """The judge scores table by (judge, flow)."""
    (df,) = [d.value for d in at.dataframe if "judge model" in d.value.columns]
    return {(r["judge"], r["flow"]): dict(r) for _, r in df.iterrows()}


def graded_on_the_page(ws: Workspace, plan) -> object:
    """Open the evaluation, pick correctness on the default model, press Grade answers, wait."""
    ws.resources.set_llm(judge_llm())
    at = page("pages/compare.py", eval=plan.eval_id, q="q01")
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert "No judge has graded this evaluation yet." in texts(at)
    at.multiselect(key="compare_judges").set_value(["correctness", "groundedness"])
    assert at.selectbox(key="compare_judge_model").value == "default"
    at.button(key="compare_grade").click()
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    get_jobs().wait_idle(60)
    until(at, lambda a: "No judge has graded" not in texts(a) and "graded 6 answers" in texts(a))
    job = tasks.grading_job(get_jobs(), plan.eval_id)
    assert job is not None and job.status == "done", job
    return at


def test_grade_answers_shows_uncorrected_scores_naming_the_model(ws):
    plan = evaluated(ws)
    at = graded_on_the_page(ws, plan)
    model = grading.model_name(ws, "")
    rows = judged(at)
    assert set(rows) == {(j, f) for j in ("correctness", "groundedness")
                         for f in ("naive_rag", "vague")}
    assert all(r["judge model"] == model for r in rows.values())
    assert rows[("correctness", "naive_rag")]["score (%)"] == "100.0 [100.0, 100.0] uncorrected"
    assert rows[("correctness", "vague")]["score (%)"] == "0.0 [0.0, 0.0] uncorrected"
    assert rows[("correctness", "naive_rag")]["vs baseline (points)"] == "baseline"
    assert rows[("correctness", "vague")]["vs baseline (points)"] == \
        "-100.0 [-100.0, -100.0] * uncorrected"
    assert all(r["labels"] == 0 for r in rows.values())
    body = texts(at)
    assert f"correctness on {model}: no labels yet" in body
    assert "graded 6 answers (0 already graded)" in body
    # the per-question view: each answer's verdicts with the judge's words
    assert f"correctness ({model}): yes" in body and f"correctness ({model}): no" in body
    assert "“yes, the same”" in body and "“no, it differs”" in body
    # grading again keeps every verdict (the same job key, nothing new asked)
    n = len(ws.resources.llm.prompts)
    at.button(key="compare_grade").click()
    at.run()
    get_jobs().wait_idle(60)
    until(at, lambda a: "graded 0 answers (6 already graded)" in texts(a))
    assert len(ws.resources.llm.prompts) == n
    # the replay of one graded run shows its verdicts (a run outside an evaluation shows none)
    run_id = f"{plan.eval_id}-1-0"                  # 'vague' on the first question
    replay_at = page("pages/replay.py", run=run_id).run()
    assert not replay_at.exception, [e.message for e in replay_at.exception]
    shown = texts(replay_at)
    assert "Judges" in shown and f"correctness ({model}): no" in shown, shown
    assert f"correctness ({model}): yes" not in shown and "“no, it differs”" in shown
    assert grading.run_verdicts(ws, run_id, None) == []
    assert grading.run_verdicts(ws, f"{plan.eval_id}-9-0", plan.eval_id) == []


def label_radio(at, plan, flow_index: int, qid: str, metric: str = "correctness"):
    return at.radio(key=f"compare_label_{plan.eval_id}_{flow_index}_{qid}_{metric}")


def test_labels_switch_the_column_to_ppi_and_survive_a_new_session(ws, tmp_path):
    plan = evaluated(ws)
    at = graded_on_the_page(ws, plan)
    radio = label_radio(at, plan, 0, "q01")
    assert radio.options == ["unlabelled", "right", "wrong"] and radio.value == "unlabelled"
    assert label_radio(at, plan, 1, "q01", "groundedness").options == \
        ["unlabelled", "supported", "not supported"]
    # the judge is right on q01 (naive_rag) and says "no" for vague; the person says vague
    # was right too (a judge mistake) and so the PPI++ estimate moves off the judge's 0. One
    # label: the judge's weight is 0 (nothing to read it from); the estimate is the mean of the
    # label and PPI++'s two pseudo-labels (1 and 0)
    radio.set_value("right")
    at.run()
    one = judged(at)[("correctness", "naive_rag")]
    assert one["labels"] == 1 and \
        one["score (%)"] == f"PPI {100 * (1 + 1 + 0) / 3:.1f} (1 label: too few for an interval)"
    assert one["judge weight"] == "weight 0.00: 1 label, too few to weigh the judge"
    assert "naive_rag: 1 label, too few for an interval (label 2 or more)" in texts(at)
    label_radio(at, plan, 1, "q01").set_value("right")
    at.run()
    at.selectbox(key="compare_q").set_value("q02")
    at.run()
    label_radio(at, plan, 0, "q02").set_value("right")
    at.run()
    label_radio(at, plan, 1, "q02").set_value("wrong")
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    rows = judged(at)
    good, vague = rows[("correctness", "naive_rag")], rows[("correctness", "vague")]
    assert good["labels"] == 2 and vague["labels"] == 2
    # the judge said the same on both labelled answers of each flow (yes for naive_rag, no for
    # vague): its weight is 0 and the estimates are the labels' own with the pseudo-labels 1, 0
    assert good["score (%)"].startswith(f"PPI {100 * (1 + 1 + 1 + 0) / 4:.1f} [")
    assert vague["score (%)"].startswith(f"PPI {100 * (1 + 0 + 1 + 0) / 4:.1f} [")
    assert good["judge weight"].startswith("weight 0.00: the judge adds next to nothing")
    # the difference vague - naive_rag: labels 1-1 and 0-1, pseudo-labels +1 and -1
    assert vague["vs baseline (points)"].startswith(f"PPI {100 * (0 - 1 + 1 - 1) / 4:+.1f} [")
    assert rows[("groundedness", "vague")]["score (%)"].endswith("uncorrected")
    body = texts(at)
    model = grading.model_name(ws, "")
    assert f"correctness on {model}: 4 labels; with the judge's verdicts, 95 times in 100: " \
        in body and "from its 2 labels alone" in body
    # widths in words, on the 0..100 scale of the score (issue 48, item 8: "130.7 points wide")
    spans = re.findall(r"lies between (\d+) and (\d+), a span of (\d+) of the 100 points, "
                       r"against (\d+) from", body)
    assert spans and all(0 <= int(lo) <= int(hi) <= 100 and int(w) <= 100 and int(a) <= 100
                         for lo, hi, w, a in spans), spans
    assert f"groundedness on {model}: no labels yet" in body
    # unlabelled again: removed from the database
    label_radio(at, plan, 1, "q02").set_value("unlabelled")
    at.run()
    assert judged(at)[("correctness", "vague")]["labels"] == 1
    label_radio(at, plan, 1, "q02").set_value("wrong")
    at.run()
    # a new session on a new workspace over the same data dir (a restart): the labels are there
    get_jobs().wait_idle(60)
    fresh = Workspace(ws.data_dir)
    fresh.resources.set_llm(judge_llm())
    use_workspace(fresh)
    try:
        again = page("pages/compare.py", eval=plan.eval_id, q="q02")
        again.run()
        assert not again.exception, [e.message for e in again.exception]
        rows = judged(again)
        assert rows[("correctness", "vague")]["labels"] == 2
        assert rows[("correctness", "vague")]["score (%)"].startswith("PPI 50.0 [")
        assert label_radio(again, plan, 0, "q02").value == "right"
        assert label_radio(again, plan, 1, "q02").value == "wrong"
    finally:
        use_workspace(ws)
        fresh.close()


def test_a_bad_judge_model_is_refused_next_to_the_button(ws):
    plan = evaluated(ws, limit=1)
    at = page("pages/compare.py", eval=plan.eval_id)
    at.run()
    at.selectbox(key="compare_judge_model").set_value("__gguf__")
    at.run()
    at.text_input(key="compare_judge_path").input("/nowhere/judge.gguf")
    at.button(key="compare_grade").click()
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert "judge model: unknown model '/nowhere/judge.gguf'" in texts(at)
    assert tasks.grading_job(get_jobs(), plan.eval_id) is None


def test_the_card_and_the_pairwise_judge_on_the_page(ws):
    """Each judge's reliability card under its labels line, and each pair the pairwise judge
    graded (here one that always names the answer it reads first) with its flips."""
    from service.pairwise import grade_pairwise
    plan = evaluated(ws)
    at = graded_on_the_page(ws, plan)
    model = grading.model_name(ws, "")
    assert f"reliability of correctness on {model}: 0 labelled verdicts: too few" in texts(at)
    ws.resources.set_llm(FakeLLM([(r"Better:$", "1")], default="no"))
    grade_pairwise(ws, plan.eval_id, "naive_rag", "vague")
    at = page("pages/compare.py", eval=plan.eval_id, q="q01").run()
    assert not at.exception, [e.message for e in at.exception]
    body = texts(at)
    assert f"pairwise judge on {model} · win rate of naive_rag over vague (ties count half): " \
        "50.0" in body, body
    assert "position flips: 3 of 3 (100%) verdicts asked in both orders changed" in body
    assert ("pairwise:vague", model) not in grading.graded(ws, plan.eval_id)
