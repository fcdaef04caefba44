"""A saved flow's versions on the Flows page, drawn in the flow's row under its Versions button:
the list, what changed between two of them (a structural summary and the JSON diff), and restoring
an older one as the newest (the outcome shown beside the Restore button)."""
from __future__ import annotations

import streamlit as st

from flowkit.errors import FlowkitError
from service import flows as library
from service.workspace import Workspace
from studio.common import diffs, inert
from studio.common.state import FlowsKeys as K
from studio.common.state import flash, show_flash
from studio.flows.list_panel import when


def versions(ws: Workspace, selected: str | None = None) -> None:
    """The versions of the flow picked with its Versions button (`selected`, by default the
    one kept in the session; nothing when none is picked)."""
    selected = selected or K.SELECTED.get()
    if not selected or not library.flow_exists(ws, selected):
        return
    with st.expander(f"Versions of {inert.escape(selected)}", expanded=True,
                     icon=":material/history:"):
        found = library.versions(ws, selected)
        st.dataframe([{"version": v.version, "saved": when(v.created_at), "message": v.message,
                       "nodes": len(v.spec.nodes), "edges": len(v.spec.edges)} for v in found],
                     hide_index=True, width="stretch")
        numbers = [v.version for v in found]
        by_number = {v.version: v.spec for v in found}
        older = min(1, len(numbers) - 1)
        a_col, b_col, r_col = st.columns(3)
        old = a_col.selectbox("From version", numbers, index=older, key=K.DIFF_A.item(selected))
        new = b_col.selectbox("To version", numbers, index=0, key=K.DIFF_B.item(selected))
        with r_col:
            back = st.selectbox("Restore version", numbers, index=older,
                                key=K.RESTORE.item(selected))
            if st.button(f"Restore version {back} as the newest",
                         key=K.RESTORE_GO.item(selected)):
                try:
                    v = library.restore(ws, selected, back)
                except FlowkitError as err:
                    st.error(inert.escape(err))
                else:
                    flash(K.NOTICE.item(selected),
                          f"Restored version {back} of '{selected}' as version {v}.")
                    st.rerun()
            show_flash(K.NOTICE.item(selected))     # beside the button, not at the page's top
        changes = diffs.structural(by_number[old], by_number[new])
        if old == new:
            st.caption("Pick two different versions to see what changed.")
        elif not changes:
            st.caption("No change except canvas positions.")
        else:
            st.markdown("\n".join(f"- {inert.code(c)}" for c in changes))
            with st.expander("Unified diff of the JSON"):
                st.code(diffs.unified(by_number[old], by_number[new], f"v{old}", f"v{new}"),
                        language="diff")
