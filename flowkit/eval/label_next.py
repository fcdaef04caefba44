"""Which answers to label next, so that each label narrows a judge's interval as much as it can
while the interval stays valid (`flowkit label EVAL_ID --next`).

A PPI or PPI++ interval holds when the labelled answers are a random sample of the answers it
covers; a choice by the judge's own verdicts (label where it says "no") would not be one, and the
interval would be wrong. What can be chosen without that is which answers need no label at all:

- For the difference between two flows on a judge whose truth depends on the answer alone
  (`graders.ANSWER_ONLY`, correctness): where both flows gave the same answer (normalised as the
  metrics normalise it) the difference is 0, with or without a label. `ppi_pp.ppi_pp_paired`
  counts those questions as known (`same_truth`), so every label goes where the answers differ,
  one question labelled for both flows. With a share s of questions answered alike, the interval's
  variance falls to about 1 - s of random labels' (measured: `bench/label_next.py`).
- For one flow's score, or a judge that reads the passages, no answer is known without a label:
  a random order of the unlabelled ones, as good as any.

The order is random but fixed: each question's place comes from a hash of the seed and its id, so
asking again after labelling the first gives the rest in the same order.
"""
from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping, Sequence

from ..text import normalize_answer


def same_answers(answers: Mapping[str, str], base_answers: Mapping[str, str]) -> set[str]:
    """Question ids where both flows gave the same answer, once normalised ('The Tessel.' and
    'tessel' are the same answer)."""
    return {q for q, a in answers.items()
            if q in base_answers and normalize_answer(a) == normalize_answer(base_answers[q])}


def _place(seed: int, question_id: str) -> str:
    return hashlib.sha256(f"{seed}:{question_id}".encode()).hexdigest()


def next_labels(questions: Sequence[str], *, labelled: Collection[str],
                known: Collection[str] = (), n: int = 10, seed: int = 0) -> list[str]:
    """Up to `n` question ids of `questions` to label next: those neither `labelled` (already
    labelled, for both flows where two are compared) nor `known` (their truth, or difference,
    known without a label), in the fixed random order of `seed`."""
    skip = set(labelled) | set(known)
    todo = [q for q in dict.fromkeys(questions) if q not in skip]
    return sorted(todo, key=lambda q: _place(seed, q))[:n]
