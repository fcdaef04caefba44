"""The pairwise judge on a stored evaluation (`flowkit judge EVAL_ID --pairwise A,B`): grade each
question both flows answered with "which answer is better?" in both orders, keep people's pairwise
labels, and the win rate of A over B with its interval (`flowkit.eval.pairwise`).

Verdicts are stored like the other judges' (storage.grades): on flow A's answer, under the grader
`pairwise:<B>` and the judge model's name, with both orders' verdicts; grading again keeps those of
the current version. The calls go through the completion cache (so B,A after A,B costs nothing)
and their cost is the grading's, never the flows'. A label of the pair given as B,A counts for A,B
the other way round.
"""
from __future__ import annotations

from collections.abc import Callable

from flowkit.errors import FlowkitError
from flowkit.eval.graders import Item
from flowkit.eval.grading import GradingSession
from flowkit.eval.pairwise import (
    A_BETTER,
    B_BETTER,
    PAIRWISE_VERSION,
    TIE,
    PairVerdict,
    WinRate,
    pair_grader,
    win_rate,
)
from flowkit.eval.reliability import ReliabilityCard, reliability_card
from storage.grades import Grade

from .evaluations import eval_repo, report, stored_plan
from .grading import GradeOutcome, check_model, grade_repo, model_name
from .modelchoice import ModelWorkspaces
from .workspace import Workspace

#: a pairwise label's words: A's answer better, the same, B's better
LABEL_VALUES: dict[str, float | None] = {"a": A_BETTER, "tie": TIE, "same": TIE, "b": B_BETTER,
                                         "clear": None}


def parse_pair(text: str, flows: list[str]) -> tuple[str, str]:
    """'A,B' -> (A, B), two different flows of `flows` (the evaluation's)."""
    names = [n.strip() for n in (text or "").split(",") if n.strip()]
    if len(names) != 2 or names[0] == names[1]:
        raise FlowkitError(f"--pairwise: name two different flows as A,B; got '{text}'")
    bad = [n for n in names if n not in flows]
    if bad:
        raise FlowkitError(f"--pairwise: '{bad[0]}' is not a flow of this evaluation "
                           f"({', '.join(flows)})")
    return names[0], names[1]


def _flows(ws: Workspace, eval_id: str) -> list[str]:
    return [f.label or f.ref for f in stored_plan(ws, eval_id).flows]


def pair(ws: Workspace, eval_id: str, text: str) -> tuple[str, str]:
    """`parse_pair` against evaluation `eval_id`'s flows."""
    return parse_pair(text, _flows(ws, eval_id))


def grade_pairwise(ws: Workspace, eval_id: str, a: str, b: str, *, model: str = "",
                   on_progress: Callable[[int, int], None] | None = None) -> GradeOutcome:
    """Ask the pairwise judge on `model` (default: the workspace's) about every question both
    flows answered; verdicts of the current version already stored are kept."""
    check_model(model)
    plan = stored_plan(ws, eval_id)
    rep = report(eval_repo(ws), plan)
    questions = {str(q["id"]): q for q in plan.questions}
    got = {f: {r.question_id: r for r in rep.results.get(f, []) if r.status == "ok"}
           for f in (a, b)}
    todo = [q for q in got[a] if q in got[b]]
    grades, label, grader = grade_repo(ws), model_name(ws, model), pair_grader(b)
    done = {g.question_id for g in grades.grades(eval_id, grader=grader, model=label)
            if g.flow == a and g.version == PAIRWISE_VERSION}
    out = GradeOutcome(label)
    models = ModelWorkspaces(ws)
    try:
        session: GradingSession | None = None
        for i, qid in enumerate(todo, 1):
            if qid in done:
                out.reused += 1
            else:
                session = session or GradingSession(models.get(model).resources, ws.cache_store,
                                                    run_id=f"grading-{eval_id}")
                ra, rb = got[a][qid], got[b][qid]
                q = questions.get(qid, {"question": ra.question, "answers": ra.answers})
                refs = tuple(str(x) for x in q.get("answers") or [])
                v, cost = session.pairwise(Item(str(q.get("question", "")), ra.prediction, refs),
                                           Item(str(q.get("question", "")), rb.prediction, refs))
                grades.put_grade(Grade(eval_id, a, qid, grader, label, v.score, v.reason,
                                       v.parsed, PAIRWISE_VERSION, list(v.orders), cost))
                out.cost += cost
                out.unparsed += not v.parsed
                out.graded += 1
            if on_progress is not None:
                on_progress(i, len(todo))
    finally:
        models.close()
    return out


def verdicts(ws: Workspace, eval_id: str, a: str, b: str, model_label: str
             ) -> dict[str, PairVerdict]:
    """The stored pairwise verdicts of A against B by `model_label`, per question id."""
    return {g.question_id: PairVerdict(float(g.score), tuple(g.detail), g.reason)
            for g in grade_repo(ws).grades(eval_id, grader=pair_grader(b), model=model_label)
            if g.flow == a and g.score is not None and g.version == PAIRWISE_VERSION}


def labels(ws: Workspace, eval_id: str, a: str, b: str) -> dict[str, float]:
    """People's pairwise labels of A against B per question id (1 A better, 0.5 the same, 0 B
    better); a label given for B,A counts the other way round, and one for A,B wins."""
    repo = grade_repo(ws)
    out = {lab.question_id: 1.0 - lab.value for lab in repo.labels(eval_id, metric=pair_grader(a))
           if lab.flow == b}
    out.update({lab.question_id: lab.value for lab in repo.labels(eval_id, metric=pair_grader(b))
                if lab.flow == a})
    return out


def set_pairwise_label(ws: Workspace, eval_id: str, a: str, b: str, question_id: str,
                       value: float | None) -> None:
    """Label which of A's and B's answers to one question is better (1 A, 0.5 the same, 0 B) or
    remove the label (None)."""
    if value is not None and value not in (A_BETTER, TIE, B_BETTER):
        raise FlowkitError(f"label: a pairwise value is 1, 0.5, 0 or none; got {value!r}")
    flows = _flows(ws, eval_id)
    parse_pair(f"{a},{b}", flows)
    if question_id not in {str(q["id"]) for q in stored_plan(ws, eval_id).questions}:
        raise FlowkitError(f"label: question '{question_id}' is not part of evaluation {eval_id}")
    repo = grade_repo(ws)
    repo.set_label(eval_id, b, question_id, pair_grader(a), None)     # the pair's other way
    repo.set_label(eval_id, a, question_id, pair_grader(b), value)


def card(ws: Workspace, eval_id: str, a: str, b: str, model: str = "", *,
         model_label: str | None = None) -> ReliabilityCard:
    """The pairwise judge's reliability card for A against B: agreement with the pairwise
    labels (A better / tie / B better) and the share of verdicts that flip when A and B swap."""
    label = model_label if model_label is not None else model_name(ws, model)
    vs = verdicts(ws, eval_id, a, b, label)
    truth = labels(ws, eval_id, a, b)
    return reliability_card([(vs[q].score, y) for q, y in truth.items() if q in vs],
                            judge=f"pairwise {a} vs {b}", model=label,
                            categories=(f"{a} better", "tie", f"{b} better"),
                            asked=sum(v.asked and v.parsed for v in vs.values()),
                            flips=sum(v.flipped for v in vs.values()))


def win(ws: Workspace, eval_id: str, a: str, b: str, model: str = "", *,
        model_label: str | None = None) -> WinRate:
    """The win rate of A over B by the pairwise judge on `model` (or the one named
    `model_label`), corrected by the pairwise labels where there are some."""
    label = model_label if model_label is not None else model_name(ws, model)
    return win_rate(verdicts(ws, eval_id, a, b, label), labels(ws, eval_id, a, b), a=a, b=b,
                    model=label)


def graded_pairs(ws: Workspace, eval_id: str) -> list[tuple[str, str, str]]:
    """(A, B, judge model as named) for every pair the pairwise judge graded on this evaluation
    (the Compare page lists their win rates)."""
    flows = _flows(ws, eval_id)
    by_name = {pair_grader(f): f for f in flows}
    seen = {(g.flow, by_name[g.grader], g.model) for g in grade_repo(ws).grades(eval_id)
            if g.grader in by_name and g.flow in flows and g.version == PAIRWISE_VERSION}
    return sorted(seen, key=lambda p: (flows.index(p[0]), flows.index(p[1]), p[2]))
