"""Graders on a stored evaluation, labels from people, and intervals that hold (the one door the
CLI and the studio use).

`grade` reads each finished run's stored trace and asks the graders (no flow call runs again);
verdicts are stored per answer, grader and grader model, so grading again resumes (a verdict of an
older prompt version is made again) and a second grader model is kept beside the first. `scores`
reads them and people's labels (for context relevance also the passages they read:
service.passage_labels) and turns them into what a page shows (`flowkit.eval.judge_scores`: per
flow the PPI++ estimate with its 95% interval where people labelled answers, else the raw grader
mean marked uncorrected; and paired differences against the baseline the same way).
"""
from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from flowkit.cost import Cost
from flowkit.errors import FlowkitError
from flowkit.eval.criteria import Criterion, criterion, is_criterion
from flowkit.eval.graders import ANSWER_ONLY, GRADERS, Judge, check_names, grader_version
from flowkit.eval.grading import GradingSession, item_for
from flowkit.eval.judge_scores import judge_scores
from flowkit.eval.label_next import same_answers
from flowkit.eval.pairwise import is_pairwise
from flowkit.eval.reliability import ReliabilityCard, reliability_card, reorder_examples
from flowkit.eval.report import EvalReport, JudgeScore
from storage.criteria import CriterionRepo
from storage.grades import Grade, GradeRepo

from .evaluations import eval_repo, report, stored_plan
from .modelchoice import DEFAULT, ModelWorkspaces, model_problem
from .passage_labels import METRIC as CONTEXT_RELEVANCE
from .passage_labels import passage_truth
from .settings import DEFAULT_MODEL
from .workspace import Workspace


def grade_repo(ws: Workspace) -> GradeRepo:
    return GradeRepo(ws.store)


def model_name(ws: Workspace, model: str) -> str:
    """How a grader model is named wherever a grade is shown: the model id or the GGUF's file
    name ('default:<file or packaged id>' for the workspace's own; with no model path set, the
    packaged default's id, e.g. 'default:gemma3-270m')."""
    if model and model != DEFAULT:
        return model.rsplit("/", 1)[-1]
    path = str(getattr(ws.resources.settings.llm, "model_path", "") or "")
    return "default:" + (path.rsplit("/", 1)[-1] or DEFAULT_MODEL)


@dataclass
class GradeOutcome:
    """What a grading did: verdicts made and reused, and its own cost (never the flows')."""

    model: str
    graded: int = 0
    reused: int = 0
    cost: Cost = field(default_factory=Cost)
    unparsed: int = 0

    def line(self) -> str:
        c = self.cost
        return (f"graded {self.graded} answers ({self.reused} already graded) with {self.model}: "
                f"{c.calls} grader calls ({c.cached} from the cache), "
                f"{c.tokens} tokens, {c.ms / 1000:.1f} s of model time; "
                f"{self.unparsed} verdicts unparsed (scored 0.5){self._unparsed_help()}")

    def _unparsed_help(self) -> str:
        """What an unparsed verdict is and what helps, when there is one. A second way of asking
        was tried and dropped: Gemma 3 270M's reply to it followed the order of its examples, not
        the answer (yes to all 20 re-asked answers of 30, no to 12 of 13 with the order swapped)."""
        if not self.unparsed:
            return ""
        return (": the judge model replied with neither yes nor no. Labels correct for them (PPI); "
                "a larger judge model leaves fewer")


def check(graders: list[str], model: str) -> None:
    check_names(graders, "judge")
    check_model(model)


def check_model(model: str) -> None:
    """Refuse a judge model that cannot be loaded ('' and 'default' are the workspace's)."""
    if model and model != DEFAULT:
        why = model_problem(model)
        if why:
            raise FlowkitError(f"judge model: {why}")


def grade(ws: Workspace, eval_id: str, graders: list[str], *, model: str = "",
          on_progress: Callable[[int, int], None] | None = None,
          should_stop: Callable[[], bool] | None = None,
          models: ModelWorkspaces | None = None,
          criteria: Sequence[Criterion] = ()) -> GradeOutcome:
    """Grade every finished answer of evaluation `eval_id` with `graders` and the user's
    `criteria` on `model` (default: the workspace's). Answers graded before with the same grader
    (or criterion text) and model are kept. `models` (a caller's, e.g. a search's) keeps a judge
    model loaded between calls; without it the model is loaded here and closed at the end."""
    if graders or not criteria:
        check_names(graders, "judge")
    check_model(model)
    judges: dict[str, Judge] = {g: GRADERS[g] for g in graders}
    versions = {g: grader_version(g) for g in graders}
    for c in criteria:
        judges[c.name], versions[c.name] = c, c.version
        CriterionRepo(ws.store).put(c.name, c.text)     # its words, shown beside its scores
    graders = list(judges)
    repo = eval_repo(ws)
    plan = stored_plan(ws, eval_id)
    rep = report(repo, plan)
    questions = {str(q["id"]): q for q in plan.questions}
    grades = grade_repo(ws)
    label = model_name(ws, model)
    done = {(g.flow, g.question_id, g.grader) for g in grades.grades(eval_id, model=label)
            if g.version == versions.get(g.grader)}      # an older prompt's verdict: again
    todo = [(flow, r) for flow, rs in rep.results.items() for r in rs if r.status == "ok"]
    out = GradeOutcome(label)
    owned = models is None
    models = models or ModelWorkspaces(ws)
    try:
        session: GradingSession | None = None
        for i, (flow, r) in enumerate(todo, 1):
            if should_stop is not None and should_stop():
                raise FlowkitError("grading stopped; run it again to resume")
            missing = [g for g in graders if (flow, r.question_id, g) not in done]
            if not missing:
                out.reused += 1
            else:
                if session is None:
                    session = GradingSession(models.get(model).resources, ws.cache_store,
                                             run_id=f"grading-{eval_id}")
                item = item_for(questions.get(r.question_id, {"question": r.question,
                                                              "answers": r.answers}),
                                r.prediction, ws.store.steps(r.run_id))
                for g in missing:
                    res = session.grade(g, item, judges[g])
                    v = res.verdict
                    grades.put_grade(Grade(eval_id, flow, r.question_id, g, label, v.score,
                                           v.reason, v.parsed, versions[g], v.detail,
                                           res.cost))
                    out.cost += res.cost
                    out.unparsed += not v.parsed
                out.graded += 1
            if on_progress is not None:
                on_progress(i, len(todo))
    finally:
        if owned:
            models.close()
    return out


def spread(ws: Workspace, eval_id: str, graders: list[str], *, model: str = "",
           criteria: Sequence[Criterion] = (), sample: int = 20, seed: int = 0
           ) -> dict[str, tuple[int, int]]:
    """Per judge (a built-in of `graders`, or a criterion by name): of `sample` finished answers
    (a seeded random choice), asked once as graded and once with the prompt's worked examples in
    reverse order (`reliability.reorder_examples`), how many had a verdict both times and how many
    of those changed: {name: (asked, changed)}. Calls go through the completion cache."""
    judges: dict[str, Judge] = {g: GRADERS[g] for g in graders}
    judges.update({c.name: c for c in criteria})
    check_model(model)
    plan = stored_plan(ws, eval_id)
    rep = report(eval_repo(ws), plan)
    questions = {str(q["id"]): q for q in plan.questions}
    done = sorted((r for rs in rep.results.values() for r in rs if r.status == "ok"),
                  key=lambda r: r.run_id)
    picked = [done[i] for i in sorted(random.Random(seed).sample(range(len(done)),
                                                                 min(sample, len(done))))]
    out = {name: (0, 0) for name in judges}
    models = ModelWorkspaces(ws)
    try:
        resources = models.get(model).resources
        plain = GradingSession(resources, ws.cache_store, run_id=f"grading-{eval_id}")
        other = GradingSession(resources, ws.cache_store, run_id=f"grading-{eval_id}",
                               reword=reorder_examples)
        for r in picked:
            item = item_for(questions.get(r.question_id, {"question": r.question,
                                                          "answers": r.answers}),
                            r.prediction, ws.store.steps(r.run_id))
            for name, judge in judges.items():
                a = plain.grade(name, item, judge).verdict
                b = other.grade(name, item, judge).verdict
                if a.parsed and b.parsed:
                    asked, changed = out[name]
                    out[name] = (asked + 1, changed + (a.score != b.score))
    finally:
        models.close()
    return out


@dataclass
class JudgedReport:
    eval_id: str
    grader: str
    model: str
    baseline: str
    flows: list[JudgeScore] = field(default_factory=list)
    card: ReliabilityCard | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"eval_id": self.eval_id, "grader": self.grader, "model": self.model,
                "baseline": self.baseline,
                "reliability": self.card.to_dict() if self.card else None,
                "flows": [{"flow": f.flow, "estimate": f.estimate.to_dict(),
                           "corrected": f.corrected, "labels": f.labels,
                           "raw_mean": f.raw_mean, "labels_only_width": f.labels_only_width,
                           "judge_weight": f.weight.to_dict() if f.weight else None,
                           "vs_baseline": f.vs_baseline.to_dict() if f.vs_baseline else None,
                           "vs_judge_weight": f.vs_weight.to_dict() if f.vs_weight else None}
                          for f in self.flows]}


def scores(ws: Workspace, eval_id: str, grader: str, model: str = "", *,
           model_label: str | None = None) -> JudgedReport:
    """Per flow: the grader's mean corrected by the labels (PPI++) where there are labels, else
    uncorrected; paired differences against the first flow the same way (for a judge whose truth
    depends on the answer alone, a question both flows answered alike counts as a known
    difference of 0), and the judge's reliability card (its agreement with every labelled
    answer of every flow). `model_label` (as `graded` returns it) names the grader model instead
    of `model`."""
    label = model_label if model_label is not None else model_name(ws, model)
    plan = stored_plan(ws, eval_id)
    flows = [f.label or f.ref for f in plan.flows]
    repo = grade_repo(ws)
    by_flow: dict[str, dict[str, float]] = {f: {} for f in flows}
    for g in repo.grades(eval_id, grader=grader, model=label):
        if g.score is not None and g.flow in by_flow:
            by_flow[g.flow][g.question_id] = float(g.score)
    truth: dict[str, dict[str, float]] = {f: {} for f in flows}
    if grader == CONTEXT_RELEVANCE:          # passage labels: shares, where every passage is
        for f, shares in passage_truth(ws, plan).items():
            if f in truth:
                truth[f].update(shares)
    for lab in repo.labels(eval_id, metric=grader):           # an answer's own label wins
        if lab.flow in truth:
            truth[lab.flow][lab.question_id] = lab.value
    alike = None
    if grader in ANSWER_ONLY and flows:        # the same answer as the baseline: the same truth
        said = answers(ws, plan)
        alike = {f: same_answers(said[f], said[flows[0]]) for f in flows[1:]}
    pairs = [(by_flow[f][q], y) for f in flows for q, y in truth[f].items() if q in by_flow[f]]
    return JudgedReport(eval_id, grader, label, flows[0] if flows else "",
                        judge_scores(flows, by_flow, truth, grader=grader, model=label,
                                     same_answers=alike),
                        reliability_card(pairs, judge=grader, model=label))


def answers(ws: Workspace, plan: Any) -> dict[str, dict[str, str]]:
    """Each flow's answer per question id, for every question it has a run of (a failed run's
    answer is empty)."""
    from flowkit.eval.runner import collect_results
    got = collect_results(plan, eval_repo(ws).runs(plan.eval_id), {}, k=None)
    return {f.label or f.ref: {r.question_id: r.prediction for r in got.get(f.label, [])}
            for f in plan.flows}


# ---- what the Compare page reads and writes ---------------------------------------------------
#: The graders a person labels on the Compare page, with the words for 1 and 0.
LABEL_WORDS: dict[str, tuple[str, str]] = {"correctness": ("right", "wrong"),
                                           "groundedness": ("supported", "not supported")}


#: The words of a criterion's label (a criterion of your own, `criterion:<hash>`).
CRITERION_WORDS = ("meets it", "does not")


def label_words(metric: str) -> tuple[str, str]:
    """The words for 1 and 0 of a labelled metric: a built-in's, or a criterion's."""
    return LABEL_WORDS.get(metric) or CRITERION_WORDS


def criterion_from(text: str, field: str = "--criterion") -> Criterion:
    """The criterion written as `text` (`flowkit.eval.criteria.criterion`); a refusal names
    `field` (the CLI's option, or the studio's box)."""
    try:
        return criterion(text)
    except FlowkitError as err:
        raise FlowkitError(f"{field}:{str(err).partition(':')[2]}") from None


def criterion_texts(ws: Workspace, names: list[str]) -> dict[str, str]:
    """The words of the criteria among `names` (grader names), as the user wrote them."""
    wanted = [n for n in names if is_criterion(n)]
    return CriterionRepo(ws.store).texts(wanted) if wanted else {}


def graded(ws: Workspace, eval_id: str) -> list[tuple[str, str]]:
    """(grader, grader model as named) for every grader that has verdicts on this evaluation, in
    GRADERS order."""
    seen = {(g.grader, g.model) for g in grade_repo(ws).grades(eval_id)
            if not is_pairwise(g.grader)}
    order = list(GRADERS)
    return sorted(seen, key=lambda gm: (order.index(gm[0]) if gm[0] in order else len(order),
                                        gm[1]))


def all_scores(ws: Workspace, eval_id: str) -> list[JudgedReport]:
    """`scores` for every (grader, model) that graded this evaluation."""
    return [scores(ws, eval_id, g, model_label=m) for g, m in graded(ws, eval_id)]


def with_judges(ws: Workspace, rep: EvalReport) -> EvalReport:
    """`rep` (a report of evaluation `rep.eval_id`) with every stored judge's scores per flow and
    each answer's verdicts, for the exports (`flowkit eval --report/--csv/--out`); unchanged
    where nothing was graded."""
    rep.judges = [f for jr in all_scores(ws, rep.eval_id) for f in jr.flows
                  if f.flow in rep.results]
    verdicts: dict[str, dict[str, dict[str, float | None]]] = {}
    for g in _single(grade_repo(ws).grades(rep.eval_id)):
        verdicts.setdefault(g.flow, {}).setdefault(g.question_id, {})[
            f"{g.grader}@{g.model}"] = g.score
    rep.verdicts = verdicts
    return rep


def run_verdicts(ws: Workspace, run_id: str, eval_id: str | None) -> list[Grade]:
    """The judges' verdicts on one run's answer (the replay shows them): empty for a run outside
    an evaluation, or one nobody graded. An evaluation's run ids end in '-<flow>-<question>'
    (indices into its plan)."""
    if not eval_id or not run_id.startswith(eval_id + "-"):
        return []
    try:
        fi, qi = (int(x) for x in run_id[len(eval_id) + 1:].split("-"))
        plan = stored_plan(ws, eval_id)
        flow = plan.flows[fi].label or plan.flows[fi].ref
        qid = str(plan.questions[qi]["id"])
    except (ValueError, IndexError, FlowkitError):
        return []
    return [g for g in _single(grade_repo(ws).grades(eval_id))
            if g.flow == flow and g.question_id == qid]


def answer_grades(ws: Workspace, eval_id: str, question_id: str) -> list[Grade]:
    """Every verdict on the answers to one question (all flows, graders and models)."""
    return [g for g in _single(grade_repo(ws).grades(eval_id)) if g.question_id == question_id]


def _single(grades: list[Grade]) -> list[Grade]:
    """The verdicts on one answer each (a pairwise verdict, on two answers, is service.pairwise's)."""
    return [g for g in grades if not is_pairwise(g.grader)]


def answer_labels(ws: Workspace, eval_id: str, question_id: str) -> dict[tuple[str, str], float]:
    """People's labels on one question's answers: {(flow, metric): 1.0 or 0.0}."""
    return {(lab.flow, lab.metric): lab.value for lab in grade_repo(ws).labels(eval_id)
            if lab.question_id == question_id}


def set_label(ws: Workspace, eval_id: str, flow: str, question_id: str, metric: str,
              value: float | None) -> None:
    """Label one answer for `metric` (1 right / supported, 0 wrong / not) or remove its label
    (None). The flow and question must be the evaluation's."""
    if metric not in GRADERS and not is_criterion(metric):
        raise FlowkitError(f"label: unknown metric '{metric}'; use {', '.join(GRADERS)} or a "
                           "criterion's name (criterion:...)")
    if value is not None and value not in (0, 1):
        raise FlowkitError(f"label: the value is 1, 0 or none; got {value!r}")
    plan = stored_plan(ws, eval_id)
    flows = [f.label or f.ref for f in plan.flows]
    if flow not in flows:
        raise FlowkitError(f"label: '{flow}' is not a flow of evaluation {eval_id} "
                           f"({', '.join(flows)})")
    if question_id not in {str(q["id"]) for q in plan.questions}:
        raise FlowkitError(f"label: question '{question_id}' is not part of evaluation {eval_id}")
    grade_repo(ws).set_label(eval_id, flow, question_id, metric,
                             None if value is None else float(value))
