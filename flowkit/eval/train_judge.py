"""Train the sufficiency classifier of the early-stop chain from the product's own runs.

For each training question the fixed-length chain (the classifier replaced by "never sufficient")
runs to length L; for every prefix of its chain a final answer is written from that prefix (with
passages retrieved for the original question), and the prefix is labelled Sufficient when that
answer matches a gold answer, else Insufficient (the rejection-sampling construction of the
early-stop paper). Features are the embedder's vector of "question || chain prefix"; the model is a
class-balanced logistic regression trained with numpy and saved as JSON (never pickle).
"""
from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..context import RunContext
from ..operators.generation.answer import Answer
from ..operators.orchestration.classifier_judge import chain_items, judge_text, save_classifier


@dataclass
class Example:
    question_id: str
    text: str
    label: int
    prefix: int


def label_prefixes(ws: Any, spec: Any, q: dict[str, Any], kb: str, match: Callable[[str, list[str]], bool],
                   eval_id: str) -> list[Example]:
    """Run the fixed-length chain on one question and label each prefix of its chain."""
    result = ws.run(spec, q["question"], kb, eval_id=eval_id)
    chain = [h for h in result.memory.get("history") or [] if h.get("sub_question")]
    kbase = ws.resources.kb(kb)
    docs = kbase.dense(q["question"], 4)
    out = []
    for k in range(1, len(chain) + 1):
        memory = {"question": q["question"], "documents": docs, "history": chain[:k]}
        op = Answer("train_final", Answer.Params(use_history=True, top_n=4))
        ctx = RunContext(ws.resources, kb, "train_final", 1)
        answer = op.run(memory, ctx)["answer"]
        text = judge_text(q["question"], chain_items({"history": chain[:k]}))
        out.append(Example(str(q.get("id", q["question"])), text,
                           int(match(answer, list(q["answers"]))), k))
    return out


def train_logreg(x: np.ndarray, y: np.ndarray, l2: float = 1e-2, epochs: int = 400,
                 lr: float = 0.5) -> tuple[np.ndarray, float]:
    """Class-balanced logistic regression by full-batch gradient descent."""
    n, d = x.shape
    w, b = np.zeros(d), 0.0
    pos = max(1, int(y.sum()))
    neg = max(1, n - pos)
    weights = np.where(y == 1, n / (2 * pos), n / (2 * neg))
    for _ in range(epochs):
        p = 1 / (1 + np.exp(-(x @ w + b)))
        g = (p - y) * weights
        w -= lr * (x.T @ g / n + l2 * w)
        b -= lr * float(g.mean())
    return w, b


def predict(x: np.ndarray, w: np.ndarray, b: float) -> np.ndarray:
    return 1 / (1 + np.exp(-(x @ w + b)))


def train_judge(ws: Any, spec: Any, questions: list[dict[str, Any]], kb: str, out_path: str,
                match: Callable[[str, list[str]], bool], train_frac: float = 0.7, seed: int = 0,
                progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Build examples from runs, split by question, train, report held-out accuracy, save."""
    qs = list(questions)
    random.Random(seed).shuffle(qs)
    n_train = max(1, int(len(qs) * train_frac))
    eval_id = f"train-judge-{seed}"
    examples: dict[str, list[Example]] = {}
    for i, q in enumerate(qs, 1):
        examples[str(q.get("id", q["question"]))] = label_prefixes(ws, spec, q, kb, match, eval_id)
        if progress:
            progress(i, len(qs))
    train_ids = {str(q.get("id", q["question"])) for q in qs[:n_train]}
    train = [e for qid, ex in examples.items() if qid in train_ids for e in ex]
    test = [e for qid, ex in examples.items() if qid not in train_ids for e in ex]
    if not train:
        raise ValueError("no training examples: the chain produced no sub-questions")
    emb = ws.resources.embedder
    x_train = emb.embed([e.text for e in train]).astype(np.float64)
    y_train = np.array([e.label for e in train], dtype=np.float64)
    w, b = train_logreg(x_train, y_train)
    threshold = 0.5
    report: dict[str, Any] = {"train_examples": len(train), "test_examples": len(test),
                              "train_positive": int(y_train.sum()),
                              "train_accuracy": float(((predict(x_train, w, b) >= threshold)
                                                       == (y_train == 1)).mean())}
    if test:
        x_test = emb.embed([e.text for e in test]).astype(np.float64)
        y_test = np.array([e.label for e in test])
        pred = predict(x_test, w, b) >= threshold
        report.update(test_accuracy=float((pred == (y_test == 1)).mean()),
                      test_positive=int(y_test.sum()),
                      majority_baseline=float(max(y_test.mean(), 1 - y_test.mean())))
    save_classifier(out_path, w, b, threshold, {"embedder": ws.resources.embedder.model_id,
                                                "flow": spec.name, "kb": kb, **report})
    report["path"] = out_path
    return report
