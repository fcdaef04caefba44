"""Replay page (AppTest): step controls that agree, memory diff, prompts, passages, chart data, the
graph picture, failed steps, and forking from a step (the new run links back to its parent)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from flowkit import templates
from flowkit.testing import FakeLLM
from studio.common import graph_panel
from studio.common.jobs import get_jobs
from studio.common.workspace import use_workspace
from studio.replay import memory_panel, replay, replay_panel

sys.path.insert(0, str(Path(__file__).resolve().parent))   # _runkit beside this file
import _runkit as kit

from flowkit.run_request import RunRequest

LIGHTHOUSE = "In what year was the Corren Lighthouse first lit?"


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    w = kit.workspace(tmp_path_factory.mktemp("replay-page"))
    use_workspace(w)
    yield w
    get_jobs().wait_idle(60)
    use_workspace(None)


@pytest.fixture(scope="module")
def run_id(ws):
    return ws.run(templates.load_template("naive_rag"), RunRequest(LIGHTHOUSE, kb="sample")).run_id


def _open(run_id: str, **query: str):
    at = kit.page("pages/replay.py", run=run_id, **query).run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def _open_tab(at, label: str):
    """What a click on the tab does: the tab's state changes and the page runs again."""
    at.session_state[replay_panel.TAB_KEY] = label
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def _shown_step(at) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("### Step"))


def test_step_controls_slider_and_address_agree(ws, run_id):
    at = _open(run_id)
    assert _shown_step(at) == "### Step 0 of 1: `retrieve`"
    at.button(key="replay_next").click().run()
    assert at.select_slider(key="replay_step").value == 1
    assert at.query_params["step"] == "1"
    assert _shown_step(at) == "### Step 1 of 1: `generate`"
    at.button(key="replay_next").click().run()          # past the end: stays on the last step
    assert at.select_slider(key="replay_step").value == 1
    at.button(key="replay_prev").click().run()
    assert _shown_step(at).startswith("### Step 0")
    at.button(key="replay_last").click().run()
    assert at.select_slider(key="replay_step").value == 1
    at.button(key="replay_first").click().run()
    assert at.select_slider(key="replay_step").value == 0
    at.select_slider(key="replay_step").set_value(1).run()
    assert _shown_step(at).startswith("### Step 1") and at.query_params["step"] == "1"


def test_a_refresh_opens_the_same_run_and_step(ws, run_id):
    at = _open(run_id, step="1")
    assert _shown_step(at).startswith("### Step 1")
    assert at.selectbox(key="replay_pick").value == run_id


def test_memory_diff_prompts_and_passages(ws, run_id):
    at = _open(run_id, step="1")
    text = kit.texts(at)
    assert ":green-badge[answer added]" in text and ":green-badge[citations added]" in text
    text = kit.texts(_open_tab(at, replay_panel.LLM_CALLS))
    assert "Call 1" in text
    prompts = [c.value for c in at.code]
    assert any("Question: " + LIGHTHOUSE in p for p in prompts)      # the exact prompt
    assert any("It was first lit in 1884 [1]" == p for p in prompts)  # the completion
    at = _open(run_id, step="0", tab=replay_panel.RETRIEVED)          # a link to the tab
    table = at.dataframe[-1].value                                   # retrieved passages
    assert list(table.columns) == ["rank", "id", "title", "score", "text"]
    assert table.iloc[0]["id"] == "art-09#0" and table.iloc[0]["score"] > 0


def test_only_the_open_tab_is_drawn_and_it_stays_open_across_steps(ws, run_id):
    at = _open(run_id, step="1")
    assert ":green-badge[answer added]" in kit.texts(at)            # Memory: open by default
    assert "Call 1" not in kit.texts(at)                             # the prompts are not drawn
    assert not any("Question: " + LIGHTHOUSE in c.value for c in at.code)
    assert "passage(s) retrieved" in kit.texts(at)                    # the counts, in the summary
    _open_tab(at, replay_panel.LLM_CALLS)
    assert "Call 1" in kit.texts(at) and ":green-badge[answer added]" not in kit.texts(at)
    at.button(key="replay_prev").click().run()                       # another step: still open
    assert _shown_step(at).startswith("### Step 0")
    assert "This step made no LLM call." in kit.texts(at)
    assert not at.dataframe                                           # Retrieved: not drawn
    _open_tab(at, replay_panel.RETRIEVED)
    assert at.dataframe[-1].value.iloc[0]["id"] == "art-09#0"


def test_memory_rows_mark_changes():
    rows = memory_panel.rows({"question": "q", "answer": "a"},
                        {"question": "q", "answer": "b", "citations": ["x"]})
    assert [(r["key"], r["change"]) for r in rows] == [
        ("answer", "changed"), ("citations", "added"), ("question", "same")]


def test_chart_data_marks_the_current_step(ws, run_id):
    steps = ws.store.steps(run_id)
    tokens, ms = replay.chart_data(steps, 1)
    assert list(tokens["tokens (this step)"]) == [0, steps[1].tokens]
    assert list(tokens["tokens (other steps)"]) == [0, 0]
    assert list(tokens["step"]) == ["0 retrieve", "1 generate"]


def test_graph_picture_marks_current_visited_failed_and_path(ws, run_id):
    run = ws.store.get_run(run_id)
    steps = ws.store.steps(run_id)
    nodes, edges = graph_panel.flow_picture(run.spec, steps, 1)
    colour = {n["id"]: n["color"]["background"] for n in nodes}
    assert colour == {"retrieve": graph_panel.VISITED, "generate": graph_panel.CURRENT}
    assert edges[0]["color"] == graph_panel.PATH_EDGE and edges[0]["width"] == 5
    nodes, edges = graph_panel.flow_picture(run.spec, steps, 0)
    assert edges[0]["color"] == graph_panel.PLAIN_EDGE and edges[0]["dashes"]
    failed = [steps[0], steps[1].__class__(**{**steps[1].__dict__, "error": "boom"})]
    nodes, _ = graph_panel.flow_picture(run.spec, failed, 1)
    assert {n["id"]: n["color"]["background"] for n in nodes}["generate"] == graph_panel.FAILED


def test_a_failed_step_shows_its_error(ws, tmp_path):
    broken = FakeLLM([(r".", lambda p: (_ for _ in ()).throw(RuntimeError("model fell over")))])
    ws.resources.set_llm(broken)
    try:
        end = ws.run(templates.load_template("naive_rag"), RunRequest(LIGHTHOUSE, kb="sample"))
    finally:
        ws.resources.set_llm(kit.fake_llm())
    assert end.status == "error"
    at = _open(end.run_id, step="1")
    errors = [e.value for e in at.error]
    assert any("This step failed" in e and "model fell over" in e for e in errors)


def _fork(at, timeout: float = 30.0):
    at.button(key="replay_fork_go").click().run()
    assert not at.exception
    job_id = at.query_params["fork"]
    get_jobs().wait(job_id, timeout)
    at.run()
    return get_jobs().get(job_id)


def test_fork_with_a_changed_memory_value_links_back_to_its_parent(ws, run_id):
    at = _open(run_id, step="1", tab=replay_panel.FORK)
    at.selectbox(key="replay_fork_key").select("question").run()
    box = at.text_area(key=f"replay_fork_val_{run_id}_1_question")
    assert json.loads(box.value) == LIGHTHOUSE                      # prefilled with memory-before
    box.input(json.dumps("Who designed the Corren Lighthouse?")).run()
    job = _fork(at)
    assert job.status == "done", job.error
    assert any("finished: run" in s.value for s in at.success)
    at.button(key="replay_open_fork").click().run()                   # open the new run
    assert at.query_params["run"] == job.run_id and at.query_params["step"] == "0"
    assert "fork" not in at.query_params
    assert at.selectbox(key="replay_pick").value == job.run_id
    child = ws.store.get_run(job.run_id)
    assert child.record.parent_run_id == run_id and child.record.parent_step == 1
    assert child.record.question == "Who designed the Corren Lighthouse?"
    assert [s.node_id for s in ws.store.steps(child.id)] == ["generate"]
    assert f"Forked from run `{run_id}` step 1" in kit.texts(at)
    at.button(key="replay_open_parent").click().run()                 # back to the parent step
    assert at.query_params["run"] == run_id and _shown_step(at).startswith("### Step 1")
    assert "Forks of this run: 1" in kit.texts(at)
    at.button(key=f"replay_open_child_{child.id}").click().run()
    assert at.query_params["run"] == child.id


def test_fork_with_changed_params(ws, run_id):
    at = _open(run_id, step="0", tab=replay_panel.FORK)
    at.radio(key="replay_fork_what").set_value("params of node retrieve").run()
    box = at.text_area(key=f"replay_fork_params_{run_id}_0")
    params = json.loads(box.value)
    box.input(json.dumps({**params, "top_k": 1})).run()
    job = _fork(at)
    assert job.status == "done", job.error
    child = ws.store.get_run(job.run_id)
    assert next(n for n in child.spec["nodes"] if n["id"] == "retrieve")["params"]["top_k"] == 1
    assert len(ws.store.steps(child.id)[0].memory_after["documents"]) == 1


def test_fork_form_refuses_bad_json_and_bad_params(ws, run_id):
    at = _open(run_id, step="1", tab=replay_panel.FORK)
    at.selectbox(key="replay_fork_key").select("documents").run()
    at.text_area(key=f"replay_fork_val_{run_id}_1_documents").input("[not json").run()
    assert "not JSON" in at.error[0].value
    assert at.button(key="replay_fork_go").disabled
    at.radio(key="replay_fork_what").set_value("params of node generate").run()
    at.text_area(key=f"replay_fork_params_{run_id}_1").input('{"top_n": 0}').run()
    assert "top_n" in at.error[0].value
    assert at.button(key="replay_fork_go").disabled


def test_no_runs_and_unknown_run(ws, tmp_path):
    empty = kit.workspace(tmp_path / "empty", sample=False)
    use_workspace(empty)
    try:
        at = kit.page("pages/replay.py", run="nope").run()
        assert not at.exception
        assert "No run 'nope'" in at.warning[0].value
        assert "No runs yet" in at.info[0].value
    finally:
        use_workspace(ws)


def test_a_fork_shows_what_it_changed_and_its_own_figures_apart_from_the_parents(ws, run_id):
    from service.runs import fork_view
    parent = ws.store.get_run(run_id)
    end = ws.fork(run_id, 1, {"question": "Who designed the Corren Lighthouse?"})
    child = ws.store.get_run(end.run_id)
    own_steps = ws.store.steps(child.id)
    view = fork_view(ws, child, own_steps)
    assert view is not None and view.from_step == 1
    assert view.memory_changes == [("question", LIGHTHOUSE, "Who designed the Corren Lighthouse?")]
    assert view.own.steps == len(own_steps) == 1
    assert view.own.llm_calls == sum(len(s.llm_calls) for s in own_steps) == 1
    parent_steps = ws.store.steps(parent.id)
    assert view.parent.tokens == parent_steps[0].tokens          # the parent's step 0, apart
    assert view.own.tokens + view.parent.tokens == child.record.cost.tokens  # and they add up to the budget

    at = _open(child.id, step="0")
    metrics = {m.label: m.value for m in at.metric}
    assert (metrics["Steps"], metrics["LLM calls"], metrics["Tokens"]) == \
           ("1", "1", str(view.own.tokens))
    text = kit.texts(at)
    assert f"Forked from run `{run_id}` step 1" in text
    assert "Changed `question`: " in text and "Who designed the Corren Lighthouse?" in text
    assert f"the parent ran 1 step(s), 0 LLM call(s), {view.parent.tokens} tokens" in text
    assert _shown_step(at).startswith("### Step 1 of 1")                  # from step 1: step 1
    assert "This fork's own steps are 1–1; steps 0–0 are the parent's" in text


def test_a_fork_numbers_its_steps_one_way(ws):
    """Header, slider and caption count a fork's steps alike (issue 38 item 3: the slider said
    0-6, the header 'Step 2 of 8' and the caption '1/7 of the fork's own steps')."""
    ircot = ws.run(templates.load_template("ircot"), RunRequest(LIGHTHOUSE, kb="sample")).run_id
    forked = ws.fork(ircot, 2, {"question": "Who designed the Corren Lighthouse?"})
    n = len(ws.store.steps(forked.run_id))
    assert n > 1, "the fork must have more than one step of its own"
    at = _open(forked.run_id, step="0")
    slider = at.select_slider(key="replay_step")
    assert slider.value == 0                                # the address counts the stored steps
    assert list(slider.options) == [str(2 + i) for i in range(n)]    # labelled as the header
    assert _shown_step(at).startswith(f"### Step 2 of {1 + n}")
    text = kit.texts(at)
    assert f"This fork's own steps are 2–{1 + n}; steps 0–1 are the parent's" in text
    assert f"/{n} of the" not in text
    at.button(key="replay_last").click().run()
    assert _shown_step(at).startswith(f"### Step {1 + n} of {1 + n}")
    assert at.query_params["step"] == str(n - 1)


def test_a_fork_with_changed_params_says_so(ws, run_id):
    end = ws.fork(run_id, 0, None, {"top_k": 1})
    at = _open(end.run_id, step="0")
    assert "Changed param `retrieve.top_k`: `" in kit.texts(at)
    assert "Nothing was changed" not in kit.texts(at)


def _in_order(node) -> list[str]:
    """The page's texts and labels in the order they are drawn."""
    out: list[str] = []
    for child in getattr(node, "children", {}).values():
        label, value = getattr(child, "label", None), getattr(child, "value", None)
        if isinstance(label, str):
            out.append(label)
        elif isinstance(value, str):
            out.append(value)
        out.extend(_in_order(child))
    return out


def test_a_fork_answers_under_its_button(ws, run_id):
    """Issue 38 item 2: the fork's outcome ('finished: run ..., Answer: ...', 'Open the forked
    run') was drawn at the top of the page, far above the button at its bottom."""
    at = _open(run_id, step="1", tab=replay_panel.FORK)
    at.button(key="replay_fork_go").click().run()
    assert "fork" in at.query_params
    at = kit.until(at, lambda a: any(s.value.startswith("Fork from step 1 finished")
                                     for s in a.success))
    drawn = _in_order(at.main)
    said = next(i for i, t in enumerate(drawn) if t.startswith("Fork from step 1 finished"))
    assert drawn.index("Fork and run ▶") < said < drawn.index("Open the forked run"), drawn
    # with the Fork tab shut, the outcome is at the top, above the steps
    at.query_params["tab"] = replay_panel.MEMORY       # what a click on the tab does here
    at = _open_tab(at, replay_panel.MEMORY)
    drawn = _in_order(at.main)
    said = next(i for i, t in enumerate(drawn) if t.startswith("Fork from step 1 finished"))
    assert said < next(i for i, t in enumerate(drawn) if t.startswith("### Step")), drawn
