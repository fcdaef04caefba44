"""The mechanism under a paused run (issue 24, item 4): LangGraph's interrupt and checkpointer.

A paused run's state is the checkpoint LangGraph's SqliteSaver holds for the run's thread (in the
workspace's database file), with the pause as its pending interrupt; the trace store keeps only
what LangGraph does not. Without that checkpoint a continue fails with a clear error. A run that
ends drops its thread, and a run without breakpoints is compiled without a checkpointer and writes
no checkpoint at all."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from debugkit import SHAPES, Q, compiled, make_workspace

from flowkit.debug import CheckpointMissing, read_pause
from flowkit.run_request import RunHooks, RunRequest
from service.debug import Debugger, NotPausedError
from service.workspace import Workspace
from storage.checkpoints import open_checkpointer
from storage.debug import DebugRepo

CORREN = [{"id": "x1", "title": "Mara Velt", "text": "Mara Velt was born on Corren.", "score": 1.0}]


def _rows(ws: Workspace, run_id: str) -> tuple[int, list[str]]:
    """The checkpoints LangGraph's SqliteSaver holds for thread `run_id` in the workspace's
    database file, and the channels of its pending writes."""
    with sqlite3.connect(ws.data_dir / "flowkit.db") as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "checkpoints" not in tables:
            return 0, []
        n = conn.execute("SELECT COUNT(*) FROM checkpoints WHERE thread_id = ?",
                         (run_id,)).fetchone()[0]
        chans = [r[0] for r in conn.execute("SELECT channel FROM writes WHERE thread_id = ?",
                                            (run_id,))]
    return int(n), chans


def test_a_paused_run_is_a_langgraph_checkpoint_with_a_pending_interrupt(ws: Workspace):
    dbg = Debugger(ws)
    end = dbg.start(SHAPES["loop"], RunRequest(Q, kb="test"), ["gen@2"])
    assert end.status == "paused"
    n, chans = _rows(ws, end.run_id)
    assert n == 1 and "__interrupt__" in chans          # durability "exit": one checkpoint
    with open_checkpointer(ws.store.url) as cp:
        held = read_pause(compiled("loop"), cp, end.run_id)
    view = dbg.show(end.run_id)
    assert held is not None and view.pause is not None
    assert (held.node, held.visit, held.state) == ("gen", 2, view.pause.state)
    assert held.state["visits"] == {"ret": 2, "gen": 1, "judge": 1}
    # the trace store keeps no memory of the pause: only its step count and unsent edits
    assert DebugRepo(ws.store).get(end.run_id).pause == {"steps_done": 4, "edits": []}
    assert dbg.resume(end.run_id).status == "ok"
    assert _rows(ws, end.run_id) == (0, [])              # an ended run drops its thread


def test_an_edit_is_sent_to_langgraph_as_the_continues_update(ws: Workspace):
    dbg = Debugger(ws)
    end = dbg.start(SHAPES["linear"], RunRequest(Q, kb="test"), ["gen"])
    view = dbg.set_value(end.run_id, "documents", CORREN, who="ana")
    assert view.pause is not None and view.pause.memory["documents"] == CORREN
    with open_checkpointer(ws.store.url) as cp:
        held = read_pause(compiled("linear"), cp, end.run_id)
    assert held is not None and held.memory["documents"] != CORREN   # not sent yet
    assert DebugRepo(ws.store).get(end.run_id).pause == {"steps_done": 2,
                                                         "edits": [["documents", CORREN]]}
    assert dbg.resume(end.run_id).answer == "Corren"


def test_without_its_checkpoint_a_paused_run_cannot_be_continued(ws: Workspace):
    dbg = Debugger(ws)
    end = dbg.start(SHAPES["linear"], RunRequest(Q, kb="test"), ["gen"])
    with open_checkpointer(ws.store.url) as cp:
        cp.delete_thread(end.run_id)
    assert _rows(ws, end.run_id) == (0, [])
    with pytest.raises(CheckpointMissing, match="checkpointer holds no pause for it"):
        Debugger(ws).resume(end.run_id)
    with pytest.raises(CheckpointMissing, match="checkpointer holds no pause"):
        dbg.next_prompt(end.run_id)
    assert ws.store.get_run(end.run_id).record.status == "paused"   # given back, not half-continued
    dbg.abort(end.run_id)
    assert ws.store.get_run(end.run_id).record.status == "cancelled"
    with pytest.raises(NotPausedError):
        dbg.resume(end.run_id)


def test_runs_without_breakpoints_write_no_checkpoint(ws: Workspace):
    assert compiled("loop").graph.checkpointer is None
    plain = ws.run(SHAPES["loop"], RunRequest(Q, kb="test"))
    assert plain.status == "ok" and _rows(ws, plain.run_id) == (0, [])
    never = Debugger(ws).start(SHAPES["loop"], RunRequest(Q, kb="test"), ["gen@9"])   # debuggable, no pause
    assert never.status == "ok" and _rows(ws, never.run_id) == (0, [])


def test_a_continue_that_dies_leaves_langgraphs_checkpoint_at_its_pause(ws: Workspace,
                                                                         tmp_path: Path):
    """LangGraph's "exit" durability also saves a graph stopped by an exception: a continue that
    dies in process (here after its first step, with a memory edit sent) puts the thread back to
    the pause, so the next process sends the edit once more and gets the edited answer."""
    from sqlalchemy import update

    from flowkit.trace import StepEvent
    from storage.models import RunRow, utcnow

    class Dies:
        def start(self, run: object) -> None: ...
        def step(self, event: StepEvent) -> None:
            raise KeyboardInterrupt
        def end(self, result: object) -> None: ...

    dbg = Debugger(ws)
    end = dbg.start(SHAPES["linear"], RunRequest(Q, kb="test"), ["gen"])
    with open_checkpointer(ws.store.url) as cp:
        before = read_pause(compiled("linear"), cp, end.run_id)
    dbg.set_value(end.run_id, "documents", CORREN)
    with pytest.raises(KeyboardInterrupt):
        dbg.resume(end.run_id, hooks=RunHooks(sink=Dies()))  # type: ignore[arg-type]
    with open_checkpointer(ws.store.url) as cp:
        after = read_pause(compiled("linear"), cp, end.run_id)
    assert before is not None and after is not None and after.to_dict() == before.to_dict()
    assert _rows(ws, end.run_id)[0] == 1
    with ws.store.engine.begin() as conn:                      # its process is gone
        conn.execute(update(RunRow).where(RunRow.id == end.run_id).values(
            owner=None, pid=0, host="elsewhere", lease_until=utcnow()))
    again = make_workspace(tmp_path)
    assert again.store.get_run(end.run_id).record.status == "paused"
    done = Debugger(again).resume(end.run_id)
    assert (done.status, done.answer) == ("ok", "Corren")
