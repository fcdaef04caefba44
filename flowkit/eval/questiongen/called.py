"""Questions that ask for the term a manual's sentence introduces, by rule, no model: "A b-tree page
without a parent is called a root page." -> "A b-tree page without a parent is called what?"
(answer: root page).

Manuals name their concepts as they go ("... in an operation called a "checkpoint"", "... known as
the schema table"); the name is what a user looks up, and the sentence around it says what it is.
The term is replaced in its place by "what"; the rules, each with its reason:

1. The term follows 'called', 'known as', 'referred to as' or 'termed' (an article or 'its'
   before it is dropped with it), or 'named' when the term is quoted or written as code
   ('named "sqlite_schema"'; 'named and numbered parameters' names nothing).
2. The term is quoted, code-like, or at most `MAX_TERM_WORDS` words up to its clause's end
   (a comma, 'or', 'since', 'which', ...): a term, not a description.
3. The question keeps `MIN_WORDS` to `MAX_WORDS` words, its sentence does not lean on another
   ('This is called ...', 'Such a subquery ...', 'they are called ...'), and the term is not
   written elsewhere in it; nor a term given with its other name ('called "write-ahead log" or
   "WAL"': either is right) or a syntax placeholder ('table-name').
"""
from __future__ import annotations

import re

from .facts import Fact, answer_in_question, words

MAX_TERM_WORDS = 4
MIN_WORDS, MAX_WORDS = 6, 32
_QUOTED = r"\"[^\"]{1,40}\"|“[^”]{1,40}”|'[^']{1,40}'"
_CODE = r"[A-Za-z][\w.]*[_\d][\w.]*|[A-Z][A-Z_]+[A-Z\d]"
_TERM = re.compile(
    r"\b(?P<verb>called|known as|referred to as|termed|named)\s+(?P<det>(?:the|an?|its)\s+)?"
    rf"(?P<x>{_QUOTED}|{_CODE}|[\w-]+(?:\s+[\w-]+){{0,{MAX_TERM_WORDS - 1}}}?)"
    r"(?=\s*$|\s*[,;:]|\s+(?:since|because|which|that|to|is|are|in|for|when|if|"
    r"by|on|at|so|as|of)\b)")
#: words that open a sentence leaning on another (rule 3)
_OPENERS = {"this", "these", "those", "such", "it", "they", "that", "then", "so", "also",
            "here", "there", "both", "either"}
_PRONOUNS = {"it", "they", "them", "this", "these", "those", "its", "their", "such"}


def called_fact(s: str) -> Fact | None:
    """The term `s` introduces, asked for in its place (rules 1-3), or None."""
    toks = s.split()
    if not toks or toks[0].lower().strip(",") in _OPENERS:
        return None
    m = _TERM.search(s)
    if m is None:
        return None
    x = m.group("x")
    quoted = bool(re.fullmatch(_QUOTED, x))
    code = bool(re.fullmatch(_CODE, x))
    if m.group("verb") == "named" and not (quoted or code):
        return None
    term = x.strip("\"'“”").strip()
    if not term or (not quoted and set(words(term)) & {"the", "a", "an", "which", "that"}):
        return None
    start = m.start("det") if m.group("det") else m.start("x")
    q = s[:start] + "what" + s[m.end("x"):]
    q = re.sub(r"\s+", " ", q).strip().rstrip(".!;:, ")
    q = q[0].upper() + q[1:] + "?"
    if (not MIN_WORDS <= len(q.split()) <= MAX_WORDS or answer_in_question(q, term)
            or _PRONOUNS & set(words(q)) or " what or " in q or term.endswith("-name")):
        return None
    return Fact(q, term, "term", s)
