"""Racing over growing batches of questions, with a paired-interval drop rule.

Every candidate still racing answers the first n search questions, for n in `rungs` (10, 20, 40,
... up to the whole split). After each rung the best candidate (highest mean score) is the
reference: a candidate whose paired 95% bootstrap interval of its score minus the best's lies
entirely below 0 is
dropped, and the reason (figures, interval, questions) is kept. With `halving` > 1 the rung also
keeps only the top 1/halving of the rest (successive halving), ranked as the search is judged:
by quality / cost front layer on the rung's questions (F1 up, tokens per question down;
`front.front_layers`), best F1 first within a layer, so a cheap candidate that no other beats on
both survives beside the best F1 (ranked on F1 alone, the halving emptied the front of every
cheap point). `halving_from` holds the halving back until a batch has that many questions (the
interval rule acts from the first): F1 on 20 questions moves by about 10 points between samples
of HotpotQA, enough to halve a good candidate away on luck (bench/halving_noise.py measures how
often). Before each evaluation the budget is checked: in model calls (estimated from the
candidate's calls per question so far) and, if given, in hours; a race that would pass it ends
there and keeps who is still racing.

The score is the search's quality objective, passed to the race as a function of one answer
(`score`, a `scoring.Metric`; F1 unless the search names another: `objective.Objective.metric`),
which also names it in the reasons; "F1" above stands for it, so the same rules judge every
objective.

`Race.run` is resumable: the evaluation callback skips the runs already stored, so running the
same race again redoes nothing and comes to the same decisions. Its end ('done' or 'budget') is
handed to `ended` before the save that marks the survivors kept, so a saved state never holds the
kept entries without the reason the race ended (a resumed race would otherwise see nobody racing
and call it 'done').
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from ..cost import Cost
from ..eval.metrics import QuestionResult, summarize
from .candidates import Candidate
from .front import Point, front_layers
from .scoring import F1, Metric, paired

RACING, DROPPED, KEPT = "racing", "dropped", "kept"
#: the two question splits a candidate answers: the race's and the confirmation's
Split = Literal["search", "confirm"]


@dataclass
class Runs:
    """Where a candidate's answers on one split are: its evaluation, and the run of its best
    answer (highest score, then fewest tokens) to open in Replay ('' until known)."""

    eval_id: str = ""
    best_run: str = ""


def _number(value: object) -> float | None:
    """A stored figure as a float (None stays None); TypeError for anything else."""
    if value is None or isinstance(value, float):
        return value
    if isinstance(value, int):
        return float(value)
    raise TypeError(f"not a number: {value!r}")


@dataclass
class Entry:
    """One candidate in the race and what is known of it."""

    cid: str
    candidate: Candidate
    key: str
    status: str = RACING
    reason: str = ""
    reached: int = 0
    #: the mean of the search's quality objective (F1 unless the search state names another)
    score: float | None = None
    tokens: float | None = None
    seconds: float | None = None
    calls_per_q: float | None = None
    prior_calls_q: float = 1.0
    flow_name: str = ""
    flow_version: int | None = None
    #: one of the space's own flows as written (the confirmation's reference), not sampled
    hand_written: bool = False
    #: the wave of Optuna's asks that gave it (None for a hand-written flow)
    wave: int | None = None
    search_runs: Runs = field(default_factory=Runs)
    confirm_runs: Runs = field(default_factory=Runs)

    def runs(self, which: Split) -> Runs:
        """Its evaluation and best answer on the `which` split."""
        return self.search_runs if which == "search" else self.confirm_runs

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Entry:
        """The entry `to_dict` wrote. A state saved before the typed fields reads the same: its
        score under 'f1', its wave, hand-written mark and evaluations under 'extra'."""
        old = dict(d.get("extra") or {})

        def runs(key: str, old_eval: str, old_best: str) -> Runs:
            new = d.get(key)
            if isinstance(new, Mapping):
                return Runs(str(new.get("eval_id") or ""), str(new.get("best_run") or ""))
            return Runs(str(old.get(old_eval) or ""), str(old.get(old_best) or ""))
        wave = d.get("wave", old.get("wave"))
        version = d.get("flow_version")
        return cls(str(d["cid"]), Candidate.from_dict(d["candidate"]), str(d["key"]),
                   str(d.get("status", RACING)), str(d.get("reason", "")),
                   int(d.get("reached", 0)), _number(d.get("score", d.get("f1"))),
                   _number(d.get("tokens")), _number(d.get("seconds")),
                   _number(d.get("calls_per_q")), float(d.get("prior_calls_q", 1.0)),
                   str(d.get("flow_name") or ""), None if version is None else int(version),
                   bool(d.get("hand_written", old.get("hand_written", False))),
                   None if wave is None else int(wave),
                   runs("search_runs", "search_eval", "search_best_run"),
                   runs("confirm_runs", "confirm_eval", "confirm_best_run"))

    def absorb(self, results: Sequence[QuestionResult], score: Metric) -> None:
        """Take the figures of the questions answered so far, `score` the objective on each
        (kept when fewer: a candidate of an earlier wave raced again keeps its figures on all
        the questions it answered)."""
        n = len(results)
        if n < self.reached:
            return
        self.reached = n
        if n:
            m = summarize(self.cid, results)
            self.score, self.tokens, self.seconds, self.calls_per_q = (
                score.mean(results), m.tokens, m.seconds, m.llm_calls)


@dataclass
class Budget:
    """Model calls (computed, not served from the cache) and hours the race may spend; the
    confirmation's calls are counted apart (`confirm_calls`), outside the budget, and so are a
    judge objective's (`judge`)."""

    calls: int
    hours: float | None = None
    spent_calls: int = 0
    cached_calls: int = 0
    elapsed_s: float = 0.0
    confirm_calls: int = 0
    #: a judge objective's calls (race and confirmation; those the cache served among them) and
    #: tokens: evaluation cost, never a candidate's and outside the budget in calls
    judge: Cost = field(default_factory=Cost)

    def calls_left(self) -> int:
        return self.calls - self.spent_calls

    def to_dict(self) -> dict[str, Any]:
        """The saved form, in the keys a search's state file has always had (the judge's model
        time is not kept)."""
        return {"calls": self.calls, "hours": self.hours, "spent_calls": self.spent_calls,
                "cached_calls": self.cached_calls, "elapsed_s": self.elapsed_s,
                "confirm_calls": self.confirm_calls, "judge_calls": self.judge.calls,
                "judge_cached_calls": self.judge.cached, "judge_tokens": self.judge.tokens}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Budget:
        """A budget as `to_dict` saved it."""
        judge = Cost(int(d.get("judge_calls", 0)), int(d.get("judge_cached_calls", 0)),
                     int(d.get("judge_tokens", 0)))
        own = {k: v for k, v in d.items() if not k.startswith("judge_")}
        return cls(**own, judge=judge)


@dataclass
class Batch:
    """What one evaluation call returns: the results on the first n questions, what its calls
    cost (computed and those the cache served), and whether it was stopped before the end."""

    results: list[QuestionResult]
    cost: Cost = field(default_factory=Cost)
    stopped: bool = False


Evaluate = Callable[[Entry, int], Batch]


def rungs(total: int, first: int = 10, growth: float = 2.0) -> list[int]:
    """Batch sizes: first, first*growth, ... and the whole split last."""
    out, n = [], max(1, first)
    while n < total:
        out.append(n)
        n = max(n + 1, math.ceil(n * growth))
    return [*out, total]


def drop_worse(results: dict[str, list[QuestionResult]], best: str, n_resamples: int = 1000,
               min_pairs: int = 3, score: Metric = F1) -> dict[str, str]:
    """cid -> reason for each candidate whose paired 95% interval of `score` (the search's
    objective, named in the reason) minus `best`'s lies entirely below 0 (on at least
    `min_pairs` shared questions)."""
    out = {}
    for cid, res in results.items():
        if cid == best or not res:
            continue
        d = paired(res, results[best], score, n_resamples=n_resamples)
        if d.n >= min_pairs and d.high < 0:
            out[cid] = (f"{score.name} {100 * d.mean:+.1f} [{100 * d.low:+.1f}, "
                        f"{100 * d.high:+.1f}] "
                        f"against {best} on {d.n} questions: the interval is below 0")
    return out


@dataclass(frozen=True)
class Halved:
    """A candidate successive halving drops: its rank of `of`, its front layer, its figures
    (mean score and tokens per question)."""

    cid: str
    rank: int
    of: int
    layer: int
    score: float
    tokens: float


def halve(results: Mapping[str, Sequence[QuestionResult]], halving: float,
          score: Metric = F1) -> tuple[int, list[Halved]]:
    """(how many stay, those dropped) when successive halving by `halving` judges candidates on
    their results (the same questions for each): ranked by front layer of mean `score` (up) and
    tokens per question (down), best score first within a layer, the top ceil(k / halving)
    stay (at least 2)."""
    ranked = front_layers([Point(c, score.mean(res), summarize(c, res).tokens, 0.0)
                           for c, res in results.items()])
    order = [p for layer in ranked for p in layer]
    layer_of = {p.cid: i for i, layer in enumerate(ranked, start=1) for p in layer}
    keep = max(2, math.ceil(len(order) / halving))
    return keep, [Halved(p.cid, rank, len(order), layer_of[p.cid], p.score, p.tokens)
                  for rank, p in enumerate(order[keep:], start=keep + 1)]


class Race:
    """Race entries on growing batches of `total` questions (see the module's docstring)."""

    def __init__(self, entries: list[Entry], total: int, evaluate: Evaluate, budget: Budget, *,
                 first: int = 10, growth: float = 2.0, halving: float = 0.0,
                 halving_from: int = 0, save: Callable[[], None] = lambda: None,
                 ended: Callable[[str], None] = lambda status: None,
                 log: Callable[[str], None] = lambda msg: None,
                 clock: Callable[[], float] = time.monotonic, score: Metric = F1) -> None:
        self.entries, self.total, self.evaluate = entries, total, evaluate
        self.budget, self.first, self.growth, self.halving = budget, first, growth, halving
        self.halving_from = halving_from
        self.save, self.ended, self.log, self.clock = save, ended, log, clock
        #: the search's objective on one answer, and its name in the reasons
        self.score = score

    def alive(self) -> list[Entry]:
        return [e for e in self.entries if e.status == RACING]

    def _over_budget(self, e: Entry, n: int) -> str:
        if self.budget.hours is not None and self.budget.elapsed_s >= self.budget.hours * 3600:
            return f"the budget of {self.budget.hours:g} h is spent"
        per_q = e.calls_per_q if e.calls_per_q is not None else e.prior_calls_q
        need = math.ceil(per_q * max(0, n - e.reached))
        if need and need > self.budget.calls_left():
            return (f"{e.cid} on {n} questions needs about {need} model calls; "
                    f"{self.budget.calls_left()} of {self.budget.calls} are left")
        return ""

    def _run_one(self, e: Entry, n: int) -> Batch:
        t0 = self.clock()
        batch = self.evaluate(e, n)
        self.budget.elapsed_s += self.clock() - t0
        self.budget.spent_calls += batch.cost.computed
        self.budget.cached_calls += batch.cost.cached
        e.absorb(batch.results, self.score)
        self.save()
        return batch

    def _decide(self, n: int, results: dict[str, list[QuestionResult]]) -> None:
        alive = [e for e in self.alive() if e.cid in results]
        if len(alive) < 2:
            return
        best = max(alive, key=lambda e: (e.score or 0.0, -(e.tokens or 0.0)))
        for cid, reason in drop_worse(results, best.cid, score=self.score).items():
            e = next(x for x in alive if x.cid == cid)
            e.status, e.reason = DROPPED, f"after {n} questions: {reason}"
            self.log(f"dropped {cid}: {e.reason}")
        if self.halving > 1 and self.halving_from <= n < self.total:
            # every candidate judged on the same n questions (one of an earlier wave raced
            # again has figures on more: a small batch's luck must not beat them)
            judged = {e.cid: e for e in self.alive() if e.cid in results}
            keep, dropped = halve({c: results[c] for c in judged}, self.halving, self.score)
            for h in dropped:
                e = judged[h.cid]
                e.status = DROPPED
                e.reason = (f"after {n} questions: successive halving kept the top {keep}; "
                            f"ranked {h.rank} of {h.of} on {self.score.name} and tokens on "
                            f"those questions ({100 * h.score:.1f}, {h.tokens:.0f} tokens/q; "
                            f"front layer {h.layer})")
                self.log(f"dropped {e.cid}: {e.reason}")

    def run(self) -> str:
        """Race to the end: 'done', 'budget' (a budget ended it) or 'stopped' (the evaluation
        callback was stopped; run again to resume)."""
        for n in rungs(self.total, self.first, self.growth):
            order = sorted(self.alive(),
                           key=lambda e: -(e.score if e.score is not None else 1.0))
            results: dict[str, list[QuestionResult]] = {}
            for e in order:
                why = self._over_budget(e, n)
                if why:
                    self.log(f"budget: {why}; the race ends here")
                    return self._finish("budget", why)
                batch = self._run_one(e, n)
                if batch.stopped:
                    return "stopped"
                results[e.cid] = batch.results
            self._decide(n, results)
            self.save()
        return self._finish("done", "")

    def _finish(self, status: str, why: str) -> str:
        for e in self.alive():
            e.status = KEPT
            e.reason = why and f"kept when the race ended: {why}"
        self.ended(status)
        self.save()
        return status
