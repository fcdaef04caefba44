"""Paused runs through the service and the database: the same run id and one trace, memory edits
validated, applied and recorded, paused time not counted, one continuer at a time, a restart in
between, abort, and clear refusals."""
from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from debugkit import DOCS, SHAPES, Q, llm, make_workspace

from flowkit.breakpoints import BreakpointError
from flowkit.errors import FlowkitError, NotFoundError
from flowkit.run_request import RunHooks, RunRequest
from flowkit.runtime.resources import Settings
from flowkit.testing import FakeLLM, MemoryKB, flow
from service.debug import Debugger, EditError, NotPausedError, check_value
from service.workspace import Workspace

CORREN = [{"id": "x1", "title": "Mara Velt", "text": "Mara Velt was born on Corren.", "score": 1.0}]


def test_a_paused_run_is_stored_and_continues_under_the_same_id(ws: Workspace):
    dbg = Debugger(ws)
    end = dbg.start(SHAPES["loop"], RunRequest(Q, kb="test"), ["gen@2"])
    assert end.status == "paused"
    run = ws.store.get_run(end.run_id)
    assert run.record.status == "paused" and run.ended_at is None and run.steps == 4
    view = dbg.show(end.run_id)
    assert view.pause is not None and (view.pause.node, view.pause.visit) == ("gen", 2)
    assert view.pause.memory["drafts"] == ["Tessel"]
    assert [b.label() for b in view.breakpoints] == ["gen@2"]
    nxt = dbg.next_prompt(end.run_id)
    assert nxt is not None and nxt.kind == "complete" and "Question: " + Q in nxt.prompt
    done = dbg.resume(end.run_id)
    assert done.run_id == end.run_id and done.status == "ok"
    straight = ws.run(SHAPES["loop"], RunRequest(Q, kb="test"))
    steps, steps0 = ws.store.steps(end.run_id), ws.store.steps(straight.run_id)
    assert [(s.node_id, s.visit) for s in steps] == [(s.node_id, s.visit) for s in steps0]
    assert [s.index for s in steps] == list(range(len(steps)))
    assert [c.prompt for s in steps for c in s.llm_calls] == \
        [c.prompt for s in steps0 for c in s.llm_calls]
    run = ws.store.get_run(end.run_id)
    assert (run.record.status, run.record.answer, run.steps, run.record.cost.calls, run.record.cost.tokens) == (
        "ok", ws.store.get_run(straight.run_id).record.answer, len(steps0), 4,
        ws.store.get_run(straight.run_id).record.cost.tokens)
    assert dbg.show(end.run_id).pause is None and dbg.show(end.run_id).pauses == 1
    assert (steps[4].node_id, steps[4].visit) == ("gen", 2)
    assert steps[4].llm_calls[0].prompt == nxt.prompt      # the previewed prompt is what ran


def test_an_edit_is_validated_applied_and_recorded_as_a_user_step(ws: Workspace):
    dbg = Debugger(ws)
    end = dbg.start(SHAPES["linear"], RunRequest(Q, kb="test"), ["gen"])
    before = dbg.show(end.run_id).pause
    assert before is not None and "Tessel" in str(before.memory["documents"])
    view = dbg.set_value(end.run_id, "documents", CORREN, who="ana")
    assert view.edited and view.edits[0]["who"] == "ana" and view.edits[0]["key"] == "documents"
    assert view.pause is not None and view.pause.memory["documents"] == CORREN
    assert "born on Corren" in dbg.next_prompt(end.run_id).prompt
    done = dbg.resume(end.run_id)
    assert done.status == "ok" and done.answer == "Corren"     # the answer follows the edit
    steps = ws.store.steps(end.run_id)
    assert [(s.node_id, s.operator) for s in steps] == [
        ("ret", "retrieval.bm25"), ("_edit", "user.edit"), ("gen", "generation.answer")]
    edit = steps[1]
    assert edit.memory_before["documents"] == before.memory["documents"]
    assert edit.memory_after["documents"] == CORREN
    assert steps[2].memory_before["documents"] == CORREN
    assert Debugger(ws).show(end.run_id).edited


@pytest.mark.parametrize("key,value,fragment", [
    ("documents", "abc", "documents must be a list, got text"),
    ("documents", [{"id": "x"}], "documents[0] has no text"),
    ("documents", [{"id": "x", "text": "t", "score": "high"}], "documents[0].score must be a number"),
    ("documents", [{"id": "x", "text": "t", "colour": 1}], "unknown field 'colour'"),
    ("drafts", ["ok", 3], "drafts[1] must be text, got a number"),
    ("answer", ["Tessel"], "answer must be text, got a list"),
    ("judgement", "yes", "judgement must be an object"),
    ("visits", {}, "not a working-memory key"),
    ("halt", "", "not a working-memory key"),
])
def test_an_edit_whose_type_does_not_fit_is_refused(key, value, fragment):
    with pytest.raises(EditError) as e:
        check_value(key, value)
    assert fragment in str(e.value)


@pytest.mark.parametrize("changes,fragment", [
    ({"documents": "abc"}, "cannot set 'documents' to abc: documents must be a list, got text"),
    ({"drafts": ["ok", 3]}, "cannot set 'drafts'"),
    ({"visits": {}}, "'visits' is not a working-memory key"),
])
def test_a_fork_whose_memory_edit_does_not_fit_is_refused(ws: Workspace, changes, fragment):
    """A fork checks its memory changes as a debugger's edit is checked (flowkit.memory_edit
    .check_value): refused with the key named, before anything runs."""
    parent = ws.run(SHAPES["linear"], RunRequest(Q, kb="test"))
    runs = len(ws.store.list_runs())
    with pytest.raises(EditError) as e:
        ws.fork(parent.run_id, 1, memory_changes=changes)
    assert fragment in str(e.value)
    assert len(ws.store.list_runs()) == runs


def test_refusals_name_the_run_and_leave_it_paused(ws: Workspace):
    dbg = Debugger(ws)
    end = dbg.start(SHAPES["linear"], RunRequest(Q, kb="test"), ["gen"])
    with pytest.raises(EditError):
        dbg.set_value(end.run_id, "answer", 42)
    with pytest.raises(EditError, match="empty"):
        dbg.set_value(end.run_id, "question", "  ")
    with pytest.raises(BreakpointError, match="no node 'nope'"):
        dbg.set_breakpoints(end.run_id, ["nope"])
    with pytest.raises(FlowkitError, match="mode is one of"):
        dbg.resume(end.run_id, "run")          # type: ignore[arg-type]
    assert ws.store.get_run(end.run_id).record.status == "paused"
    assert len(ws.store.steps(end.run_id)) == 1                 # no edit step was recorded
    with pytest.raises(NotFoundError):
        dbg.resume("no-such-run")
    straight = ws.run(SHAPES["linear"], RunRequest(Q, kb="test"))
    for call in (lambda: dbg.resume(straight.run_id), lambda: dbg.abort(straight.run_id),
                 lambda: dbg.set_value(straight.run_id, "answer", "x")):
        with pytest.raises(NotPausedError, match="not paused \\(status ok\\)"):
            call()
    with pytest.raises(BreakpointError, match="inside a parallel branch"):
        dbg.start(SHAPES["fan"], RunRequest(Q, kb="test"), ["dense"])


def test_a_continue_that_cannot_start_leaves_the_run_paused(ws: Workspace):
    dbg = Debugger(ws)
    end = dbg.start(SHAPES["linear"], RunRequest(Q, kb="test"), ["gen"])
    del ws.resources._kbs["test"]
    with pytest.raises(NotFoundError, match="knowledge base 'test'"):
        dbg.resume(end.run_id)
    assert ws.store.get_run(end.run_id).record.status == "paused"
    ws.resources._kbs["test"] = MemoryKB("test", DOCS)
    assert dbg.resume(end.run_id).status == "ok"


def test_abort_ends_a_paused_run_as_cancelled(ws: Workspace):
    dbg = Debugger(ws)
    end = dbg.start(SHAPES["loop"], RunRequest(Q, kb="test"), ["judge"])
    dbg.abort(end.run_id, who="ana")
    run = ws.store.get_run(end.run_id)
    assert run.record.status == "cancelled" and "aborted while paused before 'judge' by ana" in run.record.error
    with pytest.raises(NotPausedError, match="status cancelled"):
        dbg.resume(end.run_id)


def test_two_continuers_cannot_both_continue(ws: Workspace):
    """Two tabs press Continue at once: the compare-and-set lets exactly one in."""
    end = Debugger(ws).start(SHAPES["loop"], RunRequest(Q, kb="test"), ["gen@2"])
    barrier = threading.Barrier(2)
    results: list[str] = []

    def press() -> None:
        dbg = Debugger(ws)
        barrier.wait()
        try:
            results.append(dbg.resume(end.run_id).status)
        except NotPausedError as e:
            results.append(str(e))

    threads = [threading.Thread(target=press) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count("ok") == 1, results
    other = next(r for r in results if r != "ok")
    assert "cannot continue run" in other
    steps = ws.store.steps(end.run_id)
    assert [s.index for s in steps] == list(range(len(steps))) and len(steps) == 10


def test_a_continue_in_flight_refuses_a_second(ws: Workspace):
    end = Debugger(ws).start(SHAPES["linear"], RunRequest(Q, kb="test"), ["gen"])
    second = Debugger(ws)
    seen: list[str] = []

    def answer(prompt: str) -> str:        # the second tab presses Continue mid-step
        with pytest.raises(NotPausedError, match="it is running") as e:
            second.resume(end.run_id)
        seen.append(str(e.value))
        with pytest.raises(NotPausedError):
            second.set_value(end.run_id, "answer", "x")
        return "Tessel [1]"

    ws.resources.set_llm(FakeLLM([(r"Question:", answer)]))
    assert Debugger(ws).resume(end.run_id).status == "ok" and len(seen) == 1


def test_a_paused_run_survives_a_restart(tmp_path: Path):
    ws = make_workspace(tmp_path)
    end = Debugger(ws).start(SHAPES["loop"], RunRequest(Q, kb="test"), ["judge@2"])
    Debugger(ws).set_value(end.run_id, "drafts", ["Corren"])
    ws.close()
    again = make_workspace(tmp_path)            # a new process on the same data dir
    assert again.store.get_run(end.run_id).record.status == "paused"    # not marked interrupted
    dbg = Debugger(again)
    view = dbg.show(end.run_id)
    assert view.pause is not None and (view.pause.node, view.pause.visit) == ("judge", 2)
    assert view.pause.memory["drafts"] == ["Corren"] and view.edited
    done = dbg.resume(end.run_id)
    assert done.status == "ok"
    nodes = [(s.node_id, s.visit) for s in again.store.steps(end.run_id)]
    assert nodes == [("ret", 1), ("gen", 1), ("judge", 1), ("ret", 2), ("gen", 2), ("_edit", 1),
                     ("judge", 2), ("ret", 3), ("gen", 3), ("judge", 3), ("final", 1)]


def test_time_spent_paused_does_not_count_against_the_timeout(tmp_path: Path, monkeypatch):
    spec = SHAPES["loop"].model_copy(update={"limits": SHAPES["loop"].limits.model_copy(
        update={"timeout_s": 60.0})})
    real = time.perf_counter

    def an_hour_later() -> float:
        return real() + 3600.0

    # control: the clock jumping an hour while the run runs stops it at the next step
    def jump(prompt: str) -> str:
        monkeypatch.setattr(time, "perf_counter", an_hour_later)
        return "Tessel [1]"

    ws = make_workspace(tmp_path / "a", FakeLLM([(r"Question:", jump)]))
    assert ws.run(spec, RunRequest(Q, kb="test")).status == "budget_exceeded"
    monkeypatch.setattr(time, "perf_counter", real)

    ws = make_workspace(tmp_path / "b")
    dbg = Debugger(ws)
    end = dbg.start(spec, RunRequest(Q, kb="test"), ["judge@1"])
    pause = dbg.show(end.run_id).pause
    assert pause is not None and 0 < pause.elapsed_s < 60
    monkeypatch.setattr(time, "perf_counter", an_hour_later)   # an hour passes while paused
    done = dbg.resume(end.run_id)
    assert done.status == "ok" and done.halt_reason is None
    assert done.wall_ms is not None and done.wall_ms < 60_000   # the run's clock went on


def test_breakpoints_can_change_while_paused(ws: Workspace):
    dbg = Debugger(ws)
    end = dbg.start(SHAPES["loop"], RunRequest(Q, kb="test"), ["gen@1"])
    dbg.set_breakpoints(end.run_id, ["final"])
    nxt = dbg.resume(end.run_id)
    assert nxt.status == "paused" and dbg.show(end.run_id).pause.node == "final"
    assert [b.label() for b in dbg.show(end.run_id).breakpoints] == ["final"]
    assert dbg.resume(end.run_id, breakpoints=[]).status == "ok"


def test_step_and_over_through_the_service(ws: Workspace):
    dbg = Debugger(ws)
    end = dbg.start(SHAPES["loop"], RunRequest(Q, kb="test"), ["ret"])
    assert dbg.resume(end.run_id, "step").status == "paused"
    assert dbg.show(end.run_id).pause.node == "gen"
    dbg.set_breakpoints(end.run_id, [])
    assert dbg.resume(end.run_id, "over").status == "paused"
    view = dbg.show(end.run_id)
    assert (view.pause.node, view.pause.reason) == ("final", "step over loop")
    assert dbg.resume(end.run_id, "step").status == "ok"


def test_compare_and_set_on_postgresql(tmp_path: Path, pg_url: str):
    ws = Workspace(tmp_path, Settings(database_url=pg_url))
    ws.resources.set_llm(llm())
    ws.resources._kbs["test"] = MemoryKB("test", DOCS)
    dbg = Debugger(ws)
    end = dbg.start(flow("pg", [("ret", "retrieval.bm25", {"top_k": 2}),
                                ("gen", "generation.answer")], ["ret>gen"]),
                    RunRequest(Q, kb="test"), ["gen"])
    dbg.repo.claim(end.run_id)                      # one continuer holds it
    with pytest.raises(NotPausedError, match="it is running"):
        Debugger(ws).resume(end.run_id)
    dbg.repo.unclaim(end.run_id)
    dbg.set_value(end.run_id, "documents", CORREN)
    assert Debugger(ws).resume(end.run_id).answer == "Corren"


def test_a_continue_whose_process_dies_leaves_the_run_paused_where_it_was(tmp_path: Path):
    """The process continuing a paused run dies after writing a step: the next process finds the
    run back at its pause (that step dropped, its tokens and calls taken back) and continuing it
    gives the same run as one straight through."""
    from sqlalchemy import update

    from flowkit.trace import StepEvent
    from storage.models import RunRow, utcnow
    ws = make_workspace(tmp_path)
    end = Debugger(ws).start(SHAPES["loop"], RunRequest(Q, kb="test"), ["gen@2"])
    paused = ws.store.get_run(end.run_id)

    class Dies:
        """A sink after the store's: the process 'dies' once the store has the continue's step."""
        def start(self, run: object) -> None: ...
        def step(self, event: StepEvent) -> None:
            raise KeyboardInterrupt
        def end(self, result: object) -> None: ...

    with pytest.raises(KeyboardInterrupt):
        Debugger(ws).resume(end.run_id, hooks=RunHooks(sink=Dies()))  # type: ignore[arg-type]
    half = ws.store.get_run(end.run_id)
    assert half.record.status == "running" and half.steps == paused.steps + 1 and half.record.cost.calls > paused.record.cost.calls
    ws.close()                                                 # its process is gone
    with ws.store.engine.begin() as conn:
        conn.execute(update(RunRow).where(RunRow.id == end.run_id).values(
            owner=None, pid=0, host="elsewhere", lease_until=utcnow()))
    again = make_workspace(tmp_path)                           # the next process marks it
    back = again.store.get_run(end.run_id)
    assert (back.record.status, back.steps, back.record.cost.calls, back.record.cost.tokens) == \
        ("paused", paused.steps, paused.record.cost.calls, paused.record.cost.tokens)
    assert len(again.store.steps(end.run_id)) == paused.steps
    done = Debugger(again).resume(end.run_id)
    straight = again.run(SHAPES["loop"], RunRequest(Q, kb="test"))
    assert done.status == "ok" and done.answer == straight.answer
    steps, steps0 = again.store.steps(end.run_id), again.store.steps(straight.run_id)
    assert [(s.node_id, s.visit) for s in steps] == [(s.node_id, s.visit) for s in steps0]
    assert [s.index for s in steps] == list(range(len(steps)))
    run = again.store.get_run(end.run_id)
    assert (run.record.cost.calls, run.record.cost.tokens) == (again.store.get_run(straight.run_id).record.cost.calls,
                                                 again.store.get_run(straight.run_id).record.cost.tokens)
