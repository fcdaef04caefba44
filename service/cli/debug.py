"""`flowkit run ... --break`, `flowkit debug RUN_ID ACTION` and `flowkit resume`: pause a run at a
breakpoint, look at its memory and next prompt, edit memory, step, continue or abort.

A paused run is stored in the workspace database: any later command (also after a restart) can
continue it, and of two that try at once only one gets it.
"""
from __future__ import annotations

import argparse
import json
from typing import Any

from rich.table import Table

from flowkit.debug import Pause
from flowkit.errors import FlowkitError, SpecError
from flowkit.run_request import RunRequest
from flowkit.trace import RunEnd
from service.debug import Debugger

from . import common

BREAK_HELP = ("pause the run: node[@visit][:before|:after][?condition], e.g. 'generate', "
              "'judge@2:after', \"retrieve?len(documents) == 0\" (repeatable; the condition reads "
              "memory keys with ==, !=, <, <=, >, >=, in, len(), and, or, not)")
ACTIONS = ("show", "continue", "step", "over", "abort", "set", "break", "prompt")


def _short(v: Any, n: int = 160) -> str:
    s = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)
    return s if len(s) <= n else s[: n - 3] + "..."


def _pause_json(dbg: Debugger, run_id: str, pause: Pause) -> dict[str, Any]:
    data: dict[str, Any] = {"node": pause.node, "visit": pause.visit, "when": pause.when,
                            "reason": pause.reason, "breakpoint": pause.breakpoint,
                            "after_node": pause.after_node, "memory": pause.memory,
                            "counters": pause.counters, "elapsed_s": pause.elapsed_s,
                            "condition_error": pause.condition_error}
    try:
        nxt = dbg.next_prompt(run_id)
        data["next_prompt"] = None if nxt is None else {"kind": nxt.kind, "prompt": nxt.prompt,
                                                         "system": nxt.system}
    except FlowkitError as e:
        data["next_prompt_error"] = str(e)
    return data


def _print_pause(dbg: Debugger, run_id: str, pause: Pause) -> None:
    where = (f"after '{pause.after_node}', before '{pause.node}'" if pause.after_node
             else f"before '{pause.node}'")
    common.out.print(common.styled("[bold yellow]paused[/bold yellow] {} (visit {}): {}", where,
                                   pause.visit, pause.reason))
    if pause.condition_error:
        common.err.print(common.styled("[red]{}[/red]", pause.condition_error))
    for key, value in pause.memory.items():
        if key == "documents" and isinstance(value, list):
            ids = ", ".join(f"{d.get('id')} ({float(d.get('score') or 0):.3f})" for d in value[:8])
            common.out.print(common.styled("  [yellow]documents[/yellow]: {} passages: {}",
                                           len(value), ids))
        elif value not in (None, "", [], {}):
            common.out.print(common.styled("  [yellow]{}[/yellow]: {}", key, _short(value)))
    c = pause.counters
    common.out.print(common.styled("  [dim]steps {}, LLM calls {}, tokens {}, {} s run so far[/dim]",
                                   c.get("steps", 0), c.get("llm_calls", 0), c.get("tokens", 0),
                                   f"{pause.elapsed_s:.1f}"))
    try:
        nxt = dbg.next_prompt(run_id)
    except FlowkitError as e:
        common.err.print(common.styled("  [red]next prompt unavailable:[/red] {}", e))
        nxt = None
    if nxt is not None:
        common.out.print(common.styled("  [cyan]next prompt[/cyan] ({}):", nxt.kind))
        common.out.print(nxt.prompt)
    else:
        common.out.print(common.styled("  [dim]'{}' makes no model call[/dim]", pause.node))
    common.out.print(common.styled("[dim]go on: flowkit debug {} continue | step | over | abort | "
                                   "set KEY JSON[/dim]", run_id))


def _report(dbg: Debugger, end: RunEnd, as_json: bool) -> int:
    view = dbg.show(end.run_id)
    if as_json:
        data: dict[str, Any] = {"run_id": end.run_id, "status": end.status, "answer": end.answer,
                                "error": end.error, "halt_reason": end.halt_reason,
                                "edited": view.edited,
                                "steps": [{"index": s.index, "node": s.node_id, "visit": s.visit,
                                           "operator": s.operator}
                                          for s in dbg.ws.store.steps(end.run_id)]}
        if view.pause is not None:
            data["pause"] = _pause_json(dbg, end.run_id, view.pause)
        common.out.print_json(data=data)
    elif view.pause is not None:
        _print_pause(dbg, end.run_id, view.pause)
    else:
        table = Table(title=f"run {end.run_id} ({end.status})")
        for col in ("#", "node", "visit", "operator", "tokens", "error"):
            table.add_column(col)
        for s in dbg.ws.store.steps(end.run_id):
            table.add_row(str(s.index), s.node_id, str(s.visit), s.operator, str(s.tokens),
                          s.error or "")
        common.out.print(table)
        common.out.print(common.styled("[bold]answer:[/bold] {}", end.answer))
        if view.edited:
            common.out.print(common.styled("[dim]memory edited while paused: {}[/dim]",
                                           ", ".join(e["key"] for e in view.edits)))
        if end.error:
            common.err.print(common.styled("[red]error:[/red] {}", end.error))
    return 0 if end.status in ("ok", "budget_exceeded", "paused") else 1


def breakpoints_of(args: argparse.Namespace) -> list[str]:
    """The breakpoints a `flowkit run` was given: --break as written, --break-before NODE[:visit]
    as NODE[@visit]."""
    out = list(getattr(args, "breaks", None) or [])
    for text in getattr(args, "break_before", None) or []:
        node, _, visit = text.partition(":")
        out.append(f"{node}@{visit}" if visit else node)
    return out


def cmd_run_debug(args: argparse.Namespace) -> int:
    """`flowkit run` with breakpoints: run until one pauses it, then print where and the memory."""
    ws = common.open_workspace(args)
    dbg = Debugger(ws)
    spec, version = ws.resolve_flow(args.flow)
    end = dbg.start(spec, RunRequest(args.question, kb=args.kb, flow_version=version),
                    breakpoints_of(args))
    return _report(dbg, end, args.json)


def _json_value(text: str, key: str) -> Any:
    """The value typed for memory key `key`, read as the replay page's fork form reads it
    (`flowkit.memory_edit.parse_edit`: bounded size, text, list length and depth)."""
    from flowkit.memory_edit import parse_edit
    try:
        return parse_edit(key, text)
    except SpecError as e:
        raise SpecError(f"{e.detail} (give the value as JSON, e.g. '\"text\"' or '[1, 2]')",
                        e.code, e.field or key) from None


def cmd_debug(args: argparse.Namespace) -> int:
    ws = common.open_workspace(args)
    dbg = Debugger(ws)
    action, rest = args.action, list(args.args)
    run_id = ws.store.get_run(args.run_id).id
    if action in ("continue", "step", "over"):
        if rest:
            raise FlowkitError(f"'{action}' takes no arguments (got {' '.join(rest)})")
        return _report(dbg, dbg.resume(run_id, action), args.json)
    if action == "show":
        return _report(dbg, _end_of(dbg, run_id), args.json)
    if action == "prompt":
        _, pause = dbg.require_paused(run_id, "preview the next prompt of")
        nxt = dbg.next_prompt(run_id)
        common.out.print(nxt.prompt if nxt else f"'{pause.node}' makes no model call")
        return 0
    if action == "abort":
        dbg.abort(run_id)
        common.out.print(f"run {run_id} aborted (status cancelled)")
        return 0
    if action == "set":
        if len(rest) != 2:
            raise FlowkitError("usage: flowkit debug RUN_ID set KEY JSON_VALUE")
        key, text = rest
        view = dbg.set_value(run_id, key, _json_value(text, key))
        common.out.print(f"set {key} of paused run {run_id} (edit {len(view.edits)}, recorded as "
                         f"step {view.edits[-1]['step']})")
        return 0
    view = dbg.set_breakpoints(run_id, rest)          # "break"
    common.out.print(f"breakpoints of {run_id}: "
                     f"{', '.join(b.label() for b in view.breakpoints) or '(none)'}")
    return 0


def _end_of(dbg: Debugger, run_id: str) -> RunEnd:
    stored = dbg.ws.store.get_run(run_id)
    run = stored.record
    return RunEnd(run_id=run.run_id, status=run.status, answer=run.answer,
                  citations=list(run.citations), steps=stored.steps, cost=run.cost,
                  error=run.error, halt_reason=run.halt_reason)


def cmd_resume(args: argparse.Namespace) -> int:
    """`flowkit resume RUN_ID [--set key=json]`: apply the edits, then continue."""
    ws = common.open_workspace(args)
    dbg = Debugger(ws)
    run_id = ws.store.get_run(args.run_id).id
    for item in args.set or []:
        key, sep, text = item.partition("=")
        if not sep:
            raise FlowkitError(f"--set {item!r}: write KEY=JSON, e.g. answer='\"Tessel\"'")
        dbg.set_value(run_id, key.strip(), _json_value(text, key.strip()))
    return _report(dbg, dbg.resume(run_id, args.mode), args.json)


def add_run_options(s: argparse.ArgumentParser) -> None:
    """The breakpoint options of `flowkit run`."""
    s.add_argument("--break", dest="breaks", action="append", metavar="SPEC", help=BREAK_HELP)
    s.add_argument("--break-before", dest="break_before", action="append", metavar="NODE[:VISIT]",
                   help="pause before NODE (on its VISIT-th visit only): the same as --break "
                        "NODE[@VISIT]")


def register(sub: argparse._SubParsersAction) -> None:
    """Add the debug and resume subcommands."""
    s = sub.add_parser("debug", help="a paused run: show, continue, step, over, abort, set, "
                       "break, prompt")
    s.add_argument("run_id")
    s.add_argument("action", choices=ACTIONS, help="show: where it paused and the memory; "
                   "continue: to the next breakpoint or the end; step: one node; over: out of the "
                   "loop it is in; abort: end it as cancelled; set KEY JSON: edit a memory key; "
                   "break SPEC...: replace its breakpoints; prompt: the next node's prompt")
    s.add_argument("args", nargs="*", help="set: KEY JSON_VALUE; break: breakpoint SPECs")
    s.add_argument("--json", action="store_true")
    s.add_argument("--no-cache", action="store_true", help=common.NO_CACHE_HELP)
    s.set_defaults(fn=cmd_debug)

    s = sub.add_parser("resume", help="continue a paused run, after optional memory edits")
    s.add_argument("run_id")
    s.add_argument("--set", action="append", metavar="KEY=JSON",
                   help="set a memory key first (repeatable), e.g. --set 'drafts=[]'")
    s.add_argument("--mode", choices=("continue", "step", "over"), default="continue")
    s.add_argument("--json", action="store_true")
    s.add_argument("--no-cache", action="store_true", help=common.NO_CACHE_HELP)
    s.set_defaults(fn=cmd_resume)
