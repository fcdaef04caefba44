"""The Compare page (AppTest): start a comparison in the background and follow it, open an earlier
evaluation from the address, see metrics, charts, disagreements and traces side by side, resume a
stopped one. The model is a FakeLLM; the sample KB uses a hashing embedder (no model loads)."""
from __future__ import annotations

import re
import threading

import pytest
from _runkit import page, texts, until, workspace

from flowkit import templates
from flowkit.eval.datasets import known_sets
from flowkit.eval.runner import make_plan, resolve_flows, run_evaluation
from flowkit.eval.strategy import EvalRun
from flowkit.testing import FakeLLM
from storage.evals import EvalRepo
from studio.common.jobs import get_jobs
from studio.common.workspace import use_workspace
from studio.compare import tasks

SAMPLE_ANSWERS = {"In what year was the Corren Lighthouse first lit?": "1884 [1]",
                  "How many arches does the Sundby Viaduct have?": "11 [1]",
                  "Who founded the Halvard Ferry Company?": "Jorun Abbe [1]",
                  "How high is Mount Aldra, in metres?": "about 1,412 metres [1]"}


def answer(prompt: str) -> str:
    m = re.search(r"Question: (.*?)\nAnswer:", prompt, flags=re.S)
    return SAMPLE_ANSWERS.get(m.group(1).strip(), "no idea") if m else "no idea"


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


def evaluated(ws, limit=3, stop_after=None, flows=("naive_rag", "vague")):
    repo = EvalRepo(ws.store)
    from flowkit.eval.datasets import resolve
    ds = resolve(repo, "sample_questions")
    plan = make_plan(resolve_flows(ws, list(flows)), ds.name, ds.questions, "sample",
                     limit=limit)
    stop = threading.Event()

    def prog(p):
        if stop_after and p.done >= stop_after:
            stop.set()
    run_evaluation(ws, repo, plan, EvalRun(progress=prog, stop=stop))
    return plan


def test_start_a_comparison_and_follow_it(ws):
    at = page("pages/compare.py")
    at.run()
    assert not at.exception
    assert "Start a comparison" in texts(at)
    flows = at.multiselect(key="compare_flows")
    assert "naive_rag (template)" in flows.options and "vague" in flows.options
    at.multiselect(key="compare_flows").set_value([("template", "naive_rag"), ("saved", "vague")])
    at.selectbox(key="compare_dataset").set_value("sample_questions")
    at.run()
    assert at.selectbox(key="compare_kb").value == "sample"         # suggested for the sample
    at.number_input(key="compare_limit").set_value(3)
    at.button(key="compare_start").click()
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    eval_id = at.query_params["eval"][0] if isinstance(at.query_params["eval"], list) \
        else at.query_params["eval"]
    assert re.fullmatch(r"[0-9a-f]{12}", eval_id)
    until(at, lambda a: "6/6 answers · done" in str([p.proto.text for p in a.get("progress")])
          or "Side by side" in texts(a), timeout=60)
    # the page shows partial metrics while the evaluation runs: wait for all 3 questions of both
    until(at, lambda a: "Side by side" in texts(a) and len(a.dataframe) > 0
          and list(a.dataframe[0].value["n"]) == [3, 3], timeout=60)
    metrics = at.dataframe[0].value
    assert list(metrics["flow"]) == ["naive_rag", "vague"]
    assert list(metrics["EM"]) == [100.0, 0.0] and list(metrics["n"]) == [3, 3]
    deltas = at.dataframe[1].value
    assert deltas.iloc[0]["Δ EM"].startswith("-100.0 [-100.0, -100.0] *")
    dis = at.dataframe(key="compare_disagree_df").value
    assert list(dis["id"]) == ["q01", "q02", "q03"] and dis.iloc[0]["naive_rag"] == "✓ 1884"
    assert len(at.get("vega_lite_chart")) >= 8                  # 7 bars + the frontier
    # side by side: one column per flow, the answer, passages and steps with prompts
    body = texts(at)
    assert "**naive_rag**" in body and "**vague**" in body and "**Answer** ✓" in body
    shown = [t.value for t in at.text]                  # answers are shown as plain text
    assert "1884" in shown and "no idea" in shown and "**Answer** ✗" in body
    titles = [e.label for e in at.expander]
    assert any(t.startswith("Retrieved passages") for t in titles)
    assert any("generate (visit 1) · generation.answer" in t for t in titles)
    assert any("Question: In what year" in c.value for c in at.code)
    # another question through the picker (and the address)
    at.selectbox(key="compare_q").set_value("q02")
    at.run()
    assert at.query_params["q"] in ("q02", ["q02"]) and "11" in [t.value for t in at.text]
    runs = EvalRepo(ws.store).runs(eval_id)
    assert len(runs) == 6 and {r.record.status for r in runs} == {"ok"}


def test_open_an_earlier_evaluation_from_the_address(ws):
    plan = evaluated(ws, limit=2)
    at = page("pages/compare.py", eval=plan.eval_id, q="q02")
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    body = texts(at)
    assert plan.eval_id in body and "4/4 answers · done" in str(
        [p.proto.text for p in at.get("progress")])
    assert at.selectbox(key="compare_q").value == "q02"
    assert "How many arches does the Sundby Viaduct have?" in body
    assert at.selectbox(key="compare_open").value == plan.eval_id
    assert [b.label for b in at.get("download_button")][:1] == ["Report (HTML)"]
    # issue 48, item 6: why no ranking-steadiness line shows; flows that differ are not called
    # indistinct
    assert ("it needs at least 3 flows (here 2) and 10 questions answered by every flow "
            "(here 2)") in body
    assert not [w.value for w in at.warning if "cannot be told apart" in w.value]


def test_flows_that_gave_the_same_answers_are_said_to_be_indistinct(ws):
    """Issue 48, item 6: flows with the same answer to every question were compared silently."""
    twin = templates.load_template("naive_rag").model_copy(update={"name": "naive_twin"})
    ws.store.save_flow(twin, None)
    plan = evaluated(ws, limit=3, flows=("naive_rag", "naive_twin"))
    at = page("pages/compare.py", eval=plan.eval_id).run()
    assert not at.exception, [e.message for e in at.exception]
    note = [w.value for w in at.warning if "cannot be told apart" in w.value]
    assert note and "same answer to each of the 3 question(s)" in note[0], texts(at)
    assert "more questions" in note[0] and "stronger model" in note[0]


def test_stopped_evaluation_can_be_resumed(ws):
    plan = evaluated(ws, limit=3, stop_after=2)
    assert len(EvalRepo(ws.store).runs(plan.eval_id)) == 2
    at = page("pages/compare.py", eval=plan.eval_id)
    at.run()
    assert "2/6 answers · stopped" in str([p.proto.text for p in at.get("progress")])
    at.button(key="compare_resume").click()
    at.run()
    get_jobs().wait_idle(60)
    until(at, lambda a: "6/6 answers · done" in str([p.proto.text for p in a.get("progress")]))
    assert tasks.last_job(get_jobs(), plan.eval_id).status == "done"
    # issue 48, item 5: the calls counted are those of the 4 answers this job ran (the 2 stored
    # before it count none), said in words, with what they count as the line's help
    line = next(c for c in at.caption if "model calls" in c.value)
    assert re.search(r"6/6 answers · model calls of the 4 run now: \d+ computed, \d+ from the "
                     r"cache", line.value), line.value
    assert "not answers" in line.proto.help


def test_seconds_per_question_are_told_apart_from_the_wall_time(ws):
    """Issue 48, item 5: the flows' s/q added up to more than the evaluation took, unexplained.
    The page says what s/q counts and gives both sums; a second evaluation of the same flows
    computes nothing (every call from the cache) and says why they differ."""
    ws.resources.set_llm(FakeLLM([(r"Question: .*\nAnswer:", answer)], default="no idea",
                                 ms=2000.0))            # each computed call "costs" 2 s
    evaluated(ws, limit=2)                              # computed: 4 calls, 8 s
    plan = evaluated(ws, limit=3)                       # q01, q02 from the cache, q03 computed
    cost, wall = EvalRepo(ws.store).run_seconds(plan.eval_id)
    assert cost > wall + 7.0                            # the 4 cached calls count 8 s of cost
    at = page("pages/compare.py", eval=plan.eval_id).run()
    assert not at.exception, [e.message for e in at.exception]
    note = next(c for c in at.caption if c.value.startswith("s/q:"))
    assert f"{cost:,.1f} s" in note.value and f"{wall:,.1f} s here (wall time)" in note.value
    assert "completion cache" in note.value and "flow's cost" in note.proto.help


def test_bad_choices_are_refused(ws):
    at = page("pages/compare.py")
    at.run()
    at.multiselect(key="compare_flows").set_value([("template", "naive_rag")])
    at.run()
    assert at.button(key="compare_start").disabled and "Pick at least 2 flows" in texts(at)
    assert "sample_questions" in at.selectbox(key="compare_dataset").options
    assert set(known_sets()) <= set(at.selectbox(key="compare_dataset").options)
    at = page("pages/compare.py", eval="nope")
    at.run()
    assert "no evaluation 'nope'" in texts(at)


def test_add_a_variant_column_and_see_where_it_parts(ws):
    plan = evaluated(ws, limit=2)
    at = page("pages/compare.py", eval=plan.eval_id)
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    at.selectbox(key="compare_variant_from").set_value("naive_rag")
    at.run()
    at.selectbox(key="compare_variant_node").set_value("generate")
    at.run()
    prompt_key = f"compare_variant_p_{plan.eval_id}_naive_rag_generate_prompt"
    at.text_area(key=prompt_key).set_value("Say it.\n{passages}\nQ: {question}\nA:")
    at.run()
    calls_before = len(ws.resources.llm.prompts)
    at.button(key="compare_variant_add").click()
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    get_jobs().wait_idle(60)
    until(at, lambda a: "6/6 answers · done" in str([p.proto.text for p in a.get("progress")]))
    # only the variant's answers were computed: the retrievals and the other columns are kept
    assert len(ws.resources.llm.prompts) - calls_before == 2
    metrics = at.dataframe[0].value
    assert len(metrics) == 3 and list(metrics["flow"])[2].startswith("naive_rag~generate.")
    assert list(metrics["n"]) == [2, 2, 2]
    job = tasks.last_job(get_jobs(), plan.eval_id)
    assert job.result["computed_calls"] == 2
    # where the variant parts from naive_rag: at its answer node, on both questions
    at.selectbox(key="compare_part_parent").set_value("naive_rag")
    at.selectbox(key="compare_part_variant").set_value(list(metrics["flow"])[2])
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    (groups,) = [d.value for d in at.dataframe if "first differs at" in d.value.columns]
    assert list(groups["first differs at"]) == ["generate"] and list(groups["questions"]) == [2]
    assert list(groups["answer changed"]) == [2] and list(groups["worse"]) == [2]
    rows = at.dataframe(key="compare_part_df").value
    assert list(rows["node"]) == ["generate", "generate"]
    assert rows.iloc[0]["parent replay"].startswith(f"/replay?run={plan.eval_id}-0-0&step=")


def test_an_unfinished_evaluation_gives_no_zero_verdict(ws):
    """Issue 38 item 3: after 1 answer of 6 the page said "every flow scored 0 (no answer matched
    a gold answer)"; it now says how many answers are in and charts nothing yet."""
    ws.resources.set_llm(FakeLLM([], default="no idea"))          # EM/F1/Acc 0 on every answer
    plan = evaluated(ws, limit=3, stop_after=1)
    at = page("pages/compare.py", eval=plan.eval_id)
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    body = texts(at)
    assert "every flow scored 0" not in body and "matched" not in body
    assert "**EM**: nothing to chart yet (1 of 6 answers in)." in body
    assert "1 of 6 answers in so far; EM, F1, Acc and R@5 in %" in body


def test_a_finished_evaluation_says_what_a_zero_means_per_metric():
    """A zero recall is about the searches (no gold passage in the top k), never an answer match;
    a zero EM once every answer is in is said as before."""
    from flowkit.eval.metrics import QuestionResult
    from flowkit.eval.report import build_report
    from studio.compare import compare_data as cd

    def res(flow, qid):
        return QuestionResult(flow=flow, question_id=qid, question="q?", answers=["gold"],
                              prediction="x", status="ok", type="t", em=0, f1=0, acc=0, recall=0.0,
                              tokens=1, llm_calls=1, seconds=1.0, run_id=f"r-{flow}-{qid}")
    done = build_report({"a": [res("a", "q1"), res("a", "q2")], "b": [res("b", "q1"),
                                                                      res("b", "q2")]},
                        k=5, planned=2)
    assert cd.zero_note(done, "R@5") == ("**R@5**: every flow scored 0 (no search put a gold "
                                         "passage in its top 5).")
    assert "no answer matched a gold answer" in cd.zero_note(done, "EM")
    half = build_report({"a": [res("a", "q1")], "b": [res("b", "q1")]}, k=5, planned=2)
    assert cd.zero_note(half, "R@5") == "**R@5**: nothing to chart yet (2 of 4 answers in)."


def test_where_two_flows_part_defaults_to_the_recorded_parent(ws):
    """Issue 38 item 3: an evaluation opened again defaulted Parent to the baseline, so a variant
    of the second column read "another node ran" on every question. The variant records the
    column it was made from, and the page starts on that pair; a pair with no node id in common
    is refused in a sentence that says so."""
    from flowkit.eval.runner import FlowEntry
    from flowkit.testing import flow
    from service.evaluations import add_variant_columns
    from studio.compare.variant_panel import variant_ref, variant_spec

    plan = evaluated(ws, limit=2)
    vague = next(f for f in plan.flows if f.label == "vague")
    params = {**next(n for n in vague.spec.nodes if n.id == "generate").params,
              "prompt": "Answer.\n{passages}\nQuestion: {question}\nAnswer:"}
    variant = FlowEntry(ref=variant_ref("vague", "generate", params),
                        spec=variant_spec(vague.spec, "generate", params), parent="vague")
    other = FlowEntry(ref="other", spec=flow("other", [("r", "retrieval.bm25"),
                                                       ("g", "generation.answer")], ["r>g"]))
    full = add_variant_columns(ws, plan.eval_id, [variant, other])
    run_evaluation(ws, EvalRepo(ws.store), full, EvalRun(stop=threading.Event()))
    at = page("pages/compare.py", eval=plan.eval_id)
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert at.selectbox(key="compare_part_variant").value == "other"
    at.selectbox(key="compare_part_variant").set_value(variant.label)
    at.run()
    assert at.selectbox(key="compare_part_parent").value == "vague"
    (groups,) = [d.value for d in at.dataframe if "first differs at" in d.value.columns]
    assert list(groups["first differs at"]) == ["generate"]        # not at the first step
    assert list(groups["questions"]) == [2] and list(groups["better"]) == [2]
    # issue 38 item 6: a pair that never parts shows no step "None"
    at.selectbox(key="compare_part_parent").set_value("naive_rag")
    at.selectbox(key="compare_part_variant").set_value(variant.label)   # same answers
    at.run()
    rows = at.dataframe(key="compare_part_df").value
    assert list(rows["node"]) == ["(never part)"] * 2
    assert list(rows["step"]) == ["—"] * 2 and list(rows["differs in"]) == ["—"] * 2
    at.selectbox(key="compare_part_parent").set_value("naive_rag")
    at.selectbox(key="compare_part_variant").set_value("other")
    at.run()
    assert ("'naive_rag' and 'other' share no node ids, so there is no step where they could run "
            "the same node: pick a variant and the column it was made from.") in \
        [i.value for i in at.info]


def test_an_evaluation_opened_again_starts_on_the_variant_and_its_parent(ws):
    from flowkit.eval.runner import FlowEntry
    from service.evaluations import add_variant_columns

    plan = evaluated(ws, limit=1)
    vague = next(f for f in plan.flows if f.label == "vague")
    spec = vague.spec.model_copy(update={"description": "another"})
    full = add_variant_columns(ws, plan.eval_id, [FlowEntry(ref="vague~generate.abcd", spec=spec)])
    run_evaluation(ws, EvalRepo(ws.store), full, EvalRun(stop=threading.Event()))   # no parent recorded:
    at = page("pages/compare.py", eval=plan.eval_id)                       # the ref names it
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert at.selectbox(key="compare_part_variant").value == "vague~generate.abcd"
    assert at.selectbox(key="compare_part_parent").value == "vague"
