"""The Compare page's charts (Altair): one bar chart per metric, and F1 against tokens per question
(the quality / cost frontier: up and to the left is better)."""
from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd

from flowkit.eval.metrics import METRICS
from flowkit.eval.report import EvalReport

RATES = ("em", "f1", "acc", "recall")
#: The longest flow label a bar chart shows whole, in px (a longer one ends in an ellipsis).
LABEL_LIMIT_PX = 240


def _frame(rep: EvalReport) -> pd.DataFrame:
    rows = []
    for f in rep.flows:
        s = rep.summaries[f]
        for m, title, higher in METRICS:
            v = getattr(s, m)
            if v is None:
                continue
            rows.append({"flow": f, "metric": rep.recall_title if m == "recall" else title,
                         "key": m, "value": 100 * v if m in RATES else v,
                         "better": "higher is better" if higher else "lower is better"})
    return pd.DataFrame(rows)


def bar_title(metric: str, higher: bool) -> alt.TitleParams:
    """A bar chart's title: the metric, and which way is better on a line of its own (one line
    held both and was cut off in a quarter of a 1366 px window: "LLM calls/q · lower is b…")."""
    return alt.TitleParams(text=metric, subtitle=f"{'higher' if higher else 'lower'} is better",
                           anchor="start", subtitleColor="#555")


def flow_axis() -> alt.Axis:
    """The bar charts' flow axis: every flow labelled, whole. Level labels overlapped in a quarter
    of a 1366 px window, and Vega then hid all but the first and the last (and cut a long variant
    name at 120 px); slanted ones stand apart down to about 16 px a bar."""
    return alt.Axis(labelAngle=-40, labelOverlap=False, labelLimit=LABEL_LIMIT_PX)


def metric_bars(rep: EvalReport) -> list[tuple[str, Any]]:
    """(title, chart) per metric present, flows in column order with fixed colours; chart is
    None for a rate (EM, F1, Acc, recall) on which every flow scored 0."""
    df = _frame(rep)
    colour = alt.Color("flow:N", sort=rep.flows, legend=None)
    out = []
    for m, title, higher in METRICS:
        title = rep.recall_title if m == "recall" else title
        part = df[df["metric"] == title] if not df.empty else df
        if part.empty:
            continue
        if m in RATES and float(part["value"].max()) == 0.0:
            out.append((title, None))   # all zero: the page says so instead of an empty chart
            continue
        unit = " (%)" if m in RATES else ""
        chart = (alt.Chart(part, title=bar_title(f"{title}{unit}", higher))
                 .mark_bar()
                 .encode(x=alt.X("flow:N", sort=rep.flows, title=None, axis=flow_axis()),
                         y=alt.Y("value:Q", title=title,
                                 scale=alt.Scale(domain=[0, max(float(part["value"].max()), 1.0)])),
                         color=colour,
                         tooltip=["flow", alt.Tooltip("value:Q", format=".2f")])
                 .properties(height=180))
        out.append((title, chart))
    return out


def frontier(rep: EvalReport) -> Any:
    """F1 (%) against tokens per question, one labelled point per flow."""
    df = pd.DataFrame([{"flow": f, "tokens per question": rep.summaries[f].tokens,
                        "F1 (%)": 100 * rep.summaries[f].f1,
                        "EM (%)": 100 * rep.summaries[f].em} for f in rep.flows])
    base = alt.Chart(df, title="Quality / cost: F1 against tokens per question").encode(
        x=alt.X("tokens per question:Q", scale=alt.Scale(zero=True)),
        y=alt.Y("F1 (%):Q", scale=alt.Scale(domain=[0, max(float(df["F1 (%)"].max()) * 1.15,
                                                              5.0)])),
        color=alt.Color("flow:N", sort=rep.flows),
        tooltip=["flow", alt.Tooltip("tokens per question:Q", format=".0f"),
                 alt.Tooltip("F1 (%):Q", format=".1f"), alt.Tooltip("EM (%):Q", format=".1f")])
    points = base.mark_circle(size=160)
    labels = base.mark_text(align="left", dx=10, dy=-8).encode(text="flow:N")
    return (points + labels).properties(height=300)
