"""Questions from a manual's prose, by rule, no model: defaults, limits, definitions, commands.

`facts` and `prose` read encyclopedic sentences about a named subject; a manual states other
things, in a few fixed shapes that users ask about ("what is the default page size?", "which
command rebuilds the database file?"). Each rule below turns one shape into a wh-question built
from the sentence itself (the default model writes vague questions and reads well: GUIDE,
"Evaluating without gold answers"), its answer a short span of the sentence:

- **default**: "The default page size is 4096 bytes." -> "What is the default page size?";
  "X defaults to Y." -> "What is the default value of X?"; "By default, X is Y." -> "What is X by default?";
- **limit**: "The maximum number of columns is 2000." -> "What is the maximum number of
  columns?"; "A table may have at most 2000 columns." -> "A table may have at most how many
  columns?" (the number is the answer, the unit stays in the question);
- **command**: "Use the VACUUM command to rebuild the database." / "To rebuild ..., use the VACUUM
  command." / "The VACUUM command rebuilds the database." -> "Which command rebuilds ...?" (the
  same for a pragma, a function, an option ...), and "sqlite3_open() opens a connection." ->
  "Which function opens a connection?";
- **definition**: "A savepoint is a method of creating transactions ..." -> "What is a method of
  creating transactions ...?" (the term is the answer); "X is used to Y." -> "What is used to Y?".
- **name**: a tool a sentence names, asked in its place (`named`): "... is set by the
  SQLITE_MAX_VARIABLE_NUMBER macro." -> "... is set by which macro?";
- **term**: a term a sentence introduces (`called`): "A page without a parent is called a root
  page." -> "A page without a parent is called what?";
- **returns**: what a named tool returns (`returns`): "The MySQL version of json_extract() always
  returns JSON." -> "... always returns what?";
- **offset**: where a format keeps a field, or the number of a named quantity (`offsets`): "...
  stored at an offset of 36 ..." -> "... stored at which offset ...?";
- **version**: the release a sentence dates a feature by (`versions`): "... recognized by SQLite
  version 3.37.0 and later." -> "... recognized by which version of SQLite and later?";
- **syntax help**: a syntax line and the help sentence under it (`syntax_help`): "PRAGMA
  freelist_count;" + "Return the number of unused pages ..." -> "Which pragma returns the number of
  unused pages ...?".
- **phrase**, the last rule tried: the object a sentence ends on (`ends`): "The MEMORY journaling
  mode stores the rollback journal in volatile RAM." -> "... stores the rollback journal in
  what?".

What makes a sentence unusable, each with its reason: it leans on another ("This option ...",
"It ...", "the following": asked alone it has no one answer); it lies past what the reader is
shown (`PASSAGE_CHARS`: the round trip could not read it back); it is code or a table row (no
sentence to turn round); its answer is long (`MAX_ANSWER_WORDS`: answers are short phrases, and a
long one is rarely matched back by F1); the chunk starts inside it (its subject is cut off).
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence

from ...documents.model import CELL_SEP
from ...operators._window import focus
from . import prose as P
from .called import called_fact
from .candidates import Candidate, Passage
from .checks import PASSAGE_CHARS
from .ends import end_fact
from .facts import Fact, _ask, answer_in_question, sentences, words
from .named import name_fact
from .offsets import offset_fact
from .returns import return_fact
from .syntax_help import syntax_facts
from .versions import version_fact

#: the most words of an answer span (a default, a limit, a term)
MAX_ANSWER_WORDS = 6
#: words a question keeps after its wh-phrase at least (shorter asks nothing specific), at most
MIN_REST_WORDS, MAX_REST_WORDS = 4, 28
#: what a manual names a tool by: 'the VACUUM command', 'the journal_mode pragma'
TOOL_NOUNS = ("command", "pragma", "function", "method", "statement", "clause", "option",
              "setting", "parameter", "keyword", "operator", "flag", "macro", "routine",
              "procedure", "utility", "program", "tool", "directive", "variable", "attribute",
              "property", "constraint", "mode", "interface", "extension", "module", "class",
              "type", "switch", "hook", "callback")
_NOUN = "(?P<noun>" + "|".join(TOOL_NOUNS) + ")"
#: a name: backticked or quoted, or a token with a capital, a digit, '_', '.' or '()' in it
_NAME_TOKEN = r"(?:`[^`]{1,40}`|\"[^\"]{1,40}\"|'[^']{1,40}'|[\w.:/*<>=+-]*[A-Z0-9_.(][\w.:/*()<>=+-]*)"
_NAME = rf"(?P<x>{_NAME_TOKEN}(?:\s+{_NAME_TOKEN}){{0,2}})"
#: words that point outside the sentence, or at a neighbouring one
_LEANING = {"this", "these", "those", "he", "she", "they", "them", "his", "her", "their", "there",
            "here", "it", "its", "above", "below", "following", "previous", "preceding", "latter",
            "former", "such", "same", "latest", "aforementioned"}
#: words that cannot start a defined term or a subject (they quantify or lean)
_NOT_A_TERM = P._LEANING | {"each", "every", "any", "no", "one", "you", "we", "i", "your", "our",
                            "first", "second", "third", "fourth", "fifth", "last", "next", "final",
                            "new", "current", "original", "latter", "former", "same", "only",
                            "main", "remaining", "rest"}
#: words after a name that qualify it, not name it ('readfile(X) SQL function')
_QUALIFIERS = {"SQL", "C", "API", "CLI", "Tcl", "TCL", "shell"}
#: first words of a default that is not a value: "The default page size is set by ..."
_NOT_A_VALUE = {"set", "used", "not", "to", "that", "determined", "specified", "changed", "given",
                "chosen", "controlled", "defined", "computed", "derived", "taken", "based",
                "stored", "passed", "shown", "described", "listed", "found", "configured",
                "selected", "provided", "read", "also", "only", "usually", "often", "typically",
                "different", "as", "in", "on", "at", "for", "from", "by", "with", "of",
                "likely", "probably", "what", "whatever", "one", "either", "both", "normally",
                "generally", "quite", "very", "fairly", "relatively", "much", "rather"}
_SPAN_END = re.compile(r"\s*(?:[,;:]|\s\(|\s[-–—]\s|\s(?:and|but|if|unless|when|which|so|because|"
                       r"except|while|although|whereas|or|for|on|in)\s|[.!]$)")
_PARENS = re.compile(r"\s+\([^()]*\)")
_CODE_CHARS = set("{}();=<>$#[]\\")
_NUMBER = r"\d[\d,]*(?:\.\d+)?"
_UNIT = r"(?:[KMGT]i?B|[a-z]{3,})"
_LIMIT_WORDS = (r"at most|at least|up to|no more than|no fewer than|no less than|not more than|"
                r"limited to|a maximum of|a minimum of|maximum of|minimum of|as many as|"
                r"as much as|as large as|as long as")
_UNIT_STOP = {"and", "or", "the", "for", "per", "but", "with", "than", "times", "that", "which",
              "characters long", "inclusive"}


def _clean(span: str) -> str:
    return span.strip().strip("`'\"“”‘’").strip()


def short_span(text: str) -> str | None:
    """The answer at the start of `text` up to its clause's end ('4096 bytes, but ...' ->
    '4096 bytes'), or None when it is not a value (a verb: 'set by ...'), leans on another
    sentence, or is longer than MAX_ANSWER_WORDS."""
    m = _SPAN_END.search(text)
    span = _clean(text[:m.start()] if m else text)
    toks = span.split()
    if not toks or len(toks) > MAX_ANSWER_WORDS:
        return None
    if toks[0].lower() in _NOT_A_VALUE or _LEANING & set(words(span)):
        return None
    return span


def _question(text: str) -> str:
    q = re.sub(r"\s+([,;:])", r"\1", " ".join(text.split())).rstrip(".!;:, ")
    return q[0].upper() + q[1:] + "?"


def _leans(question: str) -> bool:
    """Whether a question leans on text it does not hold: a pronoun, 'the following', 'the
    film'-like bare nouns (`prose`), a demonstrative ('this mode'), or a subject that is one bare
    noun ('The setting does not persist'; 'The page size must be ...' names its subject: in a
    manual a common noun with its modifier is a term, so `prose`'s rule for encyclopedic subjects
    is not applied)."""
    return bool(_LEANING & set(words(question)) or P._BARE_THING.search(question)
                or P._CUT_SHORT.search(question) or P._DEMONSTRATIVE.search(question)
                or _ONE_NOUN_SUBJECT.match(question) or _RELATIVE_SUBJECT.match(question))


def _run_together(question: str) -> bool:
    """Whether a question holds two sentences ('... operator. 4 ...': a numbered list's next item
    run into it) or opens with a label ('Examples: ...')."""
    return bool(re.search(r"\.\s+[A-Z0-9]", question) or re.match(r"^\w[\w -]{0,40}:\s", question))


#: one-word answers in '-ed' that are a state, not a verb's participle ('measured', 'recommended')
_STATES = {"disabled", "enabled", "unlimited", "deprecated", "unsigned", "signed", "reserved"}


def _not_an_answer(answer: str) -> bool:
    """Whether an answer is a bare verb form ('The default page size is recommended ...')."""
    return bool(re.fullmatch(r"[a-z]+ed", answer)) and answer not in _STATES


#: 'The current implementation ...', 'The new value ...': which one, the sentence before says
_RELATIVE_SUBJECT = re.compile(r"^The\s+(?:current|present|new|original|other|remaining|"
                               r"resulting|corresponding|given|specified|above)\b")
#: 'The value is ...', 'The setting can ...': the sentence before says which
_ONE_NOUN_SUBJECT = re.compile(r"^The\s+[a-z-]+\s+(?:is|are|was|were|can|may|must|will|does|"
                               r"do|has|have|should|cannot|might|would)\b")


def _rest_ok(rest: str) -> bool:
    n = len(rest.split())
    return MIN_REST_WORDS <= n <= MAX_REST_WORDS


def _term(x: str) -> str:
    """A term as an answer: its quoted part where it has one ('SQL command "BEGIN"' -> 'BEGIN'),
    without outer quotes and trailing qualifiers ('readfile(X) SQL' -> 'readfile(X)')."""
    quoted = re.search(r"[\"“`]([^\"”`]{1,40})[\"”`]", x)
    name = _clean(quoted.group(1) if quoted else x)
    toks = name.split()
    while len(toks) > 1 and toks[-1] in _QUALIFIERS:
        toks.pop()
    return " ".join(toks)


def _tool_name(x: str) -> str | None:
    """A tool's name as an answer ('`VACUUM`' -> 'VACUUM'), None for ordinary words ('new')."""
    name = _term(x)
    if not name or name.split()[0].lower() in _NOT_A_TERM or len(name.split()) > 3:
        return None
    return name


def _names_what(what: str) -> bool:
    """Whether 'the default <what>' names one thing: two words or more ('page size', 'value of
    the page_size pragma') or a name ('TEMP_STORE'); 'the default value' alone leans on the
    sentence before."""
    toks = what.split()
    return len(toks) >= 2 or any(ch.isupper() or ch.isdigit() or ch == "_" for ch in what)


def default_fact(s: str) -> Fact | None:
    """The default's shapes: 'The default X is Y', 'X defaults to Y', 'By default, X is Y'."""
    m = re.match(r"^The default (?P<what>(?:[\w-]+ ){0,6}?[\w-]+) (?P<verb>is|are) (?P<ans>.+)$", s)
    if (m and _names_what(m.group("what"))
            and not {"that", "which", "who", "where", "when"} & set(m.group("what").split())):
        ans = short_span(m.group("ans"))
        if ans:
            return Fact(_question(f"What {m.group('verb')} the default {m.group('what')}"), ans,
                        "default", s)
    m = re.match(r"^(?P<x>(?:The |An? )?(?:[\w`'\".()-]+ ){0,5}?[\w`'\".()-]+) defaults? to "
                 r"(?P<ans>.+)$", s)
    if m and (found := _subject_answer(m)):
        x, ans = found
        x = x[0].lower() + x[1:] if x.startswith(("The ", "A ", "An ")) else x
        return Fact(_question(f"What is the default value of {x}"), ans, "default", s)
    m = re.match(r"^By default, (?P<x>(?:[\w`'\".()-]+ ){0,5}?[\w`'\".()-]+) (?P<verb>is|are) "
                 r"(?P<ans>.+)$", s)
    if m and (found := _subject_answer(m)):
        x, ans = found
        return Fact(_question(f"What {m.group('verb')} {x} by default"), ans, "default", s)
    m = re.match(r"^(?P<x>(?:The |An? )?(?:[\w`'\".()-]+ ){0,5}?[\w`'\".()-]+) (?P<verb>is|are) "
                 r"(?P<ans>(?:[\w`'\".()-]+ ){0,3}?[\w`'\".()-]+) by default$", s)
    if m and (found := _subject_answer(m)):
        x, ans = found
        if re.match(r"^(?:The|An?|[A-Z][a-z]+)\b", x):
            x = x[0].lower() + x[1:]      # 'Cache sharing' starts a sentence; not a name
        return Fact(_question(f"What {m.group('verb')} {x} by default"), ans, "default", s)
    return None


def _subject_answer(m: re.Match[str]) -> tuple[str, str] | None:
    """The subject (group 'x') and the short answer (group 'ans') of a matched default shape, or
    None when the subject starts with a word that is not a term or the answer is not a short
    value."""
    if _NOT_A_TERM & {m.group("x").split()[0].lower()}:
        return None
    ans = short_span(m.group("ans"))
    return (m.group("x"), ans) if ans else None


def limit_fact(s: str) -> Fact | None:
    """The limit's shapes: 'The maximum X is N' (the answer holds a number), and 'at most /
    up to / limited to N units' in a sentence that names its subject (the number is asked)."""
    m = re.match(r"^The (?P<kw>maximum|minimum|largest|smallest|default maximum|default minimum) "
                 r"(?P<what>(?:[\w-]+ ){0,7}?[\w-]+) (?P<verb>is|are) (?P<ans>.+)$", s)
    if m and _names_what(m.group("what")):
        ans = short_span(m.group("ans"))
        if ans and re.search(r"\d", ans):
            return Fact(_question(f"What {m.group('verb')} the {m.group('kw')} {m.group('what')}"),
                        ans, "limit", s)
    first = s.split()[0].lower().strip(",")
    if first in _NOT_A_TERM and first not in ("a", "an", "the"):
        return None
    m = re.search(rf"\b(?:{_LIMIT_WORDS})\s+(?P<num>{_NUMBER})(?:\s+(?P<unit>{_UNIT})\b)?", s)
    if not m or m.start() < 8:
        return _count(s)
    unit = m.group("unit")
    if unit and unit.lower() not in _UNIT_STOP:
        span, phrase = f"{m.group('num')} {unit}", f"how many {unit}"
    else:
        span, phrase = m.group("num"), "what number"
    q = _ask(s, span, phrase, m.start("num"))
    return Fact(q, m.group("num"), "limit", s)


#: what a manual counts (a whitelist: after a number, 'contains' or 'returns' is a verb)
_MEASURES = ("[KMGT]i?B|bytes|bits|pages|rows|columns|characters|seconds|milliseconds|"
             "microseconds|minutes|hours|days|entries|digits|tables|indexes|indices|cells|slots|"
             "arguments|parameters|levels|samples|values|connections|threads|files|lines|records|"
             "keys|blocks|sectors|frames|elements|words|items|tokens|databases|savepoints|"
             "transactions|statements|triggers|terms|attempts|retries|times")
_NOT_COUNTED = re.compile(r"(?:version|section|figure|table|chapter|page|step|line|item|"
                          r"example|rule|[-–+/.:#x])\s*$", re.I)


def _count(s: str) -> Fact | None:
    """A measure stated in a sentence that names its subject: 'The database header is 100
    bytes.' -> 'The database header is how many bytes?' (a unit after the number, so the
    question says what is counted; not a version, a section or a year)."""
    first = s.split()[0].lower().strip(",")
    if first in _NOT_A_TERM and first not in ("a", "an", "the"):
        return None
    for m in re.finditer(rf"(?<![\w.,-])(?P<num>{_NUMBER})\s+(?P<unit>{_MEASURES})\b", s):
        if m.start() < 8 or _NOT_COUNTED.search(s[:m.start()]) or m.group("unit") in _UNIT_STOP:
            continue
        if re.fullmatch(r"1[89]\d\d|20\d\d", m.group("num")):
            continue
        q = _ask(s, m.group(0), f"how many {m.group('unit')}", m.start())
        return Fact(q, m.group("num"), "count", s)
    return None


def command_fact(s: str) -> Fact | None:
    """The command's shapes: 'Use the X command to Y', 'To Y, use the X command', 'The X command
    Ys ...', 'f() Ys ...' -> 'Which command/function ...?', the answer the name."""
    m = re.match(rf"^(?:You (?:can|may|should|must) )?[Uu]se (?:the )?{_NAME} {_NOUN} to "
                 rf"(?P<rest>.+)$", s)
    if m is None:
        m = re.match(rf"^To (?P<rest>[^,]+), (?:you (?:can|may|should|must) )?use (?:the )?"
                     rf"{_NAME} {_NOUN}\.?$", s)
    if m:
        found = _tool_and_rest(m)
        if found is None:
            return None
        name, rest = found
        return Fact(_question(f"Which {m.group('noun')} is used to {rest}"), name, "command", s)
    m = re.match(r"^(?:You (?:can|may|should|must) )?[Uu]se (?P<x>`[^`]{1,40}`|\"[^\"]{1,40}\"|"
                 r"[\w.]*[A-Z_.(][\w.()]*) to (?P<rest>.+)$", s)
    if m and (found := _tool_and_rest(m)):
        name, rest = found
        return Fact(_question(f"What is used to {rest}"), name, "command", s)
    m = re.match(rf"^The {_NAME} {_NOUN} (?P<rest>(?P<verb>[a-z]+)\b.+)$", s)
    if m is None:
        m = re.match(r"^(?P<x>[A-Za-z_][\w.:]*\(\))(?P<noun>) (?P<rest>(?P<verb>[a-z]+)\b.+)$", s)
    if m:
        verb = m.group("verb")
        third_person = verb in P._AUX or (verb.endswith("s") and not verb.endswith("ss"))
        if third_person and (found := _tool_and_rest(m)):
            name, rest = found
            return Fact(_question(f"Which {m.group('noun') or 'function'} {rest}"), name,
                        "command", s)
    return None


def _tool_and_rest(m: re.Match[str]) -> tuple[str, str] | None:
    """The tool's name (group 'x') and what it does (group 'rest') of a matched command shape, or
    None when 'x' names no tool or the rest is too short or too long to ask about."""
    name, rest = _tool_name(m.group("x")), m.group("rest")
    return (name, rest) if name and _rest_ok(rest) else None


#: a numbered label is not a term ('Format 12 is the Julian day number ...' defines a list item)
_LABEL = re.compile(r"^(?:Format|Step|Rule|Case|Note|Example|Figure|Table|Section|Item|Option|"
                    r"Mode|Type|Form)\s+\d+\b", re.I)


def definition_fact(s: str) -> Fact | None:
    """The definition's shapes: 'A savepoint is a method ...' -> 'What is a method ...?' and
    'X is used to Y' -> 'What is used to Y?', the term the answer. A term after 'The' in plain
    lowercase words must be two words or more ('The rollback journal is a file ...'; 'The result
    is a table' defines nothing)."""
    m = re.match(r"^(?P<art>An? |The )?(?P<term>(?:[\w`'\"./()-]+ ){0,3}?[\w`'\"./()-]+) "
                 r"(?P<rest>(?P<verb>is|are) (?:(?:an?|the|one of the) \S.*|used to .+|"
                 r"(?:a|an) .+))$", s)
    if not m:
        return None
    term, art = _term(m.group("term")), (m.group("art") or "").strip()
    toks = term.split()
    if (not toks or toks[0].lower() in _NOT_A_TERM or any(t.endswith(",") for t in toks)
            or _LABEL.match(term)
            or {"which", "that", "who", "where"} & {t.lower() for t in toks}):
        return None
    plain = all(re.fullmatch(r"[a-z-]+", t) for t in toks)
    if plain and (not art or (art == "The" and len(toks) < 2)):
        return None                       # 'Data is a ...' is a word, not a term defined
    if not art and not plain and not toks[0][:1].isupper() and not re.search(r"[_(.]", term):
        return None
    rest = m.group("rest")
    if not _rest_ok(rest) or len(rest.split()) < 5:
        return None
    relation = "used for" if " used to " in f" {rest}" else "definition"
    return Fact(_question(f"What {rest}"), term, relation, s)


#: the rules in the order a sentence is tried; the first that fits gives its question
#: (a default first: 'The busy_timeout setting defaults to zero' asks "What is the default value
#: of the busy_timeout setting?", not the vaguer "Which setting defaults to zero?")
RULES: tuple[Callable[[str], Fact | None], ...] = (default_fact, limit_fact, command_fact,
                                                   definition_fact, called_fact, return_fact,
                                                   name_fact, version_fact, offset_fact,
                                                   end_fact)


def _code_like(paragraph: str) -> bool:
    """A code listing or a prompt session, not prose: many code characters, or lines that start
    like a shell or an interpreter prompt."""
    chars = [c for c in paragraph if not c.isspace()]
    if chars and sum(c in _CODE_CHARS for c in chars) / len(chars) > 0.05:
        return True
    return any(re.match(r"^\s*(?:\$|>>>|[\w]+>|#!)", ln) for ln in paragraph.splitlines())


_JOINED = re.compile(r"[a-z,] (?:The|A|An|This|It|These) [a-z]")


#: a sentence opened by four capitalised words is a heading run into its first sentence
#: ("Maximum Number Of Tables In A Join SQLite does not support ...")
_HEADING_RUN_IN = re.compile(r"^(?:[A-Z][\w-]*\s+){4}")


def prose_sentences(text: str, shown_chars: int | None = PASSAGE_CHARS) -> list[str]:
    """The whole sentences of a chunk that its reader is shown (the first `shown_chars`
    characters; None: all of it, where the caller checks each question against the reader's
    window), from paragraphs of prose (no table rows, no code), parentheses removed; a sentence
    the chunk starts inside of, or that the cut ends inside of, is left out, as are sentences
    opened by a bracket or by a heading run into them."""
    shown = text if shown_chars is None else text[:shown_chars]
    out: list[str] = []
    paragraphs = re.split(r"\n\s*\n", shown)
    for i, para in enumerate(paragraphs):
        if CELL_SEP in para or _code_like(para):
            continue
        found = sentences(para)
        if i == 0 and found and found[0][:1].islower() and not re.match(r"^\w+\(\)", found[0]):
            found = found[1:]             # the chunk starts inside a sentence
        if i == len(paragraphs) - 1 and len(shown) < len(text) and found:
            found = found[:-1]            # the reader's cut may end inside the last one
        for s in found:
            s = _PARENS.sub("", s).strip()
            if _JOINED.search(s) or _HEADING_RUN_IN.match(s) or not s[:1].isalnum():
                continue                  # cells or headings run together, not one sentence
            if s.endswith(".") and 5 <= len(s.split()) <= 40:
                out.append(s[:-1])
    return out


def manual_facts(text: str, shown_chars: int | None = PASSAGE_CHARS) -> list[Fact]:
    """Every fact the rules read off a chunk's prose (`prose_sentences`), in its order, each
    sentence asked once."""
    out: list[Fact] = []
    seen: set[str] = set()
    for s in prose_sentences(text, shown_chars):
        for rule in RULES:
            f = rule(s)
            if (f is None or f.question in seen or _leans(f.question) or _leans(f.answer)
                    or _run_together(f.question) or _not_an_answer(f.answer)
                    or answer_in_question(f.question, f.answer)):
                continue
            seen.add(f.question)
            out.append(f)
            break
    return out


def candidates(passages: Sequence[Passage], seed: int, per_passage: int = 3
               ) -> Iterator[Candidate]:
    """Manual questions in rounds over the passages in their given (seeded) order: each prose
    chunk's first fact, then each one's second, up to `per_passage` rounds (a chunk whose first
    question was dropped gets another try after every chunk has had one). Table chunks, and the
    table rows of a text chunk, are the `table` kind's. A sentence past the first
    PASSAGE_CHARS characters is asked where the reader's window shows it for its question
    (`flowkit.operators._window.focus`). A chunk's syntax lines with their help sentence
    (`syntax_help`) come before its sentences' facts, asked where the window shows both the
    sentence and the name. `seed` is taken for symmetry with the other kinds: the order is the
    passages'."""
    found = {p.chunk_id: _chunk_facts(p) for p in passages if p.kind != "table"}
    for r in range(per_passage):
        for p in passages:
            fs = found.get(p.chunk_id, [])
            if r < len(fs):
                f = fs[r]
                yield Candidate(f.question, f.answer, "manual", (p,), f.relation)


def _chunk_facts(p: Passage) -> list[Fact]:
    """A prose chunk's facts: its syntax lines' (`syntax_help`), then its sentences'
    (`manual_facts`), each asked once and only where the reader's window shows it."""
    out = [f for f in syntax_facts(p.text) if _shown(p, f, f.answer)]
    asked = {f.question for f in out}
    out += [f for f in manual_facts(p.text, None) if f.question not in asked and _shown(p, f)]
    return out


def _flat(text: str) -> str:
    return " ".join(_PARENS.sub("", text).split())


def _shown(p: Passage, f: Fact, also: str = "") -> bool:
    """Whether the reader's window on `p` for the fact's question shows the fact's sentence (and
    `also`, where the answer is not in the sentence: a syntax line's name)."""
    if len(p.text) <= PASSAGE_CHARS:
        return True
    seen = _flat(focus(p.text, p.kind or None, f.question, PASSAGE_CHARS))
    return _flat(f.sentence) in seen and (not also or also in seen)
