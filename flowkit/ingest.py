"""Ingest files into a named knowledge base: read, chunk with an indexing operator, embed, index."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from . import registry, sample_kb
from .errors import DocumentError, FlowkitError, ResourceError
from .runtime.docfiles import read_documents

SAMPLE_DIR = sample_kb.DIR
SAMPLE_KB = "sample"


def make_chunker(key: str = "indexing.chunk_fixed", params: dict[str, Any] | None = None) -> Any:
    """An indexing operator instance that offers chunk(documents)."""
    cls = registry.get(key)
    if cls is None or not hasattr(cls, "chunk"):
        chunkers = [k for k, c in registry.all_operators().items() if hasattr(c, "chunk")]
        raise FlowkitError(f"'{key}' is not a chunking operator; use one of {', '.join(chunkers)}")
    from pydantic import ValidationError as PydanticValidationError
    try:
        return cls("ingest", cls.Params.model_validate(params or {}))
    except PydanticValidationError as err:
        raise FlowkitError(f"chunker {key}: {err.errors()[0]['msg']}") from None


def ingest(resources: Any, kb: str, paths: Iterable[str | Path], chunker: str = "indexing.chunk_fixed",
           params: dict[str, Any] | None = None,
           progress: Callable[[int, int], None] | None = None) -> int:
    """Read the files, chunk them, embed and index the chunks. Returns the number of chunks.

    All files are read and chunked before anything is written, so a bad file leaves the
    knowledge base as it was. The writing holds the knowledge base's cross-process lock (a second
    writer waits ~2 s, then ResourceError) and marks it "incomplete" in meta.json until it ends.
    """
    paths = list(paths)
    docs = read_documents(paths)
    if not docs:
        if not paths:
            raise ResourceError("no files to ingest")
        raise DocumentError(Path(paths[0]), "holds no text to ingest (empty or blank)"
                            if len(paths) == 1 else f"holds no text to ingest, and neither do the "
                            f"{len(paths) - 1} other file(s)")
    op = make_chunker(chunker, params)
    chunks = op.chunk(docs)
    ids: dict[str, Any] = {}
    for c in chunks:
        if c.id in ids:
            raise ResourceError(f"documents '{c.meta.get('doc_id')}' and "
                                f"'{ids[c.id].meta.get('doc_id')}' give the same chunk id "
                                f"'{c.id}'; rename one of them")
        ids[c.id] = c
    base = resources.kb(kb)
    with base.changing():   # cross-process lock; meta "incomplete" until the end
        n = base.add(chunks, progress=progress)
        # (add() counted the documents of the whole knowledge base, old files included)
        base.update_meta(chunker=chunker, chunker_params=op.params.model_dump(mode="json"))
        if hasattr(op, "after_ingest"):
            op.after_ingest(base, resources, docs)
    return n


def ingest_unless_ready(resources: Any, kb: str, paths: Iterable[str | Path], *,
                       force: bool = False,
                       progress: Callable[[int, int], None] | None = None) -> int:
    """Ingest the files unless the knowledge base is ready (listed, complete, with chunks).
    Returns the chunks ingested, 0 when it was ready. A knowledge base left incomplete by a
    crash or kill is ingested again, which completes it (chunk ids are stable: no duplicates)."""
    if resources.kb(kb).ready and not force:
        return 0
    return ingest(resources, kb, paths, progress=progress)


def ensure_sample(resources: Any, progress: Callable[[int, int], None] | None = None) -> bool:
    """Ingest the sample knowledge base if it is not ready yet. True when it ingested."""
    base = resources.kb(SAMPLE_KB)
    if not ingest_unless_ready(resources, SAMPLE_KB, [SAMPLE_DIR / "articles.jsonl"],
                               progress=progress):
        return False
    base.update_meta(description="Sample: the fictional Halvard Archipelago (flowkit/sample_kb)")
    return True
