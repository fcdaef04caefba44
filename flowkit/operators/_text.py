"""Small helpers shared by operators: passages for prompts, list parsing, citations, the query
texts a search or reranker uses. Plain word and sentence helpers live in flowkit.text."""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from ..errors import OperatorInputError
from ..memory import Doc, MemoryView
from ..text import WORD
from ._window import focus, kind_of

#: Which texts a search or a reranker compares passages with.
QueryFrom = Literal["question", "queries", "both"]


def passages(docs: Sequence[Doc], limit: int, max_chars: int = 700, question: str = "") -> str:
    """Numbered passages ([1] Title: text) for a prompt; numbers map back with `cited_ids`. Each
    text is cut to `max_chars`; with the `question`, a structured chunk longer than that shows the
    part that bears on it (flowkit.operators._window.focus)."""
    lines = []
    for i, d in enumerate(docs[:limit], 1):
        title = f"{d.get('title')}: " if d.get("title") else ""
        text = focus(d.get("text") or "", kind_of(d), question, max_chars)
        lines.append(f"[{i}] {title}{text.strip()}")
    return "\n".join(lines)


def cited_ids(text: str, docs: Sequence[Doc], limit: int) -> list[str]:
    """Document ids an answer cites as [n]; when it cites none, those whose words it repeats."""
    shown = list(docs[:limit])
    nums = [int(n) for n in re.findall(r"\[(\d{1,3})\]", text)]
    ids = [shown[n - 1]["id"] for n in nums if 1 <= n <= len(shown)]
    if not ids:
        answer_words = {w for w in WORD.findall(strip_citations(text).lower()) if len(w) > 3}
        for d in shown:
            doc_words = set(WORD.findall((d.get("text") or "").lower()))
            if answer_words and len(answer_words & doc_words) >= max(1, len(answer_words) // 2):
                ids.append(d["id"])
    return list(dict.fromkeys(ids))


def strip_citations(text: str) -> str:
    return re.sub(r"\s*\[\d{1,3}\]", "", text).strip()


def parse_lines(text: str, limit: int) -> list[str]:
    """Items from a numbered or bulleted list the model wrote (at most `limit`, no duplicates)."""
    out: list[str] = []
    for line in text.splitlines():
        item = re.sub(r"^\s*(?:[-*\u2022]|\d+[.)]|Q\d*:|Question\s*\d*:)\s*", "", line).strip()
        item = item.strip('"').strip()
        if len(item) > 3 and item.lower() not in {o.lower() for o in out}:
            out.append(item)
        if len(out) >= limit:
            break
    return out


def first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return text.strip()


def require_docs(memory: MemoryView, field: str = "documents") -> list[Doc]:
    docs = list(memory.get(field) or [])
    if not docs:
        raise OperatorInputError(field, "no documents in working memory; put a retrieval "
                                 "operator before this node")
    return docs


def fill(template: str, field: str, **values: str) -> str:
    """Fill {name} slots by plain replacement: never str.format on user templates, so a template
    can hold braces and can never reach attributes."""
    out = template
    for key, val in values.items():
        out = out.replace("{" + key + "}", val)
    if "{question}" in template and "question" not in values:
        raise OperatorInputError(field, "the template needs a {question} slot value")
    return out


def query_texts(memory: MemoryView, query_from: QueryFrom) -> list[str]:
    """The texts passages are compared with: the question, the rewritten queries, or both."""
    qs: list[str] = []
    if query_from in ("question", "both") or not memory.get("queries"):
        qs.append(memory["question"])
    if query_from in ("queries", "both"):
        qs += [q for q in memory.get("queries") or [] if q and q not in qs]
    return qs
