"""What every `flowkit` subcommand shares: the two consoles, the one workspace factory, a progress
bar, JSON options, and "ingest a dataset's corpus unless the KB has chunks"."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

from flowkit.errors import SpecError
from service.workspace import Workspace

out = Console()
err = Console(stderr=True)


def open_workspace(args: argparse.Namespace) -> Workspace:
    """The Workspace for --data-dir: the one factory of the CLI (tests replace it to inject
    fakes: `monkeypatch.setattr(common, "open_workspace", ...)`)."""
    ws = Workspace(args.data_dir)
    if getattr(args, "no_cache", False):
        ws.set_cache(False)
    return ws


NO_CACHE_HELP = ("compute every model call (do not serve deterministic calls from the completion "
                 "cache, nor store them)")


def progress_bar(label: str) -> Progress:
    """A progress bar on stderr (`label` names the work for the reader of the code)."""
    return Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                    TimeRemainingColumn(), console=err, transient=False)


def json_option(text: str, option: str) -> dict[str, Any]:
    """A JSON object given on the command line, or SpecError naming the option."""
    from flowkit.jsonread import parse
    from flowkit.spec import MAX_DEPTH, MAX_STRING
    try:
        value = parse(text, option, max_depth=MAX_DEPTH, max_string=MAX_STRING)
    except SpecError as e:
        raise SpecError(e.detail, e.code, option) from None
    if not isinstance(value, dict):
        raise SpecError(f"must be a JSON object like '{{\"size\": 200}}'; got "
                        f"{type(value).__name__}", code="bad_json", field=option)
    return value


def ingest_corpus(ws: Workspace, dataset: Any, kb: str, force: bool = False) -> int:
    """Ingest the dataset's corpus.jsonl into `kb` unless it is ready (service.knowledge.
    ingest_corpus, with a progress bar). Returns chunks added (0 when it was ready)."""
    from service.knowledge import ingest_corpus as ingest_unless_ready
    if ws.resources.kb(kb).ready and not force:
        return 0
    with progress_bar("ingest") as prog:
        task = prog.add_task(f"ingest {Path(dataset.corpus or '').name} into '{kb}'", total=None)
        return ingest_unless_ready(ws, dataset, kb, force=force,
                                   progress=lambda d, t: prog.update(task, completed=d, total=t))
