"""Editor: the canvas, the operator palette, the node/edge side panel, problems, save and run.

The page only arranges the pieces (studio/editor): which flow (open_panel), the head and conflict
box (header_panel), the toolbar (toolbar_panel), the palette, the canvas, the side panel
(side_panel). Every change runs in a callback (actions_panel) before the page is drawn."""
from __future__ import annotations

import streamlit as st

from studio import canvas_ui
from studio.common.shell import route_through_app
from studio.common.state import EditorKeys as K
from studio.common.workspace import get_workspace
from studio.editor import actions_panel as actions
from studio.editor import header_panel, keys_panel, open_panel, palette_panel, side_panel, toolbar_panel
from studio.editor.editor import Editor, canvas_key

route_through_app()   # a direct URL in a fresh server's first session: go through app.py

ws = get_workspace()
ed = Editor(None, ws)
draft = open_panel.open_draft(ed, ws)
spec = ed.spec

header_panel.render(ed, ws, draft)
delete_box = toolbar_panel.render(ed, draft)   # Delete is drawn once the canvas reported

# ---- palette | canvas | side panel ------------------------------------------------------------
left, middle, right = st.columns([1.15, 4, 1.5])   # 1366 px: module titles fit in the palette
with left:
    st.markdown("**Operators**")
    palette_panel.render(on_add=actions.add)

with middle:
    key = canvas_key(draft.flow)
    event = canvas_ui.flow_canvas(ed.canvas_picture(), key=key, fit=ed.fit_request,
                                  min_zoom=0.2, minimap=len(spec.nodes) > 30,
                                  on_event=lambda: actions.canvas_event(key))
    st.caption("Drag from a node's output handle (the dot on its right, or bottom in a long "
               "flow) and drop on another node to connect them, or select a node and use "
               "**Connect to** in its form; purple edges are a loop's way back, grey "
               "routed ones pass nodes in their way. "
               "Click a node or edge to edit it; delete it with **Delete selected** or the "
               "Delete / Backspace key, or remove an edge from the **Edges** list in either "
               "node's form (an edge drawn under another, too); a click on the empty canvas "
               "clears the selection. Undo "
               "any edit with Ctrl+Z. The two dots at a node's top right set a breakpoint "
               "before or after it (red when set): **Run ▶** takes them to the Run page, where "
               "the run pauses there. The mouse wheel scrolls the page; click the canvas (or "
               "hold Ctrl) to zoom with it.")
if ed.take_events(event):   # only if the callback missed them: draw their result
    st.rerun()
toolbar_panel.delete_button(ed, delete_box)
keys_panel.editor_shortcuts(delete=K.DELETE, undo=K.UNDO, redo=K.REDO)

with right:
    side_panel.render(ed)
