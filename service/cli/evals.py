"""`flowkit eval`, `flowkit evals` and `flowkit dataset`: question sets and evaluations.

    flowkit eval --flow A --flow B --dataset DIR_OR_NAME --kb KB [--limit N] [--baseline A]
                 (--flow A@MODEL runs A on a packaged model id or a .gguf path)
                 [--out FILE.json] [--report FILE.md|.html] [--csv FILE] [--resume EVAL_ID]
                 [--concurrency N]  (N runs in flight to a model server)
                 [--fail-if COND ...] [--junit FILE.xml]  (a gate for CI: see cli.gate)
    flowkit evals                      list evaluations
    flowkit dataset import PATH [--name NAME] [--kb KB [--ingest]]
    flowkit dataset list
    flowkit dataset generate --kb KB --n N [--kinds ...] [--seed S] (see cli.questiongen)
    flowkit models [GGUF ...] [--assemble] [--json]
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.table import Table

from flowkit.errors import FlowkitError
from flowkit.eval.graders import parse_graders
from flowkit.eval.strategy import EvalRun, strategy_for
from flowkit.names import check_new_name
from service.evaluations import eval_repo

from . import common, models, questiongen, telemetry
from . import gate as gate_cli
from . import judge as judge_cli


def cmd_dataset(args: argparse.Namespace) -> int:
    if args.action == "generate":
        return questiongen.cmd_generate(args)
    ws = common.open_workspace(args)
    repo = eval_repo(ws)
    if args.action == "list":
        table = Table(title="datasets")
        for col in ("name", "questions", "kb", "source"):
            table.add_column(col, overflow="fold")
        for d in repo.list_datasets():
            table.add_row(d.name, str(d.size), d.kb, d.source)
        common.out.print(table)
        return 0
    if not args.path:
        raise FlowkitError("dataset import needs a PATH (a folder with questions.jsonl, a .jsonl "
                           "or a .csv) or the name of a set `flowkit eval` finds on disk")
    from pathlib import Path

    from flowkit.eval.datasets import from_path, known_sets
    found = known_sets()
    by_name = args.path in found and not Path(args.path).expanduser().exists()
    ds = from_path(found[args.path] if by_name else args.path,
                   name=args.name or (args.path if by_name else None))
    if repo.find_dataset(ds.name) is None:     # a new set: the one rule for names, before ingest
        check_new_name(ds.name, "question set")
    if args.ingest:
        if not args.kb:
            raise FlowkitError("--ingest needs --kb NAME")
        n = common.ingest_corpus(ws, ds, args.kb)
        common.out.print(f"ingested {n} chunks into '{args.kb}'" if n else
                         f"knowledge base '{args.kb}' is ready; not ingested again")
    repo.save_dataset(ds.name, ds.source, ds.questions, kb=args.kb or "")
    common.out.print(f"dataset '{ds.name}': {len(ds.questions)} questions"
              + (", gold passages named" if ds.has_gold_passages else ""))
    return 0


# ---- eval ---------------------------------------------------------------------------------
def _plan(args: argparse.Namespace, ws: Any, repo: Any) -> Any:
    from flowkit.eval.runner import add_variants, make_plan, plan_from_eval, resolve_flows
    from service.modelchoice import split_ref
    if args.from_eval:
        info = repo.find_eval(args.from_eval)
        if info is None:
            raise FlowkitError(f"no evaluation '{args.from_eval}' (flowkit evals lists them)")
        if args.dataset or args.kb or args.limit:
            raise FlowkitError("--from keeps the evaluation's dataset, questions and knowledge "
                               "base; leave out --dataset, --kb and --limit")
        base = plan_from_eval(info, repo.get_dataset(info.dataset).questions)
        return add_variants(repo, base, resolve_flows(ws, args.flow, split_ref))
    if args.resume:
        info = repo.find_eval(args.resume)
        if info is not None:
            return plan_from_eval(info, repo.get_dataset(info.dataset).questions)
        if not (args.flow and args.dataset and args.kb):
            raise FlowkitError(f"--resume: no evaluation '{args.resume}' (flowkit evals lists "
                               "them; give --flow, --dataset and --kb to start one under this id)")
    if not args.flow or not args.dataset or not args.kb:
        raise FlowkitError("eval needs --flow (one or more), --dataset and --kb "
                           "(or --resume EVAL_ID of a stored evaluation)")
    from flowkit.eval.datasets import resolve
    ds = resolve(repo, args.dataset)
    if args.ingest:
        common.ingest_corpus(ws, ds, args.kb)
        repo.set_dataset_kb(ds.name, args.kb)
    return make_plan(resolve_flows(ws, args.flow, split_ref), ds.name, ds.questions, args.kb,
                     limit=args.limit, eval_id=args.resume or None, name=args.name or "")


def _run(plan: Any, ws: Any, repo: Any, workers: int = 1, ray_address: str = "",
         concurrency: int = 1) -> Any:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    from flowkit.eval.runner import run_evaluation
    n = len(plan.questions)
    with Progress(TextColumn("{task.description}", markup=False), BarColumn(),
                  MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[last]}", markup=False), console=common.err) as prog:
        tasks = [prog.add_task(f.label, total=n, last="") for f in plan.flows]
        overall = prog.add_task("all", total=n * len(plan.flows), last="")

        def on_progress(p: Any) -> None:
            prog.update(tasks[p.flow_index], advance=1, last=p.status)
            prog.update(overall, completed=p.done, last=p.describe())

        from service.modelchoice import ModelWorkspaces
        from service.workspace import worker_factory
        factory = worker_factory(ws) if workers > 1 else None
        models = ModelWorkspaces(ws)
        try:
            strategy = strategy_for(workers, concurrency, factory, ray_address)
            return run_evaluation(ws, repo, plan, EvalRun(
                strategy=strategy, progress=on_progress, workspace_for=models.get,
                notice=lambda line: prog.console.print(
                    common.styled("[yellow]note:[/yellow] {}", line))))
        finally:
            models.close()


def _print_table(title: str, rows: list[list[str]]) -> None:
    table = Table(title=title)
    for i, col in enumerate(rows[0]):
        table.add_column(col, justify="left" if i == 0 else "right", overflow="fold")
    for r in rows[1:]:
        table.add_row(*r)
    common.out.print(table)


def print_report(rep: Any) -> None:
    from flowkit.eval.formatting import delta_rows, steadiness_line, summary_rows, type_rows
    _print_table(f"evaluation {rep.eval_id}: {rep.dataset} on '{rep.kb}' "
                 f"(EM/F1/Acc/{rep.recall_title} in %)", summary_rows(rep))
    if steadiness_line(rep):
        common.out.print(steadiness_line(rep), markup=False, highlight=False)
    if rep.deltas:
        _print_table(f"minus baseline '{rep.baseline}': mean [95% bootstrap CI]; * excludes 0",
                     delta_rows(rep))
    if any(len(t) > 1 or "-" not in t for t in rep.types.values()):
        _print_table("by question type", type_rows(rep))


def output_files(args: argparse.Namespace) -> list[Path]:
    """--out (.json), --report (.md, .html) and --csv (.csv), checked before any run starts."""
    checks = ((args.out, "--out", (".json",)), (args.report, "--report", (".md", ".html", ".htm")),
              (args.csv, "--csv", (".csv",)))
    return [common.out_file(text, option, suffixes) for text, option, suffixes in checks if text]


def cmd_eval(args: argparse.Namespace) -> int:
    from flowkit.eval.exports import write
    from flowkit.eval.runner import evaluation_report
    files = output_files(args)
    gate, junit = gate_cli.conditions(args)
    graders = parse_graders(args.judge) if args.judge else []
    if graders:
        from service.grading import check
        check(graders, args.judge_model)
    ws = common.open_workspace(args)
    repo = eval_repo(ws)
    plan = _plan(args, ws, repo)
    gate_cli.check_plan(gate, plan)
    common.err.print(common.styled("[bold]evaluation {}[/bold]: {} flows x {} questions of '{}' on "
                                   "'{}' [dim](resume: flowkit eval --resume {})[/dim]",
                                   plan.eval_id, len(plan.flows), len(plan.questions),
                                   plan.dataset, plan.kb, plan.eval_id))
    outcome = _run(plan, ws, repo, args.workers, args.ray_address or "", args.concurrency)
    common.err.print(f"ran {outcome.ran}, skipped {outcome.skipped} already done, redid {outcome.redone} "
              f"unfinished; model calls: {outcome.cost.computed} computed, "
              f"{outcome.cost.cached} served from the completion cache"
              + concurrency_words(outcome.execution))
    if outcome.execution.concurrency > 1:
        from flowkit.eval.formatting import CONCURRENT_ANSWERS
        common.err.print(CONCURRENT_ANSWERS, markup=False, highlight=False)
    k = None if args.k == 0 else args.k
    from service.grading import grade, with_judges
    if graders:                               # graded first, so the files carry the verdicts
        out = grade(ws, plan.eval_id, graders, model=args.judge_model)
        common.err.print(out.line())
    rep = with_judges(ws, evaluation_report(repo, plan, args.baseline, k))
    written = [write(rep, path) for path in files]    # before anything is printed
    print_report(rep)
    for path in written:
        common.out.print(f"wrote {path}")
    if graders:
        judge_cli.print_scores(ws, plan.eval_id, graders, args.judge_model)
    return gate_cli.apply(gate, rep, junit) if gate else 0


def cmd_diverge(args: argparse.Namespace) -> int:
    from service.evaluations import where_flows_part
    ws = common.open_workspace(args)
    rep = where_flows_part(ws, args.eval_id, args.parent, args.variant)
    if args.json:
        common.out.print_json(data={
            "eval_id": rep.eval_id, "parent": rep.parent, "variant": rep.variant,
            "groups": [g.to_dict() for g in rep.groups],
            "questions": [{"question_id": p.question_id, "node": p.node_id, "step": p.step_a,
                           "keys": p.keys, "runs": list(rep.runs[p.question_id])}
                          for p in rep.partings]})
        return 0
    rows = [[g.node_id, str(g.n), str(g.changed), str(g.better), str(g.worse), str(g.same),
             f"{100 * g.f1_delta:+.1f} [{100 * g.low:+.1f}, {100 * g.high:+.1f}]"]
            for g in rep.groups]
    table = Table(title=f"where {rep.variant} parts from {rep.parent} (evaluation {rep.eval_id})")
    for col in ("first differs at", "questions", "answer changed", "better", "worse", "same F1",
                "F1 delta [95% CI]"):
        table.add_column(col)
    for r in rows:
        table.add_row(*r)
    common.out.print(table)
    for p in rep.partings:
        if p.node_id is not None:
            a, b = rep.runs[p.question_id]
            common.out.print(common.styled("[dim]{}: step {} at {} ({}); flowkit trace {} / {}[/dim]",
                                           p.question_id, p.step_a, p.node_id,
                                           ", ".join(p.keys), a, b))
    return 0


def cmd_evals(args: argparse.Namespace) -> int:
    if args.action == "send":
        return telemetry.cmd_evals_send(args)
    ws = common.open_workspace(args)
    repo = eval_repo(ws)
    table = Table(title="evaluations")
    for col in ("id", "status", "flows", "dataset", "kb", "done", "created"):
        table.add_column(col, overflow="fold")
    for e in repo.list_evals():
        prog = repo.progress(e.id)
        finished = prog.get("ok", 0) + prog.get("budget_exceeded", 0)
        table.add_row(e.id, repo.live_status(e.id), ", ".join(f.get("label", f.get("ref", "")) for f in e.flows),
                      e.dataset, e.kb, f"{finished}/{e.total}",
                      e.created_at.strftime("%Y-%m-%d %H:%M"))
    common.out.print(table)
    return 0


def concurrency_words(execution: Any) -> str:
    """'; 4 runs in flight (server: 4 parallel slots)' for a concurrent session, else ''."""
    if execution.concurrency <= 1:
        return ""
    slots = (f" (server: {execution.server_parallel} parallel slots)"
             if execution.server_parallel else "")
    return f"; {execution.concurrency} runs in flight{slots}"


def add_concurrency_arg(s: argparse.ArgumentParser) -> None:
    """--concurrency, as `flowkit eval` and `flowkit search` take it."""
    from flowkit.eval.concurrent import MAX_CONCURRENCY
    s.add_argument("--concurrency", type=common.int_between(1, MAX_CONCURRENCY), default=1,
                   metavar="N",
                   help=f"keep N (flow, question) runs in flight at once (1 to {MAX_CONCURRENCY}; "
                        "default 1: one after another); needs a model server in settings "
                        "(llm.backend openai: llama.cpp's server with parallel slots, vLLM, "
                        "`flowkit serve-model --parallel N`); with an embedded model the runs "
                        "go serially, with a note")


def add_worker_args(s: argparse.ArgumentParser) -> None:
    """--workers and --ray-address, as `flowkit eval` and `flowkit search` take them."""
    s.add_argument("--workers", type=common.int_at_least(1), default=1,
                   help="run questions x flows on this many Ray workers (each loads its own model)")
    s.add_argument("--ray-address", default="",
                   help="an existing Ray cluster (default: a local one); several machines need "
                        "server engines in settings")


def register(sub: argparse._SubParsersAction) -> None:
    """Add the eval, evals and dataset subcommands."""
    s = sub.add_parser("eval", help="compare flows on a question set (resumable)")
    s.add_argument("--flow", action="append", default=[],
                   help="a flow file, saved flow or template; repeat for each flow; "
                        "FLOW@MODEL runs it on that model (a packaged id or a .gguf path)")
    s.add_argument("--dataset", help="a folder with questions.jsonl, a .jsonl or .csv file, a set "
                   "in ../shared/data by name, or an imported dataset's name")
    s.add_argument("--kb", help="the knowledge base every flow answers from")
    s.add_argument("--limit", type=common.int_at_least(1), default=None,
                   help="the first N questions (file order)")
    s.add_argument("--baseline", help="the flow the others are compared with (default: the first)")
    s.add_argument("--out", help="write the whole report as JSON")
    s.add_argument("--report", help="write a Markdown (.md) or HTML (.html) report")
    s.add_argument("--csv", help="write one row per flow and question")
    s.add_argument("--resume", help="continue the evaluation with this id")
    s.add_argument("--from", dest="from_eval", metavar="EVAL_ID",
                   help="add the --flow flows as new columns of this evaluation (same questions "
                        "and knowledge base; its finished runs are kept, and with the completion "
                        "cache every call a variant shares with them is free)")
    s.add_argument("--ingest", action="store_true",
                   help="ingest the dataset's corpus.jsonl into --kb first if it is empty")
    s.add_argument("--k", type=common.int_at_least(0), default=5,
                   help="recall@k cut-off (0: every retrieved passage)")
    s.add_argument("--name", help="a title for the evaluation")
    s.add_argument("--no-cache", action="store_true", help=common.NO_CACHE_HELP)
    judge_cli.add_judge_options(s)
    gate_cli.add_arguments(s)
    add_worker_args(s)
    add_concurrency_arg(s)
    s.set_defaults(fn=cmd_eval)

    s = sub.add_parser("diverge", help="where two columns of an evaluation part, per question "
                       "and grouped by node")
    s.add_argument("eval_id")
    s.add_argument("parent", help="the column the variant was made from")
    s.add_argument("variant", help="the variant's column")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_diverge)

    s = sub.add_parser("evals", help="list evaluations; send EVAL_ID: its runs to a collector")
    telemetry.add_send_arguments(s)
    s.set_defaults(fn=cmd_evals)

    s = sub.add_parser("dataset", help="question sets: import PATH | list | generate --kb KB "
                       "--n N")
    s.add_argument("action", choices=["import", "list", "generate"])
    s.add_argument("path", nargs="?")
    s.add_argument("--name", help="import under this name")
    s.add_argument("--kb", help="the knowledge base for its corpus")
    s.add_argument("--ingest", action="store_true", help="ingest its corpus.jsonl into --kb")
    questiongen.add_arguments(s)
    s.set_defaults(fn=cmd_dataset)

    s = sub.add_parser("models", help="the packaged models and any GGUF by path: kind, size, "
                       "reading figures")
    s.add_argument("paths", nargs="*", help="GGUF files to list as well")
    s.add_argument("--assemble", action="store_true", help="make the packaged model files ready")
    s.add_argument("--json", action="store_true", help="print JSON instead of a table")
    s.set_defaults(fn=models.cmd_models)
