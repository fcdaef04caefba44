"""A pairwise judge: for two flows' answers to one question, "which answer is better, or are they
equal?", and the win rate of flow A over flow B with an interval that holds.

The question is asked twice, A's answer first and then B's first (`pairwise`). A side counts as
better only when both orders agree on it; any other pair of replies (one order says A and the
other B, a tie in either order, a reply that names neither) is a tie. Each order's verdict is kept
(`PairVerdict.orders`), so the verdicts that change when A and B swap places are counted
(`flipped`): a judge that prefers whatever it reads first flips on every question where it picks
a side. Two answers that are the same once normalised are a tie without a call.

The score of a question is 1 (A better), 0.5 (tie) or 0 (B better); the win rate of A over B is
their mean (ties count half). `win_rate` turns the scores into an estimate: with a person's
pairwise labels on some questions (the same three values), the PPI++ estimate and its 95%
interval (`ppi_pp.ppi_pp_mean` on the scores of the unlabelled questions and the (score, label)
pairs); without, the judge's own mean with a bootstrap interval, marked uncorrected.

Stored like the other judges' verdicts: the verdict on flow A's answer, under the grader name
`pairwise:<B>` (`pair_grader`), its version `PAIRWISE_VERSION` (made again when it changes), the
two orders' verdicts in `detail`; a pairwise label the same way, under the metric of that name.
"""
from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..text import normalize_answer
from .formatting import judge_interval, judge_weight_words
from .graders import Ask, Item, fill
from .metrics import PairedDiff
from .ppi import uncorrected
from .ppi_pp import JudgeWeight, judge_weight, ppi_pp_mean

#: bump when a prompt or the parser changes: stored with every pairwise verdict
PAIRWISE_VERSION = "pairwise-1"
PREFIX = "pairwise:"
A_BETTER, TIE, B_BETTER = 1.0, 0.5, 0.0
#: an order whose reply named neither answer (in `PairVerdict.orders` and a stored `detail`)
NO_REPLY = -1.0

_EXAMPLES = (
    ("In which year was the dam of Lake Orin finished?", "1931", "it was finished in 1931",
     "1925", "1"),
    ("Who was born first, Mira Holt or Tomas Vale?", "Mira Holt", "the passages do not say",
     "Mira Holt", "2"),
    ("Where was Tomas Vale born?", "Dunmore", "Dunmore", "in Dunmore", "same"))
_HEAD = ("Decide which answer to the question is better: answer 1, answer 2, or the same. "
         "Reply 1, 2 or same.\n\n")


def _prompt(with_reference: bool) -> str:
    parts = []
    for q, ref, one, two, better in [*_EXAMPLES, ("{question}", "{reference}", "{first}",
                                                  "{second}", "")]:
        ref_line = f"Reference: {ref}\n" if with_reference else ""
        parts.append(f"Question: {q}\n{ref_line}Answer 1: {one}\nAnswer 2: {two}\nBetter:"
                     + (f" {better}" if better else ""))
    return _HEAD + "\n\n".join(parts)


#: the prompt with the question's reference answer (where the set has one) and without
PAIRWISE = _prompt(True)
PAIRWISE_NO_REFERENCE = _prompt(False)

_REPLY = re.compile(r"^\W*(?:answer\s*)?(1|2|one|two|first|second|same|equal|tie|both|neither)"
                    r"\b", re.I)
_WORDS = {"1": 1, "one": 1, "first": 1, "2": 2, "two": 2, "second": 2}


def parse_choice(text: str | None) -> int | None:
    """The first non-empty line's choice: 1 or 2 (the answer shown first or second), 0 for the
    same ('same', 'equal', 'tie', 'both', 'neither'), None when it starts with anything else."""
    for raw in (text or "").splitlines():
        if raw.strip():
            m = _REPLY.match(raw.strip())
            if not m:
                return None
            return _WORDS.get(m.group(1).lower(), 0)
    return None


@dataclass(frozen=True)
class PairVerdict:
    """The pairwise verdict on one question: `score` 1 (A better), 0.5 (tie) or 0 (B better);
    `orders`, each order's verdict in the same terms (A first, then B first; NO_REPLY where the
    reply named neither; empty when the answers were the same and nothing was asked); and the
    model's own words."""

    score: float
    orders: tuple[float, ...] = ()
    reason: str = ""

    @property
    def asked(self) -> bool:
        return bool(self.orders)

    @property
    def parsed(self) -> bool:
        return NO_REPLY not in self.orders

    @property
    def flipped(self) -> bool:
        """Both orders replied and their verdicts differ: the verdict changed when A and B
        swapped places."""
        return self.asked and self.parsed and len(set(self.orders)) > 1

    @property
    def same_place(self) -> bool:
        """Both orders picked a side, and the same place (first both times, or second): the
        strongest position bias."""
        return self.asked and self.parsed and set(self.orders) == {A_BETTER, B_BETTER}


def _side(choice: int | None, a_first: bool) -> float:
    if choice is None:
        return NO_REPLY
    if choice == 0:
        return TIE
    return A_BETTER if (choice == 1) == a_first else B_BETTER


def combine(first: float, second: float) -> float:
    """The verdict of both orders: a side only when both name it, else a tie."""
    return first if first == second and first in (A_BETTER, B_BETTER) else TIE


def pairwise(a: Item, b: Item, ask: Ask) -> PairVerdict:
    """Ask which of A's and B's answers to the same question is better, in both orders (see the
    module's help); `a.references` (the first of them) is shown as the reference answer."""
    if normalize_answer(a.answer) == normalize_answer(b.answer):
        return PairVerdict(TIE, (), "the same answer")
    ref = a.references[0] if a.references else ""
    template = PAIRWISE if ref else PAIRWISE_NO_REFERENCE
    replies, orders = [], []
    for a_first in (True, False):
        one, two = (a.answer, b.answer) if a_first else (b.answer, a.answer)
        reply = ask(fill(template, question=a.question, reference=ref,
                         first=one.strip() or "(no answer)", second=two.strip() or "(no answer)"))
        replies.append(next((ln.strip() for ln in reply.splitlines() if ln.strip()), "")[:80])
        orders.append(_side(parse_choice(reply), a_first))
    score = combine(orders[0], orders[1])
    return PairVerdict(score, tuple(orders), f"A first: {replies[0]!r}; B first: {replies[1]!r}")


#: the longest grader or label-metric name storage keeps (storage.models: String(64))
NAME_CHARS = 64


def pair_grader(other: str) -> str:
    """The grader (and label metric) name a pairwise verdict of a flow against `other` is
    stored under: 'pairwise:<other>', or for a name too long to store, its hash."""
    name = PREFIX + other
    if len(name) <= NAME_CHARS:
        return name
    return PREFIX + "#" + hashlib.sha256(other.encode()).hexdigest()[:20]


def is_pairwise(grader: str) -> bool:
    return grader.startswith(PREFIX)


@dataclass
class WinRate:
    """Flow `a`'s win rate over flow `b` (ties count half): `estimate` (0..1, with its 95%
    interval), PPI++ where pairwise labels correct it (`corrected`, `labels`, the judge's
    `weight`, `labels_only_width`), else the judge's own mean; the verdicts' counts: `wins`,
    `ties`, `losses`, the questions `asked` in both orders with a reply to both, how many of
    those `flips` (the verdict changed when A and B swapped) and `same_place` (picked the same
    place both times), and `unparsed` (an order's reply named neither)."""

    a: str
    b: str
    model: str
    estimate: PairedDiff
    corrected: bool = False
    labels: int = 0
    weight: JudgeWeight | None = None
    labels_only_width: float | None = None
    wins: int = 0
    ties: int = 0
    losses: int = 0
    asked: int = 0
    flips: int = 0
    same_place: int = 0
    unparsed: int = 0

    @property
    def questions(self) -> int:
        return self.wins + self.ties + self.losses

    @property
    def flip_share(self) -> float:
        return self.flips / self.asked if self.asked else math.nan

    def to_dict(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "model": self.model,
                "win_rate": self.estimate.to_dict(), "corrected": self.corrected,
                "labels": self.labels, "judge_weight": self.weight.to_dict() if self.weight
                else None, "labels_only_width": self.labels_only_width, "wins": self.wins,
                "ties": self.ties, "losses": self.losses, "asked": self.asked,
                "flips": self.flips, "same_place": self.same_place, "unparsed": self.unparsed}


def win_rate(verdicts: Mapping[str, PairVerdict], labels: Mapping[str, float], *, a: str,
             b: str, model: str) -> WinRate:
    """The win rate of `a` over `b` from the pairwise verdicts per question id and a person's
    pairwise labels per question id (1 A better, 0.5 equal, 0 B better); see `WinRate`."""
    scores = {q: v.score for q, v in verdicts.items()}
    labelled = [(scores[q], float(y)) for q, y in labels.items() if q in scores]
    rest = [s for q, s in scores.items() if q not in labels]
    if labelled:
        est = ppi_pp_mean(rest, labelled, metric="win_rate", flow=a)
        alone = ppi_pp_mean(rest, labelled, weight=0.0)
        out = WinRate(a, b, model, est, True, len(labelled), judge_weight(rest, labelled),
                      alone.high - alone.low)
    else:
        out = WinRate(a, b, model, uncorrected(list(scores.values()), metric="win_rate", flow=a))
    vs = list(verdicts.values())
    out.wins = sum(v.score == A_BETTER for v in vs)
    out.losses = sum(v.score == B_BETTER for v in vs)
    out.ties = len(vs) - out.wins - out.losses
    out.asked = sum(v.asked and v.parsed for v in vs)
    out.flips = sum(v.flipped for v in vs)
    out.same_place = sum(v.same_place for v in vs)
    out.unparsed = sum(v.asked and not v.parsed for v in vs)
    return out


def _share(k: int, n: int) -> str:
    return f"{k} of {n} ({100 * k / n:.0f}%)" if n else f"{k} of 0"


def win_lines(w: WinRate) -> list[str]:
    """The win rate in words, as `flowkit judge --pairwise` prints it: the estimate and its
    interval (PPI++ with the judge's weight, or uncorrected), the verdicts' counts and the
    position flips."""
    rate = judge_interval(w.estimate, labelled=w.corrected)
    kind = (f"PPI++ with {w.labels} pairwise label{'s' if w.labels != 1 else ''}; judge "
            f"{judge_weight_words(w.weight)}" if w.corrected else
            "uncorrected: the judge's own verdicts; a few pairwise labels correct it")
    lines = [f"win rate of {w.a} over {w.b} (ties count half): {rate} % ({kind})",
             f"{w.questions} questions: {w.wins} {w.a} better, {w.ties} ties, {w.losses} "
             f"{w.b} better (a side counts only when both orders agree)"]
    if w.asked or w.unparsed:
        lines.append(f"position flips: {_share(w.flips, w.asked)} verdicts asked in both "
                     f"orders changed when A and B swapped places; {w.same_place} picked the "
                     f"same place both times; {w.unparsed} had a reply that named neither "
                     "answer (a tie)")
    asked_none = w.questions - w.asked - w.unparsed
    if asked_none:
        lines.append(f"{asked_none} question{'s' if asked_none != 1 else ''} answered alike: "
                     "a tie without a call")
    return lines
