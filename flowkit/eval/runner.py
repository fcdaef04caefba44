"""The comparison runner: every flow on the same questions, each answer stored as a traced run.

An evaluation is planned (flows x the first N questions of a dataset, on one knowledge base) and
gets an id derived from what it compares, so the same command resumes it: questions that already
have a finished run (ok or budget_exceeded) for a flow are skipped, runs left running, interrupted
or failed are run again. Questions go in file order, every flow on a question before the next
question, so a stopped evaluation still compares the flows on the same questions.

This module never imports storage: it is handed a workspace (`ws.run`, `ws.store`) and an
`EvalStore` (storage.evals.EvalRepo implements it).
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..compile import compile_flow
from ..cost import Cost
from ..errors import FlowkitError
from ..process import pid_alive as _pid_alive
from ..run_record import StoredRun
from ..run_request import RunHooks, RunRequest
from ..spec import FlowSpec, from_dict, to_dict
from .concurrent import Execution, plan_execution, run_concurrently
from .costs import RunCost
from .metrics import QuestionResult, Retrieved, score
from .strategy import EvalRun, InFlight, RayWorkers
from .workspace import EvalWorkspace

FINISHED = ("ok", "budget_exceeded")


class EvalStore(Protocol):
    """What the runner needs from storage."""

    def ensure_eval(self, eval_id: str, name: str, dataset: str, kb: str,
                    flows: list[dict[str, Any]], question_ids: list[str]) -> Any: ...

    def statuses(self, eval_id: str) -> dict[str, str]: ...

    def discard_run(self, run_id: str) -> None: ...

    def set_status(self, eval_id: str, status: str) -> None: ...

    def running_pids(self, eval_id: str) -> dict[str, int]: ...

    def add_flows(self, eval_id: str, flows: list[dict[str, Any]]) -> Any: ...

    def record_execution(self, eval_id: str, record: dict[str, Any]) -> None: ...


@dataclass
class FlowEntry:
    """One compared flow: how the user named it (ref), its column label and the resolved spec."""

    ref: str
    spec: FlowSpec
    version: int | None = None
    label: str = ""
    #: the model this column runs on ('': the workspace's; `--flow naive_rag@smollm2-135m`)
    model: str = ""
    #: the label of the column this one is a variant of ('': none recorded)
    parent: str = ""

    def record(self) -> dict[str, Any]:
        rec = {"ref": self.ref, "label": self.label or self.ref, "name": self.spec.name,
               "version": self.version, "spec": to_dict(self.spec)}
        if self.model:
            rec["model"] = self.model
        if self.parent:
            rec["parent"] = self.parent
        return rec

    @classmethod
    def from_record(cls, rec: dict[str, Any]) -> FlowEntry:
        return cls(ref=str(rec["ref"]), spec=from_dict(rec["spec"]), version=rec.get("version"),
                   label=str(rec.get("label") or rec["ref"]), model=str(rec.get("model") or ""),
                   parent=str(rec.get("parent") or ""))


def label_flows(entries: list[FlowEntry]) -> list[FlowEntry]:
    """Give each flow a short unique column label (a file path becomes its flow's name)."""
    refs = [e.ref for e in entries]
    dup = sorted({r for r in refs if refs.count(r) > 1})
    if dup:
        raise FlowkitError(f"the same flow is listed twice: {', '.join(dup)}")
    used: set[str] = set()
    for e in entries:
        base = e.spec.name if (e.ref.endswith(".json") or os.sep in e.ref) else e.ref
        if e.model and not base.endswith(f"@{e.model}"):
            base = f"{base}@{e.model}"
        label, n = base, 2
        while label in used:
            label, n = f"{base}#{n}", n + 1
        e.label = label
        used.add(label)
    return entries


def _spec_hash(spec: FlowSpec) -> str:
    data = {k: v for k, v in to_dict(spec).items() if k != "layout"}
    return hashlib.sha1(json.dumps(data, sort_keys=True).encode()).hexdigest()


def eval_id_for(flows: Sequence[FlowEntry], dataset: str, kb: str, limit: int | None,
                questions: Sequence[dict[str, Any]] = ()) -> str:
    """A 12-hex id from the flows (refs and their specs), dataset, knowledge base, limit and the
    chosen questions' content: the same comparison gets the same id (and resumes); an edited flow
    or an edited question set (a dataset imported or generated again under its name) starts a
    new one, so no run of the old questions is taken for one of the new."""
    key = {"flows": [[f.ref, _spec_hash(f.spec)] for f in flows], "dataset": dataset,
           "kb": kb, "limit": limit or 0}
    if questions:
        content = json.dumps([[q.get("id"), q.get("question"), q.get("answers"),
                               q.get("supporting_doc_ids")] for q in questions],
                             sort_keys=True, ensure_ascii=False)
        key["questions"] = hashlib.sha1(content.encode()).hexdigest()
    return hashlib.sha1(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]


@dataclass
class EvalPlan:
    """What an evaluation runs: flows x questions on a knowledge base."""

    eval_id: str
    name: str
    dataset: str
    kb: str
    flows: list[FlowEntry]
    questions: list[dict[str, Any]]

    @property
    def total(self) -> int:
        return len(self.flows) * len(self.questions)


def make_plan(flows: list[FlowEntry], dataset_name: str, questions: list[dict[str, Any]], kb: str,
              limit: int | None = None, eval_id: str | None = None, name: str = "") -> EvalPlan:
    """Plan flows x the first `limit` questions (file order). The id is derived unless given."""
    if not flows:
        raise FlowkitError("name at least one flow to evaluate")
    if not kb:
        raise FlowkitError("name the knowledge base to answer from (--kb)")
    chosen = list(questions[:limit] if limit else questions)
    if not chosen:
        raise FlowkitError(f"dataset '{dataset_name}' has no questions")
    label_flows(flows)
    eid = eval_id or eval_id_for(flows, dataset_name, kb, limit, chosen)
    return EvalPlan(eid, name or f"{' vs '.join(f.label for f in flows)} on {dataset_name}",
                    dataset_name, kb, flows, chosen)


def _run_id(eval_id: str, fi: int, qi: int) -> str:
    return f"{eval_id}-{fi}-{qi}"     # the same scheme as storage.evals.run_id_for


@dataclass
class Progress:
    """Where an evaluation stands after each question of each flow."""

    done: int
    total: int
    skipped: int
    flow_index: int
    question_index: int
    status: str          # the run's status, or "skipped"
    flow: str = ""
    #: what this session's model calls of the evaluation cost so far (computed and served from
    #: the cache, tokens, model ms)
    cost: Cost = field(default_factory=Cost)
    #: seconds left, estimated per flow from the runs done so far (None until one has run)
    eta_s: float | None = None

    def describe(self) -> str:
        """'12/40 answers · model calls of the 12 run now: 30 computed, 18 from the cache ·
        about 2 min left'. The calls are this session's (answers stored before it, skipped,
        made none), and calls are not answers: a flow makes one or more for each."""
        parts = [f"{self.done}/{self.total} answers"]
        if self.cost.calls:
            parts.append(f"model calls of the {self.done - self.skipped} run now: "
                         f"{self.cost.computed} computed, {self.cost.cached} from the cache")
        if self.eta_s is not None and self.done < self.total:
            parts.append(f"about {_duration(self.eta_s)} left")
        return " · ".join(parts)


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class _Estimate:
    """Time left from the runs done in this session: per flow, the mean seconds a run took here
    (runs served from the cache are cheap and pull it down; skipped runs do not count)."""

    def __init__(self, plan: EvalPlan) -> None:
        self.plan = plan
        self.seconds = [0.0] * len(plan.flows)
        self.runs = [0] * len(plan.flows)
        self.left = [len(plan.questions)] * len(plan.flows)
        self.cost = Cost()

    def add(self, fi: int, cost: RunCost | None) -> None:
        self.left[fi] -= 1
        if cost is not None:
            self.seconds[fi] += cost.wall_s
            self.runs[fi] += 1
            self.cost += cost.cost

    def eta(self) -> float | None:
        if not any(self.runs):
            return None
        overall = sum(self.seconds) / sum(self.runs)
        return sum(left * (self.seconds[fi] / self.runs[fi] if self.runs[fi] else overall)
                   for fi, left in enumerate(self.left))


@dataclass
class Outcome:
    eval_id: str
    status: str          # done | stopped
    ran: int = 0
    skipped: int = 0
    redone: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    #: what this session's model calls cost (computed and from the cache, tokens, model ms)
    cost: Cost = field(default_factory=Cost)
    #: how this session ran it: runs in flight, the server's parallel slots where it says
    execution: Execution = field(default_factory=Execution)


DEFAULT_RUN = EvalRun()


def _guard_running(repo: EvalStore, eval_id: str) -> None:
    """Refuse when another live process on this machine is running this evaluation right now."""
    for pid in repo.running_pids(eval_id).values():
        if pid and pid != os.getpid() and _pid_alive(pid):
            raise FlowkitError(f"evaluation {eval_id} is being run by process {pid} right now")


def run_evaluation(ws: EvalWorkspace, repo: EvalStore, plan: EvalPlan,
                   how: EvalRun = DEFAULT_RUN) -> Outcome:
    """Run (or resume) an evaluation. `how.stop` ends it cleanly: the run in flight stops at its
    next step (status cancelled; done again on resume) and no further question starts.

    `how.strategy`: `Serial` one run after another; `RayWorkers(n, make_workspace)` the runs
    still to do go to n Ray workers (flowkit.eval.parallel), each with its own workspace, ids,
    storage and resume the same; `InFlight(n)` with a model server in the settings, n runs in
    flight at once in threads of this process (flowkit.eval.concurrent), with an embedded model
    serially and `how.notice` gets one line saying why. A column that names a model runs in
    `how.workspace_for(model)` (serially only)."""
    strategy, stop, progress = how.strategy, how.stop, how.progress
    concurrency = strategy.n if isinstance(strategy, InFlight) else 1
    ws.store.mark_interrupted()
    ws.resources.kb(plan.kb).require_ready()
    models = [f.model for f in plan.flows if f.model]
    if models and (isinstance(strategy, RayWorkers) or how.workspace_for is None):
        raise FlowkitError(f"column(s) on model {', '.join(models)}: a flow@model column runs "
                           "without --workers, through a workspace per model")
    if isinstance(strategy, RayWorkers):
        from .parallel import check_engines
        check_engines(strategy.address, ws.resources.settings)
    execution = _execution(ws, plan, concurrency)
    if execution.note and how.notice is not None:
        how.notice(execution.note)
    repo.ensure_eval(plan.eval_id, plan.name, plan.dataset, plan.kb,
                     [f.record() for f in plan.flows], [str(q["id"]) for q in plan.questions])
    repo.set_status(plan.eval_id, "running")
    statuses = repo.statuses(plan.eval_id)
    _guard_running(repo, plan.eval_id)
    workers = strategy.n if isinstance(strategy, RayWorkers) else 1
    repo.record_execution(plan.eval_id, {**execution.record(),
                                         **({"workers": workers} if workers > 1 else {})})
    out = Outcome(plan.eval_id, "running", execution=execution)
    done = 0
    estimate = _Estimate(plan)

    def finished(fi: int, qi: int, status: str, cost: RunCost | None = None) -> None:
        nonlocal done
        done += 1
        estimate.add(fi, cost)
        if status == "skipped":
            out.skipped += 1
        else:
            out.ran += 1
            out.statuses[status] = out.statuses.get(status, 0) + 1
        out.cost = estimate.cost
        if progress:
            progress(Progress(done, plan.total, out.skipped, fi, qi, status, plan.flows[fi].label,
                              cost=estimate.cost, eta_s=estimate.eta()))

    try:
        if isinstance(strategy, RayWorkers):
            _run_on_workers(plan, repo, statuses, out, finished, stop, strategy)
        elif execution.concurrency > 1:
            _run_concurrently(ws, plan, repo, statuses, out, finished, stop,
                              execution.concurrency)
        else:
            wss = [how.workspace_for(f.model) if f.model and how.workspace_for else ws
                   for f in plan.flows]
            _run_serially(wss, plan, repo, statuses, out, finished, stop)
    except BaseException:
        repo.set_status(plan.eval_id, "interrupted")
        raise
    if stop is not None and stop.is_set() and done < plan.total:
        out.status = "stopped"
        repo.set_status(plan.eval_id, "stopped")
        return out
    out.status = "done"
    repo.set_status(plan.eval_id, "done")
    return out


def _run_serially(wss: list[Any], plan: EvalPlan, repo: EvalStore, statuses: dict[str, str], out: Outcome,
                  finished: Callable[..., None], stop: threading.Event | None) -> None:
    compiled = [compile_flow(f.spec) for f in plan.flows]
    for qi, q in enumerate(plan.questions):
        for fi, flow in enumerate(plan.flows):
            rid = _run_id(plan.eval_id, fi, qi)
            prev = statuses.get(rid)
            if prev in FINISHED:
                finished(fi, qi, "skipped")
                continue
            if stop is not None and stop.is_set():
                return
            if prev is not None:
                repo.discard_run(rid)
                out.redone += 1
            result = wss[fi].run(compiled[fi],
                                 RunRequest(str(q["question"]), kb=plan.kb,
                                            flow_version=flow.version, eval_id=plan.eval_id,
                                            run_id=rid), RunHooks(cancel=stop))
            finished(fi, qi, result.status, RunCost.of(result))


def _execution(ws: EvalWorkspace, plan: EvalPlan, concurrency: int) -> Execution:
    """How this session runs the evaluation (runs in flight; see flowkit.eval.concurrent)."""
    if concurrency > 1 and any(f.model for f in plan.flows):
        return Execution(1, concurrency, None, "--concurrency keeps calls in flight to the "
                         "settings' model server; a FLOW@MODEL column runs on a model of its own, "
                         "so the runs go one after another")
    return plan_execution(ws.resources.settings.llm, concurrency)


def _tasks_to_do(plan: EvalPlan, repo: EvalStore, statuses: dict[str, str], out: Outcome,
                 finished: Callable[..., None]) -> list[Any]:
    """The runs still to do, in plan order (finished ones reported skipped, unfinished ones
    discarded to be done again)."""
    from .parallel import Task
    tasks: list[Task] = []
    for qi, q in enumerate(plan.questions):
        for fi in range(len(plan.flows)):
            rid = _run_id(plan.eval_id, fi, qi)
            prev = statuses.get(rid)
            if prev in FINISHED:
                finished(fi, qi, "skipped")
                continue
            if prev is not None:
                repo.discard_run(rid)
                out.redone += 1
            tasks.append(Task(fi, qi, rid, str(q["question"])))
    return tasks


def _run_concurrently(ws: EvalWorkspace, plan: EvalPlan, repo: EvalStore,
                      statuses: dict[str, str], out: Outcome, finished: Callable[..., None],
                      stop: threading.Event | None, n: int) -> None:
    compiled = [compile_flow(f.spec) for f in plan.flows]
    tasks = _tasks_to_do(plan, repo, statuses, out, finished)

    def run_one(task: Any, cancel: threading.Event, started: Any) -> Any:
        flow = plan.flows[task.flow_index]
        return ws.run(compiled[task.flow_index],
                      RunRequest(task.question, kb=plan.kb, flow_version=flow.version,
                                 eval_id=plan.eval_id, run_id=task.run_id),
                      RunHooks(cancel=cancel, sink=started))

    run_concurrently(tasks, run_one, n,
                     lambda t, result: finished(t.flow_index, t.question_index, result.status,
                                                RunCost.of(result)), stop)


def _run_on_workers(plan: EvalPlan, repo: EvalStore, statuses: dict[str, str], out: Outcome,
                    finished: Callable[..., None], stop: threading.Event | None,
                    workers: RayWorkers) -> None:
    from .parallel import run_parallel
    tasks = _tasks_to_do(plan, repo, statuses, out, finished)
    if tasks:
        run_parallel(tasks, workers.make_workspace, [f.spec for f in plan.flows],
                     [f.version for f in plan.flows], plan.kb, plan.eval_id, workers.n,
                     workers.address,
                     on_done=lambda t, status, cost: finished(t.flow_index, t.question_index,
                                                              status, cost),
                     should_stop=(lambda: stop.is_set()) if stop is not None else None)


def add_variants(repo: EvalStore, plan: EvalPlan, variants: list[FlowEntry]) -> EvalPlan:
    """`plan` (a stored evaluation's) with `variants` added as new columns: the same questions
    and knowledge base; the runs of its columns are kept (a resume skips them). A variant whose
    spec is already a column is refused; a ref already used gets a suffix ('iter_retgen#2')."""
    if not variants:
        raise FlowkitError("name at least one flow to add (--flow)")
    have = {_spec_hash(f.spec): f.label for f in plan.flows}
    used = {f.ref for f in plan.flows}
    for v in variants:
        same = have.get(_spec_hash(v.spec))
        if same is not None:
            raise FlowkitError(f"'{v.ref}' is the same flow as column '{same}' of evaluation "
                               f"{plan.eval_id}; change a node first")
        have[_spec_hash(v.spec)] = v.ref
        base, n = v.ref, 2
        while v.ref in used:
            v.ref, n = f"{base}#{n}", n + 1
        used.add(v.ref)
    labels = {f.label for f in plan.flows}
    for v in variants:
        label_flows([v])
        base, n = v.label, 2
        while v.label in labels:
            v.label, n = f"{base}#{n}", n + 1
        labels.add(v.label)
    repo.add_flows(plan.eval_id, [v.record() for v in variants])
    return EvalPlan(plan.eval_id, plan.name, plan.dataset, plan.kb, [*plan.flows, *variants],
                    plan.questions)


def plan_from_eval(info: Any, questions: list[dict[str, Any]]) -> EvalPlan:
    """The plan of a stored evaluation (for --resume): its flows' specs and its question ids."""
    by_id = {str(q["id"]): q for q in questions}
    missing = [qid for qid in info.question_ids if qid not in by_id]
    if missing:
        raise FlowkitError(f"dataset '{info.dataset}' no longer has question(s) "
                           f"{', '.join(missing[:5])}")
    flows = [FlowEntry.from_record(r) for r in info.flows]
    return EvalPlan(info.id, info.name, info.dataset, info.kb, flows,
                    [by_id[qid] for qid in info.question_ids])


def collect_results(plan: EvalPlan, runs: Sequence[StoredRun],
                    retrievals: Mapping[str, Sequence[Sequence[Retrieved]]],
                    k: int | None = 5) -> dict[str, list[QuestionResult]]:
    """Per flow label, the scored result of every question that has a run (question order),
    read from each stored run's FinishedRun (`seconds`: the run's cost in model time)."""
    by_id = {f.run_id: f for f in (r.finished() for r in runs)}
    out: dict[str, list[QuestionResult]] = {f.label: [] for f in plan.flows}
    for qi, q in enumerate(plan.questions):
        for fi, flow in enumerate(plan.flows):
            run = by_id.get(_run_id(plan.eval_id, fi, qi))
            if run is None:
                continue
            out[flow.label].append(score(
                flow.label, q, run.answer, status=run.status, tokens=run.cost.tokens,
                llm_calls=run.cost.calls, seconds=run.cost.ms / 1000.0, run_id=run.run_id,
                retrievals=retrievals.get(run.run_id, []), k=k, error=run.error))
    return out


def evaluation_report(repo: Any, plan: EvalPlan, baseline: str | None = None,
                      k: int | None = 5) -> Any:
    """The report of a (possibly partial) evaluation from the runs stored for it. `baseline` is a
    flow's ref, label or name (default: the first flow)."""
    from .report import build_report
    results = collect_results(plan, repo.runs(plan.eval_id), repo.retrievals(plan.eval_id), k=k)
    base = None
    if baseline:
        match = [f.label for f in plan.flows if baseline in (f.ref, f.label, f.spec.name)]
        if not match:
            raise FlowkitError(f"--baseline '{baseline}' is not one of the flows "
                               f"({', '.join(f.label for f in plan.flows)})")
        base = match[0]
    info = repo.find_eval(plan.eval_id) if hasattr(repo, "find_eval") else None
    rep = build_report(results, eval_id=plan.eval_id, name=plan.name, dataset=plan.dataset,
                       kb=plan.kb, baseline=base, k=k, planned=len(plan.questions))
    rep.execution = list(getattr(info, "execution", None) or [])
    return rep


def resolve_flows(ws: Any, refs: Sequence[str],
                  split_model: Callable[[str], tuple[str, str]] | None = None) -> list[FlowEntry]:
    """Flow refs (file, saved flow name or template name) resolved through the workspace;
    `split_model` reads 'REF@MODEL' into (REF, MODEL) (the ref keeps '@MODEL' as written)."""
    out = []
    for ref in refs:
        flow_ref, model = split_model(ref) if split_model else (ref, "")
        spec, version = ws.resolve_flow(flow_ref)
        out.append(FlowEntry(ref=str(Path(ref)) if ref.endswith(".json") else ref, spec=spec,
                             version=version, model=model))
    return out
