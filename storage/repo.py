"""Repository functions over short sessions. They return plain objects, never live ORM rows."""
from __future__ import annotations

import os
import socket
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from sqlalchemy import CursorResult, delete, func, select, update
from sqlalchemy.orm import Session

from flowkit.cost import Cost
from flowkit.errors import FlowkitError, NotFoundError, StaleSaveError
from flowkit.process import identity_alive, pid_alive, process_identity
from flowkit.run_record import FinishedRun, epoch
from flowkit.spec import FlowSpec, from_dict, to_dict
from flowkit.trace import RunEnd, RunStart, StepEvent

from .db import engine_for
from .leases import LEASE_RENEW_S as LEASE_RENEW_S
from .leases import LEASE_S, Leases
from .models import FlowRow, FlowVersionRow, RunDebugRow, RunRow, StepRow, utcnow
from .prefix import by_id_or_prefix

LEGACY_LEASE = timedelta(days=1)   # runs recorded before leases existed


def _aware(when: datetime) -> datetime:
    return when if when.tzinfo else when.replace(tzinfo=UTC)


@dataclass
class FlowInfo:
    name: str
    description: str
    version: int
    updated_at: datetime
    last_run_id: str | None = None
    last_run_status: str | None = None
    last_run_at: datetime | None = None


@dataclass
class VersionInfo:
    version: int
    message: str
    created_at: datetime
    spec: FlowSpec


@dataclass
class RunInfo:
    """A stored run as the studio's pages read it: its `record` (flowkit's one description of a
    run, `FinishedRun`; one still running ends there at its start plus the time it has taken so
    far) and what storage keeps beside it: its step count, the settings, spec and operator
    versions it ran with, its working memory, the stored times (`ended_at` None while it runs)
    and the runs forked from it."""

    record: FinishedRun
    steps: int
    settings: dict[str, Any]
    spec: dict[str, Any]
    operator_versions: dict[str, Any]
    memory: dict[str, Any]
    started_at: datetime
    ended_at: datetime | None
    children: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        """The run's id (`record.run_id`)."""
        return self.record.run_id

    def finished(self) -> FinishedRun:
        """This run as flowkit describes a run (flowkit.run_record)."""
        return self.record


def _run_info(r: RunRow) -> RunInfo:
    cost = Cost(r.llm_calls, int(r.cached_calls or 0), r.tokens, r.ms)
    began = epoch(r.started_at)
    ended = (epoch(r.ended_at) if r.ended_at
             else began + (r.wall_ms or cost.ms or 0.0) / 1000.0)
    record = FinishedRun(run_id=r.id, flow_name=r.flow_name, flow_version=r.flow_version,
                         question=r.question, answer=r.answer, status=r.status,
                         started_at=began, ended_at=ended, kb=r.kb, model_id=r.model_id,
                         model_hash=r.model_hash, error=r.error, halt_reason=r.halt_reason,
                         cost=cost, wall_ms=r.wall_ms, citations=tuple(r.citations or ()),
                         parent_run_id=r.parent_run_id, parent_step=r.parent_step,
                         eval_id=r.eval_id)
    return RunInfo(record=record, steps=r.steps, settings=dict(r.settings or {}),
                   spec=dict(r.spec or {}), operator_versions=dict(r.operator_versions or {}),
                   memory=dict(r.memory or {}), started_at=r.started_at, ended_at=r.ended_at)


def ended_values(result: RunEnd) -> dict[str, Any]:
    """The run row's values that a RunEnd sets (a run's end, a debugged run's pause): its saved
    form (RunEnd.to_dict, whose keys are the row's columns) but the id."""
    return {k: v for k, v in result.to_dict().items() if k != "run_id"}


def _step_event(s: StepRow) -> StepEvent:
    return StepEvent.from_dict({"run_id": s.run_id, "index": s.idx, "node_id": s.node_id,
                                "operator": s.operator, "visit": s.visit, "branch": s.branch,
                                "memory_before": s.memory_before, "memory_after": s.memory_after,
                                "llm_calls": s.llm_calls, "retrievals": s.retrievals, "ms": s.ms,
                                "error": s.error, "started_at": s.started_at})


class Store:
    """Flows, versions, runs and steps in one database."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = engine_for(url)
        self._leases = Leases(self.engine)

    # ---- leases of running runs (storage.leases) -------------------------------------------
    @property
    def _active(self) -> set[str]:
        return self._leases.active

    def _hold(self, run_id: str) -> None:
        self._leases.hold(run_id)

    def _release(self, run_id: str) -> None:
        self._leases.release(run_id)

    # ---- flows ---------------------------------------------------------------------------
    def list_flows(self) -> list[FlowInfo]:
        with Session(self.engine) as s:
            rows = s.scalars(select(FlowRow).order_by(FlowRow.name)).all()
            out = []
            for r in rows:
                last = s.scalars(select(RunRow).where(RunRow.flow_name == r.name,
                                                      RunRow.eval_id.is_(None))
                                 .order_by(RunRow.started_at.desc()).limit(1)).first()
                out.append(FlowInfo(r.name, r.description, r.version, r.updated_at,
                                    last.id if last else None, last.status if last else None,
                                    last.started_at if last else None))
            return out

    def flow_exists(self, name: str) -> bool:
        with Session(self.engine) as s:
            return s.scalar(select(FlowRow.id).where(FlowRow.name == name)) is not None

    def get_flow(self, name: str, version: int | None = None) -> tuple[FlowSpec, int]:
        """The spec of a flow (its latest version unless one is named) and that version number."""
        with Session(self.engine) as s:
            row = s.scalars(select(FlowRow).where(FlowRow.name == name)).first()
            if row is None:
                raise NotFoundError(f"no saved flow named '{name}'")
            v = version or row.version
            ver = s.scalars(select(FlowVersionRow).where(FlowVersionRow.flow_id == row.id,
                                                         FlowVersionRow.version == v)).first()
            if ver is None:
                raise NotFoundError(f"flow '{name}' has no version {v}")
            return from_dict(ver.spec), v

    def save_flow(self, spec: FlowSpec, expected_version: int | None, message: str = "") -> int:
        """Save a new version. `expected_version` is the version the edit started from (None for a
        new flow). If the stored version moved on meanwhile, raise StaleSaveError: nothing is lost,
        the caller still holds its edit."""
        data = to_dict(spec)
        with Session(self.engine) as s, s.begin():
            row = s.scalars(select(FlowRow).where(FlowRow.name == spec.name)).first()
            if row is None:
                if expected_version not in (None, 0):
                    raise NotFoundError(f"flow '{spec.name}' was deleted meanwhile; save it as new")
                row = FlowRow(name=spec.name, description=spec.description, version=1)
                s.add(row)
                s.flush()
                s.add(FlowVersionRow(flow_id=row.id, version=1, spec=data, message=message))
                return 1
            if expected_version is None:
                raise FlowkitError(f"a flow named '{spec.name}' already exists; open it or choose "
                                   "another name")
            new = expected_version + 1
            # compare-and-set: only one of two concurrent saves of the same version wins
            res = cast(CursorResult[Any], s.execute(update(FlowRow).where(FlowRow.id == row.id,
                                                  FlowRow.version == expected_version)
                            .values(version=new, description=spec.description, updated_at=utcnow())))
            if res.rowcount != 1:
                current = s.scalar(select(FlowRow.version).where(FlowRow.id == row.id)) or 0
                raise StaleSaveError(spec.name, expected_version, current)
            s.add(FlowVersionRow(flow_id=row.id, version=new, spec=data, message=message))
            return new

    def versions(self, name: str) -> list[VersionInfo]:
        with Session(self.engine) as s:
            row = s.scalars(select(FlowRow).where(FlowRow.name == name)).first()
            if row is None:
                raise NotFoundError(f"no saved flow named '{name}'")
            vers = s.scalars(select(FlowVersionRow).where(FlowVersionRow.flow_id == row.id)
                             .order_by(FlowVersionRow.version.desc())).all()
            return [VersionInfo(v.version, v.message, v.created_at, from_dict(v.spec)) for v in vers]

    def delete_flow(self, name: str) -> None:
        with Session(self.engine) as s, s.begin():
            row = s.scalars(select(FlowRow).where(FlowRow.name == name)).first()
            if row is None:
                raise NotFoundError(f"no saved flow named '{name}'")
            s.execute(delete(FlowVersionRow).where(FlowVersionRow.flow_id == row.id))
            s.delete(row)

    # ---- runs ----------------------------------------------------------------------------
    def mark_interrupted(self) -> int:
        """Runs left 'running' by a process that is gone become 'interrupted' (a continue of a
        paused run goes back to 'paused' at its pause instead). Returns how many.

        A run of this host and boot is judged by its owner's identity (pid and the process's start
        time, so a reused pid does not pass for the run's process). A run of another host (another
        machine, or a container since recreated) is judged by its lease, which its process renews
        while it runs."""
        host = socket.gethostname()
        now = utcnow()
        with Session(self.engine) as s, s.begin():
            rows = s.scalars(select(RunRow).where(RunRow.status == "running")).all()
            n = 0
            for r in rows:
                alive = identity_alive(r.owner) if r.owner else (
                    pid_alive(r.pid) if r.host == host and r.pid else None)
                if alive is None:       # not ours to judge by process: by lease
                    lease = _aware(r.lease_until) if r.lease_until else \
                        _aware(r.started_at) + LEGACY_LEASE
                    alive = lease > now
                if alive:
                    continue
                if self._back_to_pause(s, r):
                    n += 1
                    continue
                r.status = "interrupted"
                r.error = "the process running it stopped before it finished"
                r.steps = s.scalar(select(func.count()).select_from(StepRow)
                                   .where(StepRow.run_id == r.id)) or 0
                r.ended_at = utcnow()
                n += 1
            return n

    @staticmethod
    def _back_to_pause(s: Session, r: RunRow) -> bool:
        """A continue of a paused run whose process died: the run goes back to the pause it was
        continued from (the steps that continue wrote are dropped, the totals they added taken
        back), so it can be continued again. False when the run was not continued from a pause
        (its first segment died: it is interrupted like any run)."""
        dbg = s.get(RunDebugRow, r.id)
        pause = dbg.pause if dbg is not None else None
        if not pause:
            return False
        done = int(pause.get("steps_done", 0))
        gone = s.scalars(select(StepRow).where(StepRow.run_id == r.id, StepRow.idx >= done)).all()
        r.tokens = max(0, int(r.tokens or 0) - sum(int(x.tokens or 0) for x in gone))
        r.llm_calls = max(0, int(r.llm_calls or 0) - sum(len(x.llm_calls or []) for x in gone))
        for x in gone:
            s.delete(x)
        r.steps = done
        r.status = "paused"
        r.lease_until = None
        r.error = None
        return True

    def list_runs(self, limit: int = 50, flow_name: str | None = None,
                  include_eval: bool = False) -> list[RunInfo]:
        with Session(self.engine) as s:
            q = select(RunRow).order_by(RunRow.started_at.desc()).limit(limit)
            if flow_name:
                q = q.where(RunRow.flow_name == flow_name)
            if not include_eval:
                q = q.where(RunRow.eval_id.is_(None))
            return [_run_info(r) for r in s.scalars(q).all()]

    def find_eval_run(self, eval_id: str, flow_name: str, question: str) -> RunInfo | None:
        """The newest finished run of `flow_name` on `question` recorded under `eval_id`."""
        with Session(self.engine) as s:
            r = s.scalars(select(RunRow).where(RunRow.eval_id == eval_id,
                                               RunRow.flow_name == flow_name,
                                               RunRow.question == question,
                                               RunRow.status.in_(("ok", "budget_exceeded")))
                          .order_by(RunRow.started_at.desc()).limit(1)).first()
            return None if r is None else _run_info(r)

    def get_run(self, run_id: str) -> RunInfo:
        with Session(self.engine) as s:
            r = by_id_or_prefix(s, RunRow, RunRow.id, run_id, "run")
            if r is None:
                raise NotFoundError(f"no run '{run_id}'")
            info = _run_info(r)
            info.children = list(s.scalars(select(RunRow.id).where(RunRow.parent_run_id == r.id)))
            return info

    def steps(self, run_id: str) -> list[StepEvent]:
        with Session(self.engine) as s:
            rows = s.scalars(select(StepRow).where(StepRow.run_id == run_id)
                             .order_by(StepRow.idx)).all()
            return [_step_event(r) for r in rows]

    def delete_run(self, run_id: str) -> None:
        with Session(self.engine) as s, s.begin():
            s.execute(delete(StepRow).where(StepRow.run_id == run_id))
            s.execute(delete(RunRow).where(RunRow.id == run_id))

    def sink(self, eval_id: str | None = None) -> TraceStore:
        return TraceStore(self, eval_id)


class TraceStore:
    """The engine's trace sink: one short transaction per event, so a crash leaves a readable prefix."""

    def __init__(self, store: Store, eval_id: str | None = None) -> None:
        self.store = store
        self.eval_id = eval_id
        self.run_id: str | None = None
        self._lock = threading.Lock()

    def start(self, run: RunStart) -> None:
        self.run_id = run.run_id
        self.store._hold(run.run_id)
        with Session(self.store.engine) as s, s.begin():
            s.add(RunRow(id=run.run_id, flow_name=run.flow_name, flow_version=run.flow_version,
                         spec=run.spec, operator_versions=run.operator_versions,
                         question=run.question, kb=run.kb, model_id=run.model_id,
                         model_hash=run.model_hash, settings=run.settings, status="running",
                         pid=os.getpid(), host=socket.gethostname(), owner=process_identity(),
                         lease_until=utcnow() + timedelta(seconds=LEASE_S),
                         parent_run_id=run.parent_run_id, parent_step=run.parent_step,
                         eval_id=self.eval_id,
                         started_at=datetime.fromtimestamp(run.started_at or 0, UTC)
                         if run.started_at else utcnow()))

    def step(self, event: StepEvent) -> None:
        d = event.to_dict()
        with self._lock, Session(self.store.engine) as s, s.begin():
            s.add(StepRow(run_id=event.run_id, idx=event.index, node_id=event.node_id,
                          operator=event.operator, visit=event.visit, branch=event.branch,
                          memory_before=d["memory_before"], memory_after=d["memory_after"],
                          llm_calls=d["llm_calls"], retrievals=d["retrievals"], tokens=event.tokens,
                          ms=event.ms, error=event.error, started_at=event.started_at))
            s.execute(update(RunRow).where(RunRow.id == event.run_id)
                      .values(steps=event.index + 1, tokens=RunRow.tokens + event.tokens,
                              llm_calls=RunRow.llm_calls + len(event.llm_calls)))

    def end(self, result: RunEnd) -> None:
        self.store._release(result.run_id)
        with Session(self.store.engine) as s, s.begin():
            s.execute(update(RunRow).where(RunRow.id == result.run_id).values(
                **ended_values(result), ended_at=utcnow()))
