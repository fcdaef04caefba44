"""Run page (AppTest): pick flow, KB and question; the run goes to the job queue; the page follows
it, re-attaches after a refresh, and shows the answer with its cited passages and totals."""
from __future__ import annotations

import dataclasses
import sys
import threading
from pathlib import Path

import pytest

from flowkit import templates
from studio.common.jobs import get_jobs
from studio.common.workspace import use_workspace

sys.path.insert(0, str(Path(__file__).resolve().parent))   # _runkit beside this file
import _runkit as kit

LIGHTHOUSE = "In what year was the Corren Lighthouse first lit?"


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    w = kit.workspace(tmp_path_factory.mktemp("run-page"))
    use_workspace(w)
    yield w
    get_jobs().wait_idle(60)
    use_workspace(None)


def _submit(question: str = LIGHTHOUSE, flow: str = "naive_rag", **query: str):
    at = kit.page("pages/run.py", **{"flow": flow, **query}).run()
    at.text_area(key="run_question").input(question).run()
    at.button(key="run_go").click().run()
    assert not at.exception
    assert "run" in at.query_params, kit.texts(at)
    return at


def _blocker():
    """A job that holds the single worker until released (to see runs wait their turn)."""
    release = threading.Event()
    get_jobs().submit("test", "blocker", lambda report: release.wait(30) and None)
    return release


def test_flow_is_preselected_from_the_address_and_from_another_page(ws):
    at = kit.page("pages/run.py", flow="naive_rag").run()
    assert not at.exception
    assert at.selectbox(key="run_flow_choice").value == ("template", "naive_rag")
    assert at.selectbox(key="run_kb").value == "sample"

    ws.store.save_flow(templates.load_template("naive_rag").model_copy(update={"name": "mine"}), None)
    at = kit.page("pages/run.py")
    at.session_state["run_flow"] = "mine"
    at.run()
    assert at.selectbox(key="run_flow_choice").value == ("saved", "mine")
    assert at.query_params["flow"] == "mine"


def test_run_shows_answer_cited_passages_totals_and_replay_link(ws):
    at = _submit()
    at = kit.until(at, lambda a: "Cited passages" in kit.texts(a))
    text = kit.texts(at)
    assert "It was first lit in 1884" in text
    assert "first lit in 1884" in text and "Corren Point" in text   # the cited passage's text
    assert any(e.label.startswith("[1] art-09") for e in at.expander)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Steps"] == "2" and metrics["LLM calls"] == "1"
    assert int(metrics["Tokens"]) > 0
    run = ws.store.get_run(at.query_params["run"])
    assert run.record.status == "ok" and run.record.citations[0] == "art-09#0"
    assert f"/replay?run={run.id}" in text      # standalone page: the plain link form


def test_a_rerun_with_the_old_address_still_shows_the_run_just_queued(ws):
    """CI, stop 56: a rerun the browser sent before its address held ?run= (the sidebar's model
    load ending as Run was pressed) came with the old address, and the page fell back to 'Choose a
    flow...' while the run went on. The run just queued is shown again; once an address that holds
    it came back, leaving it (no ?run=) is not undone."""
    at = _submit()
    run_id = at.query_params["run"]
    del at.query_params["run"]                       # the stale rerun: the address before Run
    at.run()
    assert not at.exception
    assert at.query_params["run"] == run_id
    assert "Choose a flow, a knowledge base and a question" not in kit.texts(at)
    at = kit.until(at, lambda a: "Cited passages" in kit.texts(a))   # reruns with ?run=
    del at.query_params["run"]                       # the user left the run: the page is idle
    at.run()
    assert "run" not in at.query_params
    assert "Choose a flow, a knowledge base and a question" in kit.texts(at)


def test_refresh_reattaches_to_a_queued_then_running_run(ws):
    release = _blocker()
    try:
        at = _submit()
        run_id = at.query_params["run"]
        assert "Queued: 1 job(s) ahead" in kit.texts(at)
        # a refresh: a new session with only the address
        again = kit.page("pages/run.py", flow="naive_rag", run=run_id).run()
        assert "Queued: 1 job(s) ahead" in kit.texts(again)
        assert again.text_area(key="run_question").value == LIGHTHOUSE
    finally:
        release.set()
    again = kit.until(again, lambda a: "Cited passages" in kit.texts(a))
    assert "1884" in kit.texts(again)


def test_two_sessions_running_at_once_are_queued_not_crashed(ws):
    release = _blocker()
    try:
        first = _submit()
        second = _submit("Who designed the Corren Lighthouse?")
        assert "Queued: 1 job(s) ahead" in kit.texts(first)
        assert "Queued: 2 job(s) ahead" in kit.texts(second)
    finally:
        release.set()
    for at in (first, second):
        kit.until(at, lambda a: "/replay?run=" in kit.texts(a))   # drawn once it ended
        assert ws.store.get_run(at.query_params["run"]).record.status == "ok"


def test_dataset_question_fills_the_question_box_and_shows_the_expected_answer(ws):
    at = kit.page("pages/run.py", flow="naive_rag").run()
    at.selectbox(key="run_dataset_q").select(0).run()
    assert at.text_area(key="run_question").value == LIGHTHOUSE
    assert "Expected: 1884" in kit.texts(at)


def test_model_overrides_apply_to_this_run_only(ws):
    at = kit.page("pages/run.py", flow="naive_rag").run()
    at.text_area(key="run_question").input(LIGHTHOUSE)
    at.number_input(key="run_temperature").set_value(0.7)
    at.number_input(key="run_param_naive_rag_retrieve_top_k").set_value(2)
    at.run()
    at.button(key="run_go").click().run()
    kit.until(at, lambda a: "Cited passages" in kit.texts(a))
    run = ws.store.get_run(at.query_params["run"])
    assert run.settings["llm"]["temperature"] == 0.7
    retrieve = next(n for n in run.spec["nodes"] if n["id"] == "retrieve")
    assert retrieve["params"]["top_k"] == 2
    assert ws.resources.settings.llm.temperature == 0.0     # the shared settings are untouched


def test_a_failing_run_shows_error_status_and_text(ws):
    at = kit.page("pages/run.py", flow="naive_rag").run()
    at.selectbox(key="run_kb").select("").run()
    at.text_area(key="run_question").input(LIGHTHOUSE).run()
    at.button(key="run_go").click().run()
    at = kit.until(at, lambda a: bool(a.error))
    assert "needs a knowledge base" in at.error[0].value
    assert ":red-badge[error]" in kit.texts(at)


def test_a_page_opened_on_a_run_selects_that_runs_flow(ws):
    """`/run?run=ID` (a link from the replay, a bookmark) shows the run's own flow in the Flow box,
    not the first flow of the list (before: 'advanced_linear' for any run)."""
    first = kit.page("pages/run.py").run().selectbox(key="run_flow_choice").value
    flow = "self_rag" if first != ("template", "self_rag") else "naive_rag"
    at = _submit(flow=flow)
    run_id = at.query_params["run"]
    get_jobs().wait_idle(60)
    opened = kit.page("pages/run.py", run=run_id).run()
    assert not opened.exception
    assert opened.selectbox(key="run_flow_choice").value == ("template", flow)
    assert opened.text_area(key="run_question").value == LIGHTHOUSE


def test_an_unknown_run_in_the_address_says_so(ws):
    at = kit.page("pages/run.py", run="doesnotexist").run()
    assert not at.exception
    assert "No run 'doesnotexist'" in kit.texts(at)


def test_empty_question_is_refused(ws):
    at = kit.page("pages/run.py", flow="naive_rag").run()
    at.button(key="run_go").click().run()
    assert "Type a question first" in at.error[0].value
    assert "run" not in at.query_params


def test_three_clicks_on_run_queue_one_run(ws):
    release = _blocker()
    try:
        at = _submit()
        first = at.query_params["run"]
        for _ in range(2):
            at.button(key="run_go").click().run()
            assert at.query_params["run"] == first
        queued = [j for j in get_jobs().jobs(kind="run", active_only=True)
                  if j.meta["question"] == LIGHTHOUSE]
        assert [j.run_id for j in queued] == [first]
    finally:
        release.set()
    kit.until(at, lambda a: "Cited passages" in kit.texts(a))


def test_cancel_a_queued_run_it_never_starts_and_is_stored_cancelled(ws):
    release = _blocker()
    try:
        at = _submit("Who designed the Corren Lighthouse?")
        run_id = at.query_params["run"]
        job = get_jobs().find_run(run_id)
        at.button(key=f"run_cancel_{job.id}").click().run()
        assert get_jobs().get(job.id).status == "cancelled"
        run = ws.store.get_run(run_id)
        assert run.record.status == "cancelled" and ws.store.steps(run_id) == []
        at.run()
        assert ":gray-badge[cancelled]" in kit.texts(at)
    finally:
        release.set()
    get_jobs().wait_idle(30)
    assert ws.store.steps(run_id) == []                  # the worker never ran it


def test_cancel_a_running_run_stops_it_at_the_next_step(ws):
    entered, go = threading.Event(), threading.Event()

    def slow_rewrite(prompt: str) -> str:
        entered.set()
        go.wait(20)
        return "Corren Lighthouse first lit"

    before = ws.resources.llm
    ws.resources.set_llm(kit.FakeLLM([(r"rewrite|search query", slow_rewrite)],
                                     default="It was first lit in 1884 [1]"))
    try:
        at = _submit(flow="rewrite_retrieve_read")
        run_id = at.query_params["run"]
        assert entered.wait(20)
        at.run()
        at.button(key=f"run_cancel_{run_id}").click().run()
        assert get_jobs().find_run(run_id).cancel_requested
        go.set()
        at = kit.until(at, lambda a: ":gray-badge[cancelled]" in kit.texts(a))
    finally:
        go.set()
        get_jobs().wait_idle(30)
        ws.resources.set_llm(before)
    assert ws.store.get_run(run_id).record.status == "cancelled"
    assert [s.node_id for s in ws.store.steps(run_id)] == ["rewrite"]


def test_a_question_longer_than_the_model_context_is_not_queued(ws):
    n_ctx = ws.resources.settings.llm.n_ctx
    at = _submit_refused("word " * (n_ctx * 2))
    assert "Not queued" in at.error[0].value and "tokens" in at.error[0].value
    assert "run" not in at.query_params


def test_a_refusal_stays_through_reruns_until_the_question_changes(ws):
    """Issue 47, finding 11: any later rerun (the sidebar's model load ending, a timer) wiped
    the refusal before a user (or a browser test under load) could read it."""
    n_ctx = ws.resources.settings.llm.n_ctx
    at = _submit_refused("word " * (n_ctx * 2))
    for _ in range(2):
        at.run()                                   # reruns that do not press Run
        assert [e.value for e in at.error if e.value.startswith("Not queued")], at.error
    at.text_area(key="run_question").input("A short question?").run()
    assert not [e.value for e in at.error if e.value.startswith("Not queued")]


def _submit_refused(question: str):
    at = kit.page("pages/run.py", flow="naive_rag").run()
    at.text_area(key="run_question").input(question).run()
    at.button(key="run_go").click().run()
    assert not at.exception
    return at


class _CutLLM(kit.FakeLLM):
    """The fake, reporting `length` when it cut the reply at max_tokens (as llama.cpp does)."""

    def complete(self, prompt: str, **kwargs):
        out = super().complete(prompt, **kwargs)
        whole = super().complete(prompt, **{**kwargs, "max_tokens": 10_000})
        return dataclasses.replace(out, finish_reason="length") if whole.text != out.text else out


def test_an_answer_cut_at_max_tokens_says_so_and_where_to_raise_it(ws):
    """Issue 48, item 7: an answer stopped at its node's max_tokens ended mid-sentence with no
    notice; the page names the limit, the node and both places to raise it."""
    before = ws.resources.llm
    ws.resources.set_llm(_CutLLM([(r"Corren Lighthouse", "It was first lit in the year 1884 by "
                                   "the keeper of the light [1]")]))
    try:
        at = kit.page("pages/run.py", flow="naive_rag").run()
        at.text_area(key="run_question").input(LIGHTHOUSE)
        at.number_input(key="run_param_naive_rag_generate_max_tokens").set_value(5)
        at.run()
        at.button(key="run_go").click().run()
        at = kit.until(at, lambda a: kit.run_ended(ws, a) and "/replay?run=" in kit.texts(a))
        notice = [w.value for w in at.warning if "token limit" in w.value]
        assert notice, kit.texts(at)
        assert "stopped after 5 tokens" in notice[0] and "`generate`" in notice[0]
        assert "Model settings for this run" in notice[0] and "Editor" in notice[0]

        # the same question with room for the whole answer: no notice
        at.number_input(key="run_param_naive_rag_generate_max_tokens").set_value(64).run()
        at.button(key="run_go").click().run()
        at = kit.until(at, lambda a: kit.run_ended(ws, a) and "/replay?run=" in kit.texts(a))
        assert "1884" in kit.texts(at)
        assert not [w.value for w in at.warning if "token limit" in w.value]
    finally:
        get_jobs().wait_idle(30)
        ws.resources.set_llm(before)


def test_cut_answer_reads_which_limit_stopped_the_answer():
    """Cut only where the answer comes from the completion's last line; by max_tokens when the
    node's limit was reached, else by the context."""
    from datetime import datetime

    from flowkit.cost import Cost
    from flowkit.run_record import FinishedRun
    from flowkit.trace import LLMCall, StepEvent
    from storage.repo import RunInfo
    from studio.run.runview import CutAnswer, cut_answer

    spec = {"nodes": [{"id": "gen", "operator": "generation.answer", "params": {}}]}

    def case(completion: str, answer: str, tokens: int, reason: str = "length"):
        record = FinishedRun("r", "f", None, "q", answer, "ok", 0.0, 1.0, model_id="m",
                             model_hash="h", cost=Cost(1, 0, tokens, 1.0))
        run = RunInfo(record, 1, {}, spec, {}, {}, datetime.now(), None)
        step = StepEvent("r", 0, "gen", "generation.answer", 1, {}, {"answer": answer},
                         [LLMCall("p", completion, 9, tokens, 1.0, finish_reason=reason)])
        return cut_answer(run, [step])

    assert case("It was first lit in", "It was first lit in", 64) == CutAnswer("gen", 64, 64)
    assert case("1884\nQuestion: and then the", "1884", 64) is None    # a whole first line
    assert case("It was first lit in", "It was first lit in", 12) == CutAnswer("gen", 12, None)
    assert case("It was first lit in", "It was first lit in", 64, "stop") is None


def test_a_run_from_the_cache_tells_its_cost_from_its_wall_time(ws):
    """Issue 48, item 5: 'Seconds 42.7' beside 'Wall seconds 15.5' read as a contradiction. A run
    whose calls came from the cache shows its cost (all computed) and its wall time, each
    saying what it counts; a computed run shows one figure."""
    before = ws.resources.llm
    ws.resources.set_llm(kit.FakeLLM([(r"Corren Lighthouse", "It was first lit in 1884 [1]")],
                                     default="unknown [1]", ms=3000.0))   # a call "costs" 3 s
    question = "When was the Corren Lighthouse lit, in the cache test?"
    try:
        def figures(at) -> dict[str, tuple[str, str]]:
            return {m.label: (m.value, m.proto.help) for m in at.metric}
        first = kit.until(_submit(question), lambda a: "/replay?run=" in kit.texts(a))
        assert "Seconds" in figures(first) and "Wall time (s)" not in figures(first)
        assert "wall time" in figures(first)["Seconds"][1]
        again = kit.until(_submit(question), lambda a: "Calls from cache" in kit.texts(a))
        shown = figures(again)
        assert "Seconds" not in shown and "Wall seconds" not in shown
        assert float(shown["Cost (s)"][0]) >= 3.0 > float(shown["Wall time (s)"][0])
        assert "first computed" in shown["Cost (s)"][1]
        assert "took here" in shown["Wall time (s)"][1]
    finally:
        get_jobs().wait_idle(30)
        ws.resources.set_llm(before)
