"""flowkit studio: `streamlit run app.py`. Page config, navigation over pages/, the shared sidebar."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from studio import gate, sidebar
from studio.workspace import get_workspace

ROOT = Path(__file__).resolve().parent

PAGES: list[tuple[str, str, str]] = [
    ("pages/flows.py", "Flows", ":material/account_tree:"),
    ("pages/editor.py", "Editor", ":material/edit:"),
    ("pages/run.py", "Run", ":material/play_arrow:"),
    ("pages/replay.py", "Replay", ":material/history:"),
    ("pages/compare.py", "Compare", ":material/compare_arrows:"),
    ("pages/knowledge.py", "Knowledge bases", ":material/library_books:"),
    ("pages/settings.py", "Settings", ":material/settings:"),
]


def _page(path: str, title: str, icon: str, default: bool) -> st.Page:
    if (ROOT / path).is_file():
        return st.Page(path, title=title, icon=icon, default=default)

    def missing() -> None:   # a page another part of the project has not delivered yet
        st.title(title)
        st.info(f"{title}: coming.")
    return st.Page(missing, title=title, icon=icon, default=default, url_path=Path(path).stem)


st.set_page_config(page_title="flowkit studio", page_icon=":material/account_tree:", layout="wide")
gate.require_token()   # FLOWKIT_STUDIO_TOKEN set: nothing renders before the session gives it
nav = st.navigation([_page(p, t, i, default=(n == 0)) for n, (p, t, i) in enumerate(PAGES)])
sidebar.render(get_workspace())
nav.run()
