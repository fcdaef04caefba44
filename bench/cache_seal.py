"""What sealing completion-cache entries costs on a hit (issue 39 item 7), measured side by side.

The same SQLite cache table is read through `storage.cache.SqlCompletionCache` twice over:
sealed (the HMAC of `flowkit.runtime.cache_seal` checked on every hit) and unsealed (a seal that
reads the row as the cache did before: `CacheEntry.from_dict`, no check). Batches of hits
alternate between the two so that the machine's load falls on both alike; medians are printed
per hit. On a loaded machine the database's own time varies more than the seal costs, so the row's
reading alone (`open` of either seal on the stored row, no database) is timed side by side too:
its difference is what the seal adds to every hit.

Entries are the size of a real RAG call (a 3 KB prompt, 300 characters of answer, ~740 prompt
tokens) and, separately, one with logprobs of 64 tokens (what a judge's scoring call stores).

Usage: python bench/cache_seal.py [--hits 2000] [--rounds 7]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flowkit.runtime.cache_seal import EntrySeal, Opened
from flowkit.runtime.completion_cache import CacheEntry, Origin
from storage.cache import SqlCompletionCache


class _Unsealed(EntrySeal):
    """The cache as it read rows before sealing: no MAC stored, none checked."""

    def seal(self, key: str, entry: CacheEntry) -> dict[str, Any]:
        return entry.to_dict()

    def open(self, key: str, data: Mapping[str, Any]) -> Opened:
        return Opened(CacheEntry.from_dict(dict(data)))


def _entries() -> dict[str, CacheEntry]:
    words = ("Mara Velt was born on the island of Tessel in 1884 and built lighthouses. " * 40)
    rag = CacheEntry(text=words[:300], prompt=words[:3000], prompt_tokens=740,
                     completion_tokens=64, ms=2150.0, origin=Origin("r" * 12, "generate", 1))
    judge = CacheEntry(text="", prompt=words[:1500], prompt_tokens=64, ms=80.0,
                       finish_reason="scored", logprobs=[(f"tok{i}", -0.01 * i) for i in range(64)],
                       origin=Origin("r" * 12, "judge", 1))
    return {"RAG answer (3 KB prompt)": rag, "scoring call (64 logprobs)": judge}


def _per_hit(cache: SqlCompletionCache, keys: list[str]) -> float:
    t0 = time.perf_counter()
    for k in keys:
        if cache.get(k) is None:
            raise SystemExit("a hit was a miss: the bench is wrong")
    return (time.perf_counter() - t0) / len(keys) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hits", type=int, default=2000, help="hits per batch")
    ap.add_argument("--rounds", type=int, default=7, help="alternating batches per variant")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-seal-"))
    seal = EntrySeal(os.urandom(32))
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    for name, entry in _entries().items():
        url = f"sqlite:///{tmp / (str(abs(hash(name))) + '.db')}"
        sealed = SqlCompletionCache(url, max_entries=10**6, seal=seal)
        plain = SqlCompletionCache(url, max_entries=10**6, seal=_Unsealed(os.urandom(32)))
        n = 200
        s_keys, p_keys = [f"s{i:063d}" for i in range(n)], [f"p{i:063d}" for i in range(n)]
        for k in s_keys:
            sealed.put(k, entry)
        for k in p_keys:
            plain.put(k, entry)
        batch_s = [s_keys[i % n] for i in range(args.hits)]
        batch_p = [p_keys[i % n] for i in range(args.hits)]
        _per_hit(sealed, batch_s[:200])              # warm both paths
        _per_hit(plain, batch_p[:200])
        with_seal, without = [], []
        for _ in range(args.rounds):
            without.append(_per_hit(plain, batch_p))
            with_seal.append(_per_hit(sealed, batch_s))
        row, bare = sealed.seal.seal(s_keys[0], entry), plain.seal.seal(p_keys[0], entry)
        opens: dict[str, list[float]] = {"sealed": [], "unsealed": []}
        for _ in range(args.rounds):
            for label, sl, key, data in (("unsealed", plain.seal, p_keys[0], bare),
                                         ("sealed", seal, s_keys[0], row)):
                t0 = time.perf_counter()
                for _ in range(args.hits):
                    if sl.open(key, data).entry is None:
                        raise SystemExit("the seal did not check: the bench is wrong")
                opens[label].append((time.perf_counter() - t0) / args.hits * 1e6)
        a, b = statistics.median(without), statistics.median(with_seal)
        oa, ob = statistics.median(opens["unsealed"]), statistics.median(opens["sealed"])
        print(f"{name}: a hit from SQLite unsealed {a:.0f} us, sealed {b:.0f} us (x{b / a:.3f}); "
              f"reading the row alone (no database) unsealed {oa:.1f} us, sealed {ob:.1f} us: "
              f"the seal adds {ob - oa:.1f} us a hit ({(ob - oa) / a * 100:.1f}% of an unsealed "
              f"hit)")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
