"""Questions from the rows of a table whose rows are described rather than named, by rule, no model:
'In the "Database Header Format" table, what is the offset of "The database page size in bytes"?'.

Reference tables in manuals often key their rows by a number or a code and say what each row is in
a description column: a file format's fields (Offset | Size | Description), the codes of a format
string (Substitution Type | Meaning), the flags of a command (Flag | Meaning). `tables.row_candidates`
asks for a cell by the row's key, which such tables lack (an offset names nothing a reader would
ask for), or whose only other cell is a sentence no answer can match. Here the description names
the row and the short cells are the answers:

1. The description column is the column whose cells are sentences (`tables._sentence`) or longer
   than `tables.MAX_SENTENCE_CELL_WORDS` words in at least `MIN_DESCRIBED` of the rows; its header
   is not asked.
2. A row's descriptor is its description's first sentence, without its full stop, when it has at
   least `MIN_DESCRIPTOR_WORDS` and at most `MAX_DESCRIPTOR_WORDS` words and no other row of the
   table starts with the same one: a question names one row.
3. The answers are the row's short cells (the rules of `tables.row_candidates`: at most
   `tables.MAX_ANSWER_WORDS` words, no sentence, no yes/no mark, no empty cell, a header that reads
   as words), not found in the question.
4. The question always carries the table's caption (or section) as context: a descriptor like
   "Reserved for expansion" is shared by many tables of a manual.
5. Only rows the reader's window shows for the question are asked (`tables` rule 5).
"""
from __future__ import annotations

import re

from .candidates import Candidate, Passage
from .facts import answer_in_question
from .tables import (
    MAX_SENTENCE_CELL_WORDS,
    TableText,
    _sentence,
    asked_columns,
    context_name,
    short_answer,
    shown_to_reader,
)

#: the share of rows whose cell in a column must be a sentence for it to describe the rows (rule 1)
MIN_DESCRIBED = 0.6
#: a descriptor's length in words (rule 2): shorter says too little, longer is not a name
MIN_DESCRIPTOR_WORDS = 3
MAX_DESCRIPTOR_WORDS = 14


def description_column(t: TableText) -> int | None:
    """The column that describes each row (rule 1), or None."""
    best, best_words = None, 0
    for j in range(len(t.header)):
        cells = [r[j] for r in t.rows]
        described = [c for c in cells if _sentence(c) or len(c.split()) > MAX_SENTENCE_CELL_WORDS]
        words = sum(len(c.split()) for c in cells)
        if len(described) >= MIN_DESCRIBED * len(cells) and words > best_words:
            best, best_words = j, words
    return best


def descriptor(cell: str) -> str | None:
    """A description's first sentence as the row's name (rule 2), or None."""
    first = re.split(r"(?<=[.!?;])\s+(?=[A-Z0-9\"'(])", cell.strip(), maxsplit=1)[0]
    first = first.rstrip(" .:;")
    n = len(first.split())
    if n < MIN_DESCRIPTOR_WORDS or n > MAX_DESCRIPTOR_WORDS or '"' in first:
        return None
    return first


def described_candidates(p: Passage, t: TableText) -> list[Candidate]:
    """Every question the described rows of `t` give (see the module's rules)."""
    d_col = description_column(t)
    title = context_name(p, t)
    if d_col is None or not title or len(t.header) < 2:
        return []
    names = [descriptor(r[d_col]) for r in t.rows]
    counts: dict[str, int] = {}
    for name in names:
        if name:
            counts[name.lower()] = counts.get(name.lower(), 0) + 1
    columns = asked_columns(t)
    kind_of_name = "table" if t.caption else "section"
    out: list[Candidate] = []
    for row, end, name in zip(t.rows, t.row_ends, names):
        if name is None or counts[name.lower()] > 1:
            continue
        for j, phrase in columns:
            if j == d_col:
                continue
            answer = short_answer(row[j])
            if answer is None:
                continue
            what, verb = phrase
            question = f'In the "{title}" {kind_of_name}, what {verb} the {what} of "{name}"?'
            if answer_in_question(question, answer) or not shown_to_reader(p, question, row, end):
                continue
            out.append(Candidate(question, answer, "table", (p,), "described row",
                                 {"table_key": name, "table_column": t.header[j]}))
    return out
