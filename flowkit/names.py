"""What a name shown to people may hold: a flow's name, a node's label, an edge's label; and the
one rule that every new flow, knowledge-base and question-set name follows (`check_new_name`).

A name made only of spaces, or holding a control character (a newline, a tab, NUL, any other C0/C1
control, or a Unicode line/paragraph separator), is refused: it would print as nothing, break a
line in a table or a log, or be cut short by C code that reads up to a NUL.
"""
from __future__ import annotations

import re
import unicodedata

from .errors import FlowkitError

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


# ---- the one rule for new names of flows, knowledge bases and question sets -----------------
#: The longest new name: a knowledge base's name becomes a folder and the Chroma collection
#: `kb_<name>`, which holds at most 63 characters.
MAX_NAME = 60
#: The rule, as every refusal states it.
RULE = (f"a name is 1 to {MAX_NAME} characters: letters (a-z, A-Z), digits, '_', '-' and '.', "
        "starting and ending with a letter or digit, without '..'")
_NAME = re.compile(rf"[A-Za-z0-9](?:[A-Za-z0-9_.\-]{{0,{MAX_NAME - 2}}}[A-Za-z0-9])?")


def name_problem(text: object) -> str | None:
    """Why `text` is not allowed as a new flow, knowledge-base or question-set name (the rule,
    `RULE`), or None when it is. Matched whole (`fullmatch`): a trailing newline is refused."""
    if not isinstance(text, str):
        return f"a name is text, not {type(text).__name__}"
    if _NAME.fullmatch(text) is None or ".." in text:
        return RULE
    return None


def check_new_name(text: str, what: str) -> str:
    """`text` when it follows the rule, else NameRuleError: "flow name '../x' is not allowed: a
    name is 1 to 60 characters: ..." (`what` is "flow", "knowledge base" or "question set").
    Names saved before the rule stay usable: only new ones are checked."""
    why = name_problem(text)
    if why is not None:
        shown = text if isinstance(text, str) and text.isprintable() else ascii(text)[1:-1]
        raise NameRuleError(f"{what} name '{shown[:80]}' is not allowed: {why}")
    return text


class NameRuleError(FlowkitError):
    """A new name that breaks the one rule for names (the message states the rule)."""
