"""Questions that ask what a named function, operator or statement returns, by rule, no model:
"The MySQL version of json_extract() always returns JSON." -> "The MySQL version of json_extract()
always returns what?" (answer: JSON).

What a call gives back is among the first things a reader of a reference looks up. The value is
replaced in its place by "what"; the rules, each with its reason:

1. The verb is 'returns', 'evaluates to' or 'yields' (and their plurals), and the words before it
   name a tool: a code-like name ('json_extract()', 'sqlite3_exec()', 'temp_store') or one in
   capitals ('the IS operator'), so the question says whose result it asks for.
2. The value runs from the verb to its clause's end (a comma, 'if', 'when', 'and', ...), at most
   `MAX_ANSWER_WORDS` words, and is a value ('a minified version of ...', 'NULL', '1'), not a
   pointer to another place ('the following', 'as described above').
3. The sentence names one such result (two, 'X evaluates to 1 and Y to 0', ask for either), does
   not lean on another sentence ('this function returns ...', 'it returns ...'), and the question
   keeps `MIN_WORDS` to `MAX_WORDS` words; a sentence with a quoted example of a call
   ('"CAST(4.0 AS INT)" returns ...') and a value glossed after a dash ('returns the Julian day
   - the fractional number of days ...': the gloss gives it away) are refused.
"""
from __future__ import annotations

import re

from .facts import POINTING_WORDS, Fact, answer_in_question, words
from .named import _OPENERS

MAX_ANSWER_WORDS = 6
MIN_WORDS, MAX_WORDS = 6, 32
_VERB = re.compile(r"\b(?:returns?|evaluates?\s+to|yields?)\s+")
_END = re.compile(r"\s*(?:[,;:]|\s-\s|\s(?:if|when|unless|and|or|but|which|whereas|while|for|"
                  r"because|since|except|instead|rather|regardless|even)\b|$)")
_TOOL = re.compile(r"[A-Za-z_]\w*\([^()]{0,40}\)|\b[A-Za-z]\w*_\w+\b|\b[A-Z]{2,}[A-Z_\d]*\b")
_NOT_A_VALUE = {"to", "the following", "as", "in", "on", "at", "by", "with", "from", "either",
                "one", "results", "whatever"}


def return_fact(s: str) -> Fact | None:
    """The value `s` says a named tool returns, asked for in its place (rules 1-3), or None."""
    toks = s.split()
    if (not toks or toks[0].lower().strip(",") in _OPENERS or POINTING_WORDS & set(words(s))
            or re.search(r"[\"'][^\"']*\([^\"']*[\"']", s)):
        return None                       # leaning, or a quoted example of a call
    found = list(_VERB.finditer(s))
    if len(found) != 1:
        return None
    m = found[0]
    if not _TOOL.search(s[:m.start()]):
        return None
    rest = s[m.end():]
    end = _END.search(rest)
    ans = rest[:end.start()] if end else rest
    ans = ans.strip().strip("'\"")
    n = len(ans.split())
    if not 1 <= n <= MAX_ANSWER_WORDS or ans.split()[0].lower() in _NOT_A_VALUE:
        return None
    if re.match(r"\s+-\s", rest[len(rest) - len(rest.lstrip()) + len(ans):]):
        return None                       # the value's description follows it: the answer's gloss
    q = s[:m.end()] + "what" + rest[len(rest) - len(rest.lstrip()) + len(ans):]
    q = re.sub(r"\s+", " ", q.replace("''", "")).strip().rstrip(".!;:, ")
    q = q[0].upper() + q[1:] + "?"
    if not MIN_WORDS <= len(q.split()) <= MAX_WORDS or answer_in_question(q, ans):
        return None
    return Fact(q, ans, "returns", s)
