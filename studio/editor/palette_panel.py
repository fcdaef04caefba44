"""The operator palette: the registry grouped by the six modules, searchable, with help texts."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from flowkit import registry
from studio.common.state import EditorKeys as K
from studio.common.state import Key

MODULE_TITLES: dict[str, str] = {
    "indexing": "Indexing", "pre_retrieval": "Pre-retrieval", "retrieval": "Retrieval",
    "post_retrieval": "Post-retrieval", "generation": "Generation",
    "orchestration": "Orchestration",
}


def entries() -> dict[str, list[dict[str, Any]]]:
    """describe() of every operator, grouped by module in the registry's module order."""
    out: dict[str, list[dict[str, Any]]] = {m: [] for m in registry.MODULES}
    for cls in registry.all_operators().values():
        out.setdefault(cls.module, []).append(registry.describe(cls))
    return out


def search(groups: dict[str, list[dict[str, Any]]], query: str) -> dict[str, list[dict[str, Any]]]:
    """Operators whose key, kind or help mention every word of `query` (case-insensitive)."""
    words = query.lower().split()
    if not words:
        return groups
    out = {}
    for module, items in groups.items():
        hits = [d for d in items
                if all(w in f"{d['key']} {d['kind']} {d['help']}".lower() for w in words)]
        out[module] = hits
    return out


BREAK = "\u200b"    # zero-width space: where a long operator name may wrap
#: The palette's own style: room for the names in a 1366 px window's narrow column, and lines that
#: break only between words (Streamlit's buttons and expanders break inside a word that is too
#: long for them). Scoped to the palette's container.
STYLE = """<style>
.st-key-%(key)s [data-testid="stExpanderDetails"] { padding-left: 0.4rem; padding-right: 0.4rem; }
.st-key-%(key)s button { padding-left: 0.45rem; padding-right: 0.45rem; }
.st-key-%(key)s button p { font-size: 0.875rem; }
.st-key-%(key)s button p, .st-key-%(key)s summary p { overflow-wrap: normal; word-break: normal; }
</style>"""


def label(operator: str) -> str:
    """An operator's button label: its name without the module, free to wrap after each '_'
    (never inside a word) in a narrow palette."""
    return operator.split(".", 1)[1].replace("_", "_" + BREAK)


def render(on_add: Callable[[str], None], key_prefix: Key[bool] = K.PALETTE) -> None:
    """The palette: a search box, then one expander per module with an add button per operator
    (its tooltip is the operator's full help text)."""
    with st.container(key=key_prefix):
        st.html(STYLE % {"key": key_prefix})
        _palette(on_add, key_prefix)


def _palette(on_add: Callable[[str], None], key_prefix: Key[bool]) -> None:
    query = st.text_input("Search operators", key=key_prefix.item("q"),
                          placeholder="e.g. rerank, judge", label_visibility="collapsed")
    groups = search(entries(), query)
    shown = 0
    for module, items in groups.items():
        if not items:
            if not query:
                with st.expander(f"{MODULE_TITLES.get(module, module)} (0)"):
                    st.caption("No operators in this module yet.")
            continue
        title = f"{MODULE_TITLES.get(module, module)} ({len(items)})"
        with st.expander(title, expanded=bool(query)):
            for d in items:
                shown += 1
                kind = "" if d["kind"] == "step" else f" · {d['kind']}"
                st.button(label(d["key"]), key=key_prefix.item("add", d["key"]), help=d["help"],
                          icon=":material/add:", on_click=on_add, args=(d["key"],),
                          width="stretch")
                st.caption(f"{d['summary']}{kind}")
    if query and not shown:
        st.caption(f"No operator matches '{query}'.")
