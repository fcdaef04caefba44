"""A BM25 index over a knowledge base's chunks (bm25s), persisted beside Chroma."""
from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path
from typing import Any

import numpy as np

#: Marker file of an index whose chunks hold no word at all (bm25s cannot index an empty vocabulary).
_NO_WORDS = "no-words"


class BM25Index:
    """Lexical retrieval. `build` replaces the index; `search` returns (chunk id, score) pairs."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._retriever: Any = None
        self._ids: list[str] = []
        self._lock = threading.Lock()

    @property
    def exists(self) -> bool:
        return (self.directory / "ids.json").is_file()

    def count(self) -> int:
        """How many chunks the saved index holds (0 when there is none)."""
        if not self.exists:
            return 0
        return len(json.loads((self.directory / "ids.json").read_text()))

    def build(self, ids: list[str], texts: list[str]) -> None:
        import bm25s
        retriever = bm25s.BM25()
        tokens = bm25s.tokenize(texts, stopwords="en", show_progress=False) if texts else None
        indexed = bool(tokens is not None and tokens.vocab)   # texts without a single word: none
        if indexed:
            retriever.index(tokens, show_progress=False)
        tmp = self.directory.with_name(self.directory.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        if indexed:
            retriever.save(str(tmp))
        else:
            (tmp / _NO_WORDS).write_text("")
        (tmp / "ids.json").write_text(json.dumps(ids))
        with self._lock:
            shutil.rmtree(self.directory, ignore_errors=True)
            tmp.replace(self.directory)
            self._retriever, self._ids = (retriever if indexed else None), list(ids)

    def _load(self) -> None:
        if self._retriever is None and self.exists and not (self.directory / _NO_WORDS).exists():
            import bm25s
            self._ids = json.loads((self.directory / "ids.json").read_text())
            if self._ids:
                self._retriever = bm25s.BM25.load(str(self.directory))

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        import bm25s
        with self._lock:
            self._load()
            if self._retriever is None or not self._ids:
                return []
            tokens = bm25s.tokenize([query], stopwords="en", show_progress=False)
            if not tokens.vocab:
                return []
            k = min(k, len(self._ids))
            docs, scores = self._retriever.retrieve(tokens, k=k, show_progress=False)
        out = []
        for idx, score in zip(np.asarray(docs)[0], np.asarray(scores)[0]):
            if float(score) > 0:
                out.append((self._ids[int(idx)], float(score)))
        return out
