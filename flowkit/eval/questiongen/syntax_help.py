"""Questions from a manual's syntax line and the help sentence under it, by rule, no model:
"PRAGMA schema.freelist_count;" then "Return the number of unused pages in the database file." ->
"Which pragma returns the number of unused pages in the database file?" (answer: freelist_count).

A reference page lists each statement as its syntax, then a sentence that says what it does, in the
imperative ("Query or change the ...", "Return the ...") or as "This pragma ...". Neither reads as
a question alone; together they say what a user asks ("which pragma ...?"). The rules:

1. The syntax paragraph starts with 'PRAGMA', optionally a schema ('schema.'), then the name; every
   form in the paragraph names the same pragma (a paragraph of several pragmas names none).
2. The help is the first sentence of the next paragraph: an imperative (its first verb put in the
   third person: 'Query or change' -> 'queries or changes') or 'This pragma <verb>s ...'.
3. The question keeps `MIN_WORDS` to `MAX_WORDS` words and does not hold the name (some help
   sentences repeat it: 'Query or change the foreign_keys flag' asks nothing).
4. Both paragraphs lie in the first `checks.PASSAGE_CHARS` characters of the chunk, or the reader's
   window for the question shows both (`manual._shown` checks the sentence; the name is checked
   here), so the read-back sees the name.
"""
from __future__ import annotations

import re

from .facts import Fact, answer_in_question

MIN_WORDS, MAX_WORDS = 6, 32
_SYNTAX = re.compile(r"^PRAGMA\s+(?:\w+\s*\.\s*)?(?P<x>[a-z_][a-z_\d]*)\b")
_ALL_NAMES = re.compile(r"PRAGMA\s+(?:\w+\s*\.\s*)?([a-z_][a-z_\d]*)")
#: imperative verbs of a help line and their third person
_VERBS = {"query": "queries", "change": "changes", "set": "sets", "return": "returns",
          "attempt": "attempts", "run": "runs", "compute": "computes", "report": "reports",
          "check": "checks", "cause": "causes", "do": "does", "make": "makes", "list": "lists",
          "enable": "enables", "disable": "disables", "invoke": "invokes", "free": "frees",
          "determine": "determines", "count": "counts", "show": "shows", "test": "tests",
          "clear": "clears", "get": "gets", "reset": "resets", "read": "reads"}


def _third_person(help_: str) -> str | None:
    """'Query or change the X' -> 'queries or changes the X'; 'This pragma returns X' ->
    'returns X'; None for a sentence that is not a help line (rule 2)."""
    m = re.match(r"^This pragma (?P<rest>[a-z]+s\b.*)$", help_)
    if m:
        return m.group("rest")
    m = re.match(r"^(?P<verbs>[A-Z][a-z]+(?:(?:, or| or|,) [a-z]+){0,3}) (?P<rest>\S.*)$", help_)
    if not m:
        return None
    found = re.findall(r"[A-Za-z]+", m.group("verbs"))
    verbs = [v.lower() for v in found if v != "or"]
    if not verbs or any(v not in _VERBS for v in verbs):
        return None
    third = [_VERBS[v] for v in verbs]
    verb = third[0] if len(third) == 1 else ", ".join(third[:-1]) + (
        "," if len(third) > 2 else "") + f" or {third[-1]}"
    return f"{verb} {m.group('rest')}"


def syntax_facts(text: str) -> list[Fact]:
    """Every (syntax, help) pair of a chunk asked as "Which pragma ...?" (rules 1-3); the fact's
    sentence is the help sentence. `syntax_positions` says where each name is."""
    out: list[Fact] = []
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text)]
    for syntax, help_para in zip(paragraphs, paragraphs[1:]):
        m = _SYNTAX.match(syntax)
        if not m or set(_ALL_NAMES.findall(syntax)) != {m.group("x")}:
            continue
        first = re.split(r"(?<=[.!?])\s+(?=[A-Z])", help_para, maxsplit=1)[0].strip()
        if not first.endswith("."):
            continue
        rest = _third_person(first[:-1].strip())
        if rest is None:
            continue
        name = m.group("x")
        q = f"Which pragma {rest}?"
        if not MIN_WORDS <= len(q.split()) <= MAX_WORDS or answer_in_question(q, name):
            continue
        if name.replace("_", " ") in q.lower() or re.search(rf"\b{name}\b", q):
            continue
        out.append(Fact(q, name, "syntax help", first[:-1].strip()))
    return out
