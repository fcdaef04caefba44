"""The Search page's chart: each candidate's score (F1 or the search's objective) against its tokens
per question, the front joined by a line (built with Altair, drawn by the panel).

The front's candidates are named on the chart, each label where it covers no dot and no other
label: above its dot, else below, right or left of it; one that fits nowhere is left out, as are
the candidates off the front (a dot's tooltip names any candidate, and the table lists them all).
The places are worked out here, for the narrowest plot the page draws (MIN_PLOT_W x PLOT_H): a
wider plot only spreads them further apart. So that they are where the chart draws them, the
tokens axis is given its range here (no rounding to nice numbers)."""
from __future__ import annotations

from typing import Any

import altair as alt

STATUS_COLOURS = {"racing": "#1f77b4", "kept": "#2ca02c", "dropped": "#aaaaaa"}
PLOT_H = 320.0        # px: the plot's height
MIN_PLOT_W = 480.0    # px: the narrowest plot the Search page draws (a 1366 px window: about 800)
X_MARGIN = 0.08       # of the tokens range, either side of it: room for the end labels
LABEL_FONT = 11       # px
CHAR_W = 7.0          # px: a label character's width at LABEL_FONT, at most ('c' and digits)
LABEL_H = 14.0        # px: a label's height at LABEL_FONT
DOT_R = 6.0           # px: a dot's reach from its centre (a circle of size 90 is 5.4 px round)
GAP = 3.0             # px between a dot and its label

Box = tuple[float, float, float, float]     # x0, y0, x1, y1 in px, y downwards


def x_domain(points: list[dict[str, Any]]) -> tuple[float, float]:
    """The tokens axis's range: the candidates' tokens per question and X_MARGIN of that range
    either side (a tenth of the value, at least 1, when all spend the same)."""
    tokens = [float(p["tokens/q"]) for p in points]
    lo, hi = min(tokens), max(tokens)
    pad = (hi - lo) * X_MARGIN if hi > lo else max(abs(lo) * 0.1, 1.0)
    return lo - pad, hi + pad


def _centre(p: dict[str, Any], domain: tuple[float, float], width: float,
            height: float) -> tuple[float, float]:
    """A candidate's dot centre in px, in a plot of width x height."""
    x = (float(p["tokens/q"]) - domain[0]) / (domain[1] - domain[0]) * width
    return x, (1.0 - float(p["score (%)"]) / 100.0) * height


def _meet(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _spots(x: float, y: float, w: float) -> list[tuple[float, float]]:
    """Where a label w px wide may go round a dot at (x, y): its centre above, below, right, left."""
    up = DOT_R + GAP + LABEL_H / 2
    side = DOT_R + GAP + w / 2
    return [(x, y - up), (x, y + up), (x + side, y), (x - side, y)]


def label_rows(points: list[dict[str, Any]], width: float = MIN_PLOT_W,
               height: float = PLOT_H) -> list[dict[str, Any]]:
    """The front candidates' labels that fit in a plot of width x height, best score first: each
    at the first of its spots (above, below, right, left of its dot) inside the plot that covers
    no dot and no label placed before. A row: the candidate ('cand') and its label's centre on
    the chart's axes ('tokens/q', 'score (%)')."""
    domain = x_domain(points)
    dots = []
    for p in points:
        x, y = _centre(p, domain, width, height)
        dots.append((x - DOT_R, y - DOT_R, x + DOT_R, y + DOT_R))
    taken: list[Box] = []
    rows: list[dict[str, Any]] = []
    front = sorted((p for p in points if p.get("front")), key=lambda p: -float(p["score (%)"]))
    for p in front:
        w = CHAR_W * len(str(p["cand"]))
        x, y = _centre(p, domain, width, height)
        for cx, cy in _spots(x, y, w):
            box = (cx - w / 2, cy - LABEL_H / 2, cx + w / 2, cy + LABEL_H / 2)
            inside = box[1] >= 0 and box[3] <= height and box[0] >= -width * X_MARGIN \
                and box[2] <= width * (1 + X_MARGIN)
            if inside and not any(_meet(box, b) for b in dots + taken):
                taken.append(box)
                rows.append({"cand": p["cand"],
                             "tokens/q": domain[0] + cx / width * (domain[1] - domain[0]),
                             "score (%)": 100.0 * (1.0 - cy / height)})
                break
    return rows


def front_chart(points: list[dict[str, Any]],
                metric: str = "F1") -> alt.LayerChart | alt.FacetChart:
    """Candidates as dots (colour: racing / kept / dropped), the front as a line over them and
    its candidates named where their names fit (see the module's help); `metric` names the
    quality axis (the search's objective; the points hold it as 'score (%)')."""
    x = alt.X("tokens/q:Q", title="tokens per question (lower is cheaper)",
              scale=alt.Scale(domain=list(x_domain(points)), nice=False, zero=False),
              axis=alt.Axis(format=",.0f"))
    y = alt.Y("score (%):Q", title=f"search {metric} (%)", scale=alt.Scale(domain=[0, 100]))
    base = alt.Chart(alt.Data(values=points)).encode(x=x, y=y)
    dots = base.mark_circle(size=90).encode(
        color=alt.Color("status:N", scale=alt.Scale(domain=list(STATUS_COLOURS),
                                                     range=list(STATUS_COLOURS.values()))),
        tooltip=["cand:N", "candidate:N", "status:N",
                 alt.Tooltip("score (%):Q", title=f"{metric} (%)"), "tokens/q:Q", "questions:Q"])
    line = base.transform_filter("datum.front").mark_line(strokeDash=[4, 3], color="#2ca02c")
    labels = alt.Chart(alt.Data(values=label_rows(points))).mark_text(
        fontSize=LABEL_FONT, align="center", baseline="middle").encode(x=x, y=y, text="cand:N")
    return alt.layer(line, dots, labels).properties(
        title=alt.TitleParams(f"The front: {metric} against tokens per question",
                              subtitle=f"dashed: candidates no other beats on {metric}, tokens "
                                       "and time (named where there is room)"),
        height=PLOT_H)
