"""What a reader is shown of a passage longer than its window (`passage_chars`): the part that
bears on the question, for chunks whose structure is known.

A chunk of `indexing.chunk_structure` may hold up to ~180 words of a section, or a table's caption,
header and rows: more than the answer operator's 600-character window. Cut at the window, the
rows and sentences past it were never read (on the SQLite manual bench, 69% of the questions had
their evidence in the first 600 characters of a top-5 chunk against 87% anywhere in it). So:
- a **table** chunk (`meta.kind == "table"`) keeps its caption and header lines, then the rows
  that share most words with the question, in their order, as many as fit;
- a **text** chunk (`meta.kind == "text"`) keeps the run of sentences that shares most words with
  the question and fits (the first such run; the chunk's start on a tie).
Other passages (fixed windows, sample and dataset corpora, anything without `meta.kind`) are cut at
the window as before, so their prompts stay what they were.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from ..documents.model import table_runs
from ..text import WORD

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")
#: words too common to say which row or sentence a question is about
_STOP = frozenset("the a an of to in is are was were for on at by with what which who how does "
                  "do did and or from that this it its as be can into when where than".split())


def _stem(word: str) -> str:
    """A word without a plural or verb 's' ('functions' -> 'function'), enough to match forms."""
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _terms(text: str) -> set[str]:
    return {_stem(w) for w in WORD.findall(text.lower()) if w not in _STOP}


def _overlap(question: set[str], text: str) -> int:
    return len(question & _terms(text))


def _table(text: str, question: set[str], max_chars: int) -> str:
    """Caption and header (the lines before the first row), then the best rows that fit."""
    lines = text.split("\n")
    runs = table_runs(lines)
    first_row = runs[0][0] if runs else 0
    # the header row is the first line with cells; rows are the lines after it
    head, rows = lines[:first_row + 1], lines[first_row + 1:]
    budget = max_chars - len("\n".join(head))
    ranked = sorted(range(len(rows)), key=lambda i: (-_overlap(question, rows[i]), i))
    keep: set[int] = set()
    for i in ranked:
        cost = len(rows[i]) + 1
        if cost <= budget:
            keep.add(i)
            budget -= cost
    return "\n".join([*head, *(rows[i] for i in sorted(keep))])


def _units(text: str) -> list[tuple[str, str]]:
    """The text as (separator before, sentence or line) pairs: lines stay lines, a paragraph's
    sentences are split, so a window can be put back together as it was written."""
    out: list[tuple[str, str]] = []
    for i, line in enumerate(text.split("\n")):
        for j, sentence in enumerate(_SENTENCE.split(line)):
            out.append(("\n" if i and not j else " " if j else "", sentence))
    return out


def _join(units: Sequence[tuple[str, str]]) -> str:
    return "".join((sep if k else "") + unit for k, (sep, unit) in enumerate(units)).strip()


def _prose(text: str, question: set[str], max_chars: int) -> str:
    """The run of whole sentences and lines within `max_chars` that shares most words with the
    question; the chunk's own start unless a later run shares more."""
    units = _units(text)
    best, best_score = "", -1
    for start in range(len(units)):
        end, size = start, len(units[start][1])        # the run's length, kept as it grows
        while end < len(units) and size <= max_chars:
            end += 1
            if end < len(units):
                size += len(units[end][0]) + len(units[end][1])
        if end == start:
            continue
        window = _join(units[start:end])
        score = _overlap(question, window)
        if score > best_score:
            best, best_score = window, score
    return best or text[:max_chars]


def focus(text: str, kind: str | None, question: str, max_chars: int) -> str:
    """`text` as a reader with a `max_chars` window sees it (see the module's help)."""
    if len(text) <= max_chars or kind not in ("table", "text") or not question:
        return text[:max_chars]
    terms = _terms(question)
    return _table(text, terms, max_chars) if kind == "table" else _prose(text, terms, max_chars)


def kind_of(doc: object) -> str | None:
    """A retrieved document's block kind from its metadata (None when it has none)."""
    meta = doc.get("meta") if isinstance(doc, dict) else None
    kind = meta.get("kind") if isinstance(meta, dict) else None
    return kind if isinstance(kind, str) else None


__all__: Sequence[str] = ("focus", "kind_of")
