"""The Search page's front chart (studio/search/search_chart.py): its point labels never overlap
one another nor cover a dot, in the narrowest plot the page draws and a wide one (issue 48, item 9:
the candidates' labels on the search front overlapped). The labels' places are read back from the
chart's Vega-Lite spec as a browser would draw them."""
from __future__ import annotations

from typing import Any

import pytest

from studio.search import search_chart

Box = tuple[float, float, float, float]      # x0, y0, x1, y1 in px, y down


def point(cand: str, score: float, tokens: float, front: bool, status: str = "kept") -> dict[str, Any]:
    return {"cand": cand, "candidate": f"naive_rag {cand}", "status": status, "score (%)": score,
            "tokens/q": tokens, "questions": 12, "front": front}


#: A search's candidates as they come: hand-written flows and variants of them close together in
#: both tokens and score, a front of six with two pairs a few tokens and points apart.
POINTS = [point("c00", 58.3, 905.2, True), point("c01", 58.3, 912.0, False),
          point("c02", 61.1, 930.4, True), point("c03", 41.7, 610.0, True),
          point("c04", 40.0, 615.5, False, "dropped"), point("c05", 75.0, 1510.0, True),
          point("c06", 74.2, 1530.0, False), point("c07", 76.4, 2410.0, True),
          point("c08", 76.4, 2450.0, False), point("c09", 50.0, 880.0, False, "dropped"),
          point("c10", 43.0, 640.0, True), point("c11", 33.3, 1200.0, False, "dropped")]


def _layers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [{**layer, "data": layer.get("data", spec.get("data"))} for layer in spec["layer"]]


def _domain(layers: list[dict[str, Any]], channel: str) -> tuple[float, float]:
    """The channel's scale domain as set in the spec, else the extent of its field's values."""
    for layer in layers:
        domain = layer["encoding"][channel].get("scale", {}).get("domain")
        if domain:
            return float(domain[0]), float(domain[1])
    values = [row[layer["encoding"][channel]["field"]] for layer in layers
              for row in layer["data"]["values"]]
    return float(min(values)), float(max(values))


def _to_px(value: float, domain: tuple[float, float], size: float, down: bool = False) -> float:
    frac = (value - domain[0]) / ((domain[1] - domain[0]) or 1.0)
    return size * (1.0 - frac if down else frac)


def label_boxes(chart: Any, width: float, height: float) -> dict[str, Box]:
    """Each label's box (px) in a plot of width x height: the text layer's rows placed by its x/y
    encoding, its dx/dy, align and baseline; 7 px a character, 13 px tall (font size 11)."""
    spec = chart.to_dict()
    layers = _layers(spec)
    xd, yd = _domain(layers, "x"), _domain(layers, "y")
    (text,) = [layer for layer in layers if layer["mark"]["type"] == "text"]
    assert "transform" not in text, "the label layer's rows are its data"
    mark, enc = text["mark"], text["encoding"]
    out: dict[str, Box] = {}
    for row in text["data"]["values"]:
        label = str(row[enc["text"]["field"]])
        w, h = 7.0 * len(label), 13.0
        cx = _to_px(row[enc["x"]["field"]], xd, width) + mark.get("dx", 0)
        cy = _to_px(row[enc["y"]["field"]], yd, height, down=True) + mark.get("dy", 0)
        x0 = {"left": cx, "right": cx - w}.get(mark.get("align", "center"), cx - w / 2)
        y0 = {"top": cy, "bottom": cy - h}.get(mark.get("baseline", "alphabetic"), cy - h / 2)
        assert label not in out, f"{label} labelled twice"
        out[label] = (x0, y0, x0 + w, y0 + h)
    return out


def dot_boxes(points: list[dict[str, Any]], chart: Any, width: float,
              height: float) -> dict[str, Box]:
    """Each candidate's dot (size 90: a radius of about 5 px) as a box in the same plot."""
    layers = _layers(chart.to_dict())
    xd, yd = _domain(layers, "x"), _domain(layers, "y")
    out = {}
    for p in points:
        cx, cy = _to_px(p["tokens/q"], xd, width), _to_px(p["score (%)"], yd, height, down=True)
        out[p["cand"]] = (cx - 5, cy - 5, cx + 5, cy + 5)
    return out


def _meet(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


@pytest.mark.parametrize("width", [search_chart.MIN_PLOT_W, 900])
def test_the_fronts_labels_neither_overlap_nor_cover_a_dot(width: float) -> None:
    chart = search_chart.front_chart(POINTS)
    labels = label_boxes(chart, width, search_chart.PLOT_H)
    dots = dot_boxes(POINTS, chart, width, search_chart.PLOT_H)
    crowded = [(a, b) for i, a in enumerate(labels) for b in list(labels)[i + 1:]
               if _meet(labels[a], labels[b])]
    assert not crowded, f"labels overlap at {width} px: {crowded}"
    covered = [(a, d) for a in labels for d in dots if _meet(labels[a], dots[d])]
    assert not covered, f"labels cover dots at {width} px: {covered}"


def test_the_front_is_labelled_best_first_and_only_the_front() -> None:
    """The labels name front candidates only (any other is named by its dot's tooltip and the
    table), the best one always; here every front candidate finds a place."""
    labels = label_boxes(search_chart.front_chart(POINTS), search_chart.MIN_PLOT_W,
                         search_chart.PLOT_H)
    front = {p["cand"] for p in POINTS if p["front"]}
    assert set(labels) <= front
    assert "c07" in labels                      # the best score
    assert set(labels) == front


def test_a_label_that_fits_nowhere_is_left_out() -> None:
    """Five front candidates almost on one spot (a token and a tenth of a point apart, on an axis
    from 100 to 9,000 tokens): the ends named, and of the five only those with room, round them."""
    crowd = [point(f"c{i:02d}", 50.0 + 0.1 * i, 1000.0 + i, True) for i in range(5)]
    ends = [point("c90", 10.0, 100.0, True), point("c91", 95.0, 9000.0, True)]
    labels = label_boxes(search_chart.front_chart(crowd + ends), search_chart.MIN_PLOT_W,
                         search_chart.PLOT_H)
    assert {"c90", "c91"} <= set(labels)
    assert 1 <= len(set(labels) - {"c90", "c91"}) <= 4, labels
