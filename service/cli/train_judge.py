"""`flowkit train-judge`: train the early-stop chain's sufficiency classifier from our own runs.

    flowkit train-judge --dataset hotpotqa_dev_500_ircotfmt --kb hotpot [--skip 100] [--limit 60]
                        [--train-frac 0.7] [--match acc|em] [--out judges/sufficiency.json]

The fixed-length chain (template corag_fixed, or --flow) runs on each question; every prefix of
its chain is labelled by whether a final answer written from it matches the gold answer; a
logistic regression over the embedder's vectors is trained on part of the questions and scored
on the rest. The weights go to JSON; the classifier judge reads them (params.model_path).
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from flowkit.errors import FlowkitError
from service.evaluations import eval_repo

from . import common

DEFAULT_OUT = "judges/sufficiency.json"


def cmd_train_judge(args: argparse.Namespace) -> int:
    from flowkit.eval.datasets import resolve
    from flowkit.eval.metrics import accuracy, exact_match
    from flowkit.eval.runner import resolve_flows
    from flowkit.eval.train_judge import train_judge

    if not args.examples and not args.kb:
        raise FlowkitError("train-judge needs --kb (the knowledge base the chains retrieve "
                           "from), or --examples FILE to refit without running anything")
    if not 0.0 < args.train_frac < 1.0:
        raise FlowkitError(f"--train-frac must be between 0 and 1; got {args.train_frac}")
    if args.skip < 0:
        raise FlowkitError(f"--skip must be 0 or more; got {args.skip}")
    if args.limit is not None and args.limit < 2:
        raise FlowkitError(f"--limit must be at least 2 (some to train on, some to test); "
                           f"got {args.limit}")
    ws = common.open_workspace(args)
    if args.examples:
        return _refit(ws, args, common.out)
    repo = eval_repo(ws)
    ds = resolve(repo, args.dataset)
    if args.ingest:
        common.ingest_corpus(ws, ds, args.kb)
    try:
        ws.resources.kb(args.kb).require_ready()
    except FlowkitError as e:
        raise FlowkitError(f"{e} (or add --ingest to ingest the dataset's corpus)") from e
    questions = [q for q in ds.questions if q.get("answers")]
    questions = questions[args.skip:]
    if args.limit:
        questions = questions[: args.limit]
    if len(questions) < 2:
        raise FlowkitError(f"dataset '{ds.name}' has fewer than 2 questions with gold answers")
    flow = resolve_flows(ws, [args.flow])[0]
    spec = flow.spec
    match = exact_match if args.match == "em" else accuracy
    out_path = _out_path(ws, args.out)
    with common.progress_bar("train-judge") as prog:
        task = prog.add_task(f"chains of '{spec.name}' on {len(questions)} questions",
                             total=len(questions))
        report = train_judge(ws, spec, questions, args.kb, str(out_path),
                             lambda pred, golds: bool(match(pred, golds)),
                             train_frac=args.train_frac, seed=args.seed,
                             progress=lambda d, t: prog.update(task, completed=d, total=t),
                             reuse_runs=not args.fresh)
    _print(report, common.out)
    common.err.print(common.styled("[dim]select it in the classifier judge: params.model_path = "
                                   "{}[/dim]", out_path))
    return 0


def _out_path(ws: Any, out: str) -> Path:
    path = Path(out).expanduser()
    return path if path.is_absolute() else ws.data_dir / path


def _refit(ws: Any, args: argparse.Namespace, out: Any) -> int:
    from flowkit.eval.train_judge import refit
    src = Path(args.examples).expanduser()
    if not src.is_file():
        raise FlowkitError(f"--examples: no file {src}")
    try:
        report = refit(ws, src, str(_out_path(ws, args.out)))
    except ValueError as err:
        raise FlowkitError(f"--examples: {err}") from err
    _print(report, out)
    return 0


def _print(report: dict[str, Any], out: Any) -> None:
    out.print(f"examples: {report['train_examples']} train ({report['train_positive']} sufficient), "
              f"{report['test_examples']} held out")
    cv = ", ".join(f"{k}: {v:.3f}" for k, v in report["cv"].items())
    out.print(f"L2 {report['l2']} picked by grouped cross-validation (balanced accuracy {cv})")
    out.print(f"train accuracy: {report['train_accuracy']:.3f}")
    if "test_accuracy" in report:
        out.print(f"held-out accuracy: {report['test_accuracy']:.3f}, balanced "
                  f"{report['test_balanced_accuracy']:.3f} (majority-class baseline "
                  f"{report['majority_baseline']:.3f}; {report['test_positive']} of "
                  f"{report['test_examples']} sufficient)")
    else:
        out.print("held-out accuracy: no held-out examples (use more questions)")
    for split in ("train", "test"):
        sim = report.get(f"{split}_stop")
        if sim:
            name = "training (out-of-fold)" if split == "train" else "held-out"
            out.print(f"early stop at p >= {report['stop_threshold']:.3f} replayed on the "
                      f"{name} chains: mean length {sim['chain_length']:.2f} of "
                      f"{sim['full_chain_length']:.2f}, right {sim['accuracy']:.3f} vs "
                      f"{sim['full_accuracy']:.3f} for the full chain")
    out.print(f"wrote {report['path']} (examples: {report['examples_path']})")


def register(sub: argparse._SubParsersAction) -> None:
    """Add the train-judge subcommand."""
    s = sub.add_parser("train-judge", help="train the sufficiency classifier of the early-stop "
                       "chain from runs on a question set")
    s.add_argument("--dataset", default="hotpotqa_dev_500_ircotfmt",
                   help="a question set (folder, .jsonl, .csv, a set in ../shared/data, or an "
                   "imported dataset's name)")
    s.add_argument("--kb", default="", help="the knowledge base the chains retrieve from")
    s.add_argument("--flow", default="corag_fixed", help="the fixed-length chain to run")
    s.add_argument("--limit", type=int, default=60, help="questions to use (train + held out)")
    s.add_argument("--skip", type=int, default=0, help="leave out the first N questions (keep "
                   "them for evaluation, e.g. --skip 100 when `flowkit eval --limit 100`)")
    s.add_argument("--train-frac", type=float, default=0.7, help="share of questions to train on")
    s.add_argument("--match", choices=["acc", "em"], default="acc",
                   help="a prefix is Sufficient when its answer contains (acc) or equals (em) a "
                   "gold answer")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--out", default=DEFAULT_OUT, help="weights file (.json or .npz); relative "
                   "to the data folder")
    s.add_argument("--ingest", action="store_true",
                   help="ingest the dataset's corpus.jsonl into --kb first if it is empty")
    s.add_argument("--examples", help="refit from an examples file that an earlier training "
                   "wrote (<out>.examples.jsonl): no runs, no LLM calls")
    s.add_argument("--fresh", action="store_true", help="run every chain again instead of "
                   "reusing the chains an earlier train-judge stored for the same questions")
    s.set_defaults(fn=cmd_train_judge)
