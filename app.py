"""flowkit studio: `streamlit run app.py`. Page config, the access gate, navigation over the files in
pages/ (each starts with studio.common.shell.route_through_app()), the shared sidebar. The logo and
the page icon are assets/logo.svg and assets/icon.svg (studio/common/assets.py finds them)."""
from __future__ import annotations

import streamlit as st

from studio.common import assets, gate_panel, sidebar_panel
from studio.common.workspace import get_workspace

PAGES: list[tuple[str, str, str]] = [
    ("pages/flows.py", "Flows", ":material/account_tree:"),
    ("pages/editor.py", "Editor", ":material/edit:"),
    ("pages/run.py", "Run", ":material/play_arrow:"),
    ("pages/replay.py", "Replay", ":material/history:"),
    ("pages/compare.py", "Compare", ":material/compare_arrows:"),
    ("pages/search.py", "Search", ":material/travel_explore:"),
    ("pages/knowledge.py", "Knowledge bases", ":material/library_books:"),
    ("pages/settings.py", "Settings", ":material/settings:"),
]

st.set_page_config(page_title="flowkit studio", page_icon=str(assets.path("icon.svg")), layout="wide")
st.logo(str(assets.path("logo.svg")), icon_image=str(assets.path("icon.svg")))
gate_panel.require_token()   # FLOWKIT_STUDIO_TOKEN set: nothing renders before the session gives it
nav = st.navigation([st.Page(path, title=title, icon=icon, default=(n == 0))
                     for n, (path, title, icon) in enumerate(PAGES)])
sidebar_panel.render(get_workspace())
nav.run()
