"""A reliability card per judge and judge model: how far its verdicts agree with the user's own
labels, and in words what to do about it ("this judge agrees with your labels no better than
chance: rely on the labels"). A pure function of (verdict, label) pairs; `flowkit judge` prints the
card under each judge's table and the Compare page shows it beside the scores.

The verdicts and labels fall in categories: yes / no for a yes-or-no judge (a score above 0.5 is
yes, below is no; a verdict of exactly 0.5, a reply that said neither, is counted apart as
`unparsed`; a share such as context relevance's is cut at 0.5 the same way), and A better / tie /
B better for the pairwise judge. On the pairs of categories:

- the confusion matrix (rows: your labels; columns: the judge's verdicts);
- the observed agreement p_o (the matrix's diagonal over n), the agreement expected by chance
  p_e = sum_k (row_k / n) (column_k / n), and Cohen's kappa = (p_o - p_e) / (1 - p_e): 0 is
  chance, 1 full agreement; its 95% interval kappa +- z * sqrt(p_o (1 - p_o) / (n (1 - p_e)^2))
  (Cohen 1960's large-sample standard error);
- for a yes/no judge, the true-positive rate (yes among the answers you labelled yes) and the
  true-negative rate (no among those you labelled no);
- for the pairwise judge, the share of verdicts that changed when A and B swapped places (among the
  questions asked in both orders with a reply to both);
- where measured (`flowkit judge --spread N`), the verdict's spread: of N answers asked again with
  the prompt's examples in reverse order (`reorder_examples`), how many verdicts changed.

In words (`ReliabilityCard.advice`), by Landis and Koch's bands: below MIN_LABELS labels, too few
to tell; kappa below 0.2 or an interval that reaches 0, no better than chance: rely on the labels;
below 0.4 slight to fair; below 0.6 moderate; else substantial.
"""
from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from .ppi import z_value

YES_NO = ("yes", "no")
#: fewer labelled verdicts than this: the card says so instead of reading a kappa
MIN_LABELS = 10
CHANCE = 0.2
#: a pairwise judge whose verdicts change this often when A and B swap is strongly biased
STRONG_FLIPS = 0.3


@dataclass(frozen=True)
class ReliabilityCard:
    """A judge's agreement with the user's labels; see the module's help for every field."""

    judge: str
    model: str
    categories: tuple[str, ...]
    confusion: tuple[tuple[int, ...], ...]          # [label][verdict]
    unparsed: int = 0
    agreement: float = math.nan
    kappa: float = math.nan
    kappa_low: float = math.nan
    kappa_high: float = math.nan
    true_positive_rate: float | None = None
    true_negative_rate: float | None = None
    asked: int = 0
    flips: int = 0
    spread_asked: int = 0
    spread_changed: int = 0

    @property
    def labels(self) -> int:
        """The labelled verdicts in the matrix."""
        return sum(map(sum, self.confusion))

    @property
    def flip_share(self) -> float | None:
        return self.flips / self.asked if self.asked else None

    def advice(self) -> str:
        """What the agreement means for the user, in words."""
        n = self.labels
        if n < MIN_LABELS:
            return (f"{n} labelled verdict{'s' if n != 1 else ''}: too few to tell whether this "
                    f"judge can be trusted (label {MIN_LABELS} or more)")
        if math.isnan(self.kappa):
            return ("your labels and the judge's verdicts all fall in one category: agreement "
                    "cannot be told from chance; rely on the labels")
        if self.kappa < CHANCE or self.kappa_low <= 0:
            return "this judge agrees with your labels no better than chance: rely on the labels"
        if self.kappa < 0.4:
            return ("this judge agrees with your labels only slightly better than chance: its "
                    "weight stays small, rely mostly on the labels")
        if self.kappa < 0.6:
            return ("this judge agrees with your labels moderately: it narrows the interval, "
                    "and your labels keep correcting it")
        return ("this judge agrees with your labels substantially: it narrows the interval; "
                "keep labelling a few answers to check it")

    def lines(self) -> list[str]:
        """The card in words: the advice, kappa and agreement, the rates, the flips."""
        out = [f"reliability of {self.judge} on {self.model}: {self.advice()}"]
        if self.labels:
            kappa = ("kappa -" if math.isnan(self.kappa) else
                     f"kappa {self.kappa:.2f} [{self.kappa_low:.2f}, {self.kappa_high:.2f}]")
            out.append(f"{kappa}; agrees on {100 * self.agreement:.0f}% of {self.labels} "
                       f"labelled verdicts; {matrix_words(self)}")
        if self.true_positive_rate is not None or self.true_negative_rate is not None:
            out.append(f"says yes to {_pct(self.true_positive_rate)} of what you labelled yes "
                       f"and no to {_pct(self.true_negative_rate)} of what you labelled no")
        if self.unparsed:
            out.append(f"{self.unparsed} labelled verdict{'s' if self.unparsed != 1 else ''} "
                       "said neither (left out of the matrix)")
        if self.spread_asked:
            out.append(f"asked again with its examples in reverse order, it changed "
                       f"{self.spread_changed} of {self.spread_asked} verdicts "
                       f"({100 * self.spread_changed / self.spread_asked:.0f}%)")
        share = self.flip_share
        if share is not None:
            strong = " (a strong position bias)" if share >= STRONG_FLIPS else ""
            out.append(f"{100 * share:.0f}% of its verdicts flip when A and B swap places "
                       f"({self.flips} of {self.asked}){strong}")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "labels": self.labels, "advice": self.advice(),
                "flip_share": self.flip_share}


def _pct(x: float | None) -> str:
    return "-" if x is None or math.isnan(x) else f"{100 * x:.0f}%"


def matrix_words(card: ReliabilityCard) -> str:
    """The confusion matrix as a line: 'labelled yes: judge yes 12, no 3; labelled no: ...'."""
    return "; ".join(f"labelled {c}: " + ", ".join(f"judge {v} {k}" for v, k in
                                                   zip(card.categories, row, strict=True))
                     for c, row in zip(card.categories, card.confusion, strict=True))


def _category(x: float, categories: Sequence[str]) -> int | None:
    if len(categories) == 2:                   # yes / no: 0.5 says neither
        return None if x == 0.5 else 0 if x > 0.5 else 1
    return 0 if x > 0.75 else 2 if x < 0.25 else 1      # A better (1) / tie (0.5) / B (0)


def reliability_card(pairs: Sequence[tuple[float, float]], *, judge: str, model: str,
                     categories: tuple[str, ...] = YES_NO, asked: int = 0, flips: int = 0,
                     confidence: float = 0.95) -> ReliabilityCard:
    """The card from (judge's verdict, user's label) pairs on the same items.

    `categories`: YES_NO for a yes/no judge (verdicts and labels in [0, 1]), or three names for
    the pairwise judge (1 A better, 0.5 tie, 0 B better); `asked` and `flips`: for the pairwise
    judge, the questions asked in both orders and how many of those changed verdict."""
    k = len(categories)
    matrix = [[0] * k for _ in range(k)]
    unparsed = 0
    for verdict, label in pairs:
        v, t = _category(float(verdict), categories), _category(float(label), categories)
        if v is None or t is None:
            unparsed += 1
            continue
        matrix[t][v] += 1
    frozen = tuple(tuple(row) for row in matrix)
    n = sum(map(sum, matrix))
    base = ReliabilityCard(judge, model, categories, frozen, unparsed, asked=asked, flips=flips)
    if n == 0:
        return base
    p_o = sum(matrix[i][i] for i in range(k)) / n
    p_e = sum(sum(matrix[i]) * sum(row[i] for row in matrix) for i in range(k)) / n ** 2
    kappa = low = high = math.nan
    if p_e < 1:
        kappa = (p_o - p_e) / (1 - p_e)
        half = z_value(confidence) * math.sqrt(p_o * (1 - p_o) / n) / (1 - p_e)
        low, high = kappa - half, kappa + half
    tpr = tnr = None
    if k == 2:
        tpr = matrix[0][0] / sum(matrix[0]) if sum(matrix[0]) else math.nan
        tnr = matrix[1][1] / sum(matrix[1]) if sum(matrix[1]) else math.nan
    return ReliabilityCard(judge, model, categories, frozen, unparsed, p_o, kappa, low, high,
                           tpr, tnr, asked, flips)


_WORKED = re.compile(r":\s*(?:yes|no|1|2|same)\s*$", re.I)


def reorder_examples(prompt: str) -> str:
    """The same judge prompt with its worked examples in reverse order: the instruction first and
    the item asked about last, as before. The examples are the paragraphs (split at blank lines)
    after the first that end in a given verdict ('Same: yes'); the item, whatever its text holds,
    is everything after them. Fewer than two examples: the prompt unchanged."""
    parts = prompt.split("\n\n")
    k = 1
    while k < len(parts) - 1 and _WORKED.search(parts[k]):
        k += 1
    examples = parts[1:k]
    if len(examples) < 2:
        return prompt
    return "\n\n".join([parts[0], *reversed(examples), "\n\n".join(parts[k:])])
