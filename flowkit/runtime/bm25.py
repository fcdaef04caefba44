"""A BM25 index over a knowledge base's chunks (bm25s), persisted beside Chroma.

An index may be built with English stemming (Snowball, PyStemmer): "overwrites", "overwrite" and
"overwriting" are one word to it, so a question in its own words finds a manual's table header
("Overwrite if already exists?"). The index remembers whether it was stemmed (a `stemmer` file)
and reads queries the same way; an index built before, or without it, reads them as it always
did. `KnowledgeBase` stems the indexes of structure-aware knowledge bases (manuals); fixed-window
ones (the sample, datasets' corpora) are searched exactly as before.
"""
from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path
from typing import Any

import numpy as np

from .kb_views import best_of

#: File naming the stemmer an index was built with (absent: none).
_STEMMER = "stemmer"
#: The stemming language used when an index is stemmed.
STEM_LANGUAGE = "english"
#: Marker file of an index whose chunks hold no word at all (bm25s cannot index an empty vocabulary).
_NO_WORDS = "no-words"


#: hits read per chunk asked for when the index holds views (several views share one chunk)
_VIEW_READ = 10


class BM25Index:
    """Lexical retrieval. `build` replaces the index; `search` returns (chunk id, score) pairs.

    The index may also hold views of chunks (`flowkit.runtime.kb_views`): `build`'s `parents`
    maps a view's id to its chunk's, and `search` returns each chunk once, at its best hit."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._retriever: Any = None
        self._ids: list[str] = []
        self._parents: dict[str, str] = {}
        self._stemmer: Any = None
        self._lock = threading.Lock()

    @property
    def exists(self) -> bool:
        return (self.directory / "ids.json").is_file()

    def count(self) -> int:
        """How many chunks the saved index holds (0 when there is none; views not counted)."""
        if not self.exists:
            return 0
        parents = self.directory / "parents.json"
        views = len(json.loads(parents.read_text())) if parents.is_file() else 0
        return len(json.loads((self.directory / "ids.json").read_text())) - views

    @property
    def stemmed(self) -> bool:
        """Whether the saved index was built with stemming."""
        return (self.directory / _STEMMER).is_file()

    def build(self, ids: list[str], texts: list[str],
              parents: dict[str, str] | None = None, stem: bool = False) -> None:
        """Replace the index with `texts` under `ids` (views' `parents`), stemmed or not."""
        import bm25s
        retriever = bm25s.BM25()
        stemmer = _stemmer() if stem else None
        tokens = (bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
                  if texts else None)
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
        if stem:
            (tmp / _STEMMER).write_text(STEM_LANGUAGE)
        if parents:
            (tmp / "parents.json").write_text(json.dumps(parents))
        with self._lock:
            shutil.rmtree(self.directory, ignore_errors=True)
            tmp.replace(self.directory)
            self._retriever, self._ids = (retriever if indexed else None), list(ids)
            self._parents = dict(parents or {})
            self._stemmer = stemmer

    def _load(self) -> None:
        if self._retriever is None and self.exists and not (self.directory / _NO_WORDS).exists():
            import bm25s
            self._ids = json.loads((self.directory / "ids.json").read_text())
            parents = self.directory / "parents.json"
            self._parents = json.loads(parents.read_text()) if parents.is_file() else {}
            self._stemmer = _stemmer() if self.stemmed else None
            if self._ids:
                self._retriever = bm25s.BM25.load(str(self.directory))

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        import bm25s
        with self._lock:
            self._load()
            if self._retriever is None or not self._ids:
                return []
            tokens = bm25s.tokenize([query], stopwords="en", stemmer=self._stemmer,
                                    show_progress=False)
            if not tokens.vocab:
                return []
            wanted = k
            k = min(k * _VIEW_READ if self._parents else k, len(self._ids))
            docs, scores = self._retriever.retrieve(tokens, k=k, show_progress=False)
            parents = self._parents
        hits = [(self._ids[int(idx)], float(score))
                for idx, score in zip(np.asarray(docs)[0], np.asarray(scores)[0]) if float(score) > 0]
        return best_of(hits, parents, wanted) if parents else hits


def _stemmer() -> Any:
    import Stemmer
    return Stemmer.Stemmer(STEM_LANGUAGE)
