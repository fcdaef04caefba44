"""The replay page's step panels (pages/replay.py): the exact prompts and completions of a step's
LLM calls, and what its retrievals found."""
from __future__ import annotations

import streamlit as st

from flowkit.trace import StepEvent
from studio import inert


def llm_calls_panel(step: StepEvent) -> None:
    """Every LLM call of the step: tokens, time, why it stopped, the prompt and the completion."""
    if not step.llm_calls:
        st.caption("This step made no LLM call.")
    for i, call in enumerate(step.llm_calls, 1):
        st.markdown(f"**Call {i}** · {call.prompt_tokens} prompt + {call.completion_tokens} "
                    f"completion tokens · {call.ms:.0f} ms · {call.finish_reason}")
        st.caption("Prompt")
        st.code(call.prompt, language=None, wrap_lines=True)
        st.caption("Completion")
        st.code(call.completion or "(empty)", language=None, wrap_lines=True)


def retrievals_panel(step: StepEvent) -> None:
    """Every retrieval of the step: method, query, and the ranked passages."""
    if not step.retrievals:
        st.caption("This step retrieved nothing.")
    for r in step.retrievals:
        st.markdown(f"**{inert.escape(r.method)}** for {inert.code(r.query, limit=200)}")
        st.dataframe([{"rank": i, "id": d.get("id"), "title": d.get("title", ""),
                       "score": d.get("score"), "text": (d.get("text") or "")[:300]}
                      for i, d in enumerate(r.docs, 1)], hide_index=True, width="stretch",
                     column_config={"score": st.column_config.NumberColumn(format="%.4f")})
