"""The Compare page's judges beyond the built-ins (AppTest, issue 51): a criterion of your own
typed on the page and graded like a judge (named by its words, labelled in the side-by-side view);
the pairwise judge started from the page and labelled pair by pair there; "What should I label
next?" listing the questions that count and opening one. Scripted FakeLLMs for the flows and
the judge; the sample KB with the hashing embedder (tests/app/_runkit)."""
from __future__ import annotations

import re

from _runkit import page, texts, until
from test_compare_judges import ANSWERS, evaluated, judged, ws  # noqa: F401  (fixture)

from flowkit.eval.criteria import criterion
from flowkit.testing import FakeLLM
from service import grading, pairwise
from studio.common.jobs import get_jobs
from studio.compare import tasks

CRITERION = "the answer names a year"


def names_a_year(prompt: str) -> str:
    said = prompt.rsplit("Answer: ", 1)[-1]
    return "yes" if re.search(r"\b1[0-9]{3}\b", said) else "no"


def better(prompt: str) -> str:
    """The scripted pairwise judge: the answer that holds the reference is better."""
    last = prompt.rsplit("\n\n", 1)[-1]
    ref = last.split("Reference: ")[-1].split("\n")[0]
    one = last.split("Answer 1: ")[-1].split("\n")[0]
    two = last.split("Answer 2: ")[-1].split("\n")[0]
    return "same" if (ref in one) == (ref in two) else "1" if ref in one else "2"


def judge_llm() -> FakeLLM:
    return FakeLLM([(r"Meets:$", names_a_year), (r"Better:$", better),
                    (r"Same:$", "yes")], default="no")


def opened(ws, plan):  # noqa: F811
    ws.resources.set_llm(judge_llm())
    at = page("pages/compare.py", eval=plan.eval_id, q="q01")
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def test_a_criterion_typed_on_the_page_is_graded_named_by_its_words_and_labelled(ws):  # noqa: F811
    plan = evaluated(ws)
    at = opened(ws, plan)
    at.multiselect(key="compare_judges").set_value([])
    at.text_area(key="compare_criteria").set_value(f"{CRITERION}\n\n  {CRITERION} \n")
    at.run()
    at.button(key="compare_grade").click()
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    get_jobs().wait_idle(60)
    until(at, lambda a: "graded 6 answers" in texts(a))
    rows = judged(at)
    name = f'criterion "{CRITERION}"'
    assert set(rows) == {(name, "naive_rag"), (name, "vague")}
    # naive_rag's answer to q01 is '1884 [1]' (a year) on one of its three questions
    assert rows[(name, "naive_rag")]["score (%)"].startswith("33.3 [")
    assert rows[(name, "vague")]["score (%)"].startswith("0.0 [")
    body = texts(at)
    model = grading.model_name(ws, "")
    assert f"{name} ({model}): yes" in body and f"{name} on {model}: no labels yet" in body
    c = criterion(CRITERION)
    radio = at.radio(key=f"compare_label_{plan.eval_id}_0_q01_{c.name}")
    assert radio.label == f"Your label: {name}"
    assert radio.options == ["unlabelled", "meets it", "does not"]
    radio.set_value("does not")
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    stored = grading.answer_labels(ws, plan.eval_id, "q01")
    assert stored[("naive_rag", c.name)] == 0.0
    assert judged(at)[(name, "naive_rag")]["labels"] == 1


def test_the_pairwise_judge_runs_from_the_page_and_pairs_are_labelled_there(ws):  # noqa: F811
    plan = evaluated(ws)
    at = opened(ws, plan)
    at.button(key="compare_pair_grade").click()
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    get_jobs().wait_idle(60)
    job = tasks.grading_job(get_jobs(), plan.eval_id)
    assert job is not None and job.status == "done", job
    until(at, lambda a: "pairwise judge on" in texts(a) and "win" in texts(a))
    body = texts(at)
    assert "naive_rag's answer is better (both orders agree)" in body, body
    radio = at.radio(key=f"compare_pair_label_{plan.eval_id}_1_q01")
    assert radio.label == "Your label: naive_rag vs vague"
    assert radio.options == ["unlabelled", "naive_rag's is better", "the same",
                             "vague's is better"]
    radio.set_value("the same")
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert pairwise.labels(ws, plan.eval_id, "naive_rag", "vague") == {"q01": 0.5}
    assert pairwise.labels(ws, plan.eval_id, "vague", "naive_rag") == {"q01": 0.5}
    fresh = page("pages/compare.py", eval=plan.eval_id, q="q01").run()   # a refresh keeps it
    assert fresh.radio(key=f"compare_pair_label_{plan.eval_id}_1_q01").value == "the same"


def test_what_to_label_next_lists_the_questions_that_count_and_opens_one(ws):  # noqa: F811
    plan = evaluated(ws)
    at = opened(ws, plan)
    body = texts(at)
    assert "What should I label next?" in [e.label for e in at.expander]
    # every question was answered differently by the two flows: all three count, none labelled
    assert "vague against naive_rag on correctness: 0 of 3 questions answered alike" in body, body
    questions = {q["id"]: q["question"] for q in plan.questions}
    listed = [b for b in at.button if b.key and b.key.startswith("compare_next_open_")]
    assert len(listed) == 3
    qid = listed[-1].key.rsplit("_", 1)[-1]
    assert qid in questions and questions[qid] in ANSWERS
    listed[-1].click()
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert at.selectbox(key="compare_q").value == qid
    # labelled for both flows, the question leaves the list
    grading.set_label(ws, plan.eval_id, "naive_rag", qid, "correctness", 1.0)
    grading.set_label(ws, plan.eval_id, "vague", qid, "correctness", 0.0)
    at.run()
    left = [b.key for b in at.button if b.key and b.key.startswith("compare_next_open_")]
    assert len(left) == 2 and all(not k.endswith("_" + qid) for k in left)


def test_a_criterion_too_long_is_refused_naming_the_box(ws):  # noqa: F811
    plan = evaluated(ws)
    at = opened(ws, plan)
    before = len(get_jobs().jobs(kind=tasks.GRADE))
    at.multiselect(key="compare_judges").set_value([])
    at.text_area(key="compare_criteria").set_value("x" * 501)
    at.run()
    at.button(key="compare_grade").click()
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    errors = [e.value for e in at.error]
    assert any(e.startswith("Criteria of your own: 501 characters") for e in errors), errors
    assert len(get_jobs().jobs(kind=tasks.GRADE)) == before         # nothing queued
