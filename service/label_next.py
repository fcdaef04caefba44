"""What to label next in a stored evaluation (`flowkit label EVAL_ID --next`): the answers whose
labels narrow a judge's interval most while it stays valid (`flowkit.eval.label_next` says how).

For a flow against the baseline (the first flow) on a judge whose truth depends on the answer
alone (correctness, answer relevance), the questions the two flows answered differently, each to
be labelled for both flows; the questions answered alike need no label. For the baseline alone, or
a judge that reads the passages, a random order of the unlabelled answers.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from flowkit.errors import FlowkitError
from flowkit.eval.graders import ANSWER_ONLY, GRADERS
from flowkit.eval.label_next import next_labels, same_answers

from .evaluations import stored_plan
from .grading import answers, grade_repo
from .passage_labels import METRIC as CONTEXT_RELEVANCE
from .workspace import Workspace


@dataclass(frozen=True)
class Suggestion:
    """One question to label next: its text and the answers to label on it, by flow."""

    question_id: str
    question: str
    answers: dict[str, str]


@dataclass
class NextLabels:
    """The next labels for `flow` (against `baseline`, or alone when they are the same) on
    `metric`: how many questions there are, how many need no label (`known`: answered alike),
    how many are labelled, and the first `suggestions` of those left."""

    eval_id: str
    metric: str
    flow: str
    baseline: str
    questions: int
    known: int
    labelled: int
    suggestions: list[Suggestion] = field(default_factory=list)

    @property
    def paired(self) -> bool:
        return self.flow != self.baseline

    def line(self) -> str:
        """Where the labels stand, in words."""
        if not self.paired:
            return (f"{self.flow} on {self.metric}: {self.labelled} of {self.questions} answers "
                    "labelled; with a yes/no judge every answer is worth the same to its score, "
                    "so these come in a random order.")
        alike = (f"{self.known} of {self.questions} questions answered alike (their difference "
                 "is 0 without a label); " if self.metric in ANSWER_ONLY else "")
        rest = self.questions - self.known
        return (f"{self.flow} against {self.baseline} on {self.metric}: {alike}{self.labelled} "
                f"of the other {rest} labelled for both flows; label each question below for "
                "both (a random order of those left, so the interval stays valid).")


def next_to_label(ws: Workspace, eval_id: str, metric: str = "correctness", flow: str = "",
                  n: int = 10) -> NextLabels:
    """The next `n` answers to label for `flow` (default: the second flow, or the only one)
    against the first flow on `metric`."""
    if metric not in GRADERS:
        raise FlowkitError(f"--metric: unknown '{metric}'; use {', '.join(GRADERS)}")
    if metric == CONTEXT_RELEVANCE:
        raise FlowkitError("--next: context relevance is labelled passage by passage (--passage); "
                           "choose --metric correctness, groundedness or answer_relevance")
    plan = stored_plan(ws, eval_id)
    flows = [f.label or f.ref for f in plan.flows]
    flow = flow or (flows[1] if len(flows) > 1 else flows[0])
    if flow not in flows:
        raise FlowkitError(f"--flow: '{flow}' is not a flow of evaluation {eval_id} "
                           f"({', '.join(flows)})")
    baseline = flows[0]
    said = answers(ws, plan)
    labels: dict[str, set[str]] = {f: set() for f in flows}
    for lab in grade_repo(ws).labels(eval_id, metric=metric):
        if lab.flow in labels:
            labels[lab.flow].add(lab.question_id)
    pair = [flow] if flow == baseline else [flow, baseline]
    order = [str(q["id"]) for q in plan.questions if all(str(q["id"]) in said[f] for f in pair)]
    known = (same_answers(said[flow], said[baseline])
             if flow != baseline and metric in ANSWER_ONLY else set())
    done = {q for q in order if all(q in labels[f] for f in pair)}
    text = {str(q["id"]): str(q.get("question", "")) for q in plan.questions}
    picked = next_labels(order, labelled=done, known=known, n=n)
    return NextLabels(eval_id, metric, flow, baseline, len(order), len(known & set(order)),
                      len(done - known),
                      [Suggestion(q, text[q], {f: said[f][q] for f in pair if q not in labels[f]})
                       for q in picked])
