"""Generate a question set from a knowledge base: candidates by rule, kept only when the model's
reading passes every check (`checks`), with supporting passage ids so that R@k works.

Deterministic for a seed: passages are visited in a seeded order and every model call goes through
the completion cache, so the same command gives the same set, and a generation that was killed
resumes by running it again (what it computed is served from the cache). Nothing is written until
the set is complete. An encyclopedic passage (a document) supports at most one kept question, so
any split of such a set (search and confirmation questions) shares no passage; a chunk of a long
document supports up to `PER_CHUNK_KEPT` questions of the table and manual kinds (a table chunk
holds many rows, a section several facts), written next to each other so that a split by ranges
shares at most the chunk at its edge (`_uses`, `_grouped`). Every question names its documents
(`supporting_doc_ids`), its chunks (`supporting_chunk_ids`) and, where the chunk's metadata has
them, its pages or sections (`supporting_places`, 'guide.pdf#p23').
"""
from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ...context import Resources, RunContext
from ...cost import Cost
from ...errors import FlowkitError
from ..metrics import doc_id_of
from . import manual, table_kind
from .candidates import (
    DEFAULT_KINDS,
    KINDS,
    MULTI_HOP,
    PER_CHUNK,
    Candidate,
    Passage,
    bridges,
    comparisons,
    order,
    singles,
)
from .checks import PROMPT_VERSION, REASONS, Checker

#: model calls a candidate of each kind costs when it passes every check (the most one costs)
CALLS_IF_KEPT = {"single": 2, "bridge": 4, "comparison": 4, "table": 2, "manual": 2}
#: the share of candidates kept and the model calls a tried candidate costs on average, priors for
#: the estimate: measured on HotpotQA's corpus with Gemma 3 270M (100 questions, prompts qgen-4:
#: single 68 of 101 kept, bridge 4 of 166, comparison 28 of 747; 2,043 calls for 1,014 tried).
#: table and manual: not measured yet, taken as single's (one passage, one round trip and one
#: closed-book call when kept); replace them with bench/documents.py's figures
#: The most questions one generation may be asked for: a generated set is read by a person (and
#: each question costs about 20 model calls to find); `--n 10^9` hung in the estimate before.
MAX_QUESTIONS = 10_000
#: The most candidates one generation may try (25 per question at MAX_QUESTIONS).
MAX_TRIES = 25 * MAX_QUESTIONS
KEEP_PRIOR = {"single": 0.67, "bridge": 0.025, "comparison": 0.04, "table": 0.67, "manual": 0.67}
CALLS_PER_TRY = {"single": 1.75, "bridge": 2.0, "comparison": 2.05, "table": 1.75,
                 "manual": 1.75}
PAGE = 500
#: the most kept questions one chunk supports for the kinds read off a long document's chunks
#: (`PER_CHUNK`): with one, the SQLite manual's 406 chunks gave 80 kept questions, every other
#: candidate of a chunk that already had one never tried
PER_CHUNK_KEPT = 3
#: the rounds over the chunks those kinds' candidates come in: a chunk's candidates past its
#: third are tried when the model dropped some of the first (a table chunk holds a dozen rows)
PER_CHUNK_ROUNDS = 8


@dataclass(frozen=True)
class Request:
    """What to generate: how many questions, of which kinds, from which seed."""

    n: int
    kinds: tuple[str, ...] = DEFAULT_KINDS
    seed: int = 0
    #: stop after this many candidates tried (0: 25 per question asked for)
    max_tries: int = 0

    def problems(self) -> list[str]:
        """What is wrong with the request, each naming the field."""
        out = []
        if self.n <= 0:
            out.append(f"n: the number of questions must be at least 1; got {self.n}")
        elif self.n > MAX_QUESTIONS:
            out.append(f"n: at most {MAX_QUESTIONS:,} questions in one generation; got "
                       f"{self.n:,} (generate several sets with other seeds)")
        if not self.kinds:
            out.append("kinds: name at least one of " + ", ".join(KINDS))
        for k in self.kinds:
            if k not in KINDS:
                out.append(f"kinds: unknown kind '{k}' (use {', '.join(KINDS)})")
        if self.max_tries < 0:
            out.append(f"max_tries: must be >= 0; got {self.max_tries}")
        elif self.max_tries > MAX_TRIES:
            out.append(f"max_tries: at most {MAX_TRIES:,}; got {self.max_tries:,}")
        return out

    @property
    def tries(self) -> int:
        return self.max_tries or 25 * self.n

    def caps(self) -> dict[str, int]:
        """How many of each kind may be kept: twice an even share (so a kind the model keeps
        often cannot crowd the others out), all of n for a kind asked alone."""
        kinds = [k for k in KINDS if k in self.kinds]
        share = -(-self.n // len(kinds))
        return {k: min(self.n, 2 * share) if len(kinds) > 1 else self.n for k in kinds}


@dataclass
class Progress:
    """Where a generation stands: kept / tried, what its calls cost (computed / served from the
    cache), the wall seconds so far."""

    target: int
    kept: int = 0
    tried: int = 0
    cost: Cost = field(default_factory=Cost)
    seconds: float = 0.0
    dropped: Counter[str] = field(default_factory=Counter)
    kept_by_kind: Counter[str] = field(default_factory=Counter)
    tried_by_kind: Counter[str] = field(default_factory=Counter)

    def line(self) -> str:
        drops = ", ".join(f"{r} {self.dropped[r]}" for r in REASONS if self.dropped[r])
        return (f"kept {self.kept}/{self.target} of {self.tried} tried; calls computed "
                f"{self.cost.computed}, cached {self.cost.cached}"
                + (f"; dropped: {drops}" if drops else ""))

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "kept": self.kept, "tried": self.tried,
                "computed": self.cost.computed, "cached": self.cost.cached,
                "seconds": round(self.seconds, 1), "dropped": dict(self.dropped),
                "kept_by_kind": dict(self.kept_by_kind), "tried_by_kind": dict(self.tried_by_kind)}


@dataclass
class Estimate:
    """Before a generation starts: the passages there are and the model calls it should take."""

    passages: int
    calls: int
    calls_max: int

    def line(self) -> str:
        return (f"{self.passages} passages; about {self.calls} model calls expected "
                f"(at most {self.calls_max}), fewer where the cache has them")


@dataclass
class Generated:
    """A generated set: questions in dataset form, how it went, and where it came from."""

    questions: list[dict[str, Any]]
    progress: Progress
    meta: dict[str, Any]
    #: each kept question's candidate and what the model answered in its checks (for review)
    reviewed: list[dict[str, Any]] = field(default_factory=list)


def read_passages(kb: Any) -> list[Passage]:
    """Every chunk of a knowledge base as a Passage (paged, so a large one is read in pieces)."""
    out: list[Passage] = []
    total = int(kb.count())
    for offset in range(0, total, PAGE):
        for d in kb.chunks(limit=PAGE, offset=offset):
            meta = d.get("meta") or {}
            doc = str(meta.get("doc_id") or doc_id_of(d["id"]))
            out.append(Passage(d["id"], doc, str(d.get("title") or meta.get("title") or ""),
                               d.get("text") or "", dict(meta)))
    return out


def estimate(request: Request, n_passages: int) -> Estimate:
    """The model calls a request should take and at most: tries go round the kinds as the
    generation shares them (a kind that reached its cap gets no more), each kind keeping its prior
    share of what it tries, until `request.n` are kept or the tries run out."""
    caps = request.caps()
    tries = dict.fromkeys(caps, 0)
    total = 0
    while total < request.tries:
        open_kinds = [k for k in caps if KEEP_PRIOR[k] * tries[k] < caps[k]]
        if not open_kinds or sum(min(caps[k], KEEP_PRIOR[k] * tries[k]) for k in caps) >= request.n:
            break
        tries[min(open_kinds, key=lambda k: (tries[k], KINDS.index(k)))] += 1
        total += 1
    calls = sum(CALLS_PER_TRY[k] * t for k, t in tries.items())
    return Estimate(n_passages, int(calls), request.tries * max(CALLS_IF_KEPT[k]
                                                                for k in request.kinds))


def _streams(passages: list[Passage], request: Request) -> dict[str, Iterator[Candidate]]:
    ordered = order(passages, request.seed)
    made = {"single": lambda: singles(ordered), "bridge": lambda: bridges(ordered, request.seed),
            "comparison": lambda: comparisons(ordered, request.seed),
            "table": lambda: table_kind.candidates(ordered, request.seed, PER_CHUNK_ROUNDS),
            "manual": lambda: manual.candidates(ordered, request.seed, PER_CHUNK_ROUNDS)}
    return {k: made[k]() for k in KINDS if k in request.kinds}


def check_kb(passages: list[Passage], request: Request, kb_name: str) -> None:
    """Refuse a knowledge base that cannot give what is asked, naming what is missing."""
    if not passages:
        raise FlowkitError(f"knowledge base '{kb_name}' has no passages; ingest documents first")
    docs = {p.doc_id for p in passages}
    multi = [k for k in request.kinds if k in MULTI_HOP]
    if multi and len(docs) < 2:
        raise FlowkitError(f"kinds: {', '.join(multi)} questions need two passages from different "
                           f"documents; knowledge base '{kb_name}' has {len(docs)} document")


def generate(resources: Resources, kb_name: str, request: Request, *, cache: Any = None,
             model_label: str = "", on_progress: Callable[[Progress], None] | None = None,
             should_stop: Callable[[], bool] | None = None) -> Generated:
    """Generate `request.n` questions from knowledge base `kb_name` (fewer when the candidates
    or `request.max_tries` run out; `progress` says why). Model calls go through `cache`."""
    problems = request.problems()
    if problems:
        raise FlowkitError("; ".join(problems))
    t0 = time.perf_counter()
    passages = read_passages(resources.kb(kb_name))
    check_kb(passages, request, kb_name)
    ctx = RunContext(resources, kb_name, "questiongen", 1, cache=cache,
                     run_id=f"questiongen:{kb_name}:{request.seed}")
    progress = Progress(target=request.n)

    def ask(prompt: str) -> str:
        out = ctx.llm.complete(prompt, max_tokens=24)
        progress.cost += Cost.of_calls(ctx.llm_calls[-1:])
        del ctx.llm_calls[:]               # nothing accumulates over a long generation
        return out.text

    embedder = _embedder(resources)
    checker = Checker(ask, embedder.embed if embedder is not None else None)
    caps = request.caps()
    streams = _streams(passages, request)
    used: Counter[str] = Counter()
    kept: list[tuple[Candidate, dict[str, str]]] = []
    while progress.kept < request.n and progress.tried < request.tries and streams:
        if should_stop is not None and should_stop():
            raise FlowkitError("question generation stopped; run it again to resume "
                               "(what was computed is in the completion cache)")
        kind = _next_kind(streams, caps, progress)
        c = next(streams[kind], None)
        if c is None:
            del streams[kind]
            continue
        uses = _uses(c)
        if any(used[k] >= most for k, most in uses.items()):
            continue                       # the passage supports no more kept questions
        progress.tried += 1
        progress.tried_by_kind[kind] += 1
        reason = checker.check(c)
        if reason is None:
            kept.append((c, dict(checker.last_answers)))
            used.update(uses.keys())
            progress.kept += 1
            progress.kept_by_kind[kind] += 1
        else:
            progress.dropped[reason] += 1
        progress.seconds = time.perf_counter() - t0
        if on_progress is not None:
            on_progress(progress)
    progress.seconds = time.perf_counter() - t0
    origin = {"model": model_label or getattr(resources.llm, "model_id", "llm"),
              "prompt_version": PROMPT_VERSION, "seed": request.seed, "kb": kb_name}
    kept = _grouped(kept)
    questions = [_question(i, c, origin) for i, (c, _) in enumerate(kept, 1)]
    reviewed = [{"id": q["id"], "passages": [{"id": p.doc_id, "title": p.title, "text": p.text,
                                              "chunk_id": p.chunk_id, "place": p.place}
                                             for p in c.passages], "model_answers": answers}
                for q, (c, answers) in zip(questions, kept)]
    meta = {**origin, "kinds": list(request.kinds), "n": request.n,
            "progress": progress.to_dict()}
    return Generated(questions, progress, meta, reviewed)


def _uses(c: Candidate) -> dict[str, int]:
    """What a kept candidate uses, each with the most kept questions it supports: its documents,
    once (a passage of an encyclopedic corpus is a document), or for the kinds read off one chunk
    of a long document (`PER_CHUNK`) that chunk, `PER_CHUNK_KEPT` times; a chunk key ('doc#3')
    never equals a document key, so each kind is held to its own rule."""
    if c.kind in PER_CHUNK:
        return {f"chunk:{p.chunk_id}": PER_CHUNK_KEPT for p in c.passages}
    return ({f"doc:{p.doc_id}": 1 for p in c.passages}
            | {f"chunk:{p.chunk_id}": 1 for p in c.passages})


def _grouped(kept: list[tuple[Candidate, dict[str, str]]]
             ) -> list[tuple[Candidate, dict[str, str]]]:
    """Kept questions in the order they were kept, those of one chunk moved up beside the first
    of them: candidates come in rounds over the chunks, so a chunk's second question is kept long
    after its first, and a split by ranges would cut between them."""
    first: dict[str, int] = {}
    for i, (c, _) in enumerate(kept):
        first.setdefault(c.passages[0].chunk_id, i)
    return sorted(kept, key=lambda k: first[k[0].passages[0].chunk_id])


def _next_kind(streams: dict[str, Iterator[Candidate]], caps: dict[str, int],
               progress: Progress) -> str:
    """Tries are shared evenly between the kinds that have candidates left and have not reached
    their cap (any kind with candidates once every one has)."""
    pool = [k for k in streams if progress.kept_by_kind[k] < caps.get(k, 0)] or list(streams)
    return min(pool, key=lambda k: (progress.tried_by_kind[k], KINDS.index(k)))


def _embedder(resources: Resources) -> Any:
    try:
        return resources.embedder
    except RuntimeError:                   # a test's resource set without an embedder
        return None


def _question(i: int, c: Candidate, origin: dict[str, Any]) -> dict[str, Any]:
    extra = {k: v for k, v in c.extra.items() if k != "swapped"}
    q = {"id": f"gen-{origin['seed']}-{i:04d}", "question": _ordered(c, origin["seed"]),
         "answers": [c.answer], "type": c.kind, "supporting_doc_ids": c.doc_ids,
         "supporting_chunk_ids": c.chunk_ids, "origin": {**origin, "relation": c.relation, **extra}}
    if c.places:
        q["supporting_places"] = c.places  # 'guide.pdf#p23': where a reader checks the answer
    return q


def _ordered(c: Candidate, seed: int) -> str:
    """A kept choice in the order a seeded coin picks: its checks held in both orders, so the
    order it is asked in is free, and a coin keeps the set from leaning to one position (the
    checks alone still kept 7 of 8 answers second)."""
    swapped = c.extra.get("swapped")
    if not swapped:
        return c.question
    coin = hashlib.sha256(f"{seed}:{c.question}".encode()).digest()[0] & 1
    return swapped if coin else c.question
