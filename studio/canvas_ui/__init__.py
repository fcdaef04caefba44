"""The editor's canvas as a Streamlit component: React Flow, built from frontend/ into frontend/dist.

Python hands it a *picture* (studio/canvas.py builds it: nodes, edges, a revision number); the
browser redraws only when the revision changes, and only the nodes and edges whose picture
changed. Each user action comes back as one small event (select, move, connect; see
frontend/src/FlowCanvas.jsx), not as the whole canvas state, so an edit on a 150-node flow costs
about what it costs on a 2-node one. The canvas also reports its own size in px (a "view" event,
when first measured and on every resize): the editor lays out the flows it opens for it.

`make install` builds the frontend (`npm ci && npm run build` in frontend/; Node.js and npm).
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import streamlit.components.v1 as components

from flowkit.errors import FlowkitError

FRONTEND = Path(__file__).resolve().parent / "frontend"
DIST = FRONTEND / "dist"
NAME = "flowkit_canvas"   # the iframe's title contains it (the browser tests find the canvas so)

_component: Callable[..., Any] | None = None


def built() -> bool:
    """Whether the frontend has been built (dist/index.html exists)."""
    return (DIST / "index.html").is_file()


def _declared() -> Callable[..., Any]:
    global _component
    if _component is None:
        if not built():
            raise FlowkitError(f"the editor's canvas is not built ({DIST} is missing): run `make "
                               "install`, which builds it with Node.js and npm")
        _component = components.declare_component(NAME, path=str(DIST))
    return _component


def flow_canvas(picture: dict[str, Any], *, key: str, fit: int = 0, height: int = 0,
                min_zoom: float = 0.2, minimap: bool = False,
                on_event: Callable[[], None] | None = None) -> dict[str, Any] | None:
    """Draw `picture`; returns the last event the user made on it (None before the first).

    `fit` is a request number: the canvas fits its view to the flow whenever it changes (and
    once when it first draws), never otherwise, so the user's zoom survives every edit.
    `height` in px; 0: as tall as fits the browser window below the canvas's top (again on
    every resize), so the canvas and the page around it fit a laptop's screen.
    `on_event` runs before the page script on the rerun an event causes (read the event from
    `st.session_state[key]`), so the page draws the result of the event in that same run.
    """
    value = _declared()(picture=picture, fit=fit, height=height, minZoom=min_zoom,
                        minimap=minimap, key=key, default=None, on_change=on_event)
    return value if isinstance(value, dict) else None
