"""`flowkit cache stats` and `flowkit cache clear`: the completion cache in the workspace database."""
from __future__ import annotations

import argparse
import datetime as dt

from rich.table import Table

from flowkit.runtime.completion_cache import KEY_PARTS

from . import common


def cmd_cache(args: argparse.Namespace) -> int:
    ws = common.open_workspace(args)
    cache = ws.cache_store
    if args.action == "clear":
        n = cache.clear()
        common.out.print(f"cleared the completion cache: {n} entries deleted")
        return 0
    st = cache.stats()
    if args.json:
        common.out.print_json(data={"enabled": ws.resources.settings.completion_cache,
                                    "entries": st.entries, "max_entries": st.max_entries,
                                    "bytes": st.bytes, "hits": st.hits, "saved_ms": st.saved_ms,
                                    "key_parts": list(KEY_PARTS)})
        return 0
    table = Table(title="completion cache")
    table.add_column("")
    table.add_column("")
    oldest = (dt.datetime.fromtimestamp(st.oldest_use).isoformat(timespec="seconds")
              if st.oldest_use else "-")
    for name, value in (("enabled", "yes" if ws.resources.settings.completion_cache else
                         "no (settings: completion_cache)"),
                        ("entries", f"{st.entries} of at most {st.max_entries}"),
                        ("size", f"{st.bytes / 1e6:.1f} MB"), ("hits", str(st.hits)),
                        ("model time saved", f"{st.saved_ms / 1000:.1f} s"),
                        ("least recently used", oldest),
                        ("key", ", ".join(KEY_PARTS))):
        table.add_row(name, value)
    common.out.print(table)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("cache", help="the completion cache: stats, clear",
                       description="Deterministic model calls (greedy decoding) are computed once "
                       "and served from the workspace database after; see the README.")
    s.add_argument("action", choices=["stats", "clear"])
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_cache)
