"""Classifier weights for the trained sufficiency judge: read, write and find them.

`save_classifier` / `load_classifier` read and write logistic-regression weights as JSON or as a
NumPy .npz file (never a pickle: `allow_pickle=False`); `resolve_weights` finds the file a judge
names (the data folder first, then the weights that ship in this package beside this module).
Used by the operator orchestration.classifier_judge and by `flowkit train-judge`.
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ResourceError

#: Where `flowkit train-judge` writes by default, relative to the data folder.
DEFAULT_WEIGHTS = "judges/sufficiency.json"
#: Weights trained by this project (from its own runs) that ship with flowkit.
PACKAGED_DIR = Path(__file__).resolve().parent


def resolve_weights(model_path: str, data_dir: str | Path | None) -> Path | None:
    """The weights file `model_path` names: an absolute or existing path as is; a relative one
    under the data folder, else the file of that name among flowkit's packaged weights (so a
    user's own training, written to the data folder, wins). None when none exists."""
    path = Path(model_path).expanduser()
    candidates = [path]
    if not path.is_absolute():
        if data_dir is not None:
            candidates.append(Path(data_dir) / path)
        candidates.append(PACKAGED_DIR / path.name)
    return next((c for c in candidates if c.is_file()), None)


@dataclass(frozen=True)
class Classifier:
    """Logistic-regression weights: p(sufficient) = sigmoid(w . x + b), sufficient at
    p >= threshold; `meta` names the embedder it was trained with and anything else saved."""

    w: np.ndarray
    b: float
    threshold: float = 0.5
    meta: dict[str, Any] = field(default_factory=dict)

    def probability(self, x: np.ndarray) -> float:
        z = float(np.dot(self.w, np.asarray(x, dtype=np.float64))) + self.b
        return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


def save_classifier(path: str | Path, w: Sequence[float] | np.ndarray, b: float,
                    threshold: float = 0.5, meta: Mapping[str, Any] | None = None) -> Path:
    """Write weights to `path`: .npz (arrays, meta as a JSON string) or JSON ({"w", "b",
    "threshold", "embedder", ...meta}). Returns the path."""
    path = Path(path)
    clf = _checked(np.asarray(w, dtype=np.float64), float(b), float(threshold), dict(meta or {}),
                   str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".npz":
        with path.open("wb") as f:
            np.savez(f, w=clf.w, b=np.float64(clf.b), threshold=np.float64(clf.threshold),
                     meta=np.str_(json.dumps(clf.meta)))
    elif path.suffix == ".json":
        data = {**clf.meta, "w": clf.w.tolist(), "b": clf.b, "threshold": clf.threshold}
        path.write_text(json.dumps(data))
    else:
        raise ResourceError(f"classifier file {path} must end in .json or .npz")
    return path


def load_classifier(path: str | Path) -> Classifier:
    """Read weights written by `save_classifier` (ResourceError naming the file when it is
    missing or malformed)."""
    path = Path(path)
    if not path.is_file():
        raise ResourceError(f"classifier file not found: {path}")
    try:
        if path.suffix == ".npz":
            with np.load(path, allow_pickle=False) as z:
                meta = json.loads(str(z["meta"])) if "meta" in z.files else {}
                return _checked(np.asarray(z["w"], dtype=np.float64), float(z["b"]),
                                float(z["threshold"]) if "threshold" in z.files else 0.5,
                                meta, str(path))
        if path.suffix == ".json":
            data = json.loads(path.read_text())
            if not isinstance(data, dict) or "w" not in data or "b" not in data:
                raise ValueError('expected {"w": [...], "b": number, "threshold": number}')
            meta = {k: v for k, v in data.items() if k not in ("w", "b", "threshold")}
            return _checked(np.asarray(data["w"], dtype=np.float64), float(data["b"]),
                            float(data.get("threshold", 0.5)), meta, str(path))
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ResourceError(f"cannot read classifier file {path}: {err}") from err
    raise ResourceError(f"classifier file {path} must end in .json or .npz")


def _checked(w: np.ndarray, b: float, threshold: float, meta: dict[str, Any],
             where: str) -> Classifier:
    if w.ndim != 1 or w.size == 0 or not np.all(np.isfinite(w)) or not math.isfinite(b):
        raise ResourceError(f"classifier {where}: w must be a non-empty list of finite numbers "
                            "and b a finite number")
    if not 0.0 <= threshold <= 1.0:
        raise ResourceError(f"classifier {where}: threshold must be in [0, 1]; got {threshold}")
    return Classifier(w=w, b=b, threshold=threshold, meta=meta)
