"""Run page (AppTest): debugging a run. Breakpoints are checked as they are typed; a run with a
breakpoint pauses, and the page shows where, the working memory and the next prompt; Continue,
Step and Abort go on from there; an edit of one memory key is checked and kept; a refresh finds the
paused run again; a second tab cannot continue what the first one is continuing."""
from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import pytest

from studio.common.jobs import get_jobs
from studio.common.workspace import use_workspace

sys.path.insert(0, str(Path(__file__).resolve().parent))   # _runkit beside this file
import _runkit as kit

LIGHTHOUSE = "In what year was the Corren Lighthouse first lit?"


@pytest.fixture()
def ws(tmp_path):
    w = kit.workspace(tmp_path)
    use_workspace(w)
    yield w
    get_jobs().wait_idle(60)
    use_workspace(None)


def _debug(breakpoints: str, question: str = LIGHTHOUSE):
    at = kit.page("pages/run.py", flow="naive_rag").run()
    at.text_area(key="run_question").input(question).run()
    at.text_area(key="run_breakpoints").input(breakpoints).run()
    assert not at.error, [e.value for e in at.error]
    at.button(key="run_go").click().run()
    assert not at.exception and "run" in at.query_params, kit.texts(at)
    return kit.until(at, lambda a: "Paused " in kit.texts(a))


def _blocker():
    release = threading.Event()
    get_jobs().submit("test", "blocker", lambda report: release.wait(30) and None)
    return release


def test_bad_breakpoints_are_shown_and_run_is_refused(ws):
    at = kit.page("pages/run.py", flow="naive_rag").run()
    at.text_area(key="run_question").input(LIGHTHOUSE).run()
    at.text_area(key="run_breakpoints").input("nosuch\ngenerate?len(documents) <").run()
    errors = [e.value for e in at.error]
    assert any(e.startswith("line 1:") and "no node" in e for e in errors), errors
    assert any(e.startswith("line 2:") for e in errors), errors
    assert at.button(key="run_go").disabled
    at.text_area(key="run_breakpoints").input("generate").run()
    assert not at.error and not at.button(key="run_go").disabled
    assert at.button(key="run_go").label == "Run with 1 breakpoint(s) ▶"


def test_pause_shows_memory_and_next_prompt_then_continue_gives_the_answer(ws):
    at = _debug("generate")
    run_id = at.query_params["run"]
    text = kit.texts(at)
    assert "Paused before `generate` (visit 1)" in text and ":violet-badge[paused]" in text
    assert "documents added" in text                          # the memory view: retrieve's writes
    code = " ".join(c.value for c in at.code)
    assert "Corren Lighthouse" in code                        # the next prompt, exact
    assert ws.store.get_run(run_id).record.status == "paused"
    assert "Steps** (1)" in text

    again = kit.page("pages/run.py", run=run_id).run()      # a refresh finds the pause
    assert "Paused before `generate`" in kit.texts(again)

    at.button(key="debug_continue").click().run()
    at = kit.until(at, lambda a: f"/replay?run={run_id}" in kit.texts(a)
                   and "Paused" not in kit.texts(a))
    run = ws.store.get_run(run_id)
    assert run.record.status == "ok" and "1884" in run.record.answer
    assert any("1884" in t.value for t in at.text)


def test_step_pauses_at_the_next_node_and_abort_ends_the_run(ws):
    at = _debug("retrieve")
    run_id = at.query_params["run"]
    at.button(key="debug_step").click().run()
    at = kit.until(at, lambda a: "before `generate` (visit 1) · step" in kit.texts(a))
    at.button(key="debug_abort").click().run()
    at = kit.until(at, lambda a: ":gray-badge[cancelled]" in kit.texts(a))
    assert ws.store.get_run(run_id).record.status == "cancelled"


def test_an_edit_is_checked_then_kept_and_followed(ws):
    at = _debug("generate")
    run_id = at.query_params["run"]
    at.selectbox(key="debug_edit_key").select("question").run()
    box = at.text_area(key=f"debug_edit_val_{run_id}_1_question")
    assert json.loads(box.value) == LIGHTHOUSE
    box.input("42").run()                                   # a number where text is expected
    at.button(key=f"debug_set_{run_id}_1_question").click().run()
    assert any("cannot set 'question'" in e.value for e in at.error), kit.texts(at)
    box = at.text_area(key=f"debug_edit_val_{run_id}_1_question")
    box.input(json.dumps("Who designed the Corren Lighthouse?")).run()
    at.button(key=f"debug_set_{run_id}_1_question").click().run()
    assert "Set question: the run goes on with it." in kit.texts(at)
    assert "Edited: `question`" in kit.texts(at)
    assert "Who designed" in " ".join(c.value for c in at.code)   # the next prompt follows
    assert ws.store.get_run(run_id).record.status == "paused"


def test_a_second_tab_cannot_continue_what_the_first_is_continuing(ws):
    from service.debug import NotPausedError
    from studio.run import debugging
    first = _debug("generate")
    run_id = first.query_params["run"]
    second = kit.page("pages/run.py", run=run_id).run()
    assert not second.button(key="debug_continue").disabled
    release = _blocker()                        # holds the worker: the first continue waits
    try:
        first.button(key="debug_continue").click().run()
        second.run()                            # the second tab's next poll
        assert "Continue: queued..." in kit.texts(second)
        assert all(second.button(key=f"debug_{m}").disabled
                   for m in ("continue", "step", "over", "abort"))
        with pytest.raises(NotPausedError, match="already being continued"):
            debugging.submit_resume(get_jobs(), ws, run_id, "step", seen_pauses=1)
    finally:
        release.set()
    kit.until(first, lambda a: "Paused" not in kit.texts(a) and "/replay?run=" in kit.texts(a))
    assert ws.store.get_run(run_id).record.status == "ok"
    with pytest.raises(NotPausedError, match="not paused"):       # the service refuses too
        debugging.submit_resume(get_jobs(), ws, run_id, "continue", seen_pauses=1)


def test_a_stale_tab_is_refused_once_the_run_paused_again(ws):
    from service.debug import NotPausedError
    from studio.run import debugging
    at = _debug("retrieve\ngenerate")
    run_id = at.query_params["run"]
    at.button(key="debug_continue").click().run()
    kit.until(at, lambda a: "Paused before `generate`" in kit.texts(a))
    with pytest.raises(NotPausedError, match="continued elsewhere"):
        debugging.submit_resume(get_jobs(), ws, run_id, "continue", seen_pauses=1)


def test_model_overrides_apply_to_a_debugged_run_and_its_continue(ws):
    at = kit.page("pages/run.py", flow="naive_rag").run()
    at.text_area(key="run_question").input(LIGHTHOUSE)
    at.number_input(key="run_temperature").set_value(0.7)
    at.number_input(key="run_param_naive_rag_retrieve_top_k").set_value(2)
    at.text_area(key="run_breakpoints").input("generate")
    at.run()
    at.button(key="run_go").click().run()
    at = kit.until(at, lambda a: "Paused before `generate`" in kit.texts(a))
    run_id = at.query_params["run"]
    run = ws.store.get_run(run_id)
    assert run.settings["llm"]["temperature"] == 0.7
    assert next(n for n in run.spec["nodes"] if n["id"] == "retrieve")["params"]["top_k"] == 2
    calls: list[float | None] = []
    llm = ws.resources.llm
    real = llm.complete

    def spy(prompt, **kw):
        calls.append(kw.get("temperature"))
        return real(prompt, **kw)

    llm.complete = spy                       # the continue's model call sees the run's temperature
    try:
        at.button(key="debug_continue").click().run()
        kit.until(at, lambda a: "Paused" not in kit.texts(a) and "/replay?run=" in kit.texts(a))
    finally:
        llm.complete = real
    assert ws.store.get_run(run_id).record.status == "ok"
    assert calls and all(t == 0.7 for t in calls), calls
    assert ws.resources.settings.llm.temperature == 0.0     # the shared settings are untouched


def test_a_finished_run_shows_the_edited_question_and_marks_the_edit(ws):
    """Issue 48 item 9: after the question is edited at a breakpoint, the finished run (Run page
    and replay) heads with the question the answer was computed from, and says which key was
    edited, its old and new value and where (the stale question alone was shown)."""
    at = _debug("generate", question="Who designed the viaduct?")
    run_id = at.query_params["run"]
    at.selectbox(key="debug_edit_key").select("question").run()
    at.text_area(key=f"debug_edit_val_{run_id}_1_question").input(json.dumps(LIGHTHOUSE)).run()
    at.button(key=f"debug_set_{run_id}_1_question").click().run()
    at.button(key="debug_continue").click().run()
    at = kit.until(at, lambda a: f"/replay?run={run_id}" in kit.texts(a)
                   and "Paused" not in kit.texts(a))
    assert "1884" in ws.store.get_run(run_id).record.answer
    for page in (at, kit.page("pages/replay.py", run=run_id).run()):
        text = kit.texts(page)
        quoted = [m.value for m in page.markdown if m.value.startswith(">")]
        assert quoted and "Corren Lighthouse" in quoted[0], quoted     # what was answered
        assert "edited at a breakpoint" in text, text
        assert ('`question` at step 1, before `generate`: `"Who designed the viaduct?"` → '
                '`"In what year was the Corren Lighthouse first lit?"`') in text, text
