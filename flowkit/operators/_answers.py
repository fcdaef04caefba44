"""Short answers: cut what a model wrote down to the answer, and refuse placeholders.

Small models copy prompt scaffolding ("So the answer is: <answer>.") and wrap short answers in
sentences ("The answer is: 1931"); shown a manual's table, they copy its rows ("Yes | Yes | Yes",
"No | Yes"). `short_answer` keeps the first line without the lead-in, and of a copied row its first
cell;
`real_answer` says whether a stated answer is one at all (judges that stop a loop on "the answer
is ..." must not stop on "<answer>" or on nothing).
"""
from __future__ import annotations

import re

from ..documents.model import CELL_SEP

_LEAD_IN = re.compile(r"^\s*(?:so\s+)?(?:the\s+)?(?:final\s+|short\s+)?answer(?:\s+is)?\s*[:\-]\s*|"
                      r"^\s*(?:so\s+)?the\s+answer\s+is\s+", re.IGNORECASE)
_CITATION = re.compile(r"\s*\[\d{1,3}\]")
_PLACEHOLDER = re.compile(
    r"^(?:<[^<>]{0,40}>|\[[^\[\]]{0,40}\]|\{[^{}]{0,40}\}|\.{2,}|\u2026|_+|\(?"
    r"(?:the |your |a |short |shortest |final )*(?:answer|short answer|search query|query)s?"
    r"\)?)$", re.IGNORECASE)


def real_answer(text: str | None) -> str:
    """The stated answer without quotes, brackets of citations or a final full stop; '' when it is
    empty or a placeholder copied from a prompt (<answer>, [answer], 'short answer', '...')."""
    if not text:
        return ""
    ans = _CITATION.sub("", text).strip().strip("\"'`*").strip().rstrip(".").strip()
    return "" if not ans or _PLACEHOLDER.match(ans) else ans


def short_answer(text: str | None) -> str:
    """The answer in what a model wrote: its first non-empty line, without a lead-in such as
    'The answer is:', citations and a final full stop ('' for a placeholder or nothing). A line
    that is only a lead-in ('The answer is:') hands over to the next line. A line holding table
    cells (joined by ' | ', as a reader is shown a table's rows) keeps its first cell: a row is
    never an answer, and a model that copies one starts it at the cell it means ('No | Yes' for
    'No'; measured on the SQLite manual bench, 3 of 20 table questions answered so)."""
    for line in (text or "").splitlines():
        rest = _LEAD_IN.sub("", line.strip(), count=1).strip()
        if CELL_SEP in f" {rest} ":                  # '||' or 'a|b' are not cells
            rest = next((c.strip() for c in f" {rest} ".split(CELL_SEP) if c.strip()), "")
        if rest:
            return real_answer(rest)
    return ""
