"""Facts read off a passage by rule, no model: the sentence that holds an answer and its kind.

A small model reads far better than it writes (GUIDE, "Evaluating without gold answers"), so the
generator builds a question's wording from the passage itself: the sentence that holds the answer,
with the answer replaced by a question phrase ("in 1931" -> "in what year"), or a fixed template
for facts every encyclopedic passage states the same way (a birth year, a founding year, a
nationality). The model only checks what is built here (see `checks`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

#: Words that point outside a sentence or at a neighbour ('this', 'the following'): the manual
#: rules that read one sentence alone (returns, offsets) skip a sentence holding one.
POINTING_WORDS = frozenset({"this", "these", "those", "it", "its", "they", "them", "their", "such",
                            "above", "below", "following", "previous", "same", "here"})


@dataclass(frozen=True)
class Fact:
    """`question` asks for `answer`, read off `sentence`; `relation` names what it is ("born",
    "founded", "count:people", "year", "date", "name", "nationality")."""

    question: str
    answer: str
    relation: str
    sentence: str


MONTHS = ("January February March April May June July August September October November "
          "December").split()
_MONTH = "(?:" + "|".join(MONTHS) + ")"
_YEAR = r"(?:1[0-9]{3}|20[0-9]{2})"
_DATE = re.compile(rf"\b(?:{_MONTH}\s+\d{{1,2}},\s+{_YEAR}|\d{{1,2}}\s+{_MONTH}\s+{_YEAR}|"
                   rf"{_MONTH}\s+{_YEAR})\b")
_YEAR_RE = re.compile(rf"\b{_YEAR}\b")
_SENT_END = re.compile(r"(?<=[.!?])[\"')\]]?\s+(?=[A-Z\"'(])")
_ABBREV = re.compile(r"\b(?:[A-Z]|Mr|Mrs|Ms|Dr|St|Jr|Sr|Inc|Ltd|Co|U\.S|vs|No)\.$")
_PAREN = re.compile(r"\s*\([^()]*\)")
_PRONOUN_START = re.compile(r"^(He|She|It|They)\b\s+")
_POSSESSIVE_START = re.compile(r"^(His|Her|Its|Their)\b\s+")
#: a lifespan in brackets, 'Name (April 23, 1928 – February 10, 2014)'
_BIRTH = re.compile(rf"\((?:[^()]*?;\s*)?(?:[A-Za-z]+\s+\d{{1,2}},\s+|\d{{1,2}}\s+[A-Za-z]+\s+)?"
                    rf"({_YEAR})\s*[–—-]\s*(?:[A-Za-z]+\s+\d{{1,2}},\s+|\d{{1,2}}\s+[A-Za-z]+\s+)?"
                    rf"{_YEAR}\s*\)")
_BIRTH_WORD = re.compile(rf"\(\s*(?:[^()]*?;\s*)?born\b[^()]*?\b({_YEAR})\b")
_FOUNDED = re.compile(rf"\b(founded|established|formed|opened|released|published|built|"
                      rf"launched|created|completed|first lit)\b(?:\s+\w+){{0,4}}?\s+"
                      rf"(?:in|on)\s+(?:\w+\s+){{0,2}}?({_YEAR})\b")
_COUNT_WORDS = {"two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
                "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12"}
_COUNT = re.compile(r"\b(\d{1,3}(?:,\d{3})*(?:\.\d+)?|" + "|".join(_COUNT_WORDS)
                    + r")\s+([a-z]{3,}s)\b(?!\s+of\b)")
#: a name after 'by' or after a common noun ('the band Foo Fighters'), that ends its clause
_NAME = re.compile(r"\b(by|band|film|album|novel|company|city|town|river|team|club|label|series)\s+"
                   r"((?:[A-Z][\w'.-]*)(?:\s+(?:of|de|the|and|von|van|[A-Z][\w'.-]*))*)"
                   r"(?=\s*(?:[.;]|,\s+(?:[a-z]|and\b)|\s+(?:in|for|with|from|on|at)\s+[a-z]|$))")
NATIONALITIES = ("American British English Scottish Welsh Irish Canadian Australian French German "
                 "Italian Spanish Portuguese Dutch Belgian Swiss Austrian Swedish Norwegian Danish "
                 "Finnish Polish Russian Ukrainian Czech Hungarian Greek Turkish Indian Pakistani "
                 "Chinese Japanese Korean Mexican Brazilian Argentine Chilean Egyptian Nigerian "
                 "South African New Zealand Israeli Iranian Filipino Indonesian").split()
_IS_A = re.compile(r"\b(?:is|was|are|were)\s+(?:an?|the)\s+((?:[A-Za-z-]+\s+){0,4}?[a-z-]+)"
                   r"(?=\s+(?:who|which|that|from|based|in|of|and|born|known|best|,|\.)|[,.;]|$)")
_RELATIVE_START = re.compile(r"^(?:who|which|that|and|but|or)\b", re.I)
_STOP_TITLE = {"The", "A", "An", "In", "On", "At", "It", "He", "She", "They", "This", "These",
               "Its", "His", "Her", "Their", "However", "After", "Before", "During", "Although",
               "While", "When", "As", "From", "With", "By", "For", "Since", "Despite"} | set(MONTHS)


def sentences(text: str) -> list[str]:
    """The text cut into sentences (a full stop after an initial or 'St.' does not end one)."""
    out: list[str] = []
    buf = ""
    for piece in _SENT_END.split(" ".join(text.split())):
        buf = f"{buf} {piece}".strip() if buf else piece.strip()
        if not _ABBREV.search(buf.rstrip(".!?\"')]").rstrip() + "."):
            out.append(buf)
            buf = ""
    if buf:
        out.append(buf)
    return [s for s in out if s]


def words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z0-9]+", text.lower())


_PRONOUNS = {"he", "she", "it", "they", "this", "these", "those", "its", "their", "his", "her",
             "him", "them", "there"}


def _anchor(sentence: str, title: str, about_title: bool = True) -> str | None:
    """The sentence made to stand alone, or None. In a passage about its title (it names it),
    a leading 'He'/'It' becomes the title and 'His' the title's, and the sentence must name the
    title. A passage that never names its title (a chunk of a longer document) gives only
    sentences that need no other: no pronoun, starting with a name."""
    s = sentence.strip()
    if not s[:1].isupper() and not s[:1].isdigit() and s[:1] not in "\"'":
        return None                        # a chunk that starts inside a sentence
    head = _head(title)
    if about_title and head:
        if s.lower().startswith(title.lower()):
            pass                           # 'Their Lives: ...' names itself
        elif _PRONOUN_START.match(s):
            s = _PRONOUN_START.sub(f"{title} ", s, count=1)
        elif _POSSESSIVE_START.match(s):
            s = _POSSESSIVE_START.sub(f"{title}'s ", s, count=1)
        return s if _about(s, title) else None
    first = s.split()[0] if s.split() else ""
    if _PRONOUNS & set(words(s)) or not first[:1].isupper() or first in _STOP_TITLE \
            or first.lower().strip(",") in _DISCOURSE:
        return None                        # 'But after forceful coaching by ...' leans back
    return s


def _ask(sentence: str, span: str, phrase: str, start: int) -> str:
    """`sentence` with `span` (at `start`) replaced by `phrase`, ended with a question mark."""
    q = sentence[:start] + phrase + sentence[start + len(span):]
    q = _PAREN.sub("", q)
    q = re.sub(r"\s+([,;:])", r"\1", q)
    q = re.sub(r"\s+", " ", q).strip().rstrip(".!;:,")
    return q[0].upper() + q[1:] + "?"


_TITLE_STOP = {"the", "and", "for", "from", "with", "list", "film", "song", "album", "novel",
               "series", "band"}


def _head(title: str) -> list[str]:
    """The title's words that name it (not 'the', not a disambiguation like 'film')."""
    return [w for w in words(title) if len(w) > 2 and w not in _TITLE_STOP]


#: first words of a sentence that leans on the one before it
_DISCOURSE = {"for", "however", "also", "additionally", "moreover", "furthermore", "thus",
              "therefore", "this", "these", "those", "such", "both", "another", "other", "it's",
              "its", "although", "but", "and", "then", "later", "meanwhile", "instead"}


def _about(sentence: str, title: str) -> bool:
    """Whether the sentence is about the title: it names the title (its first two naming words)
    in its first six words, or it starts with 'It was' / 'It is' (a passage's second sentence);
    never a sentence that starts with 'For example', 'However', 'This', 'It's' and the like."""
    first = sentence.split()[0].lower().strip(",") if sentence.split() else ""
    if first in _DISCOURSE:
        return False
    head = _head(title) or words(title)
    lead = words(" ".join(sentence.split()[:6]))
    if re.match(r"^It (?:was|is|has|had|became|won|opened|began)\b", sentence):
        return True
    return bool(head) and all(w in lead for w in head[:2])


def birth_year(title: str, text: str) -> str | None:
    """The birth year of a person passage: 'Name (born 1950)' or 'Name (April 23, 1928 – ...)'."""
    first = sentences(text)[:1]
    if not first or not _about(first[0], title) or first[0].split()[0].lower() == "it":
        return None
    head = first[0][:200]
    m = _BIRTH_WORD.search(head) or _BIRTH.search(head)
    if not m or "(" not in head[:m.start() + 1]:
        return None
    return m.group(1)


def founding(text: str, title: str) -> tuple[str, str] | None:
    """(verb, year) from 'was founded in 1901' and the like, in the first two sentences."""
    for s in sentences(text)[:2]:
        m = _FOUNDED.search(_PAREN.sub("", s))
        if m and _about(s, title):
            return m.group(1), m.group(2)
    return None


def nationality(text: str, title: str) -> str | None:
    """'American' from 'X is an American film director' in the first sentence."""
    first = sentences(text)[:1]
    if not first or not _about(first[0], title):
        return None
    m = _IS_A.search(_PAREN.sub("", first[0]))
    if not m:
        return None
    for w in m.group(1).split():
        if w in NATIONALITIES:
            return w
    return None


def kind_noun(text: str) -> str | None:
    """What the passage's subject is, from its first sentence: 'film director', 'magazine'."""
    first = sentences(text)[:1]
    if not first:
        return None
    m = _IS_A.search(_PAREN.sub("", first[0]))
    if not m:
        return None
    noun = [w for w in m.group(1).split() if w not in NATIONALITIES and not w[:1].isdigit()]
    return " ".join(noun[-2:]) if noun else None


def subject(title: str, text: str) -> str:
    """How the passage names its subject: 'the University of Osterhavn' where it starts with
    'The University of Osterhavn', else the title."""
    if text.startswith(f"The {title}") and not title.startswith(("The ", "the ")):
        return f"the {title}"
    return title


def single_facts(title: str, text: str, max_sentences: int = 4) -> list[Fact]:
    """Every single-passage fact this passage offers, most specific first."""
    facts: list[Fact] = []
    name = subject(title, text)
    year = birth_year(title, text)
    if year:
        facts.append(Fact(f"In what year was {name} born?", year, "born", sentences(text)[0]))
    found = founding(text, title)
    if found:
        verb, y = found
        facts.append(Fact(f"In what year was {name} {verb}?", y, verb, ""))
    head = _head(title)
    about_title = bool(head) and any(w in words(text[:300]) for w in head)
    for raw in sentences(text)[:max_sentences]:
        if len(raw.split()) > 40 or len(raw.split()) < 5:
            continue
        s = _anchor(raw, title, about_title)
        if s is None:
            continue
        facts.extend(_sentence_facts(s, title))
    seen: set[str] = set()
    out = []
    for f in facts:
        if f.question not in seen and not answer_in_question(f.question, f.answer):
            seen.add(f.question)
            out.append(f)
    return out


def _sentence_facts(s: str, title: str) -> list[Fact]:
    out: list[Fact] = []
    bare = _PAREN.sub("", s)
    for m in _DATE.finditer(bare):
        pre = bare[:m.start()].rstrip()
        phrase = "what date" if not pre.endswith((" in", " In")) else "what date"
        if pre.endswith((" on", " On")):
            out.append(Fact(_ask(bare, m.group(0), phrase, m.start()), m.group(0), "date", s))
        break
    else:
        for m in _YEAR_RE.finditer(bare):
            pre = bare[:m.start()].rstrip()
            if bare[m.end():m.end() + 1] in ("–", "-", "—"):
                continue                   # a range ('1038–40'): no single year answers it
            if pre.endswith((" in", " In", " since", " until", " by")):
                out.append(Fact(_ask(bare, m.group(0), "what year", m.start()), m.group(0),
                                "year", s))
                break
    for m in _COUNT.finditer(bare):
        number, noun = m.group(1), m.group(2)
        pre = bare[:m.start()].rstrip()
        if pre.endswith(("in", "In")) or noun.split()[-1] in ("years",):
            continue
        answer = _COUNT_WORDS.get(number.lower(), number)
        out.append(Fact(_ask(bare, m.group(0), f"how many {noun}", m.start()), answer,
                        "count:" + noun.split()[-1], s))
        break
    title_words = set(words(title))
    for m in _NAME.finditer(bare):
        span = m.group(2).strip()
        if span.endswith(".") and not re.search(r"\b(?:[A-Z]|Jr|Sr|Inc|Ltd|Co|St)\.$", span):
            span = span[:-1]
        if span in _STOP_TITLE or span.split()[0] in _STOP_TITLE or len(span) < 3:
            continue
        if set(words(span)) & title_words or span in NATIONALITIES or _YEAR_RE.search(span):
            continue
        phrase = "whom" if m.group(1).lower() == "by" else "what"
        start = m.start(2)
        out.append(Fact(_ask(bare, span, phrase, start), span, "name", s))
        break
    return out


def answer_in_question(question: str, answer: str) -> bool:
    """Whether the answer is written in the question (its words, in order, after lowercasing)."""
    a = " ".join(words(answer))
    return bool(a) and f" {a} " in f" {' '.join(words(question))} "
