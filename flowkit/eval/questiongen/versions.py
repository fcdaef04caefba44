"""Questions that ask for the release a manual's sentence dates a feature by, by rule, no model:
"The STRICT keyword is only recognized by SQLite version 3.37.0 and later." -> "The STRICT keyword
is only recognized by which version of SQLite and later?" (answer: 3.37.0).

Users ask when a feature arrived or from which release a file can be read; a manual says so in
passing. The version is replaced in its place by "which version of <product>"; the rules, each
with its reason:

1. A version is 'version' followed by a dotted number ('version 3.7.0'), with the product's name
   before it where the sentence gives one ('SQLite version 3.37.0' -> "which version of SQLite"),
   or a capitalised name followed by a three-part number ('since SQLite 3.32.0').
2. The sentence names one version (two, 'from 3.37.2 to 3.38.0', asks for either).
3. The question keeps `MIN_WORDS` to `MAX_WORDS` words, and the sentence does not lean on another
   (`named`'s openers: 'This ...', 'In other words, ...', 'For example, ...').
"""
from __future__ import annotations

import re

from .facts import Fact
from .named import _OPENERS

MIN_WORDS, MAX_WORDS = 6, 32
_VERSION = re.compile(r"\b(?:(?P<product>[A-Z][\w-]*)\s+)?[Vv]ersion\s+(?P<v>\d+(?:\.\d+){1,3})\b"
                      r"|\b(?P<product2>[A-Z][\w-]*[a-z][\w-]*)\s+(?P<v2>\d+\.\d+\.\d+)\b")
_LEANS = re.compile(r"\b(?:this|these|those|it|its|they|their|in other words|such)\b", re.I)


def version_fact(s: str) -> Fact | None:
    """The one version `s` names, asked for in its place (rules 1-3), or None."""
    toks = s.split()
    if not toks or toks[0].lower().strip(",") in _OPENERS or _LEANS.search(s):
        return None
    found = list(_VERSION.finditer(s))
    if len(found) != 1 or len(re.findall(r"\d+\.\d+", s)) != 1:
        return None
    m = found[0]
    product = m.group("product") or m.group("product2")
    version = m.group("v") or m.group("v2")
    which = f"which version of {product}" if product else "which version"
    q = s[:m.start()] + which + s[m.end():]
    q = re.sub(r"\s+", " ", q).strip().rstrip(".!;:, ")
    q = q[0].upper() + q[1:] + "?"
    if not MIN_WORDS <= len(q.split()) <= MAX_WORDS:
        return None
    return Fact(q, version, "version", s)
