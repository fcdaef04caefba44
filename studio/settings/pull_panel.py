"""The Settings page's 'Pull a model' part: a Hugging Face Hub repository and GGUF file name, a
progress bar while it downloads (sha256 checked against the Hub's), and the models pulled so far
(give one's path as the GGUF path above to use it)."""
from __future__ import annotations

import streamlit as st

from flowkit.errors import FlowkitError
from service.hub import pull_model, pulled
from service.workspace import Workspace
from studio.common.state import SettingsKeys as K
from studio.common.state import flash, show_flash


def progress_text(done: int, total: int | None) -> str:
    """'120 of 253 MB' (or '120 MB' while the size is unknown)."""
    return f"{done / 1e6:.0f} of {total / 1e6:.0f} MB" if total else f"{done / 1e6:.0f} MB"


def draw(ws: Workspace) -> None:
    """Draw the pull fields and the pulled models; a click pulls in this run, with progress."""
    st.subheader("Pull a model from the Hugging Face Hub")
    c1, c2, c3 = st.columns([3, 3, 1], vertical_alignment="bottom")
    repo = c1.text_input("Repository", key=K.PULL_REPO, placeholder="ggml-org/gemma-3-1b-it-GGUF")
    filename = c2.text_input("GGUF file", key=K.PULL_FILE,
                             placeholder="gemma-3-1b-it-Q4_K_M.gguf")
    go = c3.button("Pull", key=K.PULL_GO, help="Downloads into the data directory's models "
                   "folder (HF_ENDPOINT: a mirror); the file's sha256 is checked against the Hub's")
    show_flash(K.PULL_NOTICE)
    if go:
        bar = st.progress(0.0, text="asking the Hub…")

        def shown(done: int, total: int | None) -> None:
            bar.progress(min(done / total, 1.0) if total else 0.0,
                         text=progress_text(done, total))

        try:
            got = pull_model(ws, repo, filename, on_progress=shown)
        except FlowkitError as err:
            bar.empty()
            st.error(str(err))
        else:
            bar.progress(1.0, text=progress_text(got.size_bytes, got.size_bytes))
            flash(K.PULL_NOTICE, f"Pulled {got.repo}/{got.filename} (sha256 checked): "
                                 f"{got.path}. To use it, choose 'A GGUF file on this machine' "
                                 "above and give this path.")
            st.rerun()
    models = pulled(ws)
    if models:
        st.caption("Pulled models (GGUF paths to give above):")
        st.code("\n".join(str(p) for p in models), language=None)
