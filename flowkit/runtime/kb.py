"""Named knowledge bases: chunks in Chroma (dense) and a BM25 index beside it, plus metadata.

A knowledge base lives under <data_dir>/kb/<name>/ (meta.json, bm25/, optional graph.json and an
attached SQLite file for text-to-SQL); its vectors live in the Chroma collection kb_<name>.
"""
from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import names
from ..errors import NotFoundError, ResourceError
from ..memory import Doc
from .bm25 import BM25Index
from .docfiles import read_documents  # noqa: F401  (re-exported: flowkit.ingest uses it)
from .embed import Embedder
from .kb_views import best_of, has_views, views_of
from .kblock import is_held, kb_write_lock
from .vectorstore import ChromaStore

#: A knowledge base that exists may have any name this allowed when it was made (the rule for
#: new ones is flowkit.names.RULE); matched whole, so a trailing newline never passes.
KB_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,62}")
INCOMPLETE = "incomplete"   # meta.json "state" while a change is under way (or was cut short)
COMPLETE = "complete"
#: KnowledgeBase.state of one whose last change was cut short (no process is changing it now).
INTERRUPTED = "interrupted"
#: KnowledgeBase.state while a process holds its write lock and changes it.
CHANGING = "changing"


@dataclass
class Chunk:
    """A unit of retrieval: text plus metadata (doc_id, title, position, source, user fields).

    `context` (optional) is what the embedder reads before the text, a contextual header such
    as "SQLite Datatypes > 3.1 Determination Of Column Affinity": a passage that says "the
    following rules" is found by what its section is about. It is not stored or shown; the text
    a reader model sees is `text` alone."""

    id: str
    text: str
    meta: dict[str, Any] = field(default_factory=dict)
    context: str = ""

    def embedded_text(self) -> str:
        """What the embedder reads: the context line, then the text."""
        return f"{self.context}\n{self.text}" if self.context else self.text


def check_name(name: str) -> str:
    """`name` when it may name a knowledge base that exists, else ResourceError stating the rule
    for names (a new knowledge base is held to that rule when its folder is made)."""
    if not isinstance(name, str) or KB_NAME.fullmatch(name) is None or ".." in name:
        why = names.name_problem(name) or names.RULE
        shown = name if isinstance(name, str) and name.isprintable() else ascii(name)[1:-1]
        raise ResourceError(f"knowledge base name '{shown[:80]}' is not allowed: {why}")
    return name


@dataclass(frozen=True)
class Bm25Built:
    """What a rebuilt BM25 index holds: the documents its chunks come from (distinct `doc_id`s:
    the whole knowledge base, not just the last files), its views and of them table rows."""

    documents: int
    views: int
    row_views: int


class KnowledgeBase:
    """Dense (Chroma) + lexical (BM25) search over one named set of chunks."""

    def __init__(self, name: str, root: Path, store: ChromaStore, embedder: Embedder) -> None:
        self.name = check_name(name)
        self.dir = root / name
        self.store = store
        self.embedder = embedder
        self.bm25 = BM25Index(self.dir / "bm25")
        self._lock = threading.Lock()
        self._changing = False

    # ---- metadata -------------------------------------------------------------------------
    @property
    def meta_path(self) -> Path:
        return self.dir / "meta.json"

    def meta(self) -> dict[str, Any]:
        if not self.meta_path.is_file():
            return {}
        return json.loads(self.meta_path.read_text())

    def require_name_for_new(self) -> None:
        """A knowledge base not made yet (no meta.json) must follow the rule for new names
        (flowkit.names.RULE); ResourceError stating it, before any folder is made."""
        if not self.meta_path.is_file():
            try:
                names.check_new_name(self.name, "knowledge base")
            except names.NameRuleError as e:
                raise ResourceError(str(e)) from None

    def update_meta(self, **values: Any) -> None:
        self.require_name_for_new()
        self.dir.mkdir(parents=True, exist_ok=True)
        data = {**self.meta(), **values}
        tmp = self.meta_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=2))
        tmp.replace(self.meta_path)

    @property
    def exists(self) -> bool:
        return self.meta_path.is_file()

    def count(self) -> int:
        return self.store.count(self.name)

    @property
    def incomplete(self) -> bool:
        """True while a change is under way, or after one was cut short (a re-ingest completes it)."""
        return self.meta().get("state") == INCOMPLETE

    @property
    def state(self) -> str:
        """COMPLETE, CHANGING (an ingest or drop is under way) or INTERRUPTED (one was cut short:
        ingest its files again to complete it): what every listing of knowledge bases shows."""
        if not self.incomplete:
            return COMPLETE
        return CHANGING if self._changing or is_held(self.dir) else INTERRUPTED

    def _require_complete(self) -> None:
        if self.incomplete:
            raise ResourceError(f"knowledge base '{self.name}' is incomplete: a change to it was "
                                "interrupted or is still running; ingest its files again "
                                f"('flowkit ingest --kb {self.name} FILE...') to complete it")

    @property
    def ready(self) -> bool:
        """Listed, complete and holding chunks: nothing to ingest. A knowledge base whose last
        change was cut short is not ready, though it may hold chunks."""
        return self.exists and not self.incomplete and self.count() > 0

    def require_ready(self) -> None:
        """Raise a clear error if the knowledge base is missing, incomplete or empty."""
        if not self.exists:
            raise NotFoundError(f"knowledge base '{self.name}' does not exist; create it with "
                                f"'flowkit ingest --kb {self.name} FILE...'")
        self._require_complete()
        if self.count() == 0:
            raise ResourceError(f"knowledge base '{self.name}' is empty; ingest files into it first")

    # ---- writing --------------------------------------------------------------------------
    @contextmanager
    def changing(self) -> Iterator[None]:
        """Hold the cross-process write lock for a change and mark it in meta.json: "incomplete"
        from the start (for a knowledge base already listed), "complete" with the chunk count at
        a successful end. A change that dies midway leaves it marked incomplete."""
        self.require_name_for_new()
        with kb_write_lock(self.dir, self.name):
            if self.exists:
                self.update_meta(state=INCOMPLETE)
            self._changing = True
            try:
                yield
            finally:
                self._changing = False
            if self.exists:
                self.update_meta(state=COMPLETE, chunks=self.count())

    def add(self, chunks: list[Chunk], batch: int = 128,
            progress: Callable[[int, int], None] | None = None) -> int:
        """Embed and store chunks in batches, then rebuild BM25. Returns how many were added."""
        if not chunks:
            raise ResourceError(f"nothing to ingest into '{self.name}': the files gave no text")
        with self._lock:
            done = 0
            for i in range(0, len(chunks), batch):
                part = chunks[i:i + batch]
                vecs = self.embedder.embed([c.embedded_text() for c in part])
                metas = [_clean_meta(c.meta) for c in part]
                self.store.upsert(self.name, [c.id for c in part], vecs, [c.text for c in part], metas)
                self._add_row_views(part, metas)
                done += len(part)
                if progress:
                    progress(done, len(chunks))
            built = self.rebuild_bm25()
            # meta.json is written last: a KB whose ingest failed midway is not listed
            self.update_meta(name=self.name, chunks=self.count(), documents=built.documents,
                             embedder=self.embedder.model_id, views=built.views,
                             row_views=built.row_views,
                             **({"state": INCOMPLETE} if self._changing else {}))
        return len(chunks)

    def _add_row_views(self, part: list[Chunk], metas: list[dict[str, Any]]) -> None:
        """Embed and store the table-row views of these chunks (kb_views), replacing any views
        they had: a later row of a long table lies past what the chunk's embedding read."""
        with_views = [c.id for c in part if has_views(c.meta)]
        if not with_views:
            return
        self.store.drop_views_of(self.name, with_views)
        by_id = {c.id: (c, m) for c, m in zip(part, metas)}
        rows = [v for v in views_of((c.id, c.text, c.meta) for c in part) if v.row]
        if rows:
            vecs = self.embedder.embed([by_id[v.parent][0].context + "\n" + v.text for v in rows])
            self.store.upsert(self.name, [v.id for v in rows], vecs, [v.text for v in rows],
                              [{**by_id[v.parent][1], "parent": v.parent} for v in rows],
                              views=True)

    def rebuild_bm25(self) -> Bm25Built:
        """Rebuild the BM25 index from every stored chunk and its views (kb_views), stemmed when
        the chunks have structure (bm25.py); returns what it holds."""
        rows = self.store.get(self.name)
        views = views_of((r[0], r[1], r[2]) for r in rows)
        meta = {r[0]: r[2] for r in rows}
        self.bm25.build([r[0] for r in rows] + [v.id for v in views],
                        [_bm25_text(r[1], r[2]) for r in rows]
                        + [_bm25_text(v.text, meta[v.parent]) for v in views],
                        {v.id: v.parent for v in views},
                        stem=any(has_views(r[2]) for r in rows))
        return Bm25Built(len({str((r[2] or {}).get("doc_id") or r[0]) for r in rows}),
                         len(views), sum(v.row for v in views))

    def drop(self) -> None:
        import shutil
        with kb_write_lock(self.dir, self.name):
            self.store.drop(self.name)
            shutil.rmtree(self.dir, ignore_errors=True)

    # ---- reading --------------------------------------------------------------------------
    def dense(self, query: str, k: int, where: dict[str, Any] | None = None) -> list[Doc]:
        """The k chunks nearest the query, each at the best of its own and its row views'
        similarity (a knowledge base without views: its chunks' alone)."""
        self._require_complete()
        vec = self.embedder.embed_one(query)
        hits = self.store.query(self.name, vec, k, where)
        views = self._row_view_hits(vec, k * 3, where)
        if not views:
            return [_doc(cid, text, meta, score) for cid, score, text, meta in hits]
        docs = {cid: (text, meta) for cid, _, text, meta in hits}
        ranked = sorted([(cid, score) for cid, score, _, _ in hits] + views, key=lambda h: -h[1])
        best = best_of(ranked, {}, k)
        missing = [c for c, _ in best if c not in docs]
        if missing:
            docs.update({cid: (text, meta) for cid, text, meta in
                         self.store.get(self.name, ids=missing)})
        return [_doc(cid, *docs[cid], score) for cid, score in best if cid in docs]

    def _row_view_hits(self, vec: Any, k: int,
                       where: dict[str, Any] | None) -> list[tuple[str, float]]:
        """(chunk id, similarity) of the k row views nearest `vec`; none for a knowledge base
        without them (made before views, or of fixed windows)."""
        if not self.meta().get("row_views"):
            return []
        try:
            found = self.store.query(self.name, vec, k, where, views=True)
        except ResourceError:                # ingested before views were embedded
            return []
        return [(str(meta.get("parent", vid)), score) for vid, score, _, meta in found]

    def lexical(self, query: str, k: int, where: dict[str, Any] | None = None) -> list[Doc]:
        self._require_complete()
        hits = self.bm25.search(query, k if not where else max(k * 5, 50))
        if not hits:
            return []
        scores = dict(hits)
        rows = self.store.get(self.name, ids=[h[0] for h in hits], where=where)
        docs = [_doc(cid, text, meta, scores[cid]) for cid, text, meta in rows]
        docs.sort(key=lambda d: -d["score"])
        return docs[:k]

    def chunks(self, limit: int = 50, offset: int = 0) -> list[Doc]:
        return [_doc(cid, text, meta, 0.0)
                for cid, text, meta in self.store.get(self.name, limit=limit, offset=offset)]

    def by_ids(self, ids: list[str]) -> list[Doc]:
        if not ids:
            return []
        return [_doc(cid, text, meta, 0.0) for cid, text, meta in self.store.get(self.name, ids=ids)]


def _bm25_text(text: str, meta: dict[str, Any]) -> str:
    title = meta.get("title") or ""
    return f"{title}\n{text}" if title else text


def _clean_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """Chroma takes str/int/float/bool values only."""
    out: dict[str, Any] = {}
    for k, v in meta.items():
        if isinstance(v, int) and not isinstance(v, bool) and not -2**63 <= v < 2**63:
            out[k] = str(v)                       # beyond SQLite's 64-bit integers
        elif isinstance(v, (str, int, float, bool)):
            out[k] = v
        elif v is not None:
            out[k] = json.dumps(v)
    return out


def _doc(cid: str, text: str, meta: dict[str, Any], score: float) -> Doc:
    return Doc(id=cid, text=text, title=str(meta.get("title", "")), score=round(float(score), 6),
               meta=meta)
