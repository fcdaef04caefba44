"""Triple extraction for the knowledge-graph index: parse what a model wrote, or find triples
with named-entity patterns (no model)."""
from __future__ import annotations

import re

from ...text import ENTITY_STOPWORDS, split_sentences

Triple = tuple[str, str, str]

# a year, or capitalised words joined by spaces (and at most two of 'of' / 'the' between them)
_ENTITY = re.compile(r"\b(?:1\d{3}|20\d{2})\b|"
                     r"[A-Z][\w'\u2019-]*(?:\s+(?:(?:of|the)\s+){0,2}[A-Z][\w'\u2019-]*)*")
_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s*")
_LABEL = re.compile(r"^\s*(?:subject|relation|predicate|object)\s*:\s*", re.I)
_PRONOUN = re.compile(r"(?:It|She|He|They|Its|Her|His)\b")
_FIELD = re.compile(r"^\W*(subject|relation|predicate|object)\s*:\s*(.+)$", re.I)


def norm(name: str) -> str:
    """The node key of an entity name: lower case, no leading article, no outer punctuation."""
    key = " ".join(re.sub(r"[^\w\s'-]", " ", name.lower()).split())
    return re.sub(r"^(?:the|a|an)\s+", "", key).strip(" '-")


def _valid(s: str, r: str, o: str, source: str | None) -> Triple | None:
    s, r, o = (_LABEL.sub("", x).strip(" \t.;:,\"'`*") for x in (s, r, o))
    s, o = re.sub(r"^(?:the|a|an)\s+", "", s, flags=re.I), re.sub(r"^(?:the|a|an)\s+", "", o, flags=re.I)
    if not s or not o or norm(s) == norm(o) or not norm(s) or not norm(o):
        return None
    if len(s) > 60 or len(o) > 60 or len(s.split()) > 8 or len(o.split()) > 8:
        return None
    r = " ".join(r.split()[:8]) or "related to"
    if source is not None:      # grounded: both entities must occur in the source text
        text = f" {norm(source)} "
        if f" {norm(s)} " not in text or f" {norm(o)} " not in text:
            return None
    return s, r, o


def parse_triples(text: str, source: str | None = None) -> list[Triple]:
    """Triples from what the model wrote: 'A | rel | B' lines, 'Subject:/Relation:/Object:' blocks,
    '(A, rel, B)' tuples or 'A -> rel -> B'; with `source`, only entities found in it are kept."""
    out: list[Triple] = []
    block: dict[str, str] = {}
    for raw in text.splitlines():
        line = _BULLET.sub("", raw).strip()
        cand: list[str] = []
        field = _FIELD.match(line)
        if "|" in line:
            cand = [p for p in (x.strip() for x in line.split("|")) if p]
        elif field:
            block["relation" if field.group(1).lower() == "predicate" else field.group(1).lower()] = \
                field.group(2)
            if field.group(1).lower() == "object" and len(block) == 3:
                cand = [block["subject"], block["relation"], block["object"]]
                block = {}
        elif re.search(r"->|\u2192", line):
            cand = [p.strip() for p in re.split(r"->|\u2192", line) if p.strip()]
        else:
            m = re.search(r"\(([^,()]+),([^,()]+),([^()]+)\)", line)
            cand = list(m.groups()) if m else []
        if len(cand) >= 3:
            t = _valid(cand[0], " ".join(cand[1:-1]), cand[-1], source)
            if t and t not in out:
                out.append(t)
    return out


def pattern_triples(text: str, title: str = "") -> list[Triple]:
    """Triples without a model: consecutive named entities (capitalised phrases, years) of a
    sentence, linked by the words between them (or 'mentioned with'); a sentence opening with a
    pronoun (It, She, ...) is taken to be about the title, which also 'mentions' each entity."""
    out: list[Triple] = []
    mid_caps = {w for s in split_sentences(text) for w in re.findall(r"(?<=\s)[A-Z][\w'-]*", s)}
    for sent in split_sentences(text):
        ents: list[tuple[str, int, int]] = []
        pronoun = _PRONOUN.match(sent)
        if pronoun and title:
            ents.append((title, 0, pronoun.end()))
        for m in _ENTITY.finditer(sent):
            name, start = m.group(0), m.start()
            first = name.split()[0]
            if start == 0 and first.lower() in ENTITY_STOPWORDS:
                name, start = name[len(first):].strip(), start + len(first) + 1
            if start == 0 and " " not in name and name not in mid_caps and name != title:
                continue
            if name and norm(name) and norm(name) not in ENTITY_STOPWORDS:
                ents.append((name, start, start + len(name)))
        for (a, _, end), (b, start, _) in zip(ents, ents[1:]):
            words = re.sub(r"[^\w\s'-]", " ", sent[end:start]).split()
            rel = " ".join(words) if 1 <= len(words) <= 6 and set(w.lower() for w in words) - {
                "and", "or", "the", "of", "a"} else "mentioned with"
            t = _valid(a, rel, b, None)
            if t and t not in out:
                out.append(t)
        for name, _, _ in ents:
            t = _valid(title, "mentions", name, None) if title else None
            if t and t not in out:
                out.append(t)
    return out
