"""`flowkit export FLOW --out DIR`: write a flow as a LangGraph package (graph.py, langgraph.json)."""
from __future__ import annotations

import argparse
from typing import Any


def add_export_parser(sub: Any) -> None:
    """Register the `export` subcommand on the CLI's subparsers."""
    s = sub.add_parser("export", help="write a flow as a LangGraph package (graph.py, "
                       "langgraph.json, README.md, flow.json) that `langgraph dev` serves")
    s.add_argument("flow", help="a flow file, a saved flow name or a template name")
    s.add_argument("--out", required=True, help="the package folder (created if missing)")
    s.add_argument("--force", action="store_true", help="overwrite an earlier export there")
    s.set_defaults(fn=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    from ..cli import _workspace, out
    from .writer import graph_id, write_package
    spec, _ = _workspace(args).resolve_flow(args.flow)
    paths = write_package(spec, args.out, overwrite=args.force)
    out.print(f"exported flow '{spec.name}' as graph '{graph_id(spec)}' to {args.out}: "
              f"{', '.join(p.name for p in paths)}")
    out.print(f"serve it: cd {args.out} && langgraph dev --no-browser", highlight=False)
    return 0
