"""`flowkit search`: a budgeted search for the flow, with a front confirmed on unseen questions.

    flowkit search SPACE.json --dataset D --kb K --search-questions 101-300
                   --confirm-questions 1-100 --budget-calls N [--budget-hours H]
                   [--first-batch 10] [--halving 2 [--halving-from 40]]
                   [--workers N [--ray-address A] | --concurrency N]
                   [--objective f1|em|acc|groundedness|answer_relevance|context_relevance|correctness
                    [--judge-model M]]
                   [--check | --estimate]

It prints the cost estimate first, then races the candidates (progress on stderr; who is
dropped and why), saves the kept ones as flows, and prints the front with its search and
confirmation figures. Run the same command again after a kill (or Ctrl-C) and it resumes: the
state is `SPACE.search-<id>.json` beside the space, the answers are in the workspace database.
`--check` only validates the space; `--estimate` prints the estimate and stops. `--objective`
ranks on EM, Acc or a model judge's score instead of F1 (for a question set without answers:
groundedness, answer_relevance or context_relevance); the judge's calls are counted apart.
"""
from __future__ import annotations

import argparse
from typing import Any

from rich.table import Table

from flowkit.search.objective import names as objective_names

from . import common
from .evals import add_concurrency_arg, add_worker_args


def _table(plan: Any) -> Table:
    from service.search import front_of
    st = plan.state
    front = {e.cid for e in front_of(st.entries)}
    goal = st.quality()
    q = goal.short
    table = Table(title=f"search {st.search_id}: {st.race_status or 'racing'}, phase {st.phase} "
                        f"({goal.label()} in %; confirmation {q} minus the best hand-written "
                        "flow, 95% CI)")
    for col in ("cand", "candidate", "status", "n", f"search {q}", "tokens/q", "s/q",
                f"confirm {q}", "vs best written", "flow"):
        table.add_column(col, overflow="fold")
    for e in st.entries:
        c = st.confirm.get(e.cid)
        conf = f"{100 * c.score:.1f} (n={c.n})" if c else ""
        delta = (f"{100 * c.delta:+.1f} [{100 * c.low:+.1f}, {100 * c.high:+.1f}]"
                 if c and c.vs != e.cid else ("reference" if c else ""))
        table.add_row(e.cid + (" *" if e.cid in front else ""),
                      e.candidate.describe(), e.status, str(e.reached),
                      "" if e.score is None else f"{100 * e.score:.1f}",
                      "" if e.tokens is None else f"{e.tokens:.0f}",
                      "" if e.seconds is None else f"{e.seconds:.2f}", conf, delta,
                      f"{e.flow_name} v{e.flow_version}" if e.flow_name else "")
    return table


def _print_reasons(plan: Any) -> None:
    """Why each candidate was dropped or kept, a plain line each (too long for a table column:
    off a terminal the table is 80 characters wide)."""
    for e in plan.state.entries:
        if e.reason:
            common.out.print(f"why {e.cid} ({e.status}): {e.reason}", soft_wrap=True)


def cmd_search(args: argparse.Namespace) -> int:
    from service import search
    search.check_halving(args.halving, "--halving")     # as the Search page, before anything runs
    search.check_halving_from(args.halving_from, "--halving-from")
    ws = common.open_workspace(args)
    if args.check:
        space, flows = search.load(ws, args.space)
        common.out.print(f"search space '{space.name}' is valid: {len(flows)} flow(s), "
                         f"{len(space.params)} param axes, {len(space.operators)} operator "
                         f"axes, {len(space.models)} model(s)")
        return 0
    if not (args.dataset and args.kb and args.search_questions and args.confirm_questions
            and args.budget_calls):
        from flowkit.errors import FlowkitError
        raise FlowkitError("search needs --dataset, --kb, --search-questions, "
                           "--confirm-questions and --budget-calls")
    req = search.SearchRequest(args.space, args.dataset, args.kb, args.search_questions,
                               args.confirm_questions, args.budget_calls, args.budget_hours,
                               args.first_batch, 2.0, args.halving, args.workers,
                               args.ray_address or "", halving_from=args.halving_from,
                               objective=args.objective, judge_model=args.judge_model or "",
                               concurrency=args.concurrency)
    plan = search.prepare(ws, req)
    est = search.estimate(plan)
    common.err.print(common.styled("[bold]search {}[/bold] ({}; state in {})", plan.state.search_id,
                                   "resumed" if plan.resumed else "new", plan.state_file))
    common.err.print(f"estimate: {est.describe()}")
    if args.estimate:
        return 0
    from flowkit.eval.concurrent import plan_execution
    execution = plan_execution(ws.resources.settings.llm, args.concurrency)
    if execution.note:
        common.err.print(common.styled("[yellow]note:[/yellow] {}", execution.note))
    done = [0]

    def on_run(e: Any, which: str, p: Any) -> None:
        done[0] += 1
        if p.status != "skipped":
            common.err.print(common.styled("[dim]{} {} question {}: {} · {} calls computed[/dim]",
                                           e.cid, which, p.question_index + 1, p.status,
                                           plan.state.budget.spent_calls + p.cost.computed))

    st = search.run(ws, plan, log=lambda m: common.err.print(m), on_run=on_run)
    b = st.budget
    common.err.print(f"model calls: {b.spent_calls} computed by the race (budget {b.calls}), "
                     f"{b.confirm_calls} to confirm, {b.cached_calls} served from the cache; {sum(e.status == 'dropped' for e in st.entries)} "
                     f"of {len(st.entries)} candidates dropped early")
    if st.quality().is_judge:
        common.err.print(f"judge calls ({st.quality().label()}): {b.judge.calls} "
                         f"({b.judge.cached} from the cache), {b.judge.tokens} tokens; "
                         "counted apart from the candidates' cost and the budget")
    common.out.print(_table(plan))
    _print_reasons(plan)
    _print_front(plan)
    return 0 if st.phase == "done" else 3


def _print_front(plan: Any) -> None:
    """One plain line per front candidate: both quality figures (F1 or the objective, named),
    the interval, the cost."""
    from service.search import front_of
    goal = plan.state.quality()
    q = goal.label()
    for e in front_of(plan.state.entries):
        c = plan.state.confirm.get(e.cid)
        conf = (f"confirm {q} {100 * c.score:.1f} on {c.n} ({100 * c.delta:+.1f} "
                f"[{100 * c.low:+.1f}, {100 * c.high:+.1f}] vs {c.vs}), "
                f"{c.tokens:.0f} tokens/q" if c else "not confirmed yet")
        common.out.print(f"front {e.cid} ({e.candidate.describe()}): "
                         f"search {q} {100 * (e.score or 0):.1f} on {e.reached}, "
                         f"{e.tokens or 0:.0f} tokens/q; {conf}; flow {e.flow_name} "
                         f"v{e.flow_version}", soft_wrap=True)


def register(sub: argparse._SubParsersAction) -> None:
    """Add the search subcommand."""
    s = sub.add_parser("search", help="search a space of flows, params and models on a question "
                       "split, race them under a budget, confirm the front (resumable)")
    s.add_argument("space", help="the search-space JSON file (see flowkit.search.space)")
    s.add_argument("--dataset", help="a question set (as for flowkit eval)")
    s.add_argument("--kb", help="the knowledge base every candidate answers from")
    s.add_argument("--search-questions", help="1-based ranges the race uses, e.g. 101-300")
    s.add_argument("--confirm-questions", help="ranges the front is confirmed on, e.g. 1-100 "
                   "(never used by the race)")
    s.add_argument("--budget-calls", type=common.int_at_least(1), help="model calls the race may compute")
    s.add_argument("--budget-hours", type=float, default=None, help="hours the race may take")
    s.add_argument("--first-batch", type=common.int_at_least(1), default=10, help="questions in the first batch "
                   "(each next batch doubles)")
    s.add_argument("--halving", type=float, default=0.0, help="also keep only the top 1/H after "
                   "each batch (successive halving; 0: the interval rule alone; H must be 0 "
                   "or more than 1)")
    s.add_argument("--halving-from", type=common.int_at_least(0), default=0, metavar="N", help="halve only after "
                   "batches of at least N questions (0: from the first; the interval rule "
                   "acts from the first either way); larger batches judge more steadily")
    add_worker_args(s)
    add_concurrency_arg(s)
    s.add_argument("--objective", default="f1", choices=objective_names(), metavar="NAME",
                   help="what the race ranks on: f1 (default), em, acc, or a model judge's "
                   "score (groundedness, answer_relevance, context_relevance: no gold answers "
                   "needed; correctness needs them); judge calls are counted apart. A resumed "
                   "search keeps its objective. Choices: " + ", ".join(objective_names()))
    s.add_argument("--judge-model", default="", metavar="M", help="a judge objective's model: "
                   "default (the workspace's), a packaged id or a .gguf path")
    s.add_argument("--check", action="store_true", help="only validate the space file")
    s.add_argument("--estimate", action="store_true", help="print the estimate and stop")
    s.set_defaults(fn=cmd_search)
