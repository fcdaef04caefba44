"""Facts read off ordinary prose (a handbook, a manual, a mid-article chunk), by rule, no model.

`facts` reads encyclopedic openings ("X (born 1950) is an American ..."); most of a user's own
documents are not written that way, and on SQuAD's passages (mid-article paragraphs) those rules
found a fact in 1 passage of 87. These rules ask about what a sentence that stands alone says:

- **who or what does it**: a sentence whose subject is named ("The complexity class P is often
  seen as ...", "Guy de Lusignan arrived in Limassol ...") gives "What is often seen as ...?" /
  "Who arrived in Limassol ...?", its answer the subject;
- **what is defined**: "A decision problem is a special type of computational problem whose ..."
  gives "What is a special type of computational problem whose ...?";
- **which century**: "... in the 10th and 11th centuries ..." gives "... in what centuries ...?".

A subject that leans on an earlier sentence ("The film runs ...", "This hypothesis is ...") is never
asked about, and a question must keep enough of its sentence (`MIN_REST_WORDS`) to be specific.
"""
from __future__ import annotations

import re

from .facts import Fact, _anchor, _ask, _head, _sentence_facts, answer_in_question, sentences, words

#: words after the subject a question keeps at least ("What is a sitcom?" asks nothing specific),
#: and at most (a longer one is a run-on sentence that asks several things)
MIN_REST_WORDS, MAX_REST_WORDS = 6, 28
#: a copula or an auxiliary: "X is ...", "X has been ..."
_AUX = {"is", "are", "was", "were", "has", "have", "had", "can", "could", "will", "would", "may",
        "might", "must", "should", "does", "did", "remains", "remained", "became", "becomes"}
#: past-tense verbs that, after a named subject, mean a person or a group did it
_AGENT_VERBS = {"led", "said", "wrote", "joined", "declared", "married", "ruled", "founded",
                "arrived", "fought", "conquered", "settled", "invaded", "abandoned", "considered",
                "won", "lost", "captured", "attacked", "defeated", "killed", "succeeded", "served",
                "returned", "sailed", "signed", "proposed", "argued", "showed", "proved",
                "introduced", "described", "discovered", "invented", "developed", "designed", "died",
                "lived", "worked", "studied", "taught", "retired"}
#: a second clause with its own subject: 'X is the largest island, and Y is the smallest'
_SECOND_CLAUSE = re.compile(r"(?:,\s+|\s)(?:and|but|while|whereas|so)\s+(?:the\s+)?"
                            r"(?:[A-Z][\w'’-]*\s+)+(?:is|are|was|were|has|had|have)\b")
#: a thing the question names only as 'the film', 'the song' ...: known from the sentence before
#: ('The series was produced by whom?', 'Principal photography began on what date, in Welch?')
_BARE_THING = re.compile(r"\b[Tt]he\s+(?:film|song|series|album|book|novel|show|season|"
                         r"regular season|game|episode|video|single|play|manga|story|team|band|"
                         r"group|company|project|work|movie|programme|program|character|"
                         r"monarchy|empire|town|city|village|island|firm|corporation|"
                         r"organization|organisation|school|college|university|club|magazine|"
                         r"newspaper|label|station|network)\b(?!\s+(?:[A-Z0-9\"']|of\b)|['’]s\b)")
_FILM_TERMS = re.compile(r"^(?:Principal photography|Filming|Production|Shooting|Recording)\b")


def bare_answer(answer: str) -> bool:
    """Whether an answer is only 'The Monarchy', 'The film': a thing the passage had named
    before, not its name."""
    toks = answer.split()
    return len(toks) == 2 and toks[0].lower() == "the" and bool(
        _BARE_THING.fullmatch(f"the {toks[1].lower()}"))


def leans_on_context(question: str) -> bool:
    """Whether a question names what it asks about only as something the passage's reader
    already knows ('the film', 'The series', 'Principal photography began ...'): asked alone,
    it has no one answer. A name after it ('the film Jaws', 'the series of ...') is fine."""
    return bool(_BARE_THING.search(question) or _FILM_TERMS.search(question)
                or _unnamed_subject(question) or _CUT_SHORT.search(question)
                or _DEMONSTRATIVE.search(question))


#: 'that 2000 season', 'this period', 'those years': a time or thing the sentence before named
_DEMONSTRATIVE = re.compile(r"\b(?:[Tt]hat\s+(?:\d{4}\b|(?:season|year|time|day|period|game|"
                            r"match|event|war|tour|album|film|song|point)\b)|"
                            r"(?:[Tt]his|[Tt]hese|[Tt]hose)\s+[a-z])")


#: a question that ends inside its sentence ('..., and a?'): the sentence was cut at an
#: abbreviation
_CUT_SHORT = re.compile(r"\b(?:a|an|the|of|and|or|to|in|by|with)\?$")
_STOP_AT = _AUX | {"what", "whom", "who", "how", "which", "when", "where"}


def _unnamed_subject(question: str) -> bool:
    """'The concept was developed by whom?', 'The regular season began on what date ...?':
    'The' and common nouns up to the verb or the question word, no name among them."""
    toks = question.rstrip("?").split()
    if len(toks) < 3 or toks[0] != "The" or not toks[1][:1].islower():
        return False
    for t in toks[1:]:
        w = t.lower().strip(",'’\"")
        if w in _STOP_AT or (w.endswith("ed") and len(w) > 3):
            return True
        if t[:1].isupper() or t[:1].isdigit():
            return False
    return True
#: first words that lean on another sentence, or quantify rather than name
_LEANING = {"this", "these", "those", "that", "such", "it", "its", "he", "she", "they", "his",
            "her", "their", "there", "some", "many", "most", "several", "various", "all", "each",
            "both", "other", "another", "however", "also", "but", "and", "so", "yet", "thus",
            "then", "later", "perhaps", "for", "similarly", "initially", "finally", "what",
            "saying", "since", "if", "when", "while", "although", "because", "as", "in", "on",
            "at", "from", "after", "before", "during", "of", "with", "by", "to"}
#: nouns that, after 'X was the ...', make X a person: 'Who was the de facto leader ...?'
_PERSON_NOUNS = {"leader", "king", "queen", "ruler", "rulers", "founder", "author", "president",
                 "member", "members", "son", "daughter", "wife", "husband", "father", "mother",
                 "brother", "sister", "general", "emperor", "duke", "count", "pope", "bishop",
                 "man", "woman", "people", "writer", "poet", "composer", "scientist", "player",
                 "actor", "singer", "director", "participants", "soldiers", "mercenaries",
                 "mathematician", "inventor", "chief", "astronomer", "painter", "engineer",
                 "merchant", "sculptor", "architect", "explorer", "lawyer", "teacher",
                 "goldsmith", "blacksmith", "printer", "physician", "doctor", "nurse", "soldier",
                 "officer", "priest", "monk", "farmer", "sailor", "pilot", "judge", "dancer",
                 "surveyor", "navigator", "astronaut", "botanist", "chemist", "historian", "commander", "heir", "prince", "princess"}
#: pronouns that, anywhere in the sentence, point outside it (possessives of the subject are fine)
_OUTSIDE = {"he", "she", "it", "they", "this", "these", "those", "him", "them", "there"}
_CENTURY = re.compile(r"\bthe\s+(\d{1,2}(?:st|nd|rd|th))(?:\s+and\s+(\d{1,2}(?:st|nd|rd|th)))?"
                      r"\s+(century|centuries)\b")
_WORD = re.compile(r"[A-Za-z][\w'’-]*|\S")


def passage_facts(title: str, text: str, max_sentences: int = 8) -> list[Fact]:
    """The prose facts of a passage's first sentences ('He ...' read as its title where the
    passage is about its title, as `facts.single_facts` reads it)."""
    head = _head(title)
    about_title = bool(head) and any(w in words(text[:300]) for w in head)
    out: list[Fact] = []
    for raw in sentences(text)[:max_sentences]:
        anchored = _anchor(raw, title, about_title) if 5 <= len(raw.split()) <= 40 else None
        found = prose_facts(anchored or raw, context=f"{title}. {text}", title=title)
        if anchored is None and _stands_alone(" ".join(raw.split())):
            found += _sentence_facts(" ".join(raw.split()), title)   # its years, counts, names
        out.extend(f for f in found if not answer_in_question(f.question, f.answer))
    return out


def prose_facts(sentence: str, context: str = "", title: str = "") -> list[Fact]:
    """The facts of one sentence that stands alone, most specific first (none if it leans on
    another sentence or is too short to ask about). `context` (the passage) tells a name that
    starts a sentence from a common noun: a name is capitalized inside a sentence there too;
    `title` (the passage's) makes a subject that is its last word a person ('Ledger died ...'
    in 'Heath Ledger' asks 'Who died ...?')."""
    s = " ".join(sentence.split())
    if not _stands_alone(s):
        return []
    out: list[Fact] = []
    century = _century(s)
    if century:
        out.append(century)
    subj = _subject(s, context or s, title)
    if subj:
        out.append(subj)
    return out


def _stands_alone(s: str) -> bool:
    toks = s.split()
    if len(toks) < 5 or len(toks) > 45 or not s[:1].isupper():
        return False
    if words(toks[0])[:1] and words(toks[0])[0] in _LEANING:
        return False
    return not (_OUTSIDE & set(words(s)))


def _century(s: str) -> Fact | None:
    m = _CENTURY.search(s)
    if not m or m.start() == 0:
        return None
    answer = m.group(0)[4:] if m.group(0).startswith("the ") else m.group(0)
    phrase = "what centuries" if m.group(3) == "centuries" else "what century"
    return Fact(_ask(s, m.group(0), phrase, m.start()), answer, "century", s)


def _subject(s: str, context: str, title: str = "") -> Fact | None:
    """'X <verb> rest.' -> 'Who/What <verb> rest?' where X names something: a capitalized name
    (not only the sentence's first word), an acronym, or 'A/An <noun>' defined by 'is a/an/the'."""
    toks = s.rstrip(".!").split()
    for end in range(1, min(7, len(toks) - MIN_REST_WORDS)):
        if toks[end].endswith(","):
            return None                           # 'Isaac refused, so Richard ...': two clauses
        if not toks[end][:1].islower():
            continue                              # 'United' in 'Article Two of the United ...'
        verb = toks[end].lower()
        if verb not in _AUX and not (verb.endswith("ed") and len(verb) > 3) \
                and verb not in _AGENT_VERBS:
            continue
        span = toks[:end]
        if any(re.search(r"[,;:()\"“”]", t) for t in span):
            return None
        rest = toks[end:]
        if len(rest) > MAX_REST_WORDS or _SECOND_CLAUSE.search(" ".join(rest)) \
                or ";" in " ".join(rest):
            return None
        if not _names_something(span, rest, context):
            if verb in _AUX:
                return None                       # the verb, after a subject that names nothing
            continue                              # an adjective ('The United States ...')
        surname = len(span) == 1 and len(title.split()) > 1 and title.split()[-1] == span[0]
        wh = "Who" if surname or _person(span, verb, rest) else "What"
        q = f"{wh} {' '.join(rest)}"
        q = re.sub(r"\s+([,;:])", r"\1", q).rstrip(".!;:,") + "?"
        answer = " ".join(span)
        if answer.lower().startswith(("a ", "an ")):
            answer = answer.split(" ", 1)[1]
        return Fact(q, answer, "subject", s)
    return None


def _person(span: list[str], verb: str, rest: list[str]) -> bool:
    """Whether the subject is a person or a group of people, as far as the sentence says: it
    did what people do ('led', 'married'), or 'was the leader / king / ... of'."""
    if span[0] in ("A", "An"):
        return False
    said = words(" ".join(rest))
    if verb in _AGENT_VERBS or {"his", "her"} & set(said) or said[1:2] == ["born"]:
        return True
    if verb in ("is", "are", "was", "were") and len(rest) > 2:
        if rest[1].lower() not in ("a", "an", "the"):
            return False                          # 'was designed by the engineer ...': passive
        noun_phrase = [w.lower().strip(",.") for w in rest[1:5]]
        return any(w in _PERSON_NOUNS or w.endswith(("ist", "ian")) for w in noun_phrase)
    return False


def _names_something(span: list[str], rest: list[str], context: str) -> bool:
    """Whether the words before the verb name what the sentence is about, not a subject known
    only from a sentence before ('The film', 'The objective')."""
    first = span[0]
    inside = re.search(rf"[a-z,;]\s+{re.escape(first)}\b", context) is not None
    if first.lower().endswith(("ing", "ly")) and not inside:
        return False                # 'Having obtained ...', 'Closely related ...'; not 'Lenning'
    later_caps = [t for t in span[1:] if t[:1].isupper() or t.isupper()]
    if first in ("The",):
        return bool(later_caps)                   # 'The complexity class P', 'The Normans'
    if first in ("A", "An"):                      # a definition: 'A decision problem is a ...'
        return (len(span) >= 2 and rest[0].lower() in ("is", "are")
                and rest[1].lower() in ("a", "an", "the", "one"))
    if first[:1].isupper() and later_caps:
        return True                               # 'Guy de Lusignan', 'Fécamp Abbey'
    if first[:1].isupper() and len(span) == 1:    # 'Limassol', 'NP'; not 'Entry'
        return len(first) > 1 and (first.isupper() or inside)
    # a bare plural defined: 'Decision problems are one of the central objects ...'
    return rest[0].lower() == "are" and rest[1].lower() in ("a", "an", "the", "one")
