"""Flow search as the CLI (and later a page) uses it: prepare, estimate, run, resume.

    req = SearchRequest("space.json", dataset="hotpotqa_dev_500_ircotfmt", kb="hotpot",
                        search_questions="101-300", confirm_questions="1-100", budget_calls=20000)
    plan = prepare(ws, req)          # validates the space, asks the first wave (or resumes)
    print(estimate(plan).describe()) # the cost before it starts
    result = run(ws, plan, log=print)

The candidates come in waves (`flowkit.search.study`): the hand-written flows and a first wave
race; each candidate is told to Optuna (search F1 up, tokens per question down), and the next wave
is asked knowing them while candidates and budget remain; the candidates of earlier waves still
kept race again beside it (their stored runs are not redone), so the drop rule compares them.
Each candidate answers through the evaluation runner, one evaluation per candidate and split
(its id derived from the search and the candidate, so a rerun skips every finished run and the
completion cache serves what candidates share); with `workers` > 1 each evaluation's questions
go to that many Ray workers (one Ray session for the whole search), the same runs under the same
ids. Candidates kept by the race are saved as flows
(`<space name>-c03`, a new version only when changed), so they open, replay and fork like any
flow. The front (F1 vs tokens and seconds per question) and the hand-written flows are then
evaluated on the confirmation questions, each with its paired 95% interval of F1 against the best
hand-written flow there. Progress lives in `<space>.search-<id>.json` beside the space file.

The quality objective is F1 unless the request names another (`flowkit.search.objective`): EM,
Acc, or a model judge. With a judge, each batch's finished runs are graded (`service.grading`:
through the completion cache, verdicts stored with the evaluation, so a resumed search grades
only what is new). The race, the front and the confirmation take the objective as a function of
one answer (`SearchPlan.metric`: F1, EM, Acc, or the judge's verdict on it), never a result's
`f1` holding something else; the judge's calls are counted apart (`Budget.judge`), never
in a candidate's tokens or calls nor in the budget.
"""
from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flowkit.errors import FlowkitError, NotFoundError
from flowkit.eval.concurrent import check_concurrency
from flowkit.eval.datasets import resolve
from flowkit.eval.metrics import QuestionResult, summarize
from flowkit.eval.parallel import check_engines, ray_session
from flowkit.eval.runner import EvalPlan, FlowEntry, collect_results
from flowkit.eval.strategy import EvalRun, strategy_for
from flowkit.search import state as state_mod
from flowkit.search import study
from flowkit.search.candidates import base_candidates, build_spec, identity
from flowkit.search.front import Point, pareto
from flowkit.search.objective import Objective, check_name, check_reference, names
from flowkit.search.racing import KEPT, RACING, Batch, Entry, Race, Split, rungs
from flowkit.search.scoring import Metric, paired
from flowkit.search.space import SearchSpace, load_space, size, validate_space
from flowkit.search.splits import shared_passages, split
from flowkit.spec import FlowSpec, fingerprint

from . import evaluations, grading
from .modelchoice import ModelWorkspaces, model_problem
from .workspace import Workspace, worker_factory

_LLM_KEYS = ("flare_judge", "agent_plan", "evidence_reflector", "weighted_ensemble",
             "hierarchical", "knowledge_graph", "hybrid_router")


@dataclass
class SearchRequest:
    """What `flowkit search` is asked (question ranges are 1-based and inclusive)."""

    space: str
    dataset: str
    kb: str
    search_questions: str
    confirm_questions: str
    budget_calls: int
    budget_hours: float | None = None
    first_batch: int = 10
    growth: float = 2.0
    halving: float = 0.0
    #: questions x flows of each evaluation on this many Ray workers, each loading its own model
    #: (as `flowkit eval --workers`); the runs and the state are the same as with 1
    workers: int = 1
    #: an existing Ray cluster (default: a local one); several machines need server engines
    ray_address: str = ""
    #: successive halving acts only on batches of at least this many questions (0: from the first)
    halving_from: int = 0
    #: what the race ranks on: f1, em, acc or a judge (`flowkit.search.objective.names()`)
    objective: str = "f1"
    #: a judge objective's model: '' or 'default' (the workspace's), a packaged id or a .gguf
    judge_model: str = ""
    #: (flow, question) runs of each evaluation in flight at once to the settings' model server
    #: (as `flowkit eval --concurrency`; an embedded model runs them serially); 1: one at a time
    concurrency: int = 1


#: the values successive halving accepts (the Search page's Halving field, the CLI's --halving)
HALVING_RANGE = "0 (off) or more than 1 (2 keeps the top half)"


def check_halving(halving: float, name: str = "halving") -> float:
    """`halving` when it is 0 (off) or more than 1; FlowkitError naming the field `name` (the
    page's 'halving', the CLI's '--halving') otherwise: between 0 and 1 it would keep everyone
    (top 1/H with H <= 1), which the race ignores, so it is refused rather than run as 0."""
    if not (halving == 0 or halving > 1):        # NaN too
        raise FlowkitError(f"{name} must be {HALVING_RANGE}; got {halving:g}")
    return halving


def check_halving_from(questions: int, name: str = "halving from") -> int:
    """`questions` when it is 0 (halve from the first batch) or more; FlowkitError naming the
    field `name` otherwise."""
    if questions < 0:
        raise FlowkitError(f"{name} must be 0 (from the first batch) or a number of questions; "
                           f"got {questions}")
    return questions


@dataclass
class SearchPlan:
    """A prepared search: the space, its flows and splits, and its state (new or resumed)."""

    request: SearchRequest
    space: SearchSpace
    flows: dict[str, FlowSpec]
    dataset: str
    search_qs: list[dict[str, Any]]
    confirm_qs: list[dict[str, Any]]
    state_file: Path
    state: state_mod.SearchState
    resumed: bool
    workspaces: ModelWorkspaces | None = None
    #: how a Ray worker makes its workspace like a given one (with workers > 1; tests script it)
    worker_factory: Callable[[Workspace], Callable[[], Any]] = worker_factory
    #: a judge objective's verdicts read so far: (candidate id, question id) -> score
    verdicts: dict[tuple[str, str], float] = field(default_factory=dict)

    def spec_of(self, e: Entry) -> FlowSpec:
        return build_spec(self.space, self.flows[e.candidate.flow], e.candidate,
                          name=f"{self.space.name}-{e.cid}")

    def metric(self) -> Metric:
        """The search's objective on one answer (a judge's: from `verdicts`, which each
        evaluation's grading fills)."""
        return self.state.quality().metric(self.verdicts)


def load(ws: Workspace, space_path: str) -> tuple[SearchSpace, dict[str, FlowSpec]]:
    """The space file parsed and validated against its flows (SpaceError lists the problems).
    A flow file named by a relative path is looked for beside the space file first."""
    space = load_space(space_path)
    flows = {}
    here = Path(space_path).parent
    for ref in space.flows:
        beside = here / ref          # a flow file named relative to the space file
        try:
            flows[ref] = ws.resolve_flow(str(beside) if ref.endswith(".json") and
                                         not Path(ref).is_absolute() and beside.is_file()
                                         else ref)[0]
        except FlowkitError as err:
            raise FlowkitError(f"{space_path}: flows: '{ref}': {err}") from err
    validate_space(space, flows, model_problem, space_path)
    return space, flows


def _prior_calls(spec: FlowSpec) -> float:
    n = sum(1 for node in spec.nodes if "llm" in node.operator
            or node.operator.split(".")[0] in ("generation", "pre_retrieval")
            or node.operator.split(".")[-1] in _LLM_KEYS)
    return float(min(max(n, 1), spec.limits.max_llm_calls))


def _new_entries(space: SearchSpace, flows: dict[str, FlowSpec]) -> list[Entry]:
    out: list[Entry] = []
    for cand in base_candidates(space):
        spec = build_spec(space, flows[cand.flow], cand)
        out.append(Entry(f"c{len(out):02d}", cand, identity(spec, cand.model),
                         prior_calls_q=_prior_calls(spec), hand_written=True))
    return out


def next_wave(space: SearchSpace, flows: dict[str, FlowSpec], st: state_mod.SearchState) -> int:
    """Ask Optuna the next wave of candidates (up to a wave's size, within max_candidates) and
    add them and their trials to the state; returns how many (0: none left to ask)."""
    n = min(study.wave_size(space), space.max_candidates - len(st.entries))
    if n <= 0:
        return 0
    taken = {e.key: e.cid for e in st.entries}
    figures = _figures(st)
    known = {e.cid: v for e in st.entries if (v := figures(e.cid)) is not None}
    new, asked = study.ask_wave(space, flows, st.trials, taken, known, n, len(st.entries))
    if not new:                     # every point asked is taken: the space is exhausted
        return 0
    wave = asked[0].wave
    for cid, cand, spec in new:
        st.entries.append(Entry(cid, cand, identity(spec, cand.model),
                                prior_calls_q=_prior_calls(spec), wave=wave))
    st.trials += asked
    return len(new)


def _figures(st: state_mod.SearchState) -> Callable[[str], list[float] | None]:
    """What Optuna is told of a candidate: [search score, tokens per question] once its race is
    over (a dropped one: on the questions it reached), else None."""
    by_cid = {e.cid: e for e in st.entries}

    def figures(cid: str) -> list[float] | None:
        e = by_cid[cid]
        if e.status == RACING or e.score is None:
            return None
        return [e.score, e.tokens or 0.0]
    return figures


def objectives() -> list[str]:
    """The objectives a search takes, answer metrics first (the Search page's choices, the CLI's
    --objective)."""
    return names()


def is_judge(objective: str) -> bool:
    """Whether `objective` is a model judge's score (it then takes a judge model)."""
    return Objective(objective).is_judge


def _objective(ws: Workspace, req: SearchRequest) -> Objective:
    """The request's objective checked (a known name; a judge's model loadable), with the judge
    model named as grades name it."""
    name = check_name(req.objective or "f1")
    goal = Objective(name)
    if not goal.is_judge:
        return goal
    model = "" if req.judge_model in ("", "default") else req.judge_model
    grading.check([name], model)
    return Objective(name, model, grading.model_name(ws, model))


def prepare(ws: Workspace, req: SearchRequest) -> SearchPlan:
    """Validate the space, read the dataset and the splits, and load or start the search state."""
    if req.budget_calls < 1:
        raise FlowkitError("--budget-calls must be at least 1")
    if req.workers < 1:
        raise FlowkitError("--workers must be at least 1")
    if req.workers > 1:
        check_engines(req.ray_address, ws.resources.settings)
    check_concurrency(req.concurrency)
    if req.workers > 1 and req.concurrency > 1:
        raise FlowkitError("--workers and --concurrency: choose one")
    goal = _objective(ws, req)
    space, flows = load(ws, req.space)
    ds = resolve(evaluations.eval_repo(ws), req.dataset)
    search_qs, confirm_qs = split(ds.questions, req.search_questions, req.confirm_questions)
    check_reference(goal.name, search_qs + confirm_qs, ds.name)
    sid = state_mod.search_id(Path(req.space).read_text(), ds.name, req.kb,
                              req.search_questions, req.confirm_questions, str(ws.data_dir))
    path = state_mod.state_path(req.space, sid)
    st = state_mod.load(path)
    resumed = st is not None
    if st is not None:
        st.check_objective(goal.name, goal.judge_model, path)
    else:
        st = state_mod.SearchState(sid, entries=_new_entries(space, flows),
                                   objective=goal.name, judge_model=goal.judge_model,
                                   judge_label=goal.judge_label)
        next_wave(space, flows, st)
    st.budget.calls, st.budget.hours = req.budget_calls, req.budget_hours
    return SearchPlan(req, space, flows, ds.name, search_qs, confirm_qs, path, st, resumed)


@dataclass
class Estimate:
    """The search's cost before it starts, in model calls."""

    candidates: int
    rungs: list[int]
    first_rung_calls: int
    all_calls: int
    confirm_calls: int
    budget: int
    workers: int = 1
    #: how many of the candidates are sampled now (the rest are asked in later waves)
    sampled: int = 0
    #: confirmation questions that share a supporting passage with a search question
    shared_passages: int = 0
    #: how the quality objective is named ('F1', 'groundedness (judge: ...)')
    objective: str = "F1"
    #: a judge objective's calls if none were dropped, and to confirm (0 for an answer metric)
    judge_calls: int = 0
    judge_confirm_calls: int = 0

    def describe(self) -> str:
        later = self.candidates - self.sampled if 0 < self.sampled < self.candidates else 0
        waves = (f" ({self.sampled} sampled now, {later} more asked in later waves)" if later
                 else "")
        return (f"{self.candidates} candidates raced on batches of {self.rungs} questions{waves}: "
                f"about "
                f"{self.first_rung_calls} model calls for the first batch, {self.all_calls} if "
                f"none were dropped, plus about {self.confirm_calls} to confirm (estimated from "
                f"the flows' model-calling nodes; the cache serves what candidates share); "
                f"budget {self.budget} calls; objective {self.objective}"
                + (f", about {self.judge_calls} judge calls if none were dropped plus about "
                   f"{self.judge_confirm_calls} to confirm (counted apart: not in the budget "
                   "nor in a candidate's cost)" if self.judge_calls else "")
                + (f"; on {self.workers} Ray workers" if self.workers > 1 else "")
                + (f"; note: {self.shared_passages} confirmation question(s) share a supporting "
                   "passage with the search questions, so their confirmation is not independent "
                   "of the search" if self.shared_passages else ""))


def estimate(plan: SearchPlan) -> Estimate:
    """Calls per question from each flow's model-calling nodes, times the questions raced."""
    r = plan.request
    sizes = rungs(len(plan.search_qs), r.first_batch, r.growth)
    entries = plan.state.entries
    per_q = [e.calls_per_q if e.calls_per_q is not None else e.prior_calls_q for e in entries]
    front_guess = sum(sorted(per_q)[:3]) + sum(p for e, p in zip(entries, per_q, strict=True)
                                               if e.hand_written)
    # the waves not asked yet: as many as max_candidates (and the space) leave, at the mean cost
    later = max(0, min(plan.space.max_candidates, size(plan.space, plan.flows)) - len(entries))
    per_q += [sum(per_q) / max(1, len(per_q))] * later
    goal = plan.state.quality()
    judge_q = goal.judge_calls_per_answer()
    confirmed = min(3, len(entries)) + sum(1 for e in entries if e.hand_written)
    return Estimate(len(per_q), sizes, math.ceil(sum(per_q) * sizes[0]),
                    math.ceil(sum(per_q) * sizes[-1]),
                    math.ceil(front_guess * len(plan.confirm_qs)), r.budget_calls, r.workers,
                    sampled=len(entries),
                    shared_passages=shared_passages(plan.search_qs, plan.confirm_qs),
                    objective=goal.label(),
                    judge_calls=math.ceil(judge_q * len(per_q) * sizes[-1]),
                    judge_confirm_calls=math.ceil(judge_q * confirmed * len(plan.confirm_qs)))


def _workspace(ws: Workspace, plan: SearchPlan, model: str) -> Workspace:
    if plan.workspaces is None:
        plan.workspaces = ModelWorkspaces(ws)
    return plan.workspaces.get(model)


def _evaluate(ws: Workspace, plan: SearchPlan, e: Entry, n: int, which: Split,
              stop: threading.Event | None, on_run: Callable[[Entry, str, Any], None] | None) -> Batch:
    qs = plan.search_qs if which == "search" else plan.confirm_qs
    eid = hashlib.sha1(f"{plan.state.search_id}/{e.key}/{which}".encode()).hexdigest()[:12]
    entry = FlowEntry(ref=e.flow_name or f"{plan.space.name}-{e.cid}", spec=plan.spec_of(e),
                      version=e.flow_version, label=e.cid)
    name = f"search {plan.space.name} {e.cid} on the {which} questions"
    full = EvalPlan(eid, name, plan.dataset, plan.request.kb, [entry], qs)
    wsm = _workspace(ws, plan, e.candidate.model)
    evaluations.record(wsm, full)
    part = EvalPlan(eid, name, plan.dataset, plan.request.kb, [entry], qs[:n])
    workers = plan.request.workers
    strategy = strategy_for(workers, plan.request.concurrency,
                            plan.worker_factory(wsm) if workers > 1 else None,
                            plan.request.ray_address)
    out = evaluations.run(wsm, part, EvalRun(
        strategy=strategy, stop=stop,
        progress=(lambda p: on_run(e, which, p)) if on_run else None))
    repo = evaluations.eval_repo(ws)
    if out.status == "done" and n < len(qs) and e.reached < len(qs):
        repo.set_status(eid, "stopped")     # a batch of its split, not all of it (Compare: Resume)
    results = collect_results(part, repo.runs(eid), repo.retrievals(eid))[e.cid]
    goal = plan.state.quality()
    if goal.is_judge:
        plan.verdicts.update(_judge(ws, plan, eid, e.cid, goal))
    score, runs = plan.metric(), e.runs(which)
    runs.eval_id = eid
    if results and (which == "confirm" or len(results) >= e.reached):   # to open in Replay
        runs.best_run = max(results, key=lambda q: (score(q), -q.tokens)).run_id
    return Batch(results, out.cost, out.status == "stopped")


def _judge(ws: Workspace, plan: SearchPlan, eid: str, cid: str,
           goal: Objective) -> dict[tuple[str, str], float]:
    """Grade the finished runs of evaluation `eid` not graded yet with the objective's judge and
    return its score per question of candidate `cid` ((cid, question id) -> score, as
    `Objective.metric` reads verdicts; an ungraded answer is absent); the judge's calls go to the budget's
    `judge` cost (never to the candidate's, never to the budget in calls). A judge model
    other than the workspace's is loaded once, with the search's other models, and stays loaded
    until the search ends."""
    if plan.workspaces is None:
        plan.workspaces = ModelWorkspaces(ws)
    out = grading.grade(ws, eid, [goal.name], model=goal.judge_model, models=plan.workspaces)
    plan.state.budget.judge += out.cost
    return {(cid, g.question_id): float(g.score)
            for g in grading.grade_repo(ws).grades(eid, grader=goal.name, model=out.model)
            if g.flow == cid and g.score is not None}


def _save_flow(ws: Workspace, plan: SearchPlan, e: Entry) -> None:
    spec = plan.spec_of(e)
    try:
        old, version = ws.store.get_flow(spec.name)
    except NotFoundError:
        old, version = None, None
    if old is not None and fingerprint(old) == fingerprint(spec):
        e.flow_name, e.flow_version = spec.name, version
        return
    e.flow_name, e.flow_version = spec.name, ws.store.save_flow(
        spec, version, message=f"flow search {plan.state.search_id}: {e.cid}")


def front_of(entries: list[Entry]) -> list[Entry]:
    """The kept entries on the score / tokens / seconds front, best score first."""
    kept = {e.cid: e for e in entries if e.status == KEPT and e.score is not None}
    pts = [Point(c, e.score or 0.0, e.tokens or 0.0, e.seconds or 0.0) for c, e in kept.items()]
    return [kept[p.cid] for p in pareto(pts)]


def _confirm(ws: Workspace, plan: SearchPlan, stop: threading.Event | None,
             on_run: Callable[[Entry, str, Any], None] | None, log: Callable[[str], None]) -> bool:
    st = plan.state
    chosen = front_of(st.entries) + [e for e in st.entries if e.hand_written]
    chosen = list({e.cid: e for e in chosen}.values())
    results: dict[str, list[QuestionResult]] = {}
    for e in chosen:
        log(f"confirming {e.cid} on {len(plan.confirm_qs)} questions")
        batch = _evaluate(ws, plan, e, len(plan.confirm_qs), "confirm", stop, on_run)
        st.budget.confirm_calls += batch.cost.computed
        st.budget.cached_calls += batch.cost.cached
        state_mod.save(plan.state_file, st)
        if batch.stopped:
            return False
        results[e.cid] = batch.results
    hand = [e.cid for e in chosen if e.hand_written]
    score = plan.metric()
    means = {cid: score.mean(res) for cid, res in results.items()}
    ref = max(hand, key=lambda c: means[c])
    for cid, res in results.items():
        d = paired(res, results[ref], score)
        m = summarize(cid, res)
        st.confirm[cid] = state_mod.Confirmation(means[cid], m.n, m.tokens, m.seconds, ref,
                                                 d.mean, d.low, d.high)
    return True


def _race_waves(ws: Workspace, plan: SearchPlan, stop: threading.Event | None,
                on_run: Callable[[Entry, str, Any], None] | None,
                log: Callable[[str], None]) -> bool:
    """Race wave after wave (see the module's docstring); False when stopped. A wave's race
    status is saved with its kept entries (in one write), before its candidates are told and the
    next wave asked, so a resumed search takes up exactly there: a kill just after a race ended
    on the budget resumes as 'budget', not as a finished race that asks one more wave."""
    st, r = plan.state, plan.request

    def save() -> None:
        state_mod.save(plan.state_file, st)
    while True:
        if not st.race_status or any(e.status == RACING for e in st.entries):
            race = Race(st.entries, len(plan.search_qs),
                        lambda e, n: _evaluate(ws, plan, e, n, "search", stop, on_run),
                        st.budget, first=r.first_batch, growth=r.growth, halving=r.halving,
                        halving_from=r.halving_from, score=plan.metric(),
                        save=save, ended=lambda status: setattr(st, "race_status", status),
                        log=log)
            st.race_status = race.run()
            save()
            if st.race_status == "stopped":
                return False
        study.tell(st.trials, _figures(st))
        b = st.budget
        if (st.race_status == "budget" or b.calls_left() <= 0
                or (b.hours is not None and b.elapsed_s >= b.hours * 3600)):
            save()
            return True
        told = sum(t.values is not None for t in st.trials)
        asked = next_wave(plan.space, plan.flows, st)
        if not asked:
            save()
            return True
        log(f"wave {st.trials[-1].wave}: {asked} new candidate(s) asked of Optuna, which was "
            f"told the {told} result(s) of the waves before")
        for e in st.entries:            # the kept of earlier waves race beside the new ones
            if e.status == KEPT and e.score is not None:
                e.status, e.reason = RACING, ""
        st.race_status = ""
        save()


def run(ws: Workspace, plan: SearchPlan, *, log: Callable[[str], None] = lambda m: None,
        on_run: Callable[[Entry, str, Any], None] | None = None,
        stop: threading.Event | None = None) -> state_mod.SearchState:
    """Race, save the kept candidates as flows, confirm the front; resumable at every step.
    `on_run(entry, 'search' | 'confirm', progress)` follows each question; `stop` ends it
    cleanly after the run in flight. Returns the state (phase 'done', or where it stopped).
    With `workers` > 1 one Ray session serves all its evaluations."""
    r = plan.request
    try:
        with ray_session(r.ray_address, r.workers) if r.workers > 1 else nullcontext():
            return _phases(ws, plan, stop, on_run, log)
    finally:
        if plan.workspaces is not None:
            plan.workspaces.close()


def _phases(ws: Workspace, plan: SearchPlan, stop: threading.Event | None,
            on_run: Callable[[Entry, str, Any], None] | None,
            log: Callable[[str], None]) -> state_mod.SearchState:
    """The race, the kept saved as flows, the confirmation: each phase resumes where it stopped."""
    st = plan.state
    if st.phase == "race":
        if not _race_waves(ws, plan, stop, on_run, log):
            return st
        for e in st.entries:
            if e.status == KEPT:
                _save_flow(ws, plan, e)
        st.phase = "confirm"
        state_mod.save(plan.state_file, st)
    if st.phase == "confirm":
        if not _confirm(ws, plan, stop, on_run, log):
            return st
        st.phase = "done"
        state_mod.save(plan.state_file, st)
    return st
