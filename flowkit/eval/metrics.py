"""Answer and retrieval metrics: pure functions over plain values (no storage, no model).

Answer metrics follow the SQuAD evaluation script: both strings are normalised (lowercase, drop
punctuation, drop the articles a/an/the, collapse whitespace) and the best score over the gold
aliases counts. Punctuation here is ASCII punctuation plus every Unicode punctuation character
(curly quotes, dashes, ...), so "“Tessel”" and "Tessel" match; letters keep their accents.

Per-question results are `QuestionResult`s; `summarize` averages them, `by_type` splits them by
question type and `paired_bootstrap` gives the difference of two flows on the same questions with a
95% bootstrap confidence interval (fixed seed, so a report is reproducible).
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..documents.provenance import chunk_at, gold_place
from ..text import normalize_answer

# the metrics a summary carries, in table order: (key, column title, higher is better)
METRICS: tuple[tuple[str, str, bool], ...] = (
    ("em", "EM", True), ("f1", "F1", True), ("acc", "Acc", True),
    ("recall", "R@k", True), ("tokens", "tokens/q", False), ("llm_calls", "LLM calls/q", False),
    ("seconds", "s/q", False),
)
PAIRED = ("em", "f1", "acc", "recall", "tokens", "seconds")


def _golds(golds: str | Iterable[str]) -> list[str]:
    return [golds] if isinstance(golds, str) else [g for g in golds if g is not None]


def exact_match(prediction: str | None, golds: str | Iterable[str]) -> float:
    """1.0 when the normalised prediction equals a normalised gold answer, else 0.0."""
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(g) for g in _golds(golds)))


def _f1(pred_tokens: list[str], gold_tokens: list[str]) -> float:
    if not pred_tokens or not gold_tokens:       # SQuAD 2.0: empty only matches empty
        return float(pred_tokens == gold_tokens)
    common = Counter(pred_tokens) & Counter(gold_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(pred_tokens)
    recall = same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str | None, golds: str | Iterable[str]) -> float:
    """Token-overlap F1 of the normalised strings, the best over the gold aliases (0.0 if none)."""
    pred = normalize_answer(prediction).split()
    scores = [_f1(pred, normalize_answer(g).split()) for g in _golds(golds)]
    return max(scores, default=0.0)


def accuracy(prediction: str | None, golds: str | Iterable[str]) -> float:
    """1.0 when a normalised gold answer occurs in the normalised prediction as whole words.

    Whole words, so the gold "no" is not found in "not known" and "1884" not in "18845".
    An empty gold never counts as contained.
    """
    pred = f" {normalize_answer(prediction)} "
    for g in _golds(golds):
        n = normalize_answer(g)
        if n and f" {n} " in pred:
            return 1.0
    return 0.0


#: A retrieved chunk as a run's steps recorded it: its chunk id, or a mapping with "id" and the
#: chunk metadata a gold place is matched against (doc_id, source, section_id, page_start,
#: page_end; see flowkit.documents.provenance).
Retrieved = str | Mapping[str, Any]


def doc_id_of(chunk_id: str) -> str:
    """The document id of a chunk id '<doc id>#<n>' (an id without '#' is a document id)."""
    return str(chunk_id).split("#", 1)[0]


def _chunk_id(item: Retrieved) -> str:
    return str(item.get("id")) if isinstance(item, Mapping) else str(item)


def _top(retrievals: Iterable[Sequence[Retrieved]], k: int | None) -> list[Retrieved]:
    return [item for ranked in retrievals for item in list(ranked)[: k if k is not None else None]]


def retrieved_doc_ids(retrievals: Iterable[Sequence[Retrieved]], k: int | None = None) -> list[str]:
    """Document ids in the top k of any of the given ranked lists of chunks, first seen first.

    `retrievals` holds one ranked list of chunks (ids, or `Retrieved` mappings) per search made
    in the run (every step, every query); k=None keeps whole lists.
    """
    return list(dict.fromkeys(doc_id_of(_chunk_id(item)) for item in _top(retrievals, k)))


def gold_found(gold: str, top: Sequence[Retrieved]) -> bool:
    """Whether a gold passage is among the retrieved chunks `top`.

    A gold naming a page range or a section ('file.pdf#p23-24', 'file.html#s4') is found by a
    chunk of that document that overlaps the pages or is in the section (`chunk_at`: it needs the
    chunk's metadata). Any other gold names a document: found, as always, by a chunk whose id
    '<doc id>#<n>' names it, or by a chunk whose metadata names it (its doc_id, its source or the
    source's file name; or the chunk id itself) where the run kept the metadata.
    """
    place = gold_place(gold)
    whole = not (place.first_page or place.section_id)
    for item in top:
        cid = _chunk_id(item)
        if whole and doc_id_of(cid) == gold:
            return True
        if isinstance(item, Mapping) and chunk_at(place, cid, item):
            return True
    return False


def recall_at_k(retrievals: Iterable[Sequence[Retrieved]], gold_doc_ids: Iterable[str],
                k: int | None = None) -> float | None:
    """Share of the gold passages found in the top k of any search of the run (None: no gold).

    recall@k = |{g in gold : gold_found(g, top k of every search)}| / |gold|; a gold is a
    document id (as before places existed, scored the same way) or a place (`gold_found`).
    """
    gold = {str(g) for g in gold_doc_ids}
    if not gold:
        return None
    top = _top(retrievals, k)
    return sum(gold_found(g, top) for g in gold) / len(gold)


@dataclass
class QuestionResult:
    """One flow's result on one question, with its scores and costs."""

    flow: str
    question_id: str
    question: str
    answers: list[str]
    prediction: str
    status: str
    type: str = ""
    em: float = 0.0
    f1: float = 0.0
    acc: float = 0.0
    recall: float | None = None
    tokens: int = 0
    llm_calls: int = 0
    seconds: float = 0.0
    run_id: str = ""
    retrieved: list[str] = field(default_factory=list)
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def score(flow: str, question: dict[str, Any], prediction: str, *, status: str = "ok",
          tokens: int = 0, llm_calls: int = 0, seconds: float = 0.0, run_id: str = "",
          retrievals: Iterable[Sequence[Retrieved]] = (), k: int | None = 5,
          error: str | None = None) -> QuestionResult:
    """Score one prediction against a question {id, question, answers, type, supporting_doc_ids}."""
    golds = [str(a) for a in question.get("answers") or []]
    retrievals = [list(r) for r in retrievals]
    return QuestionResult(
        flow=flow, question_id=str(question.get("id", "")), question=str(question.get("question", "")),
        answers=golds, prediction=prediction or "", status=status,
        type=str(question.get("type") or ""), em=exact_match(prediction, golds),
        f1=token_f1(prediction, golds), acc=accuracy(prediction, golds),
        recall=recall_at_k(retrievals, question.get("supporting_doc_ids") or [], k),
        tokens=int(tokens), llm_calls=int(llm_calls), seconds=float(seconds), run_id=run_id,
        retrieved=retrieved_doc_ids(retrievals), error=error)


@dataclass
class Summary:
    """Averages over a flow's questions. `recall` averages over questions with gold passages."""

    flow: str
    n: int
    em: float
    f1: float
    acc: float
    recall: float | None
    tokens: float
    llm_calls: float
    seconds: float
    failed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _mean(values: Iterable[float | None]) -> float | None:
    vals = [float(v) for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def summarize(flow: str, results: Sequence[QuestionResult]) -> Summary:
    """Mean EM, F1, Acc, recall@k, tokens (prompt + completion), LLM calls and seconds per question."""
    return Summary(
        flow=flow, n=len(results), em=_mean(r.em for r in results) or 0.0,
        f1=_mean(r.f1 for r in results) or 0.0, acc=_mean(r.acc for r in results) or 0.0,
        recall=_mean(r.recall for r in results), tokens=_mean(r.tokens for r in results) or 0.0,
        llm_calls=_mean(r.llm_calls for r in results) or 0.0,
        seconds=_mean(r.seconds for r in results) or 0.0,
        failed=sum(1 for r in results if r.status not in ("ok", "budget_exceeded")))


def by_type(flow: str, results: Sequence[QuestionResult]) -> dict[str, Summary]:
    """One summary per question type (questions without a type are grouped under '-')."""
    groups: dict[str, list[QuestionResult]] = {}
    for r in results:
        groups.setdefault(r.type or "-", []).append(r)
    return {t: summarize(flow, rs) for t, rs in sorted(groups.items())}


@dataclass
class PairedDiff:
    """flow minus baseline on the questions both answered: mean difference and 95% interval."""

    metric: str
    flow: str
    baseline: str
    n: int
    mean: float
    low: float
    high: float

    @property
    def significant(self) -> bool:
        """True when the interval excludes 0."""
        return self.n > 0 and (self.low > 0 or self.high < 0)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"significant": self.significant}


def bootstrap_ci(diffs: Sequence[float], n_resamples: int = 1000, seed: int = 0,
                 confidence: float = 0.95) -> tuple[float, float, float]:
    """(mean, low, high): the percentile bootstrap interval of the mean of paired differences."""
    d = np.asarray(list(diffs), dtype=float)
    if d.size == 0:
        return (math.nan, math.nan, math.nan)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, d.size, size=(n_resamples, d.size))
    means = d[idx].mean(axis=1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return (float(d.mean()), float(low), float(high))


def paired_bootstrap(results: Sequence[QuestionResult], baseline: Sequence[QuestionResult],
                     metric: str, n_resamples: int = 1000, seed: int = 0) -> PairedDiff:
    """Paired difference (flow - baseline) of a metric over the questions both have a value for."""
    base = {r.question_id: getattr(r, metric) for r in baseline}
    diffs = [float(getattr(r, metric)) - float(base[r.question_id]) for r in results
             if r.question_id in base and getattr(r, metric) is not None
             and base[r.question_id] is not None]
    mean, low, high = bootstrap_ci(diffs, n_resamples, seed)
    flow = results[0].flow if results else ""
    return PairedDiff(metric, flow, baseline[0].flow if baseline else "", len(diffs), mean, low, high)


def disagreements(per_flow: Mapping[str, Sequence[QuestionResult]]) -> list[str]:
    """Question ids on which the flows differ: different EM or different normalised answers."""
    by_q: dict[str, list[QuestionResult]] = {}
    for rs in per_flow.values():
        for r in rs:
            by_q.setdefault(r.question_id, []).append(r)
    out = []
    for qid, rs in by_q.items():
        if len(rs) < 2:
            continue
        if len({r.em for r in rs}) > 1 or len({normalize_answer(r.prediction) for r in rs}) > 1:
            out.append(qid)
    return out


Metric = Callable[[str | None, str | Iterable[str]], float]
ANSWER_METRICS: dict[str, Metric] = {"em": exact_match, "f1": token_f1, "acc": accuracy}
