"""Questions that ask for the phrase a manual's sentence ends on, by rule, no model: "A string
constant is formed by enclosing the string in single quotes." -> "A string constant is formed by
enclosing the string in what?" (answer: single quotes); "A numeric zero value is considered to be
false." -> "A numeric zero value is considered to be what?".

The last rule a sentence is tried with (`manual.RULES`): a sentence none of the shapes before it
reads (a default, a limit, a name ...) still says something of its subject, and where it ends on a
preposition and a short object, that object is what it says. The rules, each with its reason:

1. The object follows the sentence's last preposition (`PREPOSITIONS`) or 'to be' / 'is' ...
   'considered': 1 to `MAX_WORDS` words up to the full stop, no comma, 'and' or 'or' in it (a list
   has no one answer) and no pronoun (it leans on the sentence before).
2. The object names something: with its article dropped, at least one of its words is not a
   common word (`_COMMON`); 'the index' or 'the page' alone leans on the text around it (which
   index?), so one plain word after 'the' is refused, while 'single quotes', 'zero' or
   'the VACUUM command' are asked.
3. The question keeps `MIN_WORDS` to `MAX_WORDS_Q` words, and the sentence opens on its subject:
   not on a condition ('If ...', 'When ...'), an example or a word that leans (`_OPENERS`);
   `manual.manual_facts` then applies the checks every manual rule passes (leaning words, the
   answer not in the question).
"""
from __future__ import annotations

import re

from .facts import Fact, words

#: the prepositions a sentence's last phrase may open with
PREPOSITIONS = ("in", "into", "to", "by", "with", "as", "from", "on", "using", "via", "at",
                "than", "under", "within")
MAX_WORDS = 4
MIN_WORDS, MAX_WORDS_Q = 7, 30
#: words that open a condition, an example or a sentence leaning on another (rule 3)
_OPENERS = {"if", "when", "whenever", "unless", "while", "for", "e.g.", "example", "this",
            "these", "those", "it", "they", "such", "so", "hence", "thus", "then", "also",
            "however", "but", "and", "or", "see", "note", "here", "there", "in", "on", "at",
            "as", "because", "since", "after", "before", "once", "to", "with", "without",
            "instead", "otherwise", "only", "that", "which", "where"}
#: words an object needs more than (rule 2): articles, pronouns, vague nouns and adverbs
_COMMON = {"the", "a", "an", "this", "that", "these", "those", "it", "its", "them", "they",
           "their", "his", "her", "one", "some", "any", "all", "each", "every", "other",
           "another", "same", "such", "way", "ways", "case", "cases", "time", "times", "order",
           "use", "place", "part", "result", "results", "example", "examples", "question",
           "necessary", "possible", "needed", "required", "above", "below", "here", "there",
           "well", "default", "general", "practice", "addition", "turn", "fact", "effect",
           "instead", "again", "too", "also", "only", "respectively", "either", "both",
           "now", "then", "later", "first", "last", "next", "end", "beginning", "front",
           "back", "side", "sides", "value", "values", "thing", "things", "manner",
           "reason", "reasons", "purpose", "purposes", "following", "previous", "latter",
           "former", "itself", "themselves", "whole", "rest", "remainder", "situation"}
_LIST_WORDS = {"and", "or", "nor", "etc", "respectively", "which", "that", "who", "whose",
               "where", "when", "if", "unless", "because", "but", "than"}
_ARTICLE = re.compile(r"^(?:the|an?)\s+", re.I)
#: an object counted vaguely is no answer ('... is 5 on most systems')
_QUANTIFIERS = {"most", "many", "several", "some", "few", "all", "any", "each", "every", "no",
                "certain", "various", "other", "both"}
#: an object holding one of these is a clause ('... in log are checkpointed'), not a phrase
_VERBS = {"is", "are", "was", "were", "be", "been", "being", "has", "have", "had", "do", "does",
          "did", "can", "could", "may", "might", "must", "will", "would", "shall", "should"}
#: participles that 'to' and a verb follow ('expected to survive')
_TAKES_A_VERB = {"expected", "used", "designed", "intended", "required", "allowed", "supposed",
                 "needed", "guaranteed", "forced", "permitted", "configured", "compiled",
                 "provided", "added", "tried", "attempted", "enabled", "disabled", "assumed"}
#: a tool's kind alone is no answer ('... a GROUP by what? -> clause')
_KINDS = {"clause", "statement", "command", "function", "table", "column", "mode", "pragma",
          "option", "operator", "keyword", "index", "file", "page", "database", "value", "row",
          "field", "entry", "byte", "bytes", "string", "number", "type", "name", "list"}
#: a help line's imperative ('Return the number of pages in the database file.') is asked by
#: `syntax_help` with its pragma's name; a person addressed asks nothing of the manual's subject
_NOT_A_SUBJECT = {"return", "returns", "query", "set", "change", "compute", "run", "attempt",
                  "use", "sync", "you", "we", "i", "indeed", "note", "see", "suppose", "consider",
                  "let", "assume", "imagine", "initialize", "define"}


def end_fact(s: str) -> Fact | None:
    """The object `s` ends on, asked for in its place ("... in what?"), or None (rules 1-3)."""
    toks = s.split()
    if (len(toks) < MIN_WORDS or toks[0].lower().strip(",") in _OPENERS | _NOT_A_SUBJECT
            or toks[0].endswith(",") or (toks[0].isupper() and toks[1][:1].isupper())):
        return None                       # 'NORMAL When ...': a heading run into its sentence
    cut = _object_start(toks)
    if cut is None:
        return None
    obj = " ".join(toks[cut:]).strip("\"'“”`")
    answer = _ARTICLE.sub("", obj)
    ws = words(answer)
    plain = [w for w in ws if w not in _COMMON]
    if (not ws or not plain or (_LIST_WORDS | _VERBS) & set(ws) or answer.lower() in _KINDS
            or ws[0] in _QUANTIFIERS
            or re.search(r"\.\s|\.\.|\.$", answer) or " - " in s
            or (len(ws) > 1 and ws[-1].endswith("ed"))):
        return None                       # a list's next item run in ('offset 12. 2'), a cut
    if answer != obj and len(ws) == 1 and re.fullmatch(r"[a-z-]+", answer):
        return None                       # 'the index' alone: which index? (rule 2)
    q = " ".join([*toks[:cut], "what"])
    q = q[0].upper() + q[1:] + "?"
    if (not MIN_WORDS <= len(q.split()) <= MAX_WORDS_Q or q.count('"') % 2
            or q.count("(") != q.count(")")):
        return None
    return Fact(q, answer, "phrase", s)


def _object_start(toks: list[str]) -> int | None:
    """Where the object after the last preposition (or 'to be', 'considered') starts, when it
    is 1 to MAX_WORDS words long (rule 1)."""
    for i in range(len(toks) - 2, max(len(toks) - MAX_WORDS - 2, 0), -1):
        w = toks[i]                       # lower case only: 'ORDER BY' is a keyword
        if w in PREPOSITIONS or (w == "be" and toks[i - 1] == "to") or (
                w == "considered" and toks[i + 1] not in PREPOSITIONS):
            if any(ch in t for t in toks[i + 1:] for ch in ",;:()"):
                return None
            if w == "to" and _infinitive(toks[i - 1], toks[i + 1]):
                return None
            return i + 1
    return None


def _infinitive(before: str, after: str) -> bool:
    """Whether 'to' opens a verb ('expected to survive a power outage', 'causes the transaction
    to commit') rather than an object ('set to zero', 'converted to upper case'): an object when
    what follows starts like a noun phrase, or after 'set' or a participle that takes no verb."""
    if (after.lower() in ("the", "a", "an", "zero", "one", "its", "their")
            or after[:1].isupper() or after[:1].isdigit() or after[:1] in "\"'`"):
        return False
    if before in ("set", "equal", "up", "back", "close", "next"):
        return False
    return not before.endswith("ed") or before in _TAKES_A_VERB
