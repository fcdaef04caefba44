"""The `flowkit` command line: ingest, run, trace, flows, operators, templates, setup, eval, train-judge."""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from rich.console import Console  # noqa: E402
from rich.markup import escape  # noqa: E402
from rich.table import Table  # noqa: E402

from .errors import FlowkitError, SpecError  # noqa: E402

out = Console()
err = Console(stderr=True)


def _workspace(args: argparse.Namespace) -> Any:
    from storage.workspace import Workspace
    return Workspace(args.data_dir)


def _progress(label: str) -> Any:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn
    return Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                    TimeRemainingColumn(), console=err, transient=False)


def _json_option(text: str, option: str) -> dict[str, Any]:
    """A JSON object given on the command line, or SpecError naming the option."""
    from .jsonread import parse
    from .spec import MAX_DEPTH, MAX_STRING
    try:
        value = parse(text, option, max_depth=MAX_DEPTH, max_string=MAX_STRING)
    except SpecError as e:
        raise SpecError(e.detail, e.code, option) from None
    if not isinstance(value, dict):
        raise SpecError(f"must be a JSON object like '{{\"size\": 200}}'; got "
                        f"{type(value).__name__}", code="bad_json", field=option)
    return value


def cmd_ingest(args: argparse.Namespace) -> int:
    from .ingest import ingest
    params = _json_option(args.params, "--params") if args.params else {}
    ws = _workspace(args)
    with _progress("ingest") as prog:
        task = prog.add_task(f"ingest into '{args.kb}'", total=None)
        n = ingest(ws.resources, args.kb, args.files, chunker=args.chunker, params=params,
                   progress=lambda done, total: prog.update(task, completed=done, total=total))
    out.print(f"ingested {n} chunks into knowledge base '{args.kb}' "
              f"({ws.resources.kb(args.kb).count()} in all)")
    return 0


class _LiveSteps:
    """Prints each step as it finishes (stderr), so a long run shows progress."""

    def start(self, run: Any) -> None:
        err.print(f"[dim]run {run.run_id}: {run.flow_name} on '{run.kb}'[/dim]")

    def step(self, e: Any) -> None:
        mark = "[red]x[/red]" if e.error else "[green]>[/green]"
        err.print(f"  {mark} {e.index:>3} {e.node_id} (visit {e.visit}) {e.operator} "
                  f"{e.tokens} tok {e.ms:.0f} ms")

    def end(self, result: Any) -> None:
        pass


def cmd_run(args: argparse.Namespace) -> int:
    ws = _workspace(args)
    spec, version = ws.resolve_flow(args.flow)
    result = ws.run(spec, args.question, args.kb, flow_version=version,
                    extra_sink=None if args.json else _LiveSteps())
    steps = ws.store.steps(result.run_id)
    if args.json:
        out.print_json(data={"run_id": result.run_id, "status": result.status,
                             "answer": result.answer, "citations": result.citations,
                             "error": result.error, "halt_reason": result.halt_reason,
                             "steps": [{"index": s.index, "node": s.node_id, "visit": s.visit,
                                        "operator": s.operator, "tokens": s.tokens, "ms": s.ms,
                                        "error": s.error} for s in steps],
                             "totals": {"steps": result.steps, "llm_calls": result.llm_calls,
                                        "tokens": result.tokens, "ms": result.ms}})
    else:
        table = Table(title=f"run {result.run_id} ({result.status})")
        for col in ("#", "node", "visit", "operator", "LLM calls", "tokens", "ms", "error"):
            table.add_column(col)
        for s in steps:
            table.add_row(str(s.index), s.node_id, str(s.visit), s.operator, str(len(s.llm_calls)),
                          str(s.tokens), f"{s.ms:.0f}", s.error or "")
        out.print(table)
        out.print(f"[bold]answer:[/bold] {result.answer}")
        if result.citations:
            out.print(f"[bold]cites:[/bold] {', '.join(result.citations)}")
        out.print(f"totals: {result.steps} steps, {result.llm_calls} LLM calls, {result.tokens} "
                  f"tokens, {result.ms / 1000:.1f} s")
        if result.error:
            err.print(f"[red]error:[/red] {escape(result.error)}")
    return 0 if result.status in ("ok", "budget_exceeded") else 1


def _short(v: Any, n: int = 160) -> str:
    s = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)
    return s if len(s) <= n else s[: n - 3] + "..."


def cmd_trace(args: argparse.Namespace) -> int:
    from .trace import diff
    ws = _workspace(args)
    run = ws.store.get_run(args.run_id)
    steps = ws.store.steps(run.id)
    if args.json:
        out.print_json(data={"run": {k: v for k, v in run.__dict__.items() if k != "spec"} |
                             {"started_at": str(run.started_at), "ended_at": str(run.ended_at)},
                             "steps": [s.to_dict() for s in steps]})
        return 0
    out.print(f"[bold]run {run.id}[/bold] flow {run.flow_name} v{run.flow_version or '-'} "
              f"status {run.status}; model {run.model_id} ({run.model_hash[:12]}); kb {run.kb}")
    out.print(f"question: {run.question}")
    for s in steps:
        out.rule(f"step {s.index}: {s.node_id} (visit {s.visit}) {s.operator}  "
                 f"{s.tokens} tok, {s.ms:.0f} ms")
        for key, change in diff(s.memory_before, s.memory_after).items():
            out.print(f"  [yellow]{key}[/yellow]: {_short(change['before'])} -> "
                      f"{_short(change['after'])}", markup=True, highlight=False)
        for c in s.llm_calls:
            out.print(f"  [cyan]prompt[/cyan] ({c.prompt_tokens} tok): {_short(c.prompt, 400)}",
                      highlight=False)
            out.print(f"  [cyan]completion[/cyan] ({c.completion_tokens} tok, {c.ms:.0f} ms): "
                      f"{_short(c.completion, 300)}", highlight=False)
        for r in s.retrievals:
            ids = ", ".join(f"{d['id']} ({d['score']:.3f})" for d in r.docs)
            out.print(f"  [magenta]{r.method}[/magenta] '{_short(r.query, 80)}': {ids}",
                      highlight=False)
        if s.error:
            out.print(f"  [red]error:[/red] {escape(s.error)}")
    out.rule()
    out.print(f"answer: {run.answer}\nstatus: {run.status}" +
              (f" ({run.halt_reason})" if run.halt_reason else "") +
              (f"\nerror: {run.error}" if run.error else ""))
    return 0


def cmd_flows(args: argparse.Namespace) -> int:
    from .errors import ValidationError
    from .spec import dump, from_dict, to_dict
    from .validate import check, errors, validate_file
    ws = _workspace(args)
    if args.action == "list":
        table = Table(title="saved flows")
        for col in ("name", "version", "updated", "last run"):
            table.add_column(col)
        for f in ws.store.list_flows():
            table.add_row(f.name, str(f.version), f.updated_at.strftime("%Y-%m-%d %H:%M"),
                          f"{f.last_run_status or ''} {f.last_run_id or ''}")
        out.print(table)
    elif args.action == "import":
        if not args.target:
            raise FlowkitError("flows import needs a FILE")
        spec, problems = validate_file(args.target)       # the same reader as `flowkit validate`
        if spec is not None and args.name:
            spec = from_dict({**to_dict(spec), "name": args.name})
            problems = check(spec)
        if spec is None:                                   # unreadable: one line, code + field
            first = problems[0]
            raise SpecError(first.message, first.code,
                            None if first.field == "file" else first.field, args.target)
        if errors(problems):
            raise ValidationError(errors(problems))
        exists = ws.store.flow_exists(spec.name)
        expected = ws.store.get_flow(spec.name)[1] if exists else None
        v = ws.store.save_flow(spec, expected, message=f"imported from {args.target}")
        out.print(f"saved flow '{spec.name}' version {v}")
    elif args.action == "export":
        if not args.target:
            raise FlowkitError("flows export needs a flow NAME")
        spec, _ = ws.store.get_flow(args.target)
        if args.out:
            dump(spec, args.out)
            out.print(f"wrote {args.out}")
        else:
            from .spec import dumps
            sys.stdout.write(dumps(spec))
    return 0


def cmd_operators(args: argparse.Namespace) -> int:
    from .registry import all_operators, describe
    ops = all_operators()
    if args.json:
        out.print_json(data=[describe(c) for c in ops.values()])
        return 0
    table = Table(title=f"{len(ops)} operators")
    for col in ("module", "key", "kind", "reads", "writes", "what it does"):
        table.add_column(col, overflow="fold")
    for key, c in ops.items():
        table.add_row(c.module, key, c.kind, ", ".join(c.reads), ", ".join(c.writes), c.summary())
    out.print(table)
    return 0


def cmd_templates(args: argparse.Namespace) -> int:
    from . import templates
    specs = templates.all_templates()
    if args.json:
        out.print_json(data=[{"name": n, "description": s.description, "nodes": len(s.nodes)}
                             for n, s in specs.items()])
        return 0
    table = Table(title=f"{len(specs)} templates")
    table.add_column("name")
    table.add_column("nodes")
    table.add_column("description", overflow="fold")
    for n, s in specs.items():
        table.add_row(n, str(len(s.nodes)), s.description)
    out.print(table)
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from .validate import validate_file
    _, problems = validate_file(args.file)
    if args.json:
        out.print_json(data=[p.to_dict() for p in problems])
    else:
        for p in problems:
            out.print(f"{p.severity}: {p}", highlight=False, markup=False)
        if not problems:
            out.print("no problems")
    return 1 if any(p.severity == "error" for p in problems) else 0


def cmd_setup(args: argparse.Namespace) -> int:
    from .ingest import SAMPLE_KB, ensure_sample
    ws = _workspace(args)
    with _progress("sample") as prog:
        task = prog.add_task("sample knowledge base", total=None)
        done = ensure_sample(ws.resources, progress=lambda d, t: prog.update(task, completed=d,
                                                                             total=t))
    kb = ws.resources.kb(SAMPLE_KB)
    out.print(f"{'ingested' if done else 'ready'}: knowledge base '{SAMPLE_KB}' with {kb.count()} "
              f"chunks in {ws.data_dir}")
    return 0


def cmd_kb(args: argparse.Namespace) -> int:
    ws = _workspace(args)
    table = Table(title="knowledge bases")
    for col in ("name", "chunks", "chunker", "embedder"):
        table.add_column(col)
    for name in ws.resources.kb_names():
        kb = ws.resources.kb(name)
        meta = kb.meta()
        table.add_row(name, str(kb.count()), str(meta.get("chunker", "")), str(meta.get("embedder", "")))
    out.print(table)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="flowkit", description="Design, run, replay and compare "
                                "Modular RAG flows.")
    p.add_argument("--data-dir", default=None, help="where SQLite, Chroma and BM25 live "
                   "(default: $FLOWKIT_HOME or ~/.flowkit)")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("ingest", help="add files (.jsonl {id,title,text}, .txt, .md, .pdf) to a KB")
    s.add_argument("--kb", required=True)
    s.add_argument("files", nargs="+")
    s.add_argument("--chunker", default="indexing.chunk_fixed", help="an indexing operator")
    s.add_argument("--params", default="", help="chunker params as JSON, e.g. '{\"size\": 200}'")
    s.set_defaults(fn=cmd_ingest)

    s = sub.add_parser("run", help="run a flow on one question")
    s.add_argument("flow", help="a flow file, a saved flow name or a template name")
    s.add_argument("--kb", required=True)
    s.add_argument("--question", "-q", required=True)
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_run)

    s = sub.add_parser("trace", help="show a run step by step")
    s.add_argument("run_id")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_trace)

    s = sub.add_parser("flows", help="saved flows: list | import FILE | export NAME")
    s.add_argument("action", choices=["list", "import", "export"])
    s.add_argument("target", nargs="?")
    s.add_argument("--name", help="import under this name")
    s.add_argument("--out", help="export to this file")
    s.set_defaults(fn=cmd_flows)

    s = sub.add_parser("operators", help="list every operator")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_operators)

    s = sub.add_parser("templates", help="list the ready-made flows")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_templates)

    s = sub.add_parser("validate", help="check a flow file and list every problem")
    s.add_argument("file")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_validate)

    s = sub.add_parser("setup", help="ingest the sample knowledge base if it is missing")
    s.set_defaults(fn=cmd_setup)

    s = sub.add_parser("kb", help="list knowledge bases")
    s.set_defaults(fn=cmd_kb)

    from . import cli_judge, cli_more
    cli_more.register(sub)
    cli_judge.register(sub)
    from .export.cli import add_export_parser
    add_export_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.fn(args) or 0)
    except FlowkitError as e:
        err.print(f"[red]error:[/red] {escape(str(e))}", highlight=False)
        return 2
    except KeyboardInterrupt:
        err.print("interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())
