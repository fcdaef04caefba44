"""The Search page's chart: each candidate's score (F1 or the search's objective) against its tokens
per question, the front joined by a line (built with Altair, drawn by the panel)."""
from __future__ import annotations

from typing import Any

import altair as alt

STATUS_COLOURS = {"racing": "#1f77b4", "kept": "#2ca02c", "dropped": "#aaaaaa"}


def front_chart(points: list[dict[str, Any]],
                metric: str = "F1") -> alt.LayerChart | alt.FacetChart:
    """Candidates as dots (colour: racing / kept / dropped), the front as a line over them;
    `metric` names the quality axis (the search's objective; the points hold it as
    'score (%)')."""
    data = alt.Data(values=points)
    base = alt.Chart(data).encode(
        x=alt.X("tokens/q:Q", title="tokens per question (lower is cheaper)",
                scale=alt.Scale(zero=False), axis=alt.Axis(format=",.0f")),
        y=alt.Y("score (%):Q", title=f"search {metric} (%)", scale=alt.Scale(domain=[0, 100])))
    dots = base.mark_circle(size=90).encode(
        color=alt.Color("status:N", scale=alt.Scale(domain=list(STATUS_COLOURS),
                                                     range=list(STATUS_COLOURS.values()))),
        tooltip=["cand:N", "candidate:N", "status:N",
                 alt.Tooltip("score (%):Q", title=f"{metric} (%)"), "tokens/q:Q", "questions:Q"])
    line = base.transform_filter("datum.front").mark_line(strokeDash=[4, 3], color="#2ca02c")
    labels = base.mark_text(dy=-10, fontSize=11).encode(text="cand:N")
    return alt.layer(line, dots, labels).properties(
        title=alt.TitleParams(f"The front: {metric} against tokens per question",
                              subtitle=f"dashed: candidates no other beats on {metric}, tokens "
                                       "and time"),
        height=320)
