"""Repository functions for question sets (DatasetRow) and evaluations (EvalRow).

An evaluation's per-question results are ordinary runs (RunRow with eval_id set) stored by
Workspace.run with their steps; the run id '<eval id>-<flow index>-<question index>' ties a run to
its place in the evaluation. Everything returned is a plain object, never a live ORM row.
"""
from __future__ import annotations

import socket
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from flowkit.errors import NotFoundError
from flowkit.names import check_new_name
from flowkit.process import pid_alive as _pid_alive

from .models import DatasetRow, EvalRow, RunRow, StepRow
from .prefix import by_id_or_prefix
from .repo import RunInfo, Store, _run_info

if TYPE_CHECKING:
    from flowkit.eval.metrics import Retrieved


@dataclass
class DatasetInfo:
    name: str
    source: str
    kb: str
    questions: list[dict[str, Any]]
    created_at: datetime

    @property
    def size(self) -> int:
        return len(self.questions)


@dataclass
class EvalInfo:
    """An evaluation: flows ({ref, name, spec} each, in column order) x the question ids."""

    id: str
    name: str
    dataset: str
    kb: str
    flows: list[dict[str, Any]]
    question_ids: list[str]
    status: str
    created_at: datetime
    #: how its runs went (see EvalRepo.record_execution), oldest first
    execution: list[dict[str, Any]] = field(default_factory=list)

    @property
    def flow_refs(self) -> list[str]:
        return [str(f.get("ref") or f.get("name")) for f in self.flows]

    @property
    def total(self) -> int:
        return len(self.flows) * len(self.question_ids)


def _dataset(r: DatasetRow) -> DatasetInfo:
    return DatasetInfo(r.name, r.source, r.kb, list(r.questions or []), r.created_at)


def _eval(r: EvalRow) -> EvalInfo:
    return EvalInfo(r.id, r.name, r.dataset, r.kb, list(r.flows or []), list(r.question_ids or []),
                    r.status, r.created_at, [dict(e) for e in r.execution or []])


def run_id_for(eval_id: str, flow_index: int, question_index: int) -> str:
    """The id of the run of flow `flow_index` on question `question_index` of an evaluation."""
    return f"{eval_id}-{flow_index}-{question_index}"


def parse_run_id(eval_id: str, run_id: str) -> tuple[int, int] | None:
    """(flow index, question index) of an evaluation's run id, or None if it is not one."""
    prefix = f"{eval_id}-"
    if not run_id.startswith(prefix):
        return None
    parts = run_id[len(prefix):].split("-")
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        return None
    return int(parts[0]), int(parts[1])


class EvalRepo:
    """Datasets and evaluations in the Store's database."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.engine = store.engine

    # ---- datasets ------------------------------------------------------------------------
    def save_dataset(self, name: str, source: str, questions: list[dict[str, Any]],
                     kb: str = "") -> DatasetInfo:
        """Create or replace a dataset's questions (its name is the key). A new dataset's name
        follows the one rule for names (flowkit.names.RULE; NameRuleError states it); one saved
        before the rule can still be replaced."""
        with Session(self.engine) as s, s.begin():
            row = s.scalars(select(DatasetRow).where(DatasetRow.name == name)).first()
            if row is None:
                check_new_name(name, "question set")
                row = DatasetRow(name=name, source=source, kb=kb, questions=questions)
                s.add(row)
            else:
                row.source, row.questions = source, questions
                row.kb = kb or row.kb
            s.flush()
            return _dataset(row)

    def find_dataset(self, name: str) -> DatasetInfo | None:
        with Session(self.engine) as s:
            row = s.scalars(select(DatasetRow).where(DatasetRow.name == name)).first()
            return _dataset(row) if row else None

    def get_dataset(self, name: str) -> DatasetInfo:
        found = self.find_dataset(name)
        if found is None:
            raise NotFoundError(f"no dataset named '{name}'; import one with "
                                "`flowkit dataset import DIR_OR_CSV`")
        return found

    def list_datasets(self) -> list[DatasetInfo]:
        with Session(self.engine) as s:
            return [_dataset(r) for r in s.scalars(select(DatasetRow).order_by(DatasetRow.name))]

    def set_dataset_kb(self, name: str, kb: str) -> None:
        with Session(self.engine) as s, s.begin():
            s.execute(update(DatasetRow).where(DatasetRow.name == name).values(kb=kb))

    # ---- evaluations ---------------------------------------------------------------------
    def ensure_eval(self, eval_id: str, name: str, dataset: str, kb: str,
                    flows: list[dict[str, Any]], question_ids: list[str]) -> EvalInfo:
        """The evaluation with this id, created if it does not exist yet."""
        with Session(self.engine) as s, s.begin():
            row = s.get(EvalRow, eval_id)
            if row is None:
                row = EvalRow(id=eval_id, name=name, dataset=dataset, kb=kb, flows=flows,
                              question_ids=question_ids, status="running")
                s.add(row)
                s.flush()
            return _eval(row)

    def record_execution(self, eval_id: str, record: dict[str, Any]) -> None:
        """Note how a session runs the evaluation ({"concurrency": N, ...}): appended when it
        differs from the last record, so a resumed evaluation keeps how each part ran."""
        with Session(self.engine) as s, s.begin():
            row = s.get(EvalRow, eval_id)
            if row is None:
                raise NotFoundError(f"no evaluation '{eval_id}'")
            have = list(row.execution or [])
            if not have or have[-1] != record:
                row.execution = [*have, dict(record)]

    def add_flows(self, eval_id: str, flows: list[dict[str, Any]]) -> EvalInfo:
        """Append columns (flow records) to an evaluation; the columns it has stay as they are."""
        with Session(self.engine) as s, s.begin():
            row = s.get(EvalRow, eval_id)
            if row is None:
                raise NotFoundError(f"no evaluation '{eval_id}'")
            row.flows = [*list(row.flows or []), *flows]
            s.flush()
            return _eval(row)

    def find_eval(self, eval_id: str) -> EvalInfo | None:
        with Session(self.engine) as s:
            if not eval_id:
                return None
            row = by_id_or_prefix(s, EvalRow, EvalRow.id, eval_id, "evaluation")
            return _eval(row) if row else None

    def get_eval(self, eval_id: str) -> EvalInfo:
        found = self.find_eval(eval_id)
        if found is None:
            raise NotFoundError(f"no evaluation '{eval_id}'")
        return found

    def list_evals(self, limit: int = 100) -> list[EvalInfo]:
        with Session(self.engine) as s:
            q = select(EvalRow).order_by(EvalRow.created_at.desc()).limit(limit)
            return [_eval(r) for r in s.scalars(q)]

    def set_status(self, eval_id: str, status: str) -> None:
        with Session(self.engine) as s, s.begin():
            s.execute(update(EvalRow).where(EvalRow.id == eval_id).values(status=status))

    def delete_eval(self, eval_id: str) -> None:
        """The evaluation and all its runs and steps."""
        with Session(self.engine) as s, s.begin():
            ids = list(s.scalars(select(RunRow.id).where(RunRow.eval_id == eval_id)))
            if ids:
                s.execute(delete(StepRow).where(StepRow.run_id.in_(ids)))
                s.execute(delete(RunRow).where(RunRow.id.in_(ids)))
            s.execute(delete(EvalRow).where(EvalRow.id == eval_id))

    # ---- the evaluation's runs -----------------------------------------------------------
    def runs(self, eval_id: str) -> list[RunInfo]:
        with Session(self.engine) as s:
            rows = s.scalars(select(RunRow).where(RunRow.eval_id == eval_id)
                             .order_by(RunRow.started_at)).all()
            return [_run_info(r) for r in rows]

    def run_seconds(self, eval_id: str) -> tuple[float, float]:
        """(cost, wall): the seconds of the evaluation's runs, summed: their cost (calls from the
        cache at the time they took when computed) and the wall time they took here."""
        with Session(self.engine) as s:
            cost, wall = s.execute(
                select(func.coalesce(func.sum(RunRow.ms), 0.0),
                       func.coalesce(func.sum(func.coalesce(RunRow.wall_ms, RunRow.ms)), 0.0))
                .where(RunRow.eval_id == eval_id)).one()
            return float(cost) / 1000.0, float(wall) / 1000.0

    def statuses(self, eval_id: str) -> dict[str, str]:
        """run id -> status, for every run of the evaluation (cheap: two columns)."""
        with Session(self.engine) as s:
            rows = s.execute(select(RunRow.id, RunRow.status).where(RunRow.eval_id == eval_id))
            return {rid: status for rid, status in rows}

    def running_pids(self, eval_id: str) -> dict[str, int]:
        """run id -> pid of the evaluation's runs still marked running on this machine."""
        host = socket.gethostname()
        with Session(self.engine) as s:
            rows = s.execute(select(RunRow.id, RunRow.pid, RunRow.host)
                             .where(RunRow.eval_id == eval_id, RunRow.status == "running"))
            return {rid: int(pid or 0) for rid, pid, h in rows if not h or h == host}

    def live_status(self, eval_id: str) -> str:
        """The stored status, except that 'running' with no live process behind any of its runs
        reads 'interrupted' (the process that ran it was killed)."""
        info = self.get_eval(eval_id)
        if info.status != "running":
            return info.status
        pids = self.running_pids(info.id).values()
        return "running" if any(_pid_alive(p) for p in pids) else "interrupted"

    def progress(self, eval_id: str) -> dict[str, int]:
        """How many of the evaluation's runs are in each status."""
        with Session(self.engine) as s:
            rows = s.execute(select(RunRow.status, func.count()).where(RunRow.eval_id == eval_id)
                             .group_by(RunRow.status))
            return {status: int(n) for status, n in rows}

    def retrievals(self, eval_id: str) -> dict[str, list[list[Retrieved]]]:
        """run id -> the ranked chunks of every search its steps recorded, in step order: each a
        chunk id, or {"id", doc_id, source, section_id, pages, ...} where the step kept the
        chunk's place (flowkit.eval.metrics.Retrieved)."""
        out: dict[str, list[list[Retrieved]]] = {}
        with Session(self.engine) as s:
            q = (select(StepRow.run_id, StepRow.retrievals).join(RunRow, RunRow.id == StepRow.run_id)
                 .where(RunRow.eval_id == eval_id).order_by(StepRow.run_id, StepRow.idx))
            for run_id, rets in s.execute(q):
                lists = out.setdefault(run_id, [])
                for r in rets or []:
                    lists.append([{**d["meta"], "id": str(d.get("id"))}
                                  if isinstance(d.get("meta"), dict) and d["meta"]
                                  else str(d.get("id")) for d in r.get("docs") or []])
        return out

    def discard_run(self, run_id: str) -> None:
        """Remove an unfinished run and its steps so that it can be run again under its id."""
        self.store.delete_run(run_id)
