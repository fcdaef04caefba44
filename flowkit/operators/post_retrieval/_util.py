"""Helpers shared by the post-retrieval operators: rescored copies, yes/no odds, rankings."""
from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from ...memory import Doc
from ...text import OVERLAP_STOPWORDS, content_words, tokens


def doc_text(d: Doc) -> str:
    """Title and text of a passage, as embedded or shown."""
    title = d.get("title") or ""
    text = d.get("text") or ""
    return f"{title}: {text}" if title else text


def shown_text(d: Doc, max_chars: int) -> str:
    """Title and the start of the text of one passage, for a prompt."""
    title = f"{d.get('title')}: " if d.get("title") else ""
    return title + (d.get("text") or "")[:max_chars].strip()


def rescored(d: Doc, score: float, **meta: object) -> Doc:
    """A copy of the passage with a new score; the old one is kept in meta['prior_score'].

    Never mutates the input: passages in memory may be shared with other branches."""
    new_meta = dict(d.get("meta") or {})
    new_meta.setdefault("prior_score", d.get("score", 0.0))
    new_meta.update(meta)
    return Doc(**{**d, "score": round(float(score), 6), "meta": new_meta})


def word_overlap(question: str, text: str) -> float:
    """Share of the question's content words found in the text (0..1)."""
    q = content_words(question, OVERLAP_STOPWORDS, min_len=2)
    return len(q & set(tokens(text))) / len(q) if q else 0.0


def yes_probability(text: str, logprobs: Sequence[tuple[str, float]] | None) -> float | None:
    """P(yes) from a yes/no reply: the generated "Yes" token's probability when log-probabilities
    came back (1 - P("No") for a "No"), else 1.0 / 0.0 from the words; None if it says neither."""
    for tok, lp in logprobs or []:
        t = tok.strip().lower()
        if not t or not re.match(r"\w", t):
            continue
        p = math.exp(min(0.0, float(lp)))
        if t.startswith("yes"):
            return p
        if t == "no" or t.startswith("no,") or t.startswith("no."):
            return 1.0 - p
        break
    m = re.search(r"\b(yes|no|not relevant|irrelevant|relevant)\b", text, re.I)
    if not m:
        return None
    return 1.0 if m.group(1).lower() in ("yes", "relevant") else 0.0


def parse_score(text: str, top: int = 10) -> float | None:
    """The first number 0..top in a reply, scaled to 0..1 ('7/10', 'Score: 8', '9.5')."""
    for m in re.finditer(r"\d+(?:\.\d+)?", text):
        v = float(m.group(0))
        if 0 <= v <= top:
            return v / top
    return None


def parse_ranking(text: str, n: int) -> list[int]:
    """A permutation of 0..n-1 from a reply like '[2] > [1] > 3': the numbers named, in order, then
    the ones it left out in their original order. Prefers the first line that holds a '>'."""
    lines = [ln for ln in text.splitlines() if ">" in ln]
    source = lines[0] if lines else text
    order: list[int] = []
    for m in re.finditer(r"\d+", source):
        i = int(m.group(0)) - 1
        if 0 <= i < n and i not in order:
            order.append(i)
    return order + [i for i in range(n) if i not in order]


def shingles(text: str, k: int) -> set[tuple[str, ...]]:
    """Word k-shingles of a text (the whole text as one shingle when it is shorter than k)."""
    words = tokens(text)
    if len(words) < k:
        return {tuple(words)} if words else set()
    return {tuple(words[i:i + k]) for i in range(len(words) - k + 1)}


def jaccard(a: set[Any], b: set[Any]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def spans(text: str, boundary: re.Pattern[str]) -> list[tuple[int, int]]:
    """(start, end) of the non-blank pieces of text between boundary matches (each match ends its
    piece), so joining the pieces' text in order gives back the text."""
    out: list[tuple[int, int]] = []
    start = 0
    for m in boundary.finditer(text):
        if m.end() <= start:
            continue
        if text[start:m.end()].strip():
            out.append((start, m.end()))
            start = m.end()
    if text[start:].strip():
        out.append((start, len(text)))
    return out
