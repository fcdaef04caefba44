"""`flowkit judge` and `flowkit label`: graders on a stored evaluation, and people's labels.

    flowkit judge EVAL_ID --judge correctness,groundedness [--judge-model M] [--json]
    flowkit judge EVAL_ID --criterion "the answer names the command" [--criterion @FILE]
    flowkit judge EVAL_ID --judge correctness --spread 20   (verdicts asked again, reworded)
    flowkit judge EVAL_ID --pairwise A,B [--judge-model M] [--json]   (A's win rate over B)
    flowkit label EVAL_ID --pairwise A,B --question QID --value a|b|tie|clear
    flowkit label EVAL_ID --flow F --question QID --metric correctness --value 1|0|clear
    flowkit label EVAL_ID --question QID --passage DOC_ID --value 1|0|clear   (context relevance)
    flowkit label EVAL_ID --next [--flow F] [--metric M] [--count N]   (what to label next)
    flowkit eval ... --judge correctness [--judge-model M]   (grades after the runs)

A grader reads each finished run's stored trace (no flow call runs again); its calls go through
the completion cache and are counted apart from the flows' cost. Scores print as the PPI++ estimate
with its 95% interval and the judge's weight where answers are labelled, else as the raw grader
mean marked uncorrected.
(`flowkit train-judge` is another thing: it trains the sufficiency classifier a flow uses.)
"""
from __future__ import annotations

import argparse
import json
from dataclasses import replace

from rich.table import Table

from flowkit.errors import FlowkitError
from flowkit.eval.criteria import criterion, is_criterion
from flowkit.eval.graders import GRADERS, parse_graders

from . import common
from .label_next import cmd_next


def print_scores(ws: object, eval_id: str, graders: list[str], model: str,
                 as_json: bool = False, spreads: dict[str, tuple[int, int]] | None = None) -> None:
    """Each judge's table: per flow its score in % with the 95% interval (PPI++ where labelled,
    else uncorrected), the labels, what the judge was worth (its weight and the effective number
    of labels) and the paired difference against the baseline, then its reliability card (its
    agreement with your labels, in words); or the same as JSON."""
    from flowkit.eval.formatting import judge_interval, judge_weight_words
    from service.grading import scores
    reports = [scores(ws, eval_id, g, model) for g in graders]  # type: ignore[arg-type]
    for r in reports:                  # `--spread`: measured apart, shown on the card
        if r.card and r.grader in (spreads or {}):
            asked, changed = (spreads or {})[r.grader]
            r.card = replace(r.card, spread_asked=asked, spread_changed=changed)
    if as_json:
        common.out.print_json(json.dumps([r.to_dict() for r in reports]))
        return
    for r in reports:
        table = Table(title=f"judge '{r.grader}' on {r.model} (evaluation {r.eval_id})")
        for col in ("flow", "score [95%]", "kind", "labels", "judge weight", "vs baseline"):
            table.add_column(col, overflow="fold")
        for f in r.flows:
            vs = ("baseline" if f.flow == r.baseline else
                  judge_interval(f.vs_baseline, labelled=f.vs_corrected, difference=True))
            table.add_row(f.flow, judge_interval(f.estimate, labelled=f.corrected),
                          "PPI++" if f.corrected else "uncorrected", str(f.labels),
                          judge_weight_words(f.weight), vs)
        common.out.print(table)
        for line in r.card.lines() if r.card else []:
            common.out.print(line, soft_wrap=True)


def cmd_judge(args: argparse.Namespace) -> int:
    from service.grading import grade
    if args.pairwise:
        return cmd_pairwise(args)
    if not args.judge and not args.criterion:
        raise FlowkitError(f"--judge: name the judges ({', '.join(GRADERS)}), --criterion TEXT "
                           "for one of your own, or --pairwise A,B to compare two flows' answers")
    graders = parse_graders(args.judge) if args.judge else []
    criteria = list(dict.fromkeys(criterion(c) for c in args.criterion or []))
    ws = common.open_workspace(args)
    try:
        with common.progress_bar("judge") as prog:
            task = prog.add_task("graded", total=None)
            out = grade(ws, args.eval_id, graders, model=args.judge_model, criteria=criteria,
                        on_progress=lambda i, n: prog.update(task, completed=i, total=n))
        common.err.print(out.line())
        spreads = None
        if args.spread:
            from service.grading import spread
            spreads = spread(ws, args.eval_id, graders, model=args.judge_model,
                             criteria=criteria, sample=args.spread)
        if not args.json:
            for c in criteria:
                common.out.print(f"{c.name} is your criterion {c.text!r} (label it with "
                                 f"--metric {c.name})", soft_wrap=True, markup=False)
        print_scores(ws, args.eval_id, graders + [c.name for c in criteria], args.judge_model,
                     args.json, spreads)
    finally:
        ws.close()
    return 0


def cmd_pairwise(args: argparse.Namespace) -> int:
    """`flowkit judge EVAL_ID --pairwise A,B`: grade, then the win rate in words."""
    from flowkit.eval.pairwise import win_lines
    from service.pairwise import card, grade_pairwise, pair, win
    if args.judge or args.criterion:
        raise FlowkitError("--pairwise: grades A against B; give --judge or --criterion in "
                           "another call")
    ws = common.open_workspace(args)
    try:
        a, b = pair(ws, args.eval_id, args.pairwise)
        with common.progress_bar("pairwise") as prog:
            task = prog.add_task("graded", total=None)
            out = grade_pairwise(ws, args.eval_id, a, b, model=args.judge_model,
                                 on_progress=lambda i, n: prog.update(task, completed=i, total=n))
        common.err.print(out.line())
        rate = win(ws, args.eval_id, a, b, args.judge_model)
        trust = card(ws, args.eval_id, a, b, model_label=rate.model)
    finally:
        ws.close()
    if args.json:
        common.out.print_json(json.dumps({**rate.to_dict(), "reliability": trust.to_dict()}))
    else:
        common.out.print(f"pairwise judge on {rate.model} (evaluation {args.eval_id})",
                         soft_wrap=True)
        for line in [*win_lines(rate), *trust.lines()]:
            common.out.print(line, soft_wrap=True)
    return 0


def label_pair(args: argparse.Namespace) -> int:
    """`flowkit label EVAL --pairwise A,B --question Q --value a|b|tie|clear`: which of two
    flows' answers to one question is better (the pairwise judge's truth)."""
    from service.pairwise import LABEL_VALUES, pair, set_pairwise_label
    if args.value not in LABEL_VALUES:
        raise FlowkitError(f"--value: with --pairwise use a (A's answer is better), b, tie or "
                           f"clear; got '{args.value}'")
    ws = common.open_workspace(args)
    try:
        a, b = pair(ws, args.eval_id, args.pairwise)
        set_pairwise_label(ws, args.eval_id, a, b, args.question, LABEL_VALUES[args.value])
        common.out.print(f"pairwise label {args.value} on {a},{b} / {args.question}")
    finally:
        ws.close()
    return 0


PASSAGE_VALUES: dict[str, float | None] = {"1": 1.0, "0": 0.0, "relevant": 1.0,
                                           "irrelevant": 0.0, "clear": None}


def label_passage(args: argparse.Namespace) -> int:
    """`flowkit label EVAL --question Q --passage ID --value 1|0|clear`: one passage an answering
    node read, relevant or not to the question (the context-relevance judge's truth)."""
    from service.passage_labels import set_passage_label
    if args.value not in PASSAGE_VALUES:
        raise FlowkitError(f"--value: use 1 (relevant), 0 (irrelevant) or clear for a passage; "
                           f"got '{args.value}'")
    if args.flow:
        raise FlowkitError("--flow: a passage label belongs to the question and the passage "
                           "(every flow that read it); leave --flow out with --passage")
    ws = common.open_workspace(args)
    try:
        set_passage_label(ws, args.eval_id, args.question, args.passage,
                          PASSAGE_VALUES[args.value])
        common.out.print(f"passage label {args.value} on {args.passage} / {args.question}")
    finally:
        ws.close()
    return 0


def cmd_label(args: argparse.Namespace) -> int:
    from service.evaluations import stored_plan
    from service.grading import grade_repo
    if args.next:
        return cmd_next(args)
    for value, option in ((args.question, "--question"), (args.value, "--value")):
        if not value:
            raise FlowkitError(f"{option}: needed to label an answer (or --next: what to label "
                               "next)")
    if args.pairwise:
        return label_pair(args)
    if args.passage:
        return label_passage(args)
    if not args.flow:
        raise FlowkitError("--flow: which flow's answer to label (or --passage ID to label a "
                           "passage the answers read)")
    if args.metric not in GRADERS and not is_criterion(args.metric):
        raise FlowkitError(f"--metric: unknown '{args.metric}'; use {', '.join(GRADERS)} or a "
                           "criterion's name (criterion:..., as flowkit judge prints it)")
    value = {"1": 1.0, "0": 0.0, "right": 1.0, "wrong": 0.0, "clear": None}.get(args.value, -1.0)
    if value is not None and value < 0:
        raise FlowkitError(f"--value: use 1 (right), 0 (wrong) or clear; got '{args.value}'")
    ws = common.open_workspace(args)
    try:
        plan = stored_plan(ws, args.eval_id)
        if args.flow not in [f.label or f.ref for f in plan.flows]:
            raise FlowkitError(f"--flow: '{args.flow}' is not a flow of evaluation "
                               f"{args.eval_id} ({', '.join(f.label or f.ref for f in plan.flows)})")
        if args.question not in {str(q["id"]) for q in plan.questions}:
            raise FlowkitError(f"--question: no question '{args.question}' in evaluation "
                               f"{args.eval_id}")
        grade_repo(ws).set_label(args.eval_id, args.flow, args.question, args.metric, value)
        common.out.print(f"label {args.metric}={args.value} on {args.flow} / {args.question}",
                         )
    finally:
        ws.close()
    return 0


def add_judge_options(s: argparse.ArgumentParser, required: bool = False) -> None:
    """--judge and --judge-model (on `flowkit eval` and `flowkit judge`)."""
    s.add_argument("--judge", default="", required=required,
                   help=f"model judges, comma-separated: {', '.join(GRADERS)}")
    s.add_argument("--judge-model", default="", help="the graders' model ('default', a "
                   "packaged id or a .gguf path); named wherever a judge score is shown")


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("judge", help="grade a stored evaluation's answers with model judges "
                       "(scores corrected by labels where there are some)")
    s.add_argument("eval_id")
    add_judge_options(s)
    s.add_argument("--criterion", action="append", metavar="TEXT", help="a yes/no criterion of "
                   "your own in words, e.g. 'the answer names the command', or @FILE holding it "
                   "(repeatable); graded like a judge, under the name criterion:<hash of the "
                   "text>")
    s.add_argument("--spread", type=common.int_at_least(1), default=0, metavar="N",
                   help="ask N answers again with each judge's worked examples in reverse order "
                   "and show on its card how many verdicts changed")
    s.add_argument("--pairwise", default="", metavar="A,B", help="instead of --judge: for each "
                   "question, is A's or B's answer better (asked in both orders)? Prints A's win "
                   "rate with its interval, the ties and the position flips")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_judge)
    s = sub.add_parser("label", help="label one answer of an evaluation right or wrong, or one "
                       "passage an answer read relevant or not (the truth judges are corrected "
                       "with)")
    s.add_argument("eval_id")
    s.add_argument("--flow", default="", help="the flow whose answer is labelled (with --next: "
                   "the flow compared with the first; default the second flow)")
    s.add_argument("--question", default="", help="the question id")
    s.add_argument("--passage", default="", help="a passage id the answers to --question read: "
                   "label it for context relevance (--value 1, 0 or clear; no --flow)")
    s.add_argument("--pairwise", default="", metavar="A,B", help="label which of two flows' "
                   "answers to --question is better: --value a, b, tie or clear")
    s.add_argument("--metric", default="correctness", help=", ".join(GRADERS))
    s.add_argument("--value", default="", help="1 (right), 0 (wrong) or clear")
    s.add_argument("--next", action="store_true", help="list the answers to label next: where "
                   "--flow and the first flow answered differently (the questions answered alike "
                   "need no label), in a random order that keeps the intervals valid")
    s.add_argument("--count", type=common.int_at_least(1), default=10, metavar="N",
                   help="with --next: how many questions to list (default 10)")
    s.set_defaults(fn=cmd_label)
