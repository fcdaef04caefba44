"""Plain-text helpers shared across flowkit: words, sentences, stopwords and the answer normal
form. Pure functions of strings (no flowkit imports), so operators, eval metrics and ingest all use
this one copy.

The stopword sets differ on purpose: each was tuned with the operator that uses it (a router's
description words, a rewrite's topic check, an entity extractor's names), and merging them would
change which words count and so the answers. They live here side by side, named by use.
"""
from __future__ import annotations

import re
import string
import unicodedata

WORD = re.compile(r"\w+", re.UNICODE)

#: General English function words: what a rewritten query must share with the question.
STOPWORDS: frozenset[str] = frozenset(
    "a an the of in on at to for from by with and or is are was were be been being do does did has "
    "have had what which who whom whose when where why how that this these those it its as into "
    "about there their than then so if not no yes can could would should will shall may might "
    "many much first last one two any some all each other same more most me you your my our "
    "we".split())
#: Words ignored when measuring a question's word overlap with a passage (post-retrieval).
OVERLAP_STOPWORDS: frozenset[str] = frozenset({
    "a", "an", "the", "and", "or", "of", "in", "on", "at", "to", "for", "by", "with", "from", "as",
    "is", "are", "was", "were", "be", "been", "it", "its", "this", "that", "which", "who", "what",
    "when", "where", "how", "why", "did", "does", "do", "has", "had", "have", "not", "into",
    "than"})
#: Words ignored when matching a claim's words against the passages (verification).
CLAIM_STOPWORDS: frozenset[str] = frozenset({
    "the", "and", "was", "were", "is", "are", "for", "with", "from", "that", "this", "its",
    "which", "who", "has", "had", "have", "been", "into", "than", "then", "also", "not"})
#: Words ignored when matching a router's reply against the routes' descriptions.
ROUTE_STOPWORDS: frozenset[str] = frozenset({
    "a", "an", "the", "of", "to", "or", "and", "that", "this", "is", "are", "for", "with", "about",
    "in", "on", "no", "it", "be", "by", "as"})
#: Words that never start or form an entity name (knowledge-graph triples).
ENTITY_STOPWORDS: frozenset[str] = frozenset({
    "a", "an", "the", "of", "and", "or", "in", "on", "at", "to", "for", "by", "with", "is", "was",
    "are", "were", "be", "it", "its", "this", "that", "which", "who", "what", "when", "where",
    "how", "why", "from", "as", "has", "had", "have", "did", "does", "do", "than", "into", "after",
    "before", "since", "each", "every", "there", "their", "he", "she", "they", "his", "her",
    "first", "many", "much", "name", "year", "island"})


def tokens(text: str) -> list[str]:
    """The lower-cased words of a text."""
    return [w.lower() for w in WORD.findall(text)]


def content_words(text: str, stop: frozenset[str] = STOPWORDS, min_len: int = 3) -> set[str]:
    """The lower-cased words of `text` with at least `min_len` letters that are not in `stop`."""
    return {w for w in tokens(text) if len(w) >= min_len and w not in stop}


# a sentence ends at . ! ? (optionally followed by a closing quote or bracket) before whitespace and
# an upper-case letter, a digit or an opening quote; blank lines always end one
_BOUNDARY = re.compile(r"(?<=[.!?])([\"')\]]?)\s+(?=[A-Z0-9\"'(\[])|\n\s*\n")
_ABBREVIATIONS = ("mr.", "mrs.", "ms.", "dr.", "st.", "mt.", "no.", "vs.", "e.g.", "i.e.", "etc.",
                  "prof.", "jr.", "sr.", "co.", "inc.", "ltd.", "fig.", "c.")


def split_sentences(text: str) -> list[str]:
    """Sentences of a text; common abbreviations (Dr., St., e.g.) do not end a sentence."""
    text = (text or "").strip()
    if not text:
        return []
    pieces: list[str] = []
    start = 0
    for m in _BOUNDARY.finditer(text):
        head = text[start:m.start()] + (m.group(1) or "")
        words = head.split()
        last = words[-1].lower() if words else ""
        paragraph_end = m.group(1) is None or re.search(r"\n\s*\n", m.group(0)) is not None
        if not paragraph_end and (last in _ABBREVIATIONS or re.fullmatch(r"[a-z]\.", last)):
            continue
        pieces.append(head)
        start = m.end()
    pieces.append(text[start:])
    return [" ".join(p.split()) for p in pieces if p.strip()]


_ARTICLES = re.compile(r"\b(a|an|the)\b", flags=re.UNICODE)
_ASCII_PUNCT = set(string.punctuation)


def _is_punct(ch: str) -> bool:
    return ch in _ASCII_PUNCT or unicodedata.category(ch).startswith("P")


def normalize_answer(text: str | None) -> str:
    """SQuAD normalisation: lowercase, remove punctuation, remove articles, collapse whitespace.

    Punctuation is ASCII punctuation plus every Unicode punctuation character (curly quotes,
    dashes, ...); letters keep their accents. Used by the answer metrics and by the operators
    that vote over answers.

    >>> normalize_answer("The  Corren-Lighthouse!")
    'correnlighthouse'
    """
    s = unicodedata.normalize("NFC", text or "").lower()
    s = "".join(ch for ch in s if not _is_punct(ch))
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())
