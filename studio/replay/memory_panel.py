"""Working memory before and after a step, with what changed marked (flowkit.trace.diff).

Values come from stored runs, so they are drawn defensively: text that is not valid Unicode (a
lone surrogate) is shown escaped, and a value longer than SHOWN_CHARS is shown cut, as text,
with its full size named (a stored memory of 50,000 passages must not stall the page)."""
from __future__ import annotations

import json
from typing import Any

import pandas as pd
import streamlit as st

from flowkit.trace import diff

CHANGE_COLOURS = {"added": "#dcfce7", "removed": "#fee2e2", "changed": "#fef3c7", "same": ""}
#: The most characters of one value drawn in full (as JSON) before it is shown cut, as text.
SHOWN_CHARS = 100_000


def printable(text: str) -> str:
    """`text` with lone surrogates escaped (`\\udc80`), so the page can always send it."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def short(value: Any, limit: int = 140) -> str:
    """A value in one line of at most `limit` characters."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(printable(text[: limit * 4]).split())
    if isinstance(value, list):
        text = f"[{len(value)}] {text}"
    return text if len(text) <= limit else text[:limit - 1] + "…"


def rows(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, str]]:
    """One row per key (changed keys first): key, change (added|removed|changed|same), values."""
    changed = diff(before, after)
    out = []
    for k in sorted(set(before) | set(after), key=lambda k: (k not in changed, k)):
        if k not in changed:
            kind = "same"
        elif k not in before or before.get(k) in (None, [], {}, ""):
            kind = "added"
        elif k not in after:
            kind = "removed"
        else:
            kind = "changed"
        out.append({"key": k, "change": kind, "before": short(before.get(k)),
                    "after": short(after.get(k))})
    return out


def _value(value: Any) -> None:
    if value is None:
        st.caption("(not set)")
        return
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=1,
                                                           default=str)
    if len(text) > SHOWN_CHARS:
        st.caption(f"{len(text):,} characters; the first {SHOWN_CHARS:,} are shown")
        st.code(printable(text[:SHOWN_CHARS]), language=None, wrap_lines=True)
    elif isinstance(value, str) or printable(text) != text:    # text, or JSON with bad text
        st.code(printable(text) or "(empty)", language=None, wrap_lines=True)
    else:
        st.json(value, expanded=2)


def render(before: dict[str, Any], after: dict[str, Any], show_same: bool = False) -> None:
    """A table of every key (changed rows coloured), then each changed key before | after."""
    table = rows(before, after)
    changed = [r for r in table if r["change"] != "same"]
    if changed:
        st.markdown("Changed: " + " ".join(
            f":{'green' if r['change'] == 'added' else 'red' if r['change'] == 'removed' else 'orange'}"
            f"-badge[{r['key']} {r['change']}]" for r in changed))
    else:
        st.caption("This step changed nothing in working memory.")
    shown = table if show_same else changed
    if shown:
        df = pd.DataFrame(shown, columns=["key", "change", "before", "after"])
        styled = df.style.apply(
            lambda row: [f"background-color: {CHANGE_COLOURS[row['change']]}"
                         if CHANGE_COLOURS[row["change"]] else ""] * len(row), axis=1)
        st.dataframe(styled, hide_index=True, width="stretch")
    for r in changed:
        with st.expander(f"{r['key']}: before → after", expanded=len(changed) <= 2):
            left, right = st.columns(2)
            with left:
                st.caption("before")
                _value(before.get(r["key"]))
            with right:
                st.caption("after")
                _value(after.get(r["key"]))
