"""A trained sufficiency judge: logistic regression over the embedding of "question || chain".

The weights' I/O lives in flowkit.judges.classifier, the feature text in flowkit.judges.features.
"""
from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import Field

from ...context import RunContext
from ...contract import Operator, OperatorParams, operator
from ...errors import OperatorInputError, ResourceError
from ...judges.classifier import (
    DEFAULT_WEIGHTS,
    PACKAGED_DIR,
    Classifier,
    load_classifier,
    resolve_weights,
)
from ...judges.features import chain_items, judge_text
from ...memory import MemoryView


@operator("orchestration.classifier_judge")
class ClassifierJudge(Operator["ClassifierJudge.Params"]):
    """A trained sufficiency classifier decides when a retrieval chain has enough.

    The text "question || chain so far" (sub-questions with their sub-answers from `history`,
    else the drafts) is embedded and scored by logistic regression, p = sigmoid(w . x + b);
    'done' (Sufficient) when p >= threshold, else 'continue'. The chain always stops at
    `max_chain` steps. mode "never" never judges the chain sufficient: the fixed-length baseline
    that runs exactly `max_chain` steps (as CoRAG's fixed chain length, Wang et al. 2025).
    Weights come from a .json or .npz file (`flowkit train-judge`); a relative path is read under
    the data folder."""

    class Params(OperatorParams):
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

    def classifier(self, ctx: RunContext) -> Classifier:
        if not self.params.model_path.strip():
            raise OperatorInputError("params.model_path", "no weights file given; train one with "
                                     "`flowkit train-judge` or set mode to 'never'")
        data_dir = ctx.data_dir
        path = resolve_weights(self.params.model_path, data_dir)
        if path is None:
            raise OperatorInputError("params.model_path", f"classifier file not found: "
                                     f"{self.params.model_path} (looked in the data folder "
                                     f"{data_dir} and in {PACKAGED_DIR})")
        try:
            return load_classifier(path)
        except ResourceError as err:
            raise OperatorInputError("params.model_path", str(err)) from err

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
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
        trained_with, running = clf.meta.get("embedder"), ctx.embedder.model_id
        if trained_with and running and str(trained_with) != str(running):
            judgement["warning"] = f"trained with embedder {trained_with}, running with {running}"
        return {"route": route, "judgement": judgement}
