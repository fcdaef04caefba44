"""A trained sufficiency judge: logistic regression over the embedding of "question || chain".

`save_classifier` / `load_classifier` read and write the weights as JSON or as a NumPy .npz file
(never a pickle: `allow_pickle=False`); `judge_text` is the feature text, shared with training.
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field

from ...errors import OperatorInputError, ResourceError
from ...registry import Operator, Params, operator


#: Where `flowkit train-judge` writes by default, relative to the data folder.
DEFAULT_WEIGHTS = "judges/sufficiency.json"
#: Weights trained by this project (from its own runs) that ship with flowkit.
PACKAGED_DIR = Path(__file__).resolve().parents[2] / "judges"


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


def chain_items(memory: Mapping[str, Any]) -> list[str]:
    """The reasoning chain so far: the history's sub-question/sub-answer pairs, else the drafts."""
    pairs = [f"{h.get('sub_question', '')} {h.get('sub_answer', '')}".strip()
             for h in memory.get("history") or [] if h.get("sub_question") or h.get("sub_answer")]
    return pairs or [d for d in memory.get("drafts") or [] if d]


def judge_text(question: str, chain: Sequence[str]) -> str:
    """The classifier's input text: 'question || step 1 || step 2 ...'."""
    return " || ".join([question, *chain])


@operator("orchestration.classifier_judge")
class ClassifierJudge(Operator):
    """A trained sufficiency classifier decides when a retrieval chain has enough.

    The text "question || chain so far" (sub-questions with their sub-answers from `history`,
    else the drafts) is embedded and scored by logistic regression, p = sigmoid(w . x + b);
    'done' (Sufficient) when p >= threshold, else 'continue'. The chain always stops at
    `max_chain` steps. mode "never" never judges the chain sufficient: the fixed-length baseline
    that runs exactly `max_chain` steps (as CoRAG's fixed chain length, Wang et al. 2025).
    Weights come from a .json or .npz file (`flowkit train-judge`); a relative path is read under
    the data folder."""

    class Params(Params):
        model_path: str = Field(DEFAULT_WEIGHTS, max_length=1000, description="Weights file "
                                "(.json or .npz) with w, b, threshold; a relative path is read "
                                "under the data folder, else among the weights that ship with "
                                "flowkit")
        mode: Literal["classifier", "never"] = Field("classifier", description="Use the "
                                                     "classifier, or never stop early")
        max_chain: int = Field(4, ge=1, le=100, description="'done' once the chain has this many "
                               "steps")
        threshold: float | None = Field(None, ge=0.0, le=1.0, description="Override the file's "
                                        "decision threshold (None: use the file's)")

    kind = "judge"
    routes = ("continue", "done")
    reads = ("question",)
    optional_reads = ("history", "drafts")
    writes = ("route", "judgement")

    def classifier(self, ctx: Any) -> Classifier:
        if not self.params.model_path.strip():
            raise OperatorInputError("params.model_path", "no weights file given; train one with "
                                     "`flowkit train-judge` or set mode to 'never'")
        data_dir = getattr(ctx.resources, "data_dir", None)
        path = resolve_weights(self.params.model_path, data_dir)
        if path is None:
            raise OperatorInputError("params.model_path", f"classifier file not found: "
                                     f"{self.params.model_path} (looked in the data folder "
                                     f"{data_dir} and in {PACKAGED_DIR})")
        try:
            return load_classifier(path)
        except ResourceError as err:
            raise OperatorInputError("params.model_path", str(err)) from err

    def run(self, memory: Mapping[str, Any], ctx: Any) -> dict[str, Any]:
        p = self.params
        chain = chain_items(memory)
        length = len(chain)
        base: dict[str, Any] = {"by": self.node_id, "chain_length": length, "mode": p.mode}
        if length >= p.max_chain:
            return {"route": "done", "judgement": {
                **base, "verdict": "done", "reason": f"chain length {length} >= {p.max_chain}"}}
        if p.mode == "never":
            return {"route": "continue", "judgement": {**base, "verdict": "continue",
                                                       "reason": "fixed-length chain"}}
        clf = self.classifier(ctx)
        x = np.asarray(ctx.embedder.embed([judge_text(memory["question"], chain)])[0])
        if x.shape[0] != clf.w.shape[0]:
            raise OperatorInputError("params.model_path", f"the weights have {clf.w.shape[0]} "
                                     f"features but the embedder gives {x.shape[0]}; they were "
                                     f"trained with embedder {clf.meta.get('embedder', '?')}")
        prob = clf.probability(x)
        threshold = clf.threshold if p.threshold is None else p.threshold
        route = "done" if prob >= threshold else "continue"
        judgement = {**base, "verdict": route, "score": round(prob, 4), "threshold": threshold,
                     "label": "Sufficient" if route == "done" else "Insufficient",
                     "reason": f"p(sufficient) {prob:.3f} vs {threshold}"}
        trained_with, running = clf.meta.get("embedder"), getattr(ctx.embedder, "model_id", None)
        if trained_with and running and str(trained_with) != str(running):
            judgement["warning"] = f"trained with embedder {trained_with}, running with {running}"
        return {"route": route, "judgement": judgement}
