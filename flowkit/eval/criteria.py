"""Criteria of your own: a yes/no question about an answer, written in plain words ("the answer
names the command", "no price is invented"), graded like the built-in judges
(`flowkit judge EVAL_ID --criterion "..."` or `--criterion @FILE`).

A criterion's text is data: it is put into the prompt in one pass (`fill`: the text is never read
again for placeholders, never formatted, evaluated or imported), so braces, quotes or code in it
reach the model as written. Its grader name is `criterion:` and the first 12 hex digits of the
SHA-256 of its text (`Criterion.name`), and its version says the same with the prompt's version
(`Criterion.version`): an edited criterion is another judge, and its verdicts never mix with the
old one's; the completion cache keys the prompt, so the same text is never asked twice. A verdict
is yes (1), no (0) or, when the reply says neither, 0.5 counted as unparsed (`graders`' parser);
scores, labels, PPI++ intervals and the reliability card are the built-in judges'.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from ..errors import FlowkitError
from .graders import Ask, Item, Verdict, _score, fill

#: bump when the prompt or the parser changes: part of every criterion's version
CRITERION_PROMPT_VERSION = "criterion-1"
PREFIX = "criterion:"
MAX_CHARS = 500

CRITERION = (
    "Decide whether the answer meets the criterion. Reply yes or no.\n\n"
    "Criterion: the answer names a year\nQuestion: When was the dam of Lake Orin finished?\n"
    "Answer: it was finished in 1931\nMeets: yes\n\n"
    "Criterion: the answer names a person\nQuestion: Who designed the Corren Lighthouse?\n"
    "Answer: the passages do not say\nMeets: no\n\n"
    "Criterion: {criterion}\nQuestion: {question}\nAnswer: {answer}\nMeets:")

@dataclass(frozen=True)
class Criterion:
    """A yes/no criterion the user wrote (see the module's help)."""

    text: str

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    @property
    def name(self) -> str:
        return PREFIX + self.digest[:12]

    @property
    def version(self) -> str:
        return f"{CRITERION_PROMPT_VERSION}:{self.digest[:16]}"

    def __call__(self, item: Item, ask: Ask) -> Verdict:
        """Does the answer meet the criterion? (0 for an empty answer, without a call.)"""
        if not item.answer.strip():
            return Verdict(0.0, "no answer")
        return _score(ask(fill(CRITERION, criterion=self.text, question=item.question,
                               answer=item.answer)))


def is_criterion(grader: str) -> bool:
    return grader.startswith(PREFIX)


def criterion(text: str) -> Criterion:
    """The criterion from `--criterion`: its text, or '@PATH' for a small text file holding it
    (the file's text, surrounding space removed). One line of at most MAX_CHARS characters."""
    raw = text or ""
    if raw.startswith("@"):
        path = Path(raw[1:])
        try:
            raw = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise FlowkitError(f"--criterion: cannot read {path}: {err}") from err
    body = " ".join(raw.split())
    if not body:
        raise FlowkitError("--criterion: write the criterion in words, e.g. 'the answer names "
                           "the command' (or @FILE holding it)")
    if len(body) > MAX_CHARS:
        raise FlowkitError(f"--criterion: {len(body)} characters; keep it to {MAX_CHARS} (one "
                           "yes/no question about an answer)")
    return Criterion(body)
