"""Ingest files into a named knowledge base: read, chunk with an indexing operator, embed, index.

Which chunker, when none is named (`chunker_for`): the one a knowledge base was made with (files
added later are cut the same way), `indexing.chunk_fixed` for the sample knowledge base and for
dataset corpora (their passages are cut already, and their evaluation figures stay comparable),
and `DEFAULT_CHUNKER`, the structure-aware chunker, for any other new knowledge base.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from . import registry, sample_kb
from .documents.model import STRUCTURE_KEY
from .errors import DocumentError, FlowkitError, ResourceError
from .runtime.docfiles import read_documents

SAMPLE_DIR = sample_kb.DIR
SAMPLE_KB = "sample"
#: The chunker of a new knowledge base when none is named.
DEFAULT_CHUNKER = "indexing.chunk_structure"
#: The chunker of the sample knowledge base and of dataset corpora (see the module docstring).
CORPUS_CHUNKER = "indexing.chunk_fixed"


def make_chunker(key: str = DEFAULT_CHUNKER, params: dict[str, Any] | None = None) -> Any:
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


def chunker_for(kb: str, meta: dict[str, Any], chunker: str | None = None,
                params: dict[str, Any] | None = None) -> tuple[str, dict[str, Any] | None]:
    """(chunker key, params) for an ingest into `kb` whose meta.json holds `meta`: the named
    chunker, else the knowledge base's own (with its params unless params are given), else
    CORPUS_CHUNKER for the sample knowledge base, else DEFAULT_CHUNKER."""
    if chunker:
        return chunker, params
    if meta.get("chunker"):
        return str(meta["chunker"]), params if params is not None else meta.get("chunker_params")
    return (CORPUS_CHUNKER if kb == SAMPLE_KB else DEFAULT_CHUNKER), params


def ingest(resources: Any, kb: str, paths: Iterable[str | Path], chunker: str | None = None,
           params: dict[str, Any] | None = None,
           progress: Callable[[int, int], None] | None = None) -> int:
    """Read the files, chunk them, embed and index the chunks. Returns the number of chunks.
    `chunker` None: see `chunker_for`.

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
    base = resources.kb(kb)
    chunker, params = chunker_for(kb, base.meta() if hasattr(base, "meta") else {}, chunker, params)
    op = make_chunker(chunker, params)
    chunks = op.chunk(docs)
    for c in chunks:                  # the typed document is a chunker's input, never metadata
        c.meta.pop(STRUCTURE_KEY, None)
    plain = [{k: v for k, v in d.items() if k != STRUCTURE_KEY} for d in docs]
    ids: dict[str, Any] = {}
    for c in chunks:
        if c.id in ids:
            raise ResourceError(f"documents '{c.meta.get('doc_id')}' and "
                                f"'{ids[c.id].meta.get('doc_id')}' give the same chunk id "
                                f"'{c.id}'; rename one of them")
        ids[c.id] = c
    with base.changing():   # cross-process lock; meta "incomplete" until the end
        n = base.add(chunks, progress=progress)
        # (add() counted the documents of the whole knowledge base, old files included)
        base.update_meta(chunker=chunker, chunker_params=op.params.model_dump(mode="json"))
        if hasattr(op, "after_ingest"):
            op.after_ingest(base, resources, plain)
    return n


def ingest_unless_ready(resources: Any, kb: str, paths: Iterable[str | Path], *,
                       force: bool = False, chunker: str = CORPUS_CHUNKER,
                       progress: Callable[[int, int], None] | None = None) -> int:
    """Ingest a corpus (the sample's, a dataset's) unless the knowledge base is ready (listed,
    complete, with chunks), cut by `chunker` (CORPUS_CHUNKER: the figures measured on it stay
    comparable). Returns the chunks ingested, 0 when it was ready. A knowledge base left
    incomplete by a crash or kill is ingested again, which completes it (chunk ids are stable:
    no duplicates)."""
    if resources.kb(kb).ready and not force:
        return 0
    return ingest(resources, kb, paths, chunker, progress=progress)


def ensure_sample(resources: Any, progress: Callable[[int, int], None] | None = None) -> bool:
    """Ingest the sample knowledge base if it is not ready yet. True when it ingested."""
    base = resources.kb(SAMPLE_KB)
    if not ingest_unless_ready(resources, SAMPLE_KB, [SAMPLE_DIR / "articles.jsonl"],
                               progress=progress):
        return False
    base.update_meta(description="Sample: the fictional Halvard Archipelago (flowkit/sample_kb)")
    return True
