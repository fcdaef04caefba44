"""`flowkit ingest`, `flowkit setup` and `flowkit kb`: knowledge bases."""
from __future__ import annotations

import argparse

from rich.table import Table

from flowkit.runtime.kb import CHANGING, COMPLETE, INTERRUPTED

from . import common

#: The formats `flowkit ingest` reads (the Knowledge page's upload types).
FORMATS = ".pdf, .docx, .html/.htm, .md, .txt, .jsonl {id,title,text}, .zip of them"
INGEST_HELP = (f"Read files, folders and .zip files ({FORMATS}), chunk them, embed the chunks "
               "and index them into a knowledge base (created if new). Every path is read and "
               "chunked before anything is written: a file that cannot be read is named and the "
               "knowledge base stays as it was.")


def cmd_ingest(args: argparse.Namespace) -> int:
    from flowkit.ingest import ingest
    params = common.json_option(args.params, "--params") if args.params else {}
    ws = common.open_workspace(args)
    with common.progress_bar("ingest") as prog:
        task = prog.add_task(f"ingest into '{args.kb}'", total=None)
        n = ingest(ws.resources, args.kb, args.files, chunker=args.chunker, params=params,
                   progress=lambda done, total: prog.update(task, completed=done, total=total))
    common.out.print(f"ingested {n} chunks into knowledge base '{args.kb}' "
              f"({ws.resources.kb(args.kb).count()} in all)")
    return 0


def cmd_setup(args: argparse.Namespace) -> int:
    from flowkit.ingest import SAMPLE_KB, ensure_sample
    ws = common.open_workspace(args)
    with common.progress_bar("sample") as prog:
        task = prog.add_task("sample knowledge base", total=None)
        done = ensure_sample(ws.resources, progress=lambda d, t: prog.update(task, completed=d,
                                                                             total=t))
    kb = ws.resources.kb(SAMPLE_KB)
    common.out.print(f"{'ingested' if done else 'ready'}: knowledge base '{SAMPLE_KB}' with {kb.count()} "
              f"chunks in {ws.data_dir}")
    return 0


#: What `flowkit kb` shows in its state column, by KnowledgeBase.state.
STATE_TEXT = {COMPLETE: "complete", CHANGING: "being changed",
              INTERRUPTED: "INTERRUPTED: ingest again"}


def cmd_kb(args: argparse.Namespace) -> int:
    ws = common.open_workspace(args)
    table = Table(title="knowledge bases")
    for col in ("name", "state", "chunks", "chunker", "embedder"):
        table.add_column(col)
    interrupted = []
    for name in ws.resources.kb_names():
        kb = ws.resources.kb(name)
        meta = kb.meta()
        state = kb.state
        if state == INTERRUPTED:
            interrupted.append(name)
        count = kb.count()
        shown = "empty" if state == COMPLETE and not count else STATE_TEXT.get(state, state)
        table.add_row(name, shown, str(count),
                      str(meta.get("chunker", "")), str(meta.get("embedder", "")))
    common.out.print(table)
    for name in interrupted:
        common.err.print(f"knowledge base '{name}': its last ingest was interrupted; ingest its "
                         f"files again (flowkit ingest --kb {name} FILE...) to complete it")
    return 0



def register(sub: argparse._SubParsersAction) -> None:
    """Add the ingest, setup and kb subcommands."""
    s = sub.add_parser("ingest", help=f"add files, folders or .zip files ({FORMATS}) to a KB",
                       description=INGEST_HELP)
    s.add_argument("--kb", required=True)
    s.add_argument("files", nargs="+", metavar="PATH",
                   help="a file, a folder (its files of those types, sub-folders too) or a .zip")
    s.add_argument("--chunker", default=None,
                   help="an indexing operator (default: the knowledge base's own; "
                        "indexing.chunk_structure for a new one)")
    s.add_argument("--params", default="", help="chunker params as JSON, e.g. '{\"size\": 200}'")
    s.set_defaults(fn=cmd_ingest)

    s = sub.add_parser("setup", help="ingest the sample knowledge base if it is missing")
    s.set_defaults(fn=cmd_setup)

    s = sub.add_parser("kb", help="list knowledge bases")
    s.set_defaults(fn=cmd_kb)
