"""`flowkit dataset generate`: a question set generated from a knowledge base.

    flowkit dataset generate --kb NAME --n N [--kinds single,bridge,comparison] [--seed S]
                             [--model M] [--name D] [--max-tries T] [--replace] [--show K]

Candidates are built from the passages by rule and kept only when the model's reading passes the
checks (round trip with its passages, not closed-book, a multi-hop question not from one passage,
the answer not in the question, no near-duplicate); the reasons are counted and printed. Every
model call goes through the completion cache: the same command gives the same set, and one that
was killed resumes where it stopped when run again.
"""
from __future__ import annotations

import argparse
from typing import Any

from rich.table import Table

from flowkit.errors import FlowkitError
from flowkit.eval.questiongen.candidates import KINDS
from flowkit.eval.questiongen.checks import REASONS
from flowkit.eval.questiongen.generate import Progress, Request

from . import common


def parse_kinds(text: str) -> tuple[str, ...]:
    """'single,bridge' -> ('single', 'bridge'); an unknown kind is named in the error."""
    kinds = tuple(k.strip() for k in (text or "").split(",") if k.strip())
    bad = [k for k in kinds if k not in KINDS]
    if bad or not kinds:
        raise FlowkitError(f"--kinds: unknown kind(s) {', '.join(bad) or '(none given)'}; use "
                           f"a comma-separated list of {', '.join(KINDS)}")
    return kinds


def cmd_generate(args: argparse.Namespace) -> int:
    from service import questiongen
    request = Request(n=args.n if args.n is not None else 0, kinds=parse_kinds(args.kinds),
                      seed=args.seed, max_tries=args.max_tries)
    if args.n is None:
        raise FlowkitError("dataset generate needs --n (how many questions to keep)")
    ws = common.open_workspace(args)
    try:
        plan = questiongen.plan(ws, args.kb or "", request, name=args.name or "",
                                model=args.model or "", replace=args.replace)
        common.err.print(f"generating up to {request.n} questions from '{plan.kb}' "
                         f"into dataset '{plan.name}': {plan.estimate.line()}")
        with common.progress_bar("generate") as prog:
            task = prog.add_task("kept", total=request.n)

            def show(p: Progress) -> None:
                prog.update(task, completed=p.kept,
                            description=f"kept {p.kept} / tried {p.tried} · calls computed "
                                        f"{p.cost.computed} / cached {p.cost.cached}")
                if not common.err.is_terminal and p.tried % 25 == 0:
                    common.err.print(p.line())  # a log: a line

            result = questiongen.run(ws, plan, on_progress=show)
        _report(result.progress)
        if result.progress.kept < request.n:
            common.err.print(f"only {result.progress.kept} of {request.n} questions passed the "
                             f"checks before the candidates (or --max-tries) ran out")
        info = questiongen.save(ws, plan, result.questions, result.meta, replace=args.replace)
        common.out.print(f"dataset '{info.name}': {info.size} generated questions "
                         f"({_kinds(result.progress)}), gold passages named; knowledge base "
                         f"'{plan.kb}'")
        _show(result.questions, result.reviewed, args.show)
    finally:
        ws.close()
    return 0


def _kinds(p: Progress) -> str:
    return ", ".join(f"{p.kept_by_kind[k]} {k}" for k in KINDS if p.kept_by_kind[k])


def _report(p: Progress) -> None:
    table = Table(title="checks")
    for col in ("kind", "tried", "kept"):
        table.add_column(col)
    for k in KINDS:
        if p.tried_by_kind[k]:
            table.add_row(k, str(p.tried_by_kind[k]), str(p.kept_by_kind[k]))
    common.err.print(table)
    drops = ", ".join(f"{r}: {p.dropped[r]}" for r in REASONS)
    common.err.print(f"dropped by check: {drops}")
    common.err.print(f"model calls computed {p.cost.computed}, served from the cache "
                     f"{p.cost.cached}; {p.seconds:.1f} s")


def _show(questions: list[dict[str, Any]], reviewed: list[dict[str, Any]], k: int) -> None:
    for q, r in list(zip(questions, reviewed))[:max(0, k)]:
        common.out.print(f"- [{q['type']}] {q['question']}  ->  {q['answers'][0]}")
        for p in r["passages"]:
            common.out.print(f"    {p['id']} {p['title']}: {p['text'][:160]}")


def add_arguments(s: argparse.ArgumentParser) -> None:
    """The `dataset generate` options (on the `dataset` parser, beside import and list)."""
    s.add_argument("--n", type=int, default=None, help="generate: questions to keep")
    s.add_argument("--kinds", default=",".join(KINDS),
                   help=f"generate: comma-separated kinds ({', '.join(KINDS)}; table and manual "
                   "ask a manual's table rows and its defaults, limits and commands)")
    s.add_argument("--seed", type=int, default=0, help="generate: the seed (same seed, same set)")
    s.add_argument("--model", default="", help="generate: the model that reads and checks "
                   "('default', a packaged id or a .gguf path)")
    s.add_argument("--max-tries", type=int, default=0,
                   help="generate: stop after this many candidates (0: 25 per question)")
    s.add_argument("--replace", action="store_true",
                   help="generate: replace a dataset of the same name")
    s.add_argument("--show", type=int, default=0,
                   help="generate: print this many kept questions with their passages")
