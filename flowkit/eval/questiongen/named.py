"""Questions that ask for the name a manual's sentence uses, by rule, no model: "The maximum
parameter number is set at compile-time by the SQLITE_MAX_VARIABLE_NUMBER macro." -> "The maximum
parameter number is set at compile-time by which macro?" (answer: SQLITE_MAX_VARIABLE_NUMBER).

A manual names its tools in a few fixed ways, and what a sentence says about one is a fact a user
asks about by what it does ("which pragma must be run to ...?"). The name is replaced in its
place by "which <noun>" (the sentence itself stays the question: the default model writes vague
questions and reads well, GUIDE "Evaluating without gold answers"); the rules, each with its
reason:

1. A name is a code-like token: backticked or quoted, or with '_', '()' or a digit in it, or
   written in capitals (two letters or more: 'NOT', 'VACUUM'); an ordinary word is not one.
2. Three shapes are read: 'the (or a) [adjective] <name> [word] <noun>' ('the separate incremental_vacuum
   pragma', 'the SQLITE_DEBUG compile-time option'; the nouns of `manual.TOOL_NOUNS` and a few
   more, `NOUNS`), 'PRAGMA <name>' (asked as "which pragma") and '<name>()' alone ('using
   memcmp()', asked as "which function").
3. The name must be written once in the sentence (twice, the question would hold its answer), and
   the question keeps `MIN_WORDS` to `MAX_WORDS` words (shorter asks nothing, longer is not read).
4. A sentence that leans on another is refused (`manual._leans`: 'This pragma ...', 'it', 'the
   following'), as is an example ('For example, ...', 'e.g.') and a sentence whose subject is one
   bare noun ('The setting ...', 'The value ...': the sentence before says which).
"""
from __future__ import annotations

import re

from .facts import Fact

#: the nouns a manual names a tool by (manual.TOOL_NOUNS and these)
NOUNS = ("command", "pragma", "function", "method", "statement", "clause", "option", "setting",
         "parameter", "keyword", "operator", "flag", "macro", "routine", "procedure", "utility",
         "program", "tool", "directive", "variable", "attribute", "property", "constraint",
         "mode", "interface", "extension", "module", "class", "type", "switch", "hook",
         "callback", "modifier", "token", "table", "column", "field", "file", "opcode", "error",
         "affinity", "collation", "format", "specifier", "argument", "value", "object", "API",
         "routine", "symbol", "index", "view", "trigger", "journal", "header",
         "collating sequence", "collating function", "sequence", "algorithm", "encoding",
         "storage class", "limit", "prefix", "suffix", "character", "string", "identifier",
         "notation", "syntax", "expression", "result code", "return code", "code", "page")
MIN_WORDS, MAX_WORDS = 6, 32
#: a code-like name (rule 1)
_CODE = (r"(?:`[^`\s]{1,40}`|\"[^\"\s]{1,40}\"|'[^'\s]{1,40}'|"
         r"[A-Za-z_][\w.]*\([\w,. ]{0,60}\)|"
         r"[A-Za-z][\w.]*[_\d][\w.]*|"
         r"[A-Z][A-Z_]+[A-Z\d])")
_NOUN = "(?:" + "|".join(NOUNS) + ")s?"
_THE = re.compile(rf"\b(?:the|an?)\s+(?:(?P<adj>[a-z][a-z-]+)\s+)?(?P<x>{_CODE})\s+"
                  rf"(?P<noun>(?:(?:[a-z][a-z-]+|C|SQL)\s+)?{_NOUN})\b")
#: 'PRAGMA <name>': not 'the application_id PRAGMA is used ...' nor 'The PRAGMA statement is ...'
_PRAGMA = re.compile(r"(?:\b[Tt]he\s+)?\bPRAGMA\s+(?!(?:is|are|was|were|can|may|must|will|has|"
                     r"have|does|do|statements?|commands?|and|or|the|an?|to|of|in|on|for|with|"
                     r"that|which)\b)(?P<x>[a-z_][a-z_\d]*)\b(?:\s+(?:statement|command))?")
_CALL = re.compile(r"(?:\bthe\s+(?:[a-z-]+\s+)?)?(?<![\w.])(?P<x>[A-Za-z_]\w*\(\))(?!\s*\w)")
#: a name in capitals is asked only with the nouns that name a tool ('the NOT keyword', not 'the
#: WAL header'), and never an acronym of a format or a language (rule 1)
_CAPS_NOUNS = {"command", "statement", "clause", "keyword", "operator", "pragma", "mode", "macro",
               "option", "modifier", "affinity", "constraint", "function", "journaling mode",
               "compile-time option", "preprocessor macro", "error", "opcode", "setting",
               "collating sequence", "collating function", "storage class", "result code",
               "return code", "code", "encoding", "algorithm"}
_ACRONYMS = {"SQL", "JSON", "WAL", "API", "UTF", "UTC", "CSV", "HTML", "ASCII", "BLOB", "TEXT",
             "REAL", "INTEGER", "NUMERIC", "ISO", "RFC", "CPU", "OS", "URI", "VFS", "CLI", "GMT"}
#: words that open an example or lean on the sentences around it
_OPENERS = {"for", "e.g.", "example", "examples", "this", "these", "those", "it", "they",
            "such", "so", "hence", "thus", "then", "also", "however", "but", "and", "or",
            "see", "note", "likewise", "similarly", "otherwise", "here", "there"}
#: the bare one-noun subject that leans on the sentence before (rule 4)
_BARE_SUBJECT = re.compile(r"^The\s+[a-z-]+\s+(?:is|are|was|were|can|may|must|will|does|do|"
                           r"has|have|should|cannot|might)\b")
#: a pragma's help line ('Query or change ...'): `syntax_help` asks it with the pragma's name
_IMPERATIVE = {"query", "return", "returns", "change", "set", "attempt", "run", "compute"}
_ADJ_KEEP = {"compile-time", "run-time", "runtime", "preprocessor", "built-in", "internal"}


def _clean(name: str) -> str:
    return name.strip("`'\"")


def _words(text: str) -> int:
    return len(text.split())


def _finish(q: str) -> str:
    q = re.sub(r"\s+", " ", q).strip().rstrip(".!;:, ")
    return q[0].upper() + q[1:] + "?"


def _mentions(s: str) -> list[tuple[int, int, str, str]]:
    """(start, end, name, which-phrase) of each name in `s` (rule 2), in order."""
    out: list[tuple[int, int, str, str]] = []
    taken: list[tuple[int, int]] = []
    for m in _THE.finditer(s):
        noun = m.group("noun")
        if re.fullmatch(r"[A-Z][A-Z_]+[A-Z\d]", m.group("x")) and (
                m.group("x") in _ACRONYMS or noun.rstrip("s") not in _CAPS_NOUNS):
            continue
        adj = m.group("adj")
        lead = f"{adj} " if adj in _ADJ_KEEP else ""
        out.append((m.start(), m.end(), _clean(m.group("x")), f"which {lead}{noun}"))
        taken.append((m.start(), m.end()))
    for m in _PRAGMA.finditer(s):
        if not any(a <= m.start() < b for a, b in taken):
            out.append((m.start(), m.end(), m.group("x"), "which pragma"))
            taken.append((m.start(), m.end()))
    for m in _CALL.finditer(s):
        if not any(a <= m.start() < b for a, b in taken):
            out.append((m.start(), m.end(), m.group("x"), "which function"))
    return sorted(out)


def name_fact(s: str) -> Fact | None:
    """The sentence's first name asked for in its place ("... by which macro?"), or None where no
    name may be asked (rules 1-4)."""
    first = s.split()[0].lower().strip(",") if s.split() else ""
    if (first in _OPENERS or _BARE_SUBJECT.match(s) or re.search(r"\be\.g\.|\bi\.e\.|--", s)
            or first in _IMPERATIVE):
        return None
    for start, end, name, which in _mentions(s):
        if s[max(0, start - 1):start] in "\"'`(" and start > 0:
            continue                      # inside a quoted example or a bracket
        base = name.rstrip("()") if name.endswith("()") else name
        if len(base) < 2 or len(re.findall(rf"(?<![\w]){re.escape(base)}(?![\w])", s)) != 1:
            continue
        q = _finish(s[:start] + which + s[end:])
        if not MIN_WORDS <= _words(q) <= MAX_WORDS:
            continue
        return Fact(q, name, "name", s)
    return None
