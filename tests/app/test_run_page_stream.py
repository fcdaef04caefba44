"""Run page (AppTest): the answer is written as the model generates it (the first words on the
page before the run ends), a message says the model is loading while it is not up, the steps
table stays when the run ends, and a dataset question's answer is marked right or wrong."""
from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from flowkit import templates
from flowkit.testing import FakeLLM
from service.runs import grade_answer, model_loaded
from studio.common.jobs import get_jobs
from studio.common.workspace import use_workspace
from studio.run.answer_panel import LOADING
from studio.run.stream import TokenBuffers

sys.path.insert(0, str(Path(__file__).resolve().parent))   # _runkit beside this file
import _runkit as kit

from flowkit.run_request import RunHooks, RunRequest

LIGHTHOUSE = "In what year was the Corren Lighthouse first lit?"


class GatedStreamingLLM(FakeLLM):
    """The scripted model, streaming: not `loaded` until `load` is set; then its first word goes
    out at once and the rest only once `finish` is set (so a test sees the run mid-answer)."""

    def __init__(self) -> None:
        super().__init__([(r"Corren Lighthouse", "It was first lit in 1884 [1]")],
                         default="unknown [1]")
        self.loaded = False
        self.load, self.finish = threading.Event(), threading.Event()

    def complete(self, prompt: str, *, on_token: Any = None, **kwargs: Any) -> Any:
        out = super().complete(prompt, **kwargs)
        assert self.load.wait(30)
        self.loaded = True
        first, _, rest = out.text.partition(" ")
        if on_token is not None:
            on_token(first + " ")
        assert self.finish.wait(30)
        if on_token is not None:
            on_token(rest)
        return out


@pytest.fixture()
def gated(tmp_path):
    ws = kit.workspace(tmp_path)
    llm = GatedStreamingLLM()
    ws.resources.set_llm(llm)
    ws.set_cache(False)          # a cached completion would be handed out whole
    use_workspace(ws)
    yield ws, llm
    llm.load.set()
    llm.finish.set()
    get_jobs().wait_idle(60)
    use_workspace(None)


def _submit(question: str = LIGHTHOUSE):
    at = kit.page("pages/run.py", flow="naive_rag").run()
    at.text_area(key="run_question").input(question).run()
    at.button(key="run_go").click().run()
    assert not at.exception and "run" in at.query_params, kit.texts(at)
    return at


def test_loading_message_then_first_words_before_the_end_then_steps_kept(gated):
    ws, llm = gated
    assert not model_loaded(ws)
    at = kit.until(_submit(), lambda a: LOADING in kit.texts(a))
    llm.load.set()
    at = kit.until(at, lambda a: any(m.value.strip() == "It" for m in a.markdown))
    run_id = at.query_params["run"]
    assert ws.store.get_run(run_id).record.status == "running"      # the first word, mid-run
    assert "Writing: `generate` (visit 1) ▌" in kit.texts(at)
    assert "1884" not in kit.texts(at)
    assert LOADING not in kit.texts(at)
    llm.finish.set()
    at = kit.until(at, lambda a: f"/replay?run={run_id}" in kit.texts(a))
    assert any(t.value.startswith("It was first lit in 1884") for t in at.text), [t.value for t in at.text]
    assert "Steps** (2)" in kit.texts(at)
    table = at.dataframe[0].value
    assert list(table["node"]) == ["retrieve", "generate"]


def test_a_streamed_run_is_traced_like_a_straight_one(tmp_path):
    ws = kit.workspace(tmp_path)
    ws.set_cache(False)
    spec = templates.load_template("naive_rag")
    pieces = TokenBuffers()
    streamed = ws.run(spec, RunRequest(LIGHTHOUSE, kb="sample", run_id="streamed"),
                      RunHooks(on_token=pieces.on_token("streamed")))
    straight = ws.run(spec, RunRequest(LIGHTHOUSE, kb="sample", run_id="straight"))
    assert streamed.answer == straight.answer
    assert pieces.get("streamed").text == "It was first lit in 1884 [1]"
    a, b = ws.store.steps("streamed"), ws.store.steps("straight")
    assert [(s.node_id, s.memory_after, [c.completion for c in s.llm_calls]) for s in a] == \
           [(s.node_id, s.memory_after, [c.completion for c in s.llm_calls]) for s in b]


def test_token_buffer_keeps_the_latest_call_and_forgets_old_runs():
    buf = TokenBuffers(keep=2)
    add = buf.on_token("r1")
    add("rewrite", 1, "query ")
    add("rewrite", 1, "text")
    assert buf.get("r1").text == "query text"
    add("generate", 1, "Answer")
    got = buf.get("r1")
    assert (got.node_id, got.text, got.calls, got.pieces) == ("generate", "Answer", 2, 3)
    buf.on_token("r2")("n", 1, "x")
    buf.on_token("r3")("n", 1, "y")
    assert buf.get("r1") is None and buf.get("r3").text == "y"


def test_grade_marks_right_and_wrong():
    right = grade_answer("It was first lit in 1884 [1]", ["1884"])
    assert right is not None and right.right and right.exact == 0.0 and 0 < right.f1 < 1
    wrong = grade_answer("unknown [1]", ["1884"])
    assert wrong is not None and not wrong.right and wrong.f1 == 0.0
    assert grade_answer("anything", []) is None


def test_a_dataset_question_is_marked_right_or_wrong(tmp_path):
    ws = kit.workspace(tmp_path)
    use_workspace(ws)
    try:
        at = kit.page("pages/run.py", flow="naive_rag").run()
        at.selectbox(key="run_dataset_q").select(0).run()          # q01: the lighthouse, 1884
        at.button(key="run_go").click().run()
        at = kit.until(at, lambda a: "/replay?run=" in kit.texts(a))
        assert [s.value for s in at.success if s.value.startswith("Right")], kit.texts(at)
        at.selectbox(key="run_dataset_q").select(1).run()          # the fake says "unknown"
        at.button(key="run_go").click().run()
        at = kit.until(at, lambda a: any(e.value.startswith("Wrong") for e in a.error))
        assert not at.success
    finally:
        get_jobs().wait_idle(60)
        use_workspace(None)


def test_figures_people_read_are_rounded():
    from studio.run.runview import rounded
    assert rounded(0.1 + 0.2) == 0.3
    assert rounded(735.75, 0) == 736 and isinstance(rounded(2.0), int)
    assert rounded(7) == 7 and rounded("a") == "a"


def test_the_streamed_text_is_escaped_and_the_stream_ends_with_the_run():
    from studio.run import answer_panel
    from studio.run.stream import buffers

    class Caption:
        said: list[str] = []

        def caption(self, text: str) -> None:
            self.said.append(text)

    add = buffers().on_token("escaped-run")
    add("generate", 1, "![x](http://h/p.png?q=SECRET) <b>")
    box = Caption()
    out = list(answer_panel._pieces("escaped-run", lambda: False, box))
    assert out == [r"!\[x\](http://h/p.png?q=SECRET) \<b\>"]
    assert box.said == ["Writing: `generate` (visit 1) ▌"]


class _Said:
    def __init__(self) -> None:
        self.said: list[str] = []

    def caption(self, text: str) -> None:
        self.said.append(text)


def test_the_stream_stays_open_until_the_first_words_while_the_prompt_is_read():
    """The model reads its prompt for longer than IDLE_S: the stream still waits and writes the
    first words (it once gave up after IDLE_S, and the page polled for them instead)."""
    from studio.run import answer_panel
    from studio.run.stream import buffers

    add = buffers().on_token("slow-prompt-run")
    done = threading.Event()

    def model() -> None:
        if not done.wait(answer_panel.IDLE_S * 2):      # still "reading the prompt"
            add("generate", 1, "Mara Velt")
            done.wait(0.3)
            done.set()
    threading.Thread(target=model, daemon=True).start()
    out = list(answer_panel._pieces("slow-prompt-run", lambda: not done.is_set(), _Said(),
                                    interrupted=lambda: False))
    done.set()
    assert out == ["Mara Velt"]


def test_a_click_waiting_ends_the_stream_before_the_first_words():
    """Cancel still works while the stream waits: Streamlit holds a click in the panel until the
    stream ends, so the stream ends as soon as one waits."""
    from studio.run import answer_panel

    asked: list[bool] = []

    def clicked() -> bool:
        asked.append(True)
        return len(asked) >= 3
    out = list(answer_panel._pieces("never-writes-run", lambda: True, _Said(),
                                    interrupted=clicked))
    assert out == [] and len(asked) == 3


def test_the_stream_ends_when_the_run_finishes_a_step():
    """The page then draws the step (the stream no longer waits on a run that moved on)."""
    from studio.common.jobs import JobManager
    from studio.run.run_panel import at_this_step

    jobs = JobManager()
    started, step, stop = threading.Event(), threading.Event(), threading.Event()

    def work(report: Any) -> None:
        started.set()
        step.wait(30)
        report.update(steps=1)
        stop.wait(30)
    jobs.submit("run", "r", work, run_id="steprun0001")
    try:
        assert started.wait(30)
        same = at_this_step(None, jobs, "steprun0001")     # type: ignore[arg-type]
        assert same()
        step.set()
        for _ in range(600):                                  # the job reports its step
            if not same():
                break
            threading.Event().wait(0.05)
        assert not same()
    finally:
        step.set()
        stop.set()
        jobs.wait_idle(30)
