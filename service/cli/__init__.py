"""The `flowkit` command line (`python -m service.cli`, or the `flowkit` script).

One module a concern, each adding its subcommands with `register(sub)`:
kb (ingest, setup, kb), runs (run, trace), flows (flows, operators, templates, validate, export),
evals (eval, evals, dataset), judge (judge, label: model judges on an evaluation), train_judge
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

import sys
from typing import NoReturn

from flowkit.errors import FlowkitError, ValidationError

from . import cache, common, debug, evals, flows, judge, kb, runs, search, serve, train_judge

__all__ = ["build_parser", "main"]


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line: 'flowkit eval: error: argument --k:
    must be a whole number >= 0; got '-5' (flowkit eval --help)'."""

    def error(self, message: str) -> NoReturn:
        message = common.shorten(common.one_line(message))
        raise _UsageError(f"{self.prog}: error: {message} ({self.prog} --help)")


class _UsageError(Exception):
    """A command line argparse refused (main prints it and returns 2)."""


def build_parser() -> argparse.ArgumentParser:
    """The parser with every subcommand."""
    p = _Parser(prog="flowkit", description="Design, run, replay and compare Modular RAG flows.")
    p.add_argument("--data-dir", default=None, help="where SQLite, Chroma and BM25 live "
                   "(default: $FLOWKIT_HOME or ~/.flowkit)")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for module in (kb, runs, flows, evals, judge, train_judge, cache, serve, debug, search):
        module.register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    """Run one command; 2 on a flowkit error or a file the system refuses (printed as one line),
    130 on Ctrl-C."""
    given = sys.argv[1:] if argv is None else argv
    bad = next((i for i, a in enumerate(given) if "\x00" in a), None)
    if bad is not None:                       # no process can pass one; a caller in Python can
        common.err.print(f"error: argument {bad + 1} holds a NUL character", soft_wrap=True)
        return 2
    try:
        args = build_parser().parse_args(argv)
    except _UsageError as e:
        common.err.print(str(e), soft_wrap=True)
        return 2
    try:
        common.data_dir(args.data_dir)
        return int(args.fn(args) or 0)
    except ValidationError as e:              # the one multi-line error: a problem a line
        common.err.print(common.styled("[red]error:[/red] {}", common.one_line(
            f"the flow has {len(e.problems)} problem(s):")), soft_wrap=True)
        for p in e.problems:
            common.err.print(f"  - {common.shorten(common.one_line(str(p)))}", soft_wrap=True)
        return 2
    except FlowkitError as e:
        common.err.print(common.styled("[red]error:[/red] {}",
                                       common.shorten(common.one_line(str(e)))), soft_wrap=True)
        return 2
    except OSError as e:            # a path the system refused: one line naming it
        where = f": {e.filename}" if e.filename else ""
        common.err.print(common.styled("[red]error:[/red] {}", common.shorten(common.one_line(
            f"{e.strerror or e}{where}"))), soft_wrap=True)
        return 2
    except KeyboardInterrupt:
        common.err.print("interrupted")
        return 130
