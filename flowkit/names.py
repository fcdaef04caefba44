"""What a name shown to people may hold: a flow's name, a node's label, an edge's label.

A name made only of spaces, or holding a control character (a newline, a tab, NUL, any other C0/C1
control, or a Unicode line/paragraph separator), is refused: it would print as nothing, break a
line in a table or a log, or be cut short by C code that reads up to a NUL.
"""
from __future__ import annotations

import unicodedata

#: Unicode categories refused in a name: controls, line and paragraph separators.
_REFUSED_CATEGORIES = frozenset({"Cc", "Zl", "Zp"})


def flaw(text: str, *, blank_ok: bool = False) -> str | None:
    """Why `text` is not a usable name ("is blank", "holds a newline (U+000A) at character 3"),
    or None when it is. `blank_ok` accepts the empty string (an unset label), never only spaces."""
    if not text:
        return None if blank_ok else "is empty"
    for i, ch in enumerate(text):
        if unicodedata.category(ch) in _REFUSED_CATEGORIES:
            return f"holds a control character ({_describe(ch)}) at character {i + 1}"
    if not text.strip():
        return "is made only of spaces"
    return None


def _describe(ch: str) -> str:
    names = {"\n": "a newline", "\r": "a carriage return", "\t": "a tab", "\x00": "NUL"}
    return f"{names.get(ch, unicodedata.name(ch, 'control'))}, U+{ord(ch):04X}"
