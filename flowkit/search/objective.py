"""What a search ranks its candidates on: an answer metric against gold answers (F1, EM, Acc) or a
model judge's score per question (`flowkit.eval.graders`) where a question set has no answers.

The race, the drop rule, successive halving, Optuna's study and the quality / cost front all take
the objective as a function of one answer (`Objective.metric`, a `scoring.Metric`), so each of
them works unchanged on any objective and a result's `f1` keeps meaning F1. The tokens objective
is the flow's own tokens whatever the quality objective is: a judge's calls are evaluation cost,
counted apart.

    flowkit search SPACE --dataset D --kb K ... --objective groundedness [--judge-model M]
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import FlowkitError
from ..eval.graders import GRADERS
from ..eval.metrics import QuestionResult
from .scoring import F1, Metric, Score

#: answer metrics against the question set's gold answers, as a result holds them
ANSWER_OBJECTIVES: dict[str, str] = {"f1": "F1", "em": "EM", "acc": "Acc"}
#: judges that compare the answer with a reference answer: refused on a set without answers
NEEDS_REFERENCE = frozenset({"correctness"})
#: judge calls per graded answer, for the estimate (context relevance asks once per passage read,
#: at most five; correctness once per reference until one says yes, usually one)
JUDGE_CALLS_PER_ANSWER: dict[str, float] = {"correctness": 1.0, "groundedness": 1.0,
                                            "answer_relevance": 1.0, "context_relevance": 5.0}
DEFAULT = "f1"

#: a judge's verdicts as the search reads them: (candidate id, question id) -> score
Verdicts = Mapping[tuple[str, str], float]


def _em(result: QuestionResult) -> float:
    return float(result.em)


def _acc(result: QuestionResult) -> float:
    return float(result.acc)


#: the answer metrics as functions of one answer
ANSWER_METRICS: dict[str, Metric] = {"f1": F1, "em": Metric("EM", _em),
                                     "acc": Metric("Acc", _acc)}


def names() -> list[str]:
    """Every objective a search accepts: the answer metrics, then the judges."""
    return [*ANSWER_OBJECTIVES, *GRADERS]


def check_name(name: str, field: str = "--objective") -> str:
    """`name` when it is an objective; FlowkitError naming `field` and the choices otherwise."""
    if name not in names():
        raise FlowkitError(f"{field}: unknown objective '{name}'; use one of {', '.join(names())}")
    return name


@dataclass(frozen=True)
class Objective:
    """A search's quality objective: its name, and for a judge the judge model as asked ('' the
    workspace's own) and as named beside its scores."""

    name: str = DEFAULT
    judge_model: str = ""
    judge_label: str = ""

    @property
    def is_judge(self) -> bool:
        return self.name in GRADERS

    @property
    def short(self) -> str:
        """'F1', 'EM', 'Acc' or the judge's name (a column header's word)."""
        return ANSWER_OBJECTIVES.get(self.name, self.name)

    def label(self) -> str:
        """'F1', or 'groundedness (judge: default:gemma3-270m)': how results name the objective."""
        if not self.is_judge:
            return self.short
        return f"{self.name} (judge: {self.judge_label or self.judge_model or 'default'})"

    def judge_calls_per_answer(self) -> float:
        """Judge calls one answer costs (0 for an answer metric), for the estimate."""
        return JUDGE_CALLS_PER_ANSWER.get(self.name, 0.0) if self.is_judge else 0.0

    def metric(self, verdicts: Verdicts | None = None) -> Metric:
        """The objective as a function of one answer, named by `short`: F1, EM or Acc as the
        result holds them, or the judge's score from `verdicts` ((candidate, question id) ->
        score, read when the metric is called: the search adds each batch's verdicts to the
        mapping it passed; an answer the judge did not grade, a failed run, scores 0)."""
        if self.name in ANSWER_METRICS:
            return ANSWER_METRICS[self.name]
        return Metric(self.short, _judged({} if verdicts is None else verdicts))


def check_reference(name: str, questions: Sequence[Mapping[str, Any]], dataset: str) -> None:
    """Refuse a judge that needs a reference answer when a question it would grade has none,
    naming the objective, the dataset and how many questions lack one."""
    if name not in NEEDS_REFERENCE:
        return
    missing = [str(q.get("id", "")) for q in questions if not q.get("answers")]
    if missing:
        shown = ", ".join(missing[:3]) + (", ..." if len(missing) > 3 else "")
        raise FlowkitError(
            f"--objective {name} compares each answer with a reference answer, but {len(missing)} "
            f"of the {len(questions)} search and confirmation questions of dataset '{dataset}' "
            f"have none ({shown}); pick a judge that needs none (groundedness, answer_relevance, "
            "context_relevance) or a set with answers")


def _judged(verdicts: Verdicts) -> Score:
    def score(result: QuestionResult) -> float:
        return float(verdicts.get((result.flow, result.question_id), 0.0))
    return score
