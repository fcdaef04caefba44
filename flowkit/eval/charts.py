"""An evaluation's charts as inline SVG (no dependencies): a bar chart per metric and the
quality / cost frontier, labelled with the metric formatter (`formatting.fmt`)."""
from __future__ import annotations

import html
import math
from collections.abc import Sequence

from .formatting import fmt, metric_titles
from .report import EvalReport

PALETTE = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2")


def bar_svg(title: str, labels: Sequence[str], values: Sequence[float | None],
            width: int = 320, height: int = 180, metric: str | None = None) -> str:
    """A small bar chart as an SVG string; each bar is labelled with `fmt(metric, value)` (three
    significant digits when no metric is named)."""
    vals = [0.0 if v is None or math.isnan(v) else float(v) for v in values]
    top = max(vals, default=0.0) or 1.0
    n = max(len(vals), 1)
    pad_l, pad_b, pad_t = 10, 40, 28
    bw = (width - pad_l * 2) / n
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
             f'<text x="{width / 2}" y="16" text-anchor="middle" font-weight="bold">'
             f'{html.escape(title)}</text>']
    for i, (lab, v) in enumerate(zip(labels, vals)):
        h = (height - pad_b - pad_t) * v / top
        x = pad_l + i * bw + bw * 0.15
        y = height - pad_b - h
        parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bw * 0.7:.1f}" height="{h:.1f}" '
                     f'fill="{PALETTE[i % len(PALETTE)]}"/>')
        parts.append(f'<text x="{x + bw * 0.35:.1f}" y="{y - 3:.1f}" text-anchor="middle">'
                     f'{_bar_label(metric, v)}</text>')
        parts.append(f'<text x="{x + bw * 0.35:.1f}" y="{height - pad_b + 14}" '
                     f'text-anchor="middle">{html.escape(lab[:18])}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _bar_label(metric: str | None, value: float) -> str:
    if metric is not None:
        return fmt(metric, value)
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def scatter_svg(points: Sequence[tuple[str, float, float]], x_title: str = "tokens / question",
                y_title: str = "F1", width: int = 420, height: int = 260) -> str:
    """Quality against cost: one labelled point per flow (x: tokens, y: F1)."""
    pad = 46
    xs = [p[1] for p in points] or [0.0]
    ys = [p[2] for p in points] or [0.0]
    x_hi = max(xs) * 1.15 or 1.0
    y_hi = max(max(ys) * 1.15, 0.05)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
             f'<line x1="{pad}" y1="{height - pad}" x2="{width - 10}" y2="{height - pad}" '
             'stroke="#555"/>',
             f'<line x1="{pad}" y1="10" x2="{pad}" y2="{height - pad}" stroke="#555"/>',
             f'<text x="{(width + pad) / 2}" y="{height - 10}" text-anchor="middle">'
             f'{html.escape(x_title)}</text>',
             f'<text x="12" y="{(height - pad) / 2}" transform="rotate(-90 12 {(height - pad) / 2})" '
             f'text-anchor="middle">{html.escape(y_title)}</text>',
             f'<text x="{pad - 4}" y="{height - pad}" text-anchor="end">0</text>',
             f'<text x="{pad - 4}" y="16" text-anchor="end">{y_hi:.2f}</text>',
             f'<text x="{width - 10}" y="{height - pad + 14}" text-anchor="end">{x_hi:.0f}</text>']
    for i, (lab, x, y) in enumerate(points):
        cx = pad + (width - 10 - pad) * x / x_hi
        cy = height - pad - (height - pad - 10) * y / y_hi
        parts.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="6" '
                     f'fill="{PALETTE[i % len(PALETTE)]}"/>')
        parts.append(f'<text x="{cx + 8:.1f}" y="{cy - 6:.1f}">{html.escape(lab)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def charts(rep: EvalReport) -> dict[str, str]:
    """Chart title -> SVG: one bar chart per metric, and the F1 / tokens frontier."""
    out = {}
    for m, title in metric_titles(rep):
        values = [getattr(rep.summaries[f], m) for f in rep.flows]
        if m == "recall" and all(v is None for v in values):
            continue
        out[title] = bar_svg(title, rep.flows, values, metric=m)
    out["F1 vs tokens/question"] = scatter_svg(
        [(f, rep.summaries[f].tokens, rep.summaries[f].f1) for f in rep.flows])
    return out
