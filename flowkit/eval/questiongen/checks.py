"""The checks a generated question must pass, each a reason it can be dropped for.

The model reads (it answers the question the way the flows' answer operator does) and the
question is kept only when:

- ``answer_in_question``: the answer is not written in the question (no model call; a
  comparison names both choices, so it is exempt);
- ``near_duplicate``: no kept question is nearly the same (cosine of embeddings, no model call);
- ``round_trip``: asked with its supporting passages, the model gives the answer back (a choice
  between two names: in both orders, so what is kept does not lean to one position);
- ``closed_book``: asked without passages, the model does not give it (such a question tests
  nothing a flow retrieves); a choice between two names counts as given only when it is given
  with the options in both orders (else a model that always names the first option would keep
  only questions whose answer comes second: measured, 27 of 27 kept comparisons);
- ``one_passage``: a multi-hop question is not answered from either passage alone (a bridge's
  passage that does not hold the answer is not asked: reading cannot give it back, and a guess
  from the question is what ``closed_book`` catches).

Checks run cheapest first and stop at the first failure, so a dropped candidate costs at most the
calls up to the check that dropped it.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ...operators._answers import short_answer
from ...operators._text import first_line, passages, strip_citations
from ...operators.generation.answer import ANSWER_PROMPT, CLOSED_BOOK_PROMPT
from ..metrics import accuracy, token_f1
from .candidates import MULTI_HOP, Candidate, Passage
from .facts import answer_in_question

#: every reason a candidate can be dropped for, in the order the checks run
REASONS = ("answer_in_question", "near_duplicate", "round_trip", "closed_book", "one_passage")
#: bump when a prompt or a rule below changes: it is stored with every generated question
PROMPT_VERSION = "qgen-6"
#: a model answer matches when it holds the answer (Acc) or shares most of its words (F1)
MATCH_F1 = 0.6
DUPLICATE_COSINE = 0.92
ANSWER_TOKENS = 24
PASSAGE_CHARS = 700

Ask = Callable[[str], str]


def matches(prediction: str, answer: str) -> bool:
    """Whether a model's answer gives back `answer`: it contains it, or token F1 >= 0.6."""
    return bool(prediction) and (accuracy(prediction, [answer]) > 0
                                 or token_f1(prediction, [answer]) >= MATCH_F1)


def reader_prompt(question: str, shown: Sequence[Passage]) -> str:
    """The prompt the flows' answer operator writes: numbered passages, then the question (no
    passages: its closed-book prompt)."""
    if not shown:
        return CLOSED_BOOK_PROMPT.replace("{question}", question)
    docs = [{"id": p.chunk_id, "title": p.title, "text": p.text, "meta": dict(p.meta)}
            for p in shown]
    text = passages(docs, len(docs), PASSAGE_CHARS, question)     # type: ignore[arg-type]
    return ANSWER_PROMPT.replace("{passages}", text).replace("{question}", question)


def read_answer(completion: str) -> str:
    """The answer in what the model wrote, as the answer operator cuts it."""
    return short_answer(completion) or first_line(strip_citations(completion))


class Checker:
    """Runs the checks on candidates; `ask(prompt)` is one model call returning its text."""

    def __init__(self, ask: Ask, embed: Callable[[list[str]], np.ndarray] | None = None) -> None:
        self.ask = ask
        self.embed = embed
        self._kept_vectors: list[np.ndarray] = []
        #: what the model answered in each check of the last candidate (shown in the review)
        self.last_answers: dict[str, str] = {}

    def _answer(self, question: str, shown: Sequence[Passage]) -> str:
        return read_answer(self.ask(reader_prompt(question, shown)))

    def _gives(self, c: Candidate, shown: Sequence[Passage], label: str,
               every_order: bool = True) -> bool:
        """Whether the model gives the answer with only `shown`. A choice between two names
        ('X or Y?') counts as given only when it is given with the options in both orders: a
        small model leans to one position whatever it reads, and a check passed by position
        would keep only questions whose answer sits where the model leans (before this rule the
        closed-book check kept 27 of 27 comparisons with the answer second)."""
        got = self.last_answers[label] = self._answer(c.question, shown)
        if not matches(got, c.answer):
            return False
        swapped = c.extra.get("swapped")
        if not swapped or not every_order:
            return True
        got = self.last_answers[label + "_swapped"] = self._answer(swapped, shown)
        return matches(got, c.answer)

    def check(self, c: Candidate) -> str | None:
        """None when `c` passes every check, else the first reason it fails (one of REASONS)."""
        self.last_answers = {}
        if c.kind != "comparison" and answer_in_question(c.question, c.answer):
            return "answer_in_question"    # a comparison names both choices by design
        vector = None
        if self.embed is not None:
            vector = np.asarray(self.embed([c.question])[0], dtype=np.float32)
            norm = float(np.linalg.norm(vector))
            vector = vector / norm if norm else vector
            if any(float(vector @ v) >= DUPLICATE_COSINE for v in self._kept_vectors):
                return "near_duplicate"
        if not self._gives(c, c.passages, "with_passages", every_order=True):
            return "round_trip"
        if self._gives(c, (), "closed_book"):
            return "closed_book"
        if c.kind in MULTI_HOP:
            for i, p in enumerate(c.passages):
                if c.kind == "bridge" and not answer_in_question(p.text, c.answer):
                    continue               # no answer to read back here; guesses: closed_book
                if self._gives(c, (p,), f"passage_{i + 1}_alone"):
                    return "one_passage"
        if vector is not None:
            self._kept_vectors.append(vector)
        return None
