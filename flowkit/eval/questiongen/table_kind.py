"""The `table` kind of generated question: every table chunk's questions by a row's key
(`tables.row_candidates`) and by a row's description (`described_rows.described_candidates`),
drawn in rounds over the chunks so that a set spreads over many tables."""
from __future__ import annotations

import random
from collections.abc import Iterator, Sequence

from .candidates import Candidate, Passage
from .described_rows import described_candidates
from .tables import passage_tables, row_candidates, shared_keys


def candidates(passages: Sequence[Passage], seed: int, per_passage: int = 3
               ) -> Iterator[Candidate]:
    """Table questions (by a row's key, `row_candidates`, and by a row's description,
    `described_rows`) in rounds over the passages in their given (seeded) order: each table
    chunk's first question, then each one's second, up to `per_passage` rounds, so a set drawn
    from many tables is spread over all of them before any gives a second try. Within a chunk the
    questions come in a seeded order (rows and columns mixed), the same for the same seed."""
    tables = [(p, t) for p in passages for t in passage_tables(p)]
    shared = shared_keys(tables)
    found: dict[str, list[Candidate]] = {}
    for p, t in tables:
        cs = found.setdefault(p.chunk_id, [])
        cs.extend(row_candidates(p, t, shared))
        asked = {c.question for c in cs}
        cs.extend(c for c in described_candidates(p, t) if c.question not in asked)
    for cid, cs in found.items():
        random.Random(f"{seed}:{cid}").shuffle(cs)
    for r in range(per_passage):
        for p in passages:
            cs = found.get(p.chunk_id, [])
            if r < len(cs):
                yield cs[r]
