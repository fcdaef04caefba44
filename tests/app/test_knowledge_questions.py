"""The Knowledge page's "Generate questions" tab (AppTest, issue 36): generate from the sample
knowledge base with a scripted model that reads well, in the background, see the review table,
delete a question, edit one, add one, save; the dataset is stored with the edits. Bad input is
refused next to the control and nothing is stored."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from flowkit.eval.questiongen.candidates import order, singles
from flowkit.eval.questiongen.generate import read_passages
from flowkit.testing import FakeLLM
from service.evaluations import eval_repo
from studio.common.jobs import get_jobs
from studio.common.workspace import use_workspace
from studio.knowledge import review

sys.path.insert(0, str(Path(__file__).resolve().parent))   # _runkit beside this file
import _runkit as kit

TABLE = "kb_qgen_table_{}"


def reader(answers: dict[str, str]):
    """A model that reads well: with passages shown it gives the candidate's answer back, without
    them it does not know."""
    def answer(prompt: str) -> str:
        m = re.search(r"Question: (.*?)\nAnswer:", prompt, re.S)
        if m is None or "[1]" not in prompt:
            return "I do not know"
        return answers.get(m.group(1).strip(), "unknown")
    return answer


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    w = kit.workspace(tmp_path_factory.mktemp("kb-questions"))
    answers = {c.question: c.answer for c in singles(order(read_passages(w.resources.kb("sample")),
                                                           0))}
    w.resources.set_llm(FakeLLM([(r"Answer:\s*$", reader(answers))], default="I do not know"))
    use_workspace(w)
    yield w
    get_jobs().wait_idle(60)
    use_workspace(None)


def _open(**query: str):
    at = kit.page("pages/knowledge.py", kb="sample", **query).run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def test_generate_review_edit_delete_add_then_save(ws):
    at = _open()
    assert at.text_input(key="kb_qgen_name").value == "sample-generated-s0"   # the default name
    at.number_input(key="kb_qgen_n").set_value(3)
    at.multiselect(key="kb_qgen_kinds").set_value(["single"])
    at.text_input(key="kb_qgen_name").input("sample-reviewed")
    at.button(key="kb_qgen_go").click().run()
    assert not at.exception, [e.message for e in at.exception]
    job_id = at.query_params["qgen"]
    job_id = job_id[0] if isinstance(job_id, list) else job_id
    job = get_jobs().wait(job_id, 60)
    assert job.status == "done", job.error
    assert eval_repo(ws).find_dataset("sample-reviewed") is None       # nothing saved yet
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    bar = at.progress[0]
    assert bar.value == 100 and "kept 3 of 3" in bar.text and "model calls computed" in bar.text
    table = at.dataframe(key=TABLE.format(job_id)).value
    assert list(table.columns) == list(review.COLUMNS) and len(table) == 3
    assert set(table["kind"]) == {"single"}
    assert all(table["model answered"].str.contains("with its passages: "))
    generated = job.result["questions"]
    assert [r for r in table["question"]] == [q["question"] for q in generated]
    # a question's passages, in full, in its expander
    first_passage = job.result["reviewed"][0]["passages"][0]
    assert any(first_passage["text"] in t.value for t in at.text)

    # delete the second, edit the first's question and the third's answer, add one of our own
    at.session_state[TABLE.format(job_id)] = {
        "edited_rows": {0: {"question": "Edited: " + generated[0]["question"]},
                        2: {"answer": "a new answer"}},
        "added_rows": [], "deleted_rows": [1]}
    at.run()
    # issue 48, item 4: the count and the passages list follow the edits (they stayed stale)
    assert "Review · 2 question(s) kept for `sample-reviewed` (2 edited, 1 deleted)" in \
        kit.texts(at).replace("**", "")
    titles = [e.label for e in at.expander if e.label.startswith("gen-")]
    assert titles[0].startswith(f"{generated[0]['id']} · Edited: ") and len(titles) == 2
    at.text_input(key=f"kb_qgen_add_q_{job_id}").input("Who keeps the Corren Lighthouse?")
    at.text_input(key=f"kb_qgen_add_a_{job_id}").input("Pell")
    at.button(key=f"kb_qgen_add_{job_id}").click().run()
    assert not at.exception, [e.message for e in at.exception]
    table = at.dataframe(key=TABLE.format(job_id)).value
    assert list(table["question"]) == ["Edited: " + generated[0]["question"],
                                       generated[2]["question"],
                                       "Who keeps the Corren Lighthouse?"]
    assert list(table["answer"])[1:] == ["a new answer", "Pell"]      # the edits kept
    assert at.text_input(key=f"kb_qgen_add_q_{job_id}").value == ""   # ready for another
    assert "Review · 3 question(s) kept for `sample-reviewed` (2 edited, 1 deleted, 1 added)" \
        in kit.texts(at).replace("**", "")
    assert "added · Who keeps the Corren Lighthouse?" in [e.label for e in at.expander]
    at.button(key=f"kb_qgen_save_{job_id}").click().run()
    assert not at.exception, [e.message for e in at.exception]
    assert any("Saved dataset 'sample-reviewed' with 3 questions" in s.value for s in at.success)
    stored = eval_repo(ws).get_dataset("sample-reviewed")
    assert stored.kb == "sample" and "generated from knowledge base 'sample'" in stored.source
    q = stored.questions
    assert [x["id"] for x in q] == [generated[0]["id"], generated[2]["id"], "added-1"]
    assert q[0]["question"] == "Edited: " + generated[0]["question"]
    assert q[0]["answers"] == generated[0]["answers"] and q[0]["origin"]["edited"] is True
    assert q[1]["question"] == generated[2]["question"] and q[1]["answers"] == ["a new answer"]
    assert q[1]["supporting_doc_ids"] == generated[2]["supporting_doc_ids"]
    assert q[2] == {"id": "added-1", "question": "Who keeps the Corren Lighthouse?",
                    "answers": ["Pell"], "type": "added", "supporting_doc_ids": [],
                    "origin": {"added_by": "user", "kb": "sample"}}

    # issue 48, item 9: "Open Compare" opens Compare with the saved set picked (it picked the
    # sample questions), and the address picks it once: the user's later pick stays
    links = [m.value for m in at.markdown if "Open Compare" in m.value] + [
        f"{e.proto.page}?{e.proto.query_string}" for e in at.get("page_link")
        if "Open Compare" in str(e.proto.label)]
    assert links and "compare?dataset=sample-reviewed" in links[0], links
    compare = kit.page("pages/compare.py", dataset="sample-reviewed").run()
    assert not compare.exception, [e.message for e in compare.exception]
    assert compare.selectbox(key="compare_dataset").value == "sample-reviewed"
    assert compare.selectbox(key="compare_kb").value == "sample"
    compare.selectbox(key="compare_dataset").set_value("sample_questions").run()
    assert compare.selectbox(key="compare_dataset").value == "sample_questions"

    # a refresh (a new session on the same address) finds the generated set again
    again = _open(qgen=job_id)
    assert len(again.dataframe(key=TABLE.format(job_id)).value) == 3
    # saving again under the same name is refused, naming the field
    again.button(key=f"kb_qgen_save_{job_id}").click().run()
    assert any("name: a dataset named 'sample-reviewed' exists" in e.value for e in again.error)


def test_a_question_without_an_answer_is_not_added_and_a_blanked_row_is_refused(ws):
    at = _open()
    at.number_input(key="kb_qgen_n").set_value(2)
    at.multiselect(key="kb_qgen_kinds").set_value(["single"])
    at.text_input(key="kb_qgen_name").input("sample-empty-row")
    at.button(key="kb_qgen_go").click().run()
    job_id = at.query_params["qgen"]
    job_id = job_id[0] if isinstance(job_id, list) else job_id
    assert get_jobs().wait(job_id, 60).status == "done"
    at.run()
    at.text_input(key=f"kb_qgen_add_q_{job_id}").input("What is Pell?")
    at.button(key=f"kb_qgen_add_{job_id}").click().run()
    assert "Nothing added: write its answer." in [e.value for e in at.error]
    assert len(at.dataframe(key=TABLE.format(job_id)).value) == 2
    assert at.text_input(key=f"kb_qgen_add_q_{job_id}").value == "What is Pell?"   # kept
    at.session_state[TABLE.format(job_id)] = {
        "edited_rows": {1: {"answer": ""}}, "added_rows": [], "deleted_rows": []}
    at.run()
    at.button(key=f"kb_qgen_save_{job_id}").click().run()
    errors = " ".join(e.value for e in at.error)
    assert "Not saved" in errors and re.search(r"row 2 \(gen-[\w-]+\): write an answer", errors)
    assert eval_repo(ws).find_dataset("sample-empty-row") is None


@pytest.mark.parametrize("change, expected", [
    ({"n": 0}, "n: the number of questions must be at least 1; got 0"),
    ({"kinds": []}, "kinds: name at least one of"),
    ({"name": "sample-reviewed-taken"}, "name: a dataset named 'sample-reviewed-taken' exists"),
])
def test_bad_input_is_refused_next_to_the_control_and_nothing_is_stored(ws, change, expected):
    eval_repo(ws).save_dataset("sample-reviewed-taken", "test", [{"id": "1", "question": "q",
                                                                 "answers": ["a"]}])
    before = {d.name for d in eval_repo(ws).list_datasets()}
    jobs_before = len(get_jobs().jobs(kind="questiongen"))
    at = _open()
    if "n" in change:
        at.number_input(key="kb_qgen_n").set_value(change["n"])
    if "kinds" in change:
        at.multiselect(key="kb_qgen_kinds").set_value(change["kinds"])
    if "name" in change:
        at.text_input(key="kb_qgen_name").input(change["name"])
    at.button(key="kb_qgen_go").click().run()
    assert not at.exception, [e.message for e in at.exception]
    errors = " ".join(e.value for e in at.error)
    assert "Nothing generated" in errors and expected in errors
    assert "qgen" not in at.query_params
    assert len(get_jobs().jobs(kind="questiongen")) == jobs_before
    assert {d.name for d in eval_repo(ws).list_datasets()} == before


def test_review_rows_and_questions_round_trip():
    questions = [{"id": "g1", "question": "Q?", "answers": ["A"], "type": "single",
                  "supporting_doc_ids": ["d1"], "origin": {"seed": 0}}]
    reviewed = [{"id": "g1", "passages": [{"id": "d1", "title": "T", "text": "x"}],
                 "model_answers": {"with_passages": "A", "closed_book": ""}}]
    rows = review.rows(questions, reviewed)
    assert rows == [{"id": "g1", "question": "Q?", "answer": "A", "kind": "single",
                     "model answered": "with its passages: A · closed-book: (nothing)",
                     "passages": "d1 (T)"}]
    assert review.to_questions(rows, questions, "kb") == questions        # untouched: the same
    edits = {"edited_rows": {0: {"answer": "B"}}, "added_rows": [{"question": "New?"}],
             "deleted_rows": []}
    now = review.apply_edits([*rows, review.added_row("Mine?", "M")], edits)
    assert [(r["question"], r["answer"]) for r in now] == [("Q?", "B"), ("Mine?", "M"),
                                                           ("New?", "")]
    assert review.changes(now, questions) == "1 edited, 2 added"
    assert review.changes(review.apply_edits(rows, {"deleted_rows": [0]}), questions) == \
        "1 deleted"
    with pytest.raises(Exception, match=r"row 1 \(g1\): write a question and an answer"):
        review.to_questions([{**rows[0], "question": " ", "answer": float("nan")}], questions,
                            "kb")


# ---- the Compare page points here when no question set fits its knowledge base ----------------
def _pointers(at) -> list[str]:
    """The pointer as a page link, or as the plain link it falls back to under AppTest."""
    links = [str(e.proto.label) for e in at.get("page_link")]
    return links + [m.value for m in at.markdown if "Generate questions" in m.value]


def test_compare_points_to_generation_when_no_set_fits_the_knowledge_base(ws):
    from service import knowledge as kbview
    from studio.compare.generate_link_panel import fitting_sets

    if "notes_qgen" not in ws.resources.kb_names():
        kbview.create(ws.resources, "notes_qgen", "")
    at = kit.page("pages/compare.py").run()
    assert not at.exception, [e.message for e in at.exception]
    assert at.selectbox(key="compare_dataset").value == "sample_questions"
    assert at.selectbox(key="compare_kb").value == "sample"
    assert not _pointers(at)                           # the sample questions fit 'sample'
    at.selectbox(key="compare_kb").set_value("notes_qgen").run()
    assert not at.exception, [e.message for e in at.exception]
    shown = _pointers(at)
    assert shown and "Generate questions from this knowledge base" in shown[0]
    assert "No question set belongs to knowledge base 'notes_qgen'" in kit.texts(at)
    assert fitting_sets(["a", "b", "sample_questions"], {"a": "x"}, "x") == ["a"]
    assert fitting_sets(["a", "sample_questions"], {}, "sample") == ["sample_questions"]
    assert fitting_sets(["my set"], {}, "my_set") == ["my set"]     # its corpus, named like it
