"""The Compare form's pointer to question generation (issue 36): when no question set fits the
chosen knowledge base (or there is none at all), "Generate questions from this knowledge base"
links to the Knowledge page's "Generate questions" tab for it."""
from __future__ import annotations

from urllib.parse import urlencode

import streamlit as st
from streamlit.errors import StreamlitAPIException

from service.evaluations import EvalRepo
from studio.compare import compare_data as cd

KNOWLEDGE_PAGE = "pages/knowledge.py"
LABEL = "Generate questions from this knowledge base"


def fitting_sets(names: list[str], stored_kbs: dict[str, str], kb: str) -> list[str]:
    """The question sets among `names` that belong to knowledge base `kb`: stored with it, named
    like it (a set's corpus ingested under its name), or the sample questions for `sample`."""
    return [n for n in names if stored_kbs.get(n) == kb or cd.kb_slug(n) == kb
            or (n == "sample_questions" and kb == "sample")]


def pointer(repo: EvalRepo, names: list[str], kb: str | None = None) -> None:
    """The link, shown when no set in `names` fits `kb` (always when `kb` is None: no set at
    all)."""
    if kb is not None:
        stored = {d.name: d.kb for d in repo.list_datasets()}
        if fitting_sets(names, stored, kb):
            return
        st.caption(f"No question set belongs to knowledge base '{kb}' yet.")
    params = {"tab": "generate", **({"kb": kb} if kb else {})}
    try:
        st.page_link(KNOWLEDGE_PAGE, label=LABEL, icon=":material/quiz:", query_params=params)
    except (StreamlitAPIException, KeyError):    # the page run on its own (AppTest)
        st.markdown(f"[{LABEL}](/knowledge?{urlencode(params)})")
