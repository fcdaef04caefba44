"""`flowkit eval ... --fail-if COND [--fail-if COND ...] [--junit FILE.xml]`: a gate for CI on
the evaluation's report (`flowkit.eval.gate` has the grammar and the rules).

    flowkit eval --flow naive_rag --flow ircot --dataset D --kb KB --limit 50 \\
                 --fail-if "f1 < 30" --fail-if "worse-than naive_rag on f1" --junit gate.xml

Every condition is read before anything runs (an unreadable one, or a FLOW the evaluation does not
have, is an error: exit 2, naming it). After the report, a line for each condition that failed on
a flow and exit 1; exit 0 when none did. --junit writes one test case per condition and flow.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from flowkit.errors import FlowkitError
from flowkit.eval.gate import Condition, check, check_flows, parse
from flowkit.eval.junit import write_junit

from . import common


def add_arguments(s: argparse.ArgumentParser) -> None:
    """--fail-if and --junit (on `flowkit eval`)."""
    s.add_argument("--fail-if", action="append", default=[], metavar="COND",
                   help="exit 1 when a flow meets COND: 'METRIC OP NUMBER' (\"f1 < 30\"; rates "
                        "in %%) or 'worse-than FLOW on METRIC' (its paired 95%% interval wholly "
                        "on the worse side of 0); repeat for more")
    s.add_argument("--junit", metavar="FILE.xml",
                   help="write the --fail-if checks as a JUnit XML report (one test case per "
                        "condition and flow)")


def conditions(args: argparse.Namespace) -> tuple[list[Condition], Path | None]:
    """The --fail-if conditions and the --junit file, both checked before any run starts."""
    conds = [parse(text) for text in args.fail_if]
    if args.junit and not conds:
        raise FlowkitError("--junit: there is nothing to report without a --fail-if condition")
    junit = common.out_file(args.junit, "--junit", (".xml",)) if args.junit else None
    return conds, junit


def check_plan(conds: list[Condition], plan: Any) -> None:
    """Refuse a 'worse-than FLOW' that names no flow of the planned evaluation."""
    check_flows(conds, [f.label for f in plan.flows])


def apply(conds: list[Condition], rep: Any, junit: Path | None) -> int:
    """Check the report: print a line per failed condition and flow and a closing line, write
    the JUnit file if asked; 1 when any condition failed, else 0."""
    outcomes = check(conds, rep)
    if junit is not None:
        write_junit(junit, outcomes, f"flowkit eval {rep.eval_id}")
        common.out.print(f"wrote {junit}", soft_wrap=True)
    failed = [o for o in outcomes if o.failed]
    for o in failed:
        common.out.print(f"FAILED {o.message}", soft_wrap=True)
    skipped = sum(o.status == "skipped" for o in outcomes)
    rest = f" ({skipped} skipped: no value)" if skipped else ""
    common.out.print(f"gate: {len(failed)} of {len(outcomes)} checks failed{rest}" if failed else
                     f"gate: all {len(outcomes) - skipped} checks passed{rest}", soft_wrap=True)
    return 1 if failed else 0
