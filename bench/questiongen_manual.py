"""How many chunks of a knowledge base give a rule-built question, without the model.

Not a test. `flowkit dataset generate --kinds table,manual` keeps up to 3 questions a chunk
(`generate.PER_CHUNK_KEPT`), and only where the rules (flowkit/eval/questiongen: `manual`, `table_kind`) build a candidate; the
share of chunks with a candidate is the ceiling of what the model's read-back can keep. This
counts, for a knowledge base: the chunks with at least one candidate (by kind and together), the
candidates per kind and per rule (`relation`), and prints a seeded sample of candidates and,
with --uncovered N, N chunks that give none (to read what the rules do not ask).

Measured on the SQLite manual's structure-aware knowledge base (bench/documents.py's
'sqlite-structured', 406 chunks; a copy of its data folder), seed 0:
  before (785f1de)  84 chunks with a candidate (20.7 per 100): table 11, manual 73; candidates
                    table 87, manual 94;
  after             184 chunks (45.3 per 100): table 11, manual 173; candidates table 87, manual
                    268 (name 106, command 35, syntax help 21, definition 20, offset 19, count 16,
                    version 15, default 11, term 8, returns 6, limit 6, used for 3, quantity 2).
With the packaged model's read-back (`flowkit dataset generate --kinds table,manual --n 300
--max-tries 400`; the candidates ran out first): before 37 kept of 114 tried (9.1 per 100 chunks),
after 81 kept of 240 tried (20.0 per 100 chunks): table 3 of 26, manual 78 of 214. Nearly every
drop is the round trip (157 of 159): the 270M model does not give the name back from the passage.
Up to 3 kept a chunk (`--n 400 --max-tries 800`): 100 kept of 323 tried (24.6 per 100 chunks):
table 5 of 57, manual 95 of 266; 220 of 223 drops the round trip. With the end-phrase rule
(`questiongen/ends.py`): 153 kept of 429 tried (37.7 per 100 chunks, 118 chunks): table 5 of 57,
manual 148 of 372 (end phrases 54 of 108).

Usage:
  python bench/questiongen_manual.py --data-dir DIR --kb NAME [--sample 20] [--uncovered 0]
      [--seed 0] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flowkit.eval.questiongen import manual, table_kind
from flowkit.eval.questiongen.candidates import Candidate, Passage, order
from flowkit.eval.questiongen.generate import read_passages
from service.workspace import Workspace


def all_candidates(passages: list[Passage], seed: int) -> dict[str, list[Candidate]]:
    """Every candidate of each per-chunk kind (all rounds: per_passage large)."""
    ordered = order(passages, seed)
    return {"table": list(table_kind.candidates(ordered, seed, per_passage=1000)),
            "manual": list(manual.candidates(ordered, seed, per_passage=1000))}


def measure(passages: list[Passage], seed: int) -> dict[str, object]:
    found = all_candidates(passages, seed)
    chunks: dict[str, set[str]] = {k: {c.passages[0].chunk_id for c in cs}
                                   for k, cs in found.items()}
    covered = set().union(*chunks.values())
    n = len(passages)
    return {
        "chunks": n,
        "chunks_with_candidate": len(covered),
        "per_100_chunks": round(100 * len(covered) / n, 1) if n else 0.0,
        "chunks_by_kind": {k: len(v) for k, v in chunks.items()},
        "candidates_by_kind": {k: len(cs) for k, cs in found.items()},
        "candidates_by_rule": dict(Counter(f"{c.kind}:{c.relation}"
                                           for cs in found.values() for c in cs).most_common()),
        "_found": found, "_covered": covered,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--kb", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sample", type=int, default=20, help="candidates to print")
    ap.add_argument("--uncovered", type=int, default=0, help="chunks without a candidate to print")
    ap.add_argument("--rule", default="", help="print the sample from this kind:relation only")
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    passages = read_passages(Workspace(a.data_dir).resources.kb(a.kb))
    rep = measure(passages, a.seed)
    found: dict[str, list[Candidate]] = rep.pop("_found")  # type: ignore[assignment]
    covered: set[str] = rep.pop("_covered")  # type: ignore[assignment]
    print(json.dumps(rep, indent=1))
    rng = random.Random(a.seed)
    pool = [c for cs in found.values() for c in cs
            if not a.rule or f"{c.kind}:{c.relation}" == a.rule]
    for c in rng.sample(pool, min(a.sample, len(pool))):
        print(f"- [{c.kind}:{c.relation}] {c.question}  ->  {c.answer}")
    rest = [p for p in passages if p.chunk_id not in covered]
    for p in rng.sample(rest, min(a.uncovered, len(rest))):
        print(f"\n===== {p.chunk_id} ({p.kind or '?'}, {len(p.text)} chars)\n{p.text[:1500]}")
    if a.json:
        Path(a.json).write_text(json.dumps(rep, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
