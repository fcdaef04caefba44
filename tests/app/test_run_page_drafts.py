"""Run page (AppTest), issue 38 item 3: what the model writes on the way is shown as a draft
('Draft (round k)', earlier rounds kept readable), the stored answer alone as the Answer; and
'Tokens so far' and 'Seconds' count along while the model writes."""
from __future__ import annotations

import dataclasses
import sys
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from flowkit.testing import FakeLLM
from studio.common.jobs import get_jobs
from studio.common.workspace import use_workspace
from studio.run import answer_panel
from studio.run.stream import Streamed

sys.path.insert(0, str(Path(__file__).resolve().parent))   # _runkit beside this file
import _runkit as kit

LIGHTHOUSE = "In what year was the Corren Lighthouse first lit?"


class RoundsLLM(FakeLLM):
    """Streams call n as 'roundN ' at once, then 'text N' once the test releases that call."""

    def __init__(self) -> None:
        super().__init__([], default="")
        self.calls = 0
        self.release = threading.Semaphore(0)

    def complete(self, prompt: str, *, on_token: Any = None, **kwargs: Any) -> Any:
        with self._lock:
            self.calls += 1
            n = self.calls
        out = super().complete(prompt, **kwargs)
        first, rest = f"round{n} ", f"text {n}"
        if on_token is not None:
            on_token(first)
        assert self.release.acquire(timeout=30)
        if on_token is not None:
            on_token(rest)
        return dataclasses.replace(out, text=first + rest, completion_tokens=2)


@pytest.fixture()
def rounds(tmp_path):
    ws = kit.workspace(tmp_path)
    llm = RoundsLLM()
    ws.resources.set_llm(llm)
    ws.set_cache(False)
    use_workspace(ws)
    yield ws, llm
    for _ in range(10):
        llm.release.release()
    get_jobs().wait_idle(60)
    use_workspace(None)


def _subheaders(at) -> list[str]:
    return [h.value for h in at.subheader]


def _metric(at, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def test_iter_retgen_drafts_are_drafts_and_the_answer_comes_at_the_end(rounds):
    ws, llm = rounds
    at = kit.page("pages/run.py", flow="iter_retgen").run()
    at.text_area(key="run_question").input(LIGHTHOUSE).run()
    at.button(key="run_go").click().run()
    assert not at.exception and "run" in at.query_params, kit.texts(at)

    at = kit.until(at, lambda a: any(m.value.strip() == "round1" for m in a.markdown))
    assert "Draft (round 1)" in _subheaders(at) and "Answer" not in _subheaders(at)
    assert _metric(at, "Tokens so far") == "1"        # the piece written so far counts
    llm.release.release()                             # round 1 ends; round 2 writes
    at = kit.until(at, lambda a: any(m.value.strip() == "round2" for m in a.markdown))
    assert "Draft (round 2)" in _subheaders(at) and "Answer" not in _subheaders(at)
    assert "Earlier drafts (1)" in [e.label for e in at.expander]
    assert any(t.value == "round1 text 1" for t in at.text)     # round 1 is kept, not wiped
    for _ in range(3):
        llm.release.release()
    run_id = at.query_params["run"]
    at = kit.until(at, lambda a: f"/replay?run={run_id}" in kit.texts(a))
    n = llm.calls                                     # iter_retgen: drafts, then the final
    assert n >= 3 and ws.store.get_run(run_id).record.answer == f"round{n} text {n}"
    assert "Answer" in _subheaders(at) and not [h for h in _subheaders(at) if "Draft" in h]
    assert f"Drafts written on the way ({n})" in [e.label for e in at.expander]
    assert at.text[0].value == f"round{n} text {n}"          # the answer box: the final one


class _Slot:
    def __init__(self) -> None:
        self.shown: list[tuple[str, Any]] = []

    def metric(self, label: str, value: Any) -> None:
        self.shown.append((label, value))


def test_tokens_and_seconds_count_along_while_the_model_writes():
    """The stream calls its tick on every look, words or none; the figures redraw as the
    unfinished call's pieces and the seconds grow (they stood still during a 30 s stream)."""
    from studio.run.stream import buffers

    add = buffers().on_token("figures-run")
    clock = iter(range(100))
    tokens, seconds = _Slot(), _Slot()
    figures = answer_panel.LiveFigures(tokens, seconds, 40, [], lambda: float(next(clock)))
    looks: list[Streamed | None] = []

    def tick(now: Streamed | None) -> None:
        looks.append(now)
        figures.draw(now)
        if len(looks) in (2, 4):
            add("generate", 1, "word ")
    out = list(answer_panel._pieces("figures-run", lambda: len(looks) < 8, _Said(),
                                    interrupted=lambda: False, tick=tick))
    assert out == ["word ", "word "] and len(looks) == 8
    assert [v for _, v in tokens.shown][:1] == [40] and tokens.shown[-1] == ("Tokens so far", 42)
    assert [v for _, v in seconds.shown] == list(range(8))      # every look, a new second
    # a finished step's call is not counted twice (its tokens are in the base already)
    done = answer_panel.LiveFigures(_Slot(), _Slot(), 40, [_step("generate", 1)], lambda: None)
    assert done.tokens(buffers().get("figures-run")) == 40


class _Said:
    def caption(self, text: str) -> None:
        pass


def _step(node: str, visit: int) -> Any:
    return SimpleNamespace(node_id=node, visit=visit)      # what LiveFigures reads of a step
