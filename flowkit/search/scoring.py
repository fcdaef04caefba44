"""The search's quality as a function: one score per answer, passed to whatever ranks candidates.

A `Metric` is what DSPy calls a metric: a function of one answer (a `QuestionResult`) to a score
in 0..1, here with the word reasons and columns name it by. The race, its drop rule, successive
halving, Optuna's study and the quality / cost front all take one and read each answer's score
through it, so each works unchanged on any objective while a result's `f1` keeps meaning F1:

    score(r)            # the objective on one answer
    score.mean(rs)      # its mean over answers (0.0 on none)
    paired(rs, base, score)   # rs minus base on the questions both answered, 95% interval

`F1` is the default; `objective.Objective.metric` gives the others (EM, Acc, a judge's score).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..eval.metrics import PairedDiff, QuestionResult, bootstrap_ci

#: a score per answer, in 0..1
Score = Callable[[QuestionResult], float]


@dataclass(frozen=True)
class Metric:
    """A score per answer (`score`) and its name ('F1', 'EM', 'groundedness')."""

    name: str
    score: Score

    def __call__(self, result: QuestionResult) -> float:
        return float(self.score(result))

    def mean(self, results: Sequence[QuestionResult]) -> float:
        """The mean score over `results`; 0.0 when there are none."""
        values = [self(r) for r in results]
        return sum(values) / len(values) if values else 0.0


def _f1(result: QuestionResult) -> float:
    return result.f1


#: token F1 against the gold answers: the search's default quality
F1 = Metric("F1", _f1)


def paired(results: Sequence[QuestionResult], baseline: Sequence[QuestionResult],
           metric: Metric, n_resamples: int = 1000, seed: int = 0) -> PairedDiff:
    """`results` minus `baseline` on `metric`, over the questions both answered (paired by
    question id, in the order of `results`): the mean difference and its 95% percentile
    bootstrap interval (`flowkit.eval.metrics.bootstrap_ci`)."""
    base = {r.question_id: metric(r) for r in baseline}
    diffs = [metric(r) - base[r.question_id] for r in results if r.question_id in base]
    mean, low, high = bootstrap_ci(diffs, n_resamples, seed)
    return PairedDiff(metric.name, results[0].flow if results else "",
                      baseline[0].flow if baseline else "", len(diffs), mean, low, high)
