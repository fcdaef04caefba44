"""`flowkit models`: the model catalogue (flowkit.runtime.models) as a table or JSON, the models
pulled into the data directory included; `flowkit models pull REPO FILE` pulls a GGUF from the
Hugging Face Hub (flowkit.runtime.hub)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.table import Table

from flowkit.errors import FlowkitError
from flowkit.runtime.hub import partial_bytes, pull, pulled_models
from flowkit.runtime.models import assemble_all, models_table
from flowkit.runtime.resources import default_data_dir

from . import common


def models_dir(data_dir: str | None) -> Path:
    """Where pulled models go: the data directory's models folder."""
    return (Path(data_dir).expanduser() if data_dir else default_data_dir()) / "models"


def pull_command(words: list[str], data_dir: str | None, revision: str | None = None) -> int:
    """`flowkit models pull REPO FILE`: download a GGUF from the Hub with a progress bar (a pull cut
    short resumes), check its sha256 against the Hub's, then list it; exit 1 with one line when
    the Hub is unreachable, the file is missing or its sha256 differs."""
    if len(words) != 2:
        raise FlowkitError("flowkit models pull REPO FILE: give the Hub repository (owner/name) "
                           "and the GGUF file's name, e.g. flowkit models pull "
                           "ggml-org/gemma-3-1b-it-GGUF gemma-3-1b-it-Q4_K_M.gguf")
    kept = partial_bytes(models_dir(data_dir), words[0], words[1])
    if kept:
        common.err.print(f"going on from the {kept / 1e6:.0f} MB an earlier pull of "
                         f"{words[0]}/{words[1]} downloaded", soft_wrap=True)
    got = pull(words[0], words[1], models_dir(data_dir), revision=revision)
    common.out.print(f"pulled {got.repo}/{got.filename} "          # plain console: text as is
                     f"({got.size_bytes / 1e6:.0f} MB, sha256 {got.sha256[:12]}… checked) to "
                     f"{got.path}", soft_wrap=True)
    common.out.print("use it: the Settings page's GGUF path (llm.model_path) "
                     f"{got.path}", soft_wrap=True)
    return 0


def models_command(paths: list[str], assemble: bool = False, as_json: bool = False,
                   data_dir: str | None = None) -> int:
    """`flowkit models`: print the catalogue (packaged models, the models pulled into the data
    directory and the GGUF paths given) as a table or JSON; with `assemble`, first make the
    packaged models' files ready."""
    out = common.out
    if assemble:
        for p in assemble_all():
            out.print(f"ready: {p}")
    pulled = [str(p) for p in pulled_models(models_dir(data_dir))]
    rows = models_table(pulled + [p for p in paths if p not in pulled])
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=1) + "\n")
        return 0
    table = Table(title="models (reading: gold passages + distractors, bench/reading.py)")
    for col in ("id", "kind", "MB", "EM", "F1", "s/q", "prompt"):
        table.add_column(col, no_wrap=col == "id")
    for r in rows:
        rd = r["reading"] or {}
        table.add_row(r["id"] + (" *" if r["default"] else ""), r["kind"],
                      "" if r["size_mb"] is None else f"{r['size_mb']:.0f}",
                      "" if not rd else f"{rd['em']:.1f}", "" if not rd else f"{rd['f1']:.1f}",
                      "" if not rd else f"{rd['s_per_q']:.2f}", rd.get("variant") or "")
    out.print(table)
    out.print("* the default model (settings: model_path empty)")
    for r in rows:
        out.print(f"{r['id']}: {r['file'] or r['problem']}" + (f" ({r['terms']})" if r["terms"]
                                                                else ""), soft_wrap=True)
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    """`flowkit models [GGUF ...] [--assemble] [--json]`; `flowkit models pull REPO FILE`."""
    data_dir = getattr(args, "data_dir", None)
    if args.paths[:1] == ["pull"]:
        return pull_command(args.paths[1:], data_dir, getattr(args, "revision", None))
    return models_command(args.paths, args.assemble, args.json, data_dir)
