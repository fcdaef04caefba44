"""Paused runs in the trace store: what LangGraph's checkpointer does not keep, the
compare-and-set that lets one continuer in, aborting, and memory edits recorded as steps of the run.

A paused run is its `runs` row with status ``paused``, its thread in LangGraph's checkpointer
(storage.checkpoints: the paused state and where it paused, see flowkit.debug) and its `run_debug`
row: the breakpoints, the pause count, the edits' record (who, when, key, step) and, while
paused, `pause` = ``{"steps_done": n, "edits": [[key, value], ...], "history": [...]}``: the
trace's step count at the pause (a continue whose process died goes back there), the edits made
during this pause, which the next continue sends to LangGraph as its update, and every pause of the
run so far, this one last (flowkit.telemetry.events.PauseMark's stored form: node, visit, why,
when it paused and when and how the run went on from it; kept after the run ends, so a run sent
to a collector later carries its pauses: service.telemetry). Everything is in the database, so a
paused run survives a restart of the process that paused it. Status changes are compare-and-set
updates (``WHERE status = 'paused'``), so of two continuers exactly one gets the run.
"""
from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from sqlalchemy import CursorResult, select, update
from sqlalchemy.orm import Session

from flowkit.errors import FlowkitError, NotFoundError
from flowkit.process import process_identity
from flowkit.trace import USER_EDIT, RunEnd

from .models import RunDebugRow, RunRow, StepRow, utcnow
from .prefix import by_id_or_prefix
from .repo import LEASE_S, Store, ended_values

PAUSED = "paused"
RUNNING = "running"


class NotPausedError(FlowkitError):
    """The run is not paused (it runs, another continue took it, or it ended)."""


@dataclass
class DebugState:
    """A debugged run's breakpoints, the trace side of its current pause (None unless paused:
    steps_done and the edits not yet sent) and its memory edits."""

    run_id: str
    status: str
    breakpoints: list[dict[str, Any]]
    pause: dict[str, Any] | None
    pauses: int
    edits: list[dict[str, Any]] = field(default_factory=list)
    #: every pause of the run (stored PauseMarks, the last one the current pause while paused);
    #: kept in the same JSON as `pause`, which does not show it
    history: list[dict[str, Any]] = field(default_factory=list)

    @property
    def edited(self) -> bool:
        """Whether a user changed the run's memory while it was paused."""
        return bool(self.edits)


def _current(pause: dict[str, Any]) -> dict[str, Any]:
    """The trace side of the current pause (steps_done, edits), without the run's history."""
    return {k: v for k, v in pause.items() if k != "history"}


def _close_last(row: RunDebugRow, at: float, mode: str) -> None:
    """Note in `row`'s pause history when (`at`) and how (`mode`) the run left its last pause."""
    pause = dict(row.pause or {})
    history = [dict(h) for h in pause.get("history") or []]
    if history:
        history[-1].update(resumed_at=at, mode=mode)
        row.pause = {**pause, "history": history}


def _cas(result: Any) -> int:
    return int(getattr(result, "rowcount", 0) or 0) if isinstance(result, CursorResult) else 0


class DebugRepo:
    """Repository of paused runs over a Store's database."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def _not_paused(self, s: Session, run_id: str, doing: str) -> NotPausedError:
        status = s.scalar(select(RunRow.status).where(RunRow.id == run_id))
        if status is None:
            return NotPausedError(f"no run '{run_id}'")
        if status == RUNNING:
            return NotPausedError(f"cannot {doing} run '{run_id}': it is running (another continue "
                                  "has it, or it was never paused)")
        return NotPausedError(f"cannot {doing} run '{run_id}': it is not paused (status {status})")

    def _update_if_paused(self, s: Session, run_id: str, doing: str, **values: Any) -> None:
        """Compare-and-set on a paused run: set `values` on its runs row only while its status
        is paused (which locks the row), else NotPausedError saying it cannot be `doing`."""
        res = s.execute(update(RunRow).where(RunRow.id == run_id, RunRow.status == PAUSED)
                        .values(**values))
        if _cas(res) != 1:
            raise self._not_paused(s, run_id, doing)

    def begin(self, run_id: str, breakpoints: list[dict[str, Any]]) -> None:
        """Record a debugged run's breakpoints (its runs row exists: call after the sink's start)."""
        with Session(self.store.engine) as s, s.begin():
            row = s.get(RunDebugRow, run_id)
            if row is None:
                s.add(RunDebugRow(run_id=run_id, breakpoints=breakpoints, pause=None, pauses=0,
                                  edits=[], updated_at=utcnow()))
            else:
                row.breakpoints = breakpoints

    def get(self, run_id: str) -> DebugState:
        """The debug state of a run (a run never debugged has no breakpoints and no pause)."""
        with Session(self.store.engine) as s:
            run = by_id_or_prefix(s, RunRow, RunRow.id, run_id, "run")
            if run is None:
                raise NotFoundError(f"no run '{run_id}'")
            row = s.get(RunDebugRow, run.id)
            if row is None:
                return DebugState(run.id, run.status, [], None, 0, [])
            return DebugState(run.id, run.status, list(row.breakpoints or []),
                              _current(row.pause) if row.pause and run.status == PAUSED else None,
                              int(row.pauses or 0), list(row.edits or []),
                              list((row.pause or {}).get("history") or []))

    def save_pause(self, result: RunEnd, mark: dict[str, Any] | None = None) -> None:
        """End a run segment as paused (LangGraph's checkpointer already holds its state): the
        run's totals so far, the pause's step count and `mark` (the pause, for its history), in
        one transaction."""
        with Session(self.store.engine) as s, s.begin():
            row = s.get(RunDebugRow, result.run_id)
            if row is None:
                row = RunDebugRow(run_id=result.run_id, breakpoints=[], pauses=0, edits=[])
                s.add(row)
            history = list((row.pause or {}).get("history") or [])
            row.pause = {"steps_done": result.steps, "edits": [],
                         "history": [*history, *([mark] if mark else [])]}
            row.pauses = int(row.pauses or 0) + 1
            row.updated_at = utcnow()
            s.execute(update(RunRow).where(RunRow.id == result.run_id).values(
                {**ended_values(result), "status": PAUSED, "error": None, "halt_reason": None,
                 "ended_at": None, "lease_until": None}))
        self.store._release(result.run_id)

    def claim(self, run_id: str, breakpoints: list[dict[str, Any]] | None = None
              ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Take a paused run to continue it: compare-and-set paused -> running (owned by this
        process, its lease held). Returns the pause's trace side (steps_done, the edits to send)
        and the breakpoints (replaced by `breakpoints` when given). NotPausedError when it is not paused, e.g. another continue
        took it first."""
        with Session(self.store.engine) as s, s.begin():
            self._update_if_paused(s, run_id, "continue", status=RUNNING, pid=os.getpid(),
                                   host=socket.gethostname(), owner=process_identity(),
                                   lease_until=utcnow() + timedelta(seconds=LEASE_S))
            row = s.get(RunDebugRow, run_id)
            if row is None or not row.pause:
                raise NotPausedError(f"run '{run_id}' is paused but has no pause record")
            if breakpoints is not None:
                row.breakpoints = breakpoints
            pause, bps = _current(row.pause), list(row.breakpoints or [])
        self.store._hold(run_id)
        return pause, bps

    def resumed(self, run_id: str, at: float, mode: str) -> None:
        """The run went on from its last pause at `at` (seconds since the epoch) by `mode`:
        noted in its pause history."""
        with Session(self.store.engine) as s, s.begin():
            row = s.get(RunDebugRow, run_id)
            if row is not None:
                _close_last(row, at, mode)

    def unclaim(self, run_id: str) -> None:
        """Give a claimed run back (running -> paused, its checkpoint untouched): the continue
        failed before its first step (e.g. the knowledge base is gone)."""
        with Session(self.store.engine) as s, s.begin():
            s.execute(update(RunRow).where(RunRow.id == run_id, RunRow.status == RUNNING)
                      .values(status=PAUSED, lease_until=None))
        self.store._release(run_id)

    def abort(self, run_id: str, who: str = "", where: str | None = None) -> None:
        """Stop a paused run for good (paused before node `where`): status cancelled
        (compare-and-set from paused)."""
        with Session(self.store.engine) as s, s.begin():
            error = f"aborted while paused before '{where}'" + (f" by {who}" if who else "")
            self._update_if_paused(s, run_id, "abort", status="cancelled", halt_reason="cancelled",
                                   ended_at=utcnow(), error=error)
            row = s.get(RunDebugRow, run_id)
            if row is not None:
                _close_last(row, time.time(), "abort")

    def edit(self, run_id: str, key: str, value: Any, who: str, memory: dict[str, Any],
             node: str | None) -> dict[str, Any]:
        """Set memory `key` of a paused run (paused before `node` with working memory `memory`)
        to `value` (already validated): kept with the pause's edits (the next continue sends
        them to LangGraph), recorded as a step of the run (operator `user.edit`, memory
        before/after) and in its edits list (who, when, key, step). Returns the pause's trace
        side."""
        with Session(self.store.engine) as s, s.begin():
            # touch the row first: it locks it, so a continue cannot take the run meanwhile
            self._update_if_paused(s, run_id, "edit", status=PAUSED)
            row = s.get(RunDebugRow, run_id)
            run = s.get(RunRow, run_id)
            if row is None or not row.pause or run is None:
                raise NotPausedError(f"run '{run_id}' is paused but has no pause record")
            pause = dict(row.pause)
            before = dict(memory)
            after = {**before, key: value}
            idx = int(run.steps or 0)
            edit_no = len(row.edits or []) + 1
            s.add(StepRow(run_id=run_id, idx=idx, node_id="_edit", operator=USER_EDIT,
                          visit=edit_no, branch=None, memory_before=before, memory_after=after,
                          llm_calls=[], retrievals=[], tokens=0, ms=0.0, error=None,
                          started_at=time.time()))
            run.steps = idx + 1
            if key in ("answer", "citations"):
                setattr(run, key, value)
            run.memory = {**(run.memory or {}), key: value}
            pause["edits"] = [*(pause.get("edits") or []), [key, value]]
            pause["steps_done"] = idx + 1
            row.pause = pause
            row.edits = [*(row.edits or []), {"who": who, "at": time.time(), "key": key,
                                              "step": idx, "node": node}]
            row.updated_at = utcnow()
            return _current(pause)

    def set_breakpoints(self, run_id: str, breakpoints: list[dict[str, Any]]) -> None:
        """Replace a paused run's breakpoints (they apply from its next continue)."""
        with Session(self.store.engine) as s, s.begin():
            self._update_if_paused(s, run_id, "set breakpoints of", status=PAUSED)
            row = s.get(RunDebugRow, run_id)
            if row is None:
                raise NotPausedError(f"run '{run_id}' has no debug state")
            row.breakpoints = breakpoints
