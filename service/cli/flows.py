"""`flowkit flows`, `operators`, `templates`, `validate` and `export`: flows as data."""
from __future__ import annotations

import argparse
import sys

from rich.table import Table

from flowkit.errors import FlowkitError, SpecError
from flowkit.names import check_new_name

from . import common


def cmd_flows(args: argparse.Namespace) -> int:
    from flowkit.errors import ValidationError
    from flowkit.spec import dump, from_dict, to_dict
    from flowkit.validate import check, errors, validate_file
    ws = common.open_workspace(args)
    if args.action == "list":
        table = Table(title="saved flows")
        for col in ("name", "version", "updated", "last run"):
            table.add_column(col)
        for f in ws.store.list_flows():
            table.add_row(f.name, str(f.version), f.updated_at.strftime("%Y-%m-%d %H:%M"),
                          f"{f.last_run_status or ''} {f.last_run_id or ''}")
        common.out.print(table)
    elif args.action == "import":
        if not args.target:
            raise FlowkitError("flows import needs a FILE")
        spec, problems = validate_file(args.target)       # the same reader as `flowkit validate`
        if spec is not None and args.name:
            spec = from_dict({**to_dict(spec), "name": args.name})
            problems = check(spec)
        if spec is None:                                   # unreadable: one line, code + field
            first = problems[0]
            raise SpecError(first.message, first.code,
                            None if first.field == "file" else first.field, args.target)
        if errors(problems):
            raise ValidationError(errors(problems))
        exists = ws.store.flow_exists(spec.name)
        if not exists:                     # a new flow: the one rule for names (flowkit.names)
            check_new_name(spec.name, "flow")
        expected = ws.store.get_flow(spec.name)[1] if exists else None
        v = ws.store.save_flow(spec, expected, message=f"imported from {args.target}")
        common.out.print(f"saved flow '{spec.name}' version {v}")
    elif args.action == "export":
        if not args.target:
            raise FlowkitError("flows export needs a flow NAME")
        out = common.out_file(args.out, "--out") if args.out else None
        spec, _ = ws.store.get_flow(args.target)
        if out is not None:
            dump(spec, out)
            common.out.print(f"wrote {args.out}")
        else:
            from flowkit.spec import dumps
            sys.stdout.write(dumps(spec))
    return 0


def cmd_operators(args: argparse.Namespace) -> int:
    from flowkit.registry import all_operators, describe
    ops = all_operators()
    if args.json:
        common.out.print_json(data=[describe(c) for c in ops.values()])
        return 0
    table = Table(title=f"{len(ops)} operators")
    for col in ("module", "key", "kind", "reads", "writes", "what it does"):
        table.add_column(col, overflow="fold")
    for key, c in ops.items():
        table.add_row(c.module, key, c.kind, ", ".join(c.reads), ", ".join(c.writes), c.summary())
    common.out.print(table)
    return 0


def cmd_templates(args: argparse.Namespace) -> int:
    from flowkit import templates
    specs = templates.all_templates()
    if args.json:
        common.out.print_json(data=[{"name": n, "description": s.description, "nodes": len(s.nodes)}
                             for n, s in specs.items()])
        return 0
    table = Table(title=f"{len(specs)} templates")
    table.add_column("name")
    table.add_column("nodes")
    table.add_column("description", overflow="fold")
    for n, s in specs.items():
        table.add_row(n, str(len(s.nodes)), s.description)
    common.out.print(table)
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from flowkit.validate import validate_file
    _, problems = validate_file(args.file)
    if args.json:
        common.out.print_json(data=[p.to_dict() for p in problems])
    else:
        for p in problems:
            common.out.print(f"{p.severity}: {p}")
        if not problems:
            common.out.print("no problems")
    return 1 if any(p.severity == "error" for p in problems) else 0



def cmd_export(args: argparse.Namespace) -> int:
    from flowkit.export.writer import graph_id, write_package
    why = common.path_problem(args.out)
    if why is not None:
        raise FlowkitError(f"--out {args.out[:40]!r}{'...' if len(args.out) > 40 else ''} {why}")
    spec, version = common.open_workspace(args).resolve_flow(args.flow)
    paths = write_package(spec, args.out, overwrite=args.force, version=version)
    common.out.print(f"exported flow '{spec.name}' as graph '{graph_id(spec)}' to {args.out}: "
                     f"{', '.join(p.name for p in paths)}")
    common.out.print(f"serve it: cd {args.out} && langgraph dev --no-browser")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add the flows, operators, templates, validate and export subcommands."""
    s = sub.add_parser("flows", help="saved flows: list | import FILE | export NAME")
    s.add_argument("action", choices=["list", "import", "export"])
    s.add_argument("target", nargs="?")
    s.add_argument("--name", help="import under this name")
    s.add_argument("--out", help="export to this file")
    s.set_defaults(fn=cmd_flows)

    s = sub.add_parser("operators", help="list every operator")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_operators)

    s = sub.add_parser("templates", help="list the ready-made flows")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_templates)

    s = sub.add_parser("validate", help="check a flow file and list every problem")
    s.add_argument("file")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_validate)


    s = sub.add_parser("export", help="write a flow as a LangGraph package (graph.py, "
                       "langgraph.json, README.md, flow.json) that `langgraph dev` serves")
    s.add_argument("flow", help="a flow file, a saved flow name or a template name")
    s.add_argument("--out", required=True, help="the package folder (created if missing)")
    s.add_argument("--force", action="store_true",
                   help="replace the package's files where the folder already holds some "
                   "(without it, export names them and writes nothing); other files stay")
    s.set_defaults(fn=cmd_export)
