"""Graders: a model reads a finished run and gives a verdict (evaluation metrics, not flow nodes).

Not to be confused with a flow's judge operators (orchestration.*judge*, which end loops) or the
sufficiency classifier (flowkit/judges/). A grader is a prompt, a parser and a documented verdict,
asked once per item; its score is 1 (yes), 0 (no) or 0.5 when the reply states neither or both
(counted as `unparsed`). Small models make many mistakes: a grader's mean is "uncorrected" until
labels from a person correct it (`ppi`).

- correctness: does the answer mean the same as a reference answer (where there is one)?
- groundedness: is the answer stated in the passages the answering node read?
- context_relevance: which of those passages bear on the question (score: the share that do)?
- answer_relevance: does the answer respond to what the question asks?
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

#: bump when a prompt or the parser changes: stored with every grade
GRADER_VERSION = "graders-1"
#: a grader whose prompt changed since GRADER_VERSION, with its own version: a stored grade of
#: another version is made again (its new prompt is a new cache key, so old verdicts never mix in)
GRADER_VERSIONS: dict[str, str] = {"context_relevance": "graders-2"}
UNPARSED = 0.5
PASSAGE_CHARS = 500
VERDICT_TOKENS = 8

Ask = Callable[[str], str]


@dataclass(frozen=True)
class Item:
    """What a grader reads of one run: the question, the answer, references, passages shown."""

    question: str
    answer: str
    references: tuple[str, ...] = ()
    passages: tuple[dict[str, Any], ...] = ()


@dataclass
class Verdict:
    """A grader's score (1, 0, or 0.5 unparsed; a share for context relevance), the model's own
    words and, per passage, the verdicts behind a share."""

    score: float | None
    reason: str
    parsed: bool = True
    detail: list[float] = field(default_factory=list)


_YES = re.compile(r"\b(yes|supported|correct|relevant|true)\b", re.I)
_NEGATED = re.compile(r"\b(?:not|isn't|is not)\s+(?:\w+\s+)?(?:supported|correct|relevant|true)\b",
                      re.I)
_NO = re.compile(r"\b(no|not|unsupported|incorrect|irrelevant|false|wrong)\b", re.I)
#: words in quotes are the passage's or the question's, not the judge's verdict
_QUOTED = re.compile(r'"[^"]*"|“[^”]*”')
#: a verdict word that starts a name or a number is an answer ('No Doubt', 'True Detective',
#: 'Not Fade Away', 'No. 5 Squadron'): small judges answer the question instead of judging
_NAME = re.compile(r"\b(?i:yes|no|not|true|false|correct|wrong)(?:\s+(?!I\b)[A-Z]|\.?\s*\d)")


def grader_version(name: str) -> str:
    """The version stored with a grader's verdicts (its prompt and the parser)."""
    return GRADER_VERSIONS.get(name, GRADER_VERSION)


def parse_yes_no(text: str | None) -> bool | None:
    """The verdict on the first non-empty line: True for yes, False for no, None when it says
    neither or both ('yes and no', 'I cannot tell', an empty reply, a rambling one), when its
    only verdict word is in quotes, or when that word starts a name or a number (an answer to
    the question, such as 'No Doubt' or 'True Detective', is not a verdict)."""
    for raw in (text or "").splitlines():
        if not raw.strip():
            continue
        line = _QUOTED.sub(" ", raw).strip()
        if not line or _NAME.search(line):
            return None
        line = _NEGATED.sub(" no ", line)
        yes, no = bool(_YES.search(line)), bool(_NO.search(line))
        if yes == no:
            return None
        return yes
    return None


def _score(text: str) -> Verdict:
    v = parse_yes_no(text)
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return Verdict(UNPARSED if v is None else float(v), first[:200], parsed=v is not None)


CORRECTNESS = (
    "Decide whether the proposed answer means the same as the reference answer to the question. "
    "Reply yes or no.\n\n"
    "Question: In which year was the dam of Lake Orin finished?\nReference: 1931\n"
    "Proposed: it was finished in 1931\nSame: yes\n\n"
    "Question: Who was born first, Mira Holt or Tomas Vale?\nReference: Mira Holt\n"
    "Proposed: Tomas Vale\nSame: no\n\n"
    "Question: {question}\nReference: {reference}\nProposed: {answer}\nSame:")
GROUNDEDNESS = (
    "Decide whether the passages state the answer to the question. Reply yes or no.\n\n"
    "Passages:\n[1] Lake Orin: Its dam was finished in 1931.\nQuestion: When was the dam of Lake "
    "Orin finished?\nAnswer: 1931\nStated: yes\n\n"
    "Passages:\n[1] Tomas Vale: Tomas Vale is a sculptor.\nQuestion: Where was Tomas Vale born?\n"
    "Answer: Dunmore\nStated: no\n\n"
    "Passages:\n{passages}\nQuestion: {question}\nAnswer: {answer}\nStated:")
#: context relevance (graders-2): the passage first and a "Verdict (yes/no):" line. Asked with
#: the question last and "Helps:", Gemma 3 270M answered the question instead ('1999', 'Bob
#: Seger') on 491 of 813 passages; asked this way it judges, with some answers left
CONTEXT_RELEVANCE = (
    "Decide whether the passage helps to answer the question. Reply yes or no.\n\n"
    "Passage: Mira Holt: Mira Holt (born 1902 in Dunmore) was a painter.\nQuestion: Which river "
    "flows through the town where Mira Holt was born?\nVerdict (yes/no): yes\n\n"
    "Passage: Dunmore Castle: Dunmore Castle is a castle near the river Tay, built in 1450.\n"
    "Question: Which river flows through the town where Mira Holt was born?\n"
    "Verdict (yes/no): no\n\n"
    "Passage: Lake Orin: Its dam was finished in 1931.\nQuestion: When was the dam of Lake Orin "
    "finished?\nVerdict (yes/no): yes\n\n"
    "Passage: Tomas Vale: Tomas Vale is a sculptor.\nQuestion: When was the dam of Lake Orin "
    "finished?\nVerdict (yes/no): no\n\n"
    "Passage: {passage}\nQuestion: {question}\nVerdict (yes/no):")
#: asked only when the reply to CONTEXT_RELEVANCE is no verdict: the question first, so the
#: passage is the last thing read and the model replies yes or no (far more often yes)
CONTEXT_RELEVANCE_AGAIN = (
    "Decide whether the passage helps to answer the question. Reply yes or no.\n\n"
    "Question: Which river flows through the town where Mira Holt was born?\nPassage: Mira "
    "Holt: Mira Holt (born 1902 in Dunmore) was a painter.\nHelps: yes\n\n"
    "Question: Which river flows through the town where Mira Holt was born?\nPassage: Dunmore "
    "Castle: Dunmore Castle is a castle near the river Tay, built in 1450.\nHelps: no\n\n"
    "Question: When was the dam of Lake Orin finished?\nPassage: Lake Orin: Its dam was "
    "finished in 1931.\nHelps: yes\n\n"
    "Question: When was the dam of Lake Orin finished?\nPassage: Tomas Vale: Tomas Vale is a "
    "sculptor.\nHelps: no\n\n"
    "Question: {question}\nPassage: {passage}\nHelps:")
ANSWER_RELEVANCE = (
    "Decide whether the answer responds to what the question asks (a person for who, a year or "
    "date for when, a place for where), right or wrong. Reply yes or no.\n\n"
    "Question: In which year was the dam of Lake Orin finished?\nAnswer: 1931\nResponds: yes\n\n"
    "Question: Who was born first, Mira Holt or Tomas Vale?\nAnswer: the passages do not say\n"
    "Responds: no\n\n"
    "Question: {question}\nAnswer: {answer}\nResponds:")


_SLOT = re.compile(r"\{([a-z_]+)\}")


def fill(template: str, **values: str) -> str:
    """`template` with each {name} of `values` replaced in one pass: a value (a user's criterion,
    a model's answer) is inserted as written and never read again for placeholders."""
    return _SLOT.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def _fill(template: str, **values: str) -> str:
    out = template
    for k, v in values.items():
        out = out.replace("{" + k + "}", v)
    return out


def _passages(passages: Sequence[dict[str, Any]]) -> str:
    return "\n".join(f"[{i}] {p.get('title') or ''}: {(p.get('text') or '')[:PASSAGE_CHARS]}"
                     for i, p in enumerate(passages, 1))


def correctness(item: Item, ask: Ask) -> Verdict:
    """Does the answer mean the same as a reference answer? (None without references.)"""
    if not item.references:
        return Verdict(None, "no reference answer", parsed=False)
    if not item.answer.strip():
        return Verdict(0.0, "no answer")
    best = Verdict(0.0, "", parsed=False)
    for ref in item.references[:3]:
        v = _score(ask(_fill(CORRECTNESS, question=item.question, reference=ref,
                             answer=item.answer)))
        if not best.reason or (v.score or 0) > (best.score or 0):
            best = v
        if v.score == 1.0:
            break
    return best


def groundedness(item: Item, ask: Ask) -> Verdict:
    """Is the answer stated in the passages the answering node read? (0 without passages.)"""
    if not item.answer.strip():
        return Verdict(0.0, "no answer")
    if not item.passages:
        return Verdict(0.0, "the answer was written without passages")
    return _score(ask(_fill(GROUNDEDNESS, passages=_passages(item.passages[:5]),
                            question=item.question, answer=item.answer)))


def context_relevance(item: Item, ask: Ask) -> Verdict:
    """The share of the passages read that help to answer the question (each asked alone)."""
    if not item.passages:
        return Verdict(0.0, "no passages were read")
    detail: list[float] = []
    unparsed = again = 0
    for p in item.passages[:5]:
        text = _passages([p])[4:]
        v = _score(ask(_fill(CONTEXT_RELEVANCE, passage=text, question=item.question)))
        if not v.parsed:                   # it answered the question: ask the other way round
            again += 1
            v = _score(ask(_fill(CONTEXT_RELEVANCE_AGAIN, passage=text, question=item.question)))
        detail.append(float(v.score if v.score is not None else UNPARSED))
        unparsed += not v.parsed
    share = sum(detail) / len(detail)
    reason = f"{sum(1 for d in detail if d == 1.0)} of {len(detail)} passages help"
    if again:
        reason += f" ({again} asked again: the first reply was no verdict)"
    return Verdict(share, reason, parsed=unparsed == 0, detail=detail)


def answer_relevance(item: Item, ask: Ask) -> Verdict:
    """Does the answer respond to what the question asks (right or wrong)?"""
    if not item.answer.strip():
        return Verdict(0.0, "no answer")
    return _score(ask(_fill(ANSWER_RELEVANCE, question=item.question, answer=item.answer)))


#: a judge: reads one item, asks the model through `ask`, gives a verdict
Judge = Callable[[Item, Ask], Verdict]

GRADERS: dict[str, Judge] = {
    "correctness": correctness, "groundedness": groundedness,
    "context_relevance": context_relevance, "answer_relevance": answer_relevance}

#: Judges whose verdict, and whose truth, depend on the question and the answer alone (not on the
#: passages a flow read): two flows that gave the same answer to a question have the same truth
#: there, so their difference needs no label (`ppi_pp.ppi_pp_paired`'s `same_truth`).
ANSWER_ONLY = frozenset({"correctness", "answer_relevance"})


def check_names(names: list[str], field: str = "--judge") -> None:
    """Refuse an empty list or an unknown judge, naming `field` (the option or form field) and
    the judges there are: the one check the CLI, the studio and the service share."""
    from ..errors import FlowkitError
    bad = [g for g in names if g not in GRADERS]
    if bad or not names:
        raise FlowkitError(f"{field}: unknown judge(s) {', '.join(bad) or '(none given)'}; use a "
                           f"comma-separated list of {', '.join(GRADERS)}")


def parse_graders(text: str) -> list[str]:
    """'correctness,groundedness' -> the names; an unknown one is named in the error."""
    names = [g.strip() for g in (text or "").split(",") if g.strip()]
    check_names(names)
    return names
