"""The replay page's step panels (pages/replay.py): the exact prompts and completions of a step's
LLM calls, and what its retrievals found; and the tabs that hold them.

The tabs are lazy: only the open one is drawn (a step's prompts, completions and passages are
most of the page, and drawing them in hidden tabs cost about half of every step's round trip).
The open tab is kept in session state and in the address (?tab=...), so Next/Prev, a refresh or a
shared link keep it open. Their labels never change (a count in a label would make a new widget
on every step and close the tab); the counts are in the step's summary.
"""
from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from typing import Any

import streamlit as st
from streamlit.elements.lib.mutable_tab_container import TabContainer

from flowkit.trace import StepEvent
from studio.common import inert, provenance
from studio.common.state import Key

MEMORY, LLM_CALLS, RETRIEVED, FORK = "Memory", "LLM calls", "Retrieved", "Fork from this step"
TABS = (MEMORY, LLM_CALLS, RETRIEVED, FORK)
#: The session-state key and query parameter of the open tab.
TAB_KEY = "tab"


def step_tabs() -> Sequence[TabContainer]:
    """The four step tabs (Memory, LLM calls, Retrieved, Fork); draw into a tab only when its
    `.open` is true. The open one follows ?tab= and is kept across steps."""
    return st.tabs(list(TABS), key=TAB_KEY, bind="query-params")


def keep(key: Key[Any], state: MutableMapping[str, Any] | None = None) -> None:
    """Keep a widget's value while its tab is closed (Streamlit drops the state of a widget that
    a run does not draw; writing it back keeps it). Only for widgets drawn without `value=`."""
    if key.held(state):
        key.set(key.get(state=state), state)


def passages(step: StepEvent) -> int:
    """How many passages the step's retrievals returned in all."""
    return sum(len(r.docs) for r in step.retrievals)


def cached_note(origin: dict[str, Any], wall_ms: float | None) -> str:
    """The line under a call served from the completion cache: where it was computed."""
    where = (f"run {origin.get('run_id')}, node {origin.get('node_id')} (visit {origin.get('visit')})"
             if origin.get("run_id") else "an earlier run")
    took = f" in {wall_ms:.0f} ms" if wall_ms is not None else ""
    return (f":material/bolt: Served from the completion cache{took}; computed by {where}. "
            "Its tokens and ms are what computing it cost.")


def llm_calls_panel(step: StepEvent) -> None:
    """Every LLM call of the step: tokens, time, why it stopped, the prompt and the completion."""
    if not step.llm_calls:
        st.caption("This step made no LLM call.")
    for i, call in enumerate(step.llm_calls, 1):
        st.markdown(f"**Call {i}** · {call.prompt_tokens} prompt + {call.completion_tokens} "
                    f"completion tokens · {call.ms:.0f} ms · {call.finish_reason}")
        if call.cached_from is not None:
            st.caption(cached_note(call.cached_from, call.wall_ms))
        st.caption("Prompt")
        st.code(call.prompt, language=None, wrap_lines=True)
        st.caption("Completion")
        st.code(call.completion or "(empty)", language=None, wrap_lines=True)


def retrievals_panel(step: StepEvent) -> None:
    """Every retrieval of the step: method, query, and the ranked passages, each with where it
    came from (file, pages, section) when its chunk knows."""
    if not step.retrievals:
        st.caption("This step retrieved nothing.")
    metas = provenance.known_meta([step.memory_after, step.memory_before])
    for r in step.retrievals:
        st.markdown(f"**{inert.escape(r.method)}** for {inert.code(r.query, limit=200)}")
        rows = [{"rank": i, "id": d.get("id"), "title": d.get("title", ""),
                 "from": provenance.line(d, metas),
                 "score": d.get("score"), "text": (d.get("text") or "")[:300]}
                for i, d in enumerate(r.docs, 1)]
        if not any(row["from"] for row in rows):     # chunks that know no page or section
            rows = [{k: v for k, v in row.items() if k != "from"} for row in rows]
        st.dataframe(rows, hide_index=True, width="stretch",
                     column_config={"score": st.column_config.NumberColumn(format="%.4f")})
