"""The Search page's form: the space (a starter made from a flow, an uploaded file, or JSON typed
in the box), the question set and knowledge base, the search and confirmation questions, the
budget, the objective (F1 or a model judge); "Check and estimate" validates it all and shows the cost, "Start the search" queues it."""
from __future__ import annotations

from typing import Any

import streamlit as st

from flowkit.errors import FlowkitError
from service import search
from service.evaluations import EvalRepo
from service.workspace import Workspace
from studio.common import inert
from studio.common.jobs import JobManager
from studio.common.state import Key
from studio.common.state import SearchKeys as K
from studio.compare import compare_data as cd
from studio.compare.compare_panel import peek_dataset
from studio.search import search_data as sd

SPACE_HELP = ("A JSON search space: `flows` (templates or saved flows), `params` (a node's "
              "param as `choices` or a range `low`/`high`/`step`), `operators` (swaps within "
              "the same slot), `models`, `max_candidates` (at most 64) and `seed`.")


def _take_upload() -> None:
    up = K.SPACE_FILE.get()
    if up is not None:
        K.SPACE_TEXT.set(up.getvalue().decode("utf-8", errors="replace"))


def space_section(ws: Workspace) -> str:
    """The space's JSON text, from a starter, an upload or typing."""
    names = list(dict.fromkeys(name for _, name in cd.flow_choices(ws)))
    if not K.STARTER.held():
        K.STARTER.set(["naive_rag"] if "naive_rag" in names else names[:1])
    picked = st.multiselect("Start from flows", names, key=K.STARTER, max_selections=8,
                            help="A starter space over these flows: in each, the retriever "
                                 "swapped among bm25 / dense / hybrid and its top_k among "
                                 "2, 4, 6")
    # under the flows, not beside them: a quarter column cut its label to "Make a start..."
    if (st.button("Make a starter space", key=K.STARTER_GO, disabled=not picked)
            or not K.SPACE_TEXT.held()) and picked:
        try:
            K.SPACE_TEXT.set(sd.starter_space({f: ws.resolve_flow(f)[0] for f in picked}))
        except FlowkitError as err:
            st.error(inert.escape(err))
    st.file_uploader("…or upload a space file (at most 64 KB)", type=["json"],
                     key=K.SPACE_FILE, on_change=_take_upload, max_upload_size=1)
    return st.text_area("Search space (JSON)", key=K.SPACE_TEXT, height=300, help=SPACE_HELP)


def data_section(ws: Workspace, repo: EvalRepo) -> dict[str, Any] | None:
    """Question set, knowledge base, the two question ranges and the budget; None when the set
    cannot be read or there is no knowledge base."""
    names = cd.dataset_choices(repo)
    if not names:
        st.info("No question set found: generate one from a knowledge base on the Knowledge bases "
                "page (Generate questions), or import one in a shell with "
                "`flowkit dataset import DIR_OR_CSV`.")
        return None
    if K.DATASET.get() not in names:
        K.DATASET.set("sample_questions" if "sample_questions" in names else names[0])
    name = st.selectbox("Question set", names, key=K.DATASET)
    ds = peek_dataset(repo, name)
    if ds is None:
        return None
    n = len(ds.questions)
    kbs = ws.resources.kb_names()
    if not kbs:
        st.warning("No knowledge base yet: create one on the Knowledge bases page.")
        return None
    if K.RANGES_FOR.get() != name or K.KB.get() not in kbs:
        want = cd.suggested_kb(ds, kbs)
        K.KB.set(want if want in kbs else kbs[0])
        search_qs, confirm_qs = sd.default_ranges(n)
        K.SEARCH_QS.set(search_qs)
        K.CONFIRM_QS.set(confirm_qs)
        K.RANGES_FOR.set(name)
    kb = st.selectbox("Knowledge base", kbs, key=K.KB)
    a, b = st.columns(2)
    search_qs = a.text_input("Search questions", key=K.SEARCH_QS,
                             help=f"1-based ranges of the {n} questions the race uses, e.g. 101-300")
    confirm_qs = b.text_input("Confirmation questions", key=K.CONFIRM_QS,
                              help="Ranges the front is confirmed on, never used by the race, "
                                   "e.g. 1-100")
    c, d = st.columns(2)
    budget = _number(c, "Budget (model calls)", K.BUDGET, 2000, 1, 100,
                     "Model calls the race may compute (the cache's are free); confirmation "
                     "calls are counted apart")
    first = _number(d, "First batch (questions)", K.FIRST_BATCH, 10, 1, 1,
                    "Every candidate answers this many first; each next batch doubles, and a "
                    "clearly worse candidate is dropped between")
    e, f = st.columns(2)          # the CLI's --budget-hours and --halving
    hours = _number(e, "Budget (hours)", K.BUDGET_HOURS, 0.0, 0.0, 0.5,
                    "Hours the race may take (0: no limit); a race past it ends and keeps who "
                    "is still racing")
    halving = _number(f, "Halving", K.HALVING, 0.0, 0.0, 1.0,
                      "After each batch also keep only the top 1/H of the candidates, "
                      "ranked by quality / cost front layer (F1 and tokens), best F1 first "
                      "(successive halving; 0: only the interval rule drops, 2: the top half "
                      "stays)")
    g, h = st.columns(2)          # the CLI's --workers (on this machine) and --halving-from
    workers = _number(g, "Workers", K.WORKERS, 1, 1, 1,
                      "Run each candidate's questions on this many Ray workers on this machine, "
                      "each loading its own model (1: no Ray); the figures are the same")
    halving_from = _number(h, "Halving from (questions)", K.HALVING_FROM, 0, 0, 10,
                           "Halve only after batches of at least this many questions (0: from "
                           "the first); the interval rule drops from the first batch either "
                           "way. F1 on 20 questions moves by about 10 points between samples: "
                           "larger batches judge more steadily (bench/halving_noise.py)")
    objective, judge_model = objective_section()
    st.caption(f"{n} questions in {inert.escape(name)}")
    return {"objective": objective, "judge_model": judge_model,
            "dataset": name, "kb": kb, "search_qs": search_qs, "confirm_qs": confirm_qs,
            "budget_calls": int(budget), "first_batch": int(first),
            "budget_hours": float(hours) or None, "halving": float(halving),
            "workers": int(workers), "halving_from": int(halving_from)}


def objective_section() -> tuple[str, str]:
    """The objective the race ranks on (the CLI's --objective) and a judge's model
    (--judge-model, shown for a judge only)."""
    if not K.OBJECTIVE.held():
        K.OBJECTIVE.set("f1")
    a, b = st.columns(2)
    objective = a.selectbox("Objective", search.objectives(), key=K.OBJECTIVE,
                            help="What the race ranks on: F1 (or EM, Acc) against the set's "
                                 "answers, or a model judge's score per answer: groundedness, "
                                 "answer_relevance and context_relevance need no answers "
                                 "(for your own documents), correctness needs them. Judge "
                                 "calls are counted apart from the flows' cost and the budget")
    if not search.is_judge(objective):
        return objective, ""
    if not K.JUDGE_MODEL.held():
        K.JUDGE_MODEL.set("")
    model = b.text_input("Judge model", key=K.JUDGE_MODEL, placeholder="default",
                         help="Empty: the workspace's model; or a packaged id or a .gguf path")
    return objective, model


def _number(col: Any, label: str, key: Key[Any], default: float, low: float, step: float,
            help: str) -> float:
    """A number field in `col` holding `default` until edited."""
    if not key.held():
        key.set(default)
    return float(col.number_input(label, min_value=low, step=step, key=key, help=help))


def setup_form(ws: Workspace, repo: EvalRepo, jobs: JobManager) -> None:
    """The whole form; a started search opens in the address (?search=ID)."""
    text = space_section(ws)
    form = data_section(ws, repo)
    if form is None:
        return
    fingerprint = repr((text, sorted(form.items())))
    if st.button("Check and estimate", key=K.CHECK):
        try:
            K.CHECKED.set((fingerprint, sd.check(ws, text, **form)))
        except FlowkitError as err:
            K.CHECKED.pop()
            found = sd.problems(err)
            st.error(f"The search cannot start ({len(found)} problem(s)):\n\n"
                     + "\n".join(f"- {inert.escape(p)}" for p in found))
    kept = K.CHECKED.get()
    checked: sd.Checked | None = kept[1] if kept and kept[0] == fingerprint else None
    if checked is None:
        st.caption("Check the space to see the cost before it starts.")
        return
    st.info(f"**Estimate** (search {checked.search_id}"
            f"{', resumes where it stopped' if checked.resumed else ''}): "
            f"{inert.escape(checked.estimate)}")
    if st.button("Start the search", type="primary", key=K.START):
        sd.submit(jobs, ws, checked.search_id, checked.request)
        K.CHECKED.pop()
        st.query_params["search"] = checked.search_id
        st.rerun()


def open_picker(ws: Workspace) -> None:
    """A selectbox over the searches started here; picking one opens it."""
    found = sd.earlier(ws)
    if not found:
        st.caption("No search yet.")
        return
    labels = dict(found)

    def picked() -> None:
        sid = K.OPEN.get()
        if sid:
            st.query_params["search"] = sid

    st.selectbox("Open a search", list(labels), index=None, key=K.OPEN,
                 format_func=lambda s: labels.get(s, s), on_change=picked,
                 placeholder="Pick the search started here" if len(found) == 1 else
                 f"Pick one of the {len(found)} searches started here")
