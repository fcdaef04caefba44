"""The Run page's form pieces: a question picked from a dataset (its expected answers kept for
marking the answer), and the model settings for this run only."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import streamlit as st

from flowkit.spec import FlowSpec
from service.debug import breakpoint_problems
from service.workspace import Workspace
from studio.common import inert, sidebar_panel
from studio.common.state import RunKeys as K
from studio.run import datasets, debugging
from studio.run.overrides import Overrides, tunable


@st.cache_data(show_spinner=False, max_entries=16)
def _questions(path: str, mtime: float) -> list[dict[str, Any]]:
    return datasets.load_questions(Path(path))


def _fill_question(qs: list[dict[str, Any]]) -> None:
    """Dataset picker callback: copy the chosen question into the question box."""
    idx = K.DATASET_Q.get()
    if idx is not None and 0 <= idx < len(qs):
        K.QUESTION.set(qs[idx]["question"])
        K.GOLD.set({"question": qs[idx]["question"], "answers": qs[idx]["answers"]})


def dataset_picker() -> None:
    """Pick a question from a question set: it fills the question box (callback)."""
    sets = datasets.question_sets()
    with st.expander("Pick a question from a dataset", expanded=False):
        set_names = [s.name for s in sets]
        set_name = st.selectbox("Dataset", set_names, key=K.DATASET) if sets else None
        if set_name is not None:
            qset = sets[set_names.index(set_name)]
            qs = _questions(str(qset.path), qset.path.stat().st_mtime)
            st.selectbox("Question", list(range(len(qs))), index=None, key=K.DATASET_Q,
                         format_func=lambda i: f"{qs[i]['id']}: {qs[i]['question']}",
                         placeholder=f"{len(qs)} questions", on_change=_fill_question, args=(qs,))
            st.caption(f"Read from {inert.code(qset.path)}")


def expected_answers(question: str) -> list[str]:
    """The dataset's answers to `question` when it was picked from a dataset, else []."""
    gold = K.GOLD.get()
    if gold and gold["question"].strip() == question.strip():
        return list(gold["answers"])
    return []


def model_settings(ws: Workspace, spec: FlowSpec | None) -> Overrides:
    """The expander of this run's temperature and numeric node params; what differs is returned."""
    overrides = Overrides()
    with st.expander("Model settings for this run"):
        st.caption(f"Model: {sidebar_panel.model_line(ws)} (change it on the Settings page)")
        base_t = float(ws.resources.settings.llm.temperature)
        t = st.number_input("Temperature", min_value=0.0, max_value=2.0, step=0.1, value=base_t,
                            key=K.TEMPERATURE, help="0 = greedy; this run only")
        if abs(t - base_t) > 1e-9:
            overrides.temperature = float(t)
        if spec is None:
            return overrides
        for node_id, name, value, schema in tunable(spec):
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                continue
            is_int = schema.get("type") == "integer"
            new = st.number_input(
                f"{node_id} · {name}", value=int(value) if is_int else float(value),
                min_value=schema.get("minimum"), max_value=schema.get("maximum"),
                step=1 if is_int else 0.1, key=K.PARAM.item(spec.name, node_id, name),
                help=schema.get("description"))
            if new != value:
                overrides.node_params.setdefault(node_id, {})[name] = new
        lim = spec.limits
        st.caption(f"Limits: {lim.max_steps} steps, {lim.max_llm_calls} LLM calls, "
                   f"{lim.max_tokens} tokens, {lim.timeout_s:g} s (edit them in the Editor)")
    return overrides


def breakpoints_editor(spec: FlowSpec | None) -> tuple[list[str], list[str]]:
    """Breakpoints for this run, one a line (`node[@visit][:after][?condition]`), checked against
    the flow. Returns (the lines, the problems: one message a bad line)."""
    debugging.take_handed_breakpoints()      # the Editor's Run: its draft's breakpoints
    with st.expander("Breakpoints (debug this run)", expanded=bool(
            (K.BREAKPOINTS.get() or "").strip())):
        text = st.text_area(
            "One a line", key=K.BREAKPOINTS, height=80,
            placeholder="generate\nretrieve@2:after?len(documents) < 3",
            help="node[@visit][:before|:after][?condition]: pause before (default) or after the "
                 "node, on that visit only, when the condition on working memory holds "
                 "(comparisons, len, in, and/or). The run then waits on this page: look at its "
                 "memory and next prompt, edit a value, step or continue.")
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if debugging.from_the_editor():
            st.caption(":material/edit: Set on the Editor's canvas (the red dots); edit them here "
                       "for this run, or on the canvas for the flow's draft.")
        problems = breakpoint_problems(spec, lines) if spec is not None and lines else []
        for p in problems:
            st.error(inert.escape(p))
        if spec is not None:
            st.caption("Nodes: " + ", ".join(inert.code(n.id) for n in spec.nodes))
    return lines, problems
