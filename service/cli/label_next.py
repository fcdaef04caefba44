"""`flowkit label EVAL_ID --next [--flow F] [--metric M] [--count N]`: the answers to label next
(`service.label_next`), each with the command that labels it."""
from __future__ import annotations

import argparse
import shlex

from rich.table import Table

from . import common


def cmd_next(args: argparse.Namespace) -> int:
    from service.label_next import next_to_label
    ws = common.open_workspace(args)
    try:
        nxt = next_to_label(ws, args.eval_id, args.metric, args.flow, args.count)
    finally:
        ws.close()
    common.out.print(nxt.line(), soft_wrap=True)
    if not nxt.suggestions:
        common.out.print("nothing left to label: every answer that counts is labelled",
                         soft_wrap=True)
        return 0
    table = Table(title=f"label next ({nxt.metric}, evaluation {nxt.eval_id})")
    for col in ("question", "flow", "answer", "label it with"):
        table.add_column(col, overflow="fold")
    for s in nxt.suggestions:
        for i, (flow, answer) in enumerate(s.answers.items()):
            command = (f"flowkit label {shlex.quote(nxt.eval_id)} --flow {shlex.quote(flow)} "
                       f"--question {shlex.quote(s.question_id)} --metric {nxt.metric} "
                       "--value 1|0")
            table.add_row(f"{s.question_id}: {s.question}" if i == 0 else "", flow, answer or "-",
                          command)
    common.out.print(table)
    return 0
