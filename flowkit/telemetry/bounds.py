"""Attribute values bounded in size, so one large run cannot flood a collector.

Text longer than its limit is cut and its full length kept beside it under
`flowkit.full_length.<attribute>`; lists of documents are capped and their full count kept.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

AttrValue = str | bool | int | float | list[str]


@dataclass(frozen=True)
class Limits:
    """How much of each kind of value a span carries (characters; documents per retrieval)."""

    text: int = 4000          # prompts, completions, the question and the answer
    memory: int = 2000        # a node's memory values read and written, as JSON
    doc_text: int = 500       # each retrieved document's text
    docs: int = 40            # retrieved documents per RETRIEVER span


def full_length_key(key: str) -> str:
    """Where the full length of a truncated attribute `key` is recorded."""
    return f"flowkit.full_length.{key}"


def put_text(attrs: dict[str, AttrValue], key: str, text: str, limit: int) -> None:
    """Set `attrs[key]` to `text` cut to `limit` characters, recording the full length if cut."""
    if len(text) > limit:
        attrs[key] = text[: max(limit - 1, 0)] + "…"
        attrs[full_length_key(key)] = len(text)
    else:
        attrs[key] = text


def as_json(value: object) -> str:
    """A memory value as compact JSON text (unknown objects as strings)."""
    return json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))
