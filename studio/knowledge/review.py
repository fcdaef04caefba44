"""The review of a generated question set, as plain data (no Streamlit): the table's rows made
from a generation's result, and the rows the user edited turned back into questions to save.

A row is {id, question, answer, kind, model answered, passages}; only question and answer are
editable. A row the user added has no id: it needs a question and an answer, and becomes a
question of kind "added" with no supporting passages. A deleted row is simply absent. The page
keeps the rows as the last Add left them, and the table's edits since (`apply_edits`).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from flowkit.errors import FlowkitError

EDITABLE = ("question", "answer")
COLUMNS = ("id", "question", "answer", "kind", "model answered", "passages")
ADDED = "added"
#: how the checks' answers are named in the table
ANSWER_LABELS = {"with_passages": "with its passages", "closed_book": "closed-book",
                 "passage_1_alone": "passage 1 alone", "passage_2_alone": "passage 2 alone"}


def model_answered(answers: Mapping[str, str]) -> str:
    """What the model answered in each check, on one line."""
    return " · ".join(f"{ANSWER_LABELS.get(k, k.replace('_', ' '))}: {v or '(nothing)'}"
                      for k, v in answers.items())


def rows(questions: Sequence[Mapping[str, Any]],
         reviewed: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """The review table's rows, one per generated question."""
    by_id = {r["id"]: r for r in reviewed}
    out = []
    for q in questions:
        r = by_id.get(q["id"], {})
        out.append({"id": q["id"], "question": q["question"],
                    "answer": (q.get("answers") or [""])[0], "kind": q.get("type") or "",
                    "model answered": model_answered(r.get("model_answers") or {}),
                    "passages": ", ".join(f"{p['id']} ({p['title']})" if p.get("title")
                                          else str(p["id"]) for p in r.get("passages") or [])})
    return out


def apply_edits(rows: Sequence[Mapping[str, Any]],
                edits: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The table's rows with a data editor's edits applied ({"edited_rows": {row: {column:
    value}}, "added_rows": [...], "deleted_rows": [row, ...]}, rows numbered from 0 as given)."""
    edits = edits or {}
    edited = {int(i): dict(change) for i, change in (edits.get("edited_rows") or {}).items()}
    deleted = {int(i) for i in edits.get("deleted_rows") or []}
    out = [{**row, **edited.get(i, {})} for i, row in enumerate(rows) if i not in deleted]
    out += [{c: (row.get(c) if row.get(c) is not None else "") for c in COLUMNS}
            for row in edits.get("added_rows") or []]
    return out


def added_row(question: str, answer: str) -> dict[str, str]:
    """A row for a question the user adds (no id, no passages: see `to_questions`)."""
    return {"id": "", "question": question.strip(), "answer": answer.strip(), "kind": ADDED,
            "model answered": "", "passages": ""}


def changes(edited: Sequence[Mapping[str, Any]], questions: Sequence[Mapping[str, Any]]) -> str:
    """What the user changed in the table, in words ('1 edited, 1 deleted, 1 added'; '' for
    nothing)."""
    originals = {q["id"]: q for q in questions}
    ids = {cell(r.get("id")) for r in edited}
    added = sum(1 for r in edited if cell(r.get("id")) not in originals)
    changed = sum(1 for r in edited if (q := originals.get(cell(r.get("id")))) is not None
                  and (cell(r.get("question")) != q["question"]
                       or cell(r.get("answer")) != cell((q.get("answers") or [""])[0])))
    deleted = sum(1 for qid in originals if qid not in ids)
    return ", ".join(f"{n} {what}" for n, what in ((changed, "edited"), (deleted, "deleted"),
                                                   (added, "added")) if n)


def cell(value: Any) -> str:
    """A cell's text: None and NaN (an empty cell of a new row) are ''."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value).strip()


def to_questions(edited: Sequence[Mapping[str, Any]], questions: Sequence[Mapping[str, Any]],
                 kb: str) -> list[dict[str, Any]]:
    """The questions to save from the table as the user left it (rows in order).

    An edited question or answer replaces the generated one (its origin says `edited`); an added
    row becomes a question of kind "added". A row without a question or an answer is refused:
    FlowkitError names every such row by its place in the table (row 1 is the first)."""
    originals = {q["id"]: q for q in questions}
    problems: list[str] = []
    out: list[dict[str, Any]] = []
    added = 0
    taken = set(originals)
    for place, row in enumerate(edited, 1):
        qid = cell(row.get("id"))
        question, answer = cell(row.get("question")), cell(row.get("answer"))
        original = originals.get(qid)
        where = f"row {place}" + (" (added)" if original is None else f" ({qid})")
        missing = [name for name, v in (("a question", question), ("an answer", answer)) if not v]
        if missing:
            problems.append(f"{where}: write {' and '.join(missing)}, or delete the row")
            continue
        if original is None:
            added += 1
            while f"{ADDED}-{added}" in taken:
                added += 1
            qid = f"{ADDED}-{added}"
            taken.add(qid)
            out.append({"id": qid, "question": question, "answers": [answer], "type": ADDED,
                        "supporting_doc_ids": [], "origin": {"added_by": "user", "kb": kb}})
            continue
        q = dict(original)
        old_answer = (original.get("answers") or [""])[0]
        if question != original["question"] or answer != old_answer:
            q["question"] = question
            if answer != old_answer:
                q["answers"] = [answer]
            q["origin"] = {**(original.get("origin") or {}), "edited": True}
        out.append(q)
    if problems:
        raise FlowkitError("; ".join(problems))
    return out
