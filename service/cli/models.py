"""`flowkit models`: the model catalogue (flowkit.runtime.models) as a table or JSON."""
from __future__ import annotations

import argparse
import json
import sys

from rich.table import Table

from flowkit.runtime.models import assemble_all, models_table

from . import common


def models_command(paths: list[str], assemble: bool = False, as_json: bool = False) -> int:
    """`flowkit models`: print the catalogue (packaged models and the GGUF paths given) as a table
    or JSON; with `assemble`, first make the packaged models' files ready."""
    out = common.out
    if assemble:
        for p in assemble_all():
            out.print(f"ready: {p}")
    rows = models_table(paths)
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
    """`flowkit models [GGUF ...] [--assemble] [--json]`."""
    return models_command(args.paths, args.assemble, args.json)
