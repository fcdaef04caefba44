"""Chroma as the dense store: a persistent client in the data directory, or a Chroma server.

We compute the embeddings ourselves (Chroma's default embedding function would download a model)
and keep telemetry off. One process owns a persist directory.
"""
from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ResourceError

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")


def collection_name(kb: str, views: bool = False) -> str:
    """kb_<name> holds a knowledge base's chunks; kv_<name> the embedded views of its chunks
    (flowkit.runtime.kb_views). No knowledge base name makes one collection's name the other's."""
    return f"kv_{kb}" if views else f"kb_{kb}"


class ChromaStore:
    """Collections named kb_<name> (and kv_<name> for views), cosine space, our own vectors.
    `views=True` addresses a knowledge base's views instead of its chunks."""

    def __init__(self, path: Path | None = None, host: str = "", port: int = 8000) -> None:
        self.path, self.host, self.port = path, host, port
        self._client: Any = None
        self._lock = threading.Lock()

    def client(self) -> Any:
        with self._lock:
            if self._client is None:
                import chromadb
                from chromadb.config import Settings
                settings = Settings(anonymized_telemetry=False, allow_reset=False)
                try:
                    if self.host:
                        self._client = chromadb.HttpClient(host=self.host, port=self.port,
                                                           settings=settings)
                    else:
                        if self.path is None:
                            raise ResourceError("an embedded Chroma needs a folder")
                        self.path.mkdir(parents=True, exist_ok=True)
                        # two processes creating the same folder's database at once race inside
                        # chromadb ('RustBindingsAPI' has no 'bindings'): open one at a time
                        with open(self.path / ".open.lock", "a+") as lock:
                            fcntl.flock(lock, fcntl.LOCK_EX)
                            try:
                                self._client = chromadb.PersistentClient(path=str(self.path),
                                                                         settings=settings)
                            finally:
                                fcntl.flock(lock, fcntl.LOCK_UN)
                except ResourceError:
                    raise
                except Exception as err:  # chromadb raises many kinds; report the place
                    where = f"{self.host}:{self.port}" if self.host else str(self.path)
                    raise ResourceError(f"cannot open Chroma at {where}: {err}") from err
            return self._client

    def collection(self, kb: str, create: bool = False, views: bool = False) -> Any:
        client = self.client()
        name = collection_name(kb, views)
        if create:
            return client.get_or_create_collection(name, embedding_function=None,
                                                   metadata={"hnsw:space": "cosine"})
        try:
            return client.get_collection(name, embedding_function=None)
        except Exception as err:
            raise ResourceError(f"knowledge base '{kb}' has no dense index; ingest files first "
                                f"(flowkit ingest --kb {kb} FILE)") from err

    def drop(self, kb: str) -> None:
        """Delete the knowledge base's chunks and views."""
        for views in (False, True):
            try:
                self.client().delete_collection(collection_name(kb, views))
            except Exception:  # noqa: BLE001 - absent is fine
                pass

    def upsert(self, kb: str, ids: list[str], vectors: np.ndarray, texts: list[str],
               metas: list[dict[str, Any]], views: bool = False) -> None:
        col = self.collection(kb, create=True, views=views)
        col.upsert(ids=ids, embeddings=vectors.tolist(), documents=texts, metadatas=metas)

    def drop_views_of(self, kb: str, parents: list[str]) -> None:
        """Delete the views of these chunks (before their new views are stored)."""
        try:
            col = self.collection(kb, views=True)
        except ResourceError:
            return                                   # no views yet
        col.delete(where={"parent": {"$in": parents}})

    def has_views(self, kb: str) -> bool:
        try:
            return int(self.collection(kb, views=True).count()) > 0
        except ResourceError:
            return False

    def query(self, kb: str, vector: np.ndarray, k: int, where: dict[str, Any] | None = None,
              views: bool = False) -> list[tuple[str, float, str, dict[str, Any]]]:
        col = self.collection(kb, views=views)
        n = col.count()
        if n == 0:
            return []
        res = col.query(query_embeddings=[vector.tolist()], n_results=min(k, n), where=where or None,
                        include=["documents", "metadatas", "distances"])
        out = []
        for cid, dist, text, meta in zip(res["ids"][0], res["distances"][0], res["documents"][0],
                                         res["metadatas"][0]):
            out.append((cid, 1.0 - float(dist), text or "", dict(meta or {})))
        return out

    def get(self, kb: str, ids: list[str] | None = None, where: dict[str, Any] | None = None,
            limit: int | None = None, offset: int | None = None) -> list[tuple[str, str, dict]]:
        col = self.collection(kb)
        res = col.get(ids=ids, where=where or None, limit=limit, offset=offset,
                      include=["documents", "metadatas"])
        return [(i, t or "", dict(m or {})) for i, t, m in
                zip(res["ids"], res["documents"], res["metadatas"])]

    def count(self, kb: str) -> int:
        try:
            return int(self.collection(kb).count())
        except ResourceError:
            return 0
