"""Candidate questions, built from a knowledge base's passages in a seeded order.

- single: one passage, one fact of it (`facts.single_facts`);
- bridge: passage A names the subject of passage B ("... directed by Scott Derrickson"); a fact of
  B is asked about "the director of <A>", so the answer needs both;
- comparison: two passages of the same sort compared on one property (born first, founded first,
  the same nationality);
- table: one row of a table chunk, asked for one of its cells (`tables`);
- manual: one sentence of a manual's prose: a default, a limit, a definition, the command that
  does something (`manual`).

Passages are visited in a seeded permutation of the whole knowledge base, so a set drawn from a
large corpus is not its first documents, and the same seed gives the same candidates.
"""
from __future__ import annotations

import html
import random
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import facts as F
from . import prose as P

KINDS = ("single", "bridge", "comparison", "table", "manual")
MULTI_HOP = ("bridge", "comparison")
#: the kinds a request asks for when it names none: those measured on encyclopedic corpora
#: (HotpotQA); the CLI and the studio offer and preselect every kind (`KINDS`)
DEFAULT_KINDS = ("single", "bridge", "comparison")
#: kinds read off one chunk of a long document: a kept question uses up its chunk, not its whole
#: document (a manual is a few documents of hundreds of chunks; one question a document gave 3)
PER_CHUNK = ("table", "manual")

#: "directed by X" -> X is "the director of <A>"
AGENTS = {"directed": "director", "written": "writer", "founded": "founder",
          "produced": "producer", "created": "creator", "composed": "composer",
          "designed": "designer", "built": "builder", "published": "publisher",
          "developed": "developer", "owned": "owner", "hosted": "host", "edited": "editor",
          "illustrated": "illustrator", "performed": "performer", "sung": "singer",
          "recorded": "recording artist", "painted": "painter", "invented": "inventor",
          "discovered": "discoverer", "led": "leader", "coached": "coach", "managed": "manager",
          "narrated": "narrator", "starring": "star", "authored": "author",
          "established": "founder", "co-founded": "co-founder", "headed": "head"}


@dataclass(frozen=True)
class Passage:
    """One passage of the knowledge base: its chunk id, document id, title and text, and the
    chunk's metadata (`flowkit.documents.provenance`: source, section, pages, kind)."""

    chunk_id: str
    doc_id: str
    title: str
    text: str
    meta: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def kind(self) -> str:
        """'table' for a chunk of a table's rows, 'text' for prose, '' where the chunker did not
        say (older knowledge bases)."""
        return str(self.meta.get("kind") or "")

    @property
    def place(self) -> str:
        """Where the passage lies, as a gold place (`provenance.gold_place` reads it back)."""
        return place(self.meta, self.doc_id)

    @property
    def name(self) -> str:
        """The title without a disambiguation in brackets: 'Meet Corliss Archer (TV series)'."""
        title = html.unescape(self.title)
        return re.sub(r"\s*\([^()]*\)\s*$", "", title).strip() or title


@dataclass(frozen=True)
class Candidate:
    """A question before the checks: its answer, kind, supporting passages and how it was made."""

    question: str
    answer: str
    kind: str
    passages: tuple[Passage, ...]
    relation: str
    extra: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    @property
    def doc_ids(self) -> list[str]:
        return list(dict.fromkeys(p.doc_id for p in self.passages))

    @property
    def chunk_ids(self) -> list[str]:
        return list(dict.fromkeys(p.chunk_id for p in self.passages))

    @property
    def places(self) -> list[str]:
        """The pages or sections the question comes from ('guide.pdf#p23'), where known."""
        return list(dict.fromkeys(x for x in (p.place for p in self.passages) if x))


def place(meta: Mapping[str, Any], doc_id: str = "") -> str:
    """A chunk's place as a gold passage names one: 'file.pdf#p23', 'file.pdf#p23-24' (pages),
    'file.html#s4' (a section, where the format has no pages), or '' where the metadata names
    neither (an older chunker's chunk: its document id already says all that is known). The
    file is the chunk's `source` (its document id where it has none), so `provenance.chunk_at`
    matches it against the chunks a flow retrieves."""
    doc = str(meta.get("source") or doc_id or "")
    try:
        first, last = int(meta.get("page_start") or 0), int(meta.get("page_end") or 0)
    except (TypeError, ValueError):
        first = last = 0
    if doc and first > 0:
        return f"{doc}#p{first}" + (f"-{last}" if last > first else "")
    section = str(meta.get("section_id") or "")
    if doc and re.fullmatch(r"s\d+", section):
        return f"{doc}#{section}"
    return ""


def order(passages: Sequence[Passage], seed: int) -> list[Passage]:
    """The passages in a seeded permutation (sorted by chunk id first, so the order does not
    depend on how the store returned them)."""
    out = sorted(passages, key=lambda p: p.chunk_id)
    random.Random(seed).shuffle(out)
    return out


def singles(passages: Sequence[Passage], per_passage: int = 3) -> Iterator[Candidate]:
    """Single-hop questions in rounds: each passage's most specific fact in the given order,
    then each passage's next fact, up to `per_passage` rounds (a small knowledge base gives more
    than one question a passage; a large one is spread over many passages first). The facts are
    the encyclopedic ones (`facts`), then those of ordinary prose (`prose`). A table chunk
    gives none: its rows are not sentences (the `table` kind asks about them)."""
    found = {p.chunk_id: _facts(p) if p.kind != "table" else [] for p in passages}
    for r in range(per_passage):
        for p in passages:
            fs = found[p.chunk_id]
            if r < len(fs):
                f = fs[r]
                yield Candidate(f.question, f.answer, "single", (p,), f.relation)


def _facts(p: Passage) -> list[F.Fact]:
    out = F.single_facts(p.name, p.text)
    asked = {f.question for f in out}
    out += [f for f in P.passage_facts(p.name, p.text) if f.question not in asked]
    return [f for f in out if not P.leans_on_context(f.question) and not P.bare_answer(f.answer)]


def _title_index(passages: Sequence[Passage]) -> dict[str, Passage]:
    index: dict[str, Passage] = {}
    for p in passages:
        name = p.name
        if len(name) >= 5 and (len(name.split()) >= 2 or name[:1].isupper()):
            index.setdefault(name, p)
    return index


_VERBS = "|".join(sorted((re.escape(v) for v in AGENTS if v != "starring"), key=len, reverse=True))
#: "born in X" -> X is "the birthplace of <A>"; "stands on X" -> "the place where <A> stands"
_PLACES = {"born": "the birthplace of {a}", "located": "the place where {a} is located",
           "based": "the place where {a} is based", "stands": "the place where {a} stands",
           "lies": "the place where {a} lies", "situated": "the place where {a} is situated"}


def _bridge_description(a: Passage, sentence: str, entity: str) -> str | None:
    """'the director of <A>' where A's sentence says '... directed by <entity>', 'the
    birthplace of <A>' where it says 'born in <entity>'."""
    if not F.words(a.name) or not set(F.words(a.name)) <= set(F.words(sentence)):
        return None
    name = F.subject(a.name, a.text)
    e = re.escape(entity)
    m = re.search(r"\b(" + _VERBS + r")\b[^.;,]{0,40}?\bby\s+(?:the\s+\w+\s+)?" + e + r"\b",
                  sentence, re.I)
    if m:
        return f"the {AGENTS[m.group(1).lower()]} of {name}"
    if re.search(r"\bstarring\s+" + e + r"\b", sentence):
        return f"the star of {name}"
    m = re.search(r"\b(born|located|based|stands|lies|situated)\b[^.;]{0,30}?\b(?:in|on|at)\s+"
                  r"(?:the\s+(?:island|town|village|city|county)\s+of\s+)?" + e + r"\b", sentence)
    if m:
        return _PLACES[m.group(1)].format(a=name)
    return None


def _mentions(sentence: str, by_first: dict[str, list[str]]) -> list[str]:
    """Titles written whole in `sentence`, longest first (looked up by their first word): not
    the start of a longer name ('Rockstar' in 'developed by Rockstar San Diego' is not the song
    'Rockstar': a bridge through it asked for 'the developer of Red Dead Redemption')."""
    found: set[str] = set()
    for w in set(re.findall(r"[\w'.&-]+", sentence)):
        for name in by_first.get(w, ()):
            if re.search(rf"(?<![\w'-]){re.escape(name)}(?![\w'-])(?!\s+[A-Z0-9])", sentence):
                found.add(name)
    return sorted(found, key=lambda n: (-len(n), n))


def bridges(passages: Sequence[Passage], seed: int) -> Iterator[Candidate]:
    """Bridge questions: A's sentence links to B's subject; B's fact is asked through A."""
    index = _title_index(passages)
    by_first: dict[str, list[str]] = {}
    for name in index:
        by_first.setdefault(name.split()[0], []).append(name)
    for a in passages:
        c = _bridge_from(a, index, by_first)
        if c is not None:
            yield c


def _bridge_from(a: Passage, index: dict[str, Passage],
                 by_first: dict[str, list[str]]) -> Candidate | None:
    for s in F.sentences(a.text)[:5]:
        for entity in _mentions(s, by_first):
            b = index[entity]
            if b.doc_id == a.doc_id:
                continue
            desc = _bridge_description(a, s, entity)
            if desc is None:
                continue
            for f in _subject_facts(b):
                if entity not in f.question:
                    continue
                q = f.question.replace(entity, desc, 1)
                q = q[0].upper() + q[1:]
                if F.answer_in_question(q, f.answer) or a.name in f.answer:
                    continue
                return Candidate(q, f.answer, "bridge", (a, b), f.relation,
                                 {"bridge_entity": entity})
    return None


def _subject_facts(p: Passage) -> list[F.Fact]:
    """B's facts about its subject, the least guessable first (a year before a nationality)."""
    out = list(F.single_facts(p.name, p.text))
    nat = F.nationality(p.text, p.name)
    if nat:
        out.append(F.Fact(f"What nationality is {p.name}?", nat, "nationality", ""))
    return out


def comparisons(passages: Sequence[Passage], seed: int) -> Iterator[Candidate]:
    """Comparison questions: pairs of the same sort (people by birth year, things by the year
    they were founded / released / published, people by nationality), in seeded pairs."""
    born: list[tuple[Passage, int]] = []
    made: dict[str, list[tuple[Passage, int]]] = {}
    nat: list[tuple[Passage, str]] = []
    for p in passages:
        y = F.birth_year(p.name, p.text)
        if y:
            born.append((p, int(y)))
            n = F.nationality(p.text, p.name)
            if n:
                nat.append((p, n))
            continue
        f = F.founding(p.text, p.name)
        if f:
            made.setdefault(f[0], []).append((p, int(f[1])))
    # pairs of the same sort first: sorted by what the passage says its subject is
    for verb in made:
        made[verb].sort(key=lambda item: (F.kind_noun(item[0].text) or "~").split()[-1])
    rng = random.Random(seed + 1)
    streams: list[Iterator[Candidate]] = [_born_first(born, rng), _same_nationality(nat, rng)]
    streams += [_made_first(verb, items, rng) for verb, items in sorted(made.items())]
    while streams:
        for s in list(streams):
            c = next(s, None)
            if c is None:
                streams.remove(s)
            else:
                yield c


def _pairs(items: list, rng: random.Random) -> Iterator[tuple]:
    for i in range(0, len(items) - 1, 2):
        a, b = items[i], items[i + 1]
        yield (a, b) if rng.random() < 0.5 else (b, a)


def _born_first(items: list[tuple[Passage, int]], rng: random.Random) -> Iterator[Candidate]:
    for (a, ya), (b, yb) in _pairs(items, rng):
        if ya != yb and a.name != b.name:
            first = a if ya < yb else b
            yield Candidate(f"Who was born first, {a.name} or {b.name}?", first.name,
                            "comparison", (a, b), "born first",
                            {"swapped": f"Who was born first, {b.name} or {a.name}?"})


def _made_first(verb: str, items: list[tuple[Passage, int]],
                rng: random.Random) -> Iterator[Candidate]:
    for (a, ya), (b, yb) in _pairs(items, rng):
        if ya != yb and a.name != b.name:
            first = a if ya < yb else b
            x, y = F.subject(a.name, a.text), F.subject(b.name, b.text)
            yield Candidate(f"Which was {verb} first, {x} or {y}?", first.name, "comparison",
                            (a, b), f"{verb} first",
                            {"swapped": f"Which was {verb} first, {y} or {x}?"})


def _same_nationality(items: list[tuple[Passage, str]],
                      rng: random.Random) -> Iterator[Candidate]:
    for (a, na), (b, nb) in _pairs(items, rng):
        if a.name != b.name:
            yield Candidate(f"Were {a.name} and {b.name} of the same nationality?",
                            "yes" if na == nb else "no", "comparison", (a, b),
                            "same nationality",
                            {"swapped": f"Were {b.name} and {a.name} of the same nationality?"})
