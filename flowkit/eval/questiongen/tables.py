"""Questions from the rows of a table chunk, by rule, no model: "What is the storage size of bigint?"

A third of a manual's real questions are answered by a table row (issue 46), and a table says
plainly what a row is about (its key) and what each cell is (its column's header), so the question
is built from the table itself, never written by the model (GUIDE, "Evaluating without gold
answers": the default model writes vague questions and reads well). A table chunk's text, as the
structure-aware chunker writes it (`flowkit.documents.model.Table.text`): an optional caption
line, the header line, then a line per row, cells joined by `CELL_SEP`.

For a row R of a table with header H, the question asks for the cell R[j] by the row's key and the
header H[j]: "What is the <H[j]> of <key>?". The rules, each with its reason:

1. The key is the first column whose cells are all filled, distinct and not bare numbers: a key
   repeated in the chunk names two rows, and a number alone ('3') names nothing a reader would ask.
2. A cell is asked only when it is short (at most `MAX_ANSWER_WORDS` words) and not a sentence
   (more than `MAX_SENTENCE_CELL_WORDS` words ending in a full stop, or two sentences): a flow's
   answer is a name, a number or a short phrase (the answer prompt says so), and a sentence-long
   cell cannot be matched back by the round-trip check's F1.
3. Skipped: empty and dash cells (nothing to ask), a cell equal to the key (the answer would be in
   the question), a header that is only a number ('2019': "the 2019 of X" reads as nothing), a
   column of yes/no marks (a guess is right half the time; the closed-book check would keep half
   of them by luck), and a column that numbers the rows 1, 2, 3 (a position, not a fact).
4. A key that is also a key of another table in the knowledge base, or is shorter than three
   characters, is asked with its table's caption (or section) as context: "In the "Integer Types"
   table, what is ...", so that the question has one answer in the whole knowledge base.
5. Only rows the reader is shown are asked: the checks (and the flows' answer operator) show a
   passage through a window of `PASSAGE_CHARS` characters, which for a longer structured chunk
   holds the caption, the header and the rows that bear on the question
   (`flowkit.operators._window.focus`); a row the window leaves out for its own question cannot be
   read back (every such candidate would cost a model call for nothing).
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ...documents.model import CELL_SEP, PATH_SEP
from ...operators._window import focus
from .candidates import Candidate, Passage
from .checks import PASSAGE_CHARS
from .facts import answer_in_question

#: the most words an asked cell may have (rule 2)
MAX_ANSWER_WORDS = 12
#: a cell ending in a full stop with more words than this is a sentence (rule 2)
MAX_SENTENCE_CELL_WORDS = 6
#: the most words a key or a header may have to be read as a name
MAX_NAME_WORDS = 6
_EMPTY = {"", "-", "–", "—", "n/a", "na", "?", "…", "..."}
_MARKS = {"yes", "no", "y", "n", "true", "false", "x", "✓", "✔", "✗", "✘", "•"} | _EMPTY
_NUMERIC = re.compile(r"[-+]?[\d.,]+%?")
_CAPTION_LABEL = re.compile(r"^(?:Table|Tab\.)\s*[\w.-]*\d[\w.-]*[.:]?\s+", re.I)
_NUMBERING = re.compile(r"^(?:(?:Chapter|Section|Appendix)\s+)?[\dA-Z]?[\d.]*\d[.)]?\s+")


@dataclass(frozen=True)
class TableText:
    """A table read back from a chunk's text: caption, header cells, body rows and, for each row,
    where its line ends in the text (rule 5)."""

    caption: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    row_ends: tuple[int, ...]


def _cells(line: str) -> list[str]:
    """A row line's cells; a line whose last cell was empty lost its trailing space ('a | b |'),
    one whose first cell was empty (a header's corner: ' | SQLite | ...') its leading one."""
    if line.endswith(CELL_SEP.rstrip()):
        line += " "
    if line.startswith(CELL_SEP.lstrip()):
        line = " " + line
    return [c.strip() for c in line.split(CELL_SEP)]


def read_table(text: str, strict: bool = False) -> TableText | None:
    """The table of a table chunk, or None when the text is not one. Rows with another number of
    cells than the header are left out (`strict`: the text is not a table at all; used on chunks
    whose chunker did not say they are tables)."""
    lines: list[tuple[str, int]] = []
    pos = 0
    for raw in text.split("\n"):
        end = pos + len(raw)
        if raw.strip():
            lines.append((raw.rstrip(), end))
        pos = end + 1
    caption = ""
    if lines and CELL_SEP.strip() not in lines[0][0]:
        caption = lines.pop(0)[0].strip()
    if len(lines) < 2:
        return None
    header = tuple(_cells(lines[0][0].strip()))
    if len(header) < 2:
        return None
    rows, ends = [], []
    for line, end in lines[1:]:
        cells = _cells(line.strip())
        if len(cells) != len(header):
            if strict:
                return None
            continue
        rows.append(tuple(cells))
        ends.append(end)
    if not rows or (strict and len(rows) < 2):
        return None
    return TableText(caption, header, tuple(rows), tuple(ends))


def passage_tables(p: Passage) -> list[TableText]:
    """The tables a passage holds: a chunk its chunker marked 'table' is one; a text chunk may end
    with a small table (the structure-aware chunker puts a table that fits beside its section's
    text), read from its paragraphs that hold cells; where the chunker said nothing (an older
    knowledge base) only paragraphs that are all rows of one width count."""
    if p.kind == "table":
        t = read_table(p.text)
        return [t] if t is not None else []
    out: list[TableText] = []
    for m in re.finditer(r"(?:[^\n]|\n(?![ \t]*\n))+", p.text):
        if CELL_SEP not in m.group(0):
            continue
        t = read_table(m.group(0), strict=p.kind == "")
        if t is not None:
            out.append(TableText(t.caption, t.header, t.rows,
                                 tuple(end + m.start() for end in t.row_ends)))
    return out


def passage_table(p: Passage) -> TableText | None:
    """The passage's first table, or None."""
    found = passage_tables(p)
    return found[0] if found else None


def asked_columns(t: TableText) -> list[tuple[int, tuple[str, str]]]:
    """The columns whose cells may be asked, with their header as a phrase (rule 3): a header
    that reads as words, not a column of yes/no marks, not one that numbers the rows."""
    out = []
    for j, header in enumerate(t.header):
        phrase = header_phrase(header)
        if phrase is not None and not (all(r[j].lower() in _MARKS for r in t.rows)
                                       or _numbering(t, j)):
            out.append((j, phrase))
    return out


def short_answer(cell: str) -> str | None:
    """A cell as an answer (rule 2 and 3): stripped, or None when it is a mark, empty, longer
    than MAX_ANSWER_WORDS words or a sentence."""
    answer = cell.strip()
    if (answer.lower() in _MARKS or len(answer.split()) > MAX_ANSWER_WORDS
            or _sentence(answer)):
        return None
    return answer


def shown_to_reader(p: Passage, question: str, row: Sequence[str], end: int) -> bool:
    """Whether the reader's window on `p` for `question` shows `row` (rule 5); `end`: where the
    row's line ends in the passage (a row within the first PASSAGE_CHARS is always shown)."""
    if end <= PASSAGE_CHARS:
        return True
    seen = " ".join(focus(p.text, p.kind or None, question, PASSAGE_CHARS).split())
    return " ".join(CELL_SEP.join(row).split()) in seen


def _numeric(cell: str) -> bool:
    return bool(_NUMERIC.fullmatch(cell.replace(" ", "")))


def key_column(t: TableText) -> int | None:
    """The column that names each row (rule 1), or None when no column does."""
    for j in range(len(t.header)):
        cells = [r[j] for r in t.rows]
        if any(c.lower() in _EMPTY or _numeric(c) or len(c.split()) > MAX_NAME_WORDS
               for c in cells):
            continue
        if len({c.lower() for c in cells}) == len(cells):
            return j
    return None


def _sentence(cell: str) -> bool:
    """Whether a cell is a sentence rather than a value (rule 2)."""
    return (re.search(r"[.!?]\s+[A-Z\"']", cell) is not None
            or (cell.endswith(".") and len(cell.split()) > MAX_SENTENCE_CELL_WORDS))


def _numbering(t: TableText, j: int) -> bool:
    """Whether column j counts the rows (consecutive whole numbers, '1.' or '1' alike)."""
    cells = [r[j].rstrip(".") for r in t.rows]
    if not all(c.isdigit() for c in cells):
        return False
    nums = [int(c) for c in cells]
    return len(nums) > 1 and nums == list(range(nums[0], nums[0] + len(nums)))


def _keep_case(word: str) -> bool:
    """An acronym, a code name or a unit keeps its case ('SQL', 'maxValue', 'page_size', 'KiB')."""
    return (sum(ch.isupper() for ch in word) >= 2 or any(ch.isupper() for ch in word[1:])
            or any(ch.isdigit() or ch == "_" for ch in word))


def header_phrase(header: str) -> tuple[str, str] | None:
    """A header as it reads in a question, with its verb: 'Storage Size' -> ('storage size',
    'is'), 'Aliases' -> ('aliases', 'are'), 'Size (bytes)' -> ('size in bytes', 'is'); None for a
    header that is not words (rule 3) or too long to read as one."""
    h = " ".join(header.split()).strip(" :*†‡")
    if (not re.search(r"[A-Za-z]{2}", h) or len(h.split()) > MAX_NAME_WORDS
            or "..." in h or "…" in h):
        return None
    unit = re.search(r"\s*\(([^()]+)\)$", h)
    head = h[:unit.start()] if unit else h
    words = [w if _keep_case(w) else w.lower() for w in head.split()]
    if words and words[0] == "the":
        words = words[1:]
    if not words:
        return None
    last = words[-1]
    plural = (last.endswith("s") and not last.endswith(("ss", "us", "is"))
              and not _keep_case(last))
    if unit:
        words += ["in", unit.group(1).strip()]
    return " ".join(words), "are" if plural else "is"


def context_name(p: Passage, t: TableText) -> str:
    """What the table is called, for a question that needs it (rule 4): its caption without its
    label ('Table 8.2. Integer Types' -> 'Integer Types'), else its section's heading without its
    number, else ''."""
    if t.caption:
        name = _CAPTION_LABEL.sub("", t.caption).strip(" .:")
        if name:
            return name
    heading = str(p.meta.get("section") or "").split(PATH_SEP.strip())[-1].strip()
    return _NUMBERING.sub("", heading).strip(" .:")


def row_candidates(p: Passage, t: TableText, shared_keys: frozenset[str] = frozenset()
                   ) -> list[Candidate]:
    """Every question the rows of `t` give, row by row and column by column. `shared_keys`: the
    keys (lowercased) that other tables of the knowledge base have too (rule 4)."""
    key_col = key_column(t)
    if key_col is None:
        return []
    title = context_name(p, t)
    kind_of_name = "table" if t.caption else "section"
    columns = asked_columns(t)
    out: list[Candidate] = []
    for row, end in zip(t.rows, t.row_ends):
        key = row[key_col].strip().rstrip(".")
        needs_context = key.lower() in shared_keys or len(key) < 3
        if needs_context and not title:
            continue
        for j, phrase in columns:
            if j == key_col:
                continue
            answer = short_answer(row[j])
            if answer is None or answer.lower() == key.lower():
                continue
            what, verb = phrase
            question = f"What {verb} the {what} of {key}?"
            if needs_context:
                question = f'In the "{title}" {kind_of_name}, {question[0].lower()}{question[1:]}'
            if answer_in_question(question, answer) or not shown_to_reader(p, question, row, end):
                continue
            out.append(Candidate(question, answer, "table", (p,), "table cell",
                                 {"table_key": key, "table_column": t.header[j]}))
    return out


def _identity(p: Passage, t: TableText) -> tuple[str, str]:
    """Which table a chunk belongs to: chunks of one table repeat its caption and header."""
    return p.doc_id, t.caption or str(p.meta.get("section") or "") or p.chunk_id


def shared_keys(tables: Sequence[tuple[Passage, TableText]]) -> frozenset[str]:
    """The row keys (lowercased) that more than one table of the knowledge base has (rule 4)."""
    seen: dict[str, set[tuple[str, str]]] = {}
    for p, t in tables:
        j = key_column(t)
        if j is None:
            continue
        for row in t.rows:
            seen.setdefault(row[j].strip().rstrip(".").lower(), set()).add(_identity(p, t))
    return frozenset(k for k, ids in seen.items() if len(ids) > 1)
