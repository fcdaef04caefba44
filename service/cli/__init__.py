"""The `flowkit` command line (`python -m service.cli`, or the `flowkit` script).

One module a concern, each adding its subcommands with `register(sub)`:
kb (ingest, setup, kb), runs (run, trace), flows (flows, operators, templates, validate, export),
evals (eval, evals, dataset), grade (judge, label: model judges on an evaluation), judge
(train-judge), cache (cache stats, cache clear),
serve (serve-model, doctor), debug (debug, resume: paused runs; `run --break`), search (search: flow search). `common` holds
the consoles and the one workspace factory, `common.open_workspace`.
"""
from __future__ import annotations

import argparse
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from rich.markup import escape

from flowkit.errors import FlowkitError

from . import cache, common, debug, evals, flows, grade, judge, kb, runs, search, serve

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The parser with every subcommand."""
    p = argparse.ArgumentParser(prog="flowkit", description="Design, run, replay and compare "
                                "Modular RAG flows.")
    p.add_argument("--data-dir", default=None, help="where SQLite, Chroma and BM25 live "
                   "(default: $FLOWKIT_HOME or ~/.flowkit)")
    sub = p.add_subparsers(dest="command", required=True)
    for module in (kb, runs, flows, evals, grade, judge, cache, serve, debug, search):
        module.register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    """Run one command; 2 on a flowkit error (printed as one line), 130 on Ctrl-C."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.fn(args) or 0)
    except FlowkitError as e:
        common.err.print(f"[red]error:[/red] {escape(str(e))}", highlight=False)
        return 2
    except KeyboardInterrupt:
        common.err.print("interrupted")
        return 130
