"""Questions that ask where a file format keeps a field, or which number a sentence gives a named
quantity, by rule, no model: "The number of freelist pages is stored at an offset of 36 from the
beginning of the file." -> "The number of freelist pages is stored at which offset from the
beginning of the file?" (answer: 36); "If the table is empty, then a ROWID of 1 is used." -> "If
the table is empty, then what ROWID is used?" (answer: 1).

A format's reference says where each field lies in prose as well as in its tables, and a manual
gives a quantity its value as '<a noun> of <number>'. The number is the answer, asked in its
place; the rules, each with its reason:

1. 'at offset N', 'at an offset of N' -> 'at which offset'; 'a/an/the <noun> of N' -> 'what
   <noun>' (the noun says what the number is), N a whole number.
2. The sentence names no other number with the same words around it: it gives one offset (two,
   'at offset 52 ... at offset 64', ask for either), and the number is not a year or a version.
3. The sentence does not lean on another (`named`'s openers; 'it', 'this', 'its', ...) and the
   question keeps `MIN_WORDS` to `MAX_WORDS` words.
"""
from __future__ import annotations

import re

from .facts import POINTING_WORDS, Fact, words
from .named import _OPENERS

MIN_WORDS, MAX_WORDS = 6, 32
_OFFSET = re.compile(r"\bat\s+(?:an\s+)?offset\s+(?:of\s+)?(?P<n>\d+)\b(?![.\d])(?:\s+bytes)?")
_NOUN_OF = re.compile(r"\b(?:a|an|the)\s+(?P<noun>[A-Za-z][\w-]*)\s+of\s+(?P<n>-?\d+)\b(?![.\d-])")
#: nouns before 'of N' that are not a quantity ('a total of 3', 'a multiple of 8', 'a maximum
#: of 5' is `manual.limit_fact`'s)
_NOT_A_QUANTITY = {"total", "multiple", "maximum", "minimum", "number", "series", "list", "set",
                   "sequence", "array", "power", "factor", "range", "group", "lot", "couple",
                   "version", "page", "section", "step", "offset"}


def offset_fact(s: str) -> Fact | None:
    """The one offset, or the number of a named quantity, `s` gives, asked for in its place
    (rules 1-3), or None."""
    toks = s.split()
    if not toks or toks[0].lower().strip(",") in _OPENERS or POINTING_WORDS & set(words(s)):
        return None
    offsets = list(_OFFSET.finditer(s))
    if len(offsets) == 1:
        m, which = offsets[0], "at which offset"
    elif offsets:
        return None
    else:
        found = [m for m in _NOUN_OF.finditer(s)
                 if m.group("noun").lower() not in _NOT_A_QUANTITY]
        if len(found) != 1:
            return None
        m, which = found[0], f"what {found[0].group('noun')}"
    n = m.group("n")
    if re.fullmatch(r"1[89]\d\d|20\d\d", n) or len(re.findall(rf"(?<![\w.]){n}(?![\w.])", s)) != 1:
        return None
    q = s[:m.start()] + which + s[m.end():]
    q = re.sub(r"\s+", " ", q).strip().rstrip(".!;:, ")
    q = q[0].upper() + q[1:] + "?"
    if not MIN_WORDS <= len(q.split()) <= MAX_WORDS or re.match(r"\s+or\b", s[m.end():]):
        return None                       # 'a value of 1000 or X': either is the answer
    return Fact(q, n, "offset" if which == "at which offset" else "quantity", s)
