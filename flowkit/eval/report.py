"""An evaluation's report as data: per-flow metrics, paired deltas against a baseline, the
per-type breakdown, the questions the flows disagree on, the judges' scores and how steady the
flows' ranking is. How it reads as text is `formatting`; its charts `charts`; its files
(JSON, CSV, Markdown, HTML) `exports`."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import FlowkitError
from .metrics import (
    PAIRED,
    PairedDiff,
    QuestionResult,
    Summary,
    by_type,
    disagreements,
    paired_bootstrap,
    summarize,
)
from .ppi_pp import JudgeWeight
from .ranking import half_split_taus


@dataclass
class JudgeScore:
    """A model judge's score of one flow (made by `judge_scores`, shown by the reports and the
    Compare page): with labels, the power-tuned prediction-powered estimate (PPI++) and its 95%
    interval (`corrected`), beside the judge's raw mean, the labels-only interval's width and what
    the judge was worth (`weight`: its weight and effective number of labels); without, the
    judge's raw mean with a bootstrap interval, marked uncorrected. `model` names the judge's
    model wherever the score is shown; `vs_baseline` is the paired difference against the first
    flow (PPI++ where some questions are labelled for both flows: `vs_corrected`, with
    `vs_weight`)."""

    flow: str
    grader: str
    model: str
    estimate: PairedDiff
    corrected: bool
    labels: int
    raw_mean: float = math.nan
    labels_only_width: float | None = None
    vs_baseline: PairedDiff | None = None
    vs_corrected: bool = False
    weight: JudgeWeight | None = None
    vs_weight: JudgeWeight | None = None

    @property
    def width(self) -> float:
        """The estimate's interval width."""
        return self.estimate.high - self.estimate.low

    def to_dict(self) -> dict[str, Any]:
        return {"flow": self.flow, "grader": self.grader, "model": self.model,
                "estimate": self.estimate.to_dict(), "corrected": self.corrected,
                "labels": self.labels,
                "judge_weight": self.weight.to_dict() if self.weight else None,
                "vs_baseline": self.vs_baseline.to_dict() if self.vs_baseline else None,
                "vs_judge_weight": self.vs_weight.to_dict() if self.vs_weight else None}


@dataclass
class EvalReport:
    """Everything shown about one evaluation; flows in column order, the baseline first."""

    eval_id: str
    name: str
    dataset: str
    kb: str
    flows: list[str]
    baseline: str
    k: int | None
    planned: int
    results: dict[str, list[QuestionResult]]
    summaries: dict[str, Summary] = field(default_factory=dict)
    types: dict[str, dict[str, Summary]] = field(default_factory=dict)
    deltas: dict[str, list[PairedDiff]] = field(default_factory=dict)
    disagreements: list[str] = field(default_factory=list)
    #: model judges' scores per flow (empty until the evaluation is graded: `flowkit judge`)
    judges: list[JudgeScore] = field(default_factory=list)
    #: each answer's verdicts: {flow: {question id: {"grader@model": score or None}}}
    verdicts: dict[str, dict[str, dict[str, float | None]]] = field(default_factory=dict)
    #: how its runs went, a record per session that ran it differently ({"concurrency": N,
    #: "server_parallel": P, "requested": M, "workers": W}; flowkit.eval.concurrent)
    execution: list[dict[str, Any]] = field(default_factory=list)
    #: Kendall's tau between the flows' F1 on two random halves of the questions every flow
    #: answered, for 200 splits, sorted (empty for fewer than 3 flows or 10 such questions)
    steadiness: list[float] = field(default_factory=list)

    @property
    def recall_title(self) -> str:
        return f"R@{self.k}" if self.k else "R@all"

    def to_dict(self) -> dict[str, Any]:
        return {"eval_id": self.eval_id, "name": self.name, "dataset": self.dataset, "kb": self.kb,
                "flows": self.flows, "baseline": self.baseline, "recall_k": self.k,
                "questions_planned": self.planned,
                "summary": {f: s.to_dict() for f, s in self.summaries.items()},
                "by_type": {f: {t: s.to_dict() for t, s in ts.items()}
                            for f, ts in self.types.items()},
                "vs_baseline": {f: [d.to_dict() for d in ds] for f, ds in self.deltas.items()},
                "disagreements": self.disagreements,
                "judges": [j.to_dict() for j in self.judges],
                "execution": self.execution,
                "ranking_steadiness": steadiness_summary(self.steadiness),
                "results": {f: [r.to_dict() for r in rs] for f, rs in self.results.items()}}


def build_report(results: dict[str, list[QuestionResult]], *, eval_id: str = "", name: str = "",
                 dataset: str = "", kb: str = "", baseline: str | None = None, k: int | None = 5,
                 planned: int = 0, n_resamples: int = 1000, seed: int = 0) -> EvalReport:
    """Summaries, per-type breakdown and paired bootstrap deltas against the baseline flow."""
    flows = list(results)
    if not flows:
        raise FlowkitError("nothing to report: no flows")
    base = baseline or flows[0]
    if base not in results:
        raise FlowkitError(f"baseline '{base}' is not one of the flows ({', '.join(flows)})")
    rep = EvalReport(eval_id, name, dataset, kb, flows, base, k,
                     planned or max((len(r) for r in results.values()), default=0), results)
    for f, rs in results.items():
        rep.summaries[f] = summarize(f, rs)
        rep.types[f] = by_type(f, rs)
        if f != base:
            rep.deltas[f] = [paired_bootstrap(rs, results[base], m, n_resamples, seed)
                             for m in PAIRED]
    rep.disagreements = disagreements(results)
    rep.steadiness = _steadiness(results)
    return rep


#: the fewest flows and questions a ranking's steadiness is worth reporting for
STEADY_MIN_FLOWS = 3
STEADY_MIN_QUESTIONS = 10


def _steadiness(results: dict[str, list[QuestionResult]]) -> list[float]:
    if len(results) < STEADY_MIN_FLOWS:
        return []
    by_flow = {f: {r.question_id: float(r.f1 or 0) for r in rs} for f, rs in results.items()}
    common = [q for q in next(iter(by_flow.values())) if all(q in v for v in by_flow.values())]
    if len(common) < STEADY_MIN_QUESTIONS:
        return []
    return half_split_taus({f: [v[q] for q in common] for f, v in by_flow.items()})


def steadiness_summary(taus: Sequence[float]) -> dict[str, float] | None:
    """{"median", "q1", "q3", "splits"} of a report's half-split taus (None without them)."""
    if not taus:
        return None
    n = len(taus)
    return {"median": taus[n // 2], "q1": taus[n // 4], "q3": taus[3 * n // 4], "splits": n}
