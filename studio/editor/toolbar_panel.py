"""The Editor's toolbar: version message, Save, Run, Discard, Delete selected, Undo, Redo.

Run saves the draft first (a conflict keeps the page here) and hands the flow to the Run page
with the draft's breakpoints, which its breakpoints box starts with (studio.common.state's
hand_over_run)."""
from __future__ import annotations

from typing import Any

import streamlit as st

from service.drafts import Draft
from studio.common.state import EditorKeys as K
from studio.common.state import hand_over_run
from studio.editor import actions_panel as actions
from studio.editor.editor import Editor


def render(ed: Editor, draft: Draft) -> Any:
    """Draw the toolbar; returns the empty slot of the Delete button (drawn by `delete_button`
    once the canvas has reported this run's selection)."""
    bar = st.columns([2.4, 1, 1, 1, 1.2, 0.5, 0.5], vertical_alignment="bottom")
    bar[0].text_input("Version message", key=K.SAVE_MSG, placeholder="what changed (optional)")
    bar[1].button("Save", type="primary", on_click=actions.save, key=K.SAVE, width="stretch",
                  help="Save the draft as a new version of the flow")
    n = len(ed.breakpoints)
    run_clicked = bar[2].button(
        "Run ▶", key=K.RUN, width="stretch",
        help="Open the run page with this flow (saves the draft first)"
             + (f"; its {n} breakpoint(s) from the canvas come along" if n else ""))
    with bar[3].popover("Discard", width="stretch", disabled=not ed.dirty()):
        st.write("Throw away your unsaved changes and load the saved flow?")
        st.button("Discard my changes", key=K.DISCARD, on_click=actions.discard)
    delete_box = bar[4].empty()
    bar[5].button("", icon=":material/undo:", key=K.UNDO, on_click=actions.undo,
                  disabled=not ed.can_undo(), width="stretch", help="Undo the last edit (Ctrl+Z)")
    bar[6].button("", icon=":material/redo:", key=K.REDO, on_click=actions.redo,
                  disabled=not ed.can_redo(), width="stretch",
                  help="Redo what you undid (Ctrl+Shift+Z, Ctrl+Y)")
    if run_clicked:
        if not ed.dirty() or ed.save("saved before a run") is not None:
            hand_over_run(draft.flow, ed.breakpoints)
        st.rerun()
    return delete_box


def delete_button(ed: Editor, box: Any) -> None:
    """Delete selected, in the toolbar's slot."""
    box.button("Delete selected", key=K.DELETE, on_click=actions.delete, width="stretch",
               disabled=not ed.selected,
               help="Delete the selected node (with its edges) or edge (keys: Delete, Backspace)")
