"""`flowkit run` and `flowkit trace`: run a flow on one question, show a stored run."""
from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

from rich.table import Table

from flowkit.run_request import RunHooks, RunRequest
from flowkit.trace import RunEnd, RunStart, StepEvent
from service.runs import RunInfo

from . import common, debug, telemetry


class _LiveSteps:
    """Prints each step as it finishes (stderr), so a long run shows progress."""

    def start(self, run: RunStart) -> None:
        common.err.print(common.styled("[dim]run {}: {} on '{}'[/dim]", run.run_id, run.flow_name,
                                       run.kb))

    def step(self, e: StepEvent) -> None:
        mark = "[red]x[/red]" if e.error else "[green]>[/green]"
        common.err.print(common.styled(f"  {mark} {{}} {{}} (visit {{}}) {{}} {{}} tok {{}} ms",
                                       f"{e.index:>3}", e.node_id, e.visit, e.operator, e.tokens,
                                       f"{e.ms:.0f}"))

    def end(self, result: RunEnd) -> None:
        pass


def cmd_run(args: argparse.Namespace) -> int:
    if debug.breakpoints_of(args):
        return debug.cmd_run_debug(args)
    ws = common.open_workspace(args)
    spec, version = ws.resolve_flow(args.flow)
    result = ws.run(spec, RunRequest(args.question, kb=args.kb, flow_version=version),
                    RunHooks(sink=None if args.json else _LiveSteps()))
    steps = ws.store.steps(result.run_id)
    if args.json:
        common.out.print_json(data={"run_id": result.run_id, "status": result.status,
                             "answer": result.answer, "citations": result.citations,
                             "error": result.error, "halt_reason": result.halt_reason,
                             "steps": [{"index": s.index, "node": s.node_id, "visit": s.visit,
                                        "operator": s.operator, "tokens": s.tokens, "ms": s.ms,
                                        "error": s.error} for s in steps],
                             "totals": {"steps": result.steps, "llm_calls": result.cost.calls,
                                        "tokens": result.cost.tokens, "ms": result.cost.ms,
                                        "wall_ms": result.wall_ms,
                                        "cached_calls": result.cost.cached}})
    else:
        table = Table(title=f"run {result.run_id} ({result.status})")
        for col in ("#", "node", "visit", "operator", "LLM calls", "tokens", "ms", "error"):
            table.add_column(col)
        for s in steps:
            table.add_row(str(s.index), s.node_id, str(s.visit), s.operator, str(len(s.llm_calls)),
                          str(s.tokens), f"{s.ms:.0f}", s.error or "")
        common.out.print(table)
        common.out.print(common.styled("[bold]answer:[/bold] {}", result.answer))
        if result.citations:
            common.out.print(common.styled("[bold]cites:[/bold] {}", ", ".join(result.citations)))
        cost = result.cost
        common.out.print(f"totals: {result.steps} steps, {cost.calls} LLM calls, {cost.tokens} "
                  f"tokens, {cost.ms / 1000:.1f} s")
        if cost.cached:
            common.out.print(common.styled(
                "[dim]{} of {} LLM calls served from the completion cache; took {} s "
                "(--no-cache computes them)[/dim]", cost.cached, cost.calls,
                f"{(result.wall_ms or 0) / 1000:.1f}"))
        if result.error:
            common.err.print(common.styled("[red]error:[/red] {}", result.error))
    return 0 if result.status in ("ok", "budget_exceeded") else 1


def _short(v: Any, n: int = 160) -> str:
    s = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)
    return s if len(s) <= n else s[: n - 3] + "..."


def _run_json(run: RunInfo) -> dict[str, Any]:
    """A stored run as `trace --json` has always written it: its fields by the names the runs
    table uses (`id`; the cost flat as `llm_calls`, `cached_calls`, `tokens`, `ms`; the stored
    times as text), without its spec."""
    rec = run.record
    kept = {f.name: getattr(rec, f.name) for f in dataclasses.fields(rec)
            if f.name not in ("run_id", "cost", "started_at", "ended_at", "citations")}
    own = {f.name: getattr(run, f.name) for f in dataclasses.fields(run)
           if f.name not in ("record", "spec", "started_at", "ended_at")}
    return {"id": run.id, **kept, "citations": list(rec.citations), **own,
            "llm_calls": rec.cost.calls, "cached_calls": rec.cost.cached,
            "tokens": rec.cost.tokens, "ms": rec.cost.ms,
            "started_at": str(run.started_at), "ended_at": str(run.ended_at)}


def cmd_trace(args: argparse.Namespace) -> int:
    from flowkit.trace import diff
    if args.otlp is not None:
        return telemetry.cmd_trace_otlp(args)
    ws = common.open_workspace(args)
    run = ws.store.get_run(args.run_id)
    steps = ws.store.steps(run.id)
    if args.json:
        common.out.print_json(data={"run": _run_json(run),
                             "steps": [s.to_dict() for s in steps]})
        return 0
    rec = run.record
    common.out.print(common.styled("[bold]run {}[/bold] flow {} v{} status {}; model {} ({}); kb {}",
                                   run.id, rec.flow_name, rec.flow_version or "-", rec.status,
                                   rec.model_id, rec.model_hash[:12], rec.kb))
    common.out.print(f"question: {rec.question}")
    for s in steps:
        common.out.rule(f"step {s.index}: {s.node_id} (visit {s.visit}) {s.operator}  "
                 f"{s.tokens} tok, {s.ms:.0f} ms")
        for key, change in diff(s.memory_before, s.memory_after).items():
            common.out.print(common.styled("  [yellow]{}[/yellow]: {} -> {}", key,
                                           _short(change["before"]), _short(change["after"])))
        for c in s.llm_calls:
            common.out.print(common.styled("  [cyan]prompt[/cyan] ({} tok): {}", c.prompt_tokens,
                                           _short(c.prompt, 400)))
            common.out.print(common.styled("  [cyan]completion[/cyan] ({} tok, {} ms): {}",
                                           c.completion_tokens, f"{c.ms:.0f}",
                                           _short(c.completion, 300)))
        for r in s.retrievals:
            ids = ", ".join(f"{d['id']} ({d['score']:.3f})" for d in r.docs)
            common.out.print(common.styled("  [magenta]{}[/magenta] '{}': {}", r.method,
                                           _short(r.query, 80), ids))
        if s.error:
            common.out.print(common.styled("  [red]error:[/red] {}", s.error))
    common.out.rule()
    common.out.print(f"answer: {rec.answer}\nstatus: {rec.status}" +
              (f" ({rec.halt_reason})" if rec.halt_reason else "") +
              (f"\nerror: {rec.error}" if rec.error else ""))
    return 0



def register(sub: argparse._SubParsersAction) -> None:
    """Add the run and trace subcommands."""
    s = sub.add_parser("run", help="run a flow on one question")
    s.add_argument("flow", help="a flow file, a saved flow name or a template name (prefix "
                   "file:, saved: or template: to pick one when a name is also a file)")
    s.add_argument("--kb", required=True)
    s.add_argument("--question", "-q", required=True)
    s.add_argument("--json", action="store_true")
    s.add_argument("--no-cache", action="store_true", help=common.NO_CACHE_HELP)
    debug.add_run_options(s)
    s.set_defaults(fn=cmd_run)

    s = sub.add_parser("trace", help="show a run step by step")
    s.add_argument("run_id")
    s.add_argument("--json", action="store_true")
    telemetry.add_otlp_option(s)
    s.set_defaults(fn=cmd_trace)
