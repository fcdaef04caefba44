"""Train the sufficiency classifier of the early-stop chain from the product's own runs.

For each training question the fixed-length chain (the classifier replaced by "never sufficient")
runs to length L; for every prefix of its chain a final answer is written from that prefix by the
flow's own final steps (those after the judge's 'done' edge: in corag_fixed a hybrid search with
the original question, then the answer), and the prefix is labelled Sufficient when that
answer matches a gold answer, else Insufficient (the rejection-sampling construction of the
early-stop paper). Features are the embedder's vector of "question || chain prefix"; the model is a
class-balanced logistic regression trained with numpy, its L2 strength picked by cross-validation
grouped by question, and saved as JSON (never pickle). The decision threshold is picked on the
training questions by replaying early stopping on their chains with out-of-fold probabilities: the
one that stops soonest while the simulated accuracy stays within `max_drop` of the full chain's. The labelled examples are written beside
the weights (`<out>.examples.jsonl`) so a model can be refitted without running anything again.
"""
from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import registry
from ..context import RunContext
from ..errors import FlowkitError, SpecError
from ..jsonread import parse
from ..judges import chain_items, judge_text, save_classifier
from ..run_request import RunRequest
from ..spec import FlowSpec, NodeSpec

#: L2 strengths tried by cross-validation.
L2_GRID = (1e-3, 1e-2, 1e-1, 1.0, 10.0)
#: How much simulated accuracy (share of questions) the picked threshold may give up against
#: always running the full chain.
MAX_DROP = 0.02
#: Longest string in one line of an examples file (a chain's text; the bound stops hostile input).
MAX_EXAMPLE_CHARS = 1_000_000


@dataclass
class Example:
    question_id: str
    text: str
    label: int
    prefix: int


def _qid(q: dict[str, Any]) -> str:
    return str(q.get("id", q["question"]))


def chain_of(ws: Any, spec: Any, q: dict[str, Any], kb: str, eval_id: str,
             reuse: bool) -> list[dict[str, Any]]:
    """The chain (history entries with a sub-question) of the fixed-length flow on one question:
    from a run stored under `eval_id` when `reuse` and one exists, else from a new run."""
    memory = None
    if reuse:
        found = ws.store.find_eval_run(eval_id, spec.name, q["question"])
        memory = found.memory if found is not None else None
    if memory is None:
        memory = ws.run(spec, RunRequest(q["question"], kb=kb, eval_id=eval_id)).memory
    return [h for h in memory.get("history") or [] if h.get("sub_question")]


def final_steps(spec: FlowSpec) -> list[NodeSpec]:
    """The nodes the flow runs once its judge says 'done': from that edge to the end, in order.
    Each prefix is labelled by the answer these very steps write (the flow's own final retrieval
    and answer, with their params), so the labels say what stopping there would really give."""
    judges = {n.id for n in spec.nodes
              if (cls := registry.get(n.operator)) is not None and cls.kind == "judge"}
    done = [e for e in spec.edges if e.source in judges and e.label == "done"]
    if len(done) != 1:
        raise FlowkitError(f"flow '{spec.name}': train-judge needs exactly one judge 'done' edge "
                           f"(found {len(done)})")
    steps: list[NodeSpec] = []
    nid: str | None = done[0].target
    while nid is not None:
        if any(s.id == nid for s in steps):
            raise FlowkitError(f"flow '{spec.name}': the steps after 'done' loop back to '{nid}'")
        steps.append(spec.node(nid))
        outs = [e.target for e in spec.edges if e.source == nid]
        if len(outs) > 1:
            raise FlowkitError(f"flow '{spec.name}': the steps after 'done' branch at '{nid}'")
        nid = outs[0] if outs else None
    last = registry.get(steps[-1].operator)
    if last is None or "answer" not in last.writes:
        raise FlowkitError(f"flow '{spec.name}': the last step after 'done' ('{steps[-1].id}') "
                           "does not write an answer")
    return steps


def label_prefixes(ws: Any, steps: list[NodeSpec], chain: list[dict[str, Any]],
                   q: dict[str, Any], kb: str,
                   match: Callable[[str, list[str]], bool]) -> list[Example]:
    """Label each prefix of one question's chain by whether the answer the flow's final steps
    (`final_steps`) write from it matches gold."""
    ops = []
    for node in steps:
        cls = registry.get(node.operator)
        if cls is None:
            raise FlowkitError(f"unknown operator '{node.operator}' in node '{node.id}'")
        ops.append((node.id, cls(node.id, cls.Params.model_validate(node.params))))
    out = []
    for k in range(1, len(chain) + 1):
        memory: dict[str, Any] = {"question": q["question"], "history": chain[:k]}
        for node_id, op in ops:
            memory.update(op.run(memory, RunContext(ws.resources, kb, node_id, 1)))
        answer = str(memory.get("answer") or "")
        text = judge_text(q["question"], chain_items({"history": chain[:k]}))
        out.append(Example(_qid(q), text, int(match(answer, list(q["answers"]))), k))
    return out


def train_logreg(x: np.ndarray, y: np.ndarray, l2: float = 1e-2,
                 iters: int = 30) -> tuple[np.ndarray, float]:
    """Class-balanced, L2-regularised logistic regression fitted by Newton's method (stable for
    any penalty; the bias is not penalised). Minimises mean weighted log-loss + l2/2 |w|^2."""
    n, d = x.shape
    xb = np.hstack([x, np.ones((n, 1))])
    pos = max(1, int(y.sum()))
    neg = max(1, n - pos)
    sw = np.where(y == 1, n / (2 * pos), n / (2 * neg))
    penalty = np.full(d + 1, l2)
    penalty[-1] = 0.0
    theta = np.zeros(d + 1)
    for _ in range(iters):
        p = 1 / (1 + np.exp(-np.clip(xb @ theta, -60.0, 60.0)))
        grad = xb.T @ (sw * (p - y)) / n + penalty * theta
        hess = (xb * (sw * p * (1 - p))[:, None]).T @ xb / n + np.diag(penalty + 1e-9)
        step = np.linalg.solve(hess, grad)
        theta -= step
        if float(np.abs(step).max()) < 1e-8:
            break
    return theta[:-1], float(theta[-1])


def predict(x: np.ndarray, w: np.ndarray, b: float) -> np.ndarray:
    """p(sufficient) per row (the logit clipped so exp cannot overflow)."""
    return 1 / (1 + np.exp(-np.clip(x @ w + b, -60.0, 60.0)))


def balanced_accuracy(pred: np.ndarray, y: np.ndarray) -> float:
    """Mean of the accuracy on each class present (0.5 = chance, whatever the class balance)."""
    accs = [float((pred[y == c] == c).mean()) for c in (0, 1) if (y == c).any()]
    return float(np.mean(accs)) if accs else 0.0


def pick_l2(x: np.ndarray, y: np.ndarray, groups: Sequence[str], folds: int = 4,
            grid: Sequence[float] = L2_GRID) -> tuple[float, dict[str, float]]:
    """The L2 strength with the best balanced accuracy in cross-validation grouped by question
    (every prefix of a question falls in the same fold). Ties go to the stronger penalty."""
    ids = sorted(set(groups))
    if len(ids) < 2 or len(set(y.tolist())) < 2:
        return grid[-1], {}
    f = fold_ids(groups, folds)
    scores: dict[str, float] = {}
    for l2 in grid:
        accs = []
        for k in sorted(set(f.tolist())):
            tr, te = f != k, f == k
            if len(set(y[tr].tolist())) < 2:
                continue
            w, b = train_logreg(x[tr], y[tr], l2=l2)
            accs.append(balanced_accuracy((predict(x[te], w, b) >= 0.5).astype(int), y[te]))
        scores[str(l2)] = float(np.mean(accs)) if accs else 0.0
    best = max(grid, key=lambda l2: (round(scores[str(l2)], 6), l2))
    return best, scores


def fold_ids(groups: Sequence[str], folds: int = 4) -> np.ndarray:
    """The cross-validation fold of each row: every prefix of a question in the same fold."""
    ids = sorted(set(groups))
    fold_of = {g: i % max(1, min(folds, len(ids))) for i, g in enumerate(ids)}
    return np.array([fold_of[g] for g in groups])


def out_of_fold(x: np.ndarray, y: np.ndarray, groups: Sequence[str], l2: float,
                folds: int = 4) -> np.ndarray:
    """p(sufficient) of each row from a model fitted without that row's question (grouped folds);
    a fold whose training part holds one class only gets that class's share."""
    f = fold_ids(groups, folds)
    probs = np.zeros(len(y))
    for k in sorted(set(f.tolist())):
        tr, te = f != k, f == k
        if len(set(y[tr].tolist())) < 2:
            probs[te] = float(y[tr].mean()) if tr.any() else 0.5
            continue
        w, b = train_logreg(x[tr], y[tr], l2=l2)
        probs[te] = predict(x[te], w, b)
    return probs


def simulate(examples: Sequence[Example], probs: Sequence[float] | np.ndarray,
             threshold: float) -> dict[str, float]:
    """Replay early stopping on stored chains: each question stops at its first prefix whose
    p >= threshold (else at its last). Returns the share answered right where it stopped, the
    mean chain length, and the same two for always running the full chain."""
    by_q: dict[str, list[tuple[int, int, float]]] = {}
    for e, p in zip(examples, probs):
        by_q.setdefault(e.question_id, []).append((e.prefix, e.label, float(p)))
    right = length = full_right = full_length = 0.0
    for rows in by_q.values():
        rows.sort()
        stop = next((r for r in rows if r[2] >= threshold), rows[-1])
        right += stop[1]
        length += stop[0]
        full_right += rows[-1][1]
        full_length += rows[-1][0]
    n = max(1, len(by_q))
    return {"accuracy": right / n, "chain_length": length / n,
            "full_accuracy": full_right / n, "full_chain_length": full_length / n}


def pick_threshold(examples: Sequence[Example], probs: Sequence[float] | np.ndarray,
                   max_drop: float = MAX_DROP) -> tuple[float, dict[str, float]]:
    """The threshold whose simulated early stopping has the shortest mean chain while its
    accuracy stays within `max_drop` of the full chain's (ties: the higher threshold)."""
    grid = sorted({round(float(p), 4) for p in probs} | {0.5, 1.0})
    best, best_sim = 1.0, simulate(examples, probs, 1.0 + 1e-9)
    for t in grid:
        sim = simulate(examples, probs, t)
        if sim["accuracy"] < sim["full_accuracy"] - max_drop - 1e-12:
            continue
        if sim["chain_length"] < best_sim["chain_length"] - 1e-12 or \
                (abs(sim["chain_length"] - best_sim["chain_length"]) <= 1e-12 and t > best):
            best, best_sim = t, sim
    return best, best_sim


def examples_path(out_path: str | Path) -> Path:
    p = Path(out_path)
    return p.with_name(p.stem + ".examples.jsonl")


def fit(ws: Any, examples: dict[str, list[Example]], train_ids: set[str], out_path: str,
        meta: dict[str, Any]) -> dict[str, Any]:
    """Fit on the training questions' examples, score the rest, save weights and examples."""
    train = [e for qid, ex in examples.items() if qid in train_ids for e in ex]
    test = [e for qid, ex in examples.items() if qid not in train_ids for e in ex]
    if not train:
        raise ValueError("no training examples: the chain produced no sub-questions")
    emb = ws.resources.embedder
    x_train = emb.embed([e.text for e in train]).astype(np.float64)
    y_train = np.array([e.label for e in train], dtype=np.float64)
    groups = [e.question_id for e in train]
    l2, cv = pick_l2(x_train, y_train.astype(int), groups)
    w, b = train_logreg(x_train, y_train, l2=l2)
    threshold, sim_train = pick_threshold(
        train, out_of_fold(x_train, y_train, groups, l2) if len(set(groups)) > 1
        else predict(x_train, w, b))
    pred_train = (predict(x_train, w, b) >= threshold).astype(int)
    report: dict[str, Any] = {"train_examples": len(train), "test_examples": len(test),
                              "train_positive": int(y_train.sum()), "l2": l2, "cv": cv,
                              "stop_threshold": threshold, "train_stop": sim_train,
                              "train_accuracy": float((pred_train == y_train).mean())}
    if test:
        x_test = emb.embed([e.text for e in test]).astype(np.float64)
        y_test = np.array([e.label for e in test])
        p_test = predict(x_test, w, b)
        pred = (p_test >= threshold).astype(int)
        report.update(test_accuracy=float((pred == y_test).mean()),
                      test_balanced_accuracy=balanced_accuracy(pred, y_test),
                      test_positive=int(y_test.sum()),
                      majority_baseline=float(max(y_test.mean(), 1 - y_test.mean())),
                      test_stop=simulate(test, p_test, threshold))
    save_classifier(out_path, w, b, threshold, {"embedder": emb.model_id, **meta, **report})
    with examples_path(out_path).open("w", encoding="utf-8") as f:
        for qid, ex in examples.items():
            for e in ex:
                f.write(json.dumps({**asdict(e), "split": "train" if qid in train_ids
                                    else "test"}) + "\n")
    report["path"] = out_path
    report["examples_path"] = str(examples_path(out_path))
    return report


def read_examples(path: str | Path) -> tuple[dict[str, list[Example]], set[str]]:
    """Examples written by `fit` (one JSON object a line) and the ids of the training questions."""
    examples: dict[str, list[Example]] = {}
    train_ids: set[str] = set()
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = parse(line, f"{path}, line {n}", max_depth=4, max_string=MAX_EXAMPLE_CHARS)
            ex = Example(str(row["question_id"]), str(row["text"]), int(row["label"]),
                         int(row["prefix"]))
        except SpecError as err:    # deep nesting, NaN, a huge string: the reader's own message
            raise ValueError(f"{path}, line {n}: not an example ({err.detail})") from None
        except (ValueError, KeyError, TypeError) as err:
            raise ValueError(f"{path}, line {n}: not an example ({err})") from err
        examples.setdefault(ex.question_id, []).append(ex)
        if row.get("split", "train") == "train":
            train_ids.add(ex.question_id)
    if not examples:
        raise ValueError(f"{path}: no examples")
    return examples, train_ids


def refit(ws: Any, examples_file: str | Path, out_path: str) -> dict[str, Any]:
    """Fit again from a saved examples file (same split): no flow runs, no LLM calls."""
    examples, train_ids = read_examples(examples_file)
    return fit(ws, examples, train_ids, out_path, {"refit_from": str(examples_file)})


def train_judge(ws: Any, spec: Any, questions: list[dict[str, Any]], kb: str, out_path: str,
                match: Callable[[str, list[str]], bool], train_frac: float = 0.7, seed: int = 0,
                progress: Callable[[int, int], None] | None = None,
                reuse_runs: bool = True) -> dict[str, Any]:
    """Build examples from runs (reusing chains stored by an earlier training on the same
    questions when `reuse_runs`), split by question, fit, report held-out accuracy, save."""
    qs = list(questions)
    random.Random(seed).shuffle(qs)
    n_train = max(1, int(len(qs) * train_frac))
    eval_id = f"train-judge-{seed}"
    examples: dict[str, list[Example]] = {}
    steps = final_steps(spec)
    for i, q in enumerate(qs, 1):
        chain = chain_of(ws, spec, q, kb, eval_id, reuse_runs)
        examples[_qid(q)] = label_prefixes(ws, steps, chain, q, kb, match)
        if progress:
            progress(i, len(qs))
    train_ids = {_qid(q) for q in qs[:n_train]}
    return fit(ws, examples, train_ids, out_path, {"flow": spec.name, "kb": kb})
