"""Child process of tests/test_kb_lock.py: open a data directory with the HashEmbedder (no model
loads), print the knowledge base's state as found, ingest a corpus folder, print the counts.

    python tests/kb_child.py DATA_DIR KB CORPUS_DIR [NEXT_CORPUS_DIR]

Lines on stdout (JSON): {"found": {...}} before writing, {"done": {...}} after; with
NEXT_CORPUS_DIR it then prints {"victim": ...} and ingests that folder too (the test kills it).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def counts(resources: Any, kb: str) -> dict[str, Any]:
    base = resources.kb(kb)
    meta = base.meta()
    return {"exists": base.exists, "state": meta.get("state"), "meta_chunks": meta.get("chunks"),
            "chroma": base.count() if base.exists else resources_count(base),
            "bm25": base.bm25.count()}


def resources_count(base: Any) -> int:
    try:
        return int(base.count())
    except Exception:  # noqa: BLE001 - no collection yet
        return 0


def main() -> int:
    from flowkit.errors import ResourceError
    from flowkit.ingest import ingest
    from flowkit.runtime.resources import Resources
    from flowkit.testing import HashEmbedder
    data_dir, kb, corpus = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    res = Resources(data_dir)
    res.set_embedder(HashEmbedder())
    print(json.dumps({"found": counts(res, kb)}), flush=True)
    try:
        ingest(res, kb, sorted(corpus.iterdir()))
    except ResourceError as err:
        print(json.dumps({"refused": str(err)}), flush=True)
        return 3
    print(json.dumps({"done": counts(res, kb)}), flush=True)
    if len(sys.argv) > 4:
        print(json.dumps({"victim": sys.argv[4]}), flush=True)
        ingest(res, kb, sorted(Path(sys.argv[4]).iterdir()))
        print(json.dumps({"victim_done": counts(res, kb)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
