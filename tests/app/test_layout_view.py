"""studio/common/layout.py chooses a flow's direction for the canvas it is drawn in: the canvas's
height comes from the window, so the caller passes its (width, height) instead of the 540 x 620
px the choice once assumed (issue 29 item 4)."""
from __future__ import annotations

from flowkit import templates
from studio.common.layout import LEGIBLE_ZOOM, VIEW_H, VIEW_W, layout


def test_a_long_flow_runs_left_to_right_in_a_wide_low_view_and_down_in_a_narrow_one() -> None:
    spec = templates.load_template("ircot")          # four nodes in a row and a loop back
    wide_lr = layout(spec, direction="LR")
    assert wide_lr.fit_zoom(VIEW_W, VIEW_H) < LEGIBLE_ZOOM   # 540 px is too narrow to read it
    assert layout(spec).direction == "TB"                    # the default view: 540 x 620
    assert layout(spec, view=(VIEW_W, VIEW_H)).direction == "TB"
    wide = (1300.0, 400.0)                                   # a wide window, a low canvas
    assert wide_lr.fit_zoom(*wide) >= LEGIBLE_ZOOM
    assert layout(spec, view=wide).direction == "LR"


def test_the_view_height_decides_between_two_illegible_fits() -> None:
    """Neither direction is legible: the one that fits at the larger zoom in this view wins, and
    that depends on how tall the canvas is."""
    spec = templates.load_template("ircot")
    lr, tb = layout(spec, direction="LR"), layout(spec, direction="TB")
    low, tall = (700.0, 250.0), (700.0, 900.0)
    assert max(lr.fit_zoom(*low), tb.fit_zoom(*low)) < LEGIBLE_ZOOM
    assert lr.fit_zoom(*low) > tb.fit_zoom(*low)
    assert layout(spec, view=low).direction == "LR"
    assert tb.fit_zoom(*tall) >= LEGIBLE_ZOOM
    assert layout(spec, view=tall).direction == "TB"


def test_a_view_never_turns_a_flow_placed_by_hand() -> None:
    spec = templates.load_template("ircot")
    placed = layout(spec, direction="LR").positions
    assert layout(spec, placed, view=(300.0, 1000.0)).direction == "LR"
